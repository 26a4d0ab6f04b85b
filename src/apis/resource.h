/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A container's resource values as the downward API exposes them (upstream pkg/api/v1/resource
 * ExtractContainerResourceValue, MergeContainerResourceLimits): the one implementation behind the
 * environment's and the downwardAPI volume's resourceFieldRef. Pure. */

#include <stdint.h>

#include "apis/pod.h"

/* What stands in for a limit the container does not set: the node's allocatable. */
struct resource_allocatable {
        int64_t cpu_milli;
        int64_t memory;            /* bytes */
        int64_t ephemeral_storage; /* bytes */
};

/* "limits.cpu", "requests.memory", "limits.ephemeral-storage", "limits.hugepages-2Mi", ... of c, divided by
 * divisor rounding up (NULL or zero: 1 core, 1 byte); an unset cpu, memory or ephemeral-storage limit is
 * alloc's; an unset request or hugepages limit is 0. -EINVAL for another resource. Caller frees *ret. */
int resource_container_value(const struct container *c, const char *resource, const struct quantity *divisor,
                             const struct resource_allocatable *alloc, char **ret);

/* ---- pod-level resources (PodLevelResources, k8s.io/component-helpers/resource) ----
 * Values are in millicores for "cpu" and in units (bytes) for every other resource. */

/* IsSupportedPodLevelResource: cpu, memory, hugepages-<size> */
bool resource_is_pod_level_supported(const char *name);
/* IsPodLevelResourcesSet / IsPodLevelRequestsSet / IsPodLevelLimitsSet: a supported resource in
 * spec.resources.requests or .limits */
bool pod_level_resources_set(const struct pod *pod);
bool pod_level_requests_set(const struct pod *pod);
/* AggregateContainerRequests / AggregateContainerLimits for one resource: the app containers and the sidecars
 * summed, at least each init container with the sidecars started before it; a container's request defaults to its
 * limit (as the apiserver defaults it). *ret_found (may be NULL): some container sets it. */
int64_t resource_aggregate_containers(const struct pod *pod, const char *name, bool limits, bool *ret_found);
/* PodRequests: the aggregate, replaced by the pod-level request when set; then the overhead added. */
int64_t resource_pod_requests(const struct pod *pod, const char *name);
/* PodLimits: the aggregate, replaced by the pod-level limit when pod-level resources are set; then the overhead added
 * to a non-zero limit. 0: no limit. */
int64_t resource_pod_limits(const struct pod *pod, const char *name);
/* GetResourceRequestQuantity (the eviction manager's ranking): with pod-level resources, only their request; then
 * the overhead added to a non-zero total. */
int64_t resource_pod_request_for_eviction(const struct pod *pod, const char *name);

/* ---- huge pages ---- */

/* HugePageSizeFromResourceName: the page size in bytes of "hugepages-<quantity>" ("hugepages-2Mi": 2097152);
 * -EINVAL for another name or a size that is not a positive whole number of bytes */
int resource_hugepage_size(const char *name, uint64_t *ret_bytes);
/* libcontainer's name of a page size, as the hugetlb controller's files and the CRI's HugepageLimit.page_size spell
 * it: "2MB", "1GB", "64KB" (the bytes divided by 1024 while at least 1024, with B, KB, MB, GB, TB, PB) */
#define RESOURCE_HUGEPAGE_UNIT_MAX 32
void resource_hugepage_unit(uint64_t bytes, char buf[static RESOURCE_HUGEPAGE_UNIT_MAX]);
/* HugePageLimits: the pod's huge pages in bytes for a page size, from its requests (resource_pod_requests) summed
 * over every resource name of that size */
int64_t resource_pod_hugepages(const struct pod *pod, uint64_t page_size);
/* The container's hugepage limit of a page size (GetHugepageLimitsFromResources): its own limit of that size, else
 * the pod-level one when pod-level resources are set, else 0 */
int64_t resource_container_hugepages(const struct pod *pod, const struct container *c, uint64_t page_size);
