/* SPDX-License-Identifier: Apache-2.0 */
/* Decoding and validation of security contexts: the pod's (runAsUser, runAsGroup, runAsNonRoot, fsGroup,
 * supplementalGroups, sysctls, seccompProfile) and the container's (privileged, capabilities, readOnlyRootFilesystem,
 * allowPrivilegeEscalation, ...), k8s.io/api/core/v1 PodSecurityContext and SecurityContext, with the apiserver's
 * wording (pkg/apis/core/validation ValidatePodSecurityContext, ValidateSecurityContext). */

#include <string.h>

#include "apis/apis-internal.h"
#include "basic/string.h"
#include "basic/strv.h"

static void seccomp_profile_free(struct seccomp_profile *s) {
        if (!s)
                return;
        free(s->type);
        free(s->localhost_profile);
        free(s);
}

static void apparmor_profile_free(struct apparmor_profile *a) {
        if (!a)
                return;
        free(a->type);
        free(a->localhost_profile);
        free(a);
}

void security_context_free(struct security_context *sc) {
        if (!sc)
                return;
        strv_free(sc->capabilities_add);
        strv_free(sc->capabilities_drop);
        free(sc->proc_mount);
        seccomp_profile_free(sc->seccomp_profile);
        apparmor_profile_free(sc->apparmor_profile);
        free(sc);
}

void pod_security_context_free(struct pod_security_context *sc) {
        if (!sc)
                return;
        free(sc->supplemental_groups);
        free(sc->fs_group_change_policy);
        free(sc->supplemental_groups_policy);
        for (size_t i = 0; i < sc->n_sysctls; i++) {
                free(sc->sysctls[i].name);
                free(sc->sysctls[i].value);
        }
        free(sc->sysctls);
        seccomp_profile_free(sc->seccomp_profile);
        apparmor_profile_free(sc->apparmor_profile);
        free(sc);
}

static int dec_seccomp_profile(struct field_errors *e, json_t *obj, const char *parent, struct seccomp_profile **ret) {
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

static int dec_apparmor_profile(struct field_errors *e, json_t *obj, const char *parent,
                                struct apparmor_profile **ret) {
        _cleanup_free_ char *p = NULL;
        struct apparmor_profile *a;
        json_t *o;
        int r;

        r = dec_get_object(e, obj, parent, "appArmorProfile", &o);
        if (r < 0 || !o)
                return r;
        p = path_child(parent, "appArmorProfile");
        a = *ret = calloc(1, sizeof(*a));
        if (!p || !a)
                return -ENOMEM;
        r = dec_get_string(e, o, p, "type", &a->type);
        if (r >= 0)
                r = dec_get_string(e, o, p, "localhostProfile", &a->localhost_profile);
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
        if (r >= 0)
                r = dec_apparmor_profile(e, o, p, &sc->apparmor_profile);
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
                r = dec_get_string(e, o, p, "fsGroupChangePolicy", &sc->fs_group_change_policy);
        if (r >= 0)
                r = dec_get_string(e, o, p, "supplementalGroupsPolicy", &sc->supplemental_groups_policy);
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
        if (r >= 0)
                r = dec_apparmor_profile(e, o, p, &sc->apparmor_profile);
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

/* ValidateAppArmorProfileField */
static void validate_apparmor_profile(struct vctx *c, const struct apparmor_profile *a, const char *parent) {
        _cleanup_free_ char *p = val_child(c, parent, "appArmorProfile"), *tp = NULL, *lp = NULL;
        const char *t = strempty(a->type);

        if (!p || !(tp = val_child(c, p, "type")) || !(lp = val_child(c, p, "localhostProfile")))
                return;
        if (streq(t, "Localhost")) {
                const char *l = a->localhost_profile;
                size_t n = l ? strlen(l) : 0, b = 0, e = n;
                while (l && b < n && strchr(" \t\n\r\v\f", l[b]))
                        b++;
                while (l && e > b && strchr(" \t\n\r\v\f", l[e - 1]))
                        e--;
                if (!l)
                        val_required(c, lp, "must be set when AppArmor type is Localhost");
                else if (b != 0 || e != n)
                        val_invalid_str(c, lp, l, "must not be padded with whitespace");
                else if (n == 0)
                        val_required(c, lp, "must be set when AppArmor type is Localhost");
                if (l && n > 4095)
                        CHECK_OOM(c, field_errors_add(c->errs, lp, "Too long: may not be more than %d bytes", 4095));
        } else if (streq(t, "RuntimeDefault") || streq(t, "Unconfined")) {
                if (a->localhost_profile)
                        val_invalid_str(c, lp, a->localhost_profile, "can only be set when AppArmor type is Localhost");
        } else if (isempty(t))
                val_required(c, tp, "type is required when appArmorProfile is set");
        else
                val_not_supported(c, tp, t, "\"Localhost\", \"RuntimeDefault\", \"Unconfined\"");
}

/* ValidateAppArmorPodAnnotations: container.apparmor.security.beta.kubernetes.io/<container> names a container of
 * the pod and a profile "runtime/default", "unconfined" or "localhost/<name>" */
void val_apparmor_annotations(struct vctx *c, const struct pod *pod) {
        static const char prefix[] = "container.apparmor.security.beta.kubernetes.io/";

        for (size_t i = 0; i < pod->annotations.n; i++) {
                const char *k = pod->annotations.keys[i], *v = pod->annotations.values[i], *name;
                _cleanup_free_ char *path = NULL;

                if (!startswith(k, prefix))
                        continue;
                name = k + strlen(prefix);
                if (asprintf(&path, "metadata.annotations[%s]", k) < 0) {
                        CHECK_OOM(c, -ENOMEM);
                        return;
                }
                if (!pod_find_container(pod, name))
                        val_invalid_str(c, path, name, "container not found");
                if (!streq(v, "runtime/default") && !streq(v, "unconfined") &&
                    !(startswith(v, "localhost/") && v[strlen("localhost/")] != '\0')) {
                        _cleanup_free_ char *q = go_quote(v), *msg = NULL;
                        if (!q || asprintf(&msg, "invalid AppArmor profile name: %s", q) < 0) {
                                CHECK_OOM(c, -ENOMEM);
                                return;
                        }
                        val_invalid_str(c, path, v, msg);
                }
        }
}

/* IsValidSysctlName: ^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$, at most 253 */
/* IsRelaxedEnvVarName */
static bool sysctl_name_is_valid(const char *s) {
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
        if (sc->fs_group_change_policy && !streq(sc->fs_group_change_policy, "Always") &&
            !streq(sc->fs_group_change_policy, "OnRootMismatch"))
                val_not_supported(c, "spec.securityContext.fsGroupChangePolicy", sc->fs_group_change_policy,
                                  "\"Always\", \"OnRootMismatch\"");
        if (sc->supplemental_groups_policy && !streq(sc->supplemental_groups_policy, "Merge") &&
            !streq(sc->supplemental_groups_policy, "Strict"))
                val_not_supported(c, "spec.securityContext.supplementalGroupsPolicy", sc->supplemental_groups_policy,
                                  "\"Merge\", \"Strict\"");
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
        if (sc->apparmor_profile)
                validate_apparmor_profile(c, sc->apparmor_profile, p);
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
                else if (streq(sc->proc_mount, "Unmasked") && c->host_users)
                        val_invalid_str(c, pp, sc->proc_mount, "`hostUsers` must be false to use `Unmasked`");
        }
        if (sc->seccomp_profile)
                validate_seccomp_profile(c, sc->seccomp_profile, p);
        if (sc->apparmor_profile)
                validate_apparmor_profile(c, sc->apparmor_profile, p);
        if (sc->has_allow_privilege_escalation && !sc->allow_privilege_escalation) {
                if (sc->has_privileged && sc->privileged)
                        val_invalid_str(c, p, "object",
                                        "cannot set `allowPrivilegeEscalation` to false and `privileged` to true");
                for (size_t i = 0; sc->capabilities_add && sc->capabilities_add[i]; i++)
                        if (streq(sc->capabilities_add[i], "CAP_SYS_ADMIN"))
                                val_invalid_str(
                                        c, p, "object",
                                        "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN");
        }
}
