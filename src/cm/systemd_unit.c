/* SPDX-License-Identifier: Apache-2.0 */
/* The systemd driver's pure parts: unit names from cgroup names (upstream updateSystemdCgroupInfo), the pod UID
 * back from a slice directory, and the properties of a slice's StartTransientUnit (runc's legacy/unified managers'
 * Apply with pid -1 and the kubelet's toResources: allow-all devices, accounting on, no default dependencies). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string.h"
#include "cm/cm.h"

int cm_name_to_systemd_unit(const char *name, char **ret_unit, char **ret_parent) {
        _cleanup_free_ char *path = NULL, *unit = NULL, *parent = NULL;
        char *last, *before;
        int r;

        if (isempty(name))
                return -EINVAL; /* the root slice is not created */
        r = cm_name_to_systemd(name, &path);
        if (r < 0)
                return r;
        last = strrchr(path, '/');
        assert(last);
        unit = strdup(last + 1);
        if (!unit)
                return -ENOMEM;
        *last = '\0';
        before = strrchr(path, '/');
        parent = strdup(before ? before + 1 : "-.slice");
        if (!parent)
                return -ENOMEM;
        *ret_unit = TAKE_PTR(unit);
        *ret_parent = TAKE_PTR(parent);
        return 0;
}

int cm_pod_uid_from_dir(bool systemd, const char *dirname, char **ret) {
        const char *p;
        char *uid;
        size_t len;

        if (!systemd) {
                if (!startswith(dirname, "pod") || !dirname[3])
                        return -EINVAL;
                uid = strdup(dirname + 3);
                if (!uid)
                        return -ENOMEM;
                *ret = uid;
                return 0;
        }
        /* "<parent parts>-pod<uid with '_'>.slice" */
        if (!endswith(dirname, ".slice"))
                return -EINVAL;
        p = strrchr(dirname, '-');
        p = p ? p + 1 : dirname;
        if (!startswith(p, "pod"))
                return -EINVAL;
        p += 3;
        len = strlen(p) - 6;
        if (len == 0)
                return -EINVAL;
        uid = strndup(p, len);
        if (!uid)
                return -ENOMEM;
        for (char *c = uid; *c; c++)
                if (*c == '_')
                        *c = '-';
        *ret = uid;
        return 0;
}

int cm_systemd_version_parse(const char *s) {
        int v = 0;
        bool any = false;

        /* "v245.4-1.fc32", "245", "\"247.3-7\"" (runc systemdVersionAtoi: the first integer) */
        if (!s)
                return -EINVAL;
        if (*s == '"')
                s++;
        if (*s == 'v')
                s++;
        for (; *s >= '0' && *s <= '9'; s++) {
                if (v > 100000)
                        return -ERANGE;
                v = v * 10 + (*s - '0');
                any = true;
        }
        return any ? v : -EINVAL;
}

static void add(struct cm_slice_properties *p, const char *name, enum cm_property_type type, const char *s,
                uint64_t u) {
        assert(p->n < ELEMENTSOF(p->p));
        p->p[p->n++] = (struct cm_unit_property) { .name = name, .type = type, .s = s, .u = u };
}

int cm_systemd_slice_properties(const char *unit, const char *parent, const struct cm_resource_config *rc, bool unified,
                                int systemd_version, struct cm_slice_properties *ret) {
        struct cm_slice_properties *p = ret;
        int n;

        assert(unit && parent && rc && ret);
        *p = (struct cm_slice_properties) {};
        n = snprintf(p->description, sizeof(p->description), "libcontainer container %s", unit);
        if (n < 0 || (size_t) n >= sizeof(p->description))
                return -EINVAL;
        if (strlen(parent) >= sizeof(p->parent))
                return -EINVAL;
        strcpy(p->parent, parent);
        add(p, "Description", CM_PROPERTY_STRING, p->description, 0);
        add(p, "Wants", CM_PROPERTY_UNITS, p->parent, 0); /* a slice's parent is given with Wants= */
        add(p, "MemoryAccounting", CM_PROPERTY_BOOL, NULL, 1);
        add(p, "CPUAccounting", CM_PROPERTY_BOOL, NULL, 1);
        add(p, unified ? "IOAccounting" : "BlockIOAccounting", CM_PROPERTY_BOOL, NULL, 1);
        add(p, "DefaultDependencies", CM_PROPERTY_BOOL, NULL, 0);
        /* the kubelet's one device rule allows everything: "auto" with no DeviceAllow= entries */
        add(p, "DevicePolicy", CM_PROPERTY_STRING, "auto", 0);
        add(p, "DeviceAllow", CM_PROPERTY_DEVICE_ALLOW, NULL, 0);
        if (rc->memory_limit > 0)
                add(p, unified ? "MemoryMax" : "MemoryLimit", CM_PROPERTY_U64, NULL, (uint64_t) rc->memory_limit);
        if (rc->cpu_shares > 0) {
                if (unified)
                        add(p, "CPUWeight", CM_PROPERTY_U64, NULL, cm_cpu_shares_to_weight((uint64_t) rc->cpu_shares));
                else
                        add(p, "CPUShares", CM_PROPERTY_U64, NULL, (uint64_t) rc->cpu_shares);
        }
        /* addCpuQuota: the period only where systemd knows it (v242), the quota per second rounded up to 10ms */
        if (rc->cpu_period > 0 && systemd_version >= 242)
                add(p, "CPUQuotaPeriodUSec", CM_PROPERTY_U64, NULL, (uint64_t) rc->cpu_period);
        if (rc->cpu_quota != 0 || rc->cpu_period > 0) {
                uint64_t per_sec = UINT64_MAX;
                if (rc->cpu_quota > 0) {
                        uint64_t period = rc->cpu_period > 0 ? (uint64_t) rc->cpu_period : 100000;
                        per_sec = (uint64_t) rc->cpu_quota * 1000000 / period;
                        if (per_sec % 10000 != 0)
                                per_sec = (per_sec / 10000 + 1) * 10000;
                }
                add(p, "CPUQuotaPerSecUSec", CM_PROPERTY_U64, NULL, per_sec);
        }
        if (rc->pids_limit > 0) {
                add(p, "TasksAccounting", CM_PROPERTY_BOOL, NULL, 1);
                add(p, "TasksMax", CM_PROPERTY_U64, NULL, (uint64_t) rc->pids_limit);
        }
        return 0;
}
