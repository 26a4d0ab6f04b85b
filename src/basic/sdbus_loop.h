/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* sd-bus on the libevent loop (the systemd cgroup driver, the node shutdown manager): the bus fd and sd-bus's own
 * timeout are one event, armed again after each sd_bus_process() batch. */

#include <event2/event.h>
#include <systemd/sd-bus.h>

/* (Re)assign ev to the bus's fd with the events and the timeout sd-bus wants now, calling cb(userdata). sd-bus's
 * deadline is on the real monotonic clock: the delay from now goes through the loop's timer seam. Nothing when the
 * bus has no fd (closed). */
void sdbus_event_rearm(sd_bus *bus, struct event *ev, struct event_base *base, event_callback_fn cb, void *userdata);
