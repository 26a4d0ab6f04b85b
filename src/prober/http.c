/* SPDX-License-Identifier: Apache-2.0 */
/* httpGet probes (pkg/probe/http) and httpGet lifecycle hooks (pkg/kubelet/lifecycle/handlers.go) on our own
 * small HTTP/1.1 client, on the event loop: a non-blocking socket, the request written with one send(), the
 * response read into a buffer of the prober's and parsed by http/http_response.c; HTTPS through libevent's
 * OpenSSL bufferevent on the same socket.
 *
 *  - one connection per request, never reused: probes send "Connection: close" (upstream: DisableKeepAlives) and
 *    close with SO_LINGER 0 (upstream's ProbeDialer), so probing every second leaves no TIME-WAIT pile-up;
 *  - HTTPS without certificate checks (InsecureSkipVerify), no proxy, HTTP/1.1 only, SNI for a host name;
 *  - headers as upstream's newProbeRequest and Go's request writer: Host (the probe's "Host" header, else
 *    host:port), User-Agent "kube-probe/<major>.<minor>" ("kube-lifecycle/..." for hooks) unless the probe has
 *    one (an empty one sends none), Accept "*" "/" "*" unless the probe has one (an empty one sends none), the
 *    probe's other headers with Go's canonical names (Content-Length, Transfer-Encoding and Trailer dropped as Go
 *    does), then Connection: close (probes). A header name that is not a token or a value with a control
 *    character fails the run without sending anything, as Go's client does;
 *  - 200-399 is success; a 301/302/303/307/308 with a Location is followed while it stays on the same host name
 *    (RedirectChecker(false): at most 10 requests, then "stopped after 10 redirects"), else the 3xx itself is a
 *    success with a warning ("Probe terminated redirects, Response body: ...");
 *  - at most 10 KiB of body is read (the rest is not), and kept only where it is shown (a 3xx); a body that
 *    breaks off is an error (upstream: the probe errored, the result is not counted);
 *  - the probe's timeout covers the whole run (Go's Client.Timeout), on the loop's timer seam;
 *  - hooks (probe_http_start): any HTTP answer is a success once its headers are in (upstream discards the body);
 *    an HTTPS hook whose server answers in plain HTTP is retried once over HTTP without the Authorization
 *    header, as upstream does (the failure stays the HTTPS one if the retry fails too).
 *
 * A probe worker keeps its struct probe_http between runs: the address, the request bytes, the messages' URL,
 * the parser and the read buffer are set up once and reused for every period while the request stays the
 * same (spec, host, port), so a plain-HTTP run allocates nothing (HTTPS allocates the TLS session). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/buffer.h>
#include <event2/dns.h>
#include <event2/util.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "prober/handlers.h"
#include "http/http_response.h"

#define MAX_REQUESTS 10 /* RedirectChecker: "stopped after 10 redirects" once 10 requests were made */

enum phase {
        PHASE_IDLE,
        PHASE_CONNECT, /* HTTPS: waiting for the TCP connection */
        PHASE_SEND,    /* HTTP: the rest of the request */
        PHASE_READ,    /* HTTP: the response */
        PHASE_TLS,     /* HTTPS: the bufferevent has it */
};

struct target {
        bool https;
        int port;
        char *hostport; /* for messages and the Host header: "host:port", "[v6]:port" */
        char *url;      /* for messages */
        char *target;   /* the request-target: "/path?query" */
};

struct probe_http {
        struct probe_op op; /* the run in flight (op.done set) or the last one */
        struct probe_env *env;
        bool running;
        bool reporting; /* inside the outcome's callback: freeing waits until it returns */
        bool doomed;    /* freed during the callback */
        bool one_shot;  /* a hook (probe_http_start): frees itself once it reported */

        /* what it is set up for */
        const struct probe *spec;
        char *host; /* the host name or address, as given (the redirect rule compares host names) */
        int port;
        struct sockaddr_storage addr; /* a numeric host, parsed once */
        socklen_t addr_len;           /* 0: a name, resolved at each connection */
        struct target first;          /* the first request's */
        char *request;                /* its bytes */
        size_t request_len;
        char *refused_msg; /* the spec's headers are invalid: the outcome of every run, NULL: valid */

        /* the run */
        struct target redirect; /* the current request's when following a redirect or falling back (else first) */
        bool redirected;
        char *redirect_request;
        size_t redirect_request_len;
        int requests;
        bool fallback; /* a hook's HTTPS request answered in HTTP: retrying over HTTP */
        char *fallback_error;
        char *soon_msg; /* a failure known without waiting, reported from the loop */

        int fd;
        enum phase phase;
        bool connected;
        size_t sent;
        struct event *ev;       /* the socket (HTTP), or the reporter of soon_msg */
        struct event *deadline; /* the run's timeout */
        struct event *soon;
        struct bufferevent *bev; /* HTTPS */
        unsigned char first_record[5];
        bool have_first_record;
        struct evdns_getaddrinfo_request *dns;
        uint64_t timeout_usec;

        /* last: not zeroed, their pages are touched only as far as a response needs */
        char rbuf[4096];
        struct http_resp resp;
};

static const struct target *cur(const struct probe_http *h) {
        return h->redirected ? &h->redirect : &h->first;
}

static const char *cur_request(const struct probe_http *h, size_t *ret_len) {
        if (h->redirected) {
                *ret_len = h->redirect_request_len;
                return h->redirect_request;
        }
        *ret_len = h->request_len;
        return h->request;
}

static void target_done(struct target *t) {
        t->hostport = mfree(t->hostport);
        t->url = mfree(t->url);
        t->target = mfree(t->target);
}

/* ---- the request ---- */

static bool is_tchar(unsigned char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

/* Go's CanonicalMIMEHeaderKey: "x-foo-bar" -> "X-Foo-Bar"; a name with a byte outside tokens stays as it is */
static void canonical_name(const char *name, char *out, size_t size) {
        bool upper = true, valid = true;
        size_t n = strlen(name);

        for (size_t i = 0; i < n; i++)
                if (!is_tchar((unsigned char) name[i]))
                        valid = false;
        n = MIN(n, size - 1);
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                if (valid) {
                        c = upper ? (char) toupper((unsigned char) c) : (char) tolower((unsigned char) c);
                        upper = c == '-';
                }
                out[i] = c;
        }
        out[n] = '\0';
}

static bool has_token(const char *value, const char *token) {
        size_t n = strlen(token);
        for (const char *p = strempty(value); (p = strcasestr(p, token)); p += n) {
                bool start = p == value || p[-1] == ' ' || p[-1] == ',' || p[-1] == '\t';
                bool end = p[n] == '\0' || p[n] == ' ' || p[n] == ',' || p[n] == '\t';
                if (start && end)
                        return true;
        }
        return false;
}

/* the request-target of a path: "/" added in front when missing, bytes not allowed in it percent-escaped */
static char *request_target(const char *path) {
        static const char hex[] = "0123456789ABCDEF";
        size_t n = strlen(strempty(path));
        char *s = malloc(3 * n + 2), *p = s;

        if (!s)
                return NULL;
        if (n == 0 || path[0] != '/')
                *p++ = '/';
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) path[i];
                if (c <= ' ' || c >= 0x7f || strchr("\"<>\\^`{|}", c)) {
                        *p++ = '%';
                        *p++ = hex[c >> 4];
                        *p++ = hex[c & 15];
                } else
                        *p++ = (char) c;
        }
        *p = '\0';
        return s;
}

/* The request's bytes, as Go's request writer puts them (headers in the spec's order). */
static int build_request(const struct probe_http *h, const struct target *t, bool drop_authorization, bool custom_host,
                         char **ret, size_t *ret_len) {
        const struct probe *spec = h->spec;
        const char *host = NULL, *ua = NULL, *accept = NULL;
        bool has_ua = false, has_accept = false, close_given = false;
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        for (size_t i = 0; i < spec->n_http_headers; i++) {
                const struct http_header *hd = &spec->http_headers[i];
                if (strcasecmp(strempty(hd->name), "Host") == 0 && !host)
                        host = strempty(hd->value);
                else if (strcasecmp(strempty(hd->name), "User-Agent") == 0 && !has_ua) {
                        has_ua = true;
                        ua = strempty(hd->value);
                } else if (strcasecmp(strempty(hd->name), "Accept") == 0 && !has_accept) {
                        has_accept = true;
                        accept = strempty(hd->value);
                } else if (strcasecmp(strempty(hd->name), "Connection") == 0 && has_token(hd->value, "close"))
                        close_given = true;
        }
        f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
        fprintf(f, "GET %s HTTP/1.1\r\nHost: %s\r\n", t->target, !isempty(host) && custom_host ? host : t->hostport);
        if (!has_ua)
                fprintf(f, "User-Agent: kube-%s/%s\r\n", h->one_shot ? "lifecycle" : "probe", KUBE_VERSION_MAJOR_MINOR);
        else if (!isempty(ua))
                fprintf(f, "User-Agent: %s\r\n", ua);
        if (!has_accept)
                fputs("Accept: */*\r\n", f);
        for (size_t i = 0; i < spec->n_http_headers; i++) {
                const struct http_header *hd = &spec->http_headers[i];
                char name[256];

                canonical_name(strempty(hd->name), name, sizeof(name));
                if (streq(name, "Host") || streq(name, "User-Agent") || streq(name, "Content-Length") ||
                    streq(name, "Transfer-Encoding") || streq(name, "Trailer"))
                        continue;
                if (streq(name, "Accept") && isempty(accept))
                        continue; /* an empty Accept removes them all */
                if (drop_authorization && streq(name, "Authorization"))
                        continue;
                fprintf(f, "%s: %s\r\n", name, strempty(hd->value));
        }
        if (!h->one_shot && !close_given)
                fputs("Connection: close\r\n", f);
        fputs("\r\n", f);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}

static int target_init(struct target *t, bool https, const char *host, int port, const char *path) {
        _cleanup_free_ char *hostport = probe_join_host_port(host, port), *target = request_target(path), *url = NULL;

        if (!hostport || !target || asprintf(&url, "%s://%s%s", https ? "https" : "http", hostport, target) < 0)
                return -ENOMEM;
        target_done(t);
        t->https = https;
        t->port = port;
        t->hostport = TAKE_PTR(hostport);
        t->target = TAKE_PTR(target);
        t->url = TAKE_PTR(url);
        return 0;
}

/* ---- connections ---- */

static void close_connection(struct probe_http *h) {
        struct linger l = { .l_onoff = 1, .l_linger = 0 };

        if (h->dns) {
                struct evdns_getaddrinfo_request *q = TAKE_PTR(h->dns);
                evdns_getaddrinfo_cancel(q); /* runs the callback with EVUTIL_EAI_CANCEL */
        }
        if (h->bev) {
                int fd = bufferevent_getfd(h->bev);
                if (fd >= 0 && !h->one_shot)
                        (void) setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
                bufferevent_free(h->bev); /* closes the socket, frees the TLS session */
                h->bev = NULL;
        }
        if (h->phase == PHASE_CONNECT || h->phase == PHASE_SEND || h->phase == PHASE_READ)
                event_del(h->ev);
        if (h->fd >= 0) {
                if (!h->one_shot)
                        (void) setsockopt(h->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
                close(h->fd);
                h->fd = -1;
        }
        h->phase = PHASE_IDLE;
        h->connected = false;
}

/* end the run in flight, if any (no report) */
static void http_stop(struct probe_http *h) {
        close_connection(h);
        if (h->deadline)
                event_del(h->deadline);
        if (h->soon)
                event_del(h->soon);
        h->soon_msg = mfree(h->soon_msg);
        h->fallback_error = mfree(h->fallback_error);
        h->running = false;
        h->op.done = NULL;
}

static void http_destroy(struct probe_http *h) {
        http_stop(h);
        if (h->ev)
                event_free(h->ev);
        if (h->deadline)
                event_free(h->deadline);
        if (h->soon)
                event_free(h->soon);
        target_done(&h->first);
        target_done(&h->redirect);
        free(h->host);
        free(h->request);
        free(h->redirect_request);
        free(h->refused_msg);
        free(h);
}

struct probe_http *probe_http_free(struct probe_http *h) {
        if (!h)
                return NULL;
        if (h->reporting) {
                /* inside our own callback: stop here, free when it returns */
                http_stop(h);
                h->doomed = true;
                return NULL;
        }
        http_destroy(h);
        return NULL;
}

void probe_http_invalidate(struct probe_http *h) {
        if (h)
                h->spec = NULL; /* set up again at the next run */
}

static void http_cancel(struct probe_op *op) {
        struct probe_http *h = (struct probe_http *) op;

        if (h->one_shot)
                probe_http_free(h);
        else
                http_stop(h);
}

/* Deliver the outcome; h may be freed by the callback (one-shot, or the worker went): touch nothing after. */
static void report(struct probe_http *h, enum probe_result result, bool warning, const char *output, int error) {
        close_connection(h);
        event_del(h->deadline);
        h->running = false;
        h->reporting = true;
        probe_op_report(&h->op, result, warning, output, error);
        h->reporting = false;
        if (h->doomed || h->one_shot)
                http_destroy(h);
}

static void start_request(struct probe_http *h);

/* a failure of the request in flight: "Get \"<url>\": <why>" */
static void fail(struct probe_http *h, const char *fmt, ...) _printf_(2, 3);
static void fail(struct probe_http *h, const char *fmt, ...) {
        _cleanup_free_ char *why = NULL, *msg = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&why, fmt, ap) < 0)
                why = NULL;
        va_end(ap);
        if (asprintf(&msg, "Get \"%s\": %s", cur(h)->url, strna(why)) < 0)
                msg = NULL;
        if (h->fallback) {
                /* upstream keeps the HTTPS request's error when the HTTP retry fails too */
                report(h, PROBE_RESULT_FAILURE, false, strempty(h->fallback_error), 0);
                return;
        }
        if (h->one_shot && cur(h)->https && h->have_first_record && memcmp(h->first_record, "HTTP/", 5) == 0 &&
            h->connected) {
                /* an HTTPS hook answered in plain HTTP: once more over HTTP, without the Authorization header */
                _cleanup_free_ char *path = strdup(cur(h)->target);
                char *req = NULL;
                size_t req_len = 0;

                log_v(1, "HTTPS request to lifecycle hook got HTTP response, retrying with HTTP: host=\"%s\"",
                      cur(h)->hostport);
                h->fallback = true;
                h->fallback_error = TAKE_PTR(msg);
                close_connection(h);
                if (path && target_init(&h->redirect, false, h->host, cur(h)->port, path) >= 0) {
                        h->redirected = true;
                        if (build_request(h, &h->redirect, true, true, &req, &req_len) >= 0) {
                                free_and_replace(h->redirect_request, req);
                                h->redirect_request_len = req_len;
                                start_request(h);
                                return;
                        }
                }
                report(h, PROBE_RESULT_UNKNOWN, false, "cannot retry over HTTP", -ENOMEM);
                return;
        }
        report(h, PROBE_RESULT_FAILURE, false, msg ? msg : "request failed", 0);
}

/* the body broke off: upstream's probe errors (the result is not counted) */
static void body_error(struct probe_http *h, const char *why) {
        _cleanup_free_ char *msg = NULL;

        if (asprintf(&msg, "Get \"%s\": %s", cur(h)->url, why) < 0)
                msg = NULL;
        report(h, PROBE_RESULT_UNKNOWN, false, msg ? msg : why, -EIO);
}

static void fail_soon_v(struct probe_http *h, const char *fmt, ...) _printf_(2, 3);
static void fail_soon_v(struct probe_http *h, const char *fmt, ...) {
        va_list ap;

        close_connection(h);
        free(h->soon_msg);
        va_start(ap, fmt);
        if (vasprintf(&h->soon_msg, fmt, ap) < 0)
                h->soon_msg = NULL;
        va_end(ap);
        event_active(h->soon, EV_TIMEOUT, 0);
}

static void on_soon(evutil_socket_t fd, short what, void *userdata) {
        struct probe_http *h = userdata;
        _cleanup_free_ char *msg = TAKE_PTR(h->soon_msg);

        if (h->refused_msg && !h->connected && h->requests == 0) {
                report(h, PROBE_RESULT_FAILURE, false, h->refused_msg, 0);
                return;
        }
        fail(h, "%s", msg ? msg : "request failed");
}

/* ---- the response ---- */

static bool is_redirect(int status) {
        return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/* Resolve a Location against the current URL (absolute, scheme-relative, absolute-path or relative). On success
 * *ret_host is the host name, *ret_scheme "http", "https" or another scheme (not followed). */
static int resolve_location(const struct probe_http *h, const char *loc, char **ret_scheme, char **ret_host,
                            int *ret_port, char **ret_path, bool *ret_relative) {
        const struct target *c = cur(h);
        _cleanup_free_ char *scheme = NULL, *host = NULL, *path = NULL;
        const char *p = loc, *end;
        bool had_scheme = false;
        int port = -1;

        end = loc + strcspn(loc, "#");
        /* a scheme? */
        {
                size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
                if (n > 0 && p[n] == ':' && isalpha((unsigned char) p[0])) {
                        scheme = strndup(p, n);
                        if (!scheme)
                                return -ENOMEM;
                        for (char *s = scheme; *s; s++)
                                *s = (char) tolower((unsigned char) *s);
                        p += n + 1;
                        had_scheme = true;
                        if (!startswith(p, "//"))
                                return -EINVAL;
                }
        }
        if (!scheme && !(scheme = strdup(c->https ? "https" : "http")))
                return -ENOMEM;
        if (startswith(p, "//")) {
                const char *a = p + 2, *ae = a + strcspn(a, "/?#"), *at, *hs, *he, *colon;

                at = memrchr(a, '@', (size_t) (ae - a));
                hs = at ? at + 1 : a;
                if (*hs == '[') {
                        he = memchr(hs, ']', (size_t) (ae - hs));
                        if (!he)
                                return -EINVAL;
                        host = strndup(hs + 1, (size_t) (he - hs - 1));
                        colon = he + 1 < ae && he[1] == ':' ? he + 1 : NULL;
                        if (he + 1 < ae && !colon)
                                return -EINVAL;
                } else {
                        colon = memchr(hs, ':', (size_t) (ae - hs));
                        host = strndup(hs, (size_t) ((colon ? colon : ae) - hs));
                }
                if (!host)
                        return -ENOMEM;
                if (colon && colon + 1 < ae) {
                        port = 0;
                        for (const char *d = colon + 1; d < ae; d++) {
                                if (!isdigit((unsigned char) *d) || port > 65535)
                                        return -EINVAL;
                                port = port * 10 + (*d - '0');
                        }
                        if (port < 1 || port > 65535)
                                return -EINVAL;
                }
                if (port < 0)
                        port = streq(scheme, "https") ? 443 : 80;
                path = strndup(ae, (size_t) (end - ae));
        } else {
                /* relative to the current URL */
                host = strdup(h->host);
                port = c->port;
                if (p[0] == '/')
                        path = strndup(p, (size_t) (end - p));
                else {
                        size_t base = strcspn(c->target, "?");
                        if (p[0] != '?')
                                while (base > 0 && c->target[base - 1] != '/')
                                        base--;
                        if (asprintf(&path, "%.*s%.*s", (int) base, c->target, (int) (end - p), p) < 0)
                                path = NULL;
                }
                if (!host)
                        return -ENOMEM;
        }
        if (!path)
                return -ENOMEM;
        *ret_scheme = TAKE_PTR(scheme);
        *ret_host = TAKE_PTR(host);
        *ret_port = port;
        *ret_path = TAKE_PTR(path);
        *ret_relative = !had_scheme && !startswith(loc, "//");
        return 0;
}

/* the final response's headers are in: true when the run ended or went on elsewhere (stop reading) */
static bool on_headers(struct probe_http *h) {
        struct http_resp *r = &h->resp;

        if (is_redirect(r->status) && r->has_location) {
                _cleanup_free_ char *scheme = NULL, *host = NULL, *path = NULL;
                bool relative = false;
                int port, k;

                /* Go keeps a Host header of the probe's only across a relative Location */
                k = resolve_location(h, r->location, &scheme, &host, &port, &path, &relative);
                if (k == -ENOMEM) {
                        report(h, PROBE_RESULT_UNKNOWN, false, "cannot follow the redirect", -ENOMEM);
                        return true;
                }
                if (k < 0) {
                        fail(h, "failed to parse Location header \"%s\"", r->location);
                        return true;
                }
                if (streq(host, h->host)) {
                        bool https = streq(scheme, "https");
                        char *req = NULL;
                        size_t req_len = 0;

                        if (target_init(&h->redirect, https, host, port, path) < 0) {
                                report(h, PROBE_RESULT_UNKNOWN, false, "cannot follow the redirect", -ENOMEM);
                                return true;
                        }
                        if (h->requests >= MAX_REQUESTS) {
                                h->redirected = true;
                                fail(h, "stopped after %d redirects", MAX_REQUESTS);
                                return true;
                        }
                        if (!https && !streq(scheme, "http")) {
                                h->redirected = true;
                                fail(h, "unsupported protocol scheme \"%s\"", scheme);
                                return true;
                        }
                        close_connection(h);
                        h->redirected = true;
                        if (build_request(h, &h->redirect, h->fallback, relative, &req, &req_len) < 0) {
                                report(h, PROBE_RESULT_UNKNOWN, false, "cannot follow the redirect", -ENOMEM);
                                return true;
                        }
                        free_and_replace(h->redirect_request, req);
                        h->redirect_request_len = req_len;
                        start_request(h);
                        return true;
                }
                /* another host: not followed, the 3xx is the answer */
        }
        if (h->one_shot) {
                /* a hook: any answer will do; upstream discards the body */
                if (h->fallback)
                        log_warning("request to HTTPS lifecycle hook %s got HTTP response, retry with HTTP succeeded",
                                    cur(h)->hostport);
                report(h, PROBE_RESULT_SUCCESS, false, "", 0);
                return true;
        }
        r->keep_body = r->status >= 300 && r->status < 400;
        return false;
}

static void on_complete(struct probe_http *h) {
        int status = h->resp.status;

        if (status >= 200 && status < 400) {
                if (status >= 300) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg, "Probe terminated redirects, Response body: %s",
                                     h->resp.body_len > 0 ? h->resp.body : "") < 0)
                                msg = NULL;
                        report(h, PROBE_RESULT_SUCCESS, true, msg ? msg : "Probe terminated redirects", 0);
                } else
                        report(h, PROBE_RESULT_SUCCESS, false, "", 0);
        } else {
                char msg[64];
                snprintf(msg, sizeof(msg), "HTTP probe failed with statuscode: %d", status);
                report(h, PROBE_RESULT_FAILURE, false, msg, 0);
        }
}

static void parse_error(struct probe_http *h) {
        const struct http_resp *r = &h->resp;

        if (http_resp_headers_done(r)) {
                body_error(h, r->error);
                return;
        }
        if (streq(r->error, "EOF"))
                fail(h, "EOF");
        else if (streq(r->error, "malformed HTTP response"))
                fail(h, "net/http: HTTP/1.x transport connection broken: malformed HTTP response \"%.64s\"", r->line);
        else
                fail(h, "net/http: HTTP/1.x transport connection broken: %s", r->error);
}

/* feed what was read; true when the run ended or moved on */
static bool consume(struct probe_http *h, const char *data, size_t n) {
        while (true) {
                size_t used = 0;
                int k = http_resp_feed(&h->resp, data, n, &used);

                data += used;
                n -= used;
                if (k < 0) {
                        parse_error(h);
                        return true;
                }
                if (k == HTTP_RESP_DONE) {
                        on_complete(h);
                        return true;
                }
                if (k == HTTP_RESP_HEADERS) {
                        if (on_headers(h))
                                return true;
                        continue;
                }
                return false; /* more */
        }
}

static void on_eof(struct probe_http *h) {
        if (http_resp_eof(&h->resp) < 0)
                parse_error(h);
        else
                on_complete(h);
}

static void read_error(struct probe_http *h, int err) {
        if (http_resp_headers_done(&h->resp))
                body_error(h, strerror(err));
        else
                fail(h, "read tcp %s: read: %s", cur(h)->hostport, strerror(err));
}

/* ---- plain HTTP on the socket ---- */

static void on_socket(evutil_socket_t fd, short what, void *userdata);

static void wait_socket(struct probe_http *h, enum phase phase, short what) {
        if (h->phase == PHASE_CONNECT || h->phase == PHASE_SEND || h->phase == PHASE_READ)
                event_del(h->ev);
        h->phase = phase;
        event_assign(h->ev, h->env->base, h->fd, what | EV_PERSIST, on_socket, h);
        (void) event_add(h->ev, NULL);
}

static void start_tls(struct probe_http *h);

static void dial_error(struct probe_http *h, int err) {
        fail(h, "dial tcp %s: connect: %s", cur(h)->hostport, strerror(err));
}

/* send the rest of the request; soon: a failure is reported from the loop (inside the start function) */
static void send_request(struct probe_http *h, bool soon) {
        size_t len;
        const char *req = cur_request(h, &len);
        ssize_t n = send(h->fd, req + h->sent, len - h->sent, MSG_NOSIGNAL);

        if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) {
                        if (h->phase != PHASE_SEND)
                                wait_socket(h, PHASE_SEND, EV_WRITE);
                        return;
                }
                if (soon)
                        fail_soon_v(h, "dial tcp %s: connect: %s", cur(h)->hostport, strerror(errno));
                else if (h->connected)
                        fail(h, "write tcp %s: write: %s", cur(h)->hostport, strerror(errno));
                else
                        dial_error(h, errno);
                return;
        }
        h->connected = true;
        h->sent += (size_t) n;
        if (h->sent < len) {
                if (h->phase != PHASE_SEND)
                        wait_socket(h, PHASE_SEND, EV_WRITE);
                return;
        }
        wait_socket(h, PHASE_READ, EV_READ);
}

static void on_socket(evutil_socket_t fd, short what, void *userdata) {
        struct probe_http *h = userdata;

        switch (h->phase) {
        case PHASE_CONNECT: {
                int err = 0;
                socklen_t len = sizeof(err);
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
                        err = errno;
                if (err != 0) {
                        dial_error(h, err);
                        return;
                }
                event_del(h->ev);
                h->phase = PHASE_IDLE;
                h->connected = true;
                start_tls(h);
                return;
        }
        case PHASE_SEND:
                send_request(h, false);
                return;
        case PHASE_READ: {
                ssize_t n = recv(fd, h->rbuf, sizeof(h->rbuf), 0);
                if (n < 0) {
                        if (errno != EAGAIN && errno != EINTR)
                                read_error(h, errno);
                        return;
                }
                if (n == 0)
                        on_eof(h);
                else
                        (void) consume(h, h->rbuf, (size_t) n);
                return;
        }
        default:
                return;
        }
}

/* ---- HTTPS through the OpenSSL bufferevent ---- */

static void on_tls_message(int write_p, int version, int content_type, const void *buf, size_t len, SSL *ssl,
                           void *arg) {
        struct probe_http *h = arg;

        /* the first record's header: "HTTP/" is a server answering in plain HTTP (Go's RecordHeaderError) */
        if (!write_p && content_type == SSL3_RT_HEADER && len >= 5 && !h->have_first_record) {
                memcpy(h->first_record, buf, 5);
                h->have_first_record = true;
        }
}

static void on_tls_read(struct bufferevent *bev, void *userdata) {
        struct probe_http *h = userdata;
        struct evbuffer *in = bufferevent_get_input(bev);
        int n;

        while ((n = evbuffer_remove(in, h->rbuf, sizeof(h->rbuf))) > 0)
                if (consume(h, h->rbuf, (size_t) n))
                        return;
}

static void on_tls_event(struct bufferevent *bev, short what, void *userdata) {
        struct probe_http *h = userdata;
        unsigned long e;

        if (what & BEV_EVENT_CONNECTED)
                return;
        if (what & BEV_EVENT_EOF) {
                on_eof(h);
                return;
        }
        if (!(what & BEV_EVENT_ERROR))
                return;
        e = bufferevent_get_openssl_error(bev);
        if (h->have_first_record && memcmp(h->first_record, "HTTP/", 5) == 0 && !http_resp_headers_done(&h->resp))
                fail(h, "http: server gave HTTP response to HTTPS client");
        else if (e != 0) {
                const char *reason = ERR_reason_error_string(e);
                if (http_resp_headers_done(&h->resp))
                        body_error(h, reason ? reason : "tls error");
                else
                        fail(h, "tls: %s", reason ? reason : "error");
        } else
                read_error(h, errno ? errno : ECONNRESET);
}

static SSL_CTX *ssl_ctx(struct probe_env *env) {
        if (!env->ssl_ctx) {
                SSL_CTX *c = SSL_CTX_new(TLS_client_method());
                if (!c)
                        return NULL;
                SSL_CTX_set_verify(c, SSL_VERIFY_NONE, NULL); /* InsecureSkipVerify, as upstream's probes */
                env->ssl_ctx = c;
        }
        return env->ssl_ctx;
}

static void start_tls(struct probe_http *h) {
        SSL_CTX *c = ssl_ctx(h->env);
        struct in6_addr a6;
        struct in_addr a4;
        size_t len;
        const char *req = cur_request(h, &len);
        SSL *ssl;

        if (!c || !(ssl = SSL_new(c))) {
                fail(h, "tls: cannot create a session");
                return;
        }
        if (inet_pton(AF_INET, h->host, &a4) != 1 && inet_pton(AF_INET6, h->host, &a6) != 1)
                (void) SSL_set_tlsext_host_name(ssl, h->host);
        SSL_set_msg_callback(ssl, on_tls_message);
        SSL_set_msg_callback_arg(ssl, h);
        h->have_first_record = false;
        h->bev = bufferevent_openssl_socket_new(h->env->base, h->fd, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                BEV_OPT_CLOSE_ON_FREE);
        if (!h->bev) {
                SSL_free(ssl);
                fail(h, "tls: cannot create a session");
                return;
        }
        h->fd = -1; /* the bufferevent's now */
        h->phase = PHASE_TLS;
        bufferevent_openssl_set_allow_dirty_shutdown(h->bev, 1);
        bufferevent_setcb(h->bev, on_tls_read, NULL, on_tls_event, h);
        if (bufferevent_write(h->bev, req, len) < 0 || bufferevent_enable(h->bev, EV_READ | EV_WRITE) < 0)
                fail(h, "tls: cannot start");
}

/* ---- connecting ---- */

static void connect_to(struct probe_http *h, const struct sockaddr *sa, socklen_t salen) {
        h->fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (h->fd < 0) {
                fail_soon_v(h, "dial tcp %s: socket: %s", cur(h)->hostport, strerror(errno));
                return;
        }
        if (connect(h->fd, sa, salen) < 0 && errno != EINPROGRESS) {
                fail_soon_v(h, "dial tcp %s: connect: %s", cur(h)->hostport, strerror(errno));
                return;
        }
        if (cur(h)->https) {
                wait_socket(h, PHASE_CONNECT, EV_WRITE);
                return;
        }
        /* a local pod's connection is usually up by now: send at once (EAGAIN: wait until it is) */
        send_request(h, true);
}

static void on_resolved(int result, struct evutil_addrinfo *res, void *userdata) {
        struct probe_http *h = userdata;

        if (result == EVUTIL_EAI_CANCEL)
                return; /* close_connection is cancelling us */
        h->dns = NULL;
        if (result != 0 || !res) {
                fail_soon_v(h, "dial tcp: lookup %s: %s", h->host,
                            result != 0 ? evutil_gai_strerror(result) : "no such host");
                return;
        }
        if (res->ai_family == AF_INET)
                ((struct sockaddr_in *) res->ai_addr)->sin_port = htons((uint16_t) cur(h)->port);
        else if (res->ai_family == AF_INET6)
                ((struct sockaddr_in6 *) res->ai_addr)->sin6_port = htons((uint16_t) cur(h)->port);
        connect_to(h, res->ai_addr, (socklen_t) res->ai_addrlen);
        evutil_freeaddrinfo(res);
}

static void start_request(struct probe_http *h) {
        h->requests++;
        h->sent = 0;
        h->connected = false;
        h->have_first_record = false;
        http_resp_init(&h->resp);
        if (h->addr_len > 0) {
                struct sockaddr_storage sa = h->addr;
                if (sa.ss_family == AF_INET)
                        ((struct sockaddr_in *) &sa)->sin_port = htons((uint16_t) cur(h)->port);
                else
                        ((struct sockaddr_in6 *) &sa)->sin6_port = htons((uint16_t) cur(h)->port);
                connect_to(h, (struct sockaddr *) &sa, h->addr_len);
                return;
        }
        {
                struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC,
                                                 .ai_socktype = SOCK_STREAM,
                                                 .ai_flags = EVUTIL_AI_ADDRCONFIG };
                struct evdns_getaddrinfo_request *q;

                if (!h->env->dns) {
                        h->env->dns = evdns_base_new(h->env->base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
                                                                           EVDNS_BASE_DISABLE_WHEN_INACTIVE);
                        if (!h->env->dns) {
                                fail_soon_v(h, "dial tcp: lookup %s: no resolver", h->host);
                                return;
                        }
                        (void) evdns_base_load_hosts(h->env->dns, NULL);
                }
                q = evdns_getaddrinfo(h->env->dns, h->host, NULL, &hints, on_resolved, h);
                /* NULL: answered at once (/etc/hosts, or an error): on_resolved already ran */
                h->dns = q;
        }
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        struct probe_http *h = userdata;

        if (http_resp_headers_done(&h->resp))
                body_error(h, "context deadline exceeded (Client.Timeout or context cancellation while reading body)");
        else {
                h->fallback = false; /* the timeout is the answer, whatever came before */
                fail(h, "context deadline exceeded (Client.Timeout exceeded while awaiting headers)");
        }
}

/* ---- set-up and runs ---- */

/* (Re)build what every run of req has in common. */
static int http_setup(struct probe_http *h, const struct probe_request *req) {
        const struct probe *spec = req->spec;
        bool https = spec->scheme && strcasecmp(spec->scheme, "HTTPS") == 0;
        struct sockaddr_in *in4 = (struct sockaddr_in *) &h->addr;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &h->addr;
        _cleanup_free_ char *host = strdup(req->host), *refused_msg = NULL;
        _cleanup_ck_error_ struct ck_error *bad = NULL;
        char *request = NULL;
        size_t request_len = 0;
        int r;

        if (!host)
                return -ENOMEM;
        h->spec = NULL;
        free_and_replace(h->host, host);
        h->port = req->port;
        r = target_init(&h->first, https, h->host, req->port, isempty(spec->path) ? "/" : spec->path);
        if (r < 0)
                return r;
        memset(&h->addr, 0, sizeof(h->addr));
        h->addr_len = 0;
        if (inet_pton(AF_INET, h->host, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                h->addr_len = sizeof(*in4);
        } else if (inet_pton(AF_INET6, h->host, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                h->addr_len = sizeof(*in6);
        }
        /* headers that would inject others: no request is ever sent for this spec (checked once per spec) */
        if (probe_check_http_headers(spec->http_headers, spec->n_http_headers, &bad) < 0 &&
            asprintf(&refused_msg, "Get \"%s\": %s", h->first.url, ck_error_message(bad)) < 0)
                return -ENOMEM;
        h->spec = spec;
        h->redirected = false;
        r = build_request(h, &h->first, false, true, &request, &request_len);
        if (r < 0) {
                h->spec = NULL;
                return r;
        }
        free_and_replace(h->request, request);
        h->request_len = request_len;
        free_and_replace(h->refused_msg, refused_msg);
        return 0;
}

static int http_new(struct probe_env *env, bool one_shot, struct probe_http **ret) {
        struct probe_http *h = malloc(sizeof(*h));

        if (!h)
                return -ENOMEM;
        memset(h, 0, offsetof(struct probe_http, rbuf));
        http_resp_init(&h->resp);
        h->op = (struct probe_op) { .cancel = http_cancel };
        h->env = env;
        h->one_shot = one_shot;
        h->fd = -1;
        h->ev = event_new(env->base, -1, 0, on_socket, h);
        h->deadline = evtimer_new(env->base, on_deadline, h);
        h->soon = evtimer_new(env->base, on_soon, h);
        if (!h->ev || !h->deadline || !h->soon) {
                http_destroy(h);
                return -ENOMEM;
        }
        *ret = h;
        return 0;
}

static int http_run(struct probe_http *h, const struct probe_request *req, probe_done_t done, void *userdata,
                    struct probe_op **ret) {
        int r;

        http_stop(h);
        if (h->spec != req->spec || h->port != req->port || !streq_ptr(h->host, req->host)) {
                r = http_setup(h, req);
                if (r < 0)
                        return r;
        }
        h->redirected = false;
        h->fallback = false;
        h->requests = 0;
        h->timeout_usec = req->timeout_usec;
        h->op.done = done;
        h->op.userdata = userdata;
        h->running = true;
        http_resp_init(&h->resp);
        if (evtimer_add_usec(h->deadline, MAX(req->timeout_usec, (uint64_t) 1)) < 0) {
                h->running = false;
                h->op.done = NULL;
                return -ENOMEM;
        }
        *ret = &h->op;
        if (h->refused_msg) {
                /* nothing is sent; the failure is reported from the loop, never inside this call */
                event_active(h->soon, EV_TIMEOUT, 0);
                return 0;
        }
        /* failures found here are reported from the loop (fail_soon_v), never inside this call */
        start_request(h);
        return 0;
}

int probe_http_run(struct probe_env *env, struct probe_http **state, const struct probe_request *req, probe_done_t done,
                   void *userdata, struct probe_op **ret) {
        int r;

        if (isempty(req->host) || req->port < 1 || req->port > 65535)
                return -EINVAL;
        if (!*state) {
                r = http_new(env, false, state);
                if (r < 0)
                        return r;
        }
        return http_run(*state, req, done, userdata, ret);
}

int probe_http_start(struct probe_env *env, const struct probe_request *req, probe_done_t done, void *userdata,
                     struct probe_op **ret) {
        struct probe_http *h = NULL;
        int r;

        if (isempty(req->host) || req->port < 1 || req->port > 65535)
                return -EINVAL;
        r = http_new(env, true, &h);
        if (r < 0)
                return r;
        r = http_run(h, req, done, userdata, ret);
        if (r < 0)
                http_destroy(h);
        return r;
}
