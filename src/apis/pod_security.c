/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding and validation of a container's environment sources: env[].valueFrom (fieldRef, resourceFieldRef,
 * configMapKeyRef, secretKeyRef) and envFrom[] (k8s.io/api/core/v1 EnvVarSource, EnvFromSource), with the
 * apiserver's wording (pkg/apis/core/validation validateEnvVarValueFrom, ValidateEnvFrom). */

#include <arpa/inet.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "apis/fieldpath.h"
#include "basic/string.h"
#include "basic/strv.h"

/* ---------------------------------------------------------------- freeing */

static void key_selector_free(struct key_selector *k) {
        if (!k)
                return;
        free(k->name);
        free(k->key);
        free(k);
}

static void env_ref_free(struct env_ref *r) {
        if (!r)
                return;
        free(r->name);
        free(r);
}

void env_var_source_free(struct env_var_source *s) {
        if (!s)
                return;
        if (s->field_ref) {
                free(s->field_ref->api_version);
                free(s->field_ref->field_path);
                free(s->field_ref);
        }
        if (s->resource_field_ref) {
                free(s->resource_field_ref->container_name);
                free(s->resource_field_ref->resource);
                quantity_done(&s->resource_field_ref->divisor);
                free(s->resource_field_ref);
        }
        key_selector_free(s->config_map_key_ref);
        key_selector_free(s->secret_key_ref);
        free(s);
}

void container_env_from_done(struct container *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n_env_from; i++) {
                free(c->env_from[i].prefix);
                env_ref_free(c->env_from[i].config_map_ref);
                env_ref_free(c->env_from[i].secret_ref);
        }
        free(c->env_from);
        c->env_from = NULL;
        c->n_env_from = 0;
}

/* ---------------------------------------------------------------- decoding */

static int dec_key_selector(struct field_errors *e, json_t *obj, const char *parent, const char *key,
                            struct key_selector **ret) {
        _cleanup_free_ char *p = NULL;
        struct key_selector *k;
        json_t *o;
        int r;

        r = dec_get_object(e, obj, parent, key, &o);
        if (r < 0 || !o)
                return r;
        p = path_child(parent, key);
        k = *ret = calloc(1, sizeof(*k));
        if (!p || !k)
                return -ENOMEM;
        r = dec_get_string(e, o, p, "name", &k->name);
        if (r >= 0)
                r = dec_get_string(e, o, p, "key", &k->key);
        if (r >= 0)
                r = dec_get_bool(e, o, p, "optional", &k->optional);
        return r;
}

/* env[i].valueFrom; *ret is set (allocated) as soon as the object exists, so that the caller frees it */
int dec_env_var_source(struct field_errors *e, json_t *obj, const char *path, struct env_var_source **ret) {
        _cleanup_free_ char *p = NULL;
        struct env_var_source *s;
        json_t *vf, *o;
        int r;

        r = dec_get_object(e, obj, path, "valueFrom", &vf);
        if (r < 0 || !vf)
                return r;
        p = path_child(path, "valueFrom");
        s = *ret = calloc(1, sizeof(*s));
        if (!p || !s)
                return -ENOMEM;

        r = dec_get_object(e, vf, p, "fieldRef", &o);
        if (r >= 0 && o) {
                _cleanup_free_ char *fp = path_child(p, "fieldRef");
                s->field_ref = calloc(1, sizeof(*s->field_ref));
                if (!fp || !s->field_ref)
                        return -ENOMEM;
                r = dec_get_string(e, o, fp, "apiVersion", &s->field_ref->api_version);
                if (r >= 0)
                        r = dec_get_string(e, o, fp, "fieldPath", &s->field_ref->field_path);
        }
        if (r >= 0)
                r = dec_get_object(e, vf, p, "resourceFieldRef", &o);
        if (r >= 0 && o) {
                _cleanup_free_ char *rp = path_child(p, "resourceFieldRef");
                struct resource_field_selector *rs;
                rs = s->resource_field_ref = calloc(1, sizeof(*rs));
                if (!rp || !rs)
                        return -ENOMEM;
                r = dec_get_string(e, o, rp, "containerName", &rs->container_name);
                if (r >= 0)
                        r = dec_get_string(e, o, rp, "resource", &rs->resource);
                if (r >= 0)
                        r = dec_get_quantity(e, o, rp, "divisor", &rs->divisor);
                rs->has_divisor = rs->divisor.str != NULL;
        }
        if (r >= 0)
                r = dec_key_selector(e, vf, p, "configMapKeyRef", &s->config_map_key_ref);
        if (r >= 0)
                r = dec_key_selector(e, vf, p, "secretKeyRef", &s->secret_key_ref);
        return r;
}

static int dec_env_ref(struct field_errors *e, json_t *obj, const char *parent, const char *key,
                       struct env_ref **ret) {
        _cleanup_free_ char *p = NULL;
        struct env_ref *ref;
        json_t *o;
        int r;

        r = dec_get_object(e, obj, parent, key, &o);
        if (r < 0 || !o)
                return r;
        p = path_child(parent, key);
        ref = *ret = calloc(1, sizeof(*ref));
        if (!p || !ref)
                return -ENOMEM;
        r = dec_get_string(e, o, p, "name", &ref->name);
        if (r >= 0)
                r = dec_get_bool(e, o, p, "optional", &ref->optional);
        return r;
}

static int decode_env_from_item(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct env_from_source *ef = item;
        int r;

        r = dec_get_string(e, v, ip, "prefix", &ef->prefix);
        if (r >= 0)
                r = dec_env_ref(e, v, ip, "configMapRef", &ef->config_map_ref);
        if (r >= 0)
                r = dec_env_ref(e, v, ip, "secretRef", &ef->secret_ref);
        return r;
}

int dec_env_from(struct field_errors *e, json_t *c, const char *cpath, struct container *ret) {
        return dec_object_list(e, c, cpath, "envFrom", sizeof(struct env_from_source), (void **) &ret->env_from,
                               &ret->n_env_from, decode_env_from_item);
}

/* ---------------------------------------------------------------- validation */

/* fieldpath.SplitMaybeSubscriptedPath: "metadata.labels['k']" → "metadata.labels", "k". The returned path is
 * allocated (NULL on OOM); *ret_sub points into fp. */
static const char *const downward_field_labels[] = {
        "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
        "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
        "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
};

static const char *const env_field_paths[] = {
        "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
        "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
};

static bool in_list(const char *s, const char *const *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (streq(s, l[i]))
                        return true;
        return false;
}

/* validateObjectFieldSelector with validEnvDownwardAPIFieldPathExpressions */
static void validate_field_ref(struct vctx *c, const struct object_field_selector *fs, const char *fpath) {
        const char *version = fs->api_version ? fs->api_version : "v1"; /* SetDefaults_ObjectFieldSelector */
        _cleanup_free_ char *ap = val_child(c, fpath, "apiVersion"), *pp = val_child(c, fpath, "fieldPath");
        _cleanup_free_ char *path = NULL, *sub = NULL, *msg = NULL;
        const char *s;
        size_t sl;

        if (!ap || !pp)
                return;
        if (isempty(version)) {
                val_required(c, ap, NULL);
                return;
        }
        if (isempty(fs->field_path)) {
                val_required(c, pp, NULL);
                return;
        }
        /* ConvertDownwardAPIFieldLabel */
        if (!streq(version, "v1")) {
                if (asprintf(&msg, "error converting fieldPath: unsupported pod version: %s", version) < 0) {
                        msg = NULL;
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                val_invalid_str(c, pp, fs->field_path, msg);
                return;
        }
        if (fieldpath_split_subscript(fs->field_path, &path, &s, &sl)) {
                if (!path || !(sub = strndup(s, sl))) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                if (!streq(path, "metadata.annotations") && !streq(path, "metadata.labels")) {
                        if (asprintf(&msg, "error converting fieldPath: field label does not support subscript: %s",
                                     fs->field_path) < 0) {
                                msg = NULL;
                                CHECK_OOM(c, -ENOMEM);
                                return;
                        }
                        val_invalid_str(c, pp, fs->field_path, msg);
                        return;
                }
                if (streq(path, "metadata.annotations"))
                        for (char *p = sub; *p; p++)
                                if (*p >= 'A' && *p <= 'Z')
                                        *p = (char) (*p - 'A' + 'a');
                val_check_name(c, fpath, sub, check_qualified_name);
                return;
        }
        if (!in_list(fs->field_path, downward_field_labels, ELEMENTSOF(downward_field_labels)) &&
            !streq(fs->field_path, "spec.host")) {
                if (asprintf(&msg, "error converting fieldPath: field label not supported: %s", fs->field_path) < 0) {
                        msg = NULL;
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                val_invalid_str(c, pp, fs->field_path, msg);
                return;
        }
        s = streq(fs->field_path, "spec.host") ? "spec.nodeName" : fs->field_path;
        if (!in_list(s, env_field_paths, ELEMENTSOF(env_field_paths)))
                val_not_supported(c, pp, s,
                                  "\"metadata.name\", \"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", "
                                  "\"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", "
                                  "\"status.podIP\", \"status.podIPs\"");
}

static const char *const resource_field_paths[] = {
        "limits.cpu", "limits.ephemeral-storage", "limits.memory",
        "requests.cpu", "requests.ephemeral-storage", "requests.memory",
};

static bool divisor_in(const char *canon, const char *const *l, size_t n) {
        return canon && in_list(canon, l, n);
}

/* validateContainerResourceFieldSelector (volume = false) and validateContainerResourceDivisor */
static void validate_resource_field_ref(struct vctx *c, const struct resource_field_selector *fs,
                                        const char *fpath) {
        static const char *const cpu_divisors[] = { "1m", "1" };
        static const char *const mem_divisors[] = { "1",  "1k", "1M", "1G", "1T", "1P", "1E",
                                                    "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei" };
        _cleanup_free_ char *rp = val_child(c, fpath, "resource"), *dp = val_child(c, fpath, "divisor");
        _cleanup_free_ char *canon = NULL;
        const char *res = fs->resource;
        __int128 nano = 0;

        if (!rp || !dp)
                return;
        if (isempty(res))
                val_required(c, rp, NULL);
        else if (!in_list(res, resource_field_paths, ELEMENTSOF(resource_field_paths)) &&
                 !startswith(res, "limits.hugepages-") && !startswith(res, "requests.hugepages-"))
                val_not_supported(c, rp, res,
                                  "\"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", "
                                  "\"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"");
        if (!fs->has_divisor || !fs->divisor.str || quantity_parse_exact(fs->divisor.str, &nano, NULL, NULL) < 0 ||
            nano == 0 || !res)
                return;
        canon = quantity_canonical(&fs->divisor);
        if (!canon) {
                CHECK_OOM(c, -ENOMEM);
                return;
        }
        if (streq(res, "limits.cpu") || streq(res, "requests.cpu")) {
                if (!divisor_in(canon, cpu_divisors, ELEMENTSOF(cpu_divisors)))
                        val_invalid_str(c, dp, res, "only divisor's values 1m and 1 are supported with the cpu resource");
        } else if (streq(res, "limits.memory") || streq(res, "requests.memory")) {
                if (!divisor_in(canon, mem_divisors, ELEMENTSOF(mem_divisors)))
                        val_invalid_str(c, dp, res,
                                        "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, "
                                        "1Ei are supported with the memory resource");
        } else if (streq(res, "limits.ephemeral-storage") || streq(res, "requests.ephemeral-storage")) {
                if (!divisor_in(canon, mem_divisors, ELEMENTSOF(mem_divisors)))
                        val_invalid_str(c, dp, res,
                                        "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, "
                                        "1Ei are supported with the local ephemeral storage resource");
        } else if (startswith(res, "limits.hugepages-") || startswith(res, "requests.hugepages-")) {
                if (!divisor_in(canon, mem_divisors, ELEMENTSOF(mem_divisors)))
                        val_invalid_str(c, dp, res,
                                        "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, "
                                        "1Ei are supported with the hugepages resource");
        }
}

/* validation.IsConfigMapKey */
static void validate_config_map_key(struct vctx *c, const char *path, const char *key) {
        size_t l = strlen(key);
        bool ok = l > 0;

        if (l > 253) {
                _cleanup_free_ char *m = NULL;
                if (asprintf(&m, "must be no more than %d characters", 253) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                val_invalid_str(c, path, key, m);
        }
        for (const char *p = key; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                      *p == '-' || *p == '_' || *p == '.'))
                        ok = false;
        if (!ok)
                val_invalid_str(c, path, key,
                                "a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
                                "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                                "'[-._a-zA-Z0-9]+')");
        if (streq(key, "."))
                val_invalid_str(c, path, key, "must not be '.'");
        else if (streq(key, ".."))
                val_invalid_str(c, path, key, "must not be '..'");
        else if (startswith(key, ".."))
                val_invalid_str(c, path, key, "must not start with '..'");
}

/* validateConfigMapKeySelector / validateSecretKeySelector */
static void validate_key_selector(struct vctx *c, const struct key_selector *k, const char *kpath) {
        _cleanup_free_ char *np = val_child(c, kpath, "name"), *kp = val_child(c, kpath, "key");
        if (!np || !kp)
                return;
        val_check_name(c, np, strempty(k->name), check_dns1123_subdomain);
        if (isempty(k->key))
                val_required(c, kp, NULL);
        else
                validate_config_map_key(c, kp, k->key);
}

/* validateEnvVarValueFrom */
void val_env_value_from(struct vctx *c, const struct env_var *ev, const char *vpath) {
        const struct env_var_source *s = ev->value_from;
        size_t n = 0;

        if (!s)
                return;
        if (s->field_ref) {
                _cleanup_free_ char *p = val_child(c, vpath, "fieldRef");
                n++;
                if (p)
                        validate_field_ref(c, s->field_ref, p);
        }
        if (s->resource_field_ref) {
                _cleanup_free_ char *p = val_child(c, vpath, "resourceFieldRef");
                n++;
                if (p)
                        validate_resource_field_ref(c, s->resource_field_ref, p);
        }
        if (s->config_map_key_ref) {
                _cleanup_free_ char *p = val_child(c, vpath, "configMapKeyRef");
                n++;
                if (p)
                        validate_key_selector(c, s->config_map_key_ref, p);
        }
        if (s->secret_key_ref) {
                _cleanup_free_ char *p = val_child(c, vpath, "secretKeyRef");
                n++;
                if (p)
                        validate_key_selector(c, s->secret_key_ref, p);
        }
        if (n == 0)
                val_invalid_str(c, vpath, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`");
        else if (!isempty(ev->value))
                val_invalid_str(c, vpath, "", "may not be specified when `value` is not empty");
        else if (n > 1)
                val_invalid_str(c, vpath, "", "may not have more than one field specified at a time");
}

static void validate_env_ref(struct vctx *c, const struct env_ref *ref, const char *rpath) {
        _cleanup_free_ char *np = val_child(c, rpath, "name");
        if (!np)
                return;
        if (isempty(ref->name))
                val_required(c, np, NULL);
        else
                val_check_name(c, np, ref->name, check_dns1123_subdomain);
}

/* ValidateEnvFrom */
void val_env_from(struct vctx *c, const struct container *ctr, const char *cpath) {
        _cleanup_free_ char *ep = NULL;

        if (ctr->n_env_from == 0)
                return;
        ep = val_child(c, cpath, "envFrom");
        if (!ep)
                return;
        for (size_t i = 0; i < ctr->n_env_from; i++) {
                const struct env_from_source *ef = &ctr->env_from[i];
                _cleanup_free_ char *ip = val_idx(c, ep, i);
                size_t n = 0;
                if (!ip)
                        return;
                if (!isempty(ef->prefix)) {
                        _cleanup_free_ char *pp = val_child(c, ip, "prefix");
                        if (!pp)
                                return;
                        val_check_name(c, pp, ef->prefix, check_env_var_name);
                }
                if (ef->config_map_ref) {
                        _cleanup_free_ char *p = val_child(c, ip, "configMapRef");
                        n++;
                        if (p)
                                validate_env_ref(c, ef->config_map_ref, p);
                }
                if (ef->secret_ref) {
                        _cleanup_free_ char *p = val_child(c, ip, "secretRef");
                        n++;
                        if (p)
                                validate_env_ref(c, ef->secret_ref, p);
                }
                if (n == 0)
                        val_invalid_str(c, ep, "", "must specify one of: `configMapRef` or `secretRef`");
                else if (n > 1)
                        val_invalid_str(c, ep, "", "may not have more than one field specified at a time");
        }
}

/* ================================================================ securityContext */

static void seccomp_profile_free(struct seccomp_profile *s) {
        if (!s)
                return;
        free(s->type);
        free(s->localhost_profile);
        free(s);
}

void security_context_free(struct security_context *sc) {
        if (!sc)
                return;
        strv_free(sc->capabilities_add);
        strv_free(sc->capabilities_drop);
        free(sc->proc_mount);
        seccomp_profile_free(sc->seccomp_profile);
        free(sc);
}

void pod_security_context_free(struct pod_security_context *sc) {
        if (!sc)
                return;
        free(sc->supplemental_groups);
        for (size_t i = 0; i < sc->n_sysctls; i++) {
                free(sc->sysctls[i].name);
                free(sc->sysctls[i].value);
        }
        free(sc->sysctls);
        seccomp_profile_free(sc->seccomp_profile);
        free(sc);
}

static int dec_seccomp_profile(struct field_errors *e, json_t *obj, const char *parent,
                               struct seccomp_profile **ret) {
        _cleanup_free_ char *p = NULL;
        struct seccomp_profile *s;
        json_t *o;
        int r;

        r = dec_get_object(e, obj, parent, "seccompProfile", &o);
        if (r < 0 || !o)
                return r;
        p = path_child(parent, "seccompProfile");
        s = *ret = calloc(1, sizeof(*s));
        if (!p || !s)
                return -ENOMEM;
        r = dec_get_string(e, o, p, "type", &s->type);
        if (r >= 0)
                r = dec_get_string(e, o, p, "localhostProfile", &s->localhost_profile);
        return r;
}

static int dec_id(struct field_errors *e, json_t *o, const char *p, const char *key, bool *ret_set, int64_t *ret) {
        return dec_get_integer(e, o, p, key, INT64_MIN, INT64_MAX, "int64", ret_set, ret);
}

int dec_container_security_context(struct field_errors *e, json_t *c, const char *cpath, struct container *ret) {
        _cleanup_free_ char *p = NULL;
        struct security_context *sc;
        json_t *o, *caps;
        int r;

        r = dec_get_object(e, c, cpath, "securityContext", &o);
        if (r < 0 || !o)
                return r;
        p = path_child(cpath, "securityContext");
        sc = ret->security_context = calloc(1, sizeof(*sc));
        if (!p || !sc)
                return -ENOMEM;
        r = dec_get_object(e, o, p, "capabilities", &caps);
        if (r >= 0 && caps) {
                _cleanup_free_ char *cp = path_child(p, "capabilities");
                if (!cp)
                        return -ENOMEM;
                r = dec_get_strv(e, caps, cp, "add", &sc->capabilities_add);
                if (r >= 0)
                        r = dec_get_strv(e, caps, cp, "drop", &sc->capabilities_drop);
        }
        if (r >= 0) {
                json_t *v = dec_get(o, "privileged");
                sc->has_privileged = json_is_boolean(v);
                r = dec_get_bool(e, o, p, "privileged", &sc->privileged);
        }
        if (r >= 0)
                r = dec_id(e, o, p, "runAsUser", &sc->has_run_as_user, &sc->run_as_user);
        if (r >= 0)
                r = dec_id(e, o, p, "runAsGroup", &sc->has_run_as_group, &sc->run_as_group);
        if (r >= 0) {
                sc->has_run_as_non_root = json_is_boolean(dec_get(o, "runAsNonRoot"));
                r = dec_get_bool(e, o, p, "runAsNonRoot", &sc->run_as_non_root);
        }
        if (r >= 0) {
                sc->has_read_only_root_filesystem = json_is_boolean(dec_get(o, "readOnlyRootFilesystem"));
                r = dec_get_bool(e, o, p, "readOnlyRootFilesystem", &sc->read_only_root_filesystem);
        }
        if (r >= 0) {
                sc->has_allow_privilege_escalation = json_is_boolean(dec_get(o, "allowPrivilegeEscalation"));
                r = dec_get_bool(e, o, p, "allowPrivilegeEscalation", &sc->allow_privilege_escalation);
        }
        if (r >= 0)
                r = dec_get_string(e, o, p, "procMount", &sc->proc_mount);
        if (r >= 0)
                r = dec_seccomp_profile(e, o, p, &sc->seccomp_profile);
        return r;
}

static int decode_sysctl(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct sysctl *s = item;
        int r = dec_get_string(e, v, ip, "name", &s->name);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "value", &s->value);
        return r;
}

int dec_pod_security_context(struct field_errors *e, json_t *spec, struct pod_spec *ret) {
        static const char p[] = "spec.securityContext";
        struct pod_security_context *sc;
        json_t *o, *groups;
        int r;

        r = dec_get_object(e, spec, "spec", "securityContext", &o);
        if (r < 0 || !o)
                return r;
        sc = ret->security_context = calloc(1, sizeof(*sc));
        if (!sc)
                return -ENOMEM;
        r = dec_id(e, o, p, "runAsUser", &sc->has_run_as_user, &sc->run_as_user);
        if (r >= 0)
                r = dec_id(e, o, p, "runAsGroup", &sc->has_run_as_group, &sc->run_as_group);
        if (r >= 0) {
                sc->has_run_as_non_root = json_is_boolean(dec_get(o, "runAsNonRoot"));
                r = dec_get_bool(e, o, p, "runAsNonRoot", &sc->run_as_non_root);
        }
        if (r >= 0)
                r = dec_id(e, o, p, "fsGroup", &sc->has_fs_group, &sc->fs_group);
        if (r >= 0)
                r = dec_get_array(e, o, p, "supplementalGroups", MAX_LIST_ITEMS, &groups);
        if (r >= 0 && groups && json_array_size(groups) > 0) {
                size_t i;
                json_t *g;
                sc->supplemental_groups = calloc(json_array_size(groups), sizeof(int64_t));
                if (!sc->supplemental_groups)
                        return -ENOMEM;
                json_array_foreach(groups, i, g) {
                        if (!json_is_integer(g)) {
                                _cleanup_free_ char *gp = NULL;
                                if (asprintf(&gp, "%s.supplementalGroups[%zu]", p, i) < 0)
                                        return -ENOMEM;
                                r = dec_type_error(e, gp, g, "integer");
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        sc->supplemental_groups[sc->n_supplemental_groups++] = json_integer_value(g);
                }
        }
        if (r >= 0)
                r = dec_object_list(e, o, p, "sysctls", sizeof(struct sysctl), (void **) &sc->sysctls, &sc->n_sysctls,
                                    decode_sysctl);
        if (r >= 0)
                r = dec_seccomp_profile(e, o, p, &sc->seccomp_profile);
        return r;
}

/* IsValidUserID / IsValidGroupID */
static void validate_id(struct vctx *c, const char *parent, const char *name, bool set, int64_t v) {
        _cleanup_free_ char *p = NULL;
        if (!set || (v >= 0 && v <= INT32_MAX))
                return;
        p = val_child(c, parent, name);
        if (p)
                val_invalid_int(c, p, v, "must be between 0 and 2147483647, inclusive");
}

static void validate_seccomp_profile(struct vctx *c, const struct seccomp_profile *sp, const char *parent) {
        _cleanup_free_ char *p = val_child(c, parent, "seccompProfile"), *tp = NULL, *lp = NULL;
        const char *t = strempty(sp->type);

        if (!p || !(tp = val_child(c, p, "type")) || !(lp = val_child(c, p, "localhostProfile")))
                return;
        if (isempty(t))
                val_required(c, tp, "type is required when seccompProfile is set");
        else if (!streq(t, "Localhost") && !streq(t, "RuntimeDefault") && !streq(t, "Unconfined"))
                val_not_supported(c, tp, t, "\"Localhost\", \"RuntimeDefault\", \"Unconfined\"");
        if (streq(t, "Localhost")) {
                const char *lpf = sp->localhost_profile;
                if (!lpf)
                        val_required(c, lp, "must be set when seccomp type is Localhost");
                else {
                        /* validateLocalDescendingPath */
                        _cleanup_free_ char *copy = strdup(lpf);
                        char *save = NULL;
                        if (!copy) {
                                CHECK_OOM(c, -ENOMEM);
                                return;
                        }
                        if (lpf[0] == '/')
                                val_invalid_str(c, lp, lpf, "must be a relative path");
                        for (char *part = strtok_r(copy, "/", &save); part; part = strtok_r(NULL, "/", &save))
                                if (streq(part, "..")) {
                                        val_invalid_str(c, lp, lpf, "must not contain '..'");
                                        break;
                                }
                }
        } else if (sp->localhost_profile)
                val_invalid_str(c, lp, sp->localhost_profile, "can only be set when seccomp type is Localhost");
}

/* IsValidSysctlName: ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$, at most 253 */
bool sysctl_name_is_valid(const char *s) {
        size_t l = strlen(s), seg = 0;
        char prev = 0;

        if (l == 0 || l > 253)
                return false;
        for (size_t i = 0; i <= l; i++) {
                char ch = s[i];
                bool end = ch == 0 || ch == '.' || ch == '/';
                if (end) {
                        if (seg == 0 || prev == '-' || prev == '_')
                                return false;
                        seg = 0;
                } else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) {
                        seg++;
                } else if (ch == '-' || ch == '_') {
                        if (seg == 0)
                                return false;
                        seg++;
                } else
                        return false;
                prev = ch;
        }
        return true;
}

void val_pod_security_context(struct vctx *c, const struct pod_spec *s) {
        static const char p[] = "spec.securityContext";
        const struct pod_security_context *sc = s->security_context;

        if (!sc)
                return;
        validate_id(c, p, "runAsUser", sc->has_run_as_user, sc->run_as_user);
        validate_id(c, p, "runAsGroup", sc->has_run_as_group, sc->run_as_group);
        for (size_t i = 0; i < sc->n_supplemental_groups; i++) {
                char name[64];
                snprintf(name, sizeof(name), "supplementalGroups[%zu]", i);
                validate_id(c, p, name, true, sc->supplemental_groups[i]);
        }
        validate_id(c, p, "fsGroup", sc->has_fs_group, sc->fs_group);
        for (size_t i = 0; i < sc->n_sysctls; i++) {
                _cleanup_free_ char *np = NULL;
                if (asprintf(&np, "%s.sysctls[%zu].name", p, i) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                if (isempty(sc->sysctls[i].name))
                        val_required(c, np, NULL);
                else if (!sysctl_name_is_valid(sc->sysctls[i].name))
                        val_invalid_str(c, np, sc->sysctls[i].name,
                                        "must have at most 253 characters and match regex "
                                        "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$");
                else
                        for (size_t j = 0; j < i; j++)
                                if (streq_ptr(sc->sysctls[j].name, sc->sysctls[i].name)) {
                                        val_duplicate_str(c, np, sc->sysctls[i].name);
                                        break;
                                }
        }
        if (sc->seccomp_profile)
                validate_seccomp_profile(c, sc->seccomp_profile, p);
}

/* ValidateSecurityContext */
void val_container_security_context(struct vctx *c, const struct container *ctr, const char *cpath) {
        const struct security_context *sc = ctr->security_context;
        _cleanup_free_ char *p = NULL;

        if (!sc)
                return;
        p = val_child(c, cpath, "securityContext");
        if (!p)
                return;
        validate_id(c, p, "runAsUser", sc->has_run_as_user, sc->run_as_user);
        validate_id(c, p, "runAsGroup", sc->has_run_as_group, sc->run_as_group);
        if (sc->proc_mount) {
                _cleanup_free_ char *pp = val_child(c, p, "procMount");
                if (!pp)
                        return;
                if (!streq(sc->proc_mount, "Default") && !streq(sc->proc_mount, "Unmasked"))
                        val_not_supported(c, pp, sc->proc_mount, "\"Default\", \"Unmasked\"");
                else if (streq(sc->proc_mount, "Unmasked")) /* no user namespaces: hostUsers is always true */
                        val_invalid_str(c, pp, sc->proc_mount, "`hostUsers` must be false to use `Unmasked`");
        }
        if (sc->seccomp_profile)
                validate_seccomp_profile(c, sc->seccomp_profile, p);
        if (sc->has_allow_privilege_escalation && !sc->allow_privilege_escalation) {
                if (sc->has_privileged && sc->privileged)
                        val_invalid_str(c, p, "object", "cannot set `allowPrivilegeEscalation` to false and `privileged` to true");
                for (size_t i = 0; sc->capabilities_add && sc->capabilities_add[i]; i++)
                        if (streq(sc->capabilities_add[i], "CAP_SYS_ADMIN"))
                                val_invalid_str(c, p, "object",
                                                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN");
        }
}

/* ================================================================ dnsConfig */

void pod_dns_config_free(struct pod_dns_config *d) {
        if (!d)
                return;
        strv_free(d->nameservers);
        strv_free(d->searches);
        for (size_t i = 0; i < d->n_options; i++) {
                free(d->options[i].name);
                free(d->options[i].value);
        }
        free(d->options);
        free(d);
}

static int decode_dns_option(struct field_errors *e, json_t *v, const char *ip, void *item) {
        struct pod_dns_option *o = item;
        int r = dec_get_string(e, v, ip, "name", &o->name);
        if (r >= 0)
                r = dec_get_string(e, v, ip, "value", &o->value);
        return r;
}

int dec_pod_dns_config(struct field_errors *e, json_t *spec, struct pod_spec *ret) {
        static const char p[] = "spec.dnsConfig";
        struct pod_dns_config *d;
        json_t *o;
        int r;

        r = dec_get_object(e, spec, "spec", "dnsConfig", &o);
        if (r < 0 || !o)
                return r;
        d = ret->dns_config = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        r = dec_get_strv(e, o, p, "nameservers", &d->nameservers);
        if (r >= 0)
                r = dec_get_strv(e, o, p, "searches", &d->searches);
        if (r >= 0)
                r = dec_object_list(e, o, p, "options", sizeof(struct pod_dns_option), (void **) &d->options,
                                    &d->n_options, decode_dns_option);
        return r;
}

/* Go's %#v of a []string, as field.Invalid prints a list value */
static char *go_strv_literal(char *const *l) {
        char *s = strdup("[]string{"), *n;
        for (size_t i = 0; s && l && l[i]; i++) {
                _cleanup_free_ char *q = go_quote(l[i]);
                if (!q || asprintf(&n, "%s%s%s", s, i ? ", " : "", q) < 0)
                        n = NULL;
                free(s);
                s = n;
        }
        if (s && asprintf(&n, "%s}", s) >= 0) {
                free(s);
                return n;
        }
        free(s);
        return NULL;
}

/* validatePodDNSConfig (the dnsConfig values; the policy checks are in pod_validate.c) */
void val_pod_dns_config(struct vctx *c, const struct pod_spec *s) {
        const struct pod_dns_config *d = s->dns_config;
        size_t n, total = 0;

        if (!d)
                return;
        n = strv_length(d->nameservers);
        if (n > 3) {
                _cleanup_free_ char *v = go_strv_literal(d->nameservers);
                CHECK_OOM(c, v ? field_errors_add(c->errs, "spec.dnsConfig.nameservers",
                                                  "Invalid value: %s: must not have more than 3 nameservers", v)
                               : -ENOMEM);
        }
        for (size_t i = 0; i < n; i++) {
                unsigned char addr[16];
                _cleanup_free_ char *p = NULL;
                if (inet_pton(AF_INET, d->nameservers[i], addr) == 1 || inet_pton(AF_INET6, d->nameservers[i], addr) == 1)
                        continue;
                if (asprintf(&p, "spec.dnsConfig.nameservers[%zu]", i) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                val_invalid_str(c, p, d->nameservers[i], "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
        }
        n = strv_length(d->searches);
        for (size_t i = 0; i < n; i++)
                total += strlen(d->searches[i]) + (i > 0);
        if (n > 32 || total > 2048) {
                _cleanup_free_ char *v = go_strv_literal(d->searches);
                if (!v) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                if (n > 32)
                        CHECK_OOM(c, field_errors_add(c->errs, "spec.dnsConfig.searches",
                                                      "Invalid value: %s: must not have more than 32 search paths", v));
                if (total > 2048)
                        CHECK_OOM(c, field_errors_add(c->errs, "spec.dnsConfig.searches",
                                                      "Invalid value: %s: must not have more than 2048 characters "
                                                      "(including spaces) in the search list", v));
        }
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL, *trimmed = strdup(d->searches[i]);
                size_t l;
                if (!trimmed || asprintf(&p, "spec.dnsConfig.searches[%zu]", i) < 0) {
                        p = NULL;
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                l = strlen(trimmed);
                if (l > 0 && trimmed[l - 1] == '.')
                        trimmed[l - 1] = 0;
                val_check_name(c, p, trimmed, check_dns1123_subdomain);
        }
        for (size_t i = 0; i < d->n_options; i++) {
                _cleanup_free_ char *p = NULL;
                if (!isempty(d->options[i].name))
                        continue;
                if (asprintf(&p, "spec.dnsConfig.options[%zu]", i) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                val_required(c, p, "Option.Name must not be empty");
        }
}
