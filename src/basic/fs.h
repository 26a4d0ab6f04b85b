/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Small local files: read whole (with a cap), write atomically, create directories. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

/* Read a whole regular file, refusing files larger than max_size (-EFBIG). Result is NUL-terminated. Opened
 * O_NONBLOCK, and anything but a regular file is refused (stat_verify_regular's errors), so that a FIFO or a
 * device put where a file is expected cannot block the caller. */
int read_full_file(const char *path, size_t max_size, char **ret_data, size_t *ret_size);
/* The cap every reader of /proc/self/mountinfo uses. A node with thousands of mounts (pods' volumes, containers'
 * rootfs with long overlay option strings, network namespaces) passes 1 MiB; refusing the file then stopped
 * the kubelet at start. */
#define PROC_MOUNTINFO_MAX (16u * 1024u * 1024u)
/* The same, path relative to the directory dirfd (or AT_FDCWD). */
int read_full_file_at(int dirfd, const char *path, size_t max_size, char **ret_data, size_t *ret_size);
/* The same from an open fd (its position on): a regular file only (-EISDIR, -EBADFD otherwise), at most max_size
 * bytes (-EFBIG, also when it grows past that while read). */
int read_full_fd(int fd, size_t max_size, char **ret_data, size_t *ret_size);
/* Write atomically (temp file + rename) with O_CLOEXEC. */
int write_file_atomic(const char *path, const void *data, size_t size, int mode);
int mkdir_p(const char *path, int mode);

struct open_how;
/* openat2(2) with how, retried a few times on EAGAIN (a concurrent rename raced with a ".." check) and EINTR; the fd
 * or a negative errno. */
int openat2_retry(int rootfd, const char *rel, const struct open_how *how);
/* openat2(2) of rel below the directory rootfd, never leaving it (RESOLVE_BENEATH: absolute symlinks and ".."
 * out of it fail with -EXDEV) and never through /proc magic links; flags as open(2), O_CLOEXEC always added.
 * Retries a few times on EAGAIN (a concurrent rename raced with the ".." check). */
int openat2_beneath(int rootfd, const char *rel, uint64_t flags);

/* 0 for a regular file; -EISDIR (a directory), -ELOOP (a symlink) or -EBADFD (anything else: FIFO, socket,
 * device), as systemd's stat_verify_regular. */
int fd_verify_regular(int fd);

/* Open path for reading, O_CLOEXEC|O_NOCTTY|O_NONBLOCK, and only if it is a regular file (fd_verify_regular's
 * errors), so that a FIFO or a device in its place cannot block. The fd, or a negative errno. */
int open_regular(const char *path);

/* Open for reading a regular file below rootfd in a tree that someone else (a pod) may write: never outside it,
 * through no symlink at all (RESOLVE_NO_SYMLINKS: neither the last component nor a directory on the way), with
 * O_NONBLOCK|O_NOFOLLOW|O_NOCTTY so that a FIFO or a device in its place cannot block, and only a regular file
 * (fd_verify_regular's errors). The fd, or a negative errno. */
int open_regular_beneath(int rootfd, const char *rel);

/* Remove name below the directory pfd (or AT_FDCWD; name may then be a path) and everything below it, in a tree
 * that someone else (a pod) may write while this runs (rmtree.c):
 * - iterative: no recursion on the C stack and no depth limit (directory fds are held up to a bound, deeper
 *   levels are reopened from their parent and checked to be the same directory, by device and inode);
 * - never crosses a mount point (each directory opened with openat2 RESOLVE_NO_XDEV|RESOLVE_NO_SYMLINKS|
 *   RESOLVE_BENEATH, relative to its parent's fd: a mount point, bind mounts of the same filesystem included,
 *   fails with EXDEV without being entered, and is left with -EBUSY);
 * - acts on the objects checked: every unlink and rmdir is relative to the fd of a directory opened O_NOFOLLOW
 *   and fstat'ed, so a symlink swapped in is removed itself, never followed.
 * A missing entry counts as removed. The first error is returned, but everything else is still removed; an entry
 * that failed is not retried within this call. Slow on a big tree: call it from a worker thread. */
int fs_remove_tree_at(int pfd, const char *name);
/* The same, stopping with -ECANCELED (what is left stays) as soon as *cancel (may be NULL) is true: a kubelet that
 * stops does not wait for a million files. */
int fs_remove_tree_at_cancellable(int pfd, const char *name, const _Atomic bool *cancel);

/* tests only: called before each entry is acted on (the fuzz and race tests swap it for a symlink there) */
extern void (*fs_remove_tree_test_hook)(int dirfd, const char *name);
