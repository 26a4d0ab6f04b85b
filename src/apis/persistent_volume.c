/* SPDX-License-Identifier: Apache-2.0 */
/* PersistentVolume, PersistentVolumeClaim and CSIDriver objects and node affinity: see persistent_volume.h. */

#include "apis/persistent_volume.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/error.h"
#include "basic/json.h"
#include "basic/string.h"
#include "basic/strv.h"

/* ---------------------------------------------------------------- JSON helpers */

/* a string field: NULL when missing; -EBADMSG (named) when not a string */
static int get_string(const json_t *o, const char *key, const char *where, char **ret, struct ck_error **ret_error) {
        const json_t *v = json_object_get(o, key);

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return ck_error_set(ret_error, -EBADMSG, "%s.%s: expected a string, got %s", where, key,
                                    json_type_name(v));
        return free_and_strdup(ret, json_string_value(v)) < 0 ? ck_error_set(ret_error, -ENOMEM, "out of memory") : 0;
}

static int get_bool(const json_t *o, const char *key, const char *where, bool *ret, struct ck_error **ret_error) {
        const json_t *v = json_object_get(o, key);

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_boolean(v))
                return ck_error_set(ret_error, -EBADMSG, "%s.%s: expected a boolean, got %s", where, key,
                                    json_type_name(v));
        *ret = json_is_true(v);
        return 0;
}

static int get_strv(const json_t *o, const char *key, const char *where, char ***ret, struct ck_error **ret_error) {
        const json_t *a = json_object_get(o, key), *v;
        size_t i;

        if (!a || json_is_null(a))
                return 0;
        if (!json_is_array(a))
                return ck_error_set(ret_error, -EBADMSG, "%s.%s: expected an array, got %s", where, key,
                                    json_type_name(a));
        json_array_foreach(a, i, v) {
                if (!json_is_string(v))
                        return ck_error_set(ret_error, -EBADMSG, "%s.%s[%zu]: expected a string, got %s", where, key, i,
                                            json_type_name(v));
                if (strv_extend(ret, json_string_value(v)) < 0)
                        return ck_error_set(ret_error, -ENOMEM, "out of memory");
        }
        return 0;
}

static int get_map(const json_t *o, const char *key, const char *where, struct strmap *ret,
                   struct ck_error **ret_error) {
        const json_t *m = json_object_get(o, key), *v;
        const char *k;

        if (!m || json_is_null(m))
                return 0;
        if (!json_is_object(m))
                return ck_error_set(ret_error, -EBADMSG, "%s.%s: expected an object, got %s", where, key,
                                    json_type_name(m));
        json_object_foreach((json_t *) m, k, v) {
                if (!json_is_string(v))
                        return ck_error_set(ret_error, -EBADMSG, "%s.%s[%s]: expected a string, got %s", where, key, k,
                                            json_type_name(v));
                if (strmap_set(ret, k, json_string_value(v)) < 0)
                        return ck_error_set(ret_error, -ENOMEM, "out of memory");
        }
        return 0;
}

static int get_quantity(const json_t *o, const char *where, struct quantity *ret, struct ck_error **ret_error) {
        const json_t *v = json_object_get(o, "storage");

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v) || quantity_parse(json_string_value(v), ret) < 0)
                return ck_error_set(ret_error, -EBADMSG, "%s.storage: not a quantity", where);
        return 0;
}

static int get_secret_ref(const json_t *o, const char *key, const char *where, struct secret_ref *ret,
                          struct ck_error **ret_error) {
        const json_t *r = json_object_get(o, key);
        _cleanup_free_ char *w = NULL;
        int k;

        if (!r || json_is_null(r))
                return 0;
        if (asprintf(&w, "%s.%s", where, key) < 0)
                return ck_error_set(ret_error, -ENOMEM, "out of memory");
        k = get_string(r, "namespace", w, &ret->namespace_, ret_error);
        if (k >= 0)
                k = get_string(r, "name", w, &ret->name, ret_error);
        return k;
}

/* ---------------------------------------------------------------- node affinity */

static void requirements_free(struct node_selector_requirement *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(l[i].key);
                free(l[i].operator_);
                strv_free(l[i].values);
        }
        free(l);
}

static int decode_requirements(const json_t *a, const char *where, struct node_selector_requirement **ret,
                               size_t *ret_n, struct ck_error **ret_error) {
        const json_t *v;
        size_t i;

        if (!a || json_is_null(a))
                return 0;
        if (!json_is_array(a))
                return ck_error_set(ret_error, -EBADMSG, "%s: expected an array", where);
        *ret = calloc(json_array_size(a) + 1, sizeof(**ret));
        if (!*ret)
                return ck_error_set(ret_error, -ENOMEM, "out of memory");
        json_array_foreach(a, i, v) {
                struct node_selector_requirement *q = &(*ret)[i];
                _cleanup_free_ char *w = NULL;
                int r;
                if (asprintf(&w, "%s[%zu]", where, i) < 0)
                        return ck_error_set(ret_error, -ENOMEM, "out of memory");
                *ret_n = i + 1;
                r = get_string(v, "key", w, &q->key, ret_error);
                if (r >= 0)
                        r = get_string(v, "operator", w, &q->operator_, ret_error);
                if (r >= 0)
                        r = get_strv(v, "values", w, &q->values, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* one requirement against a value (present or not) */
static bool requirement_matches(const struct node_selector_requirement *q, const char *value) {
        size_t nv = strv_length(q->values);
        const char *op = strempty(q->operator_);

        if (streq(op, "In") || streq(op, "NotIn")) {
                bool in = false;
                if (nv == 0)
                        return false; /* invalid: values required */
                for (size_t i = 0; value && i < nv; i++)
                        if (streq(q->values[i], value))
                                in = true;
                return streq(op, "In") ? in : !in;
        }
        if (streq(op, "Exists"))
                return nv == 0 && value;
        if (streq(op, "DoesNotExist"))
                return nv == 0 && !value;
        if (streq(op, "Gt") || streq(op, "Lt")) {
                int64_t want, have;
                if (nv != 1 || safe_atoi64(q->values[0], &want) < 0 || !value || safe_atoi64(value, &have) < 0)
                        return false;
                return streq(op, "Gt") ? have > want : have < want;
        }
        return false; /* unknown operator: the term is invalid */
}

/* MatchNodeSelectorTerms: does a node with these labels (and this name, for matchFields metadata.name) match one
 * of the terms? A term with neither expressions nor fields matches nothing; an invalid requirement makes its term
 * not match. */
static bool node_selector_terms_match(const struct node_selector_term *terms, size_t n, const struct strmap *labels,
                                      const char *node_name) {
        for (size_t t = 0; t < n; t++) {
                const struct node_selector_term *term = &terms[t];
                bool ok = true;

                if (term->n_expressions == 0 && term->n_fields == 0)
                        continue;
                for (size_t i = 0; ok && i < term->n_expressions; i++)
                        ok = requirement_matches(&term->expressions[i],
                                                 labels ? strmap_get(labels, term->expressions[i].key) : NULL);
                for (size_t i = 0; ok && i < term->n_fields; i++) {
                        const struct node_selector_requirement *q = &term->fields[i];
                        /* only metadata.name, and only In / NotIn */
                        if (!streq_ptr(q->key, "metadata.name") ||
                            (!streq_ptr(q->operator_, "In") && !streq_ptr(q->operator_, "NotIn")))
                                ok = false;
                        else
                                ok = requirement_matches(q, node_name);
                }
                if (ok)
                        return true;
        }
        return false;
}

int persistent_volume_check_node_affinity(const struct persistent_volume *pv, const struct strmap *labels,
                                          const char *node_name, struct ck_error **ret_error) {
        if (!pv->has_affinity || node_selector_terms_match(pv->terms, pv->n_terms, labels, node_name))
                return 0;
        return ck_error_set(ret_error, -EPERM, "no matching NodeSelectorTerms");
}

/* ---------------------------------------------------------------- PersistentVolume */

void persistent_volume_done(struct persistent_volume *pv) {
        if (!pv)
                return;
        free(pv->name);
        free(pv->claim_uid);
        free(pv->volume_mode);
        free(pv->gid);
        strv_free(pv->access_modes);
        strv_free(pv->mount_options);
        quantity_done(&pv->capacity);
        free(pv->source_name);
        free(pv->driver);
        free(pv->volume_handle);
        free(pv->fs_type);
        strmap_done(&pv->attributes);
        free(pv->stage_secret.namespace_);
        free(pv->stage_secret.name);
        free(pv->publish_secret.namespace_);
        free(pv->publish_secret.name);
        free(pv->path);
        free(pv->host_path_type);
        free(pv->server);
        for (size_t i = 0; i < pv->n_terms; i++) {
                requirements_free(pv->terms[i].expressions, pv->terms[i].n_expressions);
                requirements_free(pv->terms[i].fields, pv->terms[i].n_fields);
        }
        free(pv->terms);
        *pv = (struct persistent_volume) {};
}

static int decode_affinity(const json_t *spec, struct persistent_volume *pv, struct ck_error **ret_error) {
        const json_t *req = json_object_get(json_object_get(spec, "nodeAffinity"), "required");
        const json_t *terms = json_object_get(req, "nodeSelectorTerms"), *t;
        size_t i;

        if (!req || json_is_null(req))
                return 0;
        pv->has_affinity = true;
        if (!json_is_array(terms))
                return 0; /* no terms: matches nothing */
        pv->terms = calloc(json_array_size(terms) + 1, sizeof(*pv->terms));
        if (!pv->terms)
                return ck_error_set(ret_error, -ENOMEM, "out of memory");
        json_array_foreach(terms, i, t) {
                _cleanup_free_ char *we = NULL, *wf = NULL;
                int r;
                pv->n_terms = i + 1;
                if (asprintf(&we, "spec.nodeAffinity.required.nodeSelectorTerms[%zu].matchExpressions", i) < 0 ||
                    asprintf(&wf, "spec.nodeAffinity.required.nodeSelectorTerms[%zu].matchFields", i) < 0)
                        return ck_error_set(ret_error, -ENOMEM, "out of memory");
                r = decode_requirements(json_object_get(t, "matchExpressions"), we, &pv->terms[i].expressions,
                                        &pv->terms[i].n_expressions, ret_error);
                if (r >= 0)
                        r = decode_requirements(json_object_get(t, "matchFields"), wf, &pv->terms[i].fields,
                                                &pv->terms[i].n_fields, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

int persistent_volume_decode(const json_t *o, struct persistent_volume *ret, struct ck_error **ret_error) {
        struct persistent_volume pv = {};
        const json_t *md = json_object_get(o, "metadata"), *spec = json_object_get(o, "spec"), *s;
        static const struct {
                const char *key;
                enum pv_source source;
        } sources[] = {
                { "csi", PV_SOURCE_CSI },
                { "local", PV_SOURCE_LOCAL },
                { "hostPath", PV_SOURCE_HOST_PATH },
                { "nfs", PV_SOURCE_NFS },
        };
        const char *key;
        json_t *v;
        int r;

        if (!json_is_object(o) || !json_is_object(spec))
                return ck_error_set(ret_error, -EBADMSG, "not a PersistentVolume");
        r = get_string(md, "name", "metadata", &pv.name, ret_error);
        if (r >= 0)
                r = get_string(json_object_get(spec, "claimRef"), "uid", "spec.claimRef", &pv.claim_uid, ret_error);
        if (r >= 0)
                r = get_string(spec, "volumeMode", "spec", &pv.volume_mode, ret_error);
        if (r >= 0)
                r = get_string(json_object_get(md, "annotations"), "pv.beta.kubernetes.io/gid", "metadata.annotations",
                               &pv.gid, ret_error);
        if (r >= 0)
                r = get_strv(spec, "accessModes", "spec", &pv.access_modes, ret_error);
        if (r >= 0)
                r = get_strv(spec, "mountOptions", "spec", &pv.mount_options, ret_error);
        if (r >= 0)
                r = get_quantity(json_object_get(spec, "capacity"), "spec.capacity", &pv.capacity, ret_error);
        if (r >= 0)
                r = decode_affinity(spec, &pv, ret_error);
        if (r < 0)
                goto fail;
        if (isempty(pv.name)) {
                r = ck_error_set(ret_error, -EBADMSG, "metadata.name: Required value");
                goto fail;
        }
        /* the volume source: the first non-null member that is one of ours, else another kind */
        json_object_foreach((json_t *) spec, key, v) {
                if (!json_is_object(v))
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(sources); i++)
                        if (streq(key, sources[i].key)) {
                                pv.source = sources[i].source;
                                break;
                        }
        }
        if (pv.source == PV_SOURCE_NONE) {
                static const char *const not_sources[] = { "accessModes",      "capacity",
                                                           "claimRef",         "mountOptions",
                                                           "nodeAffinity",     "persistentVolumeReclaimPolicy",
                                                           "storageClassName", "volumeMode" };
                json_object_foreach((json_t *) spec, key, v) {
                        bool skip = !json_is_object(v);
                        for (size_t i = 0; i < ELEMENTSOF(not_sources) && !skip; i++)
                                skip = streq(key, not_sources[i]);
                        if (!skip) {
                                pv.source = PV_SOURCE_OTHER;
                                pv.source_name = strdup(key);
                                break;
                        }
                }
                *ret = pv;
                return 0;
        }
        for (size_t i = 0; i < ELEMENTSOF(sources); i++)
                if (sources[i].source == pv.source)
                        pv.source_name = strdup(sources[i].key);
        s = json_object_get(spec, pv.source_name);
        switch (pv.source) {
        case PV_SOURCE_CSI:
                r = get_string(s, "driver", "spec.csi", &pv.driver, ret_error);
                if (r >= 0)
                        r = get_string(s, "volumeHandle", "spec.csi", &pv.volume_handle, ret_error);
                if (r >= 0)
                        r = get_string(s, "fsType", "spec.csi", &pv.fs_type, ret_error);
                if (r >= 0)
                        r = get_bool(s, "readOnly", "spec.csi", &pv.read_only, ret_error);
                if (r >= 0)
                        r = get_map(s, "volumeAttributes", "spec.csi", &pv.attributes, ret_error);
                if (r >= 0)
                        r = get_secret_ref(s, "nodeStageSecretRef", "spec.csi", &pv.stage_secret, ret_error);
                if (r >= 0)
                        r = get_secret_ref(s, "nodePublishSecretRef", "spec.csi", &pv.publish_secret, ret_error);
                if (r >= 0 && (isempty(pv.driver) || isempty(pv.volume_handle)))
                        r = ck_error_set(ret_error, -EBADMSG, "spec.csi: driver and volumeHandle are required");
                break;
        case PV_SOURCE_LOCAL:
                r = get_string(s, "path", "spec.local", &pv.path, ret_error);
                if (r >= 0)
                        r = get_string(s, "fsType", "spec.local", &pv.fs_type, ret_error);
                if (r >= 0 && isempty(pv.path))
                        r = ck_error_set(ret_error, -EBADMSG, "spec.local.path: Required value");
                break;
        case PV_SOURCE_HOST_PATH:
                r = get_string(s, "path", "spec.hostPath", &pv.path, ret_error);
                if (r >= 0)
                        r = get_string(s, "type", "spec.hostPath", &pv.host_path_type, ret_error);
                if (r >= 0 && isempty(pv.path))
                        r = ck_error_set(ret_error, -EBADMSG, "spec.hostPath.path: Required value");
                break;
        case PV_SOURCE_NFS:
                r = get_string(s, "server", "spec.nfs", &pv.server, ret_error);
                if (r >= 0)
                        r = get_string(s, "path", "spec.nfs", &pv.path, ret_error);
                if (r >= 0)
                        r = get_bool(s, "readOnly", "spec.nfs", &pv.read_only, ret_error);
                if (r >= 0 && (isempty(pv.server) || isempty(pv.path)))
                        r = ck_error_set(ret_error, -EBADMSG, "spec.nfs: server and path are required");
                break;
        default:
                break;
        }
        if (r < 0)
                goto fail;
        *ret = pv;
        return 0;
fail:
        persistent_volume_done(&pv);
        return r;
}

/* ---------------------------------------------------------------- PersistentVolumeClaim */

void persistent_volume_claim_done(struct persistent_volume_claim *c) {
        if (!c)
                return;
        free(c->namespace_);
        free(c->name);
        free(c->uid);
        free(c->phase);
        free(c->volume_name);
        free(c->controller_uid);
        quantity_done(&c->capacity);
        *c = (struct persistent_volume_claim) {};
}

int persistent_volume_claim_decode(const json_t *o, struct persistent_volume_claim *ret, struct ck_error **ret_error) {
        struct persistent_volume_claim c = {};
        const json_t *md = json_object_get(o, "metadata"), *owners, *ref;
        size_t i;
        int r;

        if (!json_is_object(o) || !json_is_object(md))
                return ck_error_set(ret_error, -EBADMSG, "not a PersistentVolumeClaim");
        r = get_string(md, "namespace", "metadata", &c.namespace_, ret_error);
        if (r >= 0)
                r = get_string(md, "name", "metadata", &c.name, ret_error);
        if (r >= 0)
                r = get_string(md, "uid", "metadata", &c.uid, ret_error);
        if (r >= 0)
                r = get_string(json_object_get(o, "status"), "phase", "status", &c.phase, ret_error);
        if (r >= 0)
                r = get_string(json_object_get(o, "spec"), "volumeName", "spec", &c.volume_name, ret_error);
        if (r >= 0)
                r = get_quantity(json_object_get(json_object_get(o, "status"), "capacity"), "status.capacity",
                                 &c.capacity, ret_error);
        if (r < 0) {
                persistent_volume_claim_done(&c);
                return r;
        }
        c.deleting = json_is_string(json_object_get(md, "deletionTimestamp"));
        owners = json_object_get(md, "ownerReferences");
        json_array_foreach(owners, i, ref)
                if (json_is_true(json_object_get(ref, "controller")) && json_is_string(json_object_get(ref, "uid")) &&
                    free_and_strdup(&c.controller_uid, json_string_value(json_object_get(ref, "uid"))) < 0) {
                        persistent_volume_claim_done(&c);
                        return ck_error_set(ret_error, -ENOMEM, "out of memory");
                }
        *ret = c;
        return 0;
}

/* ---------------------------------------------------------------- CSIDriver */

void csi_driver_spec_done(struct csi_driver_spec *d) {
        if (!d)
                return;
        free(d->fs_group_policy);
        strv_free(d->lifecycle_modes);
        *d = (struct csi_driver_spec) {};
}

int csi_driver_spec_decode(const json_t *o, struct csi_driver_spec *ret, struct ck_error **ret_error) {
        struct csi_driver_spec d = { .attach_required = true };
        const json_t *spec = json_object_get(o, "spec");
        int r = 0;

        d.exists = o != NULL;
        if (o) {
                r = get_bool(spec, "attachRequired", "spec", &d.attach_required, ret_error);
                if (r >= 0)
                        r = get_bool(spec, "podInfoOnMount", "spec", &d.pod_info_on_mount, ret_error);
                if (r >= 0)
                        r = get_string(spec, "fsGroupPolicy", "spec", &d.fs_group_policy, ret_error);
                if (r >= 0)
                        r = get_strv(spec, "volumeLifecycleModes", "spec", &d.lifecycle_modes, ret_error);
        }
        if (r >= 0 && !d.fs_group_policy && !(d.fs_group_policy = strdup("ReadWriteOnceWithFSType")))
                r = ck_error_set(ret_error, -ENOMEM, "out of memory");
        if (r >= 0 && !d.lifecycle_modes && strv_extend(&d.lifecycle_modes, "Persistent") < 0)
                r = ck_error_set(ret_error, -ENOMEM, "out of memory");
        if (r < 0) {
                csi_driver_spec_done(&d);
                return r;
        }
        *ret = d;
        return 0;
}
