/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A virtual clock, for unit tests that must see minutes pass (back-off of 10 s, 20 s, ... 5 min) without
 * waiting for them. Production never enables it: now_usec(), now_realtime_usec() and evtimer_add_usec()
 * (basic/time.h, basic/timer.h) then read the real clocks and arm real libevent timers, at the cost of one branch.
 *
 * Once enabled, both clocks stand still until the test moves them (vclock_set). A timer armed through
 * evtimer_add_usec(), or an fd event's timeout armed through event_add_usec() (basic/timer.h, the loop's timer
 * seam), fires when the virtual clock reaches its deadline, whatever the real time: the event is kept added in
 * libevent (evtimer_pending() works as usual) with a far-away real timeout, and vclock_set() activates it. A
 * timer armed for "now" (0) is activated at once. Timers armed with libevent's own calls keep running on real
 * time: only tests do that (vloop's real-time guards); src/ arms none (scripts/check-timer-seam.py). Persistent
 * (EV_PERSIST) events must not be armed through the seam while the clock is virtual. One event base at a time.
 *
 * The controls (vclock_enable, vclock_set, ...) are in vclock-testing.h: only the unit tests use them. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

bool vclock_enabled(void);

uint64_t vclock_monotonic_usec(void);
uint64_t vclock_realtime_usec(void);

/* evtimer_add_usec() and event_add_usec() while the clock is virtual: 0, or -ENOMEM. */
int vclock_timer_add(struct event *ev, uint64_t usec);
