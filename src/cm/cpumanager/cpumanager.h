/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The CPU manager (pkg/kubelet/cm/cpumanager): policy "none" (the default: nothing is pinned) or "static":
 * containers of Guaranteed pods with an integer CPU request get CPUs of their own, taken by topology
 * (cpumanager_take_by_topology_opts: upstream's takeByTopologyNUMAPacked, or takeByTopologyNUMADistributed with
 * distribute-cpus-across-numa, uncore-cache first with prefer-align-cpus-by-uncorecache), everyone else runs on the shared pool (the
 * default set: every CPU not given away; the reserved CPUs stay in it unless strict-cpu-reservation). The state
 * is kept in <root-dir>/cpu_manager_state in upstream's checkpoint format (v4: the v2 fields and checksum, plus
 * "data" and "dataChecksum"), written atomically after every change, read at start: a state of another policy,
 * or one that does not add up to the node's CPUs, refuses the start as upstream. Pure logic on the loop: no I/O
 * but the small state file. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/error.h"
#include "basic/macro.h"
#include "cm/cpumanager/cpuset.h"
#include "cm/cpumanager/topology.h"
#include "cm/topologymanager/topologymanager.h"

struct cpumanager_options {
        bool full_pcpus_only, strict_cpu_reservation, align_by_socket, distribute_cpus_across_numa,
                prefer_align_cpus_by_uncorecache;
};

struct cpumanager_config {
        const char *policy;                   /* "none" (NULL, "") or "static" */
        char **option_names, **option_values; /* cpuManagerPolicyOptions, NULL-terminated, same length */
        const char *reserved_system_cpus;     /* reservedSystemCPUs, NULL/"" when unset */
        int64_t reserved_cpu_milli;           /* kubeReserved.cpu + systemReserved.cpu */
        const char *state_dir;                /* the root dir: <state_dir>/cpu_manager_state; NULL: no state file */
        bool alpha_options;                   /* the gate CPUManagerPolicyAlphaOptions (off by default) */
        bool beta_options_off;                /* the gate CPUManagerPolicyBetaOptions turned off (on by default) */
        bool tm_single_numa_node;             /* topologyManagerPolicy single-numa-node (align-by-socket refuses it) */
};

struct cpumanager;

/* Takes the topology (freed on failure too). Errors are upstream's NewManager/Start ones. */
int cpumanager_new(const struct cpumanager_config *cfg, struct cpu_topology *topo, struct cpumanager **ret,
                   struct ck_error **ret_error);
struct cpumanager *cpumanager_free(struct cpumanager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct cpumanager *, cpumanager_free);

bool cpumanager_is_static(const struct cpumanager *m);
const struct cpu_topology *cpumanager_topology(const struct cpumanager *m);

/* The topology manager's provider (HintProvider): the hints of a container or a pod (upstream's static policy's
 * GetTopologyHints / GetPodTopologyHints: every set of NUMA nodes with enough free CPUs, the narrowest preferred;
 * no preference under none or for a container without exclusive CPUs), and a container's allocation with the
 * chosen affinity (its NUMA nodes' CPUs first): -ENOSPC with *ret_error (upstream's reason, SMTAlignmentError or
 * UnexpectedAdmissionError, and message) when it cannot be done. A pod already in the state keeps what it has. A
 * pod's allocations are undone together (cpumanager_rollback to a mark taken before the first: nothing of a
 * refused pod is kept) or stored (cpumanager_commit). */
int cpumanager_container_hints(const struct cpumanager *m, const struct pod *p, const struct container *c,
                               struct tm_hints *acc);
int cpumanager_pod_hints(const struct cpumanager *m, const struct pod *p, struct tm_hints *acc);
int cpumanager_allocate(struct cpumanager *m, const struct pod *p, const struct container *c,
                        const struct tm_hint *affinity, struct ck_error **ret_error);
struct cpumanager_mark {
        size_t n_entries;
        struct cpuset def;
};
struct cpumanager_mark cpumanager_mark(const struct cpumanager *m);
void cpumanager_rollback(struct cpumanager *m, const struct cpumanager_mark *mark);
void cpumanager_commit(struct cpumanager *m, const struct cpumanager_mark *mark);
/* the CPUs a container runs on: its exclusive ones, else the shared pool. false under the none policy. */
bool cpumanager_container_cpus(const struct cpumanager *m, const char *pod_uid, const char *container,
                               struct cpuset *ret);
/* its exclusive CPUs only (the pod resources API's cpu_ids): empty when none */
struct cpuset cpumanager_exclusive_cpus(const struct cpumanager *m, const char *pod_uid, const char *container);
/* the CPUs containers can get exclusively (GetAllocatableCPUs): empty under none */
struct cpuset cpumanager_allocatable(const struct cpumanager *m);
struct cpuset cpumanager_shared_pool(const struct cpumanager *m);
/* every container's exclusive CPUs together (getTotalAssignedExclusiveCPUs) */
struct cpuset cpumanager_all_exclusive(const struct cpumanager *m);
const struct cpumanager_options *cpumanager_options(const struct cpumanager *m);
/* released to the shared pool (RemoveContainer); true if the pool changed */
bool cpumanager_remove_container(struct cpumanager *m, const char *pod_uid, const char *container);
/* every pod not in active (NULL-terminated uids) is released (removeStaleState); true if the pool changed */
bool cpumanager_remove_stale(struct cpumanager *m, char *const *active_uids);
size_t cpumanager_n_entries(const struct cpumanager *m);

/* the static policy's takeByTopology: with distribute-cpus-across-numa upstream's takeByTopologyNUMADistributed
 * (in groups of a whole core's CPUs with full-pcpus-only), else takeByTopologyNUMAPacked, aligned by uncore
 * cache first with prefer-align-cpus-by-uncorecache; o NULL: packed (packed CPU sorting). -ENOSPC with a message
 * when it cannot. */
int cpumanager_take_by_topology_opts(const struct cpu_topology *t, const struct cpuset *available, int n,
                                     const struct cpumanager_options *o, struct cpuset *ret,
                                     struct ck_error **ret_error);
/* the guaranteed CPUs a container asks for (0: not exclusive) and a pod's total, as upstream counts them */
int cpumanager_container_guaranteed_cpus(const struct pod *p, const struct container *c);
int cpumanager_pod_guaranteed_cpus(const struct pod *p);

/* the checkpoint's text and its parsing, exposed for tests */
int cpumanager_state_format(const char *policy, const struct cpuset *def, char *const *uids, char *const *names,
                            const struct cpuset *sets, size_t n, char **ret);
uint32_t cpumanager_fnv32a(const char *s);
