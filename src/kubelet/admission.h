/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Pod admission (pkg/kubelet/lifecycle/predicate.go, the scheduler's NodeResourcesFit as the kubelet runs it):
 * a new pod must fit next to the pods already admitted: the pod count under --max-pods, the summed cpu and
 * memory requests under allocatable. A pod that does not fit is rejected for good: phase Failed, reason
 * "OutOf<resource>", message "Pod was rejected: Node didn't have enough resource: ...". Pure. */

#include <stddef.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/error.h"

/* an extended resource (a device plugin's) the node has, and what admission compares requests with */
struct admission_extended {
        const char *name;
        int64_t allocatable;
};

struct admission_node {
        int max_pods;                  /* 0 = no limit */
        int64_t cpu_milli;             /* allocatable */
        int64_t memory_bytes;          /* allocatable */
        char **allowed_unsafe_sysctls; /* --allowed-unsafe-sysctls (strv) */
        /* extended resources the node has; requests for others are ignored (removeMissingExtendedResources) */
        const struct admission_extended *extended;
        size_t n_extended;
        bool apparmor_enabled; /* the host has AppArmor on */
        /* the runtime honours supplementalGroupsPolicy (node.status.features.supplementalGroupsPolicy) */
        bool supplemental_groups_policy;
};

/* What the pod asks for, as the scheduler counts it: max(sum of app containers, largest init container). */
void kubelet_pod_requests(const struct pod *p, int64_t *ret_cpu_milli, int64_t *ret_memory_bytes);

/* What the pod asks for of a resource that only has whole units (an extended resource): requests default to
 * limits; the app containers' sum, at least the largest init container's. */
int64_t pod_request_units(const struct pod *p, const char *resource);

/* 0 when p fits next to the n admitted pods; -ENOSPC with *ret_error, its reason ("SysctlForbidden" for a sysctl that is
 * neither safe nor allowed, "PodOSSelectorNodeLabelDoesNotMatch" or "PodOSNotSupported" for another OS,
 * "SupplementalGroupsPolicyNotSupported" for supplementalGroupsPolicy Strict on a runtime without it, "AppArmor"
 * for an AppArmor profile on a host without AppArmor, "OutOfpods", "OutOfcpu", "OutOfmemory", "OutOf<extended
 * resource>", ck_error_reason()) and message, when it does not; -ENOMEM. */
int kubelet_admit(const struct pod *p, const struct pod *const *admitted, size_t n, const struct admission_node *node,
                  struct ck_error **ret_error);
