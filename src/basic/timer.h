/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The loop's timer seam: libevent timers in microseconds. Every timeout src/ arms goes through here (or
 * basic/vclock.c, which these call): with the virtual clock of the unit tests enabled (basic/vclock.h) they fire
 * when that clock reaches their deadline, else they are plain libevent timeouts. A timeout armed with libevent's
 * own calls would ignore the virtual clock: scripts/check-timer-seam.py (a test of tests/run.sh) fails on one,
 * but for evhttp's own connection timeouts of the API server, which it lists by name. Neither function takes an
 * EV_PERSIST event while the clock is virtual: a periodic timer re-arms itself in its callback. */

#include <stdint.h>

struct event;
/* (Re)arm a libevent timer to fire in usec (0: from the loop, never inside this call). 0, or -ENOMEM when libevent
 * could not add it. */
int evtimer_add_usec(struct event *ev, uint64_t usec);
/* (Re)arm an fd event with a timeout: it runs with EV_TIMEOUT in usec unless its fd is ready first, as
 * event_add(ev, &tv) does. 0, or -ENOMEM. */
int event_add_usec(struct event *ev, uint64_t usec);
