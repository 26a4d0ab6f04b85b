/* SPDX-License-Identifier: Apache-2.0 */
/* Flags and the KubeletConfiguration file (cmd/kubelet/app/options, pkg/kubelet/apis/config/v1beta1).
 *
 * Order of precedence, as upstream: built-in defaults < the --config file < command-line flags. Like
 * upstream we parse the command line twice: once to validate it and find --config/--help/--version, then,
 * after the config file was applied, again on top of it. */
#include "options/options.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include "apis/manifest.h"
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

enum flag_kind {
        FLAG_STRING,    /* char * at offset */
        FLAG_DURATION,  /* uint64_t usec at offset */
        FLAG_INT,       /* int at offset */
        FLAG_INT64,     /* int64_t at offset */
        FLAG_BOOL,      /* bool at offset */
        FLAG_HEADERS,   /* --manifest-url-header */
        FLAG_VERBOSITY, /* --v / -v */
        FLAG_HELP,
        FLAG_VERSION,
};

struct flag_def {
        const char *name;
        char shorthand;
        enum flag_kind kind;
        size_t offset;
        const char *field; /* KubeletConfiguration field, NULL for flag-only */
        const char *type;  /* as pflag prints it in --help */
        const char *help;
};

#define OFF(f) offsetof(struct kubelet_options, f)

static const struct flag_def flag_defs[] = {
        { "address", 0, FLAG_STRING, OFF(address), "address", "string",
          "The IP address for the Kubelet to serve on (set to '0.0.0.0' or '::' for listening on all interfaces and "
          "IP address families)" },
        { "allowed-unsafe-sysctls", 0, FLAG_STRING, OFF(allowed_unsafe_sysctls), NULL, "strings",
          "Comma-separated allowlist of unsafe sysctls or unsafe sysctl patterns (ending in *). Use these at your "
          "own risk." },
        { "anonymous-auth", 0, FLAG_BOOL, OFF(anonymous_auth), "authentication.anonymous.enabled", "",
          "Enables anonymous requests to the Kubelet server. Requests that are not rejected by another authentication "
          "method are treated as anonymous requests. Anonymous requests have a username of system:anonymous, and a "
          "group name of system:unauthenticated." },
        { "authentication-token-webhook", 0, FLAG_BOOL, OFF(authentication_token_webhook),
          "authentication.webhook.enabled", "",
          "Use the TokenReview API to determine authentication for bearer "
          "tokens (needs an API server)." },
        { "authentication-token-webhook-cache-ttl", 0, FLAG_DURATION, OFF(authentication_token_webhook_cache_ttl_usec),
          "authentication.webhook.cacheTTL", "duration",
          "The duration to cache responses from the webhook token authenticator." },
        { "authorization-mode", 0, FLAG_STRING, OFF(authorization_mode), "authorization.mode", "string",
          "Authorization mode for Kubelet server. Valid options are AlwaysAllow or Webhook. Webhook mode uses the "
          "SubjectAccessReview API to determine authorization." },
        { "authorization-webhook-cache-authorized-ttl", 0, FLAG_DURATION,
          OFF(authorization_webhook_cache_authorized_ttl_usec), "authorization.webhook.cacheAuthorizedTTL", "duration",
          "The duration to cache 'authorized' responses from the webhook authorizer." },
        { "authorization-webhook-cache-unauthorized-ttl", 0, FLAG_DURATION,
          OFF(authorization_webhook_cache_unauthorized_ttl_usec), "authorization.webhook.cacheUnauthorizedTTL",
          "duration", "The duration to cache 'unauthorized' responses from the webhook authorizer." },
        { "cert-dir", 0, FLAG_STRING, OFF(cert_dir), NULL, "string",
          "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, "
          "this flag will be ignored." },
        { "cgroup-driver", 0, FLAG_STRING, OFF(cgroup_driver), "cgroupDriver", "string",
          "Driver that the kubelet uses to manipulate cgroups on the host. Possible values: 'cgroupfs', 'systemd' "
          "(ckubelet refuses 'systemd' at start-up)" },
        { "cgroup-root", 0, FLAG_STRING, OFF(cgroup_root), "cgroupRoot", "string",
          "Optional root cgroup to use for pods. This is handled by the container runtime on a best effort basis. "
          "It must exist in every cgroup hierarchy." },
        { "cgroups-per-qos", 0, FLAG_BOOL, OFF(cgroups_per_qos), "cgroupsPerQOS", "",
          "Enable creation of QoS cgroup hierarchy, if true top level QoS and pod cgroups are created." },
        { "client-ca-file", 0, FLAG_STRING, OFF(client_ca_file), "authentication.x509.clientCAFile", "string",
          "If set, any request presenting a client certificate signed by one of the authorities in the client-ca-file "
          "is authenticated with an identity corresponding to the CommonName of the client certificate." },
        { "cluster-dns", 0, FLAG_STRING, OFF(cluster_dns), NULL, "strings",
          "Comma-separated list of DNS server IP address. This value is used for containers DNS server in case of "
          "Pods with \"dnsPolicy=ClusterFirst\"." },
        { "cluster-domain", 0, FLAG_STRING, OFF(cluster_domain), NULL, "string",
          "Domain for this cluster. If set, kubelet will configure all containers to search this domain in addition "
          "to the host's search domains" },
        { "config", 0, FLAG_STRING, OFF(config_path), NULL, "string",
          "The Kubelet will load its initial configuration from this file (KubeletConfiguration, "
          "kubelet.config.k8s.io/v1beta1, YAML or JSON). The path may be absolute or relative; relative paths start "
          "at the Kubelet's current working directory. Omit this flag to use the built-in default configuration "
          "values. Command-line flags override configuration from this file." },
        { "container-runtime-endpoint", 0, FLAG_STRING, OFF(container_runtime_endpoint), "containerRuntimeEndpoint",
          "string",
          "The endpoint of container runtime service. Only unix domain sockets are supported. Example: "
          "'unix:///path/to/runtime.sock'" },
        { "enable-debugging-handlers", 0, FLAG_BOOL, OFF(enable_debugging_handlers), "enableDebuggingHandlers", "",
          "Enables server endpoints for log collection and local running of containers and commands" },
        { "enable-server", 0, FLAG_BOOL, OFF(enable_server), "enableServer", "", "Enable the Kubelet's server" },
        { "enforce-node-allocatable", 0, FLAG_STRING, OFF(enforce_node_allocatable), "enforceNodeAllocatable",
          "strings",
          "A comma separated list of levels of node allocatable enforcement to be enforced by kubelet. "
          "Acceptable options are 'none' and 'pods' (ckubelet does not enforce 'system-reserved' and "
          "'kube-reserved')." },
        { "file-check-frequency", 0, FLAG_DURATION, OFF(file_check_frequency_usec), "fileCheckFrequency", "duration",
          "Duration between checking config files for new data (changes are also picked up at once through inotify)" },
        { "healthz-bind-address", 0, FLAG_STRING, OFF(healthz_bind_address), "healthzBindAddress", "string",
          "The IP address for the healthz server to serve on (set to '0.0.0.0' or '::' for listening in all "
          "interfaces and IP families)" },
        { "healthz-port", 0, FLAG_INT, OFF(healthz_port), "healthzPort", "int32",
          "The port of the localhost healthz endpoint (set to 0 to disable)" },
        { "help", 'h', FLAG_HELP, 0, NULL, NULL, "help for ckubelet" },
        { "hostname-override", 0, FLAG_STRING, OFF(hostname_override), NULL, "string",
          "If non-empty, will use this string as identification instead of the actual hostname." },
        { "node-labels", 0, FLAG_STRING, OFF(node_labels), NULL, "mapStringString",
          "Labels to add when registering the node in the cluster. Labels must be key=value pairs separated by ','." },
        { "node-status-update-frequency", 0, FLAG_DURATION, OFF(node_status_update_frequency_usec),
          "nodeStatusUpdateFrequency", "duration",
          "Specifies how often kubelet computes node status and posts it to "
          "master when there is a change (and at least every nodeStatusReportFrequency)." },
        { "node-ip", 0, FLAG_STRING, OFF(node_ip), NULL, "string",
          "IP address of the node. If set, kubelet will use this IP address for the node (the pod IP of hostNetwork "
          "pods, where their probes connect). Default: the address of the interface of the default route." },
        { "http-check-frequency", 0, FLAG_DURATION, OFF(http_check_frequency_usec), "httpCheckFrequency", "duration",
          "Duration between checking http for new data" },
        { "image-service-endpoint", 0, FLAG_STRING, OFF(image_service_endpoint), "imageServiceEndpoint", "string",
          "The endpoint of container image service. If not specified, it will be the same with "
          "--container-runtime-endpoint by default. Only unix domain sockets are supported." },
        { "manifest-url", 0, FLAG_STRING, OFF(manifest_url), "staticPodURL", "string",
          "URL for accessing additional Pod specifications to run" },
        { "manifest-url-header", 0, FLAG_HEADERS, 0, "staticPodURLHeader", "colonSeparatedMultimapStringString",
          "Comma-separated list of HTTP headers to use when accessing the url provided to --manifest-url. Multiple "
          "headers with the same name will be added in the same order provided. This flag can be repeatedly invoked. "
          "For example: --manifest-url-header 'a:hello,b:again,c:world' --manifest-url-header 'b:beautiful'" },
        { "kube-api-burst", 0, FLAG_INT, OFF(kube_api_burst), "kubeAPIBurst", "int32",
          "Burst to use while talking with kubernetes apiserver." },
        { "kube-api-qps", 0, FLAG_INT, OFF(kube_api_qps), "kubeAPIQPS", "int32",
          "QPS to use while talking with kubernetes apiserver." },
        { "kube-reserved", 0, FLAG_STRING, OFF(kube_reserved), "kubeReserved", "mapStringString",
          "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs "
          "that describe resources reserved for kubernetes system components." },
        { "kubeconfig", 0, FLAG_STRING, OFF(kubeconfig), NULL, "string",
          "Path to a kubeconfig file, specifying how to connect to the API server. Providing --kubeconfig enables "
          "API server mode, omitting --kubeconfig enables standalone mode." },
        { "max-pods", 0, FLAG_INT, OFF(max_pods), "maxPods", "int32", "Number of Pods that can run on this Kubelet." },
        { "pod-manifest-path", 0, FLAG_STRING, OFF(pod_manifest_path), "staticPodPath", "string",
          "Path to the directory containing static pod files to run, or the path to a single static pod file. Files "
          "starting with dots will be ignored." },
        { "pod-max-pids", 0, FLAG_INT64, OFF(pod_pids_limit), "podPidsLimit", "int",
          "Set the maximum number of processes per pod. If -1, the kubelet defaults to the node allocatable pid "
          "capacity." },
        { "port", 0, FLAG_INT, OFF(port), "port", "int32", "The port for the Kubelet to serve on." },
        { "read-only-port", 0, FLAG_INT, OFF(read_only_port), "readOnlyPort", "int32",
          "The read-only port for the Kubelet to serve on with no authentication/authorization (set to 0 to disable)" },
        { "register-node", 0, FLAG_BOOL, OFF(register_node), "registerNode", "",
          "Register the node with the apiserver. If --kubeconfig is not provided, this flag is irrelevant, as the "
          "Kubelet won't have an apiserver to register with." },
        { "register-with-taints", 0, FLAG_STRING, OFF(register_with_taints), "registerWithTaints", "string",
          "Register the node with the given list of taints (comma separated \"<key>=<value>:<effect>\"). No-op if "
          "register-node is false." },
        { "resolv-conf", 0, FLAG_STRING, OFF(resolv_conf), NULL, "string",
          "Resolver configuration file used as the basis for the container DNS resolution configuration." },
        { "root-dir", 0, FLAG_STRING, OFF(root_dir), NULL, "string",
          "Directory path for managing kubelet files (volume mounts,etc)." },
        { "runtime-request-timeout", 0, FLAG_DURATION, OFF(runtime_request_timeout_usec), "runtimeRequestTimeout",
          "duration",
          "Timeout of all runtime requests except long running request - pull, logs, exec and attach. "
          "When timeout exceeded, kubelet will cancel the request, throw out an error and retry later." },
        { "streaming-connection-idle-timeout", 0, FLAG_DURATION, OFF(streaming_connection_idle_timeout_usec),
          "streamingConnectionIdleTimeout", "duration",
          "Maximum time a streaming connection (exec, attach, port-forward) can be idle before the connection is "
          "automatically closed. 0 indicates no timeout. Example: '5m'." },
        { "sync-frequency", 0, FLAG_DURATION, OFF(sync_frequency_usec), "syncFrequency", "duration",
          "Max period between synchronizing running containers and config" },
        { "system-reserved", 0, FLAG_STRING, OFF(system_reserved), "systemReserved", "mapStringString",
          "A set of ResourceName=ResourceQuantity (e.g. cpu=200m,memory=500Mi,ephemeral-storage=1Gi,pid=1000) pairs "
          "that describe resources reserved for non-kubernetes components." },
        { "tls-cert-file", 0, FLAG_STRING, OFF(tls_cert_file), "tlsCertFile", "string",
          "File containing x509 Certificate used for serving HTTPS (with intermediate certs, if any, concatenated "
          "after server cert). If --tls-cert-file and --tls-private-key-file are not provided, a self-signed "
          "certificate and key are generated for the public address and saved to the directory passed to "
          "--cert-dir." },
        { "tls-private-key-file", 0, FLAG_STRING, OFF(tls_private_key_file), "tlsPrivateKeyFile", "string",
          "File containing x509 private key matching --tls-cert-file." },
        { "v", 'v', FLAG_VERBOSITY, OFF(verbosity), "logging.verbosity", "Level",
          "number for the log level verbosity" },
        { "version", 0, FLAG_VERSION, 0, NULL, "version[=true]", "Print version information and quit" },
};

/* KubeletConfiguration (v1beta1) fields that upstream has and ckubelet does not implement: accepted, with a
 * warning. Anything else that we do not implement either is an unknown field: an error. */
static const char *const unsupported_fields[] = {
        "allowedUnsafeSysctls",
        "clusterDNS",
        "clusterDomain",
        "configMapAndSecretChangeDetectionStrategy",
        "containerLogMaxFiles",
        "containerLogMaxSize",
        "containerLogMaxWorkers",
        "containerLogMonitorInterval",
        "contentType",
        "cpuCFSQuota",
        "cpuCFSQuotaPeriod",
        "cpuManagerPolicy",
        "cpuManagerPolicyOptions",
        "cpuManagerReconcilePeriod",
        "crashLoopBackOff",
        "draManagerReconcilePeriod",
        "enableContentionProfiling",
        "enableControllerAttachDetach",
        "enableDebugFlagsHandler",
        "enableProfilingHandler",
        "enableSystemLogHandler",
        "enableSystemLogQuery",
        "eventBurst",
        "eventRecordQPS",
        "evictionHard",
        "evictionMaxPodGracePeriod",
        "evictionMinimumReclaim",
        "evictionPressureTransitionPeriod",
        "evictionSoft",
        "evictionSoftGracePeriod",
        "failSwapOn",
        "featureGates",
        "hairpinMode",
        "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent",
        "imageMaximumGCAge",
        "imageMinimumGCAge",
        "imagePullCredentialsVerificationPolicy",
        "iptablesDropBit",
        "iptablesMasqueradeBit",
        "kernelMemcgNotification",
        "kubeReservedCgroup",
        "kubeletCgroups",
        "localStorageCapacityIsolation",
        "makeIPTablesUtilChains",
        "maxOpenFiles",
        "maxParallelImagePulls",
        "memoryManagerPolicy",
        "memoryReservationPolicy",
        "memorySwap",
        "memoryThrottlingFactor",
        "mergeDefaultEvictionSettings",
        "nodeStatusMaxImages",
        "oomScoreAdj",
        "podCIDR",
        "podsPerCore",
        "preloadedImagesVerificationAllowlist",
        "protectKernelDefaults",
        "providerID",
        "qosReserved",
        "registryBurst",
        "registryPullQPS",
        "reservedMemory",
        "reservedSystemCPUs",
        "resolvConf",
        "rotateCertificates",
        "runOnce",
        "seccompDefault",
        "serializeImagePulls",
        "serverTLSBootstrap",
        "showHiddenMetricsForVersion",
        "shutdownGracePeriod",
        "shutdownGracePeriodByPodPriority",
        "shutdownGracePeriodCriticalPods",
        "singleProcessOOMKill",
        "systemCgroups",
        "systemReservedCgroup",
        "tlsCipherSuites",
        "tlsCurvePreferences",
        "tlsMinVersion",
        "topologyManagerPolicy",
        "topologyManagerPolicyOptions",
        "topologyManagerScope",
        "tracing",
        "userNamespaces",
        "volumePluginDir",
        "volumeStatsAggPeriod",
};

/* logging (component-base LoggingConfiguration): only verbosity is implemented */
static const char *const unsupported_logging_fields[] = { "flushFrequency", "format", "options", "vmodule" };

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
                .sync_frequency_usec = DEFAULT_SYNC_FREQUENCY_USEC,
                .max_pods = DEFAULT_MAX_PODS,
                .verbosity = 0,
                .enable_server = true,
                .enable_debugging_handlers = true,
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
        if (!o->container_runtime_endpoint || !o->root_dir || !o->pod_logs_dir || !o->address ||
            !o->healthz_bind_address || !o->cert_dir || !o->authorization_mode || !o->cgroup_root ||
            !o->cgroup_driver || !o->enforce_node_allocatable || !o->resolv_conf) {
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
        strv_free(o->manifest_url_headers);
        free(o->container_runtime_endpoint);
        free(o->image_service_endpoint);
        free(o->hostname_override);
        free(o->node_ip);
        free(o->node_name);
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
        free(o->kubeconfig);
        free(o->node_labels);
        free(o->register_with_taints);
        free(o->kube_reserved);
        free(o->system_reserved);
        free(o->cgroup_root);
        free(o->cgroup_driver);
        free(o->enforce_node_allocatable);
        free(o->allowed_unsafe_sysctls);
        free(o->cluster_dns);
        free(o->cluster_domain);
        free(o->resolv_conf);
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
        /* keep CR/LF out of the request: libcurl sends the line as given */
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

/* ---- flags ---- */

struct parse_state {
        bool help;
        bool version;
        bool headers_seen; /* the first --manifest-url-header replaces what the config file gave */
};

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
        return f->kind == FLAG_HELP || f->kind == FLAG_VERSION || f->kind == FLAG_BOOL;
}

static int apply_flag(struct kubelet_options *o, struct parse_state *st, const struct flag_def *f, const char *value,
                      struct ck_error **ret_error) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        char *base = (char *) o;
        int r = 0;

        switch (f->kind) {
        case FLAG_STRING:
                return free_and_strdup((char **) (base + f->offset), value);

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

        case FLAG_HELP:
        case FLAG_VERSION: {
                bool b;
                if (f->kind == FLAG_VERSION && streq(value, "raw")) {
                        st->version = true;
                        return 0;
                }
                r = parse_bool(value, &b);
                if (r >= 0) {
                        if (f->kind == FLAG_HELP)
                                st->help = b;
                        else
                                st->version = b;
                } else
                        (void) ck_error_set(&why, r, "must be a boolean (true or false)");
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
        }
        return 0;
}

/* ---- the config file ---- */

struct config_ctx {
        const char *path;
        const char *dir; /* directory of the config file, for relative paths */
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
        if (is_path && !isempty(str) && str[0] != '/') {
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

/* metav1.Duration: a string for time.ParseDuration. Zero means "use the default" (SetDefaults_*). */
static int config_duration(struct config_ctx *c, const char *field, json_t *v, uint64_t *target) {
        _cleanup_ck_error_ struct ck_error *why = NULL;
        uint64_t usec = 0;
        int r;

        if (!json_is_string(v))
                return config_error(c, -EINVAL, "%s: expected a duration string such as \"20s\", got %s", field,
                                    json_type_name(v));
        r = parse_duration_value(json_string_value(v), &usec, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_error(c, -EINVAL, "%s: invalid duration \"%s\": %s", field, json_string_value(v),
                                    why ? ck_error_message(why) : "invalid value");
        if (usec > 0)
                *target = usec;
        return 0;
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
                return config_string(c, path, v, false, &o->authorization_mode);
        if (streq(path, "authorization.webhook"))
                return config_object(c, path, v, config_authz_field, o);
        if (streq(path, "authorization.webhook.cacheAuthorizedTTL"))
                return config_duration(c, path, v, &o->authorization_webhook_cache_authorized_ttl_usec);
        if (streq(path, "authorization.webhook.cacheUnauthorizedTTL"))
                return config_duration(c, path, v, &o->authorization_webhook_cache_unauthorized_ttl_usec);
        return -ENOENT;
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

static int config_logging(struct config_ctx *c, json_t *v, struct kubelet_options *o) {
        const char *key;
        json_t *value;

        if (!json_is_object(v))
                return config_error(c, -EINVAL, "logging: expected an object, got %s", json_type_name(v));
        json_object_foreach(v, key, value) {
                if (streq(key, "verbosity")) {
                        json_int_t i;
                        int r;
                        if (json_is_null(value))
                                continue;
                        r = config_int32(c, "logging.verbosity", value, 0, &i);
                        if (r < 0)
                                return r;
                        o->verbosity = (int) i;
                } else if (strv_const_contains(unsupported_logging_fields, ELEMENTSOF(unsupported_logging_fields), key))
                        log_warning("%s: field logging.%s is not supported by ckubelet, ignored", c->path, key);
                else
                        return config_error(c, -EINVAL, "unknown field \"logging.%s\"", key);
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
        if (streq(key, "podLogsDir"))
                return config_string(c, key, v, true, &o->pod_logs_dir);
        if (streq(key, "staticPodURL"))
                return config_string(c, key, v, false, &o->manifest_url);
        if (streq(key, "containerRuntimeEndpoint"))
                return config_string(c, key, v, false, &o->container_runtime_endpoint);
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
        if (streq(key, "address"))
                return config_string(c, key, v, false, &o->address);
        if (streq(key, "healthzBindAddress"))
                return config_string(c, key, v, false, &o->healthz_bind_address);
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
        if (streq(key, "cgroupsPerQOS"))
                return config_bool(c, key, v, &o->cgroups_per_qos);
        if (streq(key, "cgroupRoot"))
                return config_string(c, key, v, false, &o->cgroup_root);
        if (streq(key, "cgroupDriver"))
                return config_string(c, key, v, false, &o->cgroup_driver);
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
        if (streq(key, "authentication"))
                return config_object(c, key, v, config_authn_field, o);
        if (streq(key, "authorization"))
                return config_object(c, key, v, config_authz_field, o);

        if (strv_const_contains(unsupported_fields, ELEMENTSOF(unsupported_fields), key)) {
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

static int load_config_file(struct kubelet_options *o, const char *path, struct ck_error **ret_error) {
        _cleanup_free_ char *data = NULL, *dir = NULL;
        _cleanup_ck_error_ struct ck_error *yerr = NULL;
        struct config_ctx c = { .path = path, .error = ret_error };
        json_auto_t *docs = NULL;
        json_t *doc, *v;
        const char *key, *slash;
        size_t size;
        int r;

        r = read_full_file(path, KUBELET_CONFIG_MAX_SIZE, &data, &size);
        if (r == -ENOMEM)
                return r;
        if (r == -EFBIG)
                return config_error(&c, r, "config file is too large (more than %u bytes)", KUBELET_CONFIG_MAX_SIZE);
        if (r < 0)
                return config_error(&c, r, "cannot read config file: %s", strerror(-r));

        slash = strrchr(path, '/');
        dir = slash ? (slash == path ? strdup("/") : strndup(path, (size_t) (slash - path))) : strdup(".");
        if (!dir)
                return -ENOMEM;
        c.dir = dir;

        r = yaml_to_json_docs(data, size, &docs, &yerr);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return config_error(&c, -EINVAL, "%s", yerr ? ck_error_message(yerr) : "cannot parse YAML/JSON");

        if (json_array_size(docs) == 0)
                return config_error(&c, -EINVAL, "config file is empty");
        if (json_array_size(docs) > 1)
                return config_error(&c, -EINVAL, "expected one KubeletConfiguration document, found %zu",
                                    json_array_size(docs));
        doc = json_array_get(docs, 0);
        if (!json_is_object(doc))
                return config_error(&c, -EINVAL, "expected a KubeletConfiguration object, got %s", json_type_name(doc));
        r = check_type_meta(&c, doc, "apiVersion", KUBELET_CONFIG_API_VERSION);
        if (r >= 0)
                r = check_type_meta(&c, doc, "kind", KUBELET_CONFIG_KIND);
        if (r < 0)
                return r;

        json_object_foreach(doc, key, v) {
                r = config_apply_field(&c, key, v, o);
                if (r < 0)
                        return r;
        }
        return 0;
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

static int validate(const struct kubelet_options *o, struct ck_error **ret_error) {
        unsigned char addr[sizeof(struct in6_addr)];
        int r;

        if (!isempty(o->node_ip) && inet_pton(AF_INET, o->node_ip, addr) != 1 &&
            inet_pton(AF_INET6, o->node_ip, addr) != 1)
                return ck_error_set(ret_error, -EINVAL, "failed to parse node IP \"%s\"", o->node_ip);

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
        return 0;
}

static void print_version(void) {
        printf("ckubelet v%s\n", CKUBELET_VERSION);
}

int kubelet_options_parse(struct kubelet_options *o, int argc, char **argv, struct ck_error **ret_error) {
        struct kubelet_options scratch = {};
        struct parse_state st = {};
        _cleanup_free_ char *config_path = NULL;
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
        kubelet_options_done(&scratch);
        if (r < 0)
                goto fail;
        if (st.help) {
                kubelet_options_print_help();
                return 1;
        }
        if (st.version) {
                print_version();
                return 1;
        }

        /* the config file on top of the defaults, then the flags again on top of that */
        if (config_path) {
                r = load_config_file(o, config_path, ret_error);
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
        case FLAG_HEADERS:
        case FLAG_HELP:
        case FLAG_VERSION:
                break;
        }
}

void kubelet_options_print_help(void) {
        struct kubelet_options d;
        bool have_defaults = kubelet_options_init(&d) >= 0;

        int width = 0;

        for (size_t i = 0; i < ELEMENTSOF(flag_defs); i++)
                width = MAX(width, (int) (strlen(flag_defs[i].name) + strlen(strempty(flag_defs[i].type)) + 9));
        printf("ckubelet: a Kubernetes node agent (kubelet) for static pods over CRI.\n\n"
               "Usage:\n  ckubelet [flags]\n\nFlags:\n");
        for (size_t i = 0; i < ELEMENTSOF(flag_defs); i++) {
                const struct flag_def *f = &flag_defs[i];
                char def[128] = "";
                char lhs[96];

                if (f->shorthand)
                        snprintf(lhs, sizeof(lhs), "  -%c, --%s%s%s", f->shorthand, f->name, f->type ? " " : "",
                                 strempty(f->type));
                else
                        snprintf(lhs, sizeof(lhs), "      --%s%s%s", f->name, f->type ? " " : "", strempty(f->type));
                if (have_defaults)
                        default_text(&d, f, def, sizeof(def));
                printf("%-*s   %s", width, lhs, f->help);
                if (def[0])
                        printf(" (default %s)", def);
                if (f->field)
                        printf(" [config: %s]", f->field);
                printf("\n");
        }
        printf("\nThe --config file may also set podLogsDir (default \"%s\"). See docs/flags.md.\n",
               DEFAULT_POD_LOGS_DIR);
        if (have_defaults)
                kubelet_options_done(&d);
}
