/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The atomic writer of configMap, secret, downwardAPI and projected volumes (pkg/volume/util/atomic_writer.go):
 *
 *   <dir>/..2024_01_02_15_04_05.<random>/<path>   the files of one version, with their modes
 *   <dir>/..data -> ..2024_...                    swapped by rename(2): readers see one version or the other
 *   <dir>/<first path element> -> ..data/<first path element>   the user-visible names
 *
 * A write with the same content as the current version changes nothing; otherwise the new version is written
 * completely, ..data is switched, user-visible names no longer in the payload are removed, then the old
 * version directory. A crash at any point leaves either version readable, and the next write converges. */

#include <stddef.h>

struct vol_file {
        char *path; /* relative, no ".." element, not starting with ".." */
        char *data;
        size_t size;
        int mode;
};

struct vol_payload {
        struct vol_file *files;
        size_t n;
};

void vol_payload_done(struct vol_payload *p);
/* copies path and data; replaces an entry with the same path (later sources win, as upstream's map) */
int vol_payload_add(struct vol_payload *p, const char *path, const void *data, size_t size, int mode);

/* dir must exist. Returns 0, or a negative errno (-EINVAL for an invalid path in the payload). */
int vol_atomic_write(const char *dir, const struct vol_payload *p);
