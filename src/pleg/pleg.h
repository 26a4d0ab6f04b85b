/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Pod lifecycle event generator (pkg/kubelet/pleg/generic.go): relists every sandbox and container
 * through CRI every period (1 s), compares with the previous listing and reports each pod whose sandboxes
 * or containers appeared, disappeared or changed state. The relist never overlaps itself and never blocks
 * the loop. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/histogram.h"
#include "cri/cri.h"

struct pleg;

struct pleg_callbacks {
        /* A pod (by UID) changed in the runtime. */
        void (*pod_changed)(const char *uid, void *userdata);
        /* A relist completed (successfully or not). */
        void (*relisted)(bool ok, void *userdata);
};

int pleg_new(struct event_base *base, struct cri_client *cri, uint64_t period_usec, const struct pleg_callbacks *cb,
             void *userdata, struct pleg **ret);
struct pleg *pleg_free(struct pleg *p);
int pleg_start(struct pleg *p);
/* EventedPLEG (before pleg_start): also watch the runtime's container events (CRI GetContainerEvents) and report a
 * pod at once when one of its containers stops, as upstream's evented PLEG (v1.37: a fast path that asks the
 * generic PLEG for the pod's relist; the periodic relist is unchanged). A stream that fails is opened again, at
 * most 5 times in all (eventedPlegMaxStreamRetries); then the fast path is off and the relist alone remains. */
int pleg_set_evented(struct pleg *p, bool evented);
/* Wall-clock usec of when the last successful relist began, 0 if none. */
uint64_t pleg_last_relist_started_usec(const struct pleg *p);
/* Was this sandbox or container id in the last successful listing? */
bool pleg_has_id(const struct pleg *p, const char *id);
/* How many sandbox and container ids the relists saw disappear since start (a counter: compare two readings). */
uint64_t pleg_gone_count(const struct pleg *p);
/* Was this pod (by UID) in the last successful listing? O(log n). */
bool pleg_has_pod(const struct pleg *p, const char *uid);
/* Does the current listing come from a relist that began after mono_usec (CLOCK_MONOTONIC)? Before, it may still
 * show what was removed since, or lack what was made since. */
bool pleg_listed_after(const struct pleg *p, uint64_t mono_usec);
/* UIDs of pods present in the last successful listing, sorted and distinct (borrowed, NULL-terminated strv). */
char *const *pleg_pod_uids(const struct pleg *p);
/* kubelet_pleg_relist_duration_seconds (a relist's start to its end, failed ones included) and
 * kubelet_pleg_relist_interval_seconds (one relist's start to the next's), both with Prometheus' default buckets
 * as upstream. Borrowed. */
const struct histogram *pleg_relist_duration(const struct pleg *p);
const struct histogram *pleg_relist_interval(const struct pleg *p);
/* Counts from the last listing. */
void pleg_counts(const struct pleg *p, size_t *ret_sandboxes, size_t *ret_running_sandboxes, size_t *ret_containers,
                 size_t *ret_running_containers);
