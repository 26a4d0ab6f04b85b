/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The reconciler's decision for one pod (kuberuntime_manager.go computePodActions): from the desired pod
 * and what the runtime reports, which sandbox to create, which containers to kill and which to start.
 * Pure: no I/O, unit-tested. The sync loop executes the result and then computes again. */

#include <stdbool.h>
#include <stddef.h>

#include "apis/pod.h"
#include "basic/time.h"
#include "kuberuntime/gc.h"
#include "container/container.h"
#include "prober/results.h"
#include "kuberuntime/resources.h"

#define KR_HASH_MAX 17 /* 16 hex digits + NUL */

/* Hash of a container's spec: FNV-1a 64 over the canonical JSON of the container object without its resources
 * and resizePolicy (those are resized in place), as hex. Stored as ANNOTATION_CONTAINER_HASH; a running container
 * whose hash differs is restarted. */
int kr_container_hash(const struct container *c, char buf[static KR_HASH_MAX]);

struct kr_container_kill {
        const struct kc_container *container; /* borrowed from the status */
        const char *reason;                   /* static string */
        char *message;
        bool remove;            /* remove it too before anything new starts (never-started) */
        bool probe_failure;     /* killed for a failed liveness or startup probe */
        int64_t grace_override; /* the probe's terminationGracePeriodSeconds, or -1 */
};

/* A running container whose resources change in place (UpdateContainerResources). */
struct kr_container_update {
        const struct kc_container *container; /* borrowed from the status */
        size_t index;                         /* into pod->spec.containers */
};

struct kr_pod_actions {
        bool kill_pod;          /* stop every container and sandbox of the pod first */
        bool create_sandbox;    /* then run a new sandbox */
        uint32_t attempt;       /* attempt number of the sandbox to create */
        const char *sandbox_id; /* existing sandbox to use when !create_sandbox (borrowed), may be "" */
        size_t n_start;
        size_t *start; /* indices into pod->spec.containers, in spec order */
        size_t n_init_start;
        size_t *init_start; /* indices into pod->spec.init_containers, in spec order, started before the
                                     * app containers: the next init container, sidecars to (re)start */
        size_t n_ephemeral_start;
        size_t *ephemeral_start; /* indices into pod->spec.ephemeral_containers: those never started, started first
                                  * (kubectl debug; never restarted) */
        size_t n_kill;
        struct kr_container_kill *kill;
        size_t n_update;
        struct kr_container_update *update; /* in-place resizes to apply (the pod given is the allocated one) */
        const char *sandbox_reason;         /* why a new sandbox is needed (static), or NULL */
};

void kr_pod_actions_done(struct kr_pod_actions *a);

/* Decide for a desired pod. status may describe nothing (no sandbox yet). probes: the published liveness and
 * startup results (NULL: none); a running container whose liveness or startup probe failed is killed
 * (reason "LivenessProbe"/"StartupProbe") and, unless restartPolicy is Never, started again.
 * Ephemeral containers that were never started are started (also while the pod initializes), never again.
 * Init containers run one at a time, in order, in the current sandbox before any app container starts; a
 * sidecar (restartPolicy Always) lets the next one start once it runs and its startup probe succeeded, and
 * is restarted whenever it exits. */
int kr_compute_pod_actions(const struct pod *pod, const struct kc_pod_status *status,
                           const struct probe_results *probes, struct kr_pod_actions *ret);

/* computePodResizeAction for a running container: the resources it should run with (its allocated ones, those of
 * the pod given) against those the runtime reports it runs with. NONE: the same (or unknown); UPDATE: apply them
 * in place; RESTART: a changed resource whose resizePolicy is RestartContainer. *ret_desired: the container's
 * LinuxContainerResources (oom_score_adj left 0). */
enum kr_resize_action {
        KR_RESIZE_NONE,
        KR_RESIZE_UPDATE,
        KR_RESIZE_RESTART,
};
enum kr_resize_action kr_container_resize_action(const struct pod *pod, const struct container *c,
                                                 const struct kc_container *cs, struct kr_linux_resources *ret_desired);

/* Garbage to remove once a pod is settled (container GC with the policy's MaxPerPodContainer and MinAge, sandbox GC):
 * exited containers beyond the newest MaxPerPodContainer of their name and never-started ones that are not the
 * newest, once MinAge old, and not-ready sandboxes other than the newest that hold no remaining containers. For a
 * pod that is not desired any more (pod == NULL) everything that is not running. Returned ids are borrowed from
 * status. */
struct kr_pod_gc {
        size_t n_containers;
        const char **containers;
        size_t n_sandboxes;
        const char **sandboxes;
};
int kr_compute_pod_gc(const struct pod *pod, const struct kc_pod_status *status, const struct kr_gc_policy *policy,
                      int64_t now_realtime_nsec, struct kr_pod_gc *ret);
void kr_pod_gc_done(struct kr_pod_gc *g);

/* ---- decisions of the start step (kuberuntime_container.go doBackOff, images/image_manager.go) ---- */

struct backoff;

/* doBackOff: may the next instance of container c start now? Applies when its newest instance exited, or is
 * being killed in this pass for a failed liveness/startup probe (repeated probe kills back off like crashes).
 * key: the back-off key (pod name, namespace, UID, container name and spec hash), NULL when no back-off
 * applies; finished_usec: realtime the previous instance finished (now for a probe kill), what the act step
 * records with backoff_next() when the container does start; in_backoff: wait until until_usec (realtime);
 * delay_usec: the current delay, for the CrashLoopBackOff message. */
struct kr_crash_backoff {
        char *key;
        bool in_backoff;
        uint64_t finished_usec;
        uint64_t until_usec;
        uint64_t delay_usec;
};
int kr_check_crash_backoff(const struct pod *pod, const struct container *c, const struct kc_pod_status *status,
                           const struct kr_pod_actions *actions, const struct backoff *b, uint64_t now_realtime_usec,
                           struct kr_crash_backoff *ret);
void kr_crash_backoff_done(struct kr_crash_backoff *d);

/* EnsureImageExists: with pull policy Always the image is pulled without asking the runtime first; the others
 * first ask ImageStatus whether it is present. */
bool kr_image_status_first(enum pull_policy policy);

enum kr_image_action {
        KR_IMAGE_USE_PRESENT, /* "Container image ... already present on machine" */
        KR_IMAGE_PULL,
        KR_IMAGE_PULL_BACKOFF, /* ImagePullBackOff: a pull failed recently */
        KR_IMAGE_NEVER_PULL,   /* ErrImageNeverPull */
};
/* shouldPullImage and the pull back-off: present is what ImageStatus said (ignored for Always). */
enum kr_image_action kr_decide_image(enum pull_policy policy, bool present, bool in_pull_backoff);

/* ---- decisions of the kill step (killPodWithSyncResult) ---- */

/* One container instance to stop. */
struct kr_kill_target {
        const struct kc_container *container; /* borrowed from the status */
        const char *reason;                   /* static */
        const char *message;                  /* borrowed from the actions, or NULL ("Stopping container <name>") */
        bool remove;                          /* remove it after it stopped (never-started instances) */
        int64_t grace_override;               /* a failed probe's terminationGracePeriodSeconds, or -1 */
        size_t n_after;
        size_t *after; /* indices into the targets this one waits for (after its preStop hook, at most for what is
                        * left of its grace period) before StopContainer is sent */
};

/* What the kill step stops, and in which order (killContainersWithSyncResult with newTerminationOrdering). With
 * kill_pod: every running (or unknown) instance; the regular containers (and regular init and ephemeral
 * containers) are stopped at once, a sidecar only once every regular container is down and the sidecar started
 * after it too: sidecars stop after the main containers, in reverse order of their start. The order of the
 * sidecars is their order in spec.initContainers when the pod is known (pod != NULL), else (a pod no longer
 * known) the order their running instances were created in. Without kill_pod: the actions' kill list, in no
 * order. The targets borrow from status and actions; free them with kr_kill_targets_free(). */
int kr_compute_kill_order(const struct pod *pod, const struct kc_pod_status *status,
                          const struct kr_pod_actions *actions, struct kr_kill_target **ret, size_t *ret_n);
void kr_kill_targets_free(struct kr_kill_target *t, size_t n);
