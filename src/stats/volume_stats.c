/* SPDX-License-Identifier: Apache-2.0 */
/* The pods' volume usage, measured on a worker thread (see volume_stats.h). */
#include "stats/volume_stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/log.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "basic/workpool.h"
#include "stats/host.h"

#define MAX_VOLUMES 100000 /* entries measured per pass, at most */

struct measurement {
        struct stats_volumes *v; /* NULL once the cache is gone */
        char *root_dir;
        struct stats_volume_usage *items;
        size_t n;
};

struct stats_volumes {
        struct event_base *base;
        struct workpool *pool;
        char *root_dir;
        uint64_t period_usec;
        struct event *timer;
        struct measurement *running;
        bool again;
        struct stats_volume_usage *items; /* sorted by pod uid */
        size_t n;
};

static void usages_free(struct stats_volume_usage *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(l[i].pod_uid);
                free(l[i].name);
                free(l[i].plugin);
        }
        free(l);
}

static void measurement_free(struct measurement *m) {
        if (!m)
                return;
        usages_free(m->items, m->n);
        free(m->root_dir);
        free(m);
}

static int add(struct measurement *m, const char *uid, const char *plugin, const char *name, const char *path,
               dev_t root_dev) {
        struct stats_volume_usage *n;
        struct stat st;
        uint64_t bytes, inodes;

        if (m->n >= MAX_VOLUMES || stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
                return 0;
        if (stats_dir_disk_usage(path, &bytes, &inodes) < 0)
                return 0;
        n = reallocarray(m->items, m->n + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        m->items = n;
        n[m->n] = (struct stats_volume_usage) {
                .pod_uid = strdup(uid),
                .name = strdup(name),
                .plugin = strdup(plugin),
                .used_bytes = bytes,
                .inodes_used = inodes,
                .same_fs = st.st_dev == root_dev,
                .time_usec = now_realtime_usec(),
        };
        if (!n[m->n].pod_uid || !n[m->n].name || !n[m->n].plugin) {
                free(n[m->n].pod_uid);
                free(n[m->n].name);
                free(n[m->n].plugin);
                return -ENOMEM;
        }
        m->n++;
        return 0;
}

/* The in-tree volumes that live in the pod's directory and are measured by du (upstream's MetricsDu). The volumes
 * mounted from elsewhere (kubernetes.io~csi, ~nfs, ~local-volume) are measured by the volume manager with statfs or
 * NodeGetVolumeStats, never walked here: a stalled NFS server would hold a worker for good. */
static bool measured_plugin(const char *plugin) {
        return streq(plugin, "kubernetes.io~empty-dir") || streq(plugin, "kubernetes.io~configmap") ||
               streq(plugin, "kubernetes.io~secret") || streq(plugin, "kubernetes.io~downward-api") ||
               streq(plugin, "kubernetes.io~projected") || streq(plugin, "kubernetes.io~git-repo");
}

/* on the worker: <root>/pods/<uid>/volumes/<plugin>/<name> */
static int measure(void *userdata) {
        struct measurement *m = userdata;
        _cleanup_free_ char *pods = NULL;
        struct stat rst;
        struct dirent *pe;
        DIR *pd;

        if (stat(m->root_dir, &rst) < 0)
                return -errno;
        if (asprintf(&pods, "%s/pods", m->root_dir) < 0)
                return -ENOMEM;
        pd = opendir(pods);
        if (!pd)
                return errno == ENOENT ? 0 : -errno;
        while ((pe = readdir(pd))) {
                _cleanup_free_ char *vols = NULL;
                struct dirent *ke;
                DIR *kd;

                if (pe->d_name[0] == '.' || asprintf(&vols, "%s/%s/volumes", pods, pe->d_name) < 0)
                        continue;
                kd = opendir(vols);
                if (!kd)
                        continue;
                while ((ke = readdir(kd))) {
                        _cleanup_free_ char *kp = NULL;
                        struct dirent *ve;
                        DIR *vd;

                        if (!measured_plugin(ke->d_name) || asprintf(&kp, "%s/%s", vols, ke->d_name) < 0)
                                continue;
                        vd = opendir(kp);
                        if (!vd)
                                continue;
                        while ((ve = readdir(vd))) {
                                _cleanup_free_ char *vp = NULL;
                                if (ve->d_name[0] == '.' || asprintf(&vp, "%s/%s", kp, ve->d_name) < 0)
                                        continue;
                                if (add(m, pe->d_name, ke->d_name, ve->d_name, vp, rst.st_dev) < 0) {
                                        closedir(vd);
                                        closedir(kd);
                                        closedir(pd);
                                        return -ENOMEM;
                                }
                        }
                        closedir(vd);
                }
                closedir(kd);
        }
        closedir(pd);
        return 0;
}

static int cmp_uid(const void *a, const void *b) {
        return strcmp(((const struct stats_volume_usage *) a)->pod_uid,
                      ((const struct stats_volume_usage *) b)->pod_uid);
}

static void stats_volumes_refresh(struct stats_volumes *v);

static void measured(int r, void *userdata) {
        struct measurement *m = userdata;
        struct stats_volumes *v = m->v;

        if (!v) {
                measurement_free(m);
                return;
        }
        v->running = NULL;
        if (r < 0) {
                if (r != -ECANCELED)
                        log_v(2, "volume stats: measuring failed: %s", strerror(-r));
        } else {
                if (m->n > 1)
                        qsort(m->items, m->n, sizeof(*m->items), cmp_uid);
                usages_free(v->items, v->n);
                v->items = TAKE_PTR(m->items);
                v->n = m->n;
                m->n = 0;
        }
        measurement_free(m);
        if (v->again) {
                v->again = false;
                stats_volumes_refresh(v);
        }
}

/* Measure now (coalesced with one in flight). */
static void stats_volumes_refresh(struct stats_volumes *v) {
        struct measurement *m;

        if (!v || !v->pool)
                return;
        if (v->running) {
                v->again = true;
                return;
        }
        m = calloc(1, sizeof(*m));
        if (!m || !(m->root_dir = strdup(v->root_dir))) {
                free(m);
                return;
        }
        m->v = v;
        if (workpool_submit(v->pool, measure, measured, m) < 0) {
                measurement_free(m);
                return;
        }
        v->running = m;
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct stats_volumes *v = userdata;

        evtimer_add_usec(v->timer, v->period_usec);
        stats_volumes_refresh(v);
}

int stats_volumes_new(struct event_base *base, const char *root_dir, uint64_t period_usec, struct stats_volumes **ret) {
        struct stats_volumes *v = calloc(1, sizeof(*v));
        int r;

        if (!v)
                return -ENOMEM;
        v->base = base;
        v->period_usec = period_usec;
        v->root_dir = strdup(root_dir);
        v->timer = evtimer_new(base, on_timer, v);
        if (!v->root_dir || !v->timer) {
                stats_volumes_free(v);
                return -ENOMEM;
        }
        r = workpool_new(base, "volume stats", 1, &v->pool);
        if (r < 0) {
                stats_volumes_free(v);
                return r;
        }
        *ret = v;
        return 0;
}

int stats_volumes_start(struct stats_volumes *v) {
        if (v->period_usec > 0)
                evtimer_add_usec(v->timer, MIN(v->period_usec, USEC_PER_SEC));
        return 0;
}

struct stats_volumes *stats_volumes_free(struct stats_volumes *v) {
        if (!v)
                return NULL;
        if (v->running)
                v->running->v = NULL;
        v->pool = workpool_free(v->pool);
        if (v->timer)
                event_free(v->timer);
        usages_free(v->items, v->n);
        free(v->root_dir);
        free(v);
        return NULL;
}

const struct stats_volume_usage *stats_volumes_pod(const struct stats_volumes *v, const char *uid, size_t *ret_n) {
        size_t lo = 0, hi;

        *ret_n = 0;
        if (!v || !uid || v->n == 0)
                return NULL;
        hi = v->n;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (strcmp(v->items[mid].pod_uid, uid) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo >= v->n || !streq(v->items[lo].pod_uid, uid))
                return NULL;
        for (hi = lo; hi < v->n && streq(v->items[hi].pod_uid, uid); hi++)
                ;
        *ret_n = hi - lo;
        return &v->items[lo];
}

bool stats_volumes_is_local_ephemeral(const struct stats_volume_usage *u) {
        return (streq(u->plugin, "kubernetes.io~empty-dir") && u->same_fs) ||
               streq(u->plugin, "kubernetes.io~configmap") || streq(u->plugin, "kubernetes.io~git-repo");
}
