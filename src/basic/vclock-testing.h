/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: the controls of the virtual clock (vclock.h), which src/ never turns on. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/vclock.h"

/* Start virtual time on base at the given clock readings (usec). Timers armed before keep their real timeouts. */
void vclock_enable(struct event_base *base, uint64_t monotonic_usec, uint64_t realtime_usec);
/* Back to the real clocks; virtual timers still armed are dropped (their events stay added, far away). */
void vclock_disable(void);

/* The earliest deadline (monotonic usec) of a virtual timer still armed; false if none. */
bool vclock_next_deadline(uint64_t *ret_usec);
/* Move the clock forward to monotonic_usec (never back) and activate, in deadline order, the timers due by
 * then; the realtime clock moves by the same amount. Returns how many timers were activated. The callbacks
 * run when the loop next runs. */
unsigned vclock_set(uint64_t monotonic_usec);
