/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 26 item 4: the work on a volume's contents (subPath binds) runs on workers with a deadline. A bind that
 * blocks (a stand-in for a network volume whose server stopped answering: the test hook blocks on a pipe) fails
 * only its container, with CreateContainerConfigError, once the deadline passes; meanwhile the loop keeps
 * running and another pod starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <unistd.h>

#include "basic/string.h"
#include "basic/time.h"
#include "fake/test_kubelet.h"
#include "volumes/subpath.h"

#define MIN_USEC (60 * USEC_PER_SEC)

static int pipefd[2] = { -1, -1 };
static atomic_bool released;
static atomic_int entered, left;

/* a worker thread's progress, in real time (bounded): the hook runs on the volume contents pool */
static bool wait_real(atomic_int *v, int want) {
        for (int i = 0; i < 10000 && atomic_load(v) != want; i++)
                usleep(1000);
        return atomic_load(v) == want;
}

static int blocking_hook(const struct vol_subpath_req *q) {
        char c;

        if (!streq(q->volume_name, "stalled"))
                return -EIO; /* no real bind mounts in unit tests */
        if (atomic_load(&released))
                return -EIO;
        atomic_fetch_add(&entered, 1);
        (void) read(pipefd[0], &c, 1); /* as a read from a server that does not answer */
        atomic_fetch_add(&left, 1);
        return -EIO;
}

static bool reason_and_ready(void *userdata) {
        return tk_waiting(userdata);
}

static void test_stalled_subpath_fails_only_its_container(void **state) {
        struct test_kubelet *t = tk_new();
        json_t *c;
        const char *msg;

        assert_int_equal(pipe(pipefd), 0);
        vol_subpath_bind_test_hook = blocking_hook;
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: stuck, namespace: ns1, uid: u1}\n"
                       "spec:\n  volumes: [{name: stalled, emptyDir: {}}]\n  containers:\n"
                       "  - {name: a, image: busybox:1.36, imagePullPolicy: IfNotPresent,\n"
                       "     volumeMounts: [{name: stalled, mountPath: /data, subPath: x}]}\n"
                       "---\n"
                       "apiVersion: v1\nkind: Pod\nmetadata: {name: fine, namespace: ns1, uid: u2}\n"
                       "spec:\n  containers:\n  - {name: b, image: busybox:1.36, imagePullPolicy: IfNotPresent}\n");
        tk_start(t);
        /* the other pod starts while the bind of the first hangs on its worker: the loop runs */
        assert_true(vloop_run_until_io(t->base, tk_running, &(struct tk_want) { .t = t, .uid = "u2", .container = "b" },
                                       MIN_USEC, 20000));
        /* the bind's worker thread got there (it may start after the other pod ran: wait for it) */
        assert_true(wait_real(&entered, 1));
        assert_null(fake_runtime_find(t->rt, "u1", "a"));
        /* the deadline (30 s) passes: only that container fails, with the reason */
        assert_true(vloop_run_until_io(t->base, reason_and_ready,
                                       &(struct tk_want) { .t = t,
                                                           .uid = "u1",
                                                           .container = "a",
                                                           .what = "CreateContainerConfigError" },
                                       MIN_USEC, 20000));
        c = tk_container_status(t, "u1", "a");
        msg = json_string_value(json_object_get(json_object_get(json_object_get(c, "state"), "waiting"), "message"));
        assert_non_null(msg);
        assert_non_null(strstr(msg, "did not finish within 30 s"));
        assert_null(fake_runtime_find(t->rt, "u1", "a"));
        assert_true(tk_running(&(struct tk_want) { .t = t, .uid = "u2", .container = "b" }));
        /* the server answers again: the late result is thrown away */
        atomic_store(&released, true);
        assert_int_equal(write(pipefd[1], "x", 1), 1);
        assert_true(wait_real(&left, 1)); /* the worker is done with it before the kubelet goes */
        vloop_run_until_io(t->base, tk_running, &(struct tk_want) { .t = t, .uid = "u2", .container = "b" }, 0, 20000);
        tk_free(t);
        vol_subpath_bind_test_hook = NULL;
        close(pipefd[0]);
        close(pipefd[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stalled_subpath_fails_only_its_container),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
