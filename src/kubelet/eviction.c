/* SPDX-License-Identifier: Apache-2.0 */
/* The eviction manager as the kubelet wires it (kubelet.go: NewManager, Start, the admit handler, the node status
 * setters' pressure conditions): what it asks of the kubelet — the active pods, evicting one (killPodNow with the
 * Failed/Evicted status), whether a pod is cleaned up, node-level reclaim — and what it tells it: the node
 * conditions, which go to the node status and admission.
 *
 * An evicted pod is marked terminated in its worker: the next passes stop its containers and sandbox through the
 * normal kill path (preStop, the eviction's grace period) and never start it again; its status is phase Failed with
 * reason Evicted and upstream's message. The decision is written to <root-dir>/pods/<uid>/evicted first (an atomic
 * rename), so that a kubelet killed in the middle of an eviction finishes it after a restart instead of starting
 * the pod again. */

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/error.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "eviction/eviction_manager.h"
#include "eviction/helpers.h"
#include "images/image_gc_manager.h"
#include "kubelet/kubelet-internal.h"
#include "kuberuntime/container_gc.h"
#include "stats/summary.h"

#define EVICTION_MONITORING_PERIOD_USEC (10 * USEC_PER_SEC) /* evictionMonitoringPeriod */
#define MARKER_NAME "evicted"
#define MARKER_MAX_SIZE (64 * 1024)

/* ---------------------------------------------------------------- the marker */

static char *marker_path(struct kubelet *k, const char *uid) {
        char *p;
        if (asprintf(&p, "%s/pods/%s/" MARKER_NAME, k->opts->root_dir, uid) < 0)
                return NULL;
        return p;
}

/* written whole under a temporary name, then renamed: a kill -9 leaves the old state or the new one (no fsync: it
 * has to survive the kubelet, not the machine) */
static int marker_write(struct kubelet *k, struct pod_worker *w) {
        _cleanup_free_ char *path = marker_path(k, w->uid), *dir = NULL, *tmp = NULL, *data = NULL;
        _cleanup_close_ int fd = -1;
        json_t *j;
        size_t n;
        int r;

        if (!path || asprintf(&dir, "%s/pods/%s", k->opts->root_dir, w->uid) < 0 || asprintf(&tmp, "%s.tmp", path) < 0)
                return -ENOMEM;
        r = mkdir_p(dir, 0750);
        if (r < 0)
                return r;
        j = json_pack("{s:s, s:s, s:I, s:I}", "reason", strempty(w->terminated_reason), "message",
                      strempty(w->terminated_message), "time", (json_int_t) w->terminated_usec, "gracePeriod",
                      (json_int_t) w->grace_override);
        data = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (!data)
                return -ENOMEM;
        n = strlen(data);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (write(fd, data, n) != (ssize_t) n) {
                r = errno ? -errno : -EIO;
                unlink(tmp);
                return r;
        }
        if (rename(tmp, path) < 0) {
                r = -errno;
                unlink(tmp);
                return r;
        }
        return 0;
}

void kubelet_terminated_restore(struct kubelet *k, struct pod_worker *w) {
        _cleanup_free_ char *path = marker_path(k, w->uid), *data = NULL;
        json_t *j;
        size_t size;

        if (!path || read_full_file(path, MARKER_MAX_SIZE, &data, &size) < 0)
                return;
        j = json_loadb(data, size, 0, NULL);
        if (!j) {
                log_error("pod %s: cannot read %s: the eviction is forgotten", w->uid, path);
                return;
        }
        w->terminated = true;
        free(w->terminated_reason);
        free(w->terminated_message);
        w->terminated_reason = strdup_or_null(json_string_value(json_object_get(j, "reason")));
        w->terminated_message = strdup_or_null(json_string_value(json_object_get(j, "message")));
        w->terminated_usec = json_integer_value(json_object_get(j, "time"));
        w->grace_override = json_is_integer(json_object_get(j, "gracePeriod"))
                                    ? json_integer_value(json_object_get(j, "gracePeriod"))
                                    : -1;
        json_decref(j);
        log_info("pod %s (%s) was evicted before the kubelet restarted: it stays stopped", strna(w->full_name), w->uid);
}

/* ---------------------------------------------------------------- what the eviction manager asks */

static const struct pod *const *active_pods(void *userdata, size_t *ret_n) {
        struct kubelet *k = userdata;
        const struct pod **l = realloc(k->active, (k->n_workers + 1) * sizeof(*l));
        size_t n = 0;

        if (!l) {
                *ret_n = 0;
                return NULL;
        }
        k->active = l;
        for (struct pod_worker *w = k->workers; w && n < k->n_workers; w = w->next)
                if (w->pod && !w->terminated && !w->deleting && !kubelet_pod_terminal_in_api(w->pod))
                        l[n++] = w->pod;
        *ret_n = n;
        return (const struct pod *const *) l;
}

int kubelet_pod_terminate(struct kubelet *k, struct pod_worker *w, const char *reason, const char *message,
                          int64_t grace_seconds, bool persist) {
        int r;

        if (w->terminated)
                return 0;
        w->terminated = true;
        w->terminated_usec = (int64_t) now_realtime_usec();
        w->grace_override = grace_seconds;
        if (free_and_strdup(&w->terminated_reason, reason) < 0 || free_and_strdup(&w->terminated_message, message) < 0)
                return -ENOMEM;
        r = persist ? marker_write(k, w) : 0;
        if (r < 0)
                log_error("pod %s: cannot record its termination in %s/pods/%s: %s", strna(w->full_name),
                          k->opts->root_dir, w->uid, strerror(-r));
        kubelet_report_status(k, w);
        kubelet_worker_request_sync(w);
        return 0;
}

static int evict(void *userdata, const struct pod *pod, const char *message, int64_t grace_seconds) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, pod->uid);
        int r;

        if (!w || !w->pod)
                return -ENOENT;
        if (w->terminated)
                return 0;
        /* the decision recorded first: what the log says has happened survives a kill -9 */
        r = kubelet_pod_terminate(k, w, "Evicted", message, grace_seconds, true);
        if (r < 0)
                return r;
        log_info("Evicting pod: pod=\"%s\" podUID=\"%s\" gracePeriod=%" PRId64 " message=\"%s\"", strna(w->full_name),
                 w->uid, grace_seconds, message);
        kubelet_worker_event(w, NULL, "Warning", "Evicted", "%s", message);
        return 0;
}

/* podResourcesAreReclaimed, as far as the runtime goes: nothing running, no ready sandbox */
bool kubelet_pod_cleaned_up(struct kubelet *k, const char *uid) {
        struct pod_worker *w = kubelet_find_worker(k, uid);

        if (!w)
                return true;
        if (!w->observed)
                return false; /* not looked at yet */
        for (size_t i = 0; i < w->observed->n_containers; i++)
                if (w->observed->containers[i]->state == KC_CONTAINER_RUNNING)
                        return false;
        for (size_t i = 0; i < w->observed->n_sandboxes; i++)
                if (w->observed->sandboxes[i]->state == KC_SANDBOX_READY)
                        return false;
        return !w->busy;
}

static bool cleaned_up(void *userdata, const char *uid) {
        return kubelet_pod_cleaned_up(userdata, uid);
}

static char **terminating(void *userdata) {
        struct kubelet *k = userdata;
        char **l = NULL;

        for (struct pod_worker *w = k->workers; w; w = w->next)
                if (w->terminated && !cleaned_up(k, w->uid) && strv_extend(&l, w->uid) < 0)
                        break;
        return l;
}

static int delete_unused_containers(void *userdata, eviction_done_fn done, void *done_userdata) {
        struct kubelet *k = userdata;
        return kr_container_gc_collect(k->container_gc, true, done, done_userdata);
}

static int delete_unused_images(void *userdata, eviction_done_fn done, void *done_userdata) {
        struct kubelet *k = userdata;
        return image_gc_delete_unused(k->image_gc, done, done_userdata);
}

static void conditions_changed(void *userdata, unsigned conditions) {
        static const struct {
                unsigned bit;
                const char *on, *off;
        } names[] = {
                { EVICTION_MEMORY_PRESSURE, "NodeHasInsufficientMemory", "NodeHasSufficientMemory" },
                { EVICTION_DISK_PRESSURE, "NodeHasDiskPressure", "NodeHasNoDiskPressure" },
                { EVICTION_PID_PRESSURE, "NodeHasInsufficientPID", "NodeHasSufficientPID" },
        };
        struct kubelet *k = userdata;
        unsigned changed = conditions ^ k->node_conditions;

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                const char *what = conditions & names[i].bit ? names[i].on : names[i].off;
                if (!(changed & names[i].bit))
                        continue;
                log_info("Node %s status is now: %s", k->opts->node_name, what);
                kubelet_node_event(k, "Normal", what, "Node %s status is now: %s", k->opts->node_name, what);
        }
        k->node_conditions = conditions;
        node_manager_set_pressure(k->node, conditions & EVICTION_MEMORY_PRESSURE, conditions & EVICTION_DISK_PRESSURE,
                                  conditions & EVICTION_PID_PRESSURE);
}

static void node_event(void *userdata, const char *type, const char *reason, const char *message) {
        kubelet_node_event(userdata, type, reason, "%s", message);
}

static void image_fs_observed(void *userdata, int64_t capacity, int64_t available) {
        struct kubelet *k = userdata;
        image_gc_usage_observed(k->image_gc, capacity, available);
}

static uint64_t etc_hosts_bytes(void *userdata, const char *uid) {
        struct kubelet *k = userdata;
        _cleanup_free_ char *p = NULL;
        struct stat st;

        if (asprintf(&p, "%s/pods/%s/etc-hosts", k->opts->root_dir, uid) < 0 || stat(p, &st) < 0)
                return 0;
        return (uint64_t) st.st_size;
}

/* ---------------------------------------------------------------- lifecycle */

int kubelet_eviction_parse(struct kubelet *k, struct ck_error **ret_error) {
        const struct kubelet_options *o = k->opts;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        int r;

        /* with QoS cgroups and "pods" enforced, the hard memory thresholds also apply to the pods' cgroup */
        r = eviction_parse_thresholds(o->cgroups_per_qos ? o->enforce_node_allocatable : NULL, o->eviction_hard,
                                      o->eviction_soft, o->eviction_soft_grace_period, o->eviction_minimum_reclaim,
                                      &k->thresholds, &k->n_thresholds, &err);
        if (r < 0)
                return ck_error_set(ret_error, r, "invalid eviction thresholds: %s", ck_error_message(err));
        for (size_t i = 0; i < k->n_thresholds; i++) {
                _cleanup_free_ char *f = eviction_threshold_format(&k->thresholds[i]);
                log_v(2, "eviction manager: %s", strna(f));
        }
        return 0;
}

/* hardEvictionReservation: the hard memory.available and nodefs.available thresholds come off allocatable */
void kubelet_eviction_reservation(const struct kubelet *k, int64_t *ret_memory_bytes, float *ret_memory_fraction,
                                  int64_t *ret_storage_bytes, float *ret_storage_fraction) {
        *ret_memory_bytes = *ret_storage_bytes = 0;
        *ret_memory_fraction = *ret_storage_fraction = 0;
        for (size_t i = 0; i < k->n_thresholds; i++) {
                const struct eviction_threshold *t = &k->thresholds[i];
                if (t->grace_period_usec != 0)
                        continue;
                if (t->signal == EVICTION_SIGNAL_MEMORY_AVAILABLE) {
                        *ret_memory_bytes = t->value.is_percentage ? 0 : t->value.quantity;
                        *ret_memory_fraction = t->value.is_percentage ? t->value.percentage : 0;
                } else if (t->signal == EVICTION_SIGNAL_NODEFS_AVAILABLE) {
                        *ret_storage_bytes = t->value.is_percentage ? 0 : t->value.quantity;
                        *ret_storage_fraction = t->value.is_percentage ? t->value.percentage : 0;
                }
        }
}

int kubelet_eviction_admit(struct kubelet *k, const struct pod *p, struct ck_error **ret_error) {
        return eviction_manager_admit(k->eviction, p, ret_error);
}

/* the volumes the volume manager measured (PersistentVolumeClaims, csi, nfs, local) for the Summary */
static size_t pod_volumes(void *userdata, const char *pod_uid, const struct stats_volume **ret) {
        return kubelet_volume_stats(userdata, pod_uid, ret);
}

int kubelet_eviction_setup(struct kubelet *k) {
        static const struct eviction_ops ops = {
                .active_pods = active_pods,
                .evict = evict,
                .cleaned_up = cleaned_up,
                .terminating = terminating,
                .delete_unused_containers = delete_unused_containers,
                .delete_unused_images = delete_unused_images,
                .conditions_changed = conditions_changed,
                .node_event = node_event,
                .image_fs_observed = image_fs_observed,
                .etc_hosts_bytes = etc_hosts_bytes,
        };
        const struct kubelet_options *o = k->opts;
        /* the kubelet's one stats provider: eviction's summaries and the server's /stats/summary and
         * /metrics/resource (one CPU sample cache, so usageNanoCores covers the time since the last summary) */
        struct stats_config sc = {
                .pod_volumes = pod_volumes,
                .pod_volumes_userdata = k,
                .node_name = o->node_name,
                .root_dir = o->root_dir,
                .pod_logs_dir = o->pod_logs_dir,
                .host_root = "",
                .pods_cgroup = k->pods_cgroup,
                .volumes = k->volume_stats,
        };
        struct eviction_config ec = {
                .thresholds = k->thresholds,
                .n_thresholds = k->n_thresholds,
                .pressure_transition_period_usec = o->eviction_pressure_transition_period_usec,
                .max_pod_grace_period_seconds = o->eviction_max_pod_grace_period,
                .kernel_memcg_notification = o->kernel_memcg_notification,
                .pods_cgroup = k->pods_cgroup,
                .root_dir = o->root_dir,
                .monitoring_period_usec = EVICTION_MONITORING_PERIOD_USEC,
        };
        int r;

        r = stats_provider_new(k->base, k->cri, &sc, &k->stats);
        if (r < 0)
                return r;
        r = eviction_manager_new(k->base, k->stats, k->cri, &ec, &ops, k, &k->eviction);
        if (r < 0)
                return r;
        return eviction_manager_start(k->eviction);
}

void kubelet_eviction_free(struct kubelet *k) {
        k->eviction = eviction_manager_free(k->eviction);
        k->stats = stats_provider_free(k->stats);
        eviction_thresholds_free(k->thresholds, k->n_thresholds);
        k->thresholds = NULL;
        k->n_thresholds = 0;
        free(k->active);
        k->active = NULL;
}
