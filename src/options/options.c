/* SPDX-License-Identifier: Apache-2.0 */
/* Flags and the KubeletConfiguration file (cmd/kubelet/app/options, pkg/kubelet/apis/config/v1beta1).
 *
 * Order of precedence, as upstream: built-in defaults < the --config file < command-line flags. Like
 * upstream we parse the command line twice: once to validate it and find --config/--help/--version, then,
 * after the config file was applied, again on top of it. */
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

/* ---- defaults ---- */

int kubelet_options_init(struct kubelet_options *o) {
        if (!o)
                return -EINVAL;
        *o = (struct kubelet_options) {
                .file_check_frequency_usec = DEFAULT_FILE_CHECK_FREQUENCY_USEC,
                .http_check_frequency_usec = DEFAULT_HTTP_CHECK_FREQUENCY_USEC,
                .runtime_request_timeout_usec = DEFAULT_RUNTIME_REQUEST_TIMEOUT_USEC,
                .csi_request_timeout_usec = DEFAULT_RUNTIME_REQUEST_TIMEOUT_USEC,
                .sync_frequency_usec = DEFAULT_SYNC_FREQUENCY_USEC,
                .max_pods = DEFAULT_MAX_PODS,
                .max_parallel_sandbox_creations = -1,
                .verbosity = 0,
                .enable_server = true,
                .enable_debugging_handlers = true,
                .enable_system_log_handler = true,
                .port = DEFAULT_PORT,
                .healthz_port = DEFAULT_HEALTHZ_PORT,
                .authentication_token_webhook = true,
                .authentication_token_webhook_cache_ttl_usec = 120 * USEC_PER_SEC,
                .authorization_webhook_cache_authorized_ttl_usec = 300 * USEC_PER_SEC,
                .authorization_webhook_cache_unauthorized_ttl_usec = 30 * USEC_PER_SEC,
                .streaming_connection_idle_timeout_usec = 4 * 3600 * USEC_PER_SEC,
        };
        o->address = strdup("0.0.0.0");
        o->healthz_bind_address = strdup("127.0.0.1");
        o->cert_dir = strdup(DEFAULT_CERT_DIR);
        o->authorization_mode = strdup("Webhook");
        o->register_node = true;
        o->kube_api_qps = 50;
        o->kube_api_burst = 100;
        o->node_status_update_frequency_usec = 10 * USEC_PER_SEC;
        o->node_status_report_frequency_usec = 300 * USEC_PER_SEC;
        o->node_lease_duration_seconds = 40;
        o->container_runtime_endpoint = strdup(DEFAULT_CONTAINER_RUNTIME_ENDPOINT);
        o->root_dir = strdup(DEFAULT_ROOT_DIR);
        o->pod_logs_dir = strdup(DEFAULT_POD_LOGS_DIR);
        o->cgroups_per_qos = true;
        o->cgroup_root = strdup("/");
        o->cgroup_driver = strdup("cgroupfs");
        o->enforce_node_allocatable = strdup("pods");
        o->pod_pids_limit = -1;
        o->resolv_conf = strdup("/etc/resolv.conf");
        o->container_log_max_size = strdup("10Mi");
        o->container_log_max_files = 5;
        o->container_log_max_workers = 1;
        o->container_log_monitor_interval_usec = 10 * USEC_PER_SEC;
        o->container_logs_dir = strdup(DEFAULT_CONTAINER_LOGS_DIR);
        o->max_per_pod_container = 1;
        o->max_containers = -1;
        o->serialize_image_pulls = true;
        o->crash_loop_backoff_max_usec = 300 * USEC_PER_SEC; /* MaxContainerBackOff */
        o->fail_swap_on = true;
        o->image_gc_high_threshold_percent = 85;
        o->image_gc_low_threshold_percent = 80;
        o->image_minimum_gc_age_usec = 120 * USEC_PER_SEC;
        o->cpu_manager_reconcile_period_usec = 10 * USEC_PER_SEC;
        o->pod_infra_container_image = strdup(DEFAULT_POD_INFRA_CONTAINER_IMAGE);
        o->eviction_hard = strdup(DEFAULT_EVICTION_HARD);
        o->eviction_soft = strdup("");
        o->eviction_soft_grace_period = strdup("");
        o->eviction_minimum_reclaim = strdup("");
        o->eviction_pressure_transition_period_usec = 300 * USEC_PER_SEC;
        o->kernel_memcg_notification = true;
        o->volume_stats_agg_period_usec = 60 * USEC_PER_SEC;
        o->logging_format = strdup("text");
        if (!o->logging_format || !o->container_runtime_endpoint || !o->root_dir || !o->pod_logs_dir || !o->address ||
            !o->healthz_bind_address || !o->cert_dir || !o->authorization_mode || !o->cgroup_root ||
            !o->cgroup_driver || !o->enforce_node_allocatable || !o->resolv_conf || !o->container_log_max_size ||
            !o->container_logs_dir || !o->pod_infra_container_image || !o->eviction_hard || !o->eviction_soft ||
            !o->eviction_soft_grace_period || !o->eviction_minimum_reclaim) {
                kubelet_options_done(o);
                return -ENOMEM;
        }
        return 0;
}

void kubelet_options_done(struct kubelet_options *o) {
        if (!o)
                return;
        free(o->pod_manifest_path);
        free(o->manifest_url);
        strv_free(o->given_flags);
        strv_free(o->manifest_url_headers);
        free(o->container_runtime_endpoint);
        free(o->image_service_endpoint);
        free(o->hostname_override);
        free(o->node_ip);
        free(o->node_name);
        free(o->reported_version);
        free(o->root_dir);
        free(o->pod_logs_dir);
        free(o->image_pull_credentials_verification_policy);
        free(o->preloaded_images_verification_allowlist);
        free(o->config_path);
        free(o->address);
        free(o->healthz_bind_address);
        free(o->tls_cert_file);
        free(o->tls_private_key_file);
        free(o->cert_dir);
        free(o->client_ca_file);
        free(o->authorization_mode);
        free(o->memory_swap_behavior);
        free(o->kubeconfig);
        free(o->node_labels);
        free(o->register_with_taints);
        free(o->kube_reserved);
        free(o->cpu_manager_policy);
        free(o->topology_manager_policy);
        free(o->memory_manager_policy);
        free(o->reserved_memory);
        free(o->topology_manager_scope);
        free(o->topology_manager_policy_options);
        free(o->cpu_manager_policy_options);
        free(o->reserved_system_cpus);
        free(o->sysfs_root);
        free(o->system_reserved);
        free(o->cgroup_root);
        free(o->cgroup_driver);
        free(o->enforce_node_allocatable);
        free(o->allowed_unsafe_sysctls);
        free(o->image_credential_provider_config);
        free(o->image_credential_provider_bin_dir);
        free(o->cluster_dns);
        free(o->cluster_domain);
        free(o->resolv_conf);
        free(o->container_log_max_size);
        free(o->container_logs_dir);
        free(o->pod_infra_container_image);
        free(o->eviction_hard);
        free(o->eviction_soft);
        free(o->eviction_soft_grace_period);
        free(o->eviction_minimum_reclaim);
        free(o->config_dir);
        free(o->bootstrap_kubeconfig);
        strv_free(o->feature_gates);
        free(o->shutdown_by_priority);
        free(o->logging_format);
        free(o->container_runtime);
        *o = (struct kubelet_options) {};
}

/* ---- after parsing ---- */

static int derive_node_name(struct kubelet_options *o, struct ck_error **ret_error) {
        _cleanup_free_ char *name = NULL;
        char host[HOST_NAME_MAX + 1];
        const char *src = o->hostname_override;
        char *t;

        if (isempty(src)) {
                if (gethostname(host, sizeof(host)) < 0)
                        return ck_error_set(ret_error, negative_errno(), "cannot get the hostname: %m");
                host[sizeof(host) - 1] = '\0';
                src = host;
        }
        name = strdup(src);
        if (!name)
                return -ENOMEM;
        t = strstrip(name);
        if (isempty(t))
                return ck_error_set(ret_error, -EINVAL, "empty hostname is invalid");
        for (char *s = t; *s; s++)
                *s = (char) tolower((unsigned char) *s);
        free(o->node_name);
        o->node_name = strdup(t);
        return o->node_name ? 0 : -ENOMEM;
}

#if defined(__x86_64__)
#define VERSION_ARCH "amd64"
#elif defined(__aarch64__)
#define VERSION_ARCH "arm64"
#elif defined(__arm__)
#define VERSION_ARCH "arm"
#else
#define VERSION_ARCH "unknown"
#endif
#if defined(__clang__)
#define VERSION_COMPILER "clang"
#else
#define VERSION_COMPILER "gcc"
#endif

/* As upstream's verflag: "Kubernetes <version>" for --version (kubeadm's preflight and scripts parse it), the
 * version.Info struct as Go's %#v prints it for --version=raw, with ckubelet's own version as its last field
 * (ckubelet has no Go build stamp: no commit, build date or Go version) */
static void print_version(int how) {
        if (how == VERSION_RAW)
                printf("version.Info{Major:\"%s\", Minor:\"%s\", GitVersion:\"%s\", GitCommit:\"\", "
                       "GitTreeState:\"\", BuildDate:\"\", GoVersion:\"\", Compiler:\"%s\", Platform:\"linux/%s\", "
                       "Ckubelet:\"v%s\"}\n",
                       KUBE_VERSION_MAJOR, KUBE_VERSION_MINOR, KUBE_VERSION, VERSION_COMPILER, VERSION_ARCH,
                       CKUBELET_VERSION);
        else
                printf("Kubernetes %s\n", KUBE_VERSION);
}

/* the CPUs of a list "0-3,8" (the kernel's and cpuset.Parse's syntax), or -EINVAL */
static int count_cpu_list(const char *s, int *ret) {
        int n = 0;

        while (*s) {
                char *end;
                long a, b;

                if (!isdigit((unsigned char) *s))
                        return -EINVAL;
                a = b = strtol(s, &end, 10);
                s = end;
                if (*s == '-') {
                        if (!isdigit((unsigned char) s[1]))
                                return -EINVAL;
                        b = strtol(s + 1, &end, 10);
                        s = end;
                }
                if (a < 0 || b < a || b >= 1 << 16)
                        return -EINVAL;
                n += (int) (b - a + 1);
                if (*s == ',' && s[1])
                        s++;
                else if (*s)
                        return -EINVAL;
        }
        *ret = n;
        return 0;
}

/* "k=v,cpu=x,..." without its cpu item */
static int drop_cpu_item(char **list) {
        _cleanup_free_ char *out = NULL;
        size_t len = 0;

        for (const char *p = strempty(*list); *p;) {
                const char *e = strchrnul(p, ',');
                if (!startswith(p, "cpu=")) {
                        char *n = realloc(out, len + (size_t) (e - p) + 2);
                        if (!n)
                                return -ENOMEM;
                        out = n;
                        if (len)
                                out[len++] = ',';
                        memcpy(out + len, p, (size_t) (e - p));
                        len += (size_t) (e - p);
                        out[len] = 0;
                }
                p = *e ? e + 1 : e;
        }
        free(*list);
        *list = out ? TAKE_PTR(out) : strdup("");
        return *list ? 0 : -ENOMEM;
}

/* reservedSystemCPUs replaces the cpu of kubeReserved and systemReserved (upstream's run() in cmd/kubelet: the
 * cpu of kubeReserved is dropped, systemReserved's becomes the number of reserved CPUs) */
static int apply_reserved_cpus(struct kubelet_options *o, struct ck_error **ret_error) {
        int n, r;

        if (isempty(o->reserved_system_cpus))
                return 0;
        if (count_cpu_list(o->reserved_system_cpus, &n) < 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: unable to parse reservedSystemCPUs (--reserved-cpus) %s",
                                    o->reserved_system_cpus);
        r = drop_cpu_item(&o->kube_reserved);
        if (r >= 0)
                r = drop_cpu_item(&o->system_reserved);
        if (r < 0)
                return r;
        {
                char *joined;
                if (asprintf(&joined, "%s%scpu=%d", strempty(o->system_reserved),
                             isempty(o->system_reserved) ? "" : ",", n) < 0)
                        return -ENOMEM;
                free(o->system_reserved);
                o->system_reserved = joined;
        }
        return 0;
}

int kubelet_options_parse(struct kubelet_options *o, int argc, char **argv, struct ck_error **ret_error) {
        struct kubelet_options scratch = {};
        struct parse_state st = { .warn = true };
        _cleanup_free_ char *config_path = NULL, *config_dir = NULL;
        int r;

        if (!o || argc < 0 || (argc > 0 && !argv))
                return -EINVAL;

        /* pass 1: syntax and values of every flag, --config, --help, --version */
        r = kubelet_options_init(&scratch);
        if (r >= 0)
                r = options_parse_argv(&scratch, &st, argc, argv, ret_error);
        if (r >= 0 && scratch.config_path) {
                config_path = strdup(scratch.config_path);
                if (!config_path)
                        r = -ENOMEM;
        }
        if (r >= 0 && !isempty(scratch.config_dir)) {
                config_dir = strdup(scratch.config_dir);
                if (!config_dir)
                        r = -ENOMEM;
        }
        kubelet_options_done(&scratch);
        if (r < 0)
                goto fail;
        if (st.help) {
                options_print_help();
                return 1;
        }
        if (st.version != VERSION_NONE) {
                print_version(st.version);
                return 1;
        }

        /* the config file on top of the defaults, then the flags again on top of that */
        if (config_path || config_dir) {
                r = options_load_configuration(o, config_path, config_dir, ret_error);
                if (r < 0)
                        goto fail;
        }
        st = (struct parse_state) {};
        r = options_parse_argv(o, &st, argc, argv, ret_error);
        if (r < 0)
                goto fail;

        r = options_validate(o, ret_error);
        if (r < 0)
                goto fail;
        r = apply_reserved_cpus(o, ret_error);
        if (r < 0)
                goto fail;
        /* upstream's defaulting: a zero cpuManagerReconcilePeriod (kubeadm writes 0s) is nodeStatusUpdateFrequency */
        if (o->cpu_manager_reconcile_period_usec == 0)
                o->cpu_manager_reconcile_period_usec = o->node_status_update_frequency_usec;
        {
                struct quantity q;
                r = quantity_parse(o->container_log_max_size, &q); /* checked by options_validate() */
                if (r < 0)
                        goto fail;
                o->container_log_max_size_bytes = q.value;
                quantity_done(&q);
        }
        r = derive_node_name(o, ret_error);
        if (r < 0)
                goto fail;
        return 0;

fail:
        if (ret_error && !*ret_error)
                ck_error_set(ret_error, r, "%s", strerror(-r));
        return r;
}

unsigned kubelet_options_image_pulls(const struct kubelet_options *o) {
        assert(o);
        if (o->serialize_image_pulls)
                return 1;
        return o->max_parallel_image_pulls_set ? (unsigned) o->max_parallel_image_pulls : 0;
}

int kubelet_options_image_pull_verify_policy(const struct kubelet_options *o) {
        assert(o);
        if (!feature_enabled(o->feature_gates, "KubeletEnsureSecretPulledImages"))
                return IMAGE_PULL_NEVER_VERIFY;
        return image_pull_verify_policy_from_string(o->image_pull_credentials_verification_policy
                                                            ?: IMAGE_PULL_VERIFY_POLICY_DEFAULT);
}

unsigned kubelet_options_sandbox_creations(const struct kubelet_options *o, long cpus) {
        assert(o);
        if (o->max_parallel_sandbox_creations >= 0)
                return (unsigned) o->max_parallel_sandbox_creations;
        /* measured on 2 CPUs with containerd 1.6 (bench/README.md): 110 sandboxes at once take twice as long as 4
         * to 8 at a time */
        if (cpus < 1)
                cpus = 1;
        return cpus > 1024 ? 4096 : (unsigned) cpus * 4;
}
