/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The DRA manager's node side (pkg/kubelet/cm/dra manager.go): prepares the claims of a pod with its drivers
 * (NodePrepareResources, one call per driver for the claims that need it), keeps the devices they return, and
 * unprepares (NodeUnprepareResources) the claims whose last pod is gone. The cache (claims.h) is checkpointed to
 * <root-dir>/dra_manager_state after every change, written atomically off the loop (the device manager's
 * checkpoint writer). Everything is asynchronous, on the loop. A claim whose prepare is in flight is not asked
 * again: the pods needing it wait for that call; a pod needing a claim being unprepared waits for the unprepare and
 * then a new prepare. */

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>

struct ck_error;
struct dra_claims;
struct dra_plugins;
struct dra_manager;
struct dra_prepare;

#define DRA_CHECKPOINT_FILE "dra_manager_state"
#define DRA_CHECKPOINT_MAX_SIZE (16u * 1024u * 1024u)
#define DRA_UNPREPARE_RETRY_USEC (10 * UINT64_C(1000000)) /* a failed unprepare is tried again after this */

/* Reads the checkpoint if any (a corrupt one is an error, as upstream's). */
int dra_manager_new(struct event_base *base, const char *root_dir, struct dra_plugins *plugins,
                    struct dra_manager **ret, struct ck_error **ret_error);
/* Pending prepares are dropped (their callbacks do not run); the last checkpoint is written. Accepts NULL. */
struct dra_manager *dra_manager_free(struct dra_manager *m);
struct dra_claims *dra_manager_claims(struct dra_manager *m);

struct dra_claim_ref {
        const char *uid, *name, *namespace;
        char *const *drivers; /* the allocation's drivers (dra_claim_check) */
};

/* done: r = 0 when every claim is prepared; else the error ("NodePrepareResources failed for ResourceClaim x:
 * ...", "DRA driver d is not registered"). Runs later, once, unless cancelled. */
typedef void (*dra_prepare_done_t)(int r, const char *error, void *userdata);
int dra_manager_prepare(struct dra_manager *m, const char *pod_uid, const struct dra_claim_ref *claims, size_t n,
                        dra_prepare_done_t done, void *userdata, struct dra_prepare **ret);
void dra_prepare_cancel(struct dra_prepare *p); /* accepts NULL */

/* Claims no active pod uses lose their other pods (after a restart: pods deleted meanwhile), and every claim without
 * pods that is prepared is unprepared (again, after a failure). */
void dra_manager_gc(struct dra_manager *m, char *const *active_pod_uids);
