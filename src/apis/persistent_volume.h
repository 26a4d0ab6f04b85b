/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The storage objects the kubelet reads (core/v1 PersistentVolume and PersistentVolumeClaim, storage.k8s.io/v1
 * CSIDriver), decoded from the API server's JSON into what the volume manager acts on, and the node affinity of
 * a PersistentVolume (v1helper.MatchNodeSelectorTerms). Objects come from the API server, already validated: the
 * decoders check types and what the kubelet relies on, and name the field that is wrong. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/strmap.h"

struct ck_error;

enum pv_source {
        PV_SOURCE_NONE,
        PV_SOURCE_CSI,
        PV_SOURCE_LOCAL,
        PV_SOURCE_HOST_PATH,
        PV_SOURCE_NFS,
        PV_SOURCE_OTHER, /* gcePersistentDisk, iscsi, ...: no plugin here */
};

struct secret_ref {
        char *namespace_, *name; /* NULL: none */
};

struct node_selector_requirement {
        char *key;
        char *operator_; /* In, NotIn, Exists, DoesNotExist, Gt, Lt */
        char **values;   /* strv, may be NULL */
};

struct node_selector_term {
        struct node_selector_requirement *expressions, *fields;
        size_t n_expressions, n_fields;
};

struct persistent_volume {
        char *name;
        char *claim_uid;   /* spec.claimRef.uid, NULL when unbound */
        char *volume_mode; /* "Filesystem" (default) or "Block" */
        char *gid;         /* the pv.beta.kubernetes.io/gid annotation, or NULL */
        char **access_modes;
        char **mount_options;
        struct quantity capacity; /* spec.capacity.storage (str NULL: none) */
        enum pv_source source;
        char *source_name; /* the JSON key of the source */
        /* csi */
        char *driver, *volume_handle, *fs_type;
        bool read_only;
        struct strmap attributes;
        struct secret_ref stage_secret, publish_secret;
        /* local, hostPath, nfs */
        char *path, *host_path_type, *server;
        /* spec.nodeAffinity.required.nodeSelectorTerms; has_affinity false: no constraint */
        bool has_affinity;
        struct node_selector_term *terms;
        size_t n_terms;
};

struct persistent_volume_claim {
        char *namespace_, *name, *uid;
        char *phase;              /* status.phase */
        char *volume_name;        /* spec.volumeName */
        bool deleting;            /* metadata.deletionTimestamp is set */
        char *controller_uid;     /* the uid of the ownerReference with controller: true, or NULL */
        struct quantity capacity; /* status.capacity.storage */
};

struct csi_driver_spec {
        bool exists;            /* false: no CSIDriver object (defaults below) */
        bool attach_required;   /* default true */
        bool pod_info_on_mount; /* default false */
        char *fs_group_policy;  /* default "ReadWriteOnceWithFSType" */
        char **lifecycle_modes; /* default ["Persistent"] */
};

int persistent_volume_decode(const json_t *o, struct persistent_volume *ret, struct ck_error **ret_error);
void persistent_volume_done(struct persistent_volume *pv);
int persistent_volume_claim_decode(const json_t *o, struct persistent_volume_claim *ret, struct ck_error **ret_error);
void persistent_volume_claim_done(struct persistent_volume_claim *pvc);
/* o NULL: the driver has no CSIDriver object (all defaults). */
int csi_driver_spec_decode(const json_t *o, struct csi_driver_spec *ret, struct ck_error **ret_error);
void csi_driver_spec_done(struct csi_driver_spec *d);

/* checkVolumeNodeAffinity: 0, or -EPERM with upstream's "no matching NodeSelectorTerms" */
int persistent_volume_check_node_affinity(const struct persistent_volume *pv, const struct strmap *labels,
                                          const char *node_name, struct ck_error **ret_error);
