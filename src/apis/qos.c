/* SPDX-License-Identifier: Apache-2.0 */
#include "apis/qos.h"

#include <string.h>

#include "apis/resource.h"

static bool is_supported_qos_resource(const char *name) {
        return streq(name, "cpu") || streq(name, "memory");
}

/* resourceQOS: Guaranteed when request and limit are equal and non-zero, BestEffort when both are zero, Burstable
 * otherwise */
static enum qos_class resource_qos(const struct resource_requirements *r, const char *name) {
        const struct quantity *req = resource_list_get(&r->requests, name), *lim = resource_list_get(&r->limits, name);
        struct quantity zero = { .str = (char *) "0" };

        if (!req)
                req = &zero;
        if (!lim)
                lim = &zero;
        if (quantity_cmp(req, lim) != 0)
                return QOS_BURSTABLE;
        return quantity_cmp(req, &zero) == 0 ? QOS_BEST_EFFORT : QOS_GUARANTEED;
}

/* requirementsQOS: of one set of requirements (here the pod-level ones): BestEffort when empty, else the common
 * class of cpu and memory, Burstable when they differ */
static enum qos_class requirements_qos(const struct resource_requirements *r) {
        enum qos_class cpu, memory;

        if (r->requests.n == 0 && r->limits.n == 0)
                return QOS_BEST_EFFORT;
        cpu = resource_qos(r, "cpu");
        memory = resource_qos(r, "memory");
        return cpu == memory ? cpu : QOS_BURSTABLE;
}

/* ComputePodQOS: with pod-level resources (PodLevelResources, and PodLevelResourcesFixKubeletQOSClass beta on in
 * v1.37: only when a supported one is set), the class of spec.resources alone. Otherwise GetPodQOS: BestEffort without any cpu/memory request or limit; Guaranteed when every container has cpu
 * and memory limits and its requests (defaulted from limits) equal them; Burstable otherwise. */
enum qos_class pod_qos_class(const struct pod *pod) {
        bool any = false, guaranteed = true;

        if (pod_level_resources_set(pod))
                return requirements_qos(&pod->spec.resources);
        for (size_t pass = 0; pass < 2; pass++) {
                const struct container *cs = pass == 0 ? pod->spec.containers : pod->spec.init_containers;
                size_t n = pass == 0 ? pod->spec.n_containers : pod->spec.n_init_containers;
                for (size_t i = 0; i < n; i++) {
                        const struct resource_requirements *r = &cs[i].resources;
                        size_t limits_found = 0;
                        for (size_t j = 0; j < r->requests.n; j++)
                                if (is_supported_qos_resource(r->requests.names[j]) &&
                                    r->requests.values[j].milli != 0) {
                                        const struct quantity *l = resource_list_get(&r->limits, r->requests.names[j]);
                                        any = true;
                                        if (!l || l->milli != r->requests.values[j].milli)
                                                guaranteed = false;
                                }
                        for (size_t j = 0; j < r->limits.n; j++)
                                if (is_supported_qos_resource(r->limits.names[j]) && r->limits.values[j].milli != 0) {
                                        any = true;
                                        limits_found++;
                                }
                        if (limits_found < 2)
                                guaranteed = false;
                }
        }
        if (!any)
                return QOS_BEST_EFFORT;
        return guaranteed ? QOS_GUARANTEED : QOS_BURSTABLE;
}

const char *qos_class_to_string(enum qos_class q) {
        switch (q) {
        case QOS_GUARANTEED:
                return "Guaranteed";
        case QOS_BURSTABLE:
                return "Burstable";
        default:
                return "BestEffort";
        }
}
