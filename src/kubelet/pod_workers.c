/* SPDX-License-Identifier: Apache-2.0 */
/* The pod workers (pod_workers.go): one per pod UID, made and freed here, each with its timers (the requeue, the
 * pod's activeDeadlineSeconds); a sync requested while a pass is in flight is coalesced into one more pass
 * (pod_sync.c runs the pass, pod_termination.c takes its outcome). Also what a pass reports back about its pod
 * (the runtime observed), the events about it, and the prober's results, which wake its worker. */

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/active_deadline.h"
#include "kubelet/pod_sync.h"
#include "objects/manager.h"
#include "volumes/volumes.h"
#include "prober/prober.h"

static void worker_timer_cb(evutil_socket_t fd, short what, void *userdata);
static void deadline_timer_cb(evutil_socket_t fd, short what, void *userdata);

/* ---------------------------------------------------------------- workers */

/* by a hash of the UIDs: the reconcile after every relist and housekeeping look up every pod, so a walk of the
 * list here made them quadratic in the number of pods */
struct pod_worker *kubelet_find_worker(struct kubelet *k, const char *uid) {
        return hashmap_get(&k->workers_by_uid, uid);
}

char *kubelet_pod_full_name(const char *ns, const char *name) {
        char *s = NULL;
        if (isempty(name))
                return NULL;
        if (asprintf(&s, "%s/%s", strempty(ns), name) < 0)
                return NULL;
        return s;
}

struct pod_worker *kubelet_worker_new(struct kubelet *k, const char *uid) {
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
        struct pod *pod;

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
        /* a pass without the pod stops it: one does before the pod runs again (kill_requested) */
        pod = w->pod && !w->kill_requested ? kubelet_worker_sync_pod(w) : NULL;
        if (w->pod && w->kill_requested)
                w->pending = true; /* and then it runs again */
        w->kill_requested = false;
        if (kubelet_pod_sync_start(&k->sync_env, w, w->uid, w->full_name, pod, &w->sync) < 0)
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
void kubelet_worker_check_deadline(struct pod_worker *w) {
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
        kubelet_worker_check_deadline(userdata);
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
        kubelet_worker_check_resize_done(w);
        kubelet_report_status(k, w);
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

static const char *probe_type_name(enum probe_type type) {
        static const char *const names[] = {
                [PROBE_LIVENESS] = "Liveness", [PROBE_READINESS] = "Readiness", [PROBE_STARTUP] = "Startup"
        };
        return (size_t) type < ELEMENTSOF(names) ? names[type] : NULL;
}

static void on_probe_failed(void *userdata, const char *pod_uid, const char *container, enum probe_type type,
                            const char *output) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, pod_uid);

        if (w && probe_type_name(type))
                kubelet_worker_event(w, container, "Warning", "Unhealthy", "%s probe failed: %s", probe_type_name(type),
                                     output);
}

/* upstream's ContainerProbeWarning: "<Type> probe warning: <output>" */
static void on_probe_warning(void *userdata, const char *pod_uid, const char *container, enum probe_type type,
                             const char *output) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, pod_uid);

        if (w && probe_type_name(type))
                kubelet_worker_event(w, container, "Warning", "ProbeWarning", "%s probe warning: %s",
                                     probe_type_name(type), output);
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

/* the prober: its results and failures wake the pods' workers (kubelet_start) */
int kubelet_prober_setup(struct kubelet *k) {
        static const struct prober_callbacks prober_cb = { .changed = on_probe_result,
                                                           .failed = on_probe_failed,
                                                           .warning = on_probe_warning };
        return probe_manager_new(k->base, k->cri, k->opts->runtime_request_timeout_usec, &prober_cb, k, &k->prober);
}

/* The pods of the workers that have one (the admitted pods), only the static ones if asked; NULL on OOM. */
const struct pod **kubelet_worker_pods(struct kubelet *k, bool static_only, size_t *ret_n) {
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

/* every worker, with its pass (kubelet_free) */
void kubelet_workers_free(struct kubelet *k) {
        while (k->workers) {
                struct pod_worker *w = k->workers;
                if (w->sync) {
                        kubelet_pod_sync_free(w->sync);
                        w->sync = NULL;
                }
                kubelet_worker_free(w);
        }
        hashmap_done(&k->workers_by_uid);
}
