/* SPDX-License-Identifier: Apache-2.0 */
/* Container and sandbox GC selection (kuberuntime_gc.go's policy). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "basic/macro.h"
#include "kuberuntime/gc.h"

#define S(x) ((int64_t) (x) *1000000000LL)
#define NOW_USEC (UINT64_C(1000) * 1000000)

static bool deleted(const char *uid, void *ud) {
        return streq(uid, "gone");
}

static bool terminated(const char *uid, void *ud) {
        return streq(uid, "done");
}

static const struct kr_gc_pods PODS = { .deleted = deleted, .terminated = terminated };

static bool has(const struct kr_gc_container **l, size_t n, const char *id) {
        for (size_t i = 0; i < n; i++)
                if (streq(l[i]->id, id))
                        return true;
        return false;
}

static void test_per_container(void **state) {
        const struct kr_gc_container c[] = {
                { .id = "a1", .pod_uid = "p", .name = "a", .created_nsec = S(100) },
                { .id = "a2", .pod_uid = "p", .name = "a", .created_nsec = S(200) },
                { .id = "a3", .pod_uid = "p", .name = "a", .created_nsec = S(300) },
                { .id = "a4", .pod_uid = "p", .name = "a", .created_nsec = S(400), .running = true },
                { .id = "b1", .pod_uid = "p", .name = "b", .created_nsec = S(150) },
                { .id = "q1", .pod_uid = "q", .name = "a", .created_nsec = S(50) },
                { .id = "q2", .pod_uid = "q", .name = "a", .created_nsec = S(990) }, /* younger than a MinAge of 20s */
        };
        struct kr_gc_policy policy = { .min_age_usec = 0, .max_per_pod_container = 1, .max_containers = -1 };
        const struct kr_gc_container **out = NULL;
        size_t n = 0;

        /* the newest dead instance of each container stays, running ones are never touched */
        assert_int_equal(kr_gc_select_containers(&policy, c, ELEMENTSOF(c), &PODS, true, false, NOW_USEC, &out, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(out[0]->id, "a1"); /* oldest first */
        assert_string_equal(out[1]->id, "a2");
        assert_string_equal(out[2]->id, "q1");
        free(out);

        /* MinAge: q2 is too young to count, so q1 is the newest evictable one of its group and stays */
        policy.min_age_usec = 20 * 1000000;
        assert_int_equal(kr_gc_select_containers(&policy, c, ELEMENTSOF(c), &PODS, true, false, NOW_USEC, &out, &n), 0);
        assert_int_equal(n, 2);
        assert_false(has(out, n, "q1"));
        free(out);

        /* keep two per container */
        policy = (struct kr_gc_policy) { .max_per_pod_container = 2, .max_containers = -1 };
        assert_int_equal(kr_gc_select_containers(&policy, c, ELEMENTSOF(c), &PODS, true, false, NOW_USEC, &out, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(out[0]->id, "a1");
        free(out);
}

static void test_max_containers(void **state) {
        const struct kr_gc_container c[] = {
                { .id = "a1", .pod_uid = "p", .name = "a", .created_nsec = S(100) },
                { .id = "a2", .pod_uid = "p", .name = "a", .created_nsec = S(200) },
                { .id = "b1", .pod_uid = "p", .name = "b", .created_nsec = S(150) },
                { .id = "b2", .pod_uid = "p", .name = "b", .created_nsec = S(250) },
                { .id = "c1", .pod_uid = "r", .name = "c", .created_nsec = S(10) },
        };
        struct kr_gc_policy policy = { .max_per_pod_container = -1, .max_containers = 2 };
        const struct kr_gc_container **out = NULL;
        size_t n = 0;

        /* 5 dead, at most 2: an equal share of 2/3 → 1 per unit leaves a2, b2, c1; then the oldest (c1) */
        assert_int_equal(kr_gc_select_containers(&policy, c, ELEMENTSOF(c), &PODS, true, false, NOW_USEC, &out, &n), 0);
        assert_int_equal(n, 3);
        assert_true(has(out, n, "a1"));
        assert_true(has(out, n, "b1"));
        assert_true(has(out, n, "c1"));
        free(out);
}

static void test_deleted_and_terminated(void **state) {
        const struct kr_gc_container c[] = {
                { .id = "g1", .pod_uid = "gone", .name = "a", .created_nsec = S(100) },
                { .id = "d1", .pod_uid = "done", .name = "a", .created_nsec = S(100) },
                { .id = "p1", .pod_uid = "p", .name = "a", .created_nsec = S(100) },
        };
        struct kr_gc_policy policy = { .max_per_pod_container = 1, .max_containers = -1 };
        const struct kr_gc_container **out = NULL;
        size_t n = 0;

        /* a deleted pod loses its last instance too, but only once every source was heard from */
        assert_int_equal(kr_gc_select_containers(&policy, c, ELEMENTSOF(c), &PODS, false, true, NOW_USEC, &out, &n), 0);
        assert_int_equal(n, 0);
        free(out);
        assert_int_equal(kr_gc_select_containers(&policy, c, ELEMENTSOF(c), &PODS, true, false, NOW_USEC, &out, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(out[0]->id, "g1");
        free(out);
        /* DeleteAllUnusedContainers: terminated pods too */
        assert_int_equal(kr_gc_select_containers(&policy, c, ELEMENTSOF(c), &PODS, true, true, NOW_USEC, &out, &n), 0);
        assert_int_equal(n, 2);
        assert_true(has(out, n, "d1"));
        free(out);
}

static bool has_sandbox(const struct kr_gc_sandbox **out, size_t n, const char *id) {
        for (size_t i = 0; i < n; i++)
                if (streq(out[i]->id, id))
                        return true;
        return false;
}

static void test_sandboxes(void **state) {
        const struct kr_gc_sandbox s[] = {
                { .id = "p-old", .pod_uid = "p", .created_nsec = S(1) },
                { .id = "p-mid", .pod_uid = "p", .created_nsec = S(2) }, /* still holds a container */
                { .id = "p-new", .pod_uid = "p", .created_nsec = S(3) }, /* the newest stays */
                { .id = "g-a", .pod_uid = "gone", .created_nsec = S(1) },
                { .id = "g-b", .pod_uid = "gone", .created_nsec = S(2), .ready = true },
        };
        const struct kr_gc_container c[] = { { .id = "x", .sandbox_id = "p-mid", .pod_uid = "p", .name = "a" } };
        const struct kr_gc_sandbox **out = NULL;
        size_t n = 0;

        assert_int_equal(kr_gc_select_sandboxes(s, ELEMENTSOF(s), c, ELEMENTSOF(c), &PODS, false, &out, &n), 0);
        assert_int_equal(n, 2);
        assert_true(has_sandbox(out, n, "p-old"));
        assert_true(has_sandbox(out, n, "g-a")); /* a ready sandbox is never removed */
        free(out);
}

/* Many pods, their sandboxes interleaved: per pod all but the newest go unless a container still uses one */
static void test_sandboxes_many(void **state) {
        enum { PODS_N = 400, PER = 3 };
        static struct kr_gc_sandbox s[PODS_N * PER];
        static struct kr_gc_container c[PODS_N];
        static char ids[PODS_N * PER][24], uids[PODS_N][16];
        const struct kr_gc_sandbox **out = NULL;
        size_t n = 0, k = 0;

        for (size_t v = 0; v < PER; v++) /* every pod's first sandbox, then every pod's second, ... */
                for (size_t p = 0; p < PODS_N; p++) {
                        snprintf(uids[p], sizeof(uids[p]), "u%zu", p);
                        snprintf(ids[k], sizeof(ids[k]), "s%zu-%zu", p, v);
                        s[k] = (struct kr_gc_sandbox) { .id = ids[k], .pod_uid = uids[p], .created_nsec = S(v + 1) };
                        k++;
                }
        /* pod p's oldest sandbox (v = 0, index p) still holds a container for even p */
        for (size_t p = 0; p < PODS_N; p++)
                c[p] = (struct kr_gc_container) {
                        .id = "c", .pod_uid = uids[p], .name = "a", .sandbox_id = p % 2 == 0 ? ids[p] : "elsewhere"
                };
        assert_int_equal(kr_gc_select_sandboxes(s, ELEMENTSOF(s), c, ELEMENTSOF(c), &PODS, false, &out, &n), 0);
        assert_int_equal(n, PODS_N * (PER - 1) - PODS_N / 2);
        for (size_t i = 0; i < n; i++)
                assert_true(out[i]->created_nsec < S(PER)); /* never a pod's newest */
        assert_true(has_sandbox(out, n, ids[1]));           /* pod 1's oldest: no container */
        assert_false(has_sandbox(out, n, ids[0]));          /* pod 0's oldest: a container uses it */
        assert_true(has_sandbox(out, n, ids[PODS_N]));      /* pod 0's second */
        assert_false(has_sandbox(out, n, ids[2 * PODS_N])); /* pod 0's newest */
        free(out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_per_container),  cmocka_unit_test(test_sandboxes_many),
                cmocka_unit_test(test_max_containers), cmocka_unit_test(test_deleted_and_terminated),
                cmocka_unit_test(test_sandboxes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
