/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Running the real event loop in tests on the virtual clock (basic/vclock.h): until a condition holds, with a
 * cap, never sleeping. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

/* Enable the virtual clock on base, at fixed readings (monotonic 1000 s, realtime 2024-01-01T00:00:00Z) so that
 * runs are reproducible. */
void vloop_enable(struct event_base *base);
void vloop_disable(void);

/* Run everything that can run without time passing: active events and ready I/O, and the jobs of worker threads
 * (basic/workpool.h) in flight, waited for in real time, until nothing is left. */
void vloop_settle(struct event_base *base);

/* Worker jobs the test keeps blocked on purpose (a read that never returns until the test lets it): with up to n
 * jobs in flight, vloop_settle and vloop_run_until no longer wait for them and the clock moves (their deadlines
 * can pass). 0 again at vloop_enable. */
void vloop_allow_stuck_jobs(unsigned n);

/* Run the loop until pred(userdata) holds. Whenever nothing can run without time passing (worker jobs in flight
 * included, as vloop_settle), the virtual clock jumps to the next timer, at most cap_usec of virtual time from now. Returns pred's last value. Only for
 * tests whose only I/O is in process (the fake runtime): real I/O does not hold the clock back. */
bool vloop_run_until(struct event_base *base, bool (*pred)(void *userdata), void *userdata, uint64_t cap_usec);

/* Let cap_usec of virtual time pass, running whatever falls due, in order. */
void vloop_run_for(struct event_base *base, uint64_t usec);

/* The same for tests with real I/O on the loop (a loopback HTTP server): the virtual clock moves only when the
 * loop has had nothing to do for quiet_usec of real time, so that an exchange in flight completes first. */
bool vloop_run_until_io(struct event_base *base, bool (*pred)(void *userdata), void *userdata, uint64_t cap_usec,
                        uint64_t quiet_usec);

/* The condition "*(unsigned *) userdata >= target" is common enough: */
struct vloop_count {
        const unsigned *counter;
        unsigned target;
};
bool vloop_count_reached(void *userdata);
