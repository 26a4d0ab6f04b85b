/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The v1 Pod as ckubelet understands it: the subset of core/v1 that the kubelet acts on, parsed into C
 * structs (see pod_decode.c), validated as the apiserver does (pod_validate.c) and defaulted
 * (pod_defaults.c). Field names follow the Go types in k8s.io/api/core/v1. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/strmap.h"

enum restart_policy {
        RESTART_POLICY_ALWAYS,
        RESTART_POLICY_ON_FAILURE,
        RESTART_POLICY_NEVER,
};

enum pull_policy {
        PULL_POLICY_UNSET,
        PULL_POLICY_ALWAYS,
        PULL_POLICY_IF_NOT_PRESENT,
        PULL_POLICY_NEVER,
};

enum termination_message_policy {
        TERMINATION_MESSAGE_READ_FILE,
        TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR,
};

/* A resource.Quantity: the original string plus its value. "value" is rounded up to an integer (as
 * Quantity.Value()), "milli" is value*1000 rounded up (as Quantity.MilliValue()); both saturate at
 * INT64_MAX. */
struct quantity {
        char *str;
        int64_t value;
        int64_t milli;
};

struct resource_list {
        size_t n;
        char **names; /* "cpu", "memory", "ephemeral-storage", ... */
        struct quantity *values;
};

struct resource_requirements {
        struct resource_list limits;
        struct resource_list requests;
};

/* An IntOrString (probe ports, targetPort). */
struct int_or_string {
        bool is_string;
        int32_t int_val;
        char *str_val;
};

/* env[].valueFrom (EnvVarSource); decoded and validated in pod_env.c */
struct object_field_selector {
        char *api_version; /* NULL = "v1" */
        char *field_path;
};

struct resource_field_selector {
        char *container_name; /* NULL = this container */
        char *resource;       /* "limits.cpu", ... */
        bool has_divisor;
        struct quantity divisor;
};

struct key_selector { /* configMapKeyRef, secretKeyRef */
        char *name;
        char *key;
        bool optional;
};

struct file_key_selector { /* fileKeyRef (EnvFiles): a key of an env file in an emptyDir of the pod */
        char *volume_name;
        char *path; /* inside the volume */
        char *key;
        bool optional;
};

struct env_var_source {
        struct object_field_selector *field_ref;
        struct resource_field_selector *resource_field_ref;
        struct key_selector *config_map_key_ref;
        struct key_selector *secret_key_ref;
        struct file_key_selector *file_key_ref;
};

struct env_var {
        char *name;
        char *value;                       /* may be NULL when only valueFrom is set */
        struct env_var_source *value_from; /* NULL when not set */
};

struct env_ref { /* envFrom[].configMapRef, envFrom[].secretRef */
        char *name;
        bool optional;
};

struct env_from_source {
        char *prefix;
        struct env_ref *config_map_ref;
        struct env_ref *secret_ref;
};

/* securityContext (pod and container level); decoded and validated in pod_security.c. A has_* flag says the
 * field was given (Go's *bool / *int64). */
struct seccomp_profile {
        char *type;              /* RuntimeDefault, Unconfined, Localhost */
        char *localhost_profile; /* relative to <root-dir>/seccomp */
};

/* securityContext.appArmorProfile (pod and container level) */
struct apparmor_profile {
        char *type;              /* RuntimeDefault, Unconfined, Localhost */
        char *localhost_profile; /* a profile loaded on the node, NULL when not given */
};

struct security_context {
        char **capabilities_add; /* strv or NULL */
        char **capabilities_drop;
        bool has_privileged, privileged;
        bool has_run_as_user;
        int64_t run_as_user;
        bool has_run_as_group;
        int64_t run_as_group;
        bool has_run_as_non_root, run_as_non_root;
        bool has_read_only_root_filesystem, read_only_root_filesystem;
        bool has_allow_privilege_escalation, allow_privilege_escalation;
        char *proc_mount; /* Default (NULL = Default), Unmasked */
        struct seccomp_profile *seccomp_profile;
        struct apparmor_profile *apparmor_profile;
};

/* spec.dnsConfig (pod_dns.c) */
struct pod_dns_option {
        char *name;
        char *value; /* NULL: no value */
};

struct pod_dns_config {
        char **nameservers; /* strv or NULL */
        char **searches;
        struct pod_dns_option *options;
        size_t n_options;
};

struct sysctl {
        char *name;
        char *value;
};

struct pod_security_context {
        bool has_run_as_user;
        int64_t run_as_user;
        bool has_run_as_group;
        int64_t run_as_group;
        bool has_run_as_non_root, run_as_non_root;
        int64_t *supplemental_groups;
        size_t n_supplemental_groups;
        bool has_fs_group;
        int64_t fs_group;
        char *fs_group_change_policy;     /* "Always" / "OnRootMismatch", NULL = unset (Always) */
        char *supplemental_groups_policy; /* "Merge" / "Strict", NULL = unset (Merge) */
        struct sysctl *sysctls;
        size_t n_sysctls;
        struct seccomp_profile *seccomp_profile;
        struct apparmor_profile *apparmor_profile;
};

struct container_port {
        char *name; /* optional IANA_SVC_NAME */
        int32_t container_port;
        int32_t host_port; /* 0 = unset */
        char *protocol;    /* TCP (default), UDP, SCTP */
        char *host_ip;
};

enum probe_handler {
        PROBE_HANDLER_NONE,
        PROBE_HANDLER_EXEC,
        PROBE_HANDLER_HTTP_GET,
        PROBE_HANDLER_TCP_SOCKET,
        PROBE_HANDLER_GRPC,
};

struct http_header {
        char *name;
        char *value;
};

/* A v1 Probe (liveness, readiness or startup). */
struct probe {
        enum probe_handler handler; /* the first handler given */
        unsigned n_handlers;        /* how many were given: validation wants exactly one */
        char **exec_command;        /* exec.command */
        char *host;                 /* httpGet.host / tcpSocket.host, NULL = the pod IP */
        struct int_or_string port;  /* httpGet.port / tcpSocket.port */
        char *path;                 /* httpGet.path, default "/" */
        char *scheme;               /* httpGet.scheme, default "HTTP" */
        struct http_header *http_headers;
        size_t n_http_headers;
        int32_t grpc_port;  /* grpc.port */
        char *grpc_service; /* grpc.service, NULL = "" */
        int32_t initial_delay_seconds;
        int32_t timeout_seconds;   /* default 1 */
        int32_t period_seconds;    /* default 10 */
        int32_t success_threshold; /* default 1 */
        int32_t failure_threshold; /* default 3 */
        bool has_termination_grace_period;
        int64_t termination_grace_period_seconds;
};

/* A container lifecycle hook (LifecycleHandler); decoded and validated in pod_lifecycle.c. The exec, httpGet
 * and tcpSocket fields live in an embedded struct probe (only its handler fields are used) so that the probe
 * handlers can run them. */
enum lifecycle_handler_type {
        LIFECYCLE_HANDLER_NONE,
        LIFECYCLE_HANDLER_EXEC,
        LIFECYCLE_HANDLER_HTTP_GET,
        LIFECYCLE_HANDLER_TCP_SOCKET,
        LIFECYCLE_HANDLER_SLEEP,
};

struct lifecycle_handler {
        enum lifecycle_handler_type type; /* the first handler given */
        unsigned n_handlers;              /* validation wants exactly one */
        unsigned given;                   /* bit 1 << type for each handler given */
        struct probe action;              /* exec_command, host, port, path, scheme, http_headers */
        int64_t sleep_seconds;            /* sleep.seconds */
};

/* resizePolicy[]: how a change of one resource is applied (in-place pod resize) */
struct container_resize_policy {
        char *resource_name;  /* cpu, memory */
        char *restart_policy; /* NotRequired (default), RestartContainer */
};

/* restartPolicyRules[] (ContainerRestartRules): the first rule whose exitCodes match a container's exit decides,
 * else its restartPolicy */
struct container_restart_rule {
        char *action; /* Restart */
        bool has_exit_codes;
        char *exit_codes_operator; /* In, NotIn */
        int32_t *exit_codes;
        size_t n_exit_codes;
};

struct container {
        char *name;
        char *image;
        char **command; /* strv, may be NULL */
        char **args;    /* strv, may be NULL */
        char *working_dir;
        struct env_var *env;
        size_t n_env;
        struct env_from_source *env_from;
        size_t n_env_from;
        struct container_port *ports;
        size_t n_ports;
        enum pull_policy image_pull_policy;
        struct resource_requirements resources;
        char *termination_message_path; /* default /dev/termination-log */
        enum termination_message_policy termination_message_policy;
        bool stdin_, stdin_once, tty;
        struct probe *liveness_probe, *readiness_probe, *startup_probe; /* NULL when not set */
        struct lifecycle_handler *post_start, *pre_stop; /* lifecycle.postStart / preStop, NULL when not set */
        char *stop_signal;                               /* lifecycle.stopSignal (KEP-4960), NULL when not set */
        char *restart_policy; /* Always (on an init container: a sidecar), OnFailure, Never; NULL when not set */
        struct container_restart_rule *restart_rules; /* restartPolicyRules */
        size_t n_restart_rules;
        struct container_resize_policy *resize_policy;
        size_t n_resize_policy;
        char *target_container_name;               /* ephemeral containers: whose process namespace to join */
        struct security_context *security_context; /* NULL when not set */
        json_t *raw; /* the container object as decoded (owned reference), for hashing: exactly as given in
                              * the document, before defaults (defaults are a function of it, so a hash over it
                              * changes exactly when the container's spec does) */
};

struct pod_volumes;
/* An init container with restartPolicy Always: started in order, kept running beside the app containers. */
static inline bool container_is_sidecar(const struct container *c) {
        return c->restart_policy && streq(c->restart_policy, "Always");
}

struct pod_spec {
        struct container *containers;
        size_t n_containers;
        struct container *init_containers;
        size_t n_init_containers;
        struct container *ephemeral_containers; /* spec.ephemeralContainers (kubectl debug) */
        size_t n_ephemeral_containers;
        enum restart_policy restart_policy;
        int64_t termination_grace_period_seconds; /* default 30 */
        bool has_active_deadline;
        int64_t active_deadline_seconds;
        bool host_network, host_pid, host_ipc;
        char *node_name;
        char *hostname;
        char *hostname_override; /* hostnameOverride (beta on since v1.35): the pod's hostname, no domain */
        bool has_hostname_override;
        char *subdomain;
        char *service_account_name;
        char *dns_policy;                              /* default ClusterFirst */
        struct pod_security_context *security_context; /* NULL when not set */
        struct pod_dns_config *dns_config;             /* NULL when not set */
        char *scheduler_name;
        int32_t priority;
        bool share_process_namespace;
        bool has_host_users, host_users; /* spec.hostUsers: false asks for a user namespace */
        bool set_hostname_as_fqdn;
        bool enable_service_links; /* default true */
        char *runtime_class_name;
        char *os_name;                 /* spec.os.name (linux, windows), NULL when not set */
        struct resource_list overhead; /* set by the apiserver from the RuntimeClass */
        /* spec.resources: pod-level requests and limits (PodLevelResources, beta on since v1.34); resources_has_claims when
         * spec.resources.claims is given (forbidden at pod level) */
        struct resource_requirements resources;
        bool has_resources, resources_has_claims;
        char **readiness_gates; /* the readinessGates' conditionTypes (strv, NULL = none) */
        struct pod_volumes
                *volumes; /* spec.volumes, volumeMounts, hostAliases (pod_volumes.h); never NULL once decoded */
        /* set by pod_decode when the document gives terminationGracePeriodSeconds (0 is a valid value), and by
         * pod_apply_defaults_checked after defaulting it to 30 */
        bool termination_grace_period_set;
};

struct pod {
        unsigned n_ref; /* pods are immutable once delivered by a source and shared by reference */

        /* metadata */
        char *name;
        char *namespace_;
        char *uid;
        char *resource_version;
        char *generate_name;
        struct strmap labels;
        struct strmap annotations;
        int64_t creation_timestamp_nsec; /* 0 = unset */
        bool has_deletion_timestamp;
        int64_t deletion_timestamp_nsec;
        int64_t deletion_grace_period_seconds;

        struct pod_spec spec;

        /* the document the pod came from (owned reference): hashing, mirror pods, API output. A private copy made
         * by pod_decode, as given: defaults and static pod naming are not written back into it. */
        json_t *raw;
};

/* An error in one field of one pod: "spec.containers[0].ports[1].containerPort: Invalid value: 0: must be
 * between 1 and 65535, inclusive" as the apiserver words it. */
struct field_error {
        char *field;  /* "spec.containers[0].name" */
        char *detail; /* "Required value", "Invalid value: \"Foo\": a lowercase RFC 1123 label must ..." */
};

struct field_errors {
        size_t n;
        struct field_error *items;
};

void field_errors_done(struct field_errors *e);
int field_errors_add(struct field_errors *e, const char *field, const char *fmt, ...) _printf_(3, 4);
/* "field: detail; field: detail" — caller frees */
char *field_errors_to_string(const struct field_errors *e);

struct pod *pod_new(void);           /* zeroed, n_ref = 1 */
struct pod *pod_ref(struct pod *p);  /* accepts NULL */
struct pod *pod_free(struct pod *p); /* drops one reference, frees at zero; accepts NULL, returns NULL */
DEFINE_TRIVIAL_CLEANUP_FUNC(struct pod *, pod_free)
#define _cleanup_pod_free_ _cleanup_(pod_freep)
void lifecycle_handler_free(struct lifecycle_handler *h); /* accepts NULL */
DEFINE_TRIVIAL_CLEANUP_FUNC(struct lifecycle_handler *, lifecycle_handler_free)
/* Decode one LifecycleHandler object (as kept in the preStop annotation) and apply its defaults: -EINVAL
 * when it does not decode, or has not exactly one handler. */
int lifecycle_handler_from_json(json_t *obj, struct lifecycle_handler **ret);
/* A stop signal's name (lifecycle.stopSignal: "SIGUSR1", "SIGRTMIN+1", "SIGRTMAX-2") as the CRI's Signal enum
 * numbers it (1..65), 0 when it names none; and back, NULL for 0 (SIGNAL_RUNTIME_DEFAULT) or an unknown number. */
int stop_signal_number(const char *name);
const char *stop_signal_name(int number);

/* Decode one v1 Pod object. Type errors (a string where a list is expected, unknown restartPolicy, ...) go
 * into errs and make it return -EINVAL; on success *ret holds the pod (defaults not yet applied). */
int pod_decode(json_t *obj, struct pod **ret, struct field_errors *errs);

/* Apply the apiserver's defaults (SetDefaults_Pod & co.) in place: 0, or -ENOMEM (the pod is then partly
 * defaulted). */
int pod_apply_defaults_checked(struct pod *p);
/* The pull policy SetDefaults_Container gives an image: Always for ":latest" or no tag (and no digest),
 * IfNotPresent otherwise (and for a name that does not parse as an image reference). */
enum pull_policy image_default_pull_policy(const char *image);

/* Validate as the apiserver does (ValidatePodCreate subset). Returns 0 or -EINVAL with errs filled. */
int pod_validate(const struct pod *p, struct field_errors *errs);

/* The fields of the pod present in its document that ckubelet accepts but does not act on as the upstream kubelet
 * does (pod-level resources, SELinux options, fsGroup's volume ownership, ...), each as "<field path> (<why>)", in
 * document order; NULL when none. For the kubelet to say once. The fields acted on when one of the feature gates
 * named in gates_on (strv, may be NULL) is on are left out (lifecycle.stopSignal with ContainerStopSignals). */
int pod_unsupported_fields_gated(const struct pod *pod, char *const *gates_on, char ***ret);

/* Whether uid can name the pod's directories (<root-dir>/pods/<uid>, /var/log/pods/<ns>_<name>_<uid>): 1 to 128
 * characters out of [A-Za-z0-9._-], the first alphanumeric (UUIDs and static pods' md5 hex are). The apiserver
 * does not check UIDs; the kubelet must, since it joins them to paths. */
bool pod_uid_is_valid(const char *uid);
#define POD_UID_INVALID_MSG                                                                                         \
        "a pod UID must consist of alphanumeric characters, '-', '_' or '.', start with an alphanumeric character " \
        "and be at most 128 characters long"

/* The pod's hostname (GeneratePodHostNameAndDomain): spec.hostname or its name, truncated to 63 characters,
 * without trailing '-' or '.'. NULL on OOM. */
char *pod_hostname(const struct pod *pod);
/* ContainerShouldRestart (ContainerRestartRules): would an instance of c that exited with exit_code be started
 * again? The first of its restartPolicyRules whose exit codes match decides (action Restart), else its own
 * restartPolicy, else the pod's (Always; OnFailure: a non-zero exit; Never). A sidecar always restarts. */
bool container_should_restart_on_exit(const struct pod_spec *spec, const struct container *c, int32_t exit_code);
/* Can any container of the pod be restarted after it exited? (the pod's restartPolicy is not Never, or a
 * container has its own policy other than Never, or restart rules) */
bool pod_may_restart_containers(const struct pod_spec *spec);

/* A container, init container or ephemeral container of the pod by name; NULL if none. */
const struct container *pod_find_container(const struct pod *pod, const char *name);

/* Quantity parsing (resource.ParseQuantity). */
int quantity_parse(const char *s, struct quantity *ret);
void quantity_done(struct quantity *q);
/* Compare the exact values (not the rounded value/milli): <0, 0, >0. Unparsable strings compare as 0. */
int quantity_cmp(const struct quantity *a, const struct quantity *b);
/* The canonical form, as Quantity.String() prints it ("0.5" -> "500m", "2000" -> "2k", "1.5Gi" -> "1536Mi").
 * Caller frees; NULL on OOM or when q->str does not parse. */
char *quantity_canonical(const struct quantity *q);
/* resource.NewQuantity(value, BinarySI or DecimalSI).String(): "100Mi", "98632Ki", "1025", "1k". Caller frees. */
char *quantity_format_int(int64_t value, bool binary_si);

/* Look up a value in a resource list; NULL if absent. */
const struct quantity *resource_list_get(const struct resource_list *l, const char *name);
/* helper.IsExtendedResourceName: a domain-prefixed name outside kubernetes.io ("example.com/gpu") */
bool resource_is_extended(const char *name);

/* Name validators (k8s.io/apimachinery/pkg/util/validation); return NULL if valid or a static message. */
const char *validate_qualified_name(const char *s); /* label and annotation keys */
const char *validate_label_value(const char *s);
const char *validate_relaxed_env_var_name(const char *s);
/* A set of pods, owned. */
struct pod_set {
        size_t n;
        struct pod **pods;
};
void pod_set_done(struct pod_set *s);              /* frees the pods too; accepts NULL */
int pod_set_add(struct pod_set *s, struct pod *p); /* takes ownership, even on failure */
