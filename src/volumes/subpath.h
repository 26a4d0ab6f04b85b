/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* volumeMounts[].subPath / subPathExpr (pkg/volume/util/subpath, kubelet_pods.go makeMounts): the path inside
 * the volume is resolved from the volume root without ever leaving it (openat2 RESOLVE_BENEATH: a symlink
 * pointing out of the volume, absolute or through "..", is refused), missing directories are created with
 * mkdirat, and the resolved file descriptor itself is bind-mounted (via /proc/self/fd/N) onto
 *   <root_dir>/pods/<uid>/volume-subpaths/<volume>/<container>/<mountIndex>
 * which is the path given to the runtime: a symlink swapped in after the check cannot redirect the mount. */

#include <stddef.h>

#include "apis/pod.h"
#include "basic/error.h"
#include "container/build.h"

/* subPathExpr expansion with the container's env values (expansion.Expand: $(VAR), $$ → $, unknown
 * references kept as written). Caller frees. */
int vol_subpath_expand(const struct container *c, const char *expr, char **ret);

/* Resolve "sub" below the directory rootfd, creating missing directories (mode: that of the root), and return
 * an O_PATH descriptor of the result. -EXDEV: it leaves the root; -ELOOP: too many links. */
int vol_subpath_open(int rootfd, const char *sub, int *ret_fd);

/* One subPath bind mount, split so that nothing touching the volume's contents runs on the loop: the request is
 * made on the loop (pure: the expansion and the checks of the path as written), the bind on a worker. */
struct vol_subpath_req {
        size_t idx;         /* the volumeMount's index */
        char *volume_path;  /* the volume's host directory */
        char *sub;          /* the subPath, expanded */
        char *dir, *target; /* <root_dir>/pods/<uid>/volume-subpaths/<volume>/<container>[/<idx>] */
        char *pod_name, *container_name, *volume_name;
};
void vol_subpath_req_done(struct vol_subpath_req *q);

/* On the loop: the request of mount index idx of container c, whose volume lives at volume_path. -EINVAL for an
 * absolute subPath or one with "..". */
int vol_subpath_request(const struct pod *pod, const struct container *c, size_t idx, const char *volume_path,
                        const struct kc_build_context *ctx, struct vol_subpath_req *ret);

/* On a worker (it opens, creates and mounts in the volume, which may be a stalled network filesystem): resolve the
 * subPath inside the volume and bind the resolved fd onto q->target. On failure *ret_error may say why (caller
 * frees). */
int vol_subpath_bind(const struct vol_subpath_req *q, struct ck_error **ret_error);

/* tests only: called on the worker before each bind (a test blocks there, as a stalled NFS server would); a
 * negative return fails the bind with it */
extern int (*vol_subpath_bind_test_hook)(const struct vol_subpath_req *q);

/* Unmount every bind mount under <pod_dir>/volume-subpaths (lazily) before the directory is removed. */
int vol_subpath_unmount_all(const char *pod_dir);
