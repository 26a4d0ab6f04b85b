/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <unistd.h>

#include "basic/workpool-testing.h"

struct ctx {
        struct event_base *base;
        int delivered;
        int expected;
        int results[64];
        atomic_int running, max_running;
        pthread_t loop_thread;
        bool done_on_loop_thread;
};

struct one {
        struct ctx *c;
        int i;
};

static int work(void *userdata) {
        struct one *o = userdata;
        int now = atomic_fetch_add(&o->c->running, 1) + 1;
        int max = atomic_load(&o->c->max_running);

        while (now > max && !atomic_compare_exchange_weak(&o->c->max_running, &max, now))
                ;
        usleep(2000);
        atomic_fetch_sub(&o->c->running, 1);
        return o->i * 10;
}

static void done(int r, void *userdata) {
        struct one *o = userdata;

        o->c->results[o->i] = r;
        o->c->done_on_loop_thread = o->c->done_on_loop_thread && pthread_equal(pthread_self(), o->c->loop_thread);
        if (++o->c->delivered == o->c->expected)
                event_base_loopbreak(o->c->base);
}

static void test_jobs_complete_on_the_loop(void **state) {
        struct ctx c = { .expected = 20, .done_on_loop_thread = true };
        struct one jobs[20];
        struct workpool *p = NULL;

        c.base = event_base_new();
        c.loop_thread = pthread_self();
        assert_non_null(c.base);
        assert_int_equal(workpool_new(c.base, "test", 3, &p), 0);
        for (int i = 0; i < 20; i++) {
                jobs[i] = (struct one) { .c = &c, .i = i };
                c.results[i] = -1;
                assert_int_equal(workpool_submit(p, work, done, &jobs[i]), 0);
        }
        assert_int_equal(workpool_in_flight(), 20); /* the process's only pool: all of them are its */
        assert_int_equal(c.delivered, 0);           /* never inside submit */
        event_base_dispatch(c.base);
        assert_int_equal(c.delivered, 20);
        for (int i = 0; i < 20; i++)
                assert_int_equal(c.results[i], i * 10);
        assert_true(c.done_on_loop_thread);
        assert_true(atomic_load(&c.max_running) <= 3);
        assert_int_equal(workpool_in_flight(), 0);
        workpool_free(p);
        event_base_free(c.base);
}

static atomic_bool first_started;

static int slow_work(void *userdata) {
        atomic_store(&first_started, true);
        usleep(100000); /* ten of these take a second: the pool is freed long before */
        return 7;
}

static void test_free_cancels_queued_jobs(void **state) {
        struct ctx c = { .expected = 1000, .done_on_loop_thread = true };
        struct one jobs[10];
        struct workpool *p = NULL;
        int ok = 0, cancelled = 0;

        c.base = event_base_new();
        c.loop_thread = pthread_self();
        assert_int_equal(workpool_new(c.base, "test", 1, &p), 0);
        for (int i = 0; i < 10; i++) {
                jobs[i] = (struct one) { .c = &c, .i = i };
                c.results[i] = -1;
                assert_int_equal(workpool_submit(p, slow_work, done, &jobs[i]), 0);
        }
        while (!atomic_load(&first_started))
                usleep(1000);
        workpool_free(p);
        /* every done ran inside free: the finished ones with their result, the rest cancelled */
        assert_int_equal(c.delivered, 10);
        for (int i = 0; i < 10; i++) {
                if (c.results[i] == 7)
                        ok++;
                else if (c.results[i] == -ECANCELED)
                        cancelled++;
        }
        /* one thread: the job that was running finished, the ones never started were cancelled */
        assert_int_equal(ok + cancelled, 10);
        assert_true(ok >= 1);
        assert_true(cancelled >= 1);
        event_base_free(c.base);
}

/* ---------------------------------------------------------------- keys and deadlines */

struct blocker {
        int fd[2]; /* work() blocks reading fd[0] until the test writes fd[1] (a stand-in for a silent NFS server) */
        atomic_int entered;
};

struct kjob {
        struct ctx *c;
        struct blocker *b; /* NULL: a quick job */
        int i;
        atomic_bool destroyed;
};

static int keyed_work(void *userdata) {
        struct kjob *k = userdata;
        char x;

        if (k->b) {
                atomic_fetch_add(&k->b->entered, 1);
                if (read(k->b->fd[0], &x, 1) < 0)
                        return -errno;
        }
        return k->i * 10;
}

static void keyed_done(int r, void *userdata) {
        struct kjob *k = userdata;

        k->c->results[k->i] = r;
        if (++k->c->delivered == k->c->expected)
                event_base_loopbreak(k->c->base);
}

static void keyed_destroy(void *userdata) {
        struct kjob *k = userdata;
        atomic_store(&k->destroyed, true);
}

static void test_stuck_key_does_not_starve_others(void **state) {
        struct ctx c = { .expected = 9 };
        struct blocker b = {};
        struct kjob jobs[9] = {};
        struct workpool *p = NULL;

        c.base = event_base_new();
        assert_int_equal(pipe(b.fd), 0);
        /* two threads, room for two more: two pods' operations hang (two silent NFS mounts) */
        assert_int_equal(workpool_new_bounded(c.base, "test", 2, 4, &p), 0);
        for (int i = 0; i < 9; i++) {
                jobs[i] = (struct kjob) { .c = &c, .i = i, .b = i < 2 ? &b : NULL };
                c.results[i] = 1;
        }
        /* jobs 0 and 1: pods A and B, stuck; job 2: pod A again, queued behind its stuck job */
        assert_int_equal(workpool_submit_full(p, "A", 100000, keyed_work, keyed_done, keyed_destroy, &jobs[0]), 0);
        assert_int_equal(workpool_submit_full(p, "B", 100000, keyed_work, keyed_done, keyed_destroy, &jobs[1]), 0);
        assert_int_equal(workpool_submit_full(p, "A", 200000, keyed_work, keyed_done, keyed_destroy, &jobs[2]), 0);
        while (atomic_load(&b.entered) < 2)
                usleep(1000);
        /* the other pods' operations, submitted while both threads hang */
        for (int i = 3; i < 9; i++) {
                char key[8];
                snprintf(key, sizeof(key), "P%d", i);
                assert_int_equal(workpool_submit_full(p, key, 5000000, keyed_work, keyed_done, keyed_destroy, &jobs[i]),
                                 0);
        }
        event_base_dispatch(c.base);
        assert_int_equal(c.delivered, 9);
        assert_int_equal(c.results[0], -ETIMEDOUT);
        assert_int_equal(c.results[1], -ETIMEDOUT);
        assert_int_equal(c.results[2], -ETIMEDOUT); /* never started: its key's job was still stuck */
        for (int i = 3; i < 9; i++)
                assert_int_equal(c.results[i], i * 10);
        assert_true(atomic_load(&jobs[2].destroyed));
        assert_false(atomic_load(&jobs[0].destroyed)); /* still running: its data still belongs to it */
        assert_int_equal(workpool_stuck(p), 2);
        assert_int_equal(workpool_in_flight(), 0);
        /* the servers answer again: the late results are thrown away, the data freed, no done() runs twice */
        assert_int_equal(write(b.fd[1], "xx", 2), 2);
        while (workpool_stuck(p) > 0)
                event_base_loop(c.base, EVLOOP_ONCE);
        assert_true(atomic_load(&jobs[0].destroyed));
        assert_true(atomic_load(&jobs[1].destroyed));
        assert_int_equal(c.results[0], -ETIMEDOUT);
        assert_int_equal(c.delivered, 9);
        /* and the pool still works, with its two threads */
        c.expected = 10;
        jobs[0] = (struct kjob) { .c = &c, .i = 0 };
        assert_int_equal(workpool_submit_full(p, "A", 5000000, keyed_work, keyed_done, keyed_destroy, &jobs[0]), 0);
        event_base_dispatch(c.base);
        assert_int_equal(c.results[0], 0);
        workpool_free(p);
        close(b.fd[0]);
        close(b.fd[1]);
        event_base_free(c.base);
}

static void test_same_key_runs_one_at_a_time(void **state) {
        struct ctx c = { .expected = 12, .done_on_loop_thread = true };
        struct one jobs[12];
        struct workpool *p = NULL;

        c.base = event_base_new();
        c.loop_thread = pthread_self();
        assert_int_equal(workpool_new(c.base, "test", 3, &p), 0);
        for (int i = 0; i < 12; i++) {
                jobs[i] = (struct one) { .c = &c, .i = i };
                assert_int_equal(workpool_submit_full(p, "same", 0, work, done, NULL, &jobs[i]), 0);
        }
        event_base_dispatch(c.base);
        assert_int_equal(c.delivered, 12);
        assert_int_equal(atomic_load(&c.max_running), 1);
        workpool_free(p);
        event_base_free(c.base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_jobs_complete_on_the_loop),
                cmocka_unit_test(test_free_cancels_queued_jobs),
                cmocka_unit_test(test_stuck_key_does_not_starve_others),
                cmocka_unit_test(test_same_key_runs_one_at_a_time),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
