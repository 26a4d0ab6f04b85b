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
/* Fails all pending calls with -ECANCELED (callbacks run) and frees. Accepts NULL. */
struct cri_client *cri_client_free(struct cri_client *c);

/* Generic unary call. method: full path, "/runtime.v1.RuntimeService/Version". timeout_usec 0 = default.
 * Returns 0 if queued (the callback will run exactly once, never from inside this function), or a
 * negative errno (callback will not run). */
int cri_call(struct cri_client *c, const char *method, const ProtobufCMessage *req,
             const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec, cri_callback_t cb, void *userdata);

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

/* Typed wrappers: req is borrowed; the callback's reply->msg is the matching *Response type. */
#define CRI_DECLARE(fn, Svc, Method, Req)                                                                     \
        int fn(struct cri_client *c, const Runtime__V1__##Req *req, uint64_t timeout_usec, cri_callback_t cb, \
               void *userdata)

CRI_DECLARE(cri_version, RuntimeService, Version, VersionRequest);
CRI_DECLARE(cri_status, RuntimeService, Status, StatusRequest);
CRI_DECLARE(cri_run_pod_sandbox, RuntimeService, RunPodSandbox, RunPodSandboxRequest);
CRI_DECLARE(cri_stop_pod_sandbox, RuntimeService, StopPodSandbox, StopPodSandboxRequest);
CRI_DECLARE(cri_remove_pod_sandbox, RuntimeService, RemovePodSandbox, RemovePodSandboxRequest);
CRI_DECLARE(cri_pod_sandbox_status, RuntimeService, PodSandboxStatus, PodSandboxStatusRequest);
CRI_DECLARE(cri_list_pod_sandbox, RuntimeService, ListPodSandbox, ListPodSandboxRequest);
CRI_DECLARE(cri_create_container, RuntimeService, CreateContainer, CreateContainerRequest);
CRI_DECLARE(cri_start_container, RuntimeService, StartContainer, StartContainerRequest);
CRI_DECLARE(cri_stop_container, RuntimeService, StopContainer, StopContainerRequest);
CRI_DECLARE(cri_update_container_resources, RuntimeService, UpdateContainerResources, UpdateContainerResourcesRequest);
CRI_DECLARE(cri_remove_container, RuntimeService, RemoveContainer, RemoveContainerRequest);
CRI_DECLARE(cri_list_containers, RuntimeService, ListContainers, ListContainersRequest);
CRI_DECLARE(cri_container_status, RuntimeService, ContainerStatus, ContainerStatusRequest);
CRI_DECLARE(cri_exec_sync, RuntimeService, ExecSync, ExecSyncRequest);
CRI_DECLARE(cri_exec, RuntimeService, Exec, ExecRequest);
CRI_DECLARE(cri_attach, RuntimeService, Attach, AttachRequest);
CRI_DECLARE(cri_port_forward, RuntimeService, PortForward, PortForwardRequest);
CRI_DECLARE(cri_container_stats, RuntimeService, ContainerStats, ContainerStatsRequest);
CRI_DECLARE(cri_list_container_stats, RuntimeService, ListContainerStats, ListContainerStatsRequest);
CRI_DECLARE(cri_list_pod_sandbox_stats, RuntimeService, ListPodSandboxStats, ListPodSandboxStatsRequest);
CRI_DECLARE(cri_image_fs_info, ImageService, ImageFsInfo, ImageFsInfoRequest);
CRI_DECLARE(cri_pull_image, ImageService, PullImage, PullImageRequest);
CRI_DECLARE(cri_image_status, ImageService, ImageStatus, ImageStatusRequest);
CRI_DECLARE(cri_list_images, ImageService, ListImages, ListImagesRequest);
CRI_DECLARE(cri_remove_image, ImageService, RemoveImage, RemoveImageRequest);
CRI_DECLARE(cri_reopen_container_log, RuntimeService, ReopenContainerLog, ReopenContainerLogRequest);
