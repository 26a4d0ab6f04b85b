/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A gRPC client (unary calls) over HTTP/2 (nghttp2) to one endpoint, driven by the libevent loop.
 *
 * Every call is asynchronous: it queues the request and returns at once; the callback runs later on the loop
 * with the decoded response or an error, exactly once, never from inside grpc_call(). Nothing here blocks.
 * Each call has a deadline (the client's default unless the call gives its own), sent as grpc-timeout and
 * enforced locally. Responses are capped at GRPC_MAX_MESSAGE_SIZE. When the server goes away, pending calls
 * fail with UNAVAILABLE and the next call reconnects. */

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>
#include <stdint.h>

#define GRPC_MAX_MESSAGE_SIZE (16u * 1024u * 1024u)         /* the kubelet's CRI maxMsgSize, for requests and replies */
#define GRPC_DEFAULT_TIMEOUT_USEC (120 * UINT64_C(1000000)) /* when the client is given none */

/* gRPC status codes (google.golang.org/grpc/codes) */
enum grpc_code {
        GRPC_OK = 0,
        GRPC_CANCELLED = 1,
        GRPC_UNKNOWN = 2,
        GRPC_INVALID_ARGUMENT = 3,
        GRPC_DEADLINE_EXCEEDED = 4,
        GRPC_NOT_FOUND = 5,
        GRPC_ALREADY_EXISTS = 6,
        GRPC_PERMISSION_DENIED = 7,
        GRPC_RESOURCE_EXHAUSTED = 8,
        GRPC_FAILED_PRECONDITION = 9,
        GRPC_ABORTED = 10,
        GRPC_OUT_OF_RANGE = 11,
        GRPC_UNIMPLEMENTED = 12,
        GRPC_INTERNAL = 13,
        GRPC_UNAVAILABLE = 14,
        GRPC_DATA_LOSS = 15,
        GRPC_UNAUTHENTICATED = 16,
};

/* Map a grpc status to a negative errno: NOT_FOUND→-ENOENT, DEADLINE_EXCEEDED→-ETIMEDOUT,
 * UNAVAILABLE→-ECONNREFUSED, ALREADY_EXISTS→-EEXIST, INVALID_ARGUMENT→-EINVAL, UNIMPLEMENTED→-EOPNOTSUPP,
 * PERMISSION_DENIED→-EACCES, RESOURCE_EXHAUSTED→-ENOSPC, CANCELLED→-ECANCELED, others→-EIO. */
int grpc_status_to_errno(int grpc_status);
/* "Unavailable", "DeadlineExceeded", ...: the names Go's gRPC errors print ("rpc error: code = %s desc = %s") */
const char *grpc_code_to_string(int grpc_status);

struct grpc_reply {
        int r;                  /* 0 or negative errno (grpc_status_to_errno) */
        int grpc_status;        /* enum grpc_code; GRPC_UNAVAILABLE for transport failures */
        const char *message;    /* grpc-message or transport error text; never NULL ("" on success) */
        ProtobufCMessage *msg;  /* decoded response, NULL on error; owned by the client, valid only during
                                    the callback */
        uint64_t duration_usec; /* from grpc_call() to the outcome */
};

typedef void (*grpc_callback_t)(const struct grpc_reply *reply, void *userdata);

struct grpc_client;

/* endpoint: "unix:///run/containerd/containerd.sock" or a plain path; "tcp://10.0.0.1:50051" (an address, not a
 * name; no TLS). default_timeout_usec: per-call deadline when a call gives none (0: GRPC_DEFAULT_TIMEOUT_USEC).
 * -EPROTONOSUPPORT for another scheme, -EINVAL for a bad tcp address. Nothing is connected yet. */
int grpc_client_new(struct event_base *base, const char *endpoint, uint64_t default_timeout_usec,
                    struct grpc_client **ret);
/* Fails all pending calls with CANCELLED (their callbacks run now; calls they make fail with -ESHUTDOWN) and
 * frees. Accepts NULL. */
struct grpc_client *grpc_client_free(struct grpc_client *c);

/* The user-agent header (default "ckubelet/<version> grpc-c"). */
int grpc_client_set_user_agent(struct grpc_client *c, const char *ua);

struct grpc_call;

/* A unary call. method: full path, "/runtime.v1.RuntimeService/Version"; req is borrowed (packed at once);
 * resp_desc: the reply's message type; timeout_usec 0 = the client's default. Returns 0 if queued (the
 * callback will run exactly once, never from inside this function, unless the call is cancelled first), or a
 * negative errno (the callback will not run): -ESHUTDOWN while the client is being freed, -EMSGSIZE for a
 * request over the cap. *ret (may be NULL): the call, for grpc_call_cancel(), valid until its callback runs. */
int grpc_call(struct grpc_client *c, const char *method, const ProtobufCMessage *req,
              const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec, grpc_callback_t cb, void *userdata,
              struct grpc_call **ret);

/* ---- server streaming ---- */

/* One message of a stream: borrowed, valid during the callback. */
typedef void (*grpc_stream_cb)(const ProtobufCMessage *msg, void *userdata);

/* A server-streaming call (ListAndWatch): on_message gets each response message in order as it arrives; on_end
 * runs once when the stream ends (its status; reply->msg is NULL). No deadline. Callbacks run on the loop, never
 * inside this function nor inside nghttp2; they must not free the client (defer that to an event). *ret: the
 * call, for grpc_call_cancel(), valid until on_end has run. */
int grpc_call_stream(struct grpc_client *c, const char *method, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *resp_desc, grpc_stream_cb on_message, grpc_callback_t on_end,
                     void *userdata, struct grpc_call **ret);
/* Ends a call (the stream is reset); none of its callbacks run after this. Accepts NULL. */
void grpc_call_cancel(struct grpc_call *call);
