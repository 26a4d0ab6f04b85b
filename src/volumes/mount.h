/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Mounting and unmounting volumes (k8s.io/mount-utils): bind mounts of node paths (local volumes), the host's
 * mount helpers for network filesystems (mount -t nfs), unmounts. Every function here may block for long (a hung
 * server, a slow device): they run on a worker thread or in a child process, never on the event loop. Errors come
 * with mount-utils' wording. */

#include <stdbool.h>
#include <stdint.h>

struct ck_error;

#define VOL_MOUNT_OUTPUT_MAX 4096 /* bytes of a mount helper's output kept for the error */

/* Bind mount source onto target (a directory, created 0750 when missing), then remount it read-only when asked.
 * Nothing is done when target is already a mount point (idempotent: a retry after a crash mounts nothing twice). */
int vol_bind_mount(const char *source, const char *target, bool read_only, struct ck_error **ret_error);

/* Run the host's mount(8): mount -t fstype [-o options] source target, target created when missing; its output
 * (stdout and stderr, capped) goes into the error. The child is killed after timeout_usec. Nothing is done when
 * target is already a mount point. */
int vol_helper_mount(const char *fstype, const char *source, const char *target, const char *options,
                     uint64_t timeout_usec, struct ck_error **ret_error);

/* Unmount target when it is a mount point, then remove the directory (only when it is no longer a mount point,
 * never recursively). A target that does not exist is fine. */
int vol_unmount_and_remove(const char *target, struct ck_error **ret_error);

/* Remove the directory dir when it is not a mount point (rmdir: only an empty one), then its file name_in_parent
 * (vol_data.json) and the parent directory, as upstream's removeMountDir. Missing entries are fine. */
int vol_remove_mount_dir(const char *dir, const char *data_file, struct ck_error **ret_error);
