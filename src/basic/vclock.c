/* SPDX-License-Identifier: Apache-2.0 */
/* The virtual clock for tests; see vclock.h. */
#include "basic/vclock.h"
#include "basic/vclock-testing.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "basic/time.h"

/* The real timeout of an armed virtual timer: far enough that it never fires by itself, and that no timer
 * armed with a real timeout is mistaken for one. */
#define FAR_SEC (10 * 365 * 24 * 3600L)
#define FAR_MIN_SEC (FAR_SEC / 2)

struct vtimer {
        struct event *ev;
        uint64_t deadline;
        uint64_t seq; /* arming order, for ties */
};

static struct {
        bool enabled;
        struct event_base *base;
        uint64_t mono;
        int64_t real_minus_mono;
        struct vtimer *timers;
        size_t n, cap;
        uint64_t seq;
} vc;

void vclock_enable(struct event_base *base, uint64_t monotonic_usec, uint64_t realtime_usec) {
        assert(base);
        vclock_disable();
        vc.enabled = true;
        vc.base = base;
        vc.mono = monotonic_usec;
        vc.real_minus_mono = (int64_t) realtime_usec - (int64_t) monotonic_usec;
}

void vclock_disable(void) {
        free(vc.timers);
        memset(&vc, 0, sizeof(vc));
}

bool vclock_enabled(void) {
        return vc.enabled;
}

uint64_t vclock_monotonic_usec(void) {
        return vc.mono;
}

uint64_t vclock_realtime_usec(void) {
        return (uint64_t) ((int64_t) vc.mono + vc.real_minus_mono);
}

static void timer_forget(const struct event *ev) {
        for (size_t i = 0; i < vc.n; i++)
                if (vc.timers[i].ev == ev) {
                        memmove(&vc.timers[i], &vc.timers[i + 1], (vc.n - i - 1) * sizeof(vc.timers[0]));
                        vc.n--;
                        return;
                }
}

int vclock_timer_add(struct event *ev, uint64_t usec) {
        struct timeval far = { .tv_sec = FAR_SEC };

        assert(vc.enabled);
        assert(!(event_get_events(ev) & EV_PERSIST));
        assert(event_get_base(ev) == vc.base);
        /* re-arming replaces whatever was armed or about to run */
        event_del(ev);
        timer_forget(ev);
        if (usec == 0) {
                event_active(ev, EV_TIMEOUT, 1);
                return 0;
        }
        if (vc.n == vc.cap) {
                size_t cap = vc.cap ? vc.cap * 2 : 64;
                struct vtimer *n = reallocarray(vc.timers, cap, sizeof(*n));
                if (!n) {
                        /* out of memory: a real timer is still a timer */
                        struct timeval tv = timeval_from_usec(usec);
                        return event_add(ev, &tv) < 0 ? -ENOMEM : 0;
                }
                vc.timers = n;
                vc.cap = cap;
        }
        vc.timers[vc.n++] = (struct vtimer) { .ev = ev, .deadline = vc.mono + usec, .seq = vc.seq++ };
        if (event_add(ev, &far) < 0) {
                vc.n--;
                return -ENOMEM;
        }
        return 0;
}

struct live {
        const struct event **evs;
        size_t n, cap;
        bool oom;
};

static int collect(const struct event_base *base, const struct event *ev, void *userdata) {
        struct live *l = userdata;

        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 256;
                const struct event **n = reallocarray(l->evs, cap, sizeof(*n));
                if (!n) {
                        l->oom = true;
                        return -1;
                }
                l->evs = n;
                l->cap = cap;
        }
        l->evs[l->n++] = ev;
        return 0;
}

static int cmp_ptr(const void *a, const void *b) {
        uintptr_t x = (uintptr_t) * (const struct event *const *) a, y = (uintptr_t) * (const struct event *const *) b;
        return x < y ? -1 : x > y;
}

/* Drop the records of events that were freed, deleted or re-armed by libevent's own calls since: only an
 * event still added in the base with our far-away timeout is ours. */
static void prune(void) {
        struct live l = {};
        struct timeval now;
        size_t j = 0;

        if (vc.n == 0)
                return;
        if (event_base_foreach_event(vc.base, collect, &l) < 0 && l.oom) {
                free(l.evs);
                return;
        }
        if (l.n > 1)
                qsort(l.evs, l.n, sizeof(l.evs[0]), cmp_ptr);
        gettimeofday(&now, NULL);
        for (size_t i = 0; i < vc.n; i++) {
                const struct event *ev = vc.timers[i].ev;
                struct timeval tv;
                bool ok = l.n > 0 && bsearch(&ev, l.evs, l.n, sizeof(l.evs[0]), cmp_ptr) &&
                          event_pending(ev, EV_TIMEOUT, &tv) && tv.tv_sec - now.tv_sec > FAR_MIN_SEC;
                if (ok)
                        vc.timers[j++] = vc.timers[i];
        }
        vc.n = j;
        free(l.evs);
}

bool vclock_next_deadline(uint64_t *ret_usec) {
        bool any = false;
        uint64_t min = 0;

        if (!vc.enabled)
                return false;
        prune();
        for (size_t i = 0; i < vc.n; i++)
                if (!any || vc.timers[i].deadline < min) {
                        min = vc.timers[i].deadline;
                        any = true;
                }
        if (any)
                *ret_usec = min;
        return any;
}

static int cmp_due(const void *a, const void *b) {
        const struct vtimer *x = a, *y = b;
        if (x->deadline != y->deadline)
                return x->deadline < y->deadline ? -1 : 1;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

unsigned vclock_set(uint64_t monotonic_usec) {
        struct vtimer *due;
        size_t n_due = 0, j = 0;

        assert(vc.enabled);
        if (monotonic_usec > vc.mono)
                vc.mono = monotonic_usec;
        prune();
        due = calloc(vc.n ? vc.n : 1, sizeof(*due));
        if (!due)
                return 0;
        for (size_t i = 0; i < vc.n; i++) {
                if (vc.timers[i].deadline <= vc.mono)
                        due[n_due++] = vc.timers[i];
                else
                        vc.timers[j++] = vc.timers[i];
        }
        vc.n = j;
        if (n_due > 1)
                qsort(due, n_due, sizeof(due[0]), cmp_due);
        for (size_t i = 0; i < n_due; i++) {
                /* as libevent does with an expired timer: no longer added, active until its callback runs */
                event_del(due[i].ev);
                event_active(due[i].ev, EV_TIMEOUT, 1);
        }
        free(due);
        return (unsigned) n_due;
}
