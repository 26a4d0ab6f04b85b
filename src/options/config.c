/* SPDX-License-Identifier: Apache-2.0 */
/* The KubeletConfiguration file and --config-dir drop-ins (pkg/kubelet/apis/config/v1beta1), read by the table. */
#include "options/options-internal.h"

#include <arpa/inet.h>
#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/yaml_json.h"
#include "apis/pod.h"
#include "basic/error.h"
#include "features/features.h"
#include "nodeshutdown/config.h"
#include "basic/fs.h"
#include "basic/json.h"
#include "basic/log.h"
#include "basic/duration.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"

/* ---- the config file ---- */

struct config_ctx {
        const char *path; /* what errors name: the file, or the merged configuration */
        const char *dir;  /* directory of the config file, for relative paths; NULL: resolved already */
        bool quiet;       /* a file checked on its own before the merge: no warnings */
        struct ck_error **error;
};

static int config_error(struct config_ctx *c, int r, const char *fmt, ...) _printf_(3, 4);
static int config_error(struct config_ctx *c, int r, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;

        if (VA_FORMAT(msg, fmt) < 0)
                return -ENOMEM;
        return ck_error_set(c->error, r, "%s: %s", c->path, msg);
}

static int config_string(struct config_ctx *c, const char *field, json_t *v, bool is_path, char **target) {
        _cleanup_free_ char *s = NULL;
        const char *str;

        if (!json_is_string(v))
                return config_error(c, -EINVAL, "%s: expected a string, got %s", field, json_type_name(v));
        str = json_string_value(v);
        if (strlen(str) != json_string_length(v))
                return config_error(c, -EINVAL, "%s: string contains a NUL byte", field);
        if (is_path && c->dir && !isempty(str) && str[0] != '/') {
                /* as upstream's resolveRelativePaths: relative to the config file's directory */
                if (asprintf(&s, "%s/%s", c->dir, str) < 0)
                        return -ENOMEM;
        } else {
                s = strdup(str);
                if (!s)
                        return -ENOMEM;
        }
        free(*target);
        *target = TAKE_PTR(s);
        return 0;
}

/* A string field whose empty value means "the default" (upstream's SetDefaults replaces ""). */
static int config_string_default(struct config_ctx *c, const char *field, json_t *v, char **target) {
        if (json_is_string(v) && json_string_length(v) == 0)
                return 0;
        return config_string(c, field, v, false, target);
}

/* metav1.Duration: a string for time.ParseDuration. Zero means "use the default" (SetDefaults_*). */
/* A duration field, any value it holds (0 included) into *ret */
static int config_duration_value(struct config_ctx *c, const char *field, json_t *v, uint64_t *ret) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        int r;

        if (!json_is_string(v))
                return config_error(c, -EINVAL, "%s: expected a duration string such as \"20s\", got %s", field,
                                    json_type_name(v));
        r = options_parse_duration(json_string_value(v), ret, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_error(c, -EINVAL, "%s: invalid duration \"%s\": %s", field, json_string_value(v),
                                    why ? ck_error_message(why) : "invalid value");
        return 0;
}

/* A duration field whose zero value means the default (kept) */
static int config_duration(struct config_ctx *c, const char *field, json_t *v, uint64_t *target) {
        uint64_t usec = 0;
        int r = config_duration_value(c, field, v, &usec);

        if (r >= 0 && usec > 0)
                *target = usec;
        return r;
}

static int config_int32(struct config_ctx *c, const char *field, json_t *v, int64_t min, json_int_t *ret) {
        json_int_t i;

        if (!json_is_integer(v))
                return config_error(c, -EINVAL, "%s: expected an integer, got %s", field, json_type_name(v));
        i = json_integer_value(v);
        if (i < min || i > INT32_MAX)
                return config_error(c, -EINVAL, "%s: %" JSON_INTEGER_FORMAT " is out of range", field, i);
        *ret = i;
        return 0;
}

static int config_bool(struct config_ctx *c, const char *field, json_t *v, bool *target) {
        if (!json_is_boolean(v))
                return config_error(c, -EINVAL, "%s: expected a boolean, got %s", field, json_type_name(v));
        *target = json_is_true(v);
        return 0;
}

/* an int field (ports, kubeAPIQPS, maxPods, ...): any int32 */
static int config_int(struct config_ctx *c, const char *field, json_t *v, int *target) {
        json_int_t i = 0;
        int r = config_int32(c, field, v, INT32_MIN, &i);
        if (r < 0)
                return r;
        *target = (int) i;
        return 0;
}

/* *target = the items joined with "," (the flags' list syntax) */
static int set_joined(char **l, char **target) {
        char *joined = l ? strv_join(l, ",") : strdup("");
        if (!joined)
                return -ENOMEM;
        free(*target);
        *target = joined;
        return 0;
}

/* []string → "a,b" (the flag's syntax) */
static int config_string_list(struct config_ctx *c, const char *field, json_t *v, char **target) {
        _cleanup_strv_free_ char **l = NULL;
        json_t *value;
        size_t i;

        if (!json_is_array(v))
                return config_error(c, -EINVAL, "%s: expected a list of strings, got %s", field, json_type_name(v));
        json_array_foreach(v, i, value) {
                if (!json_is_string(value))
                        return config_error(c, -EINVAL, "%s[%zu]: expected a string, got %s", field, i,
                                            json_type_name(value));
                if (strchr(json_string_value(value), ','))
                        return config_error(c, -EINVAL, "%s[%zu]: invalid value \"%s\"", field, i,
                                            json_string_value(value));
                if (strv_extend(&l, json_string_value(value)) < 0)
                        return -ENOMEM;
        }
        return set_joined(l, target);
}

/* map[string]string → "k=v,k2=v2" (the flag's syntax) */
/* reservedMemory: [{numaNode: 0, limits: {memory: 1Gi, hugepages-2Mi: 0}}, ...] as --reserved-memory's text */
static int config_reserved_memory(struct config_ctx *c, const char *field, json_t *v, char **target) {
        _cleanup_strv_free_ char **nodes = NULL;
        _cleanup_free_ char *joined = NULL;
        size_t i;
        json_t *e;

        if (!json_is_array(v))
                return config_error(c, -EINVAL, "%s: expected a list, got %s", field, json_type_name(v));
        json_array_foreach(v, i, e) {
                json_t *numa = json_object_get(e, "numaNode"), *limits = json_object_get(e, "limits"), *q;
                _cleanup_strv_free_ char **kv = NULL;
                _cleanup_free_ char *items = NULL;
                const char *name;
                char *item;

                if (!json_is_object(e) || !json_is_integer(numa) || json_integer_value(numa) < 0 ||
                    json_integer_value(numa) > INT32_MAX)
                        return config_error(c, -EINVAL, "%s[%zu].numaNode: expected a NUMA node number", field, i);
                if (!json_is_object(limits))
                        return config_error(c, -EINVAL, "%s[%zu].limits: expected a map of quantities", field, i);
                json_object_foreach(limits, name, q) {
                        if (!json_is_string(q) || strpbrk(name, ",;=:") || strpbrk(json_string_value(q), ",;=:"))
                                return config_error(c, -EINVAL, "%s[%zu].limits.%s: expected a quantity", field, i,
                                                    name);
                        if (asprintf(&item, "%s=%s", name, json_string_value(q)) < 0 || strv_push(&kv, item) < 0)
                                return -ENOMEM;
                }
                items = strv_join(kv, ",");
                if (!items || asprintf(&item, "%lld:%s", (long long) json_integer_value(numa), items) < 0 ||
                    strv_push(&nodes, item) < 0)
                        return -ENOMEM;
        }
        joined = nodes ? strv_join(nodes, ";") : strdup("");
        if (!joined)
                return -ENOMEM;
        free(*target);
        *target = TAKE_PTR(joined);
        return 0;
}

static int config_string_map(struct config_ctx *c, const char *field, json_t *v, char **target) {
        _cleanup_strv_free_ char **l = NULL;
        const char *key;
        json_t *value;

        if (!json_is_object(v))
                return config_error(c, -EINVAL, "%s: expected a map of strings, got %s", field, json_type_name(v));
        json_object_foreach(v, key, value) {
                char *item;
                if (!json_is_string(value))
                        return config_error(c, -EINVAL, "%s.%s: expected a string, got %s", field, key,
                                            json_type_name(value));
                if (strchr(key, ',') || strchr(key, '=') || strchr(json_string_value(value), ','))
                        return config_error(c, -EINVAL, "%s.%s: invalid key or value", field, key);
                if (asprintf(&item, "%s=%s", key, json_string_value(value)) < 0 || strv_push(&l, item) < 0)
                        return -ENOMEM;
        }
        return set_joined(l, target);
}

/* []Taint → "key=value:Effect,..." (the flag's syntax) */
static int config_taints(struct config_ctx *c, const char *field, json_t *v, char **target) {
        _cleanup_strv_free_ char **l = NULL;
        size_t i;
        json_t *t;

        if (!json_is_array(v))
                return config_error(c, -EINVAL, "%s: expected a list of taints, got %s", field, json_type_name(v));
        json_array_foreach(v, i, t) {
                const char *key = json_string_value(json_object_get(t, "key"));
                const char *value = json_string_value(json_object_get(t, "value"));
                const char *effect = json_string_value(json_object_get(t, "effect"));
                char *item;

                if (!json_is_object(t) || isempty(key) || isempty(effect))
                        return config_error(c, -EINVAL, "%s[%zu]: a taint needs a key and an effect", field, i);
                if (asprintf(&item, "%s%s%s:%s", key, value ? "=" : "", strempty(value), effect) < 0 ||
                    strv_push(&l, item) < 0)
                        return -ENOMEM;
        }
        return set_joined(l, target);
}

/* shutdownGracePeriodByPodPriority: [{priority, shutdownGracePeriodSeconds}], replacing any earlier list */
int options_config_shutdown_by_priority(struct config_ctx *c, const char *field, json_t *v, struct kubelet_options *o) {
        _cleanup_free_ struct nodeshutdown_period *l = NULL;
        size_t i, n;
        json_t *e;

        if (!json_is_array(v))
                return config_error(c, -EINVAL, "%s: expected a list, got %s", field, json_type_name(v));
        n = json_array_size(v);
        if (n > 1024)
                return config_error(c, -EINVAL, "%s: %zu entries, at most 1024", field, n);
        if (n > 0 && !(l = calloc(n, sizeof(*l))))
                return -ENOMEM;
        json_array_foreach(v, i, e) {
                const char *key;
                json_t *x;

                if (!json_is_object(e))
                        return config_error(c, -EINVAL, "%s[%zu]: expected an object, got %s", field, i,
                                            json_type_name(e));
                json_object_foreach(e, key, x) {
                        if (json_is_null(x))
                                continue;
                        if (streq(key, "priority")) {
                                if (!json_is_integer(x) || json_integer_value(x) < INT32_MIN ||
                                    json_integer_value(x) > INT32_MAX)
                                        return config_error(c, -EINVAL, "%s[%zu].priority: expected a 32-bit integer",
                                                            field, i);
                                l[i].priority = (int32_t) json_integer_value(x);
                        } else if (streq(key, "shutdownGracePeriodSeconds")) {
                                /* int64 upstream; a negative budget or more than a year is no budget */
                                if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                                    json_integer_value(x) > 365 * 24 * 3600)
                                        return config_error(c, -EINVAL,
                                                            "%s[%zu].shutdownGracePeriodSeconds: expected an integer "
                                                            "between 0 and 31536000",
                                                            field, i);
                                l[i].seconds = json_integer_value(x);
                        } else
                                return config_error(c, -EINVAL, "unknown field \"%s[%zu].%s\"", field, i, key);
                }
        }
        free(o->shutdown_by_priority);
        o->shutdown_by_priority = TAKE_PTR(l);
        o->n_shutdown_by_priority = n;
        return 0;
}

int options_config_headers(struct config_ctx *c, const char *field, json_t *v, struct kubelet_options *o) {
        char ***target = &o->manifest_url_headers;
        _cleanup_strv_free_ char **l = NULL;
        const char *key;
        json_t *values;

        if (!json_is_object(v))
                return config_error(c, -EINVAL,
                                    "staticPodURLHeader: expected a map of header names to lists of values, "
                                    "got %s",
                                    json_type_name(v));
        json_object_foreach(v, key, values) {
                size_t i;
                json_t *e;

                if (json_is_null(values))
                        continue;
                if (!json_is_array(values))
                        return config_error(c, -EINVAL, "staticPodURLHeader.%s: expected a list of strings, got %s",
                                            key, json_type_name(values));
                json_array_foreach(values, i, e) {
                        _cleanup_ck_error_ struct ck_error *why = NULL;
                        int r;

                        if (!json_is_string(e))
                                return config_error(c, -EINVAL, "staticPodURLHeader.%s[%zu]: expected a string, got %s",
                                                    key, i, json_type_name(e));
                        r = options_header_add(&l, key, json_string_value(e), &why);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                return config_error(c, -EINVAL, "staticPodURLHeader.%s[%zu]: %s", key, i,
                                                    why ? ck_error_message(why) : "n/a");
                }
        }
        strv_free(*target);
        *target = TAKE_PTR(l);
        return 0;
}

/* Is V a zero value, the way kubeadm writes fields it leaves at their defaults ("0s", 0, false, "", {}, [],
 * objects of such)? Those are not worth a warning: they ask for nothing. */
static bool json_is_zero(json_t *v) {
        const char *key;
        json_t *e;

        switch (json_typeof(v)) {
        case JSON_NULL:
        case JSON_FALSE:
                return true;
        case JSON_INTEGER:
                return json_integer_value(v) == 0;
        case JSON_REAL:
                return json_real_value(v) == 0;
        case JSON_STRING:
                return json_string_length(v) == 0 || streq(json_string_value(v), "0") ||
                       streq(json_string_value(v), "0s");
        case JSON_ARRAY:
                return json_array_size(v) == 0;
        case JSON_OBJECT:
                json_object_foreach(v, key, e)
                        if (!json_is_zero(e))
                                return false;
                return true;
        default:
                return false;
        }
}

/* featureGates: map of gate name to boolean, gate by gate on top of what is there */
int options_config_feature_gates(struct config_ctx *c, const char *field, json_t *v, struct kubelet_options *o) {
        const char *key;
        json_t *value;

        if (!json_is_object(v))
                return config_error(c, -EINVAL, "featureGates: expected a map of gate names to booleans, got %s",
                                    json_type_name(v));
        json_object_foreach(v, key, value) {
                _cleanup_ck_error_ struct ck_error *why = NULL;
                int r;

                if (json_is_null(value))
                        continue;
                if (!json_is_boolean(value))
                        return config_error(c, -EINVAL, "featureGates.%s: expected a boolean, got %s", key,
                                            json_type_name(value));
                r = feature_gates_set(&o->feature_gates, key, json_is_true(value), !c->quiet, &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return config_error(c, r, "featureGates: %s", ck_error_message(why));
        }
        return 0;
}

int options_config_max_parallel_image_pulls(struct config_ctx *c, const char *field, json_t *v,
                                            struct kubelet_options *o) {
        int r = config_int(c, field, v, &o->max_parallel_image_pulls);

        if (r >= 0)
                o->max_parallel_image_pulls_set = true;
        return r;
}

/* The row that reads the config field PATH ("maxPods", "authentication.webhook.enabled"), or NULL */
static const struct flag_def *config_def_find(const char *path) {
        for (size_t i = 0; i < options_n_flag_defs; i++)
                if (options_flag_defs[i].field && streq(options_flag_defs[i].field, path))
                        return &options_flag_defs[i];
        for (size_t i = 0; i < options_n_config_only_defs; i++)
                if (streq(options_config_only_defs[i].field, path))
                        return &options_config_only_defs[i];
        return NULL;
}

/* Is PATH an object some rows' fields are in ("authentication", "authentication.webhook")? */
static bool config_is_object(const char *path) {
        size_t n = strlen(path);

        for (size_t i = 0; i < options_n_flag_defs; i++)
                if (options_flag_defs[i].field && strneq(options_flag_defs[i].field, path, n) &&
                    options_flag_defs[i].field[n] == '.')
                        return true;
        for (size_t i = 0; i < options_n_config_only_defs; i++)
                if (strneq(options_config_only_defs[i].field, path, n) && options_config_only_defs[i].field[n] == '.')
                        return true;
        return false;
}

/* V into the option the row F names, by the row's config kind */
static int config_read(struct config_ctx *c, const struct flag_def *f, const char *path, json_t *v,
                       struct kubelet_options *o) {
        char *base = (char *) o;
        json_int_t i = 0;
        int r;

        switch (f->cfg) {
        case CONFIG_PATH:
                return config_string(c, path, v, true, (char **) (base + f->offset));
        case CONFIG_PATH_DEFAULT:
                if (json_is_string(v) && json_string_length(v) == 0)
                        return 0;
                return config_string(c, path, v, true, (char **) (base + f->offset));
        case CONFIG_STRING_DEFAULT:
                return config_string_default(c, path, v, (char **) (base + f->offset));
        case CONFIG_DURATION_ANY:
                return config_duration_value(c, path, v, (uint64_t *) (base + f->offset));
        case CONFIG_INT32_DEFAULT:
                r = config_int32(c, path, v, INT32_MIN, &i);
                if (r >= 0 && i != 0)
                        *(int *) (base + f->offset) = (int) i;
                return r;
        case CONFIG_LIST:
                return config_string_list(c, path, v, (char **) (base + f->offset));
        case CONFIG_MAP:
                return config_string_map(c, path, v, (char **) (base + f->offset));
        case CONFIG_TAINTS:
                return config_taints(c, path, v, (char **) (base + f->offset));
        case CONFIG_RESERVED_MEMORY:
                return config_reserved_memory(c, path, v, (char **) (base + f->offset));
        case CONFIG_CUSTOM:
                return f->custom(c, path, v, o);
        case CONFIG_AUTO:
                break;
        }

        switch (f->kind) {
        case FLAG_STRING:
                return config_string(c, path, v, false, (char **) (base + f->offset));
        case FLAG_DURATION:
                return config_duration(c, path, v, (uint64_t *) (base + f->offset));
        case FLAG_INT:
                return config_int(c, path, v, (int *) (base + f->offset));
        case FLAG_INT64:
                if (!json_is_integer(v))
                        return config_error(c, -EINVAL, "%s: expected an integer, got %s", path, json_type_name(v));
                *(int64_t *) (base + f->offset) = json_integer_value(v);
                return 0;
        case FLAG_BOOL:
                return config_bool(c, path, v, (bool *) (base + f->offset));
        case FLAG_MAP:
        case FLAG_LANGLE_MAP:
                return config_string_map(c, path, v, (char **) (base + f->offset));
        case FLAG_VERBOSITY:
                r = config_int32(c, path, v, 0, &i);
                if (r >= 0)
                        o->verbosity = (int) i;
                return r;
        default:
                assert(!"a flag kind with no config reader");
                return -EINVAL;
        }
}

/* One field of the file (PATH: its name, dotted inside objects), by the table: a row's field, an object holding
 * some, a field upstream has and ckubelet does not (a warning), or an error naming it. */
static int config_field(struct config_ctx *c, const char *path, json_t *v, struct kubelet_options *o) {
        const struct flag_def *f;

        if (json_is_null(v))
                return 0; /* as encoding/json: null leaves the field alone */

        f = config_def_find(path);
        if (f)
                return config_read(c, f, path, v, o);

        if (config_is_object(path)) {
                const char *key;
                json_t *value;

                if (!json_is_object(v))
                        return config_error(c, -EINVAL, "%s: expected an object, got %s", path, json_type_name(v));
                json_object_foreach(v, key, value) {
                        _cleanup_free_ char *sub = NULL;
                        int r;

                        if (asprintf(&sub, "%s.%s", path, key) < 0)
                                return -ENOMEM;
                        r = config_field(c, sub, value, o);
                        if (r < 0)
                                return r;
                }
                return 0;
        }

        if (options_strv_contains(options_unsupported_fields, options_n_unsupported_fields, path)) {
                if (!c->quiet && !json_is_zero(v))
                        log_warning("%s: field %s is not supported by ckubelet, ignored", c->path, path);
                return 0;
        }
        return config_error(c, -EINVAL, "unknown field \"%s\"", path);
}

static int config_apply_field(struct config_ctx *c, const char *key, json_t *v, struct kubelet_options *o) {
        if (streq(key, "apiVersion") || streq(key, "kind"))
                return 0; /* checked by the caller */
        return config_field(c, key, v, o);
}

static int check_type_meta(struct config_ctx *c, json_t *doc, const char *key, const char *want) {
        json_t *v = json_object_get(doc, key);

        if (!v || json_is_null(v) || (json_is_string(v) && isempty(json_string_value(v))))
                return config_error(c, -EINVAL, "%s: Required value: must be \"%s\"", key, want);
        if (!json_is_string(v))
                return config_error(c, -EINVAL, "%s: expected a string, got %s", key, json_type_name(v));
        if (!streq(json_string_value(v), want))
                return config_error(c, -EINVAL, "%s: unsupported value \"%s\": must be \"%s\"", key,
                                    json_string_value(v), want);
        return 0;
}

/* Read PATH: exactly one KubeletConfiguration object (type meta checked). */
static int read_config_doc(const char *path, json_t **ret, struct ck_error **ret_error) {
        _cleanup_free_ char *data = NULL;
        _cleanup_ck_error_ struct ck_error *yerr = NULL;
        struct config_ctx c = { .path = path, .error = ret_error };
        json_t *docs = NULL, *doc;
        size_t size;
        int r;

        r = read_full_file(path, KUBELET_CONFIG_MAX_SIZE, &data, &size);
        if (r == -ENOMEM)
                return r;
        if (r == -EFBIG)
                return config_error(&c, r, "config file is too large (more than %u bytes)", KUBELET_CONFIG_MAX_SIZE);
        if (r < 0)
                return config_error(&c, r, "cannot read config file: %s", strerror(-r));
        r = yaml_to_json_docs(data, size, &docs, &yerr);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_error(&c, -EINVAL, "%s", yerr ? ck_error_message(yerr) : "cannot parse YAML/JSON");

        if (json_array_size(docs) == 0)
                r = config_error(&c, -EINVAL, "config file is empty");
        else if (json_array_size(docs) > 1)
                r = config_error(&c, -EINVAL, "expected one KubeletConfiguration document, found %zu",
                                 json_array_size(docs));
        else if (!json_is_object(doc = json_array_get(docs, 0)))
                r = config_error(&c, -EINVAL, "expected a KubeletConfiguration object, got %s", json_type_name(doc));
        else {
                r = check_type_meta(&c, doc, "apiVersion", KUBELET_CONFIG_API_VERSION);
                if (r >= 0)
                        r = check_type_meta(&c, doc, "kind", KUBELET_CONFIG_KIND);
                if (r >= 0)
                        *ret = json_incref(doc);
        }
        json_decref(docs);
        return r;
}

/* upstream's resolveRelativePaths on the --config document: relative paths of its path fields are taken from the
 * file's directory (drop-ins are not resolved, as upstream) */
static int resolve_relative_paths(json_t *doc, const char *path) {
        static const char *const fields[][2] = {
                { "staticPodPath", NULL },     { "podLogsDir", NULL }, { "tlsCertFile", NULL },
                { "tlsPrivateKeyFile", NULL }, { "resolvConf", NULL }, { "authentication", "x509" },
        };
        _cleanup_free_ char *dir = NULL;
        const char *slash = strrchr(path, '/');

        dir = slash ? (slash == path ? strdup("/") : strndup(path, (size_t) (slash - path))) : strdup(".");
        if (!dir)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                json_t *parent = doc, *v;
                const char *key = fields[i][0];
                char *abs;

                if (fields[i][1]) { /* authentication.x509.clientCAFile */
                        parent = json_object_get(json_object_get(doc, key), fields[i][1]);
                        key = "clientCAFile";
                }
                v = json_is_object(parent) ? json_object_get(parent, key) : NULL;
                if (!json_is_string(v) || json_string_length(v) == 0 || json_string_value(v)[0] == '/')
                        continue;
                if (asprintf(&abs, "%s/%s", dir, json_string_value(v)) < 0)
                        return -ENOMEM;
                if (json_object_set_new(parent, key, json_string(abs)) < 0) {
                        free(abs);
                        return -ENOMEM;
                }
                free(abs);
        }
        return 0;
}

json_t *kubelet_options_merge_patch(json_t *target, json_t *patch) {
        const char *key;
        json_t *v;

        if (!json_is_object(patch)) {
                json_decref(target);
                return json_incref(patch);
        }
        if (!json_is_object(target)) {
                json_decref(target);
                target = json_object();
                if (!target)
                        return NULL;
        }
        json_object_foreach(patch, key, v) {
                if (json_is_null(v))
                        json_object_del(target, key);
                else {
                        json_t *merged = kubelet_options_merge_patch(json_incref(json_object_get(target, key)), v);
                        if (!merged || json_object_set_new(target, key, merged) < 0) {
                                json_decref(target);
                                return NULL;
                        }
                }
        }
        return target;
}

static int cmp_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int dropins_walk(const char *dir, unsigned depth, char ***files, char ***skipped, struct ck_error **ret_error) {
        _cleanup_strv_free_ char **names = NULL;
        size_t n;
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (depth > KUBELET_CONFIG_DIR_MAX_DEPTH)
                return ck_error_set(ret_error, -ELOOP, "--config-dir: %s: more than %u directories deep", dir,
                                    KUBELET_CONFIG_DIR_MAX_DEPTH);
        d = opendir(dir);
        if (!d)
                return ck_error_set(ret_error, negative_errno(),
                                    "failed to walk through kubelet dropin directory \"%s\": %m", dir);
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (strv_length(names) >= KUBELET_CONFIG_DIR_MAX_FILES) {
                        r = ck_error_set(ret_error, -E2BIG, "--config-dir: %s: more than %u entries", dir,
                                         KUBELET_CONFIG_DIR_MAX_FILES);
                        break;
                }
                r = strv_extend(&names, de->d_name);
                if (r < 0)
                        break;
        }
        closedir(d);
        if (r < 0)
                return r;
        n = strv_length(names);
        if (n > 1)
                qsort(names, n, sizeof(char *), cmp_names);
        /* as filepath.WalkDir: entries in lexical order, a directory's files where the directory comes */
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                struct stat st;

                if (asprintf(&path, "%s/%s", dir, names[i]) < 0)
                        return -ENOMEM;
                if (lstat(path, &st) < 0)
                        return ck_error_set(ret_error, negative_errno(), "--config-dir: cannot read %s: %m", path);
                if (S_ISDIR(st.st_mode)) {
                        r = dropins_walk(path, depth + 1, files, skipped, ret_error);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (strv_length(*files) + strv_length(*skipped) >= KUBELET_CONFIG_DIR_MAX_FILES)
                        return ck_error_set(ret_error, -E2BIG, "--config-dir %s: more than %u files", dir,
                                            KUBELET_CONFIG_DIR_MAX_FILES);
                r = strv_push(endswith(names[i], ".conf") ? files : skipped, TAKE_PTR(path));
                if (r < 0)
                        return r;
        }
        return 0;
}

int kubelet_options_dropins(const char *dir, char ***ret_files, char ***ret_skipped, struct ck_error **ret_error) {
        _cleanup_strv_free_ char **files = NULL, **skipped = NULL;
        int r;

        r = dropins_walk(dir, 0, &files, &skipped, ret_error);
        if (r < 0)
                return r;
        *ret_files = TAKE_PTR(files);
        if (ret_skipped)
                *ret_skipped = TAKE_PTR(skipped);
        return 0;
}

static int apply_config_doc(struct kubelet_options *o, json_t *doc, const char *name, bool quiet,
                            struct ck_error **ret_error) {
        struct config_ctx c = { .path = name, .quiet = quiet, .error = ret_error };
        const char *key;
        json_t *v;
        int r;

        json_object_foreach(doc, key, v) {
                r = config_apply_field(&c, key, v, o);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Check one document on its own (so that an error names its file), without warnings. */
static int check_config_doc(json_t *doc, const char *name, struct ck_error **ret_error) {
        struct kubelet_options scratch;
        int r;

        r = kubelet_options_init(&scratch);
        if (r < 0)
                return r;
        r = apply_config_doc(&scratch, doc, name, true, ret_error);
        kubelet_options_done(&scratch);
        return r;
}

/* The --config file, then the --config-dir drop-ins merged over it in upstream's order (JSON merge patches, as
 * mergeKubeletConfigurations), applied over the defaults. */
int options_load_configuration(struct kubelet_options *o, const char *path, const char *dropin_dir,
                               struct ck_error **ret_error) {
        _cleanup_strv_free_ char **files = NULL, **skipped = NULL;
        _cleanup_free_ char *merged_name = NULL;
        json_t *base = NULL;
        int r;

        if (path) {
                r = read_config_doc(path, &base, ret_error);
                if (r < 0)
                        return r;
                r = resolve_relative_paths(base, path);
                if (r >= 0 && dropin_dir)
                        r = check_config_doc(base, path, ret_error);
                if (r < 0)
                        goto finish;
        }
        if (dropin_dir) {
                r = kubelet_options_dropins(dropin_dir, &files, &skipped, ret_error);
                if (r < 0)
                        goto finish;
                for (char **s = skipped; s && *s; s++)
                        log_v(4, "Skipped file in drop-in directory (does not have .conf extension): %s", *s);
                for (char **f = files; f && *f; f++) {
                        json_t *doc = NULL;

                        r = read_config_doc(*f, &doc, ret_error);
                        if (r >= 0)
                                r = check_config_doc(doc, *f, ret_error);
                        if (r < 0) {
                                json_decref(doc);
                                goto finish;
                        }
                        base = kubelet_options_merge_patch(base, doc);
                        json_decref(doc);
                        if (!base) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        log_v(2, "Merged the kubelet configuration drop-in %s", *f);
                }
                if (asprintf(&merged_name, "%s%s%s (merged with --config-dir %s)", path ? "--config " : "",
                             strempty(path), path ? "" : "the kubelet configuration", dropin_dir) < 0) {
                        merged_name = NULL;
                        r = -ENOMEM;
                        goto finish;
                }
        }
        r = base ? apply_config_doc(o, base, merged_name ? merged_name : path, false, ret_error) : 0;
finish:
        json_decref(base);
        return r;
}
