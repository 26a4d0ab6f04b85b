/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Many deadlines on one libevent timer: a binary min-heap of entries ordered by deadline (then by arming
 * order), and one timer event armed for the earliest. Arming, re-arming and disarming an entry cost O(log n)
 * and no system call; the loop's timer set holds one event however many entries there are.
 *
 * The queue has a granularity g: the event fires only at multiples of g (monotonic time), so entries due close
 * together run in one wake-up of the process, never early and at most g late (plus the loop's own delay).
 * g = 0 fires at each deadline exactly.
 *
 * Entries are embedded in the caller's objects (struct timer_entry); an armed entry must be disarmed before its
 * memory goes. A run takes every entry due out of the heap, then calls them in deadline order; a callback may
 * arm, re-arm or disarm any entry, its own included (an entry of the same round that is disarmed or re-armed
 * before its turn does not run in it), and free a disarmed one; an entry armed during a run, even for a time
 * already past, runs in a later round, so a callback that re-arms itself at once cannot starve the loop. */

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct timer_queue;
struct timer_entry;

/* now: the monotonic time of this run (now_usec()), the same for every entry of one wake-up */
typedef void (*timer_entry_fn)(struct timer_entry *e, uint64_t now_usec);

struct timer_entry {
        uint64_t due_usec; /* monotonic; valid while armed */
        uint64_t seq;      /* arming order, for ties */
        size_t index;      /* where the queue holds it; TIMER_ENTRY_IDLE when not armed */
        timer_entry_fn fn;
};

#define TIMER_ENTRY_IDLE ((size_t) -1)

static inline void timer_entry_init(struct timer_entry *e, timer_entry_fn fn) {
        *e = (struct timer_entry) { .index = TIMER_ENTRY_IDLE, .fn = fn };
}

static inline bool timer_entry_armed(const struct timer_entry *e) {
        return e->index != TIMER_ENTRY_IDLE;
}

/* base may be NULL for a queue that is only run by hand (timer_queue_run; tests). */
int timer_queue_new(struct event_base *base, uint64_t granularity_usec, struct timer_queue **ret);
/* Entries still armed are disarmed (their memory stays the caller's). Accepts NULL. */
struct timer_queue *timer_queue_free(struct timer_queue *q);

/* (Re)arm e for the monotonic time due_usec. -ENOMEM (the heap could not grow) leaves e disarmed. */
int timer_queue_arm(struct timer_queue *q, struct timer_entry *e, uint64_t due_usec);
/* Disarm e; nothing when it is not armed. */
void timer_queue_disarm(struct timer_queue *q, struct timer_entry *e);

/* The earliest deadline (UINT64_MAX when empty), and when the queue's event fires for it (rounded up to the
 * granularity). */
uint64_t timer_queue_next_due(const struct timer_queue *q);
uint64_t timer_queue_next_wake(const struct timer_queue *q);

/* Run, in deadline order, every entry due at or before now (each is disarmed before its callback runs).
 * Returns how many ran. The event's callback calls this with now_usec(); tests call it with a time of their
 * own. Not reentrant. */
size_t timer_queue_run(struct timer_queue *q, uint64_t now_usec);
