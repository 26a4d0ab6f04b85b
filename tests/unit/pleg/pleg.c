/* SPDX-License-Identifier: Apache-2.0 */
/* The PLEG against the fake runtime on the virtual clock: a relist every period, one event per pod whose
 * sandboxes or containers appeared, changed state or disappeared, none for the others, nothing while the
 * runtime is down, and relists that never overlap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "fake/fake_runtime.h"
#include "fake/vloop.h"
#include "pleg/pleg.h"

struct ctx {
        struct event_base *base;
        struct fake_runtime *rt;
        struct cri_client *cri;
        struct pleg *pleg;
        char **changed; /* pod UIDs reported, in order, since the last take */
        unsigned relists, failed;
};

static void on_pod_changed(const char *uid, void *userdata) {
        struct ctx *c = userdata;
        assert_int_equal(strv_extend(&c->changed, uid), 0);
}

static void on_relisted(bool ok, void *userdata) {
        struct ctx *c = userdata;
        if (ok)
                c->relists++;
        else
                c->failed++;
}

static int setup(void **state) {
        static const struct pleg_callbacks cb = { .pod_changed = on_pod_changed, .relisted = on_relisted };
        struct ctx *c = calloc(1, sizeof(*c));

        assert_non_null(c);
        c->base = event_base_new();
        assert_non_null(c->base);
        vloop_enable(c->base);
        assert_int_equal(fake_runtime_new(c->base, &c->rt), 0);
        assert_int_equal(cri_client_new(c->base, fake_runtime_endpoint(c->rt), NULL, 10 * USEC_PER_SEC, &c->cri), 0);
        assert_int_equal(pleg_new(c->base, c->cri, USEC_PER_SEC, &cb, c, &c->pleg), 0);
        *state = c;
        return 0;
}

static int teardown(void **state) {
        struct ctx *c = *state;

        pleg_free(c->pleg);
        cri_client_free(c->cri);
        fake_runtime_free(c->rt);
        event_base_free(c->base);
        vloop_disable();
        strv_free(c->changed);
        free(c);
        return 0;
}

struct relist_want {
        struct ctx *c;
        unsigned target;
};

static bool relisted(void *userdata) {
        struct relist_want *w = userdata;
        return w->c->relists + w->c->failed >= w->target;
}

/* the next relist, completed within cap_usec of virtual time */
static void relist_within(struct ctx *c, uint64_t cap_usec) {
        struct relist_want w = { c, c->relists + c->failed + 1 };
        assert_true(vloop_run_until(c->base, relisted, &w, cap_usec));
}

/* the next relist, completed (due within a period; a slow one takes longer) */
static void relist(struct ctx *c) {
        relist_within(c, 5 * USEC_PER_SEC);
}

/* the UIDs reported since the last call, joined */
static char *take(struct ctx *c) {
        char *s = strv_join(c->changed, " ");
        assert_non_null(s);
        c->changed = strv_free(c->changed);
        return s;
}

#define assert_changed(c, expected)                  \
        do {                                         \
                _cleanup_free_ char *_s = take(c);   \
                assert_string_equal(_s, (expected)); \
        } while (0)

static void test_events(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *sa = NULL, *ca = NULL, *sb = NULL, *cb1 = NULL, *cb2 = NULL;
        size_t n_sb, n_rsb, n_c, n_rc;

        assert_int_equal(pleg_start(c->pleg), 0);
        relist(c);
        assert_changed(c, "");
        assert_null(pleg_pod_uids(c->pleg)[0]);

        /* pod a: a sandbox and a running container appear */
        assert_int_equal(fake_runtime_add_sandbox(c->rt, "uid-a", "a", 0, &sa), 0);
        assert_int_equal(fake_runtime_add_container(c->rt, sa, "app", 0, true, &ca), 0);
        relist(c);
        assert_changed(c, "uid-a"); /* once for the pod, not once per object */
        assert_string_equal(pleg_pod_uids(c->pleg)[0], "uid-a");
        pleg_counts(c->pleg, &n_sb, &n_rsb, &n_c, &n_rc);
        assert_int_equal(n_sb, 1);
        assert_int_equal(n_rsb, 1);
        assert_int_equal(n_c, 1);
        assert_int_equal(n_rc, 1);

        /* nothing changes: nothing reported */
        relist(c);
        relist(c);
        assert_changed(c, "");
        assert_int_equal(pleg_gone_count(c->pleg), 0);

        /* pod b appears with a created container: only b */
        assert_int_equal(fake_runtime_add_sandbox(c->rt, "uid-b", "b", 0, &sb), 0);
        assert_int_equal(fake_runtime_add_container(c->rt, sb, "x", 0, false, &cb1), 0);
        relist(c);
        assert_changed(c, "uid-b");

        /* started, and a's container died: both, once each */
        assert_int_equal(fake_runtime_exit(c->rt, ca, 1, 0), 0);
        {
                const struct fake_container *x = fake_runtime_container(c->rt, cb1);
                assert_non_null(x);
        }
        assert_int_equal(fake_runtime_vanish(c->rt, cb1), 0);
        assert_int_equal(fake_runtime_add_container(c->rt, sb, "x", 1, true, &cb2), 0);
        relist(c);
        {
                _cleanup_free_ char *s = take(c);
                assert_true(streq(s, "uid-a uid-b") || streq(s, "uid-b uid-a"));
        }
        pleg_counts(c->pleg, &n_sb, &n_rsb, &n_c, &n_rc);
        assert_int_equal(n_c, 2);
        assert_int_equal(n_rc, 1);
        assert_int_equal(pleg_gone_count(c->pleg), 1); /* cb1 */

        /* a container removed: its pod */
        assert_int_equal(fake_runtime_vanish(c->rt, ca), 0);
        relist(c);
        assert_changed(c, "uid-a");
        assert_int_equal(pleg_gone_count(c->pleg), 2);

        /* a sandbox that stops (NOTREADY): its pod */
        assert_int_equal(fake_runtime_sandbox_die(c->rt, sb), 0);
        relist(c);
        assert_changed(c, "uid-b");
        pleg_counts(c->pleg, &n_sb, &n_rsb, &n_c, &n_rc);
        assert_int_equal(n_rsb, 1);
        assert_int_equal(n_rc, 0);

        /* the sandbox of a removed: a is gone from the listing */
        assert_int_equal(fake_runtime_sandbox_vanish(c->rt, sa), 0);
        relist(c);
        assert_changed(c, "uid-a");
        assert_string_equal(pleg_pod_uids(c->pleg)[0], "uid-b");
        assert_null(pleg_pod_uids(c->pleg)[1]);
        assert_int_equal(pleg_gone_count(c->pleg), 3);
}

/* Many pods, listed out of UID order, each with a sandbox and two containers: the set of pod UIDs is sorted and
 * distinct, pleg_has_pod finds each one and no other, a pod whose several objects changed is reported once, and
 * every relist is observed by the relist histograms. */
static void test_many_pods(void **state) {
        struct ctx *c = *state;
        enum { N = 300 };
        char *sandboxes[N] = {}, *containers[N] = {}, *extras[N] = {};
        char **reported;

        assert_int_equal(pleg_start(c->pleg), 0);
        relist(c);
        for (unsigned i = 0; i < N; i++) {
                char uid[32], name[32];
                unsigned k = (i * 7919) % N; /* not in UID order */
                snprintf(uid, sizeof(uid), "uid-%04u", k);
                snprintf(name, sizeof(name), "p%u", k);
                assert_int_equal(fake_runtime_add_sandbox(c->rt, uid, name, 0, &sandboxes[k]), 0);
                assert_int_equal(fake_runtime_add_container(c->rt, sandboxes[k], "a", 0, true, &containers[k]), 0);
                assert_int_equal(fake_runtime_add_container(c->rt, sandboxes[k], "b", 0, true, &extras[k]), 0);
        }
        relist(c);
        reported = c->changed;
        assert_int_equal(strv_length(reported), N); /* each pod once, for its three new objects */
        for (unsigned k = 0; k < N; k++) {
                char uid[32];
                snprintf(uid, sizeof(uid), "uid-%04u", k);
                assert_string_equal(pleg_pod_uids(c->pleg)[k], uid); /* sorted, one entry per pod */
                assert_true(pleg_has_pod(c->pleg, uid));
        }
        assert_null(pleg_pod_uids(c->pleg)[N]);
        assert_false(pleg_has_pod(c->pleg, "uid-9999"));
        assert_false(pleg_has_pod(c->pleg, ""));
        c->changed = strv_free(c->changed);

        /* pod 17's container dies and its sandbox stops: pod 17 alone, once */
        assert_int_equal(fake_runtime_exit(c->rt, containers[17], 1, 0), 0);
        assert_int_equal(fake_runtime_sandbox_die(c->rt, sandboxes[17]), 0);
        relist(c);
        assert_changed(c, "uid-0017");

        /* pod 3 gone entirely: no longer in the set */
        assert_int_equal(fake_runtime_vanish(c->rt, containers[3]), 0);
        assert_int_equal(fake_runtime_vanish(c->rt, extras[3]), 0);
        assert_int_equal(fake_runtime_sandbox_vanish(c->rt, sandboxes[3]), 0);
        relist(c);
        assert_changed(c, "uid-0003");
        assert_false(pleg_has_pod(c->pleg, "uid-0003"));
        assert_true(pleg_has_pod(c->pleg, "uid-0004"));
        assert_int_equal(pleg_relist_duration(c->pleg)->count, c->relists + c->failed);
        assert_int_equal(pleg_relist_interval(c->pleg)->count, c->relists + c->failed - 1);
        for (unsigned k = 0; k < N; k++) {
                free(sandboxes[k]);
                free(containers[k]);
                free(extras[k]);
        }
}

static void test_period_and_no_overlap(void **state) {
        struct ctx *c = *state;
        size_t before;

        assert_int_equal(pleg_start(c->pleg), 0);
        relist(c);
        /* one relist per period, on the virtual clock */
        before = fake_runtime_count(c->rt, "ListPodSandbox");
        vloop_run_for(c->base, 10 * USEC_PER_SEC);
        assert_int_equal(fake_runtime_count(c->rt, "ListPodSandbox") - before, 10);
        assert_int_equal(fake_runtime_count(c->rt, "ListContainers"), fake_runtime_count(c->rt, "ListPodSandbox"));

        /* a listing slower than the period: the next relist waits for it */
        assert_int_equal(fake_runtime_set_delay(c->rt, "ListContainers", 3 * USEC_PER_SEC), 0);
        relist(c);
        before = fake_runtime_count(c->rt, "ListPodSandbox");
        vloop_run_for(c->base, 12 * USEC_PER_SEC);
        /* each relist takes 3 s and the next one is a period after: 4 s apart */
        assert_int_equal(fake_runtime_count(c->rt, "ListPodSandbox") - before, 3);
}

static void test_runtime_down(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *sa = NULL, *ca = NULL;
        unsigned ok;

        assert_int_equal(fake_runtime_add_sandbox(c->rt, "uid-a", "a", 0, &sa), 0);
        assert_int_equal(fake_runtime_add_container(c->rt, sa, "app", 0, true, &ca), 0);
        assert_int_equal(pleg_start(c->pleg), 0);
        relist(c);
        assert_changed(c, "uid-a");

        fake_runtime_set_down(c->rt, true);
        ok = c->relists;
        relist(c);
        relist(c);
        assert_int_equal(c->relists, ok);
        assert_int_equal(c->failed, 2);
        /* a failed listing is no listing: nothing reported, the last good one is kept */
        assert_changed(c, "");
        assert_string_equal(pleg_pod_uids(c->pleg)[0], "uid-a");

        /* back: compared with the last good listing, not with nothing */
        fake_runtime_set_down(c->rt, false);
        relist(c);
        assert_int_equal(c->relists, ok + 1);
        assert_changed(c, "");
        /* and a change made during the outage is seen */
        fake_runtime_set_down(c->rt, true);
        assert_int_equal(fake_runtime_exit(c->rt, ca, 0, 0), 0);
        relist(c);
        assert_changed(c, "");
        fake_runtime_set_down(c->rt, false);
        relist(c);
        assert_changed(c, "uid-a");
}

static void test_one_call_fails(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *sa = NULL;

        assert_int_equal(pleg_start(c->pleg), 0);
        relist(c);
        assert_int_equal(fake_runtime_add_sandbox(c->rt, "uid-a", "a", 0, &sa), 0);
        /* half a listing is no listing: the new sandbox is reported once the listing is whole */
        assert_int_equal(fake_runtime_fail(c->rt, "ListContainers", 1, GRPC_INTERNAL, "boom"), 0);
        relist(c);
        assert_int_equal(c->failed, 1);
        assert_changed(c, "");
        relist(c);
        assert_changed(c, "uid-a");
}

/* EventedPLEG: a fresh PLEG with upstream's evented watcher and a relist period long enough that only an event can
 * explain what is reported */
static void evented(struct ctx *c, uint64_t period) {
        static const struct pleg_callbacks cb = { .pod_changed = on_pod_changed, .relisted = on_relisted };

        pleg_free(c->pleg);
        assert_int_equal(pleg_new(c->base, c->cri, period, &cb, c, &c->pleg), 0);
        assert_int_equal(pleg_set_evented(c->pleg, true), 0);
}

static void test_evented_exit(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *sa = NULL, *ca = NULL, *sb = NULL, *cb = NULL;
        unsigned relists;

        fake_runtime_set_events(c->rt, true);
        evented(c, 300 * USEC_PER_SEC);
        assert_int_equal(fake_runtime_add_sandbox(c->rt, "uid-a", "a", 0, &sa), 0);
        assert_int_equal(fake_runtime_add_container(c->rt, sa, "app", 0, true, &ca), 0);
        assert_int_equal(fake_runtime_add_sandbox(c->rt, "uid-b", "b", 0, &sb), 0);
        assert_int_equal(fake_runtime_add_container(c->rt, sb, "app", 0, true, &cb), 0);
        assert_int_equal(pleg_start(c->pleg), 0);
        relist(c);
        assert_changed(c, "uid-a uid-b");
        vloop_settle(c->base);
        assert_int_equal(fake_runtime_n_streams(c->rt), 1);

        /* a's container exits: reported at once from the event, with no relist (the next is 300 s away) */
        relists = c->relists;
        assert_int_equal(fake_runtime_exit(c->rt, ca, 3, 0), 0);
        vloop_run_for(c->base, 10 * USEC_PER_SEC);
        assert_int_equal(c->relists, relists);
        assert_changed(c, "uid-a");
        /* the relist does not report it a second time: the pod's record took the event's state */
        relist_within(c, 300 * USEC_PER_SEC);
        assert_changed(c, "");
        /* the periodic relist still sees what no event says (a container gone without one) */
        assert_int_equal(fake_runtime_vanish(c->rt, cb), 0);
        relist_within(c, 300 * USEC_PER_SEC);
        assert_changed(c, "uid-b");
}

/* containerd 1.6: Unimplemented; opened again 4 times (5 attempts in all), then the fast path is off for good and
 * the relist alone reports the exit */
static void test_evented_unimplemented(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *sa = NULL, *ca = NULL;

        evented(c, USEC_PER_SEC);
        assert_int_equal(fake_runtime_add_sandbox(c->rt, "uid-a", "a", 0, &sa), 0);
        assert_int_equal(fake_runtime_add_container(c->rt, sa, "app", 0, true, &ca), 0);
        assert_int_equal(pleg_start(c->pleg), 0);
        relist(c);
        assert_changed(c, "uid-a");
        vloop_run_for(c->base, 5 * USEC_PER_SEC);
        assert_int_equal(fake_runtime_streams_opened(c->rt), 5);
        assert_int_equal(fake_runtime_n_streams(c->rt), 0);
        /* no event: the exit waits for the relist */
        assert_int_equal(fake_runtime_exit(c->rt, ca, 1, 0), 0);
        vloop_settle(c->base);
        assert_changed(c, "");
        relist(c);
        assert_changed(c, "uid-a");
        assert_int_equal(fake_runtime_streams_opened(c->rt), 5);
}

/* a stream that ends (the runtime restarts) is opened again; an event on the new one is seen */
static void test_evented_stream_reopened(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *sa = NULL, *ca = NULL;

        fake_runtime_set_events(c->rt, true);
        evented(c, 300 * USEC_PER_SEC);
        assert_int_equal(fake_runtime_add_sandbox(c->rt, "uid-a", "a", 0, &sa), 0);
        assert_int_equal(fake_runtime_add_container(c->rt, sa, "app", 0, true, &ca), 0);
        assert_int_equal(pleg_start(c->pleg), 0);
        relist(c);
        assert_changed(c, "uid-a");
        vloop_settle(c->base);
        fake_runtime_end_streams(c->rt, GRPC_UNAVAILABLE, "error reading from server: EOF");
        vloop_settle(c->base);
        assert_int_equal(fake_runtime_streams_opened(c->rt), 2);
        assert_int_equal(fake_runtime_n_streams(c->rt), 1);
        assert_int_equal(fake_runtime_exit(c->rt, ca, 0, 0), 0);
        vloop_settle(c->base);
        assert_changed(c, "uid-a");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_events, setup, teardown),
                cmocka_unit_test_setup_teardown(test_many_pods, setup, teardown),
                cmocka_unit_test_setup_teardown(test_period_and_no_overlap, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_down, setup, teardown),
                cmocka_unit_test_setup_teardown(test_one_call_fails, setup, teardown),
                cmocka_unit_test_setup_teardown(test_evented_exit, setup, teardown),
                cmocka_unit_test_setup_teardown(test_evented_unimplemented, setup, teardown),
                cmocka_unit_test_setup_teardown(test_evented_stream_reopened, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
