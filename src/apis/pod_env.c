/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding and validation of a container's environment sources: env[].valueFrom (fieldRef, resourceFieldRef,
 * configMapKeyRef, secretKeyRef, fileKeyRef) and envFrom[] (k8s.io/api/core/v1 EnvVarSource, EnvFromSource), with the
 * apiserver's wording (pkg/apis/core/validation validateEnvVarValueFrom, ValidateEnvFrom). */

#include <string.h>

#include "apis/apis-internal.h"
#include "apis/fieldpath.h"
#include "apis/pod_volumes.h"
#include "basic/string.h"

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
        if (s->file_key_ref) {
                free(s->file_key_ref->volume_name);
                free(s->file_key_ref->path);
                free(s->file_key_ref->key);
                free(s->file_key_ref);
        }
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
        if (r >= 0)
                r = dec_get_object(e, vf, p, "fileKeyRef", &o);
        if (r >= 0 && o) {
                _cleanup_free_ char *fp = path_child(p, "fileKeyRef");
                struct file_key_selector *fk;
                fk = s->file_key_ref = calloc(1, sizeof(*fk));
                if (!fp || !fk)
                        return -ENOMEM;
                r = dec_get_string(e, o, fp, "volumeName", &fk->volume_name);
                if (r >= 0)
                        r = dec_get_string(e, o, fp, "path", &fk->path);
                if (r >= 0)
                        r = dec_get_string(e, o, fp, "key", &fk->key);
                if (r >= 0)
                        r = dec_get_bool(e, o, fp, "optional", &fk->optional);
        }
        return r;
}

static int dec_env_ref(struct field_errors *e, json_t *obj, const char *parent, const char *key, struct env_ref **ret) {
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

static const char *const downward_field_labels[] = {
        "metadata.annotations", "metadata.labels", "metadata.name",      "metadata.namespace",
        "metadata.uid",         "spec.nodeName",   "spec.restartPolicy", "spec.serviceAccountName",
        "spec.schedulerName",   "status.phase",    "status.hostIP",      "status.hostIPs",
        "status.podIP",         "status.podIPs",
};

static const char *const env_field_paths[] = {
        "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
        "status.hostIP", "status.hostIPs",     "status.podIP", "status.podIPs",
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
        "limits.cpu",   "limits.ephemeral-storage",   "limits.memory",
        "requests.cpu", "requests.ephemeral-storage", "requests.memory",
};

static bool divisor_in(const char *canon, const char *const *l, size_t n) {
        return canon && in_list(canon, l, n);
}

/* validateContainerResourceFieldSelector (volume = false) and validateContainerResourceDivisor */
static void validate_resource_field_ref(struct vctx *c, const struct resource_field_selector *fs, const char *fpath) {
        static const char *const cpu_divisors[] = { "1m", "1" };
        static const char *const mem_divisors[] = { "1",   "1k",  "1M",  "1G",  "1T",  "1P", "1E",
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
                        val_invalid_str(c, dp, res,
                                        "only divisor's values 1m and 1 are supported with the cpu resource");
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
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                      *p == '_' || *p == '.'))
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

/* validatePathNoBacksteps: no ".." component ("/" separated) */
static bool path_has_backstep(const char *path) {
        for (const char *p = path; p;) {
                const char *slash = strchr(p, '/');
                size_t l = slash ? (size_t) (slash - p) : strlen(p);
                if (l == 2 && p[0] == '.' && p[1] == '.')
                        return true;
                p = slash ? slash + 1 : NULL;
        }
        return false;
}

/* validateFileKeySelector: key, volumeName, path, in upstream's order */
static void validate_file_key_selector(struct vctx *c, const struct file_key_selector *f, const char *fpath) {
        _cleanup_free_ char *kp = val_child(c, fpath, "key"), *vp = val_child(c, fpath, "volumeName"),
                            *pp = val_child(c, fpath, "path");

        if (!kp || !vp || !pp)
                return;
        if (isempty(f->key))
                val_required(c, kp, NULL);
        else
                val_check_name(c, kp, f->key, check_relaxed_env_var_name);
        if (isempty(f->volume_name))
                val_required(c, vp, NULL);
        else
                val_check_name(c, vp, f->volume_name, check_dns1123_label);
        if (isempty(f->path))
                val_required(c, pp, NULL);
        else if (path_has_backstep(f->path))
                val_invalid_str(c, pp, f->path, "must not contain '..'");
}

/* validateEnvVarValueFrom (with AllowEnvFilesValidation: the EnvFiles gate is on by default since v1.35) */
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
        if (s->file_key_ref) {
                _cleanup_free_ char *p = val_child(c, vpath, "fileKeyRef");
                n++;
                if (p)
                        validate_file_key_selector(c, s->file_key_ref, p);
        }
        if (n == 0)
                val_invalid_str(c, vpath, "",
                                "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, "
                                "`secretKeyRef` or `fileKeyRef`");
        else if (!isempty(ev->value))
                val_invalid_str(c, vpath, "", "may not be specified when `value` is not empty");
        else if (n > 1)
                val_invalid_str(c, vpath, "", "may not have more than one field specified at a time");
}

/* validateFileKeyRefVolumes: the volume a fileKeyRef names is an emptyDir of the pod (init, regular, then ephemeral
 * containers, as VisitContainersWithPath) */
static void val_file_key_ref_volumes_of(struct vctx *c, const struct pod *p, const struct container *ctrs, size_t n,
                                        const char *lpath) {
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < ctrs[i].n_env; j++) {
                        const struct env_var_source *vf = ctrs[i].env[j].value_from;
                        const struct volume *v;
                        _cleanup_free_ char *path = NULL;

                        if (!vf || !vf->file_key_ref)
                                continue;
                        if (asprintf(&path, "%s[%zu].env[%zu].valueFrom.fileKeyRef.volumeName", lpath, i, j) < 0) {
                                path = NULL;
                                CHECK_OOM(c, -ENOMEM);
                                return;
                        }
                        v = pod_volume_find(p, strempty(vf->file_key_ref->volume_name));
                        if (!v) {
                                _cleanup_free_ char *q = go_quote(strempty(vf->file_key_ref->volume_name));
                                CHECK_OOM(c, q ? field_errors_add(c->errs, path, "Not found: %s", q) : -ENOMEM);
                        } else if (v->type != VOLUME_EMPTY_DIR)
                                val_invalid_str(c, path, vf->file_key_ref->volume_name,
                                                "referenced volume must be of type emptyDir");
                }
}

void val_file_key_ref_volumes(struct vctx *c, const struct pod *p) {
        val_file_key_ref_volumes_of(c, p, p->spec.init_containers, p->spec.n_init_containers, "spec.initContainers");
        val_file_key_ref_volumes_of(c, p, p->spec.containers, p->spec.n_containers, "spec.containers");
        val_file_key_ref_volumes_of(c, p, p->spec.ephemeral_containers, p->spec.n_ephemeral_containers,
                                    "spec.ephemeralContainers");
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
                        val_check_name(c, pp, ef->prefix, check_relaxed_env_var_name);
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
