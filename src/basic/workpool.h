/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A small pool of threads for the slow filesystem work that must not run on the event loop: compressing a
 * rotated log, measuring a pod's volumes (du), removing big files. A job is a work() function that runs on a
 * pool thread and touches nothing the loop owns (it works on its own copy of what it needs), and a done()
 * function that runs afterwards on the loop with work()'s return value. Completions reach the loop through an
 * eventfd registered with libevent.
 *
 * Jobs start in submission order; at most n_threads run at once. */

#include <event2/event.h>

struct workpool;

typedef int (*workpool_work_t)(void *userdata);
typedef void (*workpool_done_t)(int r, void *userdata);

/* n_threads >= 1. name is used in log messages. */
int workpool_new(struct event_base *base, const char *name, unsigned n_threads, struct workpool **ret);

/* Waits for the jobs that are running, then calls done(-ECANCELED) for the jobs that never ran and done(r) for
 * the finished ones not delivered yet, all inside this call. Accepts NULL, returns NULL. */
struct workpool *workpool_free(struct workpool *p);

/* Queue a job. done runs exactly once, on the loop, never inside this call. -ENOMEM, or -ESHUTDOWN while the
 * pool is being freed (done then does not run). */
int workpool_submit(struct workpool *p, workpool_work_t work, workpool_done_t done, void *userdata);

/* Jobs queued or running (not yet delivered). */
unsigned workpool_busy(const struct workpool *p);
