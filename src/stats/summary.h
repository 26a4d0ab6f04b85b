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

struct stats_provider;

/* cri may be NULL: the summary then has the node section only and no pods. The strings of cfg are copied. */
int stats_provider_new(struct event_base *base, struct cri_client *cri, const struct stats_config *cfg,
                       struct stats_provider **ret);
/* Cancels pending requests: their callbacks run (inside this call) with -ECANCELED. CRI calls still in flight
 * complete later into nothing, so the cri_client may be freed before or after the provider. Accepts NULL;
 * returns NULL. */
struct stats_provider *stats_provider_free(struct stats_provider *p);

/* summary: a new reference passed to the callback, which must json_decref it; NULL when r < 0. */
typedef void (*stats_summary_cb)(int r, json_t *summary, void *userdata);

/* Collects a summary. Returns 0 when started: cb then runs exactly once, later on the loop, never from inside
 * this call. Returns a negative errno when nothing could be started: cb will not run. Failure of ListPodSandbox,
 * ListContainers or ListContainerStats fails the summary; a failed ImageFsInfo or ListPodSandboxStats only
 * leaves out runtime.imageFs or the pods' network/process_stats. */
int stats_summary_get(struct stats_provider *p, stats_summary_cb cb, void *userdata);
/* The same with the stats' times to the nanosecond (the JSON's metav1.Time has seconds): what /metrics/resource
 * stamps its samples with, as upstream's collector takes them from the stats (two scrapes within a second must
 * not send different values with one timestamp). */
int stats_summary_get_precise(struct stats_provider *p, stats_summary_cb cb, void *userdata);

/* Prometheus text (format 0.0.4) for /metrics/resource from a summary, as upstream's resource metrics
 * collector: node_cpu_usage_seconds_total, node_memory_working_set_bytes,
 * container_{cpu_usage_seconds_total,memory_working_set_bytes,start_time_seconds}{container,namespace,pod},
 * pod_{cpu_usage_seconds_total,memory_working_set_bytes}{namespace,pod}, resource_scrape_error and scrape_error,
 * with # HELP / # TYPE lines, families sorted by name, samples by label values, millisecond timestamps from the
 * stats' times. summary NULL (the summary failed): only the scrape error gauges, set to 1. */
int stats_resource_metrics(const json_t *summary, struct evbuffer *out);

/* ---- exposed for tests ---- */

/* Record a cumulative CPU sample of key (usage in ns at time_nsec, unix ns) and compute usageNanoCores against
 * the previous sample of the same key. The same sample seen again gives the rate computed when it was new.
 * false when there is no rate (first sample, counter reset, time not advancing). */
bool stats_provider_nano_cores(struct stats_provider *p, const char *key, uint64_t usage_nsec, int64_t time_nsec,
                               uint64_t *ret);
/* Number of entries in the CPU sample cache. */
size_t stats_provider_cache_size(struct stats_provider *p);
/* Drop cache entries not updated since before the given monotonic time. */
void stats_provider_cache_prune(struct stats_provider *p, uint64_t older_than_usec);

/* A float as Go's strconv.FormatFloat(v, 'g', -1, 64) (how Prometheus' text format writes values): the shortest
 * digits that read back as v; exponent form ("2.1594112e+07") when the decimal exponent is < -4 or >= 6;
 * "NaN", "+Inf", "-Inf". Returns buf (at least 32 bytes). */
char *stats_format_float(double v, char *buf, size_t size);
