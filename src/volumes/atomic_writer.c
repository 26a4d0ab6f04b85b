/* SPDX-License-Identifier: Apache-2.0 */
/* The atomic writer: see atomic_writer.h. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "volumes/atomic_writer.h"

#define DATA_DIR_NAME "..data"
#define DATA_DIR_TMP_NAME "..data_tmp"
#define MAX_FILE_SIZE (64u * 1024 * 1024)

void vol_payload_done(struct vol_payload *p) {
        if (!p)
                return;
        for (size_t i = 0; i < p->n; i++) {
                free(p->files[i].path);
                free(p->files[i].data);
        }
        free(p->files);
        *p = (struct vol_payload) {};
}

int vol_payload_add(struct vol_payload *p, const char *path, const void *data, size_t size, int mode) {
        struct vol_file *f = NULL, *n;
        char *pc, *dc;

        pc = strdup(path);
        dc = malloc(size + 1);
        if (!pc || !dc) {
                free(pc);
                free(dc);
                return -ENOMEM;
        }
        memcpy(dc, data, size);
        dc[size] = '\0';
        for (size_t i = 0; i < p->n; i++)
                if (streq(p->files[i].path, path))
                        f = &p->files[i];
        if (f) {
                free(f->path);
                free(f->data);
        } else {
                n = reallocarray(p->files, p->n + 1, sizeof(*n));
                if (!n) {
                        free(pc);
                        free(dc);
                        return -ENOMEM;
                }
                p->files = n;
                f = &p->files[p->n++];
        }
        *f = (struct vol_file) { .path = pc, .data = dc, .size = size, .mode = mode };
        return 0;
}

/* validatePath: relative, no ".." element, not starting with "..", at most 4096 bytes, elements <= 255 */
static bool valid_path(const char *p) {
        const char *s = p;
        if (isempty(p) || p[0] == '/' || strncmp(p, "..", 2) == 0 || strlen(p) > 4096)
                return false;
        while (*s) {
                size_t n = strcspn(s, "/");
                if ((n == 2 && s[0] == '.' && s[1] == '.') || n > 255)
                        return false;
                s += n;
                while (*s == '/')
                        s++;
        }
        return true;
}

/* the first path element */
static char *first_element(const char *p) {
        return strndup(p, strcspn(p, "/"));
}

/* Does the version directory dfd hold exactly this payload (contents and modes)? The version directory is what
 * the containers see: anything may have been put there. Files are opened through no symlink, without blocking,
 * and only regular ones compare; anything else is a mismatch, and the new version replaces it. */
static bool payload_matches(int dfd, const struct vol_payload *p) {
        for (size_t i = 0; i < p->n; i++) {
                _cleanup_close_ int fd = open_regular_beneath(dfd, p->files[i].path);
                struct stat st;
                char *buf;
                bool same;
                if (fd < 0 || fstat(fd, &st) < 0 || (size_t) st.st_size != p->files[i].size ||
                    (int) (st.st_mode & 07777) != p->files[i].mode)
                        return false;
                buf = malloc(p->files[i].size + 1);
                if (!buf)
                        return false;
                same = read(fd, buf, p->files[i].size + 1) == (ssize_t) p->files[i].size &&
                       memcmp(buf, p->files[i].data, p->files[i].size) == 0;
                free(buf);
                if (!same)
                        return false;
        }
        /* and nothing else at the top level */
        {
                _cleanup_closedir_ DIR *d = fdopendir(fcntl(dfd, F_DUPFD_CLOEXEC, 3));
                struct dirent *e;
                bool extra = false;
                if (!d)
                        return false;
                rewinddir(d);
                while (!extra && (e = readdir(d))) {
                        bool found = false;
                        if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                                continue;
                        for (size_t i = 0; i < p->n && !found; i++) {
                                size_t l = strcspn(p->files[i].path, "/");
                                found = strlen(e->d_name) == l && strncmp(p->files[i].path, e->d_name, l) == 0;
                        }
                        extra = !found;
                }
                return !extra;
        }
}

static int remove_tree(int dfd, const char *name, unsigned depth) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *e;

        if (depth > 64)
                return -ELOOP;
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return unlinkat(dfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        fd = -EBADF;
        while ((e = readdir(d))) {
                struct stat st;
                if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISDIR(st.st_mode))
                        (void) remove_tree(dirfd(d), e->d_name, depth + 1);
                else
                        (void) unlinkat(dirfd(d), e->d_name, 0);
        }
        d = safe_closedir(d);
        return unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

static int write_version(int dirfd_, const char *ts, const struct vol_payload *p) {
        _cleanup_close_ int vfd = openat(dirfd_, ts, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (vfd < 0)
                return -errno;
        for (size_t i = 0; i < p->n; i++) {
                _cleanup_free_ char *copy = strdup(p->files[i].path);
                _cleanup_close_ int fd = -EBADF;
                int parent = vfd;
                _cleanup_close_ int pfd = -EBADF;
                char *slash;

                if (!copy)
                        return -ENOMEM;
                /* create the directories of nested paths, 0755 */
                for (char *s = copy; (slash = strchr(s, '/')); s = slash + 1) {
                        int nfd;
                        *slash = '\0';
                        if (mkdirat(parent, s, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        nfd = openat(parent, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (nfd < 0)
                                return -errno;
                        if (pfd >= 0)
                                close(pfd);
                        parent = pfd = nfd;
                        while (slash[1] == '/')
                                slash++;
                }
                fd = openat(parent,
                            strrchr(p->files[i].path, '/') ? strrchr(p->files[i].path, '/') + 1 : p->files[i].path,
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0)
                        return -errno;
                for (size_t off = 0; off < p->files[i].size;) {
                        ssize_t k = write(fd, p->files[i].data + off, p->files[i].size - off);
                        if (k < 0) {
                                if (errno == EINTR)
                                        continue;
                                return -errno;
                        }
                        off += (size_t) k;
                }
                if (fchmod(fd, (mode_t) p->files[i].mode) < 0)
                        return -errno;
        }
        if (fchmod(vfd, 0755) < 0)
                return -errno;
        return 0;
}

int vol_atomic_write(const char *dir, const struct vol_payload *p) {
        _cleanup_close_ int dfd = -EBADF;
        char old[256] = "", ts[128];
        ssize_t l;
        int r;

        for (size_t i = 0; i < p->n; i++)
                if (!valid_path(p->files[i].path) || p->files[i].size > MAX_FILE_SIZE || p->files[i].mode < 0 ||
                    p->files[i].mode > 07777)
                        return -EINVAL;
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;

        l = readlinkat(dfd, DATA_DIR_NAME, old, sizeof(old) - 1);
        if (l > 0)
                old[l] = '\0';
        else
                old[0] = '\0';
        if (old[0] && (strchr(old, '/') || strncmp(old, "..", 2) != 0))
                old[0] = '\0'; /* not one of ours: never followed */

        if (old[0]) {
                _cleanup_close_ int ofd = openat(dfd, old, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (ofd >= 0 && payload_matches(ofd, p))
                        goto user_visible;
        }

        /* a new version directory: ..YYYY_MM_DD_HH_MM_SS.<random> */
        {
                struct timespec now;
                struct tm tm;
                clock_gettime(CLOCK_REALTIME, &now);
                gmtime_r(&now.tv_sec, &tm);
                for (int attempt = 0;; attempt++) {
                        snprintf(ts, sizeof(ts), "..%04d_%02d_%02d_%02d_%02d_%02d.%09ld%d", tm.tm_year + 1900,
                                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, now.tv_nsec, attempt);
                        if (mkdirat(dfd, ts, 0700) >= 0)
                                break;
                        if (errno != EEXIST || attempt > 100)
                                return -errno;
                }
        }
        r = write_version(dfd, ts, p);
        if (r < 0) {
                (void) remove_tree(dfd, ts, 0);
                return r;
        }
        /* switch ..data */
        (void) unlinkat(dfd, DATA_DIR_TMP_NAME, 0);
        if (symlinkat(ts, dfd, DATA_DIR_TMP_NAME) < 0 || renameat(dfd, DATA_DIR_TMP_NAME, dfd, DATA_DIR_NAME) < 0) {
                r = -errno;
                (void) unlinkat(dfd, DATA_DIR_TMP_NAME, 0);
                (void) remove_tree(dfd, ts, 0);
                return r;
        }
        log_v(4, "%s: switched ..data to %s", dir, ts);

user_visible:
        /* the user-visible names: create the missing ones, remove the ones gone from the payload */
        for (size_t i = 0; i < p->n; i++) {
                _cleanup_free_ char *first = first_element(p->files[i].path), *target = NULL;
                struct stat st;
                if (!first || asprintf(&target, DATA_DIR_NAME "/%s", first) < 0)
                        return -ENOMEM;
                if (fstatat(dfd, first, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                        continue;
                if (symlinkat(target, dfd, first) < 0 && errno != EEXIST)
                        return -errno;
        }
        {
                _cleanup_closedir_ DIR *d = fdopendir(fcntl(dfd, F_DUPFD_CLOEXEC, 3));
                struct dirent *e;
                if (!d)
                        return -errno;
                rewinddir(d); /* the duplicate shares dfd's offset */
                while ((e = readdir(d))) {
                        bool keep = false;
                        struct stat st;
                        if (strncmp(e->d_name, "..", 2) == 0 || streq(e->d_name, "."))
                                continue;
                        for (size_t i = 0; i < p->n && !keep; i++) {
                                size_t fl = strcspn(p->files[i].path, "/");
                                keep = strlen(e->d_name) == fl && strncmp(p->files[i].path, e->d_name, fl) == 0;
                        }
                        if (!keep && fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISLNK(st.st_mode))
                                (void) unlinkat(dirfd(d), e->d_name, 0);
                }
        }
        /* the old version (and versions left by a crash) */
        {
                char cur[256] = "";
                _cleanup_closedir_ DIR *d = fdopendir(fcntl(dfd, F_DUPFD_CLOEXEC, 3));
                struct dirent *e;
                l = readlinkat(dfd, DATA_DIR_NAME, cur, sizeof(cur) - 1);
                if (l > 0)
                        cur[l] = '\0';
                if (!d)
                        return -errno;
                rewinddir(d);
                while ((e = readdir(d))) {
                        if (strncmp(e->d_name, "..", 2) != 0 || streq(e->d_name, "..") ||
                            streq(e->d_name, DATA_DIR_NAME) || streq(e->d_name, cur) || e->d_type != DT_DIR)
                                continue;
                        (void) remove_tree(dirfd(d), e->d_name, 0);
                }
        }
        return 0;
}
