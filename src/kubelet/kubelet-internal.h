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
#include "stats/machine.h"

struct pod_sync;

struct pod_worker {
        struct kubelet *k;
        struct pod_worker *prev, *next;

        char *uid;
        char *full_name;       /* "namespace/name", for the one-pod-per-name rule of static pods */
        struct pod *pod;       /* desired spec (a reference), NULL when not desired */
        int64_t grace_seconds; /* for killing when not desired: the last known spec's, or 30 */

        bool busy;    /* a sync is in flight */
        bool pending; /* another sync was requested meanwhile */
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
        bool deleting;                    /* an API pod with a deletionTimestamp: stop it, then delete it */
        char *api_ns, *api_name;          /* where to DELETE it once stopped */
};

struct kubelet {
        struct event_base *base;
        const struct kubelet_options *opts;
        struct cri_client *cri;
        struct pleg *pleg;
        struct pod_config *config;
        struct prober *prober;
        struct probe_env hook_env; /* the lifecycle hooks' (hooks.c): exec, curl loop */
        char *node_ip;
        struct event *housekeeping;

        bool stopping;
        bool runtime_listed;  /* the PLEG has listed once: workers may act */
        bool runtime_down;    /* the last relist failed */
        bool config_received; /* every source delivered (or failed) once: undesired pods may be killed */

        struct pod_set desired; /* references */
        char **rejected;        /* UIDs refused by admission (OutOfpods); never started, as upstream */
        struct pod_worker *workers;
        size_t n_workers;

        struct backoff crash_backoff; /* CrashLoopBackOff, 10s..5m */
        struct backoff image_backoff; /* ImagePullBackOff, 10s..5m */
        uint64_t last_full_resync;
        uint64_t last_loop_usec; /* monotonic time of the last housekeeping tick (/healthz/syncloop) */
        struct histogram pod_start_hist;
        struct admission_node admission;
        char **cluster_dns;          /* --cluster-dns, parsed */
        struct machine_info machine; /* read once at start (cadvisor's cached MachineInfo) */

        /* with --kubeconfig */
        struct kube_client *client;
        struct kube_client *heartbeat_client; /* the node's status updates and lease (upstream's heartbeatClient) */
        struct node_manager *node;
        struct status_manager *status;
        struct mirror_manager *mirror;
        struct event_recorder *events;   /* always: without an API server events are only logged */
        struct api_delete *deletes;      /* DELETEs of terminated pods in flight */
        char **api_deleted;              /* UIDs of the pods whose final DELETE was sent (until they leave the
                                          * desired set), so that a relist does not stop and delete them again */
        struct objects_manager *objects; /* ConfigMaps, Secrets and tokens of the pods (always) */
        struct cm *cm;                   /* QoS and pod cgroups (--cgroups-per-qos) */
};

/* kubelet.c: the pod workers (pod_workers.go) */
struct pod_worker *kubelet_find_worker(struct kubelet *k, const char *uid);
void kubelet_worker_request_sync(struct pod_worker *w);
void kubelet_worker_schedule(struct pod_worker *w, uint64_t delay_usec);
void kubelet_worker_free(struct pod_worker *w);
/* a terminating worker finished: wake the workers waiting for its full name, drop it */
void kubelet_worker_terminated(struct kubelet *k, struct pod_worker *w);
/* is another worker with the same full name still holding runtime state? */
bool kubelet_name_is_busy(struct kubelet *k, const struct pod_worker *w);
int kubelet_worker_set_waiting(struct pod_worker *w, const char *name, const char *reason, const char *fmt, ...)
        _printf_(4, 5);
void kubelet_worker_clear_waiting(struct pod_worker *w, const char *name);

/* A sync pass observed the runtime for a desired pod: takes the status; updates probes and conditions. */
void kubelet_worker_observed(struct pod_worker *w, struct pod *pod, struct kc_pod_status *status);

/* An event about the worker's pod (or one of its containers when container is not NULL): Pulling, Created,
 * Killing, ... as upstream words them. */
void kubelet_worker_event(struct pod_worker *w, const char *container, const char *type, const char *reason,
                          const char *fmt, ...) _printf_(5, 6);

/* kubelet.c: update the QoS cgroups for the admitted pods and create the pod's cgroup (before its sandbox) */
int kubelet_pod_cgroup_ensure(struct kubelet *k, const struct pod *pod);

/* kubelet.c: the pod's v1 PodStatus from its spec, the last observation and the probe results */
int kubelet_worker_status_json(struct kubelet *k, struct pod_worker *w, json_t **ret);

/* pod_sync.c: run one reconcile pass for the worker; calls kubelet_worker_sync_done() at the end. */
void kubelet_pod_sync_start(struct pod_worker *w);
void kubelet_pod_sync_free(struct pod_sync *s);
/* did_work: actions were issued (re-evaluate at once); wake_usec: monotonic time to re-evaluate (0 none);
 * error: a failure happened (requeue with back-off); gone: the pod has nothing left in the runtime */
void kubelet_worker_sync_done(struct pod_worker *w, bool did_work, uint64_t wake_usec, bool error, bool gone);
