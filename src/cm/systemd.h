/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The systemd cgroup driver's D-Bus client (sd-bus on the system bus: DBUS_SYSTEM_BUS_ADDRESS, else systemd's
 * default), driven by the libevent loop. A unit job is done when its reply came and then either its JobRemoved
 * signal or, as runc, one second without it (a warning, and it goes on). */

#include <event2/event.h>

#include "basic/error.h"
#include "cm/cm.h"

struct cm_sd;

/* done: r 0, or negative with message (a D-Bus error, a failed job); called from the loop, never from the call */
typedef void (*cm_sd_done_fn)(int r, const char *message, void *userdata);

/* Connects and reads systemd's Version (blocking: start-up only). Errors are logged. */
int cm_sd_open(struct event_base *base, struct cm_sd **ret);
/* Pending calls are dropped without their done callbacks; their destroy callbacks free their userdata. */
struct cm_sd *cm_sd_free(struct cm_sd *sd);
int cm_sd_version(const struct cm_sd *sd);

/* StartTransientUnit(unit, "replace", properties) and its job, blocking (start-up only); UnitExists is success. */
int cm_sd_start_slice_sync(struct cm_sd *sd, const char *unit, const struct cm_slice_properties *p,
                           struct ck_error **ret_error);
/* the same, from the loop: done is called once, later */
int cm_sd_start_slice(struct cm_sd *sd, const char *unit, const struct cm_slice_properties *p, cm_sd_done_fn done,
                      void (*destroy)(void *userdata), void *userdata);
/* SetUnitProperties(unit, runtime, properties) (libcontainer's setUnitProperties): no job, done on the reply */
int cm_sd_set_properties(struct cm_sd *sd, const char *unit, const struct cm_slice_properties *p, cm_sd_done_fn done,
                         void (*destroy)(void *userdata), void *userdata);
/* StopUnit(unit, "replace"); a failed job is a warning (runc stopUnit), done gets 0 then */
int cm_sd_stop_unit(struct cm_sd *sd, const char *unit, cm_sd_done_fn done, void (*destroy)(void *userdata),
                    void *userdata);
