/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/timer_queue.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "basic/macro.h"
#include "basic/time.h"
#include "basic/timer.h"

/* an entry taken out of the heap to run in the current round: index = READY | its place in q->ready */
#define READY (((size_t) -1 >> 1) + 1)

struct timer_queue {
        struct event_base *base;
        struct event *ev;
        uint64_t granularity;
        struct timer_entry **heap;
        size_t n, cap;
        uint64_t seq;
        struct timer_entry **ready; /* the round being run (NULL: disarmed meanwhile) */
        size_t n_ready, cap_ready;
        uint64_t wake_armed; /* when ev is armed to fire; UINT64_MAX: not armed */
        bool running;        /* inside timer_queue_run: the event is armed once at its end */
};

static bool before(const struct timer_entry *a, const struct timer_entry *b) {
        return a->due_usec < b->due_usec || (a->due_usec == b->due_usec && a->seq < b->seq);
}

static void place(struct timer_queue *q, size_t i, struct timer_entry *e) {
        q->heap[i] = e;
        e->index = i;
}

static void sift_up(struct timer_queue *q, size_t i) {
        struct timer_entry *e = q->heap[i];

        while (i > 0) {
                size_t parent = (i - 1) / 2;
                if (!before(e, q->heap[parent]))
                        break;
                place(q, i, q->heap[parent]);
                i = parent;
        }
        place(q, i, e);
}

static void sift_down(struct timer_queue *q, size_t i) {
        struct timer_entry *e = q->heap[i];

        for (;;) {
                size_t c = 2 * i + 1;
                if (c >= q->n)
                        break;
                if (c + 1 < q->n && before(q->heap[c + 1], q->heap[c]))
                        c++;
                if (!before(q->heap[c], e))
                        break;
                place(q, i, q->heap[c]);
                i = c;
        }
        place(q, i, e);
}

uint64_t timer_queue_next_due(const struct timer_queue *q) {
        return q->n > 0 ? q->heap[0]->due_usec : UINT64_MAX;
}

uint64_t timer_queue_next_wake(const struct timer_queue *q) {
        uint64_t due = timer_queue_next_due(q), g = q->granularity;

        if (due == UINT64_MAX || g <= 1)
                return due;
        if (due > UINT64_MAX - g)
                return UINT64_MAX;
        return (due + g - 1) / g * g;
}

/* arm the event for the earliest entry when that is sooner than it is armed for (a later one is left: the
 * event then fires early, runs nothing and is armed again) */
static void update_event(struct timer_queue *q) {
        uint64_t wake, now;

        if (!q->ev || q->running || q->n == 0)
                return;
        wake = timer_queue_next_wake(q);
        if (wake >= q->wake_armed)
                return;
        /* libevent adds the delay to the time its loop iteration began: refresh it, or the event fires early */
        event_base_update_cache_time(q->base);
        now = now_usec();
        q->wake_armed = wake;
        evtimer_add_usec(q->ev, wake > now ? wake - now : 0);
}

int timer_queue_arm(struct timer_queue *q, struct timer_entry *e, uint64_t due_usec) {
        assert(q);
        assert(e);

        if (timer_entry_armed(e) && (e->index & READY))
                timer_queue_disarm(q, e); /* due in this round: it moves to its new time instead */
        if (timer_entry_armed(e)) {
                bool earlier = due_usec < e->due_usec;
                e->due_usec = due_usec;
                e->seq = q->seq++;
                if (earlier)
                        sift_up(q, e->index);
                else
                        sift_down(q, e->index);
                update_event(q);
                return 0;
        }
        if (q->n == q->cap) {
                size_t cap = q->cap ? q->cap * 2 : 16;
                struct timer_entry **h = reallocarray(q->heap, cap, sizeof(*h));
                if (!h)
                        return -ENOMEM;
                q->heap = h;
                q->cap = cap;
        }
        e->due_usec = due_usec;
        e->seq = q->seq++;
        q->heap[q->n] = e;
        e->index = q->n++;
        sift_up(q, e->index);
        update_event(q);
        return 0;
}

void timer_queue_disarm(struct timer_queue *q, struct timer_entry *e) {
        size_t i;
        struct timer_entry *last;

        assert(q);
        if (!e || !timer_entry_armed(e))
                return;
        if (e->index & READY) {
                i = e->index & ~READY;
                assert(i < q->n_ready && q->ready[i] == e);
                q->ready[i] = NULL;
                e->index = TIMER_ENTRY_IDLE;
                return;
        }
        i = e->index;
        assert(i < q->n && q->heap[i] == e);
        e->index = TIMER_ENTRY_IDLE;
        last = q->heap[--q->n];
        if (i == q->n)
                return;
        place(q, i, last);
        if (i > 0 && before(last, q->heap[(i - 1) / 2]))
                sift_up(q, i);
        else
                sift_down(q, i);
}

size_t timer_queue_run(struct timer_queue *q, uint64_t now_usec) {
        size_t ran = 0, n = 0;

        assert(!q->running);
        /* take the round out of the heap first: what the callbacks arm goes to the next round */
        while (q->n > 0 && q->heap[0]->due_usec <= now_usec) {
                struct timer_entry *e = q->heap[0];
                if (n == q->cap_ready) {
                        size_t cap = q->cap_ready ? q->cap_ready * 2 : 16;
                        struct timer_entry **r = reallocarray(q->ready, cap, sizeof(*r));
                        if (!r)
                                break; /* the rest runs in the next round */
                        q->ready = r;
                        q->cap_ready = cap;
                }
                timer_queue_disarm(q, e);
                q->ready[n] = e;
                e->index = READY | n;
                q->n_ready = ++n;
        }
        q->running = true;
        for (size_t i = 0; i < n; i++) {
                struct timer_entry *e = q->ready[i];
                if (!e)
                        continue; /* disarmed or re-armed by an earlier callback */
                q->ready[i] = NULL;
                e->index = TIMER_ENTRY_IDLE;
                ran++;
                e->fn(e, now_usec);
        }
        q->n_ready = 0;
        q->running = false;
        return ran;
}

static void on_event(evutil_socket_t fd, short what, void *userdata) {
        struct timer_queue *q = userdata;
        uint64_t now = now_usec();

        /* the event was armed for wake_armed: what was due by then runs, even if the clock read a hair earlier */
        now = MAX(now, q->wake_armed);
        q->wake_armed = UINT64_MAX;
        (void) timer_queue_run(q, now);
        update_event(q);
}

int timer_queue_new(struct event_base *base, uint64_t granularity_usec, struct timer_queue **ret) {
        struct timer_queue *q = calloc(1, sizeof(*q));

        if (!q)
                return -ENOMEM;
        q->granularity = granularity_usec;
        q->wake_armed = UINT64_MAX;
        q->base = base;
        if (base) {
                q->ev = evtimer_new(base, on_event, q);
                if (!q->ev) {
                        free(q);
                        return -ENOMEM;
                }
        }
        *ret = q;
        return 0;
}

struct timer_queue *timer_queue_free(struct timer_queue *q) {
        if (!q)
                return NULL;
        for (size_t i = 0; i < q->n; i++)
                q->heap[i]->index = TIMER_ENTRY_IDLE;
        for (size_t i = 0; i < q->n_ready; i++)
                if (q->ready[i])
                        q->ready[i]->index = TIMER_ENTRY_IDLE;
        if (q->ev)
                event_free(q->ev);
        free(q->heap);
        free(q->ready);
        free(q);
        return NULL;
}
