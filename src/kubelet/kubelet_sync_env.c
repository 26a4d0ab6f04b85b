/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's side of the pod sync passes' environment (pod_sync_env.h): what a pass asks of the kubelet and
 * reports back to it, answered from the pod workers and the kubelet's managers: among them the containers' waiting
 * reasons (a worker's `waiting`, read by the status) and the pod cgroup made before the sandbox. */

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string.h"
#include "basic/strv.h"
#include "config/config.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/pod_sync.h"

const struct node_runtime_features *kubelet_runtime_features(const struct kubelet *k) {
        return k->node ? node_manager_runtime_features(k->node) : runtime_poll_features(k->runtime_poll);
}

static void env_worker_state(void *userdata, struct pod_worker *w, struct pod_sync_worker_state *ret) {
        *ret = (struct pod_sync_worker_state) {
                .pod = w->pod,
                .last_pod = w->last_pod,
                .grace_seconds = w->grace_seconds,
                .grace_override = w->grace_override,
                .deleting = w->deleting,
                .terminated = w->terminated,
                .deadline_exceeded = w->deadline_exceeded,
                .pending = w->pending,
                .resize_in_progress = w->resize_in_progress,
                .owned_volumes = w->owned_volumes,
        };
}

static void env_event(void *userdata, struct pod_worker *w, bool any, const char *container, const char *type,
                      const char *reason, const char *message) {
        if (any)
                kubelet_worker_event_any(w, container, type, reason, "%s", message);
        else
                kubelet_worker_event(w, container, type, reason, "%s", message);
}

/* the container's waiting reason and message (w->waiting) until it starts */
static int env_set_waiting(void *userdata, struct pod_worker *w, const char *name, const char *reason,
                           const char *message) {
        _cleanup_free_ char *msg = strdup(message);
        struct container_waiting *n;

        if (!msg)
                return -ENOMEM;
        for (size_t i = 0; i < w->n_waiting; i++)
                if (streq(w->waiting[i].name, name)) {
                        w->waiting[i].reason = reason;
                        free(w->waiting[i].message);
                        w->waiting[i].message = TAKE_PTR(msg);
                        return 0;
                }
        n = realloc(w->waiting, sizeof(*n) * (w->n_waiting + 1));
        if (!n)
                return -ENOMEM;
        w->waiting = n;
        n[w->n_waiting] = (struct container_waiting) { .name = strdup(name),
                                                       .reason = reason,
                                                       .message = TAKE_PTR(msg) };
        if (!n[w->n_waiting].name) {
                free(n[w->n_waiting].message);
                return -ENOMEM;
        }
        w->n_waiting++;
        return 0;
}

static void env_clear_waiting(void *userdata, struct pod_worker *w, const char *name) {
        for (size_t i = 0; i < w->n_waiting; i++)
                if (streq(w->waiting[i].name, name)) {
                        free(w->waiting[i].name);
                        free(w->waiting[i].message);
                        w->waiting[i] = w->waiting[--w->n_waiting];
                        return;
                }
}

static void env_resize_error(void *userdata, struct pod_worker *w, const char *message) {
        kubelet_worker_resize_error(w, message);
}

static bool env_wait_for_name(void *userdata, struct pod_worker *w) {
        w->waiting_for_name = kubelet_name_is_busy(userdata, w);
        return w->waiting_for_name;
}

static bool env_runtime_class_warn_once(void *userdata, struct pod_worker *w) {
        bool first = !w->runtime_class_warned;

        w->runtime_class_warned = true;
        return first;
}

static void env_set_runtime_rro(void *userdata, struct pod_worker *w, bool rro) {
        w->runtime_supports_rro = rro;
}

static void env_volume_owned(void *userdata, struct pod_worker *w, const char *name) {
        (void) strv_extend(&w->owned_volumes, name);
}

static void env_pod_finished(void *userdata, struct pod_worker *w) {
        kubelet_pod_release_volumes(userdata, w->uid);
}

/* The pass is over: its observation goes to the status, then the worker decides what comes next. (A pass never
 * ends while the kubelet is being freed: the passes go first, each cancelling what it has in flight.) */
static void env_pass_done(void *userdata, struct pod_worker *w, struct pod_sync_result *r) {
        struct kubelet *k = userdata;

        w->leftovers = r->leftovers;
        assert(!k->stopping);
        if (r->decided && r->pod)
                kubelet_worker_observed(w, r->pod, TAKE_PTR(r->status));
        else if (r->decided && !r->pod && w->last_pod && (pod_config_is_static(w->last_pod) || w->deleting))
                /* its mirror pod shows it; a deleted API pod keeps reporting until it is terminal */
                kubelet_worker_observed_terminating(w, TAKE_PTR(r->status));
        w->sync = NULL;
        kubelet_worker_sync_done(w, r->did_work, r->wake_usec, r->error, r->gone);
}

static struct kube_client *env_client(void *userdata) {
        struct kubelet *k = userdata;
        return k->client;
}

static const struct node_runtime_features *env_runtime_features(void *userdata) {
        return kubelet_runtime_features(userdata);
}

static void env_removal_started(void *userdata, const char *id) {
        kubelet_removal_started(userdata, id);
}

static bool env_removal_blocked(void *userdata, const char *id, uint64_t *ret_until_usec) {
        return kubelet_removal_blocked(userdata, id, ret_until_usec);
}

static void env_removal_failed(void *userdata, bool sandbox, const char *id, const char *pod_desc,
                               const char *message) {
        kubelet_removal_failed(userdata, sandbox, id, pod_desc, message);
}

static void env_removal_succeeded(void *userdata, const char *id) {
        kubelet_removal_succeeded(userdata, id);
}

/* 1: the cgroup manager is on and the QoS cgroups are up to date, so the pod's cgroup is to be made; 0: no cgroup
 * manager; negative errno */
static int pod_cgroup_prepare(struct kubelet *k) {
        int r;

        if (!cm_enabled(k->cm))
                return 0;
        r = kubelet_update_qos_cgroups(k);
        return r < 0 ? r : 1;
}

/* the QoS cgroups updated for the admitted pods, and the pod's cgroup made (before its sandbox, or grown for a
 * resize) */
static int env_pod_cgroup_ensure(void *userdata, const struct pod *pod, struct ck_error **ret_error) {
        struct kubelet *k = userdata;
        int r = pod_cgroup_prepare(k);

        return r <= 0 ? r : cm_pod_ensure(k->cm, pod, ret_error);
}

/* the same, cm_pod_ensure_async(): 0 done, 1 done is called later, negative an error */
static int env_pod_cgroup_ensure_async(void *userdata, const struct pod *pod, cm_done_fn done, void *done_userdata,
                                       struct ck_error **ret_error) {
        struct kubelet *k = userdata;
        int r = pod_cgroup_prepare(k);

        return r <= 0 ? r : cm_pod_ensure_async(k->cm, pod, done, done_userdata, ret_error);
}

static void env_container_started(void *userdata, const struct pod *pod, const char *container,
                                  const char *container_id, uint32_t restart_count) {
        kubelet_container_started(userdata, pod, container, container_id, restart_count);
}

static int env_cpu_apply(void *userdata, const struct pod *pod, const struct container *c,
                         Runtime__V1__ContainerConfig *cfg) {
        return kubelet_cpu_apply(userdata, pod, c, cfg);
}

static int env_dra_prepare(void *userdata, const struct pod *pod, const struct container *c, kubelet_dra_done_t done,
                           void *done_userdata, struct kubelet_dra_job **ret) {
        return kubelet_dra_prepare(userdata, pod, c, done, done_userdata, ret);
}

static const struct pod_sync_ops sync_ops = {
        .worker_state = env_worker_state,
        .event = env_event,
        .set_waiting = env_set_waiting,
        .clear_waiting = env_clear_waiting,
        .resize_error = env_resize_error,
        .wait_for_name = env_wait_for_name,
        .runtime_class_warn_once = env_runtime_class_warn_once,
        .set_runtime_rro = env_set_runtime_rro,
        .volume_owned = env_volume_owned,
        .pod_finished = env_pod_finished,
        .pass_done = env_pass_done,
        .client = env_client,
        .runtime_features = env_runtime_features,
        .removal_started = env_removal_started,
        .removal_blocked = env_removal_blocked,
        .removal_failed = env_removal_failed,
        .removal_succeeded = env_removal_succeeded,
        .pod_cgroup_ensure = env_pod_cgroup_ensure,
        .pod_cgroup_ensure_async = env_pod_cgroup_ensure_async,
        .container_started = env_container_started,
        .cpu_apply = env_cpu_apply,
        .dra_prepare = env_dra_prepare,
};

void kubelet_sync_env_setup(struct kubelet *k) {
        k->sync_env = (struct pod_sync_env) {
                .base = k->base,
                .opts = k->opts,
                .cri = k->cri,
                .hook_env = &k->hook_env,
                .prober = k->prober,
                .node_ip = k->node_ip,
                .cluster_dns = k->cluster_dns,
                .admission = &k->admission,
                .machine = &k->machine,
                .swap_v2 = k->swap_v2,
                .image_puller = k->image_puller,
                .sandbox_slots = k->sandbox_slots,
                .crash_backoff = &k->crash_backoff,
                .image_backoff = &k->image_backoff,
                .objects = k->objects,
                .volumes = k->volumes,
                .reaper = k->reaper,
                .pool_contents = k->pool_contents,
                .userns = k->userns,
                .devices = k->devices,
                .credprov = k->credprov,
                .pull_records = k->pull_records,
                .pull_verify_policy = k->pull_verify_policy,
                .cm = k->cm,
                .ops = &sync_ops,
                .userdata = k,
        };
}
