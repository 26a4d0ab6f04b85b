/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Container cgroup settings, as upstream (pkg/kubelet/qos/policy.go, kuberuntime_container_linux.go
 * calculateLinuxResources). Pure functions. */

#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "apis/qos.h"

#define QOS_GUARANTEED_OOM_SCORE_ADJ (-997)
#define QOS_BEST_EFFORT_OOM_SCORE_ADJ 1000
#define CPU_MIN_SHARES 2
#define CPU_MAX_SHARES 262144
#define CPU_QUOTA_PERIOD_USEC 100000
#define CPU_MIN_QUOTA_USEC 1000

struct kr_linux_resources {
        int64_t cpu_period;
        int64_t cpu_quota;
        int64_t cpu_shares;
        int64_t memory_limit_in_bytes;
        int64_t oom_score_adj;
};

int64_t kr_milli_cpu_to_shares(int64_t milli);
int64_t kr_milli_cpu_to_quota(int64_t milli, int64_t period);

/* GetContainerOOMScoreAdjust: node_memory_bytes is the node's memory capacity. */
int64_t kr_container_oom_score_adj(const struct pod *pod, const struct container *c, uint64_t node_memory_bytes);

void kr_container_resources(const struct pod *pod, const struct container *c, uint64_t node_memory_bytes,
                            struct kr_linux_resources *ret);

/* NodeSwap (kuberuntime_container_linux.go GetContainerSwapBehavior, calcSwapForBurstablePods): the container's
 * memory.swap.max on cgroup v2. limited_swap: memorySwap.swapBehavior LimitedSwap; then a Burstable pod's container
 * that requests memory (request or limit set) below its limit, in a pod that is not critical, gets
 * request / node_memory_bytes * swap_capacity_bytes (truncated; 0 when the request exceeds the node's memory or that
 * is unknown). Everything else (NoSwap) gets 0. */
int64_t kr_container_swap_limit(const struct pod *pod, const struct container *c, bool limited_swap, bool critical,
                                uint64_t node_memory_bytes, uint64_t swap_capacity_bytes);
