/* SPDX-License-Identifier: Apache-2.0 */
/* Rotation names and the rotation's file work (see rotation.h). The file functions run on worker threads: they
 * use nothing but their arguments and the filesystem. */
#include "logs/rotation.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "basic/fs.h"
#include "basic/string.h"
#include "basic/strv.h"

#define EXT4_MAX_FILENAME_LEN 255
#define COMPRESS_CHUNK (256 * 1024)
#define MAX_ROTATED 4096 /* far more than any MaxFiles: a directory stuffed with names is not read to the end */

char *logs_rotated_name(const char *log, int64_t realtime_usec) {
        time_t t = (time_t) (realtime_usec / 1000000);
        char stamp[32];
        struct tm tm;
        char *s;

        localtime_r(&t, &tm);
        strftime(stamp, sizeof(stamp), LOGS_TIMESTAMP_FORMAT, &tm);
        if (asprintf(&s, "%s.%s", log, stamp) < 0)
                return NULL;
        return s;
}

void logs_filter_unused(char *const *names, size_t n, bool *in_use) {
        for (size_t i = 0; i < n; i++) {
                in_use[i] = true;
                if (endswith(names[i], LOGS_TMP_SUFFIX)) {
                        in_use[i] = false;
                        continue;
                }
                if (endswith(names[i], LOGS_COMPRESS_SUFFIX))
                        continue;
                /* already compressed: the .gz is the one in use */
                for (size_t k = 0; k < n; k++) {
                        size_t a = strlen(names[i]);
                        if (k != i && strlen(names[k]) == a + strlen(LOGS_COMPRESS_SUFFIX) &&
                            strneq(names[k], names[i], a) && streq(names[k] + a, LOGS_COMPRESS_SUFFIX)) {
                                in_use[i] = false;
                                break;
                        }
                }
        }
}

size_t logs_excess_count(size_t n, int max_files) {
        size_t keep = max_files - 2 > 0 ? (size_t) (max_files - 2) : 0;
        return n > keep ? n - keep : 0;
}

char *logs_link_path(const char *dir, const char *pod, const char *ns, const char *container,
                     const char *container_id) {
        _cleanup_free_ char *prefix = NULL;
        size_t tail = strlen("-") + strlen(container_id) + strlen(".log");
        char *s;

        /* the container id is never cut (issue 26): upstream's logSymlink cuts the whole name at 255 bytes, so two
         * containers of pods whose names share their first ~250 bytes got the same link, one log shipped as the
         * other's. Here the <pod>_<namespace>_<container> part is cut instead, and the id keeps names apart. */
        if (tail > EXT4_MAX_FILENAME_LEN - 1) {
                errno = ENAMETOOLONG;
                return NULL; /* no real container id is that long: refused, never truncated */
        }
        if (asprintf(&prefix, "%s_%s_%s", pod, ns, container) < 0)
                return NULL;
        if (strlen(prefix) + tail > EXT4_MAX_FILENAME_LEN)
                prefix[EXT4_MAX_FILENAME_LEN - tail] = '\0';
        if (asprintf(&s, "%s/%s-%s.log", dir, prefix, container_id) < 0)
                return NULL;
        return s;
}

int logs_link_container_id(const char *name, char **ret) {
        const char *dash, *end;
        size_t n;

        if (!endswith(name, ".log"))
                return -EINVAL;
        end = name + strlen(name) - strlen(".log");
        dash = memrchr(name, '-', (size_t) (end - name));
        if (!dash)
                return -EINVAL;
        n = (size_t) (end - dash - 1);
        if (n == 0)
                return -EINVAL;
        for (const char *c = dash + 1; c < end; c++)
                if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
                        return -EINVAL;
        *ret = strndup(dash + 1, n);
        return *ret ? 0 : -ENOMEM;
}

/* ---------------------------------------------------------------- file work */

static int write_all_gz(gzFile gz, const char *buf, size_t n) {
        while (n > 0) {
                int w = gzwrite(gz, buf, (unsigned) MIN(n, (size_t) INT_MAX));
                if (w <= 0)
                        return -EIO;
                buf += w;
                n -= (size_t) w;
        }
        return 0;
}

int logs_compress(const char *log) {
        _cleanup_free_ char *tmp = NULL, *gzname = NULL, *buf = NULL;
        _cleanup_close_ int in = -1;
        int out, r = 0;
        gzFile gz;

        if (asprintf(&tmp, "%s%s", log, LOGS_TMP_SUFFIX) < 0 ||
            asprintf(&gzname, "%s%s", log, LOGS_COMPRESS_SUFFIX) < 0)
                return -ENOMEM;
        buf = malloc(COMPRESS_CHUNK);
        if (!buf)
                return -ENOMEM;
        in = open(log, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (in < 0)
                return -errno;
        out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (out < 0)
                return -errno;
        gz = gzdopen(out, "wb");
        if (!gz) {
                close(out);
                unlink(tmp);
                return -ENOMEM;
        }
        for (;;) {
                ssize_t n = read(in, buf, COMPRESS_CHUNK);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                if (n == 0)
                        break;
                r = write_all_gz(gz, buf, (size_t) n);
                if (r < 0)
                        break;
        }
        if (gzclose(gz) != Z_OK && r >= 0)
                r = -EIO;
        if (r >= 0 && rename(tmp, gzname) < 0)
                r = -errno;
        if (r < 0) {
                unlink(tmp);
                return r;
        }
        if (unlink(log) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int logs_list_rotated(const char *log, char ***ret) {
        _cleanup_free_ char *dir = strdup(log);
        _cleanup_strv_free_ char **l = NULL;
        const char *base;
        char *slash;
        size_t blen, n = 0;
        DIR *d;
        struct dirent *e;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (!slash)
                return -EINVAL;
        *slash = '\0';
        base = slash + 1;
        blen = strlen(base);
        d = opendir(*dir ? dir : "/");
        if (!d)
                return -errno;
        while ((e = readdir(d)) && n < MAX_ROTATED) {
                char *p;
                if (strlen(e->d_name) <= blen + 1 || !strneq(e->d_name, base, blen) || e->d_name[blen] != '.')
                        continue;
                if (asprintf(&p, "%s/%s", dir, e->d_name) < 0 || strv_push(&l, p) < 0) {
                        closedir(d);
                        return -ENOMEM;
                }
                n++;
        }
        closedir(d);
        if (n > 1)
                qsort(l, n, sizeof(*l), cmp_str);
        if (!l && !(l = calloc(1, sizeof(*l))))
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}

int logs_prepare_rotation(const char *log, int max_files) {
        _cleanup_strv_free_ char **all = NULL;
        _cleanup_free_ bool *in_use = NULL;
        _cleanup_free_ char **used = NULL;
        size_t n, n_used = 0, excess;
        int r;

        r = logs_list_rotated(log, &all);
        if (r < 0)
                return r;
        n = strv_length(all);
        in_use = calloc(n + 1, sizeof(*in_use));
        used = calloc(n + 1, sizeof(*used));
        if (!in_use || !used)
                return -ENOMEM;
        /* cleanupUnusedLogs: what an interrupted rotation left */
        logs_filter_unused(all, n, in_use);
        for (size_t i = 0; i < n; i++) {
                if (in_use[i]) {
                        used[n_used++] = all[i];
                        continue;
                }
                if (unlink(all[i]) < 0 && errno != ENOENT)
                        return -errno;
        }
        /* removeExcessLogs: the oldest first (the names sort by their timestamps) */
        excess = logs_excess_count(n_used, max_files);
        for (size_t i = 0; i < excess; i++)
                if (unlink(used[i]) < 0 && errno != ENOENT)
                        return -errno;
        /* compress what is left uncompressed */
        for (size_t i = excess; i < n_used; i++) {
                if (endswith(used[i], LOGS_COMPRESS_SUFFIX))
                        continue;
                r = logs_compress(used[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* "<n>.log" or "<n>.log.<anything>": n */
static bool parse_instance(const char *name, int *ret) {
        char *end;
        long v;

        if (name[0] < '0' || name[0] > '9')
                return false;
        errno = 0;
        v = strtol(name, &end, 10);
        if (errno || v < 0 || v > INT32_MAX || !startswith(end, ".log") || (end[4] != '\0' && end[4] != '.'))
                return false;
        *ret = (int) v;
        return true;
}

int logs_prune_instances(const char *dir, const int *keep, size_t n_keep) {
        struct dirent *e;
        int newest = -1, removed = 0;
        DIR *d;

        for (size_t i = 0; i < n_keep; i++)
                newest = MAX(newest, keep[i]);
        d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((e = readdir(d))) {
                bool kept = false;
                int n;

                if (!parse_instance(e->d_name, &n) || n >= newest)
                        continue;
                for (size_t i = 0; i < n_keep && !kept; i++)
                        kept = keep[i] == n;
                if (!kept && unlinkat(dirfd(d), e->d_name, 0) == 0)
                        removed++;
        }
        closedir(d);
        return removed;
}

int logs_remove_tree(const char *path) {
        return fs_remove_tree_at(AT_FDCWD, path);
}
