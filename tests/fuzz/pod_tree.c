/* SPDX-License-Identifier: Apache-2.0 */
/* The walks of pod-writable trees (issue 26): a tree generated from the input (directories, files, symlinks out of
 * it), then the subPath resolution (vol_subpath_open, which creates what is missing) of a path from the input and the
 * removal of the tree (fs_remove_tree_at), while entries are swapped for symlinks out of the tree between the
 * walk's check and its act (the removal's test hook, driven by the input). Nothing outside the tree may change: the
 * victim directory next to it keeps its files, and no entry is created in it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "fuzz.h"
#include "volumes/subpath.h"

static char base[160];
static int basefd = -1;
static const uint8_t *swap_data;
static size_t swap_size, swap_pos;

/* symlink targets, relative from any depth and absolute: all lead to the victim or above the tree */
static const char *const targets[] = { "../victim", "../../victim", "../../../victim", "../victim/file", "..", "../..",
                                       NULL /* base/victim, absolute */ };

static const char *target(unsigned i) {
        static char abs_victim[256];
        i %= sizeof(targets) / sizeof(targets[0]);
        if (targets[i])
                return targets[i];
        snprintf(abs_victim, sizeof(abs_victim), "%s/victim", base);
        return abs_victim;
}

static void setup_once(void) {
        int fd;

        if (basefd >= 0)
                return;
        snprintf(base, sizeof(base), "%s/ckubelet-fuzz-tree-XXXXXX", fuzz_tmpdir());
        if (!mkdtemp(base))
                abort();
        basefd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (basefd < 0 || mkdirat(basefd, "victim", 0755) < 0 || mkdirat(basefd, "victim/sub", 0755) < 0)
                abort();
        fd = openat(basefd, "victim/file", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0)
                abort();
        close(fd);
}

static void victim_intact(void) {
        struct stat st;
        DIR *d;
        struct dirent *e;
        int n = 0, fd;

        if (fstatat(basefd, "victim/file", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
            fstatat(basefd, "victim/sub", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                abort();
        fd = openat(basefd, "victim", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d)
                abort();
        while ((e = readdir(d)))
                n++;
        closedir(d);
        if (n != 4) /* ".", "..", file, sub: nothing created there */
                abort();
        /* nothing created beside the tree either */
        fd = dup(basefd);
        d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d)
                abort();
        rewinddir(d);
        n = 0;
        while ((e = readdir(d)))
                n++;
        closedir(d);
        if (n != 3 && n != 4) /* ".", "..", victim and (until removed) tree */
                abort();
}

static uint8_t next_swap_byte(void) {
        return swap_pos < swap_size ? swap_data[swap_pos++] : 0;
}

/* between the walk's check and its act: maybe replace the entry with a symlink out of the tree */
static void swap_hook(int dirfd, const char *name) {
        uint8_t b = next_swap_byte();

        if (b % 4 != 0)
                return;
        if (unlinkat(dirfd, name, 0) < 0 && unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
                (void) renameat(dirfd, name, dirfd, "moved-away");
        (void) symlinkat(target(b / 4), dirfd, name);
}

/* the tree from the input: each op is two bytes (kind, argument); names are short, depth follows a cursor */
static void build_tree(const uint8_t *data, size_t n) {
        int cur = openat(basefd, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        unsigned depth = 0;

        if (cur < 0)
                abort();
        for (size_t i = 0; i + 1 < n; i += 2) {
                char name[8];
                int fd;

                snprintf(name, sizeof(name), "%c", 'a' + data[i + 1] % 6);
                switch (data[i] % 5) {
                case 0:
                        (void) mkdirat(cur, name, 0755);
                        break;
                case 1:
                        fd = openat(cur, name, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
                        if (fd >= 0)
                                close(fd);
                        break;
                case 2:
                        (void) symlinkat(target(data[i + 1]), cur, name);
                        break;
                case 3: /* descend (never through a symlink) */
                        if (depth < 40) {
                                fd = openat(cur, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                                if (fd >= 0) {
                                        close(cur);
                                        cur = fd;
                                        depth++;
                                }
                        }
                        break;
                default: /* back to the top */
                        close(cur);
                        cur = openat(basefd, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (cur < 0)
                                abort();
                        depth = 0;
                        break;
                }
        }
        close(cur);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t tree_n, sub_n;
        char *sub;
        int rootfd, fd = -1;

        setup_once();
        if (size > 4096)
                return 0;
        /* input: [tree ops][0xff][subPath][0xff][swap bytes] */
        tree_n = 0;
        while (tree_n < size && data[tree_n] != 0xff)
                tree_n++;
        sub_n = tree_n + 1 < size ? tree_n + 1 : size;
        while (sub_n < size && data[sub_n] != 0xff)
                sub_n++;
        swap_data = sub_n + 1 < size ? data + sub_n + 1 : NULL;
        swap_size = sub_n + 1 < size ? size - sub_n - 1 : 0;
        swap_pos = 0;

        (void) fs_remove_tree_at(basefd, "tree"); /* a previous input's leftovers */
        if (mkdirat(basefd, "tree", 0755) < 0)
                abort();
        build_tree(data, tree_n);

        /* subPath: resolved beneath the tree, missing directories created, never outside */
        sub = fuzz_strndup(tree_n + 1 < size ? data + tree_n + 1 : data, tree_n + 1 < size ? sub_n - tree_n - 1 : 0);
        rootfd = openat(basefd, "tree", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                abort();
        if (sub[0] && sub[0] != '/' && vol_subpath_open(rootfd, sub, &fd) >= 0)
                close(fd);
        close(rootfd);
        free(sub);
        victim_intact();

        /* the removal, with entries swapped under it, then whatever was left */
        fs_remove_tree_test_hook = swap_hook;
        (void) fs_remove_tree_at(basefd, "tree");
        fs_remove_tree_test_hook = NULL;
        victim_intact();
        if (fs_remove_tree_at(basefd, "tree") < 0)
                abort(); /* nothing swaps any more: everything goes */
        victim_intact();
        return 0;
}
