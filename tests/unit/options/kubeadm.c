/* SPDX-License-Identifier: Apache-2.0 */
/* What kubeadm gives the kubelet: its KubeletConfiguration, the flags of its drop-in and kubeadm-flags.env,
 * feature gates, and --config-dir drop-ins merged in upstream's order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "basic/fs.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/error.h"
#include "features/features.h"
#include "options/options.h"

#define ARGV(...) ((char *[]) { "ckubelet", __VA_ARGS__, NULL })
static int ARGC(char **a) {
        int n = 0;
        while (a[n])
                n++;
        return n;
}

#define HDR "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

static char tmpdir[] = "/tmp/ckubelet-kubeadm-XXXXXX";

static int setup_dir(void **state) {
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

static char *write_tmp(const char *name, const char *content) {
        char *path, *slash;
        FILE *f;

        assert_true(asprintf(&path, "%s/%s", tmpdir, name) > 0);
        slash = strrchr(path, '/');
        *slash = '\0';
        assert_int_equal(mkdir_p(path, 0755), 0);
        *slash = '/';
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
        return path;
}

static int parse(struct kubelet_options *o, int argc, char **argv, struct ck_error **err) {
        *err = ck_error_free(*err);
        assert_int_equal(kubelet_options_init(o), 0);
        return kubelet_options_parse(o, argc, argv, err);
}

static void expect_error(char **argv, const char *want) {
        struct kubelet_options o;
        struct ck_error *err = NULL;

        assert_true(parse(&o, ARGC(argv), argv, &err) < 0);
        assert_non_null(err);
        if (!strstr(ck_error_message(err), want))
                fail_msg("error \"%s\" does not contain \"%s\"", ck_error_message(err), want);
        ck_error_free(err);
        kubelet_options_done(&o);
}

/* ---- feature gates ---- */

static void test_feature_gates_parse(void **state) {
        _cleanup_strv_free_ char **g = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;

        assert_int_equal(feature_gates_parse(&g, " RotateKubeletServerCertificate = false ,, AllAlpha=true", false,
                                             &err),
                         0);
        assert_null(err);
        assert_int_equal(strv_length(g), 2);
        assert_string_equal(g[0], "RotateKubeletServerCertificate=false");
        assert_string_equal(g[1], "AllAlpha=true");
        assert_false(feature_enabled(g, "RotateKubeletServerCertificate"));
        /* a later setting of the same gate replaces the earlier one */
        assert_int_equal(feature_gates_parse(&g, "RotateKubeletServerCertificate=True", false, &err), 0);
        assert_int_equal(strv_length(g), 2);
        assert_true(feature_enabled(g, "RotateKubeletServerCertificate"));
        /* defaults of gates nobody set */
        assert_true(feature_enabled(NULL, "RotateKubeletServerCertificate"));
        assert_false(feature_enabled(NULL, "EphemeralContainers"));
        assert_false(feature_enabled(NULL, "NoSuchGate"));

        assert_int_equal(feature_gates_parse(&g, "NoSuchGate=true", false, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "unrecognized feature gate: NoSuchGate");
        err = ck_error_free(err);
        assert_int_equal(feature_gates_parse(&g, "AllAlpha", false, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "missing bool value for AllAlpha");
        err = ck_error_free(err);
        assert_int_equal(feature_gates_parse(&g, "AllAlpha=yes", false, &err), -EINVAL);
        assert_string_equal(ck_error_message(err),
                            "invalid value of AllAlpha=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax");
        err = ck_error_free(err);
        /* locked to its default (GA in v1.37) */
        assert_int_equal(feature_gates_parse(&g, "NodeSwap=false", false, &err), -EINVAL);
        assert_string_equal(ck_error_message(err),
                            "cannot set feature gate NodeSwap to false, feature is locked to true");
        err = ck_error_free(err);
        assert_int_equal(feature_gates_parse(&g, "NodeSwap=true", false, &err), 0);
        /* a gate upstream removed before v1.37 is unknown there, as here */
        assert_int_equal(feature_gates_parse(&g, "TokenRequest=true", false, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "unrecognized feature gate: TokenRequest");
        err = ck_error_free(err);
        /* v1.36's: KubeletFineGrainedAuthz GA and locked on; the zpages on by default, and can be turned off */
        assert_true(feature_enabled(NULL, "KubeletFineGrainedAuthz"));
        assert_int_equal(feature_gates_parse(&g, "KubeletFineGrainedAuthz=false", false, &err), -EINVAL);
        assert_string_equal(ck_error_message(err),
                            "cannot set feature gate KubeletFineGrainedAuthz to false, feature is locked to true");
        err = ck_error_free(err);
        assert_true(feature_enabled(NULL, "ComponentStatusz"));
        assert_true(feature_enabled(NULL, "ComponentFlagz"));
        assert_int_equal(feature_gates_parse(&g, "ComponentFlagz=false", false, &err), 0);
        assert_false(feature_enabled(g, "ComponentFlagz"));
        assert_true(feature_enabled(g, "ComponentStatusz"));
        /* v1.37's defaults: graceful node shutdown beta and on, and can be turned off */
        assert_true(feature_enabled(NULL, "GracefulNodeShutdownBasedOnPodPriority"));
        assert_int_equal(feature_gates_parse(&g, "GracefulNodeShutdown=false", false, &err), 0);
        assert_false(feature_enabled(g, "GracefulNodeShutdown"));
}

static void test_feature_gates_table_sorted(void **state) {
        /* feature_lookup uses bsearch: every name must be found */
        static const char *const names[] = {
                "APIResponseCompression",         "AllAlpha",        "AllBeta", "ZZZ-not-a-gate",
                "RotateKubeletServerCertificate", "WorkloadWithJob", "NodeSwap"
        };
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                const struct feature_spec *s = feature_lookup(names[i]);
                if (streq(names[i], "ZZZ-not-a-gate"))
                        assert_null(s);
                else {
                        assert_non_null(s);
                        assert_string_equal(s->name, names[i]);
                }
        }
        assert_true(feature_lookup("RotateKubeletServerCertificate")->default_value);
        assert_int_equal(feature_lookup("RotateKubeletServerCertificate")->stage, FEATURE_BETA);
}

static void test_feature_gates_config_and_flags(void **state) {
        _cleanup_free_ char *path =
                write_tmp("gates.yaml",
                          HDR "featureGates:\n  RotateKubeletServerCertificate: false\n  AllAlpha: true\n");
        struct kubelet_options o;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        /* the flag overrides one gate; the other keeps the file's value */
        char **a = ARGV("--config", path, "--feature-gates", "RotateKubeletServerCertificate=true",
                        "--feature-gates=AllBeta=true");

        assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
        assert_true(feature_enabled(o.feature_gates, "RotateKubeletServerCertificate"));
        assert_true(feature_enabled(o.feature_gates, "AllAlpha"));
        assert_true(feature_enabled(o.feature_gates, "AllBeta"));
        kubelet_options_done(&o);

        expect_error(ARGV("--feature-gates", "Bogus=true"),
                     "invalid value \"Bogus=true\" for flag --feature-gates: unrecognized feature gate: Bogus");
        {
                _cleanup_free_ char *bad = write_tmp("badgate.yaml", HDR "featureGates:\n  Bogus: true\n");
                expect_error(ARGV("--config", bad), "badgate.yaml: featureGates: unrecognized feature gate: Bogus");
        }
        {
                _cleanup_free_ char *bad = write_tmp("badgate2.yaml", HDR "featureGates:\n  AllAlpha: \"yes\"\n");
                expect_error(ARGV("--config", bad), "featureGates.AllAlpha: expected a boolean, got string");
        }
        /* serverTLSBootstrap needs RotateKubeletServerCertificate */
        expect_error(
                ARGV("--rotate-server-certificates", "--feature-gates", "RotateKubeletServerCertificate=false"),
                "invalid configuration: serverTLSBootstrap true requires feature gate RotateKubeletServerCertificate");
}

/* ---- kubeadm ---- */

/* what kubeadm v1.20 writes to /var/lib/kubelet/config.yaml (kubeadm's defaults over an empty v1beta1 object) */
static const char kubeadm_v120_config[] =
        "apiVersion: kubelet.config.k8s.io/v1beta1\n"
        "authentication:\n  anonymous:\n    enabled: false\n  webhook:\n    cacheTTL: 0s\n    enabled: true\n"
        "  x509:\n    clientCAFile: /etc/kubernetes/pki/ca.crt\n"
        "authorization:\n  mode: Webhook\n  webhook:\n    cacheAuthorizedTTL: 0s\n    cacheUnauthorizedTTL: 0s\n"
        "cgroupDriver: cgroupfs\n"
        "clusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\n"
        "cpuManagerReconcilePeriod: 0s\nevictionPressureTransitionPeriod: 0s\nfileCheckFrequency: 0s\n"
        "healthzBindAddress: 127.0.0.1\nhealthzPort: 10248\nhttpCheckFrequency: 0s\nimageMinimumGCAge: 0s\n"
        "kind: KubeletConfiguration\nlogging: {}\nnodeStatusReportFrequency: 0s\nnodeStatusUpdateFrequency: 0s\n"
        "resolvConf: /run/systemd/resolve/resolv.conf\n"
        "rotateCertificates: true\nruntimeRequestTimeout: 0s\nshutdownGracePeriod: 0s\n"
        "shutdownGracePeriodCriticalPods: 0s\nstaticPodPath: /etc/kubernetes/manifests\n"
        "streamingConnectionIdleTimeout: 0s\nsyncFrequency: 0s\nvolumeStatsAggPeriod: 0s\n";

/* what kubeadm v1.29+ writes: more zero values, logging's sub-objects, an empty containerRuntimeEndpoint */
static const char kubeadm_v129_config[] =
        "apiVersion: kubelet.config.k8s.io/v1beta1\n"
        "authentication:\n  anonymous:\n    enabled: false\n  webhook:\n    cacheTTL: 0s\n    enabled: true\n"
        "  x509:\n    clientCAFile: /etc/kubernetes/pki/ca.crt\n"
        "authorization:\n  mode: Webhook\n  webhook:\n    cacheAuthorizedTTL: 0s\n    cacheUnauthorizedTTL: 0s\n"
        "cgroupDriver: cgroupfs\nclusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\n"
        "containerRuntimeEndpoint: \"\"\ncpuManagerReconcilePeriod: 0s\ncrashLoopBackOff: {}\n"
        "evictionPressureTransitionPeriod: 0s\nfileCheckFrequency: 0s\nhealthzBindAddress: 127.0.0.1\n"
        "healthzPort: 10248\nhttpCheckFrequency: 0s\nimageMaximumGCAge: 0s\nimageMinimumGCAge: 0s\n"
        "kind: KubeletConfiguration\n"
        "logging:\n  flushFrequency: 0\n  options:\n    json:\n      infoBufferSize: \"0\"\n"
        "    text:\n      infoBufferSize: \"0\"\n  verbosity: 0\n"
        "memorySwap: {}\nnodeStatusReportFrequency: 0s\nnodeStatusUpdateFrequency: 0s\n"
        "resolvConf: /run/systemd/resolve/resolv.conf\nrotateCertificates: true\nruntimeRequestTimeout: 0s\n"
        "shutdownGracePeriod: 0s\nshutdownGracePeriodCriticalPods: 0s\nstaticPodPath: /etc/kubernetes/manifests\n"
        "streamingConnectionIdleTimeout: 0s\nsyncFrequency: 0s\nvolumeStatsAggPeriod: 0s\n";

static void check_kubeadm_config(const char *name, const char *content) {
        _cleanup_free_ char *path = write_tmp(name, content);
        struct kubelet_options o;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        /* 10-kubeadm.conf's ExecStart with kubeadm-flags.env (v1.20 writes --container-runtime=remote too) */
        char **a = ARGV("--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf",
                        "--kubeconfig=/etc/kubernetes/kubelet.conf", "--config", path, "--container-runtime=remote",
                        "--container-runtime-endpoint=unix:///run/containerd/containerd.sock",
                        "--pod-infra-container-image=registry.k8s.io/pause:3.9", "--node-ip=192.0.2.10",
                        "--hostname-override=Worker-1");

        assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
        assert_null(err);
        assert_string_equal(o.bootstrap_kubeconfig, "/etc/kubernetes/bootstrap-kubelet.conf");
        assert_string_equal(o.kubeconfig, "/etc/kubernetes/kubelet.conf");
        assert_true(o.rotate_certificates);
        assert_false(o.server_tls_bootstrap);
        assert_string_equal(o.client_ca_file, "/etc/kubernetes/pki/ca.crt");
        assert_string_equal(o.cluster_dns, "10.96.0.10");
        assert_string_equal(o.cluster_domain, "cluster.local");
        assert_string_equal(o.resolv_conf, "/run/systemd/resolve/resolv.conf");
        assert_string_equal(o.pod_manifest_path, "/etc/kubernetes/manifests");
        assert_string_equal(o.container_runtime_endpoint, "unix:///run/containerd/containerd.sock");
        assert_string_equal(o.node_ip, "192.0.2.10");
        assert_string_equal(o.node_name, "worker-1");
        assert_string_equal(o.pod_infra_container_image, "registry.k8s.io/pause:3.9");
        /* zero durations are the defaults */
        assert_int_equal(o.sync_frequency_usec, 60 * USEC_PER_SEC);
        assert_int_equal(o.node_status_update_frequency_usec, 10 * USEC_PER_SEC);
        assert_int_equal(o.authentication_token_webhook_cache_ttl_usec, 120 * USEC_PER_SEC);
        assert_string_equal(o.authorization_mode, "Webhook");
        assert_string_equal(o.logging_format, "text");
        kubelet_options_done(&o);
}

static void test_kubeadm_config(void **state) {
        check_kubeadm_config("kubeadm-v120.yaml", kubeadm_v120_config);
        check_kubeadm_config("kubeadm-v129.yaml", kubeadm_v129_config);
}

static void test_empty_strings_are_defaults(void **state) {
        _cleanup_free_ char *path =
                write_tmp("empty.yaml",
                          HDR "address: \"\"\nhealthzBindAddress: \"\"\ncgroupDriver: \"\"\ncgroupRoot: \"\"\n"
                              "authorization:\n  mode: \"\"\nlogging:\n  format: \"\"\nresolvConf: \"\"\n");
        struct kubelet_options o;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        char **a = ARGV("--config", path);

        assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
        assert_string_equal(o.address, "0.0.0.0");
        assert_string_equal(o.healthz_bind_address, "127.0.0.1");
        assert_string_equal(o.cgroup_driver, "cgroupfs");
        assert_string_equal(o.cgroup_root, "/");
        assert_string_equal(o.authorization_mode, "Webhook");
        assert_string_equal(o.logging_format, "text");
        /* resolvConf is a pointer upstream: "" is "no resolver file", not the default */
        assert_string_equal(o.resolv_conf, "");
        kubelet_options_done(&o);
}

static void test_deprecated_and_logging_flags(void **state) {
        struct kubelet_options o;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        char **a = ARGV("--logging-format", "json", "--container-runtime", "remote");

        assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
        assert_string_equal(o.logging_format, "json");
        kubelet_options_done(&o);
        expect_error(ARGV("--logging-format=xml"), "logging.format (--logging-format): Unsupported value: \"xml\": "
                                                   "supported values: \"json\", \"text\"");
        expect_error(ARGV("--container-runtime=docker"),
                     "unsupported CRI runtime: \"docker\", only \"remote\" is currently supported");
        {
                _cleanup_free_ char *path = write_tmp("logjson.yaml", HDR "logging:\n  format: json\n  verbosity: 3\n");
                char **b = ARGV("--config", path);
                assert_int_equal(parse(&o, ARGC(b), b, &err), 0);
                assert_string_equal(o.logging_format, "json");
                assert_int_equal(o.verbosity, 3);
                kubelet_options_done(&o);
        }
}

/* ---- --config-dir ---- */

static void test_merge_patch(void **state) {
        /* RFC 7386's examples */
        static const char *const cases[][3] = {
                { "{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}" },
                { "{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}" },
                { "{\"a\":\"b\"}", "{\"a\":null}", "{}" },
                { "{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}" },
                { "{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}" },
                { "{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}" },
                { "{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}" },
                { "{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}" },
                { "[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]" },
                { "{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]" },
                { "{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}" },
                { "[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}" },
                { "{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_t *t = json_loads(cases[i][0], JSON_DECODE_ANY, NULL);
                json_t *p = json_loads(cases[i][1], JSON_DECODE_ANY, NULL);
                json_t *want = json_loads(cases[i][2], JSON_DECODE_ANY, NULL);
                json_t *got = kubelet_options_merge_patch(t, p);

                assert_non_null(got);
                if (!json_equal(got, want)) {
                        char *g = json_dumps(got, JSON_ENCODE_ANY | JSON_SORT_KEYS);
                        fail_msg("case %zu: got %s, want %s", i, g, cases[i][2]);
                }
                json_decref(got);
                json_decref(p);
                json_decref(want);
        }
}

static void test_dropin_order(void **state) {
        _cleanup_strv_free_ char **files = NULL, **skipped = NULL;
        _cleanup_free_ char *dir = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        const char *names[] = { "order/20-b.conf",        "order/10-a.conf",     "order/15-sub/01-x.conf",
                                "order/15-sub/notes.txt", "order/99-z.conf.bak", "order/30-c.conf",
                                "order/.hidden.conf",     "order/A.conf" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                free(write_tmp(names[i], HDR));
        assert_true(asprintf(&dir, "%s/order", tmpdir) > 0);
        assert_int_equal(kubelet_options_dropins(dir, &files, &skipped, &err), 0);
        assert_int_equal(strv_length(files), 6);
        /* lexical (byte) order, a directory's files where the directory sorts */
        assert_true(endswith(files[0], "/order/.hidden.conf"));
        assert_true(endswith(files[1], "/order/10-a.conf"));
        assert_true(endswith(files[2], "/order/15-sub/01-x.conf"));
        assert_true(endswith(files[3], "/order/20-b.conf"));
        assert_true(endswith(files[4], "/order/30-c.conf"));
        assert_true(endswith(files[5], "/order/A.conf"));
        assert_int_equal(strv_length(skipped), 2);

        free(dir);
        assert_true(asprintf(&dir, "%s/no-such-dir", tmpdir) > 0);
        assert_true(kubelet_options_dropins(dir, &files, NULL, &err) < 0);
        assert_non_null(strstr(ck_error_message(err), "failed to walk through kubelet dropin directory"));
        err = ck_error_free(err);
}

static void test_dropin_merge(void **state) {
        _cleanup_free_ char *main_cfg = write_tmp(
                "merge/kubelet.yaml",
                HDR "maxPods: 50\nsyncFrequency: 30s\nstaticPodPath: manifests\nclusterDNS: [10.0.0.1, 10.0.0.2]\n"
                    "featureGates:\n  AllAlpha: true\n  AllBeta: true\n"
                    "authentication:\n  anonymous:\n    enabled: true\n  webhook:\n    cacheTTL: 10s\n");
        _cleanup_free_ char *d1 = write_tmp("merge/conf.d/10-first.conf", HDR
                                            "maxPods: 60\nclusterDNS: [10.0.0.9]\nfeatureGates:\n  AllAlpha: false\n"
                                            "authentication:\n  webhook:\n    cacheTTL: 20s\n");
        /* later files win; null puts a field back to its default */
        _cleanup_free_ char *d2 = write_tmp("merge/conf.d/20-second.conf",
                                            HDR "maxPods: 70\nsyncFrequency: null\nresolvConf: resolv.conf\n");
        _cleanup_free_ char *d3 = write_tmp("merge/conf.d/05-early.conf", HDR "maxPods: 1\nhealthzPort: 0\n");
        _cleanup_free_ char *dir = NULL;
        struct kubelet_options o;
        _cleanup_ck_error_ struct ck_error *err = NULL;

        assert_true(asprintf(&dir, "%s/merge/conf.d", tmpdir) > 0);
        {
                char **a = ARGV("--config", main_cfg, "--config-dir", dir);
                assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
                assert_int_equal(o.max_pods, 70);
                assert_int_equal(o.sync_frequency_usec, 60 * USEC_PER_SEC);
                assert_int_equal(o.healthz_port, 0);
                /* lists are replaced, maps merged key by key */
                assert_string_equal(o.cluster_dns, "10.0.0.9");
                assert_false(feature_enabled(o.feature_gates, "AllAlpha"));
                assert_true(feature_enabled(o.feature_gates, "AllBeta"));
                assert_true(o.anonymous_auth);
                assert_int_equal(o.authentication_token_webhook_cache_ttl_usec, 20 * USEC_PER_SEC);
                /* relative paths: the --config file's from its directory, a drop-in's as given (upstream) */
                assert_true(endswith(o.pod_manifest_path, "/merge/manifests"));
                assert_string_equal(o.resolv_conf, "resolv.conf");
                kubelet_options_done(&o);
        }
        {
                /* flags win over the drop-ins */
                char **a = ARGV("--config", main_cfg, "--config-dir", dir, "--max-pods", "80");
                assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
                assert_int_equal(o.max_pods, 80);
                kubelet_options_done(&o);
        }
        {
                /* --config-dir alone */
                char **a = ARGV("--config-dir", dir);
                assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
                assert_int_equal(o.max_pods, 70);
                assert_string_equal(o.cluster_dns, "10.0.0.9");
                kubelet_options_done(&o);
        }
        {
                /* an error names the drop-in */
                _cleanup_free_ char *bad = write_tmp("merge/bad.d/10-bad.conf", HDR "maxPods: many\n");
                _cleanup_free_ char *bad_dir = NULL, *want = NULL;
                assert_true(asprintf(&bad_dir, "%s/merge/bad.d", tmpdir) > 0);
                assert_true(asprintf(&want, "%s: maxPods: expected an integer, got string", bad) > 0);
                expect_error(ARGV("--config", main_cfg, "--config-dir", bad_dir), want);
        }
        {
                _cleanup_free_ char *bad = write_tmp("merge/bad2.d/10-pod.conf", "apiVersion: v1\nkind: Pod\n");
                _cleanup_free_ char *bad_dir = NULL;
                assert_true(asprintf(&bad_dir, "%s/merge/bad2.d", tmpdir) > 0);
                expect_error(
                        ARGV("--config-dir", bad_dir),
                        "10-pod.conf: apiVersion: unsupported value \"v1\": must be \"kubelet.config.k8s.io/v1beta1\"");
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_feature_gates_parse),
                cmocka_unit_test(test_feature_gates_table_sorted),
                cmocka_unit_test(test_feature_gates_config_and_flags),
                cmocka_unit_test(test_kubeadm_config),
                cmocka_unit_test(test_empty_strings_are_defaults),
                cmocka_unit_test(test_deprecated_and_logging_flags),
                cmocka_unit_test(test_merge_patch),
                cmocka_unit_test(test_dropin_order),
                cmocka_unit_test(test_dropin_merge),
        };
        return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
