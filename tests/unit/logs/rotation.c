/* SPDX-License-Identifier: Apache-2.0 */
/* Container log rotation: names, order, what an interrupted rotation leaves, compression, the links' names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "basic/fs.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "logs/rotation.h"

static char tmpdir[] = "/tmp/ckubelet-rotation-XXXXXX";

static int setup(void **state) {
        setenv("TZ", "UTC", 1);
        tzset();
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
        return logs_remove_tree(tmpdir) == 0 ? 0 : -1;
}

static char *path(const char *name) {
        char *p;
        assert_true(asprintf(&p, "%s/%s", tmpdir, name) > 0);
        return p;
}

static void put(const char *name, const char *content) {
        _cleanup_free_ char *p = path(name);
        assert_int_equal(write_file_atomic(p, content, strlen(content), 0644), 0);
}

static bool exists(const char *name) {
        _cleanup_free_ char *p = path(name);
        struct stat st;
        return lstat(p, &st) == 0;
}

static void test_names(void **state) {
        _cleanup_free_ char *r = logs_rotated_name("/var/log/pods/ns_p_u/c/0.log",
                                                   INT64_C(1700000000) * 1000000 + 999999);
        _cleanup_free_ char *l = NULL, *id = NULL, *longl = NULL;
        char longname[300];

        assert_string_equal(r, "/var/log/pods/ns_p_u/c/0.log.20231114-221320");
        /* names sort in time order */
        {
                _cleanup_free_ char *a = logs_rotated_name("x.log", INT64_C(1700000000) * 1000000);
                _cleanup_free_ char *b = logs_rotated_name("x.log", INT64_C(1700000061) * 1000000);
                assert_true(strcmp(a, b) < 0);
        }
        l = logs_link_path("/var/log/containers", "web", "default", "app",
                           "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        assert_string_equal(l, "/var/log/containers/web_default_app-"
                               "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.log");
        assert_int_equal(logs_link_container_id(strrchr(l, '/') + 1, &id), 0);
        assert_string_equal(id, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        assert_int_equal(logs_link_container_id("web_default_app.log", &id), -EINVAL);
        assert_int_equal(logs_link_container_id("web_default_app-xyz.log", &id), -EINVAL);
        /* a long name is cut to 255 bytes with the suffix, the container id kept whole (issue 26: two pods whose
         * names share their first 251 bytes had one link) */
        memset(longname, 'a', 260);
        longname[260] = '\0';
        longl = logs_link_path("/d", longname, "ns", "c",
                               "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        assert_int_equal(strlen(strrchr(longl, '/') + 1), 255);
        assert_true(endswith(longl, "aaaa-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.log"));
        {
                _cleanup_free_ char *other =
                        logs_link_path("/d", longname, "ns", "c",
                                       "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210");
                assert_string_not_equal(longl, other);
                id = mfree(id);
                assert_int_equal(logs_link_container_id(strrchr(other, '/') + 1, &id), 0);
                assert_string_equal(id, "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210");
        }
        memset(longname, 'f', 252);
        longname[252] = '\0';
        errno = 0;
        assert_null(logs_link_path("/d", "p", "ns", "c", longname));
        assert_int_equal(errno, ENAMETOOLONG);
}

static void test_unused_and_excess(void **state) {
        char *names[] = { "0.log.20230101-000000.gz", "0.log.20230101-000010", "0.log.20230101-000010.gz",
                          "0.log.20230101-000020.tmp", "0.log.20230101-000030" };
        bool in_use[5];

        logs_filter_unused(names, 5, in_use);
        assert_true(in_use[0]);
        assert_false(in_use[1]); /* compressed already: the .gz stays */
        assert_true(in_use[2]);
        assert_false(in_use[3]); /* a temporary file */
        assert_true(in_use[4]);
        /* MaxFiles 5: the live file and the next rotated one, so 3 rotated ones stay */
        assert_int_equal(logs_excess_count(5, 5), 2);
        assert_int_equal(logs_excess_count(3, 5), 0);
        assert_int_equal(logs_excess_count(4, 2), 4);
}

static void test_compress(void **state) {
        _cleanup_free_ char *p = path("1.log.20230101-000000"), *gzp = path("1.log.20230101-000000.gz");
        char buf[64 * 1024], back[sizeof(buf)];
        gzFile gz;
        int n;

        for (size_t i = 0; i < sizeof(buf); i++)
                buf[i] = (char) ('a' + (char) (i * 7 % 26));
        assert_int_equal(write_file_atomic(p, buf, sizeof(buf), 0644), 0);
        assert_int_equal(logs_compress(p), 0);
        assert_false(exists("1.log.20230101-000000"));
        assert_false(exists("1.log.20230101-000000.tmp"));
        gz = gzopen(gzp, "rb");
        assert_non_null(gz);
        n = gzread(gz, back, sizeof(back));
        gzclose(gz);
        assert_int_equal(n, sizeof(buf));
        assert_memory_equal(buf, back, sizeof(buf));
        /* a missing file: an error, nothing left behind */
        assert_int_equal(logs_compress(p), -ENOENT);
        assert_false(exists("1.log.20230101-000000.tmp"));
}

static void test_prepare(void **state) {
        _cleanup_free_ char *live = path("2.log");
        _cleanup_strv_free_ char **l = NULL;

        /* what two interrupted rotations and five earlier ones left */
        put("2.log", "live\n");
        put("2.log.20230101-000001.gz", "x");
        put("2.log.20230101-000002.gz", "x");
        put("2.log.20230101-000003", "compressed too, then killed");
        put("2.log.20230101-000003.gz", "x");
        put("2.log.20230101-000004.tmp", "killed while compressing");
        put("2.log.20230101-000004", "to compress\n");
        put("2.log.20230101-000005", "the latest rotated\n");
        put("20.log.20230101-000000", "another instance's");

        assert_int_equal(logs_prepare_rotation(live, 5), 0);
        assert_int_equal(logs_list_rotated(live, &l), 0);
        /* 3 rotated files stay (MaxFiles 5 - the live one - the one rotated next), the oldest went, all compressed */
        assert_int_equal(strv_length(l), 3);
        assert_true(endswith(l[0], "2.log.20230101-000003.gz"));
        assert_true(endswith(l[1], "2.log.20230101-000004.gz"));
        assert_true(endswith(l[2], "2.log.20230101-000005.gz"));
        assert_true(exists("2.log"));
        assert_true(exists("20.log.20230101-000000"));
}

static void test_prune_instances(void **state) {
        _cleanup_free_ char *d = path("c");
        const int keep[] = { 2, 4 };

        assert_int_equal(mkdir(d, 0755), 0);
        put("c/0.log", "x");
        put("c/0.log.20230101-000000.gz", "x");
        put("c/2.log", "x");
        put("c/3.log", "x");
        put("c/4.log", "x");
        put("c/5.log", "being created");
        put("c/30.log", "newer");
        put("c/notes.txt", "not a log");
        /* instances 0 and 3 are gone: their files go; 2 and 4 stay, and so does anything newer than 4 */
        assert_int_equal(logs_prune_instances(d, keep, 2), 3);
        assert_false(exists("c/0.log"));
        assert_false(exists("c/0.log.20230101-000000.gz"));
        assert_false(exists("c/3.log"));
        assert_true(exists("c/2.log") && exists("c/4.log") && exists("c/5.log") && exists("c/30.log"));
        assert_true(exists("c/notes.txt"));
        {
                _cleanup_free_ char *nope = path("nope");
                assert_int_equal(logs_prune_instances(nope, keep, 2), 0);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),           cmocka_unit_test(test_unused_and_excess),
                cmocka_unit_test(test_compress),        cmocka_unit_test(test_prepare),
                cmocka_unit_test(test_prune_instances),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
