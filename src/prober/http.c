/* SPDX-License-Identifier: Apache-2.0 */
/* httpGet probe (pkg/probe/http): GET scheme://host:port/path with libcurl on the event loop.
 *
 *  - HTTPS without certificate checks, no proxy, a new connection for every probe (upstream: InsecureSkipVerify,
 *    Proxy nil, DisableKeepAlives: Go's client then sends "Connection: close" and the server closes first);
 *  - headers: the probe's httpHeaders ("Host" sets the request host), then User-Agent
 *    "kube-probe/<major>.<minor>" and Accept "*" "/" "*" unless given, then Connection: close (probes; not the
 *    lifecycle hooks, which run through probe_http_start);
 *  - 200-399 is success; a redirect is followed (up to 10) only while it stays on the same host name,
 *    else the 3xx itself is a success with a warning ("Probe terminated redirects");
 *  - at most 10 KiB of body is read (the rest is not waited for); it is kept only where it is shown (the
 *    warning of a redirect not followed);
 *  - a header name that is not a token or a value with a control character (CR/LF) fails the probe without
 *    sending anything, as Go's client does (libcurl would send the value as it is: header injection).
 *
 * A probe worker keeps its struct probe_http between runs: the libcurl easy handle with its options, the URL,
 * the header list and the host of the first request are made once and reused for every period while the
 * request stays the same (same spec, host and port), so a run allocates nothing of its own. */
#include <string.h>
#include <strings.h>

#include "basic/curl_loop.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "prober/handlers.h"

#define MAX_REDIRECTS 10

struct probe_http {
        struct probe_op op; /* the run in flight (op.done set) or the last one */
        struct probe_env *env;
        bool running;   /* the easy handle is in the multi handle */
        bool reporting; /* inside the outcome's callback: freeing waits until it returns */
        bool doomed;    /* freed during the callback */
        bool one_shot;  /* probe_http_start: frees itself once it reported */
        bool keep_body; /* the body is wanted (a 3xx): buffer it */

        /* what the handle is set up for */
        const struct probe *spec;
        char *host;
        int port;
        uint64_t timeout_usec;

        CURL *easy;
        struct curl_slist *headers;
        char *url;        /* the first request's */
        char *first_host; /* its host name */
        char *redirect;   /* the current request's when following a redirect, NULL: url */
        int redirects;
        char *body; /* allocated on the first 3xx that needs it */
        size_t body_len, body_seen;
        bool truncated;
        char errbuf[CURL_ERROR_SIZE];
        struct event *refused; /* reports a request that is not sent (invalid headers) */
        char *refused_msg;     /* the spec's headers are invalid: this is the outcome of every run, NULL: valid */
};

static void http_destroy(struct probe_http *h) {
        if (h->easy) {
                if (h->running)
                        curl_loop_cancel(h->env->curl, h->easy);
                curl_easy_cleanup(h->easy);
        }
        curl_slist_free_all(h->headers);
        free(h->host);
        if (h->refused)
                event_free(h->refused);
        free(h->refused_msg);
        free(h->url);
        free(h->first_host);
        free(h->redirect);
        free(h->body);
        free(h);
}

struct probe_http *probe_http_free(struct probe_http *h) {
        if (!h)
                return NULL;
        if (h->reporting) {
                /* inside our own callback: stop here, free when it returns */
                h->op.done = NULL;
                h->doomed = true;
                return NULL;
        }
        http_destroy(h);
        return NULL;
}

/* stop the run in flight, keep the handle for the next one */
static void http_stop(struct probe_http *h) {
        if (h->refused)
                evtimer_del(h->refused);
        if (h->running) {
                curl_loop_cancel(h->env->curl, h->easy);
                h->running = false;
        }
        h->op.done = NULL;
}

static void http_cancel(struct probe_op *op) {
        struct probe_http *h = (struct probe_http *) op;

        if (h->one_shot)
                probe_http_free(h);
        else
                http_stop(h);
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        struct probe_http *h = userdata;
        size_t n = size * nmemb, room = PROBE_MAX_OUTPUT - h->body_seen, take = MIN(n, room);

        if (h->body_seen == 0) {
                long status = 0;
                /* the headers are in: keep the body only where it is shown (a redirect not followed) */
                curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
                h->keep_body = status >= 300 && status < 400;
                if (h->keep_body && !h->body && !(h->body = malloc(PROBE_MAX_OUTPUT + 1)))
                        return 0; /* out of memory: abort the transfer */
        }
        if (h->keep_body && take > 0) {
                memcpy(h->body + h->body_len, ptr, take);
                h->body_len += take;
        }
        h->body_seen += take;
        if (n > room) {
                h->truncated = true;
                return 0; /* enough: abort the transfer (a "non fatal body truncation" upstream) */
        }
        return n;
}

static char *url_host(const char *url) {
        CURLU *u = curl_url();
        char *host = NULL, *copy = NULL;

        if (!u)
                return NULL;
        if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK && host)
                copy = strdup(host);
        curl_free(host);
        curl_url_cleanup(u);
        return copy;
}

static int start_request(struct probe_http *h);

/* Deliver the outcome; h may be freed by the callback (one-shot, or the worker went): touch nothing after. */
static void report(struct probe_http *h, enum probe_result result, bool warning, const char *output, int error) {
        bool doomed;

        h->reporting = true;
        probe_op_report(&h->op, result, warning, output, error);
        h->reporting = false;
        doomed = h->doomed || h->one_shot;
        if (doomed)
                http_destroy(h);
}

static void on_done(CURL *easy, CURLcode result, void *userdata) {
        struct probe_http *h = userdata;
        const char *url = h->redirect ? h->redirect : h->url;
        long status = 0;
        char *redirect = NULL;

        h->running = false;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (h->body)
                h->body[h->body_len] = '\0';

        if (result != CURLE_OK && !(result == CURLE_WRITE_ERROR && h->truncated && status > 0)) {
                _cleanup_free_ char *msg = NULL;
                /* a timeout reads as Go's net/http says it (upstream's probe output); other errors as libcurl does */
                const char *why = result == CURLE_OPERATION_TIMEDOUT
                                          ? "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
                                  : h->errbuf[0] ? h->errbuf
                                                 : curl_easy_strerror(result);
                if (asprintf(&msg, "Get \"%s\": %s", url, why) < 0)
                        msg = NULL;
                report(h, PROBE_RESULT_FAILURE, false, msg ? msg : "request failed", 0);
                return;
        }
        if (status >= 300 && status < 400 && curl_easy_getinfo(easy, CURLINFO_REDIRECT_URL, &redirect) == CURLE_OK &&
            redirect) {
                _cleanup_free_ char *host = url_host(redirect);
                if (host && h->first_host && strcasecmp(host, h->first_host) == 0) {
                        if (h->redirects >= MAX_REDIRECTS) {
                                _cleanup_free_ char *msg = NULL;
                                if (asprintf(&msg, "Get \"%s\": stopped after %d redirects", redirect, MAX_REDIRECTS) <
                                    0)
                                        msg = NULL;
                                report(h, PROBE_RESULT_FAILURE, false, msg ? msg : "too many redirects", 0);
                                return;
                        }
                        h->redirects++;
                        if (free_and_strdup(&h->redirect, redirect) < 0 || start_request(h) < 0)
                                report(h, PROBE_RESULT_UNKNOWN, false, "cannot follow the redirect", -ENOMEM);
                        return;
                }
        }
        if (status >= 200 && status < 400) {
                if (status >= 300) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg, "Probe terminated redirects, Response body: %s", strempty(h->body)) < 0)
                                msg = NULL;
                        report(h, PROBE_RESULT_SUCCESS, true, msg ? msg : "", 0);
                } else
                        report(h, PROBE_RESULT_SUCCESS, false, "", 0);
        } else {
                char msg[64];
                snprintf(msg, sizeof(msg), "HTTP probe failed with statuscode: %ld", status);
                report(h, PROBE_RESULT_FAILURE, false, msg, 0);
        }
}

static int start_request(struct probe_http *h) {
        int r;

        h->body_len = h->body_seen = 0;
        h->keep_body = h->truncated = false;
        h->errbuf[0] = '\0';
        if (curl_easy_setopt(h->easy, CURLOPT_URL, h->redirect ? h->redirect : h->url) != CURLE_OK)
                return -EINVAL;
        r = curl_loop_add(h->env->curl, h->easy, on_done, h);
        if (r < 0)
                return r;
        h->running = true;
        return 0;
}

static void on_refused(evutil_socket_t fd, short what, void *userdata) {
        struct probe_http *h = userdata;

        report(h, PROBE_RESULT_FAILURE, false, h->refused_msg, 0);
}

/* The request's headers: the probe's (a "Name;" line sends one with an empty value), then the defaults.
 * The default Accept ("*" "/" "*") is libcurl's own, left out of the list (a custom header costs libcurl more per
 * request); the probe's Accept header replaces it. */
static int build_headers(const struct probe *spec, bool connection_close, struct curl_slist **ret) {
        struct curl_slist *l = NULL, *n;
        bool ua = false;

        for (size_t i = 0; i < spec->n_http_headers; i++) {
                const struct http_header *hd = &spec->http_headers[i];
                _cleanup_free_ char *line = NULL;

                if (strcasecmp(hd->name, "User-Agent") == 0)
                        ua = true;
                if (strcasecmp(hd->name, "Connection") == 0 && hd->value && strcasestr(hd->value, "close"))
                        connection_close = false; /* already says so */
                if (asprintf(&line, isempty(hd->value) ? "%s;" : "%s: %s", hd->name, strempty(hd->value)) < 0)
                        goto oom;
                n = curl_slist_append(l, line);
                if (!n)
                        goto oom;
                l = n;
        }
        if (!ua) {
                n = curl_slist_append(l, "User-Agent: kube-probe/" KUBE_VERSION_MAJOR_MINOR);
                if (!n)
                        goto oom;
                l = n;
        }
        if (connection_close) {
                n = curl_slist_append(l, "Connection: close");
                if (!n)
                        goto oom;
                l = n;
        }
        *ret = l;
        return 0;
oom:
        curl_slist_free_all(l);
        return -ENOMEM;
}

/* (Re)build the handle's request for req; the handle itself and its fixed options stay. */
static int http_setup(struct probe_http *h, const struct probe_request *req) {
        const struct probe *spec = req->spec;
        const char *path = isempty(spec->path) ? "/" : spec->path;
        bool https = spec->scheme && strcasecmp(spec->scheme, "HTTPS") == 0;
        long timeout_ms = (long) MAX(req->timeout_usec / USEC_PER_MSEC, (uint64_t) 1);
        _cleanup_free_ char *hostport = NULL, *url = NULL, *first_host = NULL, *host = NULL, *refused_msg = NULL;
        _cleanup_ck_error_ struct ck_error *bad = NULL;
        struct curl_slist *headers = NULL;
        int r;

        hostport = probe_join_host_port(req->host, req->port);
        host = strdup(req->host);
        if (!hostport || !host ||
            asprintf(&url, "%s://%s%s%s", https ? "https" : "http", hostport, path[0] == '/' ? "" : "/", path) < 0) {
                url = NULL;
                return -ENOMEM;
        }
        first_host = url_host(url);
        /* headers that would inject others: no request is ever sent for this spec (checked once per spec) */
        if (probe_check_http_headers(spec->http_headers, spec->n_http_headers, &bad) < 0 &&
            asprintf(&refused_msg, "Get \"%s\": %s", url, ck_error_message(bad)) < 0)
                return -ENOMEM;
        r = build_headers(spec, !h->one_shot, &headers);
        if (r < 0)
                return r;
        if (curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, headers) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_TIMEOUT_MS, timeout_ms) != CURLE_OK) {
                curl_slist_free_all(headers);
                return -EINVAL;
        }
        curl_slist_free_all(h->headers);
        h->headers = headers;
        free_and_replace(h->url, url);
        free_and_replace(h->first_host, first_host);
        free_and_replace(h->host, host);
        free_and_replace(h->refused_msg, refused_msg);
        h->spec = spec;
        h->port = req->port;
        h->timeout_usec = req->timeout_usec;
        return 0;
}

static int http_new(struct probe_env *env, bool one_shot, struct probe_http **ret) {
        struct probe_http *h;
        int r;

        if (!env->curl) {
                r = curl_loop_new(env->base, &env->curl);
                if (r < 0)
                        return r;
        }
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->op = (struct probe_op) { .cancel = http_cancel };
        h->env = env;
        h->one_shot = one_shot;
        h->easy = curl_easy_init();
        if (!h->easy) {
                free(h);
                return -ENOMEM;
        }
        /* what every request of this handle has in common */
        if (curl_loop_http_only(h->easy) != CURLE_OK || curl_easy_setopt(h->easy, CURLOPT_HTTPGET, 1L) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_PROXY, "") != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_FORBID_REUSE, 1L) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_SSL_VERIFYPEER, 0L) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_ERRORBUFFER, h->errbuf) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_WRITEFUNCTION, on_write) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_WRITEDATA, h) != CURLE_OK) {
                http_destroy(h);
                return -EINVAL;
        }
        *ret = h;
        return 0;
}

void probe_http_invalidate(struct probe_http *h) {
        if (h)
                h->spec = NULL; /* set up again at the next run */
}

static int http_run(struct probe_http *h, const struct probe_request *req, probe_done_t done, void *userdata,
                    struct probe_op **ret) {
        int r;

        http_stop(h);
        if (h->spec != req->spec || h->port != req->port || h->timeout_usec != req->timeout_usec ||
            !streq_ptr(h->host, req->host)) {
                r = http_setup(h, req);
                if (r < 0)
                        return r;
        }
        h->redirect = mfree(h->redirect);
        h->redirects = 0;
        h->op.done = done;
        h->op.userdata = userdata;
        if (h->refused_msg) {
                /* nothing is sent; the failure is reported from the loop, never inside this call */
                if (!h->refused)
                        h->refused = evtimer_new(h->env->base, on_refused, h);
                if (!h->refused || evtimer_add_usec(h->refused, 0) < 0) {
                        h->op.done = NULL;
                        return -ENOMEM;
                }
                *ret = &h->op;
                return 0;
        }
        r = start_request(h);
        if (r < 0) {
                h->op.done = NULL;
                return r;
        }
        *ret = &h->op;
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
