/* SPDX-License-Identifier: Apache-2.0 */
/* Removing pod data (fs_remove_tree_at, vol_remove_pod_dir, the reaper): deep trees with no depth limit, trees
 * deeper than the fds the walk holds, symlinks never followed, mount points never crossed, a concurrent thread that
 * swaps entries for symlinks to a victim directory outside the tree, and the reaper's completion on the loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "basic/fs.h"
#include "volumes/reaper-testing.h"
#include "volumes/volumes.h"

static char tmp[] = "/tmp/ckubelet-removal-XXXXXX";

static char *in_tmp(const char *rel) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", tmp, rel) > 0);
        return p;
}

static void run(const char *fmt, ...) {
        char *cmd = NULL, *full = NULL;
        va_list ap;

        va_start(ap, fmt);
        assert_true(vasprintf(&cmd, fmt, ap) > 0);
        va_end(ap);
        assert_true(asprintf(&full, "cd %s && %s", tmp, cmd) > 0);
        assert_int_equal(system(full), 0);
        free(cmd);
        free(full);
}

static bool exists(const char *rel) {
        char *p = in_tmp(rel);
        struct stat st;
        bool r = lstat(p, &st) == 0;
        free(p);
        return r;
}

/* a chain of depth directories under dir (relative to tmp), a file in each, built with dirfds (no PATH_MAX) */
static void make_chain(const char *dir, unsigned depth) {
        char *p = in_tmp(dir);
        int fd;

        assert_int_equal(mkdir(p, 0755), 0);
        fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        for (unsigned i = 0; i < depth; i++) {
                int f = openat(fd, "file", O_CREAT | O_WRONLY | O_CLOEXEC, 0644), nfd;
                assert_true(f >= 0);
                assert_int_equal(write(f, "x", 1), 1);
                close(f);
                assert_int_equal(mkdirat(fd, "d", 0755), 0);
                nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_true(nfd >= 0);
                close(fd);
                fd = nfd;
        }
        close(fd);
        free(p);
}

static void test_deep_trees_are_removed(void **state) {
        char *top = NULL;
        int fd;

        /* 70 levels (the old walk stopped at 64: -ELOOP for ever), and 1000 levels: more than the fds the walk
         * holds at once (its deeper levels are reopened from their parents), and more than PATH_MAX allows by
         * path */
        make_chain("deep70", 70);
        make_chain("deep1000", 1000);
        fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fs_remove_tree_at(fd, "deep70"), 0);
        assert_false(exists("deep70"));
        assert_int_equal(fs_remove_tree_at(fd, "deep1000"), 0);
        assert_false(exists("deep1000"));
        /* a path (AT_FDCWD), a missing entry, a file, a symlink */
        run("mkdir -p p/a/b && touch p/a/b/f && touch file && ln -s / link");
        top = in_tmp("p");
        assert_int_equal(fs_remove_tree_at(AT_FDCWD, top), 0);
        assert_false(exists("p"));
        assert_int_equal(fs_remove_tree_at(AT_FDCWD, top), 0);
        assert_int_equal(fs_remove_tree_at(fd, "file"), 0);
        assert_int_equal(fs_remove_tree_at(fd, "link"), 0);
        assert_false(exists("file") || exists("link"));
        free(top);
        close(fd);
}

static void test_cancelled_removal_stops(void **state) {
        int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _Atomic bool cancel = true;

        make_chain("cancelled", 5);
        assert_int_equal(fs_remove_tree_at_cancellable(fd, "cancelled", &cancel), -ECANCELED);
        assert_true(exists("cancelled/d/d/d/d/d"));
        cancel = false;
        assert_int_equal(fs_remove_tree_at_cancellable(fd, "cancelled", &cancel), 0);
        assert_false(exists("cancelled"));
        close(fd);
}

static void test_symlinks_removed_not_followed(void **state) {
        int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        run("mkdir -p victim/sub t/x && echo precious > victim/file && echo p > victim/sub/f && "
            "ln -s ../victim t/dirlink && ln -s ../victim/file t/filelink && ln -s ../../victim t/x/up && "
            "mkfifo t/fifo");
        assert_int_equal(fs_remove_tree_at(fd, "t"), 0);
        assert_false(exists("t"));
        assert_true(exists("victim/file") && exists("victim/sub/f"));
        close(fd);
}

static void test_mount_points_are_not_crossed(void **state) {
        int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char *mp = NULL, *src = NULL;

        run("mkdir -p m/vol/a other && echo keep > other/keep && touch m/vol/a/f m/top");
        mp = in_tmp("m/vol/a");
        src = in_tmp("other");
        /* a bind mount of the same filesystem (st_dev equal: the old walk's device check did not see it) */
        if (mount(src, mp, NULL, MS_BIND, NULL) < 0) {
                free(mp);
                free(src);
                close(fd);
                skip(); /* not root */
        }
        assert_int_equal(fs_remove_tree_at(fd, "m"), -EBUSY);
        assert_true(exists("other/keep")); /* never entered */
        assert_false(exists("m/top"));     /* the rest went */
        assert_int_equal(umount2(mp, MNT_DETACH), 0);
        assert_int_equal(fs_remove_tree_at(fd, "m"), 0);
        assert_false(exists("m"));
        assert_true(exists("other/keep"));
        free(mp);
        free(src);
        close(fd);
}

/* ---------------------------------------------------------------- the race: symlinks swapped in */

struct swapper {
        int rootfd;
        atomic_bool stop;
        unsigned swaps;
        unsigned seed;
};

/* never "/": a walk that followed one would remove the machine */
static const char *const victims[] = { "../../victim", "../victim", "../../victim/file", "../victim/sub",
                                       "../../victim/sub" };

/* the walk's hook: between reading an entry and acting on it, turn it into a symlink out of the tree */
static __thread unsigned hook_seed;
static void swap_hook(int dirfd, const char *name) {
        if (rand_r(&hook_seed) % 3 != 0)
                return;
        /* the entry goes (a directory may not be empty: then a sibling symlink appears instead) */
        if (unlinkat(dirfd, name, 0) < 0)
                (void) renameat(dirfd, name, dirfd, "moved-away");
        (void) symlinkat(victims[rand_r(&hook_seed) % 5], dirfd, name);
}

/* a concurrent thread as a container would: keeps replacing entries of the tree with symlinks out of it */
static void *swapper_main(void *arg) {
        struct swapper *s = arg;
        char name[64];

        while (!atomic_load(&s->stop)) {
                unsigned a = rand_r(&s->seed) % 8, b = rand_r(&s->seed) % 8;
                snprintf(name, sizeof(name), "d%u/d%u", a, b);
                if (unlinkat(s->rootfd, name, 0) < 0)
                        (void) unlinkat(s->rootfd, name, AT_REMOVEDIR);
                (void) symlinkat(victims[rand_r(&s->seed) % 5], s->rootfd, name);
                snprintf(name, sizeof(name), "d%u/f%u", a, b);
                (void) unlinkat(s->rootfd, name, 0);
                (void) symlinkat(victims[rand_r(&s->seed) % 5], s->rootfd, name);
                s->swaps++;
        }
        return NULL;
}

static void victim_intact(void) {
        assert_true(exists("victim/file"));
        assert_true(exists("victim/sub/f"));
        assert_true(exists("victim/sub/g"));
}

static void put_file(int dfd, const char *name) {
        int f = openat(dfd, name, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(f >= 0);
        close(f);
}

/* race/d<a>/{f<b>, d<b>/x/y/z}: 8 x 8 */
static void make_race_tree(void) {
        char *p = in_tmp("race");
        int root;

        assert_int_equal(mkdir(p, 0755), 0);
        root = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(root >= 0);
        for (int a = 0; a < 8; a++) {
                char n[64];
                int da;
                snprintf(n, sizeof(n), "d%d", a);
                assert_int_equal(mkdirat(root, n, 0755), 0);
                da = openat(root, n, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_true(da >= 0);
                for (int b = 0; b < 8; b++) {
                        int y;
                        snprintf(n, sizeof(n), "f%d", b);
                        put_file(da, n);
                        snprintf(n, sizeof(n), "d%d", b);
                        assert_int_equal(mkdirat(da, n, 0755), 0);
                        snprintf(n, sizeof(n), "d%d/x", b);
                        assert_int_equal(mkdirat(da, n, 0755), 0);
                        snprintf(n, sizeof(n), "d%d/x/y", b);
                        assert_int_equal(mkdirat(da, n, 0755), 0);
                        y = openat(da, n, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        assert_true(y >= 0);
                        put_file(y, "z");
                        close(y);
                }
                close(da);
        }
        close(root);
        free(p);
}

static void test_swapped_symlinks_never_lead_outside(void **state) {
        int fd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        run("mkdir -p victim/sub && echo precious > victim/file && echo p > victim/sub/f && echo g > victim/sub/g");
        /* with the hook: every third entry is swapped exactly between the check and the act */
        for (unsigned round = 0; round < 12; round++) {
                hook_seed = round;
                make_race_tree();
                fs_remove_tree_test_hook = swap_hook;
                (void) fs_remove_tree_at(fd, "race");
                fs_remove_tree_test_hook = NULL;
                victim_intact();
                /* whatever was left (entries swapped back and forth) goes at the next call */
                assert_int_equal(fs_remove_tree_at(fd, "race"), 0);
                assert_false(exists("race"));
                victim_intact();
        }
        /* with a concurrent thread, as a container sharing the volume */
        for (unsigned round = 0; round < 12; round++) {
                struct swapper s = { .seed = round };
                pthread_t t;
                int rootfd;

                make_race_tree();
                rootfd = openat(fd, "race", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_true(rootfd >= 0);
                s.rootfd = rootfd;
                assert_int_equal(pthread_create(&t, NULL, swapper_main, &s), 0);
                (void) fs_remove_tree_at(fd, "race");
                atomic_store(&s.stop, true);
                pthread_join(t, NULL);
                close(rootfd);
                victim_intact();
                assert_int_equal(fs_remove_tree_at(fd, "race"), 0);
                victim_intact();
        }
        close(fd);
}

/* ---------------------------------------------------------------- the reaper */

struct reaped {
        struct event_base *base;
        int n, last_r;
};

static void on_reaped(const char *uid, int r, void *userdata) {
        struct reaped *x = userdata;
        x->n++;
        x->last_r = r;
        event_base_loopbreak(x->base);
}

static bool keep_kept(const char *uid, void *userdata) {
        return strcmp(uid, "kept") == 0;
}

static void test_reaper_removes_orphans_off_the_loop(void **state) {
        struct reaped x = {};
        struct vol_reaper *rp = NULL;
        char *root = in_tmp("root");

        run("mkdir -p root/pods/kept/x root/pods/gone/volumes/kubernetes.io~empty-dir/e/sub victim2 && "
            "echo precious > victim2/file && ln -s ../../../../../victim2 root/pods/gone/volumes/kubernetes.io~empty-dir/e/link && "
            "ln -s ../../../victim2/file root/pods/gone/etc-hosts && echo y > root/pods/gone/volumes/kubernetes.io~empty-dir/e/sub/f");
        make_chain("root/pods/gone/volumes/kubernetes.io~empty-dir/deep", 80);
        x.base = event_base_new();
        assert_int_equal(vol_reaper_new(x.base, root, &rp), 0);
        vol_reaper_set_notify(rp, on_reaped, &x);
        assert_int_equal(vol_reaper_scan(rp, keep_kept, NULL), 1);
        assert_true(vol_reaper_busy(rp, "gone"));
        assert_false(vol_reaper_busy(rp, "kept"));
        /* a second scan while it runs starts nothing more */
        assert_int_equal(vol_reaper_scan(rp, keep_kept, NULL), 0);
        assert_int_equal(x.n, 0); /* never inside the scan: on the loop, later */
        event_base_dispatch(x.base);
        assert_int_equal(x.n, 1);
        assert_int_equal(x.last_r, 0);
        assert_false(vol_reaper_busy(rp, "gone"));
        assert_false(exists("root/pods/gone"));
        assert_true(exists("root/pods/kept/x"));
        assert_true(exists("victim2/file"));
        assert_int_equal(vol_reaper_scan(rp, keep_kept, NULL), 0);
        vol_reaper_free(rp);
        event_base_free(x.base);
        free(root);
        /* no pods directory: nothing to do */
        root = in_tmp("nowhere");
        x.base = event_base_new();
        assert_int_equal(vol_reaper_new(x.base, root, &rp), 0);
        assert_int_equal(vol_reaper_scan(rp, keep_kept, NULL), 0);
        vol_reaper_free(rp);
        event_base_free(x.base);
        free(root);
}

static int setup(void **state) {
        return mkdtemp(tmp) ? 0 : -1;
}

static int teardown(void **state) {
        return fs_remove_tree_at(AT_FDCWD, tmp) == 0 ? 0 : -1;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_deep_trees_are_removed),
                cmocka_unit_test(test_cancelled_removal_stops),
                cmocka_unit_test(test_symlinks_removed_not_followed),
                cmocka_unit_test(test_mount_points_are_not_crossed),
                cmocka_unit_test(test_swapped_symlinks_never_lead_outside),
                cmocka_unit_test(test_reaper_removes_orphans_off_the_loop),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
