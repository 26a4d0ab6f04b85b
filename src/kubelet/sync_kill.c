/* SPDX-License-Identifier: Apache-2.0 */
/* The kill phase of a pod's pass (killPodWithSyncResult / killContainersWithSyncResult): the containers the
 * decision named, all at once, in the order kr_compute_kill_order gives (newTerminationOrdering: with KillPod a
 * sidecar waits for the main containers and for the sidecars started after it), then, with KillPod, the pod's
 * ready sandboxes. Each container is stopped by killContainer: its preStop hook, then (a sidecar) its turn, then
 * StopContainer with what is left of the grace period. */

#include "kubelet/pod_sync.h"

#include <inttypes.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "kubelet/hooks.h"
#include "container/labels.h"

static void stop_sandboxes(struct pod_sync *s);

/* the phase's own state: the targets and their order (terminationOrdering) */
struct kill_step {
        struct kr_kill_target *targets;
        size_t n;
        bool *terminated;           /* per target: StopContainer returned */
        struct kill_call **waiting; /* per target: its call waiting for its turn, or NULL */
};

/* ---------------------------------------------------------------- killContainer */

/* one container being killed */
struct kill_call {
        struct pod_sync *s;
        void (*done)(struct pod_sync *s);
        char *id, *name;
        int64_t grace;
        bool remove;
        uint64_t hook_start_usec;
        struct lifecycle_handler *owned_pre_stop; /* decoded from the container's annotation */
        bool ordered;                             /* s->kill->targets[index] is this one */
        size_t index;
        struct event *turn_timer; /* waiting for its turn: what is left of the grace period */
        uint64_t turn_start_usec;
};

static void kill_call_free(struct kill_call *c) {
        if (!c)
                return;
        if (c->turn_timer)
                event_free(c->turn_timer);
        lifecycle_handler_free(c->owned_pre_stop);
        free(c->id);
        free(c->name);
        free(c);
}

static void kill_call_drop(void *userdata) {
        kill_call_free(userdata);
}

static void kill_call_end(struct kill_call *c) {
        struct pod_sync *s = c->s;
        void (*done)(struct pod_sync * s) = c->done;

        kill_call_free(c);
        done(s);
}

void kubelet_sync_kill_free(struct pod_sync *s) {
        struct kill_step *k = TAKE_PTR(s->kill);

        if (!k)
                return;
        for (size_t i = 0; k->waiting && i < k->n; i++)
                kill_call_free(k->waiting[i]); /* the pass is being freed while it waits for its turn */
        kr_kill_targets_free(k->targets, k->n);
        free(k->terminated);
        free(k->waiting);
        free(k);
}

static void issue_stop(struct kill_call *c);

/* has every container this one waits for stopped? */
static bool turn_arrived(const struct kill_step *k, size_t index) {
        for (size_t i = 0; i < k->targets[index].n_after; i++)
                if (!k->terminated[k->targets[index].after[i]])
                        return false;
        return true;
}

/* its turn came (or its grace period ran out waiting): StopContainer with what is left, at least the minimum */
static void take_turn(struct kill_call *c) {
        struct pod_sync *s = c->s;
        int64_t waited = (int64_t) ((now_usec() - c->turn_start_usec) / USEC_PER_SEC);

        s->kill->waiting[c->index] = NULL;
        if (c->turn_timer) {
                event_free(c->turn_timer);
                c->turn_timer = NULL;
        }
        c->grace = MAX(c->grace - waited, (int64_t) MINIMUM_GRACE_PERIOD_SECONDS);
        log_v(3, "pod %s: container %s: its turn to stop came after %" PRId64 "s", kubelet_sync_pod_desc(s), c->name,
              waited);
        issue_stop(c);
}

static void on_turn_timeout(evutil_socket_t fd, short what, void *userdata) {
        struct kill_call *c = userdata;
        log_info("pod %s: container %s: the grace period ran out waiting for the containers it stops after",
                 kubelet_sync_pod_desc(c->s), c->name);
        take_turn(c);
}

/* a container stopped: the ones waiting for it may go (containerTerminated) */
static void mark_terminated(struct kill_call *c) {
        struct kill_step *k = c->s->kill;

        if (!c->ordered || !k)
                return;
        k->terminated[c->index] = true;
        for (size_t i = 0; i < k->n; i++)
                if (k->waiting[i] && turn_arrived(k, i))
                        take_turn(k->waiting[i]);
}

/* after the preStop hook: wait for its turn with what is left of the grace period (waitForTurn), then stop it */
static void stop_in_turn(struct kill_call *c, int64_t remaining) {
        struct pod_sync *s = c->s;
        struct kill_step *k = s->kill;

        if (c->ordered && remaining > 0 && !turn_arrived(k, c->index)) {
                c->grace = remaining;
                c->turn_start_usec = now_usec();
                c->turn_timer = evtimer_new(s->env->base, on_turn_timeout, c);
                if (c->turn_timer) {
                        k->waiting[c->index] = c;
                        evtimer_add_usec(c->turn_timer, (uint64_t) remaining * USEC_PER_SEC);
                        log_v(3, "pod %s: container %s waits for its turn to stop (at most %" PRId64 "s)",
                              kubelet_sync_pod_desc(s), c->name, remaining);
                        return;
                }
        }
        c->grace = MAX(remaining, (int64_t) MINIMUM_GRACE_PERIOD_SECONDS);
        issue_stop(c);
}

static void on_remove_stopped(const struct cri_reply *reply, void *userdata) {
        struct kill_call *c = userdata;
        struct pod_sync *s = c->s;

        if (reply->r < 0 && reply->r != -ENOENT) {
                /* e.g. still "starting": nothing new may start before it is gone; retried with back-off */
                log_error("pod %s: RemoveContainer %.12s: %s", kubelet_sync_pod_desc(s), c->id, reply->message);
                s->error = true;
        }
        kill_call_end(c);
}

static void on_stop_container(const struct cri_reply *reply, void *userdata) {
        struct kill_call *c = userdata;
        struct pod_sync *s = c->s;

        if (reply->r < 0 && reply->r != -ENOENT) {
                log_error("pod %s: StopContainer %.12s: %s", kubelet_sync_pod_desc(s), c->id, reply->message);
                s->error = true;
        } else
                mark_terminated(c);
        if (reply->r >= 0 && c->remove) {
                Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
                req.container_id = c->id;
                if (cri_remove_container(s->env->cri, &req, 0, on_remove_stopped, c, &s->kill_calls) >= 0)
                        return;
                s->error = true;
        }
        kill_call_end(c);
}

static void issue_stop(struct kill_call *c) {
        struct pod_sync *s = c->s;
        Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
        int r;

        /* upstream's words, right before StopContainer: the grace period is what is left of it */
        log_info("Killing container with a grace period: pod=\"%s\" podUID=\"%s\" containerName=\"%s\" "
                 "containerID=\"%.12s\" gracePeriod=%" PRId64,
                 kubelet_sync_pod_desc(s), s->uid, c->name, c->id, c->grace);
        req.container_id = c->id;
        req.timeout = c->grace;
        s->kill_calls.drop = kill_call_drop;
        /* the runtime may take the whole grace period: the call's deadline is grace + the request timeout */
        r = cri_stop_container(s->env->cri, &req,
                               (uint64_t) c->grace * USEC_PER_SEC + s->env->opts->runtime_request_timeout_usec,
                               on_stop_container, c, &s->kill_calls);
        if (r < 0) {
                kubelet_sync_call_failed(s, "StopContainer", r);
                kill_call_end(c);
        }
}

/* executePreStopHook's end: the grace period left (at least the minimum), then StopContainer */
static void on_pre_stop_done(void *userdata, int error, const char *message) {
        struct kill_call *c = userdata;
        struct pod_sync *s = c->s;
        int64_t elapsed;

        if (error == -ECANCELED) { /* the pass is being freed */
                kill_call_free(c);
                return;
        }
        elapsed = (int64_t) ((now_usec() - c->hook_start_usec) / USEC_PER_SEC);
        if (error == -ETIME)
                log_info("PreStop hook not completed in grace period: pod=\"%s\" podUID=\"%s\" containerName=\"%s\" "
                         "containerID=\"%.12s\" gracePeriod=%" PRId64,
                         kubelet_sync_pod_desc(s), s->uid, c->name, c->id, c->grace);
        else if (error < 0) {
                log_error("PreStop hook failed: pod=\"%s\" containerName=\"%s\" containerID=\"%.12s\": %s",
                          kubelet_sync_pod_desc(s), c->name, c->id, message ? message : strerror(-error));
                kubelet_sync_event(s, c->name, "Warning", "FailedPreStopHook", "%s",
                                   message ? message : strerror(-error));
        } else
                log_v(3, "PreStop hook completed: pod=\"%s\" containerName=\"%s\"", kubelet_sync_pod_desc(s), c->name);
        stop_in_turn(c, c->grace - elapsed);
}

int kubelet_sync_kill_container(struct pod_sync *s, struct kill_target_ext *t, void (*done)(struct pod_sync *s)) {
        _cleanup_(lifecycle_handler_freep) struct lifecycle_handler *owned = TAKE_PTR(t->owned_pre_stop);
        const struct lifecycle_handler *pre_stop = t->pre_stop ? t->pre_stop : owned;
        struct kill_call *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        *c = (struct kill_call) { .s = s,
                                  .done = done,
                                  .grace = t->grace,
                                  .remove = t->remove,
                                  .ordered = t->ordered,
                                  .index = t->index,
                                  .id = strdup(t->id),
                                  .name = strdup(t->name) };
        if (!c->id || !c->name) {
                free(c->id);
                free(c->name);
                free(c);
                return -ENOMEM;
        }
        c->owned_pre_stop = TAKE_PTR(owned);
        s->did_work = true;
        if (pre_stop) {
                struct hook_target ht = {
                        .pod_desc = kubelet_sync_hook_desc(s),
                        .container_name = c->name,
                        .container_id = c->id,
                        .pod_ip = NULL,
                        .spec = t->spec,
                        .ports_json = t->ports_json,
                };
                for (size_t i = 0; s->status && t->sandbox_id && i < s->status->n_sandboxes; i++) {
                        const struct kc_sandbox *sb = s->status->sandboxes[i];
                        if (streq(sb->id, t->sandbox_id) && sb->have_status)
                                ht.pod_ip = sb->host_network ? s->env->node_ip : sb->ip;
                }
                c->hook_start_usec = now_usec();
                log_v(3, "Running preStop hook: pod=\"%s\" containerName=\"%s\" containerID=\"%.12s\"",
                      kubelet_sync_pod_desc(s), c->name, c->id);
                r = kubelet_hook_run_start(s->env->hook_env, &s->hooks, pre_stop, &ht,
                                           (uint64_t) c->grace * USEC_PER_SEC, on_pre_stop_done, c);
                if (r >= 0)
                        return 0;
                log_error("pod %s: container %s: cannot run the preStop hook: %s", kubelet_sync_pod_desc(s), c->name,
                          strerror(-r));
        }
        stop_in_turn(c, c->grace);
        return 0;
}

int64_t kubelet_sync_grace_raw(const struct pod_sync *s, const struct kc_container *c) {
        struct pod_sync_worker_state ws = kubelet_sync_worker_state(s);
        int64_t g;

        if (ws.grace_override >= 0)
                return ws.grace_override; /* an eviction's */
        if (s->pod)
                g = s->pod->spec.termination_grace_period_seconds;
        else if (ws.deleting)
                /* an API pod being deleted: its deletion's grace period (gracePeriodSeconds of the DELETE, else its
                 * spec's), not the one its containers were created with (upstream's setTerminationGracePeriod reads
                 * pod.DeletionGracePeriodSeconds first) */
                g = ws.grace_seconds;
        else {
                const char *v = c ? strmap_get(&c->annotations, ANNOTATION_POD_TERMINATION_GRACE_PERIOD) : NULL;
                int64_t x;
                if (v && safe_atoi64(v, &x) >= 0)
                        g = x;
                else
                        g = ws.grace_seconds;
        }
        if (s->pod && s->pod->has_deletion_timestamp && s->pod->deletion_grace_period_seconds >= 0)
                g = s->pod->deletion_grace_period_seconds;
        return g;
}

/* ---------------------------------------------------------------- the rounds */

/* The preStop handler of a running instance: the desired spec's, else (a pod no longer known) the one kept in
 * the instance's annotation, decoded into t->owned_pre_stop. */
static void pre_stop_of(struct pod_sync *s, const struct kc_container *kc, struct kill_target_ext *t) {
        _cleanup_(json_decrefp) json_t *j = NULL;
        const char *v;

        if (t->spec) {
                t->pre_stop = t->spec->pre_stop;
                return;
        }
        if (s->pod)
                return; /* a container the spec no longer has: upstream restores it from the labels too */
        v = strmap_get(&kc->annotations, ANNOTATION_CONTAINER_PRESTOP_HANDLER);
        if (!v)
                return;
        j = json_loadb(v, strlen(v), JSON_REJECT_DUPLICATES, NULL);
        if (lifecycle_handler_from_json(j, &t->owned_pre_stop) < 0)
                log_error("pod %s: container %s: cannot decode the preStop handler annotation",
                          kubelet_sync_pod_desc(s), kc->name);
}

static void kill_one(struct pod_sync *s, size_t index) {
        const struct kr_kill_target *t = &s->kill->targets[index];
        const struct kc_container *kc = t->container;
        int64_t raw = kubelet_sync_grace_raw(s, kc);
        struct kill_target_ext x;
        int r;

        /* a failed liveness/startup probe's own terminationGracePeriodSeconds, unless the pod is being deleted */
        if (t->grace_override >= 0 && !(s->pod && s->pod->has_deletion_timestamp))
                raw = t->grace_override;
        x = (struct kill_target_ext) {
                .id = kc->id,
                .name = kc->name,
                .grace = MAX(raw, (int64_t) MINIMUM_GRACE_PERIOD_SECONDS),
                .spec = kubelet_sync_spec_container(s, kc->name),
                .sandbox_id = kc->sandbox_id,
                .ports_json = strmap_get(&kc->annotations, ANNOTATION_CONTAINER_PORTS),
                .remove = t->remove,
                .ordered = true,
                .index = index,
        };
        log_info("Stopping container: pod=\"%s\" podUID=\"%s\" containerName=\"%s\" containerID=\"%.12s\" "
                 "gracePeriod=%" PRId64 " reason=\"%s\"%s%s%s",
                 kubelet_sync_pod_desc(s), s->uid, kc->name, kc->id, x.grace, t->reason,
                 t->message ? " message=\"" : "", t->message ? t->message : "", t->message ? "\"" : "");
        if (t->message)
                kubelet_sync_event(s, kc->name, "Normal", "Killing", "%s", t->message);
        else
                kubelet_sync_event(s, kc->name, "Normal", "Killing", "Stopping container %s", kc->name);
        /* as upstream, no preStop without a grace period (a force deletion) */
        if (raw > 0)
                pre_stop_of(s, kc, &x);
        kubelet_sync_fanout_add(s);
        r = kubelet_sync_kill_container(s, &x, kubelet_sync_fanout_release);
        if (r < 0) {
                kubelet_sync_call_failed(s, "StopContainer", r);
                kubelet_sync_fanout_release(s);
        }
}

void kubelet_sync_kill(struct pod_sync *s) {
        struct kill_step *k = calloc(1, sizeof(*k));
        int r;

        kubelet_sync_fanout_begin(s, stop_sandboxes);
        s->kill = k;
        r = k ? kr_compute_kill_order(s->pod ? s->pod : kubelet_sync_worker_state(s).last_pod, s->status, &s->actions,
                                      &k->targets, &k->n)
              : -ENOMEM;
        if (r >= 0) {
                k->terminated = calloc(k->n + 1, sizeof(*k->terminated));
                k->waiting = calloc(k->n + 1, sizeof(*k->waiting));
                if (!k->terminated || !k->waiting)
                        r = -ENOMEM;
        }
        if (r < 0)
                kubelet_sync_call_failed(s, "computing what to kill", r);
        else
                for (size_t i = 0; i < k->n; i++)
                        kill_one(s, i);
        kubelet_sync_fanout_end(s);
}

/* ---------------------------------------------------------------- sandboxes (KillPod) */

static void on_stop_sandbox(const struct cri_reply *reply, void *userdata) {
        struct pod_sync *s = userdata;

        if (reply->r < 0 && reply->r != -ENOENT) {
                log_error("pod %s: StopPodSandbox: %s", kubelet_sync_pod_desc(s), reply->message);
                s->error = true;
        }
        kubelet_sync_fanout_release(s);
}

static void stop_sandboxes(struct pod_sync *s) {
        kubelet_sync_kill_free(s);
        if (s->error) {
                kubelet_pod_sync_finish(s);
                return;
        }
        kubelet_sync_fanout_begin(s, kubelet_pod_sync_next);
        for (size_t i = 0; s->actions.kill_pod && i < s->status->n_sandboxes; i++) {
                Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
                int r;

                if (s->status->sandboxes[i]->state != KC_SANDBOX_READY)
                        continue;
                log_info("Stopping pod sandbox: pod=\"%s\" podSandboxID=\"%.12s\"", kubelet_sync_pod_desc(s),
                         s->status->sandboxes[i]->id);
                req.pod_sandbox_id = s->status->sandboxes[i]->id;
                r = cri_stop_pod_sandbox(s->env->cri, &req, 0, on_stop_sandbox, s, &s->calls);
                kubelet_sync_fanout_sent(s, "StopPodSandbox", r);
        }
        kubelet_sync_fanout_end(s);
}
