/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet Summary API (/stats/summary, stats/v1alpha1 JSON) and the resource metrics derived from it
 * (/metrics/resource, what metrics-server scrapes).
 *
 * Node stats come from the host (root cgroup, /proc/net/dev, statvfs of the kubelet root dir, /proc); pod and
 * container stats from the runtime over CRI: ListPodSandbox (READY sandboxes), ListContainers (RUNNING ones),
 * ListContainerStats, ListPodSandboxStats (pod network and process count; optional, retried 5 minutes after a
 * failure) and ImageFsInfo (optional). Without sandbox stats the pod network is read from the network namespace of
 * the sandbox's process (/proc/<pid>/net/dev; the pid from PodSandboxStatus verbose info, asked once per sandbox).
 * Pod cpu/memory are the sums of the pod's running containers; ephemeral-storage sums their writable layers and
 * log directories (<pod_logs_dir>/<namespace>_<name>_<uid>/<container>/).
 *
 * usageNanoCores: the runtime's value when it reports one for a container; otherwise (and for pods, the node and
 * the system containers) computed against the previous sample of the same object (container ID, "pod/<uid>",
 * "node", ...) kept in the provider; the first sample of an object has none. */

#include <event2/buffer.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"
#include "cri/cri.h"

struct stats_volumes;

/* A pod volume measured by the volume manager (the Summary API's VolumeStats). */
struct stats_volume {
        const char *name;                     /* the pod's volume name */
        const char *pvc_namespace, *pvc_name; /* pvcRef, NULL when not a PersistentVolumeClaim */
        uint64_t time_usec;                   /* realtime */
        int64_t available_bytes, capacity_bytes, used_bytes;
        int64_t inodes_free, inodes, inodes_used;
};

struct stats_config {
        /* the pod's volumes measured elsewhere (the volume manager), borrowed until the next call; NULL: none */
        size_t (*pod_volumes)(void *userdata, const char *pod_uid, const struct stats_volume **ret);
        void *pod_volumes_userdata;
        const char *node_name;
        const char *root_dir;     /* --root-dir: node fs stats (statvfs), pod ephemeral-storage capacity */
        const char *pod_logs_dir; /* podLogsDir: <dir>/<namespace>_<name>_<uid>/<container>/ holds the logs */
        const char *host_root;    /* prefix for /proc, /sys and cgroupfs paths; "" or NULL: the real host */
        const char *pods_cgroup;  /* the cgroup of all pods ("/kubepods", cgroupfs form) for the "pods" system
                                      container (its limit gives availableBytes); NULL: the pods' sum */
        const struct stats_volumes *volumes; /* the pods' volume usage (volume stats); NULL: none */
};

/* ---- the Summary (stats/v1alpha1), typed ----
 *
 * Built once per request by the provider from the runtime's answers and the host's files; read as it is by the
 * eviction manager and /metrics/resource, turned into JSON only by stats_summary_to_json (/stats/summary).
 * Absent values: upstream's optional fields (*uint64 pointers, pointers to structs) that it leaves out of the JSON
 * are a `set`/`present` flag beside the value here; a field without one is always in the JSON. Times are unix
 * nanoseconds (never 0: a stat the runtime gave no time for has the build's time). Strings are owned. */

struct stats_u64 {
        bool set; /* false: absent (upstream's nil pointer, omitted from the JSON) */
        uint64_t v;
};

struct stats_psi_data {
        uint64_t total;
        double avg10, avg60, avg300;
};
struct stats_psi {
        bool present;
        struct stats_psi_data full, some;
};

struct stats_cpu {
        bool present;
        int64_t time_nsec;
        struct stats_u64 usage_nano_cores, usage_core_nano_seconds;
        struct stats_psi psi; /* cgroup v2 */
};
struct stats_memory {
        bool present;
        int64_t time_nsec;
        struct stats_u64 available_bytes, usage_bytes, working_set_bytes, rss_bytes, page_faults, major_page_faults;
        struct stats_psi psi;
};
/* IOStats: only its PSI (present when psi is) */
struct stats_io {
        struct stats_psi psi;
        int64_t time_nsec;
};
struct stats_swap {
        bool present;
        int64_t time_nsec;
        struct stats_u64 swap_available_bytes;
        uint64_t swap_usage_bytes;
};
struct stats_fs {
        bool present;
        int64_t time_nsec;
        struct stats_u64 available_bytes, capacity_bytes, used_bytes, inodes_free, inodes, inodes_used;
};
struct stats_interface {
        char *name; /* NULL: left out (the node's network without a default interface) */
        struct stats_u64 rx_bytes, rx_errors, tx_bytes, tx_errors;
};
struct stats_network {
        bool present;
        int64_t time_nsec;
        struct stats_interface def; /* the default interface's, inline in the JSON */
        struct stats_interface *interfaces;
        size_t n_interfaces; /* 0: "interfaces" left out */
};
struct stats_rlimit {
        bool present;
        int64_t time_nsec;
        int64_t maxpid, curproc;
};
struct stats_volume_summary {
        char *name;
        char *pvc_name, *pvc_namespace; /* pvcRef; pvc_name NULL: none */
        struct stats_fs fs;
};
struct stats_container_summary {
        char *name;
        int64_t start_nsec;
        struct stats_cpu cpu;
        struct stats_memory memory;
        struct stats_io io;
        struct stats_swap swap;
        struct stats_fs rootfs, logs;
};
struct stats_pod_summary {
        char *name, *namespace_, *uid; /* podRef */
        int64_t start_nsec;
        struct stats_container_summary *containers; /* by name, then creation */
        size_t n_containers;
        struct stats_cpu cpu;       /* the sum of its running containers */
        struct stats_memory memory; /* the same */
        struct stats_io io;
        struct stats_swap swap;
        struct stats_network network;
        struct stats_volume_summary *volumes;
        size_t n_volumes;                  /* 0: "volume" left out */
        struct stats_fs ephemeral_storage; /* always present */
        struct stats_u64 process_count;    /* process_stats; absent: left out */
};
struct stats_system_container {
        char *name; /* "kubelet", "pods" */
        int64_t start_nsec;
        struct stats_cpu cpu;
        struct stats_memory memory;
};
struct stats_node_summary {
        char *node_name;
        int64_t start_nsec;
        struct stats_system_container *system_containers;
        size_t n_system_containers;
        struct stats_cpu cpu;
        struct stats_memory memory;
        struct stats_io io;
        struct stats_swap swap;
        struct stats_network network;
        struct stats_fs fs;
        struct stats_fs image_fs; /* runtime.imageFs; not present: "runtime" left out */
        struct stats_rlimit rlimit;
};
struct stats_summary {
        struct stats_node_summary node;
        struct stats_pod_summary *pods; /* by namespace, name, uid */
        size_t n_pods;
};

/* Accepts NULL; returns NULL. */
struct stats_summary *stats_summary_free(struct stats_summary *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct stats_summary *, stats_summary_free)
/* the "pods" system container (the pods' cgroup, allocatable memory), NULL without one */
const struct stats_system_container *stats_summary_pods_container(const struct stats_summary *s);

/* The stats/v1alpha1 JSON document of /stats/summary: field names and omissions as upstream, times as metav1.Time
 * (RFC 3339, seconds). */
int stats_summary_to_json(const struct stats_summary *s, json_t **ret);

struct stats_provider;

/* cri may be NULL: the summary then has the node section only and no pods. The strings of cfg are copied. */
int stats_provider_new(struct event_base *base, struct cri_client *cri, const struct stats_config *cfg,
                       struct stats_provider **ret);
/* Cancels pending requests: their callbacks run (inside this call) with -ECANCELED. CRI calls still in flight
 * complete later into nothing, so the cri_client may be freed before or after the provider. Accepts NULL;
 * returns NULL. */
struct stats_provider *stats_provider_free(struct stats_provider *p);

/* summary: owned by the callback (stats_summary_free); NULL when r < 0. */
typedef void (*stats_summary_cb)(int r, struct stats_summary *summary, void *userdata);

/* Collects a summary. Returns 0 when started: cb then runs exactly once, later on the loop, never from inside
 * this call. Returns a negative errno when nothing could be started: cb will not run. Failure of ListPodSandbox,
 * ListContainers or ListContainerStats fails the summary; a failed ImageFsInfo or ListPodSandboxStats only
 * leaves out runtime.imageFs or the pods' network/process_stats. */
int stats_summary_get(struct stats_provider *p, stats_summary_cb cb, void *userdata);

/* Prometheus text (format 0.0.4) for /metrics/resource from a summary, as upstream's resource metrics
 * collector: node_cpu_usage_seconds_total, node_memory_working_set_bytes,
 * container_{cpu_usage_seconds_total,memory_working_set_bytes,start_time_seconds}{container,namespace,pod},
 * pod_{cpu_usage_seconds_total,memory_working_set_bytes}{namespace,pod}, resource_scrape_error and scrape_error,
 * with # HELP / # TYPE lines, families sorted by name, samples by label values, millisecond timestamps from the
 * stats' times (to the nanosecond, as upstream's collector takes them: two scrapes within a second must not send
 * different values with one timestamp). summary NULL (the summary failed): only the scrape error gauges, set to 1. */
int stats_resource_metrics(const struct stats_summary *summary, struct evbuffer *out);

/* ---- exposed for tests ---- */

/* Record a cumulative CPU sample of key (usage in ns at time_nsec, unix ns) and compute usageNanoCores against
 * the previous sample of the same key. The same sample seen again gives the rate computed when it was new.
 * false when there is no rate (first sample, counter reset, time not advancing). */
bool stats_provider_nano_cores(struct stats_provider *p, const char *key, uint64_t usage_nsec, int64_t time_nsec,
                               uint64_t *ret);
/* Drop cache entries not updated since before the given monotonic time. */
void stats_provider_cache_prune(struct stats_provider *p, uint64_t older_than_usec);

/* A float as Go's strconv.FormatFloat(v, 'g', -1, 64) (how Prometheus' text format writes values): the shortest
 * digits that read back as v; exponent form ("2.1594112e+07") when the decimal exponent is < -4 or >= 6;
 * "NaN", "+Inf", "-Inf". Returns buf (at least 32 bytes). */
char *stats_format_float(double v, char *buf, size_t size);
