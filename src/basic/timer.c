/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/timer.h"

#include <event2/event.h>

#include "basic/time.h"
#include "basic/vclock.h"

void evtimer_add_usec(struct event *ev, uint64_t usec) {
        struct timeval tv = timeval_from_usec(usec);
        if (vclock_enabled()) {
                vclock_timer_add(ev, usec);
                return;
        }
        evtimer_add(ev, &tv);
}
