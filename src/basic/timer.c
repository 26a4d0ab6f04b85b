/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/timer.h"

#include <errno.h>
#include <event2/event.h>

#include "basic/time.h"
#include "basic/vclock.h"

int event_add_usec(struct event *ev, uint64_t usec) {
        struct timeval tv = timeval_from_usec(usec);

        if (vclock_enabled())
                return vclock_timer_add(ev, usec);
        return event_add(ev, &tv) < 0 ? -ENOMEM : 0;
}

int evtimer_add_usec(struct event *ev, uint64_t usec) {
        return event_add_usec(ev, usec);
}
