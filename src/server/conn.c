/* SPDX-License-Identifier: Apache-2.0 */
/* The gate between a connection's socket (or TLS session) and evhttp: limits at accept, deadlines for the TLS
 * handshake and each request head, authentication and authorization from the head before any body is read, and
 * a bounded read-ahead. See server-internal.h.
 *
 * Each accepted connection gets a filter bufferevent (libevent's bufferevent_filter) over the socket or TLS one;
 * evhttp reads the filter's input, which only this file fills. The request heads are parsed with http-parser as
 * they come and kept here; once a head is complete it is authorized (maybe through the API server), then the
 * head and its body (framed by the same parser) are handed to evhttp, and nothing more until evhttp has taken the
 * request (on_request asks for its decision). Meanwhile at most API_MAX_HELD bytes are read ahead (the socket's
 * reading stops there). A refused request is handed over as a bodiless stand-in ("GET / HTTP/1.1", Connection:
 * close) whose decision carries the answer; its body is never read: the connection stops reading and closes after
 * the answer. Whatever evhttp and http-parser might frame differently cannot smuggle a request past this: evhttp
 * serves only requests whose method and path match a decision taken here, one at a time. */

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <http_parser.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "basic/list.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "server/server-internal.h"

#define URL_MAX (16 * 1024)
#define AUTHZ_MAX (16 * 1024)

enum gate_state {
        GATE_HEAD,    /* reading a request head (kept here) */
        GATE_AUTH,    /* the head is complete: authorizing it, reading nothing more */
        GATE_BODY,    /* authorized: its body goes to evhttp as it comes */
        GATE_WAIT,    /* handed over: waiting for evhttp to take it (reading ahead only) */
        GATE_RAW,     /* taken over by a stream proxy: everything passes */
        GATE_REFUSED, /* a refusal was handed over: nothing more is read */
};

struct api_conn_table {
        struct api_listener *l;
        struct api_conn_limits limits;
        struct api_conn *conns; /* live connections (a list) */
        unsigned n;
        struct event *accept_check; /* counts the connections evhttp has just set up */
};

struct api_conn {
        struct api_conn_table *t; /* NULL once the server is gone */
        struct api_conn *prev, *next;
        struct bufferevent *bev;   /* the filter: what evhttp has */
        struct bufferevent *below; /* the socket or TLS bufferevent */
        SSL *ssl;                  /* the TLS session, or NULL */
        char source[INET6_ADDRSTRLEN];
        char key[API_SOURCE_KEY_MAX]; /* what the per-source cap counts (api_source_key) */
        bool checked;                 /* counted at accept */
        bool authorized;              /* a request was allowed on it: no longer counted against its address */
        bool handshaken;              /* TLS: the handshake is done (plain: true) */
        bool closing;                 /* over a limit or past a deadline: being closed */
        enum gate_state state;
        struct event *deadline; /* the handshake's or the current head's */
        struct event *kick;     /* runs the gate again from the loop */
        struct event *flush;    /* moves evhttp's output on to the socket (see on_output_added) */
        size_t out_copied;      /* the head of evhttp's output that is in the socket's output too (gate_out) */

        /* the request being read */
        http_parser parser;
        struct evbuffer *head; /* its bytes so far */
        bool head_done, message_done;
        char *url;
        size_t url_len;
        char *field;
        size_t field_len;
        char *authz; /* the first Authorization header's value */
        size_t authz_len;
        bool in_authz, authz_seen, too_long, field_long;
        bool auth_running;
        struct api_auth auth;
        struct api_decision decision; /* for evhttp's on_request */
        bool decision_ready;
};

static int conn_ssl_index = -1;

static void on_below_output(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *userdata);

static const char *port_name(enum api_port p) {
        return p == API_PORT_SECURE ? "--port" : p == API_PORT_READONLY ? "--read-only-port" : "--healthz-port";
}

/* ---------------------------------------------------------------- decisions */

void api_decision_done(struct api_decision *d) {
        if (!d)
                return;
        free(d->path);
        api_user_done(&d->user);
        free(d->message);
        *d = (struct api_decision) {};
}

/* ---------------------------------------------------------------- lifetime */

static void conn_unlink(struct api_conn *c) {
        struct api_conn_table *t = c->t;

        if (!t)
                return;
        DLIST_REMOVE(t->conns, c);
        t->n--;
        c->t = NULL;
}

/* the parts of a connection that belong to the loop and the server: they go with the server even when libevent
 * frees the bufferevent later */
static void conn_detach(struct api_conn *c) {
        conn_unlink(c);
        if (c->deadline) {
                event_free(c->deadline);
                c->deadline = NULL;
        }
        if (c->kick) {
                event_free(c->kick);
                c->kick = NULL;
        }
        if (c->flush) {
                event_free(c->flush);
                c->flush = NULL;
        }
        if (c->auth_running)
                api_auth_clear(&c->auth); /* cancels a review in flight */
        c->auth_running = false;
}

static void request_reset(struct api_conn *c) {
        http_parser_init(&c->parser, HTTP_REQUEST);
        c->parser.data = c;
        if (c->head)
                evbuffer_drain(c->head, evbuffer_get_length(c->head));
        c->head_done = c->message_done = false;
        free(c->url);
        c->url = NULL;
        c->url_len = 0;
        free(c->field);
        c->field = NULL;
        c->field_len = 0;
        free(c->authz);
        c->authz = NULL;
        c->authz_len = 0;
        c->in_authz = c->authz_seen = c->too_long = c->field_long = false;
}

/* the filter's free_context: evhttp freed the connection (maybe after the server) */
static void conn_free(void *userdata) {
        struct api_conn *c = userdata;

        if (!c)
                return;
        conn_detach(c);
        if (c->below)
                evbuffer_remove_cb(bufferevent_get_output(c->below), on_below_output, c);
        c->bev = NULL;
        api_auth_clear(&c->auth);
        free((char *) c->auth.path);
        api_decision_done(&c->decision);
        request_reset(c);
        if (c->head)
                evbuffer_free(c->head);
        if (c->ssl)
                SSL_set_ex_data(c->ssl, conn_ssl_index, NULL);
        free(c);
}

/* close the connection from the loop (a deadline, a limit): evhttp frees it with everything on it */
static void conn_close(struct api_conn *c, const char *why) {
        struct evhttp_connection *evcon = NULL;
        void *arg = NULL;

        if (c->closing)
                return;
        c->closing = true;
        log_v(3, "API %s: closing a connection from %s: %s", c->t ? port_name(c->t->l->port) : "", c->source, why);
        bufferevent_getcb(c->bev, NULL, NULL, NULL, &arg);
        evcon = arg;
        if (evcon) {
                evhttp_connection_free(evcon); /* frees c (the filter's free_context) */
                return;
        }
        /* evhttp is between two states: end the socket, it sees the end */
        bufferevent_disable(c->below, EV_READ | EV_WRITE);
        if (bufferevent_getfd(c->below) >= 0)
                (void) shutdown(bufferevent_getfd(c->below), SHUT_RDWR);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        struct api_conn *c = userdata;
        char why[64];

        if (!c->handshaken)
                snprintf(why, sizeof(why), "no TLS handshake within %d s", API_HANDSHAKE_TIMEOUT_SEC);
        else
                snprintf(why, sizeof(why), "no complete request head within %d s", API_HEAD_TIMEOUT_SEC);
        conn_close(c, why);
}

static void arm_deadline(struct api_conn *c, unsigned seconds) {
        if (c->deadline)
                evtimer_add_usec(c->deadline, (uint64_t) seconds * USEC_PER_SEC);
}

static void disarm_deadline(struct api_conn *c) {
        if (c->deadline)
                event_del(c->deadline);
}

/* ---------------------------------------------------------------- accept */

void api_source_key(const struct sockaddr *sa, socklen_t len, char ret[API_SOURCE_KEY_MAX]) {
        if (sa && sa->sa_family == AF_INET && len >= (socklen_t) sizeof(struct sockaddr_in)) {
                inet_ntop(AF_INET, &((const struct sockaddr_in *) (const void *) sa)->sin_addr, ret,
                          API_SOURCE_KEY_MAX);
                return;
        }
        if (sa && sa->sa_family == AF_INET6 && len >= (socklen_t) sizeof(struct sockaddr_in6)) {
                struct in6_addr a = ((const struct sockaddr_in6 *) (const void *) sa)->sin6_addr;
                char buf[INET6_ADDRSTRLEN];

                if (IN6_IS_ADDR_V4MAPPED(&a)) {
                        inet_ntop(AF_INET, &a.s6_addr[12], ret, API_SOURCE_KEY_MAX);
                        return;
                }
                memset(&a.s6_addr[8], 0, 8);
                inet_ntop(AF_INET6, &a, buf, sizeof(buf));
                snprintf(ret, API_SOURCE_KEY_MAX, "%s/64", buf);
                return;
        }
        snprintf(ret, API_SOURCE_KEY_MAX, "?");
}

enum api_admit api_conn_admit(const struct api_conn_view *open, size_t n, const char *key, bool secure,
                              const struct api_conn_limits *limits, size_t *ret_victim) {
        size_t from_source = 0;

        assert(open || n == 0);
        for (size_t i = 0; i < n; i++)
                if ((!secure || !open[i].authorized) && streq(open[i].key, key))
                        from_source++;
        if (from_source + 1 > limits->max_per_source)
                return API_REFUSE_SOURCE;
        if (n + 1 <= limits->max_total)
                return API_ADMIT;
        for (size_t i = 0; i < n; i++)
                if (!open[i].authorized) {
                        *ret_victim = i;
                        return API_ADMIT_EVICTING;
                }
        return API_REFUSE_FULL;
}

/* the connections counted (accepted before, not closing), oldest first: the list is newest first */
static size_t open_conns(struct api_conn_table *t, struct api_conn **conns, struct api_conn_view *views) {
        size_t n = 0;

        for (struct api_conn *c = t->conns; c; c = c->next)
                if (c->checked && !c->closing)
                        n++;
        {
                size_t k = n;
                for (struct api_conn *c = t->conns; c; c = c->next)
                        if (c->checked && !c->closing) {
                                k--;
                                conns[k] = c;
                                views[k] = (struct api_conn_view) { .key = c->key, .authorized = c->authorized };
                        }
        }
        return n;
}

/* evhttp has set up the connections accepted since the last run: count them, make room or close what is over
 * the limits */
static void on_accept_check(evutil_socket_t fd, short what, void *userdata) {
        struct api_conn_table *t = userdata;
        bool secure = t->l->port == API_PORT_SECURE;
        _cleanup_free_ struct api_conn **conns = NULL;
        _cleanup_free_ struct api_conn_view *views = NULL;

        conns = calloc(t->n + 1, sizeof(*conns));
        views = calloc(t->n + 1, sizeof(*views));
        for (struct api_conn *c = t->conns, *next; c; c = next) {
                struct sockaddr_storage sa;
                socklen_t len = sizeof(sa);
                int sfd = bufferevent_getfd(c->bev);
                size_t n, victim = 0;

                next = c->next;
                if (c->checked)
                        continue;
                if (sfd < 0 || getpeername(sfd, (struct sockaddr *) &sa, &len) < 0) {
                        snprintf(c->source, sizeof(c->source), "?");
                        api_source_key(NULL, 0, c->key);
                } else {
                        if (sa.ss_family == AF_INET6)
                                inet_ntop(AF_INET6, &((struct sockaddr_in6 *) &sa)->sin6_addr, c->source,
                                          sizeof(c->source));
                        else
                                inet_ntop(AF_INET, &((struct sockaddr_in *) &sa)->sin_addr, c->source,
                                          sizeof(c->source));
                        api_source_key((struct sockaddr *) &sa, len, c->key);
                }
                if (!conns || !views) {
                        c->checked = true;
                        conn_close(c, "out of memory");
                        continue;
                }
                n = open_conns(t, conns, views);
                c->checked = true;
                switch (api_conn_admit(views, n, c->key, secure, &t->limits, &victim)) {
                case API_ADMIT:
                        break;
                case API_ADMIT_EVICTING:
                        log_v(2,
                              "API %s: %u connections are open (at most %u): closing the oldest one not "
                              "authorized, from %s, for a new one from %s",
                              port_name(t->l->port), (unsigned) n, t->limits.max_total, conns[victim]->source,
                              c->source);
                        if (conns[victim] == next)
                                next = next->next;
                        conn_close(conns[victim], "too many connections: the oldest one not authorized");
                        break;
                case API_REFUSE_SOURCE:
                        log_v(2, "API %s: refusing a connection from %s: %u are open from %s", port_name(t->l->port),
                              c->source, t->limits.max_per_source, c->key);
                        conn_close(c, "too many connections from its address");
                        break;
                case API_REFUSE_FULL:
                        log_warning("API %s: refusing a connection from %s: %u authorized connections are open (at "
                                    "most %u)",
                                    port_name(t->l->port), c->source, (unsigned) n, t->limits.max_total);
                        conn_close(c, "too many connections");
                        break;
                }
        }
}

/* ---------------------------------------------------------------- parsing a head */

static int append(char **buf, size_t *len, const char *at, size_t n, size_t max) {
        char *b;

        if (*len + n > max)
                return -E2BIG;
        b = realloc(*buf, *len + n + 1);
        if (!b)
                return -ENOMEM;
        memcpy(b + *len, at, n);
        *len += n;
        b[*len] = '\0';
        *buf = b;
        return 0;
}

static int on_url(http_parser *p, const char *at, size_t n) {
        struct api_conn *c = p->data;

        if (append(&c->url, &c->url_len, at, n, URL_MAX) < 0)
                c->too_long = true;
        return 0;
}

/* header names and values come in pieces, alternating (an empty value too is a call); only the first
 * Authorization header's value is kept, as Go's Header.Get and evhttp_find_header read it */
static int on_header_field(http_parser *p, const char *at, size_t n) {
        struct api_conn *c = p->data;

        if (c->in_authz) {
                c->in_authz = false;
                c->authz_seen = true;
        }
        if (!c->field_long && append(&c->field, &c->field_len, at, n, 64) < 0)
                c->field_long = true; /* no header name this long is one we look for */
        return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n) {
        struct api_conn *c = p->data;

        if (c->field || c->field_long) {
                /* the name is complete */
                c->in_authz = !c->authz_seen && !c->field_long && c->field &&
                              strcasecmp(c->field, "Authorization") == 0;
                free(c->field);
                c->field = NULL;
                c->field_len = 0;
                c->field_long = false;
        }
        if (c->in_authz && append(&c->authz, &c->authz_len, at, n, AUTHZ_MAX) < 0)
                c->too_long = true;
        return 0;
}

static int on_headers_complete(http_parser *p) {
        struct api_conn *c = p->data;

        if (c->in_authz) {
                c->in_authz = false;
                c->authz_seen = true;
        }
        c->head_done = true;
        /* a request has a body when chunked or with a Content-Length over 0 (an upgrade's next bytes are another
         * protocol's): without one, the message ends here (the parser, paused, would only say so at the next
         * byte) */
        if (p->upgrade || !((p->flags & F_CHUNKED) || (p->content_length != ULLONG_MAX && p->content_length > 0)))
                c->message_done = true;
        http_parser_pause(p, 1);
        return 0;
}

static int on_message_complete(http_parser *p) {
        struct api_conn *c = p->data;

        c->message_done = true;
        http_parser_pause(p, 1);
        return 0;
}

static const http_parser_settings gate_settings = {
        .on_url = on_url,
        .on_header_field = on_header_field,
        .on_header_value = on_header_value,
        .on_headers_complete = on_headers_complete,
        .on_message_complete = on_message_complete,
};

static bool method_of(const http_parser *p, enum evhttp_cmd_type *ret) {
        switch (p->method) {
        case HTTP_GET:
                *ret = EVHTTP_REQ_GET;
                return true;
        case HTTP_HEAD:
                *ret = EVHTTP_REQ_HEAD;
                return true;
        case HTTP_POST:
                *ret = EVHTTP_REQ_POST;
                return true;
        case HTTP_PUT:
                *ret = EVHTTP_REQ_PUT;
                return true;
        case HTTP_DELETE:
                *ret = EVHTTP_REQ_DELETE;
                return true;
        case HTTP_PATCH:
                *ret = EVHTTP_REQ_PATCH;
                return true;
        case HTTP_OPTIONS:
                *ret = EVHTTP_REQ_OPTIONS;
                return true;
        default:
                return false;
        }
}

/* the raw path of the request target (origin or absolute form), as evhttp_uri_get_path() gives it */
static char *path_of(const char *url, size_t len) {
        struct http_parser_url u;

        http_parser_url_init(&u);
        if (!url || http_parser_parse_url(url, len, 0, &u) != 0 || !(u.field_set & (1 << UF_PATH)))
                return NULL;
        return strndup(url + u.field_data[UF_PATH].off, u.field_data[UF_PATH].len);
}

/* ---------------------------------------------------------------- handing requests to evhttp */

static void gate_pump(struct api_conn *c, struct evbuffer *src, struct evbuffer *dst);

/* run the gate again from the loop, and let evhttp see what it handed over */
static void on_kick(evutil_socket_t fd, short what, void *userdata) {
        struct api_conn *c = userdata;
        struct evbuffer *dst = bufferevent_get_input(c->bev);
        size_t before = evbuffer_get_length(dst);

        gate_pump(c, bufferevent_get_input(c->below), dst);
        /* only while evhttp reads: in any other state its read callback aborts the process; when it reads again
         * (evhttp_start_read_) it takes what is waiting by itself */
        if (evbuffer_get_length(dst) > before && (bufferevent_get_enabled(c->bev) & EV_READ))
                bufferevent_trigger(c->bev, EV_READ, BEV_TRIG_DEFER_CALLBACKS);
}

static void kick(struct api_conn *c) {
        if (c->kick)
                evtimer_add_usec(c->kick, 0);
}

/* a refused request: evhttp gets a bodiless stand-in, whose decision is the answer; nothing more is read */
static void refuse(struct api_conn *c, struct evbuffer *dst, enum evhttp_cmd_type method, int status,
                   const char *message) {
        api_decision_done(&c->decision);
        c->decision = (struct api_decision) {
                .method = method == EVHTTP_REQ_HEAD ? EVHTTP_REQ_HEAD : EVHTTP_REQ_GET,
                .path = strdup("/"),
                .status = status,
                .message = strdup(strempty(message)),
        };
        c->decision_ready = true;
        evbuffer_add_printf(dst, "%s / HTTP/1.1\r\nHost: kubelet\r\nConnection: close\r\n\r\n",
                            method == EVHTTP_REQ_HEAD ? "HEAD" : "GET");
        c->state = GATE_REFUSED;
        disarm_deadline(c);
        /* the socket is not read any more: a body or anything after it stays with the client */
        bufferevent_disable(c->below, EV_READ);
}

static void allowed(struct api_conn *c, struct evbuffer *dst) {
        api_decision_done(&c->decision);
        c->decision = (struct api_decision) {
                .method = c->auth.method,
                .path = strdup(c->auth.path),
                .allowed = true,
                .user = c->auth.user,
        };
        c->auth.user = (struct api_user) {}; /* moved */
        c->decision_ready = true;
        if (!c->authorized && c->t && c->t->l->port == API_PORT_SECURE)
                log_v(5, "API: a connection from %s is authorized", c->source);
        c->authorized = true;
        evbuffer_add_buffer(dst, c->head);
        c->state = c->message_done ? GATE_WAIT : GATE_BODY;
}

static void on_auth_done(struct api_auth *a, void *userdata) {
        struct api_conn *c = userdata;

        c->auth_running = false;
        if (c->state == GATE_AUTH)
                kick(c); /* the pump settles it */
}

/* the head is complete: authenticate and authorize it (maybe later, through the API server) */
static void decide(struct api_conn *c, struct evbuffer *dst) {
        enum evhttp_cmd_type method;
        _cleanup_free_ char *path = NULL;
        int k;

        disarm_deadline(c);
        if (c->too_long) {
                refuse(c, dst, EVHTTP_REQ_GET, 431, "Request Header Fields Too Large\n");
                return;
        }
        if (!method_of(&c->parser, &method)) {
                refuse(c, dst, EVHTTP_REQ_GET, 405, "Method Not Allowed\n");
                return;
        }
        if (c->parser.content_length != ULLONG_MAX && c->parser.content_length > API_MAX_BODY_SIZE) {
                refuse(c, dst, method, 413, "Request Entity Too Large\n");
                return;
        }
        path = path_of(c->url, c->url_len);
        if (!path || path[0] != '/') {
                refuse(c, dst, method, 400, "400 Bad Request: invalid request path\n");
                return;
        }
        api_auth_clear(&c->auth);
        free((char *) c->auth.path); /* the conn owns the path it lends to the auth */
        c->auth = (struct api_auth) {
                .s = c->t->l->s,
                .method = method,
                .path = TAKE_PTR(path),
                .done = on_auth_done,
                .userdata = c,
        };
        if (c->t->l->port != API_PORT_SECURE) {
                allowed(c, dst); /* the read-only and healthz ports have no authentication */
                return;
        }
        c->state = GATE_AUTH;
        c->auth_running = true;
        k = api_auth_start(&c->auth, c->ssl, c->authz);
        if (k == -EINPROGRESS)
                return; /* on_auth_done */
        c->auth_running = false;
        if (k < 0)
                refuse(c, dst, method, c->auth.status, c->auth.message);
        else
                allowed(c, dst);
}

/* Move what may go from src (the socket's input) to dst (evhttp's), as the state allows. */
static void gate_pump(struct api_conn *c, struct evbuffer *src, struct evbuffer *dst) {
        for (;;) {
                struct evbuffer_iovec v;
                size_t n;
                enum http_errno e;

                switch (c->state) {
                case GATE_RAW:
                        evbuffer_add_buffer(dst, src);
                        return;
                case GATE_REFUSED:
                case GATE_WAIT:
                        return; /* held (the socket's reading stops at API_MAX_HELD) */
                case GATE_AUTH:
                        if (c->auth_running || !c->t)
                                return;
                        /* decided: the answer of the review */
                        if (c->auth.status != 0)
                                refuse(c, dst, c->auth.method, c->auth.status, c->auth.message);
                        else
                                allowed(c, dst);
                        continue;
                case GATE_HEAD:
                case GATE_BODY:
                        break;
                }
                if (c->state == GATE_BODY && c->message_done) {
                        c->state = GATE_WAIT;
                        continue;
                }
                if (evbuffer_get_length(src) == 0 || evbuffer_peek(src, -1, NULL, &v, 1) < 1)
                        return;
                if (c->state == GATE_HEAD && evbuffer_get_length(c->head) == 0 && c->handshaken)
                        arm_deadline(c, API_HEAD_TIMEOUT_SEC); /* the first byte of a head */
                n = http_parser_execute(&c->parser, &gate_settings, v.iov_base, v.iov_len);
                e = HTTP_PARSER_ERRNO(&c->parser);
                if (e == HPE_PAUSED && c->state == GATE_HEAD && c->head_done && n < v.iov_len) {
                        /* paused in on_headers_complete, the parser has not consumed the head's last byte (the LF
                         * of the empty line): it does so in its next step, which reads no body byte (and ends a
                         * bodiless message), so that the head handed over is complete */
                        http_parser_pause(&c->parser, 0);
                        n += http_parser_execute(&c->parser, &gate_settings, (const char *) v.iov_base + n, 1);
                        e = HTTP_PARSER_ERRNO(&c->parser);
                }
                if (e != HPE_OK && e != HPE_PAUSED) {
                        if (c->state == GATE_HEAD) {
                                log_v(2, "API: a request from %s is not HTTP: %s", c->source,
                                      http_errno_description(e));
                                evbuffer_drain(src, evbuffer_get_length(src));
                                refuse(c, dst, EVHTTP_REQ_GET, e == HPE_HEADER_OVERFLOW ? 431 : 400,
                                       e == HPE_HEADER_OVERFLOW ? "Request Header Fields Too Large\n"
                                                                : "400 Bad Request\n");
                        } else {
                                /* a body that does not frame: evhttp has the head, so close */
                                log_v(2, "API: a request body from %s is not HTTP: %s", c->source,
                                      http_errno_description(e));
                                c->state = GATE_REFUSED;
                                bufferevent_disable(c->below, EV_READ);
                                conn_close(c, "malformed request body");
                        }
                        return;
                }
                if (c->state == GATE_HEAD)
                        evbuffer_remove_buffer(src, c->head, n);
                else
                        evbuffer_remove_buffer(src, dst, n);
                if (e == HPE_PAUSED)
                        http_parser_pause(&c->parser, 0);
                if (c->state == GATE_HEAD && c->head_done) {
                        decide(c, dst);
                        continue;
                }
                if (n == 0 && e != HPE_PAUSED)
                        return; /* nothing consumed: wait for more */
        }
}

static enum bufferevent_filter_result gate_filter(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
                                                  enum bufferevent_flush_mode mode, void *userdata) {
        struct api_conn *c = userdata;
        size_t before = evbuffer_get_length(dst);

        if (!c->t) {
                evbuffer_drain(src, evbuffer_get_length(src)); /* the server is gone */
                return BEV_NEED_MORE;
        }
        gate_pump(c, src, dst);
        /* BEV_OK only with something handed over: libevent calls again while it says so and src is not empty */
        return evbuffer_get_length(dst) > before ? BEV_OK : BEV_NEED_MORE;
}

/* ---------------------------------------------------------------- what the server asks */

static struct api_conn *find(struct api_server *s, struct evhttp_connection *evcon) {
        struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;

        if (!bev)
                return NULL;
        for (size_t i = 0; i < _API_PORT_MAX; i++)
                for (struct api_conn *c = s->listeners[i].conns ? s->listeners[i].conns->conns : NULL; c; c = c->next)
                        if (c->bev == bev)
                                return c;
        return NULL;
}

int api_conn_take_decision(struct api_server *s, struct evhttp_connection *evcon, struct api_decision *ret) {
        struct api_conn *c = find(s, evcon);

        if (!c || !c->decision_ready || (c->state != GATE_WAIT && c->state != GATE_REFUSED))
                return -ENOENT; /* evhttp framed the request otherwise than the gate did: not served */
        *ret = c->decision;
        c->decision = (struct api_decision) {};
        c->decision_ready = false;
        if (c->state == GATE_WAIT) {
                /* evhttp has the request: read the next one */
                request_reset(c);
                c->state = GATE_HEAD;
                kick(c);
        }
        return 0;
}

void api_conn_set_raw(struct api_server *s, struct evhttp_connection *evcon) {
        struct api_conn *c = find(s, evcon);

        if (!c)
                return;
        disarm_deadline(c);
        c->state = GATE_RAW;
        bufferevent_setwatermark(c->below, EV_READ, 0, 0);
        kick(c);
}

/* ---------------------------------------------------------------- the way out */

/* libevent's filter passes its output on when bytes are added while writing is enabled, or when the socket's
 * output drains; evhttp adds a reply first and enables writing after (and enabling a filter's writing moves
 * nothing). So every addition schedules a flush, which runs once evhttp has enabled writing. */
static void on_flush(evutil_socket_t fd, short what, void *userdata) {
        struct api_conn *c = userdata;

        if (evbuffer_get_length(bufferevent_get_output(c->bev)) > 0 && (bufferevent_get_enabled(c->bev) & EV_WRITE))
                (void) bufferevent_flush(c->bev, EV_WRITE, BEV_NORMAL);
}

static void on_output_added(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *userdata) {
        struct api_conn *c = userdata;

        if (info->n_added > 0 && c->flush)
                evtimer_add_usec(c->flush, 0);
}

/* evhttp takes its output being empty for the answer being written, and then may shut the socket down and free
 * the connection (Connection: close, a refusal): what was in the socket's (or TLS) output then would be lost. So
 * the filter copies evhttp's output to the socket's and removes it from evhttp's only once the socket's has
 * written it (on_below_output). */
static enum bufferevent_filter_result gate_out(struct evbuffer *src, struct evbuffer *dst, ev_ssize_t limit,
                                               enum bufferevent_flush_mode mode, void *userdata) {
        struct api_conn *c = userdata;
        size_t len = evbuffer_get_length(src), n, left;
        struct evbuffer_ptr pos;
        struct evbuffer_iovec v[8];
        int k;

        if (c->out_copied >= len)
                return BEV_NEED_MORE;
        n = len - c->out_copied;
        if (limit >= 0 && (size_t) limit < n)
                n = (size_t) limit;
        if (n == 0 || evbuffer_ptr_set(src, &pos, c->out_copied, EVBUFFER_PTR_SET) < 0)
                return BEV_NEED_MORE;
        k = evbuffer_peek(src, (ev_ssize_t) n, &pos, v, ELEMENTSOF(v));
        left = n;
        for (int i = 0; i < k && i < (int) ELEMENTSOF(v) && left > 0; i++) {
                size_t m = MIN(v[i].iov_len, left);

                if (evbuffer_add(dst, v[i].iov_base, m) < 0)
                        return BEV_ERROR;
                c->out_copied += m;
                left -= m;
        }
        return left < n ? BEV_OK : BEV_NEED_MORE;
}

static void on_below_output(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *userdata) {
        struct api_conn *c = userdata;
        struct evbuffer *out;
        size_t n;

        if (info->n_deleted == 0 || !c->bev)
                return;
        out = bufferevent_get_output(c->bev);
        n = MIN(info->n_deleted, c->out_copied);
        evbuffer_drain(out, n);
        c->out_copied -= n;
        if (n > 0 && evbuffer_get_length(out) == 0)
                bufferevent_trigger(c->bev, EV_WRITE, BEV_TRIG_DEFER_CALLBACKS); /* evhttp: all of it is written */
}

/* ---------------------------------------------------------------- new connections */

void api_conn_tls_info(const SSL *ssl, int where, int ret) {
        struct api_conn *c;

        if (!(where & SSL_CB_HANDSHAKE_DONE) || conn_ssl_index < 0)
                return;
        c = SSL_get_ex_data(ssl, conn_ssl_index);
        if (!c || c->handshaken)
                return;
        c->handshaken = true;
        arm_deadline(c, API_HEAD_TIMEOUT_SEC); /* the first request's head, from now */
}

struct bufferevent *api_conn_bevcb(struct event_base *base, void *userdata) {
        struct api_listener *l = userdata;
        struct api_conn_table *t = l->conns;
        struct api_conn *c;
        SSL *ssl = NULL;

        if (conn_ssl_index < 0) {
                conn_ssl_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
                http_parser_set_max_header_size(API_MAX_HEADERS_SIZE);
        }
        c = calloc(1, sizeof(*c));
        if (!c)
                return NULL; /* on_request refuses requests of connections it does not know */
        c->head = evbuffer_new();
        c->deadline = evtimer_new(base, on_deadline, c);
        c->kick = evtimer_new(base, on_kick, c);
        c->flush = evtimer_new(base, on_flush, c);
        request_reset(c);
        if (l->port == API_PORT_SECURE) {
                ssl = SSL_new(l->s->ssl_ctx);
                if (ssl) {
                        SSL_set_ex_data(ssl, conn_ssl_index, c);
                        c->below = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                                  BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
                        if (!c->below)
                                SSL_free(ssl);
                        else
                                c->ssl = ssl;
                }
        } else {
                c->handshaken = true;
                c->below = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
        }
        if (c->below)
                c->bev = bufferevent_filter_new(c->below, gate_filter, gate_out,
                                                BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS, conn_free, c);
        if (!c->head || !c->deadline || !c->kick || !c->flush || !c->bev ||
            !evbuffer_add_cb(bufferevent_get_output(c->bev), on_output_added, c) ||
            !evbuffer_add_cb(bufferevent_get_output(c->below), on_below_output, c)) {
                if (c->bev)
                        bufferevent_free(c->bev); /* frees c too */
                else {
                        struct bufferevent *below = c->below;

                        c->below = NULL;
                        conn_free(c);
                        if (below)
                                bufferevent_free(below);
                }
                return NULL;
        }
        /* the read-ahead: the socket is not read beyond this while a request waits for evhttp */
        bufferevent_setwatermark(c->below, EV_READ, 0, API_MAX_HELD);
        /* and the filter moves evhttp's output on only while the socket's holds less than this: evhttp (and the
         * log streams' back-pressure) see a reply written when it has (nearly) left */
        bufferevent_setwatermark(c->below, EV_WRITE, 0, API_MAX_HELD);
        c->t = t;
        DLIST_PREPEND(t->conns, c);
        t->n++;
        /* a TLS handshake, or for plain HTTP the first head, within its deadline from now */
        arm_deadline(c, c->handshaken ? API_HEAD_TIMEOUT_SEC : API_HANDSHAKE_TIMEOUT_SEC);
        /* evhttp sets the socket up after this returns: count it then */
        evtimer_add_usec(t->accept_check, 0);
        return c->bev;
}

int api_conn_table_new(struct api_listener *l, const struct api_conn_limits *limits, struct api_conn_table **ret) {
        struct api_conn_table *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->l = l;
        t->limits = *limits;
        t->accept_check = evtimer_new(l->s->base, on_accept_check, t);
        if (!t->accept_check) {
                free(t);
                return -ENOMEM;
        }
        *ret = t;
        return 0;
}

struct api_conn_table *api_conn_table_free(struct api_conn_table *t) {
        if (!t)
                return NULL;
        while (t->conns)
                conn_detach(t->conns);
        event_free(t->accept_check);
        free(t);
        return NULL;
}
