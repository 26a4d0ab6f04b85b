/* SPDX-License-Identifier: Apache-2.0 */
/* The clean-up phase of a pod's pass, run only when the pass changed nothing and failed nowhere (the pod is
 * settled): the dead containers and sandboxes kr_compute_pod_gc picks (containerGC with the GC policy's MaxPerPodContainer,
 * sandbox GC) are removed, containers first. */

#include "kubelet/pod_sync.h"

#include "basic/log.h"
#include "basic/time.h"

/* the phase's own state: what to remove */
struct cleanup_step {
        struct kr_pod_gc gc;
};

static void remove_sandboxes(struct pod_sync *s);
static void cleanup_done(struct pod_sync *s);

static void on_remove(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;

        if (reply->r < 0 && reply->r != -ENOENT) {
                log_error("pod %s: remove: %s", kubelet_sync_pod_desc(s), reply->message);
                s->error = true;
        }
        kubelet_sync_fanout_release(s);
}

void kubelet_sync_cleanup(struct pod_sync *s) {
        struct cleanup_step *c = calloc(1, sizeof(*c));
        struct kr_gc_policy policy = { .min_age_usec = s->k->opts->minimum_container_ttl_usec,
                                       .max_per_pod_container = s->k->opts->max_per_pod_container,
                                       .max_containers = s->k->opts->max_containers };

        s->cleanup = c;
        if (!c || kr_compute_pod_gc(s->pod, s->status, &policy, (int64_t) now_realtime_usec() * 1000, &c->gc) < 0 ||
            (c->gc.n_containers == 0 && c->gc.n_sandboxes == 0)) {
                cleanup_done(s);
                return;
        }
        kubelet_sync_fanout_begin(s, remove_sandboxes);
        for (size_t i = 0; i < c->gc.n_containers; i++) {
                Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
                int r;

                log_v(2, "pod %s: removing container %.12s", kubelet_sync_pod_desc(s), c->gc.containers[i]);
                req.container_id = (char *) c->gc.containers[i];
                r = cri_remove_container(s->k->cri, &req, 0, on_remove, s);
                kubelet_sync_fanout_sent(s, "RemoveContainer", r);
        }
        kubelet_sync_fanout_end(s);
}

static void remove_sandboxes(struct pod_sync *s) {
        struct cleanup_step *c = s->cleanup;

        kubelet_sync_fanout_begin(s, cleanup_done);
        for (size_t i = 0; i < c->gc.n_sandboxes; i++) {
                Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
                int r;

                log_v(2, "pod %s: removing sandbox %.12s", kubelet_sync_pod_desc(s), c->gc.sandboxes[i]);
                req.pod_sandbox_id = (char *) c->gc.sandboxes[i];
                r = cri_remove_pod_sandbox(s->k->cri, &req, 0, on_remove, s);
                kubelet_sync_fanout_sent(s, "RemovePodSandbox", r);
        }
        kubelet_sync_fanout_end(s);
}

void kubelet_sync_cleanup_free(struct pod_sync *s) {
        struct cleanup_step *c = TAKE_PTR(s->cleanup);

        if (!c)
                return;
        kr_pod_gc_done(&c->gc);
        free(c);
}

static void cleanup_done(struct pod_sync *s) {
        kubelet_sync_cleanup_free(s);
        kubelet_pod_sync_done(s);
}
