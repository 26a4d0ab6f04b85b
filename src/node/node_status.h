/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The v1 Node the kubelet registers and the NodeStatus it reports (pkg/kubelet/nodestatus setters): capacity
 * and allocatable, addresses, nodeInfo, daemonEndpoints, images and the conditions. Pure: every input comes
 * in the struct, times included. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct ck_error;

#include "basic/time.h"
#include "stats/machine.h"

struct node_image {
        char **names; /* repo digests then repo tags, as upstream */
        uint64_t size_bytes;
};

/* an extended resource of a device plugin: its capacity and allocatable device counts */
struct node_extended_resource {
        const char *name;
        int64_t capacity, allocatable;
};

/* a runtime handler and what it supports, from the CRI Status (StatusResponse.runtime_handlers) */
#define NODE_RUNTIME_HANDLERS_MAX 64 /* kept of a Status */
struct node_runtime_handler {
        char *name; /* "" = the default handler */
        bool recursive_read_only_mounts;
        bool user_namespaces;
};

struct node_status_input {
        const char *node_name;
        const char *hostname;
        const char *node_ip;
        const struct machine_info *machine;
        const char *runtime_version; /* "containerd://1.6.20" */
        const char *kubelet_version; /* "v1.37.2" */
        int max_pods;
        uint64_t ephemeral_storage_bytes; /* capacity of the kubelet root dir's filesystem */
        const char *kube_reserved;        /* "cpu=100m,memory=256Mi" or NULL */
        const char *system_reserved;
        bool runtime_ready, network_ready;
        bool shutting_down;          /* not Ready either (the message says so) */
        const char *runtime_message; /* why not ready ("container runtime network not ready: ...") */
        const struct node_image *images;
        size_t n_images;
        int kubelet_port;
        const struct node_extended_resource *extended; /* device plugin resources (a dropped one with 0, as upstream
                                                          sets removed device plugin resources to 0) */
        size_t n_extended;
        int64_t now_usec;            /* realtime: heartbeats */
        char *const *volumes_in_use; /* the volume manager's volumesInUse (sorted strv), NULL = none */
        const json_t *previous;      /* the last status sent (lastTransitionTime is kept while a condition's
                                          status does not change), or NULL */
        bool memory_pressure, disk_pressure, pid_pressure; /* the eviction manager's node conditions */
        /* the hard eviction thresholds on memory.available and nodefs.available come off allocatable
         * (hardEvictionReservation): a quantity, or a fraction of the capacity; unset: upstream's defaults, 100Mi
         * and 10% */
        bool eviction_set;
        int64_t eviction_memory_bytes;
        float eviction_memory_fraction;
        int64_t eviction_storage_bytes;
        float eviction_storage_fraction;
        /* what the runtime said it can do in its last Status: status.runtimeHandlers, and status.features when
         * has_features (the runtime sent StatusResponse.features) */
        const struct node_runtime_handler *runtime_handlers;
        size_t n_runtime_handlers;
        bool has_features;
        bool supplemental_groups_policy;
        /* status.declaredFeatures (node_declared_features()); absent when none */
        const char *const *declared_features;
        size_t n_declared_features;
};

/* The NodeStatus object. */
int node_status_build(const struct node_status_input *in, json_t **ret);
/* The same status with the heartbeat times removed: two statuses that compare equal here need no update. */
json_t *node_status_without_heartbeats(const json_t *status);

/* whether a kubelet may set this label key on its own Node (upstream's kubeletapis.IsKubeletLabel) */
bool node_label_is_kubelet_owned(const char *key);

/* The Node to create: labels kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch (and the beta.
 * ones) plus node_labels ("k=v,k2=v2"), spec.taints from taints ("key=value:Effect,..."), and the status.
 * -EINVAL with *ret_error naming the flag for a bad label or taint, or (upstream's words) for labels in the
 * kubernetes.io / k8s.io namespaces that a kubelet may not set on its Node. */
int node_object_build(const struct node_status_input *in, const char *node_labels, const char *taints, json_t **ret,
                      struct ck_error **ret_error);

/* Allocatable: capacity minus --kube-reserved, --system-reserved and the hard eviction thresholds (by default
 * memory 100Mi, nodefs 10%), never below 0. */
void node_allocatable(const struct node_status_input *in, int64_t *ret_cpu_milli, int64_t *ret_memory_bytes,
                      int64_t *ret_storage_bytes);

/* Parse "cpu=100m,memory=256Mi" into value pairs (validated quantities); -EINVAL with a reason. */
int node_parse_reserved(const char *s, int64_t *ret_cpu_milli, int64_t *ret_memory_bytes, int64_t *ret_storage_bytes,
                        struct ck_error **ret_error);
