/* SPDX-License-Identifier: Apache-2.0 */
#include "apis/resource.h"
#include "basic/macro.h"
#include "basic/string.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int64_t ceil_div(int64_t a, int64_t b) {
        if (b <= 0)
                return 0;
        if (a <= 0)
                return -((-a) / b);
        return a / b + (a % b != 0);
}

int resource_container_value(const struct container *c, const char *resource, const struct quantity *divisor,
                             const struct resource_allocatable *alloc, char **ret) {
        const char *name;
        const struct quantity *q;
        bool limits, cpu;
        int64_t div_milli = 1000, div_value = 1, v;
        char *s = NULL;

        if (!resource)
                return -EINVAL;
        if (startswith(resource, "limits."))
                limits = true, name = resource + strlen("limits.");
        else if (startswith(resource, "requests."))
                limits = false, name = resource + strlen("requests.");
        else
                return -EINVAL;
        if (divisor && (divisor->milli != 0 || divisor->value != 0)) {
                div_milli = divisor->milli;
                div_value = divisor->value;
        }
        cpu = streq(name, "cpu");
        if (!cpu && !streq(name, "memory") && !streq(name, "ephemeral-storage") && !startswith(name, "hugepages-"))
                return -EINVAL;
        q = resource_list_get(limits ? &c->resources.limits : &c->resources.requests, name);
        if (q)
                v = cpu ? q->milli : q->value;
        else if (!limits || startswith(name, "hugepages-"))
                v = 0;
        else if (cpu)
                v = alloc->cpu_milli;
        else if (streq(name, "memory"))
                v = alloc->memory;
        else
                v = alloc->ephemeral_storage;
        v = cpu ? ceil_div(v, div_milli) : ceil_div(v, div_value);
        if (asprintf(&s, "%" PRId64, v) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* ---- pod-level resources ---- */

static int64_t sat_add(int64_t a, int64_t b) {
        if (b > 0 && a > INT64_MAX - b)
                return INT64_MAX;
        return a + b;
}

static int64_t quantity_units(const char *name, const struct quantity *q) {
        if (!q)
                return 0;
        return MAX(streq(name, "cpu") ? q->milli : q->value, (int64_t) 0);
}

bool resource_is_pod_level_supported(const char *name) {
        return streq(name, "cpu") || streq(name, "memory") || startswith(name, "hugepages-");
}

static bool list_has_supported(const struct resource_list *l) {
        for (size_t i = 0; i < l->n; i++)
                if (resource_is_pod_level_supported(l->names[i]))
                        return true;
        return false;
}

bool pod_level_requests_set(const struct pod *pod) {
        return pod->spec.has_resources && list_has_supported(&pod->spec.resources.requests);
}

bool pod_level_limits_set(const struct pod *pod) {
        return pod->spec.has_resources && list_has_supported(&pod->spec.resources.limits);
}

bool pod_level_resources_set(const struct pod *pod) {
        return pod_level_requests_set(pod) || pod_level_limits_set(pod);
}

static bool container_value(const struct container *c, const char *name, bool limits, int64_t *ret) {
        const struct quantity *q = resource_list_get(&c->resources.limits, name);
        if (!limits) {
                const struct quantity *r = resource_list_get(&c->resources.requests, name);
                if (r)
                        q = r;
        }
        *ret = quantity_units(name, q);
        return q != NULL;
}

int64_t resource_aggregate_containers(const struct pod *pod, const char *name, bool limits, bool *ret_found) {
        int64_t sum = 0, sidecars = 0, init = 0, v;
        bool found = false;

        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                found = container_value(&pod->spec.containers[i], name, limits, &v) || found;
                sum = sat_add(sum, v);
        }
        for (size_t i = 0; i < pod->spec.n_init_containers; i++) {
                const struct container *c = &pod->spec.init_containers[i];
                found = container_value(c, name, limits, &v) || found;
                if (container_is_sidecar(c)) {
                        sum = sat_add(sum, v);
                        sidecars = sat_add(sidecars, v);
                        v = sidecars;
                } else
                        v = sat_add(v, sidecars);
                init = MAX(init, v);
        }
        if (ret_found)
                *ret_found = found;
        return MAX(sum, init);
}

int64_t resource_pod_requests(const struct pod *pod, const char *name) {
        int64_t v = resource_aggregate_containers(pod, name, false, NULL);
        const struct quantity *q;

        if (pod_level_requests_set(pod) && resource_is_pod_level_supported(name) &&
            (q = resource_list_get(&pod->spec.resources.requests, name)))
                v = quantity_units(name, q);
        return sat_add(v, quantity_units(name, resource_list_get(&pod->spec.overhead, name)));
}

int64_t resource_pod_limits(const struct pod *pod, const char *name) {
        int64_t v = resource_aggregate_containers(pod, name, true, NULL);
        const struct quantity *q;

        if (pod_level_resources_set(pod) && resource_is_pod_level_supported(name) &&
            (q = resource_list_get(&pod->spec.resources.limits, name)))
                v = quantity_units(name, q);
        if (v > 0)
                v = sat_add(v, quantity_units(name, resource_list_get(&pod->spec.overhead, name)));
        return v;
}

int64_t resource_pod_request_for_eviction(const struct pod *pod, const char *name) {
        int64_t v = 0;

        if (!pod_level_resources_set(pod))
                v = resource_aggregate_containers(pod, name, false, NULL);
        else if (resource_is_pod_level_supported(name))
                v = quantity_units(name, resource_list_get(&pod->spec.resources.requests, name));
        if (v > 0)
                v = sat_add(v, quantity_units(name, resource_list_get(&pod->spec.overhead, name)));
        return v;
}
