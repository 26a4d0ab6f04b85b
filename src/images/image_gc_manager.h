/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The image garbage collector on the loop (upstream realImageGCManager and the image part of the kubelet's
 * StartGarbageCollection): every 5 minutes, and whenever the image filesystem is seen above the high threshold
 * (image_gc_usage_observed), it lists the images and every container (running or not) over CRI, updates the
 * records, removes images unused for longer than imageMaximumGCAge, and when the filesystem's usage (statvfs of
 * the mount point ImageFsInfo names) is at or above imageGCHighThresholdPercent removes unused, unpinned images
 * least recently used first until the low threshold is reached. The sandbox image (--pod-infra-container-image)
 * and images the runtime pins are never removed. A failure to free enough is a FreeDiskSpaceFailed event on the
 * node; repeated failures an ImageGCFailed event. The records are saved under --root-dir by a worker thread
 * (atomic rename), so a restart keeps the last-used times. */

#include <event2/event.h>
#include <stdint.h>

#include "basic/workpool.h"
#include "cri/cri.h"
#include "images/image_gc.h"

struct image_gc_manager;

/* A Warning event about the node ("FreeDiskSpaceFailed", ...). */
typedef void (*image_gc_event_fn)(void *userdata, const char *reason, const char *message);
/* r: 0, or a negative errno when the collection failed or could not free enough. */
typedef void (*image_gc_done_fn)(int r, void *userdata);
/* After each listing: the ids of the images the runtime has, listed from listed_usec (realtime) on (upstream's
 * post-GC hooks: the pulled-image records of images gone are pruned). */
typedef void (*image_gc_listed_fn)(void *userdata, const char *const *ids, size_t n, int64_t listed_usec);

struct image_gc_config {
        struct image_gc_policy policy;
        const char *sandbox_image; /* --pod-infra-container-image; NULL: none */
        const char *state_path;    /* where the records are saved */
        image_gc_event_fn event;
        void *event_userdata;
        image_gc_listed_fn listed; /* NULL: none */
        void *listed_userdata;
};

int image_gc_manager_new(struct event_base *base, struct cri_client *cri, struct workpool *pool,
                         const struct image_gc_config *cfg, struct image_gc_manager **ret);
/* In-flight CRI calls end into nothing; waiting callers are told -ECANCELED. Accepts NULL, returns NULL. */
struct image_gc_manager *image_gc_manager_free(struct image_gc_manager *m);
/* Start the periodic collection (the first one a little after start-up). */
int image_gc_manager_start(struct image_gc_manager *m);

/* DeleteUnusedImages (the eviction manager's node-level reclaim): every unused image old enough. */
int image_gc_delete_unused(struct image_gc_manager *m, image_gc_done_fn done, void *userdata);
/* The image filesystem's figures as someone else saw them: collects now when at or above the high threshold. */
void image_gc_usage_observed(struct image_gc_manager *m, int64_t capacity, int64_t available);
