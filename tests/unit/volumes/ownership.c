/* SPDX-License-Identifier: Apache-2.0 */
/* fsGroup ownership walk (src/volumes/ownership.c): the modes it sets, and that it acts only on the objects it
 * checked: a flipper thread swaps files of the tree for symlinks to a file outside it while the walk runs, and
 * the outside file must never change (issue 26 item 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "volumes/ownership.h"

#define FS_GROUP 4242
#define PAIRS 8

static char tmp[] = "/tmp/ckubelet-own-XXXXXX";

static int setup(void **state) {
        (void) state;
        assert_non_null(mkdtemp(tmp));
        return 0;
}

static int teardown(void **state) {
        char *cmd = NULL;
        (void) state;
        assert_true(asprintf(&cmd, "rm -rf %s", tmp) > 0);
        (void) system(cmd);
        free(cmd);
        return 0;
}

static char *pathf(const char *rel) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", tmp, rel) > 0);
        return p;
}

static void touch(const char *path, mode_t mode) {
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(chmod(path, mode), 0);
}

static mode_t mode_of(const char *path) {
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        return st.st_mode & 07777;
}

static void test_modes(void **state) {
        (void) state;
        /* rwMask for writable volumes, roMask for configMap/secret/downwardAPI/projected; dirs: setgid + exec */
        assert_int_equal(vol_ownership_mode(S_IFREG | 0600, false), 0660);
        assert_int_equal(vol_ownership_mode(S_IFREG | 0440, true), 0440);
        assert_int_equal(vol_ownership_mode(S_IFREG | 0400, true), 0440);
        assert_int_equal(vol_ownership_mode(S_IFREG | 0644, true), 0644);
        assert_int_equal(vol_ownership_mode(S_IFDIR | 0755, false), 02775);
        assert_int_equal(vol_ownership_mode(S_IFDIR | 0700, true), 02750);
}

static void test_walk(void **state) {
        _cleanup_free_ char *vol = pathf("vol"), *d = pathf("vol/d"), *f = pathf("vol/d/f"), *ro = pathf("vol/d/ro"),
                            *l = pathf("vol/l"), *out = pathf("out");
        struct ck_error *err = NULL;
        struct vol_ownership_result res = {};
        struct stat st;
        (void) state;

        assert_int_equal(mkdir(vol, 0755), 0);
        assert_int_equal(mkdir(d, 0700), 0);
        touch(f, 0600);
        touch(ro, 0400);
        touch(out, 0600);
        assert_int_equal(symlink(out, l), 0);
        assert_int_equal(vol_ownership_apply(vol, FS_GROUP, NULL, false, &res, &err), 0);
        assert_null(err);
        assert_false(res.skipped);
        assert_int_equal(res.failures, 0);
        assert_int_equal(res.entries, 4); /* d, f, ro and the root; not the symlink */
        assert_int_equal(mode_of(f), 0660);
        assert_int_equal(mode_of(ro), 0660);
        assert_int_equal(mode_of(d), 02770);
        assert_int_equal(mode_of(vol), 02775);
        assert_int_equal(stat(f, &st), 0);
        assert_int_equal(st.st_gid, FS_GROUP);
        assert_int_equal(stat(out, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        assert_int_equal(st.st_gid, 0);

        /* the read-only mask (secret volumes): 0440 stays -r--r----- */
        assert_int_equal(chmod(f, 0440), 0);
        assert_int_equal(vol_ownership_apply(vol, FS_GROUP, NULL, true, &res, &err), 0);
        assert_int_equal(mode_of(f), 0440);

        /* OnRootMismatch skips a matching root */
        assert_int_equal(vol_ownership_apply(vol, FS_GROUP, "OnRootMismatch", true, &res, &err), 0);
        assert_true(res.skipped);
}

/* ---------------------------------------------------------------- the race */

struct flipper {
        char *dir;
        atomic_bool stop;
        atomic_ulong flips;
};

/* Each pair a<i> (a 0777 file) / b<i> (a symlink to the outside file) is exchanged atomically, over and over:
 * every name is always present, sometimes a file, sometimes a symlink. */
static void *flip(void *userdata) {
        struct flipper *fl = userdata;
        int dfd = open(fl->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char a[16], b[16];

        assert_true(dfd >= 0);
        while (!atomic_load(&fl->stop)) {
                for (int i = 0; i < PAIRS; i++) {
                        snprintf(a, sizeof(a), "a%d", i);
                        snprintf(b, sizeof(b), "b%d", i);
                        (void) renameat2(dfd, a, dfd, b, RENAME_EXCHANGE);
                        /* the walk chmods the file it sees: keep it tempting (0777 as in the report) */
                        (void) fchmodat(dfd, a, 0777, AT_SYMLINK_NOFOLLOW);
                        (void) fchmodat(dfd, b, 0777, AT_SYMLINK_NOFOLLOW);
                }
                atomic_fetch_add(&fl->flips, 1);
        }
        close(dfd);
        return NULL;
}

static void test_race_symlink_swap(void **state) {
        _cleanup_free_ char *vol = pathf("race"), *out = pathf("shadow");
        struct flipper fl = { .dir = vol };
        unsigned long walks = 0, max_walks = 20000;
        const char *env = getenv("OWNERSHIP_RACE_WALKS");
        pthread_t t;
        struct stat st;
        bool changed = false;
        (void) state;

        if (env)
                max_walks = strtoul(env, NULL, 10);
        assert_int_equal(mkdir(vol, 0755), 0);
        touch(out, 0600);
        for (int i = 0; i < PAIRS; i++) {
                char a[16], b[16];
                _cleanup_free_ char *pa = NULL, *pb = NULL;
                snprintf(a, sizeof(a), "race/a%d", i);
                snprintf(b, sizeof(b), "race/b%d", i);
                pa = pathf(a);
                pb = pathf(b);
                touch(pa, 0777);
                assert_int_equal(symlink(out, pb), 0);
        }
        assert_int_equal(pthread_create(&t, NULL, flip, &fl), 0);
        for (walks = 0; walks < max_walks && !changed; walks++) {
                struct vol_ownership_result res = {};
                struct ck_error *err = NULL;

                assert_int_equal(vol_ownership_apply(vol, FS_GROUP, NULL, false, &res, &err), 0);
                assert_int_equal(stat(out, &st), 0);
                changed = (st.st_mode & 07777) != 0600 || st.st_gid != 0;
        }
        atomic_store(&fl.stop, true);
        pthread_join(t, NULL);
        print_message("%lu walks, %lu flip rounds, outside file %s\n", walks, atomic_load(&fl.flips),
                      changed ? "CHANGED" : "untouched");
        if (changed)
                fail_msg("after %lu walks the file outside the volume became mode %04o gid %u", walks,
                         (unsigned) (st.st_mode & 07777), (unsigned) st.st_gid);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_modes),
                cmocka_unit_test(test_walk),
                cmocka_unit_test(test_race_symlink_swap),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
