/* SPDX-License-Identifier: Apache-2.0 */
/* The PLEG's side of the kubelet: the relist period, a pod the PLEG saw change wakes its worker, and a relist
 * (the runtime down or up again, the first listing) is followed by the reconcile of the workers with the desired
 * pods (kubelet.c). */

#include <errno.h>
#include <stdlib.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "kubelet/kubelet-internal.h"
#include "features/features.h"

#define PLEG_RELIST_PERIOD_USEC (1 * USEC_PER_SEC)

/* genericPlegRelistPeriod (1 s); CKUBELET_TEST_PLEG_RELIST_SECONDS stretches it for the tests that show what the
 * evented PLEG alone sees (no flag: upstream has none) */
static uint64_t pleg_relist_period(void) {
        const char *e = getenv("CKUBELET_TEST_PLEG_RELIST_SECONDS");
        char *end = NULL;
        unsigned long v;

        if (isempty(e))
                return PLEG_RELIST_PERIOD_USEC;
        errno = 0;
        v = strtoul(e, &end, 10);
        if (errno != 0 || !end || *end != '\0' || v == 0 || v > 86400) {
                log_warning("ignoring CKUBELET_TEST_PLEG_RELIST_SECONDS=%s: not 1..86400", e);
                return PLEG_RELIST_PERIOD_USEC;
        }
        log_warning("PLEG relist period %lu s (CKUBELET_TEST_PLEG_RELIST_SECONDS, for tests)", v);
        return (uint64_t) v * USEC_PER_SEC;
}

static void on_pod_changed(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        struct pod_worker *w = kubelet_find_worker(k, uid);

        log_v(4, "PLEG: pod %s changed", uid);
        if (w)
                kubelet_worker_request_sync(w);
        /* an unknown UID gets a terminating worker in kubelet_reconcile() after the relist */
}

static void on_relisted(bool ok, void *userdata) {
        struct kubelet *k = userdata;

        if (!ok) {
                if (!k->runtime_down)
                        log_error("container runtime is down: relisting failed");
                k->runtime_down = true;
                return;
        }
        if (k->runtime_down) {
                /* back after an outage: re-sync every pod now rather than at each worker's error back-off */
                log_info("container runtime is up again, re-syncing all pods");
                k->runtime_down = false;
                for (struct pod_worker *w = k->workers; w; w = w->next) {
                        w->failures = 0;
                        kubelet_worker_update_allocation(k, w);
                        kubelet_worker_request_sync(w);
                        kubelet_worker_check_deadline(w);
                }
        }
        if (!k->runtime_listed) {
                size_t sb, rsb, c, rc;
                pleg_counts(k->pleg, &sb, &rsb, &c, &rc);
                log_info("runtime listed: %zu sandboxes (%zu ready), %zu containers (%zu running)", sb, rsb, c, rc);
                k->runtime_listed = true;
        }
        kubelet_reconcile(k);
        kubelet_notify_check_ready(k);
}

/* the PLEG, evented with the EventedPLEG gate (kubelet_start; started last, by pleg_start) */
int kubelet_pleg_setup(struct kubelet *k) {
        static const struct pleg_callbacks pleg_cb = { .pod_changed = on_pod_changed, .relisted = on_relisted };
        int r;

        r = pleg_new(k->base, k->cri, pleg_relist_period(), &pleg_cb, k, &k->pleg);
        if (r < 0)
                return r;
        if (feature_enabled(k->opts->feature_gates, "EventedPLEG")) {
                r = pleg_set_evented(k->pleg, true);
                if (r < 0)
                        return r;
        }
        return 0;
}
