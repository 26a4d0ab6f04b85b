/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.x response parser of our HTTP clients (probes, hooks, the manifest URL): see http_response.h. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "http/http_response.h"

enum {
        S_STATUS,
        S_HEADER,
        S_BODY_LENGTH,
        S_BODY_CLOSE,
        S_CHUNK_SIZE,
        S_CHUNK_DATA,
        S_CHUNK_END, /* the CRLF after a chunk's data */
        S_TRAILER,
        S_DONE,
        S_ERROR,
};

void http_resp_init(struct http_resp *p) {
        p->state = S_STATUS;
        p->status = 0;
        p->minor = 0;
        p->chunked = p->has_length = p->keep_body = p->truncated = p->has_location = false;
        p->length = p->remaining = p->body_seen = 0;
        p->body_len = p->header_bytes = p->line_len = p->location_len = 0;
        p->n_headers = p->n_informational = 0;
        p->error = NULL;
        p->max_body = 0;
        p->conn_close = false;
        p->retry_after[0] = '\0';
        p->content_encoding[0] = '\0';
        p->on_body = NULL;
        p->body_userdata = NULL;
        /* line, location and body are not touched until used: a parser's untouched pages cost no memory */
}

bool http_resp_headers_done(const struct http_resp *p) {
        return p->state != S_STATUS && p->state != S_HEADER && p->state != S_ERROR;
}

static int fail(struct http_resp *p, const char *why) {
        p->state = S_ERROR;
        p->error = why;
        return -EBADMSG;
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

/* RFC 9110 tchar */
static bool is_tchar(unsigned char c) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit((char) c))
                return true;
        return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int hex_value(char c) {
        if (is_digit(c))
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* "HTTP/1.x SP 3DIGIT [SP reason]" */
static int parse_status(struct http_resp *p, const char *l, size_t n) {
        if (n < 8 || memcmp(l, "HTTP/", 5) != 0)
                return fail(p, "malformed HTTP response");
        if (l[5] != '1' || l[6] != '.' || !is_digit(l[7]))
                return fail(p, "malformed HTTP version");
        if (n < 12 || l[8] != ' ' || !is_digit(l[9]) || !is_digit(l[10]) || !is_digit(l[11]) ||
            (n > 12 && l[12] != ' '))
                return fail(p, "malformed HTTP status code");
        for (size_t i = 12; i < n; i++) {
                unsigned char c = (unsigned char) l[i];
                if ((c < 0x20 && c != '\t') || c == 0x7f)
                        return fail(p, "malformed HTTP status line");
        }
        p->minor = l[7] - '0';
        p->status = (l[9] - '0') * 100 + (l[10] - '0') * 10 + (l[11] - '0');
        p->state = S_HEADER;
        return HTTP_RESP_MORE;
}

static int parse_content_length(struct http_resp *p, const char *v, size_t n) {
        uint64_t x = 0;

        if (n == 0)
                return fail(p, "bad Content-Length");
        for (size_t i = 0; i < n; i++) {
                if (!is_digit(v[i]) || x > (UINT64_MAX / 2 - 9) / 10)
                        return fail(p, "bad Content-Length");
                x = x * 10 + (uint64_t) (v[i] - '0');
        }
        if (p->has_length && p->length != x)
                return fail(p, "message cannot contain multiple Content-Length headers");
        p->has_length = true;
        p->length = x;
        return HTTP_RESP_MORE;
}

/* after the empty line that ends the headers */
static int headers_end(struct http_resp *p) {
        if (p->status >= 100 && p->status < 200 && p->status != 101) {
                /* informational: the real response follows */
                if (++p->n_informational > HTTP_RESP_MAX_INFORMATIONAL)
                        return fail(p, "too many 1xx informational responses");
                p->state = S_STATUS;
                p->chunked = p->has_length = p->has_location = false;
                p->length = 0;
                p->location_len = 0;
                return HTTP_RESP_MORE;
        }
        if ((p->status >= 100 && p->status < 200) || p->status == 204 || p->status == 304)
                p->state = S_DONE;
        else if (p->chunked)
                p->state = S_CHUNK_SIZE;
        else if (p->has_length) {
                p->remaining = p->length;
                p->state = p->length == 0 ? S_DONE : S_BODY_LENGTH;
        } else
                p->state = S_BODY_CLOSE;
        return HTTP_RESP_HEADERS;
}

static int parse_header(struct http_resp *p, const char *l, size_t n) {
        size_t i = 0, vs, ve;

        if (n == 0)
                return headers_end(p);
        if (l[0] == ' ' || l[0] == '\t')
                return fail(p, "malformed MIME header: continuation line");
        if (++p->n_headers > HTTP_RESP_MAX_HEADERS)
                return fail(p, "too many headers");
        while (i < n && l[i] != ':') {
                if (!is_tchar((unsigned char) l[i]))
                        return fail(p, "malformed MIME header line");
                i++;
        }
        if (i == 0 || i == n)
                return fail(p, "malformed MIME header line");
        vs = i + 1;
        ve = n;
        while (vs < ve && (l[vs] == ' ' || l[vs] == '\t'))
                vs++;
        while (ve > vs && (l[ve - 1] == ' ' || l[ve - 1] == '\t'))
                ve--;
        for (size_t j = vs; j < ve; j++) {
                unsigned char c = (unsigned char) l[j];
                if ((c < 0x20 && c != '\t') || c == 0x7f)
                        return fail(p, "malformed MIME header value");
        }
        if (i == 14 && strncasecmp(l, "Content-Length", i) == 0)
                return parse_content_length(p, l + vs, ve - vs);
        if (i == 17 && strncasecmp(l, "Transfer-Encoding", i) == 0) {
                if (p->minor == 0)
                        return HTTP_RESP_MORE; /* HTTP/1.0: ignored, as Go does */
                if (p->chunked)
                        return fail(p, "too many transfer encodings");
                if (ve - vs != 7 || strncasecmp(l + vs, "chunked", 7) != 0)
                        return fail(p, "unsupported transfer encoding");
                p->chunked = true;
                return HTTP_RESP_MORE;
        }
        if (i == 10 && strncasecmp(l, "Connection", i) == 0) {
                for (size_t j = vs; j + 5 <= ve; j++)
                        if (strncasecmp(l + j, "close", 5) == 0)
                                p->conn_close = true;
                return HTTP_RESP_MORE;
        }
        if (i == 11 && strncasecmp(l, "Retry-After", i) == 0) {
                if (ve - vs < sizeof(p->retry_after)) {
                        memcpy(p->retry_after, l + vs, ve - vs);
                        p->retry_after[ve - vs] = '\0';
                }
                return HTTP_RESP_MORE;
        }
        if (i == 16 && strncasecmp(l, "Content-Encoding", i) == 0) {
                if (ve - vs < sizeof(p->content_encoding)) {
                        memcpy(p->content_encoding, l + vs, ve - vs);
                        p->content_encoding[ve - vs] = '\0';
                }
                return HTTP_RESP_MORE;
        }
        if (i == 8 && strncasecmp(l, "Location", i) == 0 && !p->has_location) {
                memcpy(p->location, l + vs, ve - vs);
                p->location[ve - vs] = '\0';
                p->location_len = ve - vs;
                p->has_location = true;
        }
        return HTTP_RESP_MORE;
}

/* hex digits, then optional whitespace and ";extensions" */
static int parse_chunk_size(struct http_resp *p, const char *l, size_t n) {
        uint64_t x = 0;
        size_t i = 0;

        for (; i < n && hex_value(l[i]) >= 0; i++) {
                if (i >= 15)
                        return fail(p, "http chunk length too large");
                x = x * 16 + (uint64_t) hex_value(l[i]);
        }
        if (i == 0)
                return fail(p, "invalid byte in chunk length");
        while (i < n && (l[i] == ' ' || l[i] == '\t'))
                i++;
        if (i < n && l[i] != ';')
                return fail(p, "invalid byte in chunk length");
        for (; i < n; i++) {
                unsigned char c = (unsigned char) l[i];
                if ((c < 0x20 && c != '\t') || c == 0x7f)
                        return fail(p, "invalid byte in chunk extension");
        }
        if (x == 0) {
                p->state = S_TRAILER;
                return HTTP_RESP_MORE;
        }
        p->remaining = x;
        p->state = S_CHUNK_DATA;
        return HTTP_RESP_MORE;
}

static int parse_trailer(struct http_resp *p, const char *l, size_t n) {
        if (n == 0) {
                p->state = S_DONE;
                return HTTP_RESP_DONE;
        }
        if (l[0] == ' ' || l[0] == '\t')
                return fail(p, "malformed MIME header: continuation line");
        if (++p->n_headers > HTTP_RESP_MAX_HEADERS)
                return fail(p, "too many headers");
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) l[i];
                if ((c < 0x20 && c != '\t') || c == 0x7f)
                        return fail(p, "malformed MIME header line");
        }
        if (!memchr(l, ':', n))
                return fail(p, "malformed MIME header line");
        return HTTP_RESP_MORE;
}

static int handle_line(struct http_resp *p, const char *l, size_t n) {
        switch (p->state) {
        case S_STATUS:
                return parse_status(p, l, n);
        case S_HEADER:
                return parse_header(p, l, n);
        case S_CHUNK_SIZE:
                return parse_chunk_size(p, l, n);
        case S_CHUNK_END:
                if (n != 0)
                        return fail(p, "malformed chunked encoding");
                p->state = S_CHUNK_SIZE;
                return HTTP_RESP_MORE;
        case S_TRAILER:
                return parse_trailer(p, l, n);
        }
        return fail(p, "internal error");
}

static uint64_t body_cap(const struct http_resp *p) {
        return p->max_body > 0 ? p->max_body : HTTP_RESP_MAX_BODY;
}

/* body bytes: kept when wanted (or handed to on_body), counted; true when the cap is reached */
static bool body_take(struct http_resp *p, const char *data, size_t n) {
        if (p->on_body && n > 0)
                p->on_body(data, n, p->body_userdata);
        else if (p->keep_body && p->body_len < HTTP_RESP_MAX_BODY) {
                size_t take = n < HTTP_RESP_MAX_BODY - p->body_len ? n : HTTP_RESP_MAX_BODY - p->body_len;
                memcpy(p->body + p->body_len, data, take);
                p->body_len += take;
                p->body[p->body_len] = '\0';
        }
        p->body_seen += n;
        if (p->body_seen >= body_cap(p)) {
                p->truncated = true;
                p->state = S_DONE;
                return true;
        }
        return false;
}

static bool in_header_block(const struct http_resp *p) {
        return p->state == S_STATUS || p->state == S_HEADER || p->state == S_TRAILER;
}

int http_resp_feed(struct http_resp *p, const char *data, size_t n, size_t *ret_used) {
        size_t i = 0;

        while (i < n) {
                size_t avail = n - i, take;

                switch (p->state) {
                case S_ERROR:
                        *ret_used = i;
                        return -EBADMSG;
                case S_DONE:
                        *ret_used = i;
                        return HTTP_RESP_DONE;
                case S_BODY_LENGTH:
                case S_CHUNK_DATA:
                        take = avail < p->remaining ? avail : (size_t) p->remaining;
                        /* never read past the cap */
                        if (take > body_cap(p) - p->body_seen)
                                take = (size_t) (body_cap(p) - p->body_seen);
                        p->remaining -= take;
                        i += take;
                        if (body_take(p, data + i - take, take)) {
                                *ret_used = i;
                                return HTTP_RESP_DONE;
                        }
                        if (p->remaining == 0) {
                                if (p->state == S_BODY_LENGTH) {
                                        p->state = S_DONE;
                                        *ret_used = i;
                                        return HTTP_RESP_DONE;
                                }
                                p->state = S_CHUNK_END;
                        }
                        break;
                case S_BODY_CLOSE:
                        take = avail < body_cap(p) - p->body_seen ? avail : (size_t) (body_cap(p) - p->body_seen);
                        i += take;
                        if (body_take(p, data + i - take, take)) {
                                *ret_used = i;
                                return HTTP_RESP_DONE;
                        }
                        break;
                default: {
                        /* a line: up to its LF */
                        const char *nl = memchr(data + i, '\n', avail);
                        size_t len;
                        int r;

                        take = nl ? (size_t) (nl - (data + i)) + 1 : avail;
                        if (in_header_block(p)) {
                                p->header_bytes += take;
                                if (p->header_bytes > HTTP_RESP_MAX_HEADER_BYTES)
                                        return *ret_used = i, fail(p, "server response headers exceeded the limit");
                        }
                        if (p->line_len + take > HTTP_RESP_MAX_LINE)
                                return *ret_used = i, fail(p, "header line too long");
                        memcpy(p->line + p->line_len, data + i, take);
                        p->line_len += take;
                        i += take;
                        if (!nl)
                                break;
                        len = p->line_len - 1;
                        if (len > 0 && p->line[len - 1] == '\r')
                                len--;
                        p->line[len] = '\0';
                        p->line_len = 0;
                        r = handle_line(p, p->line, len);
                        if (r != HTTP_RESP_MORE) {
                                *ret_used = i;
                                return r;
                        }
                        break;
                }
                }
        }
        *ret_used = i;
        if (p->state == S_ERROR)
                return -EBADMSG;
        return p->state == S_DONE ? HTTP_RESP_DONE : HTTP_RESP_MORE;
}

int http_resp_eof(struct http_resp *p) {
        switch (p->state) {
        case S_DONE:
                return HTTP_RESP_DONE;
        case S_BODY_CLOSE:
                p->state = S_DONE;
                return HTTP_RESP_DONE;
        case S_ERROR:
                return -EBADMSG;
        case S_STATUS:
                if (p->line_len == 0 && p->header_bytes == 0 && p->n_informational == 0)
                        return fail(p, "EOF");
                return fail(p, "unexpected EOF");
        default:
                return fail(p, "unexpected EOF");
        }
}
