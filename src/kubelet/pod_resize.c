/* SPDX-License-Identifier: Apache-2.0 */
/* In-place resize (allocation.c holds the decisions and the checkpoint): a worker's pod as allocated, the
 * allocation of a new or changed spec (ResizeStarted, or PodResizePending Deferred/Infeasible), deferred resizes
 * tried again, and PodResizeInProgress until the containers run with their allocated resources. */

#include <stdlib.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/allocation.h"
#include "kuberuntime/actions.h"

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
void kubelet_worker_update_allocation(struct kubelet *k, struct pod_worker *w) {
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
                        kubelet_worker_update_allocation(k, w);
                        if (!w->resize_pending_reason) {
                                kubelet_report_status(k, w);
                                kubelet_worker_request_sync(w);
                        }
                }
}

/* an allocation is kept while its pod is desired or has a worker */
bool kubelet_allocation_wanted(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        return kubelet_pod_desired(k, uid) || kubelet_find_worker(k, uid);
}

void kubelet_worker_resize_error(struct pod_worker *w, const char *message) {
        if (streq_ptr(w->resize_error, message))
                return;
        free(w->resize_error);
        w->resize_error = message ? strdup(message) : NULL;
}

/* PodResizeInProgress: some running container does not run with its allocated resources yet (level-triggered, so
 * it holds across restarts); its end is ResizeCompleted */
void kubelet_worker_check_resize_done(struct pod_worker *w) {
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
