/* SPDX-License-Identifier: Apache-2.0 */
/* ResourceConfigForPod (pkg/kubelet/cm/helpers_linux.go). Pure. */
#include <string.h>

#include "basic/macro.h"
#include "apis/resource.h"
#include "basic/string.h"
#include "cm/cm.h"

/* A container's own cpu or memory limit, 0 when unset */
static int64_t limit_of(const struct container *c, const char *name) {
        const struct quantity *q = resource_list_get(&c->resources.limits, name);
        return q ? (streq(name, "cpu") ? q->milli : q->value) : 0;
}

/* resource.PodRequests / PodLimits (apis/resource.h): the containers aggregated (app containers and sidecars summed,
 * at least each init container with the sidecars before it), replaced by the pod-level requests and limits
 * (spec.resources) when set; then the pod's overhead (spec.overhead, from its RuntimeClass) added to the requests and
 * to a non-zero limit. Limits count as declared when every container has one, or the pod-level one is set. */
void cm_resource_config_for_pod(const struct pod *pod, struct cm_resource_config *ret) {
        int64_t cpu_requests = resource_pod_requests(pod, "cpu");
        int64_t cpu_limits = resource_pod_limits(pod, "cpu");
        int64_t memory_limits = resource_pod_limits(pod, "memory");
        bool cpu_limits_declared = true, memory_limits_declared = true;
        struct cm_resource_config r = {};

        for (size_t pass = 0; pass < 2; pass++) {
                const struct container *cs = pass == 0 ? pod->spec.containers : pod->spec.init_containers;
                size_t n = pass == 0 ? pod->spec.n_containers : pod->spec.n_init_containers;
                for (size_t i = 0; i < n; i++) {
                        if (limit_of(&cs[i], "cpu") == 0)
                                cpu_limits_declared = false;
                        if (limit_of(&cs[i], "memory") == 0)
                                memory_limits_declared = false;
                }
        }
        if (pod_level_resources_set(pod)) {
                const struct quantity *q = resource_list_get(&pod->spec.resources.limits, "cpu");
                if (q && q->milli != 0)
                        cpu_limits_declared = true;
                q = resource_list_get(&pod->spec.resources.limits, "memory");
                if (q && q->value != 0)
                        memory_limits_declared = true;
        }

        switch (pod_qos_class(pod)) {
        case QOS_GUARANTEED:
                r.cpu_shares = kr_milli_cpu_to_shares(cpu_requests);
                r.cpu_period = CPU_QUOTA_PERIOD_USEC;
                r.cpu_quota = kr_milli_cpu_to_quota(cpu_limits, CPU_QUOTA_PERIOD_USEC);
                r.memory_limit = memory_limits;
                break;
        case QOS_BURSTABLE:
                r.cpu_shares = kr_milli_cpu_to_shares(cpu_requests);
                if (cpu_limits_declared) {
                        r.cpu_period = CPU_QUOTA_PERIOD_USEC;
                        r.cpu_quota = kr_milli_cpu_to_quota(cpu_limits, CPU_QUOTA_PERIOD_USEC);
                }
                if (memory_limits_declared)
                        r.memory_limit = memory_limits;
                break;
        default:
                r.cpu_shares = CPU_MIN_SHARES;
                break;
        }
        *ret = r;
}

void cm_resource_config_hugepages(const struct pod *pod, const uint64_t *sizes, size_t n_sizes,
                                  struct cm_resource_config *rc) {
        rc->n_hugepages = 0;
        for (size_t i = 0; i < n_sizes && i < ELEMENTSOF(rc->hugepages); i++)
                rc->hugepages[rc->n_hugepages++] = (struct cm_hugepage_limit) {
                        .page_size = sizes[i],
                        .limit = resource_pod_hugepages(pod, sizes[i]),
                };
}

uint64_t cm_cpu_shares_to_weight(uint64_t shares) {
        if (shares == 0)
                return 0;
        if (shares < CPU_MIN_SHARES)
                shares = CPU_MIN_SHARES;
        if (shares > CPU_MAX_SHARES)
                shares = CPU_MAX_SHARES;
        return 1 + ((shares - 2) * 9999) / 262142;
}

int64_t cm_pod_cpu_requests(const struct pod *pod) {
        return resource_pod_requests(pod, "cpu");
}
