/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* libevent timers in microseconds. */

#include <stdint.h>

struct event;
/* (Re)arm a libevent timer to fire in usec. */
void evtimer_add_usec(struct event *ev, uint64_t usec);
