/* SPDX-License-Identifier: Apache-2.0 */
/* The checks after flags and file were applied (pkg/kubelet/apis/config/validation). */
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
#include "options/image_pull_policy.h"
#include "nodeshutdown/config.h"
#include "basic/fs.h"
#include "basic/json.h"
#include "basic/log.h"
#include "basic/duration.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"

static int validate_duration(const char *field, const char *flag, uint64_t usec, struct ck_error **ret_error) {
        if (usec == 0)
                return ck_error_set(ret_error, -EINVAL, "invalid configuration: %s (--%s) must be greater than 0",
                                    field, flag);
        if (usec > (uint64_t) INT64_MAX / 1000)
                return ck_error_set(ret_error, -EINVAL, "invalid configuration: %s (--%s) is too large", field, flag);
        return 0;
}

/* upstream ValidateKubeletConfiguration's cgroup rules; the enforcement levels ckubelet does not implement
 * (system-reserved, kube-reserved and their -compressible forms) are refused */
static int validate_cgroups(const struct kubelet_options *o, struct ck_error **ret_error) {
        static const char *const unsupported[] = { "system-reserved", "kube-reserved", "system-reserved-compressible",
                                                   "kube-reserved-compressible" };
        _cleanup_free_ char *copy = NULL;
        char *sp = NULL;
        size_t n = 0;
        bool none = false;

        if (!streq_ptr(o->cgroup_driver, "cgroupfs") && !streq_ptr(o->cgroup_driver, "systemd"))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: cgroupDriver (--cgroup-driver) \"%s\": must "
                                    "be cgroupfs or systemd",
                                    strempty(o->cgroup_driver));
        if (o->cgroups_per_qos && isempty(o->cgroup_root))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: cgroupRoot (--cgroup-root) must be specified "
                                    "if cgroupsPerQOS (--cgroups-per-qos) is enabled");
        if (!isempty(o->cgroup_root) && o->cgroup_root[0] != '/')
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: cgroupRoot (--cgroup-root) \"%s\" must be "
                                    "an absolute path",
                                    o->cgroup_root);
        if (o->cgroup_root && (strstr(o->cgroup_root, "/../") || endswith(o->cgroup_root, "/..")))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: cgroupRoot (--cgroup-root) \"%s\" must not "
                                    "contain \"..\"",
                                    o->cgroup_root);
        copy = strdup(strempty(o->enforce_node_allocatable));
        if (!copy)
                return -ENOMEM;
        for (char *tok = strtok_r(copy, ",", &sp); tok; tok = strtok_r(NULL, ",", &sp)) {
                n++;
                if (streq(tok, "none"))
                        none = true;
                else if (options_strv_contains(unsupported, ELEMENTSOF(unsupported), tok))
                        return ck_error_set(ret_error, -EINVAL,
                                            "invalid configuration: enforceNodeAllocatable "
                                            "(--enforce-node-allocatable) option \"%s\" is not supported by ckubelet",
                                            tok);
                else if (!streq(tok, "pods"))
                        return ck_error_set(
                                ret_error, -EINVAL,
                                "invalid configuration: option \"%s\" specified for "
                                "enforceNodeAllocatable (--enforce-node-allocatable). Valid options are "
                                "\"pods\", \"system-reserved\", \"kube-reserved\", "
                                "\"system-reserved-compressible\", \"kube-reserved-compressible\", or \"none\"",
                                tok);
        }
        if (none && n > 1)
                return ck_error_set(
                        ret_error, -EINVAL,
                        "invalid configuration: enforceNodeAllocatable "
                        "(--enforce-node-allocatable) may not contain additional enforcements when \"none\" is "
                        "specified");
        if (!o->cgroups_per_qos && n > 0 && !none)
                return ck_error_set(
                        ret_error, -EINVAL,
                        "invalid configuration: enforceNodeAllocatable "
                        "(--enforce-node-allocatable) is not supported unless cgroupsPerQOS (--cgroups-per-qos) "
                        "feature is turned on");
        return 0;
}

/* imagePullCredentialsVerificationPolicy and preloadedImagesVerificationAllowlist: upstream's
 * ValidateKubeletConfiguration rules and messages (the gate KubeletEnsureSecretPulledImages, beta on since v1.35) */
static int options_validate_image_pull_credentials(const struct kubelet_options *o, struct ck_error **ret_error) {
        const char *policy = o->image_pull_credentials_verification_policy;
        const char *allowlist = o->preloaded_images_verification_allowlist;

        if (!feature_enabled(o->feature_gates, "KubeletEnsureSecretPulledImages")) {
                if (!isempty(policy))
                        return ck_error_set(ret_error, -EINVAL,
                                            "invalid configuration: `imagePullCredentialsVerificationPolicy` must not "
                                            "be set if KubeletEnsureSecretPulledImages feature gate is not enabled");
                if (!isempty(allowlist))
                        return ck_error_set(ret_error, -EINVAL,
                                            "invalid configuration: `preloadedImagesVerificationAllowlist` must not "
                                            "be set if KubeletEnsureSecretPulledImages feature gate is not enabled");
                return 0;
        }
        if (!policy)
                policy = IMAGE_PULL_VERIFY_POLICY_DEFAULT;
        if (image_pull_verify_policy_from_string(policy) < 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: option \"%s\" specified for "
                                    "imagePullCredentialsVerificationPolicy. Valid options are \"NeverVerify\", "
                                    "\"NeverVerifyPreloadedImages\", \"NeverVerifyAllowlistedImages\" or "
                                    "\"AlwaysVerify\"",
                                    policy);
        if (isempty(allowlist))
                return 0;
        if (!streq(policy, "NeverVerifyAllowlistedImages"))
                return ck_error_set(
                        ret_error, -EINVAL,
                        "invalid configuration: can't set `preloadedImagesVerificationAllowlist` if "
                        "`imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\"");
        for (const char *p = allowlist; *p;) {
                size_t n = strcspn(p, ",");
                _cleanup_free_ char *entry = strndup(p, n);
                char why[512];

                if (!entry)
                        return -ENOMEM;
                if (image_pull_allowlist_pattern_check(entry, why, sizeof(why)) < 0)
                        return ck_error_set(ret_error, -EINVAL,
                                            "invalid configuration: invalid image pattern in "
                                            "`preloadedImagesVerificationAllowlist`: %s",
                                            why);
                p += n;
                if (*p == ',')
                        p++;
        }
        return 0;
}

/* upstream's rules for image GC (ValidateKubeletConfiguration) and for the container log manager
 * (NewContainerLogManager, which upstream checks at start-up) */
static int validate_gc_and_logs(const struct kubelet_options *o, struct ck_error **ret_error) {
        struct quantity q;
        int r;

        if (!isempty(o->memory_swap_behavior) && !streq(o->memory_swap_behavior, "NoSwap") &&
            !streq(o->memory_swap_behavior, "LimitedSwap"))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: memorySwap.swapBehavior \"%s\" must be one of: \"\", "
                                    "\"LimitedSwap\" or \"NoSwap\"",
                                    o->memory_swap_behavior);
        if (o->crash_loop_backoff_max_usec < USEC_PER_SEC || o->crash_loop_backoff_max_usec > 300 * USEC_PER_SEC)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: CrashLoopBackOff.MaxContainerRestartPeriod (got: %g "
                                    "seconds) must be set between 1s and 300s",
                                    (double) o->crash_loop_backoff_max_usec / USEC_PER_SEC);

        /* the image pullers (ValidateKubeletConfiguration) */
        if (o->max_parallel_image_pulls_set && o->max_parallel_image_pulls < 1)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: maxParallelImagePulls %d must be a positive number",
                                    o->max_parallel_image_pulls);
        if (o->serialize_image_pulls && o->max_parallel_image_pulls_set && o->max_parallel_image_pulls > 1)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: maxParallelImagePulls cannot be larger than 1 unless "
                                    "SerializeImagePulls (--serialize-image-pulls) is set to false");

        r = options_validate_image_pull_credentials(o, ret_error);
        if (r < 0)
                return r;

        if (o->image_gc_high_threshold_percent < 0 || o->image_gc_high_threshold_percent > 100)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: imageGCHighThresholdPercent "
                                    "(--image-gc-high-threshold) %d must be between 0 and 100, inclusive",
                                    o->image_gc_high_threshold_percent);
        if (o->image_gc_low_threshold_percent < 0 || o->image_gc_low_threshold_percent > 100)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: imageGCLowThresholdPercent "
                                    "(--image-gc-low-threshold) %d must be between 0 and 100, inclusive",
                                    o->image_gc_low_threshold_percent);
        if (o->image_gc_low_threshold_percent >= o->image_gc_high_threshold_percent)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: imageGCLowThresholdPercent "
                                    "(--image-gc-low-threshold) %d must be less than imageGCHighThresholdPercent "
                                    "(--image-gc-high-threshold) %d",
                                    o->image_gc_low_threshold_percent, o->image_gc_high_threshold_percent);
        if (o->image_maximum_gc_age_usec > 0 && o->image_maximum_gc_age_usec <= o->image_minimum_gc_age_usec) {
                char a[GO_DURATION_MAX], b[GO_DURATION_MAX];
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: imageMaximumGCAge %s must be greater than "
                                    "imageMinimumGCAge %s",
                                    go_duration_format((int64_t) o->image_maximum_gc_age_usec * 1000, a, sizeof(a)),
                                    go_duration_format((int64_t) o->image_minimum_gc_age_usec * 1000, b, sizeof(b)));
        }
        if (o->container_log_max_files <= 1)
                return ck_error_set(ret_error, -EINVAL,
                                    "failed to initialize container log manager: invalid MaxFiles %d, "
                                    "must be > 1",
                                    o->container_log_max_files);
        r = quantity_parse(o->container_log_max_size, &q);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || q.value < 0) {
                if (r >= 0)
                        quantity_done(&q);
                return ck_error_set(ret_error, -EINVAL,
                                    "failed to initialize container log manager: failed to parse "
                                    "container log max size \"%s\"",
                                    o->container_log_max_size);
        }
        quantity_done(&q);
        if (o->container_log_max_workers < 1)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: containerLogMaxWorkers must be greater than "
                                    "or equal to 1");
        if (o->container_log_monitor_interval_usec < 3 * USEC_PER_SEC)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: containerLogMonitorInterval must be a "
                                    "positive time duration greater than or equal to 3s");
        if (isempty(o->container_logs_dir) || o->container_logs_dir[0] != '/')
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: --container-logs-dir \"%s\" must be an "
                                    "absolute path",
                                    strempty(o->container_logs_dir));
        return 0;
}

int options_validate(const struct kubelet_options *o, struct ck_error **ret_error) {
        unsigned char addr[sizeof(struct in6_addr)];
        int r;

        if (!isempty(o->node_ip) && inet_pton(AF_INET, o->node_ip, addr) != 1 &&
            inet_pton(AF_INET6, o->node_ip, addr) != 1)
                return ck_error_set(ret_error, -EINVAL, "failed to parse node IP \"%s\"", o->node_ip);

        r = nodeshutdown_validate(o->shutdown_grace_period_usec, o->shutdown_grace_period_critical_pods_usec,
                                  o->n_shutdown_by_priority, feature_enabled(o->feature_gates, "GracefulNodeShutdown"),
                                  feature_enabled(o->feature_gates, "GracefulNodeShutdownBasedOnPodPriority"),
                                  ret_error);
        if (r < 0)
                return r;
        if (isempty(o->address) ||
            (inet_pton(AF_INET, o->address, addr) != 1 && inet_pton(AF_INET6, o->address, addr) != 1))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: address (--address) \"%s\" is not a valid IP "
                                    "address",
                                    strempty(o->address));
        if (o->healthz_port != 0 &&
            (isempty(o->healthz_bind_address) || (inet_pton(AF_INET, o->healthz_bind_address, addr) != 1 &&
                                                  inet_pton(AF_INET6, o->healthz_bind_address, addr) != 1)))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: healthzBindAddress (--healthz-bind-address) "
                                    "\"%s\" is not a valid IP address",
                                    strempty(o->healthz_bind_address));
        if (o->port < 1 || o->port > 65535)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: port (--port) %d must be between 1 and 65535, "
                                    "inclusive",
                                    o->port);
        if (o->read_only_port < 0 || o->read_only_port > 65535)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: readOnlyPort (--read-only-port) %d must be "
                                    "between 0 and 65535, inclusive",
                                    o->read_only_port);
        if (o->healthz_port < 0 || o->healthz_port > 65535)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: healthzPort (--healthz-port) %d must be "
                                    "between 0 and 65535, inclusive",
                                    o->healthz_port);
        if (!streq_ptr(o->authorization_mode, "AlwaysAllow") && !streq_ptr(o->authorization_mode, "Webhook"))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: authorization.mode (--authorization-mode) "
                                    "\"%s\": must be AlwaysAllow or Webhook",
                                    strempty(o->authorization_mode));
        if (isempty(o->tls_cert_file) != isempty(o->tls_private_key_file))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: tlsCertFile (--tls-cert-file) and "
                                    "tlsPrivateKeyFile (--tls-private-key-file) must be given together");
        if (o->kube_api_qps < 0 || o->kube_api_burst < 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: kubeAPIQPS (--kube-api-qps) and kubeAPIBurst "
                                    "(--kube-api-burst) must not be negative");
        if (o->node_lease_duration_seconds <= 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: nodeLeaseDurationSeconds must be greater than 0");
        if (o->max_pods < 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: maxPods (--max-pods) %d must not be a negative number",
                                    o->max_pods);
        r = validate_duration("fileCheckFrequency", "file-check-frequency", o->file_check_frequency_usec, ret_error);
        if (r >= 0)
                r = validate_duration("httpCheckFrequency", "http-check-frequency", o->http_check_frequency_usec,
                                      ret_error);
        if (r >= 0)
                r = validate_duration("syncFrequency", "sync-frequency", o->sync_frequency_usec, ret_error);
        if (r >= 0)
                r = validate_duration("runtimeRequestTimeout", "runtime-request-timeout",
                                      o->runtime_request_timeout_usec, ret_error);
        if (r >= 0 && o->csi_request_timeout_usec == 0)
                r = ck_error_set(ret_error, -EINVAL,
                                 "invalid configuration: --csi-request-timeout must be greater than 0");
        if (r >= 0 && o->max_parallel_sandbox_creations < -1)
                r = ck_error_set(ret_error, -EINVAL,
                                 "invalid configuration: --max-parallel-sandbox-creations %d must be -1, 0 or a "
                                 "positive number",
                                 o->max_parallel_sandbox_creations);
        if (r < 0)
                return r;
        if (isempty(o->container_runtime_endpoint))
                return ck_error_set(
                        ret_error, -EINVAL,
                        "invalid configuration: containerRuntimeEndpoint (--container-runtime-endpoint) must "
                        "not be empty");
        if (isempty(o->root_dir))
                return ck_error_set(ret_error, -EINVAL, "invalid configuration: --root-dir must not be empty");
        r = validate_cgroups(o, ret_error);
        if (r < 0)
                return r;
        if (isempty(o->pod_logs_dir) || o->pod_logs_dir[0] != '/')
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: pod logs path \"%s\" must be absolute path",
                                    strempty(o->pod_logs_dir));
        r = validate_gc_and_logs(o, ret_error);
        if (r < 0)
                return r;
        if (!streq_ptr(o->logging_format, "text") && !streq_ptr(o->logging_format, "json"))
                return ck_error_set(
                        ret_error, -EINVAL,
                        "invalid configuration: logging.format (--logging-format): Unsupported value: \"%s\": "
                        "supported values: \"json\", \"text\"",
                        strempty(o->logging_format));
        if (o->container_runtime && !streq(o->container_runtime, "remote"))
                return ck_error_set(ret_error, -EINVAL,
                                    "unsupported CRI runtime: \"%s\", only \"remote\" is currently supported",
                                    o->container_runtime);
        if (o->server_tls_bootstrap && !feature_enabled(o->feature_gates, "RotateKubeletServerCertificate"))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: serverTLSBootstrap true requires feature gate "
                                    "RotateKubeletServerCertificate");
        if (o->server_tls_bootstrap && (!isempty(o->tls_cert_file) || !isempty(o->tls_private_key_file)))
                log_warning("serverTLSBootstrap is set: the serving certificate comes from the certificates API, "
                            "tlsCertFile and tlsPrivateKeyFile are only a first pair");
        return 0;
}
