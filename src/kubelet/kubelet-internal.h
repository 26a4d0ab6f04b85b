/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "config/config.h"
#include "cri/cri.h"
#include "kubelet/kubelet.h"
#include "basic/backoff.h"
#include "basic/hashmap.h"
#include "options/options.h"
#include "pleg/pleg.h"
#include "prober/handlers.h"
#include "prober/manager.h"
#include "status/status.h"
#include "client/client.h"
#include "node/manager.h"
#include "status/manager.h"
#include "kubelet/admission.h"
#include "kubelet/mirror.h"
#include "events/recorder.h"
#include "cm/cm.h"
#include "cm/metrics.h"
#include "credentialprovider/plugin/plugin.h"
#include "podresources/server.h"
#include "podsapi/server.h"
#include "node/node_status.h"
#include "kubelet/plugins.h"
#include "stats/machine.h"
#include "cm/dra/plugins.h"
#include "csi/drivers.h"
#include "csi/nodeinfo.h"
#include "pluginmanager/pluginmanager.h"
#include "volumemanager/volumemanager.h"
#include "volumes/reaper.h"
#include "eviction/api.h"
#include "basic/slots.h"

struct workpool;
struct pull_store;
struct stats_volumes;
struct stats_provider;
struct logs_manager;
struct kr_container_gc;
struct image_gc_manager;
struct eviction_manager;
struct nodeshutdown_manager;
#include "kubelet/allocation.h"
#include "kubelet/runtime_poll.h"
#include "kubelet/userns.h"
#include "kubelet/cpu.h"
#include "kubelet/pod_sync_env.h"

struct pod_sync;

struct pod_worker {
        struct kubelet *k;
        struct pod_worker *prev, *next;

        char *uid;
        char *full_name;       /* "namespace/name", for the one-pod-per-name rule of static pods */
        struct pod *pod;       /* desired spec (a reference), NULL when not desired */
        struct pod *last_pod;  /* not desired any more: its last spec while it terminates (kill order, the status
                                * of a static pod's mirror pod), NULL when unknown (after a restart) */
        int64_t grace_seconds; /* for killing when not desired: the last known spec's, or 30 */

        bool busy;    /* a sync is in flight */
        bool pending; /* another sync was requested meanwhile */
        /* no longer desired, and no pass has stopped it since: the next pass does, even if it is desired again by
         * then (upstream's restartRequested: a pod terminating when its UID is added again is stopped first) */
        bool kill_requested;
        struct pod_sync *sync;
        struct event *timer; /* requeue after an error, or when a back-off ends */
        uint64_t timer_at;   /* monotonic usec the timer is armed for, 0 = not armed */
        unsigned failures;   /* consecutive failed syncs */

        bool waiting_for_name; /* blocked until a terminating pod with the same full name is gone */
        size_t n_waiting;
        struct container_waiting *waiting;

        struct kc_pod_status *observed;   /* the last complete observation of the runtime (for the status) */
        bool ready_known;                 /* the conditions below have been computed once */
        bool containers_ready;            /* ContainersReady (= Ready: no readiness gates) */
        int64_t ready_transition;         /* unix usec of its last transition */
        int64_t first_seen_realtime_usec; /* when the kubelet first saw the pod (conditions' first transition) */
        uint64_t first_seen_usec;         /* monotonic, for kubelet_pod_start_duration_seconds */
        int64_t start_time_usec;          /* status.startTime: when the first sync pass began work on the pod */
        bool start_observed;              /* the pod start duration was recorded */
        bool api_readiness_checked;       /* the API server's readiness was looked at (keep_api_readiness) */
        bool deleting;                    /* an API pod with a deletionTimestamp: stop it, then delete it */
        bool deadline_exceeded;           /* past its activeDeadlineSeconds: stopped, phase Failed, for good */
        bool runtime_class_warned;        /* its runtimeClassName was said to be ignored (no API server) */
        bool runtime_supports_rro;        /* its runtime handler mounts recursively read-only (the last pass's) */
        /* in-place resize (allocation.c): the pod as allocated when its spec asks for other resources, and the
         * resize conditions */
        struct pod *alloc_pod;
        const char *resize_pending_reason; /* "Deferred", "Infeasible", NULL */
        char *resize_pending_message;
        int64_t resize_pending_usec;
        bool resize_in_progress;
        int64_t resize_in_progress_usec;
        char *resize_error;
        struct event *deadline_timer; /* fires when the pod's activeDeadlineSeconds pass */
        bool runtime_gone;            /* not desired and nothing left in the runtime: its volumes may go */
        size_t leftovers;     /* the last pass of a pod no longer desired: how many of its dead containers and sandboxes
                           * are left because the runtime refused to remove them (the container GC's, then) */
        char **owned_volumes; /* emptyDir volumes given their fsGroup ownership (strv of names) */
        char *api_ns, *api_name; /* where to DELETE it once stopped */

        /* ended for good by the kubelet (eviction.c): killed, never started again, phase Failed with this reason
         * and message; kept in <root-dir>/pods/<uid>/ so that a restart of the kubelet keeps it so */
        bool terminated;
        char *terminated_reason, *terminated_message;
        int64_t terminated_usec; /* realtime */
        int64_t grace_override;  /* >= 0: kill with this grace period (the eviction's); -1: the pod's */
};

#define KUBELET_VOLUME_CONTENTS_THREADS 2
#define KUBELET_VOLUME_CONTENTS_THREADS_MAX 8

/* A pod whose worker ended, as the runtime's listing may still show it. */
struct ended_pod {
        char *uid;
        uint64_t mono_usec; /* when its worker ended */
        bool left_to_gc;    /* it ended with dead containers or sandboxes the runtime refused to remove */
};

struct kubelet {
        struct event_base *base;
        const struct kubelet_options *opts;
        struct cri_client *cri;
        struct pleg *pleg;
        struct pod_config *config;
        struct prober *prober;
        struct probe_env hook_env;    /* the lifecycle hooks' (hooks.c): exec, HTTP */
        struct pod_sync_env sync_env; /* what the pod sync passes use (kubelet_start) */
        char *node_ip;
        struct event *housekeeping;

        bool stopping;
        bool runtime_listed;  /* the PLEG has listed once: workers may act */
        bool runtime_down;    /* the last relist failed */
        bool config_received; /* every source delivered (or failed) once: undesired pods may be killed */

        struct pod_set desired;        /* references */
        struct hashmap desired_by_uid; /* UID → pod of desired (keys borrowed from its pods) */
        bool desired_indexed;          /* desired_by_uid is complete (false after an allocation failure) */
        char **rejected;               /* UIDs refused by admission (OutOfpods); never started, as upstream */
        struct pod_worker *workers;
        size_t n_workers;
        struct hashmap workers_by_uid; /* UID → worker (keys borrowed from the workers) */

        struct backoff crash_backoff; /* CrashLoopBackOff, 10s..5m */
        struct backoff image_backoff; /* ImagePullBackOff, 10s..5m */
        /* KubeletEnsureSecretPulledImages: which credentials pulled which image (<root-dir>/image_manager); NULL
         * with the gate off. pull_verify_policy: enum image_pull_verify_policy */
        struct pull_store *pull_records;
        int pull_verify_policy;
        /* dead containers and sandboxes the runtime refused to remove, by id: tried again only when their back-off
         * (10s..5m) ends, by the pod's clean-up or the container GC (gc.c) */
        struct backoff removal_backoff;
        char **removals_in_flight; /* ids whose RemoveContainer/RemovePodSandbox is in flight (gc.c) */
        /* pods whose worker ended (pod_termination.c): no worker is made for one from the runtime's listing until a
         * relist begun after its end, nor while the runtime keeps what it refused to remove of it */
        struct ended_pod *ended;
        size_t n_ended;
        /* desired pods that finished for good whose volumes are torn down or being torn down (storage.c), by uid
         * (keys owned) */
        struct hashmap released_volumes;
        /* pods found in the runtime with no worker (kubelet_orphaned_runtime_pods_total) */
        uint64_t orphaned_runtime_pods;
        uint64_t last_full_resync;
        uint64_t last_loop_usec; /* monotonic time of the last housekeeping tick (/healthz/syncloop) */
        struct histogram pod_start_hist;
        struct cm_metrics cm_metrics; /* the resource managers' counters */
        struct admission_node admission;
        char **cluster_dns;          /* --cluster-dns, parsed */
        struct machine_info machine; /* read once at start (cadvisor's cached MachineInfo) */
        bool swap_v2;                /* cgroup v2 with the swap controller: containers get memory.swap.max */

        /* with --kubeconfig */
        struct kube_client *client;
        struct kube_client *heartbeat_client; /* the node's status updates and lease (upstream's heartbeatClient) */
        struct node_manager *node;
        struct runtime_poll *runtime_poll; /* without --kubeconfig: the runtime's Status (the node manager's else) */
        struct userns_manager *userns;     /* the user namespace ranges of hostUsers:false pods */
        struct status_manager *status;
        struct mirror_manager *mirror;
        struct event_recorder *events; /* always: without an API server events are only logged */
        struct api_delete *deletes;    /* DELETEs of terminated pods in flight */
        char **final_statuses;         /* "uid namespace/name" of the deleted API pods whose final status is on its way
                                * (their DELETE follows it) */
        char **api_deleted;            /* UIDs of the pods whose final DELETE was sent (until they leave the
                                          * desired set), so that a relist does not stop and delete them again */
        struct objects_manager *objects; /* ConfigMaps, Secrets and tokens of the pods (always) */
        struct cm *cm;                   /* QoS and pod cgroups (--cgroups-per-qos) */

        /* a node that runs for months (gc.c, eviction.c) */
        char *pods_cgroup;                  /* the pods' cgroup (cgroupfs path), NULL without QoS cgroups */
        struct workpool *pool;              /* small file work: the image GC's state */
        struct stats_volumes *volume_stats; /* the pods' volume usage */
        struct stats_provider *stats;       /* the eviction manager's summaries */
        struct logs_manager *logs;          /* rotation, /var/log/containers links, log cleanup */
        struct kr_container_gc *container_gc;
        struct image_gc_manager *image_gc;
        struct slots *image_puller;  /* every PullImage waits its turn here (serializeImagePulls) */
        struct slots *sandbox_slots; /* every RunPodSandbox too (--max-parallel-sandbox-creations) */
        struct event *gc_timer;      /* container GC every minute */
        bool container_gc_failed;    /* the last container GC failed (the next success is logged at v1) */
        uint64_t links_swept_gone;   /* pleg_gone_count() at the last /var/log/containers sweep */
        struct eviction_threshold *thresholds;
        size_t n_thresholds;
        struct eviction_manager *eviction;
        struct nodeshutdown_manager *shutdown; /* NULL: graceful node shutdown off */
        unsigned node_conditions;              /* the eviction manager's, as last reported */
        const struct pod **active;             /* the eviction manager's candidates, kept until its next call */
        /* storage: CSI drivers registered through the plugin manager, the volume manager */
        struct csi_nodeinfo *csi_nodeinfo;
        struct csi_drivers *csi;
        struct pluginmanager *plugins;
        struct dra_plugins *dra_plugins;     /* DRA drivers' plugins (type DRAPlugin) */
        struct dra_manager *dra;             /* the ResourceClaims prepared on the node */
        struct dra_health_cache *dra_health; /* ResourceHealthStatus: the DRA devices' health (NULL: gate off) */
        struct event *dra_health_timer;      /* a reported device's health times out (Unknown) */
        struct volmgr *volumes;
        struct vol_reaper *reaper; /* removes the directories of pods that are gone, off the loop */
        /* work on the contents of pods' volumes (subPath binds, termination messages): keyed by pod, with a
         * deadline, so that a volume that stopped answering fails that pod's container, never the loop */
        struct workpool *pool_contents;
        /* plug-in interfaces (plugins.c) */
        struct credprov *credprov;     /* --image-credential-provider-config, else NULL */
        struct devicemanager *devices; /* device plugins */
        struct podresources_server *podresources;
        struct podsapi_server *pods_api;  /* pods/v1alpha1 (PodsAPI), NULL when the gate is off */
        struct cpumanager *cpus;          /* the CPU manager (cpu.c) */
        struct topologymanager *topology; /* the topology manager (cpu.c) */
        struct memorymanager *memory;     /* the memory manager (cpu.c) */
        struct event *cpu_reconcile;      /* every cpuManagerReconcilePeriod under the static policy */
        struct cpu_sent *cpu_sent;        /* the cpuset each container was last given */
        size_t n_cpu_sent;
        struct cri_calls cpu_calls;                    /* the cpusets in flight (UpdateContainerResources) */
        struct admission_extended *admission_extended; /* admission.extended points here */
        struct node_extended_resource *node_extended;  /* what the node status reports */
        size_t n_node_extended;
        struct allocation_state *allocation; /* the pods' allocated resources (in-place resize), checkpointed */

        /* TLS bootstrapping and certificate rotation (credentials.c) */
        struct cert_manager *client_certs;  /* --rotate-certificates or --bootstrap-kubeconfig */
        struct cert_manager *serving_certs; /* serverTLSBootstrap */
        kubelet_serving_cert_t serving_cb;  /* who serves the pair (kubelet_set_serving_cert_handler) */
        void *serving_userdata;
        struct kube_client *bootstrap_client; /* from --bootstrap-kubeconfig, while it is needed */
        struct event *creds_retry;            /* the next attempt to get a usable client certificate */
        unsigned creds_failures;
        bool api_started; /* the node has credentials: the API parts run */

        /* the service manager (notify.c) */
        bool notified_ready;    /* READY=1 was sent */
        struct event *watchdog; /* WATCHDOG=1 every WatchdogSec/2 */
        uint64_t watchdog_period_usec;
};

/* pod_resize.c: the pod a worker's sync runs: its desired pod as allocated (a resize not allocated yet is not run) */
struct pod *kubelet_worker_sync_pod(const struct pod_worker *w);
/* pod_resize.c: an in-place resize could not be applied (UpdateContainerResources failed): PodResizeInProgress with
 * reason Error; NULL clears it */
void kubelet_worker_resize_error(struct pod_worker *w, const char *message);
/* pod_resize.c: handlePodResourcesResize for the worker's desired pod (a new or changed spec): allocated if it fits
 * (ResizeStarted), else PodResizePending (Deferred, Infeasible) and the pod runs as allocated */
void kubelet_worker_update_allocation(struct kubelet *k, struct pod_worker *w);
/* pod_resize.c: PodResizeInProgress from the last observation, and ResizeCompleted at its end */
void kubelet_worker_check_resize_done(struct pod_worker *w);

/* pod_workers.c: the pod workers (pod_workers.go) */
struct pod_worker *kubelet_find_worker(struct kubelet *k, const char *uid);
/* a new worker for the pod UID, in k->workers and k->workers_by_uid; NULL on OOM */
struct pod_worker *kubelet_worker_new(struct kubelet *k, const char *uid);
void kubelet_worker_request_sync(struct pod_worker *w);
void kubelet_worker_schedule(struct pod_worker *w, uint64_t delay_usec);
void kubelet_worker_free(struct pod_worker *w);
/* every worker, with its pass in flight (kubelet_free) */
void kubelet_workers_free(struct kubelet *k);
/* "namespace/name" (allocated), NULL without a name or on OOM */
char *kubelet_pod_full_name(const char *ns, const char *name);
/* the pod's activeDeadlineSeconds: its timer armed again, or the pod failed with DeadlineExceeded once it passed */
void kubelet_worker_check_deadline(struct pod_worker *w);
/* the pods of the workers that have one (the admitted pods, as allocated), only the static ones (as desired) if
 * asked; NULL on OOM */
const struct pod **kubelet_worker_pods(struct kubelet *k, bool static_only, size_t *ret_n);
/* the prober, whose results and failures wake the pods' workers (kubelet_start) */
int kubelet_prober_setup(struct kubelet *k);
/* Is this pod one whose worker ended and that a listing of the runtime must not bring back yet? */
bool kubelet_pod_ended(const struct kubelet *k, const char *uid);
/* Forget the ended pods that a relist begun after their end shows gone (or, without refused leftovers, shows at
 * all: what it lists then is found anew), and those desired again. */
void kubelet_ended_prune(struct kubelet *k);
void kubelet_ended_free(struct kubelet *k);
/* is another worker with the same full name still holding runtime state? */
bool kubelet_name_is_busy(struct kubelet *k, const struct pod_worker *w);
/* kubelet_sync_env.c: what the runtime can do (its last Status): the node manager's, or without an API server the
 * kubelet's own poll */
const struct node_runtime_features *kubelet_runtime_features(const struct kubelet *k);

/* A sync pass observed the runtime for a static pod that terminates: takes the status, reports it to its mirror. */
void kubelet_worker_observed_terminating(struct pod_worker *w, struct kc_pod_status *status);

/* A sync pass observed the runtime for a desired pod: takes the status; updates probes and conditions. */
void kubelet_worker_observed(struct pod_worker *w, struct pod *pod, struct kc_pod_status *status);

/* An event about the worker's pod (or one of its containers when container is not NULL): Pulling, Created,
 * Killing, ... as upstream words them. */
void kubelet_worker_event(struct pod_worker *w, const char *container, const char *type, const char *reason,
                          const char *fmt, ...) _printf_(5, 6);
/* The same about a pod that is no longer desired too (its last known spec), while it terminates. */
void kubelet_worker_event_any(struct pod_worker *w, const char *container, const char *type, const char *reason,
                              const char *fmt, ...) _printf_(5, 6);

/* gc.c: a dead container or sandbox whose removal the runtime refused waits out a back-off (10 s doubling to
 * 5 min, monotonic) before anyone tries again. kubelet_removal_blocked(): is it in back-off now (*ret_until, if
 * not NULL: when it ends)? kubelet_removal_failed(): records a refusal and logs it, once per back-off step
 * (pod_desc may be NULL); kubelet_removal_succeeded(): forgets it. kubelet_removal_started(): a removal of id is
 * in flight (the pod's clean-up or the container GC): the other one does not try it meanwhile (blocked, for a
 * second at a time) until failed or succeeded ends it. */
void kubelet_removal_started(struct kubelet *k, const char *id);
bool kubelet_removal_blocked(struct kubelet *k, const char *id, uint64_t *ret_until_usec);
void kubelet_removal_failed(struct kubelet *k, bool sandbox, const char *id, const char *pod_desc, const char *message);
void kubelet_removal_succeeded(struct kubelet *k, const char *id);

/* status.c: the Ready and ContainersReady conditions from the probe results */
void kubelet_worker_update_conditions(struct pod_worker *w);
/* status.c: the pod whose status a worker reports (a static pod's last spec while it terminates); NULL: none */
struct pod *kubelet_status_pod(const struct pod_worker *w);
/* status.c: the host (node) IP the probes of the pod use */
const char *kubelet_pod_host(const struct kubelet *k, const struct pod *pod, const struct kc_pod_status *st);
/* status.c: keep the readiness the API server showed until the prober has a result */
void kubelet_keep_api_readiness(struct kubelet *k, struct pod_worker *w, const struct pod *pod,
                                const struct kc_pod_status *status);
/* pod_resize.c: metadata.generation of the pod (0: none) */
int64_t kubelet_pod_generation(const struct pod *p);

/* housekeeping.c: the periodic housekeeping timer, armed (kubelet_start) */
int kubelet_housekeeping_setup(struct kubelet *k);
/* kubelet.c: for housekeeping */
void kubelet_sync_mirror_pods(struct kubelet *k);
int kubelet_update_qos_cgroups(struct kubelet *k);
/* pod_resize.c: for housekeeping */
void kubelet_retry_deferred_resizes(struct kubelet *k);
bool kubelet_allocation_wanted(const char *uid, void *userdata);

/* pod_termination.c: free a DELETE of a terminated pod (cancels it if in flight); NULL is fine */
void kubelet_api_delete_free(struct api_delete *d);

/* storage.c: the volume manager, the CSI drivers and the CSI and DRA plug-in registration handlers */
int kubelet_storage_setup(struct kubelet *k, struct ck_error **ret_error);
/* storage.c: a desired pod finished for good and is stopped: its volumes go (syncTerminatedPod), once */
void kubelet_pod_release_volumes(struct kubelet *k, const char *uid);
/* storage.c, at housekeeping: pods no longer desired are forgotten (their directories go whole) */
void kubelet_released_volumes_prune(struct kubelet *k);
void kubelet_released_volumes_free(struct kubelet *k);
/* storage.c: a pod of that UID is started anew (added, or desired again): its volumes are its own again */
void kubelet_released_volumes_forget(struct kubelet *k, const char *uid);

/* status.c: the pod's v1 PodStatus from its spec, the last observation and the probe results */
int kubelet_worker_status_json(struct kubelet *k, struct pod_worker *w, json_t **ret);

/* kubelet.c */
bool kubelet_pod_desired(const struct kubelet *k, const char *uid);
bool kubelet_pod_terminal_in_api(const struct pod *p);

/* kubelet_admission.c: admit a desired pod that has no worker yet (false: not now, or rejected for good: then in
 * k->rejected, and an API pod's status says why); the fields of a new pod that are not acted on, logged; what
 * admission compares requests with (k->admission), and --cluster-dns (k->cluster_dns), at start */
bool kubelet_pod_admit(struct kubelet *k, const struct pod *p);
void kubelet_warn_unsupported_fields(struct kubelet *k, const struct pod *p);
int kubelet_admission_setup(struct kubelet *k, struct ck_error **ret_error);

/* gc.c: the container log manager, container and image GC and the volume stats: set up at start, freed at exit */
int kubelet_gc_setup(struct kubelet *k);
void kubelet_gc_free(struct kubelet *k);
void kubelet_gc_housekeeping(struct kubelet *k);
/* a container was started: its /var/log/containers link */
void kubelet_container_started(struct kubelet *k, const struct pod *pod, const char *container,
                               const char *container_id, uint32_t restart_count);

/* an event about the node (upstream's nodeRef) */
void kubelet_node_event(struct kubelet *k, const char *type, const char *reason, const char *fmt, ...) _printf_(4, 5);

/* eviction.c: the eviction manager and what it does through the kubelet */
int kubelet_eviction_parse(struct kubelet *k,
                           struct ck_error **ret_error); /* the thresholds, before anything uses them */
void kubelet_eviction_reservation(const struct kubelet *k, int64_t *ret_memory_bytes, float *ret_memory_fraction,
                                  int64_t *ret_storage_bytes, float *ret_storage_fraction);
int kubelet_eviction_setup(struct kubelet *k);
void kubelet_eviction_free(struct kubelet *k);
/* admission under node pressure: 0, or -ENOSPC with *ret_error (reason "Evicted" and upstream's message) */
int kubelet_eviction_admit(struct kubelet *k, const struct pod *p, struct ck_error **ret_error);
/* a new worker for a desired pod: it is terminated for good if a marker says it was evicted before */
void kubelet_terminated_restore(struct kubelet *k, struct pod_worker *w);
/* ends the pod for good (an eviction, a node shutdown): killed with this grace period (-1: the pod's), phase
 * Failed with this reason and message and DisruptionTarget; persist: recorded in <root-dir>/pods/<uid>/ so that a
 * restart keeps it so (an eviction; not a node shutdown, after which a static pod runs again, as upstream); its
 * status reported now */
int kubelet_pod_terminate(struct kubelet *k, struct pod_worker *w, const char *reason, const char *message,
                          int64_t grace_seconds, bool persist);
/* podResourcesAreReclaimed as far as the runtime goes: nothing running, no ready sandbox (true: no such pod) */
bool kubelet_pod_cleaned_up(struct kubelet *k, const char *uid);

/* the UID the pod's status goes to (a static pod's: its mirror pod's, NULL when it has none) */
const char *kubelet_report_uid(struct kubelet *k, struct pod_worker *w);

/* graceful node shutdown (shutdown.c) */
int kubelet_shutdown_setup(struct kubelet *k);
void kubelet_shutdown_free(struct kubelet *k);
/* admission while the node shuts down: 0, or -ENOSPC with *ret_error (reason NodeShutdown and upstream's message) */
int kubelet_shutdown_admit(struct kubelet *k, struct ck_error **ret_error);

/* status.c: hand the pod's status to the status manager now (an eviction changes it) */
void kubelet_report_status(struct kubelet *k, struct pod_worker *w);
/* the pods API (host.c): served when the PodsAPI gate is on; stop accepts a kubelet that never started it */
int kubelet_pods_api_start(struct kubelet *k, struct ck_error **ret_error);
void kubelet_pods_api_stop(struct kubelet *k);

/* kubelet.c: make the workers match the desired pods again (admission included) */
void kubelet_reconcile(struct kubelet *k);

/* kubelet_pleg.c: the PLEG, whose changes and relists wake the workers (kubelet_start) */
int kubelet_pleg_setup(struct kubelet *k);

/* kubelet.c: the parts that talk to the API server, once the node has a client (k->client) */
int kubelet_api_start(struct kubelet *k);

/* credentials.c: the API client's and the kubelet API's certificates; kubelet_api_start() once there is a client */
int kubelet_credentials_start(struct kubelet *k, struct ck_error **ret_error);
void kubelet_credentials_stop(struct kubelet *k);

/* notify.c: READY=1 once the node does its work, the watchdog */
void kubelet_notify_check_ready(struct kubelet *k);
int kubelet_watchdog_start(struct kubelet *k);

/* kubelet_sync_env.c: k->sync_env, once everything in it exists (kubelet_start, before the PLEG starts: no pass
 * runs before) */
void kubelet_sync_env_setup(struct kubelet *k);
/* did_work: actions were issued (re-evaluate at once); wake_usec: monotonic time to re-evaluate (0 none);
 * error: a failure happened (requeue with back-off); gone: the pod has nothing left in the runtime */
void kubelet_worker_sync_done(struct pod_worker *w, bool did_work, uint64_t wake_usec, bool error, bool gone);
