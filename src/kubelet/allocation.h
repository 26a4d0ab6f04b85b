/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* In-place pod resize (pkg/kubelet/allocation): the resources each pod's containers were admitted with, or last
 * resized to (their allocation), kept in a checkpoint under --root-dir (allocated_pods_state) so that a restart
 * neither forgets a resize nor takes an unadmitted one; whether a change of a pod's resources can be allocated
 * (handlePodResourcesResize, canResizePod); and the pod as its allocation has it, which is what the sync pass
 * runs. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "kubelet/admission.h"

#define ALLOCATION_STATE_FILE "allocated_pods_state"
#define ALLOCATION_STATE_MAX (16 * 1024 * 1024)

/* ---------------------------------------------------------------- pure */

/* The allocation of a pod: {"<container>": <its resources object>} over its containers and sidecars. */
int kubelet_allocation_from_pod(const struct pod *pod, json_t **ret);
/* Does the pod's spec ask for other resources than its allocation? */
bool kubelet_allocation_differs(const json_t *alloc, const struct pod *pod);
/* The pod as its allocation has it: its document with each container's resources replaced by the allocated ones,
 * decoded and defaulted again (UpdatePodFromAllocation). */
int kubelet_pod_with_allocation(const struct pod *pod, const json_t *alloc, struct pod **ret);

enum resize_verdict {
        RESIZE_NONE,       /* the spec is the allocation: nothing pending */
        RESIZE_ACCEPTED,   /* allocate it (ResizeStarted) */
        RESIZE_DEFERRED,   /* it does not fit next to the other pods now (reason Deferred) */
        RESIZE_INFEASIBLE, /* it can never fit on this node, or is not allowed (reason Infeasible) */
};
/* handlePodResourcesResize + canResizePod for a pod whose spec (desired) differs from its allocation: Infeasible
 * for a static pod or requests over the node's allocatable ("Node didn't have enough capacity: memory, requested:
 * N, capacity: N"), Deferred when the other pods' allocations leave no room (the admission message), else
 * accepted. others: the other admitted pods as allocated. *ret_message is allocated (NULL when accepted). */
enum resize_verdict kubelet_resize_decide(const struct pod *desired, bool is_static, const struct pod *const *others,
                                          size_t n_others, const struct admission_node *node, char **ret_message);

/* "Pod resize started: {...}" and the like (events.PodResizeStartedMsg: a JSON summary of the containers'
 * resources and the pod's generation, with an error when given). NULL on OOM. */
char *kubelet_resize_message(const char *prefix, const struct pod *pod, int64_t generation, const char *error);

/* ---------------------------------------------------------------- the checkpoint */

struct allocation_state;

/* Read <dir>/allocated_pods_state (a missing file is an empty state; one that does not parse is logged and
 * replaced). */
int kubelet_allocation_load(const char *dir, struct allocation_state **ret);
struct allocation_state *kubelet_allocation_free(struct allocation_state *st);            /* accepts NULL */
const json_t *kubelet_allocation_get(const struct allocation_state *st, const char *uid); /* borrowed, NULL */
/* Set (takes alloc) or remove (alloc NULL) a pod's allocation and write the checkpoint. */
int kubelet_allocation_set(struct allocation_state *st, const char *uid, json_t *alloc);
/* Remove the pods keep() does not claim (RemoveOrphanedPods). */
void kubelet_allocation_remove_orphans(struct allocation_state *st, bool (*keep)(const char *uid, void *userdata),
                                       void *userdata);
