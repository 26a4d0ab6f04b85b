/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Eviction signals and thresholds (upstream pkg/kubelet/eviction/api). A threshold says "evict when the
 * available amount of a signal drops below this quantity or this fraction of its capacity"; a soft one only once
 * that held for its grace period; a minimum reclaim asks for that much more before the pressure counts as
 * resolved. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ck_error;

enum eviction_signal {
        EVICTION_SIGNAL_MEMORY_AVAILABLE,             /* memory.available: capacity - working set of the node */
        EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, /* allocatableMemory.available: the pods' cgroup (kubepods) */
        EVICTION_SIGNAL_NODEFS_AVAILABLE,             /* nodefs.available: the filesystem of --root-dir */
        EVICTION_SIGNAL_NODEFS_INODES_FREE,           /* nodefs.inodesFree */
        EVICTION_SIGNAL_IMAGEFS_AVAILABLE,            /* imagefs.available: the runtime's image filesystem */
        EVICTION_SIGNAL_IMAGEFS_INODES_FREE,          /* imagefs.inodesFree */
        EVICTION_SIGNAL_PID_AVAILABLE,                /* pid.available: max pids - running processes */
        _EVICTION_SIGNAL_MAX,
};

/* What reclaiming a signal frees (signalToResource). */
enum eviction_resource {
        EVICTION_RESOURCE_MEMORY,            /* "memory" */
        EVICTION_RESOURCE_EPHEMERAL_STORAGE, /* "ephemeral-storage" */
        EVICTION_RESOURCE_INODES,            /* "inodes" */
        EVICTION_RESOURCE_PIDS,              /* "pids" */
};

/* The node conditions the signals drive (signalToNodeCondition), as bits. */
enum {
        EVICTION_MEMORY_PRESSURE = 1 << 0,
        EVICTION_DISK_PRESSURE = 1 << 1,
        EVICTION_PID_PRESSURE = 1 << 2,
};

enum eviction_resource eviction_signal_resource(enum eviction_signal s);
const char *eviction_resource_to_string(enum eviction_resource r);

struct eviction_value {
        bool is_percentage;
        float percentage;   /* a fraction, 0.1 for "10%" (float32 as upstream, for the same rounding) */
        int64_t quantity;   /* bytes or a count, rounded up as Quantity.Value() */
        char *quantity_str; /* its canonical form, for messages */
};

struct eviction_threshold {
        enum eviction_signal signal;
        struct eviction_value value;
        uint64_t grace_period_usec; /* 0: a hard threshold */
        bool has_min_reclaim;
        struct eviction_value min_reclaim;
};

/* GetThresholdQuantity: the quantity, or the fraction of capacity (truncated). */
int64_t eviction_value_quantity(const struct eviction_value *v, int64_t capacity);

/* ParseThresholdConfig: hard thresholds, then soft ones (each needs a grace period), minimum reclaims attached
 * by signal; with "pods" in enforce_node_allocatable (a comma list), every hard memory.available threshold is
 * copied to allocatableMemory.available. The maps are "signal=value,signal=value" (options.h); a later key
 * replaces an earlier one. "0%" and "100%" thresholds are ignored, as upstream. Errors have upstream's words
 * in *ret_error: "unsupported eviction signal foo", "grace period must be specified for the soft eviction
 * threshold memory.available", "eviction threshold memory.available must be positive: 0", ... */
int eviction_parse_thresholds(const char *enforce_node_allocatable, const char *hard, const char *soft,
                              const char *soft_grace_period, const char *minimum_reclaim,
                              struct eviction_threshold **ret, size_t *ret_n, struct ck_error **ret_error);
void eviction_thresholds_free(struct eviction_threshold *t, size_t n);

/* Formats a threshold for logs: "threshold(signal=memory.available, value=100Mi, gracePeriod=0s)". */
char *eviction_threshold_format(const struct eviction_threshold *t);
