/* SPDX-License-Identifier: Apache-2.0 */
/* Pod directory removal on the removal pool: see reaper.h. */

#include "volumes/reaper.h"
#include "volumes/reaper-testing.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/workpool.h"
#include "volumes/volumes.h"

/* one thread removes at a time (the disk is the bottleneck). Removals have no deadline (a million files take what
 * they take) but never enter another filesystem (fs_remove_tree_at), so none waits on a network server; the
 * unmounts before are of the kubelet's own tmpfs and bind mounts. */
#define REAPER_THREADS 1

struct vol_reaper {
        struct workpool *pool;
        char *root_dir;
        char **busy;           /* uids being removed */
        _Atomic bool stopping; /* read by the removals running: they stop where they are */
        void (*notify)(const char *uid, int r, void *userdata);
        void *notify_data;
};

struct removal {
        struct vol_reaper *reaper; /* still valid in removal_done: the pool's last callbacks run before it goes */
        const _Atomic bool *stopping;
        char *root_dir, *uid;
        uint64_t started_usec;
        /* a finished pod's volumes only (vol_reaper_teardown), and who is told */
        bool volumes_only;
        vol_reaper_done_fn done;
        void *done_userdata;
};

static void busy_remove(struct vol_reaper *rp, const char *uid) {
        for (size_t i = 0; rp->busy && rp->busy[i]; i++)
                if (streq(rp->busy[i], uid)) {
                        strv_remove_at(rp->busy, i);
                        return;
                }
}

static int removal_work(void *userdata) {
        struct removal *j = userdata;
        if (j->volumes_only)
                return vol_teardown_pod_volumes(j->root_dir, j->uid, j->stopping);
        return vol_remove_pod_dir(j->root_dir, j->uid, j->stopping);
}

static void removal_done(int r, void *userdata) {
        struct removal *j = userdata;
        struct vol_reaper *rp = j->reaper;
        double secs = (double) (now_usec() - j->started_usec) / 1e6;

        busy_remove(rp, j->uid);
        if (j->volumes_only) {
                if (r < 0 && r != -ECANCELED)
                        log_warning("pod %s: cannot tear down its volumes yet (%s); retrying at its next sync", j->uid,
                                    strerror(-r));
                else if (r >= 0)
                        log_v(3, "Pod termination cleaned up volume paths: podUID=\"%s\" (%.1f s)", j->uid, secs);
                /* not while the reaper is freed: its owner is going too */
                if (j->done && !atomic_load(&rp->stopping))
                        j->done(j->uid, r, j->done_userdata);
        } else {
                if (r < 0 && r != -ECANCELED)
                        log_warning("orphaned pod %s: cannot remove %s/pods/%s yet (%s); retrying at the next "
                                    "housekeeping",
                                    j->uid, j->root_dir, j->uid, strerror(-r));
                else if (r >= 0)
                        log_info("orphaned pod %s: pod directory removed (%.1f s)", j->uid, secs);
                if (rp->notify)
                        rp->notify(j->uid, r, rp->notify_data);
        }
        free(j->root_dir);
        free(j->uid);
        free(j);
}

int vol_reaper_new(struct event_base *base, const char *root_dir, struct vol_reaper **ret) {
        struct vol_reaper *r = calloc(1, sizeof(*r));
        int k;

        if (!r || !(r->root_dir = strdup(root_dir ? root_dir : "/var/lib/kubelet"))) {
                free(r);
                return -ENOMEM;
        }
        k = workpool_new(base, "pod data removal", REAPER_THREADS, &r->pool);
        if (k < 0) {
                free(r->root_dir);
                free(r);
                return k;
        }
        *ret = r;
        return 0;
}

struct vol_reaper *vol_reaper_free(struct vol_reaper *r) {
        if (!r)
                return NULL;
        r->notify = NULL;
        atomic_store(&r->stopping, true); /* a removal running stops: the next start goes on from there */
        r->pool = workpool_free(r->pool); /* the done callbacks run inside, r still valid */
        strv_free(r->busy);
        free(r->root_dir);
        free(r);
        return NULL;
}

bool vol_reaper_busy(const struct vol_reaper *r, const char *uid) {
        return r && strv_contains(r->busy, uid);
}

void vol_reaper_set_notify(struct vol_reaper *r, void (*notify)(const char *uid, int r, void *userdata),
                           void *userdata) {
        r->notify = notify;
        r->notify_data = userdata;
}

static int start(struct vol_reaper *rp, const char *uid, bool volumes_only, vol_reaper_done_fn done,
                 void *done_userdata) {
        struct removal *j = calloc(1, sizeof(*j));
        int r;

        if (!j)
                return -ENOMEM;
        j->reaper = rp;
        j->stopping = &rp->stopping;
        j->root_dir = strdup(rp->root_dir);
        j->uid = strdup(uid);
        j->started_usec = now_usec();
        j->volumes_only = volumes_only;
        j->done = done;
        j->done_userdata = done_userdata;
        if (!j->root_dir || !j->uid || strv_extend(&rp->busy, uid) < 0) {
                free(j->root_dir);
                free(j->uid);
                free(j);
                return -ENOMEM;
        }
        r = workpool_submit_full(rp->pool, uid, 0, removal_work, removal_done, NULL, j);
        if (r < 0) {
                busy_remove(rp, uid);
                free(j->root_dir);
                free(j->uid);
                free(j);
        }
        return r;
}

int vol_reaper_scan(struct vol_reaper *rp, bool (*keep)(const char *uid, void *userdata), void *userdata) {
        _cleanup_free_ char *base = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;
        int started = 0;

        if (asprintf(&base, "%s/pods", rp->root_dir) < 0)
                return -ENOMEM;
        d = opendir(base);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.' || vol_reaper_busy(rp, e->d_name) || keep(e->d_name, userdata))
                        continue;
                log_info("Cleaning up orphaned pod directories: podUID=\"%s\"", e->d_name);
                if (start(rp, e->d_name, false, NULL, NULL) < 0)
                        break;
                started++;
        }
        return started;
}

int vol_reaper_teardown(struct vol_reaper *rp, const char *uid, vol_reaper_done_fn done, void *userdata) {
        int r;

        if (vol_reaper_busy(rp, uid))
                return 0;
        r = start(rp, uid, true, done, userdata);
        return r < 0 ? r : 1;
}
