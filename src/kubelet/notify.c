/* SPDX-License-Identifier: Apache-2.0 */
/* Talking to the service manager (Type=notify, WatchdogSec=): READY=1 once the kubelet has done what a node is
 * for (the runtime listed, every source delivered, every desired pod through one sync pass, and with an API
 * server the Node registered), and WATCHDOG=1 from a timer on the loop, only while the sync loop is healthy, so
 * that a loop that is stuck or no longer syncing misses its pings and gets restarted. */
#include <stdio.h>
#include <stdlib.h>

#include "basic/daemon.h"
#include "basic/error.h"
#include "basic/log.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "kubelet/kubelet-internal.h"

static bool first_sync_done(struct kubelet *k) {
        if (!k->runtime_listed || !k->config_received)
                return false;
        for (struct pod_worker *w = k->workers; w; w = w->next)
                if (w->pod && !w->observed && w->failures == 0)
                        return false;
        return true;
}

void kubelet_notify_check_ready(struct kubelet *k) {
        char state[256], pods[32];

        if (k->notified_ready || k->stopping || !first_sync_done(k))
                return;
        if (!isempty(k->opts->kubeconfig) && (!k->node || !node_manager_node_uid(k->node)))
                return; /* not registered yet */
        k->notified_ready = true;
        snprintf(pods, sizeof(pods), "%zu", k->desired.n);
        snprintf(state, sizeof(state), "READY=1\nSTATUS=%s pods%s%s", pods, k->node ? ", node " : "",
                 k->node ? k->opts->node_name : "");
        log_info_kv("Kubelet is ready", "node", k->opts->node_name, "pods", pods, "registered",
                    k->node ? "true" : "false");
        (void) daemon_notify(state);
}

static void on_watchdog(evutil_socket_t fd, short what, void *userdata) {
        struct kubelet *k = userdata;
        _cleanup_ck_error_ struct ck_error *why = NULL;

        if (what & EV_TIMEOUT)
                (void) evtimer_add_usec(k->watchdog, k->watchdog_period_usec); /* periodic: the next one */

        if (kubelet_sync_loop_health(k, &why) < 0) {
                log_warning("not pinging the service manager's watchdog: %s", ck_error_message(why));
                return;
        }
        (void) daemon_notify("WATCHDOG=1");
}

int kubelet_watchdog_start(struct kubelet *k) {
        uint64_t usec = daemon_watchdog_usec(), period;

        if (usec == 0)
                return 0;
        /* twice per interval, as sd_watchdog_enabled(3) advises */
        period = MAX(usec / 2, (uint64_t) 1000);
        k->watchdog_period_usec = period;
        k->watchdog = evtimer_new(k->base, on_watchdog, k);
        if (!k->watchdog || evtimer_add_usec(k->watchdog, period) < 0)
                return -ENOMEM;
        log_info("Pinging the service manager's watchdog every %llu ms (WatchdogSec=%llu ms)",
                 (unsigned long long) (period / 1000), (unsigned long long) (usec / 1000));
        on_watchdog(-1, 0, k); /* the first at once */
        return 0;
}
