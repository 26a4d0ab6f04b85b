/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Container and sandbox garbage collection (upstream pkg/kubelet/kuberuntime/kuberuntime_gc.go), the
 * selection part: pure functions over what the runtime lists, unit-tested. gc_manager.c runs them.
 *
 * Containers: the ones not running and created at least MinAge ago are evictable, grouped by (pod UID,
 * container name). With every source heard from, the groups of pods that are deleted (or terminated, when
 * asked) go entirely; then each group keeps its MaxPerPodContainer newest; then, if more than MaxContainers are
 * left, every group is cut to an equal share (at least 1) and then the oldest go. Sandboxes: a sandbox that is
 * not ready and holds no container is removed, except the newest of a pod that still exists. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/time.h"

/* kubecontainer.GCPolicy */
struct kr_gc_policy {
        uint64_t min_age_usec;     /* --minimum-container-ttl-duration, 0 */
        int max_per_pod_container; /* --maximum-dead-containers-per-container, 1; negative: no limit */
        int max_containers;        /* --maximum-dead-containers, -1: no limit */
};

struct kr_gc_container {
        const char *id;
        const char *sandbox_id;
        const char *pod_uid; /* io.kubernetes.pod.uid */
        const char *name;    /* metadata.name */
        int64_t created_nsec;
        bool running; /* CONTAINER_RUNNING: never evictable */
        bool unknown; /* CONTAINER_UNKNOWN: stopped before it is removed */
};

struct kr_gc_sandbox {
        const char *id;
        const char *pod_uid;
        int64_t created_nsec;
        bool ready;
};

/* What the kubelet knows of a pod UID (upstream's podStateProvider). */
struct kr_gc_pods {
        bool (*deleted)(const char *uid, void *userdata);    /* no source wants it any more */
        bool (*terminated)(const char *uid, void *userdata); /* wanted, but finished for good (evicted, ...) */
        void *userdata;
};

/* The containers to remove, oldest of each group first; borrowed from `containers`. ret_unknown[i] says to stop
 * ret[i] first. */
int kr_gc_select_containers(const struct kr_gc_policy *policy, const struct kr_gc_container *containers, size_t n,
                            const struct kr_gc_pods *pods, bool all_sources_ready, bool evict_terminated_pods,
                            uint64_t now_realtime_usec, const struct kr_gc_container ***ret, size_t *ret_n);

/* The sandboxes to remove (evictSandboxes), given the containers that are left. */
int kr_gc_select_sandboxes(const struct kr_gc_sandbox *sandboxes, size_t n, const struct kr_gc_container *containers,
                           size_t n_containers, const struct kr_gc_pods *pods, bool evict_terminated_pods,
                           const struct kr_gc_sandbox ***ret, size_t *ret_n);
