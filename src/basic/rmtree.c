/* SPDX-License-Identifier: Apache-2.0 */
/* Removing a tree that a pod may write meanwhile: see fs_remove_tree_at in fs.h. */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "basic/string.h"

/* directory fds held at once; deeper levels are closed and reopened from their parent when the walk is back */
#define RMTREE_MAX_OPEN 64
/* entries that could not be removed, remembered so that a reopened directory does not retry them in this call */
#define RMTREE_MAX_FAILED 4096

void (*fs_remove_tree_test_hook)(int dirfd, const char *name) = NULL;

static bool dot_or_dot_dot(const char *s) {
        return streq(s, ".") || streq(s, "..");
}

struct level {
        DIR *d;     /* NULL while closed to save fds */
        char *name; /* in the parent level (level 0: in the caller's directory) */
        dev_t dev;
        ino_t ino;
        bool failed; /* something below could not be removed: the directory stays */
};

struct failed_entry {
        dev_t dev;
        ino_t ino;
};

struct walk {
        int top_pfd; /* the directory holding level 0 */
        struct level *levels;
        size_t n, allocated;
        unsigned n_open;
        struct failed_entry *failed;
        size_t n_failed;
        int r; /* the first error */
};

static int open_dir_at(int pfd, const char *name) {
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
                return negative_errno();
        }
}

static void note_error(struct walk *w, int r) {
        if (w->r == 0)
                w->r = r;
}

static bool is_failed(const struct walk *w, dev_t dev, ino_t ino) {
        for (size_t i = 0; i < w->n_failed; i++)
                if (w->failed[i].dev == dev && w->failed[i].ino == ino)
                        return true;
        return false;
}

/* remember an entry that stays; false when there is no room left (the walk then stops) */
static bool add_failed(struct walk *w, dev_t dev, ino_t ino) {
        if (is_failed(w, dev, ino))
                return true;
        if (w->n_failed >= RMTREE_MAX_FAILED)
                return false;
        if (!w->failed) {
                w->failed = calloc(RMTREE_MAX_FAILED, sizeof(*w->failed));
                if (!w->failed)
                        return false;
        }
        w->failed[w->n_failed++] = (struct failed_entry) { dev, ino };
        return true;
}

static void level_close(struct walk *w, struct level *l) {
        if (l->d) {
                closedir(l->d);
                l->d = NULL;
                w->n_open--;
        }
}

/* the fd of the directory holding level i */
static int parent_fd(const struct walk *w, size_t i) {
        return i == 0 ? w->top_pfd : dirfd(w->levels[i - 1].d);
}

/* make room for one more open directory: close the open level nearest the root, never level 0 and never one
 * from keep on (the ones being used) */
static void make_room(struct walk *w, size_t keep) {
        if (w->n_open < RMTREE_MAX_OPEN)
                return;
        for (size_t i = 1; i < keep && i < w->n; i++)
                if (w->levels[i].d) {
                        level_close(w, &w->levels[i]);
                        return;
                }
}

/* open level i from its (open) parent, and check that it is the directory it was */
static int level_open(struct walk *w, size_t i) {
        struct level *l = &w->levels[i];
        struct stat st;
        int fd;

        make_room(w, i - 1);
        fd = open_dir_at(parent_fd(w, i), l->name);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0 || st.st_dev != l->dev || st.st_ino != l->ino) {
                close(fd);
                return -ESTALE; /* replaced meanwhile: not the directory this walk entered */
        }
        l->d = fdopendir(fd);
        if (!l->d) {
                close(fd);
                return -ENOMEM;
        }
        w->n_open++;
        return 0;
}

/* reopen level i and every closed level above it, from the nearest open one */
static int level_reopen(struct walk *w, size_t i) {
        size_t a = i;

        while (a > 0 && !w->levels[a - 1].d)
                a--;
        for (size_t k = a; k <= i; k++) {
                int r = w->levels[k].d ? 0 : level_open(w, k);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int push(struct walk *w, int fd, const char *name, const struct stat *st) {
        struct level *l;

        if (w->n == w->allocated) {
                size_t n = MAX(w->allocated * 2, (size_t) 16);
                struct level *nl = reallocarray(w->levels, n, sizeof(*nl));
                if (!nl)
                        return -ENOMEM;
                w->levels = nl;
                w->allocated = n;
        }
        l = &w->levels[w->n];
        *l = (struct level) { .dev = st->st_dev, .ino = st->st_ino };
        l->name = strdup(name);
        if (!l->name)
                return -ENOMEM;
        l->d = fdopendir(fd);
        if (!l->d) {
                free(l->name);
                return -ENOMEM;
        }
        w->n_open++;
        w->n++;
        return 0;
}

/* the top level is done: remove it unless something below it stays */
static void pop(struct walk *w) {
        struct level *l = &w->levels[w->n - 1];
        bool failed = l->failed;
        int r;

        level_close(w, l);
        if (!failed && w->n > 1 && !w->levels[w->n - 2].d) {
                r = level_reopen(w, w->n - 2);
                if (r < 0) {
                        note_error(w, r);
                        failed = true;
                }
        }
        if (!failed && unlinkat(parent_fd(w, w->n - 1), l->name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
                note_error(w, negative_errno());
                failed = true;
        }
        if (failed) {
                if (!add_failed(w, l->dev, l->ino))
                        note_error(w, -ENOSPC);
                if (w->n > 1)
                        w->levels[w->n - 2].failed = true;
        }
        free(l->name);
        w->n--;
}

/* an entry of the top level that stays */
static void entry_failed(struct walk *w, dev_t dev, ino_t ino, int r) {
        note_error(w, r);
        w->levels[w->n - 1].failed = true;
        if (!add_failed(w, dev, ino))
                note_error(w, -ENOSPC);
}

/* try name below the top level as a directory: 1 if pushed, 0 if it is not a directory, < 0 if it stays */
static int enter(struct walk *w, const char *name) {
        struct level *top = &w->levels[w->n - 1];
        struct stat st;
        int fd, r;

        make_room(w, w->n - 1);
        fd = open_dir_at(dirfd(top->d), name);
        if (fd < 0) {
                if (fd == -ENOTDIR || fd == -ELOOP)
                        return 0; /* a file or a symlink (RESOLVE_NO_SYMLINKS): unlinked as such */
                if (fd == -ENOENT)
                        return -ENOENT;
                return fd == -EXDEV ? -EBUSY : fd; /* a mount point is never entered */
        }
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                close(fd);
                return r;
        }
        if (st.st_dev != top->dev || is_failed(w, st.st_dev, st.st_ino)) {
                close(fd);
                /* another filesystem without a mount here cannot be; a directory that failed before stays */
                return st.st_dev != top->dev ? -EBUSY : -EEXIST;
        }
        r = push(w, fd, name, &st);
        if (r < 0) {
                close(fd);
                return r;
        }
        return 1;
}

static void step(struct walk *w) {
        struct level *top = &w->levels[w->n - 1];
        struct dirent *e;
        int r;

        errno = 0;
        e = readdir(top->d);
        if (!e) {
                if (errno != 0)
                        entry_failed(w, top->dev, top->ino, negative_errno());
                pop(w);
                return;
        }
        if (dot_or_dot_dot(e->d_name))
                return;
        if (is_failed(w, top->dev, e->d_ino)) {
                top->failed = true;
                return;
        }
        if (fs_remove_tree_test_hook)
                fs_remove_tree_test_hook(dirfd(top->d), e->d_name);
        if (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN) {
                r = enter(w, e->d_name);
                if (r > 0 || r == -ENOENT)
                        return;
                if (r == -EEXIST) {
                        top->failed = true; /* failed before, already counted */
                        return;
                }
                if (r < 0) {
                        entry_failed(w, top->dev, e->d_ino, r);
                        return;
                }
        }
        /* never follows: a symlink swapped in is removed itself; a directory swapped in is entered */
        if (unlinkat(dirfd(top->d), e->d_name, 0) >= 0 || errno == ENOENT)
                return;
        r = negative_errno();
        if (r == -EISDIR) {
                r = enter(w, e->d_name);
                if (r > 0 || r == -ENOENT)
                        return;
                if (r == 0)
                        r = -EAGAIN; /* swapped back and forth: left for the next call */
        }
        if (r == -EEXIST)
                top->failed = true;
        else
                entry_failed(w, top->dev, e->d_ino, r);
}

int fs_remove_tree_at(int pfd, const char *name) {
        return fs_remove_tree_at_cancellable(pfd, name, NULL);
}

int fs_remove_tree_at_cancellable(int pfd, const char *name, const _Atomic bool *cancel) {
        _cleanup_close_ int parent = -EBADF;
        _cleanup_free_ char *copy = NULL;
        struct walk w = {};
        const char *base = name;
        struct stat st;
        int fd, r;

        assert(name);
        /* a path: its directories are the caller's (trusted); only the last component is checked */
        if (strchr(name, '/')) {
                char *slash;
                copy = strdup(name);
                if (!copy)
                        return -ENOMEM;
                while (strlen(copy) > 1 && endswith(copy, "/"))
                        copy[strlen(copy) - 1] = '\0';
                slash = strrchr(copy, '/');
                if (!slash || isempty(slash + 1))
                        return -EINVAL;
                *slash = '\0';
                base = slash + 1;
                parent = openat(pfd, isempty(copy) ? "/" : copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (parent < 0)
                        return errno == ENOENT ? 0 : negative_errno();
                pfd = parent;
        }
        if (dot_or_dot_dot(base))
                return -EINVAL;
        w.top_pfd = pfd;
        fd = open_dir_at(pfd, base);
        if (fd < 0) {
                if (fd == -ENOENT)
                        return 0;
                if (fd == -ENOTDIR || fd == -ELOOP)
                        return unlinkat(pfd, base, 0) < 0 && errno != ENOENT ? negative_errno() : 0;
                return fd == -EXDEV ? -EBUSY : fd;
        }
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                close(fd);
                return r;
        }
        r = push(&w, fd, base, &st);
        if (r < 0) {
                close(fd);
                return r;
        }
        while (w.n > 0) {
                if (!w.levels[w.n - 1].d) {
                        r = level_reopen(&w, w.n - 1);
                        if (r < 0) {
                                /* gone or replaced meanwhile: left for the next call */
                                note_error(&w, r == -ENOENT ? -EAGAIN : r);
                                w.levels[w.n - 1].failed = true;
                                pop(&w);
                                continue;
                        }
                }
                if (w.n_failed >= RMTREE_MAX_FAILED)
                        break;
                if (cancel && atomic_load(cancel)) {
                        note_error(&w, -ECANCELED);
                        break;
                }
                step(&w);
        }
        for (size_t i = 0; i < w.n; i++) {
                level_close(&w, &w.levels[i]);
                free(w.levels[i].name);
        }
        free(w.levels);
        free(w.failed);
        return w.r;
}
