/* SPDX-License-Identifier: Apache-2.0 */
/* The user namespace ranges of hostUsers:false pods (pkg/kubelet/userns): the kubelet's mappings (default, or its
 * subordinate IDs), distinct ranges, upstream's file kept in the pod directory and read back by a new manager (a
 * restart after kill -9 never hands a range out twice), release and orphans, and upstream's errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/string.h"
#include "kubelet/userns-testing.h"

static char tmp[] = "/tmp/ckubelet-userns-XXXXXX";

static char *path_of(const char *rel) {
        char *p = NULL;
        assert_true(asprintf(&p, "%s/%s", tmp, rel) > 0);
        return p;
}

static void put(const char *rel, const char *text) {
        _cleanup_free_ char *p = path_of(rel), *dir = strdup(p);
        *strrchr(dir, '/') = 0;
        assert_int_equal(mkdir_p(dir, 0755), 0);
        assert_int_equal(write_file_atomic(p, text, strlen(text), 0644), 0);
}

static int setup(void **state) {
        assert_non_null(mkdtemp(tmp));
        return 0;
}

static int teardown(void **state) {
        _cleanup_free_ char *cmd = NULL;
        assert_true(asprintf(&cmd, "rm -rf %s", tmp) > 0);
        assert_int_equal(system(cmd), 0);
        strcpy(tmp, "/tmp/ckubelet-userns-XXXXXX");
        return 0;
}

static struct userns_config config(void) {
        return (struct userns_config) { .root_dir = tmp, .max_pods = 110 };
}

static void test_default_ranges_kept_across_a_restart(void **state) {
        struct userns_config cfg = config();
        struct userns_manager *m = NULL;
        struct ck_error *err = NULL;
        uint32_t a, b, c, len, again;
        _cleanup_free_ char *file = path_of("pods/uid-a/userns"), *data = NULL, *want = NULL;

        assert_int_equal(userns_manager_new(&cfg, &m, &err), 0);
        assert_int_equal(userns_get_or_create(m, "uid-a", &a, &len, &err), 0);
        assert_int_equal(len, 65536);
        assert_true(a >= 65536 && a % 65536 == 0); /* never 0: the host's root is not mapped */
        assert_int_equal(userns_get_or_create(m, "uid-a", &again, &len, &err), 0);
        assert_int_equal(again, a);
        assert_int_equal(userns_get_or_create(m, "uid-b", &b, &len, &err), 0);
        assert_int_not_equal(a, b);
        /* upstream's file */
        assert_int_equal(read_full_file(file, 4096, &data, NULL), 0);
        assert_true(asprintf(&want,
                             "{\"uidMappings\":[{\"hostId\":%u,\"containerId\":0,\"length\":65536}],"
                             "\"gidMappings\":[{\"hostId\":%u,\"containerId\":0,\"length\":65536}]}",
                             a, a) > 0);
        assert_string_equal(data, want);
        /* a new manager (ckubelet restarted, even after kill -9) reads the ranges back */
        userns_manager_free(m);
        assert_int_equal(userns_manager_new(&cfg, &m, &err), 0);
        assert_int_equal(userns_allocated(m), 2);
        assert_int_equal(userns_lookup(m, "uid-a", &again, &len), 0);
        assert_int_equal(again, a);
        for (int i = 0; i < 200; i++) {
                char uid[32];
                snprintf(uid, sizeof(uid), "uid-c%d", i);
                assert_int_equal(userns_get_or_create(m, uid, &c, &len, &err), 0);
                assert_int_not_equal(c, a);
                assert_int_not_equal(c, b);
        }
        /* released: its file goes, its range is free */
        userns_release(m, "uid-a");
        assert_int_equal(access(file, F_OK), -1);
        assert_int_equal(userns_lookup(m, "uid-a", &again, &len), -ENOENT);
        assert_int_equal(userns_allocated(m), 201);
        userns_manager_free(m);
}

static bool only_b(const char *uid, void *userdata) {
        return streq(uid, "uid-b");
}

static void test_orphans(void **state) {
        struct userns_config cfg = config();
        struct userns_manager *m = NULL;
        struct ck_error *err = NULL;
        uint32_t h, len;

        assert_int_equal(userns_manager_new(&cfg, &m, &err), 0);
        assert_int_equal(userns_get_or_create(m, "uid-a", &h, &len, &err), 0);
        assert_int_equal(userns_get_or_create(m, "uid-b", &h, &len, &err), 0);
        userns_release_orphans(m, only_b, NULL);
        assert_int_equal(userns_allocated(m), 1);
        assert_int_equal(userns_lookup(m, "uid-b", &h, &len), 0);
        userns_manager_free(m);
}

/* the kubelet user's subordinate IDs: its range, split in pods' ranges; too few for maxPods is an error */
static void test_subordinate_ids(void **state) {
        struct userns_config cfg = config();
        _cleanup_free_ char *subuid = path_of("subuid"), *subgid = path_of("subgid");
        struct userns_manager *m = NULL;
        struct ck_error *err = NULL;
        uint32_t h, len;

        cfg.user_exists = true;
        cfg.subuid_path = subuid;
        cfg.subgid_path = subgid;
        put("subuid", "someone:100000:65536\nkubelet:655360:196608\n");
        put("subgid", "kubelet:655360:196608\n");
        assert_int_equal(userns_manager_new(&cfg, &m, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "kubelet user assigned IDs are not enough to support 110 pods");
        err = ck_error_free(err);
        cfg.max_pods = 3;
        assert_int_equal(userns_manager_new(&cfg, &m, &err), 0);
        for (int i = 0; i < 3; i++) {
                char uid[16];
                snprintf(uid, sizeof(uid), "p%d", i);
                assert_int_equal(userns_get_or_create(m, uid, &h, &len, &err), 0);
                assert_true(h >= 655360 && h < 655360 + 196608);
        }
        assert_int_equal(userns_get_or_create(m, "p3", &h, &len, &err), -ENOSPC);
        assert_string_equal(ck_error_message(err),
                            "create user namespace: could not find an empty slot to allocate a user namespace");
        err = ck_error_free(err);
        userns_manager_free(m);

        put("subgid", "kubelet:720896:196608\n");
        assert_int_equal(userns_manager_new(&cfg, &m, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "mismatched subuids and subgids for user \"kubelet\"");
        err = ck_error_free(err);
        put("subuid", "kubelet:1000:65536\n");
        put("subgid", "kubelet:1000:65536\n");
        assert_int_equal(userns_manager_new(&cfg, &m, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "kubelet user assigned ID 1000 is not a multiple of 65536");
        err = ck_error_free(err);
}

/* a file that is not what we write is refused with upstream's words; two pods claiming one range too */
static void test_bad_files(void **state) {
        struct userns_config cfg = config();
        struct userns_manager *m = NULL;
        struct ck_error *err = NULL;
        uint32_t h, len;

        put("pods/uid-x/userns", "{\"uidMappings\":[{\"hostId\":131072,\"containerId\":5,\"length\":65536}],"
                                 "\"gidMappings\":[{\"hostId\":131072,\"containerId\":5,\"length\":65536}]}");
        assert_int_equal(userns_manager_new(&cfg, &m, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "record pod mappings for existing pod \"uid-x\": invalid user "
                                                   "namespace configuration: UID 0 must be mapped");
        err = ck_error_free(err);
        put("pods/uid-x/userns", "{\"uidMappings\":[{\"hostId\":131072,\"containerId\":0,\"length\":65536}],"
                                 "\"gidMappings\":[{\"hostId\":131072,\"containerId\":0,\"length\":65536}]}");
        put("pods/uid-y/userns", "{\"uidMappings\":[{\"hostId\":131072,\"containerId\":0,\"length\":65536}],"
                                 "\"gidMappings\":[{\"hostId\":131072,\"containerId\":0,\"length\":65536}]}");
        assert_int_equal(userns_manager_new(&cfg, &m, &err), -EEXIST);
        assert_non_null(strstr(ck_error_message(err), "already taken"));
        err = ck_error_free(err);
        put("pods/uid-y/userns", "");
        assert_int_equal(userns_manager_new(&cfg, &m, &err), 0);
        assert_int_equal(userns_lookup(m, "uid-x", &h, &len), 0);
        assert_int_equal(h, 131072);
        userns_manager_free(m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_default_ranges_kept_across_a_restart, setup, teardown),
                cmocka_unit_test_setup_teardown(test_orphans, setup, teardown),
                cmocka_unit_test_setup_teardown(test_subordinate_ids, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_files, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
