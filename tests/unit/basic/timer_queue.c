/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>

#include "basic/macro.h"
#include "basic/time.h"
#include "basic/timer_queue.h"

struct item {
        struct timer_entry t;
        int id;
        uint64_t ran_at; /* the now of its run, 0 = not run */
        unsigned runs;
};

static int order[4096];
static size_t n_order;
static struct timer_queue *current; /* for callbacks that act on the queue */

#define ITEM(e) ((struct item *) ((char *) (e) -offsetof(struct item, t)))

static void record(struct timer_entry *e, uint64_t now) {
        struct item *it = ITEM(e);
        assert_false(timer_entry_armed(e)); /* disarmed before its callback */
        it->ran_at = now;
        it->runs++;
        if (n_order < ELEMENTSOF(order))
                order[n_order++] = it->id;
}

static void reset(void) {
        n_order = 0;
}

static void test_order_and_ties(void **state) {
        struct timer_queue *q;
        struct item it[6];
        const uint64_t due[] = { 50, 10, 30, 10, 20, 30 };

        reset();
        assert_int_equal(timer_queue_new(NULL, 0, &q), 0);
        assert_int_equal(timer_queue_next_due(q), UINT64_MAX);
        for (size_t i = 0; i < ELEMENTSOF(it); i++) {
                timer_entry_init(&it[i].t, record);
                it[i].id = (int) i;
                it[i].runs = 0;
                assert_false(timer_entry_armed(&it[i].t));
                assert_int_equal(timer_queue_arm(q, &it[i].t, due[i]), 0);
                assert_true(timer_entry_armed(&it[i].t));
        }
        assert_int_equal(timer_queue_next_due(q), 10);
        /* nothing due before 10 */
        assert_int_equal(timer_queue_run(q, 9), 0);
        /* ties run in arming order */
        assert_int_equal(timer_queue_run(q, 30), 5);
        assert_int_equal(n_order, 5);
        assert_int_equal(order[0], 1);
        assert_int_equal(order[1], 3);
        assert_int_equal(order[2], 4);
        assert_int_equal(order[3], 2);
        assert_int_equal(order[4], 5);
        assert_int_equal(it[2].ran_at, 30);
        /* one left: the latest */
        assert_int_equal(timer_queue_next_due(q), 50);
        assert_int_equal(timer_queue_run(q, 1000), 1);
        assert_int_equal(order[5], 0);
        /* all six ran once (0 + 5 + 1 runs), and the queue is empty */
        for (size_t i = 0; i < ELEMENTSOF(it); i++)
                assert_int_equal(it[i].runs, 1);
        assert_int_equal(timer_queue_next_due(q), UINT64_MAX);
        timer_queue_free(q);
}

static void test_rearm_and_disarm(void **state) {
        struct timer_queue *q;
        struct item a, b, c;

        reset();
        assert_int_equal(timer_queue_new(NULL, 0, &q), 0);
        timer_entry_init(&a.t, record);
        timer_entry_init(&b.t, record);
        timer_entry_init(&c.t, record);
        a.id = 1, b.id = 2, c.id = 3;
        a.runs = b.runs = c.runs = 0;
        assert_int_equal(timer_queue_arm(q, &a.t, 100), 0);
        assert_int_equal(timer_queue_arm(q, &b.t, 200), 0);
        assert_int_equal(timer_queue_arm(q, &c.t, 300), 0);
        /* re-arming moves an entry both ways and never duplicates it */
        assert_int_equal(timer_queue_arm(q, &c.t, 50), 0);
        assert_int_equal(timer_queue_arm(q, &a.t, 400), 0);
        assert_int_equal(timer_queue_next_due(q), 50);
        timer_queue_disarm(q, &b.t);
        timer_queue_disarm(q, &b.t); /* twice is fine */
        assert_false(timer_entry_armed(&b.t));
        /* the two left run once each, and nothing else is left */
        assert_int_equal(timer_queue_run(q, 1000), 2);
        assert_int_equal(order[0], 3);
        assert_int_equal(order[1], 1);
        assert_int_equal(a.runs, 1);
        assert_int_equal(b.runs, 0);
        assert_int_equal(c.runs, 1);
        assert_int_equal(timer_queue_next_due(q), UINT64_MAX);
        timer_queue_free(q);
}

/* callbacks that re-arm themselves for a past time (they run in the next round, not in this one: no livelock),
 * disarm an entry due in the same round (it does not run), and arm a new one */
static struct item *victim, *late;

static void self_rearm(struct timer_entry *e, uint64_t now) {
        record(e, now);
        if (ITEM(e)->runs < 3)
                assert_int_equal(timer_queue_arm(current, e, now - 5), 0);
}

static void kill_victim(struct timer_entry *e, uint64_t now) {
        record(e, now);
        timer_queue_disarm(current, &victim->t);
        assert_int_equal(timer_queue_arm(current, &late->t, now), 0);
}

static void test_callbacks_change_the_queue(void **state) {
        struct item s, k, v, l;

        reset();
        assert_int_equal(timer_queue_new(NULL, 0, &current), 0);
        timer_entry_init(&s.t, self_rearm);
        timer_entry_init(&k.t, kill_victim);
        timer_entry_init(&v.t, record);
        timer_entry_init(&l.t, record);
        s.id = 1, k.id = 2, v.id = 3, l.id = 4;
        s.runs = k.runs = v.runs = l.runs = 0;
        victim = &v;
        late = &l;
        assert_int_equal(timer_queue_arm(current, &s.t, 10), 0);
        assert_int_equal(timer_queue_arm(current, &k.t, 20), 0);
        assert_int_equal(timer_queue_arm(current, &v.t, 30), 0);
        /* one round: s once (re-armed into the past, but for the next round), k (disarms v, arms l for now) */
        assert_int_equal(timer_queue_run(current, 100), 2);
        assert_int_equal(s.runs, 1);
        assert_int_equal(k.runs, 1);
        assert_int_equal(v.runs, 0);
        assert_int_equal(l.runs, 0);
        assert_true(timer_entry_armed(&s.t));
        assert_true(timer_entry_armed(&l.t));
        /* next round: s (its second run) and l */
        assert_int_equal(timer_queue_run(current, 100), 2);
        assert_int_equal(s.runs, 2);
        assert_int_equal(l.runs, 1);
        assert_int_equal(timer_queue_run(current, 100), 1);
        assert_int_equal(s.runs, 3);
        assert_int_equal(timer_queue_run(current, 100), 0);
        assert_int_equal(timer_queue_next_due(current), UINT64_MAX);
        current = timer_queue_free(current);
}

static void test_granularity(void **state) {
        struct timer_queue *q;
        struct item a;

        assert_int_equal(timer_queue_new(NULL, 20, &q), 0);
        timer_entry_init(&a.t, record);
        assert_int_equal(timer_queue_next_wake(q), UINT64_MAX);
        assert_int_equal(timer_queue_arm(q, &a.t, 101), 0);
        assert_int_equal(timer_queue_next_due(q), 101);
        assert_int_equal(timer_queue_next_wake(q), 120); /* rounded up, never early */
        assert_int_equal(timer_queue_arm(q, &a.t, 120), 0);
        assert_int_equal(timer_queue_next_wake(q), 120);
        assert_int_equal(timer_queue_arm(q, &a.t, 121), 0);
        assert_int_equal(timer_queue_next_wake(q), 140);
        assert_int_equal(timer_queue_arm(q, &a.t, UINT64_MAX - 3), 0);
        assert_int_equal(timer_queue_next_wake(q), UINT64_MAX);
        timer_queue_free(q);
}

/* random arms, re-arms and disarms against a reference: runs come out in (due, arming order) and exactly the
 * entries due run */
static void test_random_against_reference(void **state) {
        enum { N = 500 };
        static struct item it[N];
        static uint64_t ref_due[N], ref_seq[N];
        static bool ref_armed[N];
        struct timer_queue *q;
        unsigned rnd = 42;
        uint64_t now = 0, seq = 0;

        assert_int_equal(timer_queue_new(NULL, 0, &q), 0);
        for (size_t i = 0; i < N; i++) {
                timer_entry_init(&it[i].t, record);
                it[i].id = (int) i;
                it[i].runs = 0;
        }
        for (int round = 0; round < 200; round++) {
                for (int op = 0; op < 100; op++) {
                        size_t k;
                        rnd = rnd * 1103515245u + 12345u;
                        k = (rnd >> 8) % N;
                        if ((rnd >> 3) % 4 == 0) {
                                timer_queue_disarm(q, &it[k].t);
                                ref_armed[k] = false;
                        } else {
                                uint64_t due = now + (rnd >> 12) % 1000;
                                assert_int_equal(timer_queue_arm(q, &it[k].t, due), 0);
                                ref_due[k] = due;
                                ref_seq[k] = seq++;
                                ref_armed[k] = true;
                        }
                }
                now += 250;
                reset();
                {
                        size_t expect = 0;
                        for (size_t i = 0; i < N; i++)
                                if (ref_armed[i] && ref_due[i] <= now)
                                        expect++;
                        assert_int_equal(timer_queue_run(q, now), expect);
                        assert_int_equal(n_order, expect);
                }
                for (size_t j = 0; j < n_order; j++) {
                        size_t a = (size_t) order[j];
                        assert_true(ref_armed[a] && ref_due[a] <= now);
                        if (j > 0) {
                                size_t p = (size_t) order[j - 1];
                                assert_true(ref_due[p] < ref_due[a] ||
                                            (ref_due[p] == ref_due[a] && ref_seq[p] < ref_seq[a]));
                        }
                }
                for (size_t j = 0; j < n_order; j++)
                        ref_armed[order[j]] = false;
                for (size_t i = 0; i < N; i++)
                        assert_int_equal(timer_entry_armed(&it[i].t), ref_armed[i]);
        }
        timer_queue_free(q);
}

/* On a real loop: every entry runs once, in order, never before its deadline. */
static struct event_base *loop_base;
static size_t loop_left;

static void loop_record(struct timer_entry *e, uint64_t now) {
        record(e, now);
        if (--loop_left == 0)
                event_base_loopbreak(loop_base);
}

static void test_on_the_loop(void **state) {
        struct timer_queue *q;
        struct item it[40];
        uint64_t start;
        unsigned wakeups = 0;

        reset();
        loop_base = event_base_new();
        assert_non_null(loop_base);
        assert_int_equal(timer_queue_new(loop_base, 5 * USEC_PER_MSEC, &q), 0);
        start = now_usec();
        for (size_t i = 0; i < ELEMENTSOF(it); i++) {
                timer_entry_init(&it[i].t, loop_record);
                it[i].id = (int) i;
                it[i].runs = 0;
                /* deadlines from 1 to 40 ms, armed in reverse */
                assert_int_equal(timer_queue_arm(q, &it[i].t, start + (ELEMENTSOF(it) - i) * USEC_PER_MSEC), 0);
        }
        loop_left = ELEMENTSOF(it);
        assert_int_equal(event_base_dispatch(loop_base), 0);
        assert_int_equal(n_order, ELEMENTSOF(it));
        for (size_t i = 0; i < ELEMENTSOF(it); i++) {
                struct item *x = &it[order[i]];
                assert_int_equal(x->runs, 1);
                assert_true(x->ran_at >= x->t.due_usec); /* never early */
                if (i > 0) {
                        assert_true(it[order[i - 1]].t.due_usec <= x->t.due_usec);
                        if (x->ran_at != it[order[i - 1]].ran_at)
                                wakeups++;
                }
        }
        /* 40 deadlines 1 ms apart on a 5 ms grid: at most one wake-up per grid point they span (9), however
         * late the loop runs */
        assert_true(wakeups + 1 <= 9);
        timer_queue_free(q);
        event_base_free(loop_base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_order_and_ties),
                cmocka_unit_test(test_rearm_and_disarm),
                cmocka_unit_test(test_callbacks_change_the_queue),
                cmocka_unit_test(test_granularity),
                cmocka_unit_test(test_random_against_reference),
                cmocka_unit_test(test_on_the_loop),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
