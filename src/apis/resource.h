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
