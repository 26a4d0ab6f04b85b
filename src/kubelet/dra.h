/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet's side of Dynamic Resource Allocation (PrepareDynamicResources): before a container of a pod with
 * spec.resourceClaims is created, each claim is read from the apiserver (resource.k8s.io/v1), checked for the pod
 * (dra_claim_check), and prepared by its drivers through the DRA manager; the container then gets the CDI devices
 * of the claims (and requests) its resources.claims name. Pods that are no longer active lose their claims
 * (kubelet_dra_gc), which unprepares those without pods. */

#include <jansson.h>

struct kubelet;
struct pod;
struct container;
struct kubelet_dra_job;

/* The DRA manager on <root-dir>/dra_manager_state (after k->dra_plugins). */
int kubelet_dra_setup(struct kubelet *k, struct ck_error **ret_error);
void kubelet_dra_free(struct kubelet *k);

/* done: cdi_ids (borrowed, NULL when none) or error ("Failed to prepare dynamic resources: ..."). Returns 1 when
 * the pod has no claims (done does not run), 0 when done will run later, once, unless cancelled; < 0 on OOM. */
typedef void (*kubelet_dra_done_t)(char **cdi_ids, const char *error, void *userdata);
int kubelet_dra_prepare(struct kubelet *k, const struct pod *pod, const struct container *c, kubelet_dra_done_t done,
                        void *userdata, struct kubelet_dra_job **ret);
void kubelet_dra_job_cancel(struct kubelet_dra_job *j); /* accepts NULL */

/* ResourceHealthStatus: the container's allocatedResourcesStatus entries for its claims (resources.claims), as
 * dra_health_claim_status() builds them; NULL when none (or the gate is off). A new reference. */
json_t *kubelet_dra_allocated_resources_status(struct kubelet *k, const struct pod *pod, const struct container *c);

/* The claims of pods no longer active are released (once every source has spoken). */
void kubelet_dra_gc(struct kubelet *k);

/* The prepared claims that the container's resources.claims reference (upstream's GetContainerClaimInfos), each
 * once, for the pod resources API (dynamic_resources). */
struct dra_claim;
typedef void (*kubelet_dra_claim_cb)(const struct dra_claim *claim, void *userdata);
void kubelet_dra_foreach_container_claim(struct kubelet *k, const struct pod *pod, const struct container *c,
                                         kubelet_dra_claim_cb cb, void *userdata);
