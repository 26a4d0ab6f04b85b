/* SPDX-License-Identifier: Apache-2.0 */
/* The evented PLEG through the whole kubelet on the fake runtime and the virtual clock: with EventedPLEG on and a
 * runtime that serves GetContainerEvents, a container's exit reaches its pod worker from the event (the relist
 * stretched to 10 minutes, the pod resync too, so nothing else can): the container is restarted within seconds;
 * with the gate off the same exit waits for the relist. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <stdlib.h>

#include "basic/string.h"
#include "basic/time.h"
#include "fake/fake_runtime.h"
#include "fake/test_kubelet.h"
#include "features/features.h"

#define POD \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\nspec:\n  containers:\n  - {name: app, image: busybox:1.36}\n"

static struct test_kubelet *start(bool gate) {
        struct test_kubelet *t;

        assert_int_equal(setenv("CKUBELET_TEST_PLEG_RELIST_SECONDS", "600", 1), 0);
        t = tk_new();
        assert_int_equal(feature_gates_set(&t->opts.feature_gates, "EventedPLEG", gate, false, NULL), 0);
        t->opts.sync_frequency_usec = 600 * USEC_PER_SEC;
        fake_runtime_set_events(t->rt, true);
        tk_set_pods(t, POD);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), 60 * USEC_PER_SEC);
        return t;
}

static bool restarted(struct test_kubelet *t, uint64_t within_usec) {
        const struct fake_container *c = fake_runtime_find(t->rt, "u1", "app");

        assert_non_null(c);
        assert_int_equal(fake_runtime_exit(t->rt, c->id, 7, 0), 0);
        return tk_run_until(t, tk_restarts, &(struct tk_want) { .t = t, .uid = "u1", .container = "app", .n = 1 },
                            within_usec);
}

static void test_exit_from_event(void **state) {
        struct test_kubelet *t = start(true);

        /* well before the relist (10 minutes away): only the event can have said it */
        assert_true(restarted(t, 30 * USEC_PER_SEC));
        assert_true(fake_runtime_n_streams(t->rt) == 1);
        tk_free(t);
}

static void test_exit_waits_for_relist_without_gate(void **state) {
        struct test_kubelet *t = start(false);

        assert_false(restarted(t, 30 * USEC_PER_SEC));
        assert_int_equal(fake_runtime_streams_opened(t->rt), 0);
        /* the relist sees it */
        assert_true(tk_run_until(t, tk_restarts, &(struct tk_want) { .t = t, .uid = "u1", .container = "app", .n = 1 },
                                 700 * USEC_PER_SEC));
        tk_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_exit_from_event),
                cmocka_unit_test(test_exit_waits_for_relist_without_gate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
