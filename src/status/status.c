/* SPDX-License-Identifier: Apache-2.0 */
/* generateAPIPodStatus: what the kubelet says about a pod, from its spec and the runtime's view. */
#include "status/status.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "apis/pod_volumes.h"
#include "apis/qos.h"
#include "apis/resource.h"
#include "kuberuntime/resources.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "prober/prober.h"

#define RUNTIME_TYPE "containerd" /* the scheme of containerID: <type>://<id> (CRI Version runtime_name) */

static bool container_should_restart(const struct pod *pod, const struct container *spec,
                                     const struct kc_container *c) {
        /* kubecontainer.ShouldContainerBeRestarted, for a container that exists */
        if (c->state == KC_CONTAINER_RUNNING || c->state == KC_CONTAINER_CREATED)
                return false;
        if (c->state != KC_CONTAINER_EXITED)
                return true;
        return container_should_restart_on_exit(&pod->spec, spec, c->exit_code);
}

static const struct container_waiting *find_waiting(const struct pod_status_input *in, const char *name) {
        for (size_t i = 0; i < in->n_waiting; i++)
                if (streq(in->waiting[i].name, name))
                        return &in->waiting[i];
        return NULL;
}

/* the previous instance of a container (second newest with that name), for lastState */
static const struct kc_container *previous_instance(const struct kc_pod_status *st, const char *name) {
        bool seen = false;
        if (!st)
                return NULL;
        for (size_t i = 0; i < st->n_containers; i++)
                if (streq(st->containers[i]->name, name)) {
                        if (seen)
                                return st->containers[i];
                        seen = true;
                }
        return NULL;
}

static json_t *time_json(int64_t unix_nsec) {
        char buf[64];
        if (unix_nsec <= 0)
                return json_null();
        return json_string(format_rfc3339((uint64_t) (unix_nsec / 1000), buf, sizeof(buf)));
}

static json_t *container_id_json(const struct kc_container *c) {
        _cleanup_free_ char *s = NULL;
        if (asprintf(&s, RUNTIME_TYPE "://%s", c->id) < 0)
                return NULL;
        return json_string(s);
}

/* ContainerStateTerminated of an exited (or vanished) instance */
static json_t *terminated_json(const struct kc_container *c) {
        json_t *t;
        bool unknown = c->state == KC_CONTAINER_UNKNOWN;

        t = json_pack("{s:i, s:o, s:o, s:o}", "exitCode", unknown ? 137 : (json_int_t) c->exit_code, "startedAt",
                      time_json(c->started_at), "finishedAt", time_json(c->finished_at), "containerID",
                      container_id_json(c));
        if (!t)
                return NULL;
        if (unknown) {
                json_object_set_new(t, "reason", json_string("ContainerStatusUnknown"));
                json_object_set_new(t, "message",
                                    json_string("The container could not be located when the pod was "
                                                "terminated"));
        } else {
                if (!isempty(c->reason))
                        json_object_set_new(t, "reason", json_string(c->reason));
                if (!isempty(c->message))
                        json_object_set_new(t, "message", json_string(c->message));
        }
        return t;
}

static json_t *state_of(const struct kc_container *c) {
        switch (c->state) {
        case KC_CONTAINER_RUNNING:
                return json_pack("{s:{s:o}}", "running", "startedAt", time_json(c->started_at));
        case KC_CONTAINER_CREATED:
                return json_pack("{s:{s:s}}", "waiting", "reason", "ContainerCreating");
        case KC_CONTAINER_EXITED:
        case KC_CONTAINER_UNKNOWN:
        default:
                return json_pack("{s:o}", "terminated", terminated_json(c));
        }
}

static json_t *waiting_json(const char *reason, const char *message) {
        json_t *w = json_pack("{s:s}", "reason", reason);
        if (w && !isempty(message))
                json_object_set_new(w, "message", json_string(message));
        return json_pack("{s:o}", "waiting", w);
}

static bool container_ready(const struct pod_status_input *in, const struct container *spec,
                            const struct kc_container *c) {
        return c && probe_container_ready(spec, c, in->probes);
}

/* an init container is ready once it completed, a sidecar as an app container */
static bool init_container_ready(const struct pod_status_input *in, const struct container *spec,
                                 const struct kc_container *c) {
        if (container_is_sidecar(spec))
                return container_ready(in, spec, c);
        return c && c->state == KC_CONTAINER_EXITED && c->exit_code == 0;
}

/* done for the Initialized condition: completed, or a sidecar that started */
static bool init_container_done(const struct pod_status_input *in, const struct container *spec,
                                const struct kc_container *c) {
        if (container_is_sidecar(spec))
                return probe_container_started(spec, c, in->probes);
        return c && c->state == KC_CONTAINER_EXITED && c->exit_code == 0;
}

/* the status of a container in the previous PodStatus, NULL if none */
static json_t *old_container_status(const struct pod_status_input *in, const char *name, bool init) {
        json_t *list = json_object_get(in->old_status, init ? "initContainerStatuses" : "containerStatuses"), *c;
        size_t i;

        json_array_foreach(list, i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "name")), name))
                        return c;
        return NULL;
}

/* A quantity as resource.Quantity prints a value: cpu in millicores ("250m", "2"), bytes in binary SI when they
 * are a multiple of 1024 ("64Mi"), else decimal. Caller frees. */
static char *status_format_milli(int64_t milli) {
        char *s = NULL;
        if ((milli % 1000 == 0 ? asprintf(&s, "%" PRId64, milli / 1000) : asprintf(&s, "%" PRId64 "m", milli)) < 0)
                return NULL;
        return s;
}

static char *status_format_bytes(int64_t bytes) {
        static const char *const suffix[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
        size_t i = 0;
        char *s = NULL;

        while (bytes != 0 && bytes % 1024 == 0 && i + 1 < ELEMENTSOF(suffix)) {
                bytes /= 1024;
                i++;
        }
        if (asprintf(&s, "%" PRId64 "%s", bytes, suffix[i]) < 0)
                return NULL;
        return s;
}

/* sharesToMilliCPU, taking the allocated request when the shares are what it gives */
static int64_t shares_to_milli(int64_t shares) {
        if (shares <= 2)
                return 0;
        return (shares * 1000 + 1023) / 1024;
}

static int set_quantity(json_t *list, const char *name, char *v) {
        _cleanup_free_ char *owned = v;
        if (!owned)
                return -ENOMEM;
        return json_object_set_new(list, name, json_string(owned));
}

/* the names a resource list of the pod's effective requests (limits: false) or limits carries, once each */
static int pod_resource_names(const struct pod *pod, bool limits, char ***ret) {
        _cleanup_strv_free_ char **names = NULL;
        const struct resource_list *lists[4];
        int r;

        for (size_t k = 0; k < 2; k++) {
                const struct container *cs = k == 0 ? pod->spec.containers : pod->spec.init_containers;
                size_t n = k == 0 ? pod->spec.n_containers : pod->spec.n_init_containers;
                for (size_t i = 0; i < n; i++) {
                        size_t nl = 0;
                        lists[nl++] = &cs[i].resources.limits;
                        if (!limits)
                                lists[nl++] = &cs[i].resources.requests;
                        for (size_t l = 0; l < nl; l++)
                                for (size_t j = 0; j < lists[l]->n; j++)
                                        if (!strv_contains(names, lists[l]->names[j]) &&
                                            (r = strv_extend(&names, lists[l]->names[j])) < 0)
                                                return r;
                }
        }
        lists[0] = limits ? &pod->spec.resources.limits : &pod->spec.resources.requests;
        lists[1] = limits ? NULL : &pod->spec.overhead;
        for (size_t l = 0; l < 2 && lists[l]; l++)
                for (size_t j = 0; j < lists[l]->n; j++)
                        if ((l == 1 || resource_is_pod_level_supported(lists[l]->names[j])) &&
                            !strv_contains(names, lists[l]->names[j]) &&
                            (r = strv_extend(&names, lists[l]->names[j])) < 0)
                                return r;
        *ret = TAKE_PTR(names);
        return 0;
}

static json_t *pod_resource_list(const struct pod *pod, bool limits) {
        _cleanup_strv_free_ char **names = NULL;
        json_auto_t *l = json_object();

        if (!l || pod_resource_names(pod, limits, &names) < 0)
                return NULL;
        for (char **n = names; n && *n; n++) {
                int64_t v = limits ? resource_pod_limits(pod, *n) : resource_pod_requests(pod, *n);
                if (set_quantity(l, *n, streq(*n, "cpu") ? status_format_milli(v) : status_format_bytes(v)) < 0)
                        return NULL;
        }
        return TAKE_PTR(l);
}

/* status.allocatedResources (PodRequests of the allocated pod) and status.resources (its effective requests and
 * limits: getEffectiveAllocatedResources), reported for every pod with InPlacePodLevelResourcesVerticalScaling (beta
 * on since v1.36). Upstream reads a running pod's back from its pod cgroup, which holds these values once a resize
 * is actuated. */
static void add_pod_level_resources(const struct pod_status_input *in, json_t *status) {
        const struct pod *pod = in->allocated_pod ? in->allocated_pod : in->pod;
        json_t *req = pod_resource_list(pod, false), *lim = pod_resource_list(pod, true), *res = json_object();

        if (!req || !lim || !res) {
                json_decref(req);
                json_decref(lim);
                json_decref(res);
                return;
        }
        if (json_object_size(req) > 0) {
                json_object_set(status, "allocatedResources", req);
                json_object_set(res, "requests", req);
        }
        if (json_object_size(lim) > 0)
                json_object_set(res, "limits", lim);
        json_object_set_new(status, "resources", res);
        json_decref(req);
        json_decref(lim);
}

/* status.containerStatuses[].resources of a running container: what the runtime says it runs with, the
 * allocation for what it does not say (convertContainerStatusResources) */
static json_t *actual_resources_json(const json_t *alloc, const struct kc_container *c) {
        const json_t *al = json_object_get(alloc, "limits"), *rq = json_object_get(alloc, "requests");
        json_auto_t *out = json_object(), *limits = NULL, *requests = NULL;
        json_t *v;
        const char *key;

        if (!out)
                return NULL;
        if (json_is_object(al)) {
                limits = json_deep_copy(al);
                if (!limits)
                        return NULL;
                if (c->res_cpu_quota > 0 && c->res_cpu_period > 0 &&
                    set_quantity(limits, "cpu", status_format_milli(c->res_cpu_quota * 1000 / c->res_cpu_period)) < 0)
                        return NULL;
                if (c->res_memory_limit > 0 && json_object_get(al, "memory") &&
                    set_quantity(limits, "memory", status_format_bytes(c->res_memory_limit)) < 0)
                        return NULL;
                json_object_set(out, "limits", limits);
        }
        if (json_is_object(rq)) {
                requests = json_object();
                if (!requests)
                        return NULL;
                json_object_foreach((json_t *) rq, key, v)
                        if (!streq(key, "cpu"))
                                json_object_set(requests, key, v);
                v = json_object_get(rq, "cpu");
                if (v) {
                        struct quantity q = {};
                        bool same = json_is_string(v) && quantity_parse(json_string_value(v), &q) >= 0 &&
                                    kr_milli_cpu_to_shares(q.milli) == c->res_cpu_shares;
                        quantity_done(&q);
                        if (same)
                                json_object_set(requests, "cpu", v);
                        else if (set_quantity(requests, "cpu",
                                              status_format_milli(shares_to_milli(c->res_cpu_shares))) < 0)
                                return NULL;
                }
                json_object_set(out, "requests", requests);
        }
        return TAKE_PTR(out);
}

/* allocatedResources (the allocated requests) and, while it runs, resources (what it runs with) */
static void add_resources(const struct pod_status_input *in, const struct container *spec, const struct kc_container *c,
                          json_t *st) {
        const json_t *alloc = in->allocation ? json_object_get(in->allocation, spec->name) : NULL;
        const json_t *req = json_object_get(alloc, "requests");

        if (!st || !alloc)
                return;
        if (json_is_object(req) && json_object_size(req) > 0)
                json_object_set_new(st, "allocatedResources", json_deep_copy(req));
        /* a running container always has it, {} when it has no resources (convertContainerStatusResources): the
         * apiserver allows a resize only when the first running container's status has it (isPodResizeRequestSupported) */
        if (c && c->state == KC_CONTAINER_RUNNING) {
                json_t *r = c->have_resources ? actual_resources_json(alloc, c) : json_deep_copy(alloc);
                if (r)
                        json_object_set_new(st, "resources", r);
        }
}

/* status.volumeMounts (convertToAPIContainerStatuses): every volumeMount of the spec, a read-only one with its
 * recursive read-only mode resolved to Disabled or Enabled */
static void add_volume_mounts(const struct pod_status_input *in, const struct container *spec, json_t *st) {
        const struct volume_mounts *m = pod_container_mounts(in->pod, spec);
        json_t *l;

        if (!st || !m || m->n == 0)
                return;
        l = json_array();
        for (size_t i = 0; l && i < m->n; i++) {
                const struct volume_mount *vm = &m->items[i];
                bool rro = false;
                json_t *v = json_pack("{s:s, s:s}", "name", strempty(vm->name), "mountPath", strempty(vm->mount_path));

                if (v && vm->read_only) {
                        /* an error (a mode the validation refused) is Disabled, as upstream */
                        if (pod_mount_recursive_read_only(vm, in->runtime_supports_rro, &rro, NULL) == -ENOMEM)
                                rro = false;
                        (void) json_object_set_new(v, "readOnly", json_true());
                        (void) json_object_set_new(v, "recursiveReadOnly", json_string(rro ? "Enabled" : "Disabled"));
                }
                if (!v || json_array_append_new(l, v) < 0) {
                        json_decref(l);
                        return;
                }
        }
        if (l)
                (void) json_object_set_new(st, "volumeMounts", l);
}

/* status.user (convertContainerStatusUser): the identity the runtime says the process runs with */
static void add_user(const struct kc_container *c, json_t *st) {
        json_t *groups = json_array(), *u;

        for (size_t i = 0; groups && i < c->n_user_groups; i++)
                if (json_array_append_new(groups, json_integer(c->user_groups[i])) < 0) {
                        json_decref(groups);
                        return;
                }
        if (!groups)
                return;
        u = json_pack("{s:{s:I, s:I, s:o}}", "linux", "uid", (json_int_t) c->user_uid, "gid", (json_int_t) c->user_gid,
                      "supplementalGroups", groups);
        if (u)
                (void) json_object_set_new(st, "user", u);
}

static json_t *container_status_json(const struct pod_status_input *in, const struct container *spec, bool init) {
        const struct kc_container *c = in->observed ? kc_pod_status_find_container(in->observed, spec->name) : NULL;
        const struct kc_container *prev = previous_instance(in->observed, spec->name);
        const struct container_waiting *w = find_waiting(in, spec->name);
        /* the default waiting reason: with init containers, every container waits for the pod to initialize */
        const char *def = in->pod->spec.n_init_containers > 0 ? "PodInitializing" : "ContainerCreating";
        json_t *st, *state, *last = NULL;

        if (!c) {
                json_t *old = old_container_status(in, spec->name, init), *old_last;
                json_int_t restarts = json_integer_value(json_object_get(old, "restartCount"));

                /* terminated before and gone from the runtime since (removed, the node restarted): it stays as
                 * it was; otherwise its restarts and last state are kept */
                if (json_is_object(json_object_get(json_object_get(old, "state"), "terminated")))
                        return json_deep_copy(old);
                old_last = json_object_get(old, "lastState");
                state = waiting_json(w ? w->reason : def, w ? w->message : NULL);
                st = json_pack("{s:s, s:o, s:o, s:b, s:I, s:s, s:s, s:b}", "name", spec->name, "state", state,
                               "lastState", json_is_object(old_last) ? json_deep_copy(old_last) : json_object(),
                               "ready", 0, "restartCount", restarts, "image", spec->image, "imageID", "", "started", 0);
                add_volume_mounts(in, spec, st);
                return st;
        }

        state = state_of(c);
        if (prev && (prev->state == KC_CONTAINER_EXITED || prev->state == KC_CONTAINER_UNKNOWN))
                last = json_pack("{s:o}", "terminated", terminated_json(prev));
        /* a container that will be restarted and has a reason (back-off, pull error) waits with it; what it
         * was becomes the last state (the reasonCache step of convertToAPIContainerStatuses) */
        if (w && container_should_restart(in->pod, spec, c)) {
                json_decref(last);
                last = state;
                state = waiting_json(w->reason, w->message);
        }
        st = json_pack("{s:s, s:o, s:o, s:b, s:i, s:s, s:s, s:o, s:b}", "name", spec->name, "state", state, "lastState",
                       last ? last : json_object(), "ready",
                       init ? init_container_ready(in, spec, c) : container_ready(in, spec, c), "restartCount",
                       (json_int_t) c->restart_count, "image", spec->image, "imageID", strempty(c->image_ref),
                       "containerID", container_id_json(c), "started",
                       c->state == KC_CONTAINER_RUNNING && probe_container_started(spec, c, in->probes));
        add_resources(in, spec, c, st);
        add_volume_mounts(in, spec, st);
        if (c->have_user)
                add_user(c, st);
        /* the effective stop signal as the runtime reports it (the container's, else its image's, else SIGTERM);
         * none from a runtime that does not know the field (SIGNAL_RUNTIME_DEFAULT) */
        if (in->stop_signals && stop_signal_name(c->stop_signal))
                json_object_set_new(st, "stopSignal", json_string(stop_signal_name(c->stop_signal)));
        if (!init && json_object_get(in->allocated_resources_status, spec->name))
                (void) json_object_set(st, "allocatedResourcesStatus",
                                       json_object_get(in->allocated_resources_status, spec->name));
        return st;
}

const char *status_pod_phase(const struct pod_status_input *in) {
        const struct pod *pod = in->pod;
        size_t unknown = 0, running = 0, waiting = 0, stopped = 0, succeeded = 0, restarting = 0;
        size_t pending_init = 0, failed_init = 0;

        if (in->evict_reason)
                return "Failed";

        /* init containers (getPhase): a failed one fails a pod that never restarts; one not completed yet
         * keeps the pod pending */
        for (size_t i = 0; i < pod->spec.n_init_containers; i++) {
                const struct container *spec = &pod->spec.init_containers[i];
                const struct kc_container *c = in->observed ? kc_pod_status_find_container(in->observed, spec->name)
                                                            : NULL;
                const struct kc_container *prev = previous_instance(in->observed, spec->name);

                if (container_is_sidecar(spec)) {
                        /* a sidecar is pending until it started; its exits fail nothing (it is restarted) and a
                         * terminated one does not count; a running one keeps the pod Running (getPhase) */
                        if (!probe_container_started(spec, c, in->probes))
                                pending_init++;
                        if (c && c->state == KC_CONTAINER_RUNNING)
                                running++;
                        continue;
                }
                if (!c || c->state == KC_CONTAINER_RUNNING)
                        pending_init++;
                else if (c->state == KC_CONTAINER_EXITED) {
                        /* a failed one fails the pod unless it is started again (its restart policy, or the
                         * pod's) */
                        if (c->exit_code != 0 && !container_should_restart_on_exit(&pod->spec, spec, c->exit_code))
                                failed_init++;
                        else if (c->exit_code != 0)
                                pending_init++;
                } else if (c->state == KC_CONTAINER_CREATED && prev && prev->state == KC_CONTAINER_EXITED) {
                        if (prev->exit_code != 0 &&
                            !container_should_restart_on_exit(&pod->spec, spec, prev->exit_code))
                                failed_init++;
                } else
                        pending_init++;
        }

        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                const struct container *spec = &pod->spec.containers[i];
                const struct kc_container *c = in->observed ? kc_pod_status_find_container(in->observed, spec->name)
                                                            : NULL;

                if (!c) {
                        /* not created yet: waiting (ContainerCreating, or a pull error) */
                        waiting++;
                        continue;
                }
                switch (c->state) {
                case KC_CONTAINER_RUNNING:
                        running++;
                        break;
                case KC_CONTAINER_EXITED:
                        stopped++;
                        if (c->exit_code == 0)
                                succeeded++;
                        /* it will be started again (its restart policy and rules, else the pod's) */
                        if (container_should_restart_on_exit(&pod->spec, spec, c->exit_code))
                                restarting++;
                        break;
                case KC_CONTAINER_CREATED:
                        /* waiting; with a previous termination it counts as stopped (getPhase) */
                        if (previous_instance(in->observed, spec->name))
                                stopped++;
                        else
                                waiting++;
                        break;
                case KC_CONTAINER_UNKNOWN:
                default:
                        unknown++;
                        break;
                }
        }
        if (failed_init > 0)
                return "Failed"; /* an init container failed and will not be started again */
        /* pending init containers of a pod whose app containers started before (the sandbox was re-created)
         * do not make it pending again */
        if ((pending_init > 0 && running == 0 && stopped == 0) || waiting > 0)
                return "Pending";
        if (running > 0 && unknown == 0)
                return "Running";
        if (running == 0 && stopped > 0 && unknown == 0) {
                /* a terminal pod's containers are not started again, whatever its restart policy */
                if (in->terminal)
                        return stopped == succeeded ? "Succeeded" : "Failed";
                if (restarting > 0)
                        return "Running"; /* some of them will be started again */
                if (stopped == succeeded)
                        return "Succeeded";
                return "Failed";
        }
        return "Pending";
}

bool status_condition_shared_by_kubelet(const char *type) {
        return streq_ptr(type, "DisruptionTarget");
}

bool status_condition_by_kubelet(const char *type) {
        static const char *const owned[] = { "PodScheduled",
                                             "Ready",
                                             "Initialized",
                                             "ContainersReady",
                                             "PodReadyToStartContainers",
                                             "PodResizePending",
                                             "PodResizeInProgress" };
        for (size_t i = 0; type && i < ELEMENTSOF(owned); i++)
                if (streq(owned[i], type))
                        return true;
        return false;
}

/* a condition of the pod as the API server has it (set by a client), NULL if none */
static const json_t *pod_condition(const struct pod_status_input *in, const char *type) {
        const json_t *list = json_object_get(json_object_get(in->pod->raw, "status"), "conditions"), *c;
        size_t i;

        json_array_foreach(list, i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "type")), type))
                        return c;
        return NULL;
}

/* GeneratePodReadyCondition's readiness gates: NULL when every gate's condition is True, else the message */
static int readiness_gates_message(const struct pod_status_input *in, char **ret) {
        _cleanup_free_ char *msg = NULL;
        char *const *gates = in->pod->spec.readiness_gates;

        for (size_t i = 0; gates && gates[i]; i++) {
                const json_t *c = pod_condition(in, gates[i]);
                const char *status = c ? json_string_value(json_object_get(c, "status")) : NULL;
                _cleanup_free_ char *q = go_quote(gates[i]), *one = NULL, *joined = NULL;

                if (!q)
                        return -ENOMEM;
                if (!c) {
                        if (asprintf(&one, "corresponding condition of pod readiness gate %s does not exist.", q) < 0)
                                return -ENOMEM;
                } else if (!streq_ptr(status, "True")) {
                        if (asprintf(&one, "the status of pod readiness gate %s is not \"True\", but %s", q,
                                     strempty(status)) < 0)
                                return -ENOMEM;
                } else
                        continue;
                if (asprintf(&joined, "%s%s%s", strempty(msg), msg ? ", " : "", one) < 0)
                        return -ENOMEM;
                free(msg);
                msg = TAKE_PTR(joined);
        }
        *ret = TAKE_PTR(msg);
        return 0;
}

/* the lastTransitionTime of a condition in the previous status, when its status was the same; else 0 */
static int64_t old_transition(const struct pod_status_input *in, const char *type, bool status) {
        const json_t *list = json_object_get(in->old_status, "conditions"), *c;
        size_t i;
        int64_t t;

        json_array_foreach(list, i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "type")), type) &&
                    streq_ptr(json_string_value(json_object_get(c, "status")), status ? "True" : "False") &&
                    parse_rfc3339(strempty(json_string_value(json_object_get(c, "lastTransitionTime"))), &t) >= 0)
                        return t / 1000;
        return 0;
}

static json_t *condition(const char *type, bool status, int64_t transition_usec, const char *reason,
                         const char *message) {
        char buf[64];
        json_t *c = json_pack("{s:s, s:s, s:n, s:s}", "type", type, "status", status ? "True" : "False",
                              "lastProbeTime", "lastTransitionTime",
                              format_rfc3339((uint64_t) MAX(transition_usec, 0), buf, sizeof(buf)));
        if (c && reason)
                json_object_set_new(c, "reason", json_string(reason));
        if (c && message)
                json_object_set_new(c, "message", json_string(message));
        return c;
}

/* initContainerStatuses (in spec order) and, while the pod is not initialized, the Initialized condition's
 * message (GeneratePodInitializedCondition): init containers that did not complete; none once an app
 * container started (the pod was initialized before) or the pod succeeded. */
static int init_container_statuses(const struct pod_status_input *in, json_t **ret, char **ret_message) {
        const struct pod *pod = in->pod;
        json_auto_t *a = json_array();
        _cleanup_strv_free_ char **incomplete = NULL;
        _cleanup_free_ char *list = NULL, *msg = NULL;
        bool app_started = false;

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < pod->spec.n_init_containers; i++) {
                const struct container *spec = &pod->spec.init_containers[i];
                const struct kc_container *c = in->observed ? kc_pod_status_find_container(in->observed, spec->name)
                                                            : NULL;

                if (json_array_append_new(a, container_status_json(in, spec, true)) < 0)
                        return -ENOMEM;
                if (!init_container_done(in, spec, c) && strv_extend(&incomplete, spec->name) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; in->observed && i < pod->spec.n_containers; i++) {
                const struct kc_container *c = kc_pod_status_find_container(in->observed, pod->spec.containers[i].name);
                if (c && (c->state == KC_CONTAINER_RUNNING || c->state == KC_CONTAINER_EXITED))
                        app_started = true;
        }
        if (incomplete && !app_started && !streq(status_pod_phase(in), "Succeeded")) {
                list = strv_join(incomplete, " ");
                if (!list || asprintf(&msg, "containers with incomplete status: [%s]", list) < 0) {
                        msg = NULL;
                        return -ENOMEM;
                }
        }
        *ret_message = TAKE_PTR(msg);
        *ret = TAKE_PTR(a);
        return 0;
}

static const char *sandbox_ip(const struct pod_status_input *in) {
        const struct kc_pod_status *st = in->observed;
        if (in->pod->spec.host_network)
                return in->host_ip;
        if (st && st->n_sandboxes > 0 && st->sandboxes[0]->state == KC_SANDBOX_READY && st->sandboxes[0]->have_status &&
            !isempty(st->sandboxes[0]->ip))
                return st->sandboxes[0]->ip;
        return NULL;
}

static bool sandbox_ready(const struct pod_status_input *in) {
        const struct kc_pod_status *st = in->observed;
        return st && st->n_sandboxes > 0 && st->sandboxes[0]->state == KC_SANDBOX_READY &&
               (in->pod->spec.host_network || sandbox_ip(in));
}

static int name_cmp(const void *a, const void *b) {
        return strcmp(json_string_value(json_object_get(*(json_t *const *) a, "name")),
                      json_string_value(json_object_get(*(json_t *const *) b, "name")));
}

int status_pod_generate(const struct pod_status_input *in, json_t **ret) {
        const struct pod *pod = in->pod;
        _cleanup_free_ json_t **sorted = NULL;
        _cleanup_strv_free_ char **unready = NULL;
        _cleanup_free_ char *unready_list = NULL, *message = NULL, *gates_message = NULL;
        json_t *ready_cond = NULL;
        const char *phase = in->terminated_reason ? "Failed" : status_pod_phase(in), *ip = sandbox_ip(in);
        bool completed = streq(phase, "Succeeded") || streq(phase, "Failed");
        /* a pod that finished or is being deleted keeps the IP it had once its sandbox is stopped: upstream's last
         * status is the one computed before the kill (syncTerminatingPod, TerminatePod), with the IP (e2e_node's
         * "Pod IPs when pod gets terminated should contain podIPs in status for during termination") */
        if (!ip && (completed || pod->has_deletion_timestamp) && !sandbox_ready(in))
                ip = json_string_value(json_object_get(in->old_status, "podIP"));
        int64_t ready_at = in->ready_transition_usec ? in->ready_transition_usec : in->initialized_usec;
        json_auto_t *statuses = NULL, *init_statuses = NULL;
        json_t *conditions, *status;
        _cleanup_free_ char *init_message = NULL;
        char buf[64];
        int r;

        r = init_container_statuses(in, &init_statuses, &init_message);
        if (r < 0)
                return r;
        /* sidecars count for readiness as app containers, and come first */
        for (size_t i = 0; i < pod->spec.n_init_containers; i++) {
                const struct container *spec = &pod->spec.init_containers[i];
                if (container_is_sidecar(spec) &&
                    !container_ready(in, spec,
                                     in->observed ? kc_pod_status_find_container(in->observed, spec->name) : NULL) &&
                    strv_extend(&unready, spec->name) < 0)
                        return -ENOMEM;
        }
        sorted = calloc(pod->spec.n_containers + 1, sizeof(json_t *));
        if (!sorted)
                return -ENOMEM;
        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                const struct container *spec = &pod->spec.containers[i];
                const struct kc_container *c = in->observed ? kc_pod_status_find_container(in->observed, spec->name)
                                                            : NULL;

                sorted[i] = container_status_json(in, spec, false);
                if (!sorted[i]) {
                        for (size_t j = 0; j < i; j++)
                                json_decref(sorted[j]);
                        return -ENOMEM;
                }
                if (!container_ready(in, spec, c) && strv_extend(&unready, spec->name) < 0) {
                        for (size_t j = 0; j <= i; j++)
                                json_decref(sorted[j]);
                        return -ENOMEM;
                }
        }
        qsort(sorted, pod->spec.n_containers, sizeof(json_t *), name_cmp);
        statuses = json_array();
        for (size_t i = 0; i < pod->spec.n_containers; i++)
                json_array_append_new(statuses, sorted[i]);

        if (unready) {
                unready_list = strv_join(unready, " ");
                if (!unready_list || asprintf(&message, "containers with unready status: [%s]", unready_list) < 0)
                        return -ENOMEM;
        }
        /* readiness gates: Ready needs every gate's condition True too, once the containers are ready */
        if (!unready) {
                r = readiness_gates_message(in, &gates_message);
                if (r < 0)
                        return r;
        }
        /* the conditions of other clients first, kept as they are (generateAPIPodStatus), then the kubelet's in
         * upstream's order */
        conditions = json_array();
        if (!conditions)
                return -ENOMEM;
        {
                const json_t *list = json_object_get(json_object_get(pod->raw, "status"), "conditions"), *c;
                size_t i;
                json_array_foreach(list, i, c)
                        if (json_is_object(c) &&
                            !status_condition_by_kubelet(json_string_value(json_object_get(c, "type"))) &&
                            !(in->terminated_reason &&
                              status_condition_shared_by_kubelet(json_string_value(json_object_get(c, "type")))))
                                json_array_append(conditions, (json_t *) c);
        }
        if (gates_message) {
                int64_t t = old_transition(in, "Ready", false);
                ready_cond = condition("Ready", false, t ? t : (in->now_usec ? in->now_usec : ready_at),
                                       "ReadinessGatesNotReady", gates_message);
        } else {
                int64_t t = pod->spec.readiness_gates && !unready ? old_transition(in, "Ready", true) : 0;
                ready_cond = condition("Ready", !unready, t ? t : ready_at,
                                       unready ? (completed ? "PodCompleted" : "ContainersNotReady") : NULL,
                                       unready && !completed ? message : NULL);
        }
        /* the in-place resize conditions (the status manager's resize conditions) */
        if (in->resize_pending_reason) {
                json_t *c = condition("PodResizePending", true, in->resize_pending_usec, in->resize_pending_reason,
                                      in->resize_pending_message);
                if (c && in->generation > 0)
                        json_object_set_new(c, "observedGeneration", json_integer(in->generation));
                if (!c || json_array_append_new(conditions, c) < 0) {
                        json_decref(conditions);
                        json_decref(ready_cond);
                        return -ENOMEM;
                }
        }
        if (in->resize_in_progress) {
                json_t *c = condition("PodResizeInProgress", true, in->resize_in_progress_usec,
                                      in->resize_error ? "Error" : NULL, in->resize_error);
                if (c && in->generation > 0)
                        json_object_set_new(c, "observedGeneration", json_integer(in->generation));
                if (!c || json_array_append_new(conditions, c) < 0) {
                        json_decref(conditions);
                        json_decref(ready_cond);
                        return -ENOMEM;
                }
        }
        if (json_array_append_new(conditions, condition("PodReadyToStartContainers", sandbox_ready(in),
                                                        in->initialized_usec, NULL, NULL)) < 0 ||
            json_array_append_new(conditions,
                                  condition("Initialized", !init_message, in->initialized_usec,
                                            init_message ? "ContainersNotInitialized" : NULL, init_message)) < 0 ||
            json_array_append_new(conditions, ready_cond) < 0 ||
            json_array_append_new(conditions,
                                  condition("ContainersReady", !unready, ready_at,
                                            unready ? (completed ? "PodCompleted" : "ContainersNotReady") : NULL,
                                            unready && !completed ? message : NULL)) < 0 ||
            json_array_append_new(conditions, condition("PodScheduled", true, in->initialized_usec, NULL, NULL)) < 0) {
                json_decref(conditions);
                return -ENOMEM;
        }

        if (conditions && in->terminated_reason) {
                /* DisruptionTarget first, as the status manager puts it (PodDisruptionConditions) */
                json_t *c = condition("DisruptionTarget", true, in->terminated_usec, "TerminationByKubelet",
                                      strempty(in->terminated_message));
                if (!c || json_array_insert_new(conditions, 0, c) < 0) {
                        json_decref(conditions);
                        conditions = NULL;
                }
        }
        status = json_pack("{s:s, s:o, s:O, s:s, s:s}", "phase", phase, "conditions", conditions, "containerStatuses",
                           statuses, "qosClass", qos_class_to_string(pod_qos_class(pod)), "hostIP",
                           strempty(in->host_ip));
        if (!status)
                return -ENOMEM;
        if (in->terminated_reason) {
                json_object_set_new(status, "reason", json_string(in->terminated_reason));
                json_object_set_new(status, "message", json_string(strempty(in->terminated_message)));
        }
        if (pod->spec.n_init_containers > 0)
                json_object_set_new(status, "initContainerStatuses", TAKE_PTR(init_statuses));
        if (pod->spec.n_ephemeral_containers > 0) {
                /* ephemeralContainerStatuses, sorted by name; never ready (not probed, not serving) */
                json_t *eph = json_array();
                for (size_t i = 0; eph && i < pod->spec.n_ephemeral_containers; i++) {
                        json_t *cs = container_status_json(in, &pod->spec.ephemeral_containers[i], false);
                        if (!cs || json_array_append_new(eph, cs) < 0) {
                                json_decref(eph);
                                eph = NULL;
                                break;
                        }
                        json_object_set_new(cs, "ready", json_false());
                }
                if (!eph) {
                        json_decref(status);
                        return -ENOMEM;
                }
                if (json_array_size(eph) > 1) {
                        json_t **items = calloc(json_array_size(eph), sizeof(json_t *));
                        size_t n = json_array_size(eph);
                        if (!items) {
                                json_decref(eph);
                                json_decref(status);
                                return -ENOMEM;
                        }
                        for (size_t i = 0; i < n; i++)
                                items[i] = json_incref(json_array_get(eph, i));
                        qsort(items, n, sizeof(json_t *), name_cmp);
                        json_array_clear(eph);
                        for (size_t i = 0; i < n; i++)
                                json_array_append_new(eph, items[i]);
                        free(items);
                }
                json_object_set_new(status, "ephemeralContainerStatuses", eph);
        }
        if (!isempty(in->host_ip))
                json_object_set_new(status, "hostIPs", json_pack("[{s:s}]", "ip", in->host_ip));
        if (ip) {
                json_object_set_new(status, "podIP", json_string(ip));
                json_object_set_new(status, "podIPs", json_pack("[{s:s}]", "ip", ip));
        }
        if (in->evict_reason) {
                json_object_set_new(status, "reason", json_string(in->evict_reason));
                json_object_set_new(status, "message", json_string(strempty(in->evict_message)));
        }
        add_pod_level_resources(in, status);
        if (in->generation > 0)
                json_object_set_new(status, "observedGeneration", json_integer(in->generation));
        if (in->start_time_usec > 0)
                json_object_set_new(status, "startTime",
                                    json_string(format_rfc3339((uint64_t) in->start_time_usec, buf, sizeof(buf))));
        *ret = status;
        return 0;
}

static int check_transition(const json_t *old_list, const json_t *new_list, const struct pod_spec *spec,
                            struct ck_error **ret_error) {
        const json_t *o, *n;
        size_t i, j;

        json_array_foreach(old_list, i, o) {
                const json_t *term = json_object_get(json_object_get(o, "state"), "terminated");
                const char *name = json_string_value(json_object_get(o, "name"));
                const struct container *c = NULL;
                int32_t code;

                if (!json_is_object(term) || !name)
                        continue;
                code = (int32_t) json_integer_value(json_object_get(term, "exitCode"));
                for (size_t k = 0; !c && k < spec->n_containers; k++)
                        if (streq_ptr(spec->containers[k].name, name))
                                c = &spec->containers[k];
                for (size_t k = 0; !c && k < spec->n_init_containers; k++)
                        if (streq_ptr(spec->init_containers[k].name, name))
                                c = &spec->init_containers[k];
                /* a container that restarts after this exit (its own restart policy and rules, else the pod's) */
                if (c ? container_should_restart_on_exit(spec, c, code) : spec->restart_policy != RESTART_POLICY_NEVER)
                        continue;
                json_array_foreach(new_list, j, n)
                        if (streq_ptr(json_string_value(json_object_get(n, "name")), name) &&
                            !json_is_object(json_object_get(json_object_get(n, "state"), "terminated"))) {
                                return ck_error_set(ret_error, -EINVAL,
                                                    "terminated container %s attempted illegal transition to "
                                                    "non-terminated state",
                                                    name);
                        }
        }
        return 0;
}

int status_pod_check_transition(const json_t *old_status, const json_t *new_status, const struct pod_spec *spec,
                                struct ck_error **ret_error) {
        int r;

        if (!old_status)
                return 0;
        r = check_transition(json_object_get(old_status, "containerStatuses"),
                             json_object_get(new_status, "containerStatuses"), spec, ret_error);
        if (r < 0)
                return r;
        return check_transition(json_object_get(old_status, "initContainerStatuses"),
                                json_object_get(new_status, "initContainerStatuses"), spec, ret_error);
}

/* ---------------------------------------------------------------- TerminatePod */

static bool status_is_waiting(const json_t *cs) {
        return json_object_get(json_object_get(cs, "state"), "waiting") != NULL ||
               json_object_size(json_object_get(cs, "state")) == 0;
}

static bool status_is_terminated(const json_t *cs) {
        return json_object_get(json_object_get(cs, "state"), "terminated") != NULL;
}

static bool status_was_terminated(const json_t *cs) {
        return json_object_get(json_object_get(cs, "lastState"), "terminated") != NULL;
}

static int mark_unknown(json_t *cs) {
        json_t *state = json_pack("{s:{s:i, s:s, s:s}}", "terminated", "exitCode", 137, "reason",
                                  "ContainerStatusUnknown", "message",
                                  "The container could not be located when the pod was terminated");
        if (!state)
                return -ENOMEM;
        if (json_object_set_new(cs, "state", state) < 0)
                return -ENOMEM;
        if (json_is_true(json_object_get(cs, "ready")))
                (void) json_object_set_new(cs, "ready", json_false());
        if (json_object_get(cs, "started"))
                (void) json_object_set_new(cs, "started", json_false());
        return 0;
}

/* hasPodInitialized, on the status itself: any app container out of waiting, or the last init container
 * completed (a sidecar: started and running) */
static bool status_has_initialized(const json_t *status, bool has_init_containers) {
        const json_t *cs, *inits = json_object_get(status, "initContainerStatuses"), *last;
        size_t i, n = json_array_size(inits);

        if (!has_init_containers)
                return true;
        json_array_foreach(json_object_get(status, "containerStatuses"), i, cs)
                if (status_was_terminated(cs) || !status_is_waiting(cs))
                        return true;
        if (n == 0)
                return false;
        last = json_array_get(inits, n - 1);
        if (json_object_get(json_object_get(last, "state"), "running"))
                return json_is_true(json_object_get(last, "started")); /* a sidecar that started */
        for (const char *k = "state";; k = "lastState") {
                const json_t *t = json_object_get(json_object_get(last, k), "terminated");
                if (t && json_integer_value(json_object_get(t, "exitCode")) == 0)
                        return true;
                if (streq(k, "lastState"))
                        return false;
        }
}

int status_pod_terminate(const json_t *status, bool has_init_containers, bool is_static, json_t **ret) {
        json_auto_t *copy = json_deep_copy(status);
        json_t *cs, *inits;
        const char *phase;
        size_t i, started;
        int r;

        assert(ret);
        if (!copy)
                return -ENOMEM;
        if (status_has_initialized(status, has_init_containers))
                json_array_foreach(json_object_get(copy, "containerStatuses"), i, cs)
                        if (!status_is_terminated(cs) && (r = mark_unknown(cs)) < 0)
                                return r;
        /* initializedContainers: all but the suffix still waiting with no termination before; at least one */
        inits = json_object_get(copy, "initContainerStatuses");
        started = json_array_size(inits) > 0 ? 1 : 0;
        for (i = json_array_size(inits); i > 0; i--) {
                cs = json_array_get(inits, i - 1);
                if (!status_is_waiting(cs) || status_was_terminated(cs)) {
                        started = i;
                        break;
                }
        }
        for (i = 0; i < started; i++) {
                cs = json_array_get(inits, i);
                if (!status_is_terminated(cs) && (r = mark_unknown(cs)) < 0)
                        return r;
        }
        phase = json_string_value(json_object_get(copy, "phase"));
        if (!is_static && !streq_ptr(phase, "Succeeded") && !streq_ptr(phase, "Failed") &&
            json_object_set_new(copy, "phase", json_string("Failed")) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(copy);
        return 0;
}
