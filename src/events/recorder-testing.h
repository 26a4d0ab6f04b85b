/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests only: the recorder's (recorder.h) counters, which nothing in src/ reads. */

#include <stddef.h>
#include <stdint.h>

#include "events/recorder.h"

struct event_recorder_stats {
        uint64_t recorded;      /* accepted by eventf (valid type) */
        uint64_t spam_dropped;  /* dropped by the spam filter */
        uint64_t queue_dropped; /* dropped because the queue was full (or out of memory) */
        uint64_t coalesced;     /* absorbed by a queued update of the same Event object */
        uint64_t sent;          /* requests that succeeded (2xx) */
        uint64_t failed;        /* requests that failed (logged) */
        size_t queued, in_flight;
};
void event_recorder_get_stats(const struct event_recorder *r, struct event_recorder_stats *ret);
