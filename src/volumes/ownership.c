/* SPDX-License-Identifier: Apache-2.0 */
/* fsGroup ownership of volumes: see ownership.h. */

#include "volumes/ownership.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "basic/string.h"

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

/* one entry: its group, then its mode (after the chown, which may clear setgid on files) */
static void change_entry(int dfd, const char *name, const struct stat *st, int64_t fs_group, bool read_only,
                         struct vol_ownership_result *res) {
        bool failed = false;

        if (S_ISLNK(st->st_mode))
                return;
        if (fchownat(dfd, name, st->st_uid, (gid_t) fs_group, AT_SYMLINK_NOFOLLOW) < 0)
                failed = true;
        if (fchmodat(dfd, name, vol_ownership_mode(st->st_mode, read_only), 0) < 0)
                failed = true;
        if (failed)
                res->failures++;
        else
                res->entries++;
}

/* the children of the directory fd, deepest first; the directory itself is changed by the caller */
static int walk(int fd, dev_t dev, unsigned depth, int64_t fs_group, bool read_only, struct vol_ownership_result *res) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;
        int r = 0;

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
                struct stat st;

                if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        res->failures++;
                        continue;
                }
                if (st.st_dev != dev)
                        continue; /* another filesystem mounted below the volume: not ours */
                if (S_ISDIR(st.st_mode)) {
                        int cfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (cfd < 0)
                                res->failures++;
                        else {
                                int k = walk(cfd, dev, depth + 1, fs_group, read_only, res);
                                if (k == -ELOOP)
                                        return k;
                        }
                }
                change_entry(dirfd(d), e->d_name, &st, fs_group, read_only, res);
        }
        return r;
}

int vol_ownership_apply(const char *path, int64_t fs_group, const char *policy, bool read_only,
                        struct vol_ownership_result *ret, struct ck_error **ret_error) {
        struct vol_ownership_result res = {};
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_PATH);
        if (fd < 0)
                return ck_error_set(ret_error, -errno, "cannot open %s: %m", path);
        if (fstat(fd, &st) < 0)
                return ck_error_set(ret_error, -errno, "cannot stat %s: %m", path);
        if (vol_ownership_policy_on_root_mismatch(policy) && !vol_ownership_root_mismatch(&st, fs_group, read_only)) {
                res.skipped = true;
                *ret = res;
                return 0;
        }
        if (S_ISDIR(st.st_mode)) {
                int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        return ck_error_set(ret_error, -errno, "cannot open %s: %m", path);
                r = walk(dfd, st.st_dev, 0, fs_group, read_only, &res);
                if (r < 0)
                        return ck_error_set(ret_error, r, "cannot change the ownership below %s: %s", path,
                                            r == -ELOOP ? "too deep" : strerror(-r));
        }
        /* the root last (walkDeep): a crash half-way leaves it mismatching, so OnRootMismatch walks again */
        {
                char proc[64];
                bool failed = false;
                snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
                if (!S_ISLNK(st.st_mode)) {
                        if (fchownat(fd, "", st.st_uid, (gid_t) fs_group, AT_EMPTY_PATH) < 0)
                                failed = true;
                        if (chmod(proc, vol_ownership_mode(st.st_mode, read_only)) < 0)
                                failed = true;
                        if (failed)
                                res.failures++;
                        else
                                res.entries++;
                }
        }
        *ret = res;
        return 0;
}
