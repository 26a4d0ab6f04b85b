/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* spec.volumes, containers[].volumeMounts and spec.hostAliases (core/v1 Volume, VolumeMount, HostAlias):
 * decoded by pod_volumes_decode() from the pod document, defaulted as SetDefaults_*VolumeSource do
 * (defaultMode 0644, serviceAccountToken.expirationSeconds 3600) and validated with the apiserver's wording
 * (ValidateVolumes, ValidateVolumeMounts, validateHostAliases). */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/error.h"
#include "basic/strmap.h"

enum volume_type {
        VOLUME_NONE, /* no source given (invalid) */
        VOLUME_EMPTY_DIR,
        VOLUME_HOST_PATH,
        VOLUME_CONFIG_MAP,
        VOLUME_SECRET,
        VOLUME_DOWNWARD_API,
        VOLUME_PROJECTED,
        VOLUME_PVC,         /* persistentVolumeClaim */
        VOLUME_EPHEMERAL,   /* ephemeral (a generic ephemeral volume: the PVC <pod>-<volume>) */
        VOLUME_CSI,         /* csi (inline, ephemeral lifecycle) */
        VOLUME_NFS,         /* nfs */
        VOLUME_IMAGE,       /* image (an OCI image or artifact, mounted by the runtime through the CRI) */
        VOLUME_UNSUPPORTED, /* iscsi, rbd, ...: kept by name and type only */
};

#define VOLUME_DEFAULT_MODE 0644
#define TOKEN_DEFAULT_EXPIRATION_SECONDS 3600

struct key_to_path {
        char *key;
        char *path;
        bool has_mode;
        int32_t mode;
};

/* configMap and secret volumes and projections */
struct object_volume {
        char *name; /* configMap.name / secret.secretName */
        struct key_to_path *items;
        size_t n_items;
        bool has_default_mode;
        int32_t default_mode; /* defaulted to 0644 for volumes (not for projections) */
        bool optional;
};

struct downward_item {
        char *path;
        char *field_path; /* fieldRef.fieldPath, or NULL */
        bool has_resource_field_ref;
        char *container_name; /* resourceFieldRef */
        char *resource;
        struct quantity divisor; /* str NULL = unset (1) */
        bool has_mode;
        int32_t mode;
};

struct downward_volume {
        struct downward_item *items;
        size_t n_items;
        bool has_default_mode;
        int32_t default_mode;
};

enum projection_type {
        PROJECTION_NONE,
        PROJECTION_CONFIG_MAP,
        PROJECTION_SECRET,
        PROJECTION_DOWNWARD_API,
        PROJECTION_SERVICE_ACCOUNT_TOKEN,
        PROJECTION_CLUSTER_TRUST_BUNDLE,
        PROJECTION_POD_CERTIFICATE,
};

/* clusterTrustBundle (core/v1 ClusterTrustBundleProjection): by name, or by signerName and labelSelector */
struct trust_bundle_projection {
        char *name;             /* NULL = unset */
        char *signer_name;      /* NULL = unset */
        json_t *label_selector; /* a metav1.LabelSelector as given, NULL = unset (matches nothing) */
        bool optional;
        char *path;
};

/* podCertificate (core/v1 PodCertificateProjection) */
struct pod_certificate_projection {
        char *signer_name;
        char *key_type; /* RSA3072 RSA4096 ECDSAP256 ECDSAP384 ECDSAP521 ED25519 */
        bool has_max_expiration;
        int32_t max_expiration_seconds; /* copied verbatim into the PodCertificateRequest */
        char *credential_bundle_path, *key_path, *certificate_chain_path;
        json_t *user_annotations; /* object of strings, NULL = unset */
};

struct projection {
        enum projection_type type; /* the first given */
        unsigned n_types;
        struct object_volume object; /* configMap / secret */
        struct downward_volume downward;
        char *token_audience;
        int64_t token_expiration_seconds; /* default 3600 */
        char *token_path;
        struct trust_bundle_projection trust_bundle;
        struct pod_certificate_projection pod_certificate;
};

struct volume {
        char *name;
        enum volume_type type; /* the first source given */
        unsigned n_types;      /* how many sources were given: validation wants exactly one */
        char *type_name;       /* the JSON key of the source ("emptyDir", "persistentVolumeClaim", ...) */
        /* emptyDir */
        char *medium;               /* "" / "Memory" / ... */
        struct quantity size_limit; /* str NULL = unset */
        /* hostPath */
        char *host_path;
        char *host_path_type; /* NULL = "" (no check) */
        /* configMap / secret */
        struct object_volume object;
        /* downwardAPI */
        struct downward_volume downward;
        /* projected */
        struct projection *sources;
        size_t n_sources;
        bool has_projected_default_mode;
        int32_t projected_default_mode;
        /* persistentVolumeClaim, ephemeral, csi, nfs */
        bool read_only;
        char *claim_name;             /* persistentVolumeClaim.claimName */
        bool has_claim_template;      /* ephemeral.volumeClaimTemplate was given */
        char *csi_driver;             /* csi.driver */
        char *csi_fs_type;            /* csi.fsType, NULL = unset */
        struct strmap csi_attributes; /* csi.volumeAttributes */
        char *csi_publish_secret;     /* csi.nodePublishSecretRef.name, NULL = none */
        bool csi_has_publish_secret_ref;
        char *nfs_server;
        char *nfs_path;
        /* image: reference, and pullPolicy defaulted as SetDefaults_Volume does (Always for :latest or no tag,
         * else IfNotPresent); PULL_POLICY_UNSET only when the given value is not one of the three */
        char *image_reference;
        enum pull_policy image_pull_policy;
        char *image_pull_policy_str; /* as given, NULL = unset */
};

struct volume_mount {
        char *name;
        char *mount_path;
        bool read_only;
        char *sub_path;
        char *sub_path_expr;
        char *mount_propagation;   /* NULL = None */
        char *recursive_read_only; /* "Disabled", "IfPossible", "Enabled"; NULL = Disabled */
};

struct volume_mounts {
        struct volume_mount *items;
        size_t n;
};

struct host_alias {
        char *ip;
        char **hostnames; /* strv */
};

struct pod_volumes {
        struct volume *volumes;
        size_t n_volumes;
        struct host_alias *host_aliases;
        size_t n_host_aliases;
        /* volumeMounts, by index of spec.containers / spec.initContainers */
        struct volume_mounts *containers;
        size_t n_containers;
        struct volume_mounts *init_containers;
        size_t n_init_containers;
};

/* Decode from the pod spec object (spec.volumes, spec.hostAliases, containers[i].volumeMounts): type errors go
 * into e; returns 0 or -ENOMEM. *ret is allocated (possibly empty). */
int pod_volumes_decode(struct field_errors *e, json_t *spec, struct pod_volumes **ret);
struct pod_volumes *pod_volumes_free(struct pod_volumes *v); /* accepts NULL, returns NULL */

struct vctx;
void pod_volumes_validate(struct vctx *c, const struct pod *p);

/* Helpers for the kubelet: the volume of that name, the mounts of a container (NULL-safe; a container not
 * found gets no mounts). */
const struct volume *pod_volume_find(const struct pod *p, const char *name);
const struct volume_mounts *pod_container_mounts(const struct pod *p, const struct container *c);

/* resolveRecursiveReadOnly: whether volumeMount m is mounted recursively read-only, given whether the pod's runtime
 * handler supports it (CRI Status runtime_handlers). 0 and *ret; -EINVAL and *ret_error (upstream's words) when it
 * cannot be honoured (Enabled without support, or a mount the API validation should have refused); -ENOMEM. */
int pod_mount_recursive_read_only(const struct volume_mount *m, bool runtime_supports, bool *ret,
                                  struct ck_error **ret_error);
/* validatePathNoBacksteps: true when the relative path has a ".." element (subPath, volume item paths). */
bool pod_path_has_backsteps(const char *p);
