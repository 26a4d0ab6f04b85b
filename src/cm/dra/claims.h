/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The DRA manager's claim cache (pkg/kubelet/cm/dra claiminfo.go, state/): the ResourceClaims prepared on this
 * node, the pods using each, the devices the drivers returned, and the checkpoint of all that
 * (<root-dir>/dra_manager_state, upstream's format: {"Data": "<json>", "Checksum": crc32 of Data}). Pure: no loop,
 * no I/O; the manager drives it.
 *
 * Each claim has a state that keeps the driver calls in order and avoids upstream's known bugs:
 *  - a claim is prepared once however many pods use it (the pods are a set of UIDs, a pod counted once);
 *  - it is unprepared only when its last pod is gone: dra_claims_remove_pod() says which claims became unused,
 *    and dra_claim_unprepare_begin() refuses a claim with pods;
 *  - a pod that comes while an unprepare runs does not race it: the claim is marked to be prepared again when the
 *    unprepare ends (dra_claim_unprepare_end() says so);
 *  - a driver's answer replaces that driver's devices, so a retried prepare never doubles the CDI device IDs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ck_error;

enum dra_claim_state {
        DRA_CLAIM_NEW,         /* known, not prepared yet (or its prepare failed) */
        DRA_CLAIM_PREPARING,   /* NodePrepareResources in flight */
        DRA_CLAIM_PREPARED,    /* every driver answered */
        DRA_CLAIM_UNPREPARING, /* NodeUnprepareResources in flight */
};

struct dra_device {
        char *driver;
        char *pool;
        char *device;
        char *share_id;       /* NULL when none */
        char **request_names; /* strv */
        char **cdi_ids;       /* strv */
};

struct dra_claim {
        char *uid, *name, *namespace;
        char **pod_uids; /* strv, a set */
        char **drivers;  /* strv: the drivers of the allocation (each prepared separately) */
        struct dra_device *devices;
        size_t n_devices;
        enum dra_claim_state state;
        bool prepare_again;            /* a pod came while unpreparing */
        uint64_t unprepare_retry_usec; /* the manager's: no unprepare before (CLOCK_MONOTONIC), after a failure */
};

struct dra_claims;

int dra_claims_new(struct dra_claims **ret);
struct dra_claims *dra_claims_free(struct dra_claims *c); /* accepts NULL */
size_t dra_claims_count(const struct dra_claims *c);
struct dra_claim *dra_claims_at(struct dra_claims *c, size_t i);
struct dra_claim *dra_claims_find(struct dra_claims *c, const char *claim_uid);

/* The claim (made NEW if unknown) is used by pod_uid. -EEXIST: another claim of that UID has another
 * name/namespace. *ret_claim (optional): the claim. */
int dra_claims_add_pod(struct dra_claims *c, const char *claim_uid, const char *name, const char *namespace,
                       const char *pod_uid, struct dra_claim **ret_claim);
/* pod_uid no longer uses any claim. *ret_unused (optional, strv): the UIDs of the claims it was the last pod of
 * (to unprepare; a NEW claim never prepared is dropped at once and not listed). */
int dra_claims_remove_pod(struct dra_claims *c, const char *pod_uid, char ***ret_unused);
bool dra_claim_has_pod(const struct dra_claim *claim, const char *pod_uid);

/* A driver's devices for the claim, replacing what that driver had (a retry does not add). The devices' strings
 * are copied. */
int dra_claim_set_driver_devices(struct dra_claim *claim, const char *driver, const struct dra_device *devices,
                                 size_t n);
/* -EBUSY while pods use it or a call is in flight. */
int dra_claim_unprepare_begin(struct dra_claim *claim);
/* The unprepare ended (ok: it succeeded). Returns true when the claim must be removed (it succeeded and no pod
 * came meanwhile); false when it stays: failed (PREPARED again, to retry) or a pod came (NEW, to prepare
 * again). */
bool dra_claim_unprepare_end(struct dra_claim *claim, bool ok);
void dra_claims_remove(struct dra_claims *c, const char *claim_uid);

/* The CDI device IDs for a container's claim reference (resources.claims[]: name → claim, request): every
 * device of the claim when request is NULL/empty, else the devices allocated for that request (a request name
 * "req" also matches the subrequests "req/sub"). Appended to *ids without duplicates. */
int dra_claim_cdi_ids(const struct dra_claim *claim, const char *request, char ***ids);

/* The checkpoint: only prepared claims (PREPARED, UNPREPARING) are written. */
int dra_claims_checkpoint_encode(const struct dra_claims *c, char **ret_text);
/* A fresh cache from a checkpoint; its claims are PREPARED. -EINVAL with the reason (bad JSON, checksum
 * mismatch, wrong kind). */
int dra_claims_checkpoint_decode(const char *text, struct dra_claims **ret, struct ck_error **ret_error);
