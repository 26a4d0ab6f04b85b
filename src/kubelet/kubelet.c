/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet's top level: desired pods from the config sources, the PLEG's view of the runtime, and one
 * pod worker per pod UID (pod_workers.go). A worker runs at most one reconcile pass at a time
 * (pod_sync.c); requests that arrive meanwhile are coalesced into one more pass. */

#include <arpa/inet.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <string.h>

#include "basic/list.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/active_deadline.h"
#include "kubelet/dra.h"
#include "kubelet/pod_sync.h"
#include "kubelet/admission.h"
#include "kuberuntime/actions.h"
#include "kuberuntime/security.h"
#include "kubelet/mirror.h"
#include "node/node_ip.h"
#include "node/node_status.h"
#include "objects/manager.h"
#include "basic/workpool.h"
#include "features/features.h"
#include "images/pull_store.h"
#include "volumes/volumes.h"
#include "prober/prober.h"
#include "stats/host.h"

#define CRASH_BACKOFF_INITIAL_USEC (10 * USEC_PER_SEC)
#define CRASH_BACKOFF_MAX_USEC (300 * USEC_PER_SEC)
#define REMOVAL_BACKOFF_INITIAL_USEC (10 * USEC_PER_SEC)
#define REMOVAL_BACKOFF_MAX_USEC (300 * USEC_PER_SEC)
#define PLEG_RELIST_PERIOD_USEC (1 * USEC_PER_SEC)

static void worker_timer_cb(evutil_socket_t fd, short what, void *userdata);
static void deadline_timer_cb(evutil_socket_t fd, short what, void *userdata);
static bool desired_contains(const struct kubelet *k, const char *uid);

/* ---------------------------------------------------------------- workers */

/* by a hash of the UIDs: the reconcile after every relist and housekeeping look up every pod, so a walk of the
 * list here made them quadratic in the number of pods */
struct pod_worker *kubelet_find_worker(struct kubelet *k, const char *uid) {
        return hashmap_get(&k->workers_by_uid, uid);
}

static char *make_full_name(const char *ns, const char *name) {
        char *s = NULL;
        if (isempty(name))
                return NULL;
        if (asprintf(&s, "%s/%s", strempty(ns), name) < 0)
                return NULL;
        return s;
}

static struct pod_worker *worker_new(struct kubelet *k, const char *uid) {
        struct pod_worker *w = calloc(1, sizeof(*w));
        if (!w)
                return NULL;
        w->k = k;
        w->grace_seconds = 30;
        w->grace_override = -1;
        w->first_seen_usec = now_usec();
        w->first_seen_realtime_usec = (int64_t) now_realtime_usec();
        w->uid = strdup(uid);
        w->timer = evtimer_new(k->base, worker_timer_cb, w);
        w->deadline_timer = evtimer_new(k->base, deadline_timer_cb, w);
        if (!w->uid || !w->timer || !w->deadline_timer || hashmap_put(&k->workers_by_uid, w->uid, w) < 0) {
                kubelet_worker_free(w);
                return NULL;
        }
        DLIST_PREPEND(k->workers, w);
        k->n_workers++;
        return w;
}

void kubelet_worker_free(struct pod_worker *w) {
        if (!w)
                return;
        if (w->k && DLIST_LINKED(w->k->workers, w)) {
                DLIST_REMOVE(w->k->workers, w);
                w->k->n_workers--;
        }
        if (w->k && w->uid && hashmap_get(&w->k->workers_by_uid, w->uid) == w) {
                hashmap_remove(&w->k->workers_by_uid, w->uid);
                /* a pod not desired any more has its last spec */
                const struct pod *gone = w->pod ? w->pod : w->last_pod;
                if (gone)
                        podsapi_pod_removed(w->k->pods_api, w->uid, gone->namespace_, gone->name);
        }
        if (w->k && w->k->status)
                status_manager_forget(w->k->status, w->uid);
        if (w->k && w->k->objects)
                objects_manager_unregister(w->k->objects, w->uid);
        if (w->timer)
                event_free(w->timer);
        if (w->deadline_timer)
                event_free(w->deadline_timer);
        if (w->k && w->k->prober)
                probe_manager_remove_pod(w->k->prober, w->uid);
        kc_pod_status_free(w->observed);
        pod_free(w->pod);
        pod_free(w->last_pod);
        pod_free(w->alloc_pod);
        free(w->resize_pending_message);
        free(w->resize_error);
        for (size_t i = 0; i < w->n_waiting; i++) {
                free(w->waiting[i].name);
                free(w->waiting[i].message);
        }
        free(w->waiting);
        free(w->terminated_reason);
        free(w->terminated_message);
        free(w->api_ns);
        free(w->api_name);
        strv_free(w->owned_volumes);
        free(w->full_name);
        free(w->uid);
        free(w);
}

void kubelet_worker_schedule(struct pod_worker *w, uint64_t delay_usec) {
        uint64_t at = now_usec() + delay_usec;

        /* keep the earlier of two wake-ups */
        if (w->timer_at && w->timer_at <= at && evtimer_pending(w->timer, NULL))
                return;
        w->timer_at = at;
        evtimer_add_usec(w->timer, delay_usec);
}

void kubelet_worker_request_sync(struct pod_worker *w) {
        struct kubelet *k = w->k;

        if (k->stopping || !k->runtime_listed)
                return;
        if (w->busy) {
                w->pending = true;
                /* a pass waiting for its volumes gives way to the new request */
                if (kubelet_pod_sync_waiting_volumes(w->sync))
                        volmgr_pod_poke(k->volumes, w->uid);
                /* a pass whose pull or sandbox waits in its queue for a pod no longer wanted gives way too */
                if (w->sync && (!w->pod || w->deleting)) {
                        kubelet_sync_start_withdraw(w->sync);
                        kubelet_sync_sandbox_withdraw(w->sync);
                }
                return;
        }
        w->busy = true;
        w->pending = false;
        if (kubelet_pod_sync_start(&k->sync_env, w, w->uid, w->full_name, w->pod ? kubelet_worker_sync_pod(w) : NULL,
                                   &w->sync) < 0)
                kubelet_worker_sync_done(w, false, 0, true, false);
}

static void worker_timer_cb(evutil_socket_t fd, short what, void *userdata) {
        struct pod_worker *w = userdata;
        w->timer_at = 0;
        kubelet_worker_request_sync(w);
}

/* ---------------------------------------------------------------- activeDeadlineSeconds */

/* The pod's deadline (active_deadline.go, ShouldSync/ShouldEvict): a timer armed for it; once it passed the pod is
 * stopped for good and fails with DeadlineExceeded. Checked again whenever the spec changes, so that a deadline
 * lowered on a running pod counts at once. */
static void worker_check_deadline(struct pod_worker *w) {
        int64_t now = (int64_t) now_realtime_usec(), deadline = 0;

        if (!w->pod || w->deadline_exceeded)
                return;
        if (!kubelet_active_deadline_passed(w->pod, w->start_time_usec, now, &deadline)) {
                if (deadline > 0)
                        evtimer_add_usec(w->deadline_timer, (uint64_t) (deadline - now));
                else
                        evtimer_del(w->deadline_timer);
                return;
        }
        evtimer_del(w->deadline_timer);
        w->deadline_exceeded = true;
        log_info("Pod was active on the node longer than the specified deadline: pod=\"%s\" podUID=\"%s\" "
                 "activeDeadlineSeconds=%" PRId64,
                 strna(w->full_name), w->uid, w->pod->spec.active_deadline_seconds);
        kubelet_worker_event(w, NULL, "Normal", ACTIVE_DEADLINE_REASON, "%s", ACTIVE_DEADLINE_MESSAGE);
        kubelet_report_status(w->k, w);
        kubelet_worker_request_sync(w);
}

static void deadline_timer_cb(evutil_socket_t fd, short what, void *userdata) {
        worker_check_deadline(userdata);
}

/* status.startTime as the API server holds it (an API pod seen before a restart), 0 when none */
static int64_t api_start_time_usec(const struct pod *p) {
        const char *v = json_string_value(json_object_get(json_object_get(p->raw, "status"), "startTime"));
        int64_t nsec;

        if (!v || pod_config_is_static(p) || parse_rfc3339(v, &nsec) < 0 || nsec <= 0)
                return 0;
        return nsec / 1000;
}

/* ---------------------------------------------------------------- in-place resize (allocation.c) */

struct pod *kubelet_worker_sync_pod(const struct pod_worker *w) {
        return w->alloc_pod ? w->alloc_pod : w->pod;
}

int64_t kubelet_pod_generation(const struct pod *p) {
        return p ? json_integer_value(json_object_get(json_object_get(p->raw, "metadata"), "generation")) : 0;
}

static void set_resize_pending(struct pod_worker *w, const char *reason, char *message /* taken */) {
        _cleanup_free_ char *msg = message;

        if (streq_ptr(w->resize_pending_reason, reason) && streq_ptr(w->resize_pending_message, msg))
                return;
        if (!streq_ptr(w->resize_pending_reason, reason))
                w->resize_pending_usec = (int64_t) now_realtime_usec();
        w->resize_pending_reason = reason;
        free(w->resize_pending_message);
        w->resize_pending_message = TAKE_PTR(msg);
}

/* handlePodResourcesResize: a pod whose spec asks for other resources than it was allocated: allocate them if they
 * fit (ResizeStarted: the sync applies them), else PodResizePending (Deferred: tried again later; Infeasible). The
 * first time a pod is seen its spec is its allocation (admitted), unless the checkpoint knows better. */
static void worker_update_allocation(struct kubelet *k, struct pod_worker *w) {
        _cleanup_free_ const struct pod **others = NULL;
        _cleanup_free_ char *message = NULL;
        const json_t *alloc;
        json_t *now = NULL;
        enum resize_verdict v;
        size_t n = 0;

        if (!w->pod || !k->allocation)
                return;
        alloc = kubelet_allocation_get(k->allocation, w->uid);
        if (!alloc || !kubelet_allocation_differs(alloc, w->pod)) {
                if (!alloc && kubelet_allocation_from_pod(w->pod, &now) >= 0)
                        (void) kubelet_allocation_set(k->allocation, w->uid, now);
                w->alloc_pod = pod_free(w->alloc_pod);
                set_resize_pending(w, NULL, NULL);
                return;
        }
        others = calloc(k->n_workers + 1, sizeof(*others));
        if (!others)
                return;
        for (const struct pod_worker *o = k->workers; o; o = o->next)
                if (o != w && o->pod && n < k->n_workers)
                        others[n++] = kubelet_worker_sync_pod(o);
        v = kubelet_resize_decide(w->pod, pod_config_is_static(w->pod), others, n, &k->admission, &message);
        if (v == RESIZE_ACCEPTED) {
                _cleanup_free_ char *ev = NULL;
                if (kubelet_allocation_from_pod(w->pod, &now) < 0 ||
                    kubelet_allocation_set(k->allocation, w->uid, now) < 0)
                        return; /* tried again at the next change */
                w->alloc_pod = pod_free(w->alloc_pod);
                set_resize_pending(w, NULL, NULL);
                free(w->resize_error);
                w->resize_error = NULL;
                w->resize_in_progress = true;
                w->resize_in_progress_usec = (int64_t) now_realtime_usec();
                ev = kubelet_resize_message("Pod resize started", w->pod, kubelet_pod_generation(w->pod), NULL);
                log_info("Pod resize allocated: pod=\"%s\" podUID=\"%s\"", strna(w->full_name), w->uid);
                kubelet_worker_event(w, NULL, "Normal", "ResizeStarted", "%s", strna(ev));
                return;
        }
        /* not allocated (yet): the pod runs as allocated */
        {
                struct pod *ap = NULL;
                if (kubelet_pod_with_allocation(w->pod, alloc, &ap) < 0) {
                        log_error("pod %s: cannot apply its allocation", strna(w->full_name));
                        return;
                }
                pod_free(w->alloc_pod);
                w->alloc_pod = ap;
        }
        {
                const char *reason = v == RESIZE_DEFERRED ? "Deferred" : "Infeasible";
                bool changed = !streq_ptr(w->resize_pending_reason, reason) ||
                               !streq_ptr(w->resize_pending_message, message);
                if (changed) {
                        _cleanup_free_ char *prefix = NULL, *ev = NULL;
                        log_info("Pod resize %s: pod=\"%s\" podUID=\"%s\" message=\"%s\"", reason, strna(w->full_name),
                                 w->uid, strna(message));
                        if (asprintf(&prefix, "Pod resize %s", reason) >= 0)
                                ev = kubelet_resize_message(prefix, w->pod, kubelet_pod_generation(w->pod), message);
                        kubelet_worker_event(w, NULL, "Warning",
                                             v == RESIZE_DEFERRED ? "ResizeDeferred" : "ResizeInfeasible", "%s",
                                             strna(ev));
                }
                set_resize_pending(w, reason, TAKE_PTR(message));
        }
}

/* Deferred resizes are tried again when room may have been freed (a pod gone) and with housekeeping */
void kubelet_retry_deferred_resizes(struct kubelet *k) {
        for (struct pod_worker *w = k->workers; w; w = w->next)
                if (w->pod && streq_ptr(w->resize_pending_reason, "Deferred")) {
                        worker_update_allocation(k, w);
                        if (!w->resize_pending_reason) {
                                kubelet_report_status(k, w);
                                kubelet_worker_request_sync(w);
                        }
                }
}

/* an allocation is kept while its pod is desired or has a worker */
bool kubelet_allocation_wanted(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        return desired_contains(k, uid) || kubelet_find_worker(k, uid);
}

void kubelet_worker_resize_error(struct pod_worker *w, const char *message) {
        if (streq_ptr(w->resize_error, message))
                return;
        free(w->resize_error);
        w->resize_error = message ? strdup(message) : NULL;
}

/* PodResizeInProgress: some running container does not run with its allocated resources yet (level-triggered, so
 * it holds across restarts); its end is ResizeCompleted */
static void worker_check_resize_done(struct pod_worker *w) {
        const struct pod *p = kubelet_worker_sync_pod(w);
        bool pending = false;

        if (!p || !w->observed)
                return;
        for (size_t i = 0; i < p->spec.n_containers && !pending; i++) {
                struct kr_linux_resources d;
                const struct kc_container *cs = kc_pod_status_find_container(w->observed, p->spec.containers[i].name);
                pending = kr_container_resize_action(p, &p->spec.containers[i], cs, &d) != KR_RESIZE_NONE;
        }
        if (pending && !w->resize_in_progress) {
                w->resize_in_progress = true;
                w->resize_in_progress_usec = (int64_t) now_realtime_usec();
        } else if (!pending && w->resize_in_progress) {
                _cleanup_free_ char *ev = kubelet_resize_message("Pod resize completed", p,
                                                                 kubelet_pod_generation(w->pod), NULL);
                w->resize_in_progress = false;
                free(w->resize_error);
                w->resize_error = NULL;
                log_info("Pod resize completed: pod=\"%s\" podUID=\"%s\"", strna(w->full_name), w->uid);
                kubelet_worker_event(w, NULL, "Normal", "ResizeCompleted", "%s", strna(ev));
        }
}

void kubelet_worker_observed(struct pod_worker *w, struct pod *pod, struct kc_pod_status *status) {
        struct kubelet *k = w->k;
        int r;

        kc_pod_status_free(w->observed);
        w->observed = status;
        if (!w->start_observed && pod->spec.n_containers > 0) {
                bool all_running = true;
                for (size_t i = 0; i < pod->spec.n_containers && all_running; i++) {
                        const struct kc_container *c = kc_pod_status_find_container(status,
                                                                                    pod->spec.containers[i].name);
                        all_running = c && c->state == KC_CONTAINER_RUNNING;
                }
                if (all_running) {
                        w->start_observed = true;
                        histogram_observe(&k->pod_start_hist, (double) (now_usec() - w->first_seen_usec) / 1e6);
                }
        }
        /* at shutdown the prober is freed before the CRI client, whose cancelled calls still end syncs here */
        r = k->prober ? probe_manager_update_pod(k->prober, pod, kubelet_pod_host(k, pod, status), status) : 0;
        if (r < 0)
                log_error("pod %s: cannot set up its probes: %s", strna(w->full_name), strerror(-r));
        else
                kubelet_keep_api_readiness(k, w, pod, status);
        kubelet_worker_update_conditions(w);
        worker_check_resize_done(w);
        kubelet_report_status(k, w);
}

_printf_(6, 0) static void pod_eventv(struct kubelet *k, const struct pod *p, const char *container, const char *type,
                                      const char *reason, const char *fmt, va_list ap) {
        _cleanup_free_ char *msg = NULL, *field = NULL;
        struct event_ref ref;

        if (!k->events || !p)
                return;
        if (vasprintf(&msg, fmt, ap) < 0) {
                msg = NULL;
                return;
        }
        if (container && asprintf(&field, "spec.containers{%s}", container) < 0)
                field = NULL;
        ref = (struct event_ref) {
                .kind = "Pod",
                .namespace_ = p->namespace_,
                .name = p->name,
                .uid = p->uid,
                .api_version = "v1",
                .field_path = field,
                .resource_version = p->resource_version,
        };
        event_recorder_eventf(k->events, &ref, type, reason, "%s", msg);
}

void kubelet_worker_event(struct pod_worker *w, const char *container, const char *type, const char *reason,
                          const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        pod_eventv(w->k, w->pod, container, type, reason, fmt, ap);
        va_end(ap);
}

void kubelet_worker_event_any(struct pod_worker *w, const char *container, const char *type, const char *reason,
                              const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        pod_eventv(w->k, w->pod ? w->pod : w->last_pod, container, type, reason, fmt, ap);
        va_end(ap);
}

static void on_probe_failed(void *userdata, const char *pod_uid, const char *container, enum probe_type type,
                            const char *output) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, pod_uid);
        static const char *const names[] = {
                [PROBE_LIVENESS] = "Liveness", [PROBE_READINESS] = "Readiness", [PROBE_STARTUP] = "Startup"
        };

        if (w && (size_t) type < ELEMENTSOF(names) && names[type])
                kubelet_worker_event(w, container, "Warning", "Unhealthy", "%s probe failed: %s", names[type], output);
}

static void on_probe_result(void *userdata, const char *pod_uid, const char *container, enum probe_type type,
                            enum probe_result result) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, pod_uid);

        if (!w)
                return;
        if ((type == PROBE_LIVENESS || type == PROBE_STARTUP) && result == PROBE_RESULT_FAILURE) {
                kubelet_worker_request_sync(w); /* the sync kills and restarts the container */
                return;
        }
        if (type == PROBE_STARTUP)
                kubelet_worker_request_sync(w); /* a started sidecar lets the next init container start */
        kubelet_worker_update_conditions(w);
        kubelet_report_status(k, w);
}

/* ---------------------------------------------------------------- desired pods */

static bool desired_contains(const struct kubelet *k, const char *uid) {
        if (k->desired_indexed)
                return hashmap_contains(&k->desired_by_uid, uid);
        for (size_t i = 0; i < k->desired.n; i++)
                if (streq(k->desired.pods[i]->uid, uid))
                        return true;
        return false;
}

bool kubelet_pod_desired(const struct kubelet *k, const char *uid) {
        return desired_contains(k, uid);
}

/* The pods of the workers that have one (the admitted pods), only the static ones if asked; NULL on OOM. */
static const struct pod **worker_pods(struct kubelet *k, bool static_only, size_t *ret_n) {
        const struct pod **pods = calloc(k->n_workers + 1, sizeof(*pods));
        size_t n = 0;

        if (!pods)
                return NULL;
        for (const struct pod_worker *w = k->workers; w; w = w->next)
                if (w->pod && (!static_only || pod_config_is_static(w->pod)) && n < k->n_workers)
                        pods[n++] = static_only ? w->pod : kubelet_worker_sync_pod(w); /* as allocated */
        *ret_n = n;
        return pods;
}

/* an API pod whose status the API server already holds as Succeeded or Failed */
bool kubelet_pod_terminal_in_api(const struct pod *p) {
        const char *phase = json_string_value(json_object_get(json_object_get(p->raw, "status"), "phase"));

        return !pod_config_is_static(p) && (streq_ptr(phase, "Succeeded") || streq_ptr(phase, "Failed"));
}

/* The fields ckubelet does not act on, said once for the pod, by name */
static void warn_unsupported_fields(struct kubelet *k, const struct pod *p) {
        static char *const stop_signals[] = { (char *) "ContainerStopSignals", NULL };
        _cleanup_strv_free_ char **fields = NULL;
        _cleanup_free_ char *joined = NULL;
        bool gated = feature_enabled(k->opts->feature_gates, "ContainerStopSignals");

        if (pod_unsupported_fields_gated(p, gated ? stop_signals : NULL, &fields) < 0 || !fields)
                return;
        joined = strv_join(fields, ", ");
        log_warning("pod %s/%s: fields that are not acted on: %s", p->namespace_, p->name, strna(joined));
}

/* Admission (lifecycle.PredicateAdmitHandler): a pod that does not fit next to the admitted ones is rejected
 * for good, and an API pod is told so through its status (rejectPod). */
static bool admit(struct kubelet *k, const struct pod *p) {
        _cleanup_free_ const struct pod **admitted = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        size_t n = 0;
        int r;

        admitted = worker_pods(k, false, &n);
        if (!admitted)
                return false;
        /* the eviction manager's handler first, as upstream registers it, then the node shutdown manager's */
        r = kubelet_eviction_admit(k, p, &err);
        if (r >= 0)
                r = kubelet_shutdown_admit(k, &err);
        /* the device manager's handler first (resourceAllocator, registered before the predicates): the pod's
         * devices are allocated, which may take plugin calls; the pod waits for them */
        if (r >= 0 && k->devices) {
                kubelet_devices_gc(k);
                r = dm_admit(k->devices, p, &err);
                if (r == -EINPROGRESS || r == -ENOMEM)
                        return false; /* asked again when the allocation ends (or at the next change) */
                if (r < 0)
                        r = ck_error_set_reason(&err, -ENOSPC, "UnexpectedAdmissionError", "Pod was rejected: %s",
                                                ck_error_message(err));
                kubelet_admission_refresh(k);
        }
        if (r >= 0) {
                k->admission.supplemental_groups_policy = node_runtime_features_sgp(kubelet_runtime_features(k));
                r = kubelet_admit(p, admitted, n, &k->admission, &err);
                /* the CPU manager's exclusive CPUs (the topology manager's "none" policy allocating for each
                 * container), once the pod fits: a refused pod never holds CPUs */
                if (r >= 0)
                        r = kubelet_cpu_admit(k, p, &err);
                if (r >= 0)
                        return true;
        }
        /* a refusal carries its reason; anything else (out of memory) is tried again at the next change */
        if (r != -ENOSPC || !ck_error_reason(err))
                return false;
        log_error("Pod admission denied: pod=\"%s/%s\" podUID=\"%s\" reason=\"%s\" message=\"%s\"", p->namespace_,
                  p->name, p->uid, ck_error_reason(err), ck_error_message(err));
        (void) strv_extend(&k->rejected, p->uid);
        if (k->status && !pod_config_is_static(p))
                status_manager_set(k->status, p->uid, p->namespace_, p->name,
                                   json_pack("{s:s, s:s, s:s}", "phase", "Failed", "reason", ck_error_reason(err),
                                             "message", ck_error_message(err)));
        return false;
}

/* A worker for a desired pod that finished for good, with containers left in the runtime: they are stopped, the pod
 * is not started again. */
static void terminal_worker(struct kubelet *k, struct pod *p) {
        const char *reason = json_string_value(json_object_get(json_object_get(p->raw, "status"), "reason"));
        const char *message = json_string_value(json_object_get(json_object_get(p->raw, "status"), "message"));
        struct pod_worker *w = worker_new(k, p->uid);

        if (!w)
                return;
        w->pod = pod_ref(p);
        w->full_name = make_full_name(p->namespace_, p->name);
        w->grace_seconds = p->spec.termination_grace_period_seconds;
        w->terminated = true;
        w->terminated_reason = strdup_or_null(reason);
        w->terminated_message = strdup_or_null(message);
        w->terminated_usec = (int64_t) now_realtime_usec();
        kubelet_terminated_restore(k, w); /* the eviction's grace period, if we evicted it */
        log_info("pod %s/%s (%s) has finished but still has containers: stopping them", p->namespace_, p->name, p->uid);
        kubelet_worker_request_sync(w);
}

/* Make the set of workers match desired + runtime: a worker per desired pod, a terminating worker per pod
 * found in the runtime that is not desired. */
void kubelet_reconcile(struct kubelet *k) {
        /* Like upstream (sourcesReady), nothing is killed before every source has spoken: after a restart the
         * runtime holds pods that are still wanted. */
        if (!k->runtime_listed || !k->config_received || k->stopping)
                return;

        /* removals first, so they free room for additions (--max-pods) */
        for (struct pod_worker *w = k->workers, *next; w; w = next) {
                next = w->next;
                if (w->pod && !desired_contains(k, w->uid)) {
                        log_info("SyncLoop REMOVE: pod=\"%s\" podUID=\"%s\"", strna(w->full_name), w->uid);
                        pod_free(w->last_pod);
                        w->last_pod = TAKE_PTR(w->pod);
                        kubelet_worker_request_sync(w);
                }
        }

        for (size_t i = 0; i < k->desired.n; i++) {
                struct pod *p = k->desired.pods[i];
                struct pod_worker *w = kubelet_find_worker(k, p->uid);
                bool changed = false;

                if (p->has_deletion_timestamp) {
                        /* graceful deletion from the API: stop within deletionGracePeriodSeconds, then delete */
                        if (!w && strv_contains(k->api_deleted, p->uid))
                                continue; /* stopped and deleted; the watch has not said so yet */
                        if (!w) {
                                w = worker_new(k, p->uid);
                                if (!w)
                                        continue;
                                w->full_name = make_full_name(p->namespace_, p->name);
                        }
                        if (w->deleting)
                                continue;
                        w->deleting = true;
                        w->grace_seconds = p->deletion_grace_period_seconds >= 0
                                                   ? p->deletion_grace_period_seconds
                                                   : p->spec.termination_grace_period_seconds;
                        free(w->api_ns);
                        free(w->api_name);
                        w->api_ns = strdup(p->namespace_);
                        w->api_name = strdup(p->name);
                        log_info("SyncLoop DELETE: pod=\"%s/%s\" podUID=\"%s\" gracePeriod=%" PRId64, p->namespace_,
                                 p->name, p->uid, w->grace_seconds);
                        pod_free(w->last_pod);
                        w->last_pod = w->pod ? TAKE_PTR(w->pod) : pod_ref(p);
                        kubelet_worker_request_sync(w);
                        continue;
                }
                if (w && w->deleting)
                        continue;

                if (!w) {
                        if (strv_contains(k->rejected, p->uid))
                                continue;
                        if (kubelet_pod_terminal_in_api(p)) {
                                /* finished before: not run again (filterOutInactivePods); what is left of it in the
                                 * runtime (a kubelet killed in the middle of evicting it) is stopped */
                                if (pleg_has_pod(k->pleg, p->uid))
                                        terminal_worker(k, p);
                                continue;
                        }
                        if (!admit(k, p))
                                continue;
                        w = worker_new(k, p->uid);
                        if (!w) {
                                log_error("pod %s: out of memory", p->name);
                                continue;
                        }
                        kubelet_terminated_restore(k, w);
                        log_info("SyncLoop ADD: pod=\"%s/%s\" podUID=\"%s\"", p->namespace_, p->name, p->uid);
                        warn_unsupported_fields(k, p);
                        changed = true;
                } else if (w->pod != p) {
                        if (!w->pod)
                                log_info("pod %s/%s (%s) is desired again", p->namespace_, p->name, p->uid);
                        else
                                log_info("SyncLoop UPDATE: pod=\"%s/%s\" podUID=\"%s\"", p->namespace_, p->name,
                                         p->uid);
                        changed = true;
                }
                if (changed) {
                        w->last_pod = pod_free(w->last_pod);
                        if (!w->start_time_usec)
                                w->start_time_usec = api_start_time_usec(p);
                        if (!w->start_time_usec)
                                w->start_time_usec = (int64_t) now_realtime_usec();
                        pod_free(w->pod);
                        w->pod = pod_ref(p);
                        w->grace_seconds = p->spec.termination_grace_period_seconds;
                        free(w->full_name);
                        w->full_name = make_full_name(p->namespace_, p->name);
                        w->failures = 0;
                        worker_update_allocation(k, w);
                        kubelet_worker_request_sync(w);
                        worker_check_deadline(w);
                }
        }

        /* a pod left to the container GC is forgotten once the runtime has nothing of it, or is desired again */
        for (size_t i = 0; k->left_to_gc && k->left_to_gc[i];) {
                if (!pleg_has_pod(k->pleg, k->left_to_gc[i]) || desired_contains(k, k->left_to_gc[i]))
                        strv_remove_at(k->left_to_gc, i);
                else
                        i++;
        }
        for (char *const *u = pleg_pod_uids(k->pleg); *u; u++)
                if (!kubelet_find_worker(k, *u) && !desired_contains(k, *u) && !strv_contains(k->left_to_gc, *u)) {
                        struct pod_worker *w = worker_new(k, *u);
                        if (!w)
                                continue;
                        log_info("Found a pod in the runtime that is not desired, killing it: podUID=\"%s\"", *u);
                        kubelet_worker_request_sync(w);
                }
}

/* every admitted static pod that is not being removed gets a mirror pod in the API server */
/* every admitted static pod that is not being removed gets a mirror pod in the API server; one that terminates
 * keeps it, as it is, until it is gone */
void kubelet_sync_mirror_pods(struct kubelet *k) {
        _cleanup_free_ const struct pod **pods = NULL;
        _cleanup_free_ bool *terminating = NULL;
        size_t n = 0;

        /* not before every source delivered (upstream's HandlePodCleanups waits for sourcesReady): after a restart
         * the mirror pods can be listed before the static pods are read, and every one of them looked like an
         * orphan, deleted and made again (the kubeadm tier saw the four control-plane mirror pods replaced) */
        if (!k->mirror || !k->config_received)
                return;
        pods = calloc(k->n_workers + 1, sizeof(*pods));
        terminating = calloc(k->n_workers + 1, sizeof(*terminating));
        if (!pods || !terminating)
                return;
        for (const struct pod_worker *w = k->workers; w && n < k->n_workers; w = w->next) {
                const struct pod *p = w->pod ? w->pod : w->last_pod;
                if (!p || !pod_config_is_static(p))
                        continue;
                terminating[n] = !w->pod;
                pods[n++] = p;
        }
        kubelet_mirror_sync(k->mirror, pods, terminating, n, node_manager_node_uid(k->node));
}

void kubelet_worker_observed_terminating(struct pod_worker *w, struct kc_pod_status *status) {
        /* a deleted API pod's containers removed after they stopped: its status keeps how they ended */
        if (w->deleting && w->observed && w->observed->n_containers > 0 && status && status->n_containers == 0) {
                kc_pod_status_free(status);
                return;
        }
        kc_pod_status_free(w->observed);
        w->observed = status;
        kubelet_report_status(w->k, w);
}

static void on_mirror_pods(const json_t *mirror_pods, void *userdata) {
        struct kubelet *k = userdata;

        kubelet_mirror_observed(k->mirror, mirror_pods);
        kubelet_sync_mirror_pods(k);
        /* a new mirror pod gets the static pod's status */
        for (struct pod_worker *w = k->workers; w; w = w->next)
                if (kubelet_status_pod(w) && pod_config_is_static(kubelet_status_pod(w)))
                        kubelet_report_status(k, w);
}

static void on_config_update(const struct pod_set *pods, void *userdata) {
        struct kubelet *k = userdata;
        struct pod_set n = {};

        for (size_t i = 0; i < pods->n; i++)
                if (pod_set_add(&n, pod_ref(pods->pods[i])) < 0) {
                        log_error("out of memory taking the desired pods");
                        pod_set_done(&n);
                        return;
                }
        hashmap_done(&k->desired_by_uid);
        k->desired_by_uid = (struct hashmap) {};
        pod_set_done(&k->desired);
        k->desired = n;
        k->desired_indexed = true;
        for (size_t i = 0; i < n.n && k->desired_indexed; i++)
                if (hashmap_put(&k->desired_by_uid, n.pods[i]->uid, n.pods[i]) < 0)
                        k->desired_indexed = false; /* desired_contains() searches the set itself then */
        k->config_received = true;
        /* a rejected pod that goes away and comes back is considered again; a deleted one is forgotten */
        for (size_t i = 0; k->rejected && k->rejected[i];) {
                if (!desired_contains(k, k->rejected[i]))
                        strv_remove_at(k->rejected, i);
                else
                        i++;
        }
        for (size_t i = 0; k->api_deleted && k->api_deleted[i];) {
                if (!desired_contains(k, k->api_deleted[i]))
                        strv_remove_at(k->api_deleted, i);
                else
                        i++;
        }
        log_v(2, "desired pods: %zu", n.n);
        kubelet_reconcile(k);
        kubelet_sync_mirror_pods(k);
}

/* a ConfigMap or Secret the pod uses changed: sync it again (its volumes get the new content) */
static void on_objects_changed(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);

        if (w && w->pod)
                kubelet_worker_request_sync(w);
}

/* ---------------------------------------------------------------- PLEG */

/* genericPlegRelistPeriod (1 s); CKUBELET_TEST_PLEG_RELIST_SECONDS stretches it for the tests that show what the
 * evented PLEG alone sees (no flag: upstream has none) */
static uint64_t pleg_relist_period(void) {
        const char *e = getenv("CKUBELET_TEST_PLEG_RELIST_SECONDS");
        char *end = NULL;
        unsigned long v;

        if (isempty(e))
                return PLEG_RELIST_PERIOD_USEC;
        errno = 0;
        v = strtoul(e, &end, 10);
        if (errno != 0 || !end || *end != '\0' || v == 0 || v > 86400) {
                log_warning("ignoring CKUBELET_TEST_PLEG_RELIST_SECONDS=%s: not 1..86400", e);
                return PLEG_RELIST_PERIOD_USEC;
        }
        log_warning("PLEG relist period %lu s (CKUBELET_TEST_PLEG_RELIST_SECONDS, for tests)", v);
        return (uint64_t) v * USEC_PER_SEC;
}

static void on_pod_changed(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);

        log_v(4, "PLEG: pod %s changed", uid);
        if (w)
                kubelet_worker_request_sync(w);
        /* an unknown UID gets a terminating worker in kubelet_reconcile() after the relist */
}

static void on_relisted(bool ok, void *userdata) {
        struct kubelet *k = userdata;

        if (!ok) {
                if (!k->runtime_down)
                        log_error("container runtime is down: relisting failed");
                k->runtime_down = true;
                return;
        }
        if (k->runtime_down) {
                /* back after an outage: re-sync every pod now rather than at each worker's error back-off */
                log_info("container runtime is up again, re-syncing all pods");
                k->runtime_down = false;
                for (struct pod_worker *w = k->workers; w; w = w->next) {
                        w->failures = 0;
                        worker_update_allocation(k, w);
                        kubelet_worker_request_sync(w);
                        worker_check_deadline(w);
                }
        }
        if (!k->runtime_listed) {
                size_t sb, rsb, c, rc;
                pleg_counts(k->pleg, &sb, &rsb, &c, &rc);
                log_info("runtime listed: %zu sandboxes (%zu ready), %zu containers (%zu running)", sb, rsb, c, rc);
                k->runtime_listed = true;
        }
        kubelet_reconcile(k);
        kubelet_notify_check_ready(k);
}

/* ---------------------------------------------------------------- cgroups (src/cm) */

int kubelet_update_qos_cgroups(struct kubelet *k) {
        _cleanup_free_ const struct pod **pods = NULL;
        size_t n = 0;

        if (!cm_enabled(k->cm))
                return 0;
        pods = worker_pods(k, false, &n);
        if (!pods)
                return -ENOMEM;
        return cm_update_qos(k->cm, pods, n);
}

/* ---------------------------------------------------------------- lifecycle */

int kubelet_new(struct event_base *base, const struct kubelet_options *opts, struct kubelet **ret) {
        struct kubelet *k = calloc(1, sizeof(*k));
        uint64_t crash_max;

        if (!k)
                return -ENOMEM;
        k->base = base;
        k->opts = opts;
        /* newCrashLoopBackOff: crashLoopBackOff.maxContainerRestartPeriod caps it, and the first step too */
        crash_max = k->opts->crash_loop_backoff_max_usec ? k->opts->crash_loop_backoff_max_usec
                                                         : CRASH_BACKOFF_MAX_USEC;
        backoff_init(&k->crash_backoff, MIN(CRASH_BACKOFF_INITIAL_USEC, crash_max), crash_max);
        backoff_init(&k->image_backoff, CRASH_BACKOFF_INITIAL_USEC, CRASH_BACKOFF_MAX_USEC);
        backoff_init(&k->removal_backoff, REMOVAL_BACKOFF_INITIAL_USEC, REMOVAL_BACKOFF_MAX_USEC);
        {
                /* upstream's buckets for kubelet_pod_start_duration_seconds */
                static const double b[] = { 0.5, 1,   2,   3,   4,   5,   6,   8,   10,   20,   30,   45,  60,
                                            120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600 };
                histogram_init(&k->pod_start_hist, b, ELEMENTSOF(b));
                cm_metrics_init(&k->cm_metrics);
        }
        *ret = k;
        return 0;
}

/* what admission compares requests with: allocatable, as the node reports it */
static int admission_setup(struct kubelet *k) {
        struct node_status_input in;
        int64_t storage;
        int r;

        in = (struct node_status_input) {
                .machine = &k->machine,
                .kube_reserved = k->opts->kube_reserved,
                .system_reserved = k->opts->system_reserved,
                .eviction_set = true,
        };
        kubelet_eviction_reservation(k, &in.eviction_memory_bytes, &in.eviction_memory_fraction,
                                     &in.eviction_storage_bytes, &in.eviction_storage_fraction);
        node_allocatable(&in, &k->admission.cpu_milli, &k->admission.memory_bytes, &storage);
        k->admission.max_pods = k->opts->max_pods;
        k->admission.apparmor_enabled = kr_apparmor_host_enabled("");
        log_v(1, "AppArmor is %s on this host", k->admission.apparmor_enabled ? "enabled" : "not enabled");
        /* pkg/kubelet/sysctl NewAllowlist: every unsafe sysctl allowed must be namespaced */
        if (!isempty(k->opts->allowed_unsafe_sysctls)) {
                _cleanup_free_ char *copy = strdup(k->opts->allowed_unsafe_sysctls);
                char *save = NULL;
                if (!copy)
                        return -ENOMEM;
                for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        _cleanup_ck_error_ struct ck_error *error = NULL;
                        while (*t == ' ')
                                t++;
                        if (!*t)
                                continue;
                        r = kr_sysctl_check_allowed_unsafe(t, &error);
                        if (r < 0)
                                return log_error_errno(r, "invalid --allowed-unsafe-sysctls: %s",
                                                       ck_error_message(error));
                        r = strv_extend(&k->admission.allowed_unsafe_sysctls, t);
                        if (r < 0)
                                return -ENOMEM;
                }
        }
        /* --cluster-dns: the pods' nameservers (dnsPolicy ClusterFirst) */
        if (!isempty(k->opts->cluster_dns)) {
                _cleanup_free_ char *copy = strdup(k->opts->cluster_dns);
                char *save = NULL;
                if (!copy)
                        return -ENOMEM;
                for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        unsigned char addr[16];
                        while (*t == ' ')
                                t++;
                        if (!*t)
                                continue;
                        if (inet_pton(AF_INET, t, addr) != 1 && inet_pton(AF_INET6, t, addr) != 1)
                                return log_error_errno(-EINVAL, "invalid --cluster-dns IP address \"%s\"", t);
                        if (strv_extend(&k->cluster_dns, t) < 0)
                                return -ENOMEM;
                }
        }
        return 0;
}

/* the QoS cgroups (kubepods gets the node's capacity less the reservations when "pods" is enforced) */
static int cgroups_setup(struct kubelet *k) {
        return cm_new(k->base, k->opts, (int64_t) k->machine.num_cores * 1000, (int64_t) k->machine.memory_capacity,
                      &k->cm);
}

int kubelet_api_start(struct kubelet *k) {
        const struct kubelet_options *o = k->opts;
        int r;

        assert(k->client && k->node);
        node_manager_set_client(k->node, k->client);
        node_manager_set_heartbeat_client(k->node, k->heartbeat_client);
        r = status_manager_new(k->base, k->client, &k->status);
        if (r < 0)
                return r;
        r = kubelet_mirror_new(k->client, o->node_name, &k->mirror);
        if (r < 0)
                return r;
        pod_config_set_mirror_callback(k->config, on_mirror_pods, k);
        event_recorder_set_client(k->events, k->client);
        objects_manager_set_client(k->objects, k->client);
        volmgr_set_client(k->volumes, k->client);
        csi_nodeinfo_set_client(k->csi_nodeinfo, k->client);
        if (k->csi_nodeinfo)
                csi_nodeinfo_start(k->csi_nodeinfo); /* the nodeid annotation and the CSINode */
        r = pod_config_start_api_source(k->config, k->client);
        if (r < 0)
                return r;
        return node_manager_start(k->node);
}

int kubelet_start(struct kubelet *k) {
        static const struct pleg_callbacks pleg_cb = { .pod_changed = on_pod_changed, .relisted = on_relisted };
        static const struct prober_callbacks prober_cb = { .changed = on_probe_result, .failed = on_probe_failed };
        const struct kubelet_options *o = k->opts;
        int r;

        r = mkdir_p(o->root_dir, 0750);
        if (r < 0)
                return log_error_errno(r, "cannot create --root-dir %s: %s", o->root_dir, strerror(-r));
        r = mkdir_p(o->pod_logs_dir, 0755);
        if (r < 0)
                return log_error_errno(r, "cannot create podLogsDir %s: %s", o->pod_logs_dir, strerror(-r));

        r = cri_client_new(k->base, o->container_runtime_endpoint, o->image_service_endpoint,
                           o->runtime_request_timeout_usec, &k->cri);
        if (r < 0)
                return log_error_errno(r, "invalid --container-runtime-endpoint %s: %s", o->container_runtime_endpoint,
                                       strerror(-r));
        r = node_ip_detect(o->node_ip, &k->node_ip);
        if (r < 0)
                return r;
        log_v(1, "node IP: %s", k->node_ip);
        /* the machine's description, read once (cadvisor's cached MachineInfo) */
        r = stats_machine_info_read(NULL, &k->machine);
        if (r < 0)
                return log_error_errno(r, "cannot read the machine's description: %s", strerror(-r));
        /* NewContainerManager: swap */
        {
                bool swap_on = false;
                r = stats_swap_is_on(NULL, &swap_on);
                if (r < 0)
                        return log_error_errno(r, "failed to determine if swap is on: %s", strerror(-r));
                if (swap_on && o->fail_swap_on)
                        return log_error_errno(-EINVAL, "running with swap on is not supported, please disable swap "
                                                        "or set --fail-swap-on flag to false");
                k->swap_v2 = stats_swap_controller_v2(NULL);
                if (swap_on)
                        log_info("swap is on: memorySwap.swapBehavior %s%s",
                                 isempty(o->memory_swap_behavior) ? "NoSwap" : o->memory_swap_behavior,
                                 k->swap_v2 ? "" : " (no swap controller on cgroup v2: nothing is set)");
        }
        r = kubelet_eviction_parse(k);
        if (r < 0)
                return r;
        r = admission_setup(k);
        if (r < 0)
                return r;
        /* the user namespace ranges, from before a restart (MakeUserNsManager) */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                struct passwd pw, *pwp = NULL;
                char buf[4096];
                struct userns_config ucfg = { .root_dir = o->root_dir, .max_pods = o->max_pods };
                ucfg.user_exists = getpwnam_r("kubelet", &pw, buf, sizeof(buf), &pwp) == 0 && pwp;
                r = userns_manager_new(&ucfg, &k->userns, &err);
                if (r < 0)
                        return log_error_errno(r, "failed to create user namespace manager: %s",
                                               err ? ck_error_message(err) : strerror(-r));
        }
        /* the pulled-image credential records, from before a restart (KubeletEnsureSecretPulledImages) */
        k->pull_verify_policy = kubelet_options_image_pull_verify_policy(o);
        if (feature_enabled(o->feature_gates, "KubeletEnsureSecretPulledImages")) {
                r = pull_store_new(k->base, o->root_dir, &k->pull_records);
                if (r < 0)
                        return log_error_errno(r, "cannot set up the image pull records in %s/image_manager: %s",
                                               o->root_dir, strerror(-r));
        }
        /* the pods' allocated resources, from before a restart */
        r = kubelet_allocation_load(o->root_dir, &k->allocation);
        if (r < 0)
                return log_error_errno(r, "cannot read the pods' allocations: %s", strerror(-r));
        r = cgroups_setup(k);
        if (r < 0)
                return r;
        r = cm_pods_cgroup(k->cm, &k->pods_cgroup);
        if (r < 0)
                return r;
        k->hook_env = (struct probe_env) { .base = k->base,
                                           .cri = k->cri,
                                           .request_timeout_usec = o->runtime_request_timeout_usec };
        r = probe_manager_new(k->base, k->cri, o->runtime_request_timeout_usec, &prober_cb, k, &k->prober);
        if (r < 0)
                return r;
        r = pleg_new(k->base, k->cri, pleg_relist_period(), &pleg_cb, k, &k->pleg);
        if (r < 0)
                return r;
        if (feature_enabled(o->feature_gates, "EventedPLEG")) {
                r = pleg_set_evented(k->pleg, true);
                if (r < 0)
                        return r;
        }
        r = pod_config_new(k->base, o->node_name, on_config_update, k, &k->config);
        if (r < 0)
                return r;
        if (!isempty(o->kubeconfig)) {
                /* registered now, started once the node has a client: until then no pod set is delivered */
                r = pod_config_add_api_source(k->config, NULL);
                if (r < 0)
                        return r;
                /* made now so that bad --node-labels or --register-with-taints stop the kubelet at start */
                r = node_manager_new(k->base, o, k->node_ip, &k->machine, NULL, k->cri, &k->node);
                if (r < 0)
                        return r;
                {
                        int64_t mb, sb;
                        float mf, sf;
                        kubelet_eviction_reservation(k, &mb, &mf, &sb, &sf);
                        node_manager_set_eviction_reservation(k->node, mb, mf, sb, sf);
                }
                if (r < 0)
                        return r;
        } else {
                if (!isempty(o->bootstrap_kubeconfig))
                        log_warning("--bootstrap-kubeconfig is ignored without --kubeconfig (standalone mode)");
                r = runtime_poll_new(k->base, k->cri, &k->runtime_poll);
                if (r < 0)
                        return r;
        }
        r = event_recorder_new(k->base, k->client, o->node_name, &k->events);
        if (r < 0)
                return r;
        r = objects_manager_new(k->base, k->client, on_objects_changed, k, &k->objects);
        if (r >= 0)
                r = objects_manager_set_node_name(k->objects, o->node_name);
        if (r < 0)
                return r;
        r = kubelet_storage_setup(k);
        if (r < 0)
                return r;
        if (!isempty(o->pod_manifest_path)) {
                r = pod_config_add_file_source(k->config, o->pod_manifest_path, o->file_check_frequency_usec);
                if (r < 0)
                        return r;
        }
        if (!isempty(o->manifest_url)) {
                r = pod_config_add_http_source(k->config, o->manifest_url, o->manifest_url_headers,
                                               o->http_check_frequency_usec);
                if (r < 0)
                        return r;
        }
        /* the pull queue (puller.go): serialized, one at a time; else up to maxParallelImagePulls (no limit unset) */
        r = slots_new(k->base, kubelet_options_image_pulls(o), &k->image_puller);
        if (r < 0)
                return r;
        /* the sandbox creations: a burst of pods is made faster a few sandboxes at a time than all at once */
        r = slots_new(k->base, kubelet_options_sandbox_creations(o, (long) k->machine.num_cores), &k->sandbox_slots);
        if (r < 0)
                return r;
        r = kubelet_gc_setup(k);
        if (r < 0)
                return log_error_errno(r, "cannot set up garbage collection and the container log manager: %s",
                                       strerror(-r));
        r = kubelet_eviction_setup(k);
        if (r < 0)
                return log_error_errno(r, "cannot set up the eviction manager: %s", strerror(-r));
        r = kubelet_cpu_start(k);
        if (r < 0)
                return r;
        r = kubelet_shutdown_setup(k);
        if (r < 0)
                return log_error_errno(r, "cannot set up the node shutdown manager: %s", strerror(-r));
        r = kubelet_plugins_start(k);
        if (r < 0)
                return r;
        r = kubelet_pods_api_start(k);
        if (r < 0)
                return r;
        k->housekeeping = evtimer_new(k->base, kubelet_housekeeping, k);
        if (!k->housekeeping)
                return -ENOMEM;
        evtimer_add_usec(k->housekeeping, HOUSEKEEPING_PERIOD_USEC);
        k->last_full_resync = now_usec();
        k->last_loop_usec = now_usec();
        r = kubelet_watchdog_start(k);
        if (r < 0)
                return r;
        if (!isempty(o->kubeconfig)) {
                r = kubelet_credentials_start(k);
                if (r < 0)
                        return r;
        }
        kubelet_sync_env_setup(k);
        return pleg_start(k->pleg);
}

struct kubelet *kubelet_free(struct kubelet *k) {
        if (!k)
                return NULL;
        k->stopping = true;
        k->admission.allowed_unsafe_sysctls = strv_free(k->admission.allowed_unsafe_sysctls);
        k->cluster_dns = k->sync_env.cluster_dns = strv_free(k->cluster_dns);
        if (k->housekeeping)
                event_free(k->housekeeping);
        if (k->watchdog)
                event_free(k->watchdog);
        pod_config_free(k->config);
        /* probes first: in-flight ones are abandoned (exec probes end with the CRI client below) */
        k->prober = k->sync_env.prober = probe_manager_free(k->prober);
        /* cancels in-flight calls: their callbacks run now and see k->stopping */
        kubelet_credentials_stop(k);
        k->cri = k->sync_env.cri = cri_client_free(k->cri);
        k->runtime_poll = runtime_poll_free(k->runtime_poll);
        /* the same for the work on volumes' contents: done() runs now, with -ECANCELED */
        k->pool_contents = k->sync_env.pool_contents = workpool_free(k->pool_contents);
        /* storage: the volume manager's operations are abandoned (CSI calls end with their drivers' clients, which
         * go before the plugin manager, whose registrations they may be answering) */
        k->volumes = k->sync_env.volumes = volmgr_free(k->volumes);
        k->reaper = k->sync_env.reaper = vol_reaper_free(k->reaper);
        k->userns = k->sync_env.userns = userns_manager_free(k->userns);
        k->csi = csi_drivers_free(k->csi);
        kubelet_dra_free(k);
        k->dra_plugins = dra_plugins_free(k->dra_plugins);
        k->plugins = pluginmanager_free(k->plugins);
        /* after the CRI client: the node status' CRI calls (Version, Status, ListImages) end above */
        kubelet_shutdown_free(k);
        k->node = node_manager_free(k->node);
        kubelet_eviction_free(k);
        kubelet_gc_free(k);
        pleg_free(k->pleg);
        kubelet_pods_api_stop(k); /* its watches end before the pods they watch */
        while (k->workers) {
                struct pod_worker *w = k->workers;
                if (w->sync) {
                        kubelet_pod_sync_free(w->sync);
                        w->sync = NULL;
                }
                kubelet_worker_free(w);
        }
        hashmap_done(&k->workers_by_uid);
        k->image_puller = slots_free(k->image_puller);      /* after the pod syncs: they hold its tickets */
        k->pull_records = pull_store_free(k->pull_records); /* after the pod syncs: they end their pull intents */
        k->sandbox_slots = slots_free(k->sandbox_slots);
        probe_env_done(&k->hook_env); /* after the pod syncs: their hooks are gone */
        k->status = status_manager_free(k->status);
        k->mirror = kubelet_mirror_free(k->mirror);
        k->events = event_recorder_free(k->events);
        k->objects = objects_manager_free(k->objects);
        k->csi_nodeinfo = csi_nodeinfo_free(k->csi_nodeinfo);
        while (k->deletes)
                kubelet_api_delete_free(k->deletes);
        k->client = kube_client_free(k->client);
        k->heartbeat_client = kube_client_free(k->heartbeat_client);
        hashmap_done(&k->desired_by_uid);
        pod_set_done(&k->desired);
        strv_free(k->rejected);
        strv_free(k->api_deleted);
        strv_free(k->final_statuses);
        free(k->node_ip);
        free(k->pods_cgroup);
        backoff_done(&k->crash_backoff);
        backoff_done(&k->image_backoff);
        backoff_done(&k->removal_backoff);
        strv_free(k->left_to_gc);
        strv_free(k->removals_in_flight);
        k->cm = cm_free(k->cm);
        kubelet_cpu_free(k);
        kubelet_plugins_free(k); /* after the pod syncs: they may hold requests of its */
        k->allocation = kubelet_allocation_free(k->allocation);
        stats_machine_info_done(&k->machine); /* after the node manager: it borrows it */
        free(k);
        return NULL;
}
