/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <unistd.h>

#include "basic/workpool.h"

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
        assert_int_equal(workpool_busy(p), 20);
        assert_int_equal(c.delivered, 0); /* never inside submit */
        event_base_dispatch(c.base);
        assert_int_equal(c.delivered, 20);
        for (int i = 0; i < 20; i++)
                assert_int_equal(c.results[i], i * 10);
        assert_true(c.done_on_loop_thread);
        assert_true(atomic_load(&c.max_running) <= 3);
        assert_int_equal(workpool_busy(p), 0);
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_jobs_complete_on_the_loop),
                cmocka_unit_test(test_free_cancels_queued_jobs),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
