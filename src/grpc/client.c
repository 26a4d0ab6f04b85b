/* SPDX-License-Identifier: Apache-2.0 */
/* A gRPC client: unary calls over HTTP/2 (nghttp2) to one endpoint, driven by the libevent loop. Not tied to
 * any service: the CRI (cri/), the grpc probes (prober/grpc.c) and later device plugins and CSI call through it.
 *
 * A call is packed at once (the request is borrowed), queued on the connection and sent when the connection is
 * up; the connection is (re)established lazily by the next call. Completions are collected while nghttp2
 * parses input and delivered after it returns, so user callbacks never run inside nghttp2 nor inside
 * grpc_call(). */

#include <arpa/inet.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <nghttp2/nghttp2.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "basic/dynbuf.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "grpc/client.h"
#include "grpc/wire.h"

#define READ_CHUNK 65536
#define WINDOW_SIZE (16 * 1024 * 1024)

struct grpc_client;

struct grpc_call {
        struct grpc_call *prev, *next;
        struct grpc_client *conn;
        char *method;
        uint8_t *req; /* framed request */
        size_t req_len, req_off;
        /* what the stream has received: one reply, or a stream's incomplete message and the chunk that completes
         * it (capped at one or two maximal messages) */
        struct dynbuf resp;
        bool resp_too_big;
        int http_status;
        int grpc_status; /* -1 until seen */
        char *grpc_message;
        int32_t stream_id; /* 0 until submitted */
        const ProtobufCMessageDescriptor *resp_desc;
        grpc_callback_t cb;
        void *userdata;
        struct event *timer;
        uint64_t start_usec;
        uint64_t timeout_usec;
        bool done; /* outcome decided, waiting for delivery */
        int final_status;
        char *final_message;
        /* server streaming (grpc_call_stream): each message is decoded as it completes and delivered apart */
        grpc_stream_cb msg_cb;
        struct stream_msg *msgs_head, *msgs_tail;
        bool ready; /* in the connection's ready list */
        struct grpc_call *ready_next;
        bool cancelled; /* grpc_call_cancel(): no more callbacks */
};

struct stream_msg {
        struct stream_msg *next;
        ProtobufCMessage *msg;
};

struct grpc_client {
        struct event_base *base;
        uint64_t default_timeout_usec;
        bool freeing;
        char *user_agent;
        char *endpoint; /* as given, for messages */
        char *path;     /* unix socket path, or "host:port" for tcp:// (also the :authority) */
        bool tcp;
        struct sockaddr_storage addr; /* tcp */
        socklen_t addr_len;
        int fd;
        bool connecting; /* tcp connect in progress */
        bool connected;
        nghttp2_session *session;
        struct event *ev_read, *ev_write, *ev_kick;
        struct grpc_call *calls;                   /* all calls of this connection, submitted or not */
        struct grpc_call *done_head, *done_tail;   /* delivered by deliver_done() */
        struct grpc_call *ready_head, *ready_tail; /* streams with decoded messages to deliver */
};

int grpc_status_to_errno(int grpc_status) {
        switch (grpc_status) {
        case GRPC_OK:
                return 0;
        case GRPC_NOT_FOUND:
                return -ENOENT;
        case GRPC_DEADLINE_EXCEEDED:
                return -ETIMEDOUT;
        case GRPC_UNAVAILABLE:
                return -ECONNREFUSED;
        case GRPC_ALREADY_EXISTS:
                return -EEXIST;
        case GRPC_INVALID_ARGUMENT:
                return -EINVAL;
        case GRPC_UNIMPLEMENTED:
                return -EOPNOTSUPP;
        case GRPC_PERMISSION_DENIED:
                return -EACCES;
        case GRPC_RESOURCE_EXHAUSTED:
                return -ENOSPC;
        case GRPC_CANCELLED:
                return -ECANCELED;
        default:
                return -EIO;
        }
}

/* ---------------------------------------------------------------- calls */

static void pending_free(struct grpc_call *p) {
        if (!p)
                return;
        for (struct stream_msg *m; p->msgs_head;) {
                FLIST_POP_T(p->msgs_head, p->msgs_tail, m);
                protobuf_c_message_free_unpacked(m->msg, NULL);
                free(m);
        }
        if (p->timer)
                event_free(p->timer);
        free(p->method);
        free(p->req);
        dynbuf_done(&p->resp);
        free(p->grpc_message);
        free(p->final_message);
        free(p);
}

static void conn_unlink(struct grpc_client *conn, struct grpc_call *p) {
        DLIST_REMOVE(conn->calls, p);
}

/* Run one call's callback and free it. The call must already be unlinked from its connection. */
static void deliver(struct grpc_call *p) {
        struct grpc_reply reply = { .grpc_status = p->final_status, .message = strempty(p->final_message) };
        _cleanup_ck_error_ struct ck_error *why = NULL;
        ProtobufCMessage *msg = NULL;

        if (p->cancelled) {
                pending_free(p);
                return;
        }
        if (p->final_status == GRPC_OK && !p->msg_cb &&
            grpc_decode_reply(p->resp.data, p->resp.len, p->resp_desc, &msg, &why) < 0) {
                reply.grpc_status = GRPC_INTERNAL;
                reply.message = ck_error_message(why);
        }
        reply.r = grpc_status_to_errno(reply.grpc_status);
        reply.msg = msg;
        reply.duration_usec = now_usec() - p->start_usec;
        if (reply.r < 0)
                log_v(5, "gRPC %s on %s failed: %s (grpc status %d)", p->method, p->conn->endpoint, reply.message,
                      reply.grpc_status);
        p->cb(&reply, p->userdata);
        if (msg)
                protobuf_c_message_free_unpacked(msg, NULL);
        pending_free(p);
}

/* Decide a call's outcome and queue it for delivery. */
static void call_finish(struct grpc_call *p, int status, const char *fmt, ...) _printf_(3, 4);
static void call_finish(struct grpc_call *p, int status, const char *fmt, ...) {
        struct grpc_client *conn = p->conn;

        if (p->done)
                return;
        p->done = true;
        p->final_status = status;
        if (fmt) {
                va_list ap;
                va_start(ap, fmt);
                if (vasprintf(&p->final_message, fmt, ap) < 0)
                        p->final_message = NULL;
                va_end(ap);
        }
        if (p->timer)
                event_del(p->timer);
        if (p->stream_id > 0 && conn->session)
                nghttp2_session_set_stream_user_data(conn->session, p->stream_id, NULL);
        conn_unlink(conn, p);
        DLIST_APPEND_T(conn->done_head, conn->done_tail, p);
        event_active(conn->ev_kick, EV_TIMEOUT, 0);
}

/* a stream's decoded messages, in order; stops when the stream is cancelled from a callback */
static void deliver_messages(struct grpc_call *p) {
        while (p->msgs_head && !p->cancelled) {
                struct stream_msg *m;
                FLIST_POP_T(p->msgs_head, p->msgs_tail, m);
                p->msg_cb(m->msg, p->userdata);
                protobuf_c_message_free_unpacked(m->msg, NULL);
                free(m);
        }
}

/* Streams' messages first (a stream's end comes after its messages), then finished calls. A call is only freed
 * here, after it left the ready list. */
static void deliver_done(struct grpc_client *conn) {
        for (;;) {
                if (conn->ready_head) {
                        struct grpc_call *p;
                        FLIST_POP_T_F(ready_next, conn->ready_head, conn->ready_tail, p);
                        p->ready = false;
                        deliver_messages(p);
                        continue;
                }
                if (conn->done_head) {
                        struct grpc_call *p = conn->done_head;
                        DLIST_REMOVE_T(conn->done_head, conn->done_tail, p);
                        if (p->ready) {
                                /* its messages are still queued: they go first */
                                DLIST_PREPEND_T(conn->done_head, conn->done_tail, p);
                                continue;
                        }
                        deliver(p);
                        continue;
                }
                break;
        }
}

/* decode the complete frames at the start of a stream's buffer and queue them */
static int stream_take_frames(struct grpc_client *conn, struct grpc_call *p) {
        size_t off = 0;
        bool any = false;

        while (p->resp.len - off >= GRPC_FRAME_HEADER) {
                uint32_t len = grpc_frame_length(p->resp.data + off);
                struct stream_msg *m;
                if (p->resp.data[off] != 0 || len > GRPC_MAX_MESSAGE_SIZE)
                        return -EBADMSG;
                if (p->resp.len - off - GRPC_FRAME_HEADER < len)
                        break;
                m = calloc(1, sizeof(*m));
                if (!m)
                        return -ENOMEM;
                m->msg = protobuf_c_message_unpack(p->resp_desc, NULL, len, p->resp.data + off + GRPC_FRAME_HEADER);
                if (!m->msg) {
                        free(m);
                        return -EBADMSG;
                }
                FLIST_APPEND_T(p->msgs_head, p->msgs_tail, m);
                off += GRPC_FRAME_HEADER + len;
                any = true;
        }
        dynbuf_consume(&p->resp, off);
        if (any && !p->ready) {
                p->ready = true;
                FLIST_APPEND_T_F(ready_next, conn->ready_head, conn->ready_tail, p);
                event_active(conn->ev_kick, EV_TIMEOUT, 0);
        }
        return 0;
}

/* ---------------------------------------------------------------- connection */

static void conn_close(struct grpc_client *conn, int status, const char *why) {
        if (conn->session) {
                nghttp2_session_del(conn->session);
                conn->session = NULL;
        }
        if (conn->ev_read)
                event_del(conn->ev_read);
        if (conn->ev_write)
                event_del(conn->ev_write);
        if (conn->fd >= 0) {
                close(conn->fd);
                conn->fd = -1;
        }
        conn->connected = false;
        conn->connecting = false;
        while (conn->calls) {
                struct grpc_call *p = conn->calls;
                p->stream_id = 0;
                call_finish(p, status, "%s", why);
        }
}

static ssize_t on_send(nghttp2_session *session, const uint8_t *data, size_t length, int flags, void *user_data) {
        struct grpc_client *conn = user_data;
        ssize_t n = send(conn->fd, data, length, MSG_NOSIGNAL);
        if (n < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        return NGHTTP2_ERR_WOULDBLOCK;
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        }
        return n;
}

static struct grpc_call *stream_call(nghttp2_session *session, int32_t stream_id) {
        return nghttp2_session_get_stream_user_data(session, stream_id);
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
        struct grpc_call *p;

        if (frame->hd.type != NGHTTP2_HEADERS)
                return 0;
        p = stream_call(session, frame->hd.stream_id);
        if (!p)
                return 0;
        if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
                char buf[8] = {};
                memcpy(buf, value, MIN(valuelen, sizeof(buf) - 1));
                p->http_status = atoi(buf);
        } else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
                char buf[8] = {};
                int v;
                memcpy(buf, value, MIN(valuelen, sizeof(buf) - 1));
                p->grpc_status = safe_atoi(buf, &v) >= 0 && v >= 0 && v <= 16 ? v : GRPC_UNKNOWN;
        } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
                free(p->grpc_message);
                p->grpc_message = grpc_percent_decode((const char *) value, MIN(valuelen, (size_t) 4096));
        }
        return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data, size_t len,
                         void *user_data) {
        struct grpc_call *p = stream_call(session, stream_id);
        int r;

        if (!p || p->resp_too_big)
                return 0;
        r = dynbuf_add(&p->resp, data, len);
        if (r == -E2BIG) {
                p->resp_too_big = true;
                dynbuf_done(&p->resp);
                nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
                return 0;
        }
        if (r < 0)
                return NGHTTP2_ERR_CALLBACK_FAILURE;
        if (p->msg_cb && !p->done && stream_take_frames(user_data, p) < 0) {
                nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
                call_finish(p, GRPC_INTERNAL, "malformed or undecodable message in the response stream");
        }
        return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data) {
        struct grpc_call *p = stream_call(session, stream_id);

        if (!p)
                return 0;
        if (p->resp_too_big)
                call_finish(p, GRPC_RESOURCE_EXHAUSTED, "grpc: received message larger than max (%u bytes)",
                            GRPC_MAX_MESSAGE_SIZE);
        else if (p->grpc_status >= 0)
                call_finish(p, p->grpc_status, "%s", strempty(p->grpc_message));
        else if (p->http_status != 0 && p->http_status != 200)
                call_finish(p, GRPC_UNKNOWN, "unexpected HTTP status code %d from %s", p->http_status, p->method);
        else if (error_code != NGHTTP2_NO_ERROR)
                call_finish(p, GRPC_UNAVAILABLE, "stream reset by the server: %s", nghttp2_http2_strerror(error_code));
        else
                call_finish(p, GRPC_INTERNAL, "server closed the stream without sending trailers");
        return 0;
}

static ssize_t read_request(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length,
                            uint32_t *data_flags, nghttp2_data_source *source, void *user_data) {
        struct grpc_call *p = source->ptr;
        size_t n = MIN(length, p->req_len - p->req_off);

        memcpy(buf, p->req + p->req_off, n);
        p->req_off += n;
        if (p->req_off == p->req_len)
                *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        return (ssize_t) n;
}

static int conn_submit(struct grpc_client *conn, struct grpc_call *p) {
        char timeout[32];
        nghttp2_data_provider dp = { .source.ptr = p, .read_callback = read_request };
        uint64_t left = p->timeout_usec, elapsed = now_usec() - p->start_usec;
#define NV(n, v) { (uint8_t *) (n), (uint8_t *) (v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE }
        /* a stream without a deadline sends none (its grpc-timeout, the last header, is left out) */
        left = left > elapsed ? left - elapsed : 1;
        grpc_format_timeout(left, timeout, sizeof(timeout));
        nghttp2_nv hdrs[] = {
                NV(":method", "POST"),
                NV(":scheme", "http"),
                NV(":path", p->method),
                NV(":authority", conn->tcp ? conn->path : "localhost"),
                NV("content-type", "application/grpc"),
                NV("te", "trailers"),
                NV("user-agent", conn->user_agent ? conn->user_agent : "ckubelet/" CKUBELET_VERSION " grpc-c"),
                NV("grpc-timeout", timeout),
        };
#undef NV
        int32_t id = nghttp2_submit_request(conn->session, NULL, hdrs,
                                            ELEMENTSOF(hdrs) - (p->timeout_usec == UINT64_MAX ? 1 : 0), &dp, p);
        if (id < 0)
                return -EIO;
        p->stream_id = id;
        return 0;
}

static void conn_update_events(struct grpc_client *conn) {
        if (!conn->session)
                return;
        if (nghttp2_session_want_write(conn->session))
                event_add(conn->ev_write, NULL);
        else
                event_del(conn->ev_write);
}

/* Send what nghttp2 has queued; on a fatal error close the connection. */
static void conn_flush(struct grpc_client *conn) {
        int rv;

        if (!conn->session)
                return;
        rv = nghttp2_session_send(conn->session);
        if (rv != 0) {
                _cleanup_free_ char *why = NULL;
                if (asprintf(&why, "connection to %s failed: %s", conn->endpoint, nghttp2_strerror(rv)) < 0)
                        why = NULL;
                conn_close(conn, GRPC_UNAVAILABLE, why ? why : "connection failed");
                return;
        }
        if (!nghttp2_session_want_read(conn->session) && !nghttp2_session_want_write(conn->session)) {
                _cleanup_free_ char *why = NULL;
                if (asprintf(&why, "connection to %s closed by the server (GOAWAY)", conn->endpoint) < 0)
                        why = NULL;
                conn_close(conn, GRPC_UNAVAILABLE, why ? why : "connection closed");
                return;
        }
        conn_update_events(conn);
}

static void on_readable(evutil_socket_t fd, short what, void *userdata) {
        struct grpc_client *conn = userdata;
        uint8_t buf[READ_CHUNK];

        for (int i = 0; i < 16 && conn->session; i++) {
                ssize_t n = recv(conn->fd, buf, sizeof(buf), 0);
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        break;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        _cleanup_free_ char *why = NULL;
                        if (asprintf(&why, "connection to %s closed: %s", conn->endpoint,
                                     n == 0 ? "end of stream" : strerror(errno)) < 0)
                                why = NULL;
                        conn_close(conn, GRPC_UNAVAILABLE, why ? why : "connection closed");
                        break;
                }
                ssize_t rv = nghttp2_session_mem_recv(conn->session, buf, (size_t) n);
                if (rv < 0) {
                        _cleanup_free_ char *why = NULL;
                        if (asprintf(&why, "HTTP/2 protocol error on %s: %s", conn->endpoint,
                                     nghttp2_strerror((int) rv)) < 0)
                                why = NULL;
                        conn_close(conn, GRPC_UNAVAILABLE, why ? why : "protocol error");
                        break;
                }
                if ((size_t) n < sizeof(buf))
                        break;
        }
        conn_flush(conn);
        deliver_done(conn);
}

static void on_writable(evutil_socket_t fd, short what, void *userdata) {
        struct grpc_client *conn = userdata;
        conn_flush(conn);
        deliver_done(conn);
}

static int conn_start_session(struct grpc_client *conn, int fd) {
        nghttp2_session_callbacks *cbs = NULL;
        nghttp2_settings_entry settings[] = {
                { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 1000 },
                { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, WINDOW_SIZE },
                { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
        };
        int r;

        if (nghttp2_session_callbacks_new(&cbs) != 0)
                return -ENOMEM;
        nghttp2_session_callbacks_set_send_callback(cbs, on_send);
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
        r = nghttp2_session_client_new(&conn->session, cbs, conn);
        nghttp2_session_callbacks_del(cbs);
        if (r != 0)
                return -ENOMEM;
        if (nghttp2_submit_settings(conn->session, NGHTTP2_FLAG_NONE, settings, ELEMENTSOF(settings)) != 0 ||
            nghttp2_session_set_local_window_size(conn->session, NGHTTP2_FLAG_NONE, 0, WINDOW_SIZE) != 0) {
                nghttp2_session_del(conn->session);
                conn->session = NULL;
                return -EIO;
        }
        conn->fd = fd;
        event_assign(conn->ev_read, conn->base, conn->fd, EV_READ | EV_PERSIST, on_readable, conn);
        event_assign(conn->ev_write, conn->base, conn->fd, EV_WRITE, on_writable, conn);
        event_add(conn->ev_read, NULL);
        conn->connecting = false;
        conn->connected = true;
        log_v(3, "connected to %s", conn->endpoint);
        return 0;
}

static void on_kick(evutil_socket_t fd, short what, void *userdata);

static void connect_failed(struct grpc_client *conn, int r) {
        _cleanup_free_ char *why = NULL;
        if (asprintf(&why, "connection error: desc = \"transport: Error while dialing: dial %s %s: connect: %s\"",
                     conn->tcp ? "tcp" : "unix", conn->path, strerror(-r)) < 0)
                why = NULL;
        conn_close(conn, GRPC_UNAVAILABLE, why ? why : "cannot connect");
}

/* tcp: the non-blocking connect finished */
static void on_connected(evutil_socket_t fd, short what, void *userdata) {
        struct grpc_client *conn = userdata;
        int err = 0, r;
        socklen_t len = sizeof(err);

        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                err = errno;
        if (err == 0) {
                r = conn_start_session(conn, fd);
                if (r >= 0) {
                        on_kick(-1, 0, conn);
                        return;
                }
                err = -r;
        }
        close(fd);
        connect_failed(conn, -err);
        deliver_done(conn);
}

static int conn_connect(struct grpc_client *conn) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -1;
        int r;

        if (conn->tcp) {
                fd = socket(conn->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (fd < 0)
                        return negative_errno();
                if (connect(fd, (struct sockaddr *) &conn->addr, conn->addr_len) < 0) {
                        if (errno != EINPROGRESS)
                                return negative_errno();
                        /* wait for it; the calls' deadlines bound the wait */
                        event_assign(conn->ev_write, conn->base, fd, EV_WRITE, on_connected, conn);
                        event_add(conn->ev_write, NULL);
                        conn->fd = TAKE_FD(fd);
                        conn->connecting = true;
                        return 0;
                }
        } else {
                if (strlen(conn->path) >= sizeof(sa.sun_path))
                        return -ENAMETOOLONG;
                strcpy(sa.sun_path, conn->path);
                fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (fd < 0)
                        return negative_errno();
                /* a unix socket connect completes at once or fails (EAGAIN: backlog full) */
                if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                        return negative_errno();
        }
        r = conn_start_session(conn, fd);
        if (r < 0)
                return r;
        TAKE_FD(fd);
        return 0;
}

/* Deferred work of a connection: connect if needed, submit queued calls, deliver finished calls. */
static void on_kick(evutil_socket_t fd, short what, void *userdata) {
        struct grpc_client *conn = userdata;
        bool any = false;

        for (struct grpc_call *p = conn->calls; p; p = p->next)
                if (p->stream_id == 0) {
                        any = true;
                        break;
                }
        if (any && !conn->connected && !conn->connecting) {
                int r = conn_connect(conn);
                if (r < 0)
                        connect_failed(conn, r);
        }
        if (conn->connected) {
                for (struct grpc_call *p = conn->calls, *next; p; p = next) {
                        next = p->next;
                        if (p->stream_id == 0 && conn_submit(conn, p) < 0)
                                call_finish(p, GRPC_INTERNAL, "cannot submit the HTTP/2 request");
                }
                conn_flush(conn);
        }
        deliver_done(conn);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        struct grpc_call *p = userdata;
        struct grpc_client *conn = p->conn;

        if (p->stream_id > 0 && conn->session) {
                nghttp2_submit_rst_stream(conn->session, NGHTTP2_FLAG_NONE, p->stream_id, NGHTTP2_CANCEL);
                call_finish(p, GRPC_DEADLINE_EXCEEDED, "context deadline exceeded");
                conn_flush(conn);
        } else
                call_finish(p, GRPC_DEADLINE_EXCEEDED, "context deadline exceeded");
        deliver_done(conn);
}

static const char *endpoint_path(const char *ep) {
        if (startswith(ep, "unix://"))
                return ep + strlen("unix://");
        if (startswith(ep, "tcp://"))
                return ep + strlen("tcp://");
        if (strstr(ep, "://"))
                return NULL;
        return ep;
}

/* "10.0.0.1:50051" or "[::1]:50051": addresses only, no names */
static int parse_host_port(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len) {
        struct sockaddr_in *in4 = (struct sockaddr_in *) ret;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) ret;
        _cleanup_free_ char *host = NULL;
        const char *colon;
        int port;

        if (s[0] == '[') {
                const char *end = strchr(s, ']');
                if (!end || end[1] != ':')
                        return -EINVAL;
                host = strndup(s + 1, (size_t) (end - s - 1));
                colon = end + 1;
        } else {
                colon = strrchr(s, ':');
                if (!colon)
                        return -EINVAL;
                host = strndup(s, (size_t) (colon - s));
        }
        if (!host)
                return -ENOMEM;
        if (safe_atoi(colon + 1, &port) < 0 || port < 1 || port > 65535)
                return -EINVAL;
        memset(ret, 0, sizeof(*ret));
        if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons((uint16_t) port);
                *ret_len = sizeof(*in4);
        } else if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons((uint16_t) port);
                *ret_len = sizeof(*in6);
        } else
                return -EINVAL;
        return 0;
}

/* ---------------------------------------------------------------- client */

struct grpc_client *grpc_client_free(struct grpc_client *conn) {
        if (!conn)
                return NULL;
        conn->freeing = true;
        conn_close(conn, GRPC_CANCELLED, "client is shutting down");
        deliver_done(conn);
        if (conn->ev_read)
                event_free(conn->ev_read);
        if (conn->ev_write)
                event_free(conn->ev_write);
        if (conn->ev_kick)
                event_free(conn->ev_kick);
        free(conn->endpoint);
        free(conn->path);
        free(conn->user_agent);
        free(conn);
        return NULL;
}

int grpc_client_new(struct event_base *base, const char *endpoint, uint64_t default_timeout_usec,
                    struct grpc_client **ret) {
        const char *path = endpoint ? endpoint_path(endpoint) : NULL;
        struct grpc_client *conn;

        if (!base)
                return -EINVAL;
        if (isempty(path))
                return -EPROTONOSUPPORT;
        conn = calloc(1, sizeof(*conn));
        if (!conn)
                return -ENOMEM;
        conn->base = base;
        conn->default_timeout_usec = default_timeout_usec ? default_timeout_usec : GRPC_DEFAULT_TIMEOUT_USEC;
        conn->fd = -1;
        conn->endpoint = strdup(endpoint);
        conn->path = strdup(path);
        conn->tcp = startswith(endpoint, "tcp://");
        if (conn->tcp && parse_host_port(path, &conn->addr, &conn->addr_len) < 0) {
                free(conn->endpoint);
                free(conn->path);
                free(conn);
                return -EINVAL;
        }
        /* ev_read/ev_write are assigned on connect */
        conn->ev_read = event_new(base, -1, 0, on_readable, conn);
        conn->ev_write = event_new(base, -1, 0, on_writable, conn);
        conn->ev_kick = event_new(base, -1, 0, on_kick, conn);
        if (!conn->endpoint || !conn->path || !conn->ev_read || !conn->ev_write || !conn->ev_kick) {
                grpc_client_free(conn);
                return -ENOMEM;
        }
        *ret = conn;
        return 0;
}

int grpc_client_set_user_agent(struct grpc_client *conn, const char *ua) {
        return free_and_strdup(&conn->user_agent, ua);
}

static int call_start(struct grpc_client *conn, const char *method, const ProtobufCMessage *req,
                      const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec, grpc_stream_cb msg_cb,
                      grpc_callback_t cb, void *userdata, struct grpc_call **ret) {
        struct grpc_call *p;
        size_t len;

        if (!conn || conn->freeing)
                return -ESHUTDOWN;
        if (!method || !req || !resp_desc || !cb)
                return -EINVAL;
        len = protobuf_c_message_get_packed_size(req);
        if (len > GRPC_MAX_MESSAGE_SIZE)
                return -EMSGSIZE;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->conn = conn;
        p->grpc_status = -1;
        p->method = strdup(method);
        p->req = malloc(len + GRPC_FRAME_HEADER);
        p->timer = evtimer_new(conn->base, on_deadline, p);
        if (!p->method || !p->req || !p->timer) {
                pending_free(p);
                return -ENOMEM;
        }
        grpc_frame_header(p->req, (uint32_t) len);
        protobuf_c_message_pack(req, p->req + GRPC_FRAME_HEADER);
        p->req_len = len + GRPC_FRAME_HEADER;
        p->resp_desc = resp_desc;
        p->msg_cb = msg_cb;
        p->resp = DYNBUF_INIT((msg_cb ? 2 : 1) * (GRPC_MAX_MESSAGE_SIZE + GRPC_FRAME_HEADER));
        p->cb = cb;
        p->userdata = userdata;
        p->start_usec = now_usec();
        p->timeout_usec = timeout_usec ? timeout_usec : conn->default_timeout_usec;
        if (p->timeout_usec != UINT64_MAX)
                evtimer_add_usec(p->timer, p->timeout_usec);

        DLIST_PREPEND(conn->calls, p);
        event_active(conn->ev_kick, EV_TIMEOUT, 0);
        if (ret)
                *ret = p;
        return 0;
}

int grpc_call(struct grpc_client *conn, const char *method, const ProtobufCMessage *req,
              const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec, grpc_callback_t cb, void *userdata,
              struct grpc_call **ret) {
        return call_start(conn, method, req, resp_desc, timeout_usec, NULL, cb, userdata, ret);
}

int grpc_call_stream(struct grpc_client *conn, const char *method, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *resp_desc, grpc_stream_cb on_message, grpc_callback_t on_end,
                     void *userdata, struct grpc_call **ret) {
        if (!on_message)
                return -EINVAL;
        return call_start(conn, method, req, resp_desc, UINT64_MAX, on_message, on_end, userdata, ret);
}

void grpc_call_cancel(struct grpc_call *p) {
        struct grpc_client *conn;

        if (!p || p->cancelled)
                return;
        conn = p->conn;
        p->cancelled = true;
        if (p->done)
                return; /* already on its way to delivery, which now only frees it */
        if (p->stream_id > 0 && conn->session) {
                nghttp2_submit_rst_stream(conn->session, NGHTTP2_FLAG_NONE, p->stream_id, NGHTTP2_CANCEL);
                if (nghttp2_session_want_write(conn->session))
                        event_add(conn->ev_write, NULL);
        }
        call_finish(p, GRPC_CANCELLED, "cancelled");
}

const char *grpc_code_to_string(int code) {
        /* as Go's codes.Code.String() */
        static const char *const names[] = {
                "OK",       "Canceled",        "Unknown",          "InvalidArgument",   "DeadlineExceeded",
                "NotFound", "AlreadyExists",   "PermissionDenied", "ResourceExhausted", "FailedPrecondition",
                "Aborted",  "OutOfRange",      "Unimplemented",    "Internal",          "Unavailable",
                "DataLoss", "Unauthenticated",
        };
        return code >= 0 && (size_t) code < ELEMENTSOF(names) ? names[code] : "Unknown";
}
