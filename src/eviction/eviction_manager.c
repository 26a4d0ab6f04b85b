/* SPDX-License-Identifier: Apache-2.0 */
/* The eviction manager on the loop (see eviction_manager.h). One synchronization at a time: a Summary, the
 * decision (helpers.c), then possibly node-level reclaim, a second Summary, and one eviction; a notification that
 * arrives meanwhile runs another synchronization right after. */
#include "eviction/eviction_manager.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "eviction/helpers.h"
#include "eviction/threshold_notifier.h"
#include "stats/host.h"

#define POD_CLEANUP_TIMEOUT_USEC (30 * USEC_PER_SEC) /* podCleanupTimeout */
#define POD_CLEANUP_POLL_USEC (1 * USEC_PER_SEC)     /* podCleanupPollFreq */
#define NOTIFIER_REFRESH_USEC (10 * USEC_PER_SEC)    /* notifierRefreshInterval */

struct notifier_slot {
        struct eviction_notifier *n;
        size_t threshold; /* index into the thresholds */
};

/* one synchronization; detached (m = NULL) when the manager goes while calls are in flight */
struct sync_ctx {
        struct eviction_manager *m;
        unsigned pending;
        struct eviction_stats stats;
        struct eviction_decision d;
        bool reclaimed; /* node-level reclaim was tried */
};

struct eviction_manager {
        struct event_base *base;
        struct stats_provider *stats;
        struct cri_client *cri;
        struct cri_calls image_fs_calls; /* ImageFsInfo in flight, cancelled by eviction_manager_free */
        struct eviction_config cfg;
        char *pods_cgroup, *root_dir;
        struct eviction_ops ops;
        void *userdata;

        struct eviction_state state;
        unsigned conditions;
        int dedicated_image_fs; /* -1: not known yet */

        struct notifier_slot *notifiers;
        size_t n_notifiers;
        uint64_t notifiers_updated_usec;

        struct event *timer;         /* the next synchronization */
        struct event *cleanup_timer; /* polling an evicted pod's cleanup */
        struct sync_ctx *ctx;        /* in flight */
        bool again;                  /* asked for while one is in flight */
        char **waiting;              /* UIDs of evicted pods being cleaned up */
        uint64_t waiting_since;
};

static void sync_begin(struct eviction_manager *m);
static void evict_one(struct sync_ctx *c);

static void ctx_free(struct sync_ctx *c) {
        if (!c)
                return;
        eviction_stats_done(&c->stats);
        free(c);
}

/* a callback of a detached synchronization: free it once nothing is in flight */
static bool ctx_detached(struct sync_ctx *c) {
        if (c->m)
                return false;
        if (c->pending == 0)
                ctx_free(c);
        return true;
}

static void schedule(struct eviction_manager *m, uint64_t delay_usec) {
        evtimer_add_usec(m->timer, delay_usec);
}

/* the end of a synchronization */
static void sync_end(struct sync_ctx *c) {
        struct eviction_manager *m = c->m;

        m->ctx = NULL;
        ctx_free(c);
        if (m->waiting)
                return; /* the cleanup wait schedules the next one */
        if (m->again) {
                m->again = false;
                schedule(m, 0);
        } else
                schedule(m, m->cfg.monitoring_period_usec);
}

static char *pod_desc(const struct pod *p) {
        char *s;
        if (asprintf(&s, "%s_%s(%s)", strempty(p->name), strempty(p->namespace_), strempty(p->uid)) < 0)
                return NULL;
        return s;
}

/* ---------------------------------------------------------------- waiting for an evicted pod's cleanup */

static void on_cleanup_poll(evutil_socket_t fd, short what, void *userdata) {
        struct eviction_manager *m = userdata;
        bool all = true;
        _cleanup_free_ char *list = strv_join(m->waiting, ", ");

        for (char **u = m->waiting; u && *u && all; u++)
                all = m->ops.cleaned_up(m->userdata, *u);
        if (!all && now_usec() - m->waiting_since < POD_CLEANUP_TIMEOUT_USEC) {
                evtimer_add_usec(m->cleanup_timer, POD_CLEANUP_POLL_USEC);
                return;
        }
        if (all)
                log_info("eviction manager: pods %s successfully cleaned up", strna(list));
        else
                log_warning("eviction manager: timed out waiting for pods %s to be cleaned up", strna(list));
        m->waiting = strv_free(m->waiting);
        /* as upstream, the next synchronization follows at once */
        m->again = false;
        schedule(m, 0);
}

static void wait_for_cleanup(struct eviction_manager *m, char **uids) {
        _cleanup_free_ char *list = strv_join(uids, ", ");

        log_info("eviction manager: pods %s evicted, waiting for pod to be cleaned up", strna(list));
        strv_free(m->waiting);
        m->waiting = uids;
        m->waiting_since = now_usec();
        evtimer_add_usec(m->cleanup_timer, POD_CLEANUP_POLL_USEC);
}

/* ---------------------------------------------------------------- the memory notifiers */

static void on_notified(void *userdata, const char *what) {
        struct eviction_manager *m = userdata;

        log_info("%s", what);
        sync_begin(m);
}

static void create_notifiers(struct eviction_manager *m) {
        bool unified = stats_cgroup_is_unified("");
        const char *base = unified ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory";

        for (size_t i = 0; i < m->cfg.n_thresholds; i++) {
                const struct eviction_threshold *t = &m->cfg.thresholds[i];
                bool allocatable = t->signal == EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE;
                _cleanup_free_ char *dir = NULL, *desc = NULL;
                struct notifier_slot *ns;
                struct eviction_notifier *n;
                int r;

                if (t->signal != EVICTION_SIGNAL_MEMORY_AVAILABLE && !allocatable)
                        continue;
                if (allocatable && !m->pods_cgroup)
                        continue;
                if (asprintf(&dir, "%s%s", base, allocatable ? m->pods_cgroup : "") < 0 ||
                    asprintf(&desc, "%s %smemory eviction threshold", t->grace_period_usec == 0 ? "hard" : "soft",
                             allocatable ? "allocatable " : "") < 0)
                        return;
                r = eviction_notifier_new(m->base, dir, unified, desc, on_notified, m, &n);
                if (r < 0) {
                        log_warning("eviction manager: failed to create memory threshold notifier: %s", strerror(-r));
                        continue;
                }
                ns = reallocarray(m->notifiers, m->n_notifiers + 1, sizeof(*ns));
                if (!ns) {
                        eviction_notifier_free(n);
                        return;
                }
                m->notifiers = ns;
                ns[m->n_notifiers++] = (struct notifier_slot) { .n = n, .threshold = i };
        }
}

/* UpdateThreshold for every notifier, from the Summary's node memory or its pods' cgroup */
static void update_notifiers(struct eviction_manager *m, const struct stats_summary *summary) {
        const struct stats_system_container *pods = stats_summary_pods_container(summary);

        for (size_t k = 0; k < m->n_notifiers; k++) {
                const struct eviction_threshold *t = &m->cfg.thresholds[m->notifiers[k].threshold];
                const struct stats_memory *mem = t->signal == EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE
                                                         ? (pods ? &pods->memory : NULL)
                                                         : &summary->node.memory;
                uint64_t usage, ws, avail;
                int64_t capacity;
                int r;

                if (!mem || !mem->present || !mem->usage_bytes.set || !mem->working_set_bytes.set ||
                    !mem->available_bytes.set) {
                        log_warning("eviction manager: failed to update %s: summary was incomplete",
                                    eviction_notifier_description(m->notifiers[k].n));
                        continue;
                }
                /* as the JSON had them (integers saturated at INT64_MAX) */
                usage = MIN(mem->usage_bytes.v, (uint64_t) INT64_MAX);
                ws = MIN(mem->working_set_bytes.v, (uint64_t) INT64_MAX);
                avail = MIN(mem->available_bytes.v, (uint64_t) INT64_MAX);
                capacity = (int64_t) avail + (int64_t) ws;
                r = eviction_notifier_set_threshold(m->notifiers[k].n,
                                                    eviction_notifier_level(capacity,
                                                                            eviction_value_quantity(&t->value,
                                                                                                    capacity),
                                                                            usage, ws));
                if (r < 0)
                        log_warning("eviction manager: failed to update %s: %s",
                                    eviction_notifier_description(m->notifiers[k].n), strerror(-r));
        }
}

/* ---------------------------------------------------------------- the image filesystem's device */

static void on_image_fs(const struct cri_reply *reply, void *userdata) {
        struct eviction_manager *m = userdata;
        const Runtime__V1__ImageFsInfoResponse *resp = (const void *) reply->msg;
        struct stat a, b;

        if (reply->r < 0 || !resp || resp->n_image_filesystems == 0 || !resp->image_filesystems[0]->fs_id ||
            isempty(resp->image_filesystems[0]->fs_id->mountpoint))
                return;
        if (stat(resp->image_filesystems[0]->fs_id->mountpoint, &a) < 0 || stat(m->root_dir, &b) < 0)
                return;
        m->dedicated_image_fs = a.st_dev != b.st_dev;
        log_v(2, "eviction manager: the image filesystem %s %s a dedicated device",
              resp->image_filesystems[0]->fs_id->mountpoint, m->dedicated_image_fs ? "is" : "is not");
}

static void query_image_fs(struct eviction_manager *m) {
        Runtime__V1__ImageFsInfoRequest req = RUNTIME__V1__IMAGE_FS_INFO_REQUEST__INIT;

        if (m->dedicated_image_fs >= 0 || cri_calls_pending(&m->image_fs_calls) || !m->cri)
                return;
        (void) cri_image_fs_info(m->cri, &req, 0, on_image_fs, m, &m->image_fs_calls);
}

/* ---------------------------------------------------------------- synchronize */

static void log_conditions(struct eviction_manager *m, unsigned conditions) {
        _cleanup_free_ char *c = eviction_conditions_format(conditions);
        log_v(3, "eviction manager: node conditions - transition period not met: %s", strna(c));
}

/* evict every pod over its local ephemeral storage limits (localStorageEviction); the UIDs evicted */
static char **local_storage_eviction(struct sync_ctx *c) {
        struct eviction_manager *m = c->m;
        const struct pod *const *pods;
        char **evicted = NULL;
        size_t n = 0;

        pods = m->ops.active_pods(m->userdata, &n);
        for (size_t i = 0; i < n; i++) {
                const struct eviction_pod_stats *st = eviction_stats_find_pod(&c->stats, pods[i]->uid);
                uint64_t hosts = m->ops.etc_hosts_bytes ? m->ops.etc_hosts_bytes(m->userdata, pods[i]->uid) : 0;
                _cleanup_free_ char *msg = NULL, *desc = NULL;

                if (!st || !eviction_local_storage_exceeded(pods[i], st, m->dedicated_image_fs > 0, hosts, &msg))
                        continue;
                desc = pod_desc(pods[i]);
                if (eviction_pod_is_critical(pods[i])) {
                        log_error("eviction manager: cannot evict a critical pod %s", strna(desc));
                        continue;
                }
                if (m->ops.evict(m->userdata, pods[i], strempty(msg), 0) < 0)
                        log_error("eviction manager: pod %s failed to evict", strna(desc));
                else
                        log_info("eviction manager: pod %s is evicted successfully", strna(desc));
                (void) strv_extend(&evicted, pods[i]->uid);
        }
        return evicted;
}

static bool is_disk_signal(enum eviction_signal s) {
        enum eviction_resource r = eviction_signal_resource(s);
        return r == EVICTION_RESOURCE_EPHEMERAL_STORAGE || r == EVICTION_RESOURCE_INODES;
}

static void on_resummary(int r, struct stats_summary *summary, void *userdata) {
        struct sync_ctx *c = userdata;
        struct eviction_stats after = {};
        uint32_t all, met;

        c->pending--;
        if (ctx_detached(c)) {
                stats_summary_free(summary);
                return;
        }
        if (r < 0 || eviction_stats_from_summary(summary, now_usec(), &after) < 0) {
                log_error("eviction manager: failed to get summary stats after resource reclaim: %s", strerror(-r));
                stats_summary_free(summary);
                sync_end(c);
                return;
        }
        stats_summary_free(summary);
        all = c->m->cfg.n_thresholds >= 32 ? UINT32_MAX : (UINT32_C(1) << c->m->cfg.n_thresholds) - 1;
        met = eviction_thresholds_met(c->m->cfg.thresholds, c->m->cfg.n_thresholds, all, &after.obs, false);
        eviction_stats_done(&after);
        if (met == 0) {
                log_info("eviction manager: able to reduce %s pressure without evicting pods.",
                         eviction_resource_to_string(c->d.resource));
                sync_end(c);
                return;
        }
        evict_one(c);
}

static void warn_reclaim(const struct sync_ctx *c, const char *why) {
        log_warning("eviction manager: unexpected error when attempting to reduce %s pressure: %s",
                    eviction_resource_to_string(c->d.resource), why);
}

/* after reclaiming node-level resources: observe again, to see whether that was enough */
static void resummarize(struct sync_ctx *c) {
        if (stats_summary_get(c->m->stats, on_resummary, c) < 0) {
                sync_end(c);
                return;
        }
        c->pending++;
}

static void on_images_reclaimed(int r, void *userdata) {
        struct sync_ctx *c = userdata;

        c->pending--;
        if (ctx_detached(c))
                return;
        if (r < 0)
                warn_reclaim(c, strerror(-r));
        resummarize(c);
}

static void on_containers_reclaimed(int r, void *userdata) {
        struct sync_ctx *c = userdata;

        c->pending--;
        if (ctx_detached(c))
                return;
        if (r < 0)
                warn_reclaim(c, strerror(-r));
        if (c->m->ops.delete_unused_images(c->m->userdata, on_images_reclaimed, c) >= 0) {
                c->pending++;
                return;
        }
        warn_reclaim(c, "out of memory");
        resummarize(c);
}

static void evict_one(struct sync_ctx *c) {
        struct eviction_manager *m = c->m;
        const struct eviction_threshold *t = &m->cfg.thresholds[c->d.threshold];
        _cleanup_free_ struct eviction_candidate *cands = NULL;
        const struct pod *const *pods;
        size_t n = 0;

        if (m->ops.terminating) {
                char **uids = m->ops.terminating(m->userdata);
                if (uids) {
                        /* an eviction still under way (one from before a restart): its resources come back first */
                        wait_for_cleanup(m, uids);
                        sync_end(c);
                        return;
                }
        }
        log_info("eviction manager: must evict pod(s) to reclaim %s", eviction_resource_to_string(c->d.resource));
        pods = m->ops.active_pods(m->userdata, &n);
        if (n == 0) {
                log_error("eviction manager: eviction thresholds have been met, but no pods are active to evict");
                sync_end(c);
                return;
        }
        cands = calloc(n, sizeof(*cands));
        if (!cands) {
                sync_end(c);
                return;
        }
        for (size_t i = 0; i < n; i++)
                cands[i] = (struct eviction_candidate) { pods[i], eviction_stats_find_pod(&c->stats, pods[i]->uid) };
        eviction_rank(t->signal, m->dedicated_image_fs > 0, cands, n);
        {
                _cleanup_strv_free_ char **names = NULL;
                _cleanup_free_ char *joined = NULL;
                for (size_t i = 0; i < n; i++) {
                        char *d = pod_desc(cands[i].pod);
                        if (!d || strv_push(&names, d) < 0)
                                break;
                }
                joined = strv_join(names, ", ");
                log_info("eviction manager: pods ranked for eviction: %s", strna(joined));
        }
        /* at most one pod per synchronization */
        for (size_t i = 0; i < n; i++) {
                const struct pod *p = cands[i].pod;
                _cleanup_free_ char *desc = pod_desc(p), *msg = NULL;
                int64_t grace = 0;
                char **uids = NULL;

                if (eviction_pod_is_critical(p)) {
                        log_error("eviction manager: cannot evict a critical pod %s", strna(desc));
                        continue;
                }
                if (t->grace_period_usec > 0)
                        grace = m->cfg.max_pod_grace_period_seconds >= 0 ? m->cfg.max_pod_grace_period_seconds : -1;
                msg = eviction_message(c->d.resource, p, cands[i].stats, m->cfg.thresholds, m->cfg.n_thresholds,
                                       c->d.met, &c->stats.obs);
                if (m->ops.evict(m->userdata, p, strempty(msg), grace) < 0)
                        log_error("eviction manager: pod %s failed to evict", strna(desc));
                else
                        log_info("eviction manager: pod %s is evicted successfully", strna(desc));
                if (strv_extend(&uids, p->uid) >= 0)
                        wait_for_cleanup(m, uids);
                sync_end(c);
                return;
        }
        log_info("eviction manager: unable to evict any pods from the node");
        sync_end(c);
}

static void on_summary(int r, struct stats_summary *summary, void *userdata) {
        struct sync_ctx *c = userdata;
        struct eviction_manager *m;
        char **evicted;

        c->pending--;
        if (ctx_detached(c)) {
                stats_summary_free(summary);
                return;
        }
        m = c->m;
        if (r < 0) {
                log_error("eviction manager: failed to get summary stats: %s", strerror(-r));
                sync_end(c);
                return;
        }
        if (m->n_notifiers > 0 &&
            (!m->notifiers_updated_usec || now_usec() - m->notifiers_updated_usec > NOTIFIER_REFRESH_USEC)) {
                m->notifiers_updated_usec = now_usec();
                update_notifiers(m, summary);
        }
        r = eviction_stats_from_summary(summary, now_usec(), &c->stats);
        stats_summary_free(summary);
        if (r < 0) {
                sync_end(c);
                return;
        }
        eviction_synchronize(m->cfg.thresholds, m->cfg.n_thresholds, m->cfg.pressure_transition_period_usec, &m->state,
                             &c->stats.obs, now_usec(), &c->d);
        if (c->d.conditions)
                log_conditions(m, c->d.conditions);
        if (c->d.conditions != m->conditions) {
                m->conditions = c->d.conditions;
                m->ops.conditions_changed(m->userdata, m->conditions);
        }
        if (m->ops.image_fs_observed && c->stats.obs.s[EVICTION_SIGNAL_IMAGEFS_AVAILABLE].present)
                m->ops.image_fs_observed(m->userdata, c->stats.obs.s[EVICTION_SIGNAL_IMAGEFS_AVAILABLE].capacity,
                                         c->stats.obs.s[EVICTION_SIGNAL_IMAGEFS_AVAILABLE].available);

        /* pods over their local storage limits go first, and that is all for this round */
        evicted = local_storage_eviction(c);
        if (evicted) {
                wait_for_cleanup(m, evicted);
                sync_end(c);
                return;
        }
        if (!c->d.reclaim) {
                log_v(3, "eviction manager: no resources are starved");
                sync_end(c);
                return;
        }
        log_warning("eviction manager: attempting to reclaim %s", eviction_resource_to_string(c->d.resource));
        {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "Attempting to reclaim %s", eviction_resource_to_string(c->d.resource)) >= 0)
                        m->ops.node_event(m->userdata, "Warning", "EvictionThresholdMet", msg);
        }
        /* node-level resources first for disk: dead containers, then unused images */
        if (is_disk_signal(m->cfg.thresholds[c->d.threshold].signal)) {
                if (m->ops.delete_unused_containers(m->userdata, on_containers_reclaimed, c) >= 0) {
                        c->pending++;
                        return;
                }
        }
        evict_one(c);
}

static void sync_begin(struct eviction_manager *m) {
        struct sync_ctx *c;

        if (m->ctx || m->waiting) {
                m->again = true;
                return;
        }
        evtimer_del(m->timer);
        log_v(3, "eviction manager: synchronize housekeeping");
        if (m->dedicated_image_fs < 0) {
                /* the rank functions depend on it: wait until the runtime told us (as upstream) */
                query_image_fs(m);
                schedule(m, USEC_PER_SEC);
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c || stats_summary_get(m->stats, on_summary, c) < 0) {
                free(c);
                schedule(m, m->cfg.monitoring_period_usec);
                return;
        }
        c->m = m;
        c->pending = 1;
        m->ctx = c;
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        sync_begin(userdata);
}

/* ---------------------------------------------------------------- public */

int eviction_manager_new(struct event_base *base, struct stats_provider *stats, struct cri_client *cri,
                         const struct eviction_config *cfg, const struct eviction_ops *ops, void *userdata,
                         struct eviction_manager **ret) {
        struct eviction_manager *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->base = base;
        m->stats = stats;
        m->cri = cri;
        m->cfg = *cfg;
        m->ops = *ops;
        m->userdata = userdata;
        m->dedicated_image_fs = -1;
        m->pods_cgroup = strdup_or_null(cfg->pods_cgroup);
        m->root_dir = strdup(strempty(cfg->root_dir));
        m->cfg.pods_cgroup = m->pods_cgroup;
        m->cfg.root_dir = m->root_dir;
        m->timer = evtimer_new(base, on_timer, m);
        m->cleanup_timer = evtimer_new(base, on_cleanup_poll, m);
        if ((cfg->pods_cgroup && !m->pods_cgroup) || !m->root_dir || !m->timer || !m->cleanup_timer) {
                eviction_manager_free(m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

int eviction_manager_start(struct eviction_manager *m) {
        if (m->cfg.kernel_memcg_notification)
                create_notifiers(m);
        query_image_fs(m);
        schedule(m, USEC_PER_SEC);
        return 0;
}

struct eviction_manager *eviction_manager_free(struct eviction_manager *m) {
        if (!m)
                return NULL;
        cri_calls_cancel(&m->image_fs_calls);
        if (m->ctx) {
                struct sync_ctx *c = TAKE_PTR(m->ctx);
                c->m = NULL;
                if (c->pending == 0)
                        ctx_free(c);
        }
        for (size_t i = 0; i < m->n_notifiers; i++)
                eviction_notifier_free(m->notifiers[i].n);
        free(m->notifiers);
        if (m->timer)
                event_free(m->timer);
        if (m->cleanup_timer)
                event_free(m->cleanup_timer);
        strv_free(m->waiting);
        free(m->pods_cgroup);
        free(m->root_dir);
        free(m);
        return NULL;
}

/* The node conditions now (NODE_*_PRESSURE bits). */
static unsigned eviction_manager_conditions(const struct eviction_manager *m) {
        return m ? m->conditions : 0;
}

int eviction_manager_admit(const struct eviction_manager *m, const struct pod *pod, struct ck_error **ret_error) {
        int r = eviction_admit(eviction_manager_conditions(m), pod, ret_error);
        /* upstream's line, beside the kubelet's "Pod admission denied" */
        if (r == -ENOSPC) {
                _cleanup_free_ char *c = eviction_conditions_format(eviction_manager_conditions(m)), *d = pod_desc(pod);
                log_warning("Failed to admit pod to node: pod=\"%s\" nodeCondition=%s", strna(d), strna(c));
        }
        return r;
}
