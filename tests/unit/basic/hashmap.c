/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/hashmap.h"
#include "basic/macro.h"

static void test_empty(void **state) {
        struct hashmap m = {};
        size_t i = 0;

        assert_null(hashmap_get(&m, "a"));
        assert_false(hashmap_contains(&m, "a"));
        assert_null(hashmap_remove(&m, "a"));
        assert_int_equal(hashmap_size(&m), 0);
        assert_int_equal(hashmap_size(NULL), 0);
        assert_null(hashmap_get(NULL, "a"));
        assert_false(hashmap_iterate(&m, &i, NULL, NULL));
        hashmap_clear(&m);
        hashmap_done(&m);
        hashmap_done(NULL);
}

static void test_put_get_replace_remove(void **state) {
        struct hashmap m = {};
        int a = 1, b = 2, c = 3;
        char key[] = "b";

        assert_int_equal(hashmap_put(&m, "a", &a), 0);
        assert_int_equal(hashmap_put(&m, key, &b), 0);
        assert_int_equal(hashmap_put(&m, "nullvalue", NULL), 0);
        assert_int_equal(hashmap_size(&m), 3);
        assert_ptr_equal(hashmap_get(&m, "a"), &a);
        /* keys compare by content, not by pointer */
        assert_ptr_equal(hashmap_get(&m, "b"), &b);
        assert_true(hashmap_contains(&m, "nullvalue"));
        assert_null(hashmap_get(&m, "nullvalue"));
        assert_false(hashmap_contains(&m, "c"));
        /* replace: same size, new value */
        assert_int_equal(hashmap_put(&m, "b", &c), 0);
        assert_int_equal(hashmap_size(&m), 3);
        assert_ptr_equal(hashmap_get(&m, key), &c);
        {
                /* remove2 hands back the key as stored (the replacing put's), not the buffer asked with */
                const char *stored = NULL;
                char ask[] = "b";
                assert_ptr_equal(hashmap_remove2(&m, ask, &stored), &c);
                assert_non_null(stored);
                assert_ptr_not_equal(stored, ask);
                assert_string_equal(stored, "b");
                stored = NULL;
                assert_null(hashmap_remove2(&m, ask, &stored));
                assert_null(stored);
        }
        assert_null(hashmap_remove(&m, "b"));
        assert_false(hashmap_contains(&m, "b"));
        assert_int_equal(hashmap_size(&m), 2);
        hashmap_clear(&m);
        assert_int_equal(hashmap_size(&m), 0);
        assert_null(hashmap_get(&m, "a"));
        assert_int_equal(hashmap_put(&m, "a", &a), 0);
        assert_ptr_equal(hashmap_get(&m, "a"), &a);
        hashmap_done(&m);
}

/* Many keys, removals in between, against a plain array as the reference: every present key is found with its
 * value, every removed one is not, and iteration visits each present key exactly once. */
static void test_against_reference(void **state) {
        enum { N = 5000 };
        static char keys[N][40];
        static bool present[N];
        static unsigned seen[N];
        struct hashmap m = {};
        unsigned rnd = 12345;
        size_t n = 0;

        for (size_t i = 0; i < N; i++)
                snprintf(keys[i], sizeof(keys[i]), "%08zx-0000-4000-8000-%012zx", i * 7919, i);
        for (size_t round = 0; round < 20 * N; round++) {
                size_t k;
                rnd = rnd * 1103515245u + 12345u;
                k = (rnd >> 8) % N;
                if ((rnd >> 4) % 3 != 0) {
                        assert_int_equal(hashmap_put(&m, keys[k], &keys[k]), 0);
                        if (!present[k])
                                n++;
                        present[k] = true;
                } else {
                        void *v = hashmap_remove(&m, keys[k]);
                        assert_ptr_equal(v, present[k] ? (void *) &keys[k] : NULL);
                        if (present[k])
                                n--;
                        present[k] = false;
                }
                assert_int_equal(hashmap_size(&m), n);
                if (round % 997 == 0)
                        for (size_t i = 0; i < N; i++)
                                assert_ptr_equal(hashmap_get(&m, keys[i]), present[i] ? (void *) &keys[i] : NULL);
        }
        for (size_t i = 0; i < N; i++) {
                char copy[40];
                strcpy(copy, keys[i]);
                assert_int_equal(hashmap_contains(&m, copy), present[i]);
        }
        {
                const char *k;
                void *v;
                size_t visited = 0;
                for (size_t it = 0; hashmap_iterate(&m, &it, &k, &v);) {
                        size_t idx = (size_t) ((char(*)[40]) v - keys);
                        assert_true(idx < N);
                        assert_ptr_equal(k, keys[idx]);
                        assert_true(present[idx]);
                        seen[idx]++;
                        visited++;
                }
                assert_int_equal(visited, n);
                for (size_t i = 0; i < N; i++)
                        assert_int_equal(seen[i], present[i] ? 1 : 0);
        }
        /* the table stays at most half full */
        assert_true(m.cap >= 2 * m.n);
        hashmap_done(&m);
}

/* Keys that all land in the same home slot: linear probing and backward-shift deletion keep every other key
 * reachable whichever one is removed, wrapping around the table's end too. */
static void test_collisions_and_wraparound(void **state) {
        enum { N = 64 };
        static char keys[200000][12];
        const char *same[N];
        size_t n_same = 0, target;
        struct hashmap m = {};

        assert_int_equal(hashmap_reserve(&m, 64), 0); /* 128 slots */
        assert_int_equal(m.cap, 128);
        target = m.cap - 2; /* near the end: the run wraps to slot 0 */
        for (size_t i = 0; i < ELEMENTSOF(keys) && n_same < 40; i++) {
                snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
                if ((hashmap_hash(keys[i]) & (m.cap - 1)) == target)
                        same[n_same++] = keys[i];
        }
        assert_true(n_same >= 20);
        n_same = 20; /* 20 + a few others stays under half of 128 */
        for (size_t i = 0; i < n_same; i++)
                assert_int_equal(hashmap_put(&m, same[i], (void *) same[i]), 0);
        assert_int_equal(hashmap_put(&m, "other-1", (void *) "o1"), 0);
        assert_int_equal(hashmap_put(&m, "other-2", (void *) "o2"), 0);
        assert_int_equal(m.cap, 128);
        /* remove from the middle, the front and the back of the run, checking everything after each */
        for (size_t step = 0; step < n_same; step++) {
                size_t victim = (step * 7) % n_same;
                while (!hashmap_contains(&m, same[victim]))
                        victim = (victim + 1) % n_same;
                assert_ptr_equal(hashmap_remove(&m, same[victim]), same[victim]);
                for (size_t i = 0; i < n_same; i++)
                        if (i != victim && hashmap_contains(&m, same[i]))
                                assert_ptr_equal(hashmap_get(&m, same[i]), same[i]);
                assert_string_equal(hashmap_get(&m, "other-1"), "o1");
                assert_string_equal(hashmap_get(&m, "other-2"), "o2");
        }
        assert_int_equal(hashmap_size(&m), 2);
        hashmap_done(&m);
}

static void test_reserve(void **state) {
        struct hashmap m = {};

        assert_int_equal(hashmap_reserve(&m, 1000), 0);
        assert_true(m.cap >= 2000);
        {
                size_t cap = m.cap;
                static char keys[1000][8];
                for (size_t i = 0; i < 1000; i++) {
                        snprintf(keys[i], sizeof(keys[i]), "%zu", i);
                        assert_int_equal(hashmap_put(&m, keys[i], NULL), 0);
                }
                assert_int_equal(m.cap, cap); /* no growth after the reservation */
        }
        hashmap_done(&m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_empty),
                cmocka_unit_test(test_put_get_replace_remove),
                cmocka_unit_test(test_against_reference),
                cmocka_unit_test(test_collisions_and_wraparound),
                cmocka_unit_test(test_reserve),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
