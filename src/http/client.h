/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A small HTTP/1.1 GET client on the kubelet's loop (the manifest URL source): one connection per request
 * ("Connection: close"), http:// and https:// (OpenSSL through a libevent bufferevent, the system's CAs and the
 * URL's host checked), the response parsed by http/http_response.c, redirects followed (http and https only, up
 * to max_redirects), a hard cap on the body, an overall deadline and a connect deadline on the loop's timer seam.
 * Nothing blocks: names are resolved with evdns. The callback runs exactly once, from the loop, never inside
 * http_get(), unless the request is cancelled first. */

#include <event2/dns.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_get;

struct http_get_options {
        const char *url;               /* http:// or https:// */
        char *const *headers;          /* "Name: value" lines sent as given (NULL-terminated, may be NULL) */
        const char *user_agent;        /* NULL: none */
        uint64_t timeout_usec;         /* the whole request, redirects included; 0: none */
        uint64_t connect_timeout_usec; /* each connection (TLS handshake included); 0: none */
        size_t max_body;               /* body bytes kept at most; a longer body fails with too_large */
        unsigned max_redirects;
};

struct http_get_result {
        int r;             /* 0, or a negative errno (no complete response; -EFBIG: too large) */
        int status;        /* the final response's status (0 when none) */
        const char *error; /* why r < 0 ("" when fine) */
        const char *body;  /* NUL-terminated, valid during the callback */
        size_t body_len;
        bool too_large; /* the body is longer than max_body */
};

typedef void (*http_get_done_t)(const struct http_get_result *res, void *userdata);

/* Header lines are checked here: a line without a colon, an empty name, or CR/LF anywhere gives -EINVAL. */
int http_get(struct event_base *base, struct evdns_base *dns, const struct http_get_options *o, http_get_done_t done,
             void *userdata, struct http_get **ret);
/* The callback will not run. Accepts NULL. */
void http_get_cancel(struct http_get *g);
