/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "basic/backoff.h"
#include "basic/time.h"

#define S USEC_PER_SEC

/* The CrashLoopBackOff sequence: 10s, 20s, 40s, ... capped at 300s; reset after a long run. */
static void test_crashloop_sequence(void **state) {
        struct backoff b;
        uint64_t t = 1000 * S, until = 0;
        uint64_t expected[] = { 10, 20, 40, 80, 160, 300, 300 };

        backoff_init(&b, 10 * S, 300 * S);
        /* first exit: not in back-off, restart at once */
        assert_false(backoff_in_backoff_since(&b, "k", t, t, NULL));
        assert_int_equal(backoff_next(&b, "k", t, t), 0);
        assert_int_equal(backoff_get(&b, "k"), 10 * S);

        for (size_t i = 1; i < ELEMENTSOF(expected); i++) {
                uint64_t exit_at = t + 1 * S; /* the container ran for a second */
                uint64_t prev = backoff_get(&b, "k");
                /* right after the exit it is in back-off until exit + current delay */
                assert_true(backoff_in_backoff_since(&b, "k", exit_at, exit_at + 1, &until));
                assert_int_equal(until, exit_at + prev);
                /* one microsecond before the end still waiting, at the end free to go */
                assert_true(backoff_in_backoff_since(&b, "k", exit_at, exit_at + prev - 1, NULL));
                assert_false(backoff_in_backoff_since(&b, "k", exit_at, exit_at + prev, NULL));
                t = exit_at + prev;
                assert_int_equal(backoff_next(&b, "k", exit_at, t), 0);
                assert_int_equal(backoff_get(&b, "k"), expected[i] * S);
        }

        /* a container that ran for more than 2*max (10 min) starts over at 10s */
        t += 601 * S;
        assert_false(backoff_in_backoff_since(&b, "k", t, t, NULL));
        assert_int_equal(backoff_next(&b, "k", t, t), 0);
        assert_int_equal(backoff_get(&b, "k"), 10 * S);
        backoff_done(&b);
}

static void test_keys_independent_and_gc(void **state) {
        struct backoff b;
        backoff_init(&b, 10 * S, 300 * S);
        assert_int_equal(backoff_next(&b, "a", 0, 100 * S), 0);
        assert_int_equal(backoff_next(&b, "a", 100 * S, 100 * S), 0);
        assert_int_equal(backoff_next(&b, "b", 100 * S, 100 * S), 0);
        assert_int_equal(backoff_get(&b, "a"), 20 * S);
        assert_int_equal(backoff_get(&b, "b"), 10 * S);
        assert_int_equal(backoff_last_update(&b, "b"), 100 * S);
        backoff_reset(&b, "a");
        assert_int_equal(backoff_get(&b, "a"), 0);
        backoff_gc(&b, 100 * S + 601 * S);
        assert_int_equal(backoff_get(&b, "b"), 0);
        assert_int_equal(b.n, 0);
        backoff_done(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_crashloop_sequence),
                cmocka_unit_test(test_keys_independent_and_gc),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
