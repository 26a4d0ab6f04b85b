/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What a pod's sync pass (pod_sync.h) may use of the kubelet, and nothing more: the runtime, the options, the
 * queues and back-offs, the managers it calls, and a table of callbacks through which it asks the kubelet (a
 * pod worker's state, the pod cgroup, the CPU and DRA managers) and reports back to it (events, waiting reasons,
 * the pass's result). The kubelet builds one at start (kubelet_start(), kubelet.c, before the PLEG starts) and
 * hands it to every pass; the pass never sees struct kubelet, and sees a pod worker only as an opaque handle it
 * passes back to the callbacks. A handle that the kubelet frees while passes may still run (at teardown: the CRI
 * client, the prober, the volume manager, ...) is set to NULL here at the same time. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/backoff.h"
#include "basic/time.h"
#include "cm/cm.h"
#include "cri/cri.h"
#include "kubelet/admission.h"
#include "kubelet/dra.h"
#include "node/runtime_features.h"
#include "options/options.h"
#include "prober/handlers.h"
#include "stats/machine.h"

/* work on the contents of pods' volumes (subPath binds, termination messages, env files) ends by then */
#define KUBELET_VOLUME_CONTENTS_TIMEOUT_USEC (30 * USEC_PER_SEC)

struct pod_worker; /* the kubelet's: opaque to the pass */
struct pod_sync;
struct pod;
struct container;
struct kc_pod_status;
struct kube_client;
struct slots;
struct objects_manager;
struct volmgr;
struct vol_reaper;
struct workpool;
struct userns_manager;
struct devicemanager;
struct credprov;
struct pull_store;
struct prober;

/* A pod worker's state as the pass reads it (it may change while the pass runs: read it when needed). */
struct pod_sync_worker_state {
        const struct pod *pod;      /* desired spec, NULL when not desired */
        const struct pod *last_pod; /* its last spec while it terminates, NULL when unknown */
        int64_t grace_seconds;      /* for killing when not desired */
        int64_t grace_override;     /* >= 0: an eviction's grace period */
        bool deleting;              /* an API pod with a deletionTimestamp */
        bool terminated;            /* ended for good by the kubelet (evicted, a node shutdown) */
        bool deadline_exceeded;     /* past its activeDeadlineSeconds */
        bool pending;               /* another sync was requested meanwhile */
        bool resize_in_progress;    /* PodResizeInProgress */
        char **owned_volumes;       /* emptyDir volumes given their fsGroup ownership (strv, borrowed) */
};

/* What a pass hands back when it ends. */
struct pod_sync_result {
        bool decided;                 /* the runtime was observed and the actions computed */
        struct pod *pod;              /* the spec the pass ran (borrowed), NULL: the pod was terminated */
        struct kc_pod_status *status; /* the observation (the kubelet takes it, or leaves it to the pass) */
        bool did_work;                /* actions were issued (re-evaluate at once) */
        uint64_t wake_usec;           /* monotonic time to re-evaluate, 0 = none */
        bool error;                   /* a failure happened (requeue with back-off) */
        bool gone;                    /* the pod has nothing left in the runtime (or only what it refused to remove) */
        size_t leftovers;             /* of a pod no longer desired: the objects the runtime refused to remove */
};

/* How the pass asks the kubelet and reports back to it (kubelet_sync_env.c). userdata is the env's; w the pass's worker. */
struct pod_sync_ops {
        void (*worker_state)(void *userdata, struct pod_worker *w, struct pod_sync_worker_state *ret);
        /* an event about the worker's pod (or one of its containers when container is not NULL); any: also about
         * a pod no longer desired (its last known spec) */
        void (*event)(void *userdata, struct pod_worker *w, bool any, const char *container, const char *type,
                      const char *reason, const char *message);
        /* a container's waiting reason and message until it starts (CrashLoopBackOff, ErrImagePull, ...) */
        int (*set_waiting)(void *userdata, struct pod_worker *w, const char *name, const char *reason,
                           const char *message);
        void (*clear_waiting)(void *userdata, struct pod_worker *w, const char *name);
        /* an in-place resize could not be applied: PodResizeInProgress with reason Error; NULL clears it */
        void (*resize_error)(void *userdata, struct pod_worker *w, const char *message);
        /* is another pod with the same full name still holding runtime state? The worker then waits for it to be
         * gone (true), or no longer (false) */
        bool (*wait_for_name)(void *userdata, struct pod_worker *w);
        /* true the first time for the worker: its runtimeClassName is said to be ignored (no API server) */
        bool (*runtime_class_warn_once)(void *userdata, struct pod_worker *w);
        /* the runtime handler of this pass mounts recursively read-only (containerStatuses[].volumeMounts) */
        void (*set_runtime_rro)(void *userdata, struct pod_worker *w, bool rro);
        /* an emptyDir volume was given its fsGroup ownership */
        void (*volume_owned)(void *userdata, struct pod_worker *w, const char *name);
        /* the worker's desired pod finished for good and is stopped: its volumes are torn down (syncTerminatedPod) */
        void (*pod_finished)(void *userdata, struct pod_worker *w);
        /* the pass ended: the kubelet takes what it wants of the result, and may start the next pass at once */
        void (*pass_done)(void *userdata, struct pod_worker *w, struct pod_sync_result *result);

        /* the API client, NULL while there is none (standalone, or before the node has credentials) */
        struct kube_client *(*client)(void *userdata);
        /* what the runtime can do (its last Status) */
        const struct node_runtime_features *(*runtime_features)(void *userdata);
        /* the removal back-off of dead containers and sandboxes (kubelet_removal_* in gc.c) */
        void (*removal_started)(void *userdata, const char *id);
        bool (*removal_blocked)(void *userdata, const char *id, uint64_t *ret_until_usec);
        void (*removal_failed)(void *userdata, bool sandbox, const char *id, const char *pod_desc, const char *message);
        void (*removal_succeeded)(void *userdata, const char *id);
        /* the QoS cgroups updated and the pod's cgroup made (cm_pod_ensure{,_async}) */
        int (*pod_cgroup_ensure)(void *userdata, const struct pod *pod, struct ck_error **ret_error);
        int (*pod_cgroup_ensure_async)(void *userdata, const struct pod *pod, cm_done_fn done, void *done_userdata,
                                       struct ck_error **ret_error);
        /* a container was started: its /var/log/containers link */
        void (*container_started)(void *userdata, const struct pod *pod, const char *container,
                                  const char *container_id, uint32_t restart_count);
        /* the CPU and memory managers' assignment into the container's config (kubelet_cpu_apply) */
        int (*cpu_apply)(void *userdata, const struct pod *pod, const struct container *c,
                         Runtime__V1__ContainerConfig *cfg);
        /* PrepareDynamicResources (kubelet_dra_prepare) */
        int (*dra_prepare)(void *userdata, const struct pod *pod, const struct container *c, kubelet_dra_done_t done,
                           void *done_userdata, struct kubelet_dra_job **ret);
};

struct pod_sync_env {
        struct event_base *base;
        const struct kubelet_options *opts;

        struct cri_client *cri;
        struct probe_env *hook_env; /* the lifecycle hooks' (hooks.c) */
        struct prober *prober;      /* the probe results the actions depend on */
        const char *node_ip;
        char **cluster_dns; /* --cluster-dns, parsed */
        const struct admission_node *admission;
        const struct machine_info *machine;
        bool swap_v2; /* cgroup v2 with the swap controller */

        struct slots *image_puller;    /* every PullImage waits its turn here */
        struct slots *sandbox_slots;   /* every RunPodSandbox too */
        struct backoff *crash_backoff; /* CrashLoopBackOff */
        struct backoff *image_backoff; /* ImagePullBackOff */

        struct objects_manager *objects; /* ConfigMaps, Secrets, tokens */
        struct volmgr *volumes;          /* the volume manager */
        struct vol_reaper *reaper;       /* removes the directories of pods that are gone */
        struct workpool *pool_contents;  /* work on the contents of pods' volumes */
        struct userns_manager *userns;   /* hostUsers: false */
        struct devicemanager *devices;   /* device plugins, NULL when none */
        struct credprov *credprov;       /* image credential providers, NULL when none */
        /* the pulled-image credential records (KubeletEnsureSecretPulledImages), NULL with the gate off; the
         * verification policy is an enum image_pull_verify_policy (options/image_pull_policy.h) */
        struct pull_store *pull_records;
        int pull_verify_policy;
        struct cm *cm; /* QoS and pod cgroups */

        const struct pod_sync_ops *ops;
        void *userdata;
};
