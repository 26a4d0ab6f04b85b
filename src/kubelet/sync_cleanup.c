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

/* one removal in flight */
struct removal {
        struct pod_sync *s;
        bool sandbox;
        char *id;
};

/* also the drop of s->removal_calls: a removal cancelled with its pass */
static void removal_free(void *userdata) {
        struct removal *x = userdata;
        free(x->id);
        free(x);
}

static void remove_sandboxes(struct pod_sync *s);
static void cleanup_done(struct pod_sync *s);

/* A removal the runtime refuses is not the pass's error (the worker's back-off would try it again every few
 * seconds, for ever): the id waits out its own back-off (kubelet_removal_failed, logged once per step), the pod gets
 * a Warning event, and the pass wakes when the back-off ends. A pod no longer desired whose leftovers are all such
 * is terminated anyway (kubelet_pod_sync_done); the container GC tries them again. */
static void on_remove(const struct cri_reply *reply, void *userdata) {
        struct removal *x = userdata;
        struct pod_sync *s = x->s;

        if (reply->r >= 0 || reply->r == -ENOENT)
                s->env->ops->removal_succeeded(s->env->userdata, x->id);
        else if (reply->r != -ECANCELED) {
                s->env->ops->removal_failed(s->env->userdata, x->sandbox, x->id, kubelet_sync_pod_desc(s),
                                            reply->message);
                /* upstream has no event of its own for this (its container GC only logs); the pod-level reason of a
                 * kill that failed is the nearest */
                kubelet_sync_event_any(s, NULL, "Warning", "FailedKillPod",
                                       "error killing pod: failed to remove %s \"%s\": %s",
                                       x->sandbox ? "pod sandbox" : "container", x->id, strna(reply->message));
        }
        removal_free(x);
        kubelet_sync_fanout_release(s);
}

/* what may be removed now: not while a refusal's back-off runs (the pass wakes when the first one ends) */
static bool may_remove(struct pod_sync *s, const char *id) {
        uint64_t until;

        if (!s->env->ops->removal_blocked(s->env->userdata, id, &until))
                return true;
        if (s->pod && (s->wake_usec == 0 || until < s->wake_usec))
                s->wake_usec = until;
        return false;
}

static void issue_remove(struct pod_sync *s, bool sandbox, const char *id) {
        struct removal *x = calloc(1, sizeof(*x));
        int r;

        if (!x || !(x->id = strdup(id))) {
                free(x);
                kubelet_sync_call_failed(s, sandbox ? "RemovePodSandbox" : "RemoveContainer", -ENOMEM);
                return;
        }
        x->s = s;
        x->sandbox = sandbox;
        s->removal_calls.drop = removal_free;
        log_v(2, "pod %s: removing %s %.12s", kubelet_sync_pod_desc(s), sandbox ? "sandbox" : "container", id);
        if (sandbox) {
                Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
                req.pod_sandbox_id = x->id;
                r = cri_remove_pod_sandbox(s->env->cri, &req, 0, on_remove, x, &s->removal_calls);
        } else {
                Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
                req.container_id = x->id;
                r = cri_remove_container(s->env->cri, &req, 0, on_remove, x, &s->removal_calls);
        }
        if (r < 0)
                removal_free(x);
        else
                s->env->ops->removal_started(s->env->userdata,
                                             id); /* the container GC leaves it alone until on_remove */
        kubelet_sync_fanout_sent(s, sandbox ? "RemovePodSandbox" : "RemoveContainer", r);
}

void kubelet_sync_cleanup(struct pod_sync *s) {
        struct cleanup_step *c = calloc(1, sizeof(*c));
        struct kr_gc_policy policy = { .min_age_usec = s->env->opts->minimum_container_ttl_usec,
                                       .max_per_pod_container = s->env->opts->max_per_pod_container,
                                       .max_containers = s->env->opts->max_containers };

        s->cleanup = c;
        if (!c || kr_compute_pod_gc(s->pod, s->status, &policy, (int64_t) now_realtime_usec() * 1000, &c->gc) < 0 ||
            (c->gc.n_containers == 0 && c->gc.n_sandboxes == 0)) {
                cleanup_done(s);
                return;
        }
        kubelet_sync_fanout_begin(s, remove_sandboxes);
        for (size_t i = 0; i < c->gc.n_containers; i++)
                if (may_remove(s, c->gc.containers[i]))
                        issue_remove(s, false, c->gc.containers[i]);
        kubelet_sync_fanout_end(s);
}

static void remove_sandboxes(struct pod_sync *s) {
        struct cleanup_step *c = s->cleanup;

        kubelet_sync_fanout_begin(s, cleanup_done);
        for (size_t i = 0; i < c->gc.n_sandboxes; i++)
                if (may_remove(s, c->gc.sandboxes[i]))
                        issue_remove(s, true, c->gc.sandboxes[i]);
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
