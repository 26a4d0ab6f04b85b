/* SPDX-License-Identifier: Apache-2.0 */
/* The volume manager's work off the operations' state machine: the volumes' usage for the Summary API (CSI
 * NodeGetVolumeStats where the driver has it, statvfs on a worker otherwise) and the fsGroup ownership of the
 * volumes the sync mounts itself, on the volume pool. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "basic/error.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "csi/csi.h"
#include "volumemanager/volumemanager-internal.h"
#include "volumes/ownership.h"

/* ---------------------------------------------------------------- stats */

struct stats_req {
        struct volmgr *vm; /* NULL once the manager is gone */
        struct stats_req *next;
        char *unique_name, *pod_uid;
};

static struct vm_mount *stats_target(struct stats_req *s) {
        struct vm_vol *v = volmgr_vol_get(s->vm, s->unique_name, false);
        return v ? volmgr_mount_get(v, s->pod_uid, false) : NULL;
}

static void stats_req_free(struct stats_req *s) {
        if (s->vm)
                FLIST_REMOVE(s->vm->stats_reqs, s);
        free(s->unique_name);
        free(s->pod_uid);
        free(s);
}

static void on_csi_stats(const struct csi_reply *reply, void *userdata) {
        struct stats_req *s = userdata;
        struct vm_mount *m = s->vm ? stats_target(s) : NULL;

        if (m) {
                m->stats_busy = false;
                if (reply->r < 0)
                        log_v(2, "NodeGetVolumeStats of %s for pod %s failed: %s", s->unique_name, s->pod_uid,
                              reply->message);
                else {
                        m->has_stats = true;
                        m->stats = (struct stats_volume) {
                                .time_usec = now_realtime_usec(),
                                .available_bytes = reply->usage.available_bytes,
                                .capacity_bytes = reply->usage.capacity_bytes,
                                .used_bytes = reply->usage.used_bytes,
                                .inodes_free = reply->usage.inodes_free,
                                .inodes = reply->usage.inodes,
                                .inodes_used = reply->usage.inodes_used,
                        };
                }
        }
        stats_req_free(s);
}

struct statfs_job {
        struct volmgr *vm;
        char *unique_name, *pod_uid, *path;
        struct statvfs sv;
        int r;
};

static int work_statfs(void *userdata) {
        struct statfs_job *j = userdata;
        return statvfs(j->path, &j->sv) < 0 ? -errno : 0;
}

static void statfs_done(int r, void *userdata) {
        struct statfs_job *j = userdata;
        struct stats_req s = { .vm = j->vm, .unique_name = j->unique_name, .pod_uid = j->pod_uid };
        struct vm_mount *m = j->vm && !j->vm->freeing && r != -ECANCELED ? stats_target(&s) : NULL;

        if (m) {
                m->stats_busy = false;
                if (r >= 0) {
                        uint64_t f = j->sv.f_frsize;
                        m->has_stats = true;
                        /* MetricsStatFS */
                        m->stats = (struct stats_volume) {
                                .time_usec = now_realtime_usec(),
                                .available_bytes = (int64_t) (j->sv.f_bavail * f),
                                .capacity_bytes = (int64_t) (j->sv.f_blocks * f),
                                .used_bytes = (int64_t) ((j->sv.f_blocks - j->sv.f_bfree) * f),
                                .inodes_free = (int64_t) j->sv.f_ffree,
                                .inodes = (int64_t) j->sv.f_files,
                                .inodes_used = (int64_t) (j->sv.f_files - j->sv.f_ffree),
                        };
                }
        }
}

static void statfs_destroy(void *userdata) {
        struct statfs_job *j = userdata;

        free(j->unique_name);
        free(j->pod_uid);
        free(j->path);
        free(j);
}

void volmgr_stats_orphan(struct volmgr *vm) {
        for (struct stats_req *s = vm->stats_reqs; s; s = s->next)
                s->vm = NULL;
        vm->stats_reqs = NULL;
}

void volmgr_stats_refresh(struct volmgr *vm) {
        for (struct vm_vol *v = vm->vols; v; v = v->next)
                for (struct vm_mount *m = v->mounts; m; m = m->next) {
                        struct csi_node_caps caps;
                        _cleanup_free_ char *path = NULL;

                        if (m->state != VM_STATE_MOUNTED || m->stats_busy || v->spec.kind == VM_KIND_HOST_PATH)
                                continue;
                        path = volmgr_mount_path(vm, v, m);
                        if (!path)
                                continue;
                        if ((v->spec.kind == VM_KIND_CSI || v->spec.kind == VM_KIND_CSI_INLINE)) {
                                struct csi_client *c;
                                struct stats_req *s;
                                if (!csi_drivers_caps(vm->csi, v->spec.driver, &caps) || !caps.volume_stats)
                                        goto statfs;
                                c = csi_drivers_client(vm->csi, v->spec.driver, NULL);
                                s = calloc(1, sizeof(*s));
                                if (!c || !s) {
                                        free(s);
                                        continue;
                                }
                                s->vm = vm;
                                FLIST_PREPEND(vm->stats_reqs, s);
                                s->unique_name = strdup(v->unique_name);
                                s->pod_uid = strdup(m->pod_uid);
                                if (!s->unique_name || !s->pod_uid ||
                                    csi_node_get_volume_stats(c, v->spec.handle, path, NULL, on_csi_stats, s) < 0) {
                                        stats_req_free(s);
                                        continue;
                                }
                                m->stats_busy = true;
                                continue;
                        }
statfs : {
        struct statfs_job *j = calloc(1, sizeof(*j));
        if (!j)
                continue;
        j->vm = vm;
        j->unique_name = strdup(v->unique_name);
        j->pod_uid = strdup(m->pod_uid);
        j->path = TAKE_PTR(path);
        if (!j->unique_name || !j->pod_uid ||
            workpool_submit_full(vm->pool_stats, j->unique_name, VOLMGR_STATFS_TIMEOUT_USEC, work_statfs, statfs_done,
                                 statfs_destroy, j) < 0) {
                free(j->unique_name);
                free(j->pod_uid);
                free(j->path);
                free(j);
                continue;
        }
        m->stats_busy = true;
}
                }
}

/* ---------------------------------------------------------------- ownership of the sync's own volumes */

struct ownership_job {
        char *path, *policy;
        int64_t fs_group;
        bool read_only;
        struct vol_ownership_result res;
        struct ck_error *error;
        void (*done)(int r, const char *message, void *userdata);
        void *userdata;
};

static int work_own(void *userdata) {
        struct ownership_job *j = userdata;
        return vol_ownership_apply(j->path, j->fs_group, j->policy, j->read_only, &j->res, &j->error);
}

static void own_done(int r, void *userdata) {
        struct ownership_job *j = userdata;

        if (r >= 0 && !j->res.skipped)
                log_v(3, "fsGroup %" PRId64 " applied to %s (%" PRIu64 " entries, %" PRIu64 " failed)", j->fs_group,
                      j->path, j->res.entries, j->res.failures);
        j->done(r, r < 0 ? ck_error_message_or(j->error, r) : NULL, j->userdata);
        ck_error_free(j->error);
        free(j->path);
        free(j->policy);
        free(j);
}

int volmgr_apply_ownership(struct volmgr *vm, const char *path, int64_t fs_group, const char *policy, bool read_only,
                           void (*done)(int r, const char *message, void *userdata), void *userdata) {
        struct ownership_job *j = calloc(1, sizeof(*j));
        int r;

        if (!j)
                return -ENOMEM;
        *j = (struct ownership_job) {
                .fs_group = fs_group, .read_only = read_only, .done = done, .userdata = userdata
        };
        j->path = strdup(path);
        j->policy = strdup_or_null(policy);
        if (!j->path || (policy && !j->policy)) {
                free(j->path);
                free(j->policy);
                free(j);
                return -ENOMEM;
        }
        /* its own pool: a long walk (a million files) never holds up mounts or stats */
        r = workpool_submit_full(vm->pool_own, path, 0, work_own, own_done, NULL, j);
        if (r < 0) {
                free(j->path);
                free(j->policy);
                free(j);
        }
        return r;
}
