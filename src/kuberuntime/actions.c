/* SPDX-License-Identifier: Apache-2.0 */
#include "kuberuntime/actions.h"

#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "basic/backoff.h"
#include "basic/hash.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/time.h"
#include "container/labels.h"

int kr_container_hash(const struct container *c, char buf[static KR_HASH_MAX]) {
        _cleanup_free_ char *s = NULL;
        json_auto_t *copy = NULL;
        uint64_t h;

        if (!c->raw)
                return -EINVAL;
        /* resources and resizePolicy are left out: a resize is applied in place (or by a restart its resizePolicy
         * asks for), not by the restart a changed hash means */
        if (json_object_get(c->raw, "resources") || json_object_get(c->raw, "resizePolicy")) {
                copy = json_copy(c->raw);
                if (!copy)
                        return -ENOMEM;
                json_object_del(copy, "resources");
                json_object_del(copy, "resizePolicy");
        }
        s = json_dumps(copy ? copy : c->raw, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
        if (!s)
                return -ENOMEM;
        h = fnv1a64(FNV1A64_INIT, s, strlen(s));
        snprintf(buf, KR_HASH_MAX, "%016" PRIx64, h);
        return 0;
}

void kr_pod_actions_done(struct kr_pod_actions *a) {
        if (!a)
                return;
        free(a->start);
        free(a->init_start);
        free(a->ephemeral_start);
        free(a->update);
        for (size_t i = 0; i < a->n_kill; i++)
                free(a->kill[i].message);
        free(a->kill);
        *a = (struct kr_pod_actions) {};
}

static int add_start(struct kr_pod_actions *a, size_t idx) {
        size_t *n = reallocarray(a->start, a->n_start + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        a->start = n;
        a->start[a->n_start++] = idx;
        return 0;
}

static int add_kill(struct kr_pod_actions *a, const struct kc_container *c, const char *reason, char *message) {
        struct kr_container_kill *n = reallocarray(a->kill, a->n_kill + 1, sizeof(*n));
        if (!n) {
                free(message);
                return -ENOMEM;
        }
        a->kill = n;
        a->kill[a->n_kill++] = (struct kr_container_kill) {
                .container = c, .reason = reason, .message = message, .grace_override = -1
        };
        return 0;
}

/* Should the latest instance of this container be (re)started? (kubecontainer.ShouldContainerBeRestarted) */
static bool kr_should_restart_container(const struct pod *pod, const struct container *c,
                                        const struct kc_pod_status *status) {
        const struct kc_container *cs;

        if (pod->has_deletion_timestamp)
                return false;
        cs = kc_pod_status_find_container(status, c->name);
        if (!cs)
                return true;
        if (cs->state == KC_CONTAINER_RUNNING)
                return false;
        if (cs->state == KC_CONTAINER_UNKNOWN || cs->state == KC_CONTAINER_CREATED)
                return true;
        return container_should_restart_on_exit(&pod->spec, c, cs->exit_code);
}

/* The newest instance of a container in the given sandbox, or NULL. */
static const struct kc_container *kr_pod_status_find_in_sandbox(const struct kc_pod_status *status, const char *name,
                                                                const char *sandbox_id) {
        for (size_t i = 0; status && i < status->n_containers; i++)
                if (streq(status->containers[i]->name, name) &&
                    streq_ptr(status->containers[i]->sandbox_id, sandbox_id))
                        return status->containers[i];
        return NULL;
}

/* isInitContainerFailed */
static bool init_container_failed(const struct kc_container *cs) {
        if (streq_ptr(cs->reason, "OOMKilled"))
                return true;
        if (cs->state == KC_CONTAINER_EXITED && cs->exit_code != 0)
                return true;
        return cs->state == KC_CONTAINER_UNKNOWN;
}

static int add_init_start(struct kr_pod_actions *a, size_t idx) {
        size_t *n;
        for (size_t i = 0; i < a->n_init_start; i++)
                if (a->init_start[i] == idx)
                        return 0;
        n = reallocarray(a->init_start, a->n_init_start + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        a->init_start = n;
        a->init_start[a->n_init_start++] = idx;
        return 0;
}

static int cmp_size(const void *x, const void *y) {
        size_t a = *(const size_t *) x, b = *(const size_t *) y;
        return a < b ? -1 : a > b;
}

_printf_(5, 6) static int kill_msg(struct kr_pod_actions *a, const struct kc_container *cs, const char *reason,
                                   bool remove, const char *fmt, ...) {
        char *msg = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        r = add_kill(a, cs, reason, msg);
        if (r < 0)
                return r;
        a->kill[a->n_kill - 1].remove = remove;
        return 0;
}

/* A running sidecar: is it started (its startup probe, if any, succeeded)? Kills and restarts it for a
 * failed startup or liveness probe or a changed spec. */
static int sidecar_running(const struct container *c, const struct kc_container *cs, const struct probe_results *probes,
                           size_t idx, struct kr_pod_actions *a, bool *ret_started) {
        char hash[KR_HASH_MAX];
        enum probe_result pr;
        int r;

        *ret_started = false;
        r = kr_container_hash(c, hash);
        if (r < 0)
                return r;
        if (!streq(hash, cs->hash)) {
                r = kill_msg(a, cs, "Killing", false, "Init container %s definition changed", c->name);
                return r < 0 ? r : add_init_start(a, idx);
        }
        if (c->startup_probe) {
                if (!probes || !probes->get(probes->userdata, PROBE_STARTUP, cs, &pr))
                        return 0; /* not probed yet: wait */
                if (pr == PROBE_RESULT_FAILURE) {
                        r = kill_msg(a, cs, "StartupProbe", false, "Init container %s failed startup probe", c->name);
                        if (r < 0)
                                return r;
                        a->kill[a->n_kill - 1].probe_failure = true;
                        /* the probe's own terminationGracePeriodSeconds, as for the liveness probe below (e2e_node:
                         * "should override timeoutGracePeriodSeconds when StartupProbe field is set") */
                        if (c->startup_probe->has_termination_grace_period)
                                a->kill[a->n_kill - 1].grace_override =
                                        c->startup_probe->termination_grace_period_seconds;
                        return add_init_start(a, idx);
                }
                if (pr != PROBE_RESULT_SUCCESS)
                        return 0;
        }
        *ret_started = true;
        if (c->liveness_probe && probes && probes->get(probes->userdata, PROBE_LIVENESS, cs, &pr) &&
            pr == PROBE_RESULT_FAILURE) {
                r = kill_msg(a, cs, "LivenessProbe", false, "Init container %s failed liveness probe", c->name);
                if (r < 0)
                        return r;
                a->kill[a->n_kill - 1].probe_failure = true;
                if (c->liveness_probe->has_termination_grace_period)
                        a->kill[a->n_kill - 1].grace_override = c->liveness_probe->termination_grace_period_seconds;
                return add_init_start(a, idx);
        }
        return 0;
}

/* computeInitContainerActions, over the instances in the pod's current sandbox (a new sandbox runs every init
 * container again). Walks the init containers backwards to the last one that has an instance: it decides
 * what comes next; sidecars before it are kept running. *ret_initialized: the app containers may run. */
static int init_container_actions(const struct pod *pod, const struct kc_pod_status *status,
                                  const struct probe_results *probes, struct kr_pod_actions *a, bool *ret_initialized) {
        const struct pod_spec *spec = &pod->spec;
        bool initialized = false, previously;
        int r;

        if (spec->n_init_containers == 0) {
                *ret_initialized = true;
                return 0;
        }
        /* an app container created or running here: initialized before */
        for (size_t i = 0; i < spec->n_containers && !initialized; i++) {
                const struct kc_container *cs = kr_pod_status_find_in_sandbox(status, spec->containers[i].name,
                                                                              a->sandbox_id);
                initialized = cs && (cs->state == KC_CONTAINER_RUNNING || cs->state == KC_CONTAINER_CREATED);
        }
        previously = initialized;

        for (size_t i = spec->n_init_containers; i-- > 0;) {
                const struct container *c = &spec->init_containers[i];
                const struct kc_container *cs = kr_pod_status_find_in_sandbox(status, c->name, a->sandbox_id);
                bool sidecar = container_is_sidecar(c), started;

                if (!cs) {
                        /* a sidecar whose instance is gone is started again */
                        if (previously && sidecar) {
                                r = add_init_start(a, i);
                                if (r < 0)
                                        return r;
                        }
                        continue;
                }
                if (previously && !sidecar)
                        continue; /* done with: only sidecars keep running */

                switch (cs->state) {
                case KC_CONTAINER_CREATED:
                        /* never started (a kubelet that died between create and start): remove it first, so that
                         * two instances can never run */
                        r = kill_msg(a, cs, "Created", true, "Container is in %s state, try killing it before restart",
                                     "CONTAINER_CREATED");
                        if (r >= 0)
                                r = add_init_start(a, i);
                        break;
                case KC_CONTAINER_RUNNING:
                        if (!sidecar) {
                                r = 0; /* wait for it */
                                break;
                        }
                        r = sidecar_running(c, cs, probes, i, a, &started);
                        if (r < 0 || !started)
                                break;
                        if (i == spec->n_init_containers - 1)
                                initialized = true;
                        else if (!previously)
                                r = add_init_start(a, i + 1);
                        break;
                case KC_CONTAINER_EXITED:
                        if (sidecar)
                                r = add_init_start(a, i); /* whatever the pod's restartPolicy */
                        else if (init_container_failed(cs)) {
                                /* restartOnFailure: by its own restartPolicy and rules (OOM counts as 137) */
                                if (!container_should_restart_on_exit(spec, c, cs->exit_code ? cs->exit_code : 137))
                                        goto fail_pod;
                                r = add_init_start(a, i);
                        } else if (i == spec->n_init_containers - 1) {
                                initialized = true;
                                r = 0;
                        } else
                                r = add_init_start(a, i + 1);
                        break;
                case KC_CONTAINER_UNKNOWN:
                default:
                        if (!sidecar && !container_should_restart_on_exit(spec, c, 137))
                                goto fail_pod;
                        r = kill_msg(a, cs, "Unknown", false, "Container is in %s state, try killing it before restart",
                                     "CONTAINER_UNKNOWN");
                        if (r >= 0)
                                r = add_init_start(a, i);
                        break;
                }
                if (r < 0)
                        return r;
                previously = true;
        }
        if (!previously) {
                r = add_init_start(a, 0); /* nothing ran yet here: the first one */
                if (r < 0)
                        return r;
        }
        if (pod->has_deletion_timestamp)
                a->n_init_start = 0;
        if (a->n_init_start > 1)
                qsort(a->init_start, a->n_init_start, sizeof(size_t), cmp_size);
        *ret_initialized = initialized;
        return 0;

fail_pod:
        /* initialization failed for good: the pod fails */
        a->kill_pod = true;
        a->n_init_start = 0;
        *ret_initialized = false;
        return 0;
}

/* The container's last instance exited and its restart policy and rules (else the pod's) do not start it again:
 * a succeeded one under OnFailure, or one whose exit code no rule restarts. */
static bool container_finished(const struct pod_spec *spec, const struct container *c,
                               const struct kc_pod_status *status) {
        const struct kc_container *cs = kc_pod_status_find_container(status, c->name);
        return cs && cs->state == KC_CONTAINER_EXITED && !container_should_restart_on_exit(spec, c, cs->exit_code);
}

/* podSandboxChanged: do we need a new sandbox, and with which attempt? */
static bool sandbox_changed(const struct pod *pod, const struct kc_pod_status *st, uint32_t *ret_attempt,
                            const char **ret_id, const char **ret_reason) {
        const struct kc_sandbox *latest;
        size_t ready = 0;

        *ret_attempt = 0;
        *ret_id = "";
        if (!st || st->n_sandboxes == 0) {
                *ret_reason = "No sandbox for pod can be found. Need to start a new one";
                return true;
        }
        for (size_t i = 0; i < st->n_sandboxes; i++)
                if (st->sandboxes[i]->state == KC_SANDBOX_READY)
                        ready++;
        latest = st->sandboxes[0];
        *ret_id = latest->id;
        *ret_attempt = latest->attempt + 1;
        if (ready > 1) {
                *ret_reason = "Multiple sandboxes are ready for Pod. Need to reconcile them";
                return true;
        }
        if (latest->state != KC_SANDBOX_READY) {
                *ret_reason = "No ready sandbox for pod can be found. Need to start a new one";
                return true;
        }
        if (latest->have_status && latest->host_network != pod->spec.host_network) {
                *ret_reason = "Sandbox for pod has changed. Need to start a new one";
                return true;
        }
        if (latest->have_status && !pod->spec.host_network && isempty(latest->ip)) {
                *ret_reason = "Sandbox for pod has no IP address. Need to start a new one";
                return true;
        }
        *ret_attempt = latest->attempt;
        *ret_reason = NULL;
        return false;
}

/* resizePolicy's restartPolicy for a resource: true when it is RestartContainer (NotRequired is the default) */
static bool kr_resize_needs_restart(const struct container *c, const char *resource) {
        for (size_t i = 0; i < c->n_resize_policy; i++)
                if (streq_ptr(c->resize_policy[i].resource_name, resource))
                        return streq_ptr(c->resize_policy[i].restart_policy, "RestartContainer");
        return false;
}

enum kr_resize_action kr_container_resize_action(const struct pod *pod, const struct container *c,
                                                 const struct kc_container *cs,
                                                 struct kr_linux_resources *ret_desired) {
        struct kr_linux_resources d;
        bool cpu, memory;

        kr_container_resources(pod, c, 0, &d);
        d.oom_score_adj = 0;
        *ret_desired = d;
        if (!cs || cs->state != KC_CONTAINER_RUNNING || !cs->have_resources)
                return KR_RESIZE_NONE;
        cpu = d.cpu_shares != cs->res_cpu_shares ||
              MAX(d.cpu_quota, (int64_t) 0) != MAX(cs->res_cpu_quota, (int64_t) 0);
        memory = d.memory_limit_in_bytes != cs->res_memory_limit;
        if ((cpu && kr_resize_needs_restart(c, "cpu")) || (memory && kr_resize_needs_restart(c, "memory")))
                return KR_RESIZE_RESTART;
        return cpu || memory ? KR_RESIZE_UPDATE : KR_RESIZE_NONE;
}

static bool probe_failed(const struct probe_results *probes, enum probe_type t, const struct kc_container *cs) {
        enum probe_result r;
        return probes && probes->get(probes->userdata, t, cs, &r) && r == PROBE_RESULT_FAILURE;
}

int kr_compute_pod_actions(const struct pod *pod, const struct kc_pod_status *status,
                           const struct probe_results *probes, struct kr_pod_actions *ret) {
        struct kr_pod_actions a = {};
        size_t keep = 0;
        int r;

        a.create_sandbox = sandbox_changed(pod, status, &a.attempt, &a.sandbox_id, &a.sandbox_reason);
        a.kill_pod = a.create_sandbox;

        if (a.create_sandbox) {
                /* A pod that already ran and must not restart gets no new sandbox. */
                if (!pod_may_restart_containers(&pod->spec) && a.attempt != 0 && status && status->n_containers != 0) {
                        a.create_sandbox = false;
                        *ret = a;
                        return 0;
                }
                for (size_t i = 0; i < pod->spec.n_containers; i++) {
                        /* a container that exited and would not be started again stays done */
                        if (container_finished(&pod->spec, &pod->spec.containers[i], status))
                                continue;
                        r = add_start(&a, i);
                        if (r < 0)
                                goto fail;
                }
                if (a.n_start == 0)
                        a.create_sandbox = false;
                else if (pod->spec.n_init_containers > 0) {
                        /* a new sandbox starts with the first init container */
                        a.n_start = 0;
                        r = add_init_start(&a, 0);
                        if (r < 0)
                                goto fail;
                }
                *ret = a;
                return 0;
        }

        /* ephemeral containers may start while the pod initializes; once created they are never started again */
        for (size_t i = 0; !pod->has_deletion_timestamp && i < pod->spec.n_ephemeral_containers; i++) {
                size_t *n;
                if (kc_pod_status_find_container(status, pod->spec.ephemeral_containers[i].name))
                        continue;
                n = reallocarray(a.ephemeral_start, a.n_ephemeral_start + 1, sizeof(*n));
                if (!n) {
                        r = -ENOMEM;
                        goto fail;
                }
                a.ephemeral_start = n;
                a.ephemeral_start[a.n_ephemeral_start++] = i;
        }

        {
                bool initialized;
                r = init_container_actions(pod, status, probes, &a, &initialized);
                if (r < 0)
                        goto fail;
                if (a.kill_pod || !initialized) {
                        /* initialization failed or still in progress: the app containers wait */
                        if (a.kill_pod)
                                a.n_ephemeral_start = 0;
                        *ret = a;
                        return 0;
                }
        }

        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                const struct container *c = &pod->spec.containers[i];
                const struct kc_container *cs = kc_pod_status_find_container(status, c->name);
                char hash[KR_HASH_MAX];

                if (!cs || cs->state != KC_CONTAINER_RUNNING) {
                        if (kr_should_restart_container(pod, c, status)) {
                                r = add_start(&a, i);
                                if (r < 0)
                                        goto fail;
                                if (cs && (cs->state == KC_CONTAINER_UNKNOWN || cs->state == KC_CONTAINER_CREATED)) {
                                        /* Unknown: it may be running (upstream kills it first). Created: it was
                                         * never started — a kubelet that died between CreateContainer and
                                         * StartContainer, whose start the runtime may still carry out. Remove
                                         * it before a new instance is created, so two can never run. */
                                        char *msg = NULL;
                                        if (asprintf(&msg, "Container is in %s state, try killing it before restart",
                                                     kc_container_state_to_string(cs->state)) < 0) {
                                                r = -ENOMEM;
                                                goto fail;
                                        }
                                        r = add_kill(&a, cs, cs->state == KC_CONTAINER_UNKNOWN ? "Unknown" : "Created",
                                                     msg);
                                        if (r < 0)
                                                goto fail;
                                        a.kill[a.n_kill - 1].remove = cs->state == KC_CONTAINER_CREATED;
                                }
                        }
                        continue;
                }

                /* running: restart it if its spec changed */
                r = kr_container_hash(c, hash);
                if (r < 0)
                        goto fail;
                if (!streq(hash, cs->hash)) {
                        char *msg = NULL;
                        if (asprintf(&msg, "Container %s definition changed", c->name) < 0) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        r = add_kill(&a, cs, "Killing", msg);
                        if (r < 0)
                                goto fail;
                        r = add_start(&a, i);
                        if (r < 0)
                                goto fail;
                        continue;
                }

                /* running: kill it if its liveness or startup probe failed */
                if (probe_failed(probes, PROBE_LIVENESS, cs) || probe_failed(probes, PROBE_STARTUP, cs)) {
                        bool liveness = probe_failed(probes, PROBE_LIVENESS, cs);
                        const struct probe *pr = liveness ? c->liveness_probe : c->startup_probe;
                        /* killed by the kubelet: its restart policy (the container's own, else the pod's) decides, not
                         * the rules on exit codes */
                        bool restart = c->restart_policy ? !streq(c->restart_policy, "Never")
                                                         : pod->spec.restart_policy != RESTART_POLICY_NEVER;
                        char *msg = NULL;

                        if (asprintf(&msg, "Container %s failed %s probe%s", c->name, liveness ? "liveness" : "startup",
                                     restart ? ", will be restarted" : "") < 0) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        r = add_kill(&a, cs, liveness ? "LivenessProbe" : "StartupProbe", msg);
                        if (r < 0)
                                goto fail;
                        a.kill[a.n_kill - 1].probe_failure = true;
                        if (pr && pr->has_termination_grace_period)
                                a.kill[a.n_kill - 1].grace_override = pr->termination_grace_period_seconds;
                        if (restart) {
                                r = add_start(&a, i);
                                if (r < 0)
                                        goto fail;
                        }
                        continue;
                }

                /* running: its allocated resources differ from those it runs with (an in-place resize) */
                {
                        struct kr_linux_resources desired;
                        switch (kr_container_resize_action(pod, c, cs, &desired)) {
                        case KR_RESIZE_RESTART: {
                                char *msg = NULL;
                                if (asprintf(&msg, "Container %s resize requires restart", c->name) < 0) {
                                        r = -ENOMEM;
                                        goto fail;
                                }
                                r = add_kill(&a, cs, "Killing", msg);
                                if (r >= 0)
                                        r = add_start(&a, i);
                                if (r < 0)
                                        goto fail;
                                continue;
                        }
                        case KR_RESIZE_UPDATE: {
                                struct kr_container_update *n = reallocarray(a.update, a.n_update + 1, sizeof(*n));
                                if (!n) {
                                        r = -ENOMEM;
                                        goto fail;
                                }
                                a.update = n;
                                a.update[a.n_update++] = (struct kr_container_update) { .container = cs, .index = i };
                                break;
                        }
                        case KR_RESIZE_NONE:
                        default:
                                break;
                        }
                }
                keep++;
        }

        /* Nothing to keep and nothing to start: the pod is done, stop its sandbox (sidecars do not keep it
         * alive: they are not restarted). */
        if (keep == 0 && a.n_start == 0) {
                a.kill_pod = true;
                a.n_init_start = 0;
                a.n_ephemeral_start = 0;
        }

        *ret = a;
        return 0;
fail:
        kr_pod_actions_done(&a);
        return r;
}

void kr_pod_gc_done(struct kr_pod_gc *g) {
        if (!g)
                return;
        free(g->containers);
        free(g->sandboxes);
        *g = (struct kr_pod_gc) {};
}

static int push_id(const char ***l, size_t *n, const char *id) {
        const char **x = reallocarray(*l, *n + 1, sizeof(*x));
        if (!x)
                return -ENOMEM;
        *l = x;
        x[(*n)++] = id;
        return 0;
}

int kr_compute_pod_gc(const struct pod *pod, const struct kc_pod_status *st, const struct kr_gc_policy *policy,
                      int64_t now_realtime_nsec, struct kr_pod_gc *ret) {
        struct kr_pod_gc g = {};
        int r;

        /* containerGC's MaxPerPodContainer (1 by default): per container name, the newest dead instances stay
         * (restart count, exit code, `logs --previous`), older dead ones go, once MinAge old; running ones never */
        for (size_t i = 0; st && i < st->n_containers; i++) {
                const struct kc_container *c = st->containers[i];
                bool newest = true;
                int newer_dead = 0;

                if (c->state == KC_CONTAINER_RUNNING)
                        continue;
                if (pod)
                        for (size_t j = 0; j < i; j++)
                                if (streq(st->containers[j]->name, c->name)) {
                                        newest = false;
                                        if (st->containers[j]->state == KC_CONTAINER_EXITED)
                                                newer_dead++;
                                }
                if (pod && newest && c->state != KC_CONTAINER_EXITED)
                        continue; /* created/unknown newest: the sync handles it */
                if (pod && c->state == KC_CONTAINER_EXITED &&
                    (policy->max_per_pod_container < 0 || newer_dead < policy->max_per_pod_container))
                        continue; /* among the newest dead instances */
                if (pod && c->created_at > now_realtime_nsec - (int64_t) policy->min_age_usec * 1000)
                        continue; /* not MinAge old yet */
                r = push_id(&g.containers, &g.n_containers, c->id);
                if (r < 0)
                        goto fail;
        }

        for (size_t i = 0; st && i < st->n_sandboxes; i++) {
                const struct kc_sandbox *s = st->sandboxes[i];
                bool holds = false;

                if (s->state == KC_SANDBOX_READY)
                        continue;
                if (pod && i == 0)
                        continue; /* the newest sandbox stays while the pod is desired */
                for (size_t j = 0; j < st->n_containers; j++) {
                        const struct kc_container *c = st->containers[j];
                        bool removed = false;
                        if (!streq(c->sandbox_id, s->id))
                                continue;
                        for (size_t k = 0; k < g.n_containers; k++)
                                if (g.containers[k] == c->id)
                                        removed = true;
                        if (!removed)
                                holds = true;
                }
                if (holds)
                        continue;
                r = push_id(&g.sandboxes, &g.n_sandboxes, s->id);
                if (r < 0)
                        goto fail;
        }
        *ret = g;
        return 0;
fail:
        kr_pod_gc_done(&g);
        return r;
}

/* ---------------------------------------------------------------- the start step's decisions */

void kr_crash_backoff_done(struct kr_crash_backoff *d) {
        if (!d)
                return;
        free(d->key);
        *d = (struct kr_crash_backoff) {};
}

static const struct kr_container_kill *kill_of(const struct kr_pod_actions *a, const struct kc_container *cs) {
        for (size_t i = 0; a && i < a->n_kill; i++)
                if (a->kill[i].container == cs)
                        return &a->kill[i];
        return NULL;
}

int kr_check_crash_backoff(const struct pod *pod, const struct container *c, const struct kc_pod_status *status,
                           const struct kr_pod_actions *actions, const struct backoff *b, uint64_t now_realtime_usec,
                           struct kr_crash_backoff *ret) {
        const struct kc_container *cs = kc_pod_status_find_container(status, c->name);
        const struct kr_container_kill *k = cs ? kill_of(actions, cs) : NULL;
        struct kr_crash_backoff d = {};
        char hash[KR_HASH_MAX];
        int r;

        if (!cs || (cs->state != KC_CONTAINER_EXITED && !(k && k->probe_failure))) {
                *ret = d;
                return 0;
        }
        r = kr_container_hash(c, hash);
        if (r < 0)
                return r;
        if (asprintf(&d.key, "%s_%s_%s_%s_%s", pod->name, pod->namespace_, pod->uid, c->name, hash) < 0)
                return -ENOMEM;
        d.finished_usec = cs->state == KC_CONTAINER_EXITED && cs->finished_at > 0 ? (uint64_t) cs->finished_at / 1000
                                                                                  : now_realtime_usec;
        d.in_backoff = backoff_in_backoff_since(b, d.key, d.finished_usec, now_realtime_usec, &d.until_usec);
        d.delay_usec = backoff_get(b, d.key);
        *ret = d;
        return 0;
}

bool kr_image_status_first(enum pull_policy policy) {
        return policy != PULL_POLICY_ALWAYS;
}

enum kr_image_action kr_decide_image(enum pull_policy policy, bool present, bool in_pull_backoff) {
        if (policy != PULL_POLICY_ALWAYS && present)
                return KR_IMAGE_USE_PRESENT;
        if (policy == PULL_POLICY_NEVER)
                return KR_IMAGE_NEVER_PULL;
        return in_pull_backoff ? KR_IMAGE_PULL_BACKOFF : KR_IMAGE_PULL;
}

/* ---------------------------------------------------------------- the kill step's decisions */

/* an instance of a sidecar (as created: a pod no longer desired has no spec) */
static bool kr_container_is_sidecar_instance(const struct kc_container *c) {
        return streq_ptr(strmap_get(&c->annotations, ANNOTATION_CONTAINER_SIDECAR), "true");
}

void kr_kill_targets_free(struct kr_kill_target *t, size_t n) {
        for (size_t i = 0; t && i < n; i++)
                free(t[i].after);
        free(t);
}

static int push_target(struct kr_kill_target **l, size_t *n, struct kr_kill_target t) {
        struct kr_kill_target *x = reallocarray(*l, *n + 1, sizeof(*x));
        if (!x)
                return -ENOMEM;
        *l = x;
        x[(*n)++] = t;
        return 0;
}

static int push_after(struct kr_kill_target *t, size_t idx) {
        size_t *x = reallocarray(t->after, t->n_after + 1, sizeof(*x));
        if (!x)
                return -ENOMEM;
        t->after = x;
        x[t->n_after++] = idx;
        return 0;
}

/* A sidecar's place in the start order: its index in spec.initContainers when the pod names it as a sidecar,
 * else after those, by creation time. */
struct sidecar_rank {
        size_t target;
        bool in_spec;
        int64_t key;
};

static int cmp_rank(const void *x, const void *y) {
        const struct sidecar_rank *a = x, *b = y;
        if (a->in_spec != b->in_spec)
                return a->in_spec ? -1 : 1;
        return a->key < b->key ? -1 : a->key > b->key;
}

static bool is_main_container(const struct pod *pod, const struct kc_container *c) {
        if (kr_container_is_sidecar_instance(c))
                return false;
        if (!pod)
                return true;
        for (size_t i = 0; i < pod->spec.n_containers; i++)
                if (streq_ptr(pod->spec.containers[i].name, c->name))
                        return true;
        return false;
}

int kr_compute_kill_order(const struct pod *pod, const struct kc_pod_status *status,
                          const struct kr_pod_actions *actions, struct kr_kill_target **ret, size_t *ret_n) {
        _cleanup_free_ struct sidecar_rank *ranks = NULL;
        struct kr_kill_target *l = NULL;
        size_t n = 0, n_ranks = 0;
        int r;

        if (!actions->kill_pod) {
                for (size_t i = 0; i < actions->n_kill; i++) {
                        const struct kr_container_kill *k = &actions->kill[i];
                        r = push_target(&l, &n,
                                        (struct kr_kill_target) { .container = k->container,
                                                                  .reason = k->reason,
                                                                  .message = k->message,
                                                                  .remove = k->remove,
                                                                  .grace_override = k->grace_override });
                        if (r < 0)
                                goto fail;
                }
                *ret = l;
                *ret_n = n;
                return 0;
        }

        for (size_t i = 0; status && i < status->n_containers; i++) {
                const struct kc_container *cs = status->containers[i];
                const struct kr_container_kill *k = kill_of(actions, cs);
                if (cs->state != KC_CONTAINER_RUNNING && cs->state != KC_CONTAINER_UNKNOWN)
                        continue;
                r = push_target(&l, &n,
                                (struct kr_kill_target) { .container = cs,
                                                          .reason = k ? k->reason : "Killing",
                                                          .message = k ? k->message : actions->sandbox_reason,
                                                          .grace_override = k ? k->grace_override : -1 });
                if (r < 0)
                        goto fail;
        }

        /* the sidecars in the order they started */
        ranks = calloc(n + 1, sizeof(*ranks));
        if (!ranks) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < n; i++) {
                const struct kc_container *cs = l[i].container;
                struct sidecar_rank rk = { .target = i, .key = cs->created_at };

                if (!kr_container_is_sidecar_instance(cs))
                        continue;
                for (size_t j = 0; pod && j < pod->spec.n_init_containers; j++)
                        if (streq_ptr(pod->spec.init_containers[j].name, cs->name) &&
                            container_is_sidecar(&pod->spec.init_containers[j])) {
                                rk.in_spec = true;
                                rk.key = (int64_t) j;
                        }
                ranks[n_ranks++] = rk;
        }
        qsort(ranks, n_ranks, sizeof(*ranks), cmp_rank);

        /* each waits for the main containers and for the sidecar started after it */
        for (size_t j = 0; j < n_ranks; j++) {
                struct kr_kill_target *t = &l[ranks[j].target];
                for (size_t i = 0; i < n; i++)
                        if (is_main_container(pod, l[i].container)) {
                                r = push_after(t, i);
                                if (r < 0)
                                        goto fail;
                        }
                if (j + 1 < n_ranks) {
                        r = push_after(t, ranks[j + 1].target);
                        if (r < 0)
                                goto fail;
                }
        }
        *ret = l;
        *ret_n = n;
        return 0;
fail:
        kr_kill_targets_free(l, n);
        return r;
}
