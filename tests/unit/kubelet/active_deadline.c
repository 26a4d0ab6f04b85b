/* SPDX-License-Identifier: Apache-2.0 */
/* activeDeadlineSeconds: pastActiveDeadline from the spec, the start time and the clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "apis/manifest.h"
#include "basic/error.h"
#include "basic/time.h"
#include "kubelet/active_deadline.h"

static struct pod *parse_pod(const char *extra) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n%s"
                             "  containers:\n  - {name: a, image: i}\n",
                             extra) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

#define S ((int64_t) USEC_PER_SEC)

static void test_deadline_table(void **state) {
        static const struct {
                const char *spec;
                int64_t start, now;
                bool passed;
                int64_t deadline; /* -1: untouched */
        } cases[] = {
                /* no deadline, or not started: never */
                { "", 100 * S, 10000 * S, false, -1 },
                { "  activeDeadlineSeconds: 5\n", 0, 10000 * S, false, -1 },
                /* before, at and after start + deadline */
                { "  activeDeadlineSeconds: 5\n", 100 * S, 104 * S, false, 105 * S },
                { "  activeDeadlineSeconds: 5\n", 100 * S, 105 * S, true, 105 * S },
                { "  activeDeadlineSeconds: 5\n", 100 * S, 200 * S, true, 105 * S },
                /* a large deadline does not overflow */
                { "  activeDeadlineSeconds: 2147483647\n", 100 * S, 200 * S, false, 100 * S + 2147483647LL * S },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_pod_free_ struct pod *p = parse_pod(cases[i].spec);
                int64_t d = -1;
                assert_int_equal(kubelet_active_deadline_passed(p, cases[i].start, cases[i].now, &d), cases[i].passed);
                assert_int_equal(d, cases[i].deadline);
        }
}

/* a deadline lowered on a running pod counts at once */
static void test_lowered_deadline(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod("  activeDeadlineSeconds: 600\n");
        _cleanup_pod_free_ struct pod *q = parse_pod("  activeDeadlineSeconds: 10\n");
        int64_t d;

        assert_false(kubelet_active_deadline_passed(p, 1000 * S, 1060 * S, &d));
        assert_int_equal(d, 1600 * S);
        assert_true(kubelet_active_deadline_passed(q, 1000 * S, 1060 * S, &d));
        assert_int_equal(d, 1010 * S);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_deadline_table),
                cmocka_unit_test(test_lowered_deadline),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
