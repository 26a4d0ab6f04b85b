/* SPDX-License-Identifier: Apache-2.0 */
#include "kuberuntime/env.h"

#include <stdio.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "apis/fieldpath.h"
#include "apis/resource.h"
#include "basic/base64.h"
#include "basic/error.h"
#include "basic/strmap.h"
#include "basic/strv.h"
#include "kuberuntime/config.h"
#include "objects/objects.h"

/* The error of a build, for the container's CreateContainerConfigError (when the caller collects one); returns
 * code. */
_printf_(3, 4) static int report_error(const struct kc_build_context *ctx, int code, const char *fmt, ...) {
        _cleanup_free_ char *m = NULL;

        if (!ctx->report)
                return code;
        if (VA_FORMAT(m, fmt) < 0)
                return ck_error_set(&ctx->report->error, -ENOMEM, "out of memory");
        return ck_error_set(&ctx->report->error, code, "%s", m);
}

/* ---------------------------------------------------------------- expansion */

struct buf {
        char *s;
        size_t n, cap;
};

static int buf_add(struct buf *b, const char *s, size_t n) {
        if (n > KR_ENV_VALUE_MAX || b->n + n > KR_ENV_VALUE_MAX)
                return -E2BIG;
        if (b->n + n + 1 > b->cap) {
                size_t cap = (b->n + n + 1) * 2;
                char *p = realloc(b->s, cap);
                if (!p)
                        return -ENOMEM;
                b->s = p;
                b->cap = cap;
        }
        memcpy(b->s + b->n, s, n);
        b->n += n;
        b->s[b->n] = 0;
        return 0;
}

int kr_expand(const char *input, const struct strmap *env, char **ret) {
        struct buf b = {};
        size_t len = strlen(input), checkpoint = 0;
        int r = buf_add(&b, "", 0);

        for (size_t cur = 0; r >= 0 && cur < len; cur++) {
                const char *in;
                if (input[cur] != '$' || cur + 1 >= len)
                        continue;
                r = buf_add(&b, input + checkpoint, cur - checkpoint);
                if (r < 0)
                        break;
                in = input + cur + 1;
                if (in[0] == '$') {
                        r = buf_add(&b, "$", 1); /* escaped operator */
                } else if (in[0] == '(') {
                        const char *close = strchr(in + 1, ')');
                        if (close) {
                                _cleanup_free_ char *name = strndup(in + 1, close - in - 1);
                                const char *v;
                                if (!name) {
                                        r = -ENOMEM;
                                        break;
                                }
                                v = strmap_get(env, name);
                                if (v)
                                        r = buf_add(&b, v, strlen(v));
                                else {
                                        /* not defined: kept as written */
                                        r = buf_add(&b, in - 1, close - in + 2);
                                }
                                cur += close - in + 1;
                                checkpoint = cur + 1;
                                continue;
                        }
                        r = buf_add(&b, "$(", 2); /* incomplete reference */
                } else
                        r = buf_add(&b, in - 1, 2); /* "$x": not an expression */
                cur += 1;
                checkpoint = cur + 1;
        }
        if (r >= 0)
                r = buf_add(&b, input + checkpoint, len - checkpoint);
        if (r < 0) {
                free(b.s);
                return r;
        }
        *ret = b.s;
        return 0;
}

/* ---------------------------------------------------------------- sources */

enum source_kind { SOURCE_CONFIG_MAP, SOURCE_SECRET };

/* Look an object up. 1: found (*ret_data: its .data object, or NULL if it has none); 0: not found and optional
 * (skip); negative: error (reported). */
static int lookup_object(const struct pod *pod, const struct kc_build_context *ctx, enum source_kind kind,
                         const char *name, bool optional, json_t **ret_data) {
        const char *kind_s = kind == SOURCE_SECRET ? "Secret" : "ConfigMap";
        const char *msg = NULL;
        json_t *obj = NULL, *data;
        int r;

        r = objects_pod_lookup(ctx->objects, kind_s, pod->namespace_, name, &obj, &msg);
        if (r == -ENOENT) {
                if (optional)
                        return 0;
                /* the kubelet's object managers: apierrors.NewNotFound(corev1.Resource("configmap"), name) */
                if (msg)
                        return report_error(ctx, -ENOENT, "%s", msg);
                return report_error(ctx, -ENOENT, "%s \"%s\" not found", kind == SOURCE_SECRET ? "secret" : "configmap",
                                    name);
        }
        if (r < 0)
                return report_error(ctx, r, "%s", msg ? msg : strerror(-r));
        data = json_object_get(obj, "data");
        *ret_data = json_is_object(data) ? data : NULL;
        return 1;
}

/* The value of key in a ConfigMap's or Secret's data: 1 found, 0 absent, negative on error */
static int data_value(enum source_kind kind, json_t *data, const char *key, char **ret) {
        json_t *v = data ? json_object_get(data, key) : NULL;
        if (!json_is_string(v))
                return 0;
        if (kind == SOURCE_SECRET) {
                int r = base64_decode(json_string_value(v), KR_ENV_VALUE_MAX, ret, NULL);
                return r < 0 ? r : 1;
        }
        if (json_string_length(v) > KR_ENV_VALUE_MAX)
                return -E2BIG;
        *ret = strdup(json_string_value(v));
        return *ret ? 1 : -ENOMEM;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int add_env_from(const struct pod *pod, const struct env_from_source *ef, const struct kc_build_context *ctx,
                        struct strmap *env) {
        enum source_kind kind = ef->config_map_ref ? SOURCE_CONFIG_MAP : SOURCE_SECRET;
        const struct env_ref *ref = ef->config_map_ref ? ef->config_map_ref : ef->secret_ref;
        _cleanup_strv_free_ char **keys = NULL, **invalid = NULL;
        json_t *data = NULL, *v;
        const char *k;
        size_t n;
        int r;

        if (!ref)
                return 0;
        r = lookup_object(pod, ctx, kind, ref->name, ref->optional, &data);
        if (r <= 0)
                return r;
        if (!data)
                return 0;
        json_object_foreach(data, k, v) {
                r = strv_extend(&keys, k);
                if (r < 0)
                        return r;
        }
        n = strv_length(keys);
        if (n > 0)
                qsort(keys, n, sizeof(char *), cmp_str);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *name = NULL, *value = NULL;
                if (asprintf(&name, "%s%s", strempty(ef->prefix), keys[i]) < 0) {
                        name = NULL;
                        return -ENOMEM;
                }
                if (validate_env_var_name(name)) {
                        r = strv_extend(&invalid, name);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = data_value(kind, data, keys[i], &value);
                if (r < 0) {
                        if (r == -EINVAL)
                                report_error(ctx, r, "illegal base64 data in Secret %s/%s key %s", pod->namespace_,
                                             ref->name, keys[i]);
                        return r;
                }
                if (r > 0 && (r = strmap_set(env, name, value)) < 0)
                        return r;
        }
        if (invalid) {
                _cleanup_free_ char *joined = strv_join(invalid, ", "), *msg = NULL;
                if (!joined ||
                    asprintf(&msg,
                             "Keys [%s] from the EnvFrom %s %s/%s were skipped since they are considered "
                             "invalid environment variable names.",
                             joined, kind == SOURCE_SECRET ? "secret" : "configMap", pod->namespace_, ref->name) < 0) {
                        msg = NULL;
                        return -ENOMEM;
                }
                r = kc_build_report_event(ctx->report, "InvalidEnvironmentVariableNames", msg);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* podFieldSelectorRuntimeValue: what the kubelet knows at run time, then the pod's own fields */
static int field_ref_value(const struct pod *pod, const struct object_field_selector *fs,
                           const struct kc_build_context *ctx, char **ret) {
        const char *fp = fs->field_path, *v;
        _cleanup_ck_error_ struct ck_error *error = NULL;
        int r;

        if (!fp)
                return -EINVAL;
        if (streq(fp, "spec.nodeName") || streq(fp, "spec.host"))
                v = !isempty(pod->spec.node_name) ? pod->spec.node_name : ctx->node_name;
        else if (streq(fp, "spec.serviceAccountName"))
                v = pod->spec.service_account_name;
        else if (streq(fp, "spec.schedulerName"))
                v = pod->spec.scheduler_name;
        else if (streq(fp, "status.podIP") || streq(fp, "status.podIPs"))
                v = ctx->pod_ip;
        else if (streq(fp, "status.hostIP") || streq(fp, "status.hostIPs"))
                v = ctx->node_ip;
        else {
                r = fieldpath_extract(pod, fp, ret, &error);
                if (r < 0 && error)
                        report_error(ctx, r, "%s", ck_error_message(error));
                return r;
        }
        *ret = strdup(strempty(v));
        return *ret ? 0 : -ENOMEM;
}

/* a resourceFieldRef of the environment: the container named (default: this one), errors reported */
static int resource_field_value(const struct pod *pod, const struct container *self,
                                const struct resource_field_selector *fs, const struct kc_build_context *ctx,
                                char **ret) {
        const struct container *c = self;
        int r;

        struct resource_allocatable alloc;

        if (!isempty(fs->container_name)) {
                c = pod_find_container(pod, fs->container_name);
                if (!c)
                        return report_error(ctx, -EINVAL, "container %s not found", fs->container_name);
        }
        kc_build_allocatable(ctx, &alloc);
        r = resource_container_value(c, fs->resource, fs->has_divisor ? &fs->divisor : NULL, &alloc, ret);
        if (r == -EINVAL)
                report_error(ctx, r, "unsupported container resource : %s", strna(fs->resource));
        return r;
}

static int key_ref_value(const struct pod *pod, enum source_kind kind, const struct key_selector *k,
                         const struct kc_build_context *ctx, char **ret) {
        json_t *data = NULL;
        int r;

        r = lookup_object(pod, ctx, kind, k->name, k->optional, &data);
        if (r <= 0)
                return r;
        r = data_value(kind, data, k->key, ret);
        if (r == -EINVAL)
                report_error(ctx, r, "illegal base64 data in Secret %s/%s key %s", pod->namespace_, k->name, k->key);
        if (r != 0)
                return r;
        if (k->optional)
                return 0;
        return report_error(ctx, -ENOENT, "couldn't find key %s in %s %s/%s", k->key,
                            kind == SOURCE_SECRET ? "Secret" : "ConfigMap", pod->namespace_, k->name);
}

int kr_make_environment(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                        struct strmap *ret) {
        struct strmap env = {};
        int r = 0;

        for (size_t i = 0; r >= 0 && i < c->n_env_from; i++)
                r = add_env_from(pod, &c->env_from[i], ctx, &env);
        for (size_t i = 0; r >= 0 && i < c->n_env; i++) {
                const struct env_var *ev = &c->env[i];
                const struct env_var_source *vf = ev->value_from;
                _cleanup_free_ char *value = NULL;

                if (!isempty(ev->value))
                        r = kr_expand(ev->value, &env, &value);
                else if (vf && vf->field_ref)
                        r = field_ref_value(pod, vf->field_ref, ctx, &value);
                else if (vf && vf->resource_field_ref)
                        r = resource_field_value(pod, c, vf->resource_field_ref, ctx, &value);
                else if (vf && vf->config_map_key_ref) {
                        r = key_ref_value(pod, SOURCE_CONFIG_MAP, vf->config_map_key_ref, ctx, &value);
                        if (r == 0)
                                continue; /* optional and missing */
                } else if (vf && vf->secret_key_ref) {
                        r = key_ref_value(pod, SOURCE_SECRET, vf->secret_key_ref, ctx, &value);
                        if (r == 0)
                                continue;
                }
                if (r == -E2BIG)
                        report_error(ctx, r, "the value of environment variable %s is longer than %d bytes", ev->name,
                                     KR_ENV_VALUE_MAX);
                if (r >= 0)
                        r = strmap_set(&env, ev->name, value ? value : "");
        }
        if (r < 0) {
                strmap_done(&env);
                return r;
        }
        *ret = env;
        return 0;
}

static int expand_strv(char *const *l, const struct strmap *env, size_t *ret_n, char ***ret) {
        size_t n = strv_length(l);
        char **a;
        if (n == 0)
                return 0;
        a = calloc(n, sizeof(char *));
        if (!a)
                return -ENOMEM;
        *ret = a; /* owned by the message from here on */
        for (size_t i = 0; i < n; i++) {
                int r = kr_expand(l[i], env, &a[i]);
                if (r < 0)
                        return r;
                *ret_n = i + 1;
        }
        return 0;
}

int kr_build_env(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                 Runtime__V1__ContainerConfig *cfg) {
        struct strmap env = {};
        int r;

        r = kr_make_environment(pod, c, ctx, &env);
        if (r < 0)
                return r;
        if (env.n > 0) {
                cfg->envs = calloc(env.n, sizeof(*cfg->envs));
                if (!cfg->envs)
                        r = -ENOMEM;
        }
        for (size_t i = 0; r >= 0 && i < env.n; i++) {
                Runtime__V1__KeyValue *kv = malloc(sizeof(*kv));
                if (!kv) {
                        r = -ENOMEM;
                        break;
                }
                *kv = (Runtime__V1__KeyValue) RUNTIME__V1__KEY_VALUE__INIT;
                cfg->envs[cfg->n_envs++] = kv;
                kv->key = strdup(env.keys[i]);
                kv->value = strdup(env.values[i]);
                if (!kv->key || !kv->value)
                        r = -ENOMEM;
        }
        if (r >= 0)
                r = expand_strv(c->command, &env, &cfg->n_command, &cfg->command);
        if (r >= 0)
                r = expand_strv(c->args, &env, &cfg->n_args, &cfg->args);
        if (r == -E2BIG)
                report_error(ctx, r, "the expanded command of container %s is longer than %d bytes", c->name,
                             KR_ENV_VALUE_MAX);
        strmap_done(&env);
        return r;
}
