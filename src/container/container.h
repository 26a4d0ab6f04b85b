/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the runtime says exists, in the runtime-neutral terms of upstream's pkg/kubelet/container
 * ("kubecontainer": Pod, Container, PodSandboxStatus, PodStatus): sandboxes and containers as plain structs.
 * kuberuntime/convert.h fills them from CRI replies; the prober, the PLEG, the status and the server read them
 * without knowing CRI. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/strmap.h"

enum kc_sandbox_state {
        KC_SANDBOX_READY,
        KC_SANDBOX_NOTREADY,
};

enum kc_container_state {
        KC_CONTAINER_CREATED,
        KC_CONTAINER_RUNNING,
        KC_CONTAINER_EXITED,
        KC_CONTAINER_UNKNOWN,
};

struct kc_sandbox {
        char *id;
        char *name;
        char *namespace_;
        char *uid;
        uint32_t attempt;
        enum kc_sandbox_state state;
        int64_t created_at; /* unix nsec */
        struct strmap labels;
        struct strmap annotations;

        /* from PodSandboxStatus (have_status) */
        bool have_status;
        char *ip;
        bool host_network;
};

struct kc_container {
        char *id;
        char *sandbox_id;
        char *name;
        uint32_t attempt;
        enum kc_container_state state;
        int64_t created_at; /* unix nsec */
        char *image;        /* image spec as given at create time */
        char *image_ref;    /* resolved image id */
        struct strmap labels;
        struct strmap annotations;
        char *pod_uid;     /* from labels */
        char *hash;        /* ANNOTATION_CONTAINER_HASH, "" if absent */
        int restart_count; /* ANNOTATION_CONTAINER_RESTART_COUNT */

        /* from ContainerStatus (have_status) */
        bool have_status;
        int64_t started_at;  /* unix nsec, 0 = never */
        int64_t finished_at; /* unix nsec, 0 = not finished */
        int32_t exit_code;
        char *reason;
        char *message;
        char *log_path;
        bool have_resources; /* ContainerStatus.resources.linux: what it runs with now */
        int64_t res_cpu_period, res_cpu_quota, res_cpu_shares, res_memory_limit;
        /* ContainerStatus.user.linux: the identity its process runs with (containerd 2.x reports it) */
        bool have_user;
        int64_t user_uid, user_gid;
        int64_t *user_groups; /* at most KC_USER_GROUPS_MAX */
        size_t n_user_groups;
        int stop_signal; /* ContainerStatus.stop_signal: the CRI's Signal, 0 when the runtime reports none */
};

#define KC_USER_GROUPS_MAX 256 /* kept of a ContainerStatus's supplemental groups */

struct kc_sandbox *kc_sandbox_free(struct kc_sandbox *s);
struct kc_container *kc_container_free(struct kc_container *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kc_sandbox *, kc_sandbox_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kc_container *, kc_container_free)
int kc_container_copy(const struct kc_container *c, struct kc_container **ret);

const char *kc_container_state_to_string(enum kc_container_state s);

/* All that is known of one pod in the runtime (kubecontainer.PodStatus). Sandboxes and containers are
 * sorted newest first (created_at descending). */
struct kc_pod_status {
        char *uid;
        char *name;
        char *namespace_;
        size_t n_sandboxes;
        struct kc_sandbox **sandboxes;
        size_t n_containers;
        struct kc_container **containers;
};

struct kc_pod_status *kc_pod_status_free(struct kc_pod_status *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kc_pod_status *, kc_pod_status_free)
int kc_pod_status_new(const char *uid, struct kc_pod_status **ret);
/* take ownership (even on failure) */
int kc_pod_status_add_sandbox(struct kc_pod_status *s, struct kc_sandbox *sb);
int kc_pod_status_add_container(struct kc_pod_status *s, struct kc_container *c);
void kc_pod_status_sort(struct kc_pod_status *s);
/* newest container with that name, or NULL */
const struct kc_container *kc_pod_status_find_container(const struct kc_pod_status *s, const char *name);
