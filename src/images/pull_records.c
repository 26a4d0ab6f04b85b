/* SPDX-License-Identifier: Apache-2.0 */
#include "images/pull_records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/hash.h"
#include "basic/string.h"
#include "basic/time.h"

int pull_record_file_name(const char *key, char *buf, size_t size) {
        char hex[65];
        int r = hash_hex("sha256", key, strlen(key), hex, sizeof(hex));
        if (r < 0)
                return r;
        if ((size_t) snprintf(buf, size, "sha256-%s", hex) >= size)
                return -ENOBUFS;
        return 0;
}

static bool api_version_ok(const char *v) {
        return v && (streq(v, "kubelet.config.k8s.io/v1alpha1") || streq(v, "kubelet.config.k8s.io/v1beta1"));
}

static int load_doc(const char *buf, size_t len, const char *kind, json_t **ret, struct ck_error **ret_error) {
        json_t *doc;

        if (len > PULL_RECORD_MAX_SIZE)
                return ck_error_set(ret_error, -EFBIG, "%s larger than %d bytes", kind, PULL_RECORD_MAX_SIZE);
        doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(doc)) {
                json_decref(doc);
                return ck_error_set(ret_error, -EINVAL, "%s: not a JSON object", kind);
        }
        if (!streq_ptr(json_string_value(json_object_get(doc, "kind")), kind) ||
            !api_version_ok(json_string_value(json_object_get(doc, "apiVersion")))) {
                json_decref(doc);
                return ck_error_set(ret_error, -EINVAL, "not a kubelet.config.k8s.io %s", kind);
        }
        *ret = doc;
        return 0;
}

char *pull_intent_encode(const char *image) {
        json_t *doc = json_pack("{s:s, s:s, s:s}", "kind", "ImagePullIntent", "apiVersion", PULL_RECORD_API_VERSION,
                                "image", image);
        char *s = doc ? json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(doc);
        return s;
}

int pull_intent_decode(const char *buf, size_t len, char **ret_image, struct ck_error **ret_error) {
        json_t *doc = NULL;
        int r = load_doc(buf, len, "ImagePullIntent", &doc, ret_error);
        if (r < 0)
                return r;
        const char *image = json_string_value(json_object_get(doc, "image"));
        if (isempty(image)) {
                json_decref(doc);
                return ck_error_set(ret_error, -EINVAL, "ImagePullIntent: missing image");
        }
        char *copy = strdup(image);
        json_decref(doc);
        if (!copy)
                return -ENOMEM;
        *ret_image = copy;
        return 0;
}

/* every member of a coordinates list is an object of non-empty strings among the fields named */
static bool coords_ok(const json_t *list, bool with_hash) {
        size_t i;
        json_t *e;

        if (!list)
                return true;
        if (!json_is_array(list))
                return false;
        json_array_foreach(list, i, e) {
                const char *key;
                json_t *v;
                if (!json_is_object(e))
                        return false;
                json_object_foreach((json_t *) e, key, v) {
                        if (!json_is_string(v))
                                return false;
                        if (!streq(key, "uid") && !streq(key, "namespace") && !streq(key, "name") &&
                            !(with_hash && streq(key, "credentialHash")))
                                return false;
                }
        }
        return true;
}

int pulled_record_decode(const char *buf, size_t len, json_t **ret_record, struct ck_error **ret_error) {
        json_t *doc = NULL, *map, *entry;
        const char *repo;
        int r = load_doc(buf, len, "ImagePulledRecord", &doc, ret_error);
        if (r < 0)
                return r;
        if (isempty(json_string_value(json_object_get(doc, "imageRef")))) {
                json_decref(doc);
                return ck_error_set(ret_error, -EINVAL, "ImagePulledRecord: missing imageRef");
        }
        map = json_object_get(doc, "credentialMapping");
        if (map && !json_is_object(map)) {
                json_decref(doc);
                return ck_error_set(ret_error, -EINVAL, "ImagePulledRecord: credentialMapping is not an object");
        }
        json_object_foreach(map, repo, entry) {
                json_t *npa = json_object_get(entry, "nodePodsAccessible");
                if (!json_is_object(entry) || (npa && !json_is_boolean(npa)) ||
                    !coords_ok(json_object_get(entry, "kubernetesSecretCoordinates"), true) ||
                    !coords_ok(json_object_get(entry, "kubernetesServiceAccounts"), false)) {
                        /* the message before the document (repo is its key) goes */
                        r = ck_error_set(ret_error, -EINVAL, "ImagePulledRecord: credentialMapping[%s] is invalid",
                                         repo);
                        json_decref(doc);
                        return r;
                }
        }
        *ret_record = doc;
        return 0;
}

char *pulled_record_encode(const json_t *record) {
        return json_dumps(record, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

static bool str_eq(const json_t *o, const char *field, const char *want) {
        const char *v = json_string_value(json_object_get(o, field));
        return !isempty(want) && streq_ptr(v, want);
}

static bool secret_in(const json_t *list, const struct pull_secret_coord *s) {
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
                if (str_eq(e, "uid", s->uid) && str_eq(e, "namespace", s->namespace) && str_eq(e, "name", s->name))
                        return true;
                if (str_eq(e, "credentialHash", s->credential_hash))
                        return true;
        }
        return false;
}

static bool sa_in(const json_t *list, const struct pull_sa_coord *s) {
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
                if (str_eq(e, "uid", s->uid) && str_eq(e, "namespace", s->namespace) && str_eq(e, "name", s->name))
                        return true;
        }
        return false;
}

bool pulled_record_match(const json_t *record, const char *image_repo, const struct pull_creds *c) {
        json_t *entry = json_object_get(json_object_get(record, "credentialMapping"), image_repo);

        if (!entry)
                return false;
        if (json_is_true(json_object_get(entry, "nodePodsAccessible")))
                return true;
        for (size_t i = 0; i < c->n_secrets; i++)
                if (secret_in(json_object_get(entry, "kubernetesSecretCoordinates"), &c->secrets[i]))
                        return true;
        for (size_t i = 0; i < c->n_sas; i++)
                if (sa_in(json_object_get(entry, "kubernetesServiceAccounts"), &c->sas[i]))
                        return true;
        return false;
}

static int add_coord(json_t *list, const char *uid, const char *ns, const char *name, const char *hash) {
        json_t *e = json_pack("{s:s, s:s, s:s}", "uid", uid ?: "", "namespace", ns ?: "", "name", name ?: "");
        if (!e)
                return -ENOMEM;
        if (hash && json_object_set_new(e, "credentialHash", json_string(hash)) < 0) {
                json_decref(e);
                return -ENOMEM;
        }
        return json_array_append_new(list, e) < 0 ? -ENOMEM : 0;
}

static json_t *get_list(json_t *entry, const char *field) {
        json_t *l = json_object_get(entry, field);
        if (l)
                return l;
        l = json_array();
        if (l && json_object_set_new(entry, field, l) < 0)
                return NULL;
        return l;
}

int pulled_record_add(json_t **record, const char *image_ref, const char *image_repo, const struct pull_creds *c,
                      uint64_t now_realtime_usec) {
        char ts[64];
        json_t *rec = *record, *map, *entry;

        if (!rec) {
                rec = json_pack("{s:s, s:s}", "kind", "ImagePulledRecord", "apiVersion", PULL_RECORD_API_VERSION);
                if (!rec)
                        return -ENOMEM;
                *record = rec;
        }
        if (!format_rfc3339(now_realtime_usec, ts, sizeof(ts)) ||
            json_object_set_new(rec, "lastUpdatedTime", json_string(ts)) < 0 ||
            json_object_set_new(rec, "imageRef", json_string(image_ref)) < 0)
                return -ENOMEM;
        map = json_object_get(rec, "credentialMapping");
        if (!map) {
                map = json_object();
                if (!map || json_object_set_new(rec, "credentialMapping", map) < 0)
                        return -ENOMEM;
        }
        entry = json_object_get(map, image_repo);
        if (!entry) {
                entry = json_object();
                if (!entry || json_object_set_new(map, image_repo, entry) < 0)
                        return -ENOMEM;
        }
        if (c->node_pods_accessible) {
                /* node-wide credentials: any pod may use the image; the per-pod lists are moot (as upstream) */
                json_object_clear(entry);
                return json_object_set_new(entry, "nodePodsAccessible", json_true()) < 0 ? -ENOMEM : 0;
        }
        if (json_is_true(json_object_get(entry, "nodePodsAccessible")))
                return 0;
        for (size_t i = 0; i < c->n_secrets; i++) {
                json_t *l = get_list(entry, "kubernetesSecretCoordinates");
                if (!l)
                        return -ENOMEM;
                const struct pull_secret_coord *s = &c->secrets[i];
                size_t j;
                json_t *e;
                bool have = false;
                json_array_foreach(l, j, e)
                        have = have || (str_eq(e, "uid", s->uid) && str_eq(e, "namespace", s->namespace) &&
                                        str_eq(e, "name", s->name) && str_eq(e, "credentialHash", s->credential_hash));
                if (!have && add_coord(l, s->uid, s->namespace, s->name, s->credential_hash) < 0)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_sas; i++) {
                json_t *l = get_list(entry, "kubernetesServiceAccounts");
                if (!l)
                        return -ENOMEM;
                if (!sa_in(l, &c->sas[i]) && add_coord(l, c->sas[i].uid, c->sas[i].namespace, c->sas[i].name, NULL) < 0)
                        return -ENOMEM;
        }
        return 0;
}
