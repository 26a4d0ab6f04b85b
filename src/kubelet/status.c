/* SPDX-License-Identifier: Apache-2.0 */
/* Status reporting for the pod workers: the Ready and ContainersReady conditions, the pod whose status a worker
 * reports (and under which UID), the v1 PodStatus sent to the status manager, and the readiness kept from the
 * API server's status until the prober has a result. */

#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "features/features.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/active_deadline.h"
#include "kubelet/mirror.h"
#include "kubelet/pod_sync.h"
#include "kuberuntime/actions.h"
#include "prober/prober.h"

/* ---------------------------------------------------------------- status: readiness */

/* ContainersReady / Ready (status.GeneratePodReadyCondition): every container of the spec is ready. */
void kubelet_worker_update_conditions(struct pod_worker *w) {
        struct probe_results probes;
        bool ready = true;

        if (!w->pod || !w->observed)
                return;
        probe_manager_results(w->k->prober, &probes);
        for (size_t i = 0; i < w->pod->spec.n_containers && ready; i++) {
                const struct container *c = &w->pod->spec.containers[i];
                if (!probe_container_ready(c, kc_pod_status_find_container(w->observed, c->name), &probes))
                        ready = false;
        }
        for (size_t i = 0; i < w->pod->spec.n_init_containers && ready; i++) {
                const struct container *c = &w->pod->spec.init_containers[i];
                if (container_is_sidecar(c) &&
                    !probe_container_ready(c, kc_pod_status_find_container(w->observed, c->name), &probes))
                        ready = false; /* sidecars count as app containers */
        }
        if (w->ready_known && ready == w->containers_ready)
                return;
        w->ready_known = true;
        w->containers_ready = ready;
        w->ready_transition = (int64_t) now_realtime_usec();
        log_v(2, "Pod condition changed: pod=\"%s\" podUID=\"%s\" type=\"ContainersReady\" status=\"%s\"",
              strna(w->full_name), w->uid, ready ? "True" : "False");
        log_v(2, "Pod condition changed: pod=\"%s\" podUID=\"%s\" type=\"Ready\" status=\"%s\"", strna(w->full_name),
              w->uid, ready ? "True" : "False");
}

/* The pod whose status a worker reports: its desired pod, or a static pod's last spec while it terminates (its
 * mirror pod keeps showing the pod's real status until it is gone); NULL: none. */
struct pod *kubelet_status_pod(const struct pod_worker *w) {
        if (w->pod)
                return w->pod;
        if (!w->last_pod)
                return NULL;
        if (!pod_config_is_static(w->last_pod))
                /* an API pod deleted gracefully keeps its status reported until it is terminal (a finalizer may
                 * keep it in the API server for good) */
                return w->deleting ? w->last_pod : NULL;
        /* a new version of the static pod (same name) owns the mirror pod */
        for (const struct pod_worker *o = w->k->workers; o; o = o->next)
                if (o != w && o->pod && w->full_name && streq_ptr(o->full_name, w->full_name))
                        return NULL;
        return w->last_pod;
}

/* the UID the pod's status is reported under: its own, or its mirror pod's for a static pod (NULL: none yet) */
const char *kubelet_report_uid(struct kubelet *k, struct pod_worker *w) {
        const struct pod *p = kubelet_status_pod(w);

        if (!pod_config_is_static(p))
                return p->uid;
        return kubelet_mirror_uid(k->mirror, p);
}

/* the pod's previous status, as upstream's generateAPIPodStatus takes it: the status manager's, else the API
 * server's (an API pod's document) */
static const json_t *old_status(struct kubelet *k, struct pod_worker *w) {
        const char *uid = k->status ? kubelet_report_uid(k, w) : NULL;
        const json_t *st = uid ? status_manager_get(k->status, uid) : NULL;

        if (!st && !pod_config_is_static(kubelet_status_pod(w)))
                st = json_object_get(kubelet_status_pod(w)->raw, "status");
        return st;
}

/* podIsTerminal: an API pod being deleted whose containers are all stopped */
static bool worker_terminal(const struct pod_worker *w) {
        if (w->pod || !w->deleting || !w->last_pod || pod_config_is_static(w->last_pod))
                return false;
        for (size_t i = 0; w->observed && i < w->observed->n_containers; i++)
                if (w->observed->containers[i]->state == KC_CONTAINER_RUNNING ||
                    w->observed->containers[i]->state == KC_CONTAINER_UNKNOWN)
                        return false;
        return true;
}

/* The pod's v1 PodStatus as the kubelet sees it now (generateAPIPodStatus). */
int kubelet_worker_status_json(struct kubelet *k, struct pod_worker *w, json_t **ret) {
        json_auto_t *devices = kubelet_allocated_resources_status(k, w->pod);
        struct probe_results probes;
        struct pod_status_input in = {
                .pod = kubelet_status_pod(w),
                .observed = w->observed,
                .waiting = w->waiting,
                .n_waiting = w->n_waiting,
                .host_ip = k->node_ip,
                .start_time_usec = w->start_time_usec,
                .ready_transition_usec = w->ready_transition,
                .initialized_usec = w->first_seen_realtime_usec,
                .old_status = old_status(k, w),
                .terminated_reason = w->terminated ? w->terminated_reason : NULL,
                .terminated_message = w->terminated_message,
                .terminated_usec = w->terminated_usec,
                .now_usec = (int64_t) now_realtime_usec(),
                .allocation = w->pod ? kubelet_allocation_get(k->allocation, w->uid) : NULL,
                .allocated_pod = w->pod ? kubelet_worker_sync_pod(w) : NULL,
                .resize_pending_reason = w->pod ? w->resize_pending_reason : NULL,
                .resize_pending_message = w->resize_pending_message,
                .resize_pending_usec = w->resize_pending_usec,
                .resize_in_progress = w->pod && w->resize_in_progress,
                .resize_error = w->resize_error,
                .resize_in_progress_usec = w->resize_in_progress_usec,
                .generation = kubelet_pod_generation(kubelet_status_pod(w)),
                .evict_reason = w->deadline_exceeded ? ACTIVE_DEADLINE_REASON : NULL,
                .evict_message = w->deadline_exceeded ? ACTIVE_DEADLINE_MESSAGE : NULL,
                .terminal = worker_terminal(w),
                .allocated_resources_status = devices,
                .runtime_supports_rro = w->runtime_supports_rro,
                .stop_signals = feature_enabled(k->opts->feature_gates, "ContainerStopSignals"),
        };

        probe_manager_results(k->prober, &probes);
        in.probes = &probes;
        return status_pod_generate(&in, ret);
}

/* Hand the pod's status to the status manager (with an API server): an API pod's under its UID, a static pod's
 * under its mirror pod's. */
void kubelet_report_status(struct kubelet *k, struct pod_worker *w) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        json_t *status = NULL;
        const char *uid;

        if (w->pod)
                podsapi_pod_changed(k->pods_api, w->uid); /* the pods API's watchers, with or without an API server */
        if (!k->status || !kubelet_status_pod(w))
                return;
        uid = kubelet_report_uid(k, w);
        if (!uid || kubelet_worker_status_json(k, w, &status) < 0)
                return;
        /* never ask the API server for what its validation refuses (the status manager's
         * checkContainerStateTransition) */
        if (status_pod_check_transition(old_status(k, w), status, &kubelet_status_pod(w)->spec, &why) < 0) {
                log_error("Status update on pod %s/%s aborted: %s", kubelet_status_pod(w)->namespace_,
                          kubelet_status_pod(w)->name, ck_error_message(why));
                json_decref(status);
                return;
        }
        status_manager_set(k->status, uid, kubelet_status_pod(w)->namespace_, kubelet_status_pod(w)->name, status);
}

const char *kubelet_pod_host(const struct kubelet *k, const struct pod *pod, const struct kc_pod_status *st) {
        if (pod->spec.host_network)
                return k->node_ip;
        if (st && st->n_sandboxes > 0 && st->sandboxes[0]->have_status && !isempty(st->sandboxes[0]->ip))
                return st->sandboxes[0]->ip;
        return NULL;
}

/* The API server's entry for a container in a pod status (containerStatuses, or initContainerStatuses for a
 * sidecar), NULL if none. */
static const json_t *api_container_status(const json_t *status, const struct container *c, bool sidecar) {
        const json_t *e;
        size_t i;

        json_array_foreach(json_object_get(status, sidecar ? "initContainerStatuses" : "containerStatuses"), i, e)
                if (streq_ptr(json_string_value(json_object_get(e, "name")), c->name))
                        return e;
        return NULL;
}

/* The API server showed this instance ready: same container ID ("<runtime>://<id>"), same start time (to the
 * second, as startedAt has it), and the instance runs the spec of now (its hash: the readiness probe did not
 * change; a container whose hash differs is restarted anyway). */
static bool api_showed_ready(const json_t *e, const struct container *c, const struct kc_container *inst) {
        const char *id = json_string_value(json_object_get(e, "containerID")), *sep;
        const char *started = json_string_value(
                json_object_get(json_object_get(json_object_get(e, "state"), "running"), "startedAt"));
        char hash[KR_HASH_MAX];
        int64_t t;

        if (!json_is_true(json_object_get(e, "ready")) || !inst || inst->state != KC_CONTAINER_RUNNING || !id ||
            !started || inst->started_at <= 0)
                return false;
        sep = strstr(id, "://");
        if (!sep || !streq(sep + 3, strempty(inst->id)))
                return false;
        if (parse_rfc3339(started, &t) < 0 || t / 1000000000 != inst->started_at / 1000000000)
                return false;
        return kr_container_hash(c, hash) >= 0 && streq_ptr(inst->hash, hash);
}

/* After a restart of ckubelet, keep the readiness the API server last showed for containers still running as the
 * same instance, until their first probe answers (probe_manager_keep_ready; docs/design.md, "Readiness across a
 * restart"). The API server's view: an API pod's status as the pod came from it, a static pod's mirror pod's (once
 * the kubelet has it). Looked at once per pod. */
void kubelet_keep_api_readiness(struct kubelet *k, struct pod_worker *w, const struct pod *pod,
                                const struct kc_pod_status *st) {
        const json_t *api;
        size_t n = pod->spec.n_containers + pod->spec.n_init_containers;

        if (w->api_readiness_checked || !k->prober || !st)
                return;
        if (pod_config_is_static(pod) && isempty(k->opts->kubeconfig)) {
                w->api_readiness_checked = true; /* standalone: no API server, nothing to keep */
                return;
        }
        api = pod_config_is_static(pod) ? kubelet_mirror_status(k->mirror, pod) : json_object_get(pod->raw, "status");
        if (!api)
                return; /* a static pod whose mirror pod is not known yet: looked at again (the prober bounds it) */
        w->api_readiness_checked = true;
        for (size_t i = 0; i < n; i++) {
                bool sidecar = i >= pod->spec.n_containers;
                const struct container *c = sidecar ? &pod->spec.init_containers[i - pod->spec.n_containers]
                                                    : &pod->spec.containers[i];
                const struct kc_container *inst;

                if (!c->readiness_probe || (sidecar && !container_is_sidecar(c)))
                        continue;
                inst = kc_pod_status_find_container(st, c->name);
                if (api_showed_ready(api_container_status(api, c, sidecar), c, inst) &&
                    probe_manager_keep_ready(k->prober, pod->uid, c->name, inst->id))
                        log_info("Container kept ready as the API server showed it until its first probe answers: "
                                 "pod=\"%s\" podUID=\"%s\" containerName=\"%s\"",
                                 strna(w->full_name), w->uid, c->name);
        }
}
