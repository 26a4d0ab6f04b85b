/* SPDX-License-Identifier: Apache-2.0 */
/* The reconcile pass for one pod: its phases in the order they run (see pod_sync.h), and what they share. */

#include "kubelet/pod_sync.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "basic/list.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "features/features.h"
#include "apis/pod_volumes.h"
#include "config/config.h"
#include "basic/string.h"
#include "eviction/helpers.h"
#include "kubelet/hooks.h"
#include "objects/manager.h"
#include "objects/objects.h"
#include "prober/manager.h"
#include "status/status.h"
#include "volumemanager/volumemanager.h"

/* ---------------------------------------------------------------- the pass, in order */

/* ended for good by the kubelet (evicted, past its deadline): stays stopped */
static bool worker_ended(const struct pod_sync *s) {
        struct pod_sync_worker_state ws = kubelet_sync_worker_state(s);
        return ws.terminated || ws.deadline_exceeded;
}

/* desired, but finished for good: nothing of it runs and nothing will start again (every container done and none
 * restarts, initialization failed, evicted, past its deadline) */
static bool pod_finished(const struct pod_sync *s) {
        return s->pod && s->actions.kill_pod && !s->actions.create_sandbox;
}

/* decide: computePodActions for a desired pod, KillPod for one that is not */
static void decide(struct pod_sync *s) {
        struct probe_results probes;
        int r;

        if (!s->pod || worker_ended(s))
                s->actions = (struct kr_pod_actions) { .kill_pod = true }; /* gone, or ended for good (evicted,
                                                                              past its deadline): stays stopped */
        else {
                probe_manager_results(s->env->prober, &probes);
                r = kr_compute_pod_actions(s->pod, s->status, &probes, &s->actions);
                if (r < 0) {
                        kubelet_sync_call_failed(s, "computing pod actions", r);
                        kubelet_pod_sync_finish(s);
                        return;
                }
                log_v(4,
                      "pod %s: actions: killPod=%d createSandbox=%d attempt=%" PRIu32 " startEphemeral=%zu "
                      "startInit=%zu start=%zu kill=%zu",
                      kubelet_sync_pod_desc(s), s->actions.kill_pod, s->actions.create_sandbox, s->actions.attempt,
                      s->actions.n_ephemeral_start, s->actions.n_init_start, s->actions.n_start, s->actions.n_kill);
        }
        s->decided = true;
        kubelet_pod_sync_next(s);
}

/* release: syncTerminatedPod. The pod finished for good and is stopped: its volumes go and its objects are let go
 * now; the pod itself stays (with its final status, its logs and its termination messages) until it is deleted. */
static void release(struct pod_sync *s) {
        objects_manager_unregister(s->env->objects, s->uid);
        s->env->ops->pod_finished(s->env->userdata, s->w);
        kubelet_pod_sync_next(s);
}

static bool has_error(const struct pod_sync *s) {
        return s->error;
}

static bool released(const struct pod_sync *s) {
        return !s->error && pod_finished(s);
}

/* what follows starts things: not for a pod that is not desired or has finished (an ended worker's pod has: decide
 * gave it nothing but the kill) */
static bool nothing_to_start(const struct pod_sync *s) {
        return s->error || !s->pod || pod_finished(s);
}

static bool failed(const struct pod_sync *s) {
        return s->error;
}

static bool no_sandbox(const struct pod_sync *s) {
        return isempty(s->sandbox_id);
}

/* A pass that changed nothing and failed nowhere collects the pod's garbage. */
static bool settled(const struct pod_sync *s) {
        return !s->error && !s->did_work && s->decided;
}

/* The pass as data: its phases in the order they run (pod_sync.h has the list with each phase's file; docs/design.md's
 * table is checked against this one by scripts/check-phase-table.py). A phase ends by calling kubelet_pod_sync_next()
 * (or kubelet_pod_sync_finish() to end the pass early); before each phase, ends_pass() may end the pass there and
 * applies() may skip the phase. The clean-up phase runs last, from kubelet_pod_sync_finish(), when applies(). */
static const struct phase_def {
        const char *name;
        void (*run)(struct pod_sync *s);
        bool (*ends_pass)(const struct pod_sync *s); /* NULL: never */
        bool (*applies)(const struct pod_sync *s);   /* NULL: always */
} phases[] = {
        [POD_SYNC_OBSERVE] = { "observe", kubelet_sync_observe, NULL, NULL },
        [POD_SYNC_DECIDE] = { "decide", decide, has_error, NULL },
        [POD_SYNC_KILL] = { "kill", kubelet_sync_kill, NULL, NULL },
        [POD_SYNC_RELEASE] = { "release", release, NULL, released },
        [POD_SYNC_RESIZE] = { "resize", kubelet_sync_resize, nothing_to_start, NULL },
        [POD_SYNC_OBJECTS] = { "objects", kubelet_sync_objects, failed, NULL },
        [POD_SYNC_MOUNT] = { "mount", kubelet_sync_mount, NULL, NULL },
        [POD_SYNC_SANDBOX] = { "sandbox", kubelet_sync_sandbox, NULL, NULL },
        [POD_SYNC_VOLUMES] = { "volumes", kubelet_sync_volumes, no_sandbox, NULL },
        [POD_SYNC_START] = { "start", kubelet_sync_start, failed, NULL },
        [POD_SYNC_CLEANUP] = { "clean up", kubelet_sync_cleanup, NULL, settled },
};
static_assert(ELEMENTSOF(phases) == _POD_SYNC_PHASE_MAX, "a phase without its entry");

int kubelet_pod_sync_start(const struct pod_sync_env *env, struct pod_worker *w, const char *uid, const char *full_name,
                           struct pod *pod, struct pod_sync **slot) {
        struct pod_sync *s = calloc(1, sizeof(*s));

        if (!pod)
                objects_manager_unregister(env->objects, uid); /* no longer desired: its objects go */

        if (!s || kc_pod_status_new(uid, &s->status) < 0 || (full_name && !(s->full_name = strdup(full_name)))) {
                if (s)
                        kc_pod_status_free(s->status);
                free(s);
                log_error("pod %s: out of memory", uid);
                return -ENOMEM;
        }
        s->env = env;
        s->w = w;
        s->uid = uid;
        s->pod = pod_ref(pod);
        *slot = s;
        s->phase = POD_SYNC_OBSERVE;
        phases[POD_SYNC_OBSERVE].run(s);
        return 0;
}

bool kubelet_pod_sync_waiting_volumes(const struct pod_sync *s) {
        return s && s->waiting_volumes;
}

void kubelet_pod_sync_next(struct pod_sync *s) {
        assert(s->phase < POD_SYNC_CLEANUP);
        while (++s->phase < POD_SYNC_CLEANUP) {
                const struct phase_def *p = &phases[s->phase];

                if (p->ends_pass && p->ends_pass(s))
                        break;
                if (p->applies && !p->applies(s))
                        continue;
                log_v(6, "pod %s: phase %s", kubelet_sync_pod_desc(s), p->name);
                p->run(s);
                return;
        }
        kubelet_pod_sync_finish(s);
}

void kubelet_pod_sync_finish(struct pod_sync *s) {
        s->phase = POD_SYNC_CLEANUP;
        if (phases[POD_SYNC_CLEANUP].applies(s)) {
                phases[POD_SYNC_CLEANUP].run(s);
                return;
        }
        kubelet_pod_sync_done(s);
}

/* A pod no longer desired whose pass found nothing to do: is all that is left of it stopped, and refused by the
 * runtime when it was to be removed (in removal back-off)? Then its resources count as reclaimed (upstream's
 * podResourcesAreReclaimed: dead containers are the container GC's), *ret_n the objects left. */
static bool only_refused_left(const struct pod_sync *s, size_t *ret_n) {
        const struct kc_pod_status *st = s->status;

        if (s->pod || !s->decided || s->did_work || s->error || !st || st->n_sandboxes + st->n_containers == 0)
                return false;
        for (size_t i = 0; i < st->n_sandboxes; i++)
                if (st->sandboxes[i]->state == KC_SANDBOX_READY ||
                    !s->env->ops->removal_blocked(s->env->userdata, st->sandboxes[i]->id, NULL))
                        return false;
        for (size_t i = 0; i < st->n_containers; i++)
                if (st->containers[i]->state == KC_CONTAINER_RUNNING ||
                    st->containers[i]->state == KC_CONTAINER_UNKNOWN ||
                    !s->env->ops->removal_blocked(s->env->userdata, st->containers[i]->id, NULL))
                        return false;
        *ret_n = st->n_sandboxes + st->n_containers;
        return true;
}

void kubelet_pod_sync_done(struct pod_sync *s) {
        bool gone = s->status && s->status->n_sandboxes == 0 && s->status->n_containers == 0 && !s->did_work;
        size_t left = 0;
        struct pod_sync_result r;

        if (!gone && only_refused_left(s, &left))
                gone = true;
        r = (struct pod_sync_result) {
                .decided = s->decided,
                .pod = s->pod,
                .status = TAKE_PTR(s->status),
                .did_work = s->did_work,
                .wake_usec = s->wake_usec,
                .error = s->error,
                .gone = gone,
                .leftovers = left,
        };
        /* the kubelet reports the observation (kubelet_sync_env.c: env_pass_done), and may start the next pass at once */
        s->env->ops->pass_done(s->env->userdata, s->w, &r);
        kc_pod_status_free(r.status); /* what the kubelet did not take */
        kubelet_pod_sync_free(s);
}

void kubelet_pod_sync_free(struct pod_sync *s) {
        if (!s)
                return;
        /* first: none of their callbacks may run into what follows */
        cri_calls_cancel(&s->calls);
        cri_calls_cancel(&s->status_calls);
        cri_calls_cancel(&s->kill_calls);
        cri_calls_cancel(&s->removal_calls);
        cri_calls_cancel(&s->resize_calls);
        while (s->jobs)
                (void) kubelet_sync_job_detach(s->jobs);
        kubelet_hook_run_cancel_all(&s->hooks);
        kubelet_sync_kill_free(s);
        kubelet_sync_start_step_free(s);
        kubelet_sync_image_volumes_free(s);
        kubelet_sync_cleanup_free(s);
        slots_release(s->env->sandbox_slots, &s->sandbox_slot);
        free(s->hook_pod_desc);
        free(s->full_name);
        pod_free(s->pod);
        kc_pod_status_free(s->status);
        kr_pod_actions_done(&s->actions);
        free(s->sandbox_id);
        free(s->pod_ip);
        pb_free(s->sandbox_config);
        free(s->cgroup_parent);
        if (s->waiting_objects)
                objects_manager_cancel_wait(s->env->objects, s->uid);
        if (s->waiting_volumes)
                volmgr_pod_cancel_wait(s->env->volumes, s->uid);
        objects_refs_done(&s->refs);
        objects_pod_free(s->objects);
        cred_keyring_done(&s->keyring);
        free(s);
}

/* ---------------------------------------------------------------- shared by the phases */

void kubelet_sync_job_attach(struct pod_sync *s, struct sync_job *j) {
        j->s = s;
        DLIST_PREPEND(s->jobs, j);
}

struct pod_sync *kubelet_sync_job_detach(struct sync_job *j) {
        struct pod_sync *s = j->s;

        if (s)
                DLIST_REMOVE(s->jobs, j);
        j->s = NULL;
        return s;
}

void kubelet_sync_fanout_begin(struct pod_sync *s, void (*next)(struct pod_sync *s)) {
        assert(s->pending == 0);
        s->pending = 1; /* held by the phase itself until kubelet_sync_fanout_end() */
        s->next = next;
}

void kubelet_sync_fanout_add(struct pod_sync *s) {
        s->pending++;
}

void kubelet_sync_fanout_release(struct pod_sync *s) {
        assert(s->pending > 0);
        if (--s->pending > 0)
                return;
        s->next(s);
}

void kubelet_sync_fanout_end(struct pod_sync *s) {
        kubelet_sync_fanout_release(s);
}

void kubelet_sync_call_failed(struct pod_sync *s, const char *what, int r) {
        log_error("pod %s: %s: %s", kubelet_sync_pod_desc(s), what, strerror(-r));
        s->error = true;
}

void kubelet_sync_fanout_sent(struct pod_sync *s, const char *what, int r) {
        if (r < 0)
                kubelet_sync_call_failed(s, what, r);
        else {
                kubelet_sync_fanout_add(s);
                s->did_work = true;
        }
}

const char *kubelet_sync_pod_desc(const struct pod_sync *s) {
        return s->full_name ? s->full_name : s->uid;
}

const char *kubelet_sync_hook_desc(struct pod_sync *s) {
        const char *name = s->pod ? s->pod->name : s->status ? s->status->name : NULL;
        const char *ns = s->pod ? s->pod->namespace_ : s->status ? s->status->namespace_ : NULL;

        if (!s->hook_pod_desc && asprintf(&s->hook_pod_desc, "%s_%s(%s)", strempty(name), strempty(ns), s->uid) < 0)
                s->hook_pod_desc = NULL;
        return s->hook_pod_desc ? s->hook_pod_desc : kubelet_sync_pod_desc(s);
}

const struct container *kubelet_sync_spec_container(const struct pod_sync *s, const char *name) {
        if (!s->pod || !name)
                return NULL;
        return pod_find_container(s->pod, name);
}

/* the host path of a volume the volume manager mounted for the pod */
static char *managed_volume_path(void *userdata, const char *name, bool *ret_read_only) {
        const struct pod_sync *s = userdata;
        return volmgr_pod_volume_path(s->env->volumes, s->uid, name, ret_read_only);
}

/* the handler of the pod's RuntimeClass as far as it is known, else "" (the sandbox step reports a lookup that
 * fails: its pod has no container to build) */
const char *kubelet_sync_known_runtime_handler(const struct pod_sync *s) {
        const char *msg = NULL;
        json_t *rc = NULL;

        if (!s->pod || isempty(s->pod->spec.runtime_class_name) || !kubelet_sync_client(s) ||
            objects_pod_lookup(s->objects, OBJ_KIND_RUNTIME_CLASS, "", s->pod->spec.runtime_class_name, &rc, &msg) < 0)
                return "";
        return strempty(json_string_value(json_object_get(rc, "handler")));
}

/* the resolved image of the pod's image volume `name`, NULL when it was not pulled in this pass */
static const char *image_volume_ref(void *userdata, const char *name) {
        const struct pod_sync *s = userdata;
        const struct pod_volumes *pv = s->pod ? s->pod->spec.volumes : NULL;

        for (size_t i = 0; pv && i < pv->n_volumes && i < s->n_image_volumes; i++)
                if (streq_ptr(pv->volumes[i].name, name))
                        return s->image_volumes[i].ref;
        return NULL;
}

/* What the CRI config builders need besides the spec (the start step adds the image's user). */
void kubelet_sync_build_context(const struct pod_sync *s, struct kc_build_context *ret) {
        *ret = (struct kc_build_context) {
                .managed_volume_path = managed_volume_path,
                .managed_volume_userdata = (void *) s,
                .image_volume_ref = image_volume_ref,
                .image_volume_userdata = (void *) s,
                .pod_logs_dir = s->env->opts->pod_logs_dir,
                .root_dir = s->env->opts->root_dir,
                .node_name = s->env->opts->node_name,
                .node_ip = s->env->node_ip,
                .pod_ip = s->pod && s->pod->spec.host_network ? s->env->node_ip : s->pod_ip,
                .objects = s->objects,
                .cgroup_parent = s->cgroup_parent,
                .alloc_cpu_milli = s->env->admission->cpu_milli,
                .alloc_memory_bytes = s->env->admission->memory_bytes,
                .cluster_dns = s->env->cluster_dns,
                .cluster_domain = s->env->opts->cluster_domain,
                .resolv_conf = s->env->opts->resolv_conf,
                .static_pod = s->pod && pod_config_is_static(s->pod),
                .seccomp_default = s->env->opts->seccomp_default,
                .swap_v2 = s->env->swap_v2,
                .limited_swap = streq_ptr(s->env->opts->memory_swap_behavior, "LimitedSwap"),
                .critical_pod = s->pod && eviction_pod_is_critical(s->pod),
                .node_memory_bytes = s->env->machine->memory_capacity,
                .swap_capacity_bytes = s->env->machine->swap_capacity,
                .runtime_supports_rro = node_runtime_features_rro(kubelet_sync_runtime_features(s),
                                                                  kubelet_sync_known_runtime_handler(s)),
                .userns = s->userns,
                .stop_signals = feature_enabled(s->env->opts->feature_gates, "ContainerStopSignals"),
                .userns_host_id = s->userns_host_id,
                .userns_length = s->userns_length,
        };
}

/* ---------------------------------------------------------------- what the phases ask of the kubelet */

struct pod_sync_worker_state kubelet_sync_worker_state(const struct pod_sync *s) {
        struct pod_sync_worker_state ws = {};

        s->env->ops->worker_state(s->env->userdata, s->w, &ws);
        return ws;
}

struct kube_client *kubelet_sync_client(const struct pod_sync *s) {
        return s->env->ops->client(s->env->userdata);
}

const struct node_runtime_features *kubelet_sync_runtime_features(const struct pod_sync *s) {
        return s->env->ops->runtime_features(s->env->userdata);
}

_printf_(6, 0) static void eventv(struct pod_sync *s, bool any, const char *container, const char *type,
                                  const char *reason, const char *fmt, va_list ap) {
        _cleanup_free_ char *msg = NULL;

        if (vasprintf(&msg, fmt, ap) < 0)
                return;
        s->env->ops->event(s->env->userdata, s->w, any, container, type, reason, msg);
}

void kubelet_sync_event(struct pod_sync *s, const char *container, const char *type, const char *reason,
                        const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        eventv(s, false, container, type, reason, fmt, ap);
        va_end(ap);
}

void kubelet_sync_event_any(struct pod_sync *s, const char *container, const char *type, const char *reason,
                            const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        eventv(s, true, container, type, reason, fmt, ap);
        va_end(ap);
}

int kubelet_sync_set_waiting(struct pod_sync *s, const char *name, const char *reason, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        int r;

        r = VA_FORMAT(msg, fmt);
        if (r < 0)
                return -ENOMEM;
        return s->env->ops->set_waiting(s->env->userdata, s->w, name, reason, msg);
}

void kubelet_sync_clear_waiting(struct pod_sync *s, const char *name) {
        s->env->ops->clear_waiting(s->env->userdata, s->w, name);
}
