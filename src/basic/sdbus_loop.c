/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/sdbus_loop.h"

#include <poll.h>
#include <stdint.h>
#include <time.h>

#include "basic/time.h"
#include "basic/timer.h"

void sdbus_event_rearm(sd_bus *bus, struct event *ev, struct event_base *base, event_callback_fn cb, void *userdata) {
        uint64_t until = UINT64_MAX;
        int events, fd;
        short what = EV_READ;

        if (!bus)
                return;
        fd = sd_bus_get_fd(bus);
        events = sd_bus_get_events(bus);
        if (fd < 0 || events < 0)
                return;
        if (events & POLLOUT)
                what |= EV_WRITE;
        (void) sd_bus_get_timeout(bus, &until);
        event_del(ev);
        event_assign(ev, base, fd, what, cb, userdata);
        if (until == UINT64_MAX)
                event_add(ev, NULL);
        else {
                struct timespec ts;
                uint64_t now;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                now = (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
                (void) event_add_usec(ev, until > now ? until - now : 0);
        }
}
