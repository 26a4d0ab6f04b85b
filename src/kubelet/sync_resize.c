/* SPDX-License-Identifier: Apache-2.0 */
/* The resize phase of a pod's pass (doPodResizeAction): the running containers whose allocated resources differ
 * from those they run with (kr_compute_pod_actions' update list) get them in place. The pod cgroup is raised first
 * where its new values are larger, the containers are updated (UpdateContainerResources), then the pod cgroup gets
 * its new values (lowered where they are smaller): a container never asks for more than its pod cgroup allows. A
 * container whose resizePolicy asks for a restart was killed by the kill phase and starts with its new resources in
 * the start phase. A failure is the PodResizeInProgress condition's Error, and the pass is retried. */

#include "kubelet/pod_sync.h"

#include <inttypes.h>
#include <sys/sysinfo.h>

#include "basic/log.h"
#include "basic/string.h"
#include "kuberuntime/resources.h"

struct resize_call {
        struct pod_sync *s;
        char *name;
};

static void resize_done(struct pod_sync *s);

/* also the drop of s->resize_calls: an update cancelled with its pass */
static void resize_call_free(void *userdata) {
        struct resize_call *c = userdata;
        free(c->name);
        free(c);
}

static void on_update(const struct cri_reply *reply, void *userdata) {
        struct resize_call *c = userdata;
        struct pod_sync *s = c->s;

        if (reply->r < 0) {
                log_error("pod %s: container %s: UpdateContainerResources: %s", kubelet_sync_pod_desc(s), c->name,
                          reply->message);
                s->env->ops->resize_error(s->env->userdata, s->w, reply->message);
                s->error = true;
        } else
                log_info("Resized container: pod=\"%s\" containerName=\"%s\"", kubelet_sync_pod_desc(s), c->name);
        resize_call_free(c);
        kubelet_sync_fanout_release(s);
}

static uint64_t node_memory(void) {
        struct sysinfo si;
        return sysinfo(&si) == 0 ? (uint64_t) si.totalram * si.mem_unit : 0;
}

static void update_container(struct pod_sync *s, const struct kr_container_update *u) {
        const struct container *c = &s->pod->spec.containers[u->index];
        Runtime__V1__UpdateContainerResourcesRequest req = RUNTIME__V1__UPDATE_CONTAINER_RESOURCES_REQUEST__INIT;
        Runtime__V1__LinuxContainerResources lr = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
        struct kr_linux_resources r;
        struct resize_call *call;
        int q;

        kr_container_resources(s->pod, c, node_memory(), &r);
        lr.cpu_period = r.cpu_period;
        lr.cpu_quota = r.cpu_quota;
        lr.cpu_shares = r.cpu_shares;
        lr.memory_limit_in_bytes = r.memory_limit_in_bytes;
        /* no swap: the swap limit follows the memory limit (it may not be below it) */
        lr.memory_swap_limit_in_bytes = r.memory_limit_in_bytes;
        lr.oom_score_adj = r.oom_score_adj;
        req.container_id = u->container->id;
        req.linux = &lr;
        call = calloc(1, sizeof(*call));
        if (!call || !(call->name = strdup(c->name))) {
                free(call);
                kubelet_sync_call_failed(s, "UpdateContainerResources", -ENOMEM);
                return;
        }
        call->s = s;
        s->resize_calls.drop = resize_call_free;
        log_v(2,
              "pod %s: container %s: resizing to cpu shares %" PRId64 ", quota %" PRId64 "/%" PRId64
              ", memory %" PRId64,
              kubelet_sync_pod_desc(s), c->name, r.cpu_shares, r.cpu_quota, r.cpu_period, r.memory_limit_in_bytes);
        q = cri_update_container_resources(s->env->cri, &req, 0, on_update, call, &s->resize_calls);
        if (q < 0) {
                resize_call_free(call);
                kubelet_sync_call_failed(s, "UpdateContainerResources", q);
                return;
        }
        kubelet_sync_fanout_add(s);
        s->did_work = true;
}

void kubelet_sync_resize(struct pod_sync *s) {
        int r;

        /* nothing to resize, or a new sandbox (its pod cgroup is made with the new values) */
        if (s->actions.create_sandbox ||
            (s->actions.n_update == 0 && !kubelet_sync_worker_state(s).resize_in_progress)) {
                kubelet_pod_sync_next(s);
                return;
        }
        r = cm_pod_grow(s->env->cm, s->pod);
        if (r < 0)
                log_warning("pod %s: cannot raise its pod cgroup for a resize: %s", kubelet_sync_pod_desc(s),
                            strerror(-r));
        kubelet_sync_fanout_begin(s, resize_done);
        for (size_t i = 0; i < s->actions.n_update; i++)
                update_container(s, &s->actions.update[i]);
        kubelet_sync_fanout_end(s);
}

static void resize_done(struct pod_sync *s) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int r;

        /* the pod cgroup's (and the burstable QoS cgroup's) new values, lowered once the containers are */
        if (!s->error) {
                r = s->env->ops->pod_cgroup_ensure(s->env->userdata, s->pod, &err);
                if (r < 0) {
                        const char *m = ck_error_message_or(err, r);
                        s->env->ops->resize_error(s->env->userdata, s->w, m);
                        log_error("pod %s: updating the pod cgroup for a resize: %s", kubelet_sync_pod_desc(s), m);
                        s->error = true;
                } else if (s->actions.n_update > 0)
                        s->env->ops->resize_error(s->env->userdata, s->w, NULL);
        }
        kubelet_pod_sync_next(s);
}
