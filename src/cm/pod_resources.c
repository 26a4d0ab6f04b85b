/* SPDX-License-Identifier: Apache-2.0 */
/* ResourceConfigForPod (pkg/kubelet/cm/helpers_linux.go). Pure. */
#include <string.h>

#include "basic/macro.h"
#include "cm/cm.h"

static int64_t sat_add(int64_t a, int64_t b) {
        return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* a request defaults to the limit (as the apiserver defaults it) */
static int64_t request_of(const struct container *c, const char *name, bool milli) {
        const struct quantity *q = resource_list_get(&c->resources.requests, name);
        if (!q)
                q = resource_list_get(&c->resources.limits, name);
        return q ? (milli ? q->milli : q->value) : 0;
}

static int64_t limit_of(const struct container *c, const char *name, bool milli) {
        const struct quantity *q = resource_list_get(&c->resources.limits, name);
        return q ? (milli ? q->milli : q->value) : 0;
}

/* resource.PodRequests / PodLimits: the sum over the app containers, at least the largest init container; then
 * the pod's overhead (spec.overhead, from its RuntimeClass): added to the requests, and to a limit that some
 * container declares */
static int64_t pod_total(const struct pod *pod, int64_t (*get)(const struct container *, const char *, bool),
                         const char *name, bool milli) {
        const struct quantity *overhead = resource_list_get(&pod->spec.overhead, name);
        bool declared = false;
        int64_t sum = 0;

        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                sum = sat_add(sum, get(&pod->spec.containers[i], name, milli));
                declared = declared || get(&pod->spec.containers[i], name, milli) > 0;
        }
        for (size_t i = 0; i < pod->spec.n_init_containers; i++) {
                sum = MAX(sum, get(&pod->spec.init_containers[i], name, milli));
                declared = declared || get(&pod->spec.init_containers[i], name, milli) > 0;
        }
        if (overhead && (get == request_of || declared))
                sum = sat_add(sum, MAX(milli ? overhead->milli : overhead->value, (int64_t) 0));
        return sum;
}

void cm_resource_config_for_pod(const struct pod *pod, struct cm_resource_config *ret) {
        int64_t cpu_requests = pod_total(pod, request_of, "cpu", true);
        int64_t cpu_limits = pod_total(pod, limit_of, "cpu", true);
        int64_t memory_limits = pod_total(pod, limit_of, "memory", false);
        bool cpu_limits_declared = true, memory_limits_declared = true;
        struct cm_resource_config r = {};

        for (size_t pass = 0; pass < 2; pass++) {
                const struct container *cs = pass == 0 ? pod->spec.containers : pod->spec.init_containers;
                size_t n = pass == 0 ? pod->spec.n_containers : pod->spec.n_init_containers;
                for (size_t i = 0; i < n; i++) {
                        if (limit_of(&cs[i], "cpu", true) == 0)
                                cpu_limits_declared = false;
                        if (limit_of(&cs[i], "memory", false) == 0)
                                memory_limits_declared = false;
                }
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
        return pod_total(pod, request_of, "cpu", true);
}
