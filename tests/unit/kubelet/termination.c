/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 26 item 4 (and its Low item on FallbackToLogsOnError): the termination message of an exited container, and
 * the end of its log with FallbackToLogsOnError, are read on a worker with a deadline. They are reported as before;
 * a read that blocks (a stand-in for a message file on a network volume whose server stopped answering: the test
 * hook blocks on a pipe before the file is opened) holds up nothing but that pod: the loop keeps running and
 * another pod starts, and once the deadline passes the container's status comes without the message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "basic/string.h"
#include "basic/time.h"
#include "basic/workpool-testing.h"
#include "fake/test_kubelet.h"
#include "kuberuntime/termination.h"

#define MIN_USEC (60 * USEC_PER_SEC)

static int pipefd[2] = { -1, -1 };
static atomic_bool released;
static atomic_int entered;

static int blocking_hook(const char *path) {
        char c;

        if (!strstr(path, "/pods/u1/") || atomic_load(&released))
                return 0;
        atomic_fetch_add(&entered, 1);
        (void) read(pipefd[0], &c, 1); /* as an open() on a server that does not answer */
        return 0;
}

static void write_file(const char *path, const char *data) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(data, f);
        fclose(f);
}

/* the host side of the container's message file, as the kubelet mounted it */
static const char *message_file(struct test_kubelet *t, const char *uid, const char *name) {
        const struct fake_container *fc = fake_runtime_find(t->rt, uid, name);

        assert_non_null(fc);
        for (size_t i = 0; i < fc->config->n_mounts; i++)
                if (streq(fc->config->mounts[i]->container_path, "/dev/termination-log"))
                        return fc->config->mounts[i]->host_path;
        fail_msg("no termination message mount");
        return NULL;
}

static json_t *terminated_state(struct test_kubelet *t, const char *uid, const char *name) {
        json_t *c = tk_container_status(t, uid, name);
        return c ? json_object_get(json_object_get(c, "state"), "terminated") : NULL;
}

static bool terminated(void *userdata) {
        const struct tk_want *w = userdata;
        return terminated_state(w->t, w->uid, w->container) != NULL;
}

static const char *terminated_message(struct test_kubelet *t, const char *uid, const char *name) {
        json_t *st = terminated_state(t, uid, name);
        assert_non_null(st);
        return json_string_value(json_object_get(st, "message"));
}

static void test_message_and_fallback_reported(void **state) {
        struct test_kubelet *t = tk_new();
        const struct fake_container *fc;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: file, namespace: ns1, uid: u1}\n"
                       "spec:\n  restartPolicy: Never\n  containers:\n"
                       "  - {name: a, image: busybox:1.36, imagePullPolicy: IfNotPresent}\n"
                       "---\n"
                       "apiVersion: v1\nkind: Pod\nmetadata: {name: logs, namespace: ns1, uid: u2}\n"
                       "spec:\n  restartPolicy: Never\n  containers:\n"
                       "  - {name: b, image: busybox:1.36, imagePullPolicy: IfNotPresent,\n"
                       "     terminationMessagePolicy: FallbackToLogsOnError}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "a" }), MIN_USEC);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u2", .container = "b" }), MIN_USEC);
        write_file(message_file(t, "u1", "a"), "written by the app");
        fc = fake_runtime_find(t->rt, "u2", "b");
        write_file(fc->log_path,
                   "2024-01-01T00:00:00.000000000Z stdout F one\n2024-01-01T00:00:00.000000000Z stderr F two\n");
        assert_int_equal(fake_runtime_exit(t->rt, fake_runtime_find(t->rt, "u1", "a")->id, 0, 0), 0);
        assert_int_equal(fake_runtime_exit(t->rt, fc->id, 2, 0), 0);
        tk_wait(t, terminated, (&(struct tk_want) { .t = t, .uid = "u1", .container = "a" }), MIN_USEC);
        tk_wait(t, terminated, (&(struct tk_want) { .t = t, .uid = "u2", .container = "b" }), MIN_USEC);
        assert_string_equal(terminated_message(t, "u1", "a"), "written by the app");
        assert_string_equal(terminated_message(t, "u2", "b"), "one\ntwo\n");
        tk_free(t);
}

static uint64_t real_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* The read is queued: wait (in real time, before the clock moves again) until its thread is blocked in it, so that
 * the deadline is counted from a read that runs. */
static bool read_blocked(void *userdata) {
        uint64_t end = real_usec() + 10 * USEC_PER_SEC;

        while (!atomic_load(&entered) && workpool_in_flight() > 0 && real_usec() < end)
                usleep(1000);
        return atomic_load(&entered) > 0;
}

static void test_blocked_read_holds_up_only_its_pod(void **state) {
        struct test_kubelet *t = tk_new();
        const char *one = "apiVersion: v1\nkind: Pod\nmetadata: {name: stuck, namespace: ns1, uid: u1}\n"
                          "spec:\n  restartPolicy: Never\n  containers:\n"
                          "  - {name: a, image: busybox:1.36, imagePullPolicy: IfNotPresent}\n";
        _cleanup_free_ char *two = NULL;
        const char *msg;

        assert_int_equal(pipe(pipefd), 0);
        kr_termination_read_test_hook = blocking_hook;
        tk_set_pods(t, one);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "a" }), MIN_USEC);
        write_file(message_file(t, "u1", "a"), "never seen");
        /* one job blocks on purpose: the clock may move while it is in flight */
        vloop_allow_stuck_jobs(1);
        assert_int_equal(fake_runtime_exit(t->rt, fake_runtime_find(t->rt, "u1", "a")->id, 1, 0), 0);
        tk_wait(t, read_blocked, NULL, MIN_USEC);

        /* another pod starts while the read hangs on its worker: the loop runs */
        assert_true(
                asprintf(&two,
                         "%s---\napiVersion: v1\nkind: Pod\nmetadata: {name: fine, namespace: ns1, uid: u2}\n"
                         "spec:\n  containers:\n  - {name: b, image: busybox:1.36, imagePullPolicy: IfNotPresent}\n",
                         one) > 0);
        tk_set_pods(t, two);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u2", .container = "b" }), MIN_USEC);
        assert_int_equal(atomic_load(&entered), 1);
        assert_false(terminated(&(struct tk_want) { .t = t, .uid = "u1", .container = "a" }));

        /* the deadline (30 s) passes: the container's status comes, without the message */
        tk_wait(t, terminated, (&(struct tk_want) { .t = t, .uid = "u1", .container = "a" }), MIN_USEC);
        msg = terminated_message(t, "u1", "a");
        assert_true(isempty(msg));
        assert_int_equal(json_integer_value(json_object_get(terminated_state(t, "u1", "a"), "exitCode")), 1);
        assert_true(tk_running(&(struct tk_want) { .t = t, .uid = "u2", .container = "b" }));

        /* the server answers again: the late result is thrown away */
        atomic_store(&released, true);
        assert_int_equal(write(pipefd[1], "x", 1), 1);
        vloop_allow_stuck_jobs(0);
        tk_run_for(t, USEC_PER_SEC);
        tk_free(t);
        kr_termination_read_test_hook = NULL;
        close(pipefd[0]);
        close(pipefd[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_message_and_fallback_reported),
                cmocka_unit_test(test_blocked_read_holds_up_only_its_pod),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
