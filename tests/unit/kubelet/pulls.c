/* SPDX-License-Identifier: Apache-2.0 */
/* Image pulls through the kubelet's pull queue, against the fake runtime on the virtual clock (every PullImage
 * takes PULL_USEC): serialized one at a time, parallel up to maxParallelImagePulls or all at once, and a pod
 * removed while its pull waits leaves the queue without holding anyone up. */
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
#define PULL_USEC (10 * USEC_PER_SEC)
#define NPODS 4

static int setup(void **state) {
        *state = tk_new();
        return 0;
}

static int teardown(void **state) {
        tk_free(*state);
        return 0;
}

/* NPODS pods, each with its own image that is not on the node (p0 with img0:1, ...) */
static void set_pods(struct test_kubelet *t, size_t n) {
        char buf[4096] = "";
        size_t len = 0;

        for (size_t i = 0; i < n; i++) {
                int w = snprintf(buf + len, sizeof(buf) - len,
                                 "%sapiVersion: v1\nkind: Pod\nmetadata: {name: p%zu, uid: u%zu}\n"
                                 "spec:\n  containers:\n  - {name: c, image: 'img%zu:1'}\n",
                                 i ? "---\n" : "", i, i, i);
                assert_true(w > 0 && (size_t) w < sizeof(buf) - len);
                len += (size_t) w;
        }
        tk_set_pods(t, buf);
}

static void start_pods(struct test_kubelet *t) {
        assert_int_equal(fake_runtime_set_delay(t->rt, "PullImage", PULL_USEC), 0);
        set_pods(t, NPODS);
        tk_start(t);
        tk_wait_running(t, NPODS, "c", 5 * MIN_USEC);
}

/* The most PullImage calls that were in flight at once (each lasts PULL_USEC), and every image pulled once. */
static unsigned max_overlap(struct test_kubelet *t) {
        assert_int_equal(fake_runtime_count(t->rt, "PullImage"), NPODS);
        for (size_t i = 0; i < NPODS; i++) {
                char image[16];
                snprintf(image, sizeof(image), "img%zu:1", i);
                assert_int_equal(fake_runtime_count_subject(t->rt, "PullImage", image), 1);
        }
        return fake_runtime_max_in_flight(t->rt, "PullImage", PULL_USEC);
}

static void test_serialized(void **state) {
        struct test_kubelet *t = *state;

        assert_true(t->opts.serialize_image_pulls); /* the default */
        start_pods(t);
        assert_int_equal(max_overlap(t), 1);
}

static void test_parallel_limit(void **state) {
        struct test_kubelet *t = *state;

        t->opts.serialize_image_pulls = false;
        t->opts.max_parallel_image_pulls_set = true;
        t->opts.max_parallel_image_pulls = 2;
        start_pods(t);
        assert_int_equal(max_overlap(t), 2);
}

static void test_parallel_unlimited(void **state) {
        struct test_kubelet *t = *state;

        t->opts.serialize_image_pulls = false;
        start_pods(t);
        assert_int_equal(max_overlap(t), NPODS);
}

/* Serialized: while the first pull runs, the other pods are removed; they leave the queue and are gone before
 * that pull ends, their images are never pulled, and the first pod still starts. */
static void test_removed_while_waiting(void **state) {
        struct test_kubelet *t = *state;
        const struct fake_call *first;
        char keep[256];
        size_t k;

        assert_int_equal(fake_runtime_set_delay(t->rt, "PullImage", 6 * PULL_USEC), 0);
        set_pods(t, NPODS);
        tk_start(t);
        tk_wait(t, tk_calls, (&(struct tk_want) { .t = t, .what = "PullImage", .n = 1 }), MIN_USEC);
        /* every pod has asked (its sandbox is up): the others wait in the queue */
        tk_wait(t, tk_calls, (&(struct tk_want) { .t = t, .what = "RunPodSandbox", .n = NPODS }), MIN_USEC);
        tk_run_for(t, USEC_PER_SEC);
        assert_int_equal(fake_runtime_count(t->rt, "PullImage"), 1);
        first = fake_runtime_last(t->rt, "PullImage", NULL);
        assert_int_equal(first->status, -1); /* under way */
        assert_int_equal(sscanf(first->subject, "img%zu:1", &k), 1);
        snprintf(keep, sizeof(keep),
                 "apiVersion: v1\nkind: Pod\nmetadata: {name: p%zu, uid: u%zu}\n"
                 "spec:\n  containers:\n  - {name: c, image: 'img%zu:1'}\n",
                 k, k, k);
        tk_set_pods(t, keep);
        for (size_t i = 0; i < NPODS; i++) {
                char uid[8];
                if (i == k)
                        continue;
                snprintf(uid, sizeof(uid), "u%zu", i);
                tk_wait(t, tk_pod_gone, (&(struct tk_want) { .t = t, .uid = uid }), 2 * PULL_USEC);
        }
        assert_int_equal(fake_runtime_last(t->rt, "PullImage", NULL)->status, -1); /* the first still runs */
        snprintf(keep, sizeof(keep), "u%zu", k);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = keep, .container = "c" }), 2 * MIN_USEC);
        tk_run_for(t, MIN_USEC);
        assert_int_equal(fake_runtime_count(t->rt, "PullImage"), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_serialized, setup, teardown),
                cmocka_unit_test_setup_teardown(test_parallel_limit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_parallel_unlimited, setup, teardown),
                cmocka_unit_test_setup_teardown(test_removed_while_waiting, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
