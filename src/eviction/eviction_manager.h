/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The eviction manager (upstream pkg/kubelet/eviction/eviction_manager.go) on the loop. Every monitoring period
 * (10 s), and at once when a kernel memory notification says a memory threshold was crossed, it takes a Summary,
 * derives the signals and decides (helpers.h): the node conditions to report (held for the pressure transition
 * period), then pods over their local ephemeral storage limits are evicted; otherwise, for a threshold met
 * with its grace period, node-level resources are reclaimed first for disk signals (dead containers, then unused
 * images) and, if that was not enough, one pod is evicted, ranked as upstream, and the manager waits until that
 * pod is cleaned up (at most 30 s) before it looks again. Evicting goes through the kubelet (ops->evict): the pod's
 * status (Failed, reason Evicted, upstream's message), the Evicted event, and the normal kill path. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/error.h"
#include "cri/cri.h"
#include "eviction/api.h"
#include "stats/summary.h"

struct eviction_manager;

typedef void (*eviction_done_fn)(int r, void *userdata);

/* What the manager needs from the kubelet. */
struct eviction_ops {
        /* the pods admitted and not finished (eviction candidates); borrowed until the next call */
        const struct pod *const *(*active_pods)(void *userdata, size_t *ret_n);
        /* evict: status and event with the message, then kill with this grace period (-1: the pod's own) */
        int (*evict)(void *userdata, const struct pod *pod, const char *message, int64_t grace_seconds);
        /* is nothing of the pod running any more? */
        bool (*cleaned_up)(void *userdata, const char *uid);
        /* the UIDs of pods already evicted (before a restart of the kubelet, say) that are not cleaned up yet: their
         * memory and disk are about to come back, so nothing more is evicted before they are (NULL: none) */
        char **(*terminating)(void *userdata);
        /* node-level reclaim; done runs later, exactly once, when the call returned 0 */
        int (*delete_unused_containers)(void *userdata, eviction_done_fn done, void *done_userdata);
        int (*delete_unused_images)(void *userdata, eviction_done_fn done, void *done_userdata);
        /* the node conditions changed (NODE_*_PRESSURE bits) */
        void (*conditions_changed)(void *userdata, unsigned conditions);
        /* an event about the node */
        void (*node_event)(void *userdata, const char *type, const char *reason, const char *message);
        /* the image filesystem as observed (image GC reacts to it); may be NULL */
        void (*image_fs_observed)(void *userdata, int64_t capacity, int64_t available);
        /* the size of the pod's managed /etc/hosts, 0 without one; may be NULL */
        uint64_t (*etc_hosts_bytes)(void *userdata, const char *uid);
};

struct eviction_config {
        const struct eviction_threshold *thresholds; /* borrowed for the manager's lifetime */
        size_t n_thresholds;
        uint64_t pressure_transition_period_usec;
        int64_t max_pod_grace_period_seconds; /* for soft thresholds; negative: the pod's own */
        bool kernel_memcg_notification;
        const char *pods_cgroup; /* cgroupfs path of the pods' cgroup (allocatable thresholds), NULL: none */
        const char *root_dir;    /* --root-dir: nodefs (a dedicated image filesystem is another device) */
        uint64_t monitoring_period_usec;
};

int eviction_manager_new(struct event_base *base, struct stats_provider *stats, struct cri_client *cri,
                         const struct eviction_config *cfg, const struct eviction_ops *ops, void *userdata,
                         struct eviction_manager **ret);
/* CRI and stats calls in flight end into nothing. Accepts NULL, returns NULL. */
struct eviction_manager *eviction_manager_free(struct eviction_manager *m);
int eviction_manager_start(struct eviction_manager *m);

/* Admission under pressure (eviction_admit with the conditions now): 0, or -ENOSPC with *ret_error. */
int eviction_manager_admit(const struct eviction_manager *m, const struct pod *pod, struct ck_error **ret_error);
