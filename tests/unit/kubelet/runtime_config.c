/* SPDX-License-Identifier: Apache-2.0 */
/* The cgroup driver from the runtime's CRI RuntimeConfig (getCgroupDriverFromCRI), against the fake runtime on the
 * real clock: the runtime's answer replaces the configured driver; a runtime without the call (Unimplemented,
 * containerd 1.x) leaves it at once; a runtime that does not answer is asked 3 times, 2 s apart, then the
 * configured driver stays. On the real clock: the function runs the loop itself until the runtime answered, as
 * at start-up, which the virtual clock (advanced by the test's own loop runs) cannot drive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/string.h"
#include "basic/time.h"
#include "fake/fake_runtime.h"
#include "kubelet/runtime_config.h"

struct ctx {
        struct event_base *base;
        struct fake_runtime *rt;
        struct kubelet_options o;
};

static int setup(void **state) {
        struct ctx *c = calloc(1, sizeof(*c));

        assert_non_null(c);
        c->base = event_base_new();
        assert_int_equal(fake_runtime_new(c->base, &c->rt), 0);
        assert_int_equal(kubelet_options_init(&c->o), 0);
        assert_int_equal(free_and_strdup(&c->o.container_runtime_endpoint, fake_runtime_endpoint(c->rt)), 0);
        *state = c;
        return 0;
}

static int teardown(void **state) {
        struct ctx *c = *state;

        kubelet_options_done(&c->o);
        fake_runtime_free(c->rt);
        event_base_free(c->base);
        free(c);
        return 0;
}

static size_t calls(struct ctx *c, const char *method) {
        size_t n = 0;
        for (size_t i = 0; i < fake_runtime_n_calls(c->rt); i++)
                if (streq(fake_runtime_call(c->rt, i)->method, method))
                        n++;
        return n;
}

static void test_answered(void **state) {
        struct ctx *c = *state;

        fake_runtime_set_cgroup_driver(c->rt, RUNTIME__V1__CGROUP_DRIVER__SYSTEMD);
        assert_string_equal(c->o.cgroup_driver, "cgroupfs");
        assert_int_equal(kubelet_cgroup_driver_from_cri(c->base, &c->o, NULL), 0);
        assert_string_equal(c->o.cgroup_driver, "systemd");
        fake_runtime_set_cgroup_driver(c->rt, RUNTIME__V1__CGROUP_DRIVER__CGROUPFS);
        assert_int_equal(kubelet_cgroup_driver_from_cri(c->base, &c->o, NULL), 0);
        assert_string_equal(c->o.cgroup_driver, "cgroupfs");
        assert_int_equal(calls(c, "RuntimeConfig"), 2);
}

static void test_unimplemented(void **state) {
        struct ctx *c = *state;
        uint64_t t0 = now_usec();

        assert_int_equal(free_and_strdup(&c->o.cgroup_driver, "systemd"), 0);
        assert_int_equal(kubelet_cgroup_driver_from_cri(c->base, &c->o, NULL), 0);
        assert_string_equal(c->o.cgroup_driver, "systemd");
        assert_int_equal(calls(c, "RuntimeConfig"), 1); /* not retried */
        assert_true(now_usec() - t0 < USEC_PER_SEC);
}

static void test_down(void **state) {
        struct ctx *c = *state;
        uint64_t t0 = now_usec();

        fake_runtime_set_cgroup_driver(c->rt, RUNTIME__V1__CGROUP_DRIVER__SYSTEMD);
        fake_runtime_set_down(c->rt, true);
        assert_int_equal(kubelet_cgroup_driver_from_cri(c->base, &c->o, NULL), 0);
        assert_string_equal(c->o.cgroup_driver, "cgroupfs");
        assert_int_equal(calls(c, "RuntimeConfig"), 3);
        assert_true(now_usec() - t0 >= 4 * USEC_PER_SEC); /* 2 s between tries */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_answered, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unimplemented, setup, teardown),
                cmocka_unit_test_setup_teardown(test_down, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
