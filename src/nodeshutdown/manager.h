/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The node shutdown manager (pkg/kubelet/nodeshutdown, Linux): a logind "delay" inhibitor lock for shutdown,
 * taken over sd-bus on the libevent loop, logind's InhibitDelayMaxUSec raised first when it is below the sum of the
 * groups' budgets (a drop-in in /etc/systemd/logind.conf.d and a SIGHUP to systemd-logind), and on logind's
 * PrepareForShutdown(true): the node shutting down (not Ready, new pods rejected), the active pods stopped group
 * by group, lowest priority first, each group within its budget, then the lock released. PrepareForShutdown(false)
 * (the shutdown was cancelled) ends the shutting-down state and takes the lock again. */

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nodeshutdown/config.h"

/* upstream's strings */
#define NODESHUTDOWN_NOT_ADMITTED_REASON "NodeShutdown"
#define NODESHUTDOWN_NOT_ADMITTED_MESSAGE "Pod was rejected as the node is shutting down."
#define NODESHUTDOWN_REASON "Terminated"
#define NODESHUTDOWN_MESSAGE "Pod was terminated in response to imminent node shutdown."
#define NODESHUTDOWN_STATUS_ERROR "node is shutting down" /* the node's Ready message (ShutdownStatus) */
#define NODESHUTDOWN_LOGIND_CONF_DIR "/etc/systemd/logind.conf.d"
#define NODESHUTDOWN_LOGIND_CONF "99-kubelet.conf"

struct nodeshutdown_manager;

struct nodeshutdown_pod {
        char *uid;
        char *name;       /* namespace/name, for the log */
        int32_t priority; /* spec.priority (0 when none) */
        int64_t grace;    /* terminationGracePeriodSeconds, -1: none */
};

struct nodeshutdown_ops {
        /* the active pods (GetActivePods): an array the manager frees with nodeshutdown_pods_free */
        int (*active_pods)(void *userdata, struct nodeshutdown_pod **ret, size_t *ret_n);
        /* stop the pod for good with this grace period: phase Failed, NODESHUTDOWN_REASON/MESSAGE and the
         * DisruptionTarget condition */
        int (*kill)(void *userdata, const char *uid, int64_t grace_seconds);
        /* the pod is stopped and the API server has its final status (or it is gone) */
        bool (*pod_done)(void *userdata, const char *uid);
        /* the node starts (true) or stops (false) shutting down: its status now, an event */
        void (*shutting_down)(void *userdata, bool on);
};

void nodeshutdown_pods_free(struct nodeshutdown_pod *l, size_t n);

/* periods: sorted (nodeshutdown_periods), n > 0, copied. logind_conf_dir NULL: NODESHUTDOWN_LOGIND_CONF_DIR. */
int nodeshutdown_manager_new(struct event_base *base, const struct nodeshutdown_period *periods, size_t n,
                             const char *logind_conf_dir, const struct nodeshutdown_ops *ops, void *userdata,
                             struct nodeshutdown_manager **ret);
/* Connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS, else systemd's default) and starts the steps above on the
 * loop. An error here, or of a later step, is logged and leaves the manager off, as upstream. */
int nodeshutdown_manager_start(struct nodeshutdown_manager *m);
struct nodeshutdown_manager *nodeshutdown_manager_free(struct nodeshutdown_manager *m);
/* ShutdownStatus: the node is shutting down (a PrepareForShutdown(true) not cancelled) */
bool nodeshutdown_manager_shutting_down(const struct nodeshutdown_manager *m);
