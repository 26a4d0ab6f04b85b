/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Command-line flags and the KubeletConfiguration file (kubelet.config.k8s.io/v1beta1), with upstream
 * names and defaults. Flags given on the command line override the config file, as upstream. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "nodeshutdown/config.h"

struct ck_error;

struct kubelet_options {
        /* static pods */
        char *pod_manifest_path;            /* --pod-manifest-path / staticPodPath */
        uint64_t file_check_frequency_usec; /* --file-check-frequency / fileCheckFrequency, 20s */
        char *manifest_url;                 /* --manifest-url / staticPodURL */
        char **manifest_url_headers;        /* strv of "Key: value"; --manifest-url-header 'a:x,b:y' /
                                                staticPodURLHeader */
        uint64_t http_check_frequency_usec; /* --http-check-frequency / httpCheckFrequency, 20s */

        /* runtime */
        char *container_runtime_endpoint;      /* unix:///run/containerd/containerd.sock */
        char *image_service_endpoint;          /* "" = same as runtime */
        uint64_t runtime_request_timeout_usec; /* 2m */
        uint64_t csi_request_timeout_usec;     /* 2m (csiTimeout); ckubelet only */
        /* --max-parallel-sandbox-creations, ckubelet only: RunPodSandbox calls in flight at once; -1 (the default):
         * kubelet_options_sandbox_creations() picks 4 per CPU; 0: no limit */
        int max_parallel_sandbox_creations;

        /* kubelet */
        uint64_t sync_frequency_usec; /* --sync-frequency / syncFrequency, 1m */
        char *hostname_override;      /* --hostname-override */
        char *node_ip;                /* --node-ip, NULL = detected */
        char *node_name;              /* derived: hostname-override or hostname, lowercased */
        char *reported_version;       /* --version=vX.Y.Z...: the version reported (kubeletVersion), NULL =
                                       * KUBE_VERSION */
        char *root_dir;               /* --root-dir, /var/lib/kubelet */
        char *pod_logs_dir;           /* podLogsDir, /var/log/pods */
        int max_pods;                 /* --max-pods / maxPods, 110 */
        int verbosity;                /* --v / logging.verbosity, 0 */

        /* the kubelet HTTP API (pkg/kubelet/server) */
        bool enable_server;                /* --enable-server / enableServer, true */
        bool enable_debugging_handlers;    /* --enable-debugging-handlers / enableDebuggingHandlers, true: logs,
                                                exec, attach, portForward, run, containerLogs */
        bool enable_system_log_handler;    /* enableSystemLogHandler, true: /logs/ (else 405) */
        bool enable_system_log_query;      /* enableSystemLogQuery, false: /logs/?query= (NodeLogQuery) */
        char *address;                     /* --address / address, 0.0.0.0 */
        int port;                          /* --port / port, 10250 (TLS) */
        int read_only_port;                /* --read-only-port / readOnlyPort, 0 = off */
        char *healthz_bind_address;        /* --healthz-bind-address / healthzBindAddress, 127.0.0.1 */
        int healthz_port;                  /* --healthz-port / healthzPort, 10248, 0 = off */
        char *tls_cert_file;               /* --tls-cert-file / tlsCertFile */
        char *tls_private_key_file;        /* --tls-private-key-file / tlsPrivateKeyFile */
        char *cert_dir;                    /* --cert-dir, /var/lib/kubelet/pki: the self-signed pair */
        char *client_ca_file;              /* --client-ca-file / authentication.x509.clientCAFile */
        bool anonymous_auth;               /* --anonymous-auth / authentication.anonymous.enabled, false */
        bool authentication_token_webhook; /* --authentication-token-webhook / authentication.webhook.enabled,
                                                true */
        uint64_t authentication_token_webhook_cache_ttl_usec; /* authentication.webhook.cacheTTL, 2m */
        char *authorization_mode; /* --authorization-mode / authorization.mode: Webhook | AlwaysAllow */
        uint64_t authorization_webhook_cache_authorized_ttl_usec;   /* 5m */
        uint64_t authorization_webhook_cache_unauthorized_ttl_usec; /* 30s */
        uint64_t streaming_connection_idle_timeout_usec; /* --streaming-connection-idle-timeout, 4h; 0 = none */

        /* joining a cluster (the API server) */
        char *kubeconfig;           /* --kubeconfig: empty = standalone */
        bool register_node;         /* --register-node / registerNode, true */
        char *node_labels;          /* --node-labels "k=v,k2=v2" */
        char *register_with_taints; /* --register-with-taints / registerWithTaints: "key=value:Effect,..." */
        int kube_api_qps;           /* --kube-api-qps / kubeAPIQPS, 50 */
        int kube_api_burst;         /* --kube-api-burst / kubeAPIBurst, 100 */
        uint64_t
                node_status_update_frequency_usec; /* --node-status-update-frequency / nodeStatusUpdateFrequency, 10s */
        uint64_t node_status_report_frequency_usec; /* nodeStatusReportFrequency, 5m */
        int node_lease_duration_seconds;            /* nodeLeaseDurationSeconds, 40 */
        char *kube_reserved;                        /* --kube-reserved / kubeReserved: "cpu=100m,memory=256Mi" */
        char *system_reserved;                      /* --system-reserved / systemReserved */
        char *cpu_manager_policy;                   /* --cpu-manager-policy / cpuManagerPolicy: none, static */
        char *cpu_manager_policy_options;           /* --cpu-manager-policy-options: "name=value,..." */
        char *memory_manager_policy;                /* --memory-manager-policy / memoryManagerPolicy: None, Static */
        char *reserved_memory;         /* --reserved-memory / reservedMemory: "0:memory=1Gi,hugepages-2Mi=0;1:..." */
        char *topology_manager_policy; /* --topology-manager-policy: none, best-effort, restricted, single-numa-node */
        char *topology_manager_scope;  /* --topology-manager-scope: container, pod */
        char *topology_manager_policy_options;      /* --topology-manager-policy-options: "name=value,..." */
        uint64_t cpu_manager_reconcile_period_usec; /* cpuManagerReconcilePeriod, 10s */
        char *reserved_system_cpus;                 /* --reserved-cpus / reservedSystemCPUs: "0-1" */
        char *sysfs_root;                           /* not a flag: where the CPU topology is read (tests); NULL: /sys */
        char *config_path;                          /* --config */
        char *config_dir;                           /* --config-dir: KubeletConfiguration drop-ins (*.conf) */

        /* TLS bootstrap and certificate rotation (pkg/kubelet/certificate) */
        char *bootstrap_kubeconfig; /* --bootstrap-kubeconfig: credentials to ask for a client certificate when
                                       --kubeconfig is missing or unusable */
        bool rotate_certificates;   /* --rotate-certificates / rotateCertificates, false */
        bool server_tls_bootstrap;  /* --rotate-server-certificates / serverTLSBootstrap, false */
        char **feature_gates;       /* --feature-gates / featureGates: "Name=true" entries, one per gate */

        /* logging (component-base LoggingConfiguration) */
        char *logging_format;    /* --logging-format / logging.format: "text" (klog) or "json" */
        char *container_runtime; /* --container-runtime: deprecated, "remote" only */

        /* cgroups (pkg/kubelet/cm) */
        bool cgroups_per_qos;                    /* --cgroups-per-qos / cgroupsPerQOS, true */
        char *cgroup_root;                       /* --cgroup-root / cgroupRoot, "/" */
        char *cgroup_driver;                     /* --cgroup-driver / cgroupDriver: cgroupfs or systemd */
        char *enforce_node_allocatable;          /* --enforce-node-allocatable / enforceNodeAllocatable: comma list,
                                                "pods" (default) or "" */
        int64_t pod_pids_limit;                  /* --pod-max-pids / podPidsLimit, -1 = no limit */
        char *image_credential_provider_config;  /* --image-credential-provider-config */
        char *image_credential_provider_bin_dir; /* --image-credential-provider-bin-dir */
        char *allowed_unsafe_sysctls;            /* --allowed-unsafe-sysctls: "kernel.msg*,net.core.somaxconn" */
        char *cluster_dns;                       /* --cluster-dns: comma-separated IPs */
        char *cluster_domain;                    /* --cluster-domain */
        char *resolv_conf;                       /* --resolv-conf, default /etc/resolv.conf; "" = none */

        /* container logs (pkg/kubelet/logs) */
        char *container_log_max_size;                 /* --container-log-max-size / containerLogMaxSize, "10Mi" */
        int64_t container_log_max_size_bytes;         /* derived from it */
        int container_log_max_files;                  /* --container-log-max-files / containerLogMaxFiles, 5 */
        int container_log_max_workers;                /* --container-log-max-workers / containerLogMaxWorkers, 1 */
        uint64_t container_log_monitor_interval_usec; /* --container-log-monitor-interval /
                                                         containerLogMonitorInterval, 10s */
        char *container_logs_dir;                     /* --container-logs-dir (ckubelet only; upstream hard-codes it):
                                                /var/log/containers, the links log shippers read */

        /* garbage collection (pkg/kubelet/container GC policy, pkg/kubelet/images) */
        uint64_t minimum_container_ttl_usec; /* --minimum-container-ttl-duration, 0 */
        int max_per_pod_container;           /* --maximum-dead-containers-per-container, 1 */
        int max_containers;                  /* --maximum-dead-containers, -1 = no limit */
        int image_gc_high_threshold_percent; /* --image-gc-high-threshold / imageGCHighThresholdPercent, 85 */
        int image_gc_low_threshold_percent;  /* --image-gc-low-threshold / imageGCLowThresholdPercent, 80 */
        uint64_t image_minimum_gc_age_usec;  /* --minimum-image-ttl-duration / imageMinimumGCAge, 2m */
        uint64_t image_maximum_gc_age_usec;  /* imageMaximumGCAge, 0 = off */
        char *pod_infra_container_image;     /* --pod-infra-container-image: never garbage-collected */

        /* image pulls (pkg/kubelet/images puller) */
        bool serialize_image_pulls; /* --serialize-image-pulls / serializeImagePulls, true */
        /* imagePullCredentialsVerificationPolicy (KubeletEnsureSecretPulledImages): NULL = unset, which means
         * "NeverVerifyPreloadedImages" with the gate on; preloadedImagesVerificationAllowlist joined by commas */
        char *image_pull_credentials_verification_policy;
        char *preloaded_images_verification_allowlist;
        /* crashLoopBackOff.maxContainerRestartPeriod: the containers' restart back-off's cap (1 s to 300 s) */
        uint64_t crash_loop_backoff_max_usec;
        bool fail_swap_on;                 /* --fail-swap-on / failSwapOn, true: refuse to start with swap on */
        char *memory_swap_behavior;        /* memorySwap.swapBehavior: "", "NoSwap" (the default) or "LimitedSwap" */
        bool seccomp_default;              /* --seccomp-default / seccompDefault: RuntimeDefault when none set */
        bool max_parallel_image_pulls_set; /* maxParallelImagePulls given (upstream: not nil) */
        int max_parallel_image_pulls;      /* maxParallelImagePulls: the most pulls at once when not serialized */

        /* eviction (pkg/kubelet/eviction): maps as "signal=value,signal2=value2" */
        char *eviction_hard;               /* --eviction-hard / evictionHard */
        char *eviction_soft;               /* --eviction-soft / evictionSoft */
        char *eviction_soft_grace_period;  /* --eviction-soft-grace-period / evictionSoftGracePeriod */
        char *eviction_minimum_reclaim;    /* --eviction-minimum-reclaim / evictionMinimumReclaim */
        int eviction_max_pod_grace_period; /* --eviction-max-pod-grace-period / evictionMaxPodGracePeriod, 0 */
        uint64_t eviction_pressure_transition_period_usec; /* --eviction-pressure-transition-period /
                                                              evictionPressureTransitionPeriod, 5m */
        bool kernel_memcg_notification;        /* --kernel-memcg-notification / kernelMemcgNotification: true here
                                                (upstream: false) */
        uint64_t volume_stats_agg_period_usec; /* --volume-stats-agg-period / volumeStatsAggPeriod, 1m */
        /* graceful node shutdown (config file only, as upstream); 0 and none: off */
        uint64_t shutdown_grace_period_usec;               /* shutdownGracePeriod */
        uint64_t shutdown_grace_period_critical_pods_usec; /* shutdownGracePeriodCriticalPods */
        struct nodeshutdown_period *shutdown_by_priority;  /* shutdownGracePeriodByPodPriority */
        size_t n_shutdown_by_priority;
        /* the flags given on the command line for /flagz: name, value, name, value... (the last value of a flag
         * given twice, as pflag keeps it; a shorthand under its long name) */
        char **given_flags;
};

/* Fill defaults. */
int kubelet_options_init(struct kubelet_options *o);
void kubelet_options_done(struct kubelet_options *o);

/* Parse argv (flags as "--name=value" or "--name value"; booleans as "--name" or "--name=false").
 * Reads the --config file if given (flags override it). Returns 0, 1 when --help/--version was handled
 * (text printed to stdout), or a negative errno with *ret_error naming the flag/field and the reason:
 * "unknown flag: --foo", "invalid value \"x\" for flag --max-pods: ...",
 * "/etc/kubelet.yaml: fileCheckFrequency: invalid duration \"abc\"", "/etc/kubelet.yaml: unknown field
 * \"fooBar\"". */
int kubelet_options_parse(struct kubelet_options *o, int argc, char **argv, struct ck_error **ret_error);

/* The limit of RunPodSandbox calls in flight (--max-parallel-sandbox-creations): the flag, or with -1 4 per CPU of
 * CPUS (at least 4); 0: no limit. */
unsigned kubelet_options_sandbox_creations(const struct kubelet_options *o, long cpus);

/* The effective enum image_pull_verify_policy (options/image_pull_policy.h): NeverVerify with the gate
 * KubeletEnsureSecretPulledImages off, the configured policy (default NeverVerifyPreloadedImages) otherwise. */
int kubelet_options_image_pull_verify_policy(const struct kubelet_options *o);

/* The limit of image pulls in flight (upstream's puller.go): 1 while serializeImagePulls, else maxParallelImagePulls;
 * 0 (no limit) when that is unset. */
unsigned kubelet_options_image_pulls(const struct kubelet_options *o);

/* ---- the pieces of --config-dir, for the unit tests ---- */
/* RFC 7386 JSON merge patch of PATCH over TARGET (consumed; may be NULL): the merged document (new reference), NULL
 * on OOM. Objects merge key by key, null deletes a key, anything else replaces. */
json_t *kubelet_options_merge_patch(json_t *target, json_t *patch);
/* The drop-ins of DIR in the order upstream merges them (filepath.WalkDir: lexical, subdirectories where they
 * sort): the files ending in ".conf" in *ret_files, the others in *ret_skipped (optional). */
int kubelet_options_dropins(const char *dir, char ***ret_files, char ***ret_skipped, struct ck_error **ret_error);
