/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The device manager (pkg/kubelet/cm/devicemanager manager.go) for the device plugin API v1beta1:
 *
 *   registration   the Registration service on <dir>/kubelet.sock; a plugin that registers gets an endpoint
 *                  (endpoint.c), is asked for its options (GetDevicePluginOptions: Register fails when that
 *                  fails), then its ListAndWatch stream keeps its devices and their health; registering again
 *                  replaces it; when the stream ends the resource's devices all turn unhealthy (still counted in
 *                  capacity, not allocatable) until it registers again, and 5 minutes later the resource is
 *                  dropped, as upstream's endpointStopGracePeriod
 *   admission      resourceAllocator.Admit: each container's devices (init containers first; their devices may be
 *                  reused by the app containers) are chosen (GetPreferredAllocation when the plugin offers it)
 *                  and the plugin's Allocate answer is kept; a pod that cannot get them is rejected with
 *                  UnexpectedAdmissionError, "Allocate failed due to ..., which is unexpected"
 *   containers     before a container starts: PreStartContainer when the plugin asks for it, then the envs,
 *                  mounts, devices and annotations of the Allocate answers for the CRI config
 *   checkpoint     <dir>/kubelet_internal_checkpoint (written atomically on every change): after a restart or a
 *                  kill -9 every pod keeps its devices and no device is given twice; the registered resources
 *                  come back with no devices until their plugins register again
 *
 * All of it on the loop: plugin calls are asynchronous, one pod's allocation at a time. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "cm/devicemanager/pod_devices.h"

#define DM_SOCKET_NAME "kubelet.sock"
#define DM_VERSION "v1beta1"
#define DM_STOP_GRACE_USEC (5 * 60 * UINT64_C(1000000)) /* endpointStopGracePeriod */

struct devicemanager;

/* dir: <root-dir>/device-plugins (created 0750; stale sockets in it removed, as upstream does to make plugins
 * register again). on_change runs (from its own event) when devices, health or an allocation's outcome
 * changed: the kubelet admits waiting pods and updates the node. */
int dm_new(struct event_base *base, const char *dir, void (*on_change)(void *userdata), void *userdata,
           struct devicemanager **ret);
/* The topology manager's affinity for a container's devices (GetAffinity): a mask of NUMA nodes, false when there
 * is none (policy none, no preference). Asked when the container's devices are chosen; unset: none. */
typedef bool (*dm_affinity_cb)(void *userdata, const struct pod *pod, const struct container *c, uint64_t *ret_mask);
void dm_set_affinity(struct devicemanager *m, dm_affinity_cb cb, void *userdata);
struct devicemanager *dm_free(struct devicemanager *m);

/* Once every pod source has spoken (sourcesReady): the devices of pods that are not in active (a strv of UIDs)
 * are freed. Before that nothing is freed. */
void dm_update_active(struct devicemanager *m, char *const *active, bool sources_ready);

/* Admission: 0 when the pod has its devices (or needs none); -EINPROGRESS while its allocation runs or waits for
 * another pod's (on_change tells when to ask again); -ENOSPC with *ret_error ("Allocate failed due to ..., which
 * is unexpected") when it cannot have them. */
int dm_admit(struct devicemanager *m, const struct pod *pod, struct ck_error **ret_error);
/* Whether the pod asks for a device plugin resource. */
bool dm_pod_uses_devices(const struct devicemanager *m, const struct pod *pod);

/* Before a container starts (GetDeviceRunContainerOptions): its options, after PreStartContainer when needed.
 * The callback runs exactly once, later; error is the message of CreateContainerConfigError. */
typedef void (*dm_options_cb)(const struct dm_run_options *opts, const char *error, void *userdata);
struct dm_request;
int dm_container_options(struct devicemanager *m, const struct pod *pod, const char *container, dm_options_cb cb,
                         void *userdata, struct dm_request **ret);
void dm_request_cancel(struct dm_request *r); /* the callback will not run; accepts NULL */

/* The node's extended resources: capacity (healthy + unhealthy) and allocatable (healthy) of each resource;
 * a resource dropped after its grace period is reported once with capacity 0 (deleted true). */
struct dm_resource_count {
        const char *name;
        int64_t capacity, allocatable;
        bool deleted;
};
void dm_foreach_resource(struct devicemanager *m, void (*cb)(const struct dm_resource_count *c, void *userdata),
                         void *userdata);
/* What admission compares requests with (sanitizeNodeAllocatable): the healthy devices, or what is allocated
 * when that is more. -1 when the manager does not know the resource. */
int64_t dm_admission_allocatable(const struct devicemanager *m, const char *resource);

/* The pod resources API: the devices a container holds, and the healthy devices of every resource. */
typedef void (*dm_device_cb)(const char *resource, const char *id, int64_t numa, bool has_numa, void *userdata);
void dm_foreach_container_device(const struct devicemanager *m, const char *pod_uid, const char *container,
                                 dm_device_cb cb, void *userdata);
/* A device's health as the status reports it (UpdateAllocatedResourcesStatus): a device the plugin no longer lists
 * counts as healthy, as upstream. */
bool dm_device_healthy(const struct devicemanager *m, const char *resource, const char *id);
void dm_foreach_allocatable_device(const struct devicemanager *m, dm_device_cb cb, void *userdata);

/* the healthy devices of a resource no one holds (nor has just been given), with their NUMA node */
void dm_foreach_available_device(const struct devicemanager *m, const char *resource, dm_device_cb cb, void *userdata);
