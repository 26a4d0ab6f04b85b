/* SPDX-License-Identifier: Apache-2.0 */
/* Contents of configMap, secret, downwardAPI and projected volumes: see contents.h. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/base64.h"
#include "basic/macro.h"
#include "basic/util.h"
#include "kuberuntime/env.h"
#include "objects/objects.h"
#include "volumes/contents.h"

#define MAX_VALUE_SIZE (4u * 1024 * 1024)

/* ---------------------------------------------------------------- downward API */

/* Go's %q for one value: printable ASCII and UTF-8 as is, \" \\ \a \b \f \n \r \t \v, other bytes \xNN */
static int append_quoted(char **buf, size_t *len, const char *s) {
        size_t need = *len + 4 * strlen(s) + 3;
        char *b = realloc(*buf, need + 1), *o;
        if (!b)
                return -ENOMEM;
        *buf = b;
        o = b + *len;
        *o++ = '"';
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                static const char esc[] = { ['\a'] = 'a', ['\b'] = 'b', ['\f'] = 'f', ['\n'] = 'n',
                                            ['\r'] = 'r', ['\t'] = 't', ['\v'] = 'v' };
                if (*p == '"' || *p == '\\') {
                        *o++ = '\\';
                        *o++ = (char) *p;
                } else if (*p < sizeof(esc) && esc[*p]) {
                        *o++ = '\\';
                        *o++ = esc[*p];
                } else if (*p < 0x20 || *p == 0x7f) {
                        o += sprintf(o, "\\x%02x", *p);
                } else
                        *o++ = (char) *p;
        }
        *o++ = '"';
        *o = '\0';
        *len = (size_t) (o - b);
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* FormatMap: key="value" lines sorted by key, no trailing newline */
static int format_map(const struct strmap *m, char **ret) {
        _cleanup_free_ char **keys = NULL;
        char *buf = NULL;
        size_t len = 0;

        if (m->n == 0)
                return (*ret = strdup("")) ? 0 : -ENOMEM;
        keys = malloc(m->n * sizeof(char *));
        if (!keys)
                return -ENOMEM;
        memcpy(keys, m->keys, m->n * sizeof(char *));
        qsort(keys, m->n, sizeof(char *), cmp_str);
        for (size_t i = 0; i < m->n; i++) {
                size_t kl = strlen(keys[i]);
                char *b = realloc(buf, len + kl + 3);
                if (!b) {
                        free(buf);
                        return -ENOMEM;
                }
                buf = b;
                if (i > 0)
                        buf[len++] = '\n';
                memcpy(buf + len, keys[i], kl);
                len += kl;
                buf[len++] = '=';
                buf[len] = '\0';
                if (append_quoted(&buf, &len, strmap_get(m, keys[i])) < 0) {
                        free(buf);
                        return -ENOMEM;
                }
        }
        *ret = buf;
        return 0;
}

int vol_downward_value(const struct pod *pod, const struct downward_item *it, const struct kr_build_context *ctx,
                       char **ret) {
        char *v = NULL;

        if (it->field_path) {
                const char *f = it->field_path;
                if (streq(f, "metadata.name"))
                        v = strdup(strempty(pod->name));
                else if (streq(f, "metadata.namespace"))
                        v = strdup(strempty(pod->namespace_));
                else if (streq(f, "metadata.uid"))
                        v = strdup(strempty(pod->uid));
                else if (streq(f, "metadata.labels"))
                        return format_map(&pod->labels, ret);
                else if (streq(f, "metadata.annotations"))
                        return format_map(&pod->annotations, ret);
                else if (startswith(f, "metadata.labels['") || startswith(f, "metadata.annotations['")) {
                        bool labels = startswith(f, "metadata.labels['");
                        const char *k = f + (labels ? strlen("metadata.labels['") : strlen("metadata.annotations['"));
                        _cleanup_free_ char *key = strndup(k, strlen(k) >= 2 ? strlen(k) - 2 : 0);
                        if (!key)
                                return -ENOMEM;
                        v = strdup(strempty(strmap_get(labels ? &pod->labels : &pod->annotations, key)));
                } else
                        return -EINVAL;
                if (!v)
                        return -ENOMEM;
                *ret = v;
                return 0;
        }
        if (it->has_resource_field_ref) {
                const struct container *c = kr_find_container(pod, it->container_name);
                if (!c)
                        return -ESRCH;
                return kr_container_resource_value(c, it->resource, it->divisor.str ? &it->divisor : NULL, ctx, ret);
        }
        return -EINVAL;
}

/* ---------------------------------------------------------------- payloads */

static int set_msg(char **m, const char *fmt, ...) _printf_(2, 3);
static int set_msg(char **m, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;
        int r;
        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        free(*m);
        *m = s;
        return 0;
}

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
                          const struct kr_build_context *ctx, struct vol_payload *p, char **msg) {
        const char *kind = secret ? "Secret" : "ConfigMap", *fetch_msg = NULL;
        json_t *obj = NULL;
        int r;

        r = pod_objects_lookup(ctx->objects, kind, pod->namespace_, o->name, &obj, &fetch_msg);
        if (r == -ENOENT) {
                if (o->optional)
                        return 0;
                return set_msg(msg, "%s \"%s\" not found", secret ? "secret" : "configmap", o->name) < 0 ? -ENOMEM : r;
        }
        if (r < 0)
                return set_msg(msg, "cannot get %s \"%s\": %s", secret ? "secret" : "configmap", o->name,
                               fetch_msg ? fetch_msg : strerror(-r)) < 0 ? -ENOMEM : r;
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
                                        return set_msg(msg, "%s \"%s\": key %s: %s", secret ? "secret" : "configmap",
                                                       o->name, k, r == -EINVAL ? "illegal base64 data" : strerror(-r)) < 0
                                                       ? -ENOMEM : r;
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
                        return set_msg(msg, "%s references non-existent %s key: %s", secret ? "secret" : "configmap",
                                       secret ? "secret" : "config", it->key) < 0 ? -ENOMEM : -ENOENT;
                }
                if (r < 0)
                        return set_msg(msg, "%s \"%s\": key %s: %s", secret ? "secret" : "configmap", o->name, it->key,
                                       r == -EINVAL ? "illegal base64 data" : strerror(-r)) < 0 ? -ENOMEM : r;
                r = vol_payload_add(p, it->path, val, size, it->has_mode ? it->mode : default_mode);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int downward_payload(const struct pod *pod, const struct downward_volume *d, int default_mode,
                            const struct kr_build_context *ctx, struct vol_payload *p, char **msg) {
        for (size_t i = 0; i < d->n_items; i++) {
                const struct downward_item *it = &d->items[i];
                _cleanup_free_ char *v = NULL;
                int r = vol_downward_value(pod, it, ctx, &v);
                if (r < 0)
                        return set_msg(msg, "unable to get the value of %s for downward API file \"%s\": %s",
                                       it->field_path ? it->field_path : strna(it->resource), it->path,
                                       r == -ESRCH ? "container not found" : strerror(-r)) < 0 ? -ENOMEM : r;
                r = vol_payload_add(p, it->path, v, strlen(v), it->has_mode ? it->mode : default_mode);
                if (r < 0)
                        return r;
        }
        return 0;
}

int vol_volume_payload(const struct pod *pod, const struct volume *v, const struct kr_build_context *ctx,
                       struct vol_payload *ret, char **ret_message) {
        struct vol_payload p = {};
        int r = 0;

        switch (v->type) {
        case VOLUME_CONFIG_MAP:
        case VOLUME_SECRET:
                r = object_payload(pod, &v->object, v->type == VOLUME_SECRET, v->object.default_mode, ctx, &p, ret_message);
                break;
        case VOLUME_DOWNWARD_API:
                r = downward_payload(pod, &v->downward, v->downward.default_mode, ctx, &p, ret_message);
                break;
        case VOLUME_PROJECTED:
                for (size_t i = 0; r >= 0 && i < v->n_sources; i++) {
                        const struct projection *s = &v->sources[i];
                        int mode = v->projected_default_mode;
                        switch (s->type) {
                        case PROJECTION_CONFIG_MAP:
                        case PROJECTION_SECRET:
                                r = object_payload(pod, &s->object, s->type == PROJECTION_SECRET, mode, ctx, &p,
                                                   ret_message);
                                break;
                        case PROJECTION_DOWNWARD_API:
                                r = downward_payload(pod, &s->downward, mode, ctx, &p, ret_message);
                                break;
                        case PROJECTION_SERVICE_ACCOUNT_TOKEN: {
                                const char *sa = !isempty(pod->spec.service_account_name) ? pod->spec.service_account_name
                                                                                          : "default";
                                const char *fetch_msg = NULL;
                                json_t *st = NULL, *tok;
                                r = pod_objects_lookup_token(ctx->objects, pod->namespace_, sa, strempty(s->token_audience),
                                                             s->token_expiration_seconds, &st, &fetch_msg);
                                if (r < 0) {
                                        r = set_msg(ret_message, "failed to fetch token: %s",
                                                    fetch_msg ? fetch_msg
                                                              : r == -ENOENT ? "no token for the service account (no API server)"
                                                                             : strerror(-r)) < 0 ? -ENOMEM : r;
                                        break;
                                }
                                tok = json_object_get(st, "token");
                                if (!json_is_string(tok)) {
                                        r = set_msg(ret_message, "failed to fetch token: no token in the TokenRequest status") < 0
                                                    ? -ENOMEM : -EINVAL;
                                        break;
                                }
                                r = vol_payload_add(&p, s->token_path, json_string_value(tok), json_string_length(tok), mode);
                                break;
                        }
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
