/* SPDX-License-Identifier: Apache-2.0 */
/* The node shutdown manager as the kubelet wires it (kubelet.go: nodeshutdown.NewManager, its admit handler, the
 * Ready condition's ShutdownStatus): the active pods, stopping one for good (killPodNow with the Failed/Terminated
 * status and DisruptionTarget), whether a pod is stopped and its final status is in the API server, and the node
 * shutting down (not Ready, an event). */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "kubelet/kubelet-internal.h"
#include "nodeshutdown/manager.h"

static int active_pods(void *userdata, struct nodeshutdown_pod **ret, size_t *ret_n) {
        struct kubelet *k = userdata;
        struct nodeshutdown_pod *l = calloc(k->n_workers + 1, sizeof(*l));
        size_t n = 0;

        if (!l)
                return -ENOMEM;
        for (struct pod_worker *w = k->workers; w && n < k->n_workers; w = w->next) {
                if (!w->pod || w->terminated || w->deleting || kubelet_pod_terminal_in_api(w->pod))
                        continue;
                l[n].uid = strdup(w->uid);
                l[n].name = strdup(strna(w->full_name));
                l[n].priority = w->pod->spec.priority;
                l[n].grace = w->pod->spec.termination_grace_period_seconds;
                if (!l[n].uid || !l[n].name) {
                        nodeshutdown_pods_free(l, n + 1);
                        return -ENOMEM;
                }
                n++;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

static int kill_pod(void *userdata, const char *uid, int64_t grace_seconds) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);

        if (!w || !w->pod)
                return -ENOENT;
        /* not recorded for a restart, as upstream: an API pod stays Failed in the API server, a static pod runs
         * again when the node is back */
        return kubelet_pod_terminate(k, w, NODESHUTDOWN_REASON, NODESHUTDOWN_MESSAGE, grace_seconds, false);
}

/* no container of the status is running */
static bool status_stopped(const json_t *status) {
        static const char *const lists[] = { "initContainerStatuses", "containerStatuses",
                                             "ephemeralContainerStatuses" };
        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                const json_t *c;
                size_t j;
                json_array_foreach(json_object_get(status, lists[i]), j, c)
                        if (json_object_get(json_object_get(c, "state"), "running"))
                                return false;
        }
        return true;
}

static bool pod_done(void *userdata, const char *uid) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);
        const json_t *status;
        const char *report;

        if (!w)
                return true;
        if (!kubelet_pod_cleaned_up(k, uid))
                return false;
        report = k->status ? kubelet_report_uid(k, w) : NULL;
        if (!report)
                return true; /* no API server to tell */
        status = status_manager_get(k->status, report);
        if (!status)
                return true;
        /* the status generated once it stopped: Failed, no container running; and the API server has it */
        if (!streq_ptr(json_string_value(json_object_get(status, "phase")), "Failed") || !status_stopped(status)) {
                kubelet_report_status(k, w);
                return false;
        }
        return status_manager_synced(k->status, report);
}

static void shutting_down(void *userdata, bool on) {
        struct kubelet *k = userdata;

        kubelet_node_event(k, "Normal", "Shutdown", "%s",
                           on ? "Shutdown manager detected shutdown event"
                              : "Shutdown manager detected shutdown cancellation");
        node_manager_set_shutting_down(k->node, on);
}

int kubelet_shutdown_setup(struct kubelet *k) {
        static const struct nodeshutdown_ops ops = {
                .active_pods = active_pods,
                .kill = kill_pod,
                .pod_done = pod_done,
                .shutting_down = shutting_down,
        };
        const struct kubelet_options *o = k->opts;
        _cleanup_free_ struct nodeshutdown_period *periods = NULL;
        _cleanup_free_ char *desc = NULL;
        size_t n = 0, len = 0;
        FILE *f;
        int r;

        r = nodeshutdown_periods(o->shutdown_grace_period_usec, o->shutdown_grace_period_critical_pods_usec,
                                 o->shutdown_by_priority, o->n_shutdown_by_priority, &periods, &n);
        if (r < 0)
                return r;
        if (n == 0)
                return 0; /* off */
        f = open_memstream(&desc, &len);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s{priority: %" PRId32 ", shutdownGracePeriodSeconds: %" PRId64 "}", i ? ", " : "",
                        periods[i].priority, periods[i].seconds);
        if (fclose(f) != 0)
                return -ENOMEM;
        log_info("Creating node shutdown manager shutdownGracePeriodRequested=%" PRIu64
                 "s shutdownGracePeriodCriticalPods=%" PRIu64 "s shutdownGracePeriodByPodPriority=[%s]",
                 o->shutdown_grace_period_usec / USEC_PER_SEC,
                 o->shutdown_grace_period_critical_pods_usec / USEC_PER_SEC, strempty(desc));
        r = nodeshutdown_manager_new(k->base, periods, n, getenv("CKUBELET_LOGIND_CONF_DIR"), &ops, k, &k->shutdown);
        if (r < 0)
                return r;
        /* not critical for the kubelet: a failure is logged, and the kubelet runs on without it */
        (void) nodeshutdown_manager_start(k->shutdown);
        return 0;
}

void kubelet_shutdown_free(struct kubelet *k) {
        k->shutdown = nodeshutdown_manager_free(k->shutdown);
}

int kubelet_shutdown_admit(struct kubelet *k, struct ck_error **ret_error) {
        if (!nodeshutdown_manager_shutting_down(k->shutdown))
                return 0;
        return ck_error_set_reason(ret_error, -ENOSPC, NODESHUTDOWN_NOT_ADMITTED_REASON, "%s",
                                   NODESHUTDOWN_NOT_ADMITTED_MESSAGE);
}
