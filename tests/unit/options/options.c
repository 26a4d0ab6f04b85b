/* SPDX-License-Identifier: Apache-2.0 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "basic/error.h"
#include "basic/duration.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "options/image_pull_policy.h"
#include "options/options.h"

#define ARGV(...) ((char *[]) { "ckubelet", __VA_ARGS__, NULL })
static int ARGC(char **a) {
        int n = 0;
        while (a[n])
                n++;
        return n;
}

static char tmpdir[] = "/tmp/ckubelet-options-XXXXXX";

static int setup_dir(void **state) {
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

static char *write_tmp(const char *name, const char *content) {
        char *path;
        FILE *f;

        assert_true(asprintf(&path, "%s/%s", tmpdir, name) > 0);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
        return path;
}

/* parse argv into fresh options; returns r, error in *err (caller frees) */
static int parse(struct kubelet_options *o, int argc, char **argv, struct ck_error **err) {
        *err = NULL;
        assert_int_equal(kubelet_options_init(o), 0);
        return kubelet_options_parse(o, argc, argv, err);
}

static void expect_error(int argc, char **argv, const char *prefix) {
        struct kubelet_options o;
        struct ck_error *err = NULL;
        int r = parse(&o, argc, argv, &err);

        assert_true(r < 0);
        assert_non_null(err);
        if (!startswith(ck_error_message(err), prefix))
                fail_msg("error \"%s\" does not start with \"%s\"", ck_error_message(err), prefix);
        ck_error_free(err);
        kubelet_options_done(&o);
}

static void test_defaults(void **state) {
        struct kubelet_options o;
        struct ck_error *err = NULL;
        char host[256];
        char *argv[] = { "ckubelet", NULL };

        assert_int_equal(parse(&o, 1, argv, &err), 0);
        assert_null(err);
        assert_null(o.pod_manifest_path);
        assert_int_equal(o.file_check_frequency_usec, 20 * USEC_PER_SEC);
        assert_null(o.manifest_url);
        assert_null(o.manifest_url_headers);
        assert_int_equal(o.http_check_frequency_usec, 20 * USEC_PER_SEC);
        assert_string_equal(o.container_runtime_endpoint, "unix:///run/containerd/containerd.sock");
        assert_null(o.image_service_endpoint);
        assert_int_equal(o.runtime_request_timeout_usec, 120 * USEC_PER_SEC);
        assert_int_equal(o.sync_frequency_usec, 60 * USEC_PER_SEC);
        assert_null(o.hostname_override);
        assert_string_equal(o.root_dir, "/var/lib/kubelet");
        assert_string_equal(o.pod_logs_dir, "/var/log/pods");
        assert_int_equal(o.max_pods, 110);
        assert_int_equal(o.verbosity, 0);
        assert_null(o.config_path);

        assert_int_equal(gethostname(host, sizeof(host)), 0);
        for (char *s = host; *s; s++)
                *s = (char) (*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s);
        assert_string_equal(o.node_name, host);
        kubelet_options_done(&o);
        kubelet_options_done(&o); /* idempotent */
        kubelet_options_done(NULL);
}

static void test_every_flag(void **state) {
        struct kubelet_options o;
        struct ck_error *err;
        char **argv = ARGV("--pod-manifest-path=/etc/kubernetes/manifests", "--file-check-frequency", "5s",
                           "--manifest-url=http://example.com/pods", "--manifest-url-header", "a:hello, b : again,,",
                           "--manifest-url-header=b:beautiful", "--http-check-frequency=1m30s",
                           "--container-runtime-endpoint", "unix:///run/crio/crio.sock",
                           "--image-service-endpoint=unix:///run/img.sock", "--runtime-request-timeout=30s",
                           "--sync-frequency=10s", "--hostname-override", "  My-Node.Example  ",
                           "--root-dir=/srv/kubelet", "--max-pods", "7", "--v=3");

        assert_int_equal(parse(&o, ARGC(argv), argv, &err), 0);
        assert_string_equal(o.pod_manifest_path, "/etc/kubernetes/manifests");
        assert_int_equal(o.file_check_frequency_usec, 5 * USEC_PER_SEC);
        assert_string_equal(o.manifest_url, "http://example.com/pods");
        assert_int_equal(strv_length(o.manifest_url_headers), 3);
        assert_string_equal(o.manifest_url_headers[0], "a: hello");
        assert_string_equal(o.manifest_url_headers[1], "b: again");
        assert_string_equal(o.manifest_url_headers[2], "b: beautiful");
        assert_int_equal(o.http_check_frequency_usec, 90 * USEC_PER_SEC);
        assert_string_equal(o.container_runtime_endpoint, "unix:///run/crio/crio.sock");
        assert_string_equal(o.image_service_endpoint, "unix:///run/img.sock");
        assert_int_equal(o.runtime_request_timeout_usec, 30 * USEC_PER_SEC);
        assert_int_equal(o.sync_frequency_usec, 10 * USEC_PER_SEC);
        assert_string_equal(o.hostname_override, "  My-Node.Example  ");
        assert_string_equal(o.node_name, "my-node.example");
        assert_string_equal(o.root_dir, "/srv/kubelet");
        assert_int_equal(o.max_pods, 7);
        assert_int_equal(o.verbosity, 3);
        kubelet_options_done(&o);
}

static void test_shorthand_and_repeats(void **state) {
        struct kubelet_options o;
        struct ck_error *err;
        char **a1 = ARGV("-v", "4", "--max-pods=1", "--max-pods=2");
        char **a2 = ARGV("-v=5");
        char **a3 = ARGV("-v6", "--max-pods=0", "--pod-manifest-path=");

        assert_int_equal(parse(&o, ARGC(a1), a1, &err), 0);
        assert_int_equal(o.verbosity, 4);
        assert_int_equal(o.max_pods, 2); /* last one wins */
        /* /flagz: the flags as given, once each with the last value, a shorthand under its name */
        assert_int_equal(strv_length(o.given_flags), 4);
        assert_string_equal(o.given_flags[0], "v");
        assert_string_equal(o.given_flags[1], "4");
        assert_string_equal(o.given_flags[2], "max-pods");
        assert_string_equal(o.given_flags[3], "2");
        kubelet_options_done(&o);
        assert_int_equal(parse(&o, ARGC(a2), a2, &err), 0);
        assert_int_equal(o.verbosity, 5);
        kubelet_options_done(&o);
        assert_int_equal(parse(&o, ARGC(a3), a3, &err), 0);
        assert_int_equal(o.verbosity, 6);
        assert_int_equal(o.max_pods, 0);
        assert_string_equal(o.pod_manifest_path, "");
        kubelet_options_done(&o);
}

static void test_help_version(void **state) {
        struct kubelet_options o;
        struct ck_error *err;
        char **a1 = ARGV("--help");
        char **a2 = ARGV("--version");
        char **a3 = ARGV("--max-pods=3", "-h");
        char **a4 = ARGV("--version=false", "--max-pods=3");

        assert_int_equal(parse(&o, ARGC(a1), a1, &err), 1);
        kubelet_options_done(&o);
        assert_int_equal(parse(&o, ARGC(a2), a2, &err), 1);
        kubelet_options_done(&o);
        assert_int_equal(parse(&o, ARGC(a3), a3, &err), 1);
        kubelet_options_done(&o);
        assert_int_equal(parse(&o, ARGC(a4), a4, &err), 0);
        assert_int_equal(o.max_pods, 3);
        kubelet_options_done(&o);
        /* verflag: raw prints and exits too; vX.Y.Z sets the version reported (the followed release's X.Y.Z
         * with a suffix at most) and runs on */
        char **a5 = ARGV("--version=raw");
        char **a6 = ARGV("--version=" KUBE_VERSION "-custom.1", "--max-pods=4");
        assert_int_equal(parse(&o, ARGC(a5), a5, &err), 1);
        kubelet_options_done(&o);
        assert_int_equal(parse(&o, ARGC(a6), a6, &err), 0);
        assert_string_equal(o.reported_version, KUBE_VERSION "-custom.1");
        assert_int_equal(o.max_pods, 4);
        kubelet_options_done(&o);
        assert_int_equal(parse(&o, ARGC(a4), a4, &err), 0);
        assert_null(o.reported_version);
        kubelet_options_done(&o);
        expect_error(ARGC(ARGV("--version=v0.0.1")), ARGV("--version=v0.0.1"),
                     "invalid value \"v0.0.1\" for flag --version: must be true, false, raw or a version");
        expect_error(ARGC(ARGV("--version=" KUBE_VERSION "1")), ARGV("--version=" KUBE_VERSION "1"),
                     "invalid value \"" KUBE_VERSION "1\" for flag --version");
        expect_error(ARGC(ARGV("--version=maybe")), ARGV("--version=maybe"),
                     "invalid value \"maybe\" for flag --version: must be true, false, raw or vX.Y.Z");
        /* a bad flag is reported even with --help, as pflag does */
        expect_error(ARGC(ARGV("--help", "--nope")), ARGV("--help", "--nope"), "unknown flag: --nope");
}

/* Issue 27: every flag of the upstream kubelet's --help (v1.37.2's 131, and v1.20's that unit files and kubeadm
 * drop-ins may still pass) is known: a value may be refused, the flag never is; those ckubelet has no behaviour
 * for are accepted with a warning and start ckubelet */
static const char *const upstream_flags[] = {
        "add-dir-header",
        "address",
        "allowed-unsafe-sysctls",
        "alsologtostderr",
        "anonymous-auth",
        "application-metrics-count-limit",
        "authentication-token-webhook",
        "authentication-token-webhook-cache-ttl",
        "authorization-mode",
        "authorization-webhook-cache-authorized-ttl",
        "authorization-webhook-cache-unauthorized-ttl",
        "azure-container-registry-config",
        "boot-id-file",
        "bootstrap-kubeconfig",
        "cert-dir",
        "cgroup-driver",
        "cgroup-root",
        "cgroups-per-qos",
        "chaos-chance",
        "client-ca-file",
        "cloud-config",
        "cloud-provider",
        "cluster-dns",
        "cluster-domain",
        "cni-bin-dir",
        "cni-cache-dir",
        "cni-conf-dir",
        "config",
        "config-dir",
        "container-hints",
        "container-log-max-files",
        "container-log-max-size",
        "container-runtime",
        "container-runtime-endpoint",
        "containerd",
        "containerd-namespace",
        "contention-profiling",
        "cpu-cfs-quota",
        "cpu-cfs-quota-period",
        "cpu-manager-policy",
        "cpu-manager-policy-options",
        "cpu-manager-reconcile-period",
        "docker",
        "docker-endpoint",
        "docker-env-metadata-whitelist",
        "docker-only",
        "docker-root",
        "docker-tls",
        "docker-tls-ca",
        "docker-tls-cert",
        "docker-tls-key",
        "dynamic-config-dir",
        "enable-cadvisor-json-endpoints",
        "enable-controller-attach-detach",
        "enable-debugging-handlers",
        "enable-load-reader",
        "enable-server",
        "enforce-node-allocatable",
        "event-burst",
        "event-qps",
        "event-storage-age-limit",
        "event-storage-event-limit",
        "eviction-hard",
        "eviction-max-pod-grace-period",
        "eviction-minimum-reclaim",
        "eviction-pressure-transition-period",
        "eviction-soft",
        "eviction-soft-grace-period",
        "exit-on-lock-contention",
        "experimental-allocatable-ignore-eviction",
        "experimental-bootstrap-kubeconfig",
        "experimental-check-node-capabilities-before-mount",
        "experimental-kernel-memcg-notification",
        "experimental-logging-sanitization",
        "experimental-mounter-path",
        "fail-cgroupv1",
        "fail-swap-on",
        "feature-gates",
        "file-check-frequency",
        "global-housekeeping-interval",
        "hairpin-mode",
        "healthz-bind-address",
        "healthz-port",
        "hostname-override",
        "housekeeping-interval",
        "http-check-frequency",
        "image-credential-provider-bin-dir",
        "image-credential-provider-config",
        "image-gc-high-threshold",
        "image-gc-low-threshold",
        "image-pull-progress-deadline",
        "image-service-endpoint",
        "iptables-drop-bit",
        "iptables-masquerade-bit",
        "keep-terminated-pod-volumes",
        "kernel-memcg-notification",
        "kube-api-burst",
        "kube-api-content-type",
        "kube-api-qps",
        "kube-reserved",
        "kube-reserved-cgroup",
        "kubeconfig",
        "kubelet-cgroups",
        "local-storage-capacity-isolation",
        "lock-file",
        "log-backtrace-at",
        "log-cadvisor-usage",
        "log-dir",
        "log-file",
        "log-file-max-size",
        "log-flush-frequency",
        "log-json-info-buffer-size",
        "log-json-split-stream",
        "log-text-info-buffer-size",
        "log-text-split-stream",
        "logging-format",
        "logtostderr",
        "machine-id-file",
        "make-iptables-util-chains",
        "manifest-url",
        "manifest-url-header",
        "master-service-namespace",
        "max-open-files",
        "max-pods",
        "maximum-dead-containers",
        "maximum-dead-containers-per-container",
        "memory-manager-policy",
        "minimum-container-ttl-duration",
        "minimum-image-ttl-duration",
        "network-plugin",
        "network-plugin-mtu",
        "node-ip",
        "node-labels",
        "node-status-max-images",
        "node-status-update-frequency",
        "non-masquerade-cidr",
        "one-output",
        "oom-score-adj",
        "pod-cidr",
        "pod-infra-container-image",
        "pod-manifest-path",
        "pod-max-pids",
        "pods-per-core",
        "port",
        "protect-kernel-defaults",
        "provider-id",
        "qos-reserved",
        "read-only-port",
        "really-crash-for-testing",
        "redirect-container-streaming",
        "register-node",
        "register-schedulable",
        "register-with-taints",
        "registry-burst",
        "registry-qps",
        "reserved-cpus",
        "reserved-memory",
        "resolv-conf",
        "root-dir",
        "rotate-certificates",
        "rotate-server-certificates",
        "runonce",
        "runtime-cgroups",
        "runtime-request-timeout",
        "seccomp-default",
        "seccomp-profile-root",
        "serialize-image-pulls",
        "skip-headers",
        "skip-log-headers",
        "stderrthreshold",
        "storage-driver-buffer-duration",
        "storage-driver-db",
        "storage-driver-host",
        "storage-driver-password",
        "storage-driver-secure",
        "storage-driver-table",
        "storage-driver-user",
        "streaming-connection-idle-timeout",
        "sync-frequency",
        "system-cgroups",
        "system-reserved",
        "system-reserved-cgroup",
        "tls-cert-file",
        "tls-cipher-suites",
        "tls-min-version",
        "tls-private-key-file",
        "topology-manager-policy",
        "topology-manager-policy-options",
        "topology-manager-scope",
        "v",
        "vmodule",
        "volume-plugin-dir",
        "volume-stats-agg-period",
};

static void test_upstream_flags_accepted(void **state) {
        struct kubelet_options o;
        struct ck_error *err;

        for (size_t i = 0; i < sizeof(upstream_flags) / sizeof(upstream_flags[0]); i++) {
                _cleanup_free_ char *arg = NULL;
                assert_true(asprintf(&arg, "--%s=1", upstream_flags[i]) > 0);
                char **a = ARGV(arg);
                int r = parse(&o, ARGC(a), a, &err);
                if (r < 0 && startswith(ck_error_message(err), "unknown flag"))
                        fail_msg("upstream flag --%s refused: %s", upstream_flags[i], ck_error_message(err));
                ck_error_free(err);
                kubelet_options_done(&o);
        }

        /* what kubeadm drop-ins and distributions' unit files pass: ckubelet starts */
        char **a = ARGV("--fail-swap-on=false", "--cloud-provider=", "--provider-id", "aws:///eu-west-1a/i-1",
                        "--logtostderr", "--log-dir=/var/log/kubernetes", "--kubelet-cgroups=/systemd/system.slice",
                        "--runtime-cgroups", "/system.slice/containerd.service", "--register-schedulable=true",
                        "--experimental-bootstrap-kubeconfig=/etc/kubernetes/bootstrap.conf", "--network-plugin=cni",
                        "--seccomp-default", "--fail-swap-on", "--max-pods=5");
        assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
        assert_int_equal(o.max_pods, 5);
        assert_string_equal(o.bootstrap_kubeconfig, "/etc/kubernetes/bootstrap.conf"); /* acted on */
        kubelet_options_done(&o);
        /* a boolean is still checked as one */
        expect_error(ARGC(ARGV("--fail-swap-on=maybe")), ARGV("--fail-swap-on=maybe"),
                     "invalid value \"maybe\" for flag --fail-swap-on");
        expect_error(ARGC(ARGV("--provider-id")), ARGV("--provider-id"), "flag needs an argument: --provider-id");
}

static void test_flag_errors(void **state) {
        expect_error(ARGC(ARGV("--foo")), ARGV("--foo"), "unknown flag: --foo");
        expect_error(ARGC(ARGV("--foo=bar")), ARGV("--foo=bar"), "unknown flag: --foo");
        expect_error(ARGC(ARGV("-x")), ARGV("-x"), "unknown shorthand flag: 'x' in -x");
        expect_error(ARGC(ARGV("run")), ARGV("run"), "unknown command \"run\"");
        expect_error(ARGC(ARGV("--max-pods=abc")), ARGV("--max-pods=abc"),
                     "invalid value \"abc\" for flag --max-pods: not an integer");
        expect_error(ARGC(ARGV("--max-pods=99999999999")), ARGV("--max-pods=99999999999"),
                     "invalid value \"99999999999\" for flag --max-pods: value out of range");
        expect_error(ARGC(ARGV("--max-pods")), ARGV("--max-pods"), "flag needs an argument: --max-pods");
        expect_error(ARGC(ARGV("--max-pods=-1")), ARGV("--max-pods=-1"),
                     "invalid configuration: maxPods (--max-pods) -1 must not be a negative number");
        expect_error(ARGC(ARGV("--file-check-frequency=20")), ARGV("--file-check-frequency=20"),
                     "invalid value \"20\" for flag --file-check-frequency: time: missing unit in duration \"20\"");
        expect_error(ARGC(ARGV("--sync-frequency=abc")), ARGV("--sync-frequency=abc"),
                     "invalid value \"abc\" for flag --sync-frequency: time: invalid duration \"abc\"");
        expect_error(ARGC(ARGV("--sync-frequency=-5s")), ARGV("--sync-frequency=-5s"),
                     "invalid value \"-5s\" for flag --sync-frequency: must not be negative");
        expect_error(ARGC(ARGV("--http-check-frequency=0")), ARGV("--http-check-frequency=0"),
                     "invalid configuration: httpCheckFrequency (--http-check-frequency) must be greater than 0");
        expect_error(ARGC(ARGV("--v=-1")), ARGV("--v=-1"), "invalid value \"-1\" for flag --v");
        expect_error(ARGC(ARGV("--help=maybe")), ARGV("--help=maybe"), "invalid value \"maybe\" for flag --help");
        expect_error(ARGC(ARGV("--manifest-url-header=novalue")), ARGV("--manifest-url-header=novalue"),
                     "invalid value \"novalue\" for flag --manifest-url-header: malformed pair, expect string:string");
        expect_error(ARGC(ARGV("--manifest-url-header=a b:c")), ARGV("--manifest-url-header=a b:c"),
                     "invalid value \"a b:c\" for flag --manifest-url-header: invalid header name \"a b\"");
        expect_error(ARGC(ARGV("--hostname-override=   ")), ARGV("--hostname-override=   "),
                     "empty hostname is invalid");
        expect_error(ARGC(ARGV("--container-runtime-endpoint=")), ARGV("--container-runtime-endpoint="),
                     "invalid configuration: containerRuntimeEndpoint");
        expect_error(ARGC(ARGV("--", "extra")), ARGV("--", "extra"), "unknown command \"extra\"");
}

static void test_duration_parse(void **state) {
        static const struct {
                const char *s;
                int64_t nsec;
        } ok[] = {
                { "0", 0 },
                { "-0", 0 },
                { "+0", 0 },
                { "0s", 0 },
                { "20s", INT64_C(20000000000) },
                { "1m", INT64_C(60000000000) },
                { "2h45m", INT64_C(9900000000000) },
                { "1.5h", INT64_C(5400000000000) },
                { "300ms", INT64_C(300000000) },
                { "-1.5s", INT64_C(-1500000000) },
                { "1us", 1000 },
                { "1\xc2\xb5s", 1000 },
                { "1\xce\xbcs", 1000 },
                { "7ns", 7 },
                { ".5s", INT64_C(500000000) },
                { "1.s", INT64_C(1000000000) },
                { "1h1m1s1ms1us1ns", INT64_C(3661001001001) },
                { "0.100000000000000000000h", INT64_C(360000000000) },
                { "9223372036854775807ns", INT64_MAX },
                { "-9223372036854775808ns", INT64_MIN },
                { "2562047h47m16.854775807s", INT64_MAX },
        };
        static const struct {
                const char *s;
                const char *err;
        } bad[] = {
                { "", "time: invalid duration \"\"" },
                { "-", "time: invalid duration \"-\"" },
                { "abc", "time: invalid duration \"abc\"" },
                { "20", "time: missing unit in duration \"20\"" },
                { "1h2", "time: missing unit in duration \"1h2\"" },
                { "5x", "time: unknown unit \"x\" in duration \"5x\"" },
                { "1e3s", "time: unknown unit \"e\" in duration \"1e3s\"" },
                { ".s", "time: invalid duration \".s\"" },
                { " 1s", "time: invalid duration \" 1s\"" },
                { "1s ", "time: unknown unit \"s \" in duration \"1s \"" },
                { "0x10s", "time: unknown unit \"x\" in duration \"0x10s\"" },
                { "9223372036854775808ns", "time: invalid duration \"9223372036854775808ns\"" },
                { "3000000h", "time: invalid duration \"3000000h\"" },
                { "99999999999999999999s", "time: invalid duration \"99999999999999999999s\"" },
        };
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                int64_t v = 42;
                struct ck_error *err = NULL;
                if (go_duration_parse(ok[i].s, &v, &err) != 0)
                        fail_msg("\"%s\": %s", ok[i].s, ck_error_message(err));
                if (v != ok[i].nsec)
                        fail_msg("\"%s\": got %lld want %lld", ok[i].s, (long long) v, (long long) ok[i].nsec);
        }
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int64_t v = 42;
                struct ck_error *err = NULL;
                assert_true(go_duration_parse(bad[i].s, &v, &err) < 0);
                assert_int_equal(v, 42); /* untouched */
                assert_non_null(err);
                assert_string_equal(ck_error_message(err), bad[i].err);
                ck_error_free(err);
        }
        assert_int_equal(go_duration_parse(NULL, &(int64_t) { 0 }, NULL), -EINVAL);
        assert_int_equal(go_duration_parse("zz", &(int64_t) { 0 }, NULL), -EINVAL);
}

static void test_duration_format(void **state) {
        static const struct {
                int64_t nsec;
                const char *s;
        } t[] = {
                { 0, "0s" },
                { 1, "1ns" },
                { 1100, "1.1\xc2\xb5s" },
                { 2200000, "2.2ms" },
                { 3300000000, "3.3s" },
                { 20000000000, "20s" },
                { 60000000000, "1m0s" },
                { 120000000000, "2m0s" },
                { 90000000000, "1m30s" },
                { 3600000000000, "1h0m0s" },
                { 9900500000000, "2h45m0.5s" },
                { -1500000000, "-1.5s" },
                { INT64_MAX, "2562047h47m16.854775807s" },
                { INT64_MIN, "-2562047h47m16.854775808s" },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                char buf[GO_DURATION_MAX];
                assert_string_equal(go_duration_format(t[i].nsec, buf, sizeof(buf)), t[i].s);
        }
}

static void test_sub_usec_rounds_up(void **state) {
        struct kubelet_options o;
        struct ck_error *err;
        char **a = ARGV("--sync-frequency=1ns", "--file-check-frequency=1500ns");

        assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
        assert_int_equal(o.sync_frequency_usec, 1);
        assert_int_equal(o.file_check_frequency_usec, 2);
        kubelet_options_done(&o);
}

static const char full_config[] = "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                  "kind: KubeletConfiguration\n"
                                  "staticPodPath: manifests   # relative to this file\n"
                                  "fileCheckFrequency: 7s\n"
                                  "staticPodURL: http://10.0.0.1:8080/pods.yaml\n"
                                  "staticPodURLHeader:\n"
                                  "  Authorization: [\"Bearer abc\"]\n"
                                  "  X-Multi:\n"
                                  "  - one\n"
                                  "  - two\n"
                                  "httpCheckFrequency: 45s\n"
                                  "containerRuntimeEndpoint: unix:///run/other.sock\n"
                                  "imageServiceEndpoint: unix:///run/image.sock\n"
                                  "runtimeRequestTimeout: 3m\n"
                                  "syncFrequency: 15s\n"
                                  "maxPods: 20\n"
                                  "podLogsDir: /srv/logs\n"
                                  "logging:\n"
                                  "  verbosity: 4\n"
                                  "  format: text\n"
                                  "cgroupDriver: systemd\n"
                                  "authentication:\n"
                                  "  anonymous:\n"
                                  "    enabled: false\n";

static void test_config_file(void **state) {
        _cleanup_free_ char *path = write_tmp("full.yaml", full_config), *want_static = NULL;
        struct kubelet_options o;
        struct ck_error *err;
        char **a = ARGV("--config", path);

        assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
        assert_null(err);
        assert_true(asprintf(&want_static, "%s/manifests", tmpdir) > 0);
        assert_string_equal(o.pod_manifest_path, want_static);
        assert_int_equal(o.file_check_frequency_usec, 7 * USEC_PER_SEC);
        assert_string_equal(o.manifest_url, "http://10.0.0.1:8080/pods.yaml");
        assert_int_equal(strv_length(o.manifest_url_headers), 3);
        assert_string_equal(o.manifest_url_headers[0], "Authorization: Bearer abc");
        assert_string_equal(o.manifest_url_headers[1], "X-Multi: one");
        assert_string_equal(o.manifest_url_headers[2], "X-Multi: two");
        assert_int_equal(o.http_check_frequency_usec, 45 * USEC_PER_SEC);
        assert_string_equal(o.container_runtime_endpoint, "unix:///run/other.sock");
        assert_string_equal(o.image_service_endpoint, "unix:///run/image.sock");
        assert_int_equal(o.runtime_request_timeout_usec, 180 * USEC_PER_SEC);
        assert_int_equal(o.sync_frequency_usec, 15 * USEC_PER_SEC);
        assert_int_equal(o.max_pods, 20);
        assert_string_equal(o.pod_logs_dir, "/srv/logs");
        assert_int_equal(o.verbosity, 4);
        assert_string_equal(o.config_path, path);
        kubelet_options_done(&o);
}

static void test_config_json_and_zero_defaults(void **state) {
        _cleanup_free_ char *path = write_tmp(
                "c.json",
                "{\"kind\":\"KubeletConfiguration\",\"apiVersion\":\"kubelet.config.k8s.io/v1beta1\","
                "\"fileCheckFrequency\":\"0s\",\"maxPods\":0,\"staticPodPath\":\"/abs\",\"podLogsDir\":null}");
        struct kubelet_options o;
        struct ck_error *err;
        char **a = ARGV("--config="
                        "PLACEHOLDER");
        char *arg;

        assert_true(asprintf(&arg, "--config=%s", path) > 0);
        a[1] = arg;
        assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
        assert_int_equal(o.file_check_frequency_usec, 20 * USEC_PER_SEC); /* zero = default, as SetDefaults */
        assert_int_equal(o.max_pods, 110);
        assert_string_equal(o.pod_manifest_path, "/abs");
        assert_string_equal(o.pod_logs_dir, "/var/log/pods");
        kubelet_options_done(&o);
        free(arg);
}

static void test_flags_override_config(void **state) {
        _cleanup_free_ char *path = write_tmp("full2.yaml", full_config);
        struct kubelet_options o;
        struct ck_error *err;
        char **a = ARGV("--max-pods=5", "--manifest-url-header=X-New:1", "--config", path, "--sync-frequency=2s",
                        "--pod-manifest-path=/flag/path", "--v=1");

        assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
        assert_int_equal(o.max_pods, 5);
        assert_int_equal(o.sync_frequency_usec, 2 * USEC_PER_SEC);
        assert_string_equal(o.pod_manifest_path, "/flag/path");
        assert_int_equal(o.verbosity, 1);
        /* the flag replaces the file's headers instead of appending to them */
        assert_int_equal(strv_length(o.manifest_url_headers), 1);
        assert_string_equal(o.manifest_url_headers[0], "X-New: 1");
        /* what flags did not set comes from the file */
        assert_int_equal(o.http_check_frequency_usec, 45 * USEC_PER_SEC);
        assert_string_equal(o.container_runtime_endpoint, "unix:///run/other.sock");
        kubelet_options_done(&o);
}

static void config_error(const char *name, const char *content, const char *want_suffix) {
        _cleanup_free_ char *path = write_tmp(name, content), *want = NULL;
        struct kubelet_options o;
        struct ck_error *err;
        char **a = ARGV("--config", path);

        assert_true(parse(&o, ARGC(a), a, &err) < 0);
        assert_non_null(err);
        assert_true(asprintf(&want, "%s: %s", path, want_suffix) > 0);
        if (!startswith(ck_error_message(err), want))
                fail_msg("error \"%s\" does not start with \"%s\"", ck_error_message(err), want);
        ck_error_free(err);
        kubelet_options_done(&o);
}

#define HDR "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

static void test_config_errors(void **state) {
        config_error("unknown.yaml", HDR "fooBar: 1\n", "unknown field \"fooBar\"");
        config_error("unknown-log.yaml", HDR "logging:\n  verbosty: 2\n", "unknown field \"logging.verbosty\"");
        config_error("dur.yaml", HDR "fileCheckFrequency: abc\n",
                     "fileCheckFrequency: invalid duration \"abc\": time: invalid duration \"abc\"");
        config_error("durnum.yaml", HDR "syncFrequency: 20\n", "syncFrequency: expected a duration string");
        config_error("durneg.yaml", HDR "syncFrequency: -1s\n",
                     "syncFrequency: invalid duration \"-1s\": must not be negative");
        config_error("maxpods.yaml", HDR "maxPods: \"10\"\n", "maxPods: expected an integer, got string");
        config_error("maxpods2.yaml", HDR "maxPods: 1.5\n", "maxPods: expected an integer, got number");
        config_error("hdr.yaml", HDR "staticPodURLHeader:\n  A: b\n",
                     "staticPodURLHeader.A: expected a list of strings");
        config_error("hdr2.yaml", HDR "staticPodURLHeader: [a]\n", "staticPodURLHeader: expected a map");
        config_error("verb.yaml", HDR "logging:\n  verbosity: -2\n", "logging.verbosity: -2 is out of range");
        config_error("str.yaml", HDR "staticPodPath: [a]\n", "staticPodPath: expected a string, got array");
        config_error("noapi.yaml", "kind: KubeletConfiguration\n", "apiVersion: Required value");
        config_error("badapi.yaml", "apiVersion: v1\nkind: KubeletConfiguration\n",
                     "apiVersion: unsupported value \"v1\": must be \"kubelet.config.k8s.io/v1beta1\"");
        config_error("nokind.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\n", "kind: Required value");
        config_error("badkind.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: Pod\n",
                     "kind: unsupported value \"Pod\"");
        config_error("empty.yaml", "# nothing\n", "config file is empty");
        config_error("two.yaml", HDR "---\n" HDR, "expected one KubeletConfiguration document, found 2");
        config_error("list.yaml", "- a\n", "expected a KubeletConfiguration object, got array");
        config_error("syntax.yaml", HDR "a: [\n", "");
        {
                /* an empty podLogsDir is the default, as upstream's SetDefaults */
                _cleanup_free_ char *path = write_tmp("reldir.yaml", HDR "podLogsDir: \"\"\n");
                struct kubelet_options o;
                struct ck_error *err;
                char **a = ARGV("--config", path);
                assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
                assert_string_equal(o.pod_logs_dir, "/var/log/pods");
                kubelet_options_done(&o);
        }
        {
                struct kubelet_options o;
                struct ck_error *err;
                char **a = ARGV("--config=/nonexistent/kubelet.yaml");
                assert_true(parse(&o, ARGC(a), a, &err) < 0);
                assert_string_equal(ck_error_message(err),
                                    "/nonexistent/kubelet.yaml: cannot read config file: No such file or directory");
                ck_error_free(err);
                kubelet_options_done(&o);
        }
}

static void test_server_options(void **state) {
        _cleanup_free_ char *path =
                write_tmp("server.yaml", HDR
                          "address: 127.0.0.1\nport: 11250\nreadOnlyPort: 11255\nhealthzPort: 0\nenableServer: true\n"
                          "tlsCertFile: certs/kubelet.crt\ntlsPrivateKeyFile: /k.key\n"
                          "authentication:\n  x509:\n    clientCAFile: ca.crt\n  anonymous:\n    enabled: true\n"
                          "  webhook:\n    enabled: false\n    cacheTTL: 10s\n"
                          "authorization:\n  mode: AlwaysAllow\n  webhook:\n    cacheAuthorizedTTL: 1m\n");
        _cleanup_free_ char *want_cert = NULL, *want_ca = NULL;
        struct kubelet_options o;
        struct ck_error *err;
        char **a = ARGV("--config", path, "--anonymous-auth=false", "--enable-debugging-handlers=false");

        /* upstream's config-file defaults: anonymous off, webhook authn on, Webhook authz, 10250, 10248 */
        assert_int_equal(kubelet_options_init(&o), 0);
        assert_true(o.enable_server && o.enable_debugging_handlers && !o.anonymous_auth &&
                    o.authentication_token_webhook);
        assert_string_equal(o.authorization_mode, "Webhook");
        assert_int_equal(o.port, 10250);
        assert_int_equal(o.read_only_port, 0);
        assert_int_equal(o.healthz_port, 10248);
        assert_string_equal(o.healthz_bind_address, "127.0.0.1");
        assert_string_equal(o.address, "0.0.0.0");
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(a), a, &err), 0);
        assert_null(err);
        assert_string_equal(o.address, "127.0.0.1");
        assert_int_equal(o.port, 11250);
        assert_int_equal(o.read_only_port, 11255);
        assert_int_equal(o.healthz_port, 0);
        assert_true(asprintf(&want_cert, "%s/certs/kubelet.crt", tmpdir) > 0);
        assert_true(asprintf(&want_ca, "%s/ca.crt", tmpdir) > 0);
        assert_string_equal(o.tls_cert_file, want_cert);
        assert_string_equal(o.tls_private_key_file, "/k.key");
        assert_string_equal(o.client_ca_file, want_ca);
        assert_false(o.anonymous_auth); /* the flag wins */
        assert_false(o.enable_debugging_handlers);
        assert_false(o.authentication_token_webhook);
        assert_int_equal(o.authentication_token_webhook_cache_ttl_usec, 10 * USEC_PER_SEC);
        assert_string_equal(o.authorization_mode, "AlwaysAllow");
        assert_int_equal(o.authorization_webhook_cache_authorized_ttl_usec, 60 * USEC_PER_SEC);
        assert_int_equal(o.authorization_webhook_cache_unauthorized_ttl_usec, 30 * USEC_PER_SEC);
        assert_int_equal(o.streaming_connection_idle_timeout_usec, 4 * 3600 * USEC_PER_SEC);
        kubelet_options_done(&o);

        /* the cache TTLs and the streaming idle timeout as flags and fields */
        {
                _cleanup_free_ char *p2 = write_tmp("stream.yaml", HDR "streamingConnectionIdleTimeout: 90s\n");
                char **b = ARGV("--config", p2, "--authentication-token-webhook-cache-ttl=0s",
                                "--authorization-webhook-cache-authorized-ttl=2m",
                                "--authorization-webhook-cache-unauthorized-ttl=5s");

                assert_int_equal(parse(&o, ARGC(b), b, &err), 0);
                assert_int_equal(o.streaming_connection_idle_timeout_usec, 90 * USEC_PER_SEC);
                assert_int_equal(o.authentication_token_webhook_cache_ttl_usec, 0);
                assert_int_equal(o.authorization_webhook_cache_authorized_ttl_usec, 120 * USEC_PER_SEC);
                assert_int_equal(o.authorization_webhook_cache_unauthorized_ttl_usec, 5 * USEC_PER_SEC);
                kubelet_options_done(&o);
        }
        {
                char **b = ARGV("--streaming-connection-idle-timeout=3s");
                assert_int_equal(parse(&o, ARGC(b), b, &err), 0);
                assert_int_equal(o.streaming_connection_idle_timeout_usec, 3 * USEC_PER_SEC);
                kubelet_options_done(&o);
        }

        config_error("authn.yaml", HDR "authentication:\n  x509:\n    clientCA: a\n",
                     "unknown field \"authentication.x509.clientCA\"");
        config_error("authn2.yaml", HDR "authentication:\n  anonymous:\n    enabled: yes please\n",
                     "authentication.anonymous.enabled: expected a boolean, got string");
        config_error("authz.yaml", HDR "authorization: Webhook\n", "authorization: expected an object, got string");
        {
                char **b = ARGV("--authorization-mode", "RBAC");
                expect_error(ARGC(b), b,
                             "invalid configuration: authorization.mode (--authorization-mode) \"RBAC\": "
                             "must be AlwaysAllow or Webhook");
        }
        {
                char **b = ARGV("--port", "0");
                expect_error(ARGC(b), b, "invalid configuration: port (--port) 0 must be between 1 and 65535");
        }
        {
                char **b = ARGV("--read-only-port", "70000");
                expect_error(ARGC(b), b, "invalid configuration: readOnlyPort (--read-only-port) 70000");
        }
        {
                char **b = ARGV("--address", "localhost");
                expect_error(ARGC(b), b, "invalid configuration: address (--address) \"localhost\" is not a valid IP");
        }
        {
                char **b = ARGV("--tls-cert-file", "/a.crt");
                expect_error(ARGC(b), b, "invalid configuration: tlsCertFile (--tls-cert-file) and tlsPrivateKeyFile");
        }
        {
                char **b = ARGV("--anonymous-auth=maybe");
                expect_error(ARGC(b), b, "invalid value \"maybe\" for flag --anonymous-auth: must be a boolean");
        }
}

static void test_config_too_large(void **state) {
        _cleanup_free_ char *big = malloc(2 * 1024 * 1024 + 1), *path = NULL;
        struct kubelet_options o;
        struct ck_error *err;

        assert_non_null(big);
        memset(big, '#', 2 * 1024 * 1024);
        big[2 * 1024 * 1024] = '\0';
        path = write_tmp("big.yaml", big);
        char **a = ARGV("--config", path);
        assert_true(parse(&o, ARGC(a), a, &err) < 0);
        assert_non_null(strstr(ck_error_message(err), "config file is too large"));
        ck_error_free(err);
        kubelet_options_done(&o);
}

static void test_cgroup_options(void **state) {
        struct kubelet_options o;
        struct ck_error *err;
        char **def = ARGV("ckubelet");
        char **flags = ARGV("--cgroups-per-qos=true", "--cgroup-root=/custom", "--cgroup-driver", "systemd",
                            "--enforce-node-allocatable=pods", "--pod-max-pids=1024");
        _cleanup_free_ char *path = write_tmp("cg.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                                         "kind: KubeletConfiguration\n"
                                                         "cgroupsPerQOS: false\n"
                                                         "enforceNodeAllocatable: []\n"
                                                         "cgroupRoot: /from-config\n"
                                                         "podPidsLimit: 50\n");
        char **cfg = ARGV("--config", path);

        assert_int_equal(parse(&o, 1, def, &err), 0);
        assert_true(o.cgroups_per_qos);
        assert_string_equal(o.cgroup_root, "/");
        assert_string_equal(o.cgroup_driver, "cgroupfs");
        assert_string_equal(o.enforce_node_allocatable, "pods");
        assert_int_equal(o.pod_pids_limit, -1);
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(flags), flags, &err), 0);
        assert_string_equal(o.cgroup_root, "/custom");
        assert_string_equal(o.cgroup_driver, "systemd"); /* valid; refused at start-up by src/cm */
        assert_int_equal(o.pod_pids_limit, 1024);
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(cfg), cfg, &err), 0);
        assert_false(o.cgroups_per_qos);
        assert_string_equal(o.enforce_node_allocatable, "");
        assert_string_equal(o.cgroup_root, "/from-config");
        assert_int_equal(o.pod_pids_limit, 50);
        kubelet_options_done(&o);

        expect_error(ARGC(ARGV("--cgroup-driver=foo")), ARGV("--cgroup-driver=foo"),
                     "invalid configuration: cgroupDriver (--cgroup-driver) \"foo\": must be cgroupfs or systemd");
        expect_error(
                ARGC(ARGV("--cgroups-per-qos=false")), ARGV("--cgroups-per-qos=false"),
                "invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) is not supported unless "
                "cgroupsPerQOS (--cgroups-per-qos) feature is turned on");
        expect_error(ARGC(ARGV("--cgroup-root=")), ARGV("--cgroup-root="),
                     "invalid configuration: cgroupRoot (--cgroup-root) must be specified if cgroupsPerQOS");
        expect_error(ARGC(ARGV("--cgroup-root=rel")), ARGV("--cgroup-root=rel"),
                     "invalid configuration: cgroupRoot (--cgroup-root) \"rel\" must be an absolute path");
        expect_error(ARGC(ARGV("--enforce-node-allocatable=pods,kube-reserved")),
                     ARGV("--enforce-node-allocatable=pods,kube-reserved"),
                     "invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) option "
                     "\"kube-reserved\" is not supported by ckubelet");
        expect_error(ARGC(ARGV("--enforce-node-allocatable=pods,none")), ARGV("--enforce-node-allocatable=pods,none"),
                     "invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain");
        expect_error(ARGC(ARGV("--enforce-node-allocatable=foo")), ARGV("--enforce-node-allocatable=foo"),
                     "invalid configuration: option \"foo\" specified for enforceNodeAllocatable");
        expect_error(ARGC(ARGV("--pod-max-pids=x")), ARGV("--pod-max-pids=x"),
                     "invalid value \"x\" for flag --pod-max-pids: not an integer");
}

static void test_node_life_options(void **state) {
        struct kubelet_options o;
        struct ck_error *err;
        char **def = ARGV("ckubelet");
        char **flags = ARGV("--eviction-hard=memory.available<1Gi, nodefs.available < 5%", "--eviction-hard",
                            "pid.available<100", "--eviction-soft-grace-period=memory.available=1m30s",
                            "--container-log-max-size=1Mi", "--container-log-max-files=3",
                            "--image-gc-high-threshold=90", "--image-gc-low-threshold=50",
                            "--minimum-image-ttl-duration=1s", "--maximum-dead-containers-per-container=2",
                            "--maximum-dead-containers=10", "--container-logs-dir=/tmp/links",
                            "--kernel-memcg-notification=false");
        _cleanup_free_ char *path = write_tmp("nl.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                                         "kind: KubeletConfiguration\n"
                                                         "evictionHard:\n"
                                                         "  memory.available: 200Mi\n"
                                                         "evictionSoft: {nodefs.available: 20%}\n"
                                                         "evictionSoftGracePeriod: {nodefs.available: 30s}\n"
                                                         "evictionPressureTransitionPeriod: 5s\n"
                                                         "evictionMaxPodGracePeriod: 7\n"
                                                         "containerLogMaxWorkers: 2\n"
                                                         "containerLogMonitorInterval: 3s\n"
                                                         "imageMaximumGCAge: 1h\n"
                                                         "volumeStatsAggPeriod: 2s\n");
        char **cfg = ARGV("--config", path);

        assert_int_equal(parse(&o, 1, def, &err), 0);
        assert_string_equal(o.eviction_hard,
                            "memory.available=100Mi,nodefs.available=10%,imagefs.available=15%,nodefs.inodesFree=5%");
        assert_string_equal(o.eviction_soft, "");
        assert_int_equal(o.eviction_pressure_transition_period_usec, 300 * USEC_PER_SEC);
        assert_int_equal(o.container_log_max_size_bytes, 10 * 1024 * 1024);
        assert_int_equal(o.container_log_max_files, 5);
        assert_int_equal(o.container_log_max_workers, 1);
        assert_int_equal(o.container_log_monitor_interval_usec, 10 * USEC_PER_SEC);
        assert_string_equal(o.container_logs_dir, "/var/log/containers");
        assert_int_equal(o.image_gc_high_threshold_percent, 85);
        assert_int_equal(o.image_gc_low_threshold_percent, 80);
        assert_int_equal(o.image_minimum_gc_age_usec, 120 * USEC_PER_SEC);
        assert_int_equal(o.image_maximum_gc_age_usec, 0);
        assert_int_equal(o.max_per_pod_container, 1);
        assert_int_equal(o.max_containers, -1);
        assert_int_equal(o.minimum_container_ttl_usec, 0);
        assert_true(o.kernel_memcg_notification);
        assert_int_equal(o.volume_stats_agg_period_usec, 60 * USEC_PER_SEC);
        kubelet_options_done(&o);

        /* the first use of a map flag replaces the default, later ones add to it */
        assert_int_equal(parse(&o, ARGC(flags), flags, &err), 0);
        assert_string_equal(o.eviction_hard, "memory.available=1Gi,nodefs.available=5%,pid.available=100");
        assert_string_equal(o.eviction_soft_grace_period, "memory.available=1m30s");
        assert_int_equal(o.container_log_max_size_bytes, 1024 * 1024);
        assert_int_equal(o.container_log_max_files, 3);
        assert_int_equal(o.image_gc_high_threshold_percent, 90);
        assert_int_equal(o.image_gc_low_threshold_percent, 50);
        assert_int_equal(o.image_minimum_gc_age_usec, USEC_PER_SEC);
        assert_int_equal(o.max_per_pod_container, 2);
        assert_int_equal(o.max_containers, 10);
        assert_string_equal(o.container_logs_dir, "/tmp/links");
        assert_false(o.kernel_memcg_notification);
        kubelet_options_done(&o);

        /* the config file's maps replace the defaults too */
        assert_int_equal(parse(&o, ARGC(cfg), cfg, &err), 0);
        assert_string_equal(o.eviction_hard, "memory.available=200Mi");
        assert_string_equal(o.eviction_soft, "nodefs.available=20%");
        assert_string_equal(o.eviction_soft_grace_period, "nodefs.available=30s");
        assert_int_equal(o.eviction_pressure_transition_period_usec, 5 * USEC_PER_SEC);
        assert_int_equal(o.eviction_max_pod_grace_period, 7);
        assert_int_equal(o.container_log_max_workers, 2);
        assert_int_equal(o.container_log_monitor_interval_usec, 3 * USEC_PER_SEC);
        assert_int_equal(o.image_maximum_gc_age_usec, 3600 * USEC_PER_SEC);
        assert_int_equal(o.volume_stats_agg_period_usec, 2 * USEC_PER_SEC);
        kubelet_options_done(&o);

        expect_error(ARGC(ARGV("--eviction-hard=memory.available=1Gi")), ARGV("--eviction-hard=memory.available=1Gi"),
                     "invalid value \"memory.available=1Gi\" for flag --eviction-hard: malformed pair, expect "
                     "string<string");
        expect_error(ARGC(ARGV("--eviction-minimum-reclaim=x")), ARGV("--eviction-minimum-reclaim=x"),
                     "invalid value \"x\" for flag --eviction-minimum-reclaim: malformed pair, expect string=string");
        expect_error(ARGC(ARGV("--image-gc-high-threshold=101")), ARGV("--image-gc-high-threshold=101"),
                     "invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 101 must be "
                     "between 0 and 100, inclusive");
        expect_error(
                ARGC(ARGV("--image-gc-low-threshold=85")), ARGV("--image-gc-low-threshold=85"),
                "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 85 must be less than "
                "imageGCHighThresholdPercent (--image-gc-high-threshold) 85");
        expect_error(ARGC(ARGV("--container-log-max-files=1")), ARGV("--container-log-max-files=1"),
                     "failed to initialize container log manager: invalid MaxFiles 1, must be > 1");
        expect_error(ARGC(ARGV("--container-log-max-size=10Q")), ARGV("--container-log-max-size=10Q"),
                     "failed to initialize container log manager: failed to parse container log max size \"10Q\"");
        expect_error(ARGC(ARGV("--container-log-max-workers=0")), ARGV("--container-log-max-workers=0"),
                     "invalid configuration: containerLogMaxWorkers must be greater than or equal to 1");
        expect_error(ARGC(ARGV("--container-log-monitor-interval=2s")), ARGV("--container-log-monitor-interval=2s"),
                     "invalid configuration: containerLogMonitorInterval must be a positive time duration greater than "
                     "or equal to 3s");
        expect_error(ARGC(ARGV("--container-logs-dir=rel")), ARGV("--container-logs-dir=rel"),
                     "invalid configuration: --container-logs-dir \"rel\" must be an absolute path");
}

/* --max-parallel-sandbox-creations: -1 (4 per CPU, at least 4), 0 (no limit), a number; below -1 refused */
static void test_sandbox_creations(void **state) {
        struct kubelet_options o;
        struct ck_error *err = NULL;
        char **def = ARGV("ckubelet");
        char **three = ARGV("--max-parallel-sandbox-creations=3");
        char **none = ARGV("--max-parallel-sandbox-creations", "0");
        char **bad = ARGV("--max-parallel-sandbox-creations=-2");

        assert_int_equal(parse(&o, 1, def, &err), 0);
        assert_int_equal(o.max_parallel_sandbox_creations, -1);
        assert_int_equal(kubelet_options_sandbox_creations(&o, 2), 8);
        assert_int_equal(kubelet_options_sandbox_creations(&o, 1), 4);
        assert_int_equal(kubelet_options_sandbox_creations(&o, 0), 4); /* unknown: as one CPU */
        assert_int_equal(kubelet_options_sandbox_creations(&o, 64), 256);
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(three), three, &err), 0);
        assert_int_equal(kubelet_options_sandbox_creations(&o, 2), 3);
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(none), none, &err), 0);
        assert_int_equal(kubelet_options_sandbox_creations(&o, 2), 0);
        kubelet_options_done(&o);

        assert_true(parse(&o, ARGC(bad), bad, &err) < 0);
        assert_non_null(
                strstr(ck_error_message(err), "--max-parallel-sandbox-creations -2 must be -1, 0 or a positive"));
        ck_error_free(err);
        kubelet_options_done(&o);
        (void) state;
}

/* crashLoopBackOff.maxContainerRestartPeriod (KubeletCrashLoopBackOffMax): 300 s by default, 1 s to 300 s */
static void test_crash_loop_backoff(void **state) {
        struct kubelet_options o;
        struct ck_error *err;
        char **def = ARGV("ckubelet");
        _cleanup_free_ char *ok = write_tmp("crash.yaml", HDR "crashLoopBackOff:\n  maxContainerRestartPeriod: 30s\n"),
                            *low = write_tmp("crashlow.yaml",
                                             HDR "crashLoopBackOff: {maxContainerRestartPeriod: 500ms}\n"),
                            *high = write_tmp("crashhigh.yaml",
                                              HDR "crashLoopBackOff: {maxContainerRestartPeriod: 301s}\n"),
                            *zero = write_tmp("crash0.yaml", HDR "crashLoopBackOff: {maxContainerRestartPeriod: 0s}\n");
        char **cfg = ARGV("--config", ok);

        assert_int_equal(parse(&o, 1, def, &err), 0);
        assert_int_equal(o.crash_loop_backoff_max_usec, 300 * USEC_PER_SEC);
        kubelet_options_done(&o);
        assert_int_equal(parse(&o, ARGC(cfg), cfg, &err), 0);
        assert_int_equal(o.crash_loop_backoff_max_usec, 30 * USEC_PER_SEC);
        kubelet_options_done(&o);
        expect_error(ARGC(ARGV("--config", low)), ARGV("--config", low),
                     "invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 0.5 seconds) must be "
                     "set between 1s and 300s");
        expect_error(ARGC(ARGV("--config", high)), ARGV("--config", high),
                     "invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 301 seconds) must be "
                     "set between 1s and 300s");
        expect_error(ARGC(ARGV("--config", zero)), ARGV("--config", zero),
                     "invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: 0 seconds) must be "
                     "set between 1s and 300s");
        config_error("crashx.yaml", HDR "crashLoopBackOff: {max: 1s}\n", "unknown field \"crashLoopBackOff.max\"");
}

/* NodeSwap: failSwapOn (true by default; flag and config) and memorySwap.swapBehavior with upstream's validation */
static void test_swap_options(void **state) {
        struct kubelet_options o;
        struct ck_error *err;
        char **def = ARGV("ckubelet");
        char **flag = ARGV("--fail-swap-on=false");
        _cleanup_free_ char *ok = write_tmp("swap.yaml",
                                            HDR "failSwapOn: false\nmemorySwap:\n  swapBehavior: LimitedSwap\n"),
                            *bad = write_tmp("swapbad.yaml", HDR "memorySwap: {swapBehavior: UnlimitedSwap}\n");
        char **cfg = ARGV("--config", ok);

        assert_int_equal(parse(&o, 1, def, &err), 0);
        assert_true(o.fail_swap_on);
        assert_null(o.memory_swap_behavior);
        kubelet_options_done(&o);
        assert_int_equal(parse(&o, ARGC(flag), flag, &err), 0);
        assert_false(o.fail_swap_on);
        kubelet_options_done(&o);
        assert_int_equal(parse(&o, ARGC(cfg), cfg, &err), 0);
        assert_false(o.fail_swap_on);
        assert_string_equal(o.memory_swap_behavior, "LimitedSwap");
        kubelet_options_done(&o);
        expect_error(ARGC(ARGV("--config", bad)), ARGV("--config", bad),
                     "invalid configuration: memorySwap.swapBehavior \"UnlimitedSwap\" must be one of: \"\", "
                     "\"LimitedSwap\" or \"NoSwap\"");
        config_error("swapx.yaml", HDR "memorySwap: {swapLimit: 1}\n", "unknown field \"memorySwap.swapLimit\"");
}

/* imagePullCredentialsVerificationPolicy and preloadedImagesVerificationAllowlist (KubeletEnsureSecretPulledImages),
 * with upstream's defaults and validation messages */
static void test_image_pull_credentials_policy(void **state) {
        struct kubelet_options o;
        struct ck_error *err;
        char **def = ARGV("ckubelet");
        _cleanup_free_ char *allow = write_tmp("ipc.yaml", HDR "imagePullCredentialsVerificationPolicy: "
                                                               "NeverVerifyAllowlistedImages\n"
                                                               "preloadedImagesVerificationAllowlist: "
                                                               "[\"registry.k8s.io/pause\", \"quay.io/org/*\"]\n"),
                            *never = write_tmp("ipcnever.yaml",
                                               HDR "imagePullCredentialsVerificationPolicy: NeverVerify\n"),
                            *gateoff = write_tmp("ipcoff.yaml",
                                                 HDR "featureGates:\n  KubeletEnsureSecretPulledImages: false\n");
        char **cfg = ARGV("--config", allow), **cfgn = ARGV("--config", never), **cfgoff = ARGV("--config", gateoff);

        (void) state;
        assert_int_equal(parse(&o, 1, def, &err), 0);
        assert_null(o.image_pull_credentials_verification_policy);
        assert_int_equal(kubelet_options_image_pull_verify_policy(&o), IMAGE_PULL_NEVER_VERIFY_PRELOADED_IMAGES);
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(cfg), cfg, &err), 0);
        assert_int_equal(kubelet_options_image_pull_verify_policy(&o), IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES);
        assert_string_equal(o.preloaded_images_verification_allowlist, "registry.k8s.io/pause,quay.io/org/*");
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(cfgn), cfgn, &err), 0);
        assert_int_equal(kubelet_options_image_pull_verify_policy(&o), IMAGE_PULL_NEVER_VERIFY);
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(cfgoff), cfgoff, &err), 0); /* the gate off: nothing is verified */
        assert_int_equal(kubelet_options_image_pull_verify_policy(&o), IMAGE_PULL_NEVER_VERIFY);
        kubelet_options_done(&o);

        {
                _cleanup_free_ char *path = write_tmp("ipcbad.yaml",
                                                      HDR "imagePullCredentialsVerificationPolicy: Sometimes\n");
                char **argv = ARGV("--config", path);
                expect_error(ARGC(argv), argv,
                             "invalid configuration: option \"Sometimes\" specified for "
                             "imagePullCredentialsVerificationPolicy. Valid options are \"NeverVerify\", "
                             "\"NeverVerifyPreloadedImages\", \"NeverVerifyAllowlistedImages\" or \"AlwaysVerify\"");
        }
        {
                _cleanup_free_ char *path =
                        write_tmp("ipclist.yaml",
                                  HDR "preloadedImagesVerificationAllowlist: [\"registry.k8s.io/pause\"]\n");
                char **argv = ARGV("--config", path);
                expect_error(ARGC(argv), argv,
                             "invalid configuration: can't set `preloadedImagesVerificationAllowlist` if "
                             "`imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\"");
        }
        {
                _cleanup_free_ char *path =
                        write_tmp("ipctag.yaml",
                                  HDR "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\n"
                                      "preloadedImagesVerificationAllowlist: [\"registry.k8s.io/pause:3.10\"]\n");
                char **argv = ARGV("--config", path);
                expect_error(ARGC(argv), argv,
                             "invalid configuration: invalid image pattern in `preloadedImagesVerificationAllowlist`: "
                             "neither tag nor digest is accepted in an image reference: registry.k8s.io/pause:3.10");
        }
        {
                _cleanup_free_ char *path = write_tmp("ipcoffset.yaml",
                                                      HDR "featureGates:\n  KubeletEnsureSecretPulledImages: false\n"
                                                          "imagePullCredentialsVerificationPolicy: AlwaysVerify\n");
                char **argv = ARGV("--config", path);
                expect_error(ARGC(argv), argv,
                             "invalid configuration: `imagePullCredentialsVerificationPolicy` must not be set if "
                             "KubeletEnsureSecretPulledImages feature gate is not enabled");
        }
}

/* serializeImagePulls and maxParallelImagePulls, with upstream's validation, and the pull queue's limit */
static void test_image_pulls(void **state) {
        struct kubelet_options o;
        struct ck_error *err;
        char **def = ARGV("ckubelet");
        char **flag = ARGV("--serialize-image-pulls=false");
        _cleanup_free_ char *par = write_tmp("pulls.yaml",
                                             HDR "serializeImagePulls: false\nmaxParallelImagePulls: 3\n"),
                            *one = write_tmp("pulls1.yaml", HDR "maxParallelImagePulls: 1\n"),
                            *two = write_tmp("pulls2.yaml", HDR "maxParallelImagePulls: 2\n"),
                            *zero = write_tmp("pulls0.yaml",
                                              HDR "serializeImagePulls: false\nmaxParallelImagePulls: 0\n"),
                            *neg = write_tmp("pullsneg.yaml",
                                             HDR "serializeImagePulls: false\nmaxParallelImagePulls: -2\n"),
                            *nul = write_tmp("pullsnull.yaml",
                                             HDR "serializeImagePulls: false\nmaxParallelImagePulls: null\n");
        char **cfg = ARGV("--config", par), **cfg1 = ARGV("--config", one), **cfgnull = ARGV("--config", nul);
        /* the flag overrides the file: serialized again, with a limit of 3 */
        char **cfg_flag = ARGV("--config", par, "--serialize-image-pulls=true");

        assert_int_equal(parse(&o, 1, def, &err), 0);
        assert_true(o.serialize_image_pulls);
        assert_false(o.max_parallel_image_pulls_set);
        assert_int_equal(kubelet_options_image_pulls(&o), 1);
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(flag), flag, &err), 0);
        assert_false(o.serialize_image_pulls);
        assert_false(o.max_parallel_image_pulls_set);
        assert_int_equal(kubelet_options_image_pulls(&o), 0); /* parallel, no limit */
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(cfg), cfg, &err), 0);
        assert_false(o.serialize_image_pulls);
        assert_true(o.max_parallel_image_pulls_set);
        assert_int_equal(o.max_parallel_image_pulls, 3);
        assert_int_equal(kubelet_options_image_pulls(&o), 3);
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(cfg1), cfg1, &err), 0); /* 1 is allowed while serialized */
        assert_true(o.serialize_image_pulls);
        assert_int_equal(o.max_parallel_image_pulls, 1);
        assert_int_equal(kubelet_options_image_pulls(&o), 1);
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(cfgnull), cfgnull, &err), 0);
        assert_false(o.max_parallel_image_pulls_set);
        kubelet_options_done(&o);

        expect_error(ARGC(ARGV("--config", two)), ARGV("--config", two),
                     "invalid configuration: maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls "
                     "(--serialize-image-pulls) is set to false");
        expect_error(ARGC(cfg_flag), cfg_flag,
                     "invalid configuration: maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls "
                     "(--serialize-image-pulls) is set to false");
        expect_error(ARGC(ARGV("--config", zero)), ARGV("--config", zero),
                     "invalid configuration: maxParallelImagePulls 0 must be a positive number");
        expect_error(ARGC(ARGV("--config", neg)), ARGV("--config", neg),
                     "invalid configuration: maxParallelImagePulls -2 must be a positive number");
        config_error("pullsstr.yaml", HDR "maxParallelImagePulls: \"2\"\n",
                     "maxParallelImagePulls: expected an integer, got string");
        config_error("pullsbool.yaml", HDR "serializeImagePulls: 1\n",
                     "serializeImagePulls: expected a boolean, got integer");
}

/* the CPU manager's fields, from flags and the config file; reservedSystemCPUs replaces the reserved cpu */
static void test_cpu_manager(void **state) {
        struct kubelet_options o;
        struct ck_error *err = NULL;
        _cleanup_free_ char *path = write_tmp("cpu.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                                          "kind: KubeletConfiguration\n"
                                                          "cpuManagerPolicy: static\n"
                                                          "cpuManagerPolicyOptions: {full-pcpus-only: \"true\"}\n"
                                                          "cpuManagerReconcilePeriod: 5s\n"
                                                          "reservedSystemCPUs: \"0-1,6\"\n"
                                                          "kubeReserved: {cpu: 500m, memory: 1Gi}\n"
                                                          "systemReserved: {cpu: \"2\"}\n");
        _cleanup_free_ char *arg = NULL;

        assert_true(asprintf(&arg, "--config=%s", path) > 0);
        assert_int_equal(parse(&o, ARGC(ARGV(arg)), ARGV(arg), &err), 0);
        assert_string_equal(o.cpu_manager_policy, "static");
        assert_string_equal(o.cpu_manager_policy_options, "full-pcpus-only=true");
        assert_int_equal(o.cpu_manager_reconcile_period_usec, 5 * USEC_PER_SEC);
        assert_string_equal(o.reserved_system_cpus, "0-1,6");
        assert_string_equal(o.kube_reserved, "memory=1Gi");
        assert_string_equal(o.system_reserved, "cpu=3");
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(ARGV("--cpu-manager-reconcile-period=0s", "--node-status-update-frequency=7s")),
                               ARGV("--cpu-manager-reconcile-period=0s", "--node-status-update-frequency=7s"), &err),
                         0);
        assert_int_equal(o.cpu_manager_reconcile_period_usec, 7 * USEC_PER_SEC);
        kubelet_options_done(&o);

        assert_int_equal(parse(&o, ARGC(ARGV("--reserved-cpus=0")), ARGV("--reserved-cpus=0"), &err), 0);
        assert_string_equal(o.system_reserved, "cpu=1");
        assert_null(o.cpu_manager_policy);
        assert_int_equal(o.cpu_manager_reconcile_period_usec, 10 * USEC_PER_SEC);
        kubelet_options_done(&o);
        expect_error(ARGC(ARGV("--reserved-cpus=1-")), ARGV("--reserved-cpus=1-"),
                     "invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) 1-");
}

/* the topology and memory managers' fields: reservedMemory's list as --reserved-memory's text; the flag's first use
 * replaces the file's, later ones add */
static void test_topology_memory_managers(void **state) {
        struct kubelet_options o;
        struct ck_error *err = NULL;
        _cleanup_free_ char *path = write_tmp("tm.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\n"
                                                         "kind: KubeletConfiguration\n"
                                                         "topologyManagerPolicy: single-numa-node\n"
                                                         "topologyManagerScope: pod\n"
                                                         "topologyManagerPolicyOptions: {prefer-closest-numa-nodes: "
                                                         "\"true\"}\n"
                                                         "memoryManagerPolicy: Static\n"
                                                         "reservedMemory:\n"
                                                         "- numaNode: 0\n  limits: {memory: 1Gi}\n"
                                                         "- numaNode: 1\n  limits: {memory: 512Mi, hugepages-2Mi: "
                                                         "4Mi}\n");
        _cleanup_free_ char *arg = NULL;

        assert_true(asprintf(&arg, "--config=%s", path) > 0);
        assert_int_equal(parse(&o, ARGC(ARGV(arg)), ARGV(arg), &err), 0);
        assert_string_equal(o.topology_manager_policy, "single-numa-node");
        assert_string_equal(o.topology_manager_scope, "pod");
        assert_string_equal(o.topology_manager_policy_options, "prefer-closest-numa-nodes=true");
        assert_string_equal(o.memory_manager_policy, "Static");
        assert_string_equal(o.reserved_memory, "0:memory=1Gi;1:memory=512Mi,hugepages-2Mi=4Mi");
        kubelet_options_done(&o);
        assert_int_equal(parse(&o,
                               ARGC(ARGV(arg, "--reserved-memory=0:memory=2Gi", "--reserved-memory", "1:memory=1Gi")),
                               ARGV(arg, "--reserved-memory=0:memory=2Gi", "--reserved-memory", "1:memory=1Gi"), &err),
                         0);
        assert_string_equal(o.reserved_memory, "0:memory=2Gi;1:memory=1Gi");
        kubelet_options_done(&o);
        config_error("tmbad.yaml", HDR "reservedMemory: [{numaNode: x, limits: {memory: 1Gi}}]\n",
                     "reservedMemory[0].numaNode: expected a NUMA node number");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_every_flag),
                cmocka_unit_test(test_shorthand_and_repeats),
                cmocka_unit_test(test_help_version),
                cmocka_unit_test(test_upstream_flags_accepted),
                cmocka_unit_test(test_flag_errors),
                cmocka_unit_test(test_duration_parse),
                cmocka_unit_test(test_duration_format),
                cmocka_unit_test(test_sub_usec_rounds_up),
                cmocka_unit_test(test_config_file),
                cmocka_unit_test(test_config_json_and_zero_defaults),
                cmocka_unit_test(test_flags_override_config),
                cmocka_unit_test(test_config_errors),
                cmocka_unit_test(test_config_too_large),
                cmocka_unit_test(test_server_options),
                cmocka_unit_test(test_cgroup_options),
                cmocka_unit_test(test_node_life_options),
                cmocka_unit_test(test_image_pulls),
                cmocka_unit_test(test_image_pull_credentials_policy),
                cmocka_unit_test(test_crash_loop_backoff),
                cmocka_unit_test(test_swap_options),
                cmocka_unit_test(test_sandbox_creations),
                cmocka_unit_test(test_cpu_manager),
                cmocka_unit_test(test_topology_memory_managers),
        };
        return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
