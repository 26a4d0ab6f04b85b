/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What reconstruction finds on the node (reconstruct.c), exposed for the unit tests. */

#include <stdbool.h>
#include <stddef.h>

#include "volumes/mountinfo.h"

struct volmgr_found {
        int kind;                          /* enum vm_kind */
        bool global;                       /* a CSI global mount directory (staging), not a pod's */
        char *pod_uid;                     /* NULL for global */
        char *spec_name;                   /* the directory's name (pods), NULL for global */
        char *driver, *handle, *lifecycle; /* CSI, from vol_data.json */
        char *path;                        /* the mount point */
        bool mounted;                      /* per the mount table */
};

/* Read <root>/pods/<uid>/volumes/{kubernetes.io~csi,kubernetes.io~local-volume,kubernetes.io~nfs}/<name> and
 * <root>/plugins/kubernetes.io/csi/<driver>/<sha>/ with the mount table mi (may be NULL: nothing mounted).
 * Blocking: a worker thread's job. */
int volmgr_reconstruct_scan(const char *root_dir, const struct vol_mountinfo *mi, struct volmgr_found **ret,
                            size_t *ret_n);
void volmgr_found_free(struct volmgr_found *l, size_t n);
/* the unique volume name the desired state gives the same volume */
char *volmgr_found_unique_name(const struct volmgr_found *f);
