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

static bool pod_level_limits_set(const struct pod *pod) {
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

/* ---- huge pages ---- */

int resource_hugepage_size(const char *name, uint64_t *ret_bytes) {
        struct quantity q = {};
        const char *size;
        int r;

        if (!startswith(name, "hugepages-"))
                return -EINVAL;
        size = name + strlen("hugepages-");
        r = quantity_parse(size, &q);
        if (r < 0)
                return r;
        /* a fractional size rounds up in Value(): not a page size */
        r = q.value > 0 && q.milli == q.value * 1000 ? 0 : -EINVAL;
        if (r >= 0)
                *ret_bytes = (uint64_t) q.value;
        quantity_done(&q);
        return r;
}

void resource_hugepage_unit(uint64_t bytes, char buf[static RESOURCE_HUGEPAGE_UNIT_MAX]) {
        static const char *const units[] = { "B", "KB", "MB", "GB", "TB", "PB" };
        double v = (double) bytes;
        size_t i = 0;

        while (v >= 1024 && i + 1 < ELEMENTSOF(units)) {
                v /= 1024;
                i++;
        }
        snprintf(buf, RESOURCE_HUGEPAGE_UNIT_MAX, "%g%s", v, units[i]);
}

static bool is_hugepage_name_of(const char *name, uint64_t page_size) {
        uint64_t b;
        return resource_hugepage_size(name, &b) >= 0 && b == page_size;
}

/* The pod's resource lists in order: pod-level requests and limits, then each container's and init container's */
static const struct resource_list *pod_list(const struct pod *pod, size_t i) {
        size_t n = pod->spec.n_containers + pod->spec.n_init_containers;
        const struct container *c;

        if (i < 2)
                return i == 0 ? &pod->spec.resources.requests : &pod->spec.resources.limits;
        i -= 2;
        if (i / 2 >= n)
                return NULL;
        c = i / 2 < pod->spec.n_containers ? &pod->spec.containers[i / 2]
                                           : &pod->spec.init_containers[i / 2 - pod->spec.n_containers];
        return i % 2 == 0 ? &c->resources.requests : &c->resources.limits;
}

static bool name_seen_before(const struct pod *pod, size_t list, size_t index, const char *name) {
        for (size_t l = 0; l <= list; l++) {
                const struct resource_list *rl = pod_list(pod, l);
                for (size_t i = 0; i < (l == list ? index : rl->n); i++)
                        if (streq(rl->names[i], name))
                                return true;
        }
        return false;
}

int64_t resource_pod_hugepages(const struct pod *pod, uint64_t page_size) {
        const struct resource_list *rl;
        int64_t sum = 0;

        /* each distinct name of that page size once (two spellings of one size are two names upstream too) */
        for (size_t l = 0; (rl = pod_list(pod, l)); l++)
                for (size_t i = 0; i < rl->n; i++)
                        if (is_hugepage_name_of(rl->names[i], page_size) && !name_seen_before(pod, l, i, rl->names[i]))
                                sum += resource_pod_requests(pod, rl->names[i]);
        return sum;
}

int64_t resource_container_hugepages(const struct pod *pod, const struct container *c, uint64_t page_size) {
        int64_t v = 0;
        bool found = false;

        for (size_t i = 0; i < c->resources.limits.n; i++)
                if (is_hugepage_name_of(c->resources.limits.names[i], page_size)) {
                        v = c->resources.limits.values[i].value;
                        found = true;
                }
        if (found || !pod_level_resources_set(pod))
                return v;
        for (size_t i = 0; i < pod->spec.resources.limits.n; i++)
                if (is_hugepage_name_of(pod->spec.resources.limits.names[i], page_size))
                        v = pod->spec.resources.limits.values[i].value;
        return v;
}
