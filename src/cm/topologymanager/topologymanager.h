/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The topology manager (pkg/kubelet/cm/topologymanager): at admission it asks its hint providers (the CPU manager,
 * the device manager, the memory manager) which NUMA nodes each resource of a container (scope "container") or of
 * the whole pod (scope "pod") could come from, merges the hints under its policy (none, best-effort, restricted,
 * single-numa-node) and either refuses the pod (TopologyAffinityError, "Resources cannot be allocated with Topology
 * locality") or has every provider allocate with the chosen NUMA affinity. Pure logic: the NUMA nodes and their
 * distances are read once at start (tm_numa_discover). NUMA nodes are ids 0..63, a set of them a uint64_t mask. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/error.h"
#include "basic/macro.h"

#define TM_MAX_NUMA 64
#define TM_DEFAULT_MAX_ALLOWABLE_NUMA_NODES 8 /* defaultMaxAllowableNUMANodes */
#define TM_ERROR_REASON "TopologyAffinityError"
#define TM_ERROR_MESSAGE "Resources cannot be allocated with Topology locality"

enum tm_policy { TM_POLICY_NONE, TM_POLICY_BEST_EFFORT, TM_POLICY_RESTRICTED, TM_POLICY_SINGLE_NUMA_NODE };
enum tm_scope { TM_SCOPE_CONTAINER, TM_SCOPE_POD };

/* a TopologyHint: has_affinity false is upstream's nil NUMANodeAffinity ("any") */
struct tm_hint {
        uint64_t affinity;
        bool has_affinity, preferred;
};

/* Every provider's hints for one container or pod, already in the form upstream's filterProvidersHints gives them:
 * one list per (provider, resource). */
struct tm_hint_list {
        struct tm_hint *v;
        size_t n;
};
struct tm_hints {
        struct tm_hint_list *lists;
        size_t n;
};
/* a provider with no preference at all, or a resource with nil hints: [{nil, preferred}] */
int tm_hints_add_any(struct tm_hints *h);
/* a resource's hints; none at all (no possible affinity) is [{nil, not preferred}] */
int tm_hints_add(struct tm_hints *h, const struct tm_hint *v, size_t n);
void tm_hints_done(struct tm_hints *h);

/* the NUMA nodes (ids ascending) and their distances (distances[i][j] between nodes[i] and nodes[j]) */
struct tm_numa {
        int nodes[TM_MAX_NUMA];
        size_t n;
        uint64_t distances[TM_MAX_NUMA][TM_MAX_NUMA];
        bool has_distances;
};
/* <sysfs_root>/devices/system/node/node<N>/distance; no node directory at all: one node 0 (a machine without NUMA) */
int tm_numa_discover(const char *sysfs_root, struct tm_numa *ret, struct ck_error **ret_error);

struct tm_options {
        bool prefer_closest_numa;
        int max_allowable_numa_nodes;
};

struct tm_config {
        const char *policy, *scope;           /* "" / NULL: "none", "container" */
        char **option_names, **option_values; /* topologyManagerPolicyOptions, NULL-terminated */
};

struct topologymanager {
        enum tm_policy policy;
        enum tm_scope scope;
        struct tm_options opts;
        struct tm_numa numa;
};

/* the names only (the configuration's validation): upstream's messages */
int tm_parse_policy(const char *s, enum tm_policy *ret, struct ck_error **ret_error);
int tm_parse_scope(const char *s, enum tm_scope *ret, struct ck_error **ret_error);
int tm_parse_options(char *const *names, char *const *values, struct tm_options *ret, struct ck_error **ret_error);

/* NewManager: takes a copy of numa. Refuses more NUMA nodes than max-allowable-numa-nodes (not under none), and
 * prefer-closest-numa-nodes without distances. */
int tm_init(struct topologymanager *m, const struct tm_config *cfg, const struct tm_numa *numa,
            struct ck_error **ret_error);

static inline uint64_t tm_default_affinity(const struct tm_numa *n) {
        uint64_t m = 0;
        for (size_t i = 0; i < n->n; i++)
                m |= UINT64_C(1) << n->nodes[i];
        return m;
}
static inline int tm_count(uint64_t m) {
        return __builtin_popcountll(m);
}
/* IsNarrowerThan: fewer nodes, or as many and numerically lower */
static inline bool tm_narrower(uint64_t a, uint64_t b) {
        return tm_count(a) == tm_count(b) ? a < b : tm_count(a) < tm_count(b);
}
/* IterateBitMasks: every non-empty subset of the nodes, by size then in lexicographic order of node ids */
void tm_iterate_masks(const int *nodes, size_t n, void (*cb)(uint64_t mask, void *userdata), void *userdata);

/* The device manager's hints for one resource (generateDeviceTopologyHints): the devices' NUMA nodes (-1: none),
 * all of the resource's and those that may serve the request (the available ones, or the ones allocated): every
 * set of the devices' NUMA nodes holding `request` of the latter, the narrowest that could hold as many of all
 * preferred; no device with a NUMA node: no preference. */
int tm_device_hints(const int64_t *all, size_t n_all, const int64_t *usable, size_t n_usable, int request,
                    struct tm_hints *acc);

/* Policy.Merge: the best hint and whether the pod may be admitted with it */
bool tm_merge(const struct topologymanager *m, const struct tm_hints *h, struct tm_hint *ret);

/* A hint provider (HintProvider): hints for a container (container scope) or a pod (pod scope), then the
 * allocation with the chosen affinity. allocate returns -ENOSPC with *ret_error (upstream's reason and message)
 * to refuse the pod, another negative errno on failure. */
struct tm_provider {
        void *userdata;
        int (*container_hints)(void *userdata, const struct pod *p, const struct container *c, struct tm_hints *acc);
        int (*pod_hints)(void *userdata, const struct pod *p, struct tm_hints *acc);
        int (*allocate)(void *userdata, const struct pod *p, const struct container *c, const struct tm_hint *affinity,
                        struct ck_error **ret_error);
};

/* Admit: 0 when every provider allocated; -ENOSPC with *ret_error (its reason TopologyAffinityError or a
 * provider's, and the message) when refused; what providers allocated before a refusal is theirs to roll back. Under the none policy the
 * providers allocate with no affinity, as upstream's admitPolicyNone. */
int tm_admit(const struct topologymanager *m, const struct pod *p, const struct tm_provider *providers, size_t n,
             struct ck_error **ret_error);

/* "0-1,3" of a mask: into buf */
const char *tm_mask_format(uint64_t m, char *buf, size_t size);
