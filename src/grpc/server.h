/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A gRPC server (unary methods) over HTTP/2 (nghttp2) on a unix socket, driven by the libevent loop: the
 * kubelet's own services, the device plugin Registration and the pod resources API.
 *
 * A handler gets the decoded request and answers before it returns (grpc_server_reply or
 * grpc_server_reply_error); handlers therefore never block and never hold a call. Limits for clients that
 * misbehave: at most GRPC_SERVER_MAX_CONNS connections and 100 streams each, requests capped at
 * GRPC_SERVER_MAX_REQUEST, a connection whose unread replies pass GRPC_SERVER_MAX_QUEUED is not read from until
 * it catches up, an idle connection is closed after GRPC_SERVER_IDLE_USEC. */

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#define GRPC_SERVER_MAX_CONNS 64
#define GRPC_SERVER_MAX_REQUEST (4u * 1024u * 1024u)
#define GRPC_SERVER_MAX_QUEUED (8u * 1024u * 1024u)
#define GRPC_SERVER_IDLE_USEC (300 * UINT64_C(1000000))

struct grpc_server;
struct grpc_server_call;

typedef void (*grpc_server_handler)(struct grpc_server_call *call, const ProtobufCMessage *req, void *userdata);

struct grpc_server_method {
        const char *path;                          /* "/v1beta1.Registration/Register" */
        const ProtobufCMessageDescriptor *request; /* the request's message type */
        grpc_server_handler handler;
};

/* Listens on socket_path (a stale socket there is removed first; the directory must exist). methods is
 * borrowed and must outlive the server; userdata is given to every handler. */
int grpc_server_new(struct event_base *base, const char *socket_path, const struct grpc_server_method *methods,
                    size_t n_methods, void *userdata, struct grpc_server **ret);
/* Closes every connection and the listener, removes the socket. Accepts NULL. */
struct grpc_server *grpc_server_free(struct grpc_server *s);

/* The answer to a call: a message (borrowed, packed at once), or a status and message. Exactly once, from the
 * handler. */
void grpc_server_reply(struct grpc_server_call *call, const ProtobufCMessage *resp);
void grpc_server_reply_error(struct grpc_server_call *call, int grpc_status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
