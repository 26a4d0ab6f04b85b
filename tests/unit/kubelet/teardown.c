/* SPDX-License-Identifier: Apache-2.0 */
/* Issue 28 item 3: the kubelet goes while its pod sync passes have CRI calls in flight. Each pass cancels its own
 * calls when it is freed (the first thing the kubelet frees, after its pods API): none of their callbacks runs,
 * the runtime records them as cancelled, nothing is issued after them (no RemoveContainer after the stop, no
 * StopPodSandbox), and each call's context (a container being killed, a status read, an exec hook's command)
 * is freed with it (the ASan build of this test checks for leaks). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/time.h"
#include "fake/test_kubelet.h"

#define MIN_USEC (60 * USEC_PER_SEC)

static const char *const pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns1, uid: u1}\n"
                               "spec:\n  terminationGracePeriodSeconds: 30\n  containers:\n"
                               "  - {name: app, image: busybox:1.36}\n"
                               "  - name: hooked\n    image: busybox:1.36\n"
                               "    lifecycle: {preStop: {exec: {command: [sh, -c, sleep 1]}}}\n";

/* after the first skip calls of method, n more were issued and each ended cancelled (the runtime never answered) */
static void assert_cancelled(struct test_kubelet *t, const char *method, size_t skip, size_t n) {
        size_t seen = 0;

        for (size_t i = 0; i < fake_runtime_n_calls(t->rt); i++) {
                const struct fake_call *c = fake_runtime_call(t->rt, i);
                if (!strcmp(c->method, method) && ++seen > skip)
                        assert_int_equal(c->status, GRPC_CANCELLED);
        }
        assert_int_equal(seen, skip + n);
}

/* the pod goes: its passes kill the containers (a preStop exec hook, StopContainer) and the kubelet goes while
 * the runtime has not answered */
static void test_freed_while_killing(void **state) {
        struct test_kubelet *t = tk_new();

        tk_set_pods(t, pod);
        tk_start(t);
        assert_true(tk_run_until(t, tk_running, &(struct tk_want) { t, "u1", "app" }, MIN_USEC));
        assert_true(tk_run_until(t, tk_running, &(struct tk_want) { t, "u1", "hooked" }, MIN_USEC));

        fake_runtime_set_delay(t->rt, "StopContainer", 3600 * USEC_PER_SEC);
        fake_runtime_set_delay(t->rt, "ExecSync", 3600 * USEC_PER_SEC);
        tk_set_pods(t, "");
        assert_true(tk_run_until(t, tk_calls, &(struct tk_want) { .t = t, .what = "StopContainer", .n = 1 }, MIN_USEC));
        assert_true(tk_run_until(t, tk_calls, &(struct tk_want) { .t = t, .what = "ExecSync", .n = 1 }, MIN_USEC));
        tk_stop(t);

        assert_cancelled(t, "StopContainer", 0, 1); /* app's; hooked's waits for its preStop hook */
        assert_int_equal(fake_runtime_count(t->rt, "RemoveContainer"), 0);
        assert_int_equal(fake_runtime_count(t->rt, "StopPodSandbox"), 0);
        /* the hook's command was abandoned with its run; it ends with the kubelet's CRI client */
        assert_cancelled(t, "ExecSync", 0, 1);
        tk_free(t);
}

/* a restart's first pass reads the containers' statuses; the kubelet goes while the runtime has not answered */
static void test_freed_while_observing(void **state) {
        struct test_kubelet *t = tk_new();
        size_t before;

        tk_set_pods(t, pod);
        tk_start(t);
        assert_true(tk_run_until(t, tk_running, &(struct tk_want) { t, "u1", "app" }, MIN_USEC));
        tk_stop(t);

        fake_runtime_set_delay(t->rt, "ContainerStatus", 3600 * USEC_PER_SEC);
        before = fake_runtime_count(t->rt, "ContainerStatus");
        tk_start(t);
        assert_true(tk_run_until(t, tk_calls,
                                 &(struct tk_want) { .t = t, .what = "ContainerStatus", .n = (unsigned) before + 2 },
                                 MIN_USEC));
        tk_stop(t);
        assert_cancelled(t, "ContainerStatus", before, 2);                 /* the two containers' */
        assert_int_equal(fake_runtime_count(t->rt, "CreateContainer"), 2); /* nothing started after them */
        tk_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_freed_while_killing),
                cmocka_unit_test(test_freed_while_observing),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
