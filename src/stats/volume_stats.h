/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The disk usage of the pods' volumes (upstream's fsResourceAnalyzer / volumeStatCalculator): every
 * volumeStatsAggPeriod a worker thread measures each volume directory <root-dir>/pods/<uid>/volumes/<plugin>/<name>
 * (du: bytes and inodes, bounded), never on the loop; the Summary API and the eviction manager read the cached
 * figures. */

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct stats_volume_usage {
        char *pod_uid;
        char *name;   /* the volume's name */
        char *plugin; /* "kubernetes.io~empty-dir", ... */
        uint64_t used_bytes;
        uint64_t inodes_used;
        bool same_fs;       /* on the filesystem of --root-dir (a memory-backed emptyDir is not) */
        uint64_t time_usec; /* realtime, when it was measured */
};

struct stats_volumes;

/* period_usec 0: never measured. */
int stats_volumes_new(struct event_base *base, const char *root_dir, uint64_t period_usec, struct stats_volumes **ret);
/* Waits for a measurement in flight. Accepts NULL, returns NULL. */
struct stats_volumes *stats_volumes_free(struct stats_volumes *v);
int stats_volumes_start(struct stats_volumes *v);
/* The volumes of a pod from the last measurement (borrowed until the next one completes); *ret_n = 0 if none. */
const struct stats_volume_usage *stats_volumes_pod(const struct stats_volumes *v, const char *uid, size_t *ret_n);
/* Is the plugin's volume counted as local ephemeral storage (IsLocalEphemeralVolume: emptyDir on disk, configMap,
 * gitRepo)? */
bool stats_volumes_is_local_ephemeral(const struct stats_volume_usage *u);
