/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The container garbage collector on the loop (upstream containerGC.GarbageCollect, run by the kubelet every
 * minute, and DeleteAllUnusedContainers for the eviction manager): lists every container and sandbox over CRI,
 * removes the dead containers gc.c picks (stopping those in an unknown state first), lists again and removes the
 * sandboxes it picks. The last listing is handed to `listed` so that the container log manager can clean up the
 * log files and directories of what is gone. */

#include <event2/event.h>
#include <stdbool.h>

#include "cri/cri.h"
#include "kuberuntime/gc.h"

struct kr_container_gc;

typedef void (*kr_container_gc_done_fn)(int r, void *userdata);

struct kr_container_gc_config {
        struct kr_gc_policy policy;
        struct kr_gc_pods pods;
        bool (*all_sources_ready)(void *userdata);
        /* after a pass: the containers the runtime has now (borrowed for the call) */
        void (*listed)(const Runtime__V1__ListContainersResponse *containers, void *userdata);
        /* optional: may this container or sandbox be removed now? (false: a removal the runtime refused is in
         * back-off); and the outcome of each removal tried (r < 0: the runtime's message; the callee logs it, the
         * collector does not) */
        bool (*may_remove)(const char *id, void *userdata);
        void (*removed)(bool sandbox, const char *id, const char *pod_uid, int r, const char *message, void *userdata);
        void *userdata;
};

int kr_container_gc_new(struct event_base *base, struct cri_client *cri, const struct kr_container_gc_config *cfg,
                        struct kr_container_gc **ret);
/* Waiting callers are told -ECANCELED; CRI calls in flight end into nothing. Accepts NULL, returns NULL. */
struct kr_container_gc *kr_container_gc_free(struct kr_container_gc *g);

/* One pass; evict_terminated_pods also removes every dead container of pods that finished for good
 * (DeleteAllUnusedContainers). Coalesced with a pass in flight. done may be NULL, never runs inside the call. */
int kr_container_gc_collect(struct kr_container_gc *g, bool evict_terminated_pods, kr_container_gc_done_fn done,
                            void *userdata);
