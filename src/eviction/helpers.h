/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The eviction manager's decisions (upstream pkg/kubelet/eviction/helpers.go and the first half of
 * synchronize()), as pure functions over a Summary (struct stats_summary), the pods and the time: signal
 * observations, thresholds met, grace periods, node conditions with their transition period, the ranking of pods,
 * the eviction message, local ephemeral storage limits and admission under pressure. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/error.h"
#include "basic/time.h"
#include "eviction/api.h"
#include "stats/summary.h"

/* At most this many thresholds: every signal hard and soft, plus the allocatable copies. */
#define EVICTION_MAX_THRESHOLDS 32

struct eviction_observation {
        bool present;
        int64_t available;
        int64_t capacity;
        uint64_t time_usec; /* when it was observed (monotonic) */
};

struct eviction_observations {
        struct eviction_observation s[_EVICTION_SIGNAL_MAX];
};

/* One pod of the Summary (what statsFunc returns). */
struct eviction_fs_usage {
        bool present;
        uint64_t used_bytes;
        bool has_inodes;
        uint64_t inodes_used;
};

struct eviction_container_stats {
        char *name;
        bool has_memory;
        uint64_t working_set_bytes;
        struct eviction_fs_usage rootfs, logs;
};

struct eviction_volume_stats {
        char *name;
        struct eviction_fs_usage fs;
};

struct eviction_pod_stats {
        char *uid;
        bool has_memory;
        uint64_t working_set_bytes;
        bool has_process_count;
        uint64_t process_count;
        struct eviction_container_stats *containers;
        size_t n_containers;
        struct eviction_volume_stats *volumes;
        size_t n_volumes;
};

struct eviction_stats {
        struct eviction_observations obs;
        struct eviction_pod_stats *pods; /* sorted by uid */
        size_t n_pods;
};

/* makeSignalObservations: the signals from the Summary's node section and the pods' stats. Every observation is
 * stamped with observed_usec (when the Summary was collected). -EINVAL when summary is NULL. */
int eviction_stats_from_summary(const struct stats_summary *summary, uint64_t observed_usec,
                                struct eviction_stats *ret);
void eviction_stats_done(struct eviction_stats *s);
const struct eviction_pod_stats *eviction_stats_find_pod(const struct eviction_stats *s, const char *uid);

/* thresholdsMet: the thresholds among `candidates` (a bit per index) whose signal's available amount is below
 * the threshold's quantity (plus the minimum reclaim when enforce_min_reclaim). */
uint32_t eviction_thresholds_met(const struct eviction_threshold *t, size_t n, uint32_t candidates,
                                 const struct eviction_observations *obs, bool enforce_min_reclaim);

/* The manager's memory between synchronizations. */
struct eviction_state {
        uint64_t first_observed_usec[EVICTION_MAX_THRESHOLDS]; /* 0: not being met */
        uint32_t thresholds_met;                               /* met with the grace period, not yet resolved */
        uint64_t condition_last_observed_usec[3];              /* by condition bit index; 0: never */
        unsigned conditions;                                   /* reported now (transition period included) */
        struct eviction_observations last;                     /* the previous observations */
        bool have_last;
};

struct eviction_decision {
        unsigned conditions;             /* the node conditions to report */
        uint32_t met;                    /* thresholds met with their grace period, whose stats are new */
        bool reclaim;                    /* something has to be reclaimed: */
        size_t threshold;                /* the threshold to act on (memory first), */
        enum eviction_resource resource; /* and its resource */
};

/* The first half of synchronize(): thresholds met, those not yet resolved (minimum reclaim), when each was first
 * met, the node conditions (held for the transition period), the thresholds whose grace period is over and whose
 * observation is newer than the last one, and which one to reclaim. Updates st. */
void eviction_synchronize(const struct eviction_threshold *t, size_t n, uint64_t transition_period_usec,
                          struct eviction_state *st, const struct eviction_observations *obs, uint64_t now_usec,
                          struct eviction_decision *ret);

/* Node conditions as the node status names them, "[MemoryPressure DiskPressure]" as Go prints the slice. */
char *eviction_conditions_format(unsigned conditions);

/* ---- pods ---- */

/* kubetypes.IsCriticalPod: a static pod, a mirror pod, or priority >= 2000000000 (system-critical). */
bool eviction_pod_is_critical(const struct pod *pod);

struct eviction_candidate {
        const struct pod *pod;
        const struct eviction_pod_stats *stats; /* NULL: no stats (ranked first) */
};

/* The rank function of the signal (buildSignalToRankFunc): memory: exceeds its memory request, then priority, then
 * usage above the request; disk (nodefs/imagefs, bytes or inodes): the same with the fs stats the signal
 * measures (with a dedicated image filesystem nodefs counts logs and local volumes, imagefs the writable layers;
 * without one, all of them); pids: priority, then process count. In place, most evictable first. */
void eviction_rank(enum eviction_signal signal, bool dedicated_image_fs, struct eviction_candidate *pods, size_t n);

/* The pod's status message when evicted for a threshold (evictionMessage): "The node was low on resource: memory.
 * Threshold quantity: 100Mi, available: 81920Ki. Container c was using 500Mi, which exceeds its request of 0. "
 * `met` selects the thresholds the quantity is taken from. NULL on OOM. */
char *eviction_message(enum eviction_resource resource, const struct pod *pod, const struct eviction_pod_stats *stats,
                       const struct eviction_threshold *t, size_t n, uint32_t met,
                       const struct eviction_observations *obs);

/* localStorageEviction for one pod: its emptyDir volumes over their sizeLimit, its total ephemeral usage over the
 * sum of its containers' ephemeral-storage limits, a container's rootfs and logs over its limit (rootfs only
 * without a dedicated image filesystem). etc_hosts_bytes: the size of the pod's managed /etc/hosts (counted in
 * the pod's usage), 0 without one. true with *ret_message (upstream's words) when it must be evicted. */
bool eviction_local_storage_exceeded(const struct pod *pod, const struct eviction_pod_stats *stats,
                                     bool dedicated_image_fs, uint64_t etc_hosts_bytes, char **ret_message);

/* The eviction manager's admission (Admit): under no pressure everything; critical pods always; under memory
 * pressure alone every pod but BestEffort ones that do not tolerate node.kubernetes.io/memory-pressure; under any
 * other pressure nothing. 0, or -ENOSPC with *ret_error (reason "Evicted", message "The node had condition:
 * [DiskPressure]. ") when refused; -ENOMEM. */
int eviction_admit(unsigned conditions, const struct pod *pod, struct ck_error **ret_error);
