/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The mount table as the kernel describes it in /proc/self/mountinfo (proc(5)), as mount-utils reads it for
 * IsLikelyNotMountPoint and the volume manager's reconstruction. Parsing is pure; reading the file is capped. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/fs.h"

#define VOL_MOUNTINFO_MAX PROC_MOUNTINFO_MAX /* the file is read whole, at most this much */

struct vol_mount {
        int id, parent_id;
        unsigned major, minor;
        char *root;        /* the mounted path inside its filesystem ("/" for a whole filesystem) */
        char *mount_point; /* unescaped (\040 is a space) */
        char *options;     /* per-mount options: "rw,relatime" */
        char *fstype;
        char *source; /* "/dev/loop3", "server:/export", "tmpfs" */
        char *super_options;
};

struct vol_mountinfo {
        struct vol_mount *mounts;
        size_t n;
};

/* Parse the text of a mountinfo file. Lines that do not parse are skipped (-EBADMSG only when none does and the
 * text is not empty). */
int vol_mountinfo_parse(const char *text, struct vol_mountinfo *ret);
/* Read and parse /proc/self/mountinfo (path NULL) or another file. */
int vol_mountinfo_read(const char *path, struct vol_mountinfo *ret);
void vol_mountinfo_done(struct vol_mountinfo *mi); /* accepts NULL */

/* The last mount on exactly this mount point (the visible one), or NULL. */
const struct vol_mount *vol_mountinfo_find(const struct vol_mountinfo *mi, const char *mount_point);
