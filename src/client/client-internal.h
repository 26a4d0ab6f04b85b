/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Internals of the apiserver client shared by client.c and watch.c, and the pure helpers the unit tests
 * call directly (token bucket, back-off, the generic error of a status code). */

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/time.h"
#include "client/client.h"
#include "client/transport.h"

#define KUBE_CONFIG_MAX_SIZE (1024u * 1024u)              /* a kubeconfig file */
#define KUBE_TOKEN_MAX_SIZE (1024u * 1024u)               /* a token file */
#define KUBE_WATCH_MAX_EVENT (16u * 1024u * 1024u)        /* one line of a watch stream */
#define KUBE_WATCH_MAX_BUFFER (2u * KUBE_WATCH_MAX_EVENT) /* undelivered bytes; the transfer pauses above */
#define KUBE_MAX_ATTEMPTS 5u
#define KUBE_BACKOFF_BASE_USEC (100u * 1000u)
#define KUBE_BACKOFF_MAX_USEC (10u * 1000u * 1000u)
#define KUBE_RETRY_AFTER_MAX_USEC (60u * 1000u * 1000u)
#define KUBE_TOKEN_REFRESH_USEC (60u * 1000u * 1000u) /* client-go's cachingTokenSource period */
#define KUBE_CONNECT_TIMEOUT_MS 30000L                /* net.Dialer{Timeout: 30s} */

/* ---- token bucket (golang.org/x/time/rate semantics: a reservation may drive the level negative, the
 * caller then waits until its token has been refilled; requests are served in the order they reserve) ---- */
struct kube_token_bucket {
        double qps;    /* tokens per second, > 0 */
        double burst;  /* capacity, >= 1 */
        double tokens; /* current level (negative: tokens owed to reservations) */
        uint64_t last_usec;
};
void kube_token_bucket_init(struct kube_token_bucket *b, double qps, int burst, uint64_t now_usec);
/* Reserve one token at now_usec; returns how long the caller must wait before using it (0: at once). */
uint64_t kube_token_bucket_reserve(struct kube_token_bucket *b, uint64_t now_usec);

/* ---- retries ---- */
/* Delay before retry number `retry` (1 = the first retry): 100 ms doubling, capped at 10 s, times a jitter
 * factor in [0.8, 1.2) taken from jitter01 in [0, 1). */
uint64_t kube_backoff_usec(unsigned retry, double jitter01);
/* A Retry-After header value (delay-seconds form only) in usec, capped at 60 s; 0 if absent/unparsable. */
uint64_t kube_parse_retry_after(const char *value);

/* ---- errors ---- */
/* apimachinery's NewGenericServerResponse: the reason ("NotFound", "" if none) and message for an error
 * status without a Status body. server_message (may be NULL) is the body text, used for 403, 406, 415 and
 * 5xx (quoted as Go's %q there).
 * Returns a new string (NULL on OOM); *ret_reason is static. */
char *kube_generic_error(long status, const char *method, const char *server_message, const char **ret_reason);
const char *kube_status_text(long status); /* "OK", "Not Found", "" if unknown */

/* ---- the client ---- */
enum kube_request_state {
        KUBE_REQ_BACKOFF,    /* waiting out a retry back-off; then reserves a rate-limiter token */
        KUBE_REQ_WAITING,    /* waiting for its rate-limiter slot; then starts the transfer */
        KUBE_REQ_RUNNING,    /* a stream on the transport (the timer is the request's deadline) */
        KUBE_REQ_FINISHED,   /* the result is stored; delivery is armed */
        KUBE_REQ_DELIVERING, /* inside the final callback */
};

struct kube_request {
        struct kube_client *client; /* NULL once detached */
        struct kube_request *prev, *next;
        bool is_watch;
        enum kube_request_state state;

        char *method, *path;
        char *body;
        size_t body_len;
        char *content_type;
        int flags;
        unsigned attempts;   /* transfers started */
        uint64_t start_usec; /* of the current transfer */

        kube_callback_t cb;
        kube_watch_event_t event;
        kube_watch_done_t done;
        void *userdata;

        struct event *timer;
        struct kube_stream *stream;
        struct kube_transport *transport; /* the one the stream runs on (the client's, or one retired since) */
        char *full_path;                  /* the URL's path prefix and path */
        char *auth;                       /* "Bearer ..." */
        struct z_stream_s *gzip;          /* a gzip-encoded response being inflated */

        /* response */
        char *buf;
        size_t len, alloc;
        bool too_large, gzip_failed;
        long status;
        uint64_t retry_after_usec;

        /* result */
        int r;
        json_t *json;
        char *error, *reason;

        /* watch */
        uint64_t idle_usec;
        struct event *idle_timer, *dispatch_ev;
        size_t consumed;   /* bytes of buf already delivered */
        size_t line_start; /* start of the unterminated line at the end of buf */
        bool paused, transfer_done, dispatching, cancelled;
};

struct kube_client {
        struct event_base *base;
        struct kube_transport *transport;

        char *url_base; /* the URL's path prefix ("" for none), what request paths are appended to */
        char *server;   /* as configured, for logs */
        bool https;
        char *host, *authority, *tls_server_name;
        int port;
        char *proxy_url;
        bool compression;

        char *ca_file, *cert_file, *key_file;
        char *ca_data, *cert_data, *key_data;
        bool insecure;

        char *token, *token_file;
        uint64_t token_read_usec; /* last attempt to read token_file, 0 = never */

        char *user_agent;
        uint64_t timeout_usec;
        size_t max_response_size;
        bool rate_limited;
        struct kube_token_bucket bucket;

        struct kube_request *requests;

        /* transports replaced by kube_client_reset_connections(): their last requests finish there, then they are
         * freed with their connections (from the reaper event, never inside the transport's callbacks) */
        struct kube_transport **retired;
        size_t n_retired;
        struct event *reaper;
};

/* client.c, for watch.c */
int kube_request_alloc(struct kube_client *c, const char *method, const char *path, struct kube_request **ret);
void kube_request_free(struct kube_request *r);
/* Rate limiter slot, then start_transfer on the request's timer. */
void kube_request_schedule(struct kube_request *r, uint64_t delay_usec);
/* Start the request's stream (token, headers) on the client's transport with ops. */
int kube_request_start_stream(struct kube_request *r, const struct kube_stream_ops *ops, struct ck_error **ret_error);
void kube_request_release_stream(struct kube_request *r);
int kube_buffer_append(struct kube_request *r, const char *p, size_t n, size_t max);
/* rc: 0 or the transport's error, why: its message */
void kube_log_transfer(struct kube_request *r, const char *verb, int rc, const char *why);
/* From a finished error response (status >= 300): the Status' message and reason or the generic ones. */
int kube_response_error(struct kube_request *r, json_t *body);
char *kube_transfer_error(struct kube_request *r, int rc, const char *why);

/* watch.c */
int kube_watch_start(struct kube_request *r);
/* End a running watch from our side: done() gets rc and error (taken). */
void kube_watch_abort(struct kube_request *r, int rc, char *error);
/* One line of a watch stream (trailing CR and blanks ignored): 0 and the event, an object with a string "type"
 * and an object "object" (NULL for an empty line); or -EBADMSG and why in *ret_error. */
int kube_watch_parse_event(const char *line, size_t n, json_t **ret_event, struct ck_error **ret_error);
