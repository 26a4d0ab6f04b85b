/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The API objects a pod refers to (upstream's podutil.VisitPodConfigmapNames / VisitPodSecretNames, and the
 * projected serviceAccountToken sources), read from the pod's document (already validated). */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define OBJ_TOKEN_DEFAULT_EXPIRATION_SECONDS 3600

enum obj_ref_use {
        OBJ_REF_VOLUME,      /* where: the volume's name */
        OBJ_REF_ENV,         /* where: the container's name */
        OBJ_REF_PULL_SECRET, /* where: NULL */
};

struct obj_ref {
        const char *kind; /* "ConfigMap" or "Secret" (static) */
        char *name;
        bool optional;
        enum obj_ref_use use;
        char *where;
};

struct token_ref {
        char *service_account;
        char *audience; /* "" = the API server's */
        int64_t expiration_seconds;
        char *volume; /* the first projected volume asking for it */
};

/* a projected podCertificate source: one key pair and PodCertificateRequest each */
struct cert_ref {
        char *volume;
        size_t index; /* in the volume's sources */
        char *service_account;
        char *signer_name, *key_type;
        bool has_max_expiration;
        int32_t max_expiration_seconds;
        json_t *user_annotations; /* NULL = none */
};

struct pod_refs {
        struct obj_ref *objs;
        size_t n_objs;
        bool service_links;  /* spec.enableServiceLinks (default true): the services of its namespace */
        char *runtime_class; /* spec.runtimeClassName, NULL when none */
        struct token_ref *tokens;
        size_t n_tokens;    /* distinct (service account, audience, expiration) */
        bool trust_bundles; /* a projected clusterTrustBundle source: the cluster's ClusterTrustBundles */
        struct cert_ref *certs;
        size_t n_certs;
};

/* The cluster's ClusterTrustBundles (certificates.k8s.io/v1, cluster-scoped): one list, kept current by one
 * watch, from which each clusterTrustBundle source picks its bundles (name "", namespace ""). */
#define OBJ_KIND_TRUST_BUNDLE_LIST "ClusterTrustBundleList"
/* A podCertificate source's credentials, as objects_manager_fill puts them: namespace = the volume's name, name =
 * the source's index; the object is {"key": PEM, "chain": PEM}. */
#define OBJ_KIND_POD_CERTIFICATE "PodCertificate"

/* The service environment variables' objects (getServiceEnvVarMap): the services of a namespace (a list, kept
 * current by one watch per namespace) and the master service default/kubernetes. */
#define OBJ_KIND_SERVICE_LIST "ServiceList" /* name "" */
#define OBJ_KIND_SERVICE "Service"
#define OBJ_MASTER_SERVICE_NAMESPACE "default"
#define OBJ_MASTER_SERVICE_NAME "kubernetes"
/* A pod's RuntimeClass (node.k8s.io/v1, cluster-scoped: namespace "") */
#define OBJ_KIND_RUNTIME_CLASS "RuntimeClass"

/* Every reference of the pod, in document order (volumes, init containers, containers, ephemeral
 * containers, imagePullSecrets); an object named by several references appears once per reference. */
int objects_refs_collect(const json_t *pod, struct pod_refs *ret);
void objects_refs_done(struct pod_refs *r); /* accepts NULL */

/* The pod's service account: spec.serviceAccountName, else the deprecated spec.serviceAccount, else
 * "default" (the ServiceAccount admission's default). Borrowed. */
const char *objects_refs_service_account(const json_t *pod);

/* configmap "x" not found / secret "x" not found (the message of the kubelet's managers) */
char *objects_not_found_message(const char *kind, const char *name);
