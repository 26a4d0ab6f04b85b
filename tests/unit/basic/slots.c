/* SPDX-License-Identifier: Apache-2.0 */
/* The image pull queue: serialized pulls one at a time in request order, parallel ones up to the limit (or all
 * at once), withdrawal and release of waiting pulls, and starts that only ever run from the loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <event2/event.h>

#include "basic/macro.h"
#include "basic/slots.h"

#define N 6

struct fixture {
        struct event_base *base;
        struct slots *p;
        struct slot_ticket t[N];
        int order[3 * N]; /* the tickets as their start ran (index, negative - 1 for withdrawn) */
        size_t n_order;
        bool in_call;       /* a call of the slots module is under way */
        int release_inside; /* -1, or a ticket whose start releases it at once (a pull that fails to issue) */
};

struct who {
        struct fixture *f;
        int i;
};

static void on_start(void *userdata, int r) {
        struct who *w = userdata;
        struct fixture *f = w->f;

        assert_false(f->in_call);
        assert_true(f->n_order < ELEMENTSOF(f->order));
        if (r == 0) {
                assert_int_equal(f->t[w->i].state, SLOT_RUNNING);
                f->order[f->n_order++] = w->i;
        } else {
                assert_int_equal(r, -ECANCELED);
                assert_int_equal(f->t[w->i].state, SLOT_IDLE);
                f->order[f->n_order++] = -w->i - 1;
        }
        if (r == 0 && f->release_inside == w->i)
                slots_release(f->p, &f->t[w->i]);
}

static struct who whos[N];

static void run(struct fixture *f) {
        /* the active events of this turn and those they make active */
        for (int i = 0; i < 4; i++)
                assert_int_not_equal(event_base_loop(f->base, EVLOOP_NONBLOCK), -1);
}

static void enqueue(struct fixture *f, int i) {
        whos[i] = (struct who) { f, i };
        f->in_call = true;
        slots_enqueue(f->p, &f->t[i], on_start, &whos[i]);
        f->in_call = false;
}

static void release(struct fixture *f, int i) {
        f->in_call = true;
        slots_release(f->p, &f->t[i]);
        f->in_call = false;
        assert_int_equal(f->t[i].state, SLOT_IDLE);
}

static void setup(struct fixture *f, bool serialize, unsigned max) {
        memset(f, 0, sizeof(*f));
        f->release_inside = -1;
        f->base = event_base_new();
        assert_non_null(f->base);
        assert_int_equal(slots_new(f->base, serialize ? 1 : max, &f->p), 0);
}

static void teardown(struct fixture *f) {
        f->p = slots_free(f->p);
        for (int i = 0; i < N; i++)
                assert_int_equal(f->t[i].state, SLOT_IDLE);
        event_base_free(f->base);
}

static void assert_order(struct fixture *f, const int *want, size_t n) {
        assert_int_equal(f->n_order, n);
        for (size_t i = 0; i < n; i++)
                if (f->order[i] != want[i])
                        fail_msg("start %zu was ticket %d, expected %d", i, f->order[i], want[i]);
}

/* serializeImagePulls: one at a time, in the order asked, whatever order they end in */
static void test_serialized(void **state) {
        struct fixture f;

        setup(&f, true, 0);
        for (int i = 0; i < 4; i++)
                enqueue(&f, i);
        assert_int_equal(f.n_order, 0); /* never inside the call */
        run(&f);
        assert_order(&f, (int[]) { 0 }, 1);
        assert_int_equal(slots_running(f.p), 1);
        assert_int_equal(slots_waiting(f.p), 3);
        run(&f);
        assert_int_equal(f.n_order, 1); /* nothing more while the first one runs */

        release(&f, 0);
        run(&f);
        assert_order(&f, (int[]) { 0, 1 }, 2);
        /* a late comer goes to the back */
        enqueue(&f, 4);
        release(&f, 1);
        run(&f);
        release(&f, 2);
        run(&f);
        release(&f, 3);
        run(&f);
        assert_order(&f, (int[]) { 0, 1, 2, 3, 4 }, 5);
        release(&f, 4);
        run(&f);
        assert_int_equal(slots_running(f.p), 0);
        assert_int_equal(slots_waiting(f.p), 0);
        teardown(&f);
}

/* maxParallelImagePulls: up to the limit at once, the next one as soon as any ends */
static void test_parallel_limit(void **state) {
        struct fixture f;

        setup(&f, false, 2);
        for (int i = 0; i < 5; i++)
                enqueue(&f, i);
        run(&f);
        assert_order(&f, (int[]) { 0, 1 }, 2);
        assert_int_equal(slots_running(f.p), 2);
        assert_int_equal(slots_waiting(f.p), 3);
        release(&f, 1); /* the second ends first: the third starts, the first still runs */
        run(&f);
        assert_order(&f, (int[]) { 0, 1, 2 }, 3);
        assert_int_equal(slots_running(f.p), 2);
        release(&f, 0);
        release(&f, 2);
        run(&f);
        assert_order(&f, (int[]) { 0, 1, 2, 3, 4 }, 5);
        release(&f, 3);
        release(&f, 4);
        teardown(&f);

        /* unset: no limit at all */
        setup(&f, false, 0);
        for (int i = 0; i < N; i++)
                enqueue(&f, i);
        run(&f);
        assert_order(&f, (int[]) { 0, 1, 2, 3, 4, 5 }, N);
        assert_int_equal(slots_running(f.p), N);
        for (int i = 0; i < N; i++)
                release(&f, i);
        assert_int_equal(slots_running(f.p), 0);
        teardown(&f);

        /* serialized wins over the limit (the validation forbids more than 1 then anyway) */
        setup(&f, true, 3);
        enqueue(&f, 0);
        enqueue(&f, 1);
        run(&f);
        assert_order(&f, (int[]) { 0 }, 1);
        release(&f, 0);
        release(&f, 1);
        teardown(&f);
}

/* A waiting pull withdrawn hears it from the loop and never runs; released quietly it leaves without a word;
 * a running one withdrawn goes on. A pull released inside its own start (it could not be issued) gives its slot
 * to the next one. */
static void test_cancel(void **state) {
        struct fixture f;

        for (int serialize = 0; serialize <= 1; serialize++) {
                setup(&f, serialize, 1);
                for (int i = 0; i < 5; i++)
                        enqueue(&f, i);
                run(&f);
                assert_order(&f, (int[]) { 0 }, 1);
                assert_false(slots_withdraw(f.p, &f.t[0])); /* running: goes on */
                assert_true(slots_withdraw(f.p, &f.t[2]));
                assert_false(slots_withdraw(f.p, &f.t[2])); /* once */
                assert_int_equal(f.n_order, 1);             /* not inside the call */
                release(&f, 3);                             /* quietly */
                assert_int_equal(slots_waiting(f.p), 2);
                run(&f);
                assert_order(&f, (int[]) { 0, -3 }, 2);
                assert_int_equal(slots_running(f.p), 1);
                f.release_inside = 1;
                release(&f, 0);
                run(&f);
                /* 1 started and was released at once; 4 had its turn next */
                assert_order(&f, (int[]) { 0, -3, 1, 4 }, 4);
                assert_int_equal(slots_running(f.p), 1);
                /* a withdrawn ticket can queue again, at the back */
                enqueue(&f, 2);
                enqueue(&f, 3);
                release(&f, 4);
                run(&f);
                assert_order(&f, (int[]) { 0, -3, 1, 4, 2 }, 5);
                release(&f, 2);
                run(&f);
                assert_order(&f, (int[]) { 0, -3, 1, 4, 2, 3 }, 6);
                release(&f, 3);
                teardown(&f);
        }

        /* a ticket whose turn came but whose start has not run yet, released: no start, the slot is free again */
        setup(&f, true, 0);
        enqueue(&f, 0);
        enqueue(&f, 1);
        run(&f);
        release(&f, 0);
        release(&f, 1); /* its turn is due, not yet told */
        run(&f);
        assert_order(&f, (int[]) { 0 }, 1);
        assert_int_equal(slots_running(f.p), 0);
        enqueue(&f, 2);
        run(&f);
        assert_order(&f, (int[]) { 0, 2 }, 2);
        release(&f, 2);
        teardown(&f);

        /* freed with pulls waiting: none of them hears anything */
        setup(&f, true, 0);
        enqueue(&f, 0);
        enqueue(&f, 1);
        run(&f);
        enqueue(&f, 2);
        assert_true(slots_withdraw(f.p, &f.t[1]));
        release(&f, 0);
        teardown(&f);
        assert_order(&f, (int[]) { 0 }, 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_serialized),
                cmocka_unit_test(test_parallel_limit),
                cmocka_unit_test(test_cancel),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
