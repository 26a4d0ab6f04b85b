/* SPDX-License-Identifier: Apache-2.0 */
/* A small HTTP/1.1 GET client on the loop: see client.h. */
#include "http/client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/timer.h"
#include "http/http_response.h"

struct http_get {
        struct event_base *base;
        struct evdns_base *dns;
        http_get_done_t done;
        void *userdata;

        char **headers;
        char *user_agent;
        uint64_t connect_timeout_usec;
        size_t max_body;
        unsigned redirects_left;

        /* the current URL */
        char *url;
        bool https;
        char *host; /* without brackets */
        int port;
        char *target; /* path and query */

        struct evdns_getaddrinfo_request *dns_req;
        int fd;              /* connecting for TLS, before the bufferevent takes it; -1 */
        struct event *fd_ev; /* its writability */
        struct bufferevent *bev;
        SSL_CTX *ssl_ctx;
        struct event *deadline, *connect_timer, *start_ev, *done_ev;
        struct http_resp *resp;

        char *body;
        size_t body_len, body_alloc;
        bool too_large, finished;

        int r;
        int status;
        char *error;
};

/* ---- URLs ---- */

static int parse_url(const char *url, bool *ret_https, char **ret_host, int *ret_port, char **ret_target) {
        const char *p, *auth_end, *host_b, *host_e, *port_s = NULL;
        _cleanup_free_ char *host = NULL, *target = NULL;
        bool https;
        long port;

        if (strncasecmp(url, "http://", 7) == 0) {
                https = false;
                p = url + 7;
        } else if (strncasecmp(url, "https://", 8) == 0) {
                https = true;
                p = url + 8;
        } else
                return -EPROTONOSUPPORT;
        auth_end = p + strcspn(p, "/?#");
        if (memchr(p, '@', (size_t) (auth_end - p)))
                return -EINVAL; /* user info: not supported */
        if (*p == '[') {
                host_b = p + 1;
                host_e = memchr(host_b, ']', (size_t) (auth_end - host_b));
                if (!host_e)
                        return -EINVAL;
                if (host_e + 1 < auth_end) {
                        if (host_e[1] != ':')
                                return -EINVAL;
                        port_s = host_e + 2;
                }
        } else {
                host_b = p;
                host_e = memchr(p, ':', (size_t) (auth_end - p));
                if (host_e)
                        port_s = host_e + 1;
                else
                        host_e = auth_end;
        }
        if (host_e == host_b)
                return -EINVAL;
        port = https ? 443 : 80;
        if (port_s && port_s < auth_end) {
                port = 0;
                for (const char *q = port_s; q < auth_end; q++) {
                        if (*q < '0' || *q > '9' || port > 65535)
                                return -EINVAL;
                        port = port * 10 + (*q - '0');
                }
                if (port < 1 || port > 65535)
                        return -EINVAL;
        }
        host = strndup(host_b, (size_t) (host_e - host_b));
        if (!host)
                return -ENOMEM;
        for (const unsigned char *q = (const unsigned char *) host; *q; q++)
                if (*q <= 0x20 || *q >= 0x7f)
                        return -EINVAL;
        {
                const char *t = auth_end;
                size_t n = strcspn(t, "#");

                if (n == 0)
                        target = strdup("/");
                else if (*t == '?') {
                        if (asprintf(&target, "/%.*s", (int) n, t) < 0)
                                target = NULL;
                } else
                        target = strndup(t, n);
                if (!target)
                        return -ENOMEM;
                for (const unsigned char *q = (const unsigned char *) target; *q; q++)
                        if (*q <= 0x20 || *q == 0x7f)
                                return -EINVAL;
        }
        *ret_https = https;
        *ret_host = TAKE_PTR(host);
        *ret_port = (int) port;
        *ret_target = TAKE_PTR(target);
        return 0;
}

/* RFC 3986's remove_dot_segments on the path of target (up to its query), in place */
static void remove_dot_segments(char *target) {
        size_t end = strcspn(target, "?"), o = 0, i = 0;
        char *out = target;

        while (i < end) {
                const char *in = target + i;
                size_t left = end - i;

                if (left >= 3 && strncmp(in, "/./", 3) == 0)
                        i += 2;
                else if (left == 2 && strncmp(in, "/.", 2) == 0) {
                        target[i + 1] = '/';
                        i += 1;
                } else if ((left >= 4 && strncmp(in, "/../", 4) == 0) || (left == 3 && strncmp(in, "/..", 3) == 0)) {
                        if (left == 3) {
                                target[i + 2] = '/';
                                i += 2;
                        } else
                                i += 3;
                        while (o > 0 && out[o - 1] != '/')
                                o--;
                        if (o > 0)
                                o--;
                } else {
                        /* one segment: "/name" */
                        size_t n = 1 + strcspn(in + 1, "/?");
                        if (n > left)
                                n = left;
                        memmove(out + o, in, n);
                        o += n;
                        i += n;
                }
        }
        memmove(out + o, target + end, strlen(target + end) + 1);
        if (o == 0 && out[0] != '/') {
                memmove(out + 1, out, strlen(out) + 1);
                out[0] = '/';
        }
}

/* A Location against the current URL: absolute, scheme-relative, absolute path, or relative path. */
static char *resolve_location(const struct http_get *g, const char *loc) {
        const char *scheme = g->https ? "https" : "http";
        bool v6 = strchr(g->host, ':');
        char *s = NULL;
        int k;

        if (strncasecmp(loc, "http://", 7) == 0 || strncasecmp(loc, "https://", 8) == 0)
                return strdup(loc);
        if (strstr(loc, "://"))
                return NULL; /* another scheme: not followed */
        if (loc[0] == '/' && loc[1] == '/')
                k = asprintf(&s, "%s:%s", scheme, loc);
        else if (loc[0] == '/')
                k = asprintf(&s, "%s://%s%s%s:%d%s", scheme, v6 ? "[" : "", g->host, v6 ? "]" : "", g->port, loc);
        else {
                size_t dir = strcspn(g->target, "?");
                while (dir > 0 && g->target[dir - 1] != '/')
                        dir--;
                k = asprintf(&s, "%s://%s%s%s:%d%.*s%s", scheme, v6 ? "[" : "", g->host, v6 ? "]" : "", g->port,
                             (int) dir, g->target, loc);
        }
        return k < 0 ? NULL : s;
}

/* ---- finishing ---- */

static void close_connection(struct http_get *g) {
        if (g->dns_req) {
                evdns_getaddrinfo_cancel(g->dns_req); /* runs on_resolved with EVUTIL_EAI_CANCEL */
                g->dns_req = NULL;
        }
        if (g->bev) {
                bufferevent_free(g->bev);
                g->bev = NULL;
        }
        if (g->fd_ev) {
                event_free(g->fd_ev);
                g->fd_ev = NULL;
        }
        if (g->fd >= 0) {
                close(g->fd);
                g->fd = -1;
        }
        if (g->connect_timer)
                event_del(g->connect_timer);
}

static void finish(struct http_get *g, int r, const char *fmt, ...) _printf_(3, 4);
static void finish(struct http_get *g, int r, const char *fmt, ...) {
        if (g->finished)
                return;
        g->finished = true;
        g->r = r;
        if (fmt) {
                va_list ap;
                va_start(ap, fmt);
                if (vasprintf(&g->error, fmt, ap) < 0)
                        g->error = NULL;
                va_end(ap);
        }
        close_connection(g);
        if (g->deadline)
                event_del(g->deadline);
        evtimer_add_usec(g->done_ev, 0);
}

static void on_done(evutil_socket_t fd, short what, void *userdata) {
        struct http_get *g = userdata;
        struct http_get_result res = {
                .r = g->r,
                .status = g->status,
                .error = g->error ? g->error : (g->r < 0 ? strerror(-g->r) : ""),
                .body = g->body ? g->body : "",
                .body_len = g->body_len,
                .too_large = g->too_large,
        };
        http_get_done_t done = g->done;
        void *ud = g->userdata;

        g->done = NULL;
        done(&res, ud);
        http_get_cancel(g);
}

void http_get_cancel(struct http_get *g) {
        if (!g)
                return;
        close_connection(g);
        if (g->deadline)
                event_free(g->deadline);
        if (g->connect_timer)
                event_free(g->connect_timer);
        if (g->done_ev)
                event_free(g->done_ev);
        if (g->start_ev)
                event_free(g->start_ev);
        if (g->ssl_ctx)
                SSL_CTX_free(g->ssl_ctx);
        strv_free(g->headers);
        free(g->user_agent);
        free(g->url);
        free(g->host);
        free(g->target);
        free(g->resp);
        free(g->body);
        free(g->error);
        free(g);
}

/* ---- the response ---- */

static void on_body(const char *data, size_t n, void *userdata) {
        struct http_get *g = userdata;

        if (g->too_large)
                return;
        if (n > g->max_body - g->body_len) {
                g->too_large = true;
                return;
        }
        if (g->body_len + n + 1 > g->body_alloc) {
                size_t na = MAX(MAX(g->body_alloc * 2, g->body_len + n + 1), (size_t) 4096);
                char *nb;

                na = MIN(na, g->max_body + 1);
                nb = realloc(g->body, na);
                if (!nb) {
                        finish(g, -ENOMEM, NULL);
                        return;
                }
                g->body = nb;
                g->body_alloc = na;
        }
        memcpy(g->body + g->body_len, data, n);
        g->body_len += n;
        g->body[g->body_len] = '\0';
}

static int start_request(struct http_get *g);

static bool is_redirect(int status) {
        return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/* The final response's headers are in: follow a redirect (false: the connection is gone) or read the body. */
static bool on_headers(struct http_get *g) {
        g->status = g->resp->status;
        if (is_redirect(g->status) && g->resp->has_location) {
                _cleanup_free_ char *next = NULL;
                int k;

                if (g->redirects_left == 0) {
                        finish(g, -ELOOP, "stopped after too many redirects");
                        return false;
                }
                next = resolve_location(g, g->resp->location);
                if (!next) {
                        finish(g, -EINVAL, "cannot follow the redirect to \"%s\"", g->resp->location);
                        return false;
                }
                g->redirects_left--;
                close_connection(g);
                free_and_replace(g->url, next);
                free(g->host);
                free(g->target);
                g->host = g->target = NULL;
                k = parse_url(g->url, &g->https, &g->host, &g->port, &g->target);
                if (k < 0) {
                        finish(g, k, "cannot follow the redirect to \"%s\"", g->url);
                        return false;
                }
                remove_dot_segments(g->target);
                g->body_len = 0;
                g->too_large = false;
                k = start_request(g);
                if (k < 0)
                        finish(g, k, "cannot follow the redirect to %s: %s", g->url, strerror(-k));
                return false;
        }
        g->resp->max_body = (uint64_t) g->max_body + 1; /* one byte more tells a body that is too long */
        g->resp->on_body = on_body;
        g->resp->body_userdata = g;
        return true;
}

static void on_complete(struct http_get *g) {
        if (g->too_large || g->resp->truncated)
                finish(g, -EFBIG, "response body is larger than %zu bytes", g->max_body);
        else
                finish(g, 0, NULL);
}

static void on_read(struct bufferevent *bev, void *userdata) {
        struct http_get *g = userdata;
        struct evbuffer *in = bufferevent_get_input(bev);
        size_t n;

        while (!g->finished && g->bev == bev && (n = evbuffer_get_contiguous_space(in)) > 0) {
                const char *p = (const char *) evbuffer_pullup(in, (ev_ssize_t) n);
                size_t used = 0;
                bool headers_before = http_resp_headers_done(g->resp);
                int k = http_resp_feed(g->resp, p, n, &used);

                evbuffer_drain(in, used);
                if (k < 0) {
                        finish(g, -EBADMSG, "malformed HTTP response: %s", g->resp->error);
                        return;
                }
                if (k == HTTP_RESP_HEADERS || (!headers_before && http_resp_headers_done(g->resp))) {
                        if (!on_headers(g))
                                return;
                        if (k == HTTP_RESP_HEADERS) {
                                k = http_resp_feed(g->resp, "", 0, &used); /* complete already (no body)? */
                                if (k != HTTP_RESP_DONE)
                                        continue;
                        }
                }
                if (k == HTTP_RESP_DONE) {
                        on_complete(g);
                        return;
                }
        }
}

static void on_event(struct bufferevent *bev, short what, void *userdata) {
        struct http_get *g = userdata;

        if (what & BEV_EVENT_CONNECTED) {
                event_del(g->connect_timer); /* TCP up (plain) or TLS handshake done */
                return;
        }
        if (what & BEV_EVENT_EOF) {
                int k;

                on_read(bev, g);
                if (g->finished || g->bev != bev)
                        return;
                k = http_resp_eof(g->resp);
                if (k < 0) {
                        finish(g, -ECONNRESET, "%s: %s", g->url, g->resp->error);
                        return;
                }
                if (!http_resp_headers_done(g->resp) || g->resp->status == 0) {
                        finish(g, -ECONNRESET, "%s: unexpected EOF", g->url);
                        return;
                }
                if (g->status == 0 && !on_headers(g))
                        return;
                on_complete(g);
                return;
        }
        if (what & BEV_EVENT_ERROR) {
                unsigned long e = g->https ? bufferevent_get_openssl_error(bev) : 0;
                int err = EVUTIL_SOCKET_ERROR();

                if (e != 0) {
                        const char *reason = ERR_reason_error_string(e);
                        finish(g, -EPROTO, "%s: TLS: %s", g->url, reason ? reason : "error");
                } else
                        finish(g, -(err > 0 ? err : ECONNRESET), "%s: %s", g->url,
                               strerror(err > 0 ? err : ECONNRESET));
        }
}

/* ---- connecting ---- */

static int build_request(struct http_get *g) {
        struct evbuffer *out = bufferevent_get_output(g->bev);
        bool v6 = strchr(g->host, ':');
        int k;

        k = evbuffer_add_printf(out, "GET %s HTTP/1.1\r\nHost: %s%s%s", g->target, v6 ? "[" : "", g->host,
                                v6 ? "]" : "");
        if (k >= 0 && ((g->https && g->port != 443) || (!g->https && g->port != 80)))
                k = evbuffer_add_printf(out, ":%d", g->port);
        if (k >= 0 && g->user_agent)
                k = evbuffer_add_printf(out, "\r\nUser-Agent: %s", g->user_agent);
        for (char **h = g->headers; h && *h && k >= 0; h++)
                k = evbuffer_add_printf(out, "\r\n%s", *h);
        if (k >= 0)
                k = evbuffer_add_printf(out, "\r\nAccept: */*\r\nConnection: close\r\n\r\n");
        return k < 0 ? -ENOMEM : 0;
}

static SSL *new_ssl(struct http_get *g) {
        struct in6_addr a6;
        struct in_addr a4;
        bool ip = inet_pton(AF_INET, g->host, &a4) == 1 || inet_pton(AF_INET6, g->host, &a6) == 1;
        SSL *ssl;

        if (!g->ssl_ctx) {
                g->ssl_ctx = SSL_CTX_new(TLS_client_method());
                if (!g->ssl_ctx)
                        return NULL;
                SSL_CTX_set_min_proto_version(g->ssl_ctx, TLS1_2_VERSION);
                SSL_CTX_set_default_verify_paths(g->ssl_ctx);
                SSL_CTX_set_verify(g->ssl_ctx, SSL_VERIFY_PEER, NULL);
        }
        ssl = SSL_new(g->ssl_ctx);
        if (!ssl)
                return NULL;
        if (ip) {
                if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), g->host) != 1) {
                        SSL_free(ssl);
                        return NULL;
                }
        } else if (SSL_set_tlsext_host_name(ssl, g->host) != 1 || SSL_set1_host(ssl, g->host) != 1) {
                SSL_free(ssl);
                return NULL;
        }
        return ssl;
}

static int setup_bev(struct http_get *g) {
        bufferevent_setcb(g->bev, on_read, NULL, on_event, g);
        if (build_request(g) < 0 || bufferevent_enable(g->bev, EV_READ | EV_WRITE) < 0)
                return -ENOMEM;
        return 0;
}

/* TLS: the TCP connection is up (or failed): start the handshake on a TLS bufferevent */
static void on_tcp_connected(evutil_socket_t fd, short what, void *userdata) {
        struct http_get *g = userdata;
        socklen_t sl = sizeof(int);
        int err = 0;
        SSL *ssl;

        event_free(g->fd_ev);
        g->fd_ev = NULL;
        if (getsockopt(g->fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
                err = errno;
        if (err != 0) {
                finish(g, -err, "%s: connect: %s", g->url, strerror(err));
                return;
        }
        ssl = new_ssl(g);
        if (!ssl) {
                finish(g, -ENOMEM, "%s: cannot set up TLS", g->url);
                return;
        }
        g->bev = bufferevent_openssl_socket_new(g->base, g->fd, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
        if (!g->bev) {
                SSL_free(ssl);
                finish(g, -ENOMEM, NULL);
                return;
        }
        g->fd = -1; /* the bufferevent's now */
        bufferevent_openssl_set_allow_dirty_shutdown(g->bev, 1);
        if (setup_bev(g) < 0)
                finish(g, -ENOMEM, NULL);
}

static void connect_addr(struct http_get *g, struct sockaddr *sa, socklen_t len) {
        int fd;

        fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
                finish(g, -errno, "%s: socket: %s", g->url, strerror(errno));
                return;
        }
        if (g->connect_timeout_usec > 0)
                evtimer_add_usec(g->connect_timer, g->connect_timeout_usec);
        if (g->https) {
                g->fd = fd;
                if (connect(fd, sa, len) < 0 && errno != EINPROGRESS) {
                        finish(g, -errno, "%s: connect: %s", g->url, strerror(errno));
                        return;
                }
                g->fd_ev = event_new(g->base, fd, EV_WRITE, on_tcp_connected, g);
                if (!g->fd_ev || event_add(g->fd_ev, NULL) < 0)
                        finish(g, -ENOMEM, NULL);
                return;
        }
        g->bev = bufferevent_socket_new(g->base, fd, BEV_OPT_CLOSE_ON_FREE);
        if (!g->bev) {
                close(fd);
                finish(g, -ENOMEM, NULL);
                return;
        }
        if (setup_bev(g) < 0) {
                finish(g, -ENOMEM, NULL);
                return;
        }
        if (bufferevent_socket_connect(g->bev, sa, (int) len) < 0) {
                int err = errno > 0 ? errno : ECONNREFUSED;
                finish(g, -err, "%s: connect: %s", g->url, strerror(err));
        }
}

static void on_resolved(int result, struct evutil_addrinfo *res, void *userdata) {
        struct http_get *g = userdata;

        if (result == EVUTIL_EAI_CANCEL)
                return;
        g->dns_req = NULL;
        if (result != 0 || !res) {
                finish(g, -EHOSTUNREACH, "%s: cannot resolve host %s: %s", g->url, g->host,
                       result != 0 ? evutil_gai_strerror(result) : "no such host");
                if (res)
                        evutil_freeaddrinfo(res);
                return;
        }
        if (res->ai_family == AF_INET)
                ((struct sockaddr_in *) res->ai_addr)->sin_port = htons((uint16_t) g->port);
        else if (res->ai_family == AF_INET6)
                ((struct sockaddr_in6 *) res->ai_addr)->sin6_port = htons((uint16_t) g->port);
        connect_addr(g, res->ai_addr, (socklen_t) res->ai_addrlen);
        evutil_freeaddrinfo(res);
}

static int start_request(struct http_get *g) {
        struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
        struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
        struct sockaddr_in in4 = { .sin_family = AF_INET };

        http_resp_init(g->resp);
        g->status = 0;
        if (inet_pton(AF_INET, g->host, &in4.sin_addr) == 1) {
                in4.sin_port = htons((uint16_t) g->port);
                connect_addr(g, (struct sockaddr *) &in4, sizeof(in4));
                return 0;
        }
        if (inet_pton(AF_INET6, g->host, &in6.sin6_addr) == 1) {
                in6.sin6_port = htons((uint16_t) g->port);
                connect_addr(g, (struct sockaddr *) &in6, sizeof(in6));
                return 0;
        }
        if (!g->dns)
                return -EHOSTUNREACH;
        /* NULL: answered at once (/etc/hosts, an error): on_resolved already ran */
        g->dns_req = evdns_getaddrinfo(g->dns, g->host, NULL, &hints, on_resolved, g);
        return 0;
}

static void on_start(evutil_socket_t fd, short what, void *userdata) {
        struct http_get *g = userdata;
        int k;

        k = start_request(g);
        if (k < 0)
                finish(g, k, "%s: %s", g->url, strerror(-k));
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        struct http_get *g = userdata;

        finish(g, -ETIMEDOUT, "%s: timed out", g->url);
}

static void on_connect_timeout(evutil_socket_t fd, short what, void *userdata) {
        struct http_get *g = userdata;

        finish(g, -ETIMEDOUT, "%s: connection timed out", g->url);
}

int http_get(struct event_base *base, struct evdns_base *dns, const struct http_get_options *o, http_get_done_t done,
             void *userdata, struct http_get **ret) {
        struct http_get *g;
        int k;

        if (!base || !o || !o->url || !done || o->max_body == 0 || o->max_body >= SIZE_MAX / 2)
                return -EINVAL;
        for (char *const *h = o->headers; h && *h; h++) {
                const char *colon = strchr(*h, ':');
                if (!colon || colon == *h || strpbrk(*h, "\r\n"))
                        return -EINVAL;
        }
        if (o->user_agent && strpbrk(o->user_agent, "\r\n"))
                return -EINVAL;
        g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->fd = -1;
        g->base = base;
        g->dns = dns;
        g->done = done;
        g->userdata = userdata;
        g->connect_timeout_usec = o->connect_timeout_usec;
        g->max_body = o->max_body;
        g->redirects_left = o->max_redirects;
        g->url = strdup(o->url);
        g->resp = malloc(sizeof(*g->resp));
        if (o->headers && strv_copy(o->headers, &g->headers) < 0)
                g->headers = NULL;
        g->user_agent = o->user_agent ? strdup(o->user_agent) : NULL;
        g->deadline = evtimer_new(base, on_deadline, g);
        g->connect_timer = evtimer_new(base, on_connect_timeout, g);
        g->done_ev = evtimer_new(base, on_done, g);
        g->start_ev = evtimer_new(base, on_start, g);
        if (!g->start_ev || !g->url || !g->resp || (o->headers && !g->headers) || (o->user_agent && !g->user_agent) ||
            !g->deadline || !g->connect_timer || !g->done_ev) {
                http_get_cancel(g);
                return -ENOMEM;
        }
        k = parse_url(g->url, &g->https, &g->host, &g->port, &g->target);
        if (k < 0) {
                http_get_cancel(g);
                return k;
        }
        /* start from the loop; done_ev then delivers the result */
        evtimer_add_usec(g->start_ev, 0);
        if (o->timeout_usec > 0)
                evtimer_add_usec(g->deadline, o->timeout_usec);
        if (ret)
                *ret = g;
        return 0;
}
