/* SPDX-License-Identifier: Apache-2.0 */
/* Contents of configMap, secret, downwardAPI and projected volumes: see contents.h. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apis/fieldpath.h"
#include "apis/resource.h"
#include "basic/base64.h"
#include "basic/error.h"
#include "basic/macro.h"
#include "objects/objects.h"
#include "objects/podcert.h"
#include "objects/refs.h"
#include "volumes/contents.h"

#define MAX_VALUE_SIZE (4u * 1024 * 1024)

/* ---------------------------------------------------------------- downward API */

int vol_downward_value(const struct pod *pod, const struct downward_item *it, const struct kc_build_context *ctx,
                       char **ret) {
        if (it->field_path)
                return fieldpath_extract(pod, it->field_path, ret, NULL);
        if (it->has_resource_field_ref) {
                const struct container *c = pod_find_container(pod, it->container_name);
                struct resource_allocatable alloc;
                if (!c)
                        return -ESRCH;
                kc_build_allocatable(ctx, &alloc);
                return resource_container_value(c, it->resource, it->divisor.str ? &it->divisor : NULL, &alloc, ret);
        }
        return -EINVAL;
}

/* ---------------------------------------------------------------- payloads */

/* the value of key in a ConfigMap (data, then binaryData) or a Secret (data, base64) */
static int object_value(json_t *obj, bool secret, const char *key, char **ret, size_t *ret_size) {
        json_t *data = json_object_get(obj, "data"), *v = json_object_get(data, key);
        if (json_is_string(v)) {
                if (secret)
                        return base64_decode(json_string_value(v), MAX_VALUE_SIZE, ret, ret_size);
                if (json_string_length(v) > MAX_VALUE_SIZE)
                        return -E2BIG;
                *ret = strndup(json_string_value(v), json_string_length(v));
                *ret_size = json_string_length(v);
                return *ret ? 0 : -ENOMEM;
        }
        if (!secret) {
                v = json_object_get(json_object_get(obj, "binaryData"), key);
                if (json_is_string(v))
                        return base64_decode(json_string_value(v), MAX_VALUE_SIZE, ret, ret_size);
        }
        return -ENOENT;
}

static int object_payload(const struct pod *pod, const struct object_volume *o, bool secret, int default_mode,
                          const struct kc_build_context *ctx, struct vol_payload *p, struct ck_error **ret_error) {
        const char *kind = secret ? "Secret" : "ConfigMap", *fetch_msg = NULL;
        json_t *obj = NULL;
        int r;

        r = objects_pod_lookup(ctx->objects, kind, pod->namespace_, o->name, &obj, &fetch_msg);
        if (r == -ENOENT) {
                if (o->optional)
                        return 0;
                return ck_error_set(ret_error, r, "%s \"%s\" not found", secret ? "secret" : "configmap", o->name);
        }
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot get %s \"%s\": %s", secret ? "secret" : "configmap", o->name,
                                    fetch_msg ? fetch_msg : strerror(-r));
        if (o->n_items == 0) {
                const char *sections[] = { "data", secret ? NULL : "binaryData" };
                for (size_t s = 0; s < 2 && sections[s]; s++) {
                        const char *k;
                        json_t *v;
                        json_object_foreach(json_object_get(obj, sections[s]), k, v) {
                                _cleanup_free_ char *val = NULL;
                                size_t size = 0;
                                r = object_value(obj, secret, k, &val, &size);
                                if (r == -ENOENT)
                                        continue;
                                if (r < 0)
                                        return ck_error_set(ret_error, r, "%s \"%s\": key %s: %s",
                                                            secret ? "secret" : "configmap", o->name, k,
                                                            r == -EINVAL ? "illegal base64 data" : strerror(-r));
                                r = vol_payload_add(p, k, val, size, default_mode);
                                if (r < 0)
                                        return r;
                        }
                }
                return 0;
        }
        for (size_t i = 0; i < o->n_items; i++) {
                const struct key_to_path *it = &o->items[i];
                _cleanup_free_ char *val = NULL;
                size_t size = 0;
                r = object_value(obj, secret, it->key, &val, &size);
                if (r == -ENOENT) {
                        if (o->optional)
                                continue;
                        return ck_error_set(ret_error, -ENOENT, "%s references non-existent %s key: %s",
                                            secret ? "secret" : "configmap", secret ? "secret" : "config", it->key);
                }
                if (r < 0)
                        return ck_error_set(ret_error, r, "%s \"%s\": key %s: %s", secret ? "secret" : "configmap",
                                            o->name, it->key, r == -EINVAL ? "illegal base64 data" : strerror(-r));
                r = vol_payload_add(p, it->path, val, size, it->has_mode ? it->mode : default_mode);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int downward_payload(const struct pod *pod, const struct downward_volume *d, int default_mode,
                            const struct kc_build_context *ctx, struct vol_payload *p, struct ck_error **ret_error) {
        for (size_t i = 0; i < d->n_items; i++) {
                const struct downward_item *it = &d->items[i];
                _cleanup_free_ char *v = NULL;
                int r = vol_downward_value(pod, it, ctx, &v);
                if (r < 0)
                        return ck_error_set(ret_error, r,
                                            "unable to get the value of %s for downward API file \"%s\": %s",
                                            it->field_path ? it->field_path : strna(it->resource), it->path,
                                            r == -ESRCH ? "container not found" : strerror(-r));
                r = vol_payload_add(p, it->path, v, strlen(v), it->has_mode ? it->mode : default_mode);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* clusterTrustBundle: the anchors of the selected bundles (GetTrustAnchorsByName / BySigner) */
static int trust_bundle_payload(const struct trust_bundle_projection *t, int mode, const struct kc_build_context *ctx,
                                struct vol_payload *p, struct ck_error **ret_error) {
        _cleanup_free_ char *pem = NULL;
        const char *fetch_msg = NULL;
        json_t *list = NULL;
        size_t size = 0;
        int r;

        r = objects_pod_lookup(ctx->objects, OBJ_KIND_TRUST_BUNDLE_LIST, "", "", &list, &fetch_msg);
        if (r < 0)
                return ck_error_set(ret_error, r, "while getting ClusterTrustBundle: %s",
                                    fetch_msg ? fetch_msg
                                    : r == -ENOENT
                                            ? "ClusterTrustBundle projection is not supported in static kubelet mode"
                                            : strerror(-r));
        r = podcert_trust_anchors(list, t->name, t->signer_name, t->label_selector, &pem, &size);
        if (r == -ENOENT && t->optional)
                return vol_payload_add(p, t->path, "", 0, mode);
        if (r == -ENOENT)
                return t->name ? ck_error_set(
                                         ret_error, r,
                                         "while getting ClusterTrustBundle: clustertrustbundles.certificates.k8s.io "
                                         "\"%s\" not found",
                                         t->name)
                               : ck_error_set(ret_error, r,
                                              "combination of signerName and labelSelector matched zero "
                                              "ClusterTrustBundles");
        if (r < 0)
                return ck_error_set(ret_error, r, "while normalizing trust anchors: %s", strerror(-r));
        return vol_payload_add(p, t->path, pem, size, mode);
}

/* podCertificate: the key and chain the manager holds (GetPodCertificateCredentialBundle) */
static int pod_certificate_payload(const struct pod *pod, const struct volume *v, size_t index,
                                   const struct pod_certificate_projection *pc, int mode,
                                   const struct kc_build_context *ctx, struct vol_payload *p,
                                   struct ck_error **ret_error) {
        const char *msg = NULL, *key, *chain;
        json_t *cred = NULL;
        char idx[32];
        int r;

        snprintf(idx, sizeof(idx), "%zu", index);
        r = objects_pod_lookup(ctx->objects, OBJ_KIND_POD_CERTIFICATE, v->name, idx, &cred, &msg);
        if (r < 0)
                return ck_error_set(ret_error, r, "%s",
                                    msg ? msg
                                        : "no credentials yet for this podCertificate source (static pod or no API "
                                          "server)");
        key = json_string_value(json_object_get(cred, "key"));
        chain = json_string_value(json_object_get(cred, "chain"));
        if (!key || !chain)
                return ck_error_set(ret_error, -EINVAL, "credential bundle is not issued yet");
        if (!isempty(pc->credential_bundle_path)) {
                _cleanup_free_ char *bundle = NULL;
                if (asprintf(&bundle, "%s%s", key, chain) < 0)
                        return -ENOMEM;
                r = vol_payload_add(p, pc->credential_bundle_path, bundle, strlen(bundle), mode);
                explicit_bzero(bundle, strlen(bundle));
                if (r < 0)
                        return r;
        }
        if (!isempty(pc->key_path) && (r = vol_payload_add(p, pc->key_path, key, strlen(key), mode)) < 0)
                return r;
        if (!isempty(pc->certificate_chain_path) &&
            (r = vol_payload_add(p, pc->certificate_chain_path, chain, strlen(chain), mode)) < 0)
                return r;
        (void) pod;
        return 0;
}

int vol_volume_payload(const struct pod *pod, const struct volume *v, const struct kc_build_context *ctx,
                       struct vol_payload *ret, struct ck_error **ret_error) {
        struct vol_payload p = {};
        bool fs_group = false;
        int r = 0;

        switch (v->type) {
        case VOLUME_CONFIG_MAP:
        case VOLUME_SECRET:
                r = object_payload(pod, &v->object, v->type == VOLUME_SECRET, v->object.default_mode, ctx, &p,
                                   ret_error);
                break;
        case VOLUME_DOWNWARD_API:
                r = downward_payload(pod, &v->downward, v->downward.default_mode, ctx, &p, ret_error);
                break;
        case VOLUME_PROJECTED:
                fs_group = pod->spec.security_context && pod->spec.security_context->has_fs_group;
                for (size_t i = 0; r >= 0 && i < v->n_sources; i++) {
                        const struct projection *s = &v->sources[i];
                        int mode = v->projected_default_mode;
                        switch (s->type) {
                        case PROJECTION_CONFIG_MAP:
                        case PROJECTION_SECRET:
                                r = object_payload(pod, &s->object, s->type == PROJECTION_SECRET, mode, ctx, &p,
                                                   ret_error);
                                break;
                        case PROJECTION_DOWNWARD_API:
                                r = downward_payload(pod, &s->downward, mode, ctx, &p, ret_error);
                                break;
                        case PROJECTION_SERVICE_ACCOUNT_TOKEN: {
                                const char *sa = !isempty(pod->spec.service_account_name)
                                                         ? pod->spec.service_account_name
                                                         : "default";
                                const char *fetch_msg = NULL;
                                json_t *st = NULL, *tok;
                                r = objects_pod_lookup_token(ctx->objects, pod->namespace_, sa,
                                                             strempty(s->token_audience), s->token_expiration_seconds,
                                                             &st, &fetch_msg);
                                if (r < 0) {
                                        r = ck_error_set(ret_error, r, "failed to fetch token: %s",
                                                         fetch_msg ? fetch_msg
                                                         : r == -ENOENT
                                                                 ? "no token for the service account (no API server)"
                                                                 : strerror(-r));
                                        break;
                                }
                                tok = json_object_get(st, "token");
                                if (!json_is_string(tok)) {
                                        r = ck_error_set(ret_error, -EINVAL,
                                                         "failed to fetch token: no token in the TokenRequest status");
                                        break;
                                }
                                r = vol_payload_add(&p, s->token_path, json_string_value(tok), json_string_length(tok),
                                                    mode);
                                break;
                        }
                        case PROJECTION_CLUSTER_TRUST_BUNDLE:
                                /* 0600 with an fsGroup (the files are then the group's), as upstream */
                                r = trust_bundle_payload(&s->trust_bundle, fs_group ? 0600 : mode, ctx, &p, ret_error);
                                break;
                        case PROJECTION_POD_CERTIFICATE:
                                r = pod_certificate_payload(pod, v, i, &s->pod_certificate, fs_group ? 0600 : mode, ctx,
                                                            &p, ret_error);
                                break;
                        default:
                                break;
                        }
                }
                break;
        default:
                r = -EINVAL;
        }
        if (r < 0) {
                vol_payload_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}
