/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the runtime says exists: sandboxes and containers as observed through CRI, copied out of the
 * protobuf replies into plain structs (kubecontainer.PodStatus in upstream terms). */

#include <stdbool.h>
#include <stdint.h>

#include "basic/util.h"
#include "cri/cri.h"

enum kr_sandbox_state {
        KR_SANDBOX_READY,
        KR_SANDBOX_NOTREADY,
};

enum kr_container_state {
        KR_CONTAINER_CREATED,
        KR_CONTAINER_RUNNING,
        KR_CONTAINER_EXITED,
        KR_CONTAINER_UNKNOWN,
};

struct kr_sandbox {
        char *id;
        char *name;
        char *namespace_;
        char *uid;
        uint32_t attempt;
        enum kr_sandbox_state state;
        int64_t created_at; /* unix nsec */
        struct strmap labels;
        struct strmap annotations;

        /* from PodSandboxStatus (have_status) */
        bool have_status;
        char *ip;
        bool host_network;
};

struct kr_container {
        char *id;
        char *sandbox_id;
        char *name;
        uint32_t attempt;
        enum kr_container_state state;
        int64_t created_at; /* unix nsec */
        char *image;        /* image spec as given at create time */
        char *image_ref;    /* resolved image id */
        struct strmap labels;
        struct strmap annotations;
        char *pod_uid;      /* from labels */
        char *hash;         /* ANNOTATION_CONTAINER_HASH, "" if absent */
        int restart_count;  /* ANNOTATION_CONTAINER_RESTART_COUNT */

        /* from ContainerStatus (have_status) */
        bool have_status;
        int64_t started_at;  /* unix nsec, 0 = never */
        int64_t finished_at; /* unix nsec, 0 = not finished */
        int32_t exit_code;
        char *reason;
        char *message;
        char *log_path;
};

struct kr_sandbox *kr_sandbox_free(struct kr_sandbox *s);
struct kr_container *kr_container_free(struct kr_container *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kr_sandbox *, kr_sandbox_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kr_container *, kr_container_free)
int kr_sandbox_copy(const struct kr_sandbox *s, struct kr_sandbox **ret);
int kr_container_copy(const struct kr_container *c, struct kr_container **ret);

/* From a ListPodSandbox / ListContainers entry. */
int kr_sandbox_from_cri(const Runtime__V1__PodSandbox *p, struct kr_sandbox **ret);
int kr_container_from_cri(const Runtime__V1__Container *p, struct kr_container **ret);
/* Fill the status part from PodSandboxStatus / ContainerStatus replies. */
int kr_sandbox_set_status(struct kr_sandbox *s, const Runtime__V1__PodSandboxStatus *st);
int kr_container_set_status(struct kr_container *c, const Runtime__V1__ContainerStatus *st);

const char *kr_sandbox_state_to_string(enum kr_sandbox_state s);
const char *kr_container_state_to_string(enum kr_container_state s);

/* All that is known of one pod in the runtime (kubecontainer.PodStatus). Sandboxes and containers are
 * sorted newest first (created_at descending). */
struct kr_pod_status {
        char *uid;
        char *name;
        char *namespace_;
        size_t n_sandboxes;
        struct kr_sandbox **sandboxes;
        size_t n_containers;
        struct kr_container **containers;
};

struct kr_pod_status *kr_pod_status_free(struct kr_pod_status *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct kr_pod_status *, kr_pod_status_free)
int kr_pod_status_new(const char *uid, struct kr_pod_status **ret);
/* take ownership (even on failure) */
int kr_pod_status_add_sandbox(struct kr_pod_status *s, struct kr_sandbox *sb);
int kr_pod_status_add_container(struct kr_pod_status *s, struct kr_container *c);
void kr_pod_status_sort(struct kr_pod_status *s);
/* newest container with that name, or NULL */
const struct kr_container *kr_pod_status_find_container(const struct kr_pod_status *s, const char *name);
