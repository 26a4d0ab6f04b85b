/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A strict, incremental HTTP/1.x response parser for our HTTP/1.1 clients (the probes' and hooks' in prober/http.c,
 * http/client.c for the manifest URL): status
 * line, headers, then a body delimited by Content-Length, chunked transfer coding or the end of the connection.
 * It allocates nothing: the caller owns the struct (reused between responses) and feeds it the bytes as they
 * come. Hard caps everywhere: a line, the whole header block, the number of headers, the body kept and the body
 * read (HTTP_RESP_MAX_BODY, upstream's maxRespBodyLength: past it the response counts as complete, the rest is
 * never read).
 *
 * What Go's net/http client rejects is rejected (obs-folded header lines, a header name that is not a token,
 * conflicting Content-Length headers, a transfer coding other than chunked, a chunk size that is not hex, ...);
 * a bare LF ends a line as it does for Go. 1xx informational responses (but 101) are skipped, up to 5 as Go does. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP_RESP_MAX_LINE 8192u          /* a status, header, chunk-size or trailer line */
#define HTTP_RESP_MAX_HEADER_BYTES 65536u /* the status line and the headers (trailers count too) */
#define HTTP_RESP_MAX_HEADERS 128u        /* header lines (trailers count too) */
#define HTTP_RESP_MAX_BODY (10u * 1024u)  /* body bytes read at most */
#define HTTP_RESP_MAX_INFORMATIONAL 5u    /* 1xx responses skipped before the final one */

enum http_resp_event {
        HTTP_RESP_MORE = 0,    /* all the bytes were used, more are needed */
        HTTP_RESP_HEADERS = 1, /* the final response's headers are complete (status, location known) */
        HTTP_RESP_DONE = 2,    /* the response is complete (or HTTP_RESP_MAX_BODY bytes of body were read) */
};

struct http_resp {
        int state;
        int status;
        int minor; /* HTTP/1.<minor> */
        bool chunked, has_length;
        bool keep_body; /* set by the caller after HTTP_RESP_HEADERS: store the body in body[] */
        bool truncated; /* HTTP_RESP_MAX_BODY bytes read: the rest was not */
        bool has_location;
        bool conn_close;           /* a "Connection: close" header: no further response on this connection */
        char retry_after[32];      /* the Retry-After value ("" if none or longer) */
        char content_encoding[16]; /* the Content-Encoding value ("" if none or longer) */
        uint64_t length;           /* Content-Length */
        uint64_t remaining;        /* of the Content-Length body or of the current chunk */
        uint64_t body_seen;
        size_t body_len; /* stored in body[] */
        size_t header_bytes;
        unsigned n_headers, n_informational;
        const char *error; /* why the response was rejected (static) */
        /* set by the caller after http_resp_init() (which clears them): */
        uint64_t max_body; /* body bytes read at most, 0 = HTTP_RESP_MAX_BODY */
        /* every body byte goes here instead of body[] (keep_body is then ignored) */
        void (*on_body)(const char *data, size_t n, void *userdata);
        void *body_userdata;
        size_t line_len;
        size_t location_len;
        char line[HTTP_RESP_MAX_LINE];
        char location[HTTP_RESP_MAX_LINE]; /* NUL-terminated, valid when has_location */
        char body[HTTP_RESP_MAX_BODY + 1]; /* NUL-terminated, valid when body_len > 0 */
};

/* Ready for a new response. */
void http_resp_init(struct http_resp *p);

/* Feed n bytes. Returns an http_resp_event and in *ret_used how many bytes it used (all of them for
 * HTTP_RESP_MORE; for HTTP_RESP_HEADERS feed the rest again; after HTTP_RESP_DONE the rest is not part of the
 * response), or -EBADMSG with p->error set (and every later call fails too). */
int http_resp_feed(struct http_resp *p, const char *data, size_t n, size_t *ret_used);

/* The connection ended: HTTP_RESP_DONE when that completes the response (a body delimited by the end of the
 * connection, or a response already complete), else -EBADMSG with p->error ("EOF" when nothing at all came,
 * "unexpected EOF" otherwise), as Go words them. */
int http_resp_eof(struct http_resp *p);

/* Past the headers (a body is being read or the response is complete). */
bool http_resp_headers_done(const struct http_resp *p);
