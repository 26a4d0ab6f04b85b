/* SPDX-License-Identifier: Apache-2.0 */
/* The virtual clock: the clocks stand still until moved, timers armed through evtimer_add_usec fire when it
 * reaches their deadline (in order, each once), re-arming and deleting work as with real timers, freed events
 * are forgotten, and disabled it is the real clock again; an fd event's timeout armed through event_add_usec is
 * virtual too, and forgotten once its fd made it run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <unistd.h>

#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "basic/vclock-testing.h"

struct fired {
        char order[16];
        size_t n;
};

struct timer {
        struct fired *f;
        char name;
        struct event *ev;
};

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct timer *t = userdata;
        assert_true(t->f->n + 1 < sizeof(t->f->order));
        t->f->order[t->f->n++] = t->name;
}

static void run(struct event_base *base) {
        while (event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE) > 0)
                event_base_loop(base, EVLOOP_NONBLOCK);
}

static void test_clock_and_timers(void **state) {
        struct event_base *base = event_base_new();
        struct fired f = {};
        struct timer a = { &f, 'a' }, b = { &f, 'b' }, c = { &f, 'c' };
        uint64_t next;

        assert_non_null(base);
        vclock_enable(base, 5000 * USEC_PER_SEC, 1700000000 * USEC_PER_SEC);
        assert_true(vclock_enabled());
        assert_int_equal(now_usec(), 5000 * USEC_PER_SEC);
        assert_int_equal(now_realtime_usec(), 1700000000 * USEC_PER_SEC);
        a.ev = evtimer_new(base, on_timer, &a);
        b.ev = evtimer_new(base, on_timer, &b);
        c.ev = evtimer_new(base, on_timer, &c);

        evtimer_add_usec(a.ev, 3 * USEC_PER_SEC);
        evtimer_add_usec(b.ev, 1 * USEC_PER_SEC);
        evtimer_add_usec(c.ev, 2 * USEC_PER_SEC);
        assert_true(evtimer_pending(a.ev, NULL));
        /* real time passing changes nothing */
        {
                struct timeval tv = { 0, 20 * 1000 };
                event_base_loopexit(base, &tv);
                event_base_dispatch(base);
        }
        assert_int_equal(f.n, 0);
        assert_int_equal(now_usec(), 5000 * USEC_PER_SEC);

        assert_true(vclock_next_deadline(&next));
        assert_int_equal(next, 5001 * USEC_PER_SEC);
        /* c re-armed later, b deleted */
        evtimer_add_usec(c.ev, 10 * USEC_PER_SEC);
        evtimer_del(b.ev);
        assert_true(vclock_next_deadline(&next));
        assert_int_equal(next, 5003 * USEC_PER_SEC);

        assert_int_equal(vclock_set(5002 * USEC_PER_SEC), 0);
        run(base);
        assert_int_equal(f.n, 0);
        /* several due at once fire in deadline order, and only once */
        evtimer_add_usec(b.ev, 500 * USEC_PER_MSEC); /* 5002.5 */
        assert_int_equal(vclock_set(5020 * USEC_PER_SEC), 3);
        run(base);
        assert_string_equal(f.order, "bac");
        assert_int_equal(now_realtime_usec(), 1700000020 * USEC_PER_SEC);
        assert_false(vclock_next_deadline(&next));
        assert_false(evtimer_pending(a.ev, NULL));

        /* armed for now: runs at the next turn of the loop, without the clock moving */
        evtimer_add_usec(a.ev, 0);
        run(base);
        assert_string_equal(f.order, "baca");

        /* a freed event is forgotten */
        evtimer_add_usec(c.ev, USEC_PER_SEC);
        event_free(c.ev);
        assert_false(vclock_next_deadline(&next));

        event_free(a.ev);
        event_free(b.ev);
        vclock_disable();
        assert_false(vclock_enabled());
        assert_true(now_realtime_usec() > 1700000000 * USEC_PER_SEC + 1000 * USEC_PER_SEC); /* the real one */
        event_base_free(base);
}

struct fd_outcome {
        int calls;
        short what;
};

static void on_fd(evutil_socket_t fd, short what, void *userdata) {
        struct fd_outcome *o = userdata;
        o->calls++;
        o->what = what;
}

/* an fd event with a timeout armed through event_add_usec: the timeout is virtual, the fd is real */
static void test_fd_event_timeout(void **state) {
        struct event_base *base = event_base_new();
        struct fd_outcome o = {};
        struct event *ev;
        uint64_t next;
        int p[2];

        assert_non_null(base);
        assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
        vclock_enable(base, 5000 * USEC_PER_SEC, 1700000000 * USEC_PER_SEC);
        ev = event_new(base, p[0], EV_READ, on_fd, &o);
        assert_non_null(ev);

        /* nothing to read: the timeout fires when the virtual clock reaches it */
        assert_int_equal(event_add_usec(ev, 2 * USEC_PER_SEC), 0);
        assert_true(event_pending(ev, EV_READ, NULL));
        assert_true(vclock_next_deadline(&next));
        assert_int_equal(next, 5002 * USEC_PER_SEC);
        assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 0);
        assert_int_equal(o.calls, 0);
        assert_int_equal(vclock_set(5002 * USEC_PER_SEC), 1);
        run(base);
        assert_int_equal(o.calls, 1);
        assert_true(o.what & EV_TIMEOUT);
        assert_false(event_pending(ev, EV_READ | EV_TIMEOUT, NULL));

        /* readable first: the event runs for its fd, and its timeout is forgotten */
        assert_int_equal(event_add_usec(ev, 2 * USEC_PER_SEC), 0);
        assert_int_equal(write(p[1], "x", 1), 1);
        assert_int_equal(event_base_loop(base, EVLOOP_ONCE), 0);
        run(base);
        assert_int_equal(o.calls, 2);
        assert_true(o.what & EV_READ);
        assert_false(o.what & EV_TIMEOUT);
        assert_false(vclock_next_deadline(&next));

        event_free(ev);
        vclock_disable();
        close(p[0]);
        close(p[1]);
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_clock_and_timers),
                cmocka_unit_test(test_fd_event_timeout),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
