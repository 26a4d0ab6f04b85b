/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One reconcile pass for one pod (kuberuntime_manager.go SyncPod / KillPod, run by a pod worker). The pass
 * runs these phases in this order; pod_sync.c drives it and reads in that order, each phase lives in its
 * own file:
 *
 *   observe   sync_observe.c   ListPodSandbox + ListContainers for the pod's UID, then their statuses
 *   decide    pod_sync.c       kr_compute_pod_actions (or "kill everything" for a pod no longer desired)
 *   kill      sync_kill.c      stop containers (preStop, then StopContainer), sidecars last, then sandboxes
 *   release   pod_sync.c       a desired pod that finished for good: its volumes and objects go (syncTerminatedPod)
 *   resize    sync_resize.c    in-place resizes: the pod cgroup and UpdateContainerResources
 *   objects   sync_volumes.c   the ConfigMaps, Secrets, tokens and pull secrets the pod refers to
 *   mount     sync_volumes.c   the volume manager's volumes (PVCs, csi, nfs) attached and mounted (WaitForAttachAndMount)
 *   sandbox   sync_sandbox.c   the pod cgroup, RunPodSandbox (or reuse the ready one) and its IP
 *   volumes   sync_volumes.c   volume directories, fsGroup ownership and /etc/hosts, before any container is created
 *   start     sync_start.c     per container: back-off, image (sync_image.c: status, pull), create, start, postStart
 *   clean up  sync_cleanup.c   once the pod is settled, remove dead containers and sandboxes (GC)
 *
 * pod_sync.c holds them as one table (which phase, when it ends the pass, when it is skipped) driven by
 * kubelet_pod_sync_next(): each phase ends by calling it (or kubelet_pod_sync_finish() to end the pass early).
 * Every step is asynchronous; the pass ends in its env's pass_done (then kubelet_worker_sync_done()), which runs
 * it again at once when it changed anything (level-triggered: the next pass observes the result). Every decision is made by pure
 * functions in src/kuberuntime/actions.c; the phases carry them out. A phase that needs state beyond the pass
 * keeps it in its own struct, freed when the phase ends. The phases use nothing of the kubelet but their pass's
 * environment (s->env, pod_sync_env.h), and report back through its callbacks. */

#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"
#include "basic/macro.h"
#include "basic/slots.h"
#include "kubelet/hooks.h"
#include "kubelet/pod_sync_env.h"
#include "kuberuntime/actions.h"
#include "kuberuntime/config.h"
#include "credentialprovider/keyring.h"
#include "objects/refs.h"

struct kill_step;
struct start_step;
struct cleanup_step;

struct sync_image_volume {
        char *ref;
        const char *reason; /* a literal (the worker keeps it as the container's waiting reason) */
        char *message;
};

enum pod_sync_phase {
        POD_SYNC_OBSERVE,
        POD_SYNC_DECIDE,
        POD_SYNC_KILL,
        POD_SYNC_RELEASE,
        POD_SYNC_RESIZE,
        POD_SYNC_OBJECTS,
        POD_SYNC_MOUNT,
        POD_SYNC_SANDBOX,
        POD_SYNC_VOLUMES,
        POD_SYNC_START,
        POD_SYNC_CLEANUP,
        _POD_SYNC_PHASE_MAX,
};

/* A job of the pass that its pool or manager cannot cancel (a termination message read, an fsGroup walk): freeing
 * the pass detaches it, and its completion then only frees it. */
struct sync_job {
        struct sync_job *prev, *next; /* in s->jobs */
        struct pod_sync *s;           /* NULL once detached */
};

struct pod_sync {
        const struct pod_sync_env *env; /* all the pass uses of the kubelet */
        struct pod_worker *w;           /* its worker: a handle for env->ops, never dereferenced */
        const char *uid; /* the worker's (borrowed: the worker outlives its pass, its uid never changes) */
        char *full_name; /* a copy: the kubelet makes the worker's anew on every update of the pod */
        struct pod *pod; /* desired spec (a reference), or NULL: terminate the pod */

        enum pod_sync_phase phase; /* the phase running */

        struct kc_pod_status *status;  /* observe: what the runtime has for the pod */
        struct kr_pod_actions actions; /* decide */
        bool decided;

        /* the fan-out in flight: calls issued by the current phase; next runs when the last one ends */
        int pending;
        void (*next)(struct pod_sync *s);

        struct kill_step *kill; /* kill: the targets and their order */

        /* objects: the API objects of the pod and the pull credentials */
        struct pod_refs refs;
        struct pod_objects *objects;
        bool waiting_objects;
        struct cred_keyring keyring;

        /* mount: waiting for the volume manager */
        bool waiting_volumes;

        /* sandbox: where the containers go */
        char *cgroup_parent; /* the pod cgroup (src/cm), NULL without --cgroups-per-qos */
        bool userns;         /* hostUsers false: its user namespace's range (kubelet/userns.h) */
        uint32_t userns_host_id, userns_length;
        bool cgroup_failed;              /* the pod cgroup could not be made: no sandbox */
        struct slot_ticket sandbox_slot; /* its turn among the sandbox creations (env->sandbox_slots) */
        Runtime__V1__PodSandboxConfig *sandbox_config;
        char *sandbox_id;
        char *pod_ip; /* the sandbox's IP (NULL: none known, or host network) */

        /* start: index into the containers to start (init ones first), the current one's step */
        size_t next_start;
        struct start_step *start;
        /* image volumes: pulled before the first container starts (getImageVolumes), by spec.volumes index: the
         * resolved image, or why it could not be had (ErrImagePull, ImagePullBackOff, ...) and the message */
        struct sync_image_volume *image_volumes;
        size_t n_image_volumes, next_image_volume;

        struct cleanup_step *cleanup; /* clean up: what it removes */

        /* its CRI calls in flight, cancelled when it is freed: those whose userdata is the pass, and those with a
         * context of their own (the set's drop frees it) */
        struct cri_calls calls, status_calls, kill_calls, removal_calls, resize_calls;
        struct sync_job *jobs; /* its jobs in flight that cannot be cancelled, detached when it is freed */

        struct hook_run *hooks; /* lifecycle hooks in flight (hooks.c) */
        char *hook_pod_desc;    /* format.Pod for the hooks' messages */

        bool did_work;      /* something was changed: observe again at once */
        bool error;         /* something failed: retry with the worker's back-off */
        uint64_t wake_usec; /* monotonic time to run again (a back-off ends), 0 = none */
};

/* ---- the phases, in the order they run (pod_sync.c's table); each ends with kubelet_pod_sync_next() ---- */
void kubelet_sync_observe(struct pod_sync *s);
void kubelet_sync_kill(struct pod_sync *s);
void kubelet_sync_resize(struct pod_sync *s);
void kubelet_sync_objects(struct pod_sync *s);
void kubelet_sync_mount(struct pod_sync *s);
void kubelet_sync_sandbox(struct pod_sync *s);
void kubelet_sync_volumes(struct pod_sync *s);
void kubelet_sync_start(struct pod_sync *s);
void kubelet_sync_cleanup(struct pod_sync *s); /* the last: ends with kubelet_pod_sync_done() */
/* the phases' own state, when the pass ends early */
void kubelet_sync_kill_free(struct pod_sync *s);
void kubelet_sync_start_step_free(struct pod_sync *s);
void kubelet_sync_image_volumes_free(struct pod_sync *s);
/* A pull waiting in the pull queue leaves it, and the pass ends (the pod is no longer desired or is being deleted) */
void kubelet_sync_start_withdraw(struct pod_sync *s);
/* The same for a sandbox creation waiting for its turn (--max-parallel-sandbox-creations) */
void kubelet_sync_sandbox_withdraw(struct pod_sync *s);
void kubelet_sync_cleanup_free(struct pod_sync *s);

/* The running phase is done: the next one that applies runs, or the pass ends. */
void kubelet_pod_sync_next(struct pod_sync *s);
void kubelet_pod_sync_finish(struct pod_sync *s); /* ends the pass early (error, shutdown) or normally */
void kubelet_pod_sync_done(struct pod_sync *s);   /* hands the result to the worker and frees the pass */

/* ---- the kubelet's side (pod_workers.c) ---- */

/* Runs one reconcile pass for the worker w (uid: its, borrowed; full_name: copied) on pod, the desired spec as allocated
 * (a reference is taken; NULL: terminate the pod). *slot points to the pass from before its first phase runs
 * until it ends (the env's pass_done; the kubelet clears it there). Returns 0, or -ENOMEM when no pass could be
 * made (nothing runs). */
int kubelet_pod_sync_start(const struct pod_sync_env *env, struct pod_worker *w, const char *uid, const char *full_name,
                           struct pod *pod, struct pod_sync **slot);
void kubelet_pod_sync_free(struct pod_sync *s); /* NULL is fine */
/* the pass waits for the volume manager (a new request pokes it: volmgr_pod_poke) */
bool kubelet_pod_sync_waiting_volumes(const struct pod_sync *s);

/* ---- shared by the phases (pod_sync.c) ---- */

/* What the phases ask of the kubelet, and report to it, for their pod (through s->env->ops). */
struct pod_sync_worker_state kubelet_sync_worker_state(const struct pod_sync *s);
struct kube_client *kubelet_sync_client(const struct pod_sync *s);
const struct node_runtime_features *kubelet_sync_runtime_features(const struct pod_sync *s);
void kubelet_sync_event(struct pod_sync *s, const char *container, const char *type, const char *reason,
                        const char *fmt, ...) _printf_(5, 6);
/* the same about a pod that is no longer desired too (its last known spec), while it terminates */
void kubelet_sync_event_any(struct pod_sync *s, const char *container, const char *type, const char *reason,
                            const char *fmt, ...) _printf_(5, 6);
int kubelet_sync_set_waiting(struct pod_sync *s, const char *name, const char *reason, const char *fmt, ...)
        _printf_(4, 5);
void kubelet_sync_clear_waiting(struct pod_sync *s, const char *name);

/* A job of the pass: attach it when it is submitted; its completion detaches it and gets the pass, or NULL when the
 * pass went meanwhile (the completion then only frees the job). */
void kubelet_sync_job_attach(struct pod_sync *s, struct sync_job *j);
struct pod_sync *kubelet_sync_job_detach(struct sync_job *j);

/* Fan-out: a phase opens it with its continuation, counts each call it issues with kubelet_sync_fanout_add() and
 * closes it with kubelet_sync_fanout_end(); every completion calls kubelet_sync_fanout_release(). The continuation runs once
 * the phase is closed and the last call completed. */
void kubelet_sync_fanout_begin(struct pod_sync *s, void (*next)(struct pod_sync *s));
void kubelet_sync_fanout_add(struct pod_sync *s);
void kubelet_sync_fanout_release(struct pod_sync *s);
void kubelet_sync_fanout_end(struct pod_sync *s);

/* A call could not be issued or failed: logged, and the pass ends in error (retried with back-off). */
void kubelet_sync_call_failed(struct pod_sync *s, const char *what, int r);
/* A call that changes something was issued (r >= 0: counted in the fan-out, and the pass did work) or could not
 * be (r < 0: kubelet_sync_call_failed() with what). */
void kubelet_sync_fanout_sent(struct pod_sync *s, const char *what, int r);

const char *kubelet_sync_pod_desc(const struct pod_sync *s); /* "namespace/name", or the UID */
const char *kubelet_sync_hook_desc(struct pod_sync *s);      /* format.Pod: "name_namespace(uid)" */
void kubelet_sync_build_context(const struct pod_sync *s, struct kc_build_context *ret);
/* the handler of the pod's RuntimeClass as far as it is known, else "" */
const char *kubelet_sync_known_runtime_handler(const struct pod_sync *s);
/* The container of the desired spec with this name (regular, then init), or NULL. */
const struct container *kubelet_sync_spec_container(const struct pod_sync *s, const char *name);

/* killContainer (sync_kill.c): the preStop hook, then StopContainer with what is left of the grace period;
 * done runs once it is stopped. Used by the kill phase and by the start phase for a failed postStart. */
struct kill_target_ext {
        const char *id, *name;
        int64_t grace;                            /* after the minimum */
        const struct lifecycle_handler *pre_stop; /* NULL: none */
        struct lifecycle_handler *owned_pre_stop; /* or this one, taken over by the call (even on failure) */
        const struct container *spec;             /* for named ports; NULL when unknown */
        const char *sandbox_id;                   /* for the hook's pod IP */
        const char *ports_json;                   /* the ports annotation, when spec is NULL */
        bool remove;                              /* RemoveContainer once stopped */
        bool ordered;                             /* s->kill->targets[index]: waits for its turn to stop */
        size_t index;
};
/* Returns 0 when done will run (exactly once, possibly before this returns), or a negative errno when it will
 * not. */
int kubelet_sync_kill_container(struct pod_sync *s, struct kill_target_ext *t, void (*done)(struct pod_sync *s));
/* killContainer's grace period for an instance (before the minimum is applied): the pod's deletion grace, else
 * the spec's, else (a pod no longer known) the instance's annotation or the worker's last known. */
int64_t kubelet_sync_grace_raw(const struct pod_sync *s, const struct kc_container *c);
