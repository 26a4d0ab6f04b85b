/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The node's CPU topology (cpumanager/topology): every online CPU with its core, socket, NUMA node and uncore (L3)
 * cache. Read from sysfs under a root the tests can point at (default "/sys"):
 *   devices/system/cpu/online                          the CPUs
 *   devices/system/cpu/cpuN/topology/physical_package_id  the socket
 *   devices/system/cpu/cpuN/topology/thread_siblings_list  the core: as upstream, a core's id is its lowest CPU
 *   devices/system/node/nodeM/cpulist                  the NUMA nodes (none: every CPU on node 0)
 *   devices/system/cpu/cpuN/cache/indexK/{level,id,shared_cpu_list}  the L3 cache (level 3): its id, else its
 *                                                      lowest CPU; no L3: the socket, as upstream falls back */

#include <stddef.h>

#include "basic/error.h"
#include "cm/cpumanager/cpuset.h"

struct cpu_info {
        int cpu, core, socket, numa, uncore;
};

struct cpu_topology {
        struct cpu_info *cpus; /* by CPU id, ascending */
        size_t n;
        int n_sockets, n_numa, n_cores, n_uncore;
};

enum cpu_level { CPU_LEVEL_CORE, CPU_LEVEL_SOCKET, CPU_LEVEL_NUMA, CPU_LEVEL_UNCORE, CPU_LEVEL_NONE };

int cputopo_discover(const char *sysfs_root, struct cpu_topology **ret, struct ck_error **ret_error);
/* from a table (tests; upstream's topologies): copied and sorted; counts computed */
int cputopo_from_table(const struct cpu_info *cpus, size_t n, struct cpu_topology **ret);
struct cpu_topology *cputopo_free(struct cpu_topology *t);

static inline int cpu_info_id(const struct cpu_info *c, enum cpu_level l) {
        return l == CPU_LEVEL_CORE     ? c->core
               : l == CPU_LEVEL_SOCKET ? c->socket
               : l == CPU_LEVEL_NUMA   ? c->numa
                                       : c->uncore;
}
struct cpuset cputopo_all(const struct cpu_topology *t);
/* the CPUs of one core/socket/NUMA node/uncore cache */
struct cpuset cputopo_cpus_in(const struct cpu_topology *t, enum cpu_level l, int id);
const struct cpu_info *cputopo_cpu(const struct cpu_topology *t, int cpu);
int cputopo_cpus_per_core(const struct cpu_topology *t);
int cputopo_cpus_per_socket(const struct cpu_topology *t);
