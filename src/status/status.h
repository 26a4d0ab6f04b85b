/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The v1 PodStatus the kubelet reports for a pod (kubelet_pods.go generateAPIPodStatus + status manager):
 * phase, conditions, container statuses, IPs, start time and QoS class, built from the desired spec and
 * what the runtime last reported. Pure: no I/O, no clock (times come in the input). */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "container/container.h"
#include "prober/prober.h"

/* Why a container is not running (the kubelet's reasonCache): ContainerStateWaiting reason/message. */
struct container_waiting {
        char *name;
        const char *reason; /* static: "CrashLoopBackOff", "ErrImagePull", ... */
        char *message;
};

struct ck_error;

struct pod_status_input {
        const struct pod *pod;                /* desired spec */
        const struct kc_pod_status *observed; /* NULL: not observed yet */
        const struct container_waiting *waiting;
        size_t n_waiting;
        const struct probe_results *probes; /* may be NULL */
        const char *host_ip;                /* the node IP */
        int64_t start_time_usec;            /* realtime; 0 = not started yet */
        int64_t ready_transition_usec;      /* realtime of the last ContainersReady/Ready change; 0 = now */
        int64_t initialized_usec;           /* realtime of the first status (Initialized, PodScheduled) */
        const json_t *old_status;           /* the previous PodStatus (the status manager's, else the API server's);
                                             * may be NULL */
        /* the kubelet ended the pod for good (an eviction): phase Failed with this reason and message, and the
         * condition DisruptionTarget (reason TerminationByKubelet) since terminated_usec; NULL: not */
        const char *terminated_reason;
        const char *terminated_message;
        int64_t terminated_usec;
        /* a pod sync handler's eviction (ShouldEvict: activeDeadlineSeconds): phase Failed with this reason and
         * message; NULL: none */
        const char *evict_reason, *evict_message;
        int64_t now_usec; /* realtime: the transition of a Ready condition that readiness gates changed */
        /* in-place resize: the containers' allocation ({"<container>": resources}, NULL: none known), the
         * PodResizePending condition (reason NULL: none) and PodResizeInProgress (error: its reason Error) */
        const json_t *allocation;
        const struct pod *allocated_pod; /* the pod as allocated (pod-level status.resources); NULL: pod */
        const char *resize_pending_reason, *resize_pending_message;
        int64_t resize_pending_usec;
        bool resize_in_progress;
        const char *resize_error;
        int64_t resize_in_progress_usec;
        int64_t generation; /* metadata.generation, 0 when the API server has none */
        /* podIsTerminal: the pod was deleted (or ended) and its containers are stopped for good: a phase from
         * stopped containers is Succeeded or Failed whatever the restart policy (not for a static pod) */
        bool terminal;
        /* ResourceHealthStatus (beta on since v1.36): {"<container>": [ResourceStatus...]} of the devices each
         * app container holds, NULL: none */
        const json_t *allocated_resources_status;
        /* the pod's runtime handler mounts recursively read-only: containerStatuses[].volumeMounts[].recursiveReadOnly
         * says Enabled where a mount asks for it */
        bool runtime_supports_rro;
        bool stop_signals; /* ContainerStopSignals: containerStatuses[].stopSignal from the runtime's status */
};

/* PodConditionByKubelet: the condition types the kubelet owns (PodScheduled, Ready, Initialized,
 * ContainersReady, PodReadyToStartContainers, PodResizePending, PodResizeInProgress); the others (readiness gates'
 * conditions, ...) belong to other clients and are kept as they are. */
bool status_condition_by_kubelet(const char *type);
/* Conditions the kubelet may set as others do (PodConditionSharedByKubelet: DisruptionTarget): sent when it has
 * one, never deleted. */
bool status_condition_shared_by_kubelet(const char *type);

/* "Pending", "Running", "Succeeded", "Failed" (getPhase). */
const char *status_pod_phase(const struct pod_status_input *in);

/* The whole v1 PodStatus object. A container the runtime does not know (any more) keeps a terminated state it
 * had in old_status, else waits with the old restartCount and lastState (convertToAPIContainerStatuses). */
int status_pod_generate(const struct pod_status_input *in, json_t **ret);
/* The status manager's TerminatePod, as a copy of status: once the pod has initialized, every container status
 * that is not terminated becomes terminated (exit code 137, reason ContainerStatusUnknown, "The container could
 * not be located when the pod was terminated"), so do the init containers that were started (all but the suffix
 * still waiting, at least the first one), and a Pending or Running phase becomes Failed (not for a static pod,
 * whose phase stays). has_init_containers: the spec has init containers. */
int status_pod_terminate(const json_t *status, bool has_init_containers, bool is_static, json_t **ret);

/* The status manager's checkContainerStateTransition: unless their restart policy (the container's own and its
 * rules, else the pod's) restarts them after that exit, containers terminated in old_status must stay terminated in
 * new_status; else -EINVAL with *ret_error
 * ("terminated container c attempted illegal transition to non-terminated state"). Init and app containers. */
int status_pod_check_transition(const json_t *old_status, const json_t *new_status, const struct pod_spec *spec,
                                struct ck_error **ret_error);
