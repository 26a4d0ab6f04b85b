/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet's CSI volume plugin (pkg/volume/csi), its pure parts: the paths of a CSI volume on the node, the
 * names upstream derives (unique volume names, VolumeAttachment names, ephemeral volume handles), the
 * vol_data.json files that let teardown and reconstruction find the driver and the handle again, the volume
 * context handed to NodeStageVolume / NodePublishVolume, the access mode mapping and Go's gRPC error text.
 *
 *   <root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount     the staging path
 *   <root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/vol_data.json
 *   <root>/pods/<uid>/volumes/kubernetes.io~csi/<specName>/mount                      the target path
 *   <root>/pods/<uid>/volumes/kubernetes.io~csi/<specName>/vol_data.json
 *
 * The staging path is the layout of kubelets since 1.25 (v1.20 used .../csi/pv/<pvName>/globalmount): it depends
 * on the volume only, not on the PV object. specName is the PV's name for a PersistentVolumeClaim and the
 * volume's name for an inline volume. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/strmap.h"

struct ck_error;

#define CSI_PLUGIN_NAME "kubernetes.io/csi"
#define CSI_PLUGIN_DIR_NAME "kubernetes.io~csi" /* EscapeQualifiedName(CSI_PLUGIN_NAME) */
#define CSI_VOL_DATA_FILE "vol_data.json"
#define CSI_VOL_DATA_MAX (64 * 1024)
#define CSI_DEFAULT_TIMEOUT_USEC (120 * UINT64_C(1000000)) /* csiTimeout */

/* The VolumeLifecycleModes */
#define CSI_LIFECYCLE_PERSISTENT "Persistent"
#define CSI_LIFECYCLE_EPHEMERAL "Ephemeral"

/* ---- paths (caller frees; NULL on OOM) ---- */
char *csi_pod_volume_dir(const char *root_dir, const char *pod_uid, const char *spec_name);
char *csi_pod_mount_path(const char *root_dir, const char *pod_uid, const char *spec_name);
char *csi_global_dir(const char *root_dir, const char *driver, const char *volume_handle);
char *csi_global_mount_path(const char *root_dir, const char *driver, const char *volume_handle);

/* ---- names ---- */
/* "kubernetes.io/csi/<driver>^<handle>" (GetUniqueVolumeNameFromSpec) */
char *csi_unique_volume_name(const char *driver, const char *volume_handle);
/* "csi-" + hex sha256(handle + driver + node) (getAttachmentName) */
char *csi_attachment_name(const char *volume_handle, const char *driver, const char *node_name);
/* "csi-" + hex sha256(podUID + volumeName): the handle of an inline (ephemeral) volume (makeVolumeHandle) */
char *csi_ephemeral_volume_handle(const char *pod_uid, const char *volume_name);

/* ---- vol_data.json ---- */
struct csi_vol_data {
        char *spec_vol_id;    /* specVolID */
        char *volume_handle;  /* volumeHandle */
        char *driver_name;    /* driverName */
        char *node_name;      /* nodeName */
        char *attachment_id;  /* attachmentID */
        char *lifecycle_mode; /* volumeLifecycleMode */
};
void csi_vol_data_done(struct csi_vol_data *d);
/* The JSON text of d (fields that are NULL are left out), sorted keys as Go's encoder. */
char *csi_vol_data_format(const struct csi_vol_data *d);
/* Parse the text; -EBADMSG (with a reason) when it is not a JSON object of strings or lacks the driver or the
 * handle. */
int csi_vol_data_parse(const char *text, struct csi_vol_data *ret, struct ck_error **ret_error);
/* <dir>/vol_data.json, written atomically / read (capped). */
int csi_vol_data_save(const char *dir, const struct csi_vol_data *d);
int csi_vol_data_load(const char *dir, struct csi_vol_data *ret, struct ck_error **ret_error);

/* ---- what NodeStageVolume / NodePublishVolume get ---- */
struct csi_pod_info {
        const char *name, *namespace_, *uid, *service_account;
};
/* The volume context of a NodePublishVolume: the volume's attributes, plus (when the CSIDriver asks for
 * podInfoOnMount) csi.storage.k8s.io/pod.name, pod.namespace, pod.uid, serviceAccount.name and ephemeral
 * ("true"/"false"), which win over attributes of the same name (mergeMap). */
int csi_volume_context(const struct strmap *attributes, const struct csi_pod_info *pod, bool ephemeral,
                       struct strmap *ret);

/* asCSIAccessModeV1: ReadWriteOnce → SINGLE_NODE_WRITER, ReadOnlyMany → MULTI_NODE_READER_ONLY, ReadWriteMany →
 * MULTI_NODE_MULTI_WRITER, anything else UNKNOWN. Returns the csi.v1 enum value. */
int csi_access_mode(const char *k8s_access_mode);

/* ---- errors ---- */
/* The error text of a failed call as Go's status error prints it: "rpc error: code = DeadlineExceeded desc =
 * context deadline exceeded". Caller frees. */
char *csi_rpc_error(int grpc_status, const char *message);
/* isFinalError: false for Canceled, DeadlineExceeded, Unavailable, ResourceExhausted and Aborted (the operation
 * may still be going on in the driver: the volume is then "uncertain"), true for the other codes. */
bool csi_is_final_error(int grpc_status);
/* highestSupportedVersion: the highest 1.x version in versions ("1.0.0", "v1.2", ...), as "1.2.0"; -EINVAL with a
 * message (upstream's) when there is none. */
int csi_highest_supported_version(char *const *versions, char **ret, struct ck_error **ret_error);
/* compare two versions as returned above: <0, 0, >0 */
int csi_version_compare(const char *a, const char *b);
