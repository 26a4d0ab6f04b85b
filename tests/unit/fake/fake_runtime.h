/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* An in-memory container runtime behind src/cri/cri.h, for unit tests (upstream's FakeRuntimeService and
 * FakeImageService in k8s.io/cri-api/pkg/apis/testing, with containerd's rules where the kubelet depends on
 * them). A test binary links this instead of the real CRI client (meson: fake_runtime_dep); cri_client_new()
 * with the endpoint of a fake runtime (fake_runtime_endpoint) connects to it. The runtime outlives its
 * clients: a kubelet freed and created again finds what the first one left running, as after a kill -9.
 *
 *  - Calls behave like the real client's: the request is packed at once (the caller's message is borrowed),
 *    the runtime handles it later on the loop (after the method's delay, if any) and the callback runs then,
 *    never from inside the call; the reply goes through the wire encoding both ways.
 *  - Every call is recorded (method, a copy of the request, a short subject, the status it got) for
 *    assertions, in the order it was issued.
 *  - Failures can be injected per method (a gRPC status and message, for the next call, the Nth or every
 *    call), delays per method (virtual time: basic/vclock.h), and the whole runtime can be down (every call
 *    fails Unavailable, as when containerd is stopped).
 *  - The test is the world: it makes containers exit, sandboxes die, objects vanish, and scripts exec results,
 *    container lifetimes, runtime conditions and stats.
 *
 * Container and sandbox rules followed (containerd's): a name (metadata + attempt) is reserved while its
 * sandbox or container exists; a container is created only in a ready sandbox and from an image present;
 * StartContainer only from CREATED; StopPodSandbox kills the sandbox's containers; RemovePodSandbox and
 * RemoveContainer force-stop what runs; removing what does not exist succeeds; status calls on unknown ids
 * fail NotFound. Stopped containers exit 137 (reason "Error"), or as scripted. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "cri.pb-c.h"

struct fake_runtime;

struct fake_sandbox {
        char *id;
        Runtime__V1__PodSandboxConfig *config; /* a copy of RunPodSandbox's: metadata, labels, annotations, ... */
        char *runtime_handler;
        Runtime__V1__PodSandboxState state;
        int64_t created_at; /* unix nsec */
        char *ip;           /* "" with host networking */
};

struct fake_container {
        char *id;
        char *sandbox_id;
        Runtime__V1__ContainerConfig *config; /* a copy of CreateContainer's */
        char *name;                           /* config->metadata->name */
        uint32_t attempt;
        char *image_ref; /* the image's id */
        char *log_path;  /* the sandbox's log directory + config->log_path */
        Runtime__V1__ContainerState state;
        int64_t created_at, started_at, finished_at; /* unix nsec, 0 = not yet */
        int32_t exit_code;
        char *reason, *message;
};

struct fake_image {
        char *id;    /* "sha256:..." */
        char **tags; /* normalized: docker.io/library/busybox:latest */
        uint64_t size;
        bool has_uid;
        int64_t uid;
        char *username;
};

/* One recorded call. */
struct fake_call {
        unsigned seq;
        const char *method;    /* "RunPodSandbox", "CreateContainer", ... */
        ProtobufCMessage *req; /* a copy of the request */
        char *subject;         /* container name (container calls), pod name (sandbox calls),
                                                  image (image calls), else "" */
        uint64_t at_usec;      /* monotonic, when issued */
        int status;            /* the gRPC status it got, -1 until answered */
};

/* The request of a recorded call as its type: FAKE_REQ(call, StopContainerRequest)->timeout */
#define FAKE_REQ(call, Type) ((const Runtime__V1__##Type *) (const void *) (call)->req)

int fake_runtime_new(struct event_base *base, struct fake_runtime **ret);
/* Clients still connected see their calls fail Unavailable. Accepts NULL. */
struct fake_runtime *fake_runtime_free(struct fake_runtime *rt);
/* What to give cri_client_new() (and --container-runtime-endpoint). */
const char *fake_runtime_endpoint(const struct fake_runtime *rt);

/* ---- the calls ---- */
size_t fake_runtime_n_calls(const struct fake_runtime *rt);
const struct fake_call *fake_runtime_call(const struct fake_runtime *rt, size_t i);
/* How many calls of method were issued (NULL: all). */
size_t fake_runtime_count(const struct fake_runtime *rt, const char *method);
/* ... of method about subject (a container or pod name, an image). */
size_t fake_runtime_count_subject(const struct fake_runtime *rt, const char *method, const char *subject);
/* The most calls of method that were in flight at once, counting each call as lasting duration_usec from when it
 * was issued (the delay given to fake_runtime_set_delay). */
unsigned fake_runtime_max_in_flight(const struct fake_runtime *rt, const char *method, uint64_t duration_usec);
/* The newest call of method (about subject, when not NULL), or NULL. */
const struct fake_call *fake_runtime_last(const struct fake_runtime *rt, const char *method, const char *subject);
/* The calls from index since on that change something (Run/Stop/Remove sandbox, Create/Start/Stop/Remove
 * container, PullImage), as "Method:subject Method:subject ...": the order of actions at a glance. Freed by the
 * caller. */
char *fake_runtime_actions(const struct fake_runtime *rt, size_t since);
/* Forget the recorded calls (counts and indexes start again). */
void fake_runtime_clear_calls(struct fake_runtime *rt);

/* ---- faults ---- */
#define FAKE_EVERY_CALL 0u
/* Make a call of method (e.g. "StartContainer") fail with a gRPC status and message: with nth = 1 the next
 * call, with nth = N the Nth from now, with FAKE_EVERY_CALL every call until cleared. A failed call changes
 * nothing. Several injections per method are kept. */
int fake_runtime_fail(struct fake_runtime *rt, const char *method, unsigned nth, int grpc_status, const char *message);
/* Clear the injections of method (NULL: of every method). */
void fake_runtime_clear_failures(struct fake_runtime *rt, const char *method);
/* Answer calls of method only after usec (virtual time); 0 clears. A call whose deadline comes first fails
 * DeadlineExceeded and changes nothing. */
int fake_runtime_set_delay(struct fake_runtime *rt, const char *method, uint64_t usec);
/* The runtime stops (every call, and every call in flight, fails Unavailable; nothing in it changes) or
 * comes back. */
void fake_runtime_set_down(struct fake_runtime *rt, bool down);
/* RuntimeConfig answers this cgroup driver (enum Runtime__V1__CgroupDriver); -1 (the default): Unimplemented, as
 * containerd 1.x */
void fake_runtime_set_cgroup_driver(struct fake_runtime *rt, int driver);

/* GetContainerEvents (the evented PLEG's stream): served (containerd 2.x: a container's exit is sent as a
 * CONTAINER_STOPPED_EVENT with its sandbox's and its own status) or not (the default: Unimplemented, as containerd
 * 1.6). fake_runtime_end_streams ends the open ones with a status (a runtime restart: Unavailable); the runtime going
 * down ends them too. */
void fake_runtime_set_events(struct fake_runtime *rt, bool serve);
void fake_runtime_end_streams(struct fake_runtime *rt, int grpc_status, const char *message);
/* Streams open now; GetContainerEvents calls answered so far (open or refused). */
size_t fake_runtime_n_streams(const struct fake_runtime *rt);
unsigned fake_runtime_streams_opened(const struct fake_runtime *rt);

/* ---- the world: looking ---- */
size_t fake_runtime_n_sandboxes(const struct fake_runtime *rt);
const struct fake_sandbox *fake_runtime_sandbox_at(const struct fake_runtime *rt, size_t i); /* creation order */
const struct fake_sandbox *fake_runtime_sandbox(const struct fake_runtime *rt, const char *id);
/* The newest sandbox of a pod, or NULL. */
const struct fake_sandbox *fake_runtime_pod_sandbox(const struct fake_runtime *rt, const char *pod_uid);
size_t fake_runtime_n_containers(const struct fake_runtime *rt);
const struct fake_container *fake_runtime_container_at(const struct fake_runtime *rt, size_t i);
const struct fake_container *fake_runtime_container(const struct fake_runtime *rt, const char *id);
/* The newest instance of a pod's container (by container name), or NULL. */
const struct fake_container *fake_runtime_find(const struct fake_runtime *rt, const char *pod_uid, const char *name);
/* How many instances of a pod's container exist (name NULL: all its containers), in a state (-1: any). */
size_t fake_runtime_count_instances(const struct fake_runtime *rt, const char *pod_uid, const char *name, int state);
/* A label or annotation of a container's config, or NULL. */
const char *fake_container_label(const struct fake_container *c, const char *key);
const char *fake_container_annotation(const struct fake_container *c, const char *key);
const char *fake_sandbox_label(const struct fake_sandbox *s, const char *key);
const struct fake_image *fake_runtime_image(const struct fake_runtime *rt, const char *ref);

/* ---- the world: changing ---- */
/* A sandbox and containers put there directly (as another client would have made them), with the labels a
 * kubelet gives them (pod UID, name and namespace; container name) and nothing else. The container's image
 * is busybox (added if missing). ret_id: the new id (freed by the caller), or NULL. */
int fake_runtime_add_sandbox(struct fake_runtime *rt, const char *pod_uid, const char *pod_name, uint32_t attempt,
                             char **ret_id);
int fake_runtime_add_container(struct fake_runtime *rt, const char *sandbox_id, const char *name, uint32_t attempt,
                               bool start, char **ret_id);
/* A running (or created) container exits with exit_code at finished_at (unix nsec; 0 = now). */
int fake_runtime_exit(struct fake_runtime *rt, const char *container_id, int32_t exit_code, int64_t finished_at);
/* Every instance of a container with this name started from now on runs for usec (virtual time; 0 = exits as
 * it starts) and exits with exit_code. usec = UINT64_MAX: runs until stopped (the default). */
int fake_runtime_set_lifetime(struct fake_runtime *rt, const char *container_name, uint64_t usec, int32_t exit_code);
/* The container is gone from the runtime (no stop). */
int fake_runtime_vanish(struct fake_runtime *rt, const char *container_id);
/* The sandbox dies: NOTREADY, its containers exit 137 (as when its pause process is killed). */
int fake_runtime_sandbox_die(struct fake_runtime *rt, const char *sandbox_id);
int fake_runtime_sandbox_vanish(struct fake_runtime *rt, const char *sandbox_id);
/* An image present on the node. uid < 0: none set (the image's user is a name or empty). */
int fake_runtime_add_image(struct fake_runtime *rt, const char *ref, int64_t uid, const char *username);
int fake_runtime_remove_image(struct fake_runtime *rt, const char *ref);
/* Images that PullImage cannot find (NotFound, containerd's message); by default every pull succeeds. */
int fake_runtime_set_pullable(struct fake_runtime *rt, const char *ref, bool pullable);
/* unlisted: ImageStatus answers no image for it (pulled or not), as a runtime whose image store lags a pull. */
int fake_runtime_set_unlisted(struct fake_runtime *rt, const char *ref, bool unlisted);
/* ExecSync in containers with this name answers exit_code and stdout (default: 0, ""). */
int fake_runtime_set_exec(struct fake_runtime *rt, const char *container_name, int32_t exit_code, const char *out);
/* ... for commands whose argv[0] is command only (before the container's answer above). */
int fake_runtime_set_exec_for(struct fake_runtime *rt, const char *container_name, const char *command,
                              int32_t exit_code, const char *out);
/* A runtime condition ("RuntimeReady", "NetworkReady"; both true by default) as Status reports it. */
int fake_runtime_set_condition(struct fake_runtime *rt, const char *type, bool status, const char *reason,
                               const char *message);
/* Stats of a container as ContainerStats / ListContainerStats / ListPodSandboxStats report them (by default
 * a container has none and the lists are empty). */
int fake_runtime_set_stats(struct fake_runtime *rt, const char *container_id, uint64_t cpu_usage_nsec,
                           uint64_t working_set_bytes);
