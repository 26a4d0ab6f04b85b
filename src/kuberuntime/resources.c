/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "kuberuntime/resources.h"

#include "apis/resource.h"
#include "basic/macro.h"

int64_t kr_milli_cpu_to_shares(int64_t milli) {
        int64_t shares;
        if (milli <= 0)
                return CPU_MIN_SHARES;
        if (milli > INT64_MAX / 1024)
                return CPU_MAX_SHARES;
        shares = milli * 1024 / 1000;
        return shares < CPU_MIN_SHARES ? CPU_MIN_SHARES : shares > CPU_MAX_SHARES ? CPU_MAX_SHARES : shares;
}

int64_t kr_milli_cpu_to_quota(int64_t milli, int64_t period) {
        int64_t quota;
        if (milli <= 0)
                return 0;
        if (milli > INT64_MAX / period)
                return INT64_MAX / 1000;
        quota = milli * period / 1000;
        return quota < CPU_MIN_QUOTA_USEC ? CPU_MIN_QUOTA_USEC : quota;
}

int64_t kr_container_oom_score_adj(const struct pod *pod, const struct container *c, uint64_t node_memory_bytes) {
        const struct quantity *req;
        int64_t adj, mem;

        switch (pod_qos_class(pod)) {
        case QOS_GUARANTEED:
                return QOS_GUARANTEED_OOM_SCORE_ADJ;
        case QOS_BEST_EFFORT:
                return QOS_BEST_EFFORT_OOM_SCORE_ADJ;
        default:
                break;
        }
        req = resource_list_get(&c->resources.requests, "memory");
        if (node_memory_bytes == 0)
                return QOS_BEST_EFFORT_OOM_SCORE_ADJ - 1;
        mem = req ? req->value : 0;
        /* remainingPodMemReqPerContainer: the pod-level memory request beyond the containers', shared equally */
        if (pod_level_requests_set(pod)) {
                const struct quantity *pq = resource_list_get(&pod->spec.resources.requests, "memory");
                size_t n = pod->spec.n_containers + pod->spec.n_init_containers;
                if (pq && pq->value > 0 && n > 0)
                        mem += MAX(pq->value - resource_aggregate_containers(pod, "memory", false, NULL), (int64_t) 0) /
                               (int64_t) n;
        }
        adj = 1000 - (int64_t) ((__int128) 1000 * mem / (int64_t) node_memory_bytes);
        if (adj < 1000 + QOS_GUARANTEED_OOM_SCORE_ADJ)
                return 1000 + QOS_GUARANTEED_OOM_SCORE_ADJ;
        if (adj == QOS_BEST_EFFORT_OOM_SCORE_ADJ)
                return adj - 1;
        return adj;
}

void kr_container_resources(const struct pod *pod, const struct container *c, uint64_t node_memory_bytes,
                            struct kr_linux_resources *ret) {
        const struct quantity *cpu_req = resource_list_get(&c->resources.requests, "cpu");
        const struct quantity *cpu_lim = resource_list_get(&c->resources.limits, "cpu");
        const struct quantity *mem_lim = resource_list_get(&c->resources.limits, "memory");

        /* getCPULimit / getMemoryLimit: with pod-level resources, a container without its own limit gets the pod's
         * (the pod cgroup bounds it anyway); a cpu request left unset defaults to that limit */
        if (pod_level_resources_set(pod)) {
                if (!cpu_lim || cpu_lim->milli == 0)
                        cpu_lim = resource_list_get(&pod->spec.resources.limits, "cpu");
                if (!mem_lim || mem_lim->value == 0)
                        mem_lim = resource_list_get(&pod->spec.resources.limits, "memory");
                if (!cpu_req)
                        cpu_req = cpu_lim;
        }

        *ret = (struct kr_linux_resources) {
                .cpu_shares = kr_milli_cpu_to_shares(cpu_req ? cpu_req->milli : 0),
                .memory_limit_in_bytes = mem_lim ? mem_lim->value : 0,
                .oom_score_adj = kr_container_oom_score_adj(pod, c, node_memory_bytes),
        };
        if (cpu_lim && cpu_lim->milli > 0) {
                ret->cpu_period = CPU_QUOTA_PERIOD_USEC;
                ret->cpu_quota = kr_milli_cpu_to_quota(cpu_lim->milli, CPU_QUOTA_PERIOD_USEC);
        }
}

int64_t kr_container_swap_limit(const struct pod *pod, const struct container *c, bool limited_swap, bool critical,
                                uint64_t node_memory_bytes, uint64_t swap_capacity_bytes) {
        const struct quantity *req = resource_list_get(&c->resources.requests, "memory");
        const struct quantity *lim = resource_list_get(&c->resources.limits, "memory");
        int64_t r = req ? req->value : 0, l = lim ? lim->value : 0;

        if (!limited_swap || critical || pod_qos_class(pod) != QOS_BURSTABLE)
                return 0;
        if ((r == 0 && l == 0) || r == l)
                return 0;
        if (node_memory_bytes == 0 || node_memory_bytes > INT64_MAX || r > (int64_t) node_memory_bytes)
                return 0; /* upstream: "Cannot calculate swap allocation amount; disallowing swap" */
        return (int64_t) ((double) r / (double) node_memory_bytes * (double) swap_capacity_bytes);
}
