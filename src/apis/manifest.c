/* SPDX-License-Identifier: Apache-2.0 */
/* Manifests: YAML (or JSON) text → JSON documents (basic/yaml_json.c) → pods. */
#include "apis/manifest.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/yaml_json.h"

/* ---- manifests ---- */

static const char *object_name(json_t *obj) {
        json_t *n = json_object_get(json_object_get(obj, "metadata"), "name");
        return json_is_string(n) && json_string_length(n) > 0 ? json_string_value(n) : NULL;
}

static int decode_one(json_t *obj, size_t doc, ssize_t item, struct pod **ret, struct ck_error **ret_error) {
        _cleanup_(field_errors_done) struct field_errors errs = {};
        _cleanup_free_ char *where = NULL, *detail = NULL, *qname = NULL;
        const char *name = object_name(obj);
        struct pod *p = NULL;
        int r;

        r = pod_decode(obj, &p, &errs);
        if (r >= 0) {
                r = pod_apply_defaults_checked(p);
                if (r >= 0) {
                        *ret = p;
                        return 0;
                }
                pod_free(p);
                return r;
        }
        if (r != -EINVAL)
                return r;
        detail = field_errors_to_string(&errs);
        if (name)
                qname = go_quote(name);
        if (!detail || (name && !qname))
                return -ENOMEM;
        if (item >= 0)
                r = asprintf(&where, "document %zu items[%zd]%s%s%s", doc, item, qname ? " (pod " : "", strempty(qname),
                             qname ? ")" : "");
        else
                r = asprintf(&where, "document %zu%s%s%s", doc, qname ? " (pod " : "", strempty(qname),
                             qname ? ")" : "");
        if (r < 0)
                return -ENOMEM;
        return ck_error_set(ret_error, -EINVAL, "%s: %s", where, detail);
}

struct origins {
        size_t *docs;
        ssize_t *items;
        size_t n;
};

static int origins_add(struct origins *o, size_t doc, ssize_t item) {
        size_t *d = reallocarray(o->docs, o->n + 1, sizeof(*d));
        ssize_t *i;
        if (!d)
                return -ENOMEM;
        o->docs = d;
        i = reallocarray(o->items, o->n + 1, sizeof(*i));
        if (!i)
                return -ENOMEM;
        o->items = i;
        o->docs[o->n] = doc;
        o->items[o->n] = item;
        o->n++;
        return 0;
}

static int doc_error(struct ck_error **ret_error, size_t doc, const char *fmt, ...) _printf_(3, 4);
static int doc_error(struct ck_error **ret_error, size_t doc, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;

        if (VA_FORMAT(msg, fmt) < 0)
                return -ENOMEM;
        return ck_error_set(ret_error, -EINVAL, "document %zu: %s", doc, msg);
}

int manifest_parse_with_origin(const char *data, size_t size, struct pod_set *ret, size_t **ret_docs,
                               ssize_t **ret_items, struct ck_error **ret_error) {
        _cleanup_ck_error_ struct ck_error *error = NULL;
        struct pod_set set = {};
        struct origins o = {};
        json_auto_t *docs = NULL;
        json_t *doc;
        size_t i;
        int r;

        r = yaml_to_json_docs(data, size, &docs, &error);
        if (r < 0)
                goto fail;

        json_array_foreach(docs, i, doc) {
                const size_t n = i + 1;
                json_t *av, *kv;
                const char *api, *kind;

                if (!json_is_object(doc)) {
                        r = doc_error(&error, n, "expected a v1 Pod or PodList object, not a YAML %s",
                                      json_is_array(doc) ? "sequence" : "scalar");
                        goto fail;
                }
                av = json_object_get(doc, "apiVersion");
                kv = json_object_get(doc, "kind");
                if (!json_is_string(kv) || json_string_length(kv) == 0) {
                        r = doc_error(&error, n, "Object 'Kind' is missing");
                        goto fail;
                }
                if (!json_is_string(av) || json_string_length(av) == 0) {
                        r = doc_error(&error, n, "Object 'apiVersion' is missing");
                        goto fail;
                }
                api = json_string_value(av);
                kind = json_string_value(kv);
                if (!streq(api, "v1") || (!streq(kind, "Pod") && !streq(kind, "PodList"))) {
                        _cleanup_free_ char *qk = go_quote(kind), *qa = go_quote(api);
                        r = doc_error(&error, n,
                                      "kind %s of apiVersion %s is not supported (expected v1 Pod or PodList)",
                                      qk ? qk : "", qa ? qa : "");
                        goto fail;
                }

                if (streq(kind, "Pod")) {
                        struct pod *p = NULL;
                        r = decode_one(doc, n, -1, &p, &error);
                        if (r < 0)
                                goto fail;
                        r = pod_set_add(&set, p);
                        if (r >= 0)
                                r = origins_add(&o, n, -1);
                        if (r < 0)
                                goto fail;
                } else {
                        json_t *items = json_object_get(doc, "items"), *it;
                        size_t j;

                        if (items && !json_is_null(items) && !json_is_array(items)) {
                                r = doc_error(&error, n, "items: Invalid value: \"%s\": must be of type array",
                                              json_is_object(items) ? "object" : "scalar");
                                goto fail;
                        }
                        json_array_foreach(items, j, it) {
                                struct pod *p = NULL;
                                r = decode_one(it, n, (ssize_t) j, &p, &error);
                                if (r < 0)
                                        goto fail;
                                r = pod_set_add(&set, p);
                                if (r >= 0)
                                        r = origins_add(&o, n, (ssize_t) j);
                                if (r < 0)
                                        goto fail;
                        }
                }
        }

        if (ret)
                *ret = set;
        else
                pod_set_done(&set);
        if (ret_docs)
                *ret_docs = TAKE_PTR(o.docs);
        if (ret_items)
                *ret_items = TAKE_PTR(o.items);
        free(o.docs);
        free(o.items);
        return 0;

fail:
        pod_set_done(&set);
        free(o.docs);
        free(o.items);
        if (r == -ENOMEM && !error)
                ck_error_set(&error, r, "out of memory");
        ck_error_pass(ret_error, &error);
        return r;
}

int manifest_parse(const char *data, size_t size, struct pod_set *ret, struct ck_error **ret_error) {
        return manifest_parse_with_origin(data, size, ret, NULL, NULL, ret_error);
}
