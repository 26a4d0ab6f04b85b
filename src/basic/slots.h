/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Slots on the loop: at most LIMIT holders at once, the others waiting in the order they asked. Two queues of the
 * kubelet are made of it: the image pull queue (upstream pkg/kubelet/images puller.go: serializeImagePulls one pull
 * at a time, else up to maxParallelImagePulls) and the sandbox creations (--max-parallel-sandbox-creations: how
 * many RunPodSandbox calls are in flight at once).
 *
 * A request is a ticket the caller embeds in its own state. slots_enqueue() puts it at the back of the queue; when
 * its turn comes, its start function runs (always from the loop, never inside a call of this module) and the
 * caller does its work; when the work ends the caller gives the slot back with slots_release(). A waiting request
 * can leave the queue: slots_release() quietly (the caller is going away), or slots_withdraw(), after which start
 * runs with -ECANCELED (the caller wants to hear it from the loop). */

#include <event2/event.h>
#include <stdbool.h>

struct slots;

/* r: 0, the slot is held: do the work now; -ECANCELED: withdrawn while waiting */
typedef void (*slot_start_fn)(void *userdata, int r);

enum slot_state {
        SLOT_IDLE,     /* not in the queue */
        SLOT_WAITING,  /* in the queue */
        SLOT_STARTING, /* its turn came (or it was withdrawn); start is about to run */
        SLOT_RUNNING,  /* started: holds a slot until released */
};

struct slot_ticket {
        enum slot_state state;
        int result; /* for start: 0 or -ECANCELED */
        slot_start_fn start;
        void *userdata;
        struct slot_ticket *prev, *next; /* in the queue */
};

/* at most LIMIT slots held at once (0: no limit) */
int slots_new(struct event_base *base, unsigned limit, struct slots **ret);
/* Waiting tickets are dropped without a call. Accepts NULL, returns NULL. */
struct slots *slots_free(struct slots *p);

/* Queue T (idle) at the back; start runs from the loop when a slot is free. */
void slots_enqueue(struct slots *p, struct slot_ticket *t, slot_start_fn start, void *userdata);
/* A waiting T leaves the queue and its start runs with -ECANCELED (from the loop). Returns true when it did;
 * false when T was not waiting (a holder keeps its slot). */
bool slots_withdraw(struct slots *p, struct slot_ticket *t);
/* T is done with: a holder gives its slot to the next one, a waiting or starting one leaves without a call.
 * T is idle afterwards. P may be NULL (then T must be idle). */
void slots_release(struct slots *p, struct slot_ticket *t);

unsigned slots_running(const struct slots *p);
unsigned slots_waiting(const struct slots *p);
