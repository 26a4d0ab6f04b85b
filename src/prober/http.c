/* SPDX-License-Identifier: Apache-2.0 */
/* httpGet probe (pkg/probe/http): GET scheme://host:port/path with libcurl on the event loop.
 *
 *  - HTTPS without certificate checks, no proxy, no connection reuse (upstream: InsecureSkipVerify,
 *    Proxy nil, DisableKeepAlives);
 *  - headers: the probe's httpHeaders ("Host" sets the request host), then User-Agent
 *    "kube-probe/<major>.<minor>" and Accept "*" "/" "*" unless given;
 *  - 200-399 is success; a redirect is followed (up to 10) only while it stays on the same host name,
 *    else the 3xx itself is a success with a warning ("Probe terminated redirects");
 *  - at most 10 KiB of body is read (the rest is not waited for);
 *  - a header name that is not a token or a value with a control character (CR/LF) fails the probe without
 *    sending anything, as Go's client does (libcurl would send the value as it is: header injection).
 */
#include <string.h>
#include <strings.h>

#include "basic/curl_loop.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/time.h"
#include "prober/handlers.h"

#define MAX_REDIRECTS 10

struct http_op {
        struct probe_op op;
        struct probe_env *env;
        CURL *easy;
        struct curl_slist *headers;
        char *url;        /* the current request's */
        char *first_host; /* host name of the first request */
        int redirects;
        char *body;
        size_t body_len;
        bool truncated;
        char errbuf[CURL_ERROR_SIZE];
        struct event *refused; /* reports a request that is not sent (invalid headers) */
        char *refused_msg;
};

static void http_free(struct http_op *h) {
        if (h->easy) {
                curl_loop_cancel(h->env->curl, h->easy);
                curl_easy_cleanup(h->easy);
        }
        curl_slist_free_all(h->headers);
        if (h->refused)
                event_free(h->refused);
        free(h->refused_msg);
        free(h->url);
        free(h->first_host);
        free(h->body);
        free(h);
}

static void http_cancel(struct probe_op *op) {
        http_free((struct http_op *) op);
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        struct http_op *h = userdata;
        size_t n = size * nmemb, room = PROBE_MAX_OUTPUT - h->body_len;

        if (n > room) {
                memcpy(h->body + h->body_len, ptr, room);
                h->body_len += room;
                h->truncated = true;
                return 0; /* enough: abort the transfer (a "non fatal body truncation" upstream) */
        }
        memcpy(h->body + h->body_len, ptr, n);
        h->body_len += n;
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

static int start_request(struct http_op *h);

static void on_done(CURL *easy, CURLcode result, void *userdata) {
        struct http_op *h = userdata;
        long status = 0;
        char *redirect = NULL;

        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        h->body[h->body_len] = '\0';

        if (result != CURLE_OK && !(result == CURLE_WRITE_ERROR && h->truncated && status > 0)) {
                _cleanup_free_ char *msg = NULL;
                /* a timeout reads as Go's net/http says it (upstream's probe output); other errors as libcurl does */
                const char *why = result == CURLE_OPERATION_TIMEDOUT
                                          ? "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
                                  : h->errbuf[0] ? h->errbuf
                                                 : curl_easy_strerror(result);
                if (asprintf(&msg, "Get \"%s\": %s", h->url, why) < 0)
                        msg = NULL;
                probe_op_report(&h->op, PROBE_RESULT_FAILURE, false, msg ? msg : "request failed", 0);
                http_free(h);
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
                                probe_op_report(&h->op, PROBE_RESULT_FAILURE, false, msg ? msg : "too many redirects",
                                                0);
                                http_free(h);
                                return;
                        }
                        h->redirects++;
                        if (free_and_strdup(&h->url, redirect) < 0 || start_request(h) < 0) {
                                probe_op_report(&h->op, PROBE_RESULT_UNKNOWN, false, "cannot follow the redirect",
                                                -ENOMEM);
                                http_free(h);
                        }
                        return;
                }
        }
        if (status >= 200 && status < 400) {
                if (status >= 300) {
                        _cleanup_free_ char *msg = NULL;
                        if (asprintf(&msg, "Probe terminated redirects, Response body: %s", h->body) < 0)
                                msg = NULL;
                        probe_op_report(&h->op, PROBE_RESULT_SUCCESS, true, msg ? msg : "", 0);
                } else
                        probe_op_report(&h->op, PROBE_RESULT_SUCCESS, false, h->body, 0);
        } else {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "HTTP probe failed with statuscode: %ld", status) < 0)
                        msg = NULL;
                probe_op_report(&h->op, PROBE_RESULT_FAILURE, false, msg ? msg : "HTTP probe failed", 0);
        }
        http_free(h);
}

static int start_request(struct http_op *h) {
        h->body_len = 0;
        h->truncated = false;
        h->errbuf[0] = '\0';
        if (curl_easy_setopt(h->easy, CURLOPT_URL, h->url) != CURLE_OK)
                return -EINVAL;
        return curl_loop_add(h->env->curl, h->easy, on_done, h);
}

static void on_refused(evutil_socket_t fd, short what, void *userdata) {
        struct http_op *h = userdata;

        probe_op_report(&h->op, PROBE_RESULT_FAILURE, false, h->refused_msg, 0);
        http_free(h);
}

/* The request's headers: the probe's (a "Name;" line sends one with an empty value), then the defaults. */
static int build_headers(const struct probe *spec, struct curl_slist **ret) {
        struct curl_slist *l = NULL, *n;
        bool ua = false, accept = false;

        for (size_t i = 0; i < spec->n_http_headers; i++) {
                const struct http_header *hd = &spec->http_headers[i];
                _cleanup_free_ char *line = NULL;

                if (strcasecmp(hd->name, "User-Agent") == 0)
                        ua = true;
                if (strcasecmp(hd->name, "Accept") == 0)
                        accept = true;
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
        if (!accept) {
                n = curl_slist_append(l, "Accept: */*");
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

int probe_http_start(struct probe_env *env, const struct probe_request *req, probe_done_t done, void *userdata,
                     struct probe_op **ret) {
        const struct probe *spec = req->spec;
        const char *path = isempty(spec->path) ? "/" : spec->path;
        _cleanup_free_ char *hostport = NULL;
        bool https = spec->scheme && strcasecmp(spec->scheme, "HTTPS") == 0;
        long timeout_ms = (long) MAX(req->timeout_usec / USEC_PER_MSEC, (uint64_t) 1);
        struct http_op *h;
        int r;

        if (isempty(req->host) || req->port < 1 || req->port > 65535)
                return -EINVAL;
        if (!env->curl) {
                r = curl_loop_new(env->base, &env->curl);
                if (r < 0)
                        return r;
        }
        hostport = probe_join_host_port(req->host, req->port);
        h = calloc(1, sizeof(*h));
        if (!hostport || !h) {
                free(h);
                return -ENOMEM;
        }
        h->op = (struct probe_op) { .cancel = http_cancel, .done = done, .userdata = userdata };
        h->env = env;
        h->body = malloc(PROBE_MAX_OUTPUT + 1);
        h->easy = curl_easy_init();
        if (!h->body || !h->easy ||
            asprintf(&h->url, "%s://%s%s%s", https ? "https" : "http", hostport, path[0] == '/' ? "" : "/", path) < 0) {
                h->url = NULL;
                http_free(h);
                return -ENOMEM;
        }
        h->first_host = url_host(h->url);
        {
                _cleanup_ck_error_ struct ck_error *bad = NULL;
                if (probe_check_http_headers(spec->http_headers, spec->n_http_headers, &bad) < 0) {
                        /* reported from the loop, never inside this call */
                        if (asprintf(&h->refused_msg, "Get \"%s\": %s", h->url, ck_error_message(bad)) < 0)
                                h->refused_msg = NULL;
                        h->refused = evtimer_new(env->base, on_refused, h);
                        if (!h->refused_msg || !h->refused || evtimer_add(h->refused, &(struct timeval) {}) < 0) {
                                http_free(h);
                                return -ENOMEM;
                        }
                        *ret = &h->op;
                        return 0;
                }
        }
        r = build_headers(spec, &h->headers);
        if (r < 0) {
                http_free(h);
                return r;
        }
        if (curl_loop_http_only(h->easy) != CURLE_OK || curl_easy_setopt(h->easy, CURLOPT_HTTPGET, 1L) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_FOLLOWLOCATION, 0L) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, h->headers) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_TIMEOUT_MS, timeout_ms) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_PROXY, "") != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_FORBID_REUSE, 1L) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_SSL_VERIFYPEER, 0L) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_SSL_VERIFYHOST, 0L) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_ERRORBUFFER, h->errbuf) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_WRITEFUNCTION, on_write) != CURLE_OK ||
            curl_easy_setopt(h->easy, CURLOPT_WRITEDATA, h) != CURLE_OK) {
                http_free(h);
                return -EINVAL;
        }
        r = start_request(h);
        if (r < 0) {
                http_free(h);
                return r;
        }
        *ret = &h->op;
        return 0;
}
