/* SPDX-License-Identifier: Apache-2.0 */
/* The http source (pkg/kubelet/config/http.go): GET the manifest URL every check interval — the first time
 * right away — with our HTTP/1.1 client on the event loop (http/client.c: redirects followed, 10 s deadline,
 * 5 s to connect, the body capped), so nothing waits on the network.
 *
 *  - 200 with a body: parsed as a manifest (Pods, PodLists, several documents); the whole body is one
 *    all-or-nothing set. A body identical to the last one is not parsed again.
 *  - 200 with an empty body: zero pods (upstream sends an empty set and reports "zero-length data").
 *  - any other status, a transport error or timeout (10 s), a body over MANIFEST_MAX_SIZE, a body that does
 *    not parse: an error; the source keeps its last good pods.
 * Errors are logged once each, until a different one happens or the URL works again. */
#include <event2/dns.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "basic/error.h"
#include "basic/hash.h"
#include "basic/log.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "config/config-internal.h"
#include "http/client.h"

#define HTTP_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define HTTP_CONNECT_TIMEOUT_USEC (5 * USEC_PER_SEC)
#define HTTP_MAX_REDIRECTS 10u

struct http_source {
        struct pod_config *config;
        struct event_base *base;
        char *url;
        char **headers;
        uint64_t interval_usec;

        struct evdns_base *dns;
        struct http_get *get; /* the request in flight, or NULL */
        struct event *poll_timer;

        const char *body; /* of the response being processed */
        size_t body_len;

        char last_body_hash[65]; /* of the last body processed, good or bad; "" = none */
        char *last_body_error;   /* why that body was bad, NULL if it was good */
        char *last_error;        /* last logged error, NULL after a success */
};

static void http_source_free(void *data) {
        struct http_source *s = data;

        if (!s)
                return;
        http_get_cancel(s->get);
        if (s->dns)
                evdns_base_free(s->dns, 0);
        if (s->poll_timer)
                event_free(s->poll_timer);
        strv_free(s->headers);
        free(s->last_error);
        free(s->last_body_error);
        free(s->url);
        free(s);
}

/* ---- results ---- */

/* "key" says which errors count as the same one; NULL: the message */
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
                        s->last_body_error = strdup(ck_error_message_or(error, r));
                        if (!s->last_body_error)
                                s->last_body_hash[0] = '\0';
                        fetch_failed(s, NULL, "%s", ck_error_message_or(error, r));
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

static void on_fetched(const struct http_get_result *res, void *userdata) {
        struct http_source *s = userdata;

        s->get = NULL;
        if (res->too_large)
                fetch_failed(s, NULL, "response body is larger than %u bytes", MANIFEST_MAX_SIZE);
        else if (res->r < 0)
                fetch_failed(s, NULL, "%s", res->error);
        else if (res->status != 200)
                fetch_failed(s, NULL, "server returned HTTP status %d", res->status);
        else {
                s->body = res->body;
                s->body_len = res->body_len;
                process_body(s);
                s->body = NULL;
                s->body_len = 0;
        }
        evtimer_add_usec(s->poll_timer, s->interval_usec);
}

static void on_poll(evutil_socket_t fd, short what, void *userdata) {
        struct http_source *s = userdata;
        struct http_get_options o = {
                .url = s->url,
                .headers = s->headers,
                .user_agent = "ckubelet/" CKUBELET_VERSION,
                .timeout_usec = HTTP_TIMEOUT_USEC,
                .connect_timeout_usec = HTTP_CONNECT_TIMEOUT_USEC,
                .max_body = MANIFEST_MAX_SIZE,
                .max_redirects = HTTP_MAX_REDIRECTS,
        };
        int r;

        if (s->get)
                return; /* still running; the next poll is armed when it completes */
        r = http_get(s->base, s->dns, &o, on_fetched, s, &s->get);
        if (r < 0) {
                s->get = NULL;
                fetch_failed(s, NULL, "cannot start the request: %s", strerror(-r));
                evtimer_add_usec(s->poll_timer, s->interval_usec);
        }
}

/* "Key: value" lines, sent as given */
static int headers_build(char *const *headers, char ***ret) {
        for (char *const *h = headers; h && *h; h++) {
                const char *colon = strchr(*h, ':');
                if (!colon || colon == *h || strpbrk(*h, "\r\n"))
                        return -EINVAL;
        }
        if (!headers) {
                *ret = NULL;
                return 0;
        }
        return strv_copy(headers, ret);
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
        s->dns = evdns_base_new(s->base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
        if (s->dns)
                (void) evdns_base_load_hosts(s->dns, NULL);
        else
                log_warning("No DNS resolver for %s: only an IP address in the URL works", url);
        if (!s->poll_timer) {
                log_error("Cannot set up the client for %s", url);
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
