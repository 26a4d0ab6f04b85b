/* SPDX-License-Identifier: Apache-2.0 */
/* Security contexts: the pod/container merge, the CRI mapping of the sandbox and container configs,
 * runAsNonRoot against the image's user, the sysctl allowlist, and validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "kuberuntime/config.h"
#include "kuberuntime/security.h"
#include "basic/fs.h"
#include "basic/string.h"

static struct pod *parse_spec(const char *spec) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns1, uid: u-1}\n"
                             "spec:\n%s",
                             spec) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        assert_int_equal(set.n, 1);
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static const char SPEC[] = "  securityContext:\n"
                           "    runAsUser: 1000\n"
                           "    runAsGroup: 3000\n"
                           "    fsGroup: 2000\n"
                           "    supplementalGroups: [4000, 5000]\n"
                           "    seccompProfile: {type: RuntimeDefault}\n"
                           "    sysctls: [{name: net.ipv4.ip_unprivileged_port_start, value: '80'}]\n"
                           "  containers:\n"
                           "  - name: app\n"
                           "    image: busybox\n"
                           "    securityContext:\n"
                           "      runAsUser: 1001\n"
                           "      readOnlyRootFilesystem: true\n"
                           "      allowPrivilegeEscalation: false\n"
                           "      capabilities: {add: [NET_ADMIN], drop: [ALL]}\n"
                           "      seccompProfile: {type: Localhost, localhostProfile: profiles/audit.json}\n"
                           "  - name: priv\n"
                           "    image: busybox\n"
                           "    securityContext: {privileged: true}\n";

static void test_container_mapping(void **state) {
        struct kc_build_context ctx = { .root_dir = "/var/lib/ck", .pod_logs_dir = "/tmp" };
        Runtime__V1__ContainerConfig *cfg = NULL;
        Runtime__V1__LinuxContainerSecurityContext *sc;
        struct pod *p = parse_spec(SPEC);

        assert_int_equal(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cfg), 0);
        sc = cfg->linux->security_context;
        assert_non_null(sc->run_as_user);
        assert_int_equal(sc->run_as_user->value, 1001); /* the container's wins */
        assert_non_null(sc->run_as_group);
        assert_int_equal(sc->run_as_group->value, 3000); /* the pod's */
        assert_int_equal(sc->n_supplemental_groups, 3);  /* fsGroup first */
        assert_int_equal(sc->supplemental_groups[0], 2000);
        assert_int_equal(sc->supplemental_groups[1], 4000);
        assert_int_equal(sc->supplemental_groups[2], 5000);
        assert_true(sc->readonly_rootfs);
        assert_true(sc->no_new_privs);
        assert_false(sc->privileged);
        assert_non_null(sc->capabilities);
        assert_int_equal(sc->capabilities->n_add_capabilities, 1);
        assert_string_equal(sc->capabilities->add_capabilities[0], "NET_ADMIN");
        assert_string_equal(sc->capabilities->drop_capabilities[0], "ALL");
        assert_int_equal(sc->seccomp->profile_type, RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost);
        assert_string_equal(sc->seccomp->localhost_ref, "/var/lib/ck/seccomp/profiles/audit.json");
        assert_int_equal(sc->n_masked_paths, 11);
        assert_string_equal(sc->masked_paths[0], "/proc/asound");
        assert_int_equal(sc->n_readonly_paths, 5);
        pb_free(cfg);

        /* the privileged container: the pod's user and seccomp, no no_new_privs without an explicit false */
        assert_int_equal(kr_build_container_config(p, &p->spec.containers[1], 0, "sha256:x", &ctx, &cfg), 0);
        sc = cfg->linux->security_context;
        assert_true(sc->privileged);
        assert_false(sc->no_new_privs);
        assert_false(sc->readonly_rootfs);
        assert_int_equal(sc->run_as_user->value, 1000);
        assert_null(sc->capabilities);
        assert_int_equal(sc->seccomp->profile_type, RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault);
        pb_free(cfg);
        pod_free(p);
}

/* NodeSwap: memory.swap.max through the CRI's unified map on cgroup v2 only (NoSwap: 0) */
static void test_swap_unified(void **state) {
        struct kc_build_context ctx = { .root_dir = "/var/lib/ck", .pod_logs_dir = "/tmp" };
        Runtime__V1__ContainerConfig *cfg = NULL;
        struct pod *p = parse_spec(SPEC);

        assert_int_equal(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cfg), 0);
        assert_int_equal(cfg->linux->resources->n_unified, 0); /* v1, or no swap controller */
        pb_free(cfg);
        ctx.swap_v2 = true;
        ctx.limited_swap = true;
        ctx.node_memory_bytes = 1 << 30;
        ctx.swap_capacity_bytes = 1 << 30;
        assert_int_equal(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cfg), 0);
        assert_int_equal(cfg->linux->resources->n_unified, 1);
        assert_string_equal(cfg->linux->resources->unified[0]->key, "memory.swap.max");
        assert_string_equal(cfg->linux->resources->unified[0]->value, "0"); /* BestEffort */
        pb_free(cfg);
        pod_free(p);
}

static void test_sandbox_mapping(void **state) {
        struct kc_build_context ctx = { .root_dir = "/var/lib/ck", .pod_logs_dir = "/tmp" };
        Runtime__V1__PodSandboxConfig *cfg = NULL;
        Runtime__V1__LinuxSandboxSecurityContext *sc;
        struct pod *p = parse_spec(SPEC);

        assert_int_equal(kr_build_sandbox_config(p, 0, &ctx, &cfg), 0);
        sc = cfg->linux->security_context;
        assert_int_equal(sc->run_as_user->value, 1000);
        assert_int_equal(sc->run_as_group->value, 3000);
        assert_int_equal(sc->n_supplemental_groups, 3);
        assert_int_equal(sc->supplemental_groups[0], 2000);
        assert_true(sc->privileged); /* a privileged container */
        assert_int_equal(sc->seccomp->profile_type, RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault);
        assert_int_equal(cfg->linux->n_sysctls, 1);
        assert_string_equal(cfg->linux->sysctls[0]->key, "net.ipv4.ip_unprivileged_port_start");
        assert_string_equal(cfg->linux->sysctls[0]->value, "80");
        pb_free(cfg);
        pod_free(p);

        /* nothing set: unconfined seccomp (no --seccomp-default), no user, not privileged */
        p = parse_spec("  containers: [{name: a, image: busybox}]\n");
        assert_int_equal(kr_build_sandbox_config(p, 0, &ctx, &cfg), 0);
        sc = cfg->linux->security_context;
        assert_null(sc->run_as_user);
        assert_false(sc->privileged);
        assert_int_equal(sc->seccomp->profile_type, RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined);
        assert_int_equal(cfg->linux->n_sysctls, 0);
        pb_free(cfg);

        /* --seccomp-default: RuntimeDefault where nothing is set; an explicit Unconfined stays */
        ctx.seccomp_default = true;
        assert_int_equal(kr_build_sandbox_config(p, 0, &ctx, &cfg), 0);
        assert_int_equal(cfg->linux->security_context->seccomp->profile_type,
                         RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault);
        pb_free(cfg);
        pod_free(p);
        p = parse_spec("  securityContext: {seccompProfile: {type: Unconfined}}\n"
                       "  containers: [{name: a, image: busybox}]\n");
        assert_int_equal(kr_build_sandbox_config(p, 0, &ctx, &cfg), 0);
        assert_int_equal(cfg->linux->security_context->seccomp->profile_type,
                         RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined);
        pb_free(cfg);
        ctx.seccomp_default = false;
        pod_free(p);
}

static void test_image_user_and_non_root(void **state) {
        struct kc_build_report report = {};
        struct kc_build_context ctx = {
                .root_dir = "/r", .pod_logs_dir = "/tmp", .image_user_known = true, .report = &report
        };
        Runtime__V1__ContainerConfig *cfg = NULL;
        struct pod *p;
        int64_t root = 0, user = 1000;
        struct ck_error *msg = NULL;

        p = parse_spec("  securityContext: {runAsNonRoot: true}\n  containers: [{name: a, image: busybox}]\n");
        /* the image runs as root (no user: root, as getImageUser) */
        assert_int_equal(kr_verify_run_as_non_root(p, &p->spec.containers[0], &root, NULL, &msg), -EPERM);
        assert_string_equal(ck_error_message(msg),
                            "container has runAsNonRoot and image will run as root (pod: \"web_ns1(u-1)\", "
                            "container: a)");
        ck_error_free(msg);
        msg = NULL;
        assert_int_equal(kr_verify_run_as_non_root(p, &p->spec.containers[0], NULL, "nobody", &msg), -EPERM);
        assert_string_equal(ck_error_message(msg),
                            "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify "
                            "user is non-root (pod: \"web_ns1(u-1)\", container: a)");
        ck_error_free(msg);
        msg = NULL;
        assert_int_equal(kr_verify_run_as_non_root(p, &p->spec.containers[0], &user, NULL, &msg), 0);
        assert_null(msg);
        /* through the builder: a config error with the message */
        assert_true(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cfg) < 0);
        assert_null(cfg);
        assert_string_equal(ck_error_message(report.error),
                            "container has runAsNonRoot and image will run as root (pod: "
                            "\"web_ns1(u-1)\", container: a)");
        kc_build_report_done(&report);
        /* an image with a numeric user: it becomes run_as_user */
        ctx.image_uid_set = true;
        ctx.image_uid = 1234;
        assert_int_equal(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cfg), 0);
        assert_int_equal(cfg->linux->security_context->run_as_user->value, 1234);
        pb_free(cfg);
        pod_free(p);

        /* runAsUser 0 with runAsNonRoot */
        p = parse_spec(
                "  containers: [{name: a, image: busybox, securityContext: {runAsNonRoot: true, runAsUser: 0}}]\n");
        assert_int_equal(kr_verify_run_as_non_root(p, &p->spec.containers[0], &user, NULL, &msg), -EPERM);
        assert_string_equal(ck_error_message(msg),
                            "container's runAsUser breaks non-root policy (pod: \"web_ns1(u-1)\", container: a)");
        ck_error_free(msg);
        pod_free(p);

        /* an image user name without a number: run_as_username */
        p = parse_spec("  containers: [{name: a, image: busybox}]\n");
        ctx.image_uid_set = false;
        ctx.image_username = "nobody";
        assert_int_equal(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cfg), 0);
        assert_null(cfg->linux->security_context->run_as_user);
        assert_string_equal(cfg->linux->security_context->run_as_username, "nobody");
        pb_free(cfg);
        pod_free(p);
}

static void test_sysctls(void **state) {
        char *allowed[] = { "kernel.msg*", "net.core.somaxconn", NULL };
        struct ck_error *msg = NULL;
        struct pod *p;

        p = parse_spec("  securityContext: {sysctls: [{name: kernel.shm_rmid_forced, value: '1'}, "
                       "{name: net/ipv4/tcp_syncookies, value: '1'}]}\n  containers: [{name: a, image: busybox}]\n");
        assert_int_equal(kr_sysctls_admit(p, NULL, &msg), 0);
        pod_free(p);

        p = parse_spec("  securityContext: {sysctls: [{name: kernel.msgmax, value: '1'}, "
                       "{name: net.core.somaxconn, value: '1024'}]}\n  containers: [{name: a, image: busybox}]\n");
        assert_int_equal(kr_sysctls_admit(p, NULL, &msg), -EPERM);
        assert_string_equal(ck_error_message(msg), "forbidden sysctl: \"kernel.msgmax\" not allowlisted");
        ck_error_free(msg);
        msg = NULL;
        assert_int_equal(kr_sysctls_admit(p, allowed, &msg), 0);
        pod_free(p);

        p = parse_spec(
                "  hostNetwork: true\n  securityContext: {sysctls: [{name: net.ipv4.tcp_syncookies, value: '1'}]}\n"
                "  containers: [{name: a, image: busybox}]\n");
        assert_int_equal(kr_sysctls_admit(p, NULL, &msg), -EPERM);
        assert_string_equal(ck_error_message(msg),
                            "forbidden sysctl: \"net.ipv4.tcp_syncookies\" not allowed with host net enabled");
        ck_error_free(msg);
        msg = NULL;
        pod_free(p);

        assert_int_equal(kr_sysctl_check_allowed_unsafe("net.*", &msg), 0);
        assert_int_equal(kr_sysctl_check_allowed_unsafe("kernel.sem", &msg), 0);
        assert_int_equal(kr_sysctl_check_allowed_unsafe("vm.swappiness", &msg), -EINVAL);
        assert_string_equal(ck_error_message(msg), "the sysctls \"vm.swappiness\" are not known to be namespaced");
        ck_error_free(msg);
}

/* ---- validation ---- */

static void expect_invalid(const char *spec_json, const char *field, const char *detail) {
        _cleanup_free_ char *doc = NULL;
        struct field_errors errs = {};
        struct pod *p = NULL;
        bool found = false;
        json_t *j;
        int r;

        assert_true(asprintf(&doc, "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":%s}", spec_json) > 0);
        j = json_loads(doc, 0, NULL);
        assert_non_null(j);
        r = pod_decode(j, &p, &errs);
        json_decref(j);
        if (r >= 0) {
                assert_int_equal(pod_apply_defaults_checked(p), 0);
                r = pod_validate(p, &errs);
                pod_free(p);
        }
        assert_int_equal(r, -EINVAL);
        for (size_t i = 0; i < errs.n; i++)
                if (streq(errs.items[i].field, field) && streq(errs.items[i].detail, detail))
                        found = true;
        if (!found) {
                for (size_t i = 0; i < errs.n; i++)
                        print_message("  %s: %s\n", errs.items[i].field, errs.items[i].detail);
                fail_msg("no error \"%s: %s\"", field, detail);
        }
        field_errors_done(&errs);
}

#define CTR "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]"
#define CTR_SC(sc) "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"securityContext\":" sc "}]"

static void test_validate(void **state) {
        expect_invalid("{\"securityContext\":{\"runAsUser\":-1}," CTR "}", "spec.securityContext.runAsUser",
                       "Invalid value: -1: must be between 0 and 2147483647, inclusive");
        expect_invalid("{\"securityContext\":{\"supplementalGroups\":[1,4294967296]}," CTR "}",
                       "spec.securityContext.supplementalGroups[1]",
                       "Invalid value: 4294967296: must be between 0 and 2147483647, inclusive");
        expect_invalid("{\"securityContext\":{\"fsGroup\":-5}," CTR "}", "spec.securityContext.fsGroup",
                       "Invalid value: -5: must be between 0 and 2147483647, inclusive");
        expect_invalid("{\"securityContext\":{\"sysctls\":[{\"name\":\"Kernel.X\",\"value\":\"1\"}]}," CTR "}",
                       "spec.securityContext.sysctls[0].name",
                       "Invalid value: \"Kernel.X\": must have at most 253 characters and match regex "
                       "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$");
        expect_invalid("{\"securityContext\":{\"sysctls\":[{\"name\":\"net.a\"},{\"name\":\"net.a\"}]}," CTR "}",
                       "spec.securityContext.sysctls[1].name", "Duplicate value: \"net.a\"");
        expect_invalid("{\"securityContext\":{\"seccompProfile\":{\"type\":\"Localhost\"}}," CTR "}",
                       "spec.securityContext.seccompProfile.localhostProfile",
                       "Required value: must be set when seccomp type is Localhost");
        expect_invalid(
                "{\"securityContext\":{\"seccompProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"../x\"}}," CTR
                "}",
                "spec.securityContext.seccompProfile.localhostProfile",
                "Invalid value: \"../x\": must not contain '..'");
        expect_invalid(
                "{\"securityContext\":{\"seccompProfile\":{\"type\":\"Localhost\",\"localhostProfile\":\"/x\"}}," CTR
                "}",
                "spec.securityContext.seccompProfile.localhostProfile",
                "Invalid value: \"/x\": must be a relative path");
        expect_invalid(
                "{" CTR_SC("{\"seccompProfile\":{\"type\":\"Bogus\"}}") "}",
                "spec.containers[0].securityContext.seccompProfile.type",
                "Unsupported value: \"Bogus\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"");
        expect_invalid("{" CTR_SC("{\"seccompProfile\":{}}") "}",
                       "spec.containers[0].securityContext.seccompProfile.type",
                       "Required value: type is required when seccompProfile is set");
        expect_invalid("{" CTR_SC("{\"seccompProfile\":{\"type\":\"RuntimeDefault\",\"localhostProfile\":\"a\"}}") "}",
                       "spec.containers[0].securityContext.seccompProfile.localhostProfile",
                       "Invalid value: \"a\": can only be set when seccomp type is Localhost");
        expect_invalid("{" CTR_SC("{\"procMount\":\"Weird\"}") "}", "spec.containers[0].securityContext.procMount",
                       "Unsupported value: \"Weird\": supported values: \"Default\", \"Unmasked\"");
        expect_invalid("{" CTR_SC("{\"runAsGroup\":-2}") "}", "spec.containers[0].securityContext.runAsGroup",
                       "Invalid value: -2: must be between 0 and 2147483647, inclusive");
        expect_invalid(
                "{" CTR_SC("{\"privileged\":true,\"allowPrivilegeEscalation\":false}") "}",
                "spec.containers[0].securityContext",
                "Invalid value: \"object\": cannot set `allowPrivilegeEscalation` to false and `privileged` to true");
        expect_invalid("{" CTR_SC("{\"privileged\":\"yes\"}") "}", "spec.containers[0].securityContext.privileged",
                       "Invalid value: \"string\": must be of type boolean");
}

/* AppArmor: the container's field, its annotation, the pod's field, in that order; CRI's profile and the
 * deprecated string; the admit handler on a host without AppArmor */
static void test_apparmor(void **state) {
        struct kc_build_context ctx = { .root_dir = "/var/lib/ck", .pod_logs_dir = "/tmp" };
        Runtime__V1__ContainerConfig *cfg = NULL;
        _cleanup_ck_error_ struct ck_error *aerr = NULL;
        struct pod *p;
        static const struct {
                const char *annotations, *pod_profile, *container_profile;
                int type; /* -1: none */
                const char *deprecated, *ref;
        } cases[] = {
                { "{}", NULL, NULL, -1, NULL, NULL },
                { "{}", "{type: RuntimeDefault}", NULL, RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__RuntimeDefault,
                  "runtime/default", NULL },
                { "{}", "{type: RuntimeDefault}", "{type: Unconfined}",
                  RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined, "unconfined", NULL },
                { "{container.apparmor.security.beta.kubernetes.io/app: localhost/k8s-deny}", "{type: RuntimeDefault}",
                  NULL, RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost, "localhost/k8s-deny", "k8s-deny" },
                { "{container.apparmor.security.beta.kubernetes.io/app: unconfined}", NULL,
                  "{type: Localhost, localhostProfile: mine}", RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Localhost,
                  "localhost/mine", "mine" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *yaml = NULL, *sc = NULL, *csc = NULL;
                _cleanup_ck_error_ struct ck_error *err = NULL;
                struct pod_set set = {};
                Runtime__V1__LinuxContainerSecurityContext *lsc;

                if (cases[i].pod_profile)
                        assert_true(asprintf(&sc, "  securityContext: {appArmorProfile: %s}\n", cases[i].pod_profile) >
                                    0);
                if (cases[i].container_profile)
                        assert_true(asprintf(&csc, ", securityContext: {appArmorProfile: %s}",
                                             cases[i].container_profile) > 0);
                assert_true(asprintf(&yaml,
                                     "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns1, uid: u-1, "
                                     "annotations: %s}\nspec:\n%s  containers: [{name: app, image: busybox%s}]\n",
                                     cases[i].annotations, strempty(sc), strempty(csc)) > 0);
                if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                        fail_msg("manifest: %s", ck_error_message(err));
                p = set.pods[0];
                assert_int_equal(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cfg), 0);
                lsc = cfg->linux->security_context;
                if (cases[i].type < 0) {
                        assert_null(lsc->apparmor);
                        assert_true(isempty(lsc->apparmor_profile));
                } else {
                        assert_non_null(lsc->apparmor);
                        assert_int_equal(lsc->apparmor->profile_type, cases[i].type);
                        assert_string_equal(lsc->apparmor_profile, cases[i].deprecated);
                        if (cases[i].ref)
                                assert_string_equal(lsc->apparmor->localhost_ref, cases[i].ref);
                }
                /* only a profile other than Unconfined needs the host's AppArmor */
                assert_int_equal(kr_pod_requires_apparmor(p),
                                 cases[i].type >= 0 &&
                                         cases[i].type != RUNTIME__V1__SECURITY_PROFILE__PROFILE_TYPE__Unconfined);
                if (kr_pod_requires_apparmor(p)) {
                        assert_int_equal(kr_apparmor_admit(p, false, &aerr), -ENOSPC);
                        assert_string_equal(ck_error_reason(aerr), "AppArmor");
                        assert_string_equal(ck_error_message(aerr),
                                            "Cannot enforce AppArmor: AppArmor is not enabled on the host");
                        aerr = ck_error_free(aerr);
                        assert_int_equal(kr_apparmor_admit(p, true, &aerr), 0);
                } else
                        assert_int_equal(kr_apparmor_admit(p, false, &aerr), 0);
                assert_null(aerr);
                pb_free(cfg);
                pod_set_done(&set);
        }
}

/* apparmor.IsEnabled over a fake sysfs */
static void test_apparmor_host(void **state) {
        char dir[] = "/tmp/ck-apparmor-XXXXXX", path[256];
        FILE *f;

        assert_non_null(mkdtemp(dir));
        assert_false(kr_apparmor_host_enabled(dir));
        snprintf(path, sizeof(path), "%s/sys/kernel/security/apparmor", dir);
        assert_int_equal(mkdir_p(path, 0755), 0);
        assert_false(kr_apparmor_host_enabled(dir)); /* no module parameter */
        snprintf(path, sizeof(path), "%s/sys/module/apparmor/parameters", dir);
        assert_int_equal(mkdir_p(path, 0755), 0);
        snprintf(path, sizeof(path), "%s/sys/module/apparmor/parameters/enabled", dir);
        f = fopen(path, "we");
        fputs("N\n", f);
        fclose(f);
        assert_false(kr_apparmor_host_enabled(dir));
        f = fopen(path, "we");
        fputs("Y\n", f);
        fclose(f);
        assert_true(kr_apparmor_host_enabled(dir));
        {
                _cleanup_free_ char *cmd = NULL;
                assert_true(asprintf(&cmd, "rm -rf '%s'", dir) > 0);
                assert_int_equal(system(cmd), 0);
        }
}

/* namespacesForPod (shareProcessNamespace, an ephemeral container's target) and the sandbox's hostname
 * (setHostnameAsFQDN) */
static void test_namespaces_and_hostname(void **state) {
        struct kc_build_context ctx = { .root_dir = "/var/lib/ck",
                                        .pod_logs_dir = "/tmp",
                                        .cluster_domain = "cluster.local" };
        _cleanup_ck_error_ struct ck_error *err = NULL;
        Runtime__V1__PodSandboxConfig *sb = NULL;
        Runtime__V1__ContainerConfig *cfg = NULL;
        struct kc_build_report report = {};
        char *h = NULL;
        struct pod *p;

        p = parse_spec("  containers: [{name: a, image: busybox}]\n");
        assert_int_equal(kr_build_sandbox_config(p, 0, &ctx, &sb), 0);
        assert_int_equal(sb->linux->security_context->namespace_options->pid, RUNTIME__V1__NAMESPACE_MODE__CONTAINER);
        assert_string_equal(sb->hostname, "web");
        pb_free(sb);
        ctx.target_id = "abc123";
        assert_int_equal(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cfg), 0);
        assert_int_equal(cfg->linux->security_context->namespace_options->pid, RUNTIME__V1__NAMESPACE_MODE__TARGET);
        assert_string_equal(cfg->linux->security_context->namespace_options->target_id, "abc123");
        pb_free(cfg);
        ctx.target_id = NULL;
        pod_free(p);

        p = parse_spec("  shareProcessNamespace: true\n  hostname: h\n  subdomain: sub\n  setHostnameAsFQDN: true\n"
                       "  containers: [{name: a, image: busybox}]\n");
        assert_int_equal(kr_build_sandbox_config(p, 0, &ctx, &sb), 0);
        assert_int_equal(sb->linux->security_context->namespace_options->pid, RUNTIME__V1__NAMESPACE_MODE__POD);
        assert_string_equal(sb->hostname, "h.sub.ns1.svc.cluster.local");
        pb_free(sb);
        ctx.target_id = "abc123"; /* the pod's namespace is shared already: no target */
        assert_int_equal(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cfg), 0);
        assert_int_equal(cfg->linux->security_context->namespace_options->pid, RUNTIME__V1__NAMESPACE_MODE__POD);
        pb_free(cfg);
        ctx.target_id = NULL;
        pod_free(p);

        /* without a subdomain, setHostnameAsFQDN changes nothing */
        p = parse_spec("  setHostnameAsFQDN: true\n  containers: [{name: a, image: busybox}]\n");
        assert_int_equal(kr_sandbox_hostname(p, "cluster.local", &h, &err), 0);
        assert_string_equal(h, "web");
        h = mfree(h);
        pod_free(p);

        /* hostnameOverride: the hostname as it is, no domain, whatever hostname and subdomain say */
        p = parse_spec("  hostname: h\n  subdomain: sub\n  hostnameOverride: my.node-name\n"
                       "  containers: [{name: a, image: busybox}]\n");
        assert_int_equal(kr_sandbox_hostname(p, "cluster.local", &h, &err), 0);
        assert_string_equal(h, "my.node-name");
        h = mfree(h);
        pod_free(p);

        /* an FQDN longer than the kernel's 64 characters */
        p = parse_spec("  hostname: a-rather-long-host-name\n  subdomain: and-a-long-subdomain\n"
                       "  setHostnameAsFQDN: true\n  containers: [{name: a, image: busybox}]\n");
        assert_int_equal(kr_sandbox_hostname(p, "cluster.local", &h, &err), -EINVAL);
        assert_string_equal(ck_error_message(err),
                            "failed to construct FQDN from pod hostname and cluster domain, FQDN "
                            "a-rather-long-host-name.and-a-long-subdomain.ns1.svc.cluster.local is too long (64 "
                            "characters is the max, 66 characters requested)");
        ctx.report = &report;
        assert_int_equal(kr_build_sandbox_config(p, 0, &ctx, &sb), -EINVAL);
        assert_non_null(report.error);
        kc_build_report_done(&report);
        pod_free(p);
}

/* user namespaces: the node's, said as NODE, for every pod; a hostUsers:false pod's own range (UIDs and GIDs) in the
 * sandbox and its containers; procMount Unmasked is valid only then, and drops the masked and read-only paths */
static void test_user_namespaces(void **state) {
        struct kc_build_context ctx = { .root_dir = "/var/lib/ck", .pod_logs_dir = "/tmp" };
        Runtime__V1__PodSandboxConfig *sb = NULL;
        Runtime__V1__ContainerConfig *cc = NULL;
        const Runtime__V1__UserNamespace *u;
        struct pod *p = parse_spec("  containers: [{name: a, image: busybox}]\n");
        struct field_errors errs = {};

        assert_int_equal(kr_build_sandbox_config(p, 0, &ctx, &sb), 0);
        u = sb->linux->security_context->namespace_options->userns_options;
        assert_non_null(u);
        assert_int_equal(u->mode, RUNTIME__V1__NAMESPACE_MODE__NODE);
        assert_int_equal(u->n_uids, 0);
        pb_free(sb);
        pod_free(p);

        p = parse_spec("  hostUsers: false\n"
                       "  containers: [{name: a, image: busybox, securityContext: {procMount: Unmasked}}]\n");
        assert_int_equal(pod_validate(p, &errs), 0);
        ctx.userns = true;
        ctx.userns_host_id = 131072;
        ctx.userns_length = 65536;
        assert_int_equal(kr_build_sandbox_config(p, 0, &ctx, &sb), 0);
        assert_int_equal(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cc), 0);
        for (int i = 0; i < 2; i++) {
                u = i == 0 ? sb->linux->security_context->namespace_options->userns_options
                           : cc->linux->security_context->namespace_options->userns_options;
                assert_int_equal(u->mode, RUNTIME__V1__NAMESPACE_MODE__POD);
                assert_int_equal(u->n_uids, 1);
                assert_int_equal(u->n_gids, 1);
                assert_int_equal(u->uids[0]->host_id, 131072);
                assert_int_equal(u->uids[0]->container_id, 0);
                assert_int_equal(u->uids[0]->length, 65536);
                assert_int_equal(u->gids[0]->host_id, 131072);
                assert_int_equal(u->gids[0]->length, 65536);
        }
        assert_int_equal(cc->linux->security_context->n_masked_paths, 0); /* Unmasked */
        pb_free(sb);
        pb_free(cc);
        pod_free(p);
        /* Unmasked without a user namespace */
        expect_invalid("{" CTR_SC("{\"procMount\":\"Unmasked\"}") "}", "spec.containers[0].securityContext.procMount",
                       "Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_apparmor),          cmocka_unit_test(test_swap_unified),
                cmocka_unit_test(test_apparmor_host),     cmocka_unit_test(test_namespaces_and_hostname),
                cmocka_unit_test(test_container_mapping), cmocka_unit_test(test_sandbox_mapping),
                cmocka_unit_test(test_user_namespaces),   cmocka_unit_test(test_image_user_and_non_root),
                cmocka_unit_test(test_sysctls),           cmocka_unit_test(test_validate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
