/* SPDX-License-Identifier: Apache-2.0 */
#include "fake/vloop.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "basic/vclock-testing.h"
#include "basic/workpool-testing.h"

/* Whatever the virtual clock says, a test run is bounded in real time too: a loop that never settles (a
 * timer re-armed for "now" forever) fails instead of hanging. */
#define REAL_CAP_USEC (60 * USEC_PER_SEC)

static uint64_t real_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* worker jobs the test keeps blocked on purpose (vloop_allow_stuck_jobs) */
static unsigned stuck_allowed;

void vloop_enable(struct event_base *base) {
        stuck_allowed = 0;
        vclock_enable(base, 1000 * USEC_PER_SEC, UINT64_C(1704067200) * USEC_PER_SEC);
}

void vloop_disable(void) {
        vclock_disable();
}

static bool settle_bounded(struct event_base *base, uint64_t real_deadline) {
        do {
                event_base_loop(base, EVLOOP_NONBLOCK);
                if (real_usec() > real_deadline) {
                        fprintf(stderr, "vloop: the loop does not settle\n");
                        return false;
                }
        } while (event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE) > 0);
        return true;
}

void vloop_allow_stuck_jobs(unsigned n) {
        stuck_allowed = n;
}

static void on_guard(evutil_socket_t fd, short what, void *userdata) {
        *(bool *) userdata = true;
}

/* Settle, and while worker jobs are in flight (their completions wake the loop through an eventfd, without time
 * passing), wait for them in real time and settle again: the clock never moves under a job that runs. */
static bool settle_with_workers(struct event_base *base, uint64_t real_deadline) {
        struct timeval tv = { .tv_usec = 10000 };
        bool fired;
        struct event *guard;

        if (!settle_bounded(base, real_deadline))
                return false;
        if (workpool_in_flight() <= stuck_allowed)
                return true;
        guard = evtimer_new(base, on_guard, &fired);
        if (!guard)
                abort();
        while (workpool_in_flight() > stuck_allowed) {
                if (real_usec() > real_deadline) {
                        fprintf(stderr, "vloop: %u worker job(s) do not finish\n", workpool_in_flight());
                        event_free(guard);
                        return false;
                }
                /* libevent's own timer: real time, not the virtual clock */
                fired = false;
                evtimer_add(guard, &tv);
                event_base_loop(base, EVLOOP_ONCE);
                evtimer_del(guard);
                if (!settle_bounded(base, real_deadline)) {
                        event_free(guard);
                        return false;
                }
        }
        event_free(guard);
        return true;
}

void vloop_settle(struct event_base *base) {
        if (!settle_with_workers(base, real_usec() + REAL_CAP_USEC))
                abort();
}

bool vloop_run_until(struct event_base *base, bool (*pred)(void *userdata), void *userdata, uint64_t cap_usec) {
        uint64_t end = vclock_monotonic_usec() + cap_usec, real_deadline = real_usec() + REAL_CAP_USEC, next;

        for (;;) {
                if (pred(userdata))
                        return true;
                if (!settle_with_workers(base, real_deadline))
                        return pred(userdata);
                if (pred(userdata))
                        return true;
                if (!vclock_next_deadline(&next) || next > end) {
                        vclock_set(end);
                        return pred(userdata);
                }
                vclock_set(next);
        }
}

static bool never(void *userdata) {
        return false;
}

void vloop_run_for(struct event_base *base, uint64_t usec) {
        (void) vloop_run_until(base, never, NULL, usec);
        vloop_settle(base);
}

bool vloop_run_until_io(struct event_base *base, bool (*pred)(void *userdata), void *userdata, uint64_t cap_usec,
                        uint64_t quiet_usec) {
        uint64_t end = vclock_monotonic_usec() + cap_usec, real_deadline = real_usec() + REAL_CAP_USEC, next;
        bool fired = false, ok;
        unsigned quiet = 0;
        struct event *guard = evtimer_new(base, on_guard, &fired);

        if (!guard)
                abort();
        for (;;) {
                struct timeval tv = timeval_from_usec(quiet_usec);

                if ((ok = pred(userdata)) || !settle_bounded(base, real_deadline) || (ok = pred(userdata)))
                        break;
                /* wait for real I/O, with a real guard (libevent's own timer: not on the virtual clock) */
                fired = false;
                evtimer_add(guard, &tv);
                event_base_loop(base, EVLOOP_ONCE);
                evtimer_del(guard);
                if (!fired) {
                        quiet = 0;
                        continue; /* something happened: look again before time moves */
                }
                /* two quiet windows in a row: a process descheduled during the first may have seen the guard
                 * and the I/O at once, and the second shows what that I/O led to */
                if (++quiet < 2)
                        continue;
                quiet = 0;
                if (real_usec() > real_deadline || !vclock_next_deadline(&next) || next > end) {
                        vclock_set(end);
                        ok = pred(userdata);
                        break;
                }
                vclock_set(next);
        }
        event_free(guard);
        return ok;
}

bool vloop_count_reached(void *userdata) {
        const struct vloop_count *c = userdata;
        return *c->counter >= c->target;
}
