/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Building CRI requests from a pod spec (kuberuntime_sandbox.go generatePodSandboxConfig,
 * kuberuntime_container.go generateContainerConfig). Every field of the built messages is malloc'ed, so
 * kr_pb_free() (protobuf_c_message_free_unpacked) frees the whole tree. */

#include "apis/pod.h"
#include "cri/cri.h"

void kr_pb_free(void *msg); /* accepts NULL */

/* "<pod_logs_dir>/<namespace>_<name>_<uid>" */
char *kr_pod_log_dir(const char *pod_logs_dir, const struct pod *pod);

struct pod_objects;

/* What a builder reports besides its result (optional, see kr_build_context.report): the message of a
 * configuration error (for the container's CreateContainerConfigError) and warning events to record. */
struct kr_build_report {
        char *error;
        char **event_reasons;   /* strv, parallel to event_messages */
        char **event_messages;
};
void kr_build_report_done(struct kr_build_report *r); /* accepts NULL */
int kr_build_report_event(struct kr_build_report *r, const char *reason, const char *message); /* r may be NULL */

/* What the builders need beyond the pod spec, gathered by the sync pass (pod_sync.c build_context()). Any
 * field may be unset (NULL / 0) when the sync does not know it yet. */
struct kr_build_context {
        const char *pod_logs_dir;           /* --pod-logs-dir */
        const char *root_dir;               /* --root-dir: pod directories live in <root_dir>/pods/<uid> */
        const char *node_name;
        const char *node_ip;                /* status.hostIP */
        const char *pod_ip;                 /* status.podIP: known once the sandbox runs (NULL before) */
        const struct pod_objects *objects;  /* the ConfigMaps, Secrets and tokens fetched for this pod */
        const char *cgroup_parent;          /* the pod cgroup (src/cm), NULL without --cgroups-per-qos */
        int64_t alloc_cpu_milli;            /* node allocatable (resourceFieldRef without a limit), 0 = unknown */
        int64_t alloc_memory_bytes;
        bool image_user_known;              /* the image's user from ImageStatus (runAsUser default, runAsNonRoot) */
        bool image_uid_set;
        int64_t image_uid;
        const char *image_username;
        char *const *cluster_dns;           /* --cluster-dns (strv, NULL = none) */
        const char *cluster_domain;         /* --cluster-domain */
        const char *resolv_conf;            /* --resolv-conf; NULL or "" = none */
        struct kr_build_report *report;     /* output, may be NULL */
};

int kr_build_sandbox_config(const struct pod *pod, uint32_t attempt, const struct kr_build_context *ctx,
                            Runtime__V1__PodSandboxConfig **ret);

/* image_ref: the resolved image (id) to run; restart_count: attempt of this container. */
int kr_build_container_config(const struct pod *pod, const struct container *c, uint32_t restart_count,
                              const char *image_ref, const struct kr_build_context *ctx,
                              Runtime__V1__ContainerConfig **ret);

/* Copy of a sandbox config is needed in CreateContainer too: build once per sync and keep. */

/* Labels: pod labels + io.kubernetes.pod.{name,namespace,uid} */
int kr_sandbox_labels(const struct pod *pod, struct strmap *ret);
int kr_container_labels(const struct pod *pod, const struct container *c, struct strmap *ret);
int kr_container_annotations(const struct pod *pod, const struct container *c, uint32_t restart_count,
                             struct strmap *ret);
