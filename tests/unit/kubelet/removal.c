/* SPDX-License-Identifier: Apache-2.0 */
/* Dead containers and sandboxes the runtime refuses to remove (containerd 1.6 keeping the task of a container whose
 * StartContainer was abandoned: "cannot delete running task ...: failed precondition", issue 36), against the fake
 * runtime on the virtual clock: a pod no longer desired still terminates once it is stopped (upstream's
 * podResourcesAreReclaimed), what is left is tried again by the container GC with back-off (not at every pass), no
 * worker is made for it again, a restarted kubelet tries once, and everything goes once the runtime allows it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/string.h"
#include "basic/time.h"
#include "fake/test_kubelet.h"
#include "grpc/client.h"
#include "kubelet/kubelet-internal.h"

#define MIN_USEC (60 * USEC_PER_SEC)
#define REFUSED "cannot delete running task 0123: failed precondition"
#define POD \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\nspec:\n  containers:\n  - {name: a, image: busybox:1.36}\n"

static int setup(void **state) {
        *state = tk_new();
        return 0;
}

static int teardown(void **state) {
        tk_free(*state);
        return 0;
}

static bool no_worker(void *userdata) {
        struct test_kubelet *t = userdata;
        return !kubelet_find_worker(t->k, "u1");
}

static size_t removals(struct test_kubelet *t) {
        return fake_runtime_count(t->rt, "RemoveContainer") + fake_runtime_count(t->rt, "RemovePodSandbox");
}

static void refuse_removals(struct test_kubelet *t) {
        assert_int_equal(fake_runtime_fail(t->rt, "RemoveContainer", FAKE_EVERY_CALL, GRPC_FAILED_PRECONDITION,
                                           REFUSED),
                         0);
        assert_int_equal(fake_runtime_fail(t->rt, "RemovePodSandbox", FAKE_EVERY_CALL, GRPC_FAILED_PRECONDITION,
                                           REFUSED),
                         0);
}

/* The pod runs, then its manifest goes while the runtime refuses every removal: its worker ends. */
static void run_then_remove_refused(struct test_kubelet *t) {
        tk_set_pods(t, POD);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "a" }), MIN_USEC);
        refuse_removals(t);
        tk_set_pods(t, "");
        tk_wait(t, no_worker, t, MIN_USEC);
}

/* The pod's manifest goes while the runtime refuses every removal: the pod is stopped, its removal tried once, and
 * its worker ends (the pod is terminated, as a deleted API pod would be deleted from the API then) with the
 * exited container and the stopped sandbox still in the runtime. */
static void test_refused_removal_does_not_block_termination(void **state) {
        struct test_kubelet *t = *state;
        const struct fake_sandbox *sb;
        const struct fake_container *c;

        run_then_remove_refused(t);
        c = fake_runtime_find(t->rt, "u1", "a");
        sb = fake_runtime_pod_sandbox(t->rt, "u1");
        assert_non_null(c);
        assert_non_null(sb);
        assert_int_equal(c->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED);
        assert_int_equal(sb->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY);
        /* tried once each, not again at once */
        assert_int_equal(fake_runtime_count(t->rt, "RemoveContainer"), 1);
        assert_int_equal(fake_runtime_count(t->rt, "RemovePodSandbox"), 1);
        assert_null(tk_pod(t, "u1"));
}

/* What is left is tried again with back-off (10 s doubling to 5 min, at the container GC's passes, once a minute):
 * a handful of tries in 15 minutes, where a worker's back-off (1 s doubling to 10 s) would have made about ninety;
 * no worker is made again for the pod meanwhile. A restarted kubelet (its back-off forgotten) tries once, then backs
 * off again. Once the runtime allows it, everything goes. */
static void test_refused_removal_retried_with_backoff(void **state) {
        struct test_kubelet *t = *state;
        size_t before, tries;

        run_then_remove_refused(t);
        before = removals(t);
        for (int i = 0; i < 15; i++) {
                tk_run_for(t, MIN_USEC);
                assert_null(kubelet_find_worker(t->k, "u1"));
        }
        tries = removals(t) - before;
        print_message("removals tried in 15 min of back-off: %zu\n", tries);
        assert_true(tries >= 2 * 3); /* retried (a container and a sandbox each time) */
        assert_true(tries <= 2 * 8); /* but not at every pass */
        assert_non_null(fake_runtime_pod_sandbox(t->rt, "u1"));

        /* a restart forgets the back-off: one try by the pod's worker, then the back-off again. Whether the worker
         * ends at the pass that made that try or at the one its back-off wakes 10 s later depends on the order in
         * which the restarted kubelet's first passes and its start-up work on real threads (volume reconstruction)
         * complete: so one or two steps of the back-off in these 30 s, never more */
        tk_stop(t);
        before = removals(t);
        tk_start(t);
        tk_run_for(t, 30 * USEC_PER_SEC);
        assert_null(kubelet_find_worker(t->k, "u1"));
        tries = removals(t) - before;
        assert_true(tries == 2 || tries == 4);

        fake_runtime_clear_failures(t->rt, NULL);
        tk_wait(t, tk_pod_gone, (&(struct tk_want) { .t = t, .uid = "u1" }), 10 * MIN_USEC);
}

/* The pod comes back (the same manifest, the same UID) while its leftovers wait: it runs again, in a new sandbox
 * (the old exited instance is kept as its newest dead one, MaxPerPodContainer). */
static void test_pod_back_while_leftovers_wait(void **state) {
        struct test_kubelet *t = *state;

        run_then_remove_refused(t);
        tk_set_pods(t, POD);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "a" }), MIN_USEC);
        assert_int_equal(fake_runtime_count_instances(t->rt, "u1", "a", -1), 2);
        tk_run_for(t, 10 * MIN_USEC);
        assert_int_equal(fake_runtime_count_instances(t->rt, "u1", "a",
                                                      RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING),
                         1);
}

#define OTHER \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: other, uid: u2}\nspec:\n  containers:\n  - {name: a, image: busybox:1.36}\n"

static bool listed_u1(void *userdata) {
        struct test_kubelet *t = userdata;
        return pleg_has_pod(t->k->pleg, "u1");
}

/* Relists 30 s apart, so that a pod starts and ends between two of them. */
static int setup_slow_relist(void **state) {
        assert_int_equal(setenv("CKUBELET_TEST_PLEG_RELIST_SECONDS", "30", 1), 0);
        return setup(state);
}

static int teardown_slow_relist(void **state) {
        assert_int_equal(unsetenv("CKUBELET_TEST_PLEG_RELIST_SECONDS"), 0);
        return teardown(state);
}

/* A pod started and stopped between two relists, leaving what the runtime refuses to remove: the listing the
 * kubelet reconciles with at its end has never shown it, the next one does. No worker is made for it again (the
 * stale listing once let the kubelet forget it, and the next relist "found a pod in the runtime that is not
 * desired": the CI's containerd 2.1 run of tests/e2e/test_abandoned_start.py). */
static void test_leftovers_of_a_pod_no_listing_showed_yet(void **state) {
        struct test_kubelet *t = *state;

        run_then_remove_refused(t);
        assert_false(pleg_has_pod(t->k->pleg, "u1")); /* the race's precondition: no relist since it started */
        tk_set_pods(t, OTHER);                        /* the kubelet reconciles with that listing */
        tk_run_for(t, 2 * MIN_USEC);
        assert_int_equal(t->k->orphaned_runtime_pods, 0);
        assert_null(kubelet_find_worker(t->k, "u1"));
        assert_true(pleg_has_pod(t->k->pleg, "u1"));
        assert_non_null(fake_runtime_pod_sandbox(t->rt, "u1"));
}

/* A pod removed from the runtime completely, when the listing the kubelet reconciles with right after is older than
 * the removal and still shows it: no worker is made for it ("not desired") either. */
static void test_removed_pod_in_a_stale_listing(void **state) {
        struct test_kubelet *t = *state;

        tk_set_pods(t, POD);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "a" }), MIN_USEC);
        tk_wait(t, listed_u1, t, MIN_USEC);
        tk_set_pods(t, "");
        tk_wait(t, tk_pod_gone, (&(struct tk_want) { .t = t, .uid = "u1" }), MIN_USEC);
        tk_wait(t, no_worker, t, MIN_USEC);
        assert_true(pleg_has_pod(t->k->pleg, "u1")); /* the race's precondition: the listing predates the removal */
        tk_set_pods(t, OTHER);
        tk_run_for(t, 2 * MIN_USEC);
        assert_int_equal(t->k->orphaned_runtime_pods, 0);
        assert_false(pleg_has_pod(t->k->pleg, "u1"));
        assert_int_equal(t->k->n_ended, 0); /* forgotten once a later listing showed it gone */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_refused_removal_does_not_block_termination, setup, teardown),
                cmocka_unit_test_setup_teardown(test_refused_removal_retried_with_backoff, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pod_back_while_leftovers_wait, setup, teardown),
                cmocka_unit_test_setup_teardown(test_leftovers_of_a_pod_no_listing_showed_yet, setup_slow_relist,
                                                teardown_slow_relist),
                cmocka_unit_test_setup_teardown(test_removed_pod_in_a_stale_listing, setup_slow_relist,
                                                teardown_slow_relist),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
