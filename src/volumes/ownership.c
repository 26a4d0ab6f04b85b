/* SPDX-License-Identifier: Apache-2.0 */
/* fsGroup ownership of volumes: see ownership.h. */

#include "volumes/ownership.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "basic/string.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452 /* Linux 6.6, the same number on every architecture */
#endif

#define RW_MASK 0660
#define RO_MASK 0440
#define EXEC_MASK 0110

bool vol_ownership_policy_on_root_mismatch(const char *policy) {
        return streq_ptr(policy, "OnRootMismatch");
}

bool vol_ownership_root_mismatch(const struct stat *st, int64_t fs_group, bool read_only) {
        mode_t want = read_only ? RO_MASK : RW_MASK;

        if ((int64_t) st->st_gid != fs_group)
                return true;
        if (!S_ISDIR(st->st_mode))
                return true; /* as upstream: a root that is not a directory is always changed */
        want |= EXEC_MASK;
        return (st->st_mode & want) != want || !(st->st_mode & S_ISGID);
}

mode_t vol_ownership_mode(mode_t mode, bool read_only) {
        mode_t mask = read_only ? RO_MASK : RW_MASK;

        if (S_ISDIR(mode))
                mask |= S_ISGID | EXEC_MASK;
        return (mode & 07777) | mask;
}

/* What the walk knows of an object, from the fd it holds on it (statx: the mount it is on, too). */
struct obj {
        mode_t mode;
        uid_t uid;
        gid_t gid;
        dev_t dev;
        uint64_t mnt_id;
};

static int obj_stat(int fd, struct obj *ret) {
        struct statx sx;

        if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
                  STATX_TYPE | STATX_MODE | STATX_UID | STATX_GID | STATX_MNT_ID, &sx) < 0)
                return -errno;
        *ret = (struct obj) {
                .mode = sx.stx_mode,
                .uid = sx.stx_uid,
                .gid = sx.stx_gid,
                .dev = makedev(sx.stx_dev_major, sx.stx_dev_minor),
                .mnt_id = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : 0,
        };
        return 0;
}

/* chmod of the object an O_PATH fd holds, never of what a name resolves to now: fchmodat2(AT_EMPTY_PATH)
 * (Linux 6.6), else chmod of /proc/self/fd/N, which reaches the fd's object itself. Never called on a symlink. */
static int chmod_fd(int fd, mode_t mode) {
        char proc[sizeof("/proc/self/fd/") + 12];

        if (syscall(SYS_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0)
                return 0;
        if (errno != ENOSYS && errno != EINVAL)
                return -errno;
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        return chmod(proc, mode) < 0 ? -errno : 0;
}

/* one object through its fd: its group, then its mode (after the chown, which may clear setgid on files) */
static void change_obj(int fd, const struct obj *o, int64_t fs_group, bool read_only,
                       struct vol_ownership_result *res) {
        bool failed = false;

        assert(!S_ISLNK(o->mode));
        if (fchownat(fd, "", o->uid, (gid_t) fs_group, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                failed = true;
        if (chmod_fd(fd, vol_ownership_mode(o->mode, read_only)) < 0)
                failed = true;
        if (failed)
                res->failures++;
        else
                res->entries++;
}

struct walk_root {
        dev_t dev;
        uint64_t mnt_id;
        int64_t fs_group;
        bool read_only;
};

/* The children of the directory fd, deepest first; the directory itself is changed by the caller. Each entry is
 * opened O_PATH|O_NOFOLLOW relative to its parent's fd, checked with statx on that fd and changed through it:
 * a name swapped for a symlink between the check and the change cannot redirect the change (issue 26). */
static int walk(int fd, const struct walk_root *root, unsigned depth, struct vol_ownership_result *res) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;

        if (depth > VOL_OWNERSHIP_MAX_DEPTH) {
                close(fd);
                return -ELOOP;
        }
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        while ((e = readdir(d))) {
                _cleanup_close_ int efd = -EBADF;
                struct obj o;

                if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                        continue;
                efd = openat(dirfd(d), e->d_name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (efd < 0 || obj_stat(efd, &o) < 0) {
                        res->failures++;
                        continue;
                }
                if (S_ISLNK(o.mode))
                        continue; /* never followed, never changed */
                if (o.dev != root->dev || o.mnt_id != root->mnt_id)
                        continue; /* another mount below the volume: not ours */
                if (S_ISDIR(o.mode)) {
                        /* the same directory, readable: reopened through the fd checked, not by name */
                        int cfd = openat(efd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (cfd < 0)
                                res->failures++;
                        else {
                                int k = walk(cfd, root, depth + 1, res);
                                if (k == -ELOOP)
                                        return k;
                        }
                }
                change_obj(efd, &o, root->fs_group, root->read_only, res);
        }
        return 0;
}

int vol_ownership_apply(const char *path, int64_t fs_group, const char *policy, bool read_only,
                        struct vol_ownership_result *ret, struct ck_error **ret_error) {
        struct vol_ownership_result res = {};
        _cleanup_close_ int fd = -EBADF;
        struct walk_root root;
        struct stat st;
        struct obj o;
        int r;

        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_PATH);
        if (fd < 0)
                return ck_error_set(ret_error, -errno, "cannot open %s: %m", path);
        r = obj_stat(fd, &o);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot stat %s: %s", path, strerror(-r));
        st = (struct stat) { .st_mode = o.mode, .st_uid = o.uid, .st_gid = o.gid, .st_dev = o.dev };
        if (vol_ownership_policy_on_root_mismatch(policy) && !vol_ownership_root_mismatch(&st, fs_group, read_only)) {
                res.skipped = true;
                *ret = res;
                return 0;
        }
        root = (struct walk_root) { .dev = o.dev, .mnt_id = o.mnt_id, .fs_group = fs_group, .read_only = read_only };
        if (S_ISDIR(o.mode)) {
                int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        return ck_error_set(ret_error, -errno, "cannot open %s: %m", path);
                r = walk(dfd, &root, 0, &res);
                if (r < 0)
                        return ck_error_set(ret_error, r, "cannot change the ownership below %s: %s", path,
                                            r == -ELOOP ? "too deep" : strerror(-r));
        }
        /* the root last (walkDeep): a crash half-way leaves it mismatching, so OnRootMismatch walks again */
        if (!S_ISLNK(o.mode))
                change_obj(fd, &o, fs_group, read_only, &res);
        *ret = res;
        return 0;
}
