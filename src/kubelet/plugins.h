/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet's plug-in interfaces (plugins.c): credential provider plugins, the device manager and the pod
 * resources API. */

#include "cm/devicemanager/manager.h"
#include "cri/cri.h"

struct kubelet;

/* Registers the credential provider plugins (--image-credential-provider-config; an invalid config fails the
 * start, as upstream), starts the device manager on <root-dir>/device-plugins and the pod resources API on
 * <root-dir>/pod-resources/kubelet.sock. */
int kubelet_plugins_start(struct kubelet *k, struct ck_error **ret_error);
void kubelet_plugins_free(struct kubelet *k);

/* The active pods' UIDs: wanted and not refused (a new strv). */
int kubelet_active_pod_uids(struct kubelet *k, char ***ret);
/* The devices of pods no longer admitted are freed (once every source has spoken). */
void kubelet_devices_gc(struct kubelet *k);
/* The node's extended resources as admission counts them, read again from the device manager. */
void kubelet_admission_refresh(struct kubelet *k);

/* allocatedResourcesStatus (UpdateAllocatedResourcesStatus): {"<container>": [{name, resources: [{resourceID,
 * health}]}]} for the app containers of the pod that hold devices, resources and IDs sorted; then (ResourceHealthStatus)
 * the containers' DRA claims, "claim:<name>[/<request>]" in resources.claims order (kubelet/dra.h); NULL: none (or
 * out of memory). A new reference. */
json_t *kubelet_allocated_resources_status(struct kubelet *k, const struct pod *pod);

/* The device plugins' envs, mounts, devices and annotations into a container's CRI config. */
int kubelet_apply_device_options(Runtime__V1__ContainerConfig *cfg, const struct dm_run_options *o);
