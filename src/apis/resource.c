/* SPDX-License-Identifier: Apache-2.0 */
#include "apis/resource.h"
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
