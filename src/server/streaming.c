/* SPDX-License-Identifier: Apache-2.0 */
/* /exec, /attach and /portForward: ask the runtime for a streaming URL (CRI Exec/Attach/PortForward) and proxy
 * the client's connection to it (upstream's proxyStream + UpgradeAwareHandler with UpgradeRequired). Only an
 * upgrade request is proxied (others get 400 "Upgrade request required"). It is replayed to the runtime's
 * streaming server with the runtime's path, the client's query, and its headers less the hop-by-hop ones and
 * its credentials. Until the streaming server answers 101 Switching Protocols nothing of the client's goes to
 * it; any other answer is passed on and the connection ends, so that it never becomes a raw pipe to the
 * streaming server. After the 101, bytes flow both ways unchanged (SPDY/3.1, WebSocket), until either side
 * closes or nothing has flowed for streamingConnectionIdleTimeout.
 *
 * With ExtendWebSocketsToKubelet (on by default, as in upstream v1.36+) the kubelet terminates WebSocket itself,
 * as upstream's getExec/getAttach/getPortForward do with apiserver's StreamTranslatorHandler and TunnelingHandler:
 * - exec/attach offering v5.channel.k8s.io: the kubelet answers 101 with v5, sends the empty message that tells the
 *   client the streams are up, and dials the runtime's URL with a SPDY/3.1 upgrade (POST, X-Stream-Protocol-Version
 *   v5 to v1, as client-go's SPDY executor). It opens the error, stdin, stdout, stderr and (with a tty) resize
 *   streams as client-go's remotecommand client, and bridges: channel 0 and 4 messages go out as SPDY data, v5's
 *   close of channel 0 half-closes the stdin stream (a FIN), stdout and stderr data come back as channel 1 and 2
 *   messages. When the SPDY session ends, the Status decoded from the runtime's error stream is written on channel
 *   3 (ws_bridge.c), a close frame follows, and the kubelet waits (up to 15 minutes) for the client to close.
 * - portforward offering a "SPDY/3.1+*.k8s.io" protocol: the request is replayed as a SPDY/3.1 upgrade asking for
 *   the protocols without the prefix; on the runtime's 101 the client gets a WebSocket 101 naming the one the
 *   runtime picked, and from then on the payloads of its binary messages go to the runtime as raw bytes and the
 *   runtime's bytes come back as binary messages (the tunnel). Any other answer is passed on as it came. */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <sys/queue.h>
#include <event2/keyvalq_struct.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "basic/duration.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "cri/cri.h"
#include "features/features.h"
#include "http/spdy.h"
#include "http/websocket.h"
#include "server/server-internal.h"
#include "server/ws_bridge.h"

#define PROXY_MAX_BUFFERED (1024 * 1024) /* per direction; reading pauses above it */
#define PROXY_MAX_ANSWER (64 * 1024)     /* what is passed on of a streaming server's answer that is not a 101 */
#define WS_MAX_ERROR (64 * 1024)         /* what is kept of the runtime's error stream, and of a refused SPDY answer */
#define WS_SPDY_CHUNK (32 * 1024)        /* a stdin message goes out in SPDY data frames of at most this */
#define WS_FINISH_USEC (15ULL * 60 * 1000000) /* upstream's finishTimeout: the wait for the client's close */

/* the channels of the translated streams (v5's numbers) */
enum { CH_STDIN, CH_STDOUT, CH_STDERR, CH_ERROR, CH_RESIZE, CH_MAX };

enum proxy_state {
        PROXY_WAITING,  /* for the streaming server's answer: the client is not read */
        PROXY_REFUSED,  /* the answer was not a 101: it is passed on, then everything closes */
        PROXY_UPGRADED, /* bytes flow both ways */
};

struct proxy {
        struct api_stream stream;
        struct api_server *s;
        struct evhttp_request *req;      /* until the CRI call answers and the connection is taken over */
        struct evhttp_connection *evcon; /* the client's connection, taken over from evhttp */
        struct bufferevent *client, *backend;
        char *kind;
        char *what; /* "ns/pod/container", for logs */
        char *upgrade;
        bool closing;
        enum proxy_state state;
        http_parser answer; /* the streaming server's answer head, while waiting */
        bool answer_done;   /* its head is complete */
        bool answer_end;    /* a refused answer is complete */
        size_t passed;      /* bytes of a refused answer passed on */
        struct event *idle;
        uint64_t idle_usec;   /* streamingConnectionIdleTimeout; 0: none */
        struct event *finish; /* proxy_close's deferred maybe_finish */

        /* WebSocket handled here (ws_bridge.h) */
        enum wsb_mode mode;
        char accept[WS_ACCEPT_LEN + 1]; /* Sec-WebSocket-Accept */
        char *ws_protocols;             /* the client's Sec-WebSocket-Protocol (tunnel) */
        bool want[CH_MAX];              /* the streams asked for (translate) */
        bool tty;
        struct evbuffer *head; /* the runtime's answer head, kept (not passed on) */
        struct evbuffer *body; /* a refused SPDY upgrade's body (translate), capped */
        struct evbuffer *msg;  /* the client's message being reassembled */
        struct evbuffer *err;  /* the runtime's error stream, capped */
        struct ws_msg in_msg;
        int version; /* the remote command protocol the runtime picked (translate) */
        struct spdy_zstream deflater;
        uint32_t sid[CH_MAX];     /* SPDY stream of each channel; 0: none */
        bool remote_done[CH_MAX]; /* the runtime finished that stream (FIN or RST_STREAM) */
        bool local_done[CH_MAX];  /* we sent its FIN */
        bool ws_finished;         /* the Status and our close frame are out: waiting for the client's close */
        bool ws_close_sent;
        struct event *linger; /* bounds that wait */
};

static void proxy_free(struct proxy *p) {
        if (!p)
                return;
        api_stream_unregister(&p->stream);
        if (p->idle)
                event_free(p->idle);
        if (p->finish)
                event_free(p->finish);
        if (p->linger)
                event_free(p->linger);
        spdy_zstream_done(&p->deflater);
        if (p->head)
                evbuffer_free(p->head);
        if (p->body)
                evbuffer_free(p->body);
        if (p->msg)
                evbuffer_free(p->msg);
        if (p->err)
                evbuffer_free(p->err);
        free(p->ws_protocols);
        if (p->backend)
                bufferevent_free(p->backend);
        if (p->evcon)
                evhttp_connection_free(p->evcon); /* frees the request and the client's bufferevent */
        free(p->kind);
        free(p->what);
        free(p->upgrade);
        free(p);
}

static void proxy_cancel(struct api_stream *st) {
        struct proxy *p = (struct proxy *) st;

        if (p->req && !p->evcon) {
                /* still waiting for the runtime: answer, and let the CRI callback free */
                api_reply_text(p->req, 503, "Service Unavailable: the kubelet is shutting down\n");
                p->req = NULL;
                api_stream_unregister(st);
                return;
        }
        proxy_free(p);
}

static struct bufferevent *peer_of(struct proxy *p, struct bufferevent *bev) {
        return bev == p->client ? p->backend : p->client;
}

static void maybe_finish(struct proxy *p) {
        /* closing: the side that ended is gone; free once what we owe the other side is written */
        if (p->closing && evbuffer_get_length(bufferevent_get_output(p->client)) == 0 &&
            (!p->backend || evbuffer_get_length(bufferevent_get_output(p->backend)) == 0)) {
                log_v(3, "%s %s: stream closed", p->kind, p->what);
                proxy_free(p);
        }
}

static void on_finish(evutil_socket_t fd, short what, void *userdata) {
        maybe_finish(userdata);
}

/* stop everything once what is queued for the client is written; never frees p on the caller's stack */
static void proxy_close(struct proxy *p) {
        p->closing = true;
        if (p->backend) {
                bufferevent_free(p->backend);
                p->backend = NULL;
        }
        bufferevent_disable(p->client, EV_READ);
        bufferevent_enable(p->client, EV_WRITE);
        evtimer_add_usec(p->finish, 0);
}

static void on_idle(evutil_socket_t fd, short what, void *userdata) {
        struct proxy *p = userdata;
        char d[GO_DURATION_MAX];

        log_v(2, "%s %s: the stream was idle for %s (streamingConnectionIdleTimeout), closing it", p->kind, p->what,
              go_duration_format((int64_t) p->idle_usec * 1000, d, sizeof(d)));
        proxy_free(p);
}

static void touch(struct proxy *p) {
        if (p->idle)
                evtimer_add_usec(p->idle, p->idle_usec);
}

/* ---- WebSocket, terminated here (ExtendWebSocketsToKubelet) ---- */

static void ws_send(struct proxy *p, uint8_t opcode, const void *data, size_t n) {
        uint8_t h[WS_MAX_HEADER];
        struct evbuffer *out = bufferevent_get_output(p->client);

        evbuffer_add(out, h, ws_frame_header(h, opcode, true, n));
        if (n > 0)
                evbuffer_add(out, data, n);
}

/* one channel message: its channel byte, then the data moved from src (n bytes) or copied from data */
static void ws_send_channel(struct proxy *p, uint8_t ch, const void *data, struct evbuffer *src, size_t n) {
        uint8_t h[WS_MAX_HEADER];
        struct evbuffer *out = bufferevent_get_output(p->client);

        evbuffer_add(out, h, ws_frame_header(h, WS_OP_BINARY, true, 1 + n));
        evbuffer_add(out, &ch, 1);
        if (src)
                evbuffer_remove_buffer(src, out, n);
        else if (n > 0)
                evbuffer_add(out, data, n);
}

static void ws_send_close(struct proxy *p, int code) {
        uint8_t c[2] = { (uint8_t) (code >> 8), (uint8_t) code };

        if (p->ws_close_sent)
                return;
        p->ws_close_sent = true;
        ws_send(p, WS_OP_CLOSE, c, code == 1005 ? 0 : 2);
}

/* a protocol error from the client: close frame, then everything ends */
static void ws_fail(struct proxy *p, int code, const char *why) {
        log_v(2, "%s %s: closing the WebSocket: %s", p->kind, p->what, why);
        ws_send_close(p, code);
        proxy_close(p);
}

static void on_linger(evutil_socket_t fd, short what, void *userdata) {
        struct proxy *p = userdata;

        log_v(2, "%s %s: the client did not close the WebSocket after the command ended, closing it", p->kind, p->what);
        proxy_free(p);
}

/* The end of a translated session (upstream's conns.finish): the SPDY connection is dropped, the Status goes out on
 * the error channel (status_json, or the one decoded from the runtime's error stream), then a close frame; the
 * client's own close ends the connection, or WS_FINISH_USEC. */
static void ws_finish(struct proxy *p, char *status_json) {
        _cleanup_free_ char *st = status_json;
        _cleanup_free_ uint8_t *e = NULL;
        size_t n;

        if (p->ws_finished || p->closing) {
                return;
        }
        p->ws_finished = true;
        if (p->backend) {
                bufferevent_free(p->backend);
                p->backend = NULL;
        }
        if (!st) {
                n = p->err ? evbuffer_get_length(p->err) : 0;
                e = n > 0 ? malloc(n) : NULL;
                if (e)
                        evbuffer_remove(p->err, e, n);
                st = wsb_status_json(p->version, e, e ? n : 0);
        }
        log_v(3, "%s %s: finished: %s", p->kind, p->what, strna(st));
        if (st)
                ws_send_channel(p, CH_ERROR, st, NULL, strlen(st));
        ws_send_close(p, WS_CLOSE_NORMAL);
        /* keep reading the client, for its close */
        p->state = PROXY_UPGRADED;
        bufferevent_enable(p->client, EV_READ | EV_WRITE);
        p->linger = evtimer_new(p->s->base, on_linger, p);
        if (!p->linger || evtimer_add_usec(p->linger, WS_FINISH_USEC) < 0)
                proxy_close(p);
}

static char *upgrade_failed(const char *detail) {
        _cleanup_free_ char *m = NULL;
        if (asprintf(&m, "unable to upgrade connection: %s", detail) < 0)
                return NULL;
        return wsb_internal_error_json(m);
}

/* The 101 answering the client's WebSocket handshake, naming protocol (none when NULL). */
static void ws_send_101(struct proxy *p, const char *protocol) {
        evbuffer_add_printf(bufferevent_get_output(p->client),
                            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            "Sec-WebSocket-Accept: %s\r\n%s%s%s\r\n",
                            p->accept, protocol ? "Sec-WebSocket-Protocol: " : "", strempty(protocol),
                            protocol ? "\r\n" : "");
}

static int spdy_open(struct proxy *p, uint32_t *next, int ch, const char *type) {
        uint8_t f[512];
        ssize_t n;

        n = spdy_syn_stream(&p->deflater, *next, 0, (const char *const[]) { "streamtype", type, NULL }, f, sizeof(f));
        if (n < 0)
                return (int) n;
        evbuffer_add(bufferevent_get_output(p->backend), f, (size_t) n);
        p->sid[ch] = *next;
        *next += 2;
        return 0;
}

/* The runtime upgraded to SPDY: the streams of client-go's remotecommand client, in its order. */
static int translate_start(struct proxy *p) {
        char v[64];
        uint32_t next = 1;
        int r;

        /* no protocol named: client-go falls back to the first version */
        p->version = wsb_answer_header((const char *) evbuffer_pullup(p->head, -1), evbuffer_get_length(p->head),
                                       "X-Stream-Protocol-Version", v, sizeof(v)) > 0
                             ? wsb_protocol_version(v)
                             : 1;
        if (p->version < 0)
                return -EPROTO;
        r = spdy_deflater_init(&p->deflater);
        if (r < 0)
                return r;
        if ((r = spdy_open(p, &next, CH_ERROR, "error")) < 0 ||
            (p->want[CH_STDIN] && (r = spdy_open(p, &next, CH_STDIN, "stdin")) < 0) ||
            (p->want[CH_STDOUT] && (r = spdy_open(p, &next, CH_STDOUT, "stdout")) < 0) ||
            (p->want[CH_STDERR] && (r = spdy_open(p, &next, CH_STDERR, "stderr")) < 0) ||
            (p->tty && p->version >= 3 && (r = spdy_open(p, &next, CH_RESIZE, "resize")) < 0))
                return r;
        log_v(3, "%s %s: SPDY session with the runtime (protocol v%d)", p->kind, p->what, p->version);
        return 0;
}

static int channel_of(struct proxy *p, uint32_t sid) {
        for (int c = 0; c < CH_MAX; c++)
                if (p->sid[c] == sid)
                        return c;
        return -1;
}

/* SPDY from the runtime, once upgraded: stdout/stderr data to the client, the error stream kept. */
static void translate_from_runtime(struct proxy *p) {
        struct evbuffer *in = bufferevent_get_input(p->backend);

        for (;;) {
                size_t n = evbuffer_get_length(in), need;
                const uint8_t *b;
                struct spdy_frame f;
                uint8_t out[16];
                int r, c;

                if (n < SPDY_HEADER_LEN)
                        break;
                b = evbuffer_pullup(in, SPDY_HEADER_LEN);
                need = SPDY_HEADER_LEN + ((size_t) b[5] << 16 | (size_t) b[6] << 8 | b[7]);
                if (need > SPDY_HEADER_LEN + SPDY_MAX_FRAME) {
                        ws_finish(p, wsb_internal_error_json("SPDY frame from the runtime too large"));
                        return;
                }
                if (n < need)
                        break;
                b = evbuffer_pullup(in, (ssize_t) need);
                r = spdy_frame_parse(b, need, 0, &f);
                if (r <= 0) {
                        ws_finish(p, wsb_internal_error_json("SPDY protocol error from the runtime"));
                        return;
                }
                c = f.control ? -1 : channel_of(p, f.stream_id);
                if (!f.control) {
                        evbuffer_drain(in, SPDY_HEADER_LEN);
                        if (f.length > 0 && (c == CH_STDOUT || c == CH_STDERR))
                                ws_send_channel(p, (uint8_t) c, NULL, in, f.length);
                        else if (f.length > 0 && c == CH_ERROR && evbuffer_get_length(p->err) < WS_MAX_ERROR)
                                evbuffer_remove_buffer(in, p->err, f.length);
                        else
                                evbuffer_drain(in, f.length);
                        if (c >= 0 && (f.flags & SPDY_FLAG_FIN))
                                p->remote_done[c] = true;
                        continue;
                }
                switch (f.type) {
                case SPDY_RST_STREAM:
                        c = channel_of(p, f.stream_id);
                        if (c >= 0)
                                p->remote_done[c] = true;
                        break;
                case SPDY_PING:
                        evbuffer_add(bufferevent_get_output(p->backend), out, spdy_ping(out, f.value));
                        break;
                case SPDY_SYN_STREAM: /* the runtime has no stream to open here */
                        evbuffer_add(bufferevent_get_output(p->backend), out, spdy_rst_stream(out, f.stream_id, 3));
                        break;
                case SPDY_SYN_REPLY:
                        if (f.flags & SPDY_FLAG_FIN) {
                                c = channel_of(p, f.stream_id);
                                if (c >= 0)
                                        p->remote_done[c] = true;
                        }
                        break;
                case SPDY_GOAWAY:
                        evbuffer_drain(in, need);
                        ws_finish(p, NULL);
                        return;
                default: /* SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do */
                        break;
                }
                evbuffer_drain(in, need);
        }
        if (p->remote_done[CH_ERROR] && (!p->sid[CH_STDOUT] || p->remote_done[CH_STDOUT]) &&
            (!p->sid[CH_STDERR] || p->remote_done[CH_STDERR]))
                ws_finish(p, NULL);
}

static void spdy_data(struct proxy *p, int ch, struct evbuffer *src, size_t n, bool fin) {
        struct evbuffer *out = bufferevent_get_output(p->backend);
        uint8_t h[SPDY_HEADER_LEN];

        do {
                size_t k = n > WS_SPDY_CHUNK ? WS_SPDY_CHUNK : n;
                evbuffer_add(out, h, spdy_data_header(h, p->sid[ch], fin && k == n ? SPDY_FLAG_FIN : 0, (uint32_t) k));
                evbuffer_remove_buffer(src, out, k);
                n -= k;
        } while (n > 0);
}

/* A whole message of the client (in p->msg), v5 */
static void translate_message(struct proxy *p) {
        size_t n = evbuffer_get_length(p->msg), len;
        uint8_t ch, *m;
        int r;

        if (n == 0 || p->ws_finished || !p->backend)
                goto drop;
        m = evbuffer_pullup(p->msg, 1);
        ch = m[0];
        if (ch == WS_CHAN_CLOSE) {
                m = evbuffer_pullup(p->msg, -1);
                r = ws_chan_decode(WS_CHAN_V5, m, n, &ch, &len);
                if (r < 0)
                        goto drop;
                if ((m[0] == CH_STDIN || m[0] == CH_RESIZE) && p->sid[m[0]] && !p->local_done[m[0]]) {
                        struct evbuffer *empty = evbuffer_new();
                        p->local_done[m[0]] = true;
                        if (empty) {
                                spdy_data(p, m[0], empty, 0, true); /* half-close: the process sees EOF */
                                evbuffer_free(empty);
                        }
                }
                goto drop;
        }
        if ((ch == CH_STDIN || ch == CH_RESIZE) && p->sid[ch] && !p->local_done[ch] && n > 1) {
                evbuffer_drain(p->msg, 1);
                spdy_data(p, ch, p->msg, n - 1, false);
                return;
        }
        /* other channels, or streams not asked for: ignored, as upstream's IgnoreChannel */
drop:
        evbuffer_drain(p->msg, evbuffer_get_length(p->msg));
}

/* The client's frames: control frames answered, data passed on (translate: whole messages; tunnel: payloads). */
static void ws_from_client(struct proxy *p) {
        struct evbuffer *in = bufferevent_get_input(p->client);

        while (!p->closing) {
                size_t n = evbuffer_get_length(in), h = n < WS_MAX_HEADER ? n : WS_MAX_HEADER;
                struct ws_frame f;
                uint8_t op = 0, *b;
                bool done = false;
                int r, code;

                if (n < 2)
                        break;
                r = ws_frame_parse(evbuffer_pullup(in, (ssize_t) h), h, true, 0, &f);
                if (r < 0) {
                        ws_fail(p, r == -EMSGSIZE ? WS_CLOSE_TOO_BIG : WS_CLOSE_PROTOCOL_ERROR,
                                "a frame RFC 6455 refuses");
                        return;
                }
                if (r == 0 || n < f.header_len + f.payload_len)
                        break;
                if (!(f.opcode & 0x8)) {
                        r = ws_msg_step(&p->in_msg, &f, 0, &op, &done);
                        if (r < 0) {
                                ws_fail(p, r == -EMSGSIZE ? WS_CLOSE_TOO_BIG : WS_CLOSE_PROTOCOL_ERROR,
                                        "a message out of sequence or too large");
                                return;
                        }
                }
                b = evbuffer_pullup(in, (ssize_t) (f.header_len + f.payload_len));
                ws_unmask(b + f.header_len, (size_t) f.payload_len, f.mask, 0);
                code = f.opcode == WS_OP_CLOSE ? ws_close_code(b + f.header_len, (size_t) f.payload_len) : 0;
                evbuffer_drain(in, f.header_len);
                touch(p);
                if (f.opcode == WS_OP_CLOSE) {
                        evbuffer_drain(in, f.payload_len);
                        log_v(3, "%s %s: the client closed the WebSocket (%d)", p->kind, p->what, code);
                        ws_send_close(p, code < 0 ? WS_CLOSE_PROTOCOL_ERROR : code);
                        proxy_close(p);
                        return;
                }
                if (f.opcode == WS_OP_PING) {
                        uint8_t c[WS_MAX_CONTROL];
                        evbuffer_remove(in, c, (size_t) f.payload_len);
                        ws_send(p, WS_OP_PONG, c, (size_t) f.payload_len);
                        continue;
                }
                if (f.opcode == WS_OP_PONG || p->ws_finished || !p->backend) {
                        evbuffer_drain(in, f.payload_len); /* after the end, what the client sends is dropped */
                        continue;
                }
                if (p->mode == WSB_TUNNEL) {
                        evbuffer_remove_buffer(in, bufferevent_get_output(p->backend), (size_t) f.payload_len);
                        continue;
                }
                evbuffer_remove_buffer(in, p->msg, (size_t) f.payload_len);
                if (done)
                        translate_message(p);
        }
        if (p->backend && !p->closing && evbuffer_get_length(bufferevent_get_output(p->backend)) > PROXY_MAX_BUFFERED)
                bufferevent_disable(p->client, EV_READ); /* resumed by the backend's write callback */
}

/* the runtime's bytes, through the tunnel */
static void tunnel_from_runtime(struct proxy *p) {
        struct evbuffer *in = bufferevent_get_input(p->backend);
        size_t n;

        while ((n = evbuffer_get_length(in)) > 0) {
                size_t k = n > WS_MAX_FRAME ? WS_MAX_FRAME : n;
                uint8_t h[WS_MAX_HEADER];
                evbuffer_add(bufferevent_get_output(p->client), h, ws_frame_header(h, WS_OP_BINARY, true, k));
                evbuffer_remove_buffer(in, bufferevent_get_output(p->client), k);
        }
}

static void ws_from_runtime(struct proxy *p) {
        if (p->mode == WSB_TUNNEL)
                tunnel_from_runtime(p);
        else
                translate_from_runtime(p);
        if (p->backend && evbuffer_get_length(bufferevent_get_output(p->client)) > PROXY_MAX_BUFFERED)
                bufferevent_disable(p->backend, EV_READ); /* resumed by the client's write callback */
}

/* The runtime's answer to a translated or tunnelled request is complete (its head in p->head). */
static void ws_answered(struct proxy *p) {
        const char *head = (const char *) evbuffer_pullup(p->head, -1);
        size_t hl = evbuffer_get_length(p->head);
        char v[128], conn[128], up[128];

        if (p->mode == WSB_TUNNEL) {
                if (p->answer.status_code != 101) {
                        /* anything but an upgrade is passed on as it came (upstream's tunnel replays it) */
                        evbuffer_add_buffer(bufferevent_get_output(p->client), p->head);
                        return;
                }
                if (wsb_answer_header(head, hl, "Connection", conn, sizeof(conn)) <= 0 ||
                    !strcasestr(conn, "upgrade") || wsb_answer_header(head, hl, "Upgrade", up, sizeof(up)) <= 0 ||
                    !strcasestr(up, "spdy/3.1")) {
                        static const char m[] = "unable to upgrade: missing upgrade headers in response\n";
                        evbuffer_add_printf(bufferevent_get_output(p->client),
                                            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain; "
                                            "charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                                            strlen(m), m);
                        proxy_close(p);
                        return;
                }
                if (wsb_answer_header(head, hl, "X-Stream-Protocol-Version", v, sizeof(v)) > 0 && v[0]) {
                        char proto[sizeof(WSB_TUNNEL_PREFIX) + sizeof(v)];
                        snprintf(proto, sizeof(proto), "%s%s", WSB_TUNNEL_PREFIX, v);
                        ws_send_101(p, proto);
                } else
                        ws_send_101(p, NULL);
                log_v(3, "%s %s: tunnelling SPDY over WebSocket", p->kind, p->what);
                return;
        }
        if (p->answer.status_code != 101)
                return; /* the body is collected; ws_refused ends it */
        if (translate_start(p) < 0) {
                ws_finish(p, wsb_internal_error_json("unable to open the SPDY streams to the runtime"));
                return;
        }
}

static int on_answer_headers(http_parser *hp) {
        struct proxy *p = hp->data;

        p->answer_done = true;
        http_parser_pause(hp, 1); /* the rest is the upgraded protocol, or the answer's body */
        return 0;
}

static int on_answer_end(http_parser *hp) {
        struct proxy *p = hp->data;

        p->answer_end = true;
        http_parser_pause(hp, 1);
        return 0;
}

/* a refused SPDY upgrade's body, for the Status of a translated session */
static int on_answer_body(http_parser *hp, const char *at, size_t n) {
        struct proxy *p = hp->data;

        if (p->mode == WSB_TRANSLATE && p->body && evbuffer_get_length(p->body) < WS_MAX_ERROR)
                evbuffer_add(p->body, at, n);
        return 0;
}

static const http_parser_settings answer_settings = {
        .on_headers_complete = on_answer_headers,
        .on_body = on_answer_body,
        .on_message_complete = on_answer_end,
};

/* A translated session whose SPDY upgrade the runtime refused: the Status says why (client-go's "unable to upgrade
 * connection" with the answer's body). */
static void ws_refused(struct proxy *p) {
        _cleanup_free_ char *body = NULL;
        size_t n = p->body ? evbuffer_get_length(p->body) : 0;

        body = malloc(n + 64);
        if (body) {
                if (n > 0) {
                        evbuffer_remove(p->body, body, n);
                        while (n > 0 && (body[n - 1] == '\n' || body[n - 1] == '\r' || body[n - 1] == ' '))
                                n--;
                        body[n] = 0;
                } else
                        snprintf(body, 64, "%u %s", p->answer.status_code,
                                 http_status_str((enum http_status) p->answer.status_code));
        }
        log_v(2, "%s %s: the runtime's streaming server refused the SPDY upgrade: %s", p->kind, p->what, strna(body));
        ws_finish(p, upgrade_failed(strna(body)));
}

/* A refused upgrade: the rest of the answer (its body, as the parser frames it, up to a cap) goes to the client,
 * then everything closes. */
static void pass_refused(struct proxy *p) {
        struct evbuffer *in = bufferevent_get_input(p->backend), *out = bufferevent_get_output(p->client);

        while (!p->answer_end && evbuffer_get_length(in) > 0) {
                struct evbuffer_iovec v;
                size_t n;

                if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
                        break;
                n = http_parser_execute(&p->answer, &answer_settings, v.iov_base, v.iov_len);
                if (HTTP_PARSER_ERRNO(&p->answer) != HPE_OK && HTTP_PARSER_ERRNO(&p->answer) != HPE_PAUSED)
                        break;
                if (p->mode == WSB_TRANSLATE)
                        evbuffer_drain(in, n); /* on_answer_body kept it */
                else
                        evbuffer_remove_buffer(in, out, n);
                p->passed += n;
                if (p->passed > PROXY_MAX_ANSWER)
                        break;
        }
        if (p->answer_end || p->passed > PROXY_MAX_ANSWER || HTTP_PARSER_ERRNO(&p->answer) != HPE_OK) {
                if (p->mode == WSB_TRANSLATE)
                        ws_refused(p);
                else
                        proxy_close(p);
        }
}

/* The streaming server's answer head, read while the client waits. */
static void read_answer(struct proxy *p) {
        struct evbuffer *in = bufferevent_get_input(p->backend), *out = bufferevent_get_output(p->client);

        while (!p->answer_done && evbuffer_get_length(in) > 0) {
                struct evbuffer_iovec v;
                size_t n;

                if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
                        break;
                n = http_parser_execute(&p->answer, &answer_settings, v.iov_base, v.iov_len);
                if (HTTP_PARSER_ERRNO(&p->answer) != HPE_OK && HTTP_PARSER_ERRNO(&p->answer) != HPE_PAUSED) {
                        log_warning("%s %s: the runtime's streaming server answered something that is not HTTP: %s",
                                    p->kind, p->what, http_errno_description(HTTP_PARSER_ERRNO(&p->answer)));
                        proxy_close(p);
                        return;
                }
                /* the head goes to the client as it came; WebSocket answers its own way (ws_answered) */
                evbuffer_remove_buffer(in, p->mode == WSB_PROXY ? out : p->head, n);
                p->passed += n;
                if (p->answer_done)
                        p->passed = 0; /* from here: the body of a refused answer */
                if (!p->answer_done && p->passed > PROXY_MAX_ANSWER) {
                        log_warning("%s %s: the runtime's streaming server's answer head is too large", p->kind,
                                    p->what);
                        if (p->mode == WSB_TRANSLATE)
                                ws_finish(p, upgrade_failed("the answer's head is too large"));
                        else
                                proxy_close(p);
                        return;
                }
        }
        if (!p->answer_done)
                return;
        if (p->mode != WSB_PROXY && p->answer.status_code == 101) {
                /* the parser paused on the head's last LF without consuming it: it belongs to the head */
                if (evbuffer_get_length(in) > 0 && *evbuffer_pullup(in, 1) == '\n')
                        evbuffer_remove_buffer(in, p->head, 1);
                ws_answered(p);
                if (p->closing || p->ws_finished)
                        return;
                p->state = PROXY_UPGRADED;
                log_v(3, "%s %s: upgraded (%s)", p->kind, p->what,
                      p->mode == WSB_TUNNEL ? "WebSocket tunnel" : "WebSocket to SPDY");
                bufferevent_enable(p->client, EV_READ | EV_WRITE);
                touch(p);
                if (evbuffer_get_length(in) > 0)
                        ws_from_runtime(p);
                if (!p->closing && evbuffer_get_length(bufferevent_get_input(p->client)) > 0)
                        ws_from_client(p);
                return;
        }
        if (p->mode == WSB_TUNNEL)
                ws_answered(p); /* passes the head on */
        if (p->answer.status_code == 101) {
                p->state = PROXY_UPGRADED;
                log_v(3, "%s %s: upgraded (%s)", p->kind, p->what, strna(p->upgrade));
                /* what the client sent after its request, and what the server sent after its 101 */
                evbuffer_add_buffer(bufferevent_get_output(p->backend), bufferevent_get_input(p->client));
                evbuffer_add_buffer(out, in);
                bufferevent_enable(p->client, EV_READ | EV_WRITE);
                touch(p);
                return;
        }
        log_v(2, "%s %s: the runtime's streaming server answered %u, not 101: passing it on and closing", p->kind,
              p->what, p->answer.status_code);
        p->state = PROXY_REFUSED;
        http_parser_pause(&p->answer, 0);
        pass_refused(p);
}

static void on_read(struct bufferevent *bev, void *userdata) {
        struct proxy *p = userdata;
        struct bufferevent *peer = peer_of(p, bev);

        if (!peer && !(p->mode != WSB_PROXY && bev == p->client))
                return; /* a finished WebSocket session still reads the client, for its close */
        if (p->state == PROXY_WAITING) {
                if (bev == p->backend)
                        read_answer(p);
                return; /* the client's bytes wait for the 101; after it, read_answer passed on what was there */
        }
        if (p->state == PROXY_REFUSED) {
                if (bev == p->backend && !p->closing)
                        pass_refused(p);
                return;
        }
        touch(p);
        if (p->mode != WSB_PROXY) {
                if (bev == p->client)
                        ws_from_client(p);
                else
                        ws_from_runtime(p);
                return;
        }
        bufferevent_write_buffer(peer, bufferevent_get_input(bev));
        if (evbuffer_get_length(bufferevent_get_output(peer)) > PROXY_MAX_BUFFERED)
                bufferevent_disable(bev, EV_READ); /* resumed by the peer's write callback */
}

static void on_write(struct bufferevent *bev, void *userdata) {
        struct proxy *p = userdata;
        struct bufferevent *peer = peer_of(p, bev);

        if (p->closing) {
                maybe_finish(p);
                return;
        }
        if (peer && p->state == PROXY_UPGRADED)
                bufferevent_enable(peer, EV_READ);
}

static void on_event(struct bufferevent *bev, short what, void *userdata) {
        struct proxy *p = userdata;
        struct bufferevent *peer = peer_of(p, bev);

        if (what & BEV_EVENT_CONNECTED) {
                /* the request is out; the client is read once the streaming server has upgraded */
                bufferevent_enable(bev, EV_READ | EV_WRITE);
                return;
        }
        if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
                return;
        if (bev == p->backend && (what & BEV_EVENT_ERROR) && !p->closing)
                log_v(2, "%s %s: streaming server connection: %s", p->kind, p->what,
                      evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        if (bev == p->backend && p->mode == WSB_TRANSLATE && !p->closing) {
                /* the runtime ended the session: what it sent is handled, then the Status goes out */
                if (p->state == PROXY_WAITING)
                        read_answer(p);
                if (p->closing || p->ws_finished)
                        return;
                if (p->state == PROXY_WAITING)
                        ws_finish(p, upgrade_failed("the runtime's streaming server closed the connection"));
                else if (p->state == PROXY_REFUSED)
                        ws_refused(p);
                else {
                        translate_from_runtime(p);
                        ws_finish(p, NULL);
                }
                return;
        }
        if (bev == p->backend && p->mode == WSB_TUNNEL && p->state == PROXY_UPGRADED && !p->closing) {
                tunnel_from_runtime(p);
                ws_send_close(p, WS_CLOSE_NORMAL);
                proxy_close(p);
                return;
        }
        /* pass on what is still buffered (only once upgraded, or the end of a refused answer), then close */
        if (peer && bev == p->backend && p->state == PROXY_WAITING)
                read_answer(p);
        if (peer && p->state == PROXY_UPGRADED && p->mode == WSB_PROXY)
                bufferevent_write_buffer(peer, bufferevent_get_input(bev));
        if (p->closing && bev == p->backend && !p->backend)
                return; /* read_answer closed it */
        p->closing = true;
        bufferevent_disable(bev, EV_READ);
        if (bev == p->backend) {
                bufferevent_free(p->backend);
                p->backend = NULL;
                maybe_finish(p);
        } else {
                /* the client left: nothing more to deliver to it */
                evbuffer_drain(bufferevent_get_output(p->client),
                               evbuffer_get_length(bufferevent_get_output(p->client)));
                if (p->backend) {
                        bufferevent_free(p->backend);
                        p->backend = NULL;
                }
                maybe_finish(p);
        }
}

/* "http://127.0.0.1:40123/exec/abc" → address and path */
static int parse_stream_url(const char *url, struct sockaddr_storage *ret_addr, socklen_t *ret_len, char **ret_host,
                            char **ret_path) {
        struct evhttp_uri *u = evhttp_uri_parse(url);
        const char *scheme, *host, *path;
        int port;
        int r = -EINVAL;

        if (!u)
                return -EINVAL;
        scheme = evhttp_uri_get_scheme(u);
        host = evhttp_uri_get_host(u);
        path = evhttp_uri_get_path(u);
        port = evhttp_uri_get_port(u);
        if (!scheme || !streq(scheme, "http") || isempty(host) || isempty(path))
                goto finish; /* https streaming servers are not supported */
        if (port <= 0)
                port = 80;
        memset(ret_addr, 0, sizeof(*ret_addr));
        {
                struct sockaddr_in *a4 = (struct sockaddr_in *) ret_addr;
                struct sockaddr_in6 *a6 = (struct sockaddr_in6 *) ret_addr;
                if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
                        a4->sin_family = AF_INET;
                        a4->sin_port = htons((uint16_t) port);
                        *ret_len = sizeof(*a4);
                } else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
                        a6->sin6_family = AF_INET6;
                        a6->sin6_port = htons((uint16_t) port);
                        *ret_len = sizeof(*a6);
                } else
                        goto finish; /* the runtime's streaming server is an address, not a name */
        }
        if (asprintf(ret_host, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port) < 0 ||
            !(*ret_path = strdup(path))) {
                r = -ENOMEM;
                goto finish;
        }
        r = 0;
finish:
        evhttp_uri_free(u);
        return r;
}

static const char *method_name(enum evhttp_cmd_type m) {
        switch (m) {
        case EVHTTP_REQ_POST:
                return "POST";
        case EVHTTP_REQ_HEAD:
                return "HEAD";
        default:
                return "GET";
        }
}

static void on_stream_url(const struct cri_reply *reply, void *userdata) {
        struct proxy *p = userdata;
        const char *url = NULL;
        _cleanup_free_ char *hostport = NULL, *path = NULL;
        struct sockaddr_storage addr;
        socklen_t alen = 0;
        struct evhttp_request *req = p->req;
        const struct evhttp_uri *uri;
        struct evkeyval *h;
        struct evbuffer *out;
        int r, fd;

        if (!req) { /* cancelled */
                free(p->kind);
                free(p->what);
                free(p->upgrade);
                free(p->ws_protocols);
                free(p);
                return;
        }
        if (reply->r < 0) {
                api_stream_unregister(&p->stream);
                api_reply_text(req, 500, "Internal Error: failed to get a streaming URL for %s: %s\n", p->what,
                               reply->message);
                p->req = NULL;
                proxy_free(p);
                return;
        }
        if (streq(p->kind, "exec"))
                url = ((const Runtime__V1__ExecResponse *) reply->msg)->url;
        else if (streq(p->kind, "attach"))
                url = ((const Runtime__V1__AttachResponse *) reply->msg)->url;
        else
                url = ((const Runtime__V1__PortForwardResponse *) reply->msg)->url;
        r = parse_stream_url(strempty(url), &addr, &alen, &hostport, &path);
        if (r < 0) {
                api_stream_unregister(&p->stream);
                api_reply_text(req, 500, "Internal Error: unusable streaming URL \"%s\" from the runtime\n",
                               strempty(url));
                p->req = NULL;
                proxy_free(p);
                return;
        }
        p->evcon = evhttp_request_get_connection(req);
        if (!p->evcon) { /* the client left meanwhile; evhttp detached the request: answering frees it */
                evhttp_send_reply(req, 500, NULL, NULL);
                p->req = NULL;
                proxy_free(p);
                return;
        }
        /* take the connection over from evhttp: it never answers this request; freeing the connection
         * (proxy_free) frees the request with it */
        p->client = evhttp_connection_get_bufferevent(p->evcon);
        api_conn_set_raw(p->s, p->evcon); /* the connection's gate lets everything through from now */
        bufferevent_set_timeouts(p->client, NULL, NULL);
        bufferevent_setcb(p->client, on_read, on_write, on_event, p);
        bufferevent_setwatermark(p->client, EV_WRITE, 0, 0);

        /* the socket made here, close-on-exec (libevent's own connect makes it without SOCK_CLOEXEC: a child
         * spawned meanwhile would hold the runtime's stream) */
        fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        p->backend = fd < 0 ? NULL : bufferevent_socket_new(p->s->base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!p->backend) {
                if (fd >= 0)
                        close(fd);
                p->req = NULL;
                proxy_free(p);
                return;
        }
        bufferevent_setcb(p->backend, on_read, on_write, on_event, p);
        /* replay the request: the runtime's path, the client's query and its end-to-end headers (Host rewritten,
         * no credentials), asking for the client's upgrade */
        uri = evhttp_request_get_evhttp_uri(req);
        out = bufferevent_get_output(p->backend);
        if (p->mode == WSB_TRANSLATE) {
                /* client-go's SPDY executor: POST to the runtime's URL, every remote command version offered */
                evbuffer_add_printf(out,
                                    "POST %s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                                    "X-Stream-Protocol-Version: v5.channel.k8s.io\r\n"
                                    "X-Stream-Protocol-Version: v4.channel.k8s.io\r\n"
                                    "X-Stream-Protocol-Version: v3.channel.k8s.io\r\n"
                                    "X-Stream-Protocol-Version: v2.channel.k8s.io\r\n"
                                    "X-Stream-Protocol-Version: channel.k8s.io\r\nContent-Length: 0\r\n\r\n",
                                    path, hostport);
        } else {
                evbuffer_add_printf(out, "%s %s%s%s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n",
                                    method_name(evhttp_request_get_command(req)), path,
                                    evhttp_uri_get_query(uri) ? "?" : "", strempty(evhttp_uri_get_query(uri)), hostport,
                                    p->mode == WSB_TUNNEL ? "SPDY/3.1" : p->upgrade);
                if (p->mode == WSB_TUNNEL) {
                        /* upstream's createSPDYRequest: the tunnelled protocols, without their prefix */
                        _cleanup_free_ char *buf = strdup(p->ws_protocols);
                        const char *protos[16];
                        size_t np = buf ? wsb_tunnel_protocols(p->ws_protocols, buf, protos, ELEMENTSOF(protos)) : 0;
                        for (size_t i = 0; i < np; i++)
                                evbuffer_add_printf(out, "X-Stream-Protocol-Version: %s\r\n", protos[i]);
                }
                TAILQ_FOREACH(h, evhttp_request_get_input_headers(req), next) {
                        if (api_header_is_hop_by_hop(evhttp_request_get_input_headers(req), h->key) ||
                            strcasecmp(h->key, "Host") == 0 || strcasecmp(h->key, "Authorization") == 0 ||
                            strcasecmp(h->key, "Content-Length") == 0)
                                continue;
                        if (p->mode == WSB_TUNNEL && (strncasecmp(h->key, "Sec-WebSocket-", 14) == 0 ||
                                                      strcasecmp(h->key, "X-Stream-Protocol-Version") == 0))
                                continue;
                        evbuffer_add_printf(out, "%s: %s\r\n", h->key, h->value);
                }
                evbuffer_add(out, "\r\n", 2);
        }
        if (p->mode != WSB_PROXY) {
                p->head = evbuffer_new();
                p->body = evbuffer_new();
                p->msg = evbuffer_new();
                p->err = evbuffer_new();
                if (!p->head || !p->body || !p->msg || !p->err) {
                        p->req = NULL;
                        proxy_free(p);
                        return;
                }
        }
        if (p->mode == WSB_TRANSLATE) {
                /* upstream answers the WebSocket first, then tells the client its streams are up with an empty
                 * message on the lowest channel it writes */
                ws_send_101(p, WSB_V5);
                ws_send_channel(p,
                                p->want[CH_STDOUT]   ? CH_STDOUT
                                : p->want[CH_STDERR] ? CH_STDERR
                                                     : CH_ERROR,
                                NULL, NULL, 0);
        }
        p->req = NULL;
        http_parser_init(&p->answer, HTTP_RESPONSE);
        p->answer.data = p;
        p->state = PROXY_WAITING;
        p->finish = evtimer_new(p->s->base, on_finish, p);
        if (!p->finish) {
                proxy_free(p);
                return;
        }
        if (p->s->o->streaming_connection_idle_timeout_usec > 0) {
                p->idle_usec = p->s->o->streaming_connection_idle_timeout_usec;
                p->idle = evtimer_new(p->s->base, on_idle, p);
                if (!p->idle) {
                        proxy_free(p);
                        return;
                }
        }
        if (bufferevent_socket_connect(p->backend, (struct sockaddr *) &addr, (int) alen) < 0) {
                log_warning("%s %s: cannot connect to the runtime's streaming server %s", p->kind, p->what, hostport);
                proxy_free(p);
                return;
        }
        /* the client is not read until the streaming server upgraded: its bytes are for the new protocol */
        bufferevent_disable(p->client, EV_READ);
        bufferevent_enable(p->client, EV_WRITE);
        log_v(3, "%s %s: proxying to %s%s", p->kind, p->what, hostport, path);
}

/* How an upgrade request is served (ws_bridge.h); WebSocket here only with ExtendWebSocketsToKubelet. */
static enum wsb_mode stream_mode(struct api_request *r, const char *kind) {
        struct evkeyvalq *hs = evhttp_request_get_input_headers(r->req);

        if (!feature_enabled(r->s->o->feature_gates, "ExtendWebSocketsToKubelet") || !api_is_upgrade_request(hs))
                return WSB_PROXY;
        return wsb_mode_of(evhttp_find_header(hs, "Upgrade"), evhttp_find_header(hs, "Sec-WebSocket-Protocol"),
                           streq(kind, "portforward"));
}

/* a registered proxy waiting for the runtime's URL; NULL when refused (the request is answered) */
static struct proxy *proxy_new(struct api_request *r, const char *kind, const char *ns, const char *pod,
                               const char *container) {
        struct evkeyvalq *hs = evhttp_request_get_input_headers(r->req);
        enum wsb_mode mode = stream_mode(r, kind);
        char accept[WS_ACCEPT_LEN + 1] = "";
        struct proxy *p;

        if (mode != WSB_PROXY && (!streq_ptr(evhttp_find_header(hs, "Sec-WebSocket-Version"), "13") ||
                                  ws_accept_key(evhttp_find_header(hs, "Sec-WebSocket-Key"), accept) < 0)) {
                api_reply_text(r->req, 400,
                               "Bad Request: a WebSocket handshake needs Sec-WebSocket-Version 13 and a "
                               "Sec-WebSocket-Key of 16 bytes in base64\n");
                return NULL;
        }
        if (!api_is_upgrade_request(evhttp_request_get_input_headers(r->req))) {
                /* upstream's proxy (UpgradeRequired), answered before the runtime is asked for anything */
                api_reply_text(r->req, 400, "Upgrade request required\n");
                return NULL;
        }
        p = calloc(1, sizeof(*p));
        if (!p) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return NULL;
        }
        p->s = r->s;
        p->stream.cancel = proxy_cancel;
        p->mode = mode;
        memcpy(p->accept, accept, sizeof(accept));
        p->kind = strdup(kind);
        if (!p->kind || asprintf(&p->what, "%s/%s%s%s", ns, pod, container ? "/" : "", strempty(container)) < 0) {
                proxy_free(p);
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return NULL;
        }
        p->upgrade = strdup(strempty(evhttp_find_header(evhttp_request_get_input_headers(r->req), "Upgrade")));
        p->ws_protocols = strdup(strempty(evhttp_find_header(hs, "Sec-WebSocket-Protocol")));
        if (!p->upgrade || !p->ws_protocols) {
                proxy_free(p);
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return NULL;
        }
        if (api_stream_register(r->s, &p->stream) < 0) {
                proxy_free(p);
                api_reply_text(r->req, 503, "Service Unavailable: too many streams\n");
                return NULL;
        }
        p->req = r->req;
        return p;
}

static bool query_bool(const char *query, const char *key) {
        _cleanup_free_ char *v = api_query_get(query, key);
        bool b = false;
        if (v && (streq(v, "1") || parse_bool(v, &b) >= 0))
                return streq(v, "1") || b;
        return false;
}

void api_handle_streaming(struct api_request *r, const char *kind, const char *rest) {
        _cleanup_strv_free_ char **parts = NULL, **cmd = NULL, **ports = NULL;
        _cleanup_(kc_container_freep) struct kc_container *c = NULL;
        _cleanup_free_ char *sandbox = NULL, *uid = NULL;
        const char *ns, *pod, *container = NULL;
        bool is_pf = streq(kind, "portforward");
        size_t n;
        struct proxy *p;
        int k;

        /* /exec/{ns}/{pod}/{container}, /exec/{ns}/{pod}/{uid}/{container}; /portForward/{ns}/{pod}[/{uid}] */
        k = api_path_components(rest, &parts);
        n = k < 0 ? 0 : strv_length(parts);
        if (k < 0 || (is_pf && n != 2 && n != 3) || (!is_pf && n != 3 && n != 4)) {
                api_reply_text(r->req, 400, "invalid path for %s\n", kind);
                return;
        }
        ns = parts[0];
        pod = parts[1];
        if (!is_pf)
                container = parts[n - 1];
        if (!api_host_pod_exists(r->s, ns, pod, &uid)) {
                api_reply_lookup_error(r->req, -ENXIO, ns, pod, container);
                return;
        }
        if ((is_pf && n == 3) || (!is_pf && n == 4)) {
                if (!streq_ptr(uid, parts[2])) {
                        api_reply_text(r->req, 404, "pod \"%s/%s\" with UID %s not found\n", ns, pod, parts[2]);
                        return;
                }
        }
        if (!is_pf) {
                bool in = query_bool(r->query, "stdin") || query_bool(r->query, "input");
                bool outp = query_bool(r->query, "stdout") || query_bool(r->query, "output");
                bool err = query_bool(r->query, "stderr") || query_bool(r->query, "error");
                bool tty = query_bool(r->query, "tty");

                if (!in && !outp && !err) {
                        api_reply_text(r->req, 400, "you must specify at least 1 of stdin, stdout, stderr\n");
                        return;
                }
                if (streq(kind, "exec")) {
                        if (api_query_get_all(r->query, "command", &cmd) < 0 || !cmd) {
                                api_reply_text(r->req, 400, "missing \"command\" parameter\n");
                                return;
                        }
                }
                k = api_host_lookup_container(r->s, ns, pod, container, false, &c, NULL);
                if (k < 0) {
                        api_reply_lookup_error(r->req, k, ns, pod, container);
                        return;
                }
                if (c->state != KC_CONTAINER_RUNNING) {
                        api_reply_text(r->req, 400, "container %s is not running\n", container);
                        return;
                }
                if (tty && err)
                        err = false; /* as upstream: no separate stderr with a tty */
                p = proxy_new(r, kind, ns, pod, container);
                if (!p)
                        return;
                p->want[CH_STDIN] = in;
                p->want[CH_STDOUT] = outp;
                p->want[CH_STDERR] = err;
                p->tty = tty;
                if (streq(kind, "exec")) {
                        Runtime__V1__ExecRequest q = RUNTIME__V1__EXEC_REQUEST__INIT;
                        q.container_id = c->id;
                        q.cmd = cmd;
                        q.n_cmd = strv_length(cmd);
                        q.tty = tty;
                        q.stdin = in;
                        q.stdout = outp;
                        q.stderr = err;
                        k = cri_exec(r->s->cri, &q, 0, on_stream_url, p, NULL);
                } else {
                        Runtime__V1__AttachRequest q = RUNTIME__V1__ATTACH_REQUEST__INIT;
                        q.container_id = c->id;
                        q.tty = tty;
                        q.stdin = in;
                        q.stdout = outp;
                        q.stderr = err;
                        k = cri_attach(r->s->cri, &q, 0, on_stream_url, p, NULL);
                }
        } else {
                _cleanup_free_ int32_t *pv = NULL;
                Runtime__V1__PortForwardRequest q = RUNTIME__V1__PORT_FORWARD_REQUEST__INIT;
                size_t np;

                /* a tunnel names its ports in the SPDY streams (upstream ignores the query then) */
                if (stream_mode(r, kind) != WSB_TUNNEL && api_query_get_all(r->query, "port", &ports) < 0) {
                        api_reply_text(r->req, 400, "invalid query\n");
                        return;
                }
                np = strv_length(ports);
                pv = calloc(np + 1, sizeof(int32_t));
                if (!pv) {
                        api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                        return;
                }
                for (size_t i = 0; i < np; i++) {
                        int v;
                        if (safe_atoi(ports[i], &v) < 0 || v < 1 || v > 65535) {
                                api_reply_text(r->req, 400, "invalid port \"%s\": must be between 1 and 65535\n",
                                               ports[i]);
                                return;
                        }
                        pv[i] = v;
                }
                k = api_host_pod_sandbox_id(r->s, ns, pod, &sandbox);
                if (k < 0) {
                        api_reply_text(r->req, k == -ESRCH ? 400 : 404, "pod \"%s/%s\" %s\n", ns, pod,
                                       k == -ESRCH ? "has no running sandbox" : "not found");
                        return;
                }
                p = proxy_new(r, kind, ns, pod, NULL);
                if (!p)
                        return;
                q.pod_sandbox_id = sandbox;
                q.port = pv;
                q.n_port = np;
                k = cri_port_forward(r->s->cri, &q, 0, on_stream_url, p, NULL);
        }
        if (k < 0) {
                api_stream_unregister(&p->stream);
                api_reply_text(r->req, 500, "Internal Error: %s\n", strerror(-k));
                p->req = NULL;
                proxy_free(p);
        }
}
