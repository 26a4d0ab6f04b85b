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
#include "objects/refs.h"

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

static int kr_expand2(const char *input, const struct strmap *env, const struct strmap *fallback, char **ret);

int kr_expand(const char *input, const struct strmap *env, char **ret) {
        return kr_expand2(input, env, NULL, ret);
}

/* The same with a second map for the names env does not define (MappingFuncFor(env, fallback)). */
static int kr_expand2(const char *input, const struct strmap *env, const struct strmap *fallback, char **ret) {
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
                                if (!v && fallback)
                                        v = strmap_get(fallback, name);
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

/* ---------------------------------------------------------------- services */

/* makeEnvVariableName: upper case, '-' becomes '_' */
static char *env_name(const char *service, const char *suffix) {
        char *n = NULL;
        if (asprintf(&n, "%s%s", service, suffix) < 0)
                return NULL;
        for (char *c = n; *c; c++)
                *c = *c == '-' ? '_' : (*c >= 'a' && *c <= 'z') ? (char) (*c - 'a' + 'A') : *c;
        return n;
}

static int set_fmt(struct strmap *m, const char *name, const char *fmt, ...) _printf_(3, 4);
static int set_fmt(struct strmap *m, const char *name, const char *fmt, ...) {
        _cleanup_free_ char *v = NULL;
        if (!name || VA_FORMAT(v, fmt) < 0)
                return -ENOMEM;
        return strmap_set(m, name, v);
}

/* v1helper.IsServiceIPSet */
static const char *service_ip(const json_t *svc) {
        const char *ip = json_string_value(json_object_get(json_object_get(svc, "spec"), "clusterIP"));
        return isempty(ip) || streq(ip, "None") ? NULL : ip;
}

/* envvars.FromServices for one service: <NAME>_SERVICE_HOST, _SERVICE_PORT (the first port), _SERVICE_PORT_<PORT
 * NAME> for named ports, and the Docker link variables (makeLinkVariables) */
static int service_vars(const json_t *svc, struct strmap *m) {
        const char *name = json_string_value(json_object_get(json_object_get(svc, "metadata"), "name"));
        const char *ip = service_ip(svc);
        const json_t *ports = json_object_get(json_object_get(svc, "spec"), "ports"), *p;
        _cleanup_free_ char *host = NULL, *port_var = NULL, *prefix = NULL;
        bool v6 = ip && strchr(ip, ':');
        size_t i;
        int r;

        if (!name || !ip || !json_is_array(ports) || json_array_size(ports) == 0)
                return 0;
        host = env_name(name, "_SERVICE_HOST");
        port_var = env_name(name, "_SERVICE_PORT");
        prefix = env_name(name, "");
        if (!host || !port_var || !prefix)
                return -ENOMEM;
        r = strmap_set(m, host, ip);
        if (r >= 0)
                r = set_fmt(m, port_var, "%" JSON_INTEGER_FORMAT,
                            json_integer_value(json_object_get(json_array_get(ports, 0), "port")));
        json_array_foreach(ports, i, p) {
                const char *pn = json_string_value(json_object_get(p, "name"));
                const char *proto = json_string_value(json_object_get(p, "protocol"));
                json_int_t port = json_integer_value(json_object_get(p, "port"));
                _cleanup_free_ char *lower = NULL, *upper = NULL, *pp = NULL, *hostport = NULL;

                if (r < 0)
                        break;
                if (!isempty(pn)) {
                        _cleanup_free_ char *suffix = NULL, *v = NULL;
                        if (asprintf(&suffix, "_SERVICE_PORT_%s", pn) < 0)
                                return -ENOMEM;
                        v = env_name(name, suffix);
                        r = set_fmt(m, v, "%" JSON_INTEGER_FORMAT, port);
                        if (r < 0)
                                break;
                }
                /* the link variables */
                lower = strdup(isempty(proto) ? "tcp" : proto);
                upper = strdup(isempty(proto) ? "TCP" : proto);
                if (!lower || !upper)
                        return -ENOMEM;
                for (char *c = lower; *c; c++)
                        *c = (*c >= 'A' && *c <= 'Z') ? (char) (*c - 'A' + 'a') : *c;
                for (char *c = upper; *c; c++)
                        *c = (*c >= 'a' && *c <= 'z') ? (char) (*c - 'a' + 'A') : *c;
                /* net.JoinHostPort */
                if (asprintf(&hostport, v6 ? "[%s]:%" JSON_INTEGER_FORMAT : "%s:%" JSON_INTEGER_FORMAT, ip, port) < 0 ||
                    asprintf(&pp, "%s_PORT_%" JSON_INTEGER_FORMAT "_%s", prefix, port, upper) < 0)
                        return -ENOMEM;
                if (i == 0) {
                        _cleanup_free_ char *first = env_name(name, "_PORT");
                        r = set_fmt(m, first, "%s://%s", lower, hostport);
                }
                if (r >= 0)
                        r = set_fmt(m, pp, "%s://%s", lower, hostport);
                if (r >= 0) {
                        _cleanup_free_ char *v = NULL;
                        r = asprintf(&v, "%s_PROTO", pp) < 0 ? -ENOMEM : strmap_set(m, v, lower);
                }
                if (r >= 0) {
                        _cleanup_free_ char *v = NULL;
                        r = asprintf(&v, "%s_PORT", pp) < 0 ? -ENOMEM : set_fmt(m, v, "%" JSON_INTEGER_FORMAT, port);
                }
                if (r >= 0) {
                        _cleanup_free_ char *v = NULL;
                        r = asprintf(&v, "%s_ADDR", pp) < 0 ? -ENOMEM : strmap_set(m, v, ip);
                }
        }
        return r;
}

static int cmp_service_name(const void *a, const void *b) {
        return strcmp(strempty(json_string_value(
                              json_object_get(json_object_get(*(json_t *const *) a, "metadata"), "name"))),
                      strempty(json_string_value(
                              json_object_get(json_object_get(*(json_t *const *) b, "metadata"), "name"))));
}

int kr_service_env(const json_t *master, const json_t *ns_services, const char *ns, bool links, struct strmap *ret) {
        _cleanup_free_ const json_t **chosen = NULL;
        struct strmap m = {};
        size_t n = 0, i;
        const json_t *svc;
        int r = 0;

        chosen = calloc(json_array_size(ns_services) + 2, sizeof(*chosen));
        if (!chosen)
                return -ENOMEM;
        /* the master service of the default namespace, whatever enableServiceLinks says */
        if (master && service_ip(master))
                chosen[n++] = master;
        /* the pod's namespace's, with enableServiceLinks; a service of the same name replaces an earlier one,
         * never the master service */
        json_array_foreach(ns_services, i, svc) {
                const char *name = json_string_value(json_object_get(json_object_get(svc, "metadata"), "name"));
                bool dup = false;

                if (!name || !service_ip(svc))
                        continue;
                if (streq_ptr(ns, OBJ_MASTER_SERVICE_NAMESPACE) && streq(name, OBJ_MASTER_SERVICE_NAME)) {
                        if (!master || !service_ip(master))
                                chosen[n++] = svc;
                        continue;
                }
                if (!links)
                        continue;
                for (size_t j = 0; j < n; j++)
                        if (streq_ptr(json_string_value(
                                              json_object_get(json_object_get(chosen[j], "metadata"), "name")),
                                      name) &&
                            !(chosen[j] == master)) {
                                chosen[j] = svc;
                                dup = true;
                        }
                if (!dup)
                        chosen[n++] = svc;
        }
        qsort(chosen, n, sizeof(*chosen), cmp_service_name);
        for (i = 0; r >= 0 && i < n; i++)
                r = service_vars(chosen[i], &m);
        if (r < 0) {
                strmap_done(&m);
                return r;
        }
        strmap_sort(&m);
        *ret = m;
        return 0;
}

/* The service environment of the pod from its fetched services; an error message when they are not known (for an
 * API pod upstream waits until its service informer synced once). */
static int pod_service_env(const struct pod *pod, const struct kc_build_context *ctx, struct strmap *ret) {
        json_t *master = NULL, *list = NULL;
        const char *msg = NULL;
        int r;

        *ret = (struct strmap) {};
        if (!ctx->objects)
                return 0;
        r = objects_pod_lookup(ctx->objects, OBJ_KIND_SERVICE, OBJ_MASTER_SERVICE_NAMESPACE, OBJ_MASTER_SERVICE_NAME,
                               &master, &msg);
        /* a static pod does not wait for the services (the API server may be one of them): what is known */
        if (r < 0 && ctx->static_pod)
                master = NULL;
        else if (r < 0 && r != -ENOENT)
                return report_error(ctx, r,
                                    r == -EAGAIN ? "services have not yet been read at least once, cannot "
                                                   "construct envvars"
                                                 : "failed to list services when setting up env vars");
        if (pod->spec.enable_service_links) {
                r = objects_pod_lookup(ctx->objects, OBJ_KIND_SERVICE_LIST, pod->namespace_, "", &list, &msg);
                if (r < 0 && ctx->static_pod)
                        list = NULL;
                else if (r < 0 && r != -ENOENT)
                        return report_error(ctx, r,
                                            r == -EAGAIN ? "services have not yet been read at least once, cannot "
                                                           "construct envvars"
                                                         : "failed to list services when setting up env vars");
        }
        return kr_service_env(master, list, pod->namespace_, pod->spec.enable_service_links, ret);
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
                if (validate_relaxed_env_var_name(name)) {
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

/* a fileKeyRef: its value read on a worker beforehand (kuberuntime/envfile.h). 1 value, 0 absent and optional (skip),
 * negative on error (reported with upstream's message) */
static int file_key_value(const struct file_key_selector *f, size_t idx, const struct kc_build_context *ctx,
                          char **ret) {
        const struct kc_env_file_value *v = ctx->env_files && idx < ctx->n_env_files ? &ctx->env_files[idx] : NULL;

        if (!v || !v->resolved)
                return report_error(ctx, -EAGAIN, "the file of the fileKeyRef of env[%zu] has not been read", idx);
        if (v->r > 0) {
                *ret = strdup(strempty(v->value));
                return *ret ? 1 : -ENOMEM;
        }
        if (v->r == 0 && f->optional)
                return 0;
        return report_error(ctx, v->r == 0 ? -ENOENT : v->r, "%s", strna(v->message));
}

int kr_make_environment(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                        struct strmap *ret) {
        _cleanup_(strmap_done) struct strmap services = {};
        struct strmap env = {};
        int r;

        r = pod_service_env(pod, ctx, &services);
        for (size_t i = 0; r >= 0 && i < c->n_env_from; i++)
                r = add_env_from(pod, &c->env_from[i], ctx, &env);
        for (size_t i = 0; r >= 0 && i < c->n_env; i++) {
                const struct env_var *ev = &c->env[i];
                const struct env_var_source *vf = ev->value_from;
                _cleanup_free_ char *value = NULL;

                if (!isempty(ev->value))
                        r = kr_expand2(ev->value, &env, &services, &value); /* MappingFuncFor(tmpEnv, serviceEnv) */
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
                } else if (vf && vf->file_key_ref) {
                        r = file_key_value(vf->file_key_ref, i, ctx, &value);
                        if (r == 0)
                                continue; /* optional and the key absent */
                }
                if (r == -E2BIG)
                        report_error(ctx, r, "the value of environment variable %s is longer than %d bytes", ev->name,
                                     KR_ENV_VALUE_MAX);
                if (r >= 0)
                        r = strmap_set(&env, ev->name, value ? value : "");
        }
        /* then the service variables the container does not define itself */
        for (size_t i = 0; r >= 0 && i < services.n; i++)
                if (!strmap_get(&env, services.keys[i]))
                        r = strmap_set(&env, services.keys[i], services.values[i]);
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
