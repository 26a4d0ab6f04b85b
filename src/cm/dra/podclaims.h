/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Reading what DRA needs from API objects (pure): a pod's claims (spec.resourceClaims resolved through
 * status.resourceClaimStatuses, as resourceclaim.Name), a container's references to them (resources.claims), and
 * whether a ResourceClaim (resource.k8s.io/v1) may be prepared for the pod (allocated, reserved for it, owned by
 * it when made from a template) with the drivers of its allocation. Messages as upstream's. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct ck_error;

#define DRA_MAX_POD_CLAIMS 128 /* more than the apiserver allows (32 in v1.37) */

struct dra_pod_claim {
        char *pod_claim_name;  /* spec.resourceClaims[].name */
        char *claim_name;      /* the ResourceClaim's name; NULL: nothing to do (the controller decided none) */
        bool must_check_owner; /* made from a template: the claim must be controlled by the pod */
};

void dra_pod_claims_free(struct dra_pod_claim *claims, size_t n);
/* pod: the v1 Pod document. -EAGAIN when a template's claim is not created yet ("pod \"ns/name\": ResourceClaim
 * not created yet"), -EINVAL for a claim with neither field; the error names the pod. *ret NULL when n is 0. */
int dra_pod_claims(const json_t *pod, struct dra_pod_claim **ret, size_t *ret_n, struct ck_error **ret_error);

struct dra_container_claim {
        const char *name;    /* borrowed from the container document */
        const char *request; /* NULL: every request */
};
/* container: a container's document; resources.claims[] into *ret (malloc'ed array of borrowed strings). */
int dra_container_claims(const json_t *container, struct dra_container_claim **ret, size_t *ret_n);

/* claim: a ResourceClaim document. Checks as upstream's prepare: the owner (when must_check_owner), the pod in
 * status.reservedFor, an allocation. *ret_drivers: the drivers of status.allocation.devices.results, each once.
 * -EPERM / -EAGAIN (not reserved or allocated yet) with the message. */
int dra_claim_check(const json_t *claim, const char *pod_namespace, const char *pod_name, const char *pod_uid,
                    bool must_check_owner, char ***ret_drivers, struct ck_error **ret_error);
