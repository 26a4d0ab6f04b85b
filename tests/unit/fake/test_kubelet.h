/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A kubelet under test: the real src/kubelet (pod workers, sync passes, PLEG, prober, status) on a real event
 * loop and the virtual clock, against the fake runtime, standalone (no API server, no HTTP API, no cgroups),
 * with its root and log directories in a temporary directory. Pods are given as a static-pod source gives
 * them (the file source's set, through the config merger).
 *
 *     struct test_kubelet *t = tk_new();
 *     tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\nspec: ...");
 *     tk_start(t);
 *     assert_true(tk_run_until(t, tk_running, &(struct tk_want) { t, "u1", "app" }, 60 * USEC_PER_SEC));
 *     ...
 *     tk_free(t);
 *
 * Every helper fails the cmocka test on error. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "fake/fake_runtime.h"
#include "fake/vloop.h"
#include "kubelet/kubelet.h"
#include "options/options.h"

#define TK_NODE "testnode"
#define TK_IMAGE "busybox:1.36" /* present on the fake node from the start */

struct test_kubelet {
        struct event_base *base;
        struct fake_runtime *rt;
        struct kubelet_options opts;
        struct kubelet *k; /* NULL while stopped */
        char *dir;         /* the temporary directory */
        char *yaml;        /* the pods last given, given again to a restarted kubelet */
        json_t *pods;      /* the last /pods answer (tk_pod) */
};

struct test_kubelet *tk_new(void);
/* Stops the kubelet (if running), frees the runtime, removes the directory. Accepts NULL. */
void tk_free(struct test_kubelet *t);

/* Create and start the kubelet (kubelet_new + kubelet_start) against the fake runtime; the pods last given
 * with tk_set_pods are its desired set from the start. */
void tk_start(struct test_kubelet *t);
/* Free the kubelet, leaving the runtime as it is (a kubelet killed: pods keep running). */
void tk_stop(struct test_kubelet *t);

/* The complete set of static pods, as manifest documents ("---" between them; "" for none). Given to the
 * running kubelet at once, and remembered for tk_start. */
void tk_set_pods(struct test_kubelet *t, const char *yaml);

bool tk_run_until(struct test_kubelet *t, bool (*pred)(void *userdata), void *userdata, uint64_t cap_usec);
void tk_run_for(struct test_kubelet *t, uint64_t usec);
/* Fails the test with what was waited for when pred does not hold within cap_usec of virtual time. */
#define tk_wait(t, pred, userdata, cap_usec)                                             \
        do {                                                                             \
                if (!tk_run_until((t), (pred), (userdata), (cap_usec)))                  \
                        fail_msg("%s did not hold within %llu s of virtual time", #pred, \
                                 (unsigned long long) ((cap_usec) / USEC_PER_SEC));      \
        } while (0)

/* The pod object as /pods reports it (borrowed until the next call), or NULL if the kubelet has no such
 * desired pod. */
json_t *tk_pod(struct test_kubelet *t, const char *uid);
/* status.containerStatuses[] (or initContainerStatuses[]) entry of a container, borrowed likewise. */
json_t *tk_container_status(struct test_kubelet *t, const char *uid, const char *container);
/* The pod's phase, "" if the pod is unknown. Borrowed likewise. */
const char *tk_phase(struct test_kubelet *t, const char *uid);
/* The status of a pod condition ("True"/"False"), NULL if absent. Borrowed likewise. */
const char *tk_condition(struct test_kubelet *t, const char *uid, const char *type);
/* The waiting reason of a container, NULL if it is not waiting. Borrowed likewise. */
const char *tk_waiting_reason(struct test_kubelet *t, const char *uid, const char *container);

/* Conditions for tk_run_until. */
struct tk_want {
        struct test_kubelet *t;
        const char *uid;
        const char *container;
        unsigned n;       /* tk_restarts: restart count at least n; tk_calls: at least n calls */
        const char *what; /* tk_waiting: the reason; tk_phase_is: the phase; tk_calls: the method */
};
/* The newest instance of the container runs. */
bool tk_running(void *want);
/* The container's newest instance has a restart count (its annotation) of at least n. */
bool tk_restarts(void *want);
/* The container is waiting with reason what. */
bool tk_waiting(void *want);
/* The pod's phase is what. */
bool tk_phase_is(void *want);
/* The runtime has nothing left of the pod. */
bool tk_pod_gone(void *want);
/* At least n calls of method what were issued. */
bool tk_calls(void *want);
/* Runs until the container of every pod with uid u0 ... u<n-1> runs; fails the test after cap_usec. */
void tk_wait_running(struct test_kubelet *t, size_t n, const char *container, uint64_t cap_usec);
