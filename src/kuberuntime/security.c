/* SPDX-License-Identifier: Apache-2.0 */
#include "kuberuntime/security.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/protobuf.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/strv.h"
#include "kuberuntime/config.h"

/* DetermineEffectiveSecurityContext: the pod's runAsUser/runAsGroup/runAsNonRoot overridden by the
 * container's fields that are set. Returns false when neither level has a security context. */
static bool kr_effective_security_context(const struct pod *pod, const struct container *c,
                                          struct security_context *ret) {
        const struct pod_security_context *ps = pod->spec.security_context;
        const struct security_context *cs = c->security_context;
        struct security_context e = {};

        if (!ps && !cs) {
                *ret = e;
                return false;
        }
        if (ps) {
                e.has_run_as_user = ps->has_run_as_user;
                e.run_as_user = ps->run_as_user;
                e.has_run_as_group = ps->has_run_as_group;
                e.run_as_group = ps->run_as_group;
                e.has_run_as_non_root = ps->has_run_as_non_root;
                e.run_as_non_root = ps->run_as_non_root;
        }
        if (cs) {
                e.capabilities_add = cs->capabilities_add; /* borrowed */
                e.capabilities_drop = cs->capabilities_drop;
                if (cs->has_privileged)
                        e.has_privileged = true, e.privileged = cs->privileged;
                e.proc_mount = cs->proc_mount;
                if (cs->has_run_as_user)
                        e.has_run_as_user = true, e.run_as_user = cs->run_as_user;
                if (cs->has_run_as_group)
                        e.has_run_as_group = true, e.run_as_group = cs->run_as_group;
                if (cs->has_run_as_non_root)
                        e.has_run_as_non_root = true, e.run_as_non_root = cs->run_as_non_root;
                if (cs->has_read_only_root_filesystem)
                        e.has_read_only_root_filesystem = true,
                        e.read_only_root_filesystem = cs->read_only_root_filesystem;
                if (cs->has_allow_privilege_escalation)
                        e.has_allow_privilege_escalation = true,
                        e.allow_privilege_escalation = cs->allow_privilege_escalation;
        }
        *ret = e;
        return true;
}

static int int64_value(int64_t v, Runtime__V1__Int64Value **ret) {
        Runtime__V1__Int64Value *i = malloc(sizeof(*i));
        if (!i)
                return -ENOMEM;
        *i = (Runtime__V1__Int64Value) RUNTIME__V1__INT64_VALUE__INIT;
        i->value = v;
        *ret = i;
        return 0;
}

/* getSeccompProfile: the container's, else the pod's; neither: RuntimeDefault with --seccomp-default
 * (fallbackToRuntimeDefault), else Unconfined */
static int seccomp_profile(const struct seccomp_profile *container_sp, const struct pod *pod,
                           const struct kc_build_context *ctx, Runtime__V1__SecurityProfile **ret) {
        const struct seccomp_profile *sp = container_sp;
        Runtime__V1__SecurityProfile *p;

        if (!sp && pod->spec.security_context)
                sp = pod->spec.security_context->seccomp_profile;
        p = malloc(sizeof(*p));
        if (!p)
                return -ENOMEM;
        *p = (Runtime__V1__SecurityProfile) RUNTIME__V1__SECURITY_PROFILE__INIT;
        *ret = p;
        if (!sp || isempty(sp->type))
                p->profile_type = ctx && ctx->seccomp_default
                                          ? RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault
                                          : RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined;
        else if (streq(sp->type, "Unconfined"))
                p->profile_type = RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined;
        else if (streq(sp->type, "RuntimeDefault"))
                p->profile_type = RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault;
        else {
                p->profile_type = RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost;
                if (asprintf(&p->localhost_ref, "%s/seccomp/%s",
                             ctx && ctx->root_dir ? ctx->root_dir : "/var/lib/kubelet",
                             strempty(sp->localhost_profile)) < 0) {
                        p->localhost_ref = NULL;
                        return -ENOMEM;
                }
        }
        return 0;
}

#define APPARMOR_ANNOTATION_PREFIX "container.apparmor.security.beta.kubernetes.io/"

/* apparmor.GetProfile: the container's appArmorProfile, else its container.apparmor.security.beta.kubernetes.io
 * annotation (converted into *tmp, whose strings point into the annotation), else the pod's; NULL when none. */
static const struct apparmor_profile *kr_apparmor_profile(const struct pod *pod, const struct container *c,
                                                          struct apparmor_profile *tmp) {
        _cleanup_free_ char *key = NULL;
        const char *v;

        if (c->security_context && c->security_context->apparmor_profile)
                return c->security_context->apparmor_profile;
        if (asprintf(&key, APPARMOR_ANNOTATION_PREFIX "%s", strempty(c->name)) >= 0 &&
            (v = strmap_get(&pod->annotations, key))) {
                /* the deprecated annotation's values */
                *tmp = (struct apparmor_profile) {};
                if (streq(v, "runtime/default"))
                        tmp->type = (char *) "RuntimeDefault";
                else if (streq(v, "unconfined"))
                        tmp->type = (char *) "Unconfined";
                else if (startswith(v, "localhost/")) {
                        tmp->type = (char *) "Localhost";
                        tmp->localhost_profile = (char *) v + strlen("localhost/");
                } else
                        tmp->type = (char *) v; /* refused by validation */
                return tmp;
        }
        if (pod->spec.security_context && pod->spec.security_context->apparmor_profile)
                return pod->spec.security_context->apparmor_profile;
        return NULL;
}

static bool container_requires_apparmor(const struct pod *pod, const struct container *c) {
        struct apparmor_profile tmp;
        const struct apparmor_profile *a = kr_apparmor_profile(pod, c, &tmp);
        return a && !streq_ptr(a->type, "Unconfined");
}

bool kr_pod_requires_apparmor(const struct pod *pod) {
        for (size_t i = 0; i < pod->spec.n_containers; i++)
                if (container_requires_apparmor(pod, &pod->spec.containers[i]))
                        return true;
        for (size_t i = 0; i < pod->spec.n_init_containers; i++)
                if (container_requires_apparmor(pod, &pod->spec.init_containers[i]))
                        return true;
        for (size_t i = 0; i < pod->spec.n_ephemeral_containers; i++)
                if (container_requires_apparmor(pod, &pod->spec.ephemeral_containers[i]))
                        return true;
        return false;
}

int kr_apparmor_admit(const struct pod *pod, bool host_enabled, struct ck_error **ret_error) {
        const char *phase = json_string_value(json_object_get(json_object_get(pod->raw, "status"), "phase"));

        /* a pod already running or terminated is not checked again */
        if (!isempty(phase) && !streq(phase, "Pending"))
                return 0;
        if (!kr_pod_requires_apparmor(pod) || host_enabled)
                return 0;
        return ck_error_set_reason(ret_error, -ENOSPC, "AppArmor",
                                   "Cannot enforce AppArmor: AppArmor is not enabled on the host");
}

bool kr_apparmor_host_enabled(const char *sysfs_root) {
        _cleanup_free_ char *dir = NULL, *param = NULL;
        char buf[8] = {};
        FILE *f;
        bool on;

        if (asprintf(&dir, "%s/sys/kernel/security/apparmor", strempty(sysfs_root)) < 0 ||
            asprintf(&param, "%s/sys/module/apparmor/parameters/enabled", strempty(sysfs_root)) < 0)
                return false;
        if (access(dir, F_OK) < 0)
                return false;
        f = fopen(param, "re");
        if (!f)
                return false;
        on = fgets(buf, sizeof(buf), f) && buf[0] == 'Y';
        fclose(f);
        return on;
}

/* getAppArmorProfile: the CRI profile and the deprecated apparmor_profile string */
static int apparmor_to_cri(const struct pod *pod, const struct container *c,
                           Runtime__V1__LinuxContainerSecurityContext *sc) {
        struct apparmor_profile tmp;
        const struct apparmor_profile *a = kr_apparmor_profile(pod, c, &tmp);
        Runtime__V1__SecurityProfile *p;
        const char *deprecated;

        if (!a)
                return 0;
        p = malloc(sizeof(*p));
        if (!p)
                return -ENOMEM;
        *p = (Runtime__V1__SecurityProfile) RUNTIME__V1__SECURITY_PROFILE__INIT;
        sc->apparmor = p;
        if (streq_ptr(a->type, "RuntimeDefault")) {
                p->profile_type = RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault;
                deprecated = "runtime/default";
        } else if (streq_ptr(a->type, "Unconfined")) {
                p->profile_type = RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined;
                deprecated = "unconfined";
        } else if (streq_ptr(a->type, "Localhost") && a->localhost_profile) {
                p->profile_type = RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost;
                p->localhost_ref = strdup(a->localhost_profile);
                if (!p->localhost_ref || asprintf(&sc->apparmor_profile, "localhost/%s", a->localhost_profile) < 0) {
                        sc->apparmor_profile = NULL;
                        return -ENOMEM;
                }
                return 0;
        } else
                return -EINVAL; /* refused by validation */
        sc->apparmor_profile = strdup(deprecated);
        return sc->apparmor_profile ? 0 : -ENOMEM;
}

static int add_groups(const struct pod_security_context *ps, size_t *ret_n, int64_t **ret) {
        size_t n;
        if (!ps)
                return 0;
        n = ps->n_supplemental_groups + (ps->has_fs_group ? 1 : 0);
        if (n == 0)
                return 0;
        *ret = calloc(n, sizeof(int64_t));
        if (!*ret)
                return -ENOMEM;
        if (ps->has_fs_group)
                (*ret)[(*ret_n)++] = ps->fs_group;
        for (size_t i = 0; i < ps->n_supplemental_groups; i++)
                (*ret)[(*ret_n)++] = ps->supplemental_groups[i];
        return 0;
}

/* securitycontext.ConvertToRuntimeMaskedPaths / ReadonlyPaths for procMount Default */
static const char *const default_masked_paths[] = {
        "/proc/asound",
        "/proc/acpi",
        "/proc/kcore",
        "/proc/keys",
        "/proc/latency_stats",
        "/proc/timer_list",
        "/proc/timer_stats",
        "/proc/sched_debug",
        "/proc/scsi",
        "/sys/firmware",
        "/sys/devices/virtual/powercap",
        NULL,
};
static const char *const default_readonly_paths[] = {
        "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

int kr_container_security_context(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                                  Runtime__V1__LinuxContainerSecurityContext *sc) {
        struct security_context e;
        int r;

        (void) kr_effective_security_context(pod, c, &e);
        if (e.has_run_as_user) {
                r = int64_value(e.run_as_user, &sc->run_as_user);
                if (r < 0)
                        return r;
        } else if (ctx && ctx->image_user_known) {
                /* getImageUser: the image's numeric user, else its user name, else root */
                if (ctx->image_uid_set || isempty(ctx->image_username)) {
                        r = int64_value(ctx->image_uid_set ? ctx->image_uid : 0, &sc->run_as_user);
                        if (r < 0)
                                return r;
                } else if (!(sc->run_as_username = strdup(ctx->image_username)))
                        return -ENOMEM;
        }
        if (e.has_run_as_group) {
                r = int64_value(e.run_as_group, &sc->run_as_group);
                if (r < 0)
                        return r;
        }
        sc->privileged = e.has_privileged && e.privileged;
        sc->readonly_rootfs = e.has_read_only_root_filesystem && e.read_only_root_filesystem;
        if (e.capabilities_add || e.capabilities_drop) {
                sc->capabilities = malloc(sizeof(*sc->capabilities));
                if (!sc->capabilities)
                        return -ENOMEM;
                *sc->capabilities = (Runtime__V1__Capability) RUNTIME__V1__CAPABILITY__INIT;
                r = pb_strv_copy(e.capabilities_add, &sc->capabilities->n_add_capabilities,
                                 &sc->capabilities->add_capabilities);
                if (r >= 0)
                        r = pb_strv_copy(e.capabilities_drop, &sc->capabilities->n_drop_capabilities,
                                         &sc->capabilities->drop_capabilities);
                if (r < 0)
                        return r;
        }
        r = add_groups(pod->spec.security_context, &sc->n_supplemental_groups, &sc->supplemental_groups);
        if (r < 0)
                return r;
        sc->supplemental_groups_policy = kr_supplemental_groups_policy(pod);
        /* AddNoNewPrivileges: only an explicit allowPrivilegeEscalation: false */
        sc->no_new_privs = e.has_allow_privilege_escalation && !e.allow_privilege_escalation;
        r = seccomp_profile(c->security_context ? c->security_context->seccomp_profile : NULL, pod, ctx, &sc->seccomp);
        if (r >= 0)
                r = apparmor_to_cri(pod, c, sc);
        if (r < 0)
                return r;
        if (!e.proc_mount || streq(e.proc_mount, "Default")) {
                r = pb_strv_copy((char *const *) default_masked_paths, &sc->n_masked_paths, &sc->masked_paths);
                if (r >= 0)
                        r = pb_strv_copy((char *const *) default_readonly_paths, &sc->n_readonly_paths,
                                         &sc->readonly_paths);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool has_privileged_container(const struct pod *pod) {
        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                const struct security_context *s = pod->spec.containers[i].security_context;
                if (s && s->has_privileged && s->privileged)
                        return true;
        }
        for (size_t i = 0; i < pod->spec.n_init_containers; i++) {
                const struct security_context *s = pod->spec.init_containers[i].security_context;
                if (s && s->has_privileged && s->privileged)
                        return true;
        }
        return false;
}

Runtime__V1__SupplementalGroupsPolicy kr_supplemental_groups_policy(const struct pod *pod) {
        const struct pod_security_context *ps = pod->spec.security_context;
        return ps && streq_ptr(ps->supplemental_groups_policy, "Strict")
                       ? RUNTIME__V1__SUPPLEMENTAL_GROUPS_POLICY__Strict
                       : RUNTIME__V1__SUPPLEMENTAL_GROUPS_POLICY__Merge;
}

int kr_sandbox_security_context(const struct pod *pod, const struct kc_build_context *ctx,
                                Runtime__V1__LinuxPodSandboxConfig *lx) {
        const struct pod_security_context *ps = pod->spec.security_context;
        Runtime__V1__LinuxSandboxSecurityContext *sc = lx->security_context;
        int r;

        if (ps && ps->has_run_as_user && (r = int64_value(ps->run_as_user, &sc->run_as_user)) < 0)
                return r;
        if (ps && ps->has_run_as_group && (r = int64_value(ps->run_as_group, &sc->run_as_group)) < 0)
                return r;
        r = add_groups(ps, &sc->n_supplemental_groups, &sc->supplemental_groups);
        if (r < 0)
                return r;
        sc->supplemental_groups_policy = kr_supplemental_groups_policy(pod);
        sc->privileged = has_privileged_container(pod);
        r = seccomp_profile(NULL, pod, ctx, &sc->seccomp);
        if (r < 0)
                return r;
        if (ps && ps->n_sysctls > 0) {
                lx->sysctls = calloc(ps->n_sysctls, sizeof(*lx->sysctls));
                if (!lx->sysctls)
                        return -ENOMEM;
                for (size_t i = 0; i < ps->n_sysctls; i++) {
                        Runtime__V1__LinuxPodSandboxConfig__SysctlsEntry *e = malloc(sizeof(*e));
                        if (!e)
                                return -ENOMEM;
                        *e = (Runtime__V1__LinuxPodSandboxConfig__SysctlsEntry)
                                RUNTIME__V1__LINUX_POD_SANDBOX_CONFIG__SYSCTLS_ENTRY__INIT;
                        lx->sysctls[lx->n_sysctls++] = e;
                        e->key = strdup(strempty(ps->sysctls[i].name));
                        e->value = strdup(strempty(ps->sysctls[i].value));
                        if (!e->key || !e->value)
                                return -ENOMEM;
                }
        }
        return 0;
}

int kr_verify_run_as_non_root(const struct pod *pod, const struct container *c, const int64_t *image_uid,
                              const char *image_username, struct ck_error **ret_error) {
        struct security_context e;

        if (!kr_effective_security_context(pod, c, &e) || !e.has_run_as_non_root || !e.run_as_non_root)
                return 0;
        if (e.has_run_as_user) {
                if (e.run_as_user != 0)
                        return 0;
                return ck_error_set(ret_error, -EPERM,
                                    "container's runAsUser breaks non-root policy (pod: \"%s_%s(%s)\", container: %s)",
                                    pod->name, pod->namespace_, pod->uid, c->name);
        }
        if (image_uid && *image_uid == 0)
                return ck_error_set(ret_error, -EPERM,
                                    "container has runAsNonRoot and image will run as root (pod: \"%s_%s(%s)\", "
                                    "container: %s)",
                                    pod->name, pod->namespace_, pod->uid, c->name);
        if (!image_uid && !isempty(image_username))
                return ck_error_set(
                        ret_error, -EPERM,
                        "container has runAsNonRoot and image has non-numeric user (%s), cannot verify user "
                        "is non-root (pod: \"%s_%s(%s)\", container: %s)",
                        image_username, pod->name, pod->namespace_, pod->uid, c->name);
        return 0;
}

/* ---------------------------------------------------------------- sysctls */

enum sysctl_ns { SYSCTL_NS_UNKNOWN, SYSCTL_NS_IPC, SYSCTL_NS_NET };

/* the namespace a sysctl (or prefix) belongs to (pkg/kubelet/sysctl/namespace.go) */
static enum sysctl_ns sysctl_namespace(const char *s) {
        if (startswith(s, "kernel.shm") || startswith(s, "kernel.msg") || startswith(s, "fs.mqueue.") ||
            streq(s, "kernel.sem"))
                return SYSCTL_NS_IPC;
        if (startswith(s, "net."))
                return SYSCTL_NS_NET;
        return SYSCTL_NS_UNKNOWN;
}

/* SafeSysctlAllowlist */
static const char *const safe_sysctls[] = {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
};

int kr_sysctl_check_allowed_unsafe(const char *pattern, struct ck_error **ret_error) {
        _cleanup_free_ char *base = strdup(pattern);
        size_t l;

        if (!base)
                return -ENOMEM;
        l = strlen(base);
        if (l > 0 && base[l - 1] == '*')
                base[l - 1] = 0;
        if (sysctl_namespace(base) != SYSCTL_NS_UNKNOWN)
                return 0;
        return ck_error_set(ret_error, -EINVAL, "the sysctls \"%s\" are not known to be namespaced", pattern);
}

static int sysctl_allowed(const char *name, char *const *allowed_unsafe, bool host_net, bool host_ipc,
                          struct ck_error **ret_error) {
        _cleanup_free_ char *s = strdup(name);
        bool found = false;
        enum sysctl_ns ns;

        if (!s)
                return -ENOMEM;
        /* NormalizeName: "net/ipv4/x" → "net.ipv4.x" (a name with both separators keeps its dots as slashes) */
        if (strchr(s, '/')) {
                for (char *p = s; *p; p++)
                        *p = *p == '.' ? '/' : *p == '/' ? '.' : *p;
        }
        for (size_t i = 0; i < ELEMENTSOF(safe_sysctls) && !found; i++)
                found = streq(s, safe_sysctls[i]);
        for (size_t i = 0; allowed_unsafe && allowed_unsafe[i] && !found; i++) {
                const char *a = allowed_unsafe[i];
                size_t l = strlen(a);
                found = (l > 0 && a[l - 1] == '*') ? strncmp(s, a, l - 1) == 0 : streq(s, a);
        }
        if (!found)
                return ck_error_set(ret_error, -EPERM, "forbidden sysctl: \"%s\" not allowlisted", s);
        ns = sysctl_namespace(s);
        if (ns == SYSCTL_NS_IPC && host_ipc)
                return ck_error_set(ret_error, -EPERM, "forbidden sysctl: \"%s\" not allowed with host ipc enabled", s);
        if (ns == SYSCTL_NS_NET && host_net)
                return ck_error_set(ret_error, -EPERM, "forbidden sysctl: \"%s\" not allowed with host net enabled", s);
        return 0;
}

int kr_sysctls_admit(const struct pod *pod, char *const *allowed_unsafe, struct ck_error **ret_error) {
        const struct pod_security_context *ps = pod->spec.security_context;

        for (size_t i = 0; ps && i < ps->n_sysctls; i++) {
                int r = sysctl_allowed(strempty(ps->sysctls[i].name), allowed_unsafe, pod->spec.host_network,
                                       pod->spec.host_ipc, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}
