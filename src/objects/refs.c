/* SPDX-License-Identifier: Apache-2.0 */
#include "objects/refs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"

void objects_refs_done(struct pod_refs *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n_objs; i++) {
                free(r->objs[i].name);
                free(r->objs[i].where);
        }
        free(r->objs);
        for (size_t i = 0; i < r->n_tokens; i++) {
                free(r->tokens[i].service_account);
                free(r->tokens[i].audience);
                free(r->tokens[i].volume);
        }
        free(r->tokens);
        for (size_t i = 0; i < r->n_certs; i++) {
                free(r->certs[i].volume);
                free(r->certs[i].service_account);
                free(r->certs[i].signer_name);
                free(r->certs[i].key_type);
                json_decref(r->certs[i].user_annotations);
        }
        free(r->certs);
        free(r->runtime_class);
        *r = (struct pod_refs) {};
}

static int add_obj(struct pod_refs *r, const char *kind, const json_t *ref, const char *name_field,
                   enum obj_ref_use use, const char *where) {
        const char *name = json_string_value(json_object_get(ref, name_field));
        struct obj_ref *a;

        if (!json_is_object(ref) || isempty(name))
                return 0;
        a = realloc(r->objs, (r->n_objs + 1) * sizeof(*a));
        if (!a)
                return -ENOMEM;
        r->objs = a;
        a = &a[r->n_objs];
        *a = (struct obj_ref) {
                .kind = kind,
                .name = strdup(name),
                .optional = json_is_true(json_object_get(ref, "optional")),
                .use = use,
                .where = where ? strdup(where) : NULL,
        };
        if (!a->name || (where && !a->where)) {
                free(a->name);
                free(a->where);
                return -ENOMEM;
        }
        r->n_objs++;
        return 0;
}

static int add_token(struct pod_refs *r, const char *sa, const json_t *src, const char *volume) {
        const char *aud = json_string_value(json_object_get(src, "audience"));
        const json_t *e = json_object_get(src, "expirationSeconds");
        int64_t exp = json_is_integer(e) ? json_integer_value(e) : OBJ_TOKEN_DEFAULT_EXPIRATION_SECONDS;
        struct token_ref *a;

        for (size_t i = 0; i < r->n_tokens; i++)
                if (streq(r->tokens[i].audience, strempty(aud)) && r->tokens[i].expiration_seconds == exp)
                        return 0;
        a = realloc(r->tokens, (r->n_tokens + 1) * sizeof(*a));
        if (!a)
                return -ENOMEM;
        r->tokens = a;
        a = &a[r->n_tokens];
        *a = (struct token_ref) { .service_account = strdup(sa),
                                  .audience = strdup(strempty(aud)),
                                  .expiration_seconds = exp,
                                  .volume = strdup(strempty(volume)) };
        if (!a->service_account || !a->audience || !a->volume) {
                free(a->service_account);
                free(a->audience);
                free(a->volume);
                return -ENOMEM;
        }
        r->n_tokens++;
        return 0;
}

static int add_cert(struct pod_refs *r, const char *sa, const json_t *src, const char *volume, size_t index) {
        const json_t *max = json_object_get(src, "maxExpirationSeconds"),
                     *ann = json_object_get(src, "userAnnotations");
        struct cert_ref *a = realloc(r->certs, (r->n_certs + 1) * sizeof(*a));

        if (!a)
                return -ENOMEM;
        r->certs = a;
        a = &a[r->n_certs];
        *a = (struct cert_ref) {
                .volume = strdup(strempty(volume)),
                .index = index,
                .service_account = strdup(sa),
                .signer_name = strdup(strempty(json_string_value(json_object_get(src, "signerName")))),
                .key_type = strdup(strempty(json_string_value(json_object_get(src, "keyType")))),
                .has_max_expiration = json_is_integer(max),
                .max_expiration_seconds = json_is_integer(max) ? (int32_t) json_integer_value(max) : 0,
                .user_annotations = json_is_object(ann) && json_object_size(ann) > 0 ? json_incref((json_t *) ann)
                                                                                     : NULL,
        };
        if (!a->volume || !a->service_account || !a->signer_name || !a->key_type) {
                free(a->volume);
                free(a->service_account);
                free(a->signer_name);
                free(a->key_type);
                json_decref(a->user_annotations);
                return -ENOMEM;
        }
        r->n_certs++;
        return 0;
}

const char *objects_refs_service_account(const json_t *pod) {
        const json_t *spec = json_object_get(pod, "spec");
        const char *sa = json_string_value(json_object_get(spec, "serviceAccountName"));

        if (isempty(sa))
                sa = json_string_value(json_object_get(spec, "serviceAccount"));
        return isempty(sa) ? "default" : sa;
}

static int collect_volumes(struct pod_refs *r, const json_t *pod) {
        const json_t *vols = json_object_get(json_object_get(pod, "spec"), "volumes");
        const json_t *v;
        size_t i;
        int q;

        json_array_foreach(vols, i, v) {
                const char *vname = json_string_value(json_object_get(v, "name"));
                const json_t *sources = json_object_get(json_object_get(v, "projected"), "sources"), *src;
                size_t j;

                if ((q = add_obj(r, "ConfigMap", json_object_get(v, "configMap"), "name", OBJ_REF_VOLUME, vname)) < 0 ||
                    (q = add_obj(r, "Secret", json_object_get(v, "secret"), "secretName", OBJ_REF_VOLUME, vname)) < 0)
                        return q;
                json_array_foreach(sources, j, src) {
                        const json_t *tok = json_object_get(src, "serviceAccountToken");
                        if ((q = add_obj(r, "ConfigMap", json_object_get(src, "configMap"), "name", OBJ_REF_VOLUME,
                                         vname)) < 0 ||
                            (q = add_obj(r, "Secret", json_object_get(src, "secret"), "name", OBJ_REF_VOLUME, vname)) <
                                    0)
                                return q;
                        if (json_is_object(tok) &&
                            (q = add_token(r, objects_refs_service_account(pod), tok, vname)) < 0)
                                return q;
                        if (json_is_object(json_object_get(src, "clusterTrustBundle")))
                                r->trust_bundles = true;
                        if (json_is_object(json_object_get(src, "podCertificate")) &&
                            (q = add_cert(r, objects_refs_service_account(pod), json_object_get(src, "podCertificate"),
                                          vname, j)) < 0)
                                return q;
                }
        }
        return 0;
}

static int collect_containers(struct pod_refs *r, const json_t *list) {
        const json_t *c;
        size_t i;
        int q;

        json_array_foreach(list, i, c) {
                const char *cname = json_string_value(json_object_get(c, "name"));
                const json_t *e;
                size_t j;

                json_array_foreach(json_object_get(c, "envFrom"), j, e)
                        if ((q = add_obj(r, "ConfigMap", json_object_get(e, "configMapRef"), "name", OBJ_REF_ENV,
                                         cname)) < 0 ||
                            (q = add_obj(r, "Secret", json_object_get(e, "secretRef"), "name", OBJ_REF_ENV, cname)) < 0)
                                return q;
                json_array_foreach(json_object_get(c, "env"), j, e) {
                        const json_t *vf = json_object_get(e, "valueFrom");
                        if ((q = add_obj(r, "ConfigMap", json_object_get(vf, "configMapKeyRef"), "name", OBJ_REF_ENV,
                                         cname)) < 0 ||
                            (q = add_obj(r, "Secret", json_object_get(vf, "secretKeyRef"), "name", OBJ_REF_ENV,
                                         cname)) < 0)
                                return q;
                }
        }
        return 0;
}

int objects_refs_collect(const json_t *pod, struct pod_refs *ret) {
        const json_t *spec = json_object_get(pod, "spec"), *s;
        struct pod_refs r = {};
        size_t i;
        int q;

        if ((q = collect_volumes(&r, pod)) < 0 ||
            (q = collect_containers(&r, json_object_get(spec, "initContainers"))) < 0 ||
            (q = collect_containers(&r, json_object_get(spec, "containers"))) < 0 ||
            (q = collect_containers(&r, json_object_get(spec, "ephemeralContainers"))) < 0)
                goto fail;
        json_array_foreach(json_object_get(spec, "imagePullSecrets"), i, s)
                if ((q = add_obj(&r, "Secret", s, "name", OBJ_REF_PULL_SECRET, NULL)) < 0)
                        goto fail;
        r.service_links = !json_is_false(json_object_get(spec, "enableServiceLinks"));
        if (!isempty(json_string_value(json_object_get(spec, "runtimeClassName"))) &&
            !(r.runtime_class = strdup(json_string_value(json_object_get(spec, "runtimeClassName"))))) {
                q = -ENOMEM;
                goto fail;
        }
        *ret = r;
        return 0;
fail:
        objects_refs_done(&r);
        return q;
}

char *objects_not_found_message(const char *kind, const char *name) {
        char *m = NULL;
        /* apierrors.NewNotFound: the resource as the kubelet's managers and listers name it */
        if (asprintf(&m, "%s \"%s\" not found",
                     streq(kind, "ConfigMap")              ? "configmap"
                     : streq(kind, "Secret")               ? "secret"
                     : streq(kind, OBJ_KIND_RUNTIME_CLASS) ? "runtimeclasses.node.k8s.io"
                                                           : "services",
                     name) < 0)
                return NULL;
        return m;
}
