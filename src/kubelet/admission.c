/* SPDX-License-Identifier: Apache-2.0 */
#include "kubelet/admission.h"
#include "kuberuntime/security.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "apis/resource.h"
#include "basic/error.h"
#include "basic/macro.h"
#include "basic/string.h"

static int64_t sat_add(int64_t a, int64_t b) {
        return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* resource.PodRequests (apis/resource.h): requests default to limits (the apiserver's defaulting; static pods are
 * defaulted the same way), app containers and sidecars summed, at least each init container; the pod-level requests
 * (spec.resources) replace them when set; the pod's overhead (its RuntimeClass's) counts too */
void kubelet_pod_requests(const struct pod *p, int64_t *ret_cpu_milli, int64_t *ret_memory_bytes) {
        *ret_cpu_milli = resource_pod_requests(p, "cpu");
        *ret_memory_bytes = resource_pod_requests(p, "memory");
}

int64_t pod_request_units(const struct pod *p, const char *resource) {
        int64_t sum = 0, init = 0;

        if (resource_is_pod_level_supported(resource) && pod_level_requests_set(p))
                return resource_pod_requests(p, resource); /* hugepages from the pod-level requests */

        for (size_t i = 0; i < p->spec.n_containers + p->spec.n_init_containers; i++) {
                bool is_init = i >= p->spec.n_containers;
                const struct container *c = is_init ? &p->spec.init_containers[i - p->spec.n_containers]
                                                    : &p->spec.containers[i];
                const struct quantity *q = resource_list_get(&c->resources.requests, resource);
                int64_t v;
                if (!q)
                        q = resource_list_get(&c->resources.limits, resource);
                v = q ? MAX(q->value, (int64_t) 0) : 0;
                if (is_init)
                        init = MAX(init, v);
                else
                        sum = sat_add(sum, v);
        }
        return MAX(sum, init);
}

/* InsufficientResourceError, as the kubelet reports it: reason "OutOf<resource>" */
static int insufficient(const char *resource, int64_t requested, int64_t used, int64_t capacity,
                        struct ck_error **ret_error) {
        _cleanup_free_ char *reason = NULL;

        if (asprintf(&reason, "OutOf%s", resource) < 0)
                return -ENOMEM;
        return ck_error_set_reason(ret_error, -ENOSPC, reason,
                                   "Pod was rejected: Node didn't have enough resource: %s, requested: %" PRId64
                                   ", used: %" PRId64 ", capacity: %" PRId64,
                                   resource, requested, used, capacity);
}

int kubelet_admit(const struct pod *p, const struct pod *const *admitted, size_t n, const struct admission_node *node,
                  struct ck_error **ret_error) {
        int64_t cpu, mem, used_cpu = 0, used_mem = 0, c, m;
        _cleanup_ck_error_ struct ck_error *sysctl_error = NULL;
        int r;

        /* the sysctl allowlist admit handler runs before the resource predicates, as upstream registers them */
        r = kr_sysctls_admit(p, node->allowed_unsafe_sysctls, &sysctl_error);
        if (r == -EPERM)
                return ck_error_set_reason(ret_error, -ENOSPC, "SysctlForbidden", "Pod was rejected: %s",
                                           ck_error_message(sysctl_error));
        if (r < 0)
                return r;
        /* the pod's OS must be the node's (linux): its kubernetes.io/os node selector, then its spec.os */
        {
                const json_t *spec = json_object_get(p->raw, "spec");
                const char *sel = json_string_value(
                        json_object_get(json_object_get(spec, "nodeSelector"), "kubernetes.io/os"));
                const char *os = json_string_value(json_object_get(json_object_get(spec, "os"), "name"));
                if (sel && !streq(sel, "linux"))
                        return ck_error_set_reason(ret_error, -ENOSPC, "PodOSSelectorNodeLabelDoesNotMatch",
                                                   "Failed to admit pod as the `kubernetes.io/os` label doesn't "
                                                   "match node label");
                if (os && !streq(os, "linux"))
                        return ck_error_set_reason(ret_error, -ENOSPC, "PodOSNotSupported",
                                                   "Failed to admit pod as the OS field doesn't match node OS");
        }
        /* rejectPodAdmissionBasedOnSupplementalGroupsPolicy (the feature is GA) */
        if (p->spec.security_context && streq_ptr(p->spec.security_context->supplemental_groups_policy, "Strict") &&
            !node->supplemental_groups_policy)
                return ck_error_set_reason(ret_error, -ENOSPC, "SupplementalGroupsPolicyNotSupported",
                                           "SupplementalGroupsPolicy=Strict is not supported in this node");
        /* the AppArmor handler's refusal as it is: its own reason ("AppArmor") and message */
        r = kr_apparmor_admit(p, node->apparmor_enabled, ret_error);
        if (r < 0)
                return r;
        if (node->max_pods > 0 && (int64_t) n + 1 > node->max_pods)
                return insufficient("pods", 1, (int64_t) n, node->max_pods, ret_error);
        kubelet_pod_requests(p, &cpu, &mem);
        for (size_t i = 0; i < n; i++) {
                kubelet_pod_requests(admitted[i], &c, &m);
                used_cpu = sat_add(used_cpu, c);
                used_mem = sat_add(used_mem, m);
        }
        if (cpu > 0 && sat_add(cpu, used_cpu) > node->cpu_milli)
                return insufficient("cpu", cpu, used_cpu, node->cpu_milli, ret_error);
        if (mem > 0 && sat_add(mem, used_mem) > node->memory_bytes)
                return insufficient("memory", mem, used_mem, node->memory_bytes, ret_error);
        /* the node's extended resources (scalar resources); one it does not have is not counted */
        for (size_t k = 0; k < node->n_extended; k++) {
                const char *name = node->extended[k].name;
                int64_t want = pod_request_units(p, name), used = 0;
                if (want <= 0)
                        continue;
                for (size_t i = 0; i < n; i++)
                        used = sat_add(used, pod_request_units(admitted[i], name));
                if (sat_add(want, used) > node->extended[k].allocatable)
                        return insufficient(name, want, used, node->extended[k].allocatable, ret_error);
        }
        return 0;
}
