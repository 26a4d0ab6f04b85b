/* SPDX-License-Identifier: Apache-2.0 */
/* JSON (already converted from YAML) → struct pod.
 *
 * As the apiserver's non-strict decoder: unknown fields are ignored, null means "not set", and a value of
 * the wrong type is an error naming the field ("spec.containers: Invalid value: \"string\": must be of type
 * array"). Enumerations the kubelet keeps as C enums (restartPolicy, imagePullPolicy,
 * terminationMessagePolicy) are checked here with the apiserver's validation wording, since an unknown value
 * has no C representation. Resource quantities are parsed here too (Quantity.UnmarshalJSON). All errors are
 * collected, not just the first. */
#include <math.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "apis/pod.h"
#include "apis/pod_volumes.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/strv.h"
#include "basic/time.h"

/* Sizes beyond these are refused: a kubelet has no business with 10000 containers. */
#define MAX_CONTAINERS 1000

/* Record "<path>: Invalid value: \"<type>\": must be of type <expected>". Returns 0, or -ENOMEM. */
int dec_type_error(struct field_errors *e, const char *path, const json_t *v, const char *expected) {
        return field_errors_add(e, path, "Invalid value: \"%s\": must be of type %s", json_type_name(v), expected);
}

int dec_child_error(struct field_errors *e, const char *parent, const char *key, const json_t *v,
                    const char *expected) {
        _cleanup_free_ char *p = path_child(parent, key);
        if (!p)
                return -ENOMEM;
        return dec_type_error(e, p, v, expected);
}

/* A JSON value with no meaning ("not set"): absent or null. */
json_t *dec_get(json_t *obj, const char *key) {
        json_t *v = json_object_get(obj, key);
        return json_is_null(v) ? NULL : v;
}

/* NULL when absent or null */
static int dec_dup_string(struct field_errors *e, const char *path, json_t *v, char **ret) {
        char *s;

        if (!json_is_string(v))
                return dec_type_error(e, path, v, "string");
        if (strlen(json_string_value(v)) != json_string_length(v))
                return field_errors_add(e, path, "Invalid value: must not contain NUL characters");
        s = strdup(json_string_value(v));
        if (!s)
                return -ENOMEM;
        free(*ret);
        *ret = s;
        return 0;
}

int dec_get_string(struct field_errors *e, json_t *obj, const char *parent, const char *key, char **ret) {
        _cleanup_free_ char *p = NULL;
        json_t *v = dec_get(obj, key);

        if (!v)
                return 0;
        if (json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v)) {
                char *s = strdup(json_string_value(v));
                if (!s)
                        return -ENOMEM;
                free(*ret);
                *ret = s;
                return 0;
        }
        p = path_child(parent, key);
        if (!p)
                return -ENOMEM;
        return dec_dup_string(e, p, v, ret);
}

int dec_get_bool(struct field_errors *e, json_t *obj, const char *parent, const char *key, bool *ret) {
        json_t *v = dec_get(obj, key);
        if (!v)
                return 0;
        if (!json_is_boolean(v))
                return dec_child_error(e, parent, key, v, "boolean");
        *ret = json_is_true(v);
        return 0;
}

/* Integers; a number with no fractional part (80.0) is accepted too, as YAML tools often produce those. */
int dec_get_integer(struct field_errors *e, json_t *obj, const char *parent, const char *key, int64_t min, int64_t max,
                    const char *type, bool *ret_set, int64_t *ret) {
        json_t *v = dec_get(obj, key);
        int64_t i;

        if (!v)
                return 0;
        if (json_is_integer(v))
                i = json_integer_value(v);
        else if (json_is_real(v) && isfinite(json_real_value(v)) && floor(json_real_value(v)) == json_real_value(v) &&
                 fabs(json_real_value(v)) < 9.2e18)
                i = (int64_t) json_real_value(v);
        else
                return dec_child_error(e, parent, key, v, "integer");
        if (i < min || i > max) {
                _cleanup_free_ char *p = path_child(parent, key);
                if (!p)
                        return -ENOMEM;
                return field_errors_add(e, p, "Invalid value: %lld: must be of type %s", (long long) i, type);
        }
        *ret = i;
        if (ret_set)
                *ret_set = true;
        return 0;
}

int dec_get_int32(struct field_errors *e, json_t *obj, const char *parent, const char *key, int32_t *ret) {
        int64_t v = *ret;
        int r = dec_get_integer(e, obj, parent, key, INT32_MIN, INT32_MAX, "int32", NULL, &v);
        *ret = (int32_t) v;
        return r;
}

int dec_get_object(struct field_errors *e, json_t *obj, const char *parent, const char *key, json_t **ret) {
        json_t *v = dec_get(obj, key);
        *ret = NULL;
        if (!v)
                return 0;
        if (!json_is_object(v))
                return dec_child_error(e, parent, key, v, "object");
        *ret = v;
        return 0;
}

int dec_get_array(struct field_errors *e, json_t *obj, const char *parent, const char *key, size_t max, json_t **ret) {
        json_t *v = dec_get(obj, key);
        *ret = NULL;
        if (!v)
                return 0;
        if (!json_is_array(v))
                return dec_child_error(e, parent, key, v, "array");
        if (json_array_size(v) > max) {
                _cleanup_free_ char *p = path_child(parent, key);
                if (!p)
                        return -ENOMEM;
                return field_errors_add(e, p, "Too many: %zu: must have at most %zu items", json_array_size(v), max);
        }
        *ret = v;
        return 0;
}

int dec_get_strv(struct field_errors *e, json_t *obj, const char *parent, const char *key, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *p = NULL;
        json_t *a, *v;
        size_t i;
        int r;

        r = dec_get_array(e, obj, parent, key, MAX_LIST_ITEMS, &a);
        if (r < 0 || !a)
                return r;
        p = path_child(parent, key);
        if (!p)
                return -ENOMEM;
        l = calloc(1, sizeof(char *)); /* an empty list stays an empty list, not NULL */
        if (!l)
                return -ENOMEM;
        json_array_foreach(a, i, v) {
                _cleanup_free_ char *ip = NULL, *s = NULL;
                ip = path_index(p, i);
                if (!ip)
                        return -ENOMEM;
                r = dec_dup_string(e, ip, v, &s);
                if (r < 0)
                        return r;
                if (s) {
                        r = strv_push(&l, TAKE_PTR(s));
                        if (r < 0)
                                return r;
                }
        }
        strv_free(*ret);
        *ret = TAKE_PTR(l);
        return 0;
}

/* Append to a strmap without strmap_set's linear duplicate scan: JSON object keys are unique already, and a
 * map with tens of thousands of labels must not cost a quadratic number of comparisons. */
static int strmap_append(struct strmap *m, const char *k, char *v /* takes ownership */) {
        _cleanup_free_ char *value = v, *key = strdup(k);
        char **ks, **vs;

        if (!key)
                return -ENOMEM;
        /* grow in powers of two */
        if (m->n == 0 || (m->n >= 4 && (m->n & (m->n - 1)) == 0)) {
                size_t cap = m->n ? m->n * 2 : 4;
                ks = reallocarray(m->keys, cap, sizeof(char *));
                if (!ks)
                        return -ENOMEM;
                m->keys = ks;
                vs = reallocarray(m->values, cap, sizeof(char *));
                if (!vs)
                        return -ENOMEM;
                m->values = vs;
        }
        m->keys[m->n] = TAKE_PTR(key);
        m->values[m->n] = TAKE_PTR(value);
        m->n++;
        return 0;
}

int dec_get_string_map(struct field_errors *e, json_t *obj, const char *parent, const char *key, struct strmap *ret) {
        _cleanup_free_ char *p = NULL;
        const char *k;
        json_t *m, *v;
        int r;

        r = dec_get_object(e, obj, parent, key, &m);
        if (r < 0 || !m)
                return r;
        p = path_child(parent, key);
        if (!p)
                return -ENOMEM;
        json_object_foreach(m, k, v) {
                _cleanup_free_ char *kp = NULL, *s = NULL;
                if (json_is_null(v))
                        continue;
                kp = path_key(p, k);
                if (!kp)
                        return -ENOMEM;
                r = dec_dup_string(e, kp, v, &s);
                if (r < 0)
                        return r;
                if (s) {
                        r = strmap_append(ret, k, TAKE_PTR(s));
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int dec_get_timestamp(struct field_errors *e, json_t *obj, const char *parent, const char *key, bool *ret_set,
                             int64_t *ret) {
        _cleanup_free_ char *p = NULL;
        json_t *v = dec_get(obj, key);
        int64_t t;

        if (!v)
                return 0;
        p = path_child(parent, key);
        if (!p)
                return -ENOMEM;
        if (!json_is_string(v))
                return dec_type_error(e, p, v, "string");
        if (parse_rfc3339(json_string_value(v), &t) < 0) {
                _cleanup_free_ char *q = go_quote(json_string_value(v));
                if (!q)
                        return -ENOMEM;
                return field_errors_add(e, p, "Invalid value: %s: must be an RFC 3339 date-time", q);
        }
        *ret = t;
        if (ret_set)
                *ret_set = true;
        return 0;
}

/* "Unsupported value: \"X\": supported values: \"A\", \"B\"" */
/* "<parent>.<key>: Unsupported value: \"v\": supported values: ..." */
static int dec_unsupported(struct field_errors *e, const char *parent, const char *key, const char *value,
                           const char *supported) {
        _cleanup_free_ char *p = path_child(parent, key), *q = go_quote(value);
        if (!p || !q)
                return -ENOMEM;
        return field_errors_add(e, p, "Unsupported value: %s: supported values: %s", q, supported);
}

/* ---- resources ---- */

static int resource_list_add(struct resource_list *l, const char *name, struct quantity *q) {
        char **names, *n;
        struct quantity *values;

        n = strdup(name);
        if (!n)
                return -ENOMEM;
        names = reallocarray(l->names, l->n + 1, sizeof(*names));
        if (names)
                l->names = names;
        values = reallocarray(l->values, l->n + 1, sizeof(*values));
        if (values)
                l->values = values;
        if (!names || !values) {
                free(n);
                return -ENOMEM;
        }
        l->names[l->n] = n;
        l->values[l->n] = *q;
        *q = (struct quantity) {};
        l->n++;
        return 0;
}

/* The shortest "%.*g" that reads back as the same double, like Go's strconv 'g' -1. */
static void format_double(double d, char *buf, size_t size) {
        for (int prec = 1; prec <= 17; prec++) {
                snprintf(buf, size, "%.*g", prec, d);
                if (strtod(buf, NULL) == d)
                        return;
        }
}

/* Quantity.UnmarshalJSON: a string or a number, spaces trimmed, parsed with ParseQuantity's rules and
 * messages. */
/* A Quantity (Quantity.UnmarshalJSON): on success ret->str is set; an error is recorded and leaves ret as is. */
static int dec_quantity(struct field_errors *e, const char *path, json_t *v, struct quantity *ret) {
        _cleanup_free_ char *trimmed = NULL, *quoted = NULL;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        const char *s;
        size_t a = 0, b;
        char num[64];
        int r;

        if (json_is_string(v))
                s = json_string_value(v);
        else if (json_is_integer(v)) {
                snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
                s = num;
        } else if (json_is_real(v)) {
                format_double(json_real_value(v), num, sizeof(num));
                s = num;
        } else
                return dec_type_error(e, path, v, "string");
        b = strlen(s);
        while (a < b && strchr(" \t\n\r\v\f", s[a]))
                a++;
        while (b > a && strchr(" \t\n\r\v\f", s[b - 1]))
                b--;
        trimmed = strndup(s + a, b - a);
        if (!trimmed)
                return -ENOMEM;
        r = quantity_parse_exact(trimmed, NULL, NULL, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                quoted = go_quote(s);
                if (!quoted)
                        return -ENOMEM;
                return field_errors_add(e, path, "Invalid value: %s: %s", quoted, ck_error_message(why));
        }
        return quantity_parse(trimmed, ret);
}

int dec_get_quantity(struct field_errors *e, json_t *obj, const char *parent, const char *key, struct quantity *ret) {
        _cleanup_free_ char *p = NULL;
        json_t *v = dec_get(obj, key);

        if (!v)
                return 0;
        p = path_child(parent, key);
        if (!p)
                return -ENOMEM;
        return dec_quantity(e, p, v, ret);
}

static int decode_resource_list(struct field_errors *e, json_t *obj, const char *parent, const char *key,
                                struct resource_list *ret);

/* spec.resources (pod-level resources) */
static int decode_pod_resources(struct field_errors *e, json_t *spec, struct pod_spec *s) {
        json_t *res = NULL, *claims;
        int r;

        r = dec_get_object(e, spec, "spec", "resources", &res);
        if (r < 0 || !res)
                return r;
        s->has_resources = true;
        claims = json_object_get(res, "claims");
        s->resources_has_claims = claims && !json_is_null(claims);
        r = decode_resource_list(e, res, "spec.resources", "limits", &s->resources.limits);
        if (r >= 0)
                r = decode_resource_list(e, res, "spec.resources", "requests", &s->resources.requests);
        return r;
}

static int decode_resource_list(struct field_errors *e, json_t *obj, const char *parent, const char *key,
                                struct resource_list *ret) {
        _cleanup_free_ char *p = NULL;
        const char *k;
        json_t *m, *v;
        int r;

        r = dec_get_object(e, obj, parent, key, &m);
        if (r < 0 || !m)
                return r;
        p = path_child(parent, key);
        if (!p)
                return -ENOMEM;
        json_object_foreach(m, k, v) {
                _cleanup_free_ char *kp = NULL;
                struct quantity q = {};

                if (json_is_null(v))
                        continue;
                kp = path_key(p, k);
                if (!kp)
                        return -ENOMEM;
                r = dec_quantity(e, kp, v, &q);
                if (r < 0)
                        return r;
                if (!q.str)
                        continue; /* an error, recorded */
                if (resource_list_get(ret, k)) {
                        quantity_done(&q);
                        continue;
                }
                r = resource_list_add(ret, k, &q);
                if (r < 0) {
                        quantity_done(&q);
                        return r;
                }
        }
        return 0;
}

/* ---- containers ---- */

/* A list of objects, at most max: every element must be an object; fn decodes one into an item. Items are
 * allocated for the whole list at once. aligned: item i is element i (a non-object leaves a zeroed item
 * behind), so that later stages name the document's index; else the items are the objects only, in order. */
static int decode_list(struct field_errors *e, json_t *obj, const char *parent, const char *key, size_t max,
                       bool aligned, size_t item_size, void **ret_items, size_t *ret_n, decode_item_fn fn) {
        _cleanup_free_ char *p = NULL;
        json_t *a, *v;
        size_t i;
        int r;

        r = dec_get_array(e, obj, parent, key, max, &a);
        if (r < 0 || !a || json_array_size(a) == 0)
                return r;
        p = path_child(parent, key);
        if (!p)
                return -ENOMEM;
        *ret_items = calloc(json_array_size(a), item_size);
        if (!*ret_items)
                return -ENOMEM;
        json_array_foreach(a, i, v) {
                _cleanup_free_ char *ip = path_index(p, i);
                size_t at;

                if (!ip)
                        return -ENOMEM;
                if (!json_is_object(v)) {
                        r = dec_type_error(e, ip, v, "object");
                        if (r < 0)
                                return r;
                        continue;
                }
                at = aligned ? i : *ret_n;
                *ret_n = at + 1;
                r = fn(e, v, ip, (char *) *ret_items + at * item_size);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A list of objects: every element must be an object; fn decodes one into the next item (the array grows
 * only for objects). */
int dec_object_list(struct field_errors *e, json_t *obj, const char *parent, const char *key, size_t item_size,
                    void **ret_items, size_t *ret_n, decode_item_fn fn) {
        return decode_list(e, obj, parent, key, MAX_LIST_ITEMS, false, item_size, ret_items, ret_n, fn);
}

static int decode_env_var(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct env_var *ev = item;
        int r;

        r = dec_get_string(e, v, ip, "name", &ev->name);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "value", &ev->value);
        if (r >= 0)
                r = dec_env_var_source(e, v, ip, &ev->value_from);
        return r;
}

static int decode_env(struct field_errors *e, json_t *c, const char *cpath, struct container *ret) {
        return dec_object_list(e, c, cpath, "env", sizeof(struct env_var), (void **) &ret->env, &ret->n_env,
                               decode_env_var);
}

static int decode_port(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct container_port *cp = item;
        int r;

        r = dec_get_string(e, v, ip, "name", &cp->name);
        if (r >= 0)
                r = dec_get_int32(e, v, ip, "containerPort", &cp->container_port);
        if (r >= 0)
                r = dec_get_int32(e, v, ip, "hostPort", &cp->host_port);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "protocol", &cp->protocol);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "hostIP", &cp->host_ip);
        if (r < 0)
                return r;
        if (cp->protocol && cp->protocol[0] == '\0')
                cp->protocol = mfree(cp->protocol);
        return 0;
}

static int decode_ports(struct field_errors *e, json_t *c, const char *cpath, struct container *ret) {
        return dec_object_list(e, c, cpath, "ports", sizeof(struct container_port), (void **) &ret->ports,
                               &ret->n_ports, decode_port);
}

/* ---- probes ---- */

int dec_get_int_or_string(struct field_errors *e, json_t *obj, const char *parent, const char *key,
                          struct int_or_string *ret) {
        json_t *v = dec_get(obj, key);

        if (!v)
                return 0;
        if (json_is_string(v)) {
                ret->is_string = true;
                return dec_get_string(e, obj, parent, key, &ret->str_val);
        }
        if (!json_is_integer(v) && !json_is_real(v))
                return dec_child_error(e, parent, key, v, "int or string");
        ret->is_string = false;
        return dec_get_int32(e, obj, parent, key, &ret->int_val);
}

static int decode_http_header(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct http_header *hh = item;
        int r = dec_get_string(e, v, ip, "name", &hh->name);
        return r < 0 ? r : dec_get_string(e, v, ip, "value", &hh->value);
}

static int decode_http_headers(struct field_errors *e, json_t *h, const char *hpath, struct probe *p) {
        return dec_object_list(e, h, hpath, "httpHeaders", sizeof(struct http_header), (void **) &p->http_headers,
                               &p->n_http_headers, decode_http_header);
}

static int decode_probe(struct field_errors *e, json_t *c, const char *cpath, const char *key, struct probe **ret) {
        _cleanup_free_ char *pp = NULL, *hp = NULL;
        struct probe *p;
        json_t *o, *h;
        int r;

        r = dec_get_object(e, c, cpath, key, &o);
        if (r < 0 || !o)
                return r;
        pp = path_child(cpath, key);
        p = calloc(1, sizeof(*p));
        if (!pp || !p) {
                free(p);
                return -ENOMEM;
        }
        *ret = p; /* owned by the container from here on */

        r = dec_get_object(e, o, pp, "exec", &h);
        if (r >= 0 && h) {
                _cleanup_free_ char *ep = path_child(pp, "exec");
                if (!ep)
                        return -ENOMEM;
                if (p->handler == PROBE_HANDLER_NONE)
                        p->handler = PROBE_HANDLER_EXEC;
                p->n_handlers++;
                r = dec_get_strv(e, h, ep, "command", &p->exec_command);
        }
        if (r >= 0)
                r = dec_get_object(e, o, pp, "httpGet", &h);
        if (r >= 0 && h) {
                hp = path_child(pp, "httpGet");
                if (!hp)
                        return -ENOMEM;
                if (p->handler == PROBE_HANDLER_NONE)
                        p->handler = PROBE_HANDLER_HTTP_GET;
                p->n_handlers++;
                r = dec_get_string(e, h, hp, "host", &p->host);
                if (r >= 0)
                        r = dec_get_int_or_string(e, h, hp, "port", &p->port);
                if (r >= 0)
                        r = dec_get_string(e, h, hp, "path", &p->path);
                if (r >= 0)
                        r = dec_get_string(e, h, hp, "scheme", &p->scheme);
                if (r >= 0)
                        r = decode_http_headers(e, h, hp, p);
        }
        if (r >= 0)
                r = dec_get_object(e, o, pp, "tcpSocket", &h);
        if (r >= 0 && h) {
                _cleanup_free_ char *tp = path_child(pp, "tcpSocket");
                if (!tp)
                        return -ENOMEM;
                if (p->handler == PROBE_HANDLER_NONE)
                        p->handler = PROBE_HANDLER_TCP_SOCKET;
                p->n_handlers++;
                r = dec_get_string(e, h, tp, "host", &p->host);
                if (r >= 0)
                        r = dec_get_int_or_string(e, h, tp, "port", &p->port);
        }
        if (r >= 0)
                r = dec_get_object(e, o, pp, "grpc", &h);
        if (r >= 0 && h) {
                _cleanup_free_ char *gp = path_child(pp, "grpc");
                if (!gp)
                        return -ENOMEM;
                if (p->handler == PROBE_HANDLER_NONE)
                        p->handler = PROBE_HANDLER_GRPC;
                p->n_handlers++;
                r = dec_get_int32(e, h, gp, "port", &p->grpc_port);
                if (r >= 0)
                        r = dec_get_string(e, h, gp, "service", &p->grpc_service);
        }
        if (r >= 0)
                r = dec_get_int32(e, o, pp, "initialDelaySeconds", &p->initial_delay_seconds);
        if (r >= 0)
                r = dec_get_int32(e, o, pp, "timeoutSeconds", &p->timeout_seconds);
        if (r >= 0)
                r = dec_get_int32(e, o, pp, "periodSeconds", &p->period_seconds);
        if (r >= 0)
                r = dec_get_int32(e, o, pp, "successThreshold", &p->success_threshold);
        if (r >= 0)
                r = dec_get_int32(e, o, pp, "failureThreshold", &p->failure_threshold);
        if (r >= 0)
                r = dec_get_integer(e, o, pp, "terminationGracePeriodSeconds", INT64_MIN, INT64_MAX, "int64",
                                    &p->has_termination_grace_period, &p->termination_grace_period_seconds);
        return r;
}

static int decode_resize_policy_item(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct container_resize_policy *rp = item;
        int r = dec_get_string(e, v, ip, "resourceName", &rp->resource_name);
        return r < 0 ? r : dec_get_string(e, v, ip, "restartPolicy", &rp->restart_policy);
}

static int decode_container(struct field_errors *e, json_t *c, const char *cpath, struct container *ret) {
        _cleanup_free_ char *pull = NULL, *tmp = NULL;
        json_t *res;
        int r;

        ret->raw = json_incref(c);

        r = dec_get_string(e, c, cpath, "name", &ret->name);
        if (r >= 0)
                r = dec_get_string(e, c, cpath, "image", &ret->image);
        if (r >= 0)
                r = dec_get_strv(e, c, cpath, "command", &ret->command);
        if (r >= 0)
                r = dec_get_strv(e, c, cpath, "args", &ret->args);
        if (r >= 0)
                r = dec_get_string(e, c, cpath, "workingDir", &ret->working_dir);
        if (r >= 0)
                r = decode_ports(e, c, cpath, ret);
        if (r >= 0)
                r = decode_env(e, c, cpath, ret);
        if (r >= 0)
                r = dec_env_from(e, c, cpath, ret);
        if (r >= 0)
                r = dec_container_security_context(e, c, cpath, ret);
        if (r >= 0)
                r = dec_get_object(e, c, cpath, "resources", &res);
        if (r >= 0 && res) {
                _cleanup_free_ char *rp = path_child(cpath, "resources");
                if (!rp)
                        return -ENOMEM;
                r = decode_resource_list(e, res, rp, "limits", &ret->resources.limits);
                if (r >= 0)
                        r = decode_resource_list(e, res, rp, "requests", &ret->resources.requests);
        }
        if (r >= 0)
                r = dec_object_list(e, c, cpath, "resizePolicy", sizeof(struct container_resize_policy),
                                    (void **) &ret->resize_policy, &ret->n_resize_policy, decode_resize_policy_item);
        if (r >= 0)
                r = dec_get_string(e, c, cpath, "terminationMessagePath", &ret->termination_message_path);
        if (r >= 0)
                r = dec_get_bool(e, c, cpath, "stdin", &ret->stdin_);
        if (r >= 0)
                r = dec_get_bool(e, c, cpath, "stdinOnce", &ret->stdin_once);
        if (r >= 0)
                r = dec_get_bool(e, c, cpath, "tty", &ret->tty);
        if (r >= 0)
                r = decode_probe(e, c, cpath, "livenessProbe", &ret->liveness_probe);
        if (r >= 0)
                r = decode_probe(e, c, cpath, "readinessProbe", &ret->readiness_probe);
        if (r >= 0)
                r = decode_probe(e, c, cpath, "startupProbe", &ret->startup_probe);
        if (r >= 0)
                r = pod_decode_container_lifecycle(e, c, cpath, ret);
        if (r >= 0)
                r = dec_get_string(e, c, cpath, "imagePullPolicy", &pull);
        if (r < 0)
                return r;
        if (isempty(pull))
                ret->image_pull_policy = PULL_POLICY_UNSET;
        else if (streq(pull, "Always"))
                ret->image_pull_policy = PULL_POLICY_ALWAYS;
        else if (streq(pull, "IfNotPresent"))
                ret->image_pull_policy = PULL_POLICY_IF_NOT_PRESENT;
        else if (streq(pull, "Never"))
                ret->image_pull_policy = PULL_POLICY_NEVER;
        else {
                r = dec_unsupported(e, cpath, "imagePullPolicy", pull, "\"Always\", \"IfNotPresent\", \"Never\"");
                if (r < 0)
                        return r;
        }

        r = dec_get_string(e, c, cpath, "terminationMessagePolicy", &tmp);
        if (r < 0)
                return r;
        if (isempty(tmp) || streq(tmp, "File"))
                ret->termination_message_policy = TERMINATION_MESSAGE_READ_FILE;
        else if (streq(tmp, "FallbackToLogsOnError"))
                ret->termination_message_policy = TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR;
        else {
                r = dec_unsupported(e, cpath, "terminationMessagePolicy", tmp, "\"File\", \"FallbackToLogsOnError\"");
                if (r < 0)
                        return r;
        }
        if (ret->termination_message_path && ret->termination_message_path[0] == '\0')
                ret->termination_message_path = mfree(ret->termination_message_path);
        return 0;
}

static int decode_container_item(struct field_errors *e, json_t *v, const char *ip, void *item) {
        return decode_container(e, v, ip, item);
}

static int decode_containers(struct field_errors *e, json_t *spec, const char *key, struct container **ret,
                             size_t *ret_n) {
        return decode_list(e, spec, "spec", key, MAX_CONTAINERS, true, sizeof(struct container), (void **) ret, ret_n,
                           decode_container_item);
}

/* an EphemeralContainer: the container's fields plus targetContainerName */
static int decode_ephemeral_item(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct container *c = item;
        int r = decode_container(e, v, ip, c);
        return r < 0 ? r : dec_get_string(e, v, ip, "targetContainerName", &c->target_container_name);
}

static int decode_readiness_gate(struct field_errors *e, json_t *v, const char *ip, void *item) {
        return dec_get_string(e, v, ip, "conditionType", item);
}

static int decode_readiness_gates(struct field_errors *e, json_t *spec, struct pod_spec *s) {
        _cleanup_free_ char **types = NULL;
        size_t n = 0;
        int r;

        r = dec_object_list(e, spec, "spec", "readinessGates", sizeof(char *), (void **) &types, &n,
                            decode_readiness_gate);
        if (r >= 0 && n > 0) {
                /* a strv: the types, then NULL (an absent conditionType is "") */
                char **l = calloc(n + 1, sizeof(char *));
                if (!l)
                        r = -ENOMEM;
                for (size_t i = 0; l && i < n; i++) {
                        l[i] = types[i] ? TAKE_PTR(types[i]) : strdup("");
                        if (!l[i])
                                r = -ENOMEM;
                }
                s->readiness_gates = l;
        }
        for (size_t i = 0; types && i < n; i++)
                free(types[i]);
        return r;
}

static int decode_spec(struct field_errors *e, json_t *spec, struct pod_spec *s) {
        _cleanup_free_ char *restart = NULL, *deprecated_sa = NULL;
        int64_t v;
        int r;

        r = decode_containers(e, spec, "containers", &s->containers, &s->n_containers);
        if (r >= 0)
                r = decode_containers(e, spec, "initContainers", &s->init_containers, &s->n_init_containers);
        if (r >= 0)
                r = decode_list(e, spec, "spec", "ephemeralContainers", MAX_CONTAINERS, true, sizeof(struct container),
                                (void **) &s->ephemeral_containers, &s->n_ephemeral_containers, decode_ephemeral_item);
        if (r >= 0)
                r = dec_get_string(e, spec, "spec", "restartPolicy", &restart);
        if (r >= 0) {
                v = s->termination_grace_period_seconds;
                r = dec_get_integer(e, spec, "spec", "terminationGracePeriodSeconds", INT64_MIN, INT64_MAX, "int64",
                                    &s->termination_grace_period_set, &v);
                s->termination_grace_period_seconds = v;
        }
        if (r >= 0)
                r = dec_get_integer(e, spec, "spec", "activeDeadlineSeconds", INT64_MIN, INT64_MAX, "int64",
                                    &s->has_active_deadline, &s->active_deadline_seconds);
        if (r >= 0)
                r = dec_get_bool(e, spec, "spec", "hostNetwork", &s->host_network);
        if (r >= 0)
                r = dec_get_bool(e, spec, "spec", "hostPID", &s->host_pid);
        if (r >= 0)
                r = dec_get_bool(e, spec, "spec", "hostIPC", &s->host_ipc);
        if (r >= 0)
                r = dec_get_string(e, spec, "spec", "nodeName", &s->node_name);
        if (r >= 0)
                r = dec_get_string(e, spec, "spec", "hostname", &s->hostname);
        if (r >= 0)
                r = dec_get_string(e, spec, "spec", "subdomain", &s->subdomain);
        if (r >= 0) {
                s->has_hostname_override = json_is_string(dec_get(spec, "hostnameOverride"));
                r = dec_get_string(e, spec, "spec", "hostnameOverride", &s->hostname_override);
        }
        if (r >= 0)
                r = dec_get_string(e, spec, "spec", "serviceAccountName", &s->service_account_name);
        if (r >= 0)
                r = dec_get_string(e, spec, "spec", "serviceAccount", &deprecated_sa);
        if (r >= 0)
                r = dec_get_string(e, spec, "spec", "dnsPolicy", &s->dns_policy);
        if (r >= 0)
                r = dec_get_string(e, spec, "spec", "schedulerName", &s->scheduler_name);
        if (r >= 0)
                r = dec_get_int32(e, spec, "spec", "priority", &s->priority);
        if (r >= 0)
                r = dec_get_bool(e, spec, "spec", "shareProcessNamespace", &s->share_process_namespace);
        if (r >= 0)
                r = dec_get_bool(e, spec, "spec", "setHostnameAsFQDN", &s->set_hostname_as_fqdn);
        if (r >= 0) {
                s->has_host_users = json_is_boolean(dec_get(spec, "hostUsers"));
                r = dec_get_bool(e, spec, "spec", "hostUsers", &s->host_users);
        }
        if (r >= 0) {
                s->enable_service_links = true; /* SetDefaults_PodSpec */
                r = dec_get_bool(e, spec, "spec", "enableServiceLinks", &s->enable_service_links);
        }
        if (r >= 0)
                r = dec_get_string(e, spec, "spec", "runtimeClassName", &s->runtime_class_name);
        if (r >= 0) {
                json_t *os = NULL;
                r = dec_get_object(e, spec, "spec", "os", &os);
                if (r >= 0 && os)
                        r = dec_get_string(e, os, "spec.os", "name", &s->os_name);
        }
        if (r >= 0)
                r = decode_resource_list(e, spec, "spec", "overhead", &s->overhead);
        if (r >= 0)
                r = decode_pod_resources(e, spec, s);
        if (r >= 0)
                r = decode_readiness_gates(e, spec, s);
        if (r >= 0)
                r = pod_volumes_decode(e, spec, &s->volumes);
        if (r >= 0)
                r = dec_pod_security_context(e, spec, s);
        if (r >= 0)
                r = dec_pod_dns_config(e, spec, s);
        if (r < 0)
                return r;

        /* the deprecated serviceAccount fills serviceAccountName when that is empty (v1 conversion) */
        if (isempty(s->service_account_name) && !isempty(deprecated_sa)) {
                free(s->service_account_name);
                s->service_account_name = TAKE_PTR(deprecated_sa);
        }
        /* empty strings mean "unset" in Go; keep NULL for those so defaults apply */
        if (s->dns_policy && s->dns_policy[0] == '\0')
                s->dns_policy = mfree(s->dns_policy);
        if (s->scheduler_name && s->scheduler_name[0] == '\0')
                s->scheduler_name = mfree(s->scheduler_name);
        if (s->runtime_class_name && s->runtime_class_name[0] == '\0')
                s->runtime_class_name = mfree(s->runtime_class_name);

        if (isempty(restart) || streq(restart, "Always"))
                s->restart_policy = RESTART_POLICY_ALWAYS;
        else if (streq(restart, "OnFailure"))
                s->restart_policy = RESTART_POLICY_ON_FAILURE;
        else if (streq(restart, "Never"))
                s->restart_policy = RESTART_POLICY_NEVER;
        else
                return dec_unsupported(e, "spec", "restartPolicy", restart, "\"Always\", \"OnFailure\", \"Never\"");
        return 0;
}

static int decode_metadata(struct field_errors *e, json_t *md, struct pod *p) {
        bool has_created = false;
        int r;

        r = dec_get_string(e, md, "metadata", "name", &p->name);
        if (r >= 0)
                r = dec_get_string(e, md, "metadata", "namespace", &p->namespace_);
        if (r >= 0)
                r = dec_get_string(e, md, "metadata", "uid", &p->uid);
        if (r >= 0)
                r = dec_get_string(e, md, "metadata", "resourceVersion", &p->resource_version);
        if (r >= 0)
                r = dec_get_string(e, md, "metadata", "generateName", &p->generate_name);
        if (r >= 0)
                r = dec_get_string_map(e, md, "metadata", "labels", &p->labels);
        if (r >= 0)
                r = dec_get_string_map(e, md, "metadata", "annotations", &p->annotations);
        if (r >= 0)
                r = dec_get_timestamp(e, md, "metadata", "creationTimestamp", &has_created,
                                      &p->creation_timestamp_nsec);
        if (r >= 0)
                r = dec_get_timestamp(e, md, "metadata", "deletionTimestamp", &p->has_deletion_timestamp,
                                      &p->deletion_timestamp_nsec);
        if (r >= 0)
                r = dec_get_integer(e, md, "metadata", "deletionGracePeriodSeconds", INT64_MIN, INT64_MAX, "int64",
                                    NULL, &p->deletion_grace_period_seconds);
        if (r < 0)
                return r;
        /* "" is the same as unset for these */
        if (p->namespace_ && p->namespace_[0] == '\0')
                p->namespace_ = mfree(p->namespace_);
        if (p->uid && p->uid[0] == '\0')
                p->uid = mfree(p->uid);
        return 0;
}

int pod_decode(json_t *obj, struct pod **ret, struct field_errors *errs) {
        _cleanup_(field_errors_done) struct field_errors local = {};
        _cleanup_pod_free_ struct pod *p = NULL;
        struct field_errors *e = errs ? errs : &local;
        size_t n_before = e->n;
        json_t *md, *spec;
        int r;

        if (!ret)
                return -EINVAL;
        if (!json_is_object(obj)) {
                r = dec_type_error(e, "", obj, "object");
                return r < 0 ? r : -EINVAL;
        }
        p = pod_new();
        if (!p)
                return -ENOMEM;
        /* a private copy: later changes by the caller to obj do not reach the pod */
        p->raw = json_deep_copy(obj);
        if (!p->raw)
                return -ENOMEM;

        r = dec_get_object(e, p->raw, "", "metadata", &md);
        if (r >= 0 && md)
                r = decode_metadata(e, md, p);
        if (r >= 0)
                r = dec_get_object(e, p->raw, "", "spec", &spec);
        if (r >= 0 && spec)
                r = decode_spec(e, spec, &p->spec);
        if (r < 0)
                return r;
        if (e->n > n_before)
                return -EINVAL;
        *ret = TAKE_PTR(p);
        return 0;
}
