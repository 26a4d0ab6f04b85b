/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 26 through the kubelet's own sync, against the fake runtime on the virtual clock: runAsNonRoot with an
 * image ImageStatus does not describe after its pull (refused as root, as upstream's getImageUser), and the
 * fsGroup modes of read-only volume types (roMask) next to an emptyDir's (rwMask). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "fake/test_kubelet.h"

#define MIN_USEC (60 * USEC_PER_SEC)

static int setup(void **state) {
        *state = tk_new();
        return 0;
}

static int teardown(void **state) {
        tk_free(*state);
        return 0;
}

static const char *waiting_message(struct test_kubelet *t, const char *uid, const char *container) {
        json_t *cs = tk_container_status(t, uid, container);
        return json_string_value(json_object_get(json_object_get(json_object_get(cs, "state"), "waiting"), "message"));
}

/* item 7: the pulled image is not listed by ImageStatus: its user is unknown, taken as root, and a runAsNonRoot
 * container is refused (before the fix it was created unchecked) */
static void test_run_as_non_root_unlisted_image(void **state) {
        struct test_kubelet *t = *state;

        assert_int_equal(fake_runtime_set_unlisted(t->rt, "example.com/app:1", true), 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  securityContext: {runAsNonRoot: true}\n"
                       "  containers:\n  - {name: app, image: example.com/app:1}\n");
        tk_start(t);
        tk_wait(t, tk_waiting,
                (&(struct tk_want) { .t = t, .uid = "u1", .container = "app", .what = "CreateContainerConfigError" }),
                MIN_USEC);
        assert_int_equal(fake_runtime_count(t->rt, "PullImage"), 1);
        assert_int_equal(fake_runtime_count(t->rt, "CreateContainer"), 0);
        assert_string_equal(waiting_message(t, "u1", "app"),
                            "container has runAsNonRoot and image will run as root (pod: \"web-testnode_default(u1)\", "
                            "container: app)");
        /* and stays refused */
        tk_run_for(t, MIN_USEC);
        assert_int_equal(fake_runtime_count(t->rt, "CreateContainer"), 0);
}

/* the same image listed with a non-root user runs */
static void test_run_as_non_root_listed_image(void **state) {
        struct test_kubelet *t = *state;

        assert_int_equal(fake_runtime_add_image(t->rt, "example.com/app:1", 1000, NULL), 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  securityContext: {runAsNonRoot: true}\n"
                       "  containers:\n  - {name: app, image: example.com/app:1}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
}

static mode_t mode_of(const char *path) {
        struct stat st;
        if (stat(path, &st) < 0)
                fail_msg("stat %s: %m", path);
        return st.st_mode & 07777;
}

/* item 8: fsGroup gives the group read only (0440) on a downwardAPI and a projected volume's files, read and
 * write (0660) on an emptyDir; directories also setgid and execute */
static void test_fs_group_read_only_volume_types(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *dw = NULL, *pj = NULL, *ed = NULL, *f = NULL;
        struct stat st;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  securityContext: {fsGroup: 2000}\n"
                       "  containers:\n  - name: app\n    image: busybox:1.36\n    volumeMounts:\n"
                       "    - {name: dw, mountPath: /dw}\n    - {name: pj, mountPath: /pj}\n"
                       "    - {name: scratch, mountPath: /scratch}\n"
                       "  volumes:\n"
                       "  - name: dw\n    downwardAPI:\n      defaultMode: 288\n" /* 0440 */ ""
                       "      items: [{path: name, fieldRef: {fieldPath: metadata.name}}]\n"
                       "  - name: pj\n    projected:\n      defaultMode: 288\n" /* 0440 */ "      sources:\n"
                       "      - downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}\n"
                       "  - {name: scratch, emptyDir: {}}\n");
        tk_start(t);
        /* the ownership walks run on worker threads: the clock moves only when the loop has been idle a while */
        if (!vloop_run_until_io(t->base, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }),
                                MIN_USEC, 100 * USEC_PER_MSEC))
                fail_msg("the pod did not run");
        assert_true(asprintf(&dw, "%s/root/pods/u1/volumes/kubernetes.io~downward-api/dw", t->dir) > 0);
        assert_true(asprintf(&pj, "%s/root/pods/u1/volumes/kubernetes.io~projected/pj", t->dir) > 0);
        assert_true(asprintf(&ed, "%s/root/pods/u1/volumes/kubernetes.io~empty-dir/scratch", t->dir) > 0);
        assert_true(asprintf(&f, "%s/name", dw) > 0);
        assert_int_equal(mode_of(f), 0440); /* -r--r-----, not -rw-rw---- */
        assert_int_equal(stat(f, &st), 0);
        assert_int_equal(st.st_gid, 2000);
        free(f);
        assert_true(asprintf(&f, "%s/name", pj) > 0);
        assert_int_equal(mode_of(f), 0440);
        free(f);
        assert_true(asprintf(&f, "%s/..data/", dw) > 0);
        assert_int_equal(mode_of(f) & 02050, 02050); /* the data directory: setgid and group read + execute */
        assert_int_equal(mode_of(f) & 0020, 0);      /* and no group write */
        assert_int_equal(mode_of(ed), 02777);        /* emptyDir 0777: rwMask, setgid */
        assert_int_equal(stat(ed, &st), 0);
        assert_int_equal(st.st_gid, 2000);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_run_as_non_root_unlisted_image, setup, teardown),
                cmocka_unit_test_setup_teardown(test_run_as_non_root_listed_image, setup, teardown),
                cmocka_unit_test_setup_teardown(test_fs_group_read_only_volume_types, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
