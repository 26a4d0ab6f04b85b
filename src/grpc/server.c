/* SPDX-License-Identifier: Apache-2.0 */
/* A gRPC server over HTTP/2 on a unix socket: nghttp2's server session per connection, on the loop. */
#include "grpc/server.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/dynbuf.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "grpc/client.h"
#include "grpc/wire.h"

#define READ_CHUNK 65536
#define MAX_STREAMS 100

struct conn;

struct grpc_server_call {
        struct conn *c;
        struct grpc_server_call *prev, *next;
        int32_t stream_id;
        char *path;
        bool bad_content_type;
        struct dynbuf req; /* capped at GRPC_SERVER_MAX_REQUEST and its frame header */
        bool req_too_big;
        /* the reply */
        bool replied;
        uint8_t *resp;
        size_t resp_len, resp_off;
        int status;
        char *message;
        /* a server-streaming call: messages appended to resp as they come, the status once it ends */
        bool streaming, submitted, deferred, ended;
        /* a unary call answered later (grpc_server_reply_later): waiting once its handler returned unanswered */
        bool later, waiting;
        grpc_server_close_cb on_close;
        void *close_userdata;
};

struct conn {
        struct grpc_server *s;
        struct conn *prev, *next;
        int fd;
        int peer_uid;
        nghttp2_session *session;
        struct event *ev_read, *ev_write, *ev_idle;
        struct grpc_server_call *calls;
        size_t queued; /* reply bytes not yet taken by nghttp2 */
        bool reading;
        bool closing;
};

struct grpc_server {
        struct event_base *base;
        char *path;
        int fd;
        struct event *ev_accept;
        const struct grpc_server_method *methods;
        size_t n_methods;
        void *userdata;
        struct conn *conns;
        size_t n_conns;
};

/* ---------------------------------------------------------------- calls */

static void call_free(struct grpc_server_call *call) {
        if (!call)
                return;
        free(call->path);
        dynbuf_done(&call->req);
        free(call->resp);
        free(call->message);
        free(call);
}

static void call_unlink(struct grpc_server_call *call) {
        struct conn *c = call->c;
        DLIST_REMOVE(c->calls, call);
}

static ssize_t read_reply(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                          uint32_t *data_flags, nghttp2_data_source *source, void *user_data) {
        struct grpc_server_call *call = source->ptr;
        size_t n = MIN(length, call->resp_len - call->resp_off);

        if (n == 0 && call->streaming && !call->ended) {
                /* nothing to send until the owner sends more or ends the call (nghttp2_session_resume_data) */
                call->deferred = true;
                return NGHTTP2_ERR_DEFERRED;
        }
        memcpy(buf, call->resp + call->resp_off, n);
        call->resp_off += n;
        assert(call->c->queued >= n);
        call->c->queued -= n;
        if (call->resp_off == call->resp_len) {
                /* the status goes in trailers after the message(s) */
                char status[8];
                _cleanup_free_ char *msg = call->message ? grpc_percent_encode(call->message) : NULL;
                snprintf(status, sizeof(status), "%d", call->status);
                nghttp2_nv trailers[] = {
                        { (uint8_t *) "grpc-status", (uint8_t *) status, 11, strlen(status), NGHTTP2_NV_FLAG_NONE },
                        { (uint8_t *) "grpc-message", (uint8_t *) strempty(msg), 12, strlen(strempty(msg)),
                          NGHTTP2_NV_FLAG_NONE },
                };
                if (call->streaming) {
                        /* a stream holds its buffer from the start again once it is drained */
                        call->resp_len = call->resp_off = 0;
                        if (!call->ended)
                                return (ssize_t) n;
                }
                *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
                if (nghttp2_submit_trailer(session, stream_id, trailers, msg ? 2 : 1) != 0)
                        return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        return (ssize_t) n;
}

static void submit_reply(struct grpc_server_call *call) {
        struct conn *c = call->c;

        call->submitted = true;
        if (call->status == GRPC_OK || call->streaming) {
                nghttp2_nv hdrs[] = {
                        { (uint8_t *) ":status", (uint8_t *) "200", 7, 3, NGHTTP2_NV_FLAG_NONE },
                        { (uint8_t *) "content-type", (uint8_t *) "application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE },
                };
                nghttp2_data_provider dp = { .source.ptr = call, .read_callback = read_reply };
                if (!call->streaming)
                        c->queued += call->resp_len; /* a stream counts its messages as they are sent */
                if (nghttp2_submit_response(c->session, call->stream_id, hdrs, ELEMENTSOF(hdrs), &dp) != 0) {
                        c->queued -= call->streaming ? 0 : call->resp_len;
                        nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, call->stream_id,
                                                  NGHTTP2_INTERNAL_ERROR);
                }
        } else {
                /* trailers-only: the status in the one HEADERS frame that ends the stream */
                char status[8];
                _cleanup_free_ char *msg = grpc_percent_encode(strempty(call->message));
                snprintf(status, sizeof(status), "%d", call->status);
                nghttp2_nv hdrs[] = {
                        { (uint8_t *) ":status", (uint8_t *) "200", 7, 3, NGHTTP2_NV_FLAG_NONE },
                        { (uint8_t *) "content-type", (uint8_t *) "application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE },
                        { (uint8_t *) "grpc-status", (uint8_t *) status, 11, strlen(status), NGHTTP2_NV_FLAG_NONE },
                        { (uint8_t *) "grpc-message", (uint8_t *) strempty(msg), 12, strlen(strempty(msg)),
                          NGHTTP2_NV_FLAG_NONE },
                };
                if (nghttp2_submit_response(c->session, call->stream_id, hdrs, msg ? 4 : 3, NULL) != 0)
                        nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, call->stream_id,
                                                  NGHTTP2_INTERNAL_ERROR);
        }
}

static void conn_update(struct conn *c);

/* a call answered after its handler returned (grpc_server_reply_later): the answer goes out now, as it would have
 * from the handler */
static void reply_now(struct grpc_server_call *call) {
        call->on_close = NULL; /* the owner lets go of the call here */
        if (!call->waiting)
                return; /* still in its handler: dispatch submits the answer */
        call->waiting = false;
        submit_reply(call);
        conn_update(call->c);
}

void grpc_server_reply(struct grpc_server_call *call, const ProtobufCMessage *resp) {
        size_t len;

        assert(call && !call->replied);
        call->replied = true;
        len = protobuf_c_message_get_packed_size(resp);
        if (len > GRPC_MAX_MESSAGE_SIZE) {
                call->status = GRPC_RESOURCE_EXHAUSTED;
                (void) asprintf(&call->message, "grpc: trying to send message larger than max (%zu vs. %u)", len,
                                GRPC_MAX_MESSAGE_SIZE);
                reply_now(call);
                return;
        }
        call->resp = malloc(len + GRPC_FRAME_HEADER);
        if (!call->resp) {
                call->status = GRPC_RESOURCE_EXHAUSTED;
                call->message = strdup("out of memory");
                reply_now(call);
                return;
        }
        grpc_frame_header(call->resp, (uint32_t) len);
        protobuf_c_message_pack(resp, call->resp + GRPC_FRAME_HEADER);
        call->resp_len = len + GRPC_FRAME_HEADER;
        call->status = GRPC_OK;
        reply_now(call);
}

void grpc_server_reply_error(struct grpc_server_call *call, int grpc_status, const char *fmt, ...) {
        va_list ap;

        assert(call && !call->replied && grpc_status != GRPC_OK);
        call->replied = true;
        call->status = grpc_status;
        va_start(ap, fmt);
        if (vasprintf(&call->message, fmt, ap) < 0)
                call->message = NULL;
        va_end(ap);
        reply_now(call);
}

void grpc_server_reply_later(struct grpc_server_call *call, grpc_server_close_cb on_close, void *userdata) {
        assert(call && !call->replied && !call->streaming && !call->later);
        call->later = true;
        call->on_close = on_close;
        call->close_userdata = userdata;
}

void grpc_server_call_hold(struct grpc_server_call *call, grpc_server_close_cb on_close, void *userdata) {
        assert(call && !call->replied && !call->streaming && !call->later);
        call->streaming = true;
        call->replied = true; /* its answer is the stream */
        call->status = GRPC_OK;
        call->on_close = on_close;
        call->close_userdata = userdata;
}

/* more to send on a stream: let nghttp2 ask for it again, and the connection write */
static void stream_wake(struct grpc_server_call *call) {
        if (!call->submitted)
                return; /* still in its handler: the response goes out when it returns */
        if (call->deferred) {
                call->deferred = false;
                (void) nghttp2_session_resume_data(call->c->session, call->stream_id);
        }
        conn_update(call->c);
}

int grpc_server_stream_send(struct grpc_server_call *call, const ProtobufCMessage *msg) {
        size_t len, pending;
        uint8_t *n;

        assert(call && call->streaming && !call->ended);
        len = protobuf_c_message_get_packed_size(msg);
        if (len > GRPC_MAX_MESSAGE_SIZE)
                return -EMSGSIZE;
        pending = call->resp_len - call->resp_off;
        if (pending + len + GRPC_FRAME_HEADER > GRPC_SERVER_MAX_STREAM_QUEUED)
                return -ENOBUFS;
        if (call->resp_off > 0 && call->resp_off == call->resp_len)
                call->resp_len = call->resp_off = 0;
        n = realloc(call->resp, call->resp_len + len + GRPC_FRAME_HEADER);
        if (!n)
                return -ENOMEM;
        call->resp = n;
        grpc_frame_header(call->resp + call->resp_len, (uint32_t) len);
        protobuf_c_message_pack(msg, call->resp + call->resp_len + GRPC_FRAME_HEADER);
        call->resp_len += len + GRPC_FRAME_HEADER;
        call->c->queued += len + GRPC_FRAME_HEADER;
        stream_wake(call);
        return 0;
}

void grpc_server_stream_end(struct grpc_server_call *call, int grpc_status, const char *fmt, ...) {
        va_list ap;

        assert(call && call->streaming && !call->ended);
        call->ended = true;
        call->on_close = NULL; /* the owner lets go of the call here */
        call->status = grpc_status;
        if (fmt) {
                va_start(ap, fmt);
                if (vasprintf(&call->message, fmt, ap) < 0)
                        call->message = NULL;
                va_end(ap);
        }
        stream_wake(call);
}

void grpc_rate_limit_init(struct grpc_rate_limit *l, double qps, double burst) {
        *l = (struct grpc_rate_limit) { .qps = qps, .burst = burst, .tokens = burst, .last_usec = now_usec() };
}

bool grpc_rate_limit_allow(struct grpc_rate_limit *l) {
        uint64_t now = now_usec();

        l->tokens = MIN(l->burst, l->tokens + (double) (now - l->last_usec) / 1e6 * l->qps);
        l->last_usec = now;
        if (l->tokens < 1)
                return false;
        l->tokens -= 1;
        return true;
}

static const struct grpc_server_method *find_method(const struct grpc_server *s, const char *path) {
        for (size_t i = 0; i < s->n_methods; i++)
                if (streq(s->methods[i].path, path))
                        return &s->methods[i];
        return NULL;
}

/* the request is complete: decode, run the handler, submit its answer */
static void dispatch(struct grpc_server_call *call) {
        struct grpc_server *s = call->c->s;
        const struct grpc_server_method *m = call->path ? find_method(s, call->path) : NULL;
        ProtobufCMessage *req = NULL;
        uint32_t len;

        if (call->bad_content_type)
                grpc_server_reply_error(call, GRPC_INTERNAL, "invalid gRPC request content-type");
        else if (!m)
                grpc_server_reply_error(call, GRPC_UNIMPLEMENTED, "unknown method %s", strna(call->path));
        else if (call->req_too_big)
                grpc_server_reply_error(call, GRPC_RESOURCE_EXHAUSTED,
                                        "grpc: received message larger than max (%u bytes)", GRPC_SERVER_MAX_REQUEST);
        else if (call->req.len < GRPC_FRAME_HEADER || call->req.data[0] != 0 ||
                 (len = grpc_frame_length(call->req.data)) != call->req.len - GRPC_FRAME_HEADER)
                grpc_server_reply_error(call, GRPC_INTERNAL,
                                        call->req.len >= GRPC_FRAME_HEADER && call->req.data[0] != 0
                                                ? "grpc: compressed requests are not supported"
                                                : "grpc: malformed request framing");
        else if (!(req = protobuf_c_message_unpack(m->request, NULL, len, call->req.data + GRPC_FRAME_HEADER)))
                grpc_server_reply_error(call, GRPC_INTERNAL, "grpc: error unmarshalling request");
        else {
                m->handler(call, req, s->userdata);
                protobuf_c_message_free_unpacked(req, NULL);
                if (call->later && !call->replied) {
                        call->waiting = true; /* its owner answers later */
                        return;
                }
                if (!call->replied)
                        grpc_server_reply_error(call, GRPC_INTERNAL, "the handler of %s gave no answer", m->path);
        }
        submit_reply(call);
}

/* ---------------------------------------------------------------- nghttp2 callbacks */

static ssize_t on_send(nghttp2_session *session, const uint8_t *data, size_t length, int flags, void *user_data) {
        struct conn *c = user_data;
        ssize_t n = send(c->fd, data, length, MSG_NOSIGNAL);

        if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return NGHTTP2_ERR_WOULDBLOCK;
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        return n;
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
        struct conn *c = user_data;
        struct grpc_server_call *call;

        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
                return 0;
        call = calloc(1, sizeof(*call));
        if (!call)
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* resets the stream */
        call->c = c;
        call->stream_id = frame->hd.stream_id;
        call->req = DYNBUF_INIT(GRPC_SERVER_MAX_REQUEST + GRPC_FRAME_HEADER);
        DLIST_PREPEND(c->calls, call);
        nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, call);
        return 0;
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
        struct grpc_server_call *call;

        if (frame->hd.type != NGHTTP2_HEADERS)
                return 0;
        call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (!call)
                return 0;
        if (namelen == 5 && memcmp(name, ":path", 5) == 0 && !call->path) {
                call->path = strndup((const char *) value, MIN(valuelen, (size_t) 1024));
                if (!call->path)
                        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        } else if (namelen == 12 && memcmp(name, "content-type", 12) == 0)
                call->bad_content_type = !(valuelen >= 16 && memcmp(value, "application/grpc", 16) == 0);
        return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data, size_t len,
                         void *user_data) {
        struct grpc_server_call *call = nghttp2_session_get_stream_user_data(session, stream_id);
        int r;

        if (!call || call->req_too_big)
                return 0;
        r = dynbuf_add(&call->req, data, len);
        if (r == -E2BIG) {
                call->req_too_big = true;
                dynbuf_done(&call->req);
                return 0;
        }
        return r < 0 ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
        struct grpc_server_call *call;

        if ((frame->hd.type != NGHTTP2_DATA && frame->hd.type != NGHTTP2_HEADERS) ||
            !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
                return 0;
        call = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (call && !call->replied && !call->waiting)
                dispatch(call);
        return 0;
}

static void call_closed(struct grpc_server_call *call) {
        grpc_server_close_cb cb = call->on_close;

        call->on_close = NULL;
        if (cb)
                cb(call, call->close_userdata); /* the owner forgets the call; nothing may be sent on it now */
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data) {
        struct conn *c = user_data;
        struct grpc_server_call *call = nghttp2_session_get_stream_user_data(session, stream_id);

        if (!call)
                return 0;
        call_closed(call);
        /* a reply not sent in full no longer counts against the connection */
        if ((call->status == GRPC_OK || call->streaming) && call->resp_off < call->resp_len) {
                assert(c->queued >= call->resp_len - call->resp_off);
                c->queued -= call->resp_len - call->resp_off;
        }
        nghttp2_session_set_stream_user_data(session, stream_id, NULL);
        call_unlink(call);
        call_free(call);
        return 0;
}

/* ---------------------------------------------------------------- connections */

static void conn_free(struct conn *c) {
        struct grpc_server *s = c->s;

        if (c->session)
                nghttp2_session_del(c->session); /* runs on_stream_close for the open streams */
        while (c->calls) {
                struct grpc_server_call *call = c->calls;
                call_closed(call);
                call_unlink(call);
                call_free(call);
        }
        if (c->ev_read)
                event_free(c->ev_read);
        if (c->ev_write)
                event_free(c->ev_write);
        if (c->ev_idle)
                event_free(c->ev_idle);
        if (c->fd >= 0)
                close(c->fd);
        DLIST_REMOVE(s->conns, c);
        s->n_conns--;
        free(c);
}

static void conn_update(struct conn *c) {
        bool want_read;

        if (nghttp2_session_want_write(c->session))
                event_add(c->ev_write, NULL);
        else
                event_del(c->ev_write);
        /* back-pressure: a client that does not read its replies is not read from */
        want_read = c->queued < GRPC_SERVER_MAX_QUEUED;
        if (want_read != c->reading) {
                if (want_read)
                        event_add(c->ev_read, NULL);
                else
                        event_del(c->ev_read);
                c->reading = want_read;
        }
        evtimer_add_usec(c->ev_idle, GRPC_SERVER_IDLE_USEC);
}

/* send what is queued; false when the connection was closed */
static bool conn_flush(struct conn *c) {
        if (nghttp2_session_send(c->session) != 0 ||
            (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session))) {
                conn_free(c);
                return false;
        }
        conn_update(c);
        return true;
}

static void on_readable(evutil_socket_t fd, short what, void *userdata) {
        struct conn *c = userdata;
        uint8_t buf[READ_CHUNK];

        for (int i = 0; i < 16; i++) {
                ssize_t n = recv(c->fd, buf, sizeof(buf), 0), rv;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        break;
                if (n <= 0) {
                        conn_free(c);
                        return;
                }
                rv = nghttp2_session_mem_recv(c->session, buf, (size_t) n);
                if (rv < 0) {
                        log_v(3, "gRPC server %s: dropping a client: %s", c->s->path, nghttp2_strerror((int) rv));
                        conn_free(c);
                        return;
                }
                if ((size_t) n < sizeof(buf) || c->queued >= GRPC_SERVER_MAX_QUEUED)
                        break;
        }
        (void) conn_flush(c);
}

static void on_writable(evutil_socket_t fd, short what, void *userdata) {
        (void) conn_flush(userdata);
}

static void on_idle(evutil_socket_t fd, short what, void *userdata) {
        struct conn *c = userdata;
        for (struct grpc_server_call *call = c->calls; call; call = call->next)
                if (call->streaming && !call->ended) {
                        /* a watch is not idle while it waits for news */
                        evtimer_add_usec(c->ev_idle, GRPC_SERVER_IDLE_USEC);
                        return;
                }
        log_v(4, "gRPC server %s: closing an idle connection", c->s->path);
        conn_free(c);
}

static void on_accept(evutil_socket_t fd, short what, void *userdata) {
        struct grpc_server *s = userdata;
        nghttp2_session_callbacks *cbs = NULL;
        nghttp2_settings_entry settings[] = {
                { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_STREAMS },
                { NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 64 * 1024 },
        };
        struct ucred cred;
        socklen_t len = sizeof(cred);
        struct conn *c;
        int cfd;

        cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0)
                return;
        if (s->n_conns >= GRPC_SERVER_MAX_CONNS) {
                log_warning("gRPC server %s: too many connections (%d), refusing one", s->path, GRPC_SERVER_MAX_CONNS);
                close(cfd);
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                close(cfd);
                return;
        }
        c->s = s;
        c->fd = cfd;
        c->peer_uid = getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? (int) cred.uid : -1;
        DLIST_PREPEND(s->conns, c);
        s->n_conns++;
        if (nghttp2_session_callbacks_new(&cbs) != 0) {
                conn_free(c);
                return;
        }
        nghttp2_session_callbacks_set_send_callback(cbs, on_send);
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
        if (nghttp2_session_server_new(&c->session, cbs, c) != 0) {
                nghttp2_session_callbacks_del(cbs);
                conn_free(c);
                return;
        }
        nghttp2_session_callbacks_del(cbs);
        c->ev_read = event_new(s->base, cfd, EV_READ | EV_PERSIST, on_readable, c);
        c->ev_write = event_new(s->base, cfd, EV_WRITE, on_writable, c);
        c->ev_idle = evtimer_new(s->base, on_idle, c);
        if (!c->ev_read || !c->ev_write || !c->ev_idle ||
            nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, ELEMENTSOF(settings)) != 0) {
                conn_free(c);
                return;
        }
        (void) conn_flush(c);
}

/* ---------------------------------------------------------------- the server */

struct grpc_server *grpc_server_free(struct grpc_server *s) {
        if (!s)
                return NULL;
        while (s->conns)
                conn_free(s->conns);
        if (s->ev_accept)
                event_free(s->ev_accept);
        if (s->fd >= 0) {
                close(s->fd);
                (void) unlink(s->path);
        }
        free(s->path);
        free(s);
        return NULL;
}

int grpc_server_new(struct event_base *base, const char *socket_path, const struct grpc_server_method *methods,
                    size_t n_methods, void *userdata, struct grpc_server **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct grpc_server *s;
        struct stat st;
        int r;

        if (strlen(socket_path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, socket_path);
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->base = base;
        s->fd = -1;
        s->methods = methods;
        s->n_methods = n_methods;
        s->userdata = userdata;
        s->path = strdup(socket_path);
        if (!s->path) {
                free(s);
                return -ENOMEM;
        }
        /* a socket left by an earlier run (a kill -9) is stale: nobody else listens there */
        if (lstat(socket_path, &st) == 0 && S_ISSOCK(st.st_mode))
                (void) unlink(socket_path);
        s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s->fd < 0) {
                r = negative_errno();
                goto fail;
        }
        if (bind(s->fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(s->fd, 128) < 0) {
                r = negative_errno();
                close(s->fd);
                s->fd = -1;
                goto fail;
        }
        s->ev_accept = event_new(base, s->fd, EV_READ | EV_PERSIST, on_accept, s);
        if (!s->ev_accept || event_add(s->ev_accept, NULL) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        *ret = s;
        return 0;
fail:
        grpc_server_free(s);
        return r;
}
