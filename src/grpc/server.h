/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A gRPC server (unary and server-streaming methods) over HTTP/2 (nghttp2) on a unix socket, driven by the libevent loop: the
 * kubelet's own services, the device plugin Registration and the pod resources API.
 *
 * A handler gets the decoded request and answers before it returns (grpc_server_reply or
 * grpc_server_reply_error), or says it will answer later (grpc_server_reply_later) or holds the call for a
 * server stream (grpc_server_call_hold); handlers never block. Limits for clients that
 * misbehave: at most GRPC_SERVER_MAX_CONNS connections and 100 streams each, requests capped at
 * GRPC_SERVER_MAX_REQUEST, a connection whose unread replies pass GRPC_SERVER_MAX_QUEUED is not read from until
 * it catches up, an idle connection is closed after GRPC_SERVER_IDLE_USEC. */

#include <event2/event.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GRPC_SERVER_MAX_CONNS 64
#define GRPC_SERVER_MAX_REQUEST (4u * 1024u * 1024u)
#define GRPC_SERVER_MAX_QUEUED (8u * 1024u * 1024u)
#define GRPC_SERVER_IDLE_USEC (300 * UINT64_C(1000000))
/* what one stream may have waiting for its client before grpc_server_stream_send refuses more */
#define GRPC_SERVER_MAX_STREAM_QUEUED (16u * 1024u * 1024u)

struct grpc_server;
struct grpc_server_call;

/* a held call going away before its owner answered it */
typedef void (*grpc_server_close_cb)(struct grpc_server_call *call, void *userdata);
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
 * handler, or later for a call given to grpc_server_reply_later. */
void grpc_server_reply(struct grpc_server_call *call, const ProtobufCMessage *resp);
void grpc_server_reply_error(struct grpc_server_call *call, int grpc_status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* A unary call answered after its handler returned: the handler calls this instead of answering, and its owner
 * answers once later, on the loop, with grpc_server_reply or grpc_server_reply_error: the same frames as an
 * answer from the handler (HEADERS, the message, trailers; or trailers only for an error). on_close runs (on the
 * loop, once) when the call goes away before it was answered: the client cancelled (its deadline, say), its
 * connection closed, or the server was freed; the owner must forget the call there and not answer it. After
 * answering, the owner must not touch the call again. */
void grpc_server_reply_later(struct grpc_server_call *call, grpc_server_close_cb on_close, void *userdata);

/* The token bucket of upstream's gRPC rate-limiting interceptor (golang.org/x/time/rate): bursts of `burst`
 * requests, refilled at `qps` per second, full at the start. */
struct grpc_rate_limit {
        double qps, burst, tokens;
        uint64_t last_usec;
};
void grpc_rate_limit_init(struct grpc_rate_limit *l, double qps, double burst);
/* Take a token: false when the bucket is empty (ResourceExhausted "rejected by rate limit"). */
bool grpc_rate_limit_allow(struct grpc_rate_limit *l);

/* A server-streaming answer. The handler holds the call instead of replying: from then on the owner sends
 * messages with grpc_server_stream_send (now or later, on the loop) and ends the call once with
 * grpc_server_stream_end. on_close runs (on the loop, once) when the call goes away before it was ended: the
 * client cancelled, its connection closed, or the server was freed; the owner must forget the call there.
 * After grpc_server_stream_end the owner must not touch the call again. */
void grpc_server_call_hold(struct grpc_server_call *call, grpc_server_close_cb on_close, void *userdata);
/* 0, or -ENOBUFS when the client has not taken what was sent (more than GRPC_SERVER_MAX_STREAM_QUEUED
 * waiting: a slow reader), -EMSGSIZE, -ENOMEM; nothing queued then. */
int grpc_server_stream_send(struct grpc_server_call *call, const ProtobufCMessage *msg);
/* grpc_status GRPC_OK with fmt NULL for a clean end. */
void grpc_server_stream_end(struct grpc_server_call *call, int grpc_status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
