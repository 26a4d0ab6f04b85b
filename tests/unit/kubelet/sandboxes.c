/* SPDX-License-Identifier: Apache-2.0 */
/* Sandbox creations through the kubelet's sandbox slots (--max-parallel-sandbox-creations), against the fake
 * runtime on the virtual clock (every RunPodSandbox takes SANDBOX_USEC): at most the limit in flight, all at once
 * with 0, every pod running in the end, and a pod removed while its sandbox waits leaves the queue without
 * holding anyone up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "fake/test_kubelet.h"

#define MIN_USEC (60 * USEC_PER_SEC)
#define SANDBOX_USEC (5 * USEC_PER_SEC)
#define NPODS 5

static int setup(void **state) {
        *state = tk_new();
        return 0;
}

static int teardown(void **state) {
        tk_free(*state);
        return 0;
}

static void pod_yaml(char *buf, size_t size, size_t i) {
        int w = snprintf(buf, size,
                         "apiVersion: v1\nkind: Pod\nmetadata: {name: p%zu, uid: u%zu}\n"
                         "spec:\n  containers:\n  - {name: c, image: '%s'}\n",
                         i, i, TK_IMAGE);
        assert_true(w > 0 && (size_t) w < size);
}

static void set_pods(struct test_kubelet *t, size_t n) {
        char buf[4096] = "";
        size_t len = 0;

        for (size_t i = 0; i < n; i++) {
                if (i) {
                        assert_true(len + 4 < sizeof(buf));
                        len += (size_t) snprintf(buf + len, sizeof(buf) - len, "---\n");
                }
                pod_yaml(buf + len, sizeof(buf) - len, i);
                len += strlen(buf + len);
        }
        tk_set_pods(t, buf);
}

static void start_pods(struct test_kubelet *t) {
        assert_int_equal(fake_runtime_set_delay(t->rt, "RunPodSandbox", SANDBOX_USEC), 0);
        set_pods(t, NPODS);
        tk_start(t);
        tk_wait_running(t, NPODS, "c", 5 * MIN_USEC);
}

/* The most RunPodSandbox calls that were in flight at once (each lasts SANDBOX_USEC); one per pod. */
static unsigned max_overlap(struct test_kubelet *t) {
        assert_int_equal(fake_runtime_count(t->rt, "RunPodSandbox"), NPODS);
        return fake_runtime_max_in_flight(t->rt, "RunPodSandbox", SANDBOX_USEC);
}

static void test_limit(void **state) {
        struct test_kubelet *t = *state;

        t->opts.max_parallel_sandbox_creations = 2;
        start_pods(t);
        assert_int_equal(max_overlap(t), 2);
}

static void test_one_at_a_time(void **state) {
        struct test_kubelet *t = *state;

        t->opts.max_parallel_sandbox_creations = 1;
        start_pods(t);
        assert_int_equal(max_overlap(t), 1);
}

static void test_unlimited(void **state) {
        struct test_kubelet *t = *state;

        t->opts.max_parallel_sandbox_creations = 0;
        start_pods(t);
        assert_int_equal(max_overlap(t), NPODS);
}

/* One at a time: while the first RunPodSandbox runs, the other pods are removed; they leave the queue and are gone
 * before it returns, no sandbox is made for them, and the first pod still starts. */
static void test_removed_while_waiting(void **state) {
        struct test_kubelet *t = *state;
        const struct fake_call *first;
        char keep[512], uid[8];

        t->opts.max_parallel_sandbox_creations = 1;
        assert_int_equal(fake_runtime_set_delay(t->rt, "RunPodSandbox", 6 * SANDBOX_USEC), 0);
        set_pods(t, NPODS);
        tk_start(t);
        tk_wait(t, tk_calls, (&(struct tk_want) { .t = t, .what = "RunPodSandbox", .n = 1 }), MIN_USEC);
        tk_run_for(t, USEC_PER_SEC);
        assert_int_equal(fake_runtime_count(t->rt, "RunPodSandbox"), 1);
        first = fake_runtime_last(t->rt, "RunPodSandbox", NULL);
        assert_int_equal(first->status, -1); /* under way */
        /* whose it is: a sandbox call's subject is the pod name */
        size_t k = NPODS;
        for (size_t i = 0; i < NPODS; i++) {
                char name[8];
                snprintf(name, sizeof(name), "p%zu-", i); /* a static pod's name ends in the node's */
                if (startswith(first->subject, name))
                        k = i;
        }
        assert_true(k < NPODS);
        pod_yaml(keep, sizeof(keep), k);
        tk_set_pods(t, keep);
        for (size_t i = 0; i < NPODS; i++) {
                if (i == k)
                        continue;
                snprintf(uid, sizeof(uid), "u%zu", i);
                tk_wait(t, tk_pod_gone, (&(struct tk_want) { .t = t, .uid = uid }), 2 * SANDBOX_USEC);
        }
        assert_int_equal(fake_runtime_last(t->rt, "RunPodSandbox", NULL)->status, -1); /* the first still runs */
        snprintf(uid, sizeof(uid), "u%zu", k);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = uid, .container = "c" }), 2 * MIN_USEC);
        tk_run_for(t, MIN_USEC);
        assert_int_equal(fake_runtime_count(t->rt, "RunPodSandbox"), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_one_at_a_time, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unlimited, setup, teardown),
                cmocka_unit_test_setup_teardown(test_removed_while_waiting, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
