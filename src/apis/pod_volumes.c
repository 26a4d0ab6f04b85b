/* SPDX-License-Identifier: Apache-2.0 */
/* spec.volumes, containers[].volumeMounts, spec.hostAliases: decoding, defaults and validation
 * (pkg/apis/core/validation: ValidateVolumes, validateHostPathVolumeSource, validateKeyToPath,
 * validateDownwardAPIVolumeFile, validateProjectionSources, ValidateVolumeMounts, validateHostAliases). */

#include <arpa/inet.h>
#include <ctype.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "apis/pod_volumes.h"
#include "basic/string.h"
#include "basic/strv.h"

/* ---------------------------------------------------------------- free */

static void object_volume_done(struct object_volume *o) {
        free(o->name);
        for (size_t i = 0; i < o->n_items; i++) {
                free(o->items[i].key);
                free(o->items[i].path);
        }
        free(o->items);
}

static void downward_done(struct downward_volume *d) {
        for (size_t i = 0; i < d->n_items; i++) {
                free(d->items[i].path);
                free(d->items[i].field_path);
                free(d->items[i].container_name);
                free(d->items[i].resource);
                quantity_done(&d->items[i].divisor);
        }
        free(d->items);
}

static void volume_done(struct volume *v) {
        free(v->name);
        free(v->type_name);
        free(v->medium);
        quantity_done(&v->size_limit);
        free(v->host_path);
        free(v->host_path_type);
        object_volume_done(&v->object);
        downward_done(&v->downward);
        for (size_t i = 0; i < v->n_sources; i++) {
                object_volume_done(&v->sources[i].object);
                downward_done(&v->sources[i].downward);
                free(v->sources[i].token_audience);
                free(v->sources[i].token_path);
                free(v->sources[i].trust_bundle.name);
                free(v->sources[i].trust_bundle.signer_name);
                json_decref(v->sources[i].trust_bundle.label_selector);
                free(v->sources[i].trust_bundle.path);
                free(v->sources[i].pod_certificate.signer_name);
                free(v->sources[i].pod_certificate.key_type);
                free(v->sources[i].pod_certificate.credential_bundle_path);
                free(v->sources[i].pod_certificate.key_path);
                free(v->sources[i].pod_certificate.certificate_chain_path);
                json_decref(v->sources[i].pod_certificate.user_annotations);
        }
        free(v->sources);
        free(v->claim_name);
        free(v->csi_driver);
        free(v->csi_fs_type);
        strmap_done(&v->csi_attributes);
        free(v->csi_publish_secret);
        free(v->nfs_server);
        free(v->nfs_path);
        free(v->image_reference);
        free(v->image_pull_policy_str);
}

static void mounts_done(struct volume_mounts *m) {
        for (size_t i = 0; i < m->n; i++) {
                free(m->items[i].name);
                free(m->items[i].mount_path);
                free(m->items[i].sub_path);
                free(m->items[i].sub_path_expr);
                free(m->items[i].mount_propagation);
                free(m->items[i].recursive_read_only);
        }
        free(m->items);
}

struct pod_volumes *pod_volumes_free(struct pod_volumes *v) {
        if (!v)
                return NULL;
        for (size_t i = 0; i < v->n_volumes; i++)
                volume_done(&v->volumes[i]);
        free(v->volumes);
        for (size_t i = 0; i < v->n_host_aliases; i++) {
                free(v->host_aliases[i].ip);
                strv_free(v->host_aliases[i].hostnames);
        }
        free(v->host_aliases);
        for (size_t i = 0; i < v->n_containers; i++)
                mounts_done(&v->containers[i]);
        free(v->containers);
        for (size_t i = 0; i < v->n_init_containers; i++)
                mounts_done(&v->init_containers[i]);
        free(v->init_containers);
        free(v);
        return NULL;
}

/* ---------------------------------------------------------------- decode */

static int dec_mode(struct field_errors *e, json_t *obj, const char *parent, const char *key, bool *has,
                    int32_t *mode) {
        int64_t v = 0;
        bool set = false;
        int r = dec_get_integer(e, obj, parent, key, INT32_MIN, INT32_MAX, "int32", &set, &v);
        if (r >= 0 && set) {
                *has = true;
                *mode = (int32_t) v;
        }
        return r;
}

static int decode_key_to_path(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct key_to_path *k = item;
        int r = dec_get_string(e, v, ip, "key", &k->key);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "path", &k->path);
        if (r >= 0)
                r = dec_mode(e, v, ip, "mode", &k->has_mode, &k->mode);
        return r;
}

static int decode_object(struct field_errors *e, json_t *o, const char *path, const char *name_key, bool volume,
                         struct object_volume *ret) {
        int r = dec_get_string(e, o, path, name_key, &ret->name);
        if (r >= 0)
                r = dec_object_list(e, o, path, "items", sizeof(struct key_to_path), (void **) &ret->items,
                                    &ret->n_items, decode_key_to_path);
        if (r >= 0)
                r = dec_get_bool(e, o, path, "optional", &ret->optional);
        if (r >= 0 && volume)
                r = dec_mode(e, o, path, "defaultMode", &ret->has_default_mode, &ret->default_mode);
        if (r >= 0 && volume && !ret->has_default_mode) {
                ret->has_default_mode = true;
                ret->default_mode = VOLUME_DEFAULT_MODE;
        }
        return r;
}

static int decode_downward_item(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct downward_item *d = item;
        _cleanup_free_ char *fp = NULL, *rp = NULL;
        json_t *f = NULL, *rf = NULL;
        int r = dec_get_string(e, v, ip, "path", &d->path);
        if (r >= 0)
                r = dec_mode(e, v, ip, "mode", &d->has_mode, &d->mode);
        if (r >= 0)
                r = dec_get_object(e, v, ip, "fieldRef", &f);
        if (r >= 0 && f) {
                fp = path_child(ip, "fieldRef");
                if (!fp)
                        return -ENOMEM;
                r = dec_get_string(e, f, fp, "fieldPath", &d->field_path);
                if (r >= 0 && !d->field_path && !(d->field_path = strdup("")))
                        return -ENOMEM;
        }
        if (r >= 0)
                r = dec_get_object(e, v, ip, "resourceFieldRef", &rf);
        if (r >= 0 && rf) {
                d->has_resource_field_ref = true;
                rp = path_child(ip, "resourceFieldRef");
                if (!rp)
                        return -ENOMEM;
                r = dec_get_string(e, rf, rp, "containerName", &d->container_name);
                if (r >= 0)
                        r = dec_get_string(e, rf, rp, "resource", &d->resource);
                if (r >= 0)
                        r = dec_get_quantity(e, rf, rp, "divisor", &d->divisor);
        }
        return r;
}

static int decode_downward(struct field_errors *e, json_t *o, const char *path, bool volume,
                           struct downward_volume *ret) {
        int r = dec_object_list(e, o, path, "items", sizeof(struct downward_item), (void **) &ret->items, &ret->n_items,
                                decode_downward_item);
        if (r >= 0 && volume)
                r = dec_mode(e, o, path, "defaultMode", &ret->has_default_mode, &ret->default_mode);
        if (r >= 0 && volume && !ret->has_default_mode) {
                ret->has_default_mode = true;
                ret->default_mode = VOLUME_DEFAULT_MODE;
        }
        return r;
}

static int decode_projection(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct projection *p = item;
        static const struct {
                const char *key;
                enum projection_type type;
        } kinds[] = {
                { "secret", PROJECTION_SECRET },
                { "downwardAPI", PROJECTION_DOWNWARD_API },
                { "configMap", PROJECTION_CONFIG_MAP },
                { "serviceAccountToken", PROJECTION_SERVICE_ACCOUNT_TOKEN },
                { "clusterTrustBundle", PROJECTION_CLUSTER_TRUST_BUNDLE },
                { "podCertificate", PROJECTION_POD_CERTIFICATE },
        };
        int r = 0;

        for (size_t i = 0; i < ELEMENTSOF(kinds) && r >= 0; i++) {
                _cleanup_free_ char *sp = NULL;
                json_t *o = NULL;
                r = dec_get_object(e, v, ip, kinds[i].key, &o);
                if (r < 0 || !o)
                        continue;
                if (p->n_types++ == 0)
                        p->type = kinds[i].type;
                else
                        continue; /* invalid anyway; decode the first only */
                sp = path_child(ip, kinds[i].key);
                if (!sp)
                        return -ENOMEM;
                switch (kinds[i].type) {
                case PROJECTION_SECRET:
                case PROJECTION_CONFIG_MAP:
                        r = decode_object(e, o, sp, "name", false, &p->object);
                        break;
                case PROJECTION_DOWNWARD_API:
                        r = decode_downward(e, o, sp, false, &p->downward);
                        break;
                case PROJECTION_SERVICE_ACCOUNT_TOKEN: {
                        bool set = false;
                        r = dec_get_string(e, o, sp, "audience", &p->token_audience);
                        if (r >= 0)
                                r = dec_get_integer(e, o, sp, "expirationSeconds", INT64_MIN, INT64_MAX, "int64", &set,
                                                    &p->token_expiration_seconds);
                        if (r >= 0 && !set)
                                p->token_expiration_seconds = TOKEN_DEFAULT_EXPIRATION_SECONDS;
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "path", &p->token_path);
                        break;
                }
                case PROJECTION_CLUSTER_TRUST_BUNDLE: {
                        struct trust_bundle_projection *t = &p->trust_bundle;
                        json_t *sel = NULL;
                        r = dec_get_string(e, o, sp, "name", &t->name);
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "signerName", &t->signer_name);
                        if (r >= 0)
                                r = dec_get_object(e, o, sp, "labelSelector", &sel);
                        if (r >= 0 && sel)
                                t->label_selector = json_incref(sel);
                        if (r >= 0)
                                r = dec_get_bool(e, o, sp, "optional", &t->optional);
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "path", &t->path);
                        break;
                }
                case PROJECTION_POD_CERTIFICATE: {
                        struct pod_certificate_projection *c = &p->pod_certificate;
                        json_t *ann = NULL;
                        int64_t max = 0;
                        r = dec_get_string(e, o, sp, "signerName", &c->signer_name);
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "keyType", &c->key_type);
                        if (r >= 0)
                                r = dec_get_integer(e, o, sp, "maxExpirationSeconds", INT32_MIN, INT32_MAX, "int32",
                                                    &c->has_max_expiration, &max);
                        c->max_expiration_seconds = (int32_t) max;
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "credentialBundlePath", &c->credential_bundle_path);
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "keyPath", &c->key_path);
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "certificateChainPath", &c->certificate_chain_path);
                        if (r >= 0)
                                r = dec_get_object(e, o, sp, "userAnnotations", &ann);
                        if (r >= 0 && ann) {
                                const char *k;
                                json_t *val;
                                json_object_foreach(ann, k, val)
                                        if (!json_is_string(val)) {
                                                _cleanup_free_ char *ap = path_child(sp, "userAnnotations");
                                                if (!ap)
                                                        return -ENOMEM;
                                                r = dec_child_error(e, ap, k, val, "string");
                                                break;
                                        }
                                if (r >= 0)
                                        c->user_annotations = json_incref(ann);
                        }
                        break;
                }
                default:
                        break;
                }
        }
        return r;
}

static int decode_volume(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct volume *vol = item;
        const char *key;
        json_t *val;
        int r;

        r = dec_get_string(e, v, ip, "name", &vol->name);
        if (r < 0)
                return r;
        json_object_foreach(v, key, val) {
                _cleanup_free_ char *sp = NULL;
                enum volume_type t = VOLUME_UNSUPPORTED;
                json_t *o = NULL;

                if (streq(key, "name") || json_is_null(val))
                        continue;
                if (streq(key, "emptyDir"))
                        t = VOLUME_EMPTY_DIR;
                else if (streq(key, "hostPath"))
                        t = VOLUME_HOST_PATH;
                else if (streq(key, "configMap"))
                        t = VOLUME_CONFIG_MAP;
                else if (streq(key, "secret"))
                        t = VOLUME_SECRET;
                else if (streq(key, "downwardAPI"))
                        t = VOLUME_DOWNWARD_API;
                else if (streq(key, "projected"))
                        t = VOLUME_PROJECTED;
                else if (streq(key, "persistentVolumeClaim"))
                        t = VOLUME_PVC;
                else if (streq(key, "ephemeral"))
                        t = VOLUME_EPHEMERAL;
                else if (streq(key, "csi"))
                        t = VOLUME_CSI;
                else if (streq(key, "nfs"))
                        t = VOLUME_NFS;
                else if (streq(key, "image"))
                        t = VOLUME_IMAGE;
                r = dec_get_object(e, v, ip, key, &o);
                if (r < 0)
                        return r;
                if (!o)
                        continue;
                if (vol->n_types++ > 0)
                        continue;
                vol->type = t;
                vol->type_name = strdup(key);
                sp = path_child(ip, key);
                if (!vol->type_name || !sp)
                        return -ENOMEM;
                switch (t) {
                case VOLUME_EMPTY_DIR:
                        r = dec_get_string(e, o, sp, "medium", &vol->medium);
                        if (r >= 0)
                                r = dec_get_quantity(e, o, sp, "sizeLimit", &vol->size_limit);
                        break;
                case VOLUME_HOST_PATH:
                        r = dec_get_string(e, o, sp, "path", &vol->host_path);
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "type", &vol->host_path_type);
                        break;
                case VOLUME_CONFIG_MAP:
                        r = decode_object(e, o, sp, "name", true, &vol->object);
                        break;
                case VOLUME_SECRET:
                        r = decode_object(e, o, sp, "secretName", true, &vol->object);
                        break;
                case VOLUME_DOWNWARD_API:
                        r = decode_downward(e, o, sp, true, &vol->downward);
                        break;
                case VOLUME_PROJECTED:
                        r = dec_object_list(e, o, sp, "sources", sizeof(struct projection), (void **) &vol->sources,
                                            &vol->n_sources, decode_projection);
                        if (r >= 0)
                                r = dec_mode(e, o, sp, "defaultMode", &vol->has_projected_default_mode,
                                             &vol->projected_default_mode);
                        if (r >= 0 && !vol->has_projected_default_mode) {
                                vol->has_projected_default_mode = true;
                                vol->projected_default_mode = VOLUME_DEFAULT_MODE;
                        }
                        break;
                case VOLUME_PVC:
                        r = dec_get_string(e, o, sp, "claimName", &vol->claim_name);
                        if (r >= 0)
                                r = dec_get_bool(e, o, sp, "readOnly", &vol->read_only);
                        break;
                case VOLUME_EPHEMERAL: {
                        json_t *tmpl = NULL;
                        r = dec_get_object(e, o, sp, "volumeClaimTemplate", &tmpl);
                        vol->has_claim_template = tmpl != NULL;
                        if (r >= 0)
                                r = dec_get_bool(e, o, sp, "readOnly", &vol->read_only);
                        break;
                }
                case VOLUME_CSI: {
                        json_t *ref = NULL;
                        r = dec_get_string(e, o, sp, "driver", &vol->csi_driver);
                        if (r >= 0)
                                r = dec_get_bool(e, o, sp, "readOnly", &vol->read_only);
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "fsType", &vol->csi_fs_type);
                        if (r >= 0)
                                r = dec_get_string_map(e, o, sp, "volumeAttributes", &vol->csi_attributes);
                        if (r >= 0)
                                r = dec_get_object(e, o, sp, "nodePublishSecretRef", &ref);
                        if (r >= 0 && ref) {
                                _cleanup_free_ char *rp = path_child(sp, "nodePublishSecretRef");
                                if (!rp)
                                        return -ENOMEM;
                                vol->csi_has_publish_secret_ref = true;
                                r = dec_get_string(e, ref, rp, "name", &vol->csi_publish_secret);
                        }
                        break;
                }
                case VOLUME_NFS:
                        r = dec_get_string(e, o, sp, "server", &vol->nfs_server);
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "path", &vol->nfs_path);
                        if (r >= 0)
                                r = dec_get_bool(e, o, sp, "readOnly", &vol->read_only);
                        break;
                case VOLUME_IMAGE:
                        r = dec_get_string(e, o, sp, "reference", &vol->image_reference);
                        if (r >= 0)
                                r = dec_get_string(e, o, sp, "pullPolicy", &vol->image_pull_policy_str);
                        if (r < 0)
                                break;
                        /* SetDefaults_Volume: the tag decides an unset policy (":latest" or none: Always) */
                        if (isempty(vol->image_pull_policy_str))
                                vol->image_pull_policy = image_default_pull_policy(strempty(vol->image_reference));
                        else if (streq(vol->image_pull_policy_str, "Always"))
                                vol->image_pull_policy = PULL_POLICY_ALWAYS;
                        else if (streq(vol->image_pull_policy_str, "IfNotPresent"))
                                vol->image_pull_policy = PULL_POLICY_IF_NOT_PRESENT;
                        else if (streq(vol->image_pull_policy_str, "Never"))
                                vol->image_pull_policy = PULL_POLICY_NEVER;
                        else
                                vol->image_pull_policy = PULL_POLICY_UNSET; /* refused by validation */
                        break;
                default:
                        break;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static int decode_mount(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct volume_mount *m = item;
        int r = dec_get_string(e, v, ip, "name", &m->name);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "mountPath", &m->mount_path);
        if (r >= 0)
                r = dec_get_bool(e, v, ip, "readOnly", &m->read_only);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "subPath", &m->sub_path);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "subPathExpr", &m->sub_path_expr);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "mountPropagation", &m->mount_propagation);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "recursiveReadOnly", &m->recursive_read_only);
        return r;
}

static int decode_alias(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct host_alias *a = item;
        int r = dec_get_string(e, v, ip, "ip", &a->ip);
        if (r >= 0)
                r = dec_get_strv(e, v, ip, "hostnames", &a->hostnames);
        return r;
}

static int decode_mount_lists(struct field_errors *e, json_t *spec, const char *key, struct volume_mounts **ret,
                              size_t *ret_n) {
        json_t *a = json_object_get(spec, key), *c;
        size_t i;

        if (!json_is_array(a) || json_array_size(a) == 0)
                return 0; /* type errors are reported by the containers' decoder */
        *ret = calloc(json_array_size(a), sizeof(struct volume_mounts));
        if (!*ret)
                return -ENOMEM;
        *ret_n = json_array_size(a);
        json_array_foreach(a, i, c) {
                _cleanup_free_ char *p = NULL;
                if (!json_is_object(c))
                        continue;
                if (asprintf(&p, "spec.%s[%zu]", key, i) < 0)
                        return -ENOMEM;
                int r = dec_object_list(e, c, p, "volumeMounts", sizeof(struct volume_mount),
                                        (void **) &(*ret)[i].items, &(*ret)[i].n, decode_mount);
                if (r < 0)
                        return r;
        }
        return 0;
}

int pod_volumes_decode(struct field_errors *e, json_t *spec, struct pod_volumes **ret) {
        struct pod_volumes *v = calloc(1, sizeof(*v));
        int r;

        if (!v)
                return -ENOMEM;
        *ret = v; /* owned by the pod from now on, even when partly decoded */
        r = dec_object_list(e, spec, "spec", "volumes", sizeof(struct volume), (void **) &v->volumes, &v->n_volumes,
                            decode_volume);
        if (r >= 0)
                r = dec_object_list(e, spec, "spec", "hostAliases", sizeof(struct host_alias),
                                    (void **) &v->host_aliases, &v->n_host_aliases, decode_alias);
        if (r >= 0)
                r = decode_mount_lists(e, spec, "containers", &v->containers, &v->n_containers);
        if (r >= 0)
                r = decode_mount_lists(e, spec, "initContainers", &v->init_containers, &v->n_init_containers);
        return r;
}

/* ---------------------------------------------------------------- lookups */

const struct volume *pod_volume_find(const struct pod *p, const char *name) {
        const struct pod_volumes *v = p ? p->spec.volumes : NULL;
        if (!v || !name)
                return NULL;
        for (size_t i = 0; i < v->n_volumes; i++)
                if (streq_ptr(v->volumes[i].name, name))
                        return &v->volumes[i];
        return NULL;
}

const struct volume_mounts *pod_container_mounts(const struct pod *p, const struct container *c) {
        const struct pod_volumes *v = p ? p->spec.volumes : NULL;
        if (!v || !c)
                return NULL;
        if (c >= p->spec.containers && c < p->spec.containers + p->spec.n_containers) {
                size_t i = (size_t) (c - p->spec.containers);
                return i < v->n_containers ? &v->containers[i] : NULL;
        }
        if (c >= p->spec.init_containers && c < p->spec.init_containers + p->spec.n_init_containers) {
                size_t i = (size_t) (c - p->spec.init_containers);
                return i < v->n_init_containers ? &v->init_containers[i] : NULL;
        }
        return NULL;
}

/* ---------------------------------------------------------------- validate */

bool pod_path_has_backsteps(const char *p) {
        const char *s = p;
        while (*s) {
                size_t n = strcspn(s, "/");
                if (n == 2 && s[0] == '.' && s[1] == '.')
                        return true;
                s += n;
                while (*s == '/')
                        s++;
        }
        return false;
}

/* validateLocalDescendingPath */
static void validate_local_descending_path(struct vctx *c, const char *path, const char *value) {
        if (value[0] == '/')
                val_invalid_str(c, path, value, "must be a relative path");
        if (pod_path_has_backsteps(value))
                val_invalid_str(c, path, value, "must not contain '..'");
}

/* validateLocalNonReservedPath */
static void validate_local_non_reserved_path(struct vctx *c, const char *path, const char *value) {
        validate_local_descending_path(c, path, value);
        if (strncmp(value, "..", 2) == 0)
                val_invalid_str(c, path, value, "must not start with '..'");
}

static void validate_mode(struct vctx *c, const char *parent, const char *key, bool has, int32_t mode) {
        _cleanup_free_ char *p = NULL;
        if (!has || (mode >= 0 && mode <= 0777))
                return;
        p = val_child(c, parent, key);
        if (p)
                val_invalid_int(c, p, mode, "must be a number between 0 and 0777 (octal), both inclusive");
}

static void validate_key_to_paths(struct vctx *c, const char *parent, const struct key_to_path *items, size_t n) {
        _cleanup_free_ char *lp = val_child(c, parent, "items");
        for (size_t i = 0; lp && i < n; i++) {
                _cleanup_free_ char *ip = val_idx(c, lp, i), *kp = NULL, *pp = NULL;
                if (!ip)
                        return;
                kp = val_child(c, ip, "key");
                pp = val_child(c, ip, "path");
                if (!kp || !pp)
                        return;
                if (isempty(items[i].key))
                        val_required(c, kp, NULL);
                if (isempty(items[i].path))
                        val_required(c, pp, NULL);
                else
                        validate_local_non_reserved_path(c, pp, items[i].path);
                validate_mode(c, ip, "mode", items[i].has_mode, items[i].mode);
        }
}

static void validate_object(struct vctx *c, const char *path, const char *name_key, const struct object_volume *o) {
        _cleanup_free_ char *np = val_child(c, path, name_key);
        if (!np)
                return;
        if (isempty(o->name))
                val_required(c, np, NULL);
        validate_mode(c, path, "defaultMode", o->has_default_mode, o->default_mode);
        validate_key_to_paths(c, path, o->items, o->n_items);
}

static bool valid_field_path(const char *f) {
        static const char *const plain[] = { "metadata.annotations", "metadata.labels", "metadata.name",
                                             "metadata.namespace", "metadata.uid" };
        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                if (streq(f, plain[i]))
                        return true;
        /* metadata.labels['key'] / metadata.annotations['key'] */
        for (size_t i = 0; i < 2; i++) {
                const char *pre = i == 0 ? "metadata.labels['" : "metadata.annotations['";
                size_t l = strlen(pre), n = strlen(f);
                if (strncmp(f, pre, l) == 0 && n > l + 2 && streq(f + n - 2, "']"))
                        return true;
        }
        return false;
}

static void validate_downward(struct vctx *c, const char *path, const struct downward_volume *d) {
        _cleanup_free_ char *lp = val_child(c, path, "items");

        validate_mode(c, path, "defaultMode", d->has_default_mode, d->default_mode);
        for (size_t i = 0; lp && i < d->n_items; i++) {
                const struct downward_item *it = &d->items[i];
                _cleanup_free_ char *ip = val_idx(c, lp, i), *pp = NULL;
                if (!ip || !(pp = val_child(c, ip, "path")))
                        return;
                if (isempty(it->path))
                        val_required(c, pp, NULL);
                else
                        validate_local_non_reserved_path(c, pp, it->path);
                validate_mode(c, ip, "mode", it->has_mode, it->mode);
                if (it->field_path && it->has_resource_field_ref) {
                        CHECK_OOM(c, field_errors_add(
                                             c->errs, ip,
                                             "Invalid value: \"resource\": "
                                             "fieldRef and resourceFieldRef can not be specified simultaneously"));
                } else if (it->field_path) {
                        _cleanup_free_ char *fp = NULL;
                        if (asprintf(&fp, "%s.fieldRef.fieldPath", ip) < 0) {
                                CHECK_OOM(c, -ENOMEM);
                                return;
                        }
                        if (isempty(it->field_path))
                                val_required(c, fp, NULL);
                        else if (!valid_field_path(it->field_path))
                                val_not_supported(c, fp, it->field_path,
                                                  "\"metadata.annotations\", \"metadata.labels\", \"metadata.name\", "
                                                  "\"metadata.namespace\", \"metadata.uid\"");
                } else if (it->has_resource_field_ref) {
                        _cleanup_free_ char *rp = NULL, *cp = NULL, *resp = NULL;
                        if (asprintf(&rp, "%s.resourceFieldRef", ip) < 0) {
                                CHECK_OOM(c, -ENOMEM);
                                return;
                        }
                        cp = val_child(c, rp, "containerName");
                        resp = val_child(c, rp, "resource");
                        if (!cp || !resp)
                                return;
                        if (isempty(it->container_name))
                                val_required(c, cp, NULL);
                        if (isempty(it->resource))
                                val_required(c, resp, NULL);
                        else if (!streq(it->resource, "limits.cpu") && !streq(it->resource, "limits.memory") &&
                                 !streq(it->resource, "limits.ephemeral-storage") &&
                                 !streq(it->resource, "requests.cpu") && !streq(it->resource, "requests.memory") &&
                                 !streq(it->resource, "requests.ephemeral-storage"))
                                val_not_supported(
                                        c, resp, it->resource,
                                        "\"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", "
                                        "\"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"");
                        if (it->divisor.str && it->divisor.milli <= 0) {
                                _cleanup_free_ char *dp = val_child(c, rp, "divisor");
                                if (dp)
                                        val_invalid_str(c, dp, it->divisor.str, "must be a positive quantity");
                        }
                } else
                        val_required(c, ip, "one of fieldRef and resourceFieldRef is required");
        }
}

/* ValidateSignerName (core/validation/names.go): "<domain with a dot>/<path of subdomains>" */
static void validate_signer_name(struct vctx *c, const char *path, const char *signer) {
        const char *slash, *msgs[NAME_MAX_MSGS];
        _cleanup_free_ char *domain = NULL, *rest = NULL;
        bool dot = false;

        if (isempty(signer)) {
                val_required(c, path, NULL);
                return;
        }
        slash = strchr(signer, '/');
        if (!slash || strchr(slash + 1, '/')) {
                val_invalid_str(c, path, signer,
                                "must be a fully qualified domain and path of the form 'example.com/signer-name'");
                return;
        }
        domain = strndup(signer, (size_t) (slash - signer));
        rest = strdup(slash + 1);
        if (!domain || !rest) {
                CHECK_OOM(c, -ENOMEM);
                return;
        }
        if (strlen(domain) > 253)
                CHECK_OOM(c, field_errors_add(c->errs, path, "Too long: may not be more than 253 bytes"));
        for (char *save = NULL, *d = domain, *lbl; (lbl = strsep(&d, ".")); save = lbl) {
                size_t n = check_dns1123_label(lbl, msgs);
                dot = dot || save;
                for (size_t i = 0; i < n; i++) {
                        _cleanup_free_ char *m = NULL;
                        if (asprintf(&m, "validating label \"%s\": %s", lbl, msgs[i]) >= 0)
                                val_invalid_str(c, path, signer, m);
                }
                if (n > 0)
                        break;
        }
        if (!dot)
                val_invalid_str(c, path, signer, "should be a domain with at least two segments separated by dots");
        for (char *d = rest, *lbl; (lbl = strsep(&d, "."));) {
                size_t n = check_dns1123_subdomain(lbl, msgs);
                for (size_t i = 0; i < n; i++) {
                        _cleanup_free_ char *m = NULL;
                        if (asprintf(&m, "validating label \"%s\": %s", lbl, msgs[i]) >= 0)
                                val_invalid_str(c, path, signer, m);
                }
                if (n > 0)
                        break;
        }
        if (strlen(signer) > 253 + 253 + 63 + 1 + 1)
                CHECK_OOM(c, field_errors_add(c->errs, path, "Too long: may not be more than 571 bytes"));
}

/* metav1 ValidateLabelSelector: keys qualified names, values label values, operators and their values */
static void validate_label_selector(struct vctx *c, const char *path, json_t *sel) {
        json_t *ml = json_object_get(sel, "matchLabels"), *me = json_object_get(sel, "matchExpressions"), *v;
        const char *k;
        size_t i;

        json_object_foreach(ml, k, v) {
                _cleanup_free_ char *mp = val_child(c, path, "matchLabels");
                if (!mp)
                        return;
                val_check_name(c, mp, k, check_qualified_name);
                if (!json_is_string(v))
                        val_invalid_str(c, mp, k, "must be a string");
                else
                        val_check_name(c, mp, json_string_value(v), check_label_value);
        }
        json_array_foreach(me, i, v) {
                _cleanup_free_ char *lp = val_child(c, path, "matchExpressions"), *ip = NULL, *op = NULL, *vp = NULL,
                                    *kp = NULL;
                const char *key = json_string_value(json_object_get(v, "key"));
                const char *o = json_string_value(json_object_get(v, "operator"));
                size_t nv = json_array_size(json_object_get(v, "values"));
                if (!lp || !(ip = val_idx(c, lp, i)) || !(op = val_child(c, ip, "operator")) ||
                    !(vp = val_child(c, ip, "values")) || !(kp = val_child(c, ip, "key")))
                        return;
                if (streq_ptr(o, "In") || streq_ptr(o, "NotIn")) {
                        if (nv == 0)
                                val_required(c, vp, "must be specified when `operator` is 'In' or 'NotIn'");
                } else if (streq_ptr(o, "Exists") || streq_ptr(o, "DoesNotExist")) {
                        if (nv > 0)
                                val_forbidden(c, vp,
                                              "may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
                } else
                        val_not_supported(c, op, strempty(o), "\"In\", \"NotIn\", \"Exists\", \"DoesNotExist\"");
                val_check_name(c, kp, strempty(key), check_qualified_name);
        }
}

/* a ClusterTrustBundle's name: "<signer with ':' for '/'>:<subdomain>" or a subdomain without ':' */
static void validate_trust_bundle_name(struct vctx *c, const char *path, const char *name) {
        const char *colon = strrchr(name, ':'), *msgs[NAME_MAX_MSGS];
        size_t n;

        n = check_dns1123_subdomain(colon ? colon + 1 : name, msgs);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *m = NULL;
                if (asprintf(&m, "not a valid clustertrustbundlename: %s", msgs[i]) >= 0)
                        val_invalid_str(c, path, name, m);
        }
}

/* IsDomainPrefixedKey: "<subdomain>/<name>" */
static void validate_user_annotations(struct vctx *c, const char *path, json_t *ann) {
        const char *k;
        json_t *v;
        size_t total = 0;

        json_object_foreach(ann, k, v) {
                const char *slash = strchr(k, '/'), *msgs[NAME_MAX_MSGS];
                _cleanup_free_ char *dom = slash ? strndup(k, (size_t) (slash - k)) : NULL;
                total += strlen(k) + json_string_length(v);
                for (char *q = dom; q && *q; q++)
                        *q = (char) tolower((unsigned char) *q);
                if (!slash || !dom || check_dns1123_subdomain(dom, msgs) > 0 || check_qualified_name(k, msgs) > 0)
                        val_invalid_str(c, path, k, "must be a domain-prefixed path (such as \"acme.io/foo\")");
        }
        if (total > 256 * 1024)
                CHECK_OOM(c, field_errors_add(c->errs, path, "Too long: may not be more than 262144 bytes"));
}

/* "conflicting duplicate paths" across the sources of one projected volume */
static void projected_path_seen(struct vctx *c, char ***seen, const char *vpath, const char *value, const char *p) {
        if (isempty(p))
                return;
        if (strv_contains(*seen, p))
                val_invalid_str(c, vpath, value, "conflicting duplicate paths");
        else
                CHECK_OOM(c, strv_extend(seen, p));
}

static bool is_kubernetes_signer(const char *signer) {
        const char *slash = strchr(signer, '/');
        size_t n = slash ? (size_t) (slash - signer) : strlen(signer);
        return (n == strlen("kubernetes.io") && strncmp(signer, "kubernetes.io", n) == 0) ||
               (n > strlen(".kubernetes.io") &&
                strncmp(signer + n - strlen(".kubernetes.io"), ".kubernetes.io", strlen(".kubernetes.io")) == 0);
}

static void validate_trust_bundle(struct vctx *c, const char *sp, const struct trust_bundle_projection *t) {
        _cleanup_free_ char *np = val_child(c, sp, "name"), *snp = val_child(c, sp, "signerName"),
                            *lp = val_child(c, sp, "labelSelector"), *pp = val_child(c, sp, "path");
        if (!np || !snp || !lp || !pp)
                return;
        if (t->name && t->signer_name)
                val_invalid_str(c, sp, t->name, "only one of name and signerName may be used");
        else if (t->name) {
                if (isempty(t->name))
                        val_required(c, np, "must be a valid object name");
                else
                        validate_trust_bundle_name(c, np, t->name);
                if (t->label_selector)
                        val_invalid_str(c, lp, "", "labelSelector must be unset if name is specified");
        } else if (t->signer_name) {
                validate_signer_name(c, snp, t->signer_name);
                if (t->label_selector)
                        validate_label_selector(c, lp, t->label_selector);
        } else
                val_required(c, sp, "either name or signerName must be specified");
        if (isempty(t->path))
                val_required(c, pp, NULL);
        else
                validate_local_non_reserved_path(c, pp, t->path);
}

static void validate_pod_certificate(struct vctx *c, const char *sp, const struct pod_certificate_projection *pc) {
        _cleanup_free_ char *snp = val_child(c, sp, "signerName"), *kp = val_child(c, sp, "keyType"),
                            *mp = val_child(c, sp, "maxExpirationSeconds"), *ap = val_child(c, sp, "userAnnotations"),
                            *bp = val_child(c, sp, "credentialBundlePath"), *kpp = val_child(c, sp, "keyPath"),
                            *cp = val_child(c, sp, "certificateChainPath");
        static const char *const key_types[] = {
                "RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"
        };
        bool known = false;

        if (!snp || !kp || !mp || !ap || !bp || !kpp || !cp)
                return;
        validate_signer_name(c, snp, pc->signer_name);
        if (pc->user_annotations)
                validate_user_annotations(c, ap, pc->user_annotations);
        for (size_t i = 0; i < ELEMENTSOF(key_types); i++)
                known = known || streq_ptr(pc->key_type, key_types[i]);
        if (!known)
                val_not_supported(c, kp, strempty(pc->key_type),
                                  "\"RSA3072\", \"RSA4096\", \"ECDSAP256\", \"ECDSAP384\", \"ECDSAP521\", \"ED25519\"");
        if (pc->has_max_expiration) {
                int32_t max = pc->signer_name && is_kubernetes_signer(pc->signer_name) ? 24 * 3600 : 91 * 24 * 3600;
                _cleanup_free_ char *m = NULL;
                if (pc->max_expiration_seconds < 3600)
                        val_invalid_int(c, mp, pc->max_expiration_seconds,
                                        "if provided, maxExpirationSeconds must be >= 3600");
                if (pc->max_expiration_seconds > max &&
                    asprintf(&m, "if provided, maxExpirationSeconds must be <= %d", (int) max) >= 0)
                        val_invalid_int(c, mp, pc->max_expiration_seconds, m);
        }
        if (!isempty(pc->credential_bundle_path))
                validate_local_non_reserved_path(c, bp, pc->credential_bundle_path);
        if (!isempty(pc->key_path))
                validate_local_non_reserved_path(c, kpp, pc->key_path);
        if (!isempty(pc->certificate_chain_path))
                validate_local_non_reserved_path(c, cp, pc->certificate_chain_path);
        if (isempty(pc->credential_bundle_path) && isempty(pc->key_path) && isempty(pc->certificate_chain_path))
                val_required(c, sp, "specify at least one of credentialBundlePath, keyPath, and certificateChainPath");
}

static void validate_projected(struct vctx *c, const char *path, const struct volume *v) {
        _cleanup_free_ char *lp = val_child(c, path, "sources");
        _cleanup_strv_free_ char **seen = NULL;

        validate_mode(c, path, "defaultMode", v->has_projected_default_mode, v->projected_default_mode);
        for (size_t i = 0; lp && i < v->n_sources; i++) {
                const struct projection *p = &v->sources[i];
                _cleanup_free_ char *ip = val_idx(c, lp, i), *sp = NULL;
                if (!ip)
                        return;
                if (p->n_types == 0) {
                        val_required(c, ip,
                                     "must specify exactly 1 of configMap, secret, downwardAPI, serviceAccountToken, "
                                     "clusterTrustBundle, podCertificate");
                        continue;
                }
                if (p->n_types > 1) {
                        val_forbidden(c, ip, "may not specify more than 1 volume type per source");
                        continue;
                }
                switch (p->type) {
                case PROJECTION_CONFIG_MAP:
                        if ((sp = val_child(c, ip, "configMap")))
                                validate_object(c, sp, "name", &p->object);
                        break;
                case PROJECTION_SECRET:
                        if ((sp = val_child(c, ip, "secret")))
                                validate_object(c, sp, "name", &p->object);
                        break;
                case PROJECTION_DOWNWARD_API:
                        if ((sp = val_child(c, ip, "downwardAPI")))
                                validate_downward(c, sp, &p->downward);
                        break;
                case PROJECTION_SERVICE_ACCOUNT_TOKEN: {
                        _cleanup_free_ char *ep = NULL, *pp = NULL;
                        if (!(sp = val_child(c, ip, "serviceAccountToken")) ||
                            !(ep = val_child(c, sp, "expirationSeconds")) || !(pp = val_child(c, sp, "path")))
                                return;
                        if (p->token_expiration_seconds < 600)
                                val_invalid_int(c, ep, p->token_expiration_seconds,
                                                "may not specify a duration less than 10 minutes");
                        else if (p->token_expiration_seconds > ((int64_t) 1 << 32))
                                val_invalid_int(c, ep, p->token_expiration_seconds,
                                                "may not specify a duration larger than 2^32 seconds");
                        if (isempty(p->token_path))
                                val_required(c, pp, NULL);
                        else
                                validate_local_non_reserved_path(c, pp, p->token_path);
                        break;
                }
                case PROJECTION_CLUSTER_TRUST_BUNDLE:
                        if ((sp = val_child(c, ip, "clusterTrustBundle")))
                                validate_trust_bundle(c, sp, &p->trust_bundle);
                        projected_path_seen(c, &seen, path, strempty(p->trust_bundle.path), p->trust_bundle.path);
                        break;
                case PROJECTION_POD_CERTIFICATE: {
                        const struct pod_certificate_projection *pc = &p->pod_certificate;
                        if ((sp = val_child(c, ip, "podCertificate")))
                                validate_pod_certificate(c, sp, pc);
                        projected_path_seen(c, &seen, path, strempty(pc->credential_bundle_path),
                                            pc->credential_bundle_path);
                        projected_path_seen(c, &seen, path, strempty(pc->key_path), pc->key_path);
                        projected_path_seen(c, &seen, path, strempty(pc->certificate_chain_path),
                                            pc->certificate_chain_path);
                        break;
                }
                default:
                        break;
                }
        }
}

static void validate_volume(struct vctx *c, const struct volume *v, const char *ip, const char *pod_name) {
        _cleanup_free_ char *sp = NULL;

        if (v->n_types == 0) {
                val_required(c, ip, "must specify a volume type");
                return;
        }
        sp = val_child(c, ip, v->type_name);
        if (!sp)
                return;
        if (v->n_types > 1) {
                val_forbidden(c, sp, "may not specify more than 1 volume type");
                return;
        }
        switch (v->type) {
        case VOLUME_EMPTY_DIR:
                if (v->size_limit.str && v->size_limit.milli < 0) {
                        _cleanup_free_ char *lp = val_child(c, sp, "sizeLimit");
                        if (lp)
                                val_forbidden(c, lp, "SizeLimit field must be a valid resource quantity");
                }
                break;
        case VOLUME_HOST_PATH: {
                _cleanup_free_ char *pp = val_child(c, sp, "path"), *tp = val_child(c, sp, "type");
                const char *t = v->host_path_type;
                if (!pp || !tp)
                        return;
                if (isempty(v->host_path))
                        val_required(c, pp, NULL);
                else if (pod_path_has_backsteps(v->host_path))
                        val_invalid_str(c, pp, v->host_path, "must not contain '..'");
                if (t && !streq(t, "") && !streq(t, "DirectoryOrCreate") && !streq(t, "Directory") &&
                    !streq(t, "FileOrCreate") && !streq(t, "File") && !streq(t, "Socket") && !streq(t, "CharDevice") &&
                    !streq(t, "BlockDevice"))
                        val_not_supported(
                                c, tp, t,
                                "\"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", "
                                "\"File\", \"FileOrCreate\", \"Socket\"");
                break;
        }
        case VOLUME_CONFIG_MAP:
                validate_object(c, sp, "name", &v->object);
                break;
        case VOLUME_SECRET:
                validate_object(c, sp, "secretName", &v->object);
                break;
        case VOLUME_DOWNWARD_API:
                validate_downward(c, sp, &v->downward);
                break;
        case VOLUME_PROJECTED:
                validate_projected(c, sp, v);
                break;
        case VOLUME_PVC: {
                _cleanup_free_ char *np = val_child(c, sp, "claimName");
                if (np && isempty(v->claim_name))
                        val_required(c, np, NULL);
                break;
        }
        case VOLUME_EPHEMERAL: {
                _cleanup_free_ char *tp = val_child(c, sp, "volumeClaimTemplate"), *nm = NULL, *np = NULL;
                if (tp && !v->has_claim_template)
                        val_required(c, tp, NULL);
                /* the PVC <pod>-<volume> must be a valid object name */
                if (!isempty(pod_name) && !isempty(v->name) && asprintf(&nm, "%s-%s", pod_name, v->name) >= 0 &&
                    (np = val_child(c, sp, "name"))) {
                        const char *msgs[NAME_MAX_MSGS];
                        size_t n = check_dns1123_subdomain(nm, msgs);
                        for (size_t i = 0; i < n; i++) {
                                _cleanup_free_ char *m = NULL;
                                if (asprintf(&m, "PVC name \"%s\": %s", nm, msgs[i]) >= 0)
                                        val_invalid_str(c, np, v->name, m);
                        }
                }
                break;
        }
        case VOLUME_CSI: {
                _cleanup_free_ char *dp = val_child(c, sp, "driver");
                if (!dp)
                        return;
                if (isempty(v->csi_driver))
                        val_required(c, dp, NULL);
                else {
                        _cleanup_free_ char *lower = strdup(v->csi_driver);
                        if (!lower) {
                                CHECK_OOM(c, -ENOMEM);
                                return;
                        }
                        for (char *q = lower; *q; q++)
                                *q = (char) tolower((unsigned char) *q);
                        if (strlen(v->csi_driver) > 63)
                                CHECK_OOM(c, field_errors_add(c->errs, dp, "Too long: must have at most 63 bytes"));
                        val_check_name(c, dp, lower, check_dns1123_subdomain);
                }
                if (v->csi_has_publish_secret_ref) {
                        _cleanup_free_ char *rp = val_child(c, sp, "nodePublishSecretRef"), *np = NULL;
                        if (rp && (np = val_child(c, rp, "name")) && isempty(v->csi_publish_secret))
                                val_required(c, np, NULL);
                }
                break;
        }
        case VOLUME_NFS: {
                _cleanup_free_ char *srv = val_child(c, sp, "server"), *pp = val_child(c, sp, "path");
                if (!srv || !pp)
                        return;
                if (isempty(v->nfs_server))
                        val_required(c, srv, NULL);
                if (isempty(v->nfs_path))
                        val_required(c, pp, NULL);
                if (!v->nfs_path || v->nfs_path[0] != '/')
                        val_invalid_str(c, pp, strempty(v->nfs_path), "must be an absolute path");
                break;
        }
        case VOLUME_IMAGE: {
                /* validateImageVolumeSource */
                _cleanup_free_ char *rp = val_child(c, sp, "reference"), *pp = val_child(c, sp, "pullPolicy");
                if (!rp || !pp)
                        return;
                if (isempty(v->image_reference))
                        val_required(c, rp, NULL);
                if (v->image_pull_policy == PULL_POLICY_UNSET)
                        val_not_supported(c, pp, strempty(v->image_pull_policy_str),
                                          "\"Always\", \"IfNotPresent\", \"Never\"");
                break;
        }
        default:
                break; /* other types are refused when the pod starts (FailedMount) */
        }
}

static void validate_mounts(struct vctx *c, const struct pod *p, const struct volume_mounts *m, const char *cpath) {
        _cleanup_free_ char *lp = NULL;

        if (!m || m->n == 0)
                return;
        lp = val_child(c, cpath, "volumeMounts");
        for (size_t i = 0; lp && i < m->n; i++) {
                const struct volume_mount *vm = &m->items[i];
                _cleanup_free_ char *ip = val_idx(c, lp, i), *np = NULL, *mp = NULL, *sp = NULL, *ep = NULL, *pp = NULL,
                                    *rp = NULL;
                if (!ip || !(np = val_child(c, ip, "name")) || !(mp = val_child(c, ip, "mountPath")) ||
                    !(sp = val_child(c, ip, "subPath")) || !(ep = val_child(c, ip, "subPathExpr")) ||
                    !(pp = val_child(c, ip, "mountPropagation")) || !(rp = val_child(c, ip, "recursiveReadOnly")))
                        return;
                if (isempty(vm->name))
                        val_required(c, np, NULL);
                else if (!pod_volume_find(p, vm->name)) {
                        _cleanup_free_ char *q = go_quote(vm->name);
                        if (q)
                                CHECK_OOM(c, field_errors_add(c->errs, np, "Not found: %s", q));
                        else
                                CHECK_OOM(c, -ENOMEM);
                }
                if (isempty(vm->mount_path))
                        val_required(c, mp, NULL);
                else
                        for (size_t j = 0; j < i; j++)
                                if (streq_ptr(m->items[j].mount_path, vm->mount_path)) {
                                        val_invalid_str(c, mp, vm->mount_path, "must be unique");
                                        break;
                                }
                if (!isempty(vm->sub_path_expr) && !isempty(vm->sub_path))
                        val_invalid_str(c, ep, vm->sub_path_expr, "subPathExpr and subPath are mutually exclusive");
                if (!isempty(vm->sub_path))
                        validate_local_descending_path(c, sp, vm->sub_path);
                if (!isempty(vm->sub_path_expr))
                        validate_local_descending_path(c, ep, vm->sub_path_expr);
                if (vm->mount_propagation && !streq(vm->mount_propagation, "Bidirectional") &&
                    !streq(vm->mount_propagation, "HostToContainer") && !streq(vm->mount_propagation, "None"))
                        val_not_supported(c, pp, vm->mount_propagation,
                                          "\"Bidirectional\", \"HostToContainer\", \"None\"");
                /* Bidirectional needs a privileged container: pod.h has no securityContext.privileged yet */
                /* validateMountRecursiveReadOnly */
                if (streq_ptr(vm->recursive_read_only, "Enabled") || streq_ptr(vm->recursive_read_only, "IfPossible")) {
                        if (!vm->read_only)
                                val_forbidden(c, rp, "may only be specified when readOnly is true");
                        if (vm->mount_propagation && !streq(vm->mount_propagation, "None"))
                                val_forbidden(c, rp,
                                              "may only be specified when mountPropagation is None or not "
                                              "specified");
                } else if (vm->recursive_read_only && !streq(vm->recursive_read_only, "Disabled"))
                        val_not_supported(c, rp, vm->recursive_read_only, "\"Disabled\", \"Enabled\", \"IfPossible\"");
        }
}

int pod_mount_recursive_read_only(const struct volume_mount *m, bool runtime_supports, bool *ret,
                                  struct ck_error **ret_error) {
        const char *mode = m->recursive_read_only;
        _cleanup_free_ char *name = go_quote(strempty(m->name)), *msg = NULL;
        int r;

        assert(ret);
        if (!mode || streq(mode, "Disabled")) {
                *ret = false;
                return 0;
        }
        if (!name)
                return -ENOMEM;
        if (!m->read_only)
                r = asprintf(&msg, "volume %s requested recursive read-only mode, but it is not read-only", name);
        else if (m->mount_propagation && !streq(m->mount_propagation, "None")) {
                _cleanup_free_ char *p = go_quote(m->mount_propagation);
                r = p ? asprintf(&msg,
                                 "volume %s requested recursive read-only mode, but it is not compatible with "
                                 "propagation %s",
                                 name, p)
                      : -1;
        } else if (streq(mode, "IfPossible")) {
                *ret = runtime_supports;
                return 0;
        } else if (streq(mode, "Enabled")) {
                if (runtime_supports) {
                        *ret = true;
                        return 0;
                }
                r = asprintf(&msg,
                             "volume %s requested recursive read-only mode, but it is not supported by the runtime",
                             name);
        } else {
                _cleanup_free_ char *q = go_quote(mode);
                r = q ? asprintf(&msg, "unknown recursive read-only mode %s", q) : -1;
        }
        if (r < 0)
                return -ENOMEM;
        return ck_error_set(ret_error, -EINVAL, "%s", msg);
}

static void validate_host_aliases(struct vctx *c, const struct pod_volumes *v) {
        for (size_t i = 0; i < v->n_host_aliases; i++) {
                const struct host_alias *a = &v->host_aliases[i];
                _cleanup_free_ char *ip = NULL, *ipp = NULL, *hp = NULL;
                unsigned char buf[16];
                if (asprintf(&ip, "spec.hostAliases[%zu]", i) < 0 || !(ipp = val_child(c, ip, "ip")) ||
                    !(hp = val_child(c, ip, "hostnames"))) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                if (isempty(a->ip))
                        val_required(c, ipp, NULL);
                else if (inet_pton(AF_INET, a->ip, buf) != 1 && inet_pton(AF_INET6, a->ip, buf) != 1)
                        val_invalid_str(c, ipp, a->ip, "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
                for (size_t j = 0; a->hostnames && a->hostnames[j]; j++) {
                        _cleanup_free_ char *jp = val_idx(c, hp, j);
                        if (jp)
                                val_check_name(c, jp, a->hostnames[j], check_dns1123_subdomain);
                }
        }
}

void pod_volumes_validate(struct vctx *c, const struct pod *p) {
        const struct pod_volumes *v = p->spec.volumes;

        if (!v)
                return;
        for (size_t i = 0; i < v->n_volumes; i++) {
                const struct volume *vol = &v->volumes[i];
                _cleanup_free_ char *ip = NULL, *np = NULL;
                if (asprintf(&ip, "spec.volumes[%zu]", i) < 0 || !(np = val_child(c, ip, "name"))) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                if (isempty(vol->name))
                        val_required(c, np, NULL);
                else {
                        val_check_name(c, np, vol->name, check_dns1123_label);
                        for (size_t j = 0; j < i; j++)
                                if (streq_ptr(v->volumes[j].name, vol->name)) {
                                        val_duplicate_str(c, np, vol->name);
                                        break;
                                }
                }
                validate_volume(c, vol, ip, p->name);
        }
        for (size_t i = 0; i < p->spec.n_containers && i < v->n_containers; i++) {
                _cleanup_free_ char *cp = NULL;
                if (asprintf(&cp, "spec.containers[%zu]", i) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                validate_mounts(c, p, &v->containers[i], cp);
        }
        for (size_t i = 0; i < p->spec.n_init_containers && i < v->n_init_containers; i++) {
                _cleanup_free_ char *cp = NULL;
                if (asprintf(&cp, "spec.initContainers[%zu]", i) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                validate_mounts(c, p, &v->init_containers[i], cp);
        }
        validate_host_aliases(c, v);
}
