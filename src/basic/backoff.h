/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Per-key exponential back-off, as client-go's flowcontrol.Backoff used by the kubelet for
 * CrashLoopBackOff (10s doubling to 5 min) and ImagePullBackOff. No jitter, as the kubelet's instances.
 * An entry is forgotten (reset to the initial delay) when the event comes more than 2*max after its last
 * update: a container that ran for 10 minutes starts over at 10 s. Times are wall-clock microseconds
 * (container finish times come from the runtime as wall-clock). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct backoff_entry {
        char *key;
        uint64_t delay_usec;
        uint64_t last_update_usec;
};

struct backoff {
        uint64_t initial_usec;
        uint64_t max_usec;
        size_t n;
        struct backoff_entry *entries;
};

void backoff_init(struct backoff *b, uint64_t initial_usec, uint64_t max_usec);
void backoff_done(struct backoff *b);

/* Record an event (a restart): the delay doubles, or starts at initial if unknown/expired. */
int backoff_next(struct backoff *b, const char *key, uint64_t event_time_usec, uint64_t now_usec);
/* True if an event at event_time is still inside the current delay; *ret_until (optional) gets the end. */
bool backoff_in_backoff_since(const struct backoff *b, const char *key, uint64_t event_time_usec, uint64_t now_usec,
                              uint64_t *ret_until_usec);
/* When the key was last updated (backoff_next), 0 if unknown. */
uint64_t backoff_last_update(const struct backoff *b, const char *key);
/* Current delay of a key, 0 if unknown. */
uint64_t backoff_get(const struct backoff *b, const char *key);
void backoff_reset(struct backoff *b, const char *key);
/* Forget entries not updated for 2*max. */
void backoff_gc(struct backoff *b, uint64_t now_usec);
