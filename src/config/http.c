/* SPDX-License-Identifier: Apache-2.0 */
/* The http source (pkg/kubelet/config/http.go): GET the manifest URL every check interval — the first time
 * right away — with libcurl's multi interface driven by our event loop (basic/curl_loop.c), so nothing
 * waits on the network.
 *
 *  - 200 with a body: parsed as a manifest (Pods, PodLists, several documents); the whole body is one
 *    all-or-nothing set. A body identical to the last one is not parsed again.
 *  - 200 with an empty body: zero pods (upstream sends an empty set and reports "zero-length data").
 *  - any other status, a transport error or timeout (10 s), a body over MANIFEST_MAX_SIZE, a body that does
 *    not parse: an error; the source keeps its last good pods.
 * Errors are logged once each, until a different one happens or the URL works again. */
#include <curl/curl.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "basic/curl_loop.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "basic/log.h"
#include "basic/timer.h"
#include "config/config-internal.h"

#define HTTP_TIMEOUT_MS 10000L
#define HTTP_CONNECT_TIMEOUT_MS 5000L

struct http_source {
        struct pod_config *config;
        struct event_base *base;
        char *url;
        struct curl_slist *headers;
        uint64_t interval_usec;

        struct curl_loop *loop;
        CURL *easy; /* the transfer in flight, or NULL */
        struct event *poll_timer;
        char errbuf[CURL_ERROR_SIZE];

        char *body;
        size_t body_len, body_alloc;
        bool too_large;

        char last_body_hash[65]; /* of the last body processed, good or bad; "" = none */
        char *last_body_error;   /* why that body was bad, NULL if it was good */
        char *last_error;        /* last logged error, NULL after a success */
};

static void transfer_done(struct http_source *s) {
        if (s->easy) {
                curl_easy_cleanup(s->easy);
                s->easy = NULL;
        }
        free(s->body);
        s->body = NULL;
        s->body_len = s->body_alloc = 0;
        s->too_large = false;
}

static void http_source_free(void *data) {
        struct http_source *s = data;

        if (!s)
                return;
        if (s->easy) {
                curl_loop_cancel(s->loop, s->easy);
                curl_easy_cleanup(s->easy);
                s->easy = NULL;
        }
        curl_loop_free(s->loop);
        if (s->poll_timer)
                event_free(s->poll_timer);
        curl_slist_free_all(s->headers);
        free(s->body);
        free(s->last_error);
        free(s->last_body_error);
        free(s->url);
        free(s);
}

/* ---- results ---- */

/* "key" says which errors count as the same one (libcurl's messages carry timings); NULL: the message */
static void fetch_failed(struct http_source *s, const char *key, const char *fmt, ...) _printf_(3, 4);
static void fetch_failed(struct http_source *s, const char *key, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL, *k = NULL;
        int r;

        r = VA_FORMAT(msg, fmt);
        if (r < 0)
                return;
        k = strdup(key ? key : msg);
        if (!k)
                return;
        pod_config_source_attempted(s->config, CONFIG_SOURCE_HTTP);
        if (s->last_error && streq(s->last_error, k)) {
                log_v(4, "Failed to read pods from URL %s: %s", s->url, msg);
                return;
        }
        log_warning("Failed to read pods from URL %s: %s (keeping the pods it gave before)", s->url, msg);
        free(s->last_error);
        s->last_error = TAKE_PTR(k);
}

static void fetch_succeeded(struct http_source *s) {
        if (s->last_error)
                log_info("Successfully read pods from URL %s", s->url);
        free(s->last_error);
        s->last_error = NULL;
}

static void process_body(struct http_source *s) {
        _cleanup_ck_error_ struct ck_error *error = NULL;
        struct pod_set set = {};
        char hex[65];
        int r;

        r = hash_hex("sha256", s->body ? s->body : "", s->body_len, hex, sizeof(hex));
        if (r < 0) {
                fetch_failed(s, NULL, "cannot hash the response: %s", strerror(-r));
                return;
        }
        if (streq(hex, s->last_body_hash)) {
                /* unchanged since last time: same outcome as then (logged only if something else happened
                 * in between) */
                log_v(5, "Manifest at %s is unchanged", s->url);
                if (s->last_body_error)
                        fetch_failed(s, NULL, "%s", s->last_body_error);
                else
                        fetch_succeeded(s);
                return;
        }
        memcpy(s->last_body_hash, hex, sizeof(hex));
        free(s->last_body_error);
        s->last_body_error = NULL;

        if (s->body_len == 0) {
                /* as upstream: an empty set, and a warning */
                log_warning("Zero-length data received from %s: no pods from this URL", s->url);
                fetch_succeeded(s);
        } else {
                r = pod_config_static_pods_from_manifest(s->body, s->body_len, pod_config_get_node_name(s->config),
                                                         CONFIG_SOURCE_HTTP, s->url, &set, &error);
                if (r < 0) {
                        s->last_body_error = strdup(error ? ck_error_message(error) : strerror(-r));
                        if (!s->last_body_error)
                                s->last_body_hash[0] = '\0';
                        fetch_failed(s, NULL, "%s", error ? ck_error_message(error) : strerror(-r));
                        return;
                }
                fetch_succeeded(s);
                log_v(3, "Read %zu pods from URL %s", set.n, s->url);
        }
        r = pod_config_set_source_pods(s->config, CONFIG_SOURCE_HTTP, &set);
        if (r < 0) {
                log_error("Cannot hand over the pods of %s: %s", s->url, strerror(-r));
                s->last_body_hash[0] = '\0'; /* try again next time */
        }
}

static void on_transfer_done(CURL *easy, CURLcode result, void *userdata) {
        struct http_source *s = userdata;
        long status = 0;

        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
        if (s->too_large || result == CURLE_FILESIZE_EXCEEDED)
                fetch_failed(s, NULL, "response body is larger than %u bytes", MANIFEST_MAX_SIZE);
        else if (result != CURLE_OK)
                fetch_failed(s, curl_easy_strerror(result), "%s",
                             s->errbuf[0] ? s->errbuf : curl_easy_strerror(result));
        else if (status != 200)
                fetch_failed(s, NULL, "server returned HTTP status %ld", status);
        else
                process_body(s);

        transfer_done(s);
        evtimer_add_usec(s->poll_timer, s->interval_usec);
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *userdata) {
        struct http_source *s = userdata;
        size_t n = size * nmemb;

        if (n > MANIFEST_MAX_SIZE || s->body_len + n > MANIFEST_MAX_SIZE) {
                s->too_large = true;
                return 0; /* aborts the transfer */
        }
        if (s->body_len + n + 1 > s->body_alloc) {
                size_t na = MAX(s->body_alloc * 2, s->body_len + n + 1);
                char *nb;

                na = MIN(na, (size_t) MANIFEST_MAX_SIZE + 1);
                nb = realloc(s->body, na);
                if (!nb)
                        return 0;
                s->body = nb;
                s->body_alloc = na;
        }
        memcpy(s->body + s->body_len, ptr, n);
        s->body_len += n;
        s->body[s->body_len] = '\0';
        return n;
}

static int start_fetch(struct http_source *s) {
        CURL *e;

        e = curl_easy_init();
        if (!e)
                return -ENOMEM;
        s->errbuf[0] = '\0';
        if (curl_easy_setopt(e, CURLOPT_URL, s->url) != CURLE_OK || curl_loop_http_only(e) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_MAXREDIRS, 10L) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->headers) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, HTTP_TIMEOUT_MS) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, HTTP_CONNECT_TIMEOUT_MS) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t) MANIFEST_MAX_SIZE) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_USERAGENT, "ckubelet/" CKUBELET_VERSION) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_ERRORBUFFER, s->errbuf) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, write_cb) != CURLE_OK ||
            curl_easy_setopt(e, CURLOPT_WRITEDATA, s) != CURLE_OK) {
                curl_easy_cleanup(e);
                return -EINVAL;
        }
        if (curl_loop_add(s->loop, e, on_transfer_done, s) < 0) {
                curl_easy_cleanup(e);
                return -ENOMEM;
        }
        s->easy = e;
        return 0;
}

static void on_poll(evutil_socket_t fd, short what, void *userdata) {
        struct http_source *s = userdata;
        int r;

        if (s->easy)
                return; /* still running; the next poll is armed when it completes */
        r = start_fetch(s);
        if (r < 0) {
                fetch_failed(s, NULL, "cannot start the request: %s", strerror(-r));
                evtimer_add_usec(s->poll_timer, s->interval_usec);
        }
}

/* "Key: value" → a curl header line; curl drops "Key:" with nothing after it, "Key;" sends it empty */
static int headers_build(char *const *headers, struct curl_slist **ret) {
        struct curl_slist *l = NULL;

        for (char *const *h = headers; h && *h; h++) {
                _cleanup_free_ char *line = NULL;
                const char *colon = strchr(*h, ':'), *v;
                struct curl_slist *n;

                if (!colon || colon == *h || strpbrk(*h, "\r\n")) {
                        curl_slist_free_all(l);
                        return -EINVAL;
                }
                for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
                        ;
                if (*v == '\0') {
                        if (asprintf(&line, "%.*s;", (int) (colon - *h), *h) < 0)
                                line = NULL;
                } else
                        line = strdup(*h);
                if (!line) {
                        curl_slist_free_all(l);
                        return -ENOMEM;
                }
                n = curl_slist_append(l, line);
                if (!n) {
                        curl_slist_free_all(l);
                        return -ENOMEM;
                }
                l = n;
        }
        *ret = l;
        return 0;
}

int pod_config_add_http_source(struct pod_config *c, const char *url, char *const *headers,
                               uint64_t check_interval_usec) {
        struct http_source *s;
        int r;

        if (!c || isempty(url) || check_interval_usec == 0)
                return -EINVAL;
        if (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0) {
                log_error("Manifest URL \"%s\" is not an http:// or https:// URL", url);
                return -EINVAL;
        }
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->config = c;
        s->base = pod_config_get_event_base(c);
        s->interval_usec = check_interval_usec;
        s->url = strdup(url);
        if (!s->url) {
                http_source_free(s);
                return -ENOMEM;
        }
        r = headers_build(headers, &s->headers);
        if (r < 0) {
                log_error("Invalid header for manifest URL %s", url);
                http_source_free(s);
                return r;
        }
        s->poll_timer = evtimer_new(s->base, on_poll, s);
        if (!s->poll_timer || curl_loop_new(s->base, &s->loop) < 0) {
                log_error("Cannot initialize libcurl");
                http_source_free(s);
                return -ENOMEM;
        }

        r = pod_config_register_source(c, CONFIG_SOURCE_HTTP, s, http_source_free);
        if (r < 0) {
                log_error("Cannot add the http source %s: %s", url,
                          r == -EEXIST ? "an http source is already configured" : strerror(-r));
                http_source_free(s);
                return r;
        }
        log_v(1, "Watching URL %s", url);
        evtimer_add_usec(s->poll_timer, 0); /* first fetch right away, on the loop */
        return 0;
}
