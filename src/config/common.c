/* SPDX-License-Identifier: Apache-2.0 */
/* Static pods: what upstream's pkg/kubelet/config/common.go does to a pod read from a file or a URL
 * (applyDefaults, tryDecodeSinglePod / tryDecodePodList), used by the file and http sources.
 *
 * UID. A pod without metadata.uid gets md5 hex of
 *     canonical JSON of the pod document || "host:<node>" || "file:<path>"      (file source)
 *     canonical JSON of the pod document || "url:<url>"                         (http source)
 * as upstream (which hashes the decoded object and then the source). "Canonical JSON" is jansson's
 * json_dumps(JSON_SORT_KEYS | JSON_COMPACT) of the document as written (before any defaults): key order,
 * whitespace, comments, YAML vs JSON syntax and quoting style do not change the UID; any change of a value
 * does, and so does the node or the path. The same content at the same path on the same node always gets
 * the same UID, across restarts, so running containers are adopted instead of restarted. */
#include <stdarg.h>
#include <string.h>

#include "apis/manifest.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "basic/log.h"
#include "basic/strmap.h"
#include "basic/time.h"
#include "config/config.h"

static int static_pod_uid(const struct pod *p, const char *node_name, const char *source, const char *source_id,
                          char **ret) {
        _cleanup_free_ char *canon = NULL, *buf = NULL;
        char hex[33];
        int r;

        if (!p->raw)
                return -EINVAL;
        canon = json_dumps(p->raw, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
        if (!canon)
                return -ENOMEM;
        if (streq(source, CONFIG_SOURCE_FILE))
                r = asprintf(&buf, "%shost:%sfile:%s", canon, node_name, strempty(source_id));
        else
                r = asprintf(&buf, "%surl:%s", canon, strempty(source_id));
        if (r < 0)
                return -ENOMEM;
        r = hash_hex("md5", buf, strlen(buf), hex, sizeof(hex));
        if (r < 0)
                return r;
        *ret = strdup(hex);
        return *ret ? 0 : -ENOMEM;
}

/* Copy a map and set three keys, in linear time (strmap_copy would be quadratic in the number of keys). */
static int annotations_with(const struct strmap *src, const char *const kv[static 6], struct strmap *ret) {
        struct strmap m = {};
        size_t n = src->n + 3;

        m.keys = calloc(n, sizeof(char *));
        m.values = calloc(n, sizeof(char *));
        if (!m.keys || !m.values)
                goto oom;
        for (size_t i = 0; i < src->n; i++) {
                m.keys[m.n] = strdup(src->keys[i]);
                m.values[m.n] = strdup(src->values[i]);
                m.n++;
                if (!m.keys[m.n - 1] || !m.values[m.n - 1])
                        goto oom;
        }
        for (size_t j = 0; j < 3; j++) {
                const char *k = kv[2 * j], *v = kv[2 * j + 1];
                size_t i;
                char *nv = strdup(v);
                if (!nv)
                        goto oom;
                for (i = 0; i < m.n; i++)
                        if (streq(m.keys[i], k))
                                break;
                if (i < m.n) {
                        free(m.values[i]);
                        m.values[i] = nv;
                        continue;
                }
                m.keys[m.n] = strdup(k);
                m.values[m.n] = nv;
                m.n++;
                if (!m.keys[m.n - 1])
                        goto oom;
        }
        *ret = m;
        return 0;
oom:
        /* strmap_done frees keys/values [0, n); free the arrays if nothing was added */
        strmap_done(&m);
        free(m.keys);
        free(m.values);
        return -ENOMEM;
}

int pod_config_static_pod_defaults(struct pod *p, const char *node_name, const char *source, const char *source_id) {
        _cleanup_free_ char *uid = NULL, *name = NULL, *ns = NULL, *node = NULL;
        struct strmap annotations = {};
        char seen[64];
        int r;

        if (!p || isempty(node_name) || isempty(source))
                return -EINVAL;

        /* compute everything first, so that a failure leaves the pod as it was */
        if (isempty(p->uid)) {
                r = static_pod_uid(p, node_name, source, source_id, &uid);
                if (r < 0)
                        return r;
        } else {
                uid = strdup(p->uid);
                if (!uid)
                        return -ENOMEM;
        }
        /* generatePodName: "<name>-<lowercased node name>"; a missing name stays missing, so that validation
         * reports it instead of a confusing "-node" */
        if (!isempty(p->name)) {
                if (asprintf(&name, "%s-%s", p->name, node_name) < 0)
                        return -ENOMEM;
                for (char *s = name + strlen(p->name) + 1; *s; s++)
                        if (*s >= 'A' && *s <= 'Z')
                                *s = (char) (*s - 'A' + 'a');
        }
        ns = strdup(isempty(p->namespace_) ? "default" : p->namespace_);
        node = strdup(node_name);
        if (!ns || !node)
                return -ENOMEM;
        format_rfc3339nano((int64_t) (now_realtime_usec() * 1000), seen, sizeof(seen));
        r = annotations_with(&p->annotations,
                             (const char *const[]) { ANNOTATION_CONFIG_HASH, uid, ANNOTATION_CONFIG_SOURCE, source,
                                                     ANNOTATION_CONFIG_SEEN, seen },
                             &annotations);
        if (r < 0)
                return r;

        free(p->uid);
        p->uid = TAKE_PTR(uid);
        if (name) {
                free(p->name);
                p->name = TAKE_PTR(name);
        }
        free(p->namespace_);
        p->namespace_ = TAKE_PTR(ns);
        free(p->spec.node_name);
        p->spec.node_name = TAKE_PTR(node);
        strmap_done(&p->annotations);
        p->annotations = annotations;
        log_v(5, "Static pod %s/%s from %s %s: UID %s", p->namespace_, strna(p->name), source, strna(source_id),
              p->uid);
        return 0;
}

/* "document 2 (pod \"web\")" or "document 1 items[3] (pod \"web\")" */
static char *describe(size_t doc, ssize_t item, const char *name) {
        _cleanup_free_ char *q = NULL;
        char *s;
        int r;

        if (!isempty(name) && asprintf(&q, "\"%s\"", name) < 0)
                return NULL;
        if (item >= 0)
                r = asprintf(&s, "document %zu items[%zd]%s%s%s", doc, item, q ? " (pod " : "", strempty(q),
                             q ? ")" : "");
        else
                r = asprintf(&s, "document %zu%s%s%s", doc, q ? " (pod " : "", strempty(q), q ? ")" : "");
        return r < 0 ? NULL : s;
}

static int fail(struct ck_error **ret_error, size_t doc, ssize_t item, const char *name, const char *fmt, ...)
        _printf_(5, 6);
static int fail(struct ck_error **ret_error, size_t doc, ssize_t item, const char *name, const char *fmt, ...) {
        _cleanup_free_ char *where = describe(doc, item, name), *msg = NULL;

        if (!where || VA_FORMAT(msg, fmt) < 0)
                return -ENOMEM;
        return ck_error_set(ret_error, -EINVAL, "%s: %s", where, msg);
}

int pod_config_static_pods_from_manifest(const char *data, size_t size, const char *node_name, const char *source,
                                         const char *source_id, struct pod_set *ret, struct ck_error **ret_error) {
        _cleanup_free_ size_t *docs = NULL;
        _cleanup_free_ ssize_t *items = NULL;
        _cleanup_ck_error_ struct ck_error *error = NULL;
        struct pod_set set = {};
        int r = 0;

        if (isempty(node_name) || isempty(source))
                return -EINVAL;
        if (size > MANIFEST_MAX_SIZE)
                return ck_error_set(ret_error, -EFBIG, "manifest too large (%zu bytes, at most %u)", size,
                                    MANIFEST_MAX_SIZE);

        r = manifest_parse_with_origin(data, size, &set, &docs, &items, &error);
        if (r < 0)
                goto finish;

        for (size_t i = 0; i < set.n; i++) {
                _cleanup_(field_errors_done) struct field_errors errs = {};
                _cleanup_free_ char *orig = NULL, *detail = NULL;
                struct pod *p = set.pods[i];

                if (p->name) {
                        orig = strdup(p->name);
                        if (!orig) {
                                r = -ENOMEM;
                                goto finish;
                        }
                }
                r = pod_config_static_pod_defaults(p, node_name, source, source_id);
                if (r < 0)
                        goto finish;
                r = pod_validate(p, &errs);
                if (r == -EINVAL) {
                        detail = field_errors_to_string(&errs);
                        r = detail ? fail(&error, docs[i], items[i], orig, "%s", detail) : -ENOMEM;
                }
                if (r < 0)
                        goto finish;

                /* filterInvalidPods: names (name_namespace) must be unique within a source; UIDs as well */
                for (size_t j = 0; j < i; j++) {
                        const struct pod *o = set.pods[j];
                        if (streq(o->name, p->name) && streq(o->namespace_, p->namespace_)) {
                                r = fail(&error, docs[i], items[i], orig,
                                         "duplicate pod name \"%s\" in namespace \"%s\" (also in document %zu)",
                                         p->name, p->namespace_, docs[j]);
                                goto finish;
                        }
                        if (streq(o->uid, p->uid)) {
                                r = fail(&error, docs[i], items[i], orig, "duplicate pod UID %s (also in document %zu)",
                                         p->uid, docs[j]);
                                goto finish;
                        }
                }
        }

        if (ret)
                *ret = set;
        else
                pod_set_done(&set);
        return 0;

finish:
        pod_set_done(&set);
        if (!error && r == -ENOMEM)
                ck_error_set(&error, r, "out of memory");
        if (ret_error) {
                ck_error_free(*ret_error);
                *ret_error = TAKE_PTR(error);
        }
        return r;
}
