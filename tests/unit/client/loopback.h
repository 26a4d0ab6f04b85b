/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A scriptable evhttp server on 127.0.0.1 (ephemeral port) on the test's event loop, for driving the real
 * apiserver client: each test installs a handler that answers at once, streams chunks on a timer, or holds
 * the request. Held and streaming requests are finished at teardown (evhttp keeps a request whose client
 * went away until it is answered). */

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "basic/strv.h"
#include "basic/time.h"

#define SRV_MAX_HELD 64
#define SRV_MAX_HITS 64

struct srv;

/* How a stream finishes after its chunks. */
enum {
        SRV_STALL = 0, /* stays open and silent (until teardown) */
        SRV_END = 1,   /* the end of the body */
        SRV_DROP = 2,  /* the connection is closed mid-body */
};

/* A response in progress: chunks sent one per timer tick, then the end (or nothing: a stalled stream). */
struct srv_stream {
        struct srv *srv;
        struct evhttp_request *req; /* NULL once finished */
        struct event *timer;
        char **chunks;
        size_t n_chunks, next;
        unsigned delay_ms;
        bool started;
        int end; /* SRV_STALL, SRV_END, SRV_DROP */
};

struct srv {
        struct event_base *base;
        struct evhttp *http;
        int port;
        char url[64]; /* "http://127.0.0.1:PORT" */

        void (*handler)(struct srv *s, struct evhttp_request *req);
        void *userdata;

        unsigned hits;
        uint64_t hit_usec[SRV_MAX_HITS];
        /* the last request */
        char *method, *uri, *body;
        char **headers; /* "Name: value" */

        struct srv_stream *held[SRV_MAX_HELD];
        size_t n_held;
};

static inline const char *srv_method_name(enum evhttp_cmd_type c) {
        switch (c) {
        case EVHTTP_REQ_GET:
                return "GET";
        case EVHTTP_REQ_POST:
                return "POST";
        case EVHTTP_REQ_PUT:
                return "PUT";
        case EVHTTP_REQ_PATCH:
                return "PATCH";
        case EVHTTP_REQ_DELETE:
                return "DELETE";
        case EVHTTP_REQ_HEAD:
                return "HEAD";
        default:
                return "OTHER";
        }
}

/* The last request's header, NULL if absent. */
static inline const char *srv_header(struct srv *s, const char *name) {
        size_t n = strlen(name);

        for (char **h = s->headers; h && *h; h++)
                if (strncasecmp(*h, name, n) == 0 && (*h)[n] == ':')
                        return *h + n + 2;
        return NULL;
}

static inline void srv_on_request(struct evhttp_request *req, void *userdata) {
        struct srv *s = userdata;
        struct evkeyvalq *h = evhttp_request_get_input_headers(req);
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t n = evbuffer_get_length(in);

        if (!evhttp_request_get_uri(req)) {
                /* evhttp reports a broken request this way: answer it so that it is freed */
                evhttp_send_error(req, 400, NULL);
                return;
        }
        if (s->hits < SRV_MAX_HITS)
                s->hit_usec[s->hits] = now_usec();
        s->hits++;
        free(s->method);
        free(s->uri);
        free(s->body);
        s->method = strdup(srv_method_name(evhttp_request_get_command(req)));
        s->uri = strdup(evhttp_request_get_uri(req));
        s->body = malloc(n + 1);
        assert_non_null(s->method);
        assert_non_null(s->uri);
        assert_non_null(s->body);
        evbuffer_copyout(in, s->body, n);
        s->body[n] = '\0';
        s->headers = strv_free(s->headers);
        for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next) {
                char *line;
                assert_true(asprintf(&line, "%s: %s", kv->key, kv->value) > 0);
                assert_int_equal(strv_push(&s->headers, line), 0);
        }
        if (s->handler)
                s->handler(s, req);
        else
                evhttp_send_error(req, 500, "no handler");
}

/* Answer at once. extra_header: "Name: value" or NULL. */
static inline void srv_reply(struct evhttp_request *req, int code, const char *content_type, const char *extra_header,
                             const char *body, size_t len) {
        struct evbuffer *buf = evbuffer_new();
        struct evkeyvalq *out = evhttp_request_get_output_headers(req);

        assert_non_null(buf);
        if (content_type)
                evhttp_add_header(out, "Content-Type", content_type);
        if (extra_header) {
                char name[128];
                const char *colon = strchr(extra_header, ':');

                assert_non_null(colon);
                snprintf(name, sizeof(name), "%.*s", (int) (colon - extra_header), extra_header);
                evhttp_add_header(out, name, colon + 2);
        }
        if (body)
                evbuffer_add(buf, body, len);
        evhttp_send_reply(req, code, "X", buf);
        evbuffer_free(buf);
}

static inline void srv_reply_json(struct evhttp_request *req, int code, const char *json) {
        srv_reply(req, code, "application/json", NULL, json, strlen(json));
}

static inline void srv_stream_tick(evutil_socket_t fd, short what, void *userdata) {
        struct srv_stream *st = userdata;
        struct timeval tv = { .tv_sec = st->delay_ms / 1000, .tv_usec = (st->delay_ms % 1000) * 1000 };

        if (!st->req)
                return;
        if (st->next < st->n_chunks) {
                struct evbuffer *buf = evbuffer_new();

                assert_non_null(buf);
                evbuffer_add(buf, st->chunks[st->next], strlen(st->chunks[st->next]));
                evhttp_send_reply_chunk(st->req, buf);
                evbuffer_free(buf);
                st->next++;
                if (st->next < st->n_chunks) {
                        evtimer_add(st->timer, &tv);
                        return;
                }
                if (st->end == SRV_DROP) {
                        /* the drop comes after the last chunk was flushed */
                        struct timeval later = { .tv_sec = 0, .tv_usec = 20 * 1000 };
                        evtimer_add(st->timer, &later);
                        return;
                }
        }
        if (st->end == SRV_END) {
                evhttp_send_reply_end(st->req);
                st->req = NULL;
        } else if (st->end == SRV_DROP) {
                struct evhttp_connection *evcon = evhttp_request_get_connection(st->req);

                if (evcon)
                        evhttp_connection_free(evcon); /* frees the request too */
                else
                        evhttp_send_reply_end(st->req); /* the client left already: just free it */
                st->req = NULL;
        }
        /* else: stalled until teardown */
}

/* Start a chunked response: code, then the NULL-terminated chunks every delay_ms (the first at once), then
 * end (SRV_STALL, SRV_END, SRV_DROP). */
static inline struct srv_stream *srv_stream(struct srv *s, struct evhttp_request *req, int code, unsigned delay_ms,
                                            int end, const char *const *chunks) {
        struct srv_stream *st = calloc(1, sizeof(*st));
        struct timeval tv = { 0, 0 };

        assert_non_null(st);
        assert_true(s->n_held < SRV_MAX_HELD);
        st->srv = s;
        st->req = req;
        st->delay_ms = delay_ms;
        st->end = end;
        for (const char *const *c = chunks; c && *c; c++)
                assert_int_equal(strv_extend(&st->chunks, *c), 0);
        st->n_chunks = strv_length(st->chunks);
        st->timer = evtimer_new(s->base, srv_stream_tick, st);
        assert_non_null(st->timer);
        s->held[s->n_held++] = st;
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        evhttp_send_reply_start(req, code, "X");
        st->started = true;
        evtimer_add(st->timer, &tv);
        return st;
}

/* Close the connection without an answer (from the loop, not inside evhttp's callback). */
static inline void srv_drop(struct srv *s, struct evhttp_request *req) {
        struct srv_stream *st = calloc(1, sizeof(*st));
        struct timeval tv = { 0, 0 };

        assert_non_null(st);
        assert_true(s->n_held < SRV_MAX_HELD);
        st->srv = s;
        st->req = req;
        st->end = SRV_DROP;
        st->started = true;
        st->timer = evtimer_new(s->base, srv_stream_tick, st);
        assert_non_null(st->timer);
        s->held[s->n_held++] = st;
        evtimer_add(st->timer, &tv);
}

/* Do not answer (until teardown). */
static inline void srv_hold(struct srv *s, struct evhttp_request *req) {
        struct srv_stream *st = calloc(1, sizeof(*st));

        assert_non_null(st);
        assert_true(s->n_held < SRV_MAX_HELD);
        st->srv = s;
        st->req = req;
        s->held[s->n_held++] = st;
}

static inline int srv_start(struct srv *s, struct event_base *base) {
        struct evhttp_bound_socket *bound;
        struct sockaddr_in sa;
        socklen_t len = sizeof(sa);

        s->base = base;
        s->http = evhttp_new(base);
        if (!s->http)
                return -1;
        evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH |
                                                    EVHTTP_REQ_DELETE | EVHTTP_REQ_HEAD);
        evhttp_set_gencb(s->http, srv_on_request, s);
        bound = evhttp_bind_socket_with_handle(s->http, "127.0.0.1", 0);
        if (!bound || getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *) &sa, &len) < 0)
                return -1;
        s->port = ntohs(sa.sin_port);
        snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
        return 0;
}

/* Finishes what is held, then frees the server (no loop iteration in between). */
static inline void srv_stop(struct srv *s) {
        for (size_t i = 0; i < s->n_held; i++) {
                struct srv_stream *st = s->held[i];

                if (st->timer)
                        event_free(st->timer);
                if (st->req) {
                        if (st->started)
                                evhttp_send_reply_end(st->req);
                        else
                                evhttp_send_reply(st->req, 503, "X", NULL);
                }
                strv_free(st->chunks);
                free(st);
        }
        s->n_held = 0;
        if (s->http)
                evhttp_free(s->http);
        s->http = NULL;
        free(s->method);
        free(s->uri);
        free(s->body);
        s->method = s->uri = s->body = NULL;
        s->headers = strv_free(s->headers);
}

static inline void srv_on_deadline(evutil_socket_t fd, short what, void *userdata) {
        *(bool *) userdata = true;
}

/* Run the loop until *counter >= target or timeout_ms passed; returns whether the target was reached. */
static inline bool run_until(struct event_base *base, const unsigned *counter, unsigned target, long timeout_ms) {
        bool expired = false;
        struct event *deadline = evtimer_new(base, srv_on_deadline, &expired);
        struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };

        assert_non_null(deadline);
        evtimer_add(deadline, &tv);
        while (!expired && (!counter || *counter < target))
                event_base_loop(base, EVLOOP_ONCE);
        event_free(deadline);
        return !counter || *counter >= target;
}

static inline void run_for(struct event_base *base, long ms) {
        run_until(base, NULL, 0, ms);
}

#define assert_reached(base, counter, target, timeout_ms)                                                           \
        do {                                                                                                        \
                if (!run_until((base), (counter), (target), (timeout_ms)))                                          \
                        fail_msg("%s reached %u, not %u, within %ld ms", #counter, *(counter), (unsigned) (target), \
                                 (long) (timeout_ms));                                                              \
        } while (0)
