/* SPDX-License-Identifier: Apache-2.0 */
/* lifecycle.stopSignal through the whole kubelet on the fake runtime: with ContainerStopSignals on it is the CRI
 * ContainerConfig's stop_signal (the CRI's Signal numbering), off it is not sent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/time.h"
#include "fake/fake_runtime.h"
#include "fake/test_kubelet.h"
#include "features/features.h"

#define POD                                                                                                      \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\nspec:\n  os: {name: linux}\n  containers:\n" \
        "  - {name: app, image: busybox:1.36, lifecycle: {stopSignal: SIGUSR1}}\n"

static int sent(bool gate) {
        struct test_kubelet *t = tk_new();
        const struct fake_container *c;
        int sig;

        assert_int_equal(feature_gates_set(&t->opts.feature_gates, "ContainerStopSignals", gate, false, NULL), 0);
        tk_set_pods(t, POD);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), 60 * USEC_PER_SEC);
        c = fake_runtime_find(t->rt, "u1", "app");
        assert_non_null(c);
        sig = (int) c->config->stop_signal;
        tk_free(t);
        return sig;
}

static void test_sent_with_gate(void **state) {
        assert_int_equal(sent(true), RUNTIME__V1__SIGNAL__SIGNAL_SIGUSR1);
        assert_int_equal(sent(false), RUNTIME__V1__SIGNAL__SIGNAL_RUNTIME_DEFAULT);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sent_with_gate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
