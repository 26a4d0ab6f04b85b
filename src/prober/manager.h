/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The probe manager (pkg/kubelet/prober/prober_manager.go, worker.go, results): one worker per container
 * and probe kind, each a timer on the event loop that runs its handler every periodSeconds against the
 * current instance of its container, counts results against the thresholds and publishes the outcome.
 *
 *  - a worker follows container instances: a new instance resets its result to the kind's initial one
 *    (readiness: failure, liveness: success, startup: unknown) and probes first at startedAt +
 *    initialDelaySeconds; containers that were already running when ckubelet started are probed first
 *    after a random 0..period delay, so a restart does not fire every probe at once;
 *  - liveness and readiness wait until the startup probe (if any) has succeeded; a succeeded startup probe
 *    stops;
 *  - a liveness or startup failure is published once and the worker holds until the container is replaced;
 *  - errors (the probe could not run: bad port, runtime error) are logged and not counted;
 *  - after a restart of ckubelet, a readiness worker can keep the readiness the API server last showed for an
 *    instance that ran before this ckubelet started (probe_manager_keep_ready; the kubelet decides it is the
 *    same instance with the same spec): published success until the first probe of ours answers (then the
 *    thresholds count from there, so failureThreshold failures make it not ready, as after any success), and at
 *    most periodSeconds + timeoutSeconds from when the worker first saw the instance: with no answer by then,
 *    the initial failure is published. A new instance never inherits it.
 *
 * Published results are looked up by container instance (probe_manager_get_result); changes are reported to the
 * kubelet through the callback. */

#include <event2/event.h>
#include <stdbool.h>

#include "apis/pod.h"
#include "cri/cri.h"
#include "container/container.h"
#include "prober/prober.h"

struct prober;

struct prober_callbacks {
        /* a published result changed */
        void (*changed)(void *userdata, const char *pod_uid, const char *container_name, enum probe_type type,
                        enum probe_result result);
        /* every failed probe, with its output (the Unhealthy event); may be NULL */
        void (*failed)(void *userdata, const char *pod_uid, const char *container_name, enum probe_type type,
                       const char *output);
        /* every probe that succeeded with a warning (an HTTP redirect not followed: the ProbeWarning event); may be
         * NULL */
        void (*warning)(void *userdata, const char *pod_uid, const char *container_name, enum probe_type type,
                        const char *output);
};

int probe_manager_new(struct event_base *base, struct cri_client *cri, uint64_t request_timeout_usec,
                      const struct prober_callbacks *cb, void *userdata, struct prober **ret);
/* Stops every worker (in-flight probes are abandoned). Accepts NULL. */
struct prober *probe_manager_free(struct prober *p);

/* The pod's spec and what the runtime shows for it (after a sync pass): workers are added for new probes,
 * dropped for removed ones, and follow the newest instance of their container. host: where httpGet,
 * tcpSocket and grpc probes connect when the probe names no host (the pod IP; the node IP with
 * hostNetwork), NULL if unknown yet. */
int probe_manager_update_pod(struct prober *p, const struct pod *pod, const char *host, const struct kc_pod_status *st);
/* The pod is gone: stop its workers. */
void probe_manager_remove_pod(struct prober *p, const char *pod_uid);

/* After a restart of ckubelet: the API server last showed this container instance ready (the caller checked that
 * it is the same instance, same start time, same spec): publish success for its readiness until the first probe
 * answers, bounded by periodSeconds + timeoutSeconds (see above). Call after probe_manager_update_pod(), before the
 * results are read; the change is not reported through the callback. Considered once per instance; false (and
 * nothing changes) unless the readiness worker follows this instance, it ran before this prober started, runs,
 * and no probe answered for it yet. */
bool probe_manager_keep_ready(struct prober *p, const char *pod_uid, const char *container_name,
                              const char *container_id);

/* The published result of a probe kind for a container instance; false when there is none (no such probe,
 * or the worker follows another instance). */
bool probe_manager_get_result(const struct prober *p, enum probe_type type, const char *pod_uid,
                              const char *container_name, const char *container_id, enum probe_result *ret);

/* The results as the sync and the status read them (valid while p lives). */
void probe_manager_results(const struct prober *p, struct probe_results *ret);

/* Probe counts by result (prober_probe_total). */
struct prober_count {
        const char *pod_namespace, *pod_name, *pod_uid, *container;
        enum probe_type type;
        enum probe_result result;
        uint64_t count;
};
void probe_manager_foreach_count(const struct prober *p, void (*fn)(const struct prober_count *c, void *ud), void *ud);

/* How late the probes started against their schedule (seconds; ckubelet's own, no upstream counterpart): every
 * probe run since start, and the largest. */
struct histogram;
const struct histogram *probe_manager_lateness(const struct prober *p);
double probe_manager_lateness_max(const struct prober *p);
