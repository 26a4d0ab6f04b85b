/* SPDX-License-Identifier: Apache-2.0 */
/* The apiserver client's transport: see transport.h.
 *
 * Connections: an https transport opens one connection and waits for its ALPN answer; with "h2" every stream
 * goes to that connection (the "current" one) until it fails or a GOAWAY comes, then to a new one; without,
 * the transport turns HTTP/1.1 for good and each stream takes an idle keep-alive connection or opens one.
 * Streams wait in the transport's pending list until a connection takes them. Connections are torn down only
 * outside nghttp2's callbacks (conn->dead, reaped after the read handler). */
#include "client/transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/dns.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/list.h"
#include "basic/error.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "http/http_response.h"

#define H2_STREAM_WINDOW (4 << 20) /* x/net/http2 transportDefaultStreamFlow */
#define H2_CONN_WINDOW (1 << 30)   /* transportDefaultConnFlow */
/* client-go's http2 health check (HTTP2_READ_IDLE_TIMEOUT_SECONDS, HTTP2_PING_TIMEOUT_SECONDS): a PING after 30 s
 * without a frame, the connection given up 15 s later without one */
#define H2_READ_IDLE_USEC (30 * USEC_PER_SEC)
#define H2_PING_TIMEOUT_USEC (15 * USEC_PER_SEC)

enum proto { PROTO_UNKNOWN, PROTO_H1, PROTO_H2 };

struct kconn;

struct kube_stream {
        struct kube_transport *t;
        struct kconn *c; /* NULL while pending */
        struct kube_stream *prev, *next;
        const struct kube_stream_ops *ops;
        void *userdata;

        char *method, *path;
        char **headers; /* name, value, ..., NULL */
        const char *body;
        size_t body_len, body_off;

        int32_t id; /* h2, 0 until submitted */
        int status; /* of the HEADERS block being received (h2) */
        char retry_after[32];
        char encoding[16];
        bool submitted, paused, got_headers, got_end, closing;
        size_t unconsumed; /* h2 bytes delivered while paused, not yet given back to the window */
        int abort_rc;
};

struct kconn {
        struct kube_transport *t;
        struct kconn *prev, *next;
        enum proto proto;
        bool ready, draining, dead, reused, in_read, eof_pending;
        bool local_error; /* failed on our side (TLS files): its streams are not "refused" */

        int fd;
        struct event *fd_ev;
        struct evdns_getaddrinfo_request *dns_req;
        struct bufferevent *bev;
        struct event *connect_timer, *reap_ev, *start_ev, *ping_timer;
        uint64_t last_read_usec;
        bool ping_sent;

        struct kube_stream *streams; /* h2: all; h1: the one in flight (at most one) */
        unsigned n_streams;

        nghttp2_session *ng;

        struct http_resp *resp; /* h1 */
        bool h1_got_bytes;
};

struct kube_transport {
        struct event_base *base;
        struct evdns_base *dns;
        SSL_CTX *ssl_ctx;
        bool https, insecure;
        char *host, *authority, *server_name;
        char *ca_file, *ca_data, *cert_file, *cert_data, *key_file, *key_data;
        int port;
        uint64_t connect_timeout_usec;
        enum proto proto;

        struct kconn *conns;
        struct kconn *current; /* h2 or unknown: where new streams go */
        struct kube_stream *pending;
        struct event *dispatch_ev;
};

static void dispatch(struct kube_transport *t);
static int setup_tls(struct kube_transport *t, struct ck_error **ret_error);
static void conn_reap_soon(struct kconn *c);
static void h1_send(struct kconn *c);
static void h1_process(struct kconn *c);

/* ---- lists ---- */

static void stream_unlink(struct kube_stream *s) {
        struct kube_stream **head = s->c ? &s->c->streams : &s->t->pending;

        DLIST_REMOVE(*head, s);
        if (s->c)
                s->c->n_streams--;
        s->c = NULL;
}

static void stream_link(struct kube_stream *s, struct kconn *c) {
        struct kube_stream **head = c ? &c->streams : &s->t->pending;

        /* appended, so that streams keep their order */
        s->c = c;
        DLIST_APPEND(*head, s);
        if (c)
                c->n_streams++;
}

static void stream_free(struct kube_stream *s) {
        if (!s)
                return;
        for (char **h = s->headers; h && *h; h++)
                if (strcasecmp(*h, "authorization") == 0 && h[1])
                        explicit_bzero(h[1], strlen(h[1]));
        for (char **h = s->headers; h && *h; h++)
                free(*h);
        free(s->headers);
        free(s->method);
        free(s->path);
        free(s);
}

/* The stream ends: out of its list (and of nghttp2's reach), its on_close, then it is freed. */
static void stream_close(struct kube_stream *s, int rc, const char *error, bool refused) {
        const struct kube_stream_ops *ops = s->ops;
        void *ud = s->userdata;
        struct kconn *c = s->c;

        if (c && c->ng && s->id > 0)
                nghttp2_session_set_stream_user_data(c->ng, s->id, NULL);
        stream_unlink(s);
        stream_free(s);
        ops->on_close(rc, error, refused, ud);
        if (c && c->draining && c->n_streams == 0)
                conn_reap_soon(c);
}

/* ---- connections: teardown ---- */

static void conn_free(struct kconn *c) {
        struct kube_transport *t = c->t;

        if (c->dns_req) {
                evdns_getaddrinfo_cancel(c->dns_req);
                c->dns_req = NULL;
        }
        if (c->ng)
                nghttp2_session_del(c->ng);
        if (c->bev)
                bufferevent_free(c->bev);
        if (c->fd_ev)
                event_free(c->fd_ev);
        if (c->fd >= 0)
                close(c->fd);
        if (c->connect_timer)
                event_free(c->connect_timer);
        if (c->reap_ev)
                event_free(c->reap_ev);
        if (c->start_ev)
                event_free(c->start_ev);
        if (c->ping_timer)
                event_free(c->ping_timer);
        free(c->resp);
        DLIST_REMOVE(t->conns, c);
        if (t->current == c)
                t->current = NULL;
        free(c);
}

/* The connection failed: its streams end with rc (those never sent: refused), it is freed soon. */
static void conn_fail(struct kconn *c, int rc, const char *error) {
        struct kube_transport *t = c->t;

        if (c->dead)
                return;
        c->dead = true;
        if (t->current == c)
                t->current = NULL;
        if (c->bev)
                bufferevent_disable(c->bev, EV_READ | EV_WRITE);
        while (c->streams) {
                struct kube_stream *s = c->streams;
                bool refused = !c->local_error && (!c->ready || !s->submitted);
                stream_close(s, rc, error, refused);
        }
        conn_reap_soon(c);
}

static void on_reap(evutil_socket_t fd, short what, void *userdata) {
        struct kconn *c = userdata;
        struct kube_transport *t = c->t;

        if (!c->dead && (c->n_streams > 0 || !c->draining))
                return; /* busy, or an idle keep-alive connection */
        conn_free(c);
        dispatch(t);
}

static void conn_reap_soon(struct kconn *c) {
        if (c->reap_ev)
                evtimer_add_usec(c->reap_ev, 0);
}

static void conn_failf(struct kconn *c, int rc, const char *fmt, ...) _printf_(3, 4);
static void conn_failf(struct kconn *c, int rc, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        conn_fail(c, rc, msg ? msg : strerror(-rc));
}

/* ---- h2 ---- */

static ssize_t h2_send(nghttp2_session *ng, const uint8_t *data, size_t n, int flags, void *userdata) {
        struct kconn *c = userdata;

        if (!c->bev || bufferevent_write(c->bev, data, n) < 0)
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        return (ssize_t) n;
}

static int h2_on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                        const uint8_t *value, size_t valuelen, uint8_t flags, void *userdata) {
        struct kube_stream *s;

        if (frame->hd.type != NGHTTP2_HEADERS)
                return 0;
        s = nghttp2_session_get_stream_user_data(ng, frame->hd.stream_id);
        if (!s)
                return 0;
        if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
                int st = 0;
                for (size_t i = 0; i < valuelen && i < 3; i++)
                        st = st * 10 + (value[i] - '0');
                s->status = st; /* of this HEADERS block, for h2_on_frame */
        } else if (namelen == 11 && memcmp(name, "retry-after", 11) == 0 && valuelen < sizeof(s->retry_after)) {
                memcpy(s->retry_after, value, valuelen);
                s->retry_after[valuelen] = '\0';
        } else if (namelen == 16 && memcmp(name, "content-encoding", 16) == 0 && valuelen < sizeof(s->encoding)) {
                memcpy(s->encoding, value, valuelen);
                s->encoding[valuelen] = '\0';
        }
        return 0;
}

static int h2_on_frame(nghttp2_session *ng, const nghttp2_frame *frame, void *userdata) {
        struct kconn *c = userdata;
        struct kube_stream *s;

        switch (frame->hd.type) {
        case NGHTTP2_GOAWAY:
                /* no new streams here; the ones the server took finish, the others are refused by nghttp2 */
                log_v(4, "The apiserver %s sent GOAWAY (last stream %d, error %u)", c->t->authority,
                      frame->goaway.last_stream_id, frame->goaway.error_code);
                c->draining = true;
                if (c->t->current == c)
                        c->t->current = NULL;
                if (c->t->dispatch_ev)
                        evtimer_add_usec(c->t->dispatch_ev, 0);
                if (c->n_streams == 0)
                        conn_reap_soon(c);
                break;
        case NGHTTP2_HEADERS:
                s = nghttp2_session_get_stream_user_data(ng, frame->hd.stream_id);
                if (!s)
                        break;
                if (!s->got_headers && s->status >= 200) {
                        s->got_headers = true;
                        s->ops->on_headers(s->status, s->retry_after[0] ? s->retry_after : NULL,
                                           s->encoding[0] ? s->encoding : NULL, s->userdata);
                }
                if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
                        s->got_end = true;
                break;
        case NGHTTP2_DATA:
                s = nghttp2_session_get_stream_user_data(ng, frame->hd.stream_id);
                if (s && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
                        s->got_end = true;
                break;
        default:
                break;
        }
        return 0;
}

static int h2_on_data(nghttp2_session *ng, uint8_t flags, int32_t stream_id, const uint8_t *data, size_t n,
                      void *userdata) {
        struct kube_stream *s = nghttp2_session_get_stream_user_data(ng, stream_id);
        int k;

        if (!s || s->closing) {
                nghttp2_session_consume(ng, stream_id, n);
                return 0;
        }
        if (s->paused) {
                s->unconsumed += n;
        }
        k = s->ops->on_data((const char *) data, n, s->userdata);
        if (k < 0) {
                s->closing = true;
                s->abort_rc = k;
                nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
                nghttp2_session_consume(ng, stream_id, n);
                return 0;
        }
        if (k > 0 || s->paused) {
                if (!s->paused)
                        s->unconsumed += n;
                s->paused = true;
                return 0;
        }
        nghttp2_session_consume(ng, stream_id, n);
        return 0;
}

static int h2_on_stream_close(nghttp2_session *ng, int32_t stream_id, uint32_t error_code, void *userdata) {
        struct kube_stream *s = nghttp2_session_get_stream_user_data(ng, stream_id);
        char msg[128];

        if (!s)
                return 0;
        if (s->closing) {
                stream_close(s, s->abort_rc < 0 ? s->abort_rc : -ECANCELED, NULL, false);
                return 0;
        }
        if (error_code == NGHTTP2_NO_ERROR && s->got_end && s->got_headers) {
                stream_close(s, 0, NULL, false);
                return 0;
        }
        if (error_code == NGHTTP2_REFUSED_STREAM) {
                stream_close(s, -ECONNRESET, "the server refused the stream (GOAWAY)", true);
                return 0;
        }
        snprintf(msg, sizeof(msg), "stream error: stream ID %d; %s", stream_id, nghttp2_http2_strerror(error_code));
        stream_close(s, -ECONNRESET, msg, false);
        return 0;
}

static ssize_t h2_read_body(nghttp2_session *ng, int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
                            nghttp2_data_source *source, void *userdata) {
        struct kube_stream *s = source->ptr;
        size_t n = MIN(length, s->body_len - s->body_off);

        memcpy(buf, s->body + s->body_off, n);
        s->body_off += n;
        if (s->body_off == s->body_len)
                *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t) n;
}

static void h2_flush(struct kconn *c) {
        int k;

        if (c->dead || !c->ng)
                return;
        k = nghttp2_session_send(c->ng);
        if (k != 0) {
                conn_failf(c, -ECONNRESET, "http2: %s", nghttp2_strerror(k));
                return;
        }
        if (!nghttp2_session_want_read(c->ng) && !nghttp2_session_want_write(c->ng) && c->n_streams == 0) {
                c->draining = true;
                conn_reap_soon(c);
        }
}

static int h2_submit(struct kconn *c, struct kube_stream *s) {
        nghttp2_nv nv[24];
        size_t n = 0;
        nghttp2_data_provider prd = { .source.ptr = s, .read_callback = h2_read_body };
        char len[32];
        int32_t id;

#define NV(N, V)                                                                                 \
        do {                                                                                     \
                nv[n++] = (nghttp2_nv) { (uint8_t *) (N), (uint8_t *) (V), strlen(N), strlen(V), \
                                         NGHTTP2_NV_FLAG_NONE };                                 \
        } while (0)
        NV(":method", s->method);
        NV(":scheme", c->t->https ? "https" : "http");
        NV(":authority", c->t->authority);
        NV(":path", s->path);
        for (char **h = s->headers; h && h[0] && h[1] && n + 2 < ELEMENTSOF(nv); h += 2) {
                NV(h[0], h[1]);
                if (strcmp(h[0], "authorization") == 0)
                        nv[n - 1].flags = NGHTTP2_NV_FLAG_NO_INDEX; /* a secret: never in the HPACK tables */
        }
        if (s->body) {
                snprintf(len, sizeof(len), "%zu", s->body_len);
                NV("content-length", len);
        }
#undef NV
        id = nghttp2_submit_request(c->ng, NULL, nv, n, s->body ? &prd : NULL, s);
        if (id < 0)
                return -EIO;
        s->id = id;
        s->submitted = true;
        return 0;
}

static void on_ping_timer(evutil_socket_t fd, short what, void *userdata) {
        struct kconn *c = userdata;
        uint64_t now = now_usec(), idle = now > c->last_read_usec ? now - c->last_read_usec : 0;

        if (c->dead || !c->ng)
                return;
        if (c->ping_sent) {
                if (idle >= H2_READ_IDLE_USEC + H2_PING_TIMEOUT_USEC) {
                        conn_failf(c, -ETIMEDOUT, "http2: no answer to a PING within %llu s",
                                   (unsigned long long) (H2_PING_TIMEOUT_USEC / USEC_PER_SEC));
                        return;
                }
                evtimer_add_usec(c->ping_timer, H2_READ_IDLE_USEC + H2_PING_TIMEOUT_USEC - idle);
                return;
        }
        if (idle < H2_READ_IDLE_USEC) {
                evtimer_add_usec(c->ping_timer, H2_READ_IDLE_USEC - idle);
                return;
        }
        if (nghttp2_submit_ping(c->ng, NGHTTP2_FLAG_NONE, NULL) != 0) {
                conn_fail(c, -ENOMEM, "http2: cannot send a PING");
                return;
        }
        c->ping_sent = true;
        evtimer_add_usec(c->ping_timer, H2_PING_TIMEOUT_USEC);
        h2_flush(c);
}

static int h2_start(struct kconn *c) {
        static const nghttp2_settings_entry settings[] = {
                { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
                { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW },
                { NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 10u << 20 },
        };
        nghttp2_session_callbacks *cb;
        nghttp2_option *opt;
        int k;

        if (nghttp2_session_callbacks_new(&cb) != 0)
                return -ENOMEM;
        if (nghttp2_option_new(&opt) != 0) {
                nghttp2_session_callbacks_del(cb);
                return -ENOMEM;
        }
        nghttp2_session_callbacks_set_send_callback(cb, h2_send);
        nghttp2_session_callbacks_set_on_header_callback(cb, h2_on_header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, h2_on_frame);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, h2_on_data);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, h2_on_stream_close);
        nghttp2_option_set_no_auto_window_update(opt, 1);
        k = nghttp2_session_client_new2(&c->ng, cb, c, opt);
        nghttp2_session_callbacks_del(cb);
        nghttp2_option_del(opt);
        if (k != 0)
                return -ENOMEM;
        if (nghttp2_submit_settings(c->ng, NGHTTP2_FLAG_NONE, settings, ELEMENTSOF(settings)) != 0 ||
            nghttp2_session_set_local_window_size(c->ng, NGHTTP2_FLAG_NONE, 0, H2_CONN_WINDOW) != 0)
                return -ENOMEM;
        for (struct kube_stream *s = c->streams; s; s = s->next)
                if (!s->submitted && h2_submit(c, s) < 0)
                        return -EIO;
        c->ping_timer = evtimer_new(c->t->base, on_ping_timer, c);
        if (!c->ping_timer)
                return -ENOMEM;
        c->last_read_usec = now_usec();
        evtimer_add_usec(c->ping_timer, H2_READ_IDLE_USEC);
        return 0;
}

static void h2_read(struct kconn *c, struct evbuffer *in) {
        size_t n;

        c->in_read = true;
        if (evbuffer_get_length(in) > 0) {
                c->last_read_usec = now_usec();
                c->ping_sent = false;
        }
        while (!c->dead && (n = evbuffer_get_contiguous_space(in)) > 0) {
                const uint8_t *p = evbuffer_pullup(in, (ev_ssize_t) n);
                ssize_t k = nghttp2_session_mem_recv(c->ng, p, n);

                if (k < 0) {
                        c->in_read = false;
                        conn_failf(c, -ECONNRESET, "http2: %s", nghttp2_strerror((int) k));
                        return;
                }
                evbuffer_drain(in, (size_t) k);
        }
        c->in_read = false;
        h2_flush(c);
}

/* ---- h1 ---- */

static void h1_on_body(const char *data, size_t n, void *userdata) {
        struct kconn *c = userdata;
        struct kube_stream *s = c->streams;
        int k;

        if (!s || s->closing)
                return;
        k = s->ops->on_data(data, n, s->userdata);
        if (k < 0) {
                s->closing = true;
                s->abort_rc = k;
        } else if (k > 0)
                s->paused = true;
}

static void h1_send(struct kconn *c) {
        struct kube_stream *s = c->streams;
        struct evbuffer *out = bufferevent_get_output(c->bev);
        int k;

        http_resp_init(c->resp);
        c->h1_got_bytes = false;
        k = evbuffer_add_printf(out, "%s %s HTTP/1.1\r\nHost: %s\r\n", s->method, s->path, c->t->authority);
        for (char **h = s->headers; k >= 0 && h && h[0] && h[1]; h += 2)
                k = evbuffer_add_printf(out, "%s: %s\r\n", h[0], h[1]);
        if (k >= 0 && (s->body || strcmp(s->method, "POST") == 0 || strcmp(s->method, "PUT") == 0 ||
                       strcmp(s->method, "PATCH") == 0))
                k = evbuffer_add_printf(out, "Content-Length: %zu\r\n", s->body ? s->body_len : 0);
        if (k >= 0)
                k = evbuffer_add(out, "\r\n", 2);
        if (k >= 0 && s->body && s->body_len > 0)
                k = evbuffer_add(out, s->body, s->body_len);
        if (k < 0) {
                conn_fail(c, -ENOMEM, "cannot write the request");
                return;
        }
        s->submitted = true;
        bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* Feed what came to the parser; the response's end frees the connection for the next stream. */
static void h1_process(struct kconn *c) {
        struct evbuffer *in = bufferevent_get_input(c->bev);
        struct kube_stream *s;
        size_t n;

        while (!c->dead && (s = c->streams) && !s->paused && !s->closing &&
               (n = evbuffer_get_contiguous_space(in)) > 0) {
                const char *p = (const char *) evbuffer_pullup(in, (ev_ssize_t) n);
                size_t used = 0;
                int k;

                c->h1_got_bytes = true;
                k = http_resp_feed(c->resp, p, n, &used);
                evbuffer_drain(in, used);
                if (k < 0) {
                        conn_failf(c, -EPROTO, "malformed HTTP response: %s", c->resp->error);
                        return;
                }
                if (k == HTTP_RESP_HEADERS) {
                        c->resp->max_body = UINT64_MAX;
                        c->resp->on_body = h1_on_body;
                        c->resp->body_userdata = c;
                        s->got_headers = true;
                        s->ops->on_headers(c->resp->status, c->resp->retry_after[0] ? c->resp->retry_after : NULL,
                                           c->resp->content_encoding[0] ? c->resp->content_encoding : NULL,
                                           s->userdata);
                        if (c->dead || c->streams != s || s->closing)
                                continue;
                        k = http_resp_feed(c->resp, "", 0, &used); /* complete already (no body)? */
                        if (k != HTTP_RESP_DONE)
                                continue;
                }
                if (k == HTTP_RESP_DONE) {
                        bool reuse = !c->resp->conn_close && c->resp->minor >= 1 && evbuffer_get_length(in) == 0;
                        if (!s->got_headers) {
                                s->got_headers = true;
                                s->ops->on_headers(c->resp->status, NULL, NULL, s->userdata);
                        }
                        stream_close(s, 0, NULL, false);
                        if (!reuse) {
                                c->draining = true;
                                conn_reap_soon(c);
                        } else {
                                c->reused = true;
                                dispatch(c->t);
                        }
                        return;
                }
        }
        if ((s = c->streams) && s->closing) {
                /* aborted by on_data: the rest of the response is not read */
                c->dead = true;
                stream_close(s, s->abort_rc, NULL, false);
                conn_reap_soon(c);
        } else if (s && s->paused)
                bufferevent_disable(c->bev, EV_READ);
}

static void h1_eof(struct kconn *c, int err) {
        struct kube_stream *s = c->streams;

        if (!s) {
                c->dead = true; /* an idle connection the server closed */
                conn_reap_soon(c);
                return;
        }
        if (c->reused && !c->h1_got_bytes && err == 0) {
                /* a keep-alive connection closed as we reused it: the request goes to a new one */
                stream_unlink(s);
                s->submitted = false;
                stream_link(s, NULL);
                c->dead = true;
                conn_reap_soon(c);
                dispatch(c->t);
                return;
        }
        if (err == 0 && http_resp_eof(c->resp) == HTTP_RESP_DONE) {
                if (!s->got_headers) {
                        s->got_headers = true;
                        s->ops->on_headers(c->resp->status, NULL, NULL, s->userdata);
                }
                c->dead = true;
                stream_close(s, 0, NULL, false);
                conn_reap_soon(c);
                return;
        }
        conn_failf(c, -ECONNRESET, "%s", err ? strerror(err) : "unexpected EOF");
}

/* ---- connecting ---- */

static void on_read(struct bufferevent *bev, void *userdata) {
        struct kconn *c = userdata;

        if (c->dead)
                return;
        if (c->proto == PROTO_H2)
                h2_read(c, bufferevent_get_input(bev));
        else
                h1_process(c);
}

static void connected(struct kconn *c) {
        struct kube_transport *t = c->t;

        event_del(c->connect_timer);
        c->ready = true;
        if (c->proto == PROTO_UNKNOWN) {
                const unsigned char *alpn = NULL;
                unsigned alpn_len = 0;
                SSL *ssl = bufferevent_openssl_get_ssl(c->bev);

                if (ssl)
                        SSL_get0_alpn_selected(ssl, &alpn, &alpn_len);
                c->proto = alpn_len == 2 && memcmp(alpn, "h2", 2) == 0 ? PROTO_H2 : PROTO_H1;
                if (t->proto == PROTO_UNKNOWN) {
                        t->proto = c->proto;
                        log_v(2, "Talking to the apiserver %s over %s", t->authority,
                              c->proto == PROTO_H2 ? "HTTP/2" : "HTTP/1.1");
                }
        }
        if (c->proto == PROTO_H2) {
                int k = h2_start(c);
                if (k < 0) {
                        conn_failf(c, k, "http2: cannot start the session");
                        return;
                }
                h2_flush(c);
                return;
        }
        /* HTTP/1.1: one stream here, the others back to the transport */
        if (t->current == c)
                t->current = NULL;
        while (c->streams && c->streams->next) {
                struct kube_stream *s = c->streams->next;
                stream_unlink(s);
                stream_link(s, NULL);
        }
        if (c->streams)
                h1_send(c);
        dispatch(t);
}

static void on_event(struct bufferevent *bev, short what, void *userdata) {
        struct kconn *c = userdata;

        if (c->dead)
                return;
        if (what & BEV_EVENT_CONNECTED) {
                connected(c);
                return;
        }
        if (what & BEV_EVENT_EOF) {
                if (c->proto == PROTO_H1) {
                        h1_process(c);
                        if (c->streams && c->streams->paused)
                                c->eof_pending = true; /* the rest once the stream reads again */
                        else if (!c->dead)
                                h1_eof(c, 0);
                        return;
                }
                if (c->proto == PROTO_H2)
                        h2_read(c, bufferevent_get_input(bev));
                if (!c->dead)
                        conn_fail(c, -ECONNRESET, "the connection was closed");
                return;
        }
        if (what & BEV_EVENT_ERROR) {
                unsigned long e = bufferevent_get_openssl_error(bev);
                int err = EVUTIL_SOCKET_ERROR();

                if (e != 0) {
                        char buf[256];
                        ERR_error_string_n(e, buf, sizeof(buf));
                        conn_failf(c, -EPROTO, "TLS: %s", buf);
                } else if (c->proto == PROTO_H1 && c->ready)
                        h1_eof(c, err > 0 ? err : ECONNRESET);
                else
                        conn_failf(c, c->ready ? -ECONNRESET : -ECONNREFUSED, "%s",
                                   strerror(err > 0 ? err : ECONNRESET));
        }
}

static int setup_bev(struct kconn *c) {
        bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
        return bufferevent_enable(c->bev, EV_READ | EV_WRITE) < 0 ? -ENOMEM : 0;
}

static void on_tcp_connected(evutil_socket_t fd, short what, void *userdata) {
        struct kconn *c = userdata;
        struct kube_transport *t = c->t;
        socklen_t sl = sizeof(int);
        struct in6_addr a6;
        struct in_addr a4;
        int err = 0;
        SSL *ssl;

        event_free(c->fd_ev);
        c->fd_ev = NULL;
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
                err = errno;
        if (err != 0) {
                conn_failf(c, -ECONNREFUSED, "dial tcp %s: connect: %s", t->authority, strerror(err));
                return;
        }
        ssl = SSL_new(t->ssl_ctx);
        if (!ssl) {
                conn_fail(c, -ENOMEM, "cannot set up TLS");
                return;
        }
        if (inet_pton(AF_INET, t->server_name, &a4) == 1 || inet_pton(AF_INET6, t->server_name, &a6) == 1) {
                if (!t->insecure)
                        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), t->server_name);
        } else {
                SSL_set_tlsext_host_name(ssl, t->server_name);
                if (!t->insecure)
                        SSL_set1_host(ssl, t->server_name);
        }
        c->bev = bufferevent_openssl_socket_new(t->base, c->fd, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
        if (!c->bev) {
                SSL_free(ssl);
                conn_fail(c, -ENOMEM, "cannot set up TLS");
                return;
        }
        c->fd = -1;
        bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
        if (setup_bev(c) < 0)
                conn_fail(c, -ENOMEM, "cannot set up TLS");
}

static void connect_addr(struct kconn *c, struct sockaddr *sa, socklen_t len) {
        struct kube_transport *t = c->t;
        int one = 1, idle = 30, fd;

        fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                conn_failf(c, -errno, "dial tcp %s: socket: %s", t->authority, strerror(errno));
                return;
        }
        (void) setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        (void) setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
        (void) setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle, sizeof(idle));
        (void) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (t->https) {
                c->fd = fd;
                if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
                        conn_failf(c, -ECONNREFUSED, "dial tcp %s: connect: %s", t->authority, strerror(errno));
                        return;
                }
                c->fd_ev = event_new(t->base, fd, EV_WRITE, on_tcp_connected, c);
                if (!c->fd_ev || event_add(c->fd_ev, NULL) < 0)
                        conn_fail(c, -ENOMEM, "out of memory");
                return;
        }
        c->bev = bufferevent_socket_new(t->base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!c->bev) {
                close(fd);
                conn_fail(c, -ENOMEM, "out of memory");
                return;
        }
        if (setup_bev(c) < 0) {
                conn_fail(c, -ENOMEM, "out of memory");
                return;
        }
        if (bufferevent_socket_connect(c->bev, sa, (int) len) < 0)
                conn_failf(c, -ECONNREFUSED, "dial tcp %s: connect: %s", t->authority,
                           strerror(errno > 0 ? errno : ECONNREFUSED));
}

static void on_resolved(int result, struct evutil_addrinfo *res, void *userdata) {
        struct kconn *c = userdata;
        struct kube_transport *t = c->t;

        if (result == EVUTIL_EAI_CANCEL)
                return;
        c->dns_req = NULL;
        if (result != 0 || !res) {
                conn_failf(c, -EHOSTUNREACH, "dial tcp: lookup %s: %s", t->host,
                           result != 0 ? evutil_gai_strerror(result) : "no such host");
                if (res)
                        evutil_freeaddrinfo(res);
                return;
        }
        if (res->ai_family == AF_INET)
                ((struct sockaddr_in *) res->ai_addr)->sin_port = htons((uint16_t) t->port);
        else if (res->ai_family == AF_INET6)
                ((struct sockaddr_in6 *) res->ai_addr)->sin6_port = htons((uint16_t) t->port);
        connect_addr(c, res->ai_addr, (socklen_t) res->ai_addrlen);
        evutil_freeaddrinfo(res);
}

static void on_connect_timeout(evutil_socket_t fd, short what, void *userdata) {
        struct kconn *c = userdata;

        conn_failf(c, -ETIMEDOUT, "dial tcp %s: i/o timeout", c->t->authority);
}

static void on_conn_start(evutil_socket_t fd, short what, void *userdata);

static struct kconn *conn_new(struct kube_transport *t) {
        struct kconn *c = calloc(1, sizeof(*c));

        if (!c)
                return NULL;
        c->t = t;
        c->fd = -1;
        c->proto = t->https ? t->proto : PROTO_H1;
        c->connect_timer = evtimer_new(t->base, on_connect_timeout, c);
        c->reap_ev = evtimer_new(t->base, on_reap, c);
        c->start_ev = evtimer_new(t->base, on_conn_start, c);
        c->resp = malloc(sizeof(*c->resp));
        if (!c->connect_timer || !c->reap_ev || !c->start_ev || !c->resp) {
                conn_free(c); /* not linked yet: frees what was made */
                return NULL;
        }
        http_resp_init(c->resp);
        DLIST_PREPEND(t->conns, c);
        /* start from the loop (the resolver may answer at once) */
        evtimer_add_usec(c->start_ev, 0);
        if (t->connect_timeout_usec > 0)
                evtimer_add_usec(c->connect_timer, t->connect_timeout_usec);
        return c;
}

static void on_conn_start(evutil_socket_t fd, short what, void *userdata) {
        struct kconn *c = userdata;
        struct kube_transport *t = c->t;
        struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
        struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t) t->port) };
        struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t) t->port) };

        if (c->dead)
                return;
        if (t->https && !t->ssl_ctx) {
                /* the TLS files are read when the first connection needs them */
                _cleanup_ck_error_ struct ck_error *why = NULL;
                int k = setup_tls(t, &why);
                if (k < 0) {
                        c->local_error = true;
                        conn_fail(c, k == -ENOMEM ? -ENOMEM : -ENOKEY,
                                  why ? ck_error_message(why) : "TLS: cannot set up");
                        return;
                }
        }
        if (inet_pton(AF_INET, t->host, &in4.sin_addr) == 1) {
                connect_addr(c, (struct sockaddr *) &in4, sizeof(in4));
                return;
        }
        if (inet_pton(AF_INET6, t->host, &in6.sin6_addr) == 1) {
                connect_addr(c, (struct sockaddr *) &in6, sizeof(in6));
                return;
        }
        if (!t->dns) {
                t->dns = evdns_base_new(t->base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
                if (!t->dns) {
                        conn_failf(c, -EHOSTUNREACH, "dial tcp: lookup %s: no resolver", t->host);
                        return;
                }
                (void) evdns_base_load_hosts(t->dns, NULL);
        }
        c->dns_req = evdns_getaddrinfo(t->dns, t->host, NULL, &hints, on_resolved, c);
}

/* ---- dispatch ---- */

static void dispatch(struct kube_transport *t) {
        while (t->pending) {
                struct kube_stream *s = t->pending;
                struct kconn *c = NULL;

                if (t->proto == PROTO_H1 || !t->https) {
                        for (struct kconn *i = t->conns; i; i = i->next)
                                if (i->proto == PROTO_H1 && i->ready && !i->dead && !i->draining && i->n_streams == 0) {
                                        c = i;
                                        break;
                                }
                        if (!c) {
                                c = conn_new(t);
                                if (!c)
                                        return;
                                c->proto = PROTO_H1;
                        }
                        stream_unlink(s);
                        stream_link(s, c);
                        if (c->ready)
                                h1_send(c);
                        continue;
                }
                /* h2 (or not known yet): the current connection; one at the server's limit of concurrent streams
                 * takes no more (it is closed once its streams are over) and a new one opens, as Go's transport
                 * does without StrictMaxConcurrentStreams */
                c = t->current;
                if (c && c->ready && c->ng && !c->dead &&
                    c->n_streams >=
                            nghttp2_session_get_remote_settings(c->ng, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS)) {
                        log_v(4, "The connection to the apiserver %s has %u streams, its limit: opening another",
                              t->authority, c->n_streams);
                        c->draining = true;
                        t->current = NULL;
                        c = NULL;
                }
                if (!c || c->dead || c->draining) {
                        c = conn_new(t);
                        if (!c)
                                return;
                        t->current = c;
                }
                stream_unlink(s);
                stream_link(s, c);
                if (c->ready && c->proto == PROTO_H2 && c->ng) {
                        if (h2_submit(c, s) < 0) {
                                stream_close(s, -EIO, "http2: cannot submit the request", true);
                                continue;
                        }
                        if (!c->in_read)
                                h2_flush(c);
                }
        }
}

static void on_dispatch(evutil_socket_t fd, short what, void *userdata) {
        dispatch(userdata);
}

/* ---- streams ---- */

int kube_stream_start(struct kube_transport *t, const struct kube_stream_request *req,
                      const struct kube_stream_ops *ops, void *userdata, struct kube_stream **ret) {
        struct kube_stream *s;
        size_t n = 0;

        if (!t || !req || !req->method || !req->path || !ops)
                return -EINVAL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->t = t;
        s->ops = ops;
        s->userdata = userdata;
        s->body = req->body;
        s->body_len = req->body ? req->body_len : 0;
        s->method = strdup(req->method);
        s->path = strdup(req->path);
        while (req->headers && req->headers[n])
                n++;
        s->headers = calloc(n + 1, sizeof(char *));
        if (!s->method || !s->path || !s->headers) {
                stream_free(s);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (!(s->headers[i] = strdup(req->headers[i]))) {
                        stream_free(s);
                        return -ENOMEM;
                }
        stream_link(s, NULL);
        evtimer_add_usec(t->dispatch_ev, 0);
        *ret = s;
        return 0;
}

void kube_stream_cancel(struct kube_stream *s) {
        struct kconn *c;

        if (!s)
                return;
        c = s->c;
        if (c && c->ng && s->id > 0) {
                nghttp2_session_set_stream_user_data(c->ng, s->id, NULL);
                nghttp2_submit_rst_stream(c->ng, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
                if (s->unconsumed > 0)
                        nghttp2_session_consume_connection(c->ng, s->unconsumed);
                stream_unlink(s);
                stream_free(s);
                if (!c->in_read)
                        h2_flush(c);
                if (c->draining && c->n_streams == 0)
                        conn_reap_soon(c);
                return;
        }
        stream_unlink(s);
        stream_free(s);
        if (c && c->proto == PROTO_H1) {
                /* the rest of the response would come on this connection: it is closed */
                c->dead = true;
                if (c->bev)
                        bufferevent_disable(c->bev, EV_READ | EV_WRITE);
                conn_reap_soon(c);
        } else if (c && c->n_streams == 0 && c->draining)
                conn_reap_soon(c);
}

void kube_stream_resume(struct kube_stream *s) {
        struct kconn *c;

        if (!s || !s->paused)
                return;
        c = s->c;
        s->paused = false;
        if (!c)
                return;
        if (c->proto == PROTO_H2 && c->ng) {
                if (s->unconsumed > 0) {
                        nghttp2_session_consume(c->ng, s->id, s->unconsumed);
                        s->unconsumed = 0;
                }
                if (!c->in_read)
                        h2_flush(c);
                return;
        }
        if (c->bev) {
                if (!c->eof_pending)
                        bufferevent_enable(c->bev, EV_READ);
                h1_process(c);
                if (c->eof_pending && !c->dead && !(c->streams && c->streams->paused))
                        h1_eof(c, 0);
        }
}

/* ---- the transport ---- */

static int setup_tls(struct kube_transport *t, struct ck_error **ret_error) {
        const struct kube_tls_files f = {
                .ca_file = t->ca_file,
                .ca_data = t->ca_data,
                .cert_file = t->cert_file,
                .cert_data = t->cert_data,
                .key_file = t->key_file,
                .key_data = t->key_data,
                .insecure = t->insecure,
        };
        return kube_tls_client_ctx(&f, &t->ssl_ctx, ret_error);
}

int kube_transport_new(struct event_base *base, const struct kube_transport_config *cfg, struct kube_transport **ret) {
        struct kube_transport *t;
        int k;

        if (!base || !cfg || !cfg->host || !cfg->authority || cfg->port <= 0)
                return -EINVAL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->base = base;
        t->https = cfg->https;
        t->insecure = cfg->insecure;
        t->port = cfg->port;
        t->connect_timeout_usec = cfg->connect_timeout_usec;
        t->proto = cfg->https ? PROTO_UNKNOWN : PROTO_H1;
        t->host = strdup(cfg->host);
        t->authority = strdup(cfg->authority);
        t->server_name = strdup(cfg->server_name ? cfg->server_name : cfg->host);
        t->dispatch_ev = evtimer_new(base, on_dispatch, t);
        if (!t->host || !t->authority || !t->server_name || !t->dispatch_ev) {
                kube_transport_free(t);
                return -ENOMEM;
        }
#define DUP(f)                                            \
        do {                                              \
                if (cfg->f && !(t->f = strdup(cfg->f))) { \
                        kube_transport_free(t);           \
                        return -ENOMEM;                   \
                }                                         \
        } while (0)
        DUP(ca_file);
        DUP(ca_data);
        DUP(cert_file);
        DUP(cert_data);
        DUP(key_file);
        DUP(key_data);
#undef DUP
        (void) k;
        *ret = t;
        return 0;
}

struct kube_transport *kube_transport_free(struct kube_transport *t) {
        if (!t)
                return NULL;
        while (t->pending) {
                struct kube_stream *s = t->pending;
                stream_unlink(s);
                stream_free(s);
        }
        while (t->conns) {
                struct kconn *c = t->conns;
                while (c->streams) {
                        struct kube_stream *s = c->streams;
                        if (c->ng && s->id > 0)
                                nghttp2_session_set_stream_user_data(c->ng, s->id, NULL);
                        stream_unlink(s);
                        stream_free(s);
                }
                conn_free(c);
        }
        if (t->dispatch_ev)
                event_free(t->dispatch_ev);
        if (t->dns)
                evdns_base_free(t->dns, 0);
        if (t->ssl_ctx)
                SSL_CTX_free(t->ssl_ctx);
        free(t->host);
        free(t->authority);
        free(t->server_name);
        free(t->ca_file);
        free(t->ca_data);
        free(t->cert_file);
        free(t->cert_data);
        free(t->key_file);
        if (t->key_data) {
                explicit_bzero(t->key_data, strlen(t->key_data));
                free(t->key_data);
        }
        free(t);
        return NULL;
}

bool kube_transport_idle(const struct kube_transport *t) {
        if (t->pending)
                return false;
        for (struct kconn *c = t->conns; c; c = c->next)
                if (c->n_streams > 0)
                        return false;
        return true;
}
