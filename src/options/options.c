/* SPDX-License-Identifier: Apache-2.0 */
/* Flags and the KubeletConfiguration file (cmd/kubelet/app/options, pkg/kubelet/apis/config/v1beta1).
 *
 * Order of precedence, as upstream: built-in defaults < the --config file < command-line flags. Like
 * upstream we parse the command line twice: once to validate it and find --config/--help/--version, then,
 * after the config file was applied, again on top of it. */
#include "options/options.h"

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
#include "nodeshutdown/config.h"
#include "basic/fs.h"
#include "basic/json.h"
#include "basic/log.h"
#include "basic/duration.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"

#define KUBELET_CONFIG_API_VERSION "kubelet.config.k8s.io/v1beta1"
#define KUBELET_CONFIG_KIND "KubeletConfiguration"
/* a KubeletConfiguration is a few kilobytes; anything near this is not one */
#define KUBELET_CONFIG_MAX_SIZE (1024u * 1024u)
/* --config-dir: how deep and how many files (a drop-in directory holds a handful) */
#define KUBELET_CONFIG_DIR_MAX_DEPTH 8u
#define KUBELET_CONFIG_DIR_MAX_FILES 1000u

#define DEFAULT_CONTAINER_RUNTIME_ENDPOINT "unix:///run/containerd/containerd.sock"
#define DEFAULT_ROOT_DIR "/var/lib/kubelet"
#define DEFAULT_POD_LOGS_DIR "/var/log/pods"
#define DEFAULT_FILE_CHECK_FREQUENCY_USEC (20 * USEC_PER_SEC)
#define DEFAULT_HTTP_CHECK_FREQUENCY_USEC (20 * USEC_PER_SEC)
#define DEFAULT_SYNC_FREQUENCY_USEC (60 * USEC_PER_SEC)
#define DEFAULT_RUNTIME_REQUEST_TIMEOUT_USEC (120 * USEC_PER_SEC)
#define DEFAULT_MAX_PODS 110
#define DEFAULT_PORT 10250
#define DEFAULT_HEALTHZ_PORT 10248
#define DEFAULT_CERT_DIR "/var/lib/kubelet/pki"
#define DEFAULT_CONTAINER_LOGS_DIR "/var/log/containers"
#define DEFAULT_POD_INFRA_CONTAINER_IMAGE "registry.k8s.io/pause:3.10"
/* v1beta1's DefaultEvictionHard */
#define DEFAULT_EVICTION_HARD "memory.available=100Mi,nodefs.available=10%,imagefs.available=15%,nodefs.inodesFree=5%"

enum flag_kind {
        FLAG_STRING,        /* char * at offset */
        FLAG_DURATION,      /* uint64_t usec at offset */
        FLAG_INT,           /* int at offset */
        FLAG_INT64,         /* int64_t at offset */
        FLAG_BOOL,          /* bool at offset */
        FLAG_HEADERS,       /* --manifest-url-header */
        FLAG_MAP,           /* "k=v,k2=v2" (pflag mapStringString): char * at offset, repeated uses merge */
        FLAG_LANGLE_MAP,    /* "k<v,k2<v2" (langleSeparatedMapStringString), stored as "k=v,k2=v2" */
        FLAG_VERBOSITY,     /* --v / -v */
        FLAG_FEATURE_GATES, /* --feature-gates: merged gate by gate */
        FLAG_HELP,
        FLAG_VERSION,
        FLAG_COMPAT, /* an upstream kubelet flag ckubelet has no behaviour for: accepted, warned about once */
};

struct flag_def {
        const char *name;
        char shorthand;
        enum flag_kind kind;
        size_t offset;
        const char *field; /* KubeletConfiguration field, NULL for flag-only */
        const char *type;  /* as pflag prints it in --help */
        const char *help;
        const char *deprecated; /* pflag's deprecation note, printed when the flag is used */
        const char *quiet;      /* FLAG_COMPAT: the value that is what ckubelet does anyway (no warning), or
                                 * COMPAT_ALWAYS_QUIET */
};

#define COMPAT_ALWAYS_QUIET "\001"
/* An upstream kubelet flag (of the release ckubelet follows, or an older one that distributions' unit files and
 * kubeadm drop-ins still pass) that ckubelet has no behaviour for: accepted so that ckubelet starts wherever the
 * upstream kubelet would, with one warning naming it unless its value is what ckubelet does anyway. type NULL:
 * a boolean flag (its value is checked as one). */
#define COMPAT(name, type, quiet, note) \
        { name, 0, FLAG_COMPAT, 0, NULL, type, note, NULL, quiet }

#define OFF(f) offsetof(struct kubelet_options, f)

static const struct flag_def flag_defs[] = {
        { "address", 0, FLAG_STRING, OFF(address), "address", "string",
          "IP address the kubelet API listens on; '0.0.0.0' or '::' listens on every interface", NULL },
        { "allowed-unsafe-sysctls", 0, FLAG_STRING, OFF(allowed_unsafe_sysctls), "allowedUnsafeSysctls", "strings",
          "Sysctls outside the safe set that pods may still set: comma-separated names, or prefixes ending in '*'. "
          "Each must be namespaced; pods can affect one another through them",
          NULL },
        { "anonymous-auth", 0, FLAG_BOOL, OFF(anonymous_auth), "authentication.anonymous.enabled", "",
          "Let requests without credentials through to authorization as user system:anonymous in group "
          "system:unauthenticated",
          NULL },
        { "authentication-token-webhook", 0, FLAG_BOOL, OFF(authentication_token_webhook),
          "authentication.webhook.enabled", "",
          "Check bearer tokens sent to the kubelet API by a TokenReview at the "
          "API server",
          NULL },
        { "authorization-mode", 0, FLAG_STRING, OFF(authorization_mode), "authorization.mode", "string",
          "How requests to the kubelet API are authorized: 'Webhook' asks the API server with a SubjectAccessReview, "
          "'AlwaysAllow' lets every authenticated request through",
          NULL },
        { "bootstrap-kubeconfig", 0, FLAG_STRING, OFF(bootstrap_kubeconfig), NULL, "string",
          "Kubeconfig with temporary credentials (typically a bootstrap token). When --kubeconfig is missing or its "
          "client certificate cannot be used, the kubelet uses these to request a client certificate through a "
          "CertificateSigningRequest, stores it in --cert-dir and writes --kubeconfig to point at it",
          NULL },
        { "authentication-token-webhook-cache-ttl", 0, FLAG_DURATION, OFF(authentication_token_webhook_cache_ttl_usec),
          "authentication.webhook.cacheTTL", "duration",
          "How long an answer of the TokenReview webhook is kept and reused", NULL },
        { "authorization-webhook-cache-authorized-ttl", 0, FLAG_DURATION,
          OFF(authorization_webhook_cache_authorized_ttl_usec), "authorization.webhook.cacheAuthorizedTTL", "duration",
          "How long an 'allowed' answer of the SubjectAccessReview webhook is kept and reused", NULL },
        { "authorization-webhook-cache-unauthorized-ttl", 0, FLAG_DURATION,
          OFF(authorization_webhook_cache_unauthorized_ttl_usec), "authorization.webhook.cacheUnauthorizedTTL",
          "duration", "How long a 'denied' answer of the SubjectAccessReview webhook is kept and reused", NULL },
        { "cert-dir", 0, FLAG_STRING, OFF(cert_dir), NULL, "string",
          "Directory of the kubelet's certificates and keys: the client certificate from TLS bootstrapping "
          "(kubelet-client-current.pem), the serving certificate (kubelet-server-current.pem, or the self-signed "
          "kubelet.crt/kubelet.key when no --tls-cert-file is given)",
          NULL },
        { "cgroup-driver", 0, FLAG_STRING, OFF(cgroup_driver), "cgroupDriver", "string",
          "How the QoS and pod cgroups are created: 'cgroupfs' (directories), or 'systemd' (slices that systemd makes, asked "
          "for over D-Bus)",
          NULL },
        { "cgroup-root", 0, FLAG_STRING, OFF(cgroup_root), "cgroupRoot", "string",
          "Parent cgroup of the QoS and pod cgroups; it must already exist in every cgroup hierarchy", NULL },
        { "cgroups-per-qos", 0, FLAG_BOOL, OFF(cgroups_per_qos), "cgroupsPerQOS", "",
          "Create the kubepods QoS cgroups and a cgroup per pod", NULL },
        { "client-ca-file", 0, FLAG_STRING, OFF(client_ca_file), "authentication.x509.clientCAFile", "string",
          "PEM bundle of certificate authorities: a client certificate signed by one of them authenticates a request "
          "to the kubelet API as its CommonName, with its Organizations as groups",
          NULL },
        { "cluster-dns", 0, FLAG_STRING, OFF(cluster_dns), "clusterDNS", "strings",
          "Comma-separated IP addresses of the cluster's DNS servers, given to pods with dnsPolicy ClusterFirst",
          NULL },
        { "cluster-domain", 0, FLAG_STRING, OFF(cluster_domain), "clusterDomain", "string",
          "The cluster's DNS domain: ClusterFirst pods search it before the host's search domains", NULL },
        { "config", 0, FLAG_STRING, OFF(config_path), NULL, "string",
          "A KubeletConfiguration file (kubelet.config.k8s.io/v1beta1, YAML or JSON) to start from; a relative path "
          "is taken from the working directory. Flags given on the command line win over it",
          NULL },
        { "config-dir", 0, FLAG_STRING, OFF(config_dir), NULL, "string",
          "Directory of KubeletConfiguration drop-ins: every file ending in .conf, subdirectories included, in "
          "lexical order, merged over --config as JSON merge patches; flags still win over the result",
          NULL },
        { "container-runtime", 0, FLAG_STRING, OFF(container_runtime), NULL, "string",
          "Only 'remote' is accepted: the runtime is always reached through --container-runtime-endpoint",
          "will be removed in 1.27 as the only valid value is 'remote'" },
        { "container-runtime-endpoint", 0, FLAG_STRING, OFF(container_runtime_endpoint), "containerRuntimeEndpoint",
          "string", "Unix socket of the CRI runtime service, e.g. 'unix:///run/containerd/containerd.sock'", NULL },
        { "cpu-manager-policy", 0, FLAG_STRING, OFF(cpu_manager_policy), "cpuManagerPolicy", "string",
          "CPU manager policy: 'none' (default) or 'static' (exclusive CPUs for Guaranteed pods' containers with "
          "integer CPU requests)",
          NULL },
        { "cpu-manager-policy-options", 0, FLAG_STRING, OFF(cpu_manager_policy_options), "cpuManagerPolicyOptions",
          "mapStringString",
          "Options of the static CPU manager policy: 'full-pcpus-only=true,strict-cpu-reservation=true' (the other "
          "upstream options are refused)",
          NULL },
        { "cpu-manager-reconcile-period", 0, FLAG_DURATION, OFF(cpu_manager_reconcile_period_usec),
          "cpuManagerReconcilePeriod", "duration",
          "How often the CPU manager brings the containers' cpusets in line with its state (default 10s)", NULL },
        { "memory-manager-policy", 0, FLAG_STRING, OFF(memory_manager_policy), "memoryManagerPolicy", "string",
          "Memory manager policy: 'None' (default) or 'Static' (the memory and huge pages of Guaranteed pods' "
          "containers reserved on NUMA nodes, cpuset.mems set to them; needs --reserved-memory)",
          NULL },
        { "reserved-memory", 0, FLAG_STRING, OFF(reserved_memory), "reservedMemory", "string",
          "Memory reserved per NUMA node for the system under the Static memory manager policy: "
          "'0:memory=1Gi,hugepages-2Mi=0;1:memory=2Gi' (repeatable: each use adds). The totals must equal kube-reserved + system-reserved + the "
          "hard memory.available eviction threshold",
          NULL },
        { "topology-manager-policy", 0, FLAG_STRING, OFF(topology_manager_policy), "topologyManagerPolicy", "string",
          "Topology manager policy: 'none' (default), 'best-effort', 'restricted' or 'single-numa-node' (NUMA "
          "alignment of the CPU manager's, device manager's and memory manager's allocations)",
          NULL },
        { "topology-manager-policy-options", 0, FLAG_STRING, OFF(topology_manager_policy_options),
          "topologyManagerPolicyOptions", "mapStringString",
          "Options of the topology manager policy: 'prefer-closest-numa-nodes=true', 'max-allowable-numa-nodes=N'",
          NULL },
        { "topology-manager-scope", 0, FLAG_STRING, OFF(topology_manager_scope), "topologyManagerScope", "string",
          "Topology manager scope: 'container' (default: hints merged per container) or 'pod' (per pod)", NULL },
        { "enable-debugging-handlers", 0, FLAG_BOOL, OFF(enable_debugging_handlers), "enableDebuggingHandlers", "",
          "Serve the endpoints that reach into containers: logs, exec, attach, port-forward and run", NULL },
        { "enable-server", 0, FLAG_BOOL, OFF(enable_server), "enableServer", "", "Serve the kubelet API", NULL },
        { "enforce-node-allocatable", 0, FLAG_STRING, OFF(enforce_node_allocatable), "enforceNodeAllocatable",
          "strings",
          "Comma-separated reservations to enforce with cgroups: 'pods' limits the kubepods cgroup to node "
          "allocatable, 'none' or an empty value enforces nothing ('system-reserved' and 'kube-reserved' are refused)",
          NULL },
        { "feature-gates", 0, FLAG_FEATURE_GATES, 0, "featureGates", "mapStringBool",
          "Turn upstream feature gates on or off: 'Name=true,Other=false'; an unknown name is an error. Repeatable; a "
          "gate set here wins over the config file",
          NULL },
        { "file-check-frequency", 0, FLAG_DURATION, OFF(file_check_frequency_usec), "fileCheckFrequency", "duration",
          "How often --pod-manifest-path is read again in full (inotify reports changes sooner)", NULL },
        { "healthz-bind-address", 0, FLAG_STRING, OFF(healthz_bind_address), "healthzBindAddress", "string",
          "IP address of the /healthz listener; '0.0.0.0' or '::' for every interface", NULL },
        { "healthz-port", 0, FLAG_INT, OFF(healthz_port), "healthzPort", "int32",
          "Port of the /healthz listener; 0 turns it off", NULL },
        { "help", 'h', FLAG_HELP, 0, NULL, NULL, "Print this text and exit", NULL },
        { "hostname-override", 0, FLAG_STRING, OFF(hostname_override), NULL, "string",
          "Node name to use instead of the machine's hostname", NULL },
        { "http-check-frequency", 0, FLAG_DURATION, OFF(http_check_frequency_usec), "httpCheckFrequency", "duration",
          "Pause between the end of one fetch of --manifest-url and the start of the next", NULL },
        { "image-service-endpoint", 0, FLAG_STRING, OFF(image_service_endpoint), "imageServiceEndpoint", "string",
          "Unix socket of the CRI image service, when it is not the runtime's (--container-runtime-endpoint)", NULL },
        { "kube-api-burst", 0, FLAG_INT, OFF(kube_api_burst), "kubeAPIBurst", "int32",
          "Requests to the API server that may go out at once before --kube-api-qps applies", NULL },
        { "kube-api-qps", 0, FLAG_INT, OFF(kube_api_qps), "kubeAPIQPS", "int32",
          "Steady rate of requests to the API server, per second (0 or more)", NULL },
        { "kube-reserved", 0, FLAG_STRING, OFF(kube_reserved), "kubeReserved", "mapStringString",
          "Resources kept back for Kubernetes' own daemons, taken off node allocatable: 'cpu=100m,memory=256Mi,"
          "ephemeral-storage=1Gi'",
          NULL },
        { "kubeconfig", 0, FLAG_STRING, OFF(kubeconfig), NULL, "string",
          "Kubeconfig for the API server. With it the kubelet joins a cluster; without it (and without "
          "--bootstrap-kubeconfig) it runs only static pods",
          NULL },
        { "logging-format", 0, FLAG_STRING, OFF(logging_format), "logging.format", "string",
          "Log line format: 'text' (klog's header and message) or 'json' (one JSON object per line)", NULL },
        { "manifest-url", 0, FLAG_STRING, OFF(manifest_url), "staticPodURL", "string",
          "HTTP(S) URL polled for static pod manifests", NULL },
        { "manifest-url-header", 0, FLAG_HEADERS, 0, "staticPodURLHeader", "colonSeparatedMultimapStringString",
          "HTTP headers sent with every fetch of --manifest-url: 'Name:value,Other:value'. Repeatable; a name may "
          "come more than once and every value is sent, in order",
          NULL },
        { "max-parallel-sandbox-creations", 0, FLAG_INT, OFF(max_parallel_sandbox_creations), NULL, "int32",
          "Most RunPodSandbox calls in flight at once, the others waiting in the order they came; -1: 4 per CPU, "
          "at least 4; 0: no limit. A runtime offered every sandbox of a burst at once makes them more slowly.",
          NULL },
        { "max-pods", 0, FLAG_INT, OFF(max_pods), "maxPods", "int32", "Most pods this node admits", NULL },
        { "node-ip", 0, FLAG_STRING, OFF(node_ip), NULL, "string",
          "The node's IP address (its InternalIP, and where probes of host-network pods connect); by default the "
          "address of the default route's interface",
          NULL },
        { "node-labels", 0, FLAG_STRING, OFF(node_labels), NULL, "mapStringString",
          "Labels the Node gets when it is registered: 'key=value,key2=value2'", NULL },
        { "node-status-update-frequency", 0, FLAG_DURATION, OFF(node_status_update_frequency_usec),
          "nodeStatusUpdateFrequency", "duration",
          "How often the node status is computed; it is sent when it "
          "changed, and at least every nodeStatusReportFrequency",
          NULL },
        { "pod-infra-container-image", 0, FLAG_STRING, OFF(pod_infra_container_image), NULL, "string",
          "The sandbox image, which image garbage collection never removes; which image sandboxes run is the "
          "runtime's choice (containerd's sandbox_image)",
          "will be removed in a future release. Image garbage collector will get sandbox image information from CRI." },
        { "pod-manifest-path", 0, FLAG_STRING, OFF(pod_manifest_path), "staticPodPath", "string",
          "Static pod manifests: a directory (every file not starting with '.') or a single file", NULL },
        { "pod-max-pids", 0, FLAG_INT64, OFF(pod_pids_limit), "podPidsLimit", "int",
          "Most processes a pod may run (pids.max of its cgroup); -1: no limit of its own", NULL },
        { "port", 0, FLAG_INT, OFF(port), "port", "int32", "TLS port of the kubelet API", NULL },
        { "read-only-port", 0, FLAG_INT, OFF(read_only_port), "readOnlyPort", "int32",
          "Plain-HTTP port of the kubelet API without authentication or debugging endpoints; 0 turns it off", NULL },
        { "register-node", 0, FLAG_BOOL, OFF(register_node), "registerNode", "",
          "Create the Node object at the API server (without it, only report the status of a Node made elsewhere)",
          NULL },
        { "register-with-taints", 0, FLAG_STRING, OFF(register_with_taints), "registerWithTaints", "string",
          "Taints the Node gets when it is registered: 'key=value:Effect,...'", NULL },
        { "reserved-cpus", 0, FLAG_STRING, OFF(reserved_system_cpus), "reservedSystemCPUs", "string",
          "CPUs kept for the system and Kubernetes daemons ('0-1,6'): the static CPU manager never gives them to a "
          "container exclusively; replaces the cpu of --kube-reserved and --system-reserved",
          NULL },
        { "resolv-conf", 0, FLAG_STRING, OFF(resolv_conf), "resolvConf", "string",
          "Resolver file whose servers and search domains pods start from; empty: none", NULL },
        { "root-dir", 0, FLAG_STRING, OFF(root_dir), NULL, "string",
          "Directory of the kubelet's state: pod directories, volumes, plugins", NULL },
        { "rotate-certificates", 0, FLAG_BOOL, OFF(rotate_certificates), "rotateCertificates", "",
          "Renew the client certificate through the certificates.k8s.io API before it expires, and use the new one "
          "without a restart",
          NULL },
        { "rotate-server-certificates", 0, FLAG_BOOL, OFF(server_tls_bootstrap), "serverTLSBootstrap", "",
          "Get the serving certificate of the kubelet API from the certificates.k8s.io API (someone must approve "
          "its CertificateSigningRequest) and renew it the same way; no self-signed certificate is made",
          NULL },
        { "runtime-request-timeout", 0, FLAG_DURATION, OFF(runtime_request_timeout_usec), "runtimeRequestTimeout",
          "duration",
          "Deadline of each CRI call other than image pulls; a call past it fails and is tried again "
          "later",
          NULL },
        { "streaming-connection-idle-timeout", 0, FLAG_DURATION, OFF(streaming_connection_idle_timeout_usec),
          "streamingConnectionIdleTimeout", "duration",
          "How long an exec, attach or port-forward stream may pass no data before it is closed; 0: never", NULL },
        { "sync-frequency", 0, FLAG_DURATION, OFF(sync_frequency_usec), "syncFrequency", "duration",
          "Longest time between two reconciliations of a pod", NULL },
        { "system-reserved", 0, FLAG_STRING, OFF(system_reserved), "systemReserved", "mapStringString",
          "Resources kept back for the operating system's daemons, taken off node allocatable: 'cpu=100m,"
          "memory=256Mi'",
          NULL },
        { "tls-cert-file", 0, FLAG_STRING, OFF(tls_cert_file), "tlsCertFile", "string",
          "Serving certificate of the kubelet API, intermediates after it. Without it (and without "
          "--rotate-server-certificates) a self-signed one is made in --cert-dir",
          NULL },
        { "tls-private-key-file", 0, FLAG_STRING, OFF(tls_private_key_file), "tlsPrivateKeyFile", "string",
          "Private key of --tls-cert-file", NULL },
        { "v", 'v', FLAG_VERBOSITY, OFF(verbosity), "logging.verbosity", "Level",
          "Log detail: 0 is quiet, higher numbers log more", NULL },
        { "version", 0, FLAG_VERSION, 0, NULL, "version[=true]",
          "--version, --version=raw prints version information and quits; --version=vX.Y.Z... sets the reported "
          "version",
          NULL },
        { "container-log-max-files", 0, FLAG_INT, OFF(container_log_max_files), "containerLogMaxFiles", "int32",
          "The most log files kept per container, the live one included (at least 2).", NULL },
        { "container-log-max-size", 0, FLAG_STRING, OFF(container_log_max_size), "containerLogMaxSize", "string",
          "The size (a quantity such as 10Mi) at which a container's log file is rotated.", NULL },
        { "container-log-max-workers", 0, FLAG_INT, OFF(container_log_max_workers), "containerLogMaxWorkers", "int32",
          "How many containers' logs may be rotated (and compressed) at the same time (at least 1).", NULL },
        { "container-log-monitor-interval", 0, FLAG_DURATION, OFF(container_log_monitor_interval_usec),
          "containerLogMonitorInterval", "duration",
          "How often the container logs are checked for rotation (at least 3s).", NULL },
        { "container-logs-dir", 0, FLAG_STRING, OFF(container_logs_dir), NULL, "string",
          "Where the <pod>_<namespace>_<container>-<id>.log links to the containers' live log files are kept for log "
          "shippers (ckubelet only: upstream always uses /var/log/containers).",
          NULL },
        { "csi-request-timeout", 0, FLAG_DURATION, OFF(csi_request_timeout_usec), NULL, "duration",
          "ckubelet only: the deadline of every call to a CSI node plugin (NodeStageVolume, NodePublishVolume, ...); "
          "upstream's is a fixed 2m.",
          NULL },
        { "eviction-hard", 0, FLAG_LANGLE_MAP, OFF(eviction_hard), "evictionHard", "mapStringString",
          "Eviction thresholds that evict a pod as soon as they are met, such as memory.available<1Gi.", NULL },
        { "eviction-max-pod-grace-period", 0, FLAG_INT, OFF(eviction_max_pod_grace_period), "evictionMaxPodGracePeriod",
          "int32", "The grace period (seconds) given to a pod evicted for a soft threshold; negative: the pod's own.",
          NULL },
        { "eviction-minimum-reclaim", 0, FLAG_MAP, OFF(eviction_minimum_reclaim), "evictionMinimumReclaim",
          "mapStringString",
          "How much of a resource under pressure must be reclaimed beyond its threshold before the "
          "pressure counts as resolved, such as imagefs.available=2Gi.",
          NULL },
        { "eviction-pressure-transition-period", 0, FLAG_DURATION, OFF(eviction_pressure_transition_period_usec),
          "evictionPressureTransitionPeriod", "duration",
          "How long a pressure condition stays after its threshold is no longer met.", NULL },
        { "eviction-soft", 0, FLAG_LANGLE_MAP, OFF(eviction_soft), "evictionSoft", "mapStringString",
          "Eviction thresholds that evict a pod once they have held for their grace period, such as "
          "memory.available<1.5Gi.",
          NULL },
        { "eviction-soft-grace-period", 0, FLAG_MAP, OFF(eviction_soft_grace_period), "evictionSoftGracePeriod",
          "mapStringString",
          "Per signal, how long a soft threshold has to be met before it evicts a pod, such as "
          "memory.available=1m30s.",
          NULL },
        { "maximum-dead-containers", 0, FLAG_INT, OFF(max_containers), NULL, "int32",
          "The most dead containers kept on the node; negative: no limit.", NULL },
        { "maximum-dead-containers-per-container", 0, FLAG_INT, OFF(max_per_pod_container), NULL, "int32",
          "The most dead instances kept per container.", NULL },
        { "minimum-container-ttl-duration", 0, FLAG_DURATION, OFF(minimum_container_ttl_usec), NULL, "duration",
          "How old a dead container must be before it may be removed.", NULL },
        { "minimum-image-ttl-duration", 0, FLAG_DURATION, OFF(image_minimum_gc_age_usec), "imageMinimumGCAge",
          "duration", "How long an unused image is kept at least after it was first seen.", NULL },
        { "image-credential-provider-bin-dir", 0, FLAG_STRING, OFF(image_credential_provider_bin_dir), NULL, "string",
          "The directory holding the credential provider plugins (executables named as the providers in "
          "--image-credential-provider-config).",
          NULL },
        { "image-credential-provider-config", 0, FLAG_STRING, OFF(image_credential_provider_config), NULL, "string",
          "A CredentialProviderConfig file, or a directory of them (*.json, *.yaml, *.yml), naming the exec plugins "
          "that supply image pull credentials and the images each one serves.",
          NULL },
        { "image-gc-high-threshold", 0, FLAG_INT, OFF(image_gc_high_threshold_percent), "imageGCHighThresholdPercent",
          "int32",
          "Image filesystem usage (percent) at which unused images are removed; 100 disables image garbage "
          "collection.",
          NULL },
        { "image-gc-low-threshold", 0, FLAG_INT, OFF(image_gc_low_threshold_percent), "imageGCLowThresholdPercent",
          "int32",
          "Image filesystem usage (percent) image garbage collection frees down to; below "
          "--image-gc-high-threshold.",
          NULL },
        { "fail-swap-on", 0, FLAG_BOOL, OFF(fail_swap_on), "failSwapOn", "",
          "Refuse to start when swap is enabled on the node (any entry in /proc/swaps).", NULL },
        { "seccomp-default", 0, FLAG_BOOL, OFF(seccomp_default), "seccompDefault", "",
          "Use RuntimeDefault as the seccomp profile of every container and pod sandbox that sets none (instead "
          "of Unconfined).",
          NULL },
        { "serialize-image-pulls", 0, FLAG_BOOL, OFF(serialize_image_pulls), "serializeImagePulls", "",
          "Pull one image at a time, in the order the pulls were asked for; false: several at once (up to "
          "maxParallelImagePulls in the config file, no limit without it).",
          NULL },
        { "kernel-memcg-notification", 0, FLAG_BOOL, OFF(kernel_memcg_notification), "kernelMemcgNotification", "",
          "React to memory eviction thresholds through the kernel's memory cgroup notifications, not only the "
          "periodic check.",
          NULL },
        { "volume-stats-agg-period", 0, FLAG_DURATION, OFF(volume_stats_agg_period_usec), "volumeStatsAggPeriod",
          "duration", "How often the disk usage of the pods' volumes is measured (for the Summary API and eviction).",
          NULL },
        /* older upstream names of flags ckubelet has */
        { "experimental-bootstrap-kubeconfig", 0, FLAG_STRING, OFF(bootstrap_kubeconfig), NULL, "string",
          "The older name of --bootstrap-kubeconfig", "use --bootstrap-kubeconfig" },
        { "experimental-kernel-memcg-notification", 0, FLAG_BOOL, OFF(kernel_memcg_notification),
          "kernelMemcgNotification", "", "The older name of --kernel-memcg-notification",
          "use --kernel-memcg-notification" },
        /* upstream kubelet flags without a behaviour in ckubelet (docs/flags.md) */
        COMPAT("add-dir-header", NULL, "false", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("alsologtostderr", NULL, COMPAT_ALWAYS_QUIET, "ckubelet always logs to stderr"),
        COMPAT("application-metrics-count-limit", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("azure-container-registry-config", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("boot-id-file", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("chaos-chance", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("cloud-config", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("cloud-provider", "string", "",
               "ckubelet has no cloud provider integration (no node addresses or taints from a cloud); \"\" is what it does"),
        COMPAT("cni-bin-dir", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("cni-cache-dir", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("cni-conf-dir", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("container-hints", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("containerd", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("containerd-namespace", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("contention-profiling", NULL, "false", "not implemented by ckubelet"),
        COMPAT("cpu-cfs-quota", NULL, "true", "CPU limits always become CFS quotas"),
        COMPAT("cpu-cfs-quota-period", "string", "", "not implemented by ckubelet"),
        COMPAT("docker", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("docker-endpoint", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("docker-env-metadata-whitelist", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("docker-only", NULL, "false", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("docker-root", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("docker-tls", NULL, "false", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("docker-tls-ca", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("docker-tls-cert", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("docker-tls-key", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("dynamic-config-dir", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("enable-cadvisor-json-endpoints", NULL, "false",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("enable-controller-attach-detach", NULL, "true",
               "ckubelet leaves attach and detach to the attach/detach controller"),
        COMPAT("enable-load-reader", NULL, "false", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("event-burst", "string", "", "events are not rate limited by these settings"),
        COMPAT("event-qps", "string", "", "events are not rate limited by these settings"),
        COMPAT("event-storage-age-limit", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("event-storage-event-limit", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("exit-on-lock-contention", NULL, "false", "no lock file is taken"),
        COMPAT("experimental-allocatable-ignore-eviction", NULL, "false", "not implemented by ckubelet"),
        COMPAT("experimental-check-node-capabilities-before-mount", NULL, "false",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("experimental-logging-sanitization", NULL, "false",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("experimental-mounter-path", "string", "", "mounts are made by ckubelet itself"),
        COMPAT("fail-cgroupv1", NULL, "false", "ckubelet runs on cgroup v1 and v2 alike"),
        COMPAT("global-housekeeping-interval", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("hairpin-mode", "string", "", "hairpin NAT is the CNI plugin's business"),
        COMPAT("housekeeping-interval", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("image-pull-progress-deadline", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("iptables-drop-bit", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("iptables-masquerade-bit", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("keep-terminated-pod-volumes", NULL, "false",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("kube-api-content-type", "string", "", "ckubelet speaks JSON to the API server"),
        COMPAT("kube-reserved-cgroup", "string", "", "the reserved resources are not enforced on a cgroup"),
        COMPAT("kubelet-cgroups", "string", "", "ckubelet runs in the cgroup it was started in"),
        COMPAT("local-storage-capacity-isolation", NULL, "true", "local ephemeral storage limits are always enforced"),
        COMPAT("lock-file", "string", "", "no lock file is taken"),
        COMPAT("log-backtrace-at", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("log-cadvisor-usage", NULL, "false", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("log-dir", "string", "",
               "ckubelet logs to stderr only (klog's file output, removed from the upstream kubelet in v1.26)"),
        COMPAT("log-file", "string", "",
               "ckubelet logs to stderr only (klog's file output, removed from the upstream kubelet in v1.26)"),
        COMPAT("log-file-max-size", "string", "", "ckubelet logs to stderr only"),
        COMPAT("log-flush-frequency", "string", COMPAT_ALWAYS_QUIET, "ckubelet writes each log line at once"),
        COMPAT("log-json-info-buffer-size", "string", "", "not implemented by ckubelet"),
        COMPAT("log-json-split-stream", NULL, "false", "not implemented by ckubelet"),
        COMPAT("log-text-info-buffer-size", "string", "", "not implemented by ckubelet"),
        COMPAT("log-text-split-stream", NULL, "false", "not implemented by ckubelet"),
        COMPAT("logtostderr", NULL, "true", "ckubelet always logs to stderr"),
        COMPAT("machine-id-file", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("make-iptables-util-chains", NULL, "false", "ckubelet does not create iptables chains"),
        COMPAT("master-service-namespace", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("max-open-files", "string", "", "the kubelet process' open file limit is left as it was started with"),
        COMPAT("network-plugin", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("network-plugin-mtu", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("node-status-max-images", "string", "", "the node status reports up to 50 images"),
        COMPAT("non-masquerade-cidr", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("one-output", NULL, "false", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("oom-score-adj", "string", "", "the kubelet process' oom_score_adj is left as it was started with"),
        COMPAT("pod-cidr", "string", "", "the pod CIDR is the CNI configuration's business"),
        COMPAT("pods-per-core", "string", "", "only --max-pods limits the number of pods"),
        COMPAT("protect-kernel-defaults", NULL, "false", "kernel tunables are not checked"),
        COMPAT("provider-id", "string", "", "the Node's spec.providerID is not set"),
        COMPAT("qos-reserved", "string", "", "QoS-level memory reservation is not implemented"),
        COMPAT("really-crash-for-testing", NULL, "false",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("redirect-container-streaming", NULL, "false",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("register-schedulable", NULL, "false",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("registry-burst", "string", "",
               "image pulls are limited by --serialize-image-pulls and maxParallelImagePulls only"),
        COMPAT("registry-qps", "string", "",
               "image pulls are limited by --serialize-image-pulls and maxParallelImagePulls only"),
        COMPAT("runonce", NULL, "false", "the run-once mode is not implemented"),
        COMPAT("runtime-cgroups", "string", "", "the runtime's cgroup is not managed"),
        COMPAT("seccomp-profile-root", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("skip-headers", NULL, "false", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("skip-log-headers", NULL, "false", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("stderrthreshold", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("storage-driver-buffer-duration", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("storage-driver-db", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("storage-driver-host", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("storage-driver-password", "string", "",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("storage-driver-secure", NULL, "false",
               "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("storage-driver-table", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("storage-driver-user", "string", "", "not implemented by ckubelet (a flag of older upstream kubelets)"),
        COMPAT("system-cgroups", "string", "", "system processes are not moved into a cgroup"),
        COMPAT("system-reserved-cgroup", "string", "", "the reserved resources are not enforced on a cgroup"),
        COMPAT("tls-cipher-suites", "string", "", "the kubelet API uses OpenSSL's default cipher suites"),
        COMPAT("tls-min-version", "string", "", "the kubelet API uses OpenSSL's default minimum TLS version"),
        COMPAT("vmodule", "string", "", "per-file verbosity is not implemented (--v is)"),
        COMPAT("volume-plugin-dir", "string", "", "FlexVolume plugins are not supported"),
};

/* KubeletConfiguration (v1beta1) fields that upstream has and ckubelet does not implement: accepted, with a
 * warning. Anything else that we do not implement either is an unknown field: an error. */
static const char *const unsupported_fields[] = {
        "configMapAndSecretChangeDetectionStrategy",
        "contentType",
        "cpuCFSQuota",
        "cpuCFSQuotaPeriod",
        "draManagerReconcilePeriod",
        "enableContentionProfiling",
        "enableControllerAttachDetach",
        "enableDebugFlagsHandler",
        "enableProfilingHandler",
        "eventBurst",
        "eventRecordQPS",
        "failCgroupV1",
        "hairpinMode",
        "imagePullCredentialsVerificationPolicy",
        "iptablesDropBit",
        "iptablesMasqueradeBit",
        "kubeReservedCgroup",
        "kubeletCgroups",
        "localStorageCapacityIsolation",
        "makeIPTablesUtilChains",
        "maxOpenFiles",
        "memoryReservationPolicy",
        "memoryThrottlingFactor",
        "mergeDefaultEvictionSettings",
        "nodeStatusMaxImages",
        "oomScoreAdj",
        "podCIDR",
        "podHousekeepingPeriod",
        "podsPerCore",
        "preloadedImagesVerificationAllowlist",
        "protectKernelDefaults",
        "providerID",
        "qosReserved",
        "registryBurst",
        "registryPullQPS",
        "runOnce",
        "showHiddenMetricsForVersion",
        "singleProcessOOMKill",
        "systemCgroups",
        "systemReservedCgroup",
        "tlsCipherSuites",
        "tlsCurvePreferences",
        "tlsMinVersion",
        "tracing",
        "userNamespaces",
        "volumePluginDir",
};

/* logging (component-base LoggingConfiguration): verbosity and format are implemented */
static const char *const unsupported_logging_fields[] = { "flushFrequency", "options", "vmodule" };

static bool strv_const_contains(const char *const *l, size_t n, const char *s) {
        for (size_t i = 0; i < n; i++)
                if (streq(l[i], s))
                        return true;
        return false;
}

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

/* ---- values ---- */

/* A duration for a uint64_t usec field. Negative durations are refused here (upstream accepts and then
 * misbehaves); sub-microsecond remainders round up so that "1ns" stays non-zero. */
static int parse_duration_value(const char *s, uint64_t *ret_usec, struct ck_error **ret_error) {
        int64_t nsec;
        int r;

        r = go_duration_parse(s, &nsec, ret_error);
        if (r < 0)
                return r;
        if (nsec < 0)
                return ck_error_set(ret_error, -ERANGE, "must not be negative");
        *ret_usec = ((uint64_t) nsec + 999) / 1000;
        return 0;
}

/* "a:x, b:y" appended to *l as "a: x", "b: y", as ColonSeparatedMultimapStringString: empty items are
 * skipped, key and value are trimmed, every item needs a ':'. */
static char *trim(char *s) {
        char *e;
        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = '\0';
        return s;
}

static int header_valid(const char *k, const char *v, struct ck_error **ret_error) {
        /* keep CR/LF out of the request: the manifest URL client (http/client.c) sends the line as given */
        if (isempty(k))
                return ck_error_set(ret_error, -EINVAL, "empty header name");
        for (const char *c = k; *c; c++)
                if ((unsigned char) *c <= ' ' || *c == ':' || (unsigned char) *c == 0x7f)
                        return ck_error_set(ret_error, -EINVAL, "invalid header name \"%s\"", k);
        for (const char *c = v; *c; c++)
                if (*c == '\r' || *c == '\n' || *c == '\0')
                        return ck_error_set(ret_error, -EINVAL, "invalid value for header \"%s\"", k);
        return 0;
}

static int header_add(char ***l, const char *k, const char *v, struct ck_error **ret_error) {
        char *line;
        int r;

        r = header_valid(k, v, ret_error);
        if (r < 0)
                return r;
        if (asprintf(&line, "%s: %s", k, v) < 0)
                return -ENOMEM;
        return strv_push(l, line);
}

static int parse_headers_value(const char *value, char ***l, struct ck_error **ret_error) {
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        /* strtok_r would merge empty items, which is what we want: they are skipped */
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *colon = strchr(item, ':');
                int r;

                if (!colon)
                        return ck_error_set(ret_error, -EINVAL, "malformed pair, expect string:string");
                *colon = '\0';
                r = header_add(l, trim(item), trim(colon + 1), ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* pflag's map flags: "k=v,k2=v2" (mapStringString) or "k<v,k2<v2" (langleSeparatedMapStringString), keys and
 * values trimmed, empty items skipped. Stored as "k=v,k2=v2"; a later key replaces an earlier one where the map is
 * read. */
static int parse_map_value(const char *value, char sep, char **ret, struct ck_error **ret_error) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *copy = strdup(value);
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *at = strchr(item, sep), *k, *v, *pair;

                if (isempty(trim(item)))
                        continue;
                if (!at)
                        return ck_error_set(ret_error, -EINVAL, "malformed pair, expect string%cstring", sep);
                *at = '\0';
                k = trim(item);
                v = trim(at + 1);
                if (strchr(k, '='))
                        return ck_error_set(ret_error, -EINVAL, "invalid key \"%s\"", k);
                if (asprintf(&pair, "%s=%s", k, v) < 0 || strv_push(&l, pair) < 0)
                        return -ENOMEM;
        }
        *ret = l ? strv_join(l, ",") : strdup("");
        return *ret ? 0 : -ENOMEM;
}

/* ---- flags ---- */

struct parse_state {
        bool help;
        int version;                               /* VERSION_* */
        bool warn;                                 /* the first pass: print deprecation notes (once) */
        bool compat_warned[ELEMENTSOF(flag_defs)]; /* FLAG_COMPAT: warned about already */
        bool headers_seen;  /* the first --manifest-url-header replaces what the config file gave */
        uint64_t maps_seen; /* by flag index: the first use of a map flag replaces, later ones add */
};

enum { VERSION_NONE, VERSION_TRUE, VERSION_RAW };

/* --version=vX.Y.Z... sets the version reported, as upstream's verflag: it must be the followed release's X.Y.Z,
 * with a pre-release or build suffix at most (component-base's ValidateDynamicVersion) */
static int parse_reported_version(const char *value, struct ck_error **ret_error) {
        const char *rest = value + strlen(KUBE_VERSION);

        if (!startswith(value, KUBE_VERSION) || (*rest != '\0' && *rest != '-' && *rest != '+'))
                return ck_error_set(ret_error, -EINVAL,
                                    "must be true, false, raw or a version with the major, minor and patch of "
                                    "%s (%s-custom)",
                                    KUBE_VERSION, KUBE_VERSION);
        return 0;
}

static const struct flag_def *flag_find(const char *name, size_t len) {
        for (size_t i = 0; i < ELEMENTSOF(flag_defs); i++)
                if (strlen(flag_defs[i].name) == len && strneq(flag_defs[i].name, name, len))
                        return &flag_defs[i];
        return NULL;
}

static const struct flag_def *flag_find_short(char c) {
        for (size_t i = 0; i < ELEMENTSOF(flag_defs); i++)
                if (flag_defs[i].shorthand == c)
                        return &flag_defs[i];
        return NULL;
}

static bool flag_is_bool(const struct flag_def *f) {
        return f->kind == FLAG_HELP || f->kind == FLAG_VERSION || f->kind == FLAG_BOOL ||
               (f->kind == FLAG_COMPAT && !f->type);
}

static int apply_flag(struct kubelet_options *o, struct parse_state *st, const struct flag_def *f, const char *value,
                      struct ck_error **ret_error) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        char *base = (char *) o;
        int r = 0;

        if (f->deprecated && st->warn)
                log_warning("Flag --%s has been deprecated, %s", f->name, f->deprecated);
        switch (f->kind) {
        case FLAG_STRING:
                if (f->offset == OFF(reserved_memory)) {
                        /* ReservedMemoryVar: the first use replaces the config file's, later ones add NUMA nodes */
                        char **target = (char **) (base + f->offset);
                        uint64_t bit = UINT64_C(1) << ((size_t) (f - flag_defs) % 64);
                        if ((st->maps_seen & bit) && !isempty(*target) && !isempty(value)) {
                                char *joined;
                                if (asprintf(&joined, "%s;%s", *target, value) < 0)
                                        return -ENOMEM;
                                free(*target);
                                *target = joined;
                                return 0;
                        }
                        st->maps_seen |= bit;
                }
                return free_and_strdup((char **) (base + f->offset), value);

        case FLAG_FEATURE_GATES:
                r = feature_gates_parse(&o->feature_gates, value, st->warn, &why);
                break;

        case FLAG_DURATION: {
                uint64_t usec = 0;
                r = parse_duration_value(value, &usec, &why);
                if (r >= 0)
                        *(uint64_t *) (base + f->offset) = usec;
                break;
        }

        case FLAG_INT: {
                int v;
                r = safe_atoi(value, &v);
                if (r >= 0)
                        *(int *) (base + f->offset) = v;
                else
                        (void) ck_error_set(&why, r, "%s", r == -ERANGE ? "value out of range" : "not an integer");
                break;
        }

        case FLAG_INT64: {
                int64_t v;
                r = safe_atoi64(value, &v);
                if (r >= 0)
                        *(int64_t *) (base + f->offset) = v;
                else
                        (void) ck_error_set(&why, r, "%s", r == -ERANGE ? "value out of range" : "not an integer");
                break;
        }

        case FLAG_BOOL: {
                bool b;
                r = parse_bool(value, &b);
                if (r >= 0)
                        *(bool *) (base + f->offset) = b;
                else
                        (void) ck_error_set(&why, r, "must be a boolean (true or false)");
                break;
        }

        case FLAG_VERBOSITY: {
                int64_t v;
                r = safe_atoi64(value, &v);
                if (r >= 0 && (v < 0 || v > INT_MAX))
                        r = -ERANGE;
                if (r >= 0)
                        o->verbosity = (int) v;
                else
                        (void) ck_error_set(&why, r, "must be a non-negative integer");
                break;
        }

        case FLAG_HEADERS: {
                _cleanup_strv_free_ char **l = NULL;
                if (st->headers_seen) {
                        r = strv_copy(o->manifest_url_headers, &l);
                        if (r < 0)
                                return r;
                }
                r = parse_headers_value(value, &l, &why);
                if (r >= 0) {
                        strv_free(o->manifest_url_headers);
                        o->manifest_url_headers = TAKE_PTR(l);
                        st->headers_seen = true;
                }
                break;
        }

        case FLAG_MAP:
        case FLAG_LANGLE_MAP: {
                _cleanup_free_ char *parsed = NULL;
                char **target = (char **) (base + f->offset);
                uint64_t bit = UINT64_C(1) << ((size_t) (f - flag_defs) % 64);

                r = parse_map_value(value, f->kind == FLAG_MAP ? '=' : '<', &parsed, &why);
                if (r < 0)
                        break;
                if ((st->maps_seen & bit) && !isempty(*target) && !isempty(parsed)) {
                        char *joined;
                        if (asprintf(&joined, "%s,%s", *target, parsed) < 0)
                                return -ENOMEM;
                        free(*target);
                        *target = joined;
                } else {
                        free(*target);
                        *target = TAKE_PTR(parsed);
                }
                st->maps_seen |= bit;
                break;
        }

        case FLAG_COMPAT: {
                bool b = false, quiet;
                size_t i = (size_t) (f - flag_defs);

                if (!f->type) {
                        r = parse_bool(value, &b);
                        if (r < 0) {
                                (void) ck_error_set(&why, r, "must be a boolean (true or false)");
                                break;
                        }
                        quiet = streq_ptr(f->quiet, b ? "true" : "false");
                } else
                        quiet = isempty(value) || streq_ptr(f->quiet, value);
                quiet = quiet || streq_ptr(f->quiet, COMPAT_ALWAYS_QUIET);
                if (st->warn && !quiet && !st->compat_warned[i]) {
                        st->compat_warned[i] = true;
                        log_warning("Flag --%s of the upstream kubelet is accepted and ignored: %s", f->name, f->help);
                }
                break;
        }

        case FLAG_HELP:
        case FLAG_VERSION: {
                bool b;
                if (f->kind == FLAG_VERSION && streq(value, "raw")) {
                        st->version = VERSION_RAW;
                        return 0;
                }
                if (f->kind == FLAG_VERSION && value[0] == 'v') {
                        r = parse_reported_version(value, &why);
                        if (r >= 0) {
                                st->version = VERSION_NONE;
                                r = free_and_strdup(&o->reported_version, value);
                        }
                        break;
                }
                r = parse_bool(value, &b);
                if (r >= 0) {
                        if (f->kind == FLAG_HELP)
                                st->help = b;
                        else
                                st->version = b ? VERSION_TRUE : VERSION_NONE;
                } else
                        (void) ck_error_set(&why, r,
                                            f->kind == FLAG_VERSION ? "must be true, false, raw or vX.Y.Z"
                                                                    : "must be a boolean (true or false)");
                break;
        }
        }

        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return ck_error_set(ret_error, -EINVAL, "invalid value \"%s\" for flag --%s: %s", value, f->name,
                                    why ? ck_error_message(why) : "invalid value");
        return 0;
}

/* /flagz: the flag as given, its last value kept */
static int record_given_flag(struct kubelet_options *o, const char *name, const char *value) {
        char *v;

        for (char **p = o->given_flags; p && p[0] && p[1]; p += 2)
                if (streq(p[0], name)) {
                        v = strdup(value);
                        if (!v)
                                return -ENOMEM;
                        free(p[1]);
                        p[1] = v;
                        return 0;
                }
        if (strv_extend(&o->given_flags, name) < 0)
                return -ENOMEM;
        if (strv_extend(&o->given_flags, value) < 0) {
                /* keep the list in pairs */
                size_t n = strv_length(o->given_flags);
                free(o->given_flags[n - 1]);
                o->given_flags[n - 1] = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int parse_argv(struct kubelet_options *o, struct parse_state *st, int argc, char **argv,
                      struct ck_error **ret_error) {
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *value = NULL;
                const struct flag_def *f;
                int r;

                if (streq(a, "--")) {
                        if (i + 1 < argc)
                                return ck_error_set(ret_error, -EINVAL, "unknown command \"%s\"", argv[i + 1]);
                        break;
                }
                if (startswith(a, "--")) {
                        const char *name = a + 2, *eq = strchr(name, '=');
                        size_t len = eq ? (size_t) (eq - name) : strlen(name);

                        f = flag_find(name, len);
                        if (!f)
                                return ck_error_set(ret_error, -EINVAL, "unknown flag: --%.*s", (int) len, name);
                        if (eq)
                                value = eq + 1;
                } else if (a[0] == '-' && a[1] != '\0') {
                        /* shorthands: -h, -v 2, -v=2, -v2 */
                        f = flag_find_short(a[1]);
                        if (!f)
                                return ck_error_set(ret_error, -EINVAL, "unknown shorthand flag: '%c' in %s", a[1], a);
                        if (a[2] == '=')
                                value = a + 3;
                        else if (a[2] != '\0') {
                                if (flag_is_bool(f))
                                        return ck_error_set(ret_error, -EINVAL, "unknown shorthand flag: '%c' in %s",
                                                            a[2], a);
                                value = a + 2;
                        }
                } else
                        return ck_error_set(ret_error, -EINVAL, "unknown command \"%s\"", a);

                if (!value) {
                        if (flag_is_bool(f))
                                value = "true";
                        else if (i + 1 < argc)
                                value = argv[++i];
                        else
                                return ck_error_set(ret_error, -EINVAL, "flag needs an argument: --%s", f->name);
                }
                r = apply_flag(o, st, f, value, ret_error);
                if (r < 0)
                        return r;
                r = record_given_flag(o, f->name, value);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- the config file ---- */

struct config_ctx {
        const char *path; /* what errors name: the file, or the merged configuration */
        const char *dir;  /* directory of the config file, for relative paths; NULL: resolved already */
        bool quiet;       /* a file checked on its own before the merge: no warnings */
        struct ck_error **error;
};

static int config_error(struct config_ctx *c, int r, const char *fmt, ...) _printf_(3, 4);
static int config_error(struct config_ctx *c, int r, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;

        if (VA_FORMAT(msg, fmt) < 0)
                return -ENOMEM;
        return ck_error_set(c->error, r, "%s: %s", c->path, msg);
}

static int config_string(struct config_ctx *c, const char *field, json_t *v, bool is_path, char **target) {
        _cleanup_free_ char *s = NULL;
        const char *str;

        if (!json_is_string(v))
                return config_error(c, -EINVAL, "%s: expected a string, got %s", field, json_type_name(v));
        str = json_string_value(v);
        if (strlen(str) != json_string_length(v))
                return config_error(c, -EINVAL, "%s: string contains a NUL byte", field);
        if (is_path && c->dir && !isempty(str) && str[0] != '/') {
                /* as upstream's resolveRelativePaths: relative to the config file's directory */
                if (asprintf(&s, "%s/%s", c->dir, str) < 0)
                        return -ENOMEM;
        } else {
                s = strdup(str);
                if (!s)
                        return -ENOMEM;
        }
        free(*target);
        *target = TAKE_PTR(s);
        return 0;
}

/* A string field whose empty value means "the default" (upstream's SetDefaults replaces ""). */
static int config_string_default(struct config_ctx *c, const char *field, json_t *v, char **target) {
        if (json_is_string(v) && json_string_length(v) == 0)
                return 0;
        return config_string(c, field, v, false, target);
}

/* metav1.Duration: a string for time.ParseDuration. Zero means "use the default" (SetDefaults_*). */
/* A duration field, any value it holds (0 included) into *ret */
static int config_duration_value(struct config_ctx *c, const char *field, json_t *v, uint64_t *ret) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        int r;

        if (!json_is_string(v))
                return config_error(c, -EINVAL, "%s: expected a duration string such as \"20s\", got %s", field,
                                    json_type_name(v));
        r = parse_duration_value(json_string_value(v), ret, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_error(c, -EINVAL, "%s: invalid duration \"%s\": %s", field, json_string_value(v),
                                    why ? ck_error_message(why) : "invalid value");
        return 0;
}

/* A duration field whose zero value means the default (kept) */
static int config_duration(struct config_ctx *c, const char *field, json_t *v, uint64_t *target) {
        uint64_t usec = 0;
        int r = config_duration_value(c, field, v, &usec);

        if (r >= 0 && usec > 0)
                *target = usec;
        return r;
}

static int config_int32(struct config_ctx *c, const char *field, json_t *v, int64_t min, json_int_t *ret) {
        json_int_t i;

        if (!json_is_integer(v))
                return config_error(c, -EINVAL, "%s: expected an integer, got %s", field, json_type_name(v));
        i = json_integer_value(v);
        if (i < min || i > INT32_MAX)
                return config_error(c, -EINVAL, "%s: %" JSON_INTEGER_FORMAT " is out of range", field, i);
        *ret = i;
        return 0;
}

static int config_bool(struct config_ctx *c, const char *field, json_t *v, bool *target) {
        if (!json_is_boolean(v))
                return config_error(c, -EINVAL, "%s: expected a boolean, got %s", field, json_type_name(v));
        *target = json_is_true(v);
        return 0;
}

static int config_port(struct config_ctx *c, const char *field, json_t *v, int *target) {
        json_int_t i = 0;
        int r = config_int32(c, field, v, INT32_MIN, &i);
        if (r < 0)
                return r;
        *target = (int) i;
        return 0;
}

/* *target = the items joined with "," (the flags' list syntax) */
static int set_joined(char **l, char **target) {
        char *joined = l ? strv_join(l, ",") : strdup("");
        if (!joined)
                return -ENOMEM;
        free(*target);
        *target = joined;
        return 0;
}

/* []string → "a,b" (the flag's syntax) */
static int config_string_list(struct config_ctx *c, const char *field, json_t *v, char **target) {
        _cleanup_strv_free_ char **l = NULL;
        json_t *value;
        size_t i;

        if (!json_is_array(v))
                return config_error(c, -EINVAL, "%s: expected a list of strings, got %s", field, json_type_name(v));
        json_array_foreach(v, i, value) {
                if (!json_is_string(value))
                        return config_error(c, -EINVAL, "%s[%zu]: expected a string, got %s", field, i,
                                            json_type_name(value));
                if (strchr(json_string_value(value), ','))
                        return config_error(c, -EINVAL, "%s[%zu]: invalid value \"%s\"", field, i,
                                            json_string_value(value));
                if (strv_extend(&l, json_string_value(value)) < 0)
                        return -ENOMEM;
        }
        return set_joined(l, target);
}

/* map[string]string → "k=v,k2=v2" (the flag's syntax) */
/* reservedMemory: [{numaNode: 0, limits: {memory: 1Gi, hugepages-2Mi: 0}}, ...] as --reserved-memory's text */
static int config_reserved_memory(struct config_ctx *c, const char *field, json_t *v, char **target) {
        _cleanup_strv_free_ char **nodes = NULL;
        _cleanup_free_ char *joined = NULL;
        size_t i;
        json_t *e;

        if (!json_is_array(v))
                return config_error(c, -EINVAL, "%s: expected a list, got %s", field, json_type_name(v));
        json_array_foreach(v, i, e) {
                json_t *numa = json_object_get(e, "numaNode"), *limits = json_object_get(e, "limits"), *q;
                _cleanup_strv_free_ char **kv = NULL;
                _cleanup_free_ char *items = NULL;
                const char *name;
                char *item;

                if (!json_is_object(e) || !json_is_integer(numa) || json_integer_value(numa) < 0 ||
                    json_integer_value(numa) > INT32_MAX)
                        return config_error(c, -EINVAL, "%s[%zu].numaNode: expected a NUMA node number", field, i);
                if (!json_is_object(limits))
                        return config_error(c, -EINVAL, "%s[%zu].limits: expected a map of quantities", field, i);
                json_object_foreach(limits, name, q) {
                        if (!json_is_string(q) || strpbrk(name, ",;=:") || strpbrk(json_string_value(q), ",;=:"))
                                return config_error(c, -EINVAL, "%s[%zu].limits.%s: expected a quantity", field, i,
                                                    name);
                        if (asprintf(&item, "%s=%s", name, json_string_value(q)) < 0 || strv_push(&kv, item) < 0)
                                return -ENOMEM;
                }
                items = strv_join(kv, ",");
                if (!items || asprintf(&item, "%lld:%s", (long long) json_integer_value(numa), items) < 0 ||
                    strv_push(&nodes, item) < 0)
                        return -ENOMEM;
        }
        joined = nodes ? strv_join(nodes, ";") : strdup("");
        if (!joined)
                return -ENOMEM;
        free(*target);
        *target = TAKE_PTR(joined);
        return 0;
}

static int config_string_map(struct config_ctx *c, const char *field, json_t *v, char **target) {
        _cleanup_strv_free_ char **l = NULL;
        const char *key;
        json_t *value;

        if (!json_is_object(v))
                return config_error(c, -EINVAL, "%s: expected a map of strings, got %s", field, json_type_name(v));
        json_object_foreach(v, key, value) {
                char *item;
                if (!json_is_string(value))
                        return config_error(c, -EINVAL, "%s.%s: expected a string, got %s", field, key,
                                            json_type_name(value));
                if (strchr(key, ',') || strchr(key, '=') || strchr(json_string_value(value), ','))
                        return config_error(c, -EINVAL, "%s.%s: invalid key or value", field, key);
                if (asprintf(&item, "%s=%s", key, json_string_value(value)) < 0 || strv_push(&l, item) < 0)
                        return -ENOMEM;
        }
        return set_joined(l, target);
}

/* []Taint → "key=value:Effect,..." (the flag's syntax) */
static int config_taints(struct config_ctx *c, const char *field, json_t *v, char **target) {
        _cleanup_strv_free_ char **l = NULL;
        size_t i;
        json_t *t;

        if (!json_is_array(v))
                return config_error(c, -EINVAL, "%s: expected a list of taints, got %s", field, json_type_name(v));
        json_array_foreach(v, i, t) {
                const char *key = json_string_value(json_object_get(t, "key"));
                const char *value = json_string_value(json_object_get(t, "value"));
                const char *effect = json_string_value(json_object_get(t, "effect"));
                char *item;

                if (!json_is_object(t) || isempty(key) || isempty(effect))
                        return config_error(c, -EINVAL, "%s[%zu]: a taint needs a key and an effect", field, i);
                if (asprintf(&item, "%s%s%s:%s", key, value ? "=" : "", strempty(value), effect) < 0 ||
                    strv_push(&l, item) < 0)
                        return -ENOMEM;
        }
        return set_joined(l, target);
}

/* A nested object whose fields are handled by fn; unknown keys are errors naming the full path. */
typedef int (*config_field_fn)(struct config_ctx *c, const char *path, const char *key, json_t *v,
                               struct kubelet_options *o);

static int config_object(struct config_ctx *c, const char *path, json_t *v, config_field_fn fn,
                         struct kubelet_options *o) {
        const char *key;
        json_t *value;

        if (!json_is_object(v))
                return config_error(c, -EINVAL, "%s: expected an object, got %s", path, json_type_name(v));
        json_object_foreach(v, key, value) {
                _cleanup_free_ char *sub = NULL;
                int r;

                if (json_is_null(value))
                        continue;
                if (asprintf(&sub, "%s.%s", path, key) < 0)
                        return -ENOMEM;
                r = fn(c, sub, key, value, o);
                if (r == -ENOENT)
                        return config_error(c, -EINVAL, "unknown field \"%s\"", sub);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int config_authn_field(struct config_ctx *c, const char *path, const char *key, json_t *v,
                              struct kubelet_options *o) {
        if (streq(path, "authentication.x509"))
                return config_object(c, path, v, config_authn_field, o);
        if (streq(path, "authentication.x509.clientCAFile"))
                return config_string(c, path, v, true, &o->client_ca_file);
        if (streq(path, "authentication.anonymous"))
                return config_object(c, path, v, config_authn_field, o);
        if (streq(path, "authentication.anonymous.enabled"))
                return config_bool(c, path, v, &o->anonymous_auth);
        if (streq(path, "authentication.webhook"))
                return config_object(c, path, v, config_authn_field, o);
        if (streq(path, "authentication.webhook.enabled"))
                return config_bool(c, path, v, &o->authentication_token_webhook);
        if (streq(path, "authentication.webhook.cacheTTL"))
                return config_duration(c, path, v, &o->authentication_token_webhook_cache_ttl_usec);
        return -ENOENT;
}

static int config_authz_field(struct config_ctx *c, const char *path, const char *key, json_t *v,
                              struct kubelet_options *o) {
        if (streq(path, "authorization.mode"))
                return config_string_default(c, path, v, &o->authorization_mode);
        if (streq(path, "authorization.webhook"))
                return config_object(c, path, v, config_authz_field, o);
        if (streq(path, "authorization.webhook.cacheAuthorizedTTL"))
                return config_duration(c, path, v, &o->authorization_webhook_cache_authorized_ttl_usec);
        if (streq(path, "authorization.webhook.cacheUnauthorizedTTL"))
                return config_duration(c, path, v, &o->authorization_webhook_cache_unauthorized_ttl_usec);
        return -ENOENT;
}

/* memorySwap (NodeSwap, GA since v1.34) */
static int config_swap_field(struct config_ctx *c, const char *path, const char *key, json_t *v,
                             struct kubelet_options *o) {
        if (!streq(path, "memorySwap.swapBehavior"))
                return -ENOENT;
        return config_string(c, path, v, false, &o->memory_swap_behavior);
}

/* crashLoopBackOff (KubeletCrashLoopBackOffMax, beta on since v1.35): any duration is kept for the validation */
static int config_crash_field(struct config_ctx *c, const char *path, const char *key, json_t *v,
                              struct kubelet_options *o) {
        if (!streq(path, "crashLoopBackOff.maxContainerRestartPeriod"))
                return -ENOENT;
        return config_duration_value(c, path, v, &o->crash_loop_backoff_max_usec);
}

/* shutdownGracePeriodByPodPriority: [{priority, shutdownGracePeriodSeconds}], replacing any earlier list */
static int config_shutdown_by_priority(struct config_ctx *c, const char *field, json_t *v, struct kubelet_options *o) {
        _cleanup_free_ struct nodeshutdown_period *l = NULL;
        size_t i, n;
        json_t *e;

        if (!json_is_array(v))
                return config_error(c, -EINVAL, "%s: expected a list, got %s", field, json_type_name(v));
        n = json_array_size(v);
        if (n > 1024)
                return config_error(c, -EINVAL, "%s: %zu entries, at most 1024", field, n);
        if (n > 0 && !(l = calloc(n, sizeof(*l))))
                return -ENOMEM;
        json_array_foreach(v, i, e) {
                const char *key;
                json_t *x;

                if (!json_is_object(e))
                        return config_error(c, -EINVAL, "%s[%zu]: expected an object, got %s", field, i,
                                            json_type_name(e));
                json_object_foreach(e, key, x) {
                        if (json_is_null(x))
                                continue;
                        if (streq(key, "priority")) {
                                if (!json_is_integer(x) || json_integer_value(x) < INT32_MIN ||
                                    json_integer_value(x) > INT32_MAX)
                                        return config_error(c, -EINVAL, "%s[%zu].priority: expected a 32-bit integer",
                                                            field, i);
                                l[i].priority = (int32_t) json_integer_value(x);
                        } else if (streq(key, "shutdownGracePeriodSeconds")) {
                                /* int64 upstream; a negative budget or more than a year is no budget */
                                if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                                    json_integer_value(x) > 365 * 24 * 3600)
                                        return config_error(c, -EINVAL,
                                                            "%s[%zu].shutdownGracePeriodSeconds: expected an integer "
                                                            "between 0 and 31536000",
                                                            field, i);
                                l[i].seconds = json_integer_value(x);
                        } else
                                return config_error(c, -EINVAL, "unknown field \"%s[%zu].%s\"", field, i, key);
                }
        }
        free(o->shutdown_by_priority);
        o->shutdown_by_priority = TAKE_PTR(l);
        o->n_shutdown_by_priority = n;
        return 0;
}

static int config_headers(struct config_ctx *c, json_t *v, char ***target) {
        _cleanup_strv_free_ char **l = NULL;
        const char *key;
        json_t *values;

        if (!json_is_object(v))
                return config_error(c, -EINVAL,
                                    "staticPodURLHeader: expected a map of header names to lists of values, "
                                    "got %s",
                                    json_type_name(v));
        json_object_foreach(v, key, values) {
                size_t i;
                json_t *e;

                if (json_is_null(values))
                        continue;
                if (!json_is_array(values))
                        return config_error(c, -EINVAL, "staticPodURLHeader.%s: expected a list of strings, got %s",
                                            key, json_type_name(values));
                json_array_foreach(values, i, e) {
                        _cleanup_ck_error_ struct ck_error *why = NULL;
                        int r;

                        if (!json_is_string(e))
                                return config_error(c, -EINVAL, "staticPodURLHeader.%s[%zu]: expected a string, got %s",
                                                    key, i, json_type_name(e));
                        r = header_add(&l, key, json_string_value(e), &why);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                return config_error(c, -EINVAL, "staticPodURLHeader.%s[%zu]: %s", key, i,
                                                    why ? ck_error_message(why) : "n/a");
                }
        }
        strv_free(*target);
        *target = TAKE_PTR(l);
        return 0;
}

/* Is V a zero value, the way kubeadm writes fields it leaves at their defaults ("0s", 0, false, "", {}, [],
 * objects of such)? Those are not worth a warning: they ask for nothing. */
static bool json_is_zero(json_t *v) {
        const char *key;
        json_t *e;

        switch (json_typeof(v)) {
        case JSON_NULL:
        case JSON_FALSE:
                return true;
        case JSON_INTEGER:
                return json_integer_value(v) == 0;
        case JSON_REAL:
                return json_real_value(v) == 0;
        case JSON_STRING:
                return json_string_length(v) == 0 || streq(json_string_value(v), "0") ||
                       streq(json_string_value(v), "0s");
        case JSON_ARRAY:
                return json_array_size(v) == 0;
        case JSON_OBJECT:
                json_object_foreach(v, key, e)
                        if (!json_is_zero(e))
                                return false;
                return true;
        default:
                return false;
        }
}

static int config_logging(struct config_ctx *c, json_t *v, struct kubelet_options *o) {
        const char *key;
        json_t *value;

        if (!json_is_object(v))
                return config_error(c, -EINVAL, "logging: expected an object, got %s", json_type_name(v));
        json_object_foreach(v, key, value) {
                if (json_is_null(value))
                        continue;
                if (streq(key, "verbosity")) {
                        json_int_t i;
                        int r = config_int32(c, "logging.verbosity", value, 0, &i);
                        if (r < 0)
                                return r;
                        o->verbosity = (int) i;
                } else if (streq(key, "format")) {
                        int r = config_string_default(c, "logging.format", value, &o->logging_format);
                        if (r < 0)
                                return r;
                } else if (strv_const_contains(unsupported_logging_fields, ELEMENTSOF(unsupported_logging_fields),
                                               key)) {
                        if (!c->quiet && !json_is_zero(value))
                                log_warning("%s: field logging.%s is not supported by ckubelet, ignored", c->path, key);
                } else
                        return config_error(c, -EINVAL, "unknown field \"logging.%s\"", key);
        }
        return 0;
}

/* featureGates: map of gate name to boolean, gate by gate on top of what is there */
static int config_feature_gates(struct config_ctx *c, json_t *v, struct kubelet_options *o) {
        const char *key;
        json_t *value;

        if (!json_is_object(v))
                return config_error(c, -EINVAL, "featureGates: expected a map of gate names to booleans, got %s",
                                    json_type_name(v));
        json_object_foreach(v, key, value) {
                _cleanup_ck_error_ struct ck_error *why = NULL;
                int r;

                if (json_is_null(value))
                        continue;
                if (!json_is_boolean(value))
                        return config_error(c, -EINVAL, "featureGates.%s: expected a boolean, got %s", key,
                                            json_type_name(value));
                r = feature_gates_set(&o->feature_gates, key, json_is_true(value), !c->quiet, &why);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return config_error(c, r, "featureGates: %s", ck_error_message(why));
        }
        return 0;
}

static int config_apply_field(struct config_ctx *c, const char *key, json_t *v, struct kubelet_options *o) {
        json_int_t i;
        int r;

        if (streq(key, "apiVersion") || streq(key, "kind"))
                return 0; /* checked by the caller */
        if (json_is_null(v))
                return 0; /* as encoding/json: null leaves the field alone */

        if (streq(key, "staticPodPath"))
                return config_string(c, key, v, true, &o->pod_manifest_path);
        if (streq(key, "podLogsDir")) {
                if (json_is_string(v) && json_string_length(v) == 0)
                        return 0; /* the default */
                return config_string(c, key, v, true, &o->pod_logs_dir);
        }
        if (streq(key, "staticPodURL"))
                return config_string(c, key, v, false, &o->manifest_url);
        if (streq(key, "containerRuntimeEndpoint"))
                return config_string_default(c, key, v, &o->container_runtime_endpoint);
        if (streq(key, "imageServiceEndpoint"))
                return config_string(c, key, v, false, &o->image_service_endpoint);
        if (streq(key, "staticPodURLHeader"))
                return config_headers(c, v, &o->manifest_url_headers);
        if (streq(key, "fileCheckFrequency"))
                return config_duration(c, key, v, &o->file_check_frequency_usec);
        if (streq(key, "httpCheckFrequency"))
                return config_duration(c, key, v, &o->http_check_frequency_usec);
        if (streq(key, "syncFrequency"))
                return config_duration(c, key, v, &o->sync_frequency_usec);
        if (streq(key, "runtimeRequestTimeout"))
                return config_duration(c, key, v, &o->runtime_request_timeout_usec);
        if (streq(key, "streamingConnectionIdleTimeout"))
                return config_duration(c, key, v, &o->streaming_connection_idle_timeout_usec);
        if (streq(key, "maxPods")) {
                r = config_int32(c, key, v, INT32_MIN, &i);
                if (r < 0)
                        return r;
                if (i != 0) /* 0 means the default, 110 */
                        o->max_pods = (int) i;
                return 0;
        }
        if (streq(key, "logging"))
                return config_logging(c, v, o);
        if (streq(key, "enableServer"))
                return config_bool(c, key, v, &o->enable_server);
        if (streq(key, "enableDebuggingHandlers"))
                return config_bool(c, key, v, &o->enable_debugging_handlers);
        if (streq(key, "enableSystemLogHandler"))
                return config_bool(c, key, v, &o->enable_system_log_handler);
        if (streq(key, "enableSystemLogQuery"))
                return config_bool(c, key, v, &o->enable_system_log_query);
        if (streq(key, "address"))
                return config_string_default(c, key, v, &o->address);
        if (streq(key, "healthzBindAddress"))
                return config_string_default(c, key, v, &o->healthz_bind_address);
        if (streq(key, "tlsCertFile"))
                return config_string(c, key, v, true, &o->tls_cert_file);
        if (streq(key, "tlsPrivateKeyFile"))
                return config_string(c, key, v, true, &o->tls_private_key_file);
        if (streq(key, "port"))
                return config_port(c, key, v, &o->port);
        if (streq(key, "readOnlyPort"))
                return config_port(c, key, v, &o->read_only_port);
        if (streq(key, "healthzPort"))
                return config_port(c, key, v, &o->healthz_port);
        if (streq(key, "registerNode"))
                return config_bool(c, key, v, &o->register_node);
        if (streq(key, "kubeAPIQPS"))
                return config_port(c, key, v, &o->kube_api_qps);
        if (streq(key, "kubeAPIBurst"))
                return config_port(c, key, v, &o->kube_api_burst);
        if (streq(key, "nodeStatusUpdateFrequency"))
                return config_duration(c, key, v, &o->node_status_update_frequency_usec);
        if (streq(key, "nodeStatusReportFrequency"))
                return config_duration(c, key, v, &o->node_status_report_frequency_usec);
        if (streq(key, "nodeLeaseDurationSeconds"))
                return config_port(c, key, v, &o->node_lease_duration_seconds);
        if (streq(key, "kubeReserved"))
                return config_string_map(c, key, v, &o->kube_reserved);
        if (streq(key, "systemReserved"))
                return config_string_map(c, key, v, &o->system_reserved);
        if (streq(key, "cpuManagerPolicyOptions"))
                return config_string_map(c, key, v, &o->cpu_manager_policy_options);
        if (streq(key, "memoryManagerPolicy"))
                return config_string(c, key, v, false, &o->memory_manager_policy);
        if (streq(key, "reservedMemory"))
                return config_reserved_memory(c, key, v, &o->reserved_memory);
        if (streq(key, "topologyManagerPolicyOptions"))
                return config_string_map(c, key, v, &o->topology_manager_policy_options);
        if (streq(key, "topologyManagerPolicy"))
                return config_string(c, key, v, false, &o->topology_manager_policy);
        if (streq(key, "topologyManagerScope"))
                return config_string(c, key, v, false, &o->topology_manager_scope);
        if (streq(key, "cpuManagerPolicy"))
                return config_string(c, key, v, false, &o->cpu_manager_policy);
        if (streq(key, "cpuManagerReconcilePeriod"))
                return config_duration(c, key, v, &o->cpu_manager_reconcile_period_usec);
        if (streq(key, "reservedSystemCPUs"))
                return config_string(c, key, v, false, &o->reserved_system_cpus);
        if (streq(key, "cgroupsPerQOS"))
                return config_bool(c, key, v, &o->cgroups_per_qos);
        if (streq(key, "cgroupRoot"))
                return config_string_default(c, key, v, &o->cgroup_root);
        if (streq(key, "cgroupDriver"))
                return config_string_default(c, key, v, &o->cgroup_driver);
        if (streq(key, "enforceNodeAllocatable"))
                return config_string_list(c, key, v, &o->enforce_node_allocatable);
        if (streq(key, "podPidsLimit")) {
                if (!json_is_integer(v))
                        return config_error(c, -EINVAL, "%s: expected an integer, got %s", key, json_type_name(v));
                o->pod_pids_limit = json_integer_value(v);
                return 0;
        }
        if (streq(key, "registerWithTaints"))
                return config_taints(c, key, v, &o->register_with_taints);
        if (streq(key, "containerLogMaxSize")) {
                r = config_string(c, key, v, false, &o->container_log_max_size);
                if (r >= 0 && isempty(o->container_log_max_size))
                        r = free_and_strdup(&o->container_log_max_size, "10Mi"); /* "" is the default */
                return r;
        }
        if (streq(key, "containerLogMaxFiles"))
                return config_port(c, key, v, &o->container_log_max_files);
        if (streq(key, "containerLogMaxWorkers"))
                return config_port(c, key, v, &o->container_log_max_workers);
        if (streq(key, "containerLogMonitorInterval"))
                return config_duration(c, key, v, &o->container_log_monitor_interval_usec);
        if (streq(key, "serializeImagePulls"))
                return config_bool(c, key, v, &o->serialize_image_pulls);
        if (streq(key, "seccompDefault"))
                return config_bool(c, key, v, &o->seccomp_default);
        if (streq(key, "failSwapOn"))
                return config_bool(c, key, v, &o->fail_swap_on);
        if (streq(key, "maxParallelImagePulls")) {
                /* any int32 is kept for the validation to judge (null, as for every field, leaves it unset) */
                r = config_port(c, key, v, &o->max_parallel_image_pulls);
                if (r >= 0)
                        o->max_parallel_image_pulls_set = true;
                return r;
        }
        if (streq(key, "imageGCHighThresholdPercent"))
                return config_port(c, key, v, &o->image_gc_high_threshold_percent);
        if (streq(key, "imageGCLowThresholdPercent"))
                return config_port(c, key, v, &o->image_gc_low_threshold_percent);
        if (streq(key, "imageMinimumGCAge"))
                return config_duration(c, key, v, &o->image_minimum_gc_age_usec);
        if (streq(key, "imageMaximumGCAge"))
                return config_duration(c, key, v, &o->image_maximum_gc_age_usec);
        if (streq(key, "evictionHard"))
                return config_string_map(c, key, v, &o->eviction_hard);
        if (streq(key, "evictionSoft"))
                return config_string_map(c, key, v, &o->eviction_soft);
        if (streq(key, "evictionSoftGracePeriod"))
                return config_string_map(c, key, v, &o->eviction_soft_grace_period);
        if (streq(key, "evictionMinimumReclaim"))
                return config_string_map(c, key, v, &o->eviction_minimum_reclaim);
        if (streq(key, "evictionMaxPodGracePeriod"))
                return config_port(c, key, v, &o->eviction_max_pod_grace_period);
        if (streq(key, "evictionPressureTransitionPeriod"))
                return config_duration(c, key, v, &o->eviction_pressure_transition_period_usec);
        if (streq(key, "kernelMemcgNotification"))
                return config_bool(c, key, v, &o->kernel_memcg_notification);
        if (streq(key, "shutdownGracePeriod"))
                return config_duration_value(c, key, v, &o->shutdown_grace_period_usec);
        if (streq(key, "shutdownGracePeriodCriticalPods"))
                return config_duration_value(c, key, v, &o->shutdown_grace_period_critical_pods_usec);
        if (streq(key, "shutdownGracePeriodByPodPriority"))
                return config_shutdown_by_priority(c, key, v, o);
        if (streq(key, "volumeStatsAggPeriod"))
                return config_duration(c, key, v, &o->volume_stats_agg_period_usec);
        if (streq(key, "authentication"))
                return config_object(c, key, v, config_authn_field, o);
        if (streq(key, "authorization"))
                return config_object(c, key, v, config_authz_field, o);
        if (streq(key, "crashLoopBackOff"))
                return config_object(c, key, v, config_crash_field, o);
        if (streq(key, "memorySwap"))
                return config_object(c, key, v, config_swap_field, o);
        if (streq(key, "rotateCertificates"))
                return config_bool(c, key, v, &o->rotate_certificates);
        if (streq(key, "serverTLSBootstrap"))
                return config_bool(c, key, v, &o->server_tls_bootstrap);
        if (streq(key, "featureGates"))
                return config_feature_gates(c, v, o);
        if (streq(key, "clusterDNS"))
                return config_string_list(c, key, v, &o->cluster_dns);
        if (streq(key, "clusterDomain"))
                return config_string(c, key, v, false, &o->cluster_domain);
        if (streq(key, "resolvConf"))
                return config_string(c, key, v, true, &o->resolv_conf);
        if (streq(key, "allowedUnsafeSysctls"))
                return config_string_list(c, key, v, &o->allowed_unsafe_sysctls);

        if (strv_const_contains(unsupported_fields, ELEMENTSOF(unsupported_fields), key)) {
                if (!c->quiet && !json_is_zero(v))
                        log_warning("%s: field %s is not supported by ckubelet, ignored", c->path, key);
                return 0;
        }
        return config_error(c, -EINVAL, "unknown field \"%s\"", key);
}

static int check_type_meta(struct config_ctx *c, json_t *doc, const char *key, const char *want) {
        json_t *v = json_object_get(doc, key);

        if (!v || json_is_null(v) || (json_is_string(v) && isempty(json_string_value(v))))
                return config_error(c, -EINVAL, "%s: Required value: must be \"%s\"", key, want);
        if (!json_is_string(v))
                return config_error(c, -EINVAL, "%s: expected a string, got %s", key, json_type_name(v));
        if (!streq(json_string_value(v), want))
                return config_error(c, -EINVAL, "%s: unsupported value \"%s\": must be \"%s\"", key,
                                    json_string_value(v), want);
        return 0;
}

/* Read PATH: exactly one KubeletConfiguration object (type meta checked). */
static int read_config_doc(const char *path, json_t **ret, struct ck_error **ret_error) {
        _cleanup_free_ char *data = NULL;
        _cleanup_ck_error_ struct ck_error *yerr = NULL;
        struct config_ctx c = { .path = path, .error = ret_error };
        json_t *docs = NULL, *doc;
        size_t size;
        int r;

        r = read_full_file(path, KUBELET_CONFIG_MAX_SIZE, &data, &size);
        if (r == -ENOMEM)
                return r;
        if (r == -EFBIG)
                return config_error(&c, r, "config file is too large (more than %u bytes)", KUBELET_CONFIG_MAX_SIZE);
        if (r < 0)
                return config_error(&c, r, "cannot read config file: %s", strerror(-r));
        r = yaml_to_json_docs(data, size, &docs, &yerr);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_error(&c, -EINVAL, "%s", yerr ? ck_error_message(yerr) : "cannot parse YAML/JSON");

        if (json_array_size(docs) == 0)
                r = config_error(&c, -EINVAL, "config file is empty");
        else if (json_array_size(docs) > 1)
                r = config_error(&c, -EINVAL, "expected one KubeletConfiguration document, found %zu",
                                 json_array_size(docs));
        else if (!json_is_object(doc = json_array_get(docs, 0)))
                r = config_error(&c, -EINVAL, "expected a KubeletConfiguration object, got %s", json_type_name(doc));
        else {
                r = check_type_meta(&c, doc, "apiVersion", KUBELET_CONFIG_API_VERSION);
                if (r >= 0)
                        r = check_type_meta(&c, doc, "kind", KUBELET_CONFIG_KIND);
                if (r >= 0)
                        *ret = json_incref(doc);
        }
        json_decref(docs);
        return r;
}

/* upstream's resolveRelativePaths on the --config document: relative paths of its path fields are taken from the
 * file's directory (drop-ins are not resolved, as upstream) */
static int resolve_relative_paths(json_t *doc, const char *path) {
        static const char *const fields[][2] = {
                { "staticPodPath", NULL },     { "podLogsDir", NULL }, { "tlsCertFile", NULL },
                { "tlsPrivateKeyFile", NULL }, { "resolvConf", NULL }, { "authentication", "x509" },
        };
        _cleanup_free_ char *dir = NULL;
        const char *slash = strrchr(path, '/');

        dir = slash ? (slash == path ? strdup("/") : strndup(path, (size_t) (slash - path))) : strdup(".");
        if (!dir)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                json_t *parent = doc, *v;
                const char *key = fields[i][0];
                char *abs;

                if (fields[i][1]) { /* authentication.x509.clientCAFile */
                        parent = json_object_get(json_object_get(doc, key), fields[i][1]);
                        key = "clientCAFile";
                }
                v = json_is_object(parent) ? json_object_get(parent, key) : NULL;
                if (!json_is_string(v) || json_string_length(v) == 0 || json_string_value(v)[0] == '/')
                        continue;
                if (asprintf(&abs, "%s/%s", dir, json_string_value(v)) < 0)
                        return -ENOMEM;
                if (json_object_set_new(parent, key, json_string(abs)) < 0) {
                        free(abs);
                        return -ENOMEM;
                }
                free(abs);
        }
        return 0;
}

json_t *kubelet_options_merge_patch(json_t *target, json_t *patch) {
        const char *key;
        json_t *v;

        if (!json_is_object(patch)) {
                json_decref(target);
                return json_incref(patch);
        }
        if (!json_is_object(target)) {
                json_decref(target);
                target = json_object();
                if (!target)
                        return NULL;
        }
        json_object_foreach(patch, key, v) {
                if (json_is_null(v))
                        json_object_del(target, key);
                else {
                        json_t *merged = kubelet_options_merge_patch(json_incref(json_object_get(target, key)), v);
                        if (!merged || json_object_set_new(target, key, merged) < 0) {
                                json_decref(target);
                                return NULL;
                        }
                }
        }
        return target;
}

static int cmp_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int dropins_walk(const char *dir, unsigned depth, char ***files, char ***skipped, struct ck_error **ret_error) {
        _cleanup_strv_free_ char **names = NULL;
        size_t n;
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (depth > KUBELET_CONFIG_DIR_MAX_DEPTH)
                return ck_error_set(ret_error, -ELOOP, "--config-dir: %s: more than %u directories deep", dir,
                                    KUBELET_CONFIG_DIR_MAX_DEPTH);
        d = opendir(dir);
        if (!d)
                return ck_error_set(ret_error, negative_errno(),
                                    "failed to walk through kubelet dropin directory \"%s\": %m", dir);
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (strv_length(names) >= KUBELET_CONFIG_DIR_MAX_FILES) {
                        r = ck_error_set(ret_error, -E2BIG, "--config-dir: %s: more than %u entries", dir,
                                         KUBELET_CONFIG_DIR_MAX_FILES);
                        break;
                }
                r = strv_extend(&names, de->d_name);
                if (r < 0)
                        break;
        }
        closedir(d);
        if (r < 0)
                return r;
        n = strv_length(names);
        if (n > 1)
                qsort(names, n, sizeof(char *), cmp_names);
        /* as filepath.WalkDir: entries in lexical order, a directory's files where the directory comes */
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                struct stat st;

                if (asprintf(&path, "%s/%s", dir, names[i]) < 0)
                        return -ENOMEM;
                if (lstat(path, &st) < 0)
                        return ck_error_set(ret_error, negative_errno(), "--config-dir: cannot read %s: %m", path);
                if (S_ISDIR(st.st_mode)) {
                        r = dropins_walk(path, depth + 1, files, skipped, ret_error);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (strv_length(*files) + strv_length(*skipped) >= KUBELET_CONFIG_DIR_MAX_FILES)
                        return ck_error_set(ret_error, -E2BIG, "--config-dir %s: more than %u files", dir,
                                            KUBELET_CONFIG_DIR_MAX_FILES);
                r = strv_push(endswith(names[i], ".conf") ? files : skipped, TAKE_PTR(path));
                if (r < 0)
                        return r;
        }
        return 0;
}

int kubelet_options_dropins(const char *dir, char ***ret_files, char ***ret_skipped, struct ck_error **ret_error) {
        _cleanup_strv_free_ char **files = NULL, **skipped = NULL;
        int r;

        r = dropins_walk(dir, 0, &files, &skipped, ret_error);
        if (r < 0)
                return r;
        *ret_files = TAKE_PTR(files);
        if (ret_skipped)
                *ret_skipped = TAKE_PTR(skipped);
        return 0;
}

static int apply_config_doc(struct kubelet_options *o, json_t *doc, const char *name, bool quiet,
                            struct ck_error **ret_error) {
        struct config_ctx c = { .path = name, .quiet = quiet, .error = ret_error };
        const char *key;
        json_t *v;
        int r;

        json_object_foreach(doc, key, v) {
                r = config_apply_field(&c, key, v, o);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Check one document on its own (so that an error names its file), without warnings. */
static int check_config_doc(json_t *doc, const char *name, struct ck_error **ret_error) {
        struct kubelet_options scratch;
        int r;

        r = kubelet_options_init(&scratch);
        if (r < 0)
                return r;
        r = apply_config_doc(&scratch, doc, name, true, ret_error);
        kubelet_options_done(&scratch);
        return r;
}

/* The --config file, then the --config-dir drop-ins merged over it in upstream's order (JSON merge patches, as
 * mergeKubeletConfigurations), applied over the defaults. */
static int load_configuration(struct kubelet_options *o, const char *path, const char *dropin_dir,
                              struct ck_error **ret_error) {
        _cleanup_strv_free_ char **files = NULL, **skipped = NULL;
        _cleanup_free_ char *merged_name = NULL;
        json_t *base = NULL;
        int r;

        if (path) {
                r = read_config_doc(path, &base, ret_error);
                if (r < 0)
                        return r;
                r = resolve_relative_paths(base, path);
                if (r >= 0 && dropin_dir)
                        r = check_config_doc(base, path, ret_error);
                if (r < 0)
                        goto finish;
        }
        if (dropin_dir) {
                r = kubelet_options_dropins(dropin_dir, &files, &skipped, ret_error);
                if (r < 0)
                        goto finish;
                for (char **s = skipped; s && *s; s++)
                        log_v(4, "Skipped file in drop-in directory (does not have .conf extension): %s", *s);
                for (char **f = files; f && *f; f++) {
                        json_t *doc = NULL;

                        r = read_config_doc(*f, &doc, ret_error);
                        if (r >= 0)
                                r = check_config_doc(doc, *f, ret_error);
                        if (r < 0) {
                                json_decref(doc);
                                goto finish;
                        }
                        base = kubelet_options_merge_patch(base, doc);
                        json_decref(doc);
                        if (!base) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        log_v(2, "Merged the kubelet configuration drop-in %s", *f);
                }
                if (asprintf(&merged_name, "%s%s%s (merged with --config-dir %s)", path ? "--config " : "",
                             strempty(path), path ? "" : "the kubelet configuration", dropin_dir) < 0) {
                        merged_name = NULL;
                        r = -ENOMEM;
                        goto finish;
                }
        }
        r = base ? apply_config_doc(o, base, merged_name ? merged_name : path, false, ret_error) : 0;
finish:
        json_decref(base);
        return r;
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
        t = trim(name);
        if (isempty(t))
                return ck_error_set(ret_error, -EINVAL, "empty hostname is invalid");
        for (char *s = t; *s; s++)
                *s = (char) tolower((unsigned char) *s);
        free(o->node_name);
        o->node_name = strdup(t);
        return o->node_name ? 0 : -ENOMEM;
}

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
                else if (strv_const_contains(unsupported, ELEMENTSOF(unsupported), tok))
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

static int validate(const struct kubelet_options *o, struct ck_error **ret_error) {
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

static void kubelet_options_print_help(void);

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
                r = parse_argv(&scratch, &st, argc, argv, ret_error);
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
                kubelet_options_print_help();
                return 1;
        }
        if (st.version != VERSION_NONE) {
                print_version(st.version);
                return 1;
        }

        /* the config file on top of the defaults, then the flags again on top of that */
        if (config_path || config_dir) {
                r = load_configuration(o, config_path, config_dir, ret_error);
                if (r < 0)
                        goto fail;
        }
        st = (struct parse_state) {};
        r = parse_argv(o, &st, argc, argv, ret_error);
        if (r < 0)
                goto fail;

        r = validate(o, ret_error);
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
                r = quantity_parse(o->container_log_max_size, &q); /* checked by validate() */
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

/* ---- --help ---- */

static void default_text(const struct kubelet_options *d, const struct flag_def *f, char *buf, size_t size) {
        const char *base = (const char *) d;

        buf[0] = '\0';
        switch (f->kind) {
        case FLAG_STRING: {
                const char *s = *(char *const *) (base + f->offset);
                if (!isempty(s))
                        snprintf(buf, size, "\"%s\"", s);
                break;
        }
        case FLAG_DURATION: {
                char t[GO_DURATION_MAX];
                uint64_t usec = *(const uint64_t *) (base + f->offset);
                snprintf(buf, size, "%s", go_duration_format((int64_t) usec * 1000, t, sizeof(t)));
                break;
        }
        case FLAG_INT:
                snprintf(buf, size, "%d", *(const int *) (base + f->offset));
                break;
        case FLAG_INT64:
                snprintf(buf, size, "%" PRId64, *(const int64_t *) (base + f->offset));
                break;
        case FLAG_VERBOSITY:
                snprintf(buf, size, "%d", d->verbosity);
                break;
        case FLAG_BOOL:
                snprintf(buf, size, "%s", *(const bool *) (base + f->offset) ? "true" : "false");
                break;
        case FLAG_MAP:
        case FLAG_LANGLE_MAP: {
                const char *m = *(char *const *) (base + f->offset);
                if (!isempty(m)) {
                        /* as pflag prints it: "memory.available<100Mi,..." for the langle maps */
                        snprintf(buf, size, "%s", m);
                        if (f->kind == FLAG_LANGLE_MAP)
                                for (char *c = buf; *c; c++)
                                        if (*c == '=')
                                                *c = '<';
                }
                break;
        }
        case FLAG_HEADERS:
        case FLAG_FEATURE_GATES:
        case FLAG_HELP:
        case FLAG_VERSION:
        case FLAG_COMPAT:
                break;
        }
}

static int flag_def_ptr_compare(const void *a, const void *b) {
        const struct flag_def *const *x = a, *const *y = b;

        return strcmp((*x)->name, (*y)->name);
}

/* Usage text for --help. */
static void kubelet_options_print_help(void) {
        struct kubelet_options d;
        bool have_defaults = kubelet_options_init(&d) >= 0;
        const struct flag_def *sorted[ELEMENTSOF(flag_defs)];
        int width = 0;

        /* listed by name, as pflag does, whatever the order of the table */
        for (size_t i = 0; i < ELEMENTSOF(flag_defs); i++) {
                sorted[i] = &flag_defs[i];
                width = MAX(width, (int) (strlen(flag_defs[i].name) + strlen(strempty(flag_defs[i].type)) + 9));
        }
        qsort(sorted, ELEMENTSOF(sorted), sizeof(sorted[0]), flag_def_ptr_compare);
        printf("ckubelet runs the pods of one node through a CRI runtime (containerd): static pods from files or a URL,\n"
               "and with --kubeconfig the pods the API server binds to the node, whose Node object it registers and\n"
               "keeps up to date. It serves the kubelet API (logs, exec, port-forward, stats) on --port.\n\n"
               "Usage:\n  ckubelet [flags]\n\nFlags:\n");
        for (size_t i = 0; i < ELEMENTSOF(sorted); i++) {
                const struct flag_def *f = sorted[i];
                char def[128] = "";
                char lhs[96];

                if (f->shorthand)
                        snprintf(lhs, sizeof(lhs), "  -%c, --%s%s%s", f->shorthand, f->name, f->type ? " " : "",
                                 strempty(f->type));
                else
                        snprintf(lhs, sizeof(lhs), "      --%s%s%s", f->name, f->type ? " " : "", strempty(f->type));
                if (have_defaults)
                        default_text(&d, f, def, sizeof(def));
                if (f->kind == FLAG_COMPAT)
                        printf("%-*s   Accepted for compatibility with the upstream kubelet, ignored: %s", width, lhs,
                               f->help);
                else
                        printf("%-*s   %s", width, lhs, f->help);
                if (def[0])
                        printf(" (default %s)", def);
                if (f->field)
                        printf(" [config: %s]", f->field);
                printf("\n");
        }
        printf("\nThe --config file may also set podLogsDir (default \"%s\"); fields ckubelet does not act on are\n"
               "accepted with a warning. Flags and fields: docs/flags.md (/usr/share/doc/ckubelet in the package).\n",
               DEFAULT_POD_LOGS_DIR);
        if (have_defaults)
                kubelet_options_done(&d);
}

unsigned kubelet_options_image_pulls(const struct kubelet_options *o) {
        assert(o);
        if (o->serialize_image_pulls)
                return 1;
        return o->max_parallel_image_pulls_set ? (unsigned) o->max_parallel_image_pulls : 0;
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
