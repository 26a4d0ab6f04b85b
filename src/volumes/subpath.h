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
#include "container/build.h"

/* subPathExpr expansion with the container's env values (expansion.Expand: $(VAR), $$ → $, unknown
 * references kept as written). Caller frees. */
int vol_subpath_expand(const struct container *c, const char *expr, char **ret);

/* Resolve "sub" below the directory rootfd, creating missing directories (mode: that of the root), and return
 * an O_PATH descriptor of the result. -EXDEV: it leaves the root; -ELOOP: too many links. */
int vol_subpath_open(int rootfd, const char *sub, int *ret_fd);

/* Prepare the bind mount of mount index idx of container c, whose volume lives at volume_path; *ret is the
 * host path to give to the runtime. */
int vol_subpath_prepare(const struct pod *pod, const struct container *c, size_t idx, const char *volume_path,
                        const struct kc_build_context *ctx, char **ret);

/* Unmount every bind mount under <pod_dir>/volume-subpaths (lazily) before the directory is removed. */
int vol_subpath_unmount_all(const char *pod_dir);
