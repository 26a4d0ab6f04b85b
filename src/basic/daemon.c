/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/daemon.h"

#include <systemd/sd-daemon.h>

#include <string.h>

#include "basic/log.h"

int daemon_notify(const char *state) {
        int r = sd_notify(0, state);

        if (r < 0)
                log_warning("cannot notify the service manager (%s): %s", state, strerror(-r));
        else if (r > 0)
                log_v(5, "notified the service manager: %s", state);
        return r;
}

uint64_t daemon_watchdog_usec(void) {
        uint64_t usec = 0;

        if (sd_watchdog_enabled(0, &usec) <= 0)
                return 0;
        return usec;
}
