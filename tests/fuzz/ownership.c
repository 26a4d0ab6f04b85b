/* SPDX-License-Identifier: Apache-2.0 */
/* The fsGroup ownership walk (src/volumes/ownership.c) on a pod-writable tree that changes under it: the input
 * builds a tree of directories, files and symlinks to objects outside it, and names entries that a concurrent
 * thread keeps exchanging (renameat2 RENAME_EXCHANGE) with symlinks to the outside while the walk runs. Whatever
 * happens, nothing outside the tree may be chmod'ed, chown'ed or entered (an outside directory's file would be
 * changed too): the outside objects keep their mode and group. Issue 26 item 1. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "basic/error.h"
#include "fuzz.h"
#include "volumes/ownership.h"

#define MAX_ENTRIES 24
#define MAX_SWAPS 8

static char base[160];

struct entry {
        char name[16];
        int parent; /* index of a directory entry, -1 for the root */
        int kind;   /* 0 directory, 1 file, 2 symlink to the outside file, 3 symlink to the outside directory */
};

struct swap {
        int dfd; /* the parent directory, opened before the flipping starts */
        char a[16], b[16];
};

struct flipper {
        struct swap swaps[MAX_SWAPS];
        size_t n;
        atomic_bool stop;
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        (void) remove(path);
        return 0;
}

static void path_of(const struct entry *es, int i, char *buf, size_t size) {
        char parent[512];

        if (i < 0) {
                snprintf(buf, size, "%s/vol", base);
                return;
        }
        path_of(es, es[i].parent, parent, sizeof(parent));
        snprintf(buf, size, "%s/%s", parent, es[i].name);
}

static void *flip(void *userdata) {
        struct flipper *fl = userdata;

        while (!atomic_load(&fl->stop))
                for (size_t i = 0; i < fl->n; i++)
                        (void) renameat2(fl->swaps[i].dfd, fl->swaps[i].a, fl->swaps[i].dfd, fl->swaps[i].b,
                                         RENAME_EXCHANGE);
        return NULL;
}

static void make_outside(void) {
        char p[256];
        int fd;

        snprintf(p, sizeof(p), "%s/outside", base);
        if (mkdir(p, 0700) < 0 && errno != EEXIST)
                abort();
        (void) chmod(p, 0700);
        snprintf(p, sizeof(p), "%s/outside/shadow", base);
        fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0)
                abort();
        close(fd);
        (void) chmod(p, 0600);
        snprintf(p, sizeof(p), "%s/outside/dir", base);
        if (mkdir(p, 0700) < 0 && errno != EEXIST)
                abort();
        (void) chmod(p, 0700);
        snprintf(p, sizeof(p), "%s/outside/dir/inner", base);
        fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0)
                abort();
        close(fd);
        (void) chmod(p, 0600);
}

static void check_outside(void) {
        static const char *const rel[] = { "outside", "outside/shadow", "outside/dir", "outside/dir/inner" };
        char p[256];
        struct stat st;

        for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
                snprintf(p, sizeof(p), "%s/%s", base, rel[i]);
                if (lstat(p, &st) < 0)
                        abort();
                if ((st.st_mode & 07777) != (S_ISDIR(st.st_mode) ? 0700 : 0600) || st.st_gid != getegid()) {
                        fprintf(stderr, "%s outside the volume changed: mode %04o gid %u\n", p,
                                (unsigned) (st.st_mode & 07777), (unsigned) st.st_gid);
                        abort();
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct entry es[MAX_ENTRIES];
        struct flipper fl = {};
        size_t pos = 0, n, n_swaps, walks;
        char p[600], vol[256];
        pthread_t t;
        int64_t fs_group;

#define NEXT() (pos < size ? data[pos++] : 0)
        if (!base[0]) {
                snprintf(base, sizeof(base), "%s/ckubelet-fuzz-own-XXXXXX", fuzz_tmpdir());
                if (!mkdtemp(base))
                        abort();
        }
        snprintf(vol, sizeof(vol), "%s/vol", base);
        (void) nftw(vol, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        make_outside();
        if (mkdir(vol, 0755) < 0)
                abort();

        n = NEXT() % MAX_ENTRIES + 1;
        fs_group = 1000 + NEXT();
        for (size_t i = 0; i < n; i++) {
                uint8_t kind = NEXT(), parent = NEXT(), mode = NEXT();
                int dirs[MAX_ENTRIES], n_dirs = 0;

                for (size_t j = 0; j < i; j++)
                        if (es[j].kind == 0)
                                dirs[n_dirs++] = (int) j;
                es[i].kind = kind % 4;
                es[i].parent = n_dirs == 0 || parent % (n_dirs + 1) == 0 ? -1 : dirs[parent % (n_dirs + 1) - 1];
                snprintf(es[i].name, sizeof(es[i].name), "e%zu", i);
                path_of(es, (int) i, p, sizeof(p));
                switch (es[i].kind) {
                case 0:
                        if (mkdir(p, 0700 | (mode & 0077)) < 0)
                                abort();
                        break;
                case 1: {
                        int fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
                        if (fd < 0)
                                abort();
                        close(fd);
                        (void) chmod(p, 0600 | (mode & 0777));
                        break;
                }
                default: {
                        char target[256];
                        if (mode & 1) /* absolute or relative */
                                snprintf(target, sizeof(target), "%s/outside/%s", base,
                                         es[i].kind == 2 ? "shadow" : "dir");
                        else { /* relative: up to vol's parent, then into outside */
                                size_t len = 0;
                                for (int a = es[i].parent; a >= 0; a = es[a].parent)
                                        len += (size_t) snprintf(target + len, sizeof(target) - len, "../");
                                snprintf(target + len, sizeof(target) - len, "../outside/%s",
                                         es[i].kind == 2 ? "shadow" : "dir");
                        }
                        if (symlink(target, p) < 0)
                                abort();
                }
                }
        }
        /* the entries to flip: each gets a sibling symlink to the outside, exchanged with it over and over */
        n_swaps = NEXT() % (MAX_SWAPS + 1);
        for (size_t i = 0; i < n_swaps; i++) {
                uint8_t which = NEXT(), to = NEXT();
                const struct entry *e = &es[which % n];
                struct swap *s = &fl.swaps[fl.n];
                char parent[600], target[256];

                path_of(es, e->parent, parent, sizeof(parent));
                snprintf(s->a, sizeof(s->a), "%s", e->name);
                snprintf(s->b, sizeof(s->b), "s%zu", i);
                snprintf(p, sizeof(p), "%s/%s", parent, s->b);
                snprintf(target, sizeof(target), "%s/outside/%s", base, to & 1 ? "dir" : "shadow");
                if (symlink(target, p) < 0)
                        abort();
                s->dfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (s->dfd < 0)
                        abort();
                fl.n++;
        }
        walks = NEXT() % 4 + 1;
#undef NEXT

        if (pthread_create(&t, NULL, flip, &fl) != 0)
                abort();
        for (size_t w = 0; w < walks; w++) {
                struct vol_ownership_result res = {};
                struct ck_error *err = NULL;

                (void) vol_ownership_apply(vol, fs_group, NULL, w & 1, &res, &err);
                ck_error_free(err);
        }
        atomic_store(&fl.stop, true);
        pthread_join(t, NULL);
        for (size_t i = 0; i < fl.n; i++)
                close(fl.swaps[i].dfd);
        check_outside();
        return 0;
}
