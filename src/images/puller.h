/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The image pull queue on the loop (upstream pkg/kubelet/images puller.go): every PullImage the kubelet issues
 * waits here for its turn. Serialized (serializeImagePulls, the default) one pull runs at a time, the others wait
 * in the order they were asked for; parallel, up to maxParallelImagePulls run at once (no limit when unset).
 *
 * A request is a ticket the caller embeds in its own state. image_puller_enqueue() puts it at the back of the
 * queue; when its turn comes, its start function runs (always from the loop, never inside a call of this module)
 * and the caller issues the pull; when the pull ends the caller gives the slot back with image_puller_release().
 * A waiting request can leave the queue: image_puller_release() quietly (the caller is going away), or
 * image_puller_withdraw(), after which start runs with -ECANCELED (the caller wants to hear it from the loop). */

#include <event2/event.h>
#include <stdbool.h>

struct image_puller;

/* r: 0, issue the pull now; -ECANCELED: withdrawn while waiting */
typedef void (*image_pull_start_fn)(void *userdata, int r);

enum image_pull_state {
        IMAGE_PULL_IDLE,     /* not in the puller */
        IMAGE_PULL_WAITING,  /* in the queue */
        IMAGE_PULL_STARTING, /* its turn came (or it was withdrawn); start is about to run */
        IMAGE_PULL_RUNNING,  /* started: holds a slot until released */
};

struct image_pull_ticket {
        enum image_pull_state state;
        int result; /* for start: 0 or -ECANCELED */
        image_pull_start_fn start;
        void *userdata;
        struct image_pull_ticket *prev, *next; /* in the queue */
};

/* serialize: one at a time; else max_parallel at once (0: no limit) */
int image_puller_new(struct event_base *base, bool serialize, unsigned max_parallel, struct image_puller **ret);
/* Waiting tickets are dropped without a call. Accepts NULL, returns NULL. */
struct image_puller *image_puller_free(struct image_puller *p);

/* Queue T (idle) at the back; start runs from the loop when a slot is free. */
void image_puller_enqueue(struct image_puller *p, struct image_pull_ticket *t, image_pull_start_fn start,
                          void *userdata);
/* A waiting T leaves the queue and its start runs with -ECANCELED (from the loop). Returns true when it did;
 * false when T was not waiting (a running pull goes on). */
bool image_puller_withdraw(struct image_puller *p, struct image_pull_ticket *t);
/* T is done with: a running pull gives its slot to the next one, a waiting or starting one leaves without a call.
 * T is idle afterwards. P may be NULL (then T must be idle). */
void image_puller_release(struct image_puller *p, struct image_pull_ticket *t);

unsigned image_puller_running(const struct image_puller *p);
unsigned image_puller_waiting(const struct image_puller *p);
