/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* CRI v1 client: the typed calls of runtime.v1's RuntimeService and ImageService on top of the gRPC client
 * (grpc/client.h), with the kubelet's per-operation counters. Built as its own library (libckubelet-cri) so
 * that tests can link the core with another implementation of this header.
 *
 * Every call is asynchronous: it queues the request and returns at once; the callback runs later on the
 * loop with the decoded response or an error. Nothing here blocks. Each call has a deadline (the client's
 * default, --runtime-request-timeout, unless the call gives its own). When the runtime goes away (containerd
 * restart) pending calls fail with UNAVAILABLE and the next call reconnects. */

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/histogram.h"
#include "cri.pb-c.h"
#include "grpc/client.h"

struct cri_reply {
        int r;                 /* 0 or negative errno (mapped from grpc status, see grpc_status_to_errno) */
        int grpc_status;       /* enum grpc_code; GRPC_UNAVAILABLE for transport failures */
        const char *message;   /* grpc-message or transport error text; never NULL ("" on success) */
        ProtobufCMessage *msg; /* decoded response, NULL on error; owned by the client, valid only during
                                    the callback */
};

typedef void (*cri_callback_t)(const struct cri_reply *reply, void *userdata);

struct cri_client;

/* endpoint: "unix:///run/containerd/containerd.sock" or a plain path (or "tcp://10.0.0.1:50051", an address).
 * image_endpoint may be NULL (same as runtime). default_timeout_usec: per-call deadline
 * (--runtime-request-timeout). */
int cri_client_new(struct event_base *base, const char *runtime_endpoint, const char *image_endpoint,
                   uint64_t default_timeout_usec, struct cri_client **ret);
/* Fails the calls still pending with -ECANCELED (their callbacks run) and frees. Accepts NULL. The kubelet frees
 * its client after everything that calls it, each of which has cancelled its own calls (struct cri_calls), so at
 * that point nothing is pending. */
struct cri_client *cri_client_free(struct cri_client *c);

/* The calls one owner has in flight (a pod sync pass, the PLEG's relist, the node status' runtime part): the owner
 * passes it to each call and, when it goes, cancels what is still in flight with cri_calls_cancel(), after which
 * none of those callbacks runs. A call leaves its set just before its callback runs. Zeroed is empty; the owner
 * must not move it while calls are in flight. */
struct cri_call;
struct cri_calls {
        struct cri_call *head;
        /* what cri_calls_cancel() does with the userdata of each call it ends, when that is a context of the call
         * (a container being killed) rather than the owner itself; NULL: nothing */
        void (*drop)(void *userdata);
};
/* Ends every call of the set: no callback runs (the set's drop gets each userdata), the set is empty after.
 * Accepts NULL. */
void cri_calls_cancel(struct cri_calls *calls);
/* Whether any call of the set is in flight. */
bool cri_calls_pending(const struct cri_calls *calls);

/* Generic unary call. method: full path, "/runtime.v1.RuntimeService/Version". timeout_usec 0 = default.
 * Returns 0 if queued (the callback will run exactly once, never from inside this function, unless the owner
 * cancels the call first), or a negative errno (callback will not run). owner: the set the call joins, NULL for a
 * call of an owner that outlives the client (the tools, a test). */
int cri_call(struct cri_client *c, const char *method, const ProtobufCMessage *req,
             const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec, cri_callback_t cb, void *userdata,
             struct cri_calls *owner);

/* RuntimeService/GetContainerEvents, the server stream of the evented PLEG (KEP-3386): on_event gets each event in
 * order as it arrives (borrowed, valid during the callback); on_end runs once when the stream ends, with its status
 * (reply->msg NULL): UNIMPLEMENTED from a runtime without it (containerd 1.x), -ECANCELED when the client is freed.
 * No deadline. Returns 0 (the callbacks run later, on the loop) or a negative errno (none runs). *ret: for
 * cri_stream_cancel(), valid until on_end has run. */
struct cri_stream;
typedef void (*cri_event_cb)(const Runtime__V1__ContainerEventResponse *ev, void *userdata);
int cri_get_container_events(struct cri_client *c, cri_event_cb on_event, cri_callback_t on_end, void *userdata,
                             struct cri_stream **ret);
/* Ends the stream; none of its callbacks run after this. Accepts NULL. */
void cri_stream_cancel(struct cri_stream *s);

/* Per-method counters for the metrics endpoint (kubelet_runtime_operations_*). */
struct cri_op_stats {
        const char *operation; /* "run_podsandbox", "create_container", ... as upstream */
        uint64_t count;
        uint64_t errors;
        double seconds_sum;
        struct histogram duration; /* kubelet_runtime_operations_duration_seconds: ExponentialBuckets(.005, 2.5, 14) */
};
/* Iterates over operations seen so far. */
void cri_client_foreach_stats(struct cri_client *c, void (*fn)(const struct cri_op_stats *s, void *ud), void *ud);

/* The CRI methods, once: X(function, service, method, request type, response descriptor). The declarations below,
 * the gRPC client's wrappers (cri.c) and the fake runtime of the unit tests are all made from this list. */
#define CRI_METHODS(X)                                                                                                 \
        X(cri_version, RuntimeService, Version, VersionRequest, runtime__v1__version_response__descriptor)             \
        X(cri_status, RuntimeService, Status, StatusRequest, runtime__v1__status_response__descriptor)                 \
        X(cri_runtime_config, RuntimeService, RuntimeConfig, RuntimeConfigRequest,                                     \
          runtime__v1__runtime_config_response__descriptor)                                                            \
        X(cri_run_pod_sandbox, RuntimeService, RunPodSandbox, RunPodSandboxRequest,                                    \
          runtime__v1__run_pod_sandbox_response__descriptor)                                                           \
        X(cri_stop_pod_sandbox, RuntimeService, StopPodSandbox, StopPodSandboxRequest,                                 \
          runtime__v1__stop_pod_sandbox_response__descriptor)                                                          \
        X(cri_remove_pod_sandbox, RuntimeService, RemovePodSandbox, RemovePodSandboxRequest,                           \
          runtime__v1__remove_pod_sandbox_response__descriptor)                                                        \
        X(cri_pod_sandbox_status, RuntimeService, PodSandboxStatus, PodSandboxStatusRequest,                           \
          runtime__v1__pod_sandbox_status_response__descriptor)                                                        \
        X(cri_list_pod_sandbox, RuntimeService, ListPodSandbox, ListPodSandboxRequest,                                 \
          runtime__v1__list_pod_sandbox_response__descriptor)                                                          \
        X(cri_create_container, RuntimeService, CreateContainer, CreateContainerRequest,                               \
          runtime__v1__create_container_response__descriptor)                                                          \
        X(cri_start_container, RuntimeService, StartContainer, StartContainerRequest,                                  \
          runtime__v1__start_container_response__descriptor)                                                           \
        X(cri_stop_container, RuntimeService, StopContainer, StopContainerRequest,                                     \
          runtime__v1__stop_container_response__descriptor)                                                            \
        X(cri_update_container_resources, RuntimeService, UpdateContainerResources, UpdateContainerResourcesRequest,   \
          runtime__v1__update_container_resources_response__descriptor)                                                \
        X(cri_remove_container, RuntimeService, RemoveContainer, RemoveContainerRequest,                               \
          runtime__v1__remove_container_response__descriptor)                                                          \
        X(cri_list_containers, RuntimeService, ListContainers, ListContainersRequest,                                  \
          runtime__v1__list_containers_response__descriptor)                                                           \
        X(cri_container_status, RuntimeService, ContainerStatus, ContainerStatusRequest,                               \
          runtime__v1__container_status_response__descriptor)                                                          \
        X(cri_exec_sync, RuntimeService, ExecSync, ExecSyncRequest, runtime__v1__exec_sync_response__descriptor)       \
        X(cri_exec, RuntimeService, Exec, ExecRequest, runtime__v1__exec_response__descriptor)                         \
        X(cri_attach, RuntimeService, Attach, AttachRequest, runtime__v1__attach_response__descriptor)                 \
        X(cri_port_forward, RuntimeService, PortForward, PortForwardRequest,                                           \
          runtime__v1__port_forward_response__descriptor)                                                              \
        X(cri_container_stats, RuntimeService, ContainerStats, ContainerStatsRequest,                                  \
          runtime__v1__container_stats_response__descriptor)                                                           \
        X(cri_list_container_stats, RuntimeService, ListContainerStats, ListContainerStatsRequest,                     \
          runtime__v1__list_container_stats_response__descriptor)                                                      \
        X(cri_list_pod_sandbox_stats, RuntimeService, ListPodSandboxStats, ListPodSandboxStatsRequest,                 \
          runtime__v1__list_pod_sandbox_stats_response__descriptor)                                                    \
        X(cri_image_fs_info, ImageService, ImageFsInfo, ImageFsInfoRequest,                                            \
          runtime__v1__image_fs_info_response__descriptor)                                                             \
        X(cri_pull_image, ImageService, PullImage, PullImageRequest, runtime__v1__pull_image_response__descriptor)     \
        X(cri_image_status, ImageService, ImageStatus, ImageStatusRequest,                                             \
          runtime__v1__image_status_response__descriptor)                                                              \
        X(cri_list_images, ImageService, ListImages, ListImagesRequest, runtime__v1__list_images_response__descriptor) \
        X(cri_remove_image, ImageService, RemoveImage, RemoveImageRequest,                                             \
          runtime__v1__remove_image_response__descriptor)                                                              \
        X(cri_reopen_container_log, RuntimeService, ReopenContainerLog, ReopenContainerLogRequest,                     \
          runtime__v1__reopen_container_log_response__descriptor)

/* Typed wrappers: req is borrowed; the callback's reply->msg is the matching *Response type; owner as cri_call(). */
#define CRI_DECLARE(fn, Svc, Method, Req, resp_desc)                                                          \
        int fn(struct cri_client *c, const Runtime__V1__##Req *req, uint64_t timeout_usec, cri_callback_t cb, \
               void *userdata, struct cri_calls *owner);
CRI_METHODS(CRI_DECLARE)
#undef CRI_DECLARE

/* The wrappers as calls of cri_call(), for an implementation of this header (cri.c, the tests' fake runtime). */
#define CRI_DEFINE(fn, Svc, Method, Req, resp_desc)                                                           \
        int fn(struct cri_client *c, const Runtime__V1__##Req *req, uint64_t timeout_usec, cri_callback_t cb, \
               void *userdata, struct cri_calls *owner) {                                                     \
                return cri_call(c, "/runtime.v1." #Svc "/" #Method, &req->base, &resp_desc, timeout_usec, cb, \
                                userdata, owner);                                                             \
        }
