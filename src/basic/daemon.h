/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The service manager's notification protocol (sd_notify(3), libsystemd): READY=1, WATCHDOG=1, STOPPING=1 and
 * STATUS= lines sent to $NOTIFY_SOCKET. Without NOTIFY_SOCKET (not run by systemd with Type=notify) every call is
 * a no-op. */

#include <stdbool.h>
#include <stdint.h>

/* Send STATE ("READY=1\nSTATUS=..."). Returns > 0 when sent, 0 when there is no socket, < 0 on error. */
int daemon_notify(const char *state);
/* The watchdog interval the service manager asks for (WatchdogSec=, $WATCHDOG_USEC for this pid), 0 if none. */
uint64_t daemon_watchdog_usec(void);
