/* SPDX-License-Identifier: Apache-2.0 */
/* /exec, /attach and /portForward: ask the runtime for a streaming URL (CRI Exec/Attach/PortForward) and proxy
 * the client's connection to it (upstream's proxyStream + UpgradeAwareHandler with UpgradeRequired). Only an
 * upgrade request is proxied (others get 400 "Upgrade request required"). It is replayed to the runtime's
 * streaming server with the runtime's path, the client's query, and its headers less the hop-by-hop ones and
 * its credentials. Until the streaming server answers 101 Switching Protocols nothing of the client's goes to
 * it; any other answer is passed on and the connection ends, so that it never becomes a raw pipe to the
 * streaming server. After the 101, bytes flow both ways unchanged (SPDY/3.1, WebSocket), until either side
 * closes or nothing has flowed for streamingConnectionIdleTimeout. */
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
#include "server/server-internal.h"

#define PROXY_MAX_BUFFERED (1024 * 1024) /* per direction; reading pauses above it */
#define PROXY_MAX_ANSWER (64 * 1024)     /* what is passed on of a streaming server's answer that is not a 101 */

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
};

static void proxy_free(struct proxy *p) {
        if (!p)
                return;
        api_stream_unregister(&p->stream);
        if (p->idle)
                event_free(p->idle);
        if (p->finish)
                event_free(p->finish);
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

static const http_parser_settings answer_settings = {
        .on_headers_complete = on_answer_headers,
        .on_message_complete = on_answer_end,
};

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
                evbuffer_remove_buffer(in, out, n);
                p->passed += n;
                if (p->passed > PROXY_MAX_ANSWER)
                        break;
        }
        if (p->answer_end || p->passed > PROXY_MAX_ANSWER || HTTP_PARSER_ERRNO(&p->answer) != HPE_OK)
                proxy_close(p);
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
                evbuffer_remove_buffer(in, out, n); /* the head goes to the client as it came */
                p->passed += n;
                if (p->answer_done)
                        p->passed = 0; /* from here: the body of a refused answer */
                if (!p->answer_done && p->passed > PROXY_MAX_ANSWER) {
                        log_warning("%s %s: the runtime's streaming server's answer head is too large", p->kind,
                                    p->what);
                        proxy_close(p);
                        return;
                }
        }
        if (!p->answer_done)
                return;
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

        if (!peer)
                return;
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
        /* pass on what is still buffered (only once upgraded, or the end of a refused answer), then close */
        if (peer && bev == p->backend && p->state == PROXY_WAITING)
                read_answer(p);
        if (peer && p->state == PROXY_UPGRADED)
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
        evbuffer_add_printf(out, "%s %s%s%s HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: %s\r\n",
                            method_name(evhttp_request_get_command(req)), path, evhttp_uri_get_query(uri) ? "?" : "",
                            strempty(evhttp_uri_get_query(uri)), hostport, p->upgrade);
        TAILQ_FOREACH(h, evhttp_request_get_input_headers(req), next) {
                if (api_header_is_hop_by_hop(evhttp_request_get_input_headers(req), h->key) ||
                    strcasecmp(h->key, "Host") == 0 || strcasecmp(h->key, "Authorization") == 0 ||
                    strcasecmp(h->key, "Content-Length") == 0)
                        continue;
                evbuffer_add_printf(out, "%s: %s\r\n", h->key, h->value);
        }
        evbuffer_add(out, "\r\n", 2);
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

/* a registered proxy waiting for the runtime's URL; NULL when refused (the request is answered) */
static struct proxy *proxy_new(struct api_request *r, const char *kind, const char *ns, const char *pod,
                               const char *container) {
        struct proxy *p;

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
        p->kind = strdup(kind);
        if (!p->kind || asprintf(&p->what, "%s/%s%s%s", ns, pod, container ? "/" : "", strempty(container)) < 0) {
                proxy_free(p);
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return NULL;
        }
        p->upgrade = strdup(strempty(evhttp_find_header(evhttp_request_get_input_headers(r->req), "Upgrade")));
        if (!p->upgrade) {
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
                if (streq(kind, "exec")) {
                        Runtime__V1__ExecRequest q = RUNTIME__V1__EXEC_REQUEST__INIT;
                        q.container_id = c->id;
                        q.cmd = cmd;
                        q.n_cmd = strv_length(cmd);
                        q.tty = tty;
                        q.stdin = in;
                        q.stdout = outp;
                        q.stderr = err;
                        k = cri_exec(r->s->cri, &q, 0, on_stream_url, p);
                } else {
                        Runtime__V1__AttachRequest q = RUNTIME__V1__ATTACH_REQUEST__INIT;
                        q.container_id = c->id;
                        q.tty = tty;
                        q.stdin = in;
                        q.stdout = outp;
                        q.stderr = err;
                        k = cri_attach(r->s->cri, &q, 0, on_stream_url, p);
                }
        } else {
                _cleanup_free_ int32_t *pv = NULL;
                Runtime__V1__PortForwardRequest q = RUNTIME__V1__PORT_FORWARD_REQUEST__INIT;
                size_t np;

                if (api_query_get_all(r->query, "port", &ports) < 0) {
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
                k = cri_port_forward(r->s->cri, &q, 0, on_stream_url, p);
        }
        if (k < 0) {
                api_stream_unregister(&p->stream);
                api_reply_text(r->req, 500, "Internal Error: %s\n", strerror(-k));
                p->req = NULL;
                proxy_free(p);
        }
}
