/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the device manager remembers (pkg/kubelet/cm/devicemanager pod_devices.go, checkpoint/): which devices
 * of which resource each (pod, container) holds and the plugin's Allocate answer for them, the devices each
 * resource registered, and the checkpoint file that keeps both over a restart. Pure. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "deviceplugin.pb-c.h"

/* one (pod, container, resource): DevicesPerNUMA and the packed ContainerAllocateResponse */
struct dm_alloc {
        char *pod_uid, *container, *resource;
        int64_t *numa;     /* the NUMA node of each device (0 without topology) */
        char **device_ids; /* strv */
        uint8_t *resp;     /* NULL: devices chosen, Allocate not answered yet (not in the checkpoint) */
        size_t resp_len;
};

struct dm_registered {
        char *resource;
        char **device_ids; /* strv: the healthy devices when the checkpoint was written */
};

struct dm_pod_devices {
        struct dm_alloc *allocs;
        size_t n;
};

void dm_pod_devices_done(struct dm_pod_devices *p);

/* Set (replace) the devices and answer of (pod, container, resource). ids is copied; resp is copied (NULL: none
 * yet). numa may be NULL (all 0). */
int dm_pod_devices_insert(struct dm_pod_devices *p, const char *pod_uid, const char *container, const char *resource,
                          char *const *ids, const int64_t *numa, const uint8_t *resp, size_t resp_len);
const struct dm_alloc *dm_pod_devices_find(const struct dm_pod_devices *p, const char *pod_uid, const char *container,
                                           const char *resource);
void dm_pod_devices_remove_pod(struct dm_pod_devices *p, const char *pod_uid);
/* The devices of resource held by anyone (with an answer, or just chosen when include_pending); a new strv. */
int dm_pod_devices_in_use(const struct dm_pod_devices *p, const char *resource, bool include_pending, char ***ret);
/* Every pod UID that holds devices (a new strv, no duplicates). */
int dm_pod_devices_pods(const struct dm_pod_devices *p, char ***ret);

/* ---- choosing devices (devicesToAllocate without topology) ---- */

/* Choose `needed` devices: from reusable first (what the pod's init containers held), then the plugin's
 * preferred ones that are available, then the other available ones (healthy and not in use), in name order.
 * -ENOSPC with *ret_error "requested number of devices unavailable for R. Requested: N, Available: M" as
 * upstream when there are not enough. */
int dm_choose_devices(const char *resource, char *const *healthy, char *const *in_use, char *const *reusable,
                      char *const *preferred, size_t needed, char ***ret, struct ck_error **ret_error);
/* devicesToAllocate with the topology manager's affinity (a mask of NUMA nodes; 0: none) and each healthy device's
 * NUMA node (numa[i] for healthy[i], -1: none; NULL: no device has one): when fewer are needed than the affinity's
 * nodes hold, all come from them (the plugin's preference among them first); else every device on them, then the
 * plugin's preference, then devices on other nodes, then those without a node (filterByAffinity). */
int dm_choose_devices_aligned(const char *resource, char *const *healthy, const int64_t *numa, char *const *in_use,
                              char *const *reusable, uint64_t affinity, char *const *preferred, size_t needed,
                              char ***ret, struct ck_error **ret_error);
/* What GetPreferredAllocation is offered (available) and must include, as devicesToAllocate asks it: the aligned
 * devices and the reused ones when those suffice, else every available device and the reused and aligned ones
 * as must-include. */
int dm_preferred_offer(char *const *healthy, const int64_t *numa, char *const *in_use, char *const *reusable,
                       uint64_t affinity, size_t needed, char ***ret_available, char ***ret_must);

/* ---- what the container gets (deviceRunContainerOptions) ---- */

struct dm_run_options {
        char **env_names, **env_values; /* strv pairs */
        V1beta1__Mount **mounts;
        size_t n_mounts;
        V1beta1__DeviceSpec **devices;
        size_t n_devices;
        char **annotation_names, **annotation_values;
        char **cdi_devices; /* strv: fully qualified CDI device names, each once, in the answers' order */
        V1beta1__ContainerAllocateResponse **responses; /* owned: the strings above point into them */
        size_t n_responses;
};

void dm_run_options_done(struct dm_run_options *o);
/* The envs, mounts, devices, annotations and CDI devices of every resource the container holds, merged as upstream:
 * the first one of an env or annotation name, a mount or device container path wins (conflicts are logged); a CDI
 * device name is given once. */
int dm_run_options_build(const struct dm_pod_devices *p, const char *pod_uid, const char *container,
                         struct dm_run_options *ret);

/* ---- the checkpoint (kubelet_internal_checkpoint) ---- */

#define DM_CHECKPOINT_FILE "kubelet_internal_checkpoint"
#define DM_CHECKPOINT_MAX (64u * 1024u * 1024u)

/* {"Data":{"PodDeviceEntries":[...],"RegisteredDevices":{...}},"Checksum":N}: upstream's layout (AllocResp as
 * base64 of the protobuf, DeviceIDs by NUMA node); the checksum is ours (FNV-1a 32 of the canonical Data).
 * Allocations without an answer are left out, as upstream. NULL on OOM. */
char *dm_checkpoint_encode(const struct dm_pod_devices *p, const struct dm_registered *reg, size_t n_reg);
/* -EBADMSG with *ret_error for a corrupt file (bad JSON, checksum mismatch, undecodable AllocResp). */
int dm_checkpoint_decode(const char *text, size_t len, struct dm_pod_devices *ret, struct dm_registered **ret_reg,
                         size_t *ret_n_reg, struct ck_error **ret_error);
void dm_registered_free(struct dm_registered *reg, size_t n);
