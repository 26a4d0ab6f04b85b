/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A small pool of threads for the slow filesystem work that must not run on the event loop: compressing a
 * rotated log, measuring a pod's volumes (du), removing pod data, mounting and unmounting volumes. A job is a
 * work() function that runs on a pool thread and touches nothing the loop owns (it works on its own copy of what
 * it needs), and a done() function that runs afterwards on the loop with work()'s return value. Completions reach
 * the loop through an eventfd registered with libevent.
 *
 * Jobs start in submission order; at most n_threads run at once, except that a job whose deadline passed no longer
 * counts (see workpool_submit_full).
 *
 * Each kind of blocking work has a pool of its own (volume mount/unmount, volume stats, ownership, pod data
 * removal), so that work stuck in one kind (a silent NFS server) never holds up another kind. */

#include <stdint.h>

#include <event2/event.h>

struct workpool;

typedef int (*workpool_work_t)(void *userdata);
typedef void (*workpool_done_t)(int r, void *userdata);
typedef void (*workpool_free_t)(void *userdata);

/* n_threads >= 1. name is used in log messages. */
int workpool_new(struct event_base *base, const char *name, unsigned n_threads, struct workpool **ret);

/* The same, with room for threads that replace the ones stuck in a job past its deadline: at most max_threads
 * (>= n_threads) threads ever exist at once, stuck ones included. */
int workpool_new_bounded(struct event_base *base, const char *name, unsigned n_threads, unsigned max_threads,
                         struct workpool **ret);

/* Waits for the jobs that are running, then calls done(-ECANCELED) for the jobs that never ran and done(r) for
 * the finished ones not delivered yet, all inside this call. A thread still stuck in a job whose deadline passed
 * is not waited for: the pool's memory is then left to it (the process is exiting). Accepts NULL, returns NULL. */
struct workpool *workpool_free(struct workpool *p);

/* Queue a job. done runs exactly once, on the loop, never inside this call. -ENOMEM, or -ESHUTDOWN while the
 * pool is being freed (done then does not run). */
int workpool_submit(struct workpool *p, workpool_work_t work, workpool_done_t done, void *userdata);

/* Queue a job with a key and a deadline.
 * key (may be NULL; copied): at most one job of a key runs at a time, and the queued jobs of a key whose job runs
 * let the other keys' jobs pass them, so that one pod's (or one volume's) stuck operation holds one thread, never
 * the others' work.
 * timeout_usec (0: none): counted from this call, on the loop's timer seam. When it passes before work() returned,
 * done(-ETIMEDOUT) runs at once on the loop; a job not started yet never starts, and the thread of a job that is
 * running is written off (a replacement thread is started, up to max_threads) and its result is thrown away.
 * destroy (required with a deadline, may be NULL otherwise) frees userdata once both work() (if it started) and
 * done() are over: with destroy, done() must not free userdata. */
int workpool_submit_full(struct workpool *p, const char *key, uint64_t timeout_usec, workpool_work_t work,
                         workpool_done_t done, workpool_free_t destroy, void *userdata);
