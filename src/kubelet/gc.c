/* SPDX-License-Identifier: Apache-2.0 */
/* Garbage collection and container logs, as the kubelet wires them (kubelet.go StartGarbageCollection, the container
 * log manager, the volume stats): the container GC every minute, the image GC (its own period, and whenever the image
 * filesystem is seen above its high threshold), the /var/log/containers links, the volume usage measurements. What
 * the GC needs to know about pods comes from the kubelet's desired set and workers. */

#include <stdarg.h>
#include <string.h>

#include "basic/duration.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "basic/workpool.h"
#include "images/image_gc_manager.h"
#include "images/pull_store.h"
#include "kubelet/kubelet-internal.h"
#include "kuberuntime/config.h"
#include "kuberuntime/container_gc.h"
#include "logs/container_log_manager.h"
#include "stats/volume_stats.h"

#define CONTAINER_GC_PERIOD_USEC (60 * USEC_PER_SEC) /* ContainerGCPeriod */
#define IMAGE_GC_STATE_FILE "image-gc-state.json"

void kubelet_node_event(struct kubelet *k, const char *type, const char *reason, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        struct event_ref ref;
        va_list ap;
        int r;

        if (!k->events)
                return;
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return;
        /* upstream's nodeRef: the node's name is its UID */
        ref = (struct event_ref) { .kind = "Node", .name = k->opts->node_name, .uid = k->opts->node_name };
        event_recorder_eventf(k->events, &ref, type, reason, "%s", msg);
}

/* ---------------------------------------------------------------- what GC knows about pods */

/* IsPodDeleted: no source wants it and no worker holds it */
static bool pod_deleted(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        return !kubelet_pod_desired(k, uid) && !kubelet_find_worker(k, uid);
}

/* IsPodTerminated: wanted, but finished for good */
static bool pod_terminated(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);

        if (w && w->terminated)
                return true;
        for (size_t i = 0; i < k->desired.n; i++)
                if (streq(k->desired.pods[i]->uid, uid))
                        return kubelet_pod_terminal_in_api(k->desired.pods[i]);
        return false;
}

static bool sources_ready(void *userdata) {
        struct kubelet *k = userdata;
        return k->runtime_listed && k->config_received && !k->runtime_down && !k->stopping;
}

/* a pod log directory goes once its pod is deleted and the runtime has nothing of it */
static bool logs_pod_deleted(const char *uid, void *userdata) {
        struct kubelet *k = userdata;

        if (!sources_ready(k) || !pod_deleted(uid, k))
                return false;
        return !pleg_has_pod(k->pleg, uid);
}

static void on_listed(const Runtime__V1__ListContainersResponse *containers, void *userdata) {
        struct kubelet *k = userdata;
        logs_manager_clean(k->logs, containers, logs_pod_deleted, k);
}

static void on_gc_done(int r, void *userdata) {
        struct kubelet *k = userdata;

        if (r == -ECANCELED)
                return;
        if (r < 0) {
                log_error("Container garbage collection failed: %s", strerror(-r));
                kubelet_node_event(k, "Warning", "ContainerGCFailed", "%s", strerror(-r));
                k->container_gc_failed = true;
                return;
        }
        log_v(k->container_gc_failed ? 1 : 4, "Container garbage collection succeeded");
        k->container_gc_failed = false;
}

/* ---------------------------------------------------------------- removals the runtime refuses */

/* containerd can refuse for ever to remove a dead container or sandbox (1.6: "cannot delete running task ...:
 * failed precondition" when it kept the task of a container whose StartContainer was abandoned). Upstream's
 * container GC tries again every minute and logs each failure; here each id waits out a back-off instead, so that
 * the pod's clean-up and the GC try (and log) once per step, not at every pass. */

static void removal_ended(struct kubelet *k, const char *id) {
        for (size_t i = 0; k->removals_in_flight && k->removals_in_flight[i]; i++)
                if (streq(k->removals_in_flight[i], id)) {
                        strv_remove_at(k->removals_in_flight, i);
                        return;
                }
}

void kubelet_removal_started(struct kubelet *k, const char *id) {
        if (!strv_contains(k->removals_in_flight, id))
                (void) strv_extend(&k->removals_in_flight, id); /* out of memory: at worst tried twice at once */
}

bool kubelet_removal_blocked(struct kubelet *k, const char *id, uint64_t *ret_until_usec) {
        uint64_t last;

        if (strv_contains(k->removals_in_flight, id)) {
                /* the other remover's call is in flight: look again in a second */
                if (ret_until_usec)
                        *ret_until_usec = now_usec() + USEC_PER_SEC;
                return true;
        }
        last = backoff_last_update(&k->removal_backoff, id);

        return last != 0 && backoff_in_backoff_since(&k->removal_backoff, id, last, now_usec(), ret_until_usec);
}

void kubelet_removal_failed(struct kubelet *k, bool sandbox, const char *id, const char *pod_desc,
                            const char *message) {
        uint64_t now = now_usec();
        char delay[GO_DURATION_MAX];

        removal_ended(k, id);
        (void) backoff_next(&k->removal_backoff, id, now, now);
        log_error("Failed to remove %s \"%s\"%s%s: %s; trying again in %s (back-off)",
                  sandbox ? "pod sandbox" : "container", id, pod_desc ? " of pod " : "", strempty(pod_desc),
                  strna(message),
                  go_duration_format((int64_t) backoff_get(&k->removal_backoff, id) * 1000, delay, sizeof(delay)));
}

void kubelet_removal_succeeded(struct kubelet *k, const char *id) {
        removal_ended(k, id);
        backoff_reset(&k->removal_backoff, id);
}

/* asked right before the GC sends the removal (or, for a container in unknown state, the stop before it); every
 * one it allows ends in gc_removed */
static bool gc_may_remove(const char *id, void *userdata) {
        if (kubelet_removal_blocked(userdata, id, NULL))
                return false;
        kubelet_removal_started(userdata, id);
        return true;
}

static void gc_removed(bool sandbox, const char *id, const char *pod_uid, int r, const char *message, void *userdata) {
        struct kubelet *k = userdata;

        if (r >= 0)
                kubelet_removal_succeeded(k, id);
        else
                kubelet_removal_failed(k, sandbox, id, pod_uid, message);
}

static void sweep_links(struct kubelet *k);

static void on_gc_timer(evutil_socket_t fd, short what, void *userdata) {
        struct kubelet *k = userdata;

        evtimer_add_usec(k->gc_timer, CONTAINER_GC_PERIOD_USEC);
        if (!k->runtime_listed || k->stopping)
                return;
        sweep_links(k); /* evictPodLogsDirectories: the dead links, every GC period */
        if (kr_container_gc_collect(k->container_gc, false, on_gc_done, k) < 0)
                log_error("Container garbage collection failed: out of memory");
}

/* the pulled-image records of images the runtime no longer has go (upstream's PruneUnknownRecords) */
static void on_images_listed(void *userdata, const char *const *ids, size_t n, int64_t listed_usec) {
        struct kubelet *k = userdata;

        if (k->pull_records)
                pull_store_prune(k->pull_records, ids, n, listed_usec);
}

static void on_image_gc_event(void *userdata, const char *reason, const char *message) {
        kubelet_node_event(userdata, "Warning", reason, "%s", message);
}

/* ---------------------------------------------------------------- links */

static bool has_container(const char *id, void *userdata) {
        struct kubelet *k = userdata;
        return pleg_has_id(k->pleg, id);
}

static void sweep_links(struct kubelet *k) {
        if (k->runtime_down)
                return;
        k->links_swept_gone = pleg_gone_count(k->pleg);
        logs_manager_sweep_links(k->logs, has_container, k, pleg_last_relist_started_usec(k->pleg));
}

/* A container's link goes soon after the container: the directory is swept at the first housekeeping after a
 * relist saw something disappear, and otherwise only every GC period (a sweep reads every entry of a directory
 * the node's other users may fill too). */
void kubelet_gc_housekeeping(struct kubelet *k) {
        if (!k->runtime_listed || k->stopping || pleg_gone_count(k->pleg) == k->links_swept_gone)
                return;
        sweep_links(k);
}

void kubelet_container_started(struct kubelet *k, const struct pod *pod, const char *container,
                               const char *container_id, uint32_t restart_count) {
        _cleanup_free_ char *dir = kr_pod_log_dir(k->opts->pod_logs_dir, pod), *path = NULL;

        if (!dir || asprintf(&path, "%s/%s/%u.log", dir, container, restart_count) < 0)
                return;
        logs_manager_link(k->logs, pod->name, pod->namespace_, container, container_id, path);
}

/* ---------------------------------------------------------------- lifecycle */

int kubelet_gc_setup(struct kubelet *k) {
        const struct kubelet_options *o = k->opts;
        struct logs_manager_config lc = {
                .max_size = o->container_log_max_size_bytes,
                .max_files = o->container_log_max_files,
                .max_workers = o->container_log_max_workers,
                .monitor_interval_usec = o->container_log_monitor_interval_usec,
                .pod_logs_dir = o->pod_logs_dir,
                .links_dir = o->container_logs_dir,
        };
        struct kr_container_gc_config gc = {
                .policy = { .min_age_usec = o->minimum_container_ttl_usec,
                            .max_per_pod_container = o->max_per_pod_container,
                            .max_containers = o->max_containers },
                .pods = { .deleted = pod_deleted, .terminated = pod_terminated, .userdata = k },
                .all_sources_ready = sources_ready,
                .listed = on_listed,
                .may_remove = gc_may_remove,
                .removed = gc_removed,
                .userdata = k,
        };
        _cleanup_free_ char *state = NULL;
        struct image_gc_config ic;
        int r;

        r = workpool_new(k->base, "kubelet", 1, &k->pool);
        if (r < 0)
                return r;
        r = stats_volumes_new(k->base, o->root_dir, o->volume_stats_agg_period_usec, &k->volume_stats);
        if (r < 0)
                return r;
        r = logs_manager_new(k->base, k->cri, &lc, &k->logs);
        if (r < 0)
                return r;
        r = kr_container_gc_new(k->base, k->cri, &gc, &k->container_gc);
        if (r < 0)
                return r;
        if (asprintf(&state, "%s/%s", o->root_dir, IMAGE_GC_STATE_FILE) < 0)
                return -ENOMEM;
        ic = (struct image_gc_config) {
                .policy = { .high_threshold_percent = o->image_gc_high_threshold_percent,
                            .low_threshold_percent = o->image_gc_low_threshold_percent,
                            .min_age_usec = o->image_minimum_gc_age_usec,
                            .max_age_usec = o->image_maximum_gc_age_usec },
                .sandbox_image = o->pod_infra_container_image,
                .state_path = state,
                .event = on_image_gc_event,
                .event_userdata = k,
                .listed = on_images_listed,
                .listed_userdata = k,
        };
        r = image_gc_manager_new(k->base, k->cri, k->pool, &ic, &k->image_gc);
        if (r < 0)
                return r;
        k->gc_timer = evtimer_new(k->base, on_gc_timer, k);
        if (!k->gc_timer)
                return -ENOMEM;
        evtimer_add_usec(k->gc_timer, CONTAINER_GC_PERIOD_USEC);
        (void) stats_volumes_start(k->volume_stats);
        (void) logs_manager_start(k->logs);
        /* as upstream's StartGarbageCollection: the periodic image GC is off at 100% (the eviction manager can still
         * ask for unused images to go) */
        if (o->image_gc_high_threshold_percent == 100)
                log_v(2, "ImageGCHighThresholdPercent is set 100, Disable image GC");
        else
                (void) image_gc_manager_start(k->image_gc);
        return 0;
}

void kubelet_gc_free(struct kubelet *k) {
        if (k->gc_timer) {
                event_free(k->gc_timer);
                k->gc_timer = NULL;
        }
        /* the pool first: a save in flight ends (or is cancelled) while the image GC is still there */
        k->pool = workpool_free(k->pool);
        k->image_gc = image_gc_manager_free(k->image_gc);
        k->container_gc = kr_container_gc_free(k->container_gc);
        k->logs = logs_manager_free(k->logs);
        k->volume_stats = stats_volumes_free(k->volume_stats);
}
