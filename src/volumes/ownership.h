/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* fsGroup ownership of a volume (pkg/volume/volume_linux.go SetVolumeOwnership): every file and directory below
 * the volume's root, deepest first, gets the group fsGroup (its owner kept) and the group read/write bits (read
 * only for a read-only volume), directories also the group execute and setgid bits; symlinks are left alone.
 * With fsGroupChangePolicy OnRootMismatch the walk is skipped when the root already has the group and the bits.
 *
 * vol_ownership_apply() walks the tree and can take long on a big volume: it runs on a worker thread, never on
 * the event loop. It does not follow symlinks nor cross onto another mount (device and mount id), and is bounded in
 * depth. The tree is pod-writable: every entry is opened O_PATH|O_NOFOLLOW relative to its parent's fd, checked
 * with statx on that fd and changed through it (fchownat/fchmodat2 AT_EMPTY_PATH, or /proc/self/fd/N), so a name
 * swapped for a symlink between the check and the change never redirects a chown or chmod (issue 26). */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

struct ck_error;

#define VOL_OWNERSHIP_MAX_DEPTH 512

/* requiresPermissionChange: does the root (st) need the recursive change? */
bool vol_ownership_root_mismatch(const struct stat *st, int64_t fs_group, bool read_only);
/* changeFilePermission's new mode for an entry with mode `mode` (the file type bits included). */
mode_t vol_ownership_mode(mode_t mode, bool read_only);
/* Is the policy one that may skip the walk ("OnRootMismatch")? NULL (unset) and "Always" walk every time. */
bool vol_ownership_policy_on_root_mismatch(const char *policy);

struct vol_ownership_result {
        bool skipped;      /* OnRootMismatch and the root matched: nothing was walked */
        uint64_t entries;  /* entries changed */
        uint64_t failures; /* entries whose chown or chmod failed (logged by the caller; as upstream, not fatal) */
};

/* Blocking: run it on a worker thread. -ENOENT/-ENOTDIR... when the root cannot be opened, -ELOOP past
 * VOL_OWNERSHIP_MAX_DEPTH; chown/chmod failures of single entries are counted, not fatal. */
int vol_ownership_apply(const char *path, int64_t fs_group, const char *policy, bool read_only,
                        struct vol_ownership_result *ret, struct ck_error **ret_error);
