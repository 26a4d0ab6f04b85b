/* SPDX-License-Identifier: Apache-2.0 */
/* Disk usage of a directory tree a pod writes (du): see stats_dir_disk_usage in host.h. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/string.h"
#include "stats/host.h"

/* directory fds held at once: deeper levels are closed, and reopened from their parent (checked by device and
 * inode) and repositioned (seekdir) when the walk comes back to them */
#define DU_MAX_OPEN 64

struct du_level {
        DIR *d; /* NULL while closed */
        char *name;
        dev_t dev;
        ino_t ino;
        long pos; /* telldir() when closed */
};

struct du_walk {
        struct du_level *levels;
        size_t n, allocated;
        unsigned n_open;
        uint64_t bytes, inodes;
        bool incomplete;
};

static int du_open_dir_at(int pfd, const char *name) {
        struct open_how how = {
                .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                .resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
        };

        for (int attempt = 0;; attempt++) {
                long fd = syscall(SYS_openat2, pfd, name, &how, sizeof(how));
                if (fd >= 0)
                        return (int) fd;
                if ((errno == EAGAIN || errno == EINTR) && attempt < 8)
                        continue;
                return -errno;
        }
}

static void du_close(struct du_walk *w, struct du_level *l) {
        if (!l->d)
                return;
        l->pos = telldir(l->d);
        closedir(l->d);
        l->d = NULL;
        w->n_open--;
}

/* close the open level nearest the root, never 0 and never from keep on */
static void du_make_room(struct du_walk *w, size_t keep) {
        if (w->n_open < DU_MAX_OPEN)
                return;
        for (size_t i = 1; i < keep && i < w->n; i++)
                if (w->levels[i].d) {
                        du_close(w, &w->levels[i]);
                        return;
                }
}

static int du_reopen(struct du_walk *w, size_t i) {
        size_t a = i;

        while (a > 0 && !w->levels[a - 1].d)
                a--;
        for (size_t k = a; k <= i; k++) {
                struct du_level *l = &w->levels[k];
                struct stat st;
                int fd;

                if (l->d)
                        continue;
                du_make_room(w, k - 1);
                fd = du_open_dir_at(dirfd(w->levels[k - 1].d), l->name);
                if (fd < 0)
                        return fd;
                if (fstat(fd, &st) < 0 || st.st_dev != l->dev || st.st_ino != l->ino) {
                        close(fd);
                        return -ESTALE;
                }
                l->d = fdopendir(fd);
                if (!l->d) {
                        close(fd);
                        return -ENOMEM;
                }
                seekdir(l->d, l->pos);
                w->n_open++;
        }
        return 0;
}

static int du_push(struct du_walk *w, int fd, const char *name, const struct stat *st) {
        struct du_level *l;

        if (w->n == w->allocated) {
                size_t n = MAX(w->allocated * 2, (size_t) 16);
                struct du_level *nl = reallocarray(w->levels, n, sizeof(*nl));
                if (!nl)
                        return -ENOMEM;
                w->levels = nl;
                w->allocated = n;
        }
        l = &w->levels[w->n];
        *l = (struct du_level) { .dev = st->st_dev, .ino = st->st_ino };
        if (!(l->name = strdup(name)))
                return -ENOMEM;
        if (!(l->d = fdopendir(fd))) {
                free(l->name);
                return -ENOMEM;
        }
        w->n_open++;
        w->n++;
        return 0;
}

static void du_pop(struct du_walk *w) {
        struct du_level *l = &w->levels[--w->n];
        du_close(w, l);
        free(l->name);
}

static void du_count(struct du_walk *w, const struct stat *st) {
        w->bytes += (uint64_t) st->st_blocks * 512;
        w->inodes++;
}

/* one entry of the top level */
static int du_entry(struct du_walk *w, struct dirent *e) {
        struct du_level *top = &w->levels[w->n - 1];
        struct stat st;
        int fd, r;

        if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                return 0;
        if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
                du_make_room(w, w->n - 1);
                fd = du_open_dir_at(dirfd(top->d), e->d_name);
                if (fd >= 0) {
                        if (fstat(fd, &st) < 0 || st.st_dev != top->dev) {
                                close(fd);
                                return 0;
                        }
                        du_count(w, &st);
                        r = du_push(w, fd, e->d_name, &st);
                        if (r < 0)
                                close(fd);
                        return r;
                }
                if (fd == -EXDEV)
                        return 0; /* a mount point: another volume, measured (or not) on its own */
                if (fd != -ENOTDIR && fd != -ELOOP)
                        return 0; /* removed meanwhile */
        }
        if (fstatat(dirfd(top->d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0; /* removed meanwhile (log rotation) */
        if (S_ISDIR(st.st_mode))
                return 0; /* swapped for a directory meanwhile: counted at the next measurement */
        du_count(w, &st);
        return 0;
}

int stats_dir_disk_usage(const char *path, uint64_t *ret_bytes, uint64_t *ret_inodes) {
        struct du_walk w = {};
        struct stat st;
        int fd, r = 0;

        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        du_count(&w, &st);
        r = du_push(&w, fd, ".", &st);
        if (r < 0) {
                close(fd);
                return r;
        }
        while (w.n > 0 && r >= 0) {
                struct dirent *e;

                if (!w.levels[w.n - 1].d && du_reopen(&w, w.n - 1) < 0) {
                        /* replaced meanwhile: what is left of it is unknown */
                        w.incomplete = true;
                        du_pop(&w);
                        continue;
                }
                errno = 0;
                e = readdir(w.levels[w.n - 1].d);
                if (!e) {
                        if (errno != 0)
                                w.incomplete = true;
                        du_pop(&w);
                        continue;
                }
                r = du_entry(&w, e);
        }
        while (w.n > 0)
                du_pop(&w);
        free(w.levels);
        if (r < 0)
                return r;
        /* what could not be read counts as over any limit, never as nothing */
        *ret_bytes = w.incomplete ? STATS_DU_UNKNOWN : w.bytes;
        *ret_inodes = w.incomplete ? STATS_DU_UNKNOWN : w.inodes;
        return 0;
}
