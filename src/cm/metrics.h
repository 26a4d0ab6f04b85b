/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The resource managers' metrics (pkg/kubelet/metrics: the CPU, memory and topology managers'): the counters the
 * kubelet keeps as the managers admit and allocate, the gauges read from the CPU manager's state when /metrics is
 * scraped (cm_metrics_fill_cpu). Plain data, rendered by the server. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/histogram.h"

struct cpumanager;

/* the labels of kubelet_container_aligned_compute_resources_{count,failure_count}: scope, boundary */
enum cm_align_scope { CM_ALIGN_SCOPE_CONTAINER, CM_ALIGN_SCOPE_POD, CM_ALIGN_SCOPE_MAX };
enum cm_align_boundary { CM_ALIGN_NUMA_NODE, CM_ALIGN_PHYSICAL_CPU, CM_ALIGN_UNCORE_CACHE, CM_ALIGN_BOUNDARY_MAX };
extern const char *const cm_align_scope_names[CM_ALIGN_SCOPE_MAX];
extern const char *const cm_align_boundary_names[CM_ALIGN_BOUNDARY_MAX];

#define CM_METRICS_MAX_NUMA 64

struct cm_metrics {
        uint64_t cpu_pinning_requests, cpu_pinning_errors;       /* kubelet_cpu_manager_pinning_*_total */
        uint64_t memory_pinning_requests, memory_pinning_errors; /* kubelet_memory_manager_pinning_*_total */
        uint64_t tm_admission_requests, tm_admission_errors;     /* kubelet_topology_manager_admission_*_total */
        struct histogram tm_admission_duration_ms;               /* ExponentialBuckets(.05, 2, 15) */
        /* a series exists once created (upstream's Add(0) at start, or its first Inc) */
        uint64_t aligned[CM_ALIGN_SCOPE_MAX][CM_ALIGN_BOUNDARY_MAX],
                aligned_failures[CM_ALIGN_SCOPE_MAX][CM_ALIGN_BOUNDARY_MAX];
        bool has_aligned[CM_ALIGN_SCOPE_MAX][CM_ALIGN_BOUNDARY_MAX],
                has_aligned_failures[CM_ALIGN_SCOPE_MAX][CM_ALIGN_BOUNDARY_MAX];
        /* gauges, filled at scrape time (cm_metrics_fill_cpu) */
        int64_t shared_pool_millicores, exclusive_cpus;
        size_t n_numa; /* kubelet_cpu_manager_allocation_per_numa: the static policy's NUMA nodes */
        int numa_ids[CM_METRICS_MAX_NUMA], numa_cpus[CM_METRICS_MAX_NUMA];
};

/* the histogram's buckets; the topology manager's failure series (NewManager's Add(0)) */
void cm_metrics_init(struct cm_metrics *m);
/* the static policy's series (initializeMetrics) */
void cm_metrics_init_cpu_static(struct cm_metrics *m);
void cm_metrics_aligned(struct cm_metrics *m, enum cm_align_scope s, enum cm_align_boundary b, uint64_t n);
void cm_metrics_aligned_failure(struct cm_metrics *m, enum cm_align_scope s, enum cm_align_boundary b);
/* the gauges from the CPU manager's state (none under the none policy: 0, no NUMA series) */
void cm_metrics_fill_cpu(struct cm_metrics *m, const struct cpumanager *cpus);
