/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Container log rotation as upstream's container log manager (pkg/kubelet/logs) does it on disk, and the
 * /var/log/containers links: names, ordering, and the file work that runs on a worker thread (never on the loop).
 *
 * A container's live log <dir>/<n>.log is rotated by renaming it to <n>.log.<YYYYMMDD-HHMMSS> (local time, as
 * Go formats time.Now()) and asking the runtime to reopen it. Before that, the earlier rotated files are put in
 * order: temporary files (*.tmp) and files already compressed (x next to x.gz) are removed, the oldest are removed
 * so that at most MaxFiles-2 remain (the live file and the one about to be rotated make MaxFiles), and the rest
 * are compressed to *.gz (through *.tmp, then renamed). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOGS_TIMESTAMP_FORMAT "%Y%m%d-%H%M%S" /* Go's "20060102-150405" */
#define LOGS_COMPRESS_SUFFIX ".gz"
#define LOGS_TMP_SUFFIX ".tmp"

/* "<log>.<timestamp>" for the given wall-clock time. NULL on OOM. */
char *logs_rotated_name(const char *log, int64_t realtime_usec);

/* filterUnusedLogs over the rotated files of one log ("<log>.*"): *.tmp files are not in use, nor an uncompressed
 * file whose .gz exists; everything else is. in_use[i] for names[i]. */
void logs_filter_unused(char *const *names, size_t n, bool *in_use);

/* How many of n rotated files (sorted oldest first) removeExcessLogs removes: at most MaxFiles-2 stay. */
size_t logs_excess_count(size_t n, int max_files);

/* The link log shippers read: <dir>/<pod>_<namespace>_<container>-<container id>.log, at most 255 bytes (ext4's
 * limit, as upstream's logSymlink) by cutting the <pod>_<namespace>_<container> part, never the container id, so
 * that two containers never share a link. NULL on OOM, or (errno ENAMETOOLONG) for an id that leaves no room. */
char *logs_link_path(const char *dir, const char *pod, const char *ns, const char *container, const char *container_id);
/* The container id at the end of such a link name ("...-<64 hex>.log"); -EINVAL when there is none. */
int logs_link_container_id(const char *name, char **ret);

/* ---- file work, for a worker thread ---- */

/* compressLog: log → log.tmp (gzip) → log.gz, then log is removed; the .tmp is removed on failure. */
int logs_compress(const char *log);

/* The rotated files of log ("<log>.*"), sorted. */
int logs_list_rotated(const char *log, char ***ret);

/* Everything rotateLog does before the live file is renamed: unused files removed, excess removed, the rest
 * compressed. */
int logs_prepare_rotation(const char *log, int max_files);

/* In a container's log directory, remove the files of instances that are gone: "<n>.log" and its rotated files
 * "<n>.log.*" for every n that is not in keep and is older (smaller) than the newest kept one (anything newer may
 * be an instance being created right now). The number of files removed, or a negative errno. */
int logs_prune_instances(const char *dir, const int *keep, size_t n_keep);

/* Remove a directory tree without following symlinks (a pod's log directory); depth-bounded. */
int logs_remove_tree(const char *path);
