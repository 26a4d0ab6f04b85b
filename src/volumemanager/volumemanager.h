/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The volume manager (pkg/kubelet/volumemanager) for the volumes that are attached, staged or mounted from
 * outside the pod's directory: persistentVolumeClaim (its PersistentVolume: csi, local, hostPath, nfs), generic
 * ephemeral volumes (the PVC <pod>-<volume> made by the ephemeral volume controller), inline csi volumes and nfs.
 * (emptyDir, configMap, secret, downwardAPI, projected and hostPath stay with src/volumes, set up by the sync.)
 *
 *   desired state   the pods the sync registered (volmgr_pod_add), each volume resolved through the API: the
 *                   PVC (GET; "PVC is not bound" until it is), its PV (GET), the CSIDriver (GET at mount time)
 *   actual state    per volume (by its unique name, "kubernetes.io/csi/<driver>^<handle>", ...): attached (the
 *                   controller's VolumeAttachment), staged (NodeStageVolume into the global mount path), and
 *                   mounted into each pod (NodePublishVolume, a bind or nfs mount)
 *   reconciler      on every change and every second, one operation at a time per volume: unmount what no pod
 *                   wants any more (only once the kubelet says the pod is gone from the runtime), mount what a pod
 *                   wants, unstage a volume no pod uses, with back-off (0.5 s doubling to 2 min) after failures
 *   reconstruction  at start, from the pod directories, the CSI global mount directories (vol_data.json) and the
 *                   mount table: everything found is "uncertain" and is either mounted again for a pod that
 *                   wants it (NodeStage/NodePublish are idempotent) or torn down; nothing is torn down before the
 *                   kubelet's sources and runtime have been heard
 *
 * Nothing here blocks the loop: CSI calls go over gRPC on the loop, API reads over the kube client, mounts,
 * unmounts, fsGroup ownership and directory removal run on the manager's worker threads. Failures become the
 * pod's FailedMount events with upstream's wording ("MountVolume.SetUp failed for volume \"v\" : ..."). */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/error.h"
#include "apis/pod_volumes.h"
#include "client/client.h"
#include "csi/drivers.h"
#include "stats/summary.h"

struct volmgr;

struct volmgr_config {
        struct event_base *base;
        const char *root_dir;
        const char *node_name;
        struct kube_client *client; /* NULL: standalone (no PersistentVolumeClaims) */
        struct csi_drivers *csi;
        /* the kubelet: */
        bool (*pod_may_unmount)(const char *uid, void *userdata); /* not desired and nothing left in the runtime */
        void (*pod_changed)(const char *uid, void *userdata);     /* its volumes are all unmounted now */
        void (*event)(const char *uid, const char *type, const char *reason, const char *message, void *userdata);
        void *userdata;
};

int volmgr_new(const struct volmgr_config *cfg, struct volmgr **ret);
/* The API client once the node has credentials (TLS bootstrap may come after the start). */
void volmgr_set_client(struct volmgr *vm, struct kube_client *client);
/* Operations in flight are abandoned (their results ignored). Accepts NULL. */
struct volmgr *volmgr_free(struct volmgr *vm);
/* Reconstruct the actual state (on a worker thread), then run the reconciler. */
int volmgr_start(struct volmgr *vm);
/* The kubelet has heard its sources and the runtime: unwanted volumes may be torn down from now on. */
void volmgr_set_sources_ready(struct volmgr *vm);

/* Add (or refresh) a pod in the desired state: volumes not resolved yet, or whose resolution failed, are
 * resolved again (ReprocessPod). Only volumes some container mounts are handled. */
int volmgr_pod_add(struct volmgr *vm, const struct pod *pod);
/* The pod is gone (not desired, nothing in the runtime): its volumes leave the desired state. */
void volmgr_pod_remove(struct volmgr *vm, const char *uid);
/* WaitForAttachAndMount: 0 when every volume of the pod is mounted; 1 when ready() will run (mounted, failed or
 * timed out) unless cancelled; a negative errno with *ret_error (upstream's "unmounted volumes=[...], unattached
 * volumes=[...]: <errors>") when a volume cannot be resolved or the wait timed out. */
int volmgr_pod_wait(struct volmgr *vm, const char *uid, void (*ready)(void *userdata), void *userdata,
                    struct ck_error **ret_error);
void volmgr_pod_cancel_wait(struct volmgr *vm, const char *uid);
/* Run a waiting pod's ready() soon (deferred), whatever its state: the kubelet wants the pass back. */
void volmgr_pod_poke(struct volmgr *vm, const char *uid);
/* A CSI driver registered or went away: what waited for it is tried at once. */
void volmgr_driver_changed(struct volmgr *vm, const char *driver);

/* SetVolumeOwnership for the volumes the sync sets up itself (emptyDir, configMap, secret, downwardAPI,
 * projected), on the manager's worker threads: done(r, message) runs later on the loop (r < 0: failed). Returns
 * 0 when done will run. */
int volmgr_apply_ownership(struct volmgr *vm, const char *path, int64_t fs_group, const char *policy, bool read_only,
                           void (*done)(int r, const char *message, void *userdata), void *userdata);
/* Is anything of the pod still mounted, being mounted or torn down (its directory must stay)? */
bool volmgr_pod_has_volumes(const struct volmgr *vm, const char *uid);
/* The host path to bind into the pod's containers for the volume named name (caller frees), and whether the
 * volume must be mounted read-only (mustMountRO); NULL when the volume is not one of the manager's or not mounted. */
char *volmgr_pod_volume_path(struct volmgr *vm, const char *uid, const char *name, bool *ret_read_only);

/* volumesInUse: the unique names of the attachable and device-mountable volumes wanted or mounted, sorted
 * (strv, caller frees; NULL when none). */
char **volmgr_volumes_in_use(const struct volmgr *vm);
/* The node status carrying these names was written: attachable volumes may now be verified as attached. */
void volmgr_mark_reported_in_use(struct volmgr *vm, char *const *names);

/* ---- volume stats (the Summary API and kubelet_volume_stats_*), in the Summary's own type ---- */
/* The last measured stats of the pod's managed volumes (borrowed until the next call into the manager). */
size_t volmgr_pod_volume_stats(struct volmgr *vm, const char *uid, const struct stats_volume **ret);
/* Every PVC-backed volume measured, for kubelet_volume_stats_* (borrowed likewise). */
size_t volmgr_all_volume_stats(struct volmgr *vm, const struct stats_volume **ret);
