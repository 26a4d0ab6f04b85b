/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The memory manager (pkg/kubelet/cm/memorymanager): policy "None" (the default: nothing is pinned) or "Static":
 * the containers of Guaranteed pods get their memory and huge pages reserved on a set of NUMA nodes (the topology
 * manager's affinity, else the narrowest that fits) and run with cpuset.mems on those nodes. The machine state
 * (per NUMA node and resource: total, systemReserved, allocatable, reserved, free; the number of assignments and
 * the group of nodes they share) and the assignments are kept in <root-dir>/memory_manager_state in upstream's
 * checkpoint format (v3: the v1 fields and checksum, plus "data" and "dataChecksum"), written atomically after every
 * change, read and checked against the machine at start (a state that does not add up refuses the start, as
 * upstream). The NUMA memory comes from sysfs (devices/system/node/nodeN/meminfo, hugepages/hugepages-<size>kB/
 * nr_hugepages) under a root the tests can point at. Pure logic on the loop: no I/O but the small state file. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/error.h"
#include "basic/macro.h"
#include "cm/topologymanager/topologymanager.h"

#define MM_MAX_RESOURCES 6 /* memory and huge page sizes */
#define MM_STATE_FILE "memory_manager_state"

/* the machine's NUMA memory (cadvisor's Topology: node.Memory and node.HugePages) */
struct mm_machine_node {
        int id;
        uint64_t memory; /* bytes */
        struct {
                uint64_t page_kb, pages;
        } hugepages[MM_MAX_RESOURCES - 1];
        size_t n_hugepages;
};
struct mm_machine {
        struct mm_machine_node nodes[TM_MAX_NUMA];
        size_t n;
};
/* the nodes of tm_numa_discover, each one's meminfo and huge pages; no NUMA node directory: no node (n == 0) */
int mm_machine_discover(const char *sysfs_root, struct mm_machine *ret, struct ck_error **ret_error);

/* reservedMemory: one entry per NUMA node and resource */
struct mm_reservation {
        int numa;
        char *resource; /* "memory", "hugepages-2Mi", ... */
        uint64_t bytes;
};
/* The --reserved-memory text, "0:memory=1Gi,hugepages-2Mi=0;1:memory=2Gi" (the config key's list is turned into
 * it by the options): -EINVAL with upstream's reason. */
int mm_parse_reserved(const char *text, struct mm_reservation **ret, size_t *ret_n, struct ck_error **ret_error);
void mm_reservations_free(struct mm_reservation *r, size_t n);
/* validateReservedMemory: every node exists, and per memory type the reservations add up to the node allocatable
 * reservation (node_reservation, as in struct mm_config) */
int mm_validate_reserved(const struct mm_machine *mach, const struct mm_reservation *rl, size_t n,
                         const char *node_reservation, struct ck_error **ret_error);
/* "memory" or "hugepages-<size>" */
bool mm_is_memory_resource(const char *name);

struct mm_config {
        const char *policy;          /* "None" (NULL, "") or "Static" */
        const char *reserved_memory; /* --reserved-memory's text, NULL/"" when unset */
        /* the node allocatable reservation (kube-reserved + system-reserved + the hard memory.available eviction
         * threshold for memory; the reserved huge pages), "memory=1124Mi,hugepages-2Mi=0" */
        const char *node_reservation;
        const char *state_dir; /* <state_dir>/memory_manager_state; NULL: no state file */
};

struct memorymanager;

/* NewManager + Start: errors are upstream's ("the total amount ... is not equal to the value ... determined by
 * Node Allocatable feature", "[memorymanager] you should specify the system reserved memory", a state that does
 * not match the machine...). */
int memorymanager_new(const struct mm_config *cfg, const struct mm_machine *machine, struct memorymanager **ret,
                      struct ck_error **ret_error);
struct memorymanager *memorymanager_free(struct memorymanager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct memorymanager *, memorymanager_free);

bool memorymanager_is_static(const struct memorymanager *m);

/* the topology manager's provider: hints (GetTopologyHints / GetPodTopologyHints) and the allocation with the
 * affinity chosen (Allocate: -ENOSPC with *ret_error, reason UnexpectedAdmissionError and upstream's message, when it
 * cannot). A
 * pod's allocations are undone together (memorymanager_rollback to a mark) or stored (memorymanager_commit). */
int memorymanager_container_hints(const struct memorymanager *m, const struct pod *p, const struct container *c,
                                  struct tm_hints *acc);
int memorymanager_pod_hints(const struct memorymanager *m, const struct pod *p, struct tm_hints *acc);
int memorymanager_allocate(struct memorymanager *m, const struct pod *p, const struct container *c,
                           const struct tm_hint *affinity, struct ck_error **ret_error);
struct mm_mark;
struct mm_mark *memorymanager_mark(const struct memorymanager *m);
void memorymanager_rollback(struct memorymanager *m, struct mm_mark *mark); /* frees mark */
void memorymanager_commit(struct memorymanager *m, struct mm_mark *mark);   /* frees mark */

/* a container's NUMA nodes (its cpuset.mems): 0 when it has no memory blocks */
uint64_t memorymanager_container_nodes(const struct memorymanager *m, const char *pod_uid, const char *container);
/* the pod resources API: a container's blocks, and the allocatable memory per NUMA node and resource */
typedef void (*mm_block_cb)(const char *resource, uint64_t size, uint64_t numa_mask, void *userdata);
void memorymanager_foreach_container_block(const struct memorymanager *m, const char *pod_uid, const char *container,
                                           mm_block_cb cb, void *userdata);
void memorymanager_foreach_allocatable(const struct memorymanager *m, mm_block_cb cb, void *userdata);
/* RemoveContainer, and removeStaleState (every pod not in active, a NULL-terminated strv, is released) */
void memorymanager_remove_container(struct memorymanager *m, const char *pod_uid, const char *container);
void memorymanager_remove_stale(struct memorymanager *m, char *const *active_uids);
size_t memorymanager_n_entries(const struct memorymanager *m);

/* "hugepages-2Mi" of a page size in kB (resource.NewQuantity(size*1024, BinarySI)); into buf */
const char *mm_hugepage_name(uint64_t page_kb, char *buf, size_t size);
/* the checkpoint's text, exposed for tests */
int memorymanager_state_text(const struct memorymanager *m, char **ret);
