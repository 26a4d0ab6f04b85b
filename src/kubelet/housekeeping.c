/* SPDX-License-Identifier: Apache-2.0 */
/* Housekeeping (every HOUSEKEEPING_PERIOD_USEC): back-off GC, the periodic resync of every worker, mirror pods,
 * devices, deferred resizes, orphaned allocations, pod directories, user namespaces and pod cgroups, and the
 * container and image GC. */

#include <errno.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/allocation.h"
#include "kubelet/userns.h"
#include "volumes/volumes.h"

#define HOUSEKEEPING_PERIOD_USEC (2 * USEC_PER_SEC)

/* a pod cgroup stays while a worker (desired, or terminating with runtime state) or a source holds its UID */
static bool pod_uid_active(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        return kubelet_find_worker(k, uid) || kubelet_pod_desired(k, uid);
}

/* ---------------------------------------------------------------- housekeeping */

/* a pod directory is kept while its pod is desired, has a worker or has anything in the runtime */
static bool pod_dir_wanted(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        return kubelet_pod_desired(k, uid) || kubelet_find_worker(k, uid) || volmgr_pod_has_volumes(k->volumes, uid) ||
               pleg_has_pod(k->pleg, uid);
}

static bool userns_wanted(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        return kubelet_pod_desired(k, uid) || kubelet_find_worker(k, uid) || pleg_has_pod(k->pleg, uid);
}

/* the periodic housekeeping timer's callback (re-arms itself) */
static void kubelet_housekeeping(evutil_socket_t fd, short what, void *userdata) {
        struct kubelet *k = userdata;
        uint64_t now = now_usec();

        /* re-armed rather than EV_PERSIST: evtimer_add_usec follows the tests' virtual clock (basic/vclock.h) */
        evtimer_add_usec(k->housekeeping, HOUSEKEEPING_PERIOD_USEC);
        k->last_loop_usec = now;
        backoff_gc(&k->crash_backoff, now_realtime_usec());
        backoff_gc(&k->image_backoff, now);
        backoff_gc(&k->removal_backoff, now);
        /* periodic resync of every worker (--sync-frequency) */
        if (k->runtime_listed && now - k->last_full_resync >= k->opts->sync_frequency_usec) {
                k->last_full_resync = now;
                for (struct pod_worker *w = k->workers; w; w = w->next)
                        kubelet_worker_request_sync(w);
        }
        kubelet_sync_mirror_pods(k);
        kubelet_devices_gc(k);
        kubelet_retry_deferred_resizes(k);
        kubelet_notify_check_ready(k);
        /* the allocated resources of pods no source wants any more are forgotten (upstream's HandlePodCleanups
         * removing orphaned allocations): only once every source has spoken and the runtime has been listed */
        if (k->runtime_listed && k->config_received && !k->stopping)
                kubelet_allocation_remove_orphans(k->allocation, kubelet_allocation_wanted, k);
        /* cleanupOrphanedPodDirs: only once every source has spoken and the runtime has been listed */
        if (k->runtime_listed && k->config_received && !k->stopping) {
                volmgr_set_sources_ready(k->volumes);
                /* the removals run on the removal pool: a pod's million files never stall the loop */
                (void) vol_reaper_scan(k->reaper, pod_dir_wanted, k);
                kubelet_released_volumes_prune(k);
                /* CleanupOrphanedPodUsernsAllocations: neither desired nor running */
                userns_release_orphans(k->userns, userns_wanted, k);
        }
        if (cm_enabled(k->cm)) {
                (void) kubelet_update_qos_cgroups(k);
                /* as kubelet_reconcile(): only once the runtime and every source have been heard */
                if (k->runtime_listed && k->config_received && !k->runtime_down && !k->stopping)
                        cm_cleanup_orphans(k->cm, pod_uid_active, k);
        }
        kubelet_gc_housekeeping(k);
}

int kubelet_housekeeping_setup(struct kubelet *k) {
        k->housekeeping = evtimer_new(k->base, kubelet_housekeeping, k);
        if (!k->housekeeping)
                return -ENOMEM;
        evtimer_add_usec(k->housekeeping, HOUSEKEEPING_PERIOD_USEC);
        k->last_full_resync = now_usec();
        k->last_loop_usec = now_usec();
        return 0;
}
