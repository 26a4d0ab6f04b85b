/* SPDX-License-Identifier: Apache-2.0 */
/* CredentialProviderConfig: decoding (strict) and validation, with upstream's messages. */
#include "credentialprovider/plugin/config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apis/pod.h"
#include "basic/yaml_json.h"
#include "basic/duration.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/json.h"
#include "basic/string.h"
#include "basic/strv.h"

#define CONFIG_FILE_MAX (1024u * 1024u)
#define CONFIG_FILES_MAX 256
#define PROVIDERS_MAX 1024

static const char *const config_versions[] = {
        "kubelet.config.k8s.io/v1",
        "kubelet.config.k8s.io/v1beta1",
        "kubelet.config.k8s.io/v1alpha1",
};

/* sorted, as upstream lists them in its NotSupported error */
static const char *const request_versions[] = {
        "credentialprovider.kubelet.k8s.io/v1",
        "credentialprovider.kubelet.k8s.io/v1alpha1",
        "credentialprovider.kubelet.k8s.io/v1beta1",
};

void credprov_config_done(struct credprov_config *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++) {
                struct credprov_provider *p = &c->providers[i];
                free(p->name);
                strv_free(p->match_images);
                free(p->api_version);
                strv_free(p->args);
                for (size_t j = 0; j < p->n_env; j++) {
                        free(p->env[j].name);
                        free(p->env[j].value);
                }
                free(p->env);
                if (p->token_attributes) {
                        free(p->token_attributes->audience);
                        strv_free(p->token_attributes->required_annotation_keys);
                        strv_free(p->token_attributes->optional_annotation_keys);
                        free(p->token_attributes->cache_type);
                        free(p->token_attributes);
                }
        }
        free(c->providers);
        *c = (struct credprov_config) {};
}

/* ---------------------------------------------------------------- decoding */

static bool key_known(const char *key, const char *const *known) {
        for (size_t i = 0; known[i]; i++)
                if (streq(key, known[i]))
                        return true;
        return false;
}

/* strict decoding: every key must be one the type has */
static int check_fields(const json_t *obj, const char *path, const char *const *known, struct ck_error **ret_error) {
        const char *key;
        json_t *v;

        json_object_foreach((json_t *) obj, key, v)
                if (!key_known(key, known))
                        return ck_error_set(ret_error, -EINVAL, "strict decoding error: unknown field \"%s%s%s\"",
                                            strempty(path), isempty(path) ? "" : ".", key);
        return 0;
}

static int get_string(const json_t *obj, const char *key, const char *path, char **ret, struct ck_error **ret_error) {
        const json_t *v = json_object_get(obj, key);

        if (!v || json_is_null(v)) {
                *ret = NULL;
                return 0;
        }
        if (!json_is_string(v))
                return ck_error_set(ret_error, -EINVAL,
                                    "json: cannot unmarshal %s into Go struct field %s.%s of type string",
                                    json_is_object(v)  ? "object"
                                    : json_is_array(v) ? "array"
                                                       : "number",
                                    path, key);
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

static int get_strv(const json_t *obj, const char *key, const char *path, char ***ret, struct ck_error **ret_error) {
        const json_t *v = json_object_get(obj, key), *e;
        _cleanup_strv_free_ char **l = NULL;
        size_t i;

        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_array(v))
                return ck_error_set(ret_error, -EINVAL,
                                    "json: cannot unmarshal into Go struct field %s.%s of type []string", path, key);
        json_array_foreach(v, i, e) {
                if (!json_is_string(e))
                        return ck_error_set(ret_error, -EINVAL,
                                            "json: cannot unmarshal into Go struct field %s.%s of type string", path,
                                            key);
                if (strv_extend(&l, json_string_value(e)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

#define NO_DURATION INT64_MIN

static int decode_token_attributes(const json_t *o, const char *path, struct credprov_token_attributes **ret,
                                   struct ck_error **ret_error) {
        static const char *const fields[] = { "serviceAccountTokenAudience",
                                              "requireServiceAccount",
                                              "requiredServiceAccountAnnotationKeys",
                                              "optionalServiceAccountAnnotationKeys",
                                              "cacheType",
                                              NULL };
        const char *t = "ServiceAccountTokenAttributes";
        struct credprov_token_attributes *a;
        char tpath[96];
        const json_t *req;
        int r;

        if (!o || json_is_null(o))
                return 0;
        snprintf(tpath, sizeof(tpath), "%s.tokenAttributes", path);
        if (!json_is_object(o))
                return ck_error_set(ret_error, -EINVAL,
                                    "json: cannot unmarshal into Go struct field CredentialProvider.tokenAttributes of "
                                    "type ServiceAccountTokenAttributes");
        r = check_fields(o, tpath, fields, ret_error);
        if (r < 0)
                return r;
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        *ret = a; /* freed with the provider */
        if ((r = get_string(o, "serviceAccountTokenAudience", t, &a->audience, ret_error)) < 0 ||
            (r = get_strv(o, "requiredServiceAccountAnnotationKeys", t, &a->required_annotation_keys, ret_error)) < 0 ||
            (r = get_strv(o, "optionalServiceAccountAnnotationKeys", t, &a->optional_annotation_keys, ret_error)) < 0 ||
            (r = get_string(o, "cacheType", t, &a->cache_type, ret_error)) < 0)
                return r;
        req = json_object_get(o, "requireServiceAccount");
        if (req && !json_is_null(req)) {
                if (!json_is_boolean(req))
                        return ck_error_set(ret_error, -EINVAL,
                                            "json: cannot unmarshal into Go struct field "
                                            "ServiceAccountTokenAttributes.requireServiceAccount of type bool");
                a->has_require_service_account = true;
                a->require_service_account = json_is_true(req);
        }
        return 0;
}

static int decode_provider(const json_t *o, size_t index, struct credprov_provider *p, struct ck_error **ret_error) {
        static const char *const fields[] = { "name", "matchImages", "defaultCacheDuration", "apiVersion",
                                              "args", "env",         "tokenAttributes",      NULL };
        static const char *const env_fields[] = { "name", "value", NULL };
        char path[64];
        const json_t *d, *env, *e;
        size_t i;
        int r;

        snprintf(path, sizeof(path), "providers[%zu]", index);
        if (!json_is_object(o))
                return ck_error_set(ret_error, -EINVAL,
                                    "json: cannot unmarshal into Go struct field %s of type "
                                    "CredentialProvider",
                                    path);
        r = check_fields(o, path, fields, ret_error);
        if (r < 0)
                return r;
        if ((r = get_string(o, "name", "CredentialProvider", &p->name, ret_error)) < 0 ||
            (r = get_strv(o, "matchImages", "CredentialProvider", &p->match_images, ret_error)) < 0 ||
            (r = get_string(o, "apiVersion", "CredentialProvider", &p->api_version, ret_error)) < 0 ||
            (r = get_strv(o, "args", "CredentialProvider", &p->args, ret_error)) < 0)
                return r;
        p->default_cache_duration_nsec = NO_DURATION;
        d = json_object_get(o, "defaultCacheDuration");
        if (d && !json_is_null(d)) {
                if (!json_is_string(d))
                        return ck_error_set(ret_error, -EINVAL, "defaultCacheDuration: not a duration string");
                if (go_duration_parse(json_string_value(d), &p->default_cache_duration_nsec, ret_error) < 0)
                        return -EINVAL;
        }
        r = decode_token_attributes(json_object_get(o, "tokenAttributes"), path, &p->token_attributes, ret_error);
        if (r < 0)
                return r;
        env = json_object_get(o, "env");
        if (env && !json_is_null(env)) {
                if (!json_is_array(env))
                        return ck_error_set(ret_error, -EINVAL,
                                            "json: cannot unmarshal into Go struct field CredentialProvider.env "
                                            "of type []ExecEnvVar");
                p->env = calloc(json_array_size(env) ? json_array_size(env) : 1, sizeof(*p->env));
                if (!p->env)
                        return -ENOMEM;
                json_array_foreach(env, i, e) {
                        char epath[96];
                        snprintf(epath, sizeof(epath), "%s.env[%zu]", path, i);
                        if (!json_is_object(e))
                                return ck_error_set(ret_error, -EINVAL,
                                                    "json: cannot unmarshal into Go struct field "
                                                    "CredentialProvider.env of type ExecEnvVar");
                        r = check_fields(e, epath, env_fields, ret_error);
                        if (r < 0)
                                return r;
                        r = get_string(e, "name", "ExecEnvVar", &p->env[i].name, ret_error);
                        if (r >= 0)
                                r = get_string(e, "value", "ExecEnvVar", &p->env[i].value, ret_error);
                        p->n_env = i + 1;
                        if (r < 0)
                                return r;
                        if (!p->env[i].name && !(p->env[i].name = strdup("")))
                                return -ENOMEM;
                        if (!p->env[i].value && !(p->env[i].value = strdup("")))
                                return -ENOMEM;
                }
        }
        return 0;
}

/* decode one document, appending its providers to c */
static int decode(const json_t *doc, struct credprov_config *c, struct ck_error **ret_error) {
        static const char *const fields[] = { "apiVersion", "kind", "providers", NULL };
        const char *api = json_string_at(doc, "apiVersion", NULL), *kind = json_string_at(doc, "kind", NULL);
        const json_t *providers, *p;
        bool known = false;
        size_t i;
        int r;

        if (!json_is_object(doc))
                return ck_error_set(ret_error, -EINVAL, "couldn't get version/kind; json parse error: not an object");
        if (isempty(kind))
                return ck_error_set(ret_error, -EINVAL, "Object 'Kind' is missing in the document");
        for (size_t k = 0; k < ELEMENTSOF(config_versions); k++)
                known = known || streq(api, config_versions[k]);
        if (!known) {
                const char *slash = strrchr(api, '/');
                if (slash && strneq(api, "kubelet.config.k8s.io/", strlen("kubelet.config.k8s.io/")))
                        return ck_error_set(ret_error, -EINVAL,
                                            "no kind \"%s\" is registered for version \"%s\" in scheme", kind, api);
                if (!slash)
                        return ck_error_set(ret_error, -EINVAL,
                                            "failed to decode CredentialProviderConfig, unexpected Group: %s", "");
                return ck_error_set(ret_error, -EINVAL,
                                    "failed to decode CredentialProviderConfig, unexpected Group: %.*s",
                                    (int) (slash - api), api);
        }
        if (!streq(kind, "CredentialProviderConfig"))
                return ck_error_set(ret_error, -EINVAL, "failed to decode \"%s\" (wrong Kind)", kind);
        r = check_fields(doc, NULL, fields, ret_error);
        if (r < 0)
                return r;
        providers = json_object_get(doc, "providers");
        if (providers && !json_is_null(providers) && !json_is_array(providers))
                return ck_error_set(ret_error, -EINVAL,
                                    "json: cannot unmarshal into Go struct field "
                                    "CredentialProviderConfig.providers of type []CredentialProvider");
        json_array_foreach(providers, i, p) {
                struct credprov_provider *np;
                if (c->n >= PROVIDERS_MAX)
                        return ck_error_set(ret_error, -EINVAL, "too many providers (at most %d)", PROVIDERS_MAX);
                np = reallocarray(c->providers, c->n + 1, sizeof(*np));
                if (!np)
                        return -ENOMEM;
                c->providers = np;
                np[c->n] = (struct credprov_provider) {};
                r = decode_provider(p, i, &np[c->n], ret_error);
                c->n++;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---------------------------------------------------------------- validation */

const char *credprov_match_image_invalid(const char *s) {
        const char *slash, *host_end, *colon;

        if (isempty(s))
                return "empty host";
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p < 0x20 || *p == 0x7f || *p == ' ')
                        return "invalid character in URL";
        if (strstr(s, "://"))
                return "first path segment in URL cannot contain colon";
        slash = strchr(s, '/');
        host_end = slash ? slash : s + strlen(s);
        if (host_end == s)
                return "empty host";
        colon = memrchr(s, ':', (size_t) (host_end - s));
        if (colon) {
                if (colon + 1 == host_end)
                        return NULL; /* "host:" is accepted as an empty port */
                for (const char *p = colon + 1; p < host_end; p++)
                        if (*p < '0' || *p > '9')
                                return "invalid port after host";
        }
        return NULL;
}

struct errs {
        char **items;
};

static int add_err(struct errs *e, const char *fmt, ...) _printf_(2, 3);
static int add_err(struct errs *e, const char *fmt, ...) {
        char *m;
        if (VA_FORMAT(m, fmt) < 0)
                return -ENOMEM;
        return strv_push(&e->items, m);
}

/* validateServiceAccountAnnotationKeys: qualified names (case does not matter), no duplicate */
static int validate_annotation_keys(struct errs *e, const char *field, char **keys) {
        int r = 0;

        for (size_t i = 0; r >= 0 && keys && keys[i]; i++) {
                _cleanup_free_ char *lower = strdup(keys[i]);
                const char *why;

                if (!lower)
                        return -ENOMEM;
                for (char *c = lower; *c; c++)
                        *c = (char) tolower((unsigned char) *c);
                why = validate_qualified_name(lower);
                if (why)
                        r = add_err(e, "providers.tokenAttributes.%s: Invalid value: \"%s\": %s", field, keys[i], why);
                for (size_t j = 0; r >= 0 && j < i; j++)
                        if (streq(keys[j], keys[i])) {
                                r = add_err(e, "providers.tokenAttributes.%s: Duplicate value: \"%s\"", field, keys[i]);
                                break;
                        }
        }
        return r;
}

static int cmp_key(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int validate_token_attributes(struct errs *e, const struct credprov_provider *p) {
        const struct credprov_token_attributes *a = p->token_attributes;
        _cleanup_strv_free_ char **both = NULL;
        int r = 0;

        if (isempty(a->audience))
                r = add_err(e, "providers.tokenAttributes.serviceAccountTokenAudience: Required value");
        if (r >= 0 && !a->has_require_service_account)
                r = add_err(e, "providers.tokenAttributes.requireServiceAccount: Required value");
        if (r >= 0 && !streq_ptr(p->api_version, "credentialprovider.kubelet.k8s.io/v1"))
                r = add_err(e, "providers.tokenAttributes: Forbidden: tokenAttributes is only supported for "
                               "credentialprovider.kubelet.k8s.io/v1 API version");
        if (r >= 0 && a->has_require_service_account && !a->require_service_account &&
            strv_length(a->required_annotation_keys) > 0)
                r = add_err(e,
                            "providers.tokenAttributes.requiredServiceAccountAnnotationKeys: Forbidden: "
                            "requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set");
        if (r >= 0)
                r = validate_annotation_keys(e, "requiredServiceAccountAnnotationKeys", a->required_annotation_keys);
        if (r >= 0)
                r = validate_annotation_keys(e, "optionalServiceAccountAnnotationKeys", a->optional_annotation_keys);
        for (size_t i = 0; r >= 0 && a->required_annotation_keys && a->required_annotation_keys[i]; i++)
                if (strv_contains(a->optional_annotation_keys, a->required_annotation_keys[i]) &&
                    !strv_contains(both, a->required_annotation_keys[i]))
                        r = strv_extend(&both, a->required_annotation_keys[i]);
        if (r >= 0 && both) {
                _cleanup_free_ char *j = NULL;
                qsort(both, strv_length(both), sizeof(char *), cmp_key);
                j = strv_join(both, " ");
                if (!j)
                        return -ENOMEM;
                /* field.Invalid of a []string prints it with %v */
                r = add_err(e,
                            "providers.tokenAttributes: Invalid value: [%s]: annotation keys cannot be both "
                            "required and optional",
                            j);
        }
        if (r >= 0 && isempty(a->cache_type))
                r = add_err(e, "providers.tokenAttributes.cacheType: Required value: cacheType is required to be set "
                               "when tokenAttributes is specified. Supported values are: ServiceAccount, Token");
        else if (r >= 0 && !streq(a->cache_type, "ServiceAccount") && !streq(a->cache_type, "Token"))
                r = add_err(e,
                            "providers.tokenAttributes.cacheType: Unsupported value: \"%s\": supported values: "
                            "\"ServiceAccount\", \"Token\"",
                            a->cache_type);
        return r;
}

static int validate(const struct credprov_config *c, struct ck_error **ret_error) {
        struct errs e = {};
        _cleanup_strv_free_ char **seen = NULL;
        _cleanup_free_ char *joined = NULL;
        int r = 0;

        if (c->n == 0)
                r = add_err(&e, "providers: Required value: at least 1 item in plugins is required");
        for (size_t i = 0; r >= 0 && i < c->n; i++) {
                const struct credprov_provider *p = &c->providers[i];
                const char *name = strempty(p->name);
                bool known = false;

                if (strchr(name, '/'))
                        r = add_err(&e, "providers.name: Invalid value: \"%s\": provider name cannot contain '/'",
                                    name);
                if (r >= 0 && strchr(name, ' '))
                        r = add_err(&e, "providers.name: Invalid value: \"%s\": provider name cannot contain spaces",
                                    name);
                if (r >= 0 && streq(name, "."))
                        r = add_err(&e, "providers.name: Invalid value: \".\": provider name cannot be '.'");
                if (r >= 0 && streq(name, ".."))
                        r = add_err(&e, "providers.name: Invalid value: \"..\": provider name cannot be '..'");
                if (r >= 0 && strv_contains(seen, name))
                        r = add_err(&e, "providers.name: Duplicate value: \"%s\"", name);
                if (r >= 0)
                        r = strv_extend(&seen, name);
                for (size_t k = 0; k < ELEMENTSOF(request_versions); k++)
                        known = known || streq_ptr(p->api_version, request_versions[k]);
                if (r >= 0 && isempty(p->api_version))
                        r = add_err(&e, "providers.apiVersion: Required value");
                else if (r >= 0 && !known)
                        r = add_err(&e,
                                    "providers.apiVersion: Unsupported value: \"%s\": supported values: \"%s\", "
                                    "\"%s\", \"%s\"",
                                    p->api_version, request_versions[0], request_versions[1], request_versions[2]);
                if (r >= 0 && strv_length(p->match_images) == 0)
                        r = add_err(&e, "providers.matchImages: Required value: at least 1 item in matchImages is "
                                        "required");
                for (size_t j = 0; r >= 0 && p->match_images && p->match_images[j]; j++) {
                        const char *why = credprov_match_image_invalid(p->match_images[j]);
                        if (why)
                                r = add_err(&e,
                                            "providers.matchImages: Invalid value: \"%s\": match image is invalid: "
                                            "parse \"https://%s\": %s",
                                            p->match_images[j], p->match_images[j], why);
                }
                if (r >= 0 && p->default_cache_duration_nsec == NO_DURATION)
                        r = add_err(&e, "providers.defaultCacheDuration: Required value");
                else if (r >= 0 && p->default_cache_duration_nsec < 0) {
                        char buf[GO_DURATION_MAX];
                        r = add_err(&e,
                                    "providers.defaultCacheDuration: Invalid value: \"%s\": defaultCacheDuration "
                                    "must be greater than or equal to 0",
                                    go_duration_format(p->default_cache_duration_nsec, buf, sizeof(buf)));
                }
                if (r >= 0 && p->token_attributes)
                        r = validate_token_attributes(&e, p);
        }
        if (r < 0) {
                strv_free(e.items);
                return r;
        }
        if (!e.items)
                return 0;
        joined = strv_join(e.items, ", ");
        r = strv_length(e.items) > 1
                    ? ck_error_set(ret_error, -EINVAL, "failed to validate credential provider config: [%s]",
                                   strempty(joined))
                    : ck_error_set(ret_error, -EINVAL, "failed to validate credential provider config: %s",
                                   strempty(joined));
        strv_free(e.items);
        return r;
}

/* ---------------------------------------------------------------- entry points */

static int parse_doc(const char *data, size_t size, struct credprov_config *c, struct ck_error **ret_error) {
        json_auto_t *docs = NULL;
        int r;

        r = yaml_to_json_docs(data, size, &docs, ret_error);
        if (r < 0)
                return r;
        if (json_array_size(docs) != 1)
                return ck_error_set(ret_error, -EINVAL, "want one CredentialProviderConfig document, found %zu",
                                    json_array_size(docs));
        return decode(json_array_get(docs, 0), c, ret_error);
}

static bool config_file_name(const char *n) {
        return n[0] != '.' && (endswith(n, ".json") || endswith(n, ".yaml") || endswith(n, ".yml"));
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int credprov_config_load(const char *path, struct credprov_config *ret, struct ck_error **ret_error) {
        struct credprov_config c = {};
        _cleanup_strv_free_ char **files = NULL;
        struct stat st;
        int r = 0;

        if (isempty(path))
                return ck_error_set(ret_error, -EINVAL, "credential provider config path is empty");
        if (stat(path, &st) < 0)
                return ck_error_set(ret_error, -EINVAL, "unable to access path \"%s\": %s", path, strerror(errno));
        if (S_ISDIR(st.st_mode)) {
                _cleanup_closedir_ DIR *d = opendir(path);
                struct dirent *de;
                if (!d)
                        return ck_error_set(ret_error, -EINVAL, "unable to read directory \"%s\": %s", path,
                                            strerror(errno));
                while ((de = readdir(d))) {
                        char *full;
                        struct stat fst;
                        if (!config_file_name(de->d_name))
                                continue;
                        if (strv_length(files) >= CONFIG_FILES_MAX)
                                return ck_error_set(ret_error, -EINVAL,
                                                    "too many configuration files in directory \"%s\"", path);
                        if (asprintf(&full, "%s/%s", path, de->d_name) < 0 || strv_push(&files, full) < 0)
                                return -ENOMEM;
                        if (stat(full, &fst) == 0 && S_ISDIR(fst.st_mode))
                                strv_remove_at(files, strv_length(files) - 1);
                }
                if (!files)
                        return ck_error_set(ret_error, -EINVAL, "no configuration files found in directory \"%s\"",
                                            path);
                qsort(files, strv_length(files), sizeof(char *), cmp_str);
        } else if (strv_extend(&files, path) < 0)
                return -ENOMEM;

        for (size_t i = 0; files[i]; i++) {
                _cleanup_free_ char *data = NULL;
                size_t size;
                size_t before = c.n;

                r = read_full_file(files[i], CONFIG_FILE_MAX, &data, &size);
                if (r < 0) {
                        r = ck_error_set(ret_error, -EINVAL, "unable to read file \"%s\": %s", files[i], strerror(-r));
                        goto fail;
                }
                r = parse_doc(data, size, &c, ret_error);
                if (r < 0) {
                        ck_error_prefix(ret_error, "error decoding config \"%s\"", files[i]);
                        goto fail;
                }
                /* a name given again in another file */
                for (size_t j = before; j < c.n; j++)
                        for (size_t k = 0; k < before; k++)
                                if (streq_ptr(c.providers[j].name, c.providers[k].name)) {
                                        r = ck_error_set(
                                                ret_error, -EINVAL,
                                                "duplicate provider name \"%s\" found in configuration file(s)",
                                                strempty(c.providers[j].name));
                                        goto fail;
                                }
        }
        r = validate(&c, ret_error);
        if (r < 0)
                goto fail;
        *ret = c;
        return 0;
fail:
        credprov_config_done(&c);
        return r;
}
