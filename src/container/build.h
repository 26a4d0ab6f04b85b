/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What building a pod's sandbox and containers needs beyond the pod spec (upstream's RuntimeHelper and
 * RunContainerOptions): the node's and the pod's facts gathered by the sync pass, shared by the CRI request
 * builders (kuberuntime/) and the volume setup (volumes/). */

#include <stdbool.h>
#include <stdint.h>

#include "apis/resource.h"

struct ck_error;
struct pod_objects;

/* What a builder reports besides its result (optional, see kc_build_context.report): the message of a
 * configuration error (for the container's CreateContainerConfigError) and warning events to record. */
struct kc_build_report {
        struct ck_error *error;
        char **event_reasons; /* strv, parallel to event_messages */
        char **event_messages;
};
void kc_build_report_done(struct kc_build_report *r);                                          /* accepts NULL */
int kc_build_report_event(struct kc_build_report *r, const char *reason, const char *message); /* r may be NULL */

/* The value of one env[].valueFrom.fileKeyRef, read and parsed on a worker before the build (kuberuntime/envfile.h) */
struct kc_env_file_value {
        bool resolved; /* the worker went through it */
        int r;         /* 1: value; 0: the key is absent (or its value empty); negative: the file could not be used */
        char *value;
        char *message; /* r <= 0: the CreateContainerConfigError message upstream gives (unless optional, for 0) */
};

/* What the builders need beyond the pod spec, gathered by the sync pass (kubelet/pod_sync.c). Any
 * field may be unset (NULL / 0) when the sync does not know it yet. */
struct kc_build_context {
        const char *pod_logs_dir; /* --pod-logs-dir */
        const char *root_dir;     /* --root-dir: pod directories live in <root_dir>/pods/<uid> */
        const char *node_name;
        const char *node_ip;               /* status.hostIP */
        const char *pod_ip;                /* status.podIP: known once the sandbox runs (NULL before) */
        const struct pod_objects *objects; /* the ConfigMaps, Secrets and tokens fetched for this pod */
        const char *cgroup_parent;         /* the pod cgroup (src/cm), NULL without --cgroups-per-qos */
        int64_t alloc_cpu_milli;           /* node allocatable (resourceFieldRef without a limit), 0 = unknown */
        int64_t alloc_memory_bytes;
        bool image_user_known; /* the image's user from ImageStatus (runAsUser default, runAsNonRoot) */
        bool image_uid_set;
        int64_t image_uid;
        const char *image_username;
        const char *target_id; /* an ephemeral container's targetContainerName: its running instance */
        bool static_pod;       /* not from the API server: the services are used as far as they are known */
        bool seccomp_default;  /* --seccomp-default: RuntimeDefault where no profile is set */
        /* NodeSwap: swap_v2 (cgroup v2 with the swap controller): memory.swap.max in the CRI's unified map, from
         * limited_swap (memorySwap.swapBehavior LimitedSwap), critical_pod, the node's memory and SwapTotal */
        bool swap_v2, limited_swap, critical_pod;
        uint64_t node_memory_bytes, swap_capacity_bytes;
        bool runtime_supports_rro; /* the pod's runtime handler does recursive read-only mounts (CRI Status) */
        bool stop_signals;         /* ContainerStopSignals: lifecycle.stopSignal goes to the runtime */
        /* hostUsers false: the pod's user namespace maps 0..userns_length-1 to userns_host_id.. (UIDs and GIDs);
         * otherwise the node's user namespace (NamespaceMode NODE) */
        bool userns;
        uint32_t userns_host_id, userns_length;
        char *const *cluster_dns;       /* --cluster-dns (strv, NULL = none) */
        const char *cluster_domain;     /* --cluster-domain */
        const char *resolv_conf;        /* --resolv-conf; NULL or "" = none */
        struct kc_build_report *report; /* output, may be NULL */
        /* the volumes mounted by the volume manager (persistentVolumeClaim, csi, nfs, ...): the host path of the
         * pod's volume `name` (caller frees) and whether it must be mounted read-only; NULL when not mounted. NULL
         * hook: there are none. */
        char *(*managed_volume_path)(void *userdata, const char *name, bool *ret_read_only);
        void *managed_volume_userdata;
        /* the image volumes pulled for this pass: the resolved image (PullImage's image_ref or ImageStatus's id) of
         * the pod's image volume `name`, NULL when it was not pulled. NULL hook: none was. */
        const char *(*image_volume_ref)(void *userdata, const char *name);
        void *image_volume_userdata;
        /* the host paths of the container's subPath mounts, by volumeMount index (NULL where none), bound on a
         * worker beforehand: building the config never touches a volume's contents */
        char *const *subpath_targets;
        size_t n_subpath_targets;
        /* the container's env[].valueFrom.fileKeyRef values, by env index (unresolved where none), read on a worker
         * beforehand: building the environment never reads a pod-writable file */
        const struct kc_env_file_value *env_files;
        size_t n_env_files;
};

/* The node's allocatable for resourceFieldRefs of limits a container does not set: ctx's when known, else the
 * machine's (online CPUs, RAM); ephemeral storage is the size of the filesystem of --root-dir. */
void kc_build_allocatable(const struct kc_build_context *ctx, struct resource_allocatable *ret);
