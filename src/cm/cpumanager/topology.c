/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/cpumanager/topology.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "basic/string.h"

#define SYSFS_FILE_MAX 4096

static int read_text(const char *root, const char *rel, char **ret) {
        _cleanup_free_ char *path = NULL;
        size_t size;

        if (asprintf(&path, "%s/%s", root, rel) < 0)
                return -ENOMEM;
        return read_full_file(path, SYSFS_FILE_MAX, ret, &size);
}

static int read_int(const char *root, const char *rel, int *ret) {
        _cleanup_free_ char *s = NULL;
        char *end;
        long v;
        int r = read_text(root, rel, &s);

        if (r < 0)
                return r;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || (*end && *end != '\n') || v < -1 || v > 1 << 20)
                return -EINVAL;
        *ret = (int) v;
        return 0;
}

static int read_set(const char *root, const char *rel, struct cpuset *ret) {
        _cleanup_free_ char *s = NULL;
        int r = read_text(root, rel, &s);

        return r < 0 ? r : cpuset_parse(s, ret);
}

static int cmp_cpu(const void *a, const void *b) {
        return ((const struct cpu_info *) a)->cpu - ((const struct cpu_info *) b)->cpu;
}

static int count_distinct(const struct cpu_topology *t, enum cpu_level l) {
        int n = 0;
        for (size_t i = 0; i < t->n; i++) {
                bool seen = false;
                for (size_t j = 0; j < i && !seen; j++)
                        seen = cpu_info_id(&t->cpus[j], l) == cpu_info_id(&t->cpus[i], l);
                n += !seen;
        }
        return n;
}

int cputopo_from_table(const struct cpu_info *cpus, size_t n, struct cpu_topology **ret) {
        struct cpu_topology *t;

        if (n == 0 || n > CPUSET_MAX)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t || !(t->cpus = calloc(n, sizeof(*cpus)))) {
                free(t);
                return -ENOMEM;
        }
        memcpy(t->cpus, cpus, n * sizeof(*cpus));
        t->n = n;
        qsort(t->cpus, n, sizeof(*cpus), cmp_cpu);
        for (size_t i = 0; i < n; i++)
                if (t->cpus[i].cpu < 0 || t->cpus[i].cpu >= CPUSET_MAX ||
                    (i > 0 && t->cpus[i].cpu == t->cpus[i - 1].cpu)) {
                        cputopo_free(t);
                        return -EINVAL;
                }
        t->n_sockets = count_distinct(t, CPU_LEVEL_SOCKET);
        t->n_numa = count_distinct(t, CPU_LEVEL_NUMA);
        t->n_cores = count_distinct(t, CPU_LEVEL_CORE);
        t->n_uncore = count_distinct(t, CPU_LEVEL_UNCORE);
        *ret = t;
        return 0;
}

struct cpu_topology *cputopo_free(struct cpu_topology *t) {
        if (t) {
                free(t->cpus);
                free(t);
        }
        return NULL;
}

/* the L3 cache of a CPU: its id, else its lowest CPU; -ENOENT without one */
static int l3_of(const char *root, int cpu) {
        for (int k = 0; k < 16; k++) {
                char rel[128];
                int level, id;
                struct cpuset shared;

                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index%d/level", cpu, k);
                if (read_int(root, rel, &level) < 0)
                        return -ENOENT;
                if (level != 3)
                        continue;
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index%d/id", cpu, k);
                if (read_int(root, rel, &id) >= 0)
                        return id;
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, k);
                if (read_set(root, rel, &shared) >= 0 && !cpuset_empty(&shared))
                        return cpuset_next(&shared, 0);
                return -ENOENT;
        }
        return -ENOENT;
}

int cputopo_discover(const char *sysfs_root, struct cpu_topology **ret, struct ck_error **ret_error) {
        const char *root = sysfs_root ?: "/sys";
        _cleanup_free_ struct cpu_info *cpus = NULL;
        struct cpuset online;
        size_t n = 0;
        int r;

        r = read_set(root, "devices/system/cpu/online", &online);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot read %s/devices/system/cpu/online: %s", root, strerror(-r));
        if (cpuset_empty(&online))
                return ck_error_set(ret_error, -EINVAL, "%s/devices/system/cpu/online: no CPUs", root);
        cpus = calloc((size_t) cpuset_count(&online), sizeof(*cpus));
        if (!cpus)
                return -ENOMEM;
        CPUSET_FOREACH(c, &online) {
                char rel[128];
                struct cpuset sib;
                struct cpu_info *ci = &cpus[n++];

                ci->cpu = c;
                ci->numa = 0;
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/physical_package_id", c);
                r = read_int(root, rel, &ci->socket);
                if (r < 0)
                        return ck_error_set(ret_error, r, "cannot read %s/%s: %s", root, rel, strerror(-r));
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
                r = read_set(root, rel, &sib);
                if (r < 0)
                        return ck_error_set(ret_error, r, "cannot read %s/%s: %s", root, rel, strerror(-r));
                sib = cpuset_and(&sib, &online);
                ci->core = cpuset_empty(&sib) ? c : cpuset_next(&sib, 0);
                r = l3_of(root, c);
                ci->uncore = r >= 0 ? r : ci->socket;
        }
        {
                _cleanup_free_ char *nodedir = NULL;
                DIR *d;
                struct dirent *de;

                if (asprintf(&nodedir, "%s/devices/system/node", root) < 0)
                        return -ENOMEM;
                d = opendir(nodedir);
                while (d && (de = readdir(d))) {
                        char rel[384], *end;
                        long id;
                        struct cpuset list;

                        if (!startswith(de->d_name, "node"))
                                continue;
                        id = strtol(de->d_name + 4, &end, 10);
                        if (end == de->d_name + 4 || *end || id < 0 || id > 1 << 16)
                                continue;
                        snprintf(rel, sizeof(rel), "devices/system/node/%s/cpulist", de->d_name);
                        if (read_set(root, rel, &list) < 0)
                                continue;
                        for (size_t i = 0; i < n; i++)
                                if (cpuset_has(&list, cpus[i].cpu))
                                        cpus[i].numa = (int) id;
                }
                if (d)
                        closedir(d);
        }
        return cputopo_from_table(cpus, n, ret);
}

struct cpuset cputopo_all(const struct cpu_topology *t) {
        struct cpuset s = {};
        for (size_t i = 0; i < t->n; i++)
                cpuset_add(&s, t->cpus[i].cpu);
        return s;
}

struct cpuset cputopo_cpus_in(const struct cpu_topology *t, enum cpu_level l, int id) {
        struct cpuset s = {};
        for (size_t i = 0; i < t->n; i++)
                if (cpu_info_id(&t->cpus[i], l) == id)
                        cpuset_add(&s, t->cpus[i].cpu);
        return s;
}

const struct cpu_info *cputopo_cpu(const struct cpu_topology *t, int cpu) {
        for (size_t i = 0; i < t->n; i++)
                if (t->cpus[i].cpu == cpu)
                        return &t->cpus[i];
        return NULL;
}

int cputopo_cpus_per_core(const struct cpu_topology *t) {
        return t->n_cores > 0 ? (int) t->n / t->n_cores : 0;
}

int cputopo_cpus_per_socket(const struct cpu_topology *t) {
        return t->n_sockets > 0 ? (int) t->n / t->n_sockets : 0;
}
