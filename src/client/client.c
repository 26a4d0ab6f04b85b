/* SPDX-License-Identifier: Apache-2.0 */
/* The apiserver client (client-go's rest client): requests are streams of client/transport.c (HTTP/2 on one
 * TLS connection, HTTP/1.1 where the server has no h2) on the kubelet's loop. Each request goes through these
 * states, all on its own timer so that no callback ever runs inside kube_request() or inside the transport:
 *
 *   WAITING (its rate-limiter slot) → RUNNING (transfer) → FINISHED (delivery armed) → DELIVERING (cb)
 *                ↑                        │ 429/5xx/transport error, attempts left
 *   BACKOFF (jittered, Retry-After) ←─────┘
 *
 * The transport keeps the connections alive between requests. The token bucket
 * follows golang.org/x/time/rate as used by client-go's flowcontrol: reservations are served in order. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "basic/list.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "client/client-internal.h"

#if defined(__x86_64__)
#define GOARCH "amd64"
#elif defined(__aarch64__)
#define GOARCH "arm64"
#elif defined(__arm__)
#define GOARCH "arm"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define GOARCH "ppc64le"
#elif defined(__s390x__)
#define GOARCH "s390x"
#elif defined(__riscv) && __riscv_xlen == 64
#define GOARCH "riscv64"
#elif defined(__i386__)
#define GOARCH "386"
#else
#define GOARCH "unknown"
#endif

#define DEFAULT_USER_AGENT "ckubelet/" CKUBELET_VERSION " (linux/" GOARCH ") kubernetes/v" KUBE_VERSION_MAJOR_MINOR

/* ---------------------------------------------------------------- pure helpers */

void kube_token_bucket_init(struct kube_token_bucket *b, double qps, int burst, uint64_t now_usec) {
        b->qps = qps > 0 ? qps : 1;
        b->burst = burst >= 1 ? burst : 1;
        b->tokens = b->burst;
        b->last_usec = now_usec;
}

uint64_t kube_token_bucket_reserve(struct kube_token_bucket *b, uint64_t now_usec) {
        double wait;
        uint64_t u;

        if (now_usec > b->last_usec) {
                b->tokens += (double) (now_usec - b->last_usec) * b->qps / 1e6;
                if (b->tokens > b->burst)
                        b->tokens = b->burst;
                b->last_usec = now_usec;
        }
        b->tokens -= 1;
        if (b->tokens >= 0)
                return 0;
        wait = -b->tokens * 1e6 / b->qps;
        u = (uint64_t) wait;
        return (double) u < wait ? u + 1 : u;
}

uint64_t kube_backoff_usec(unsigned retry, double jitter01) {
        uint64_t d = KUBE_BACKOFF_BASE_USEC;

        for (unsigned i = 1; i < retry && d < KUBE_BACKOFF_MAX_USEC; i++)
                d *= 2;
        if (d > KUBE_BACKOFF_MAX_USEC)
                d = KUBE_BACKOFF_MAX_USEC;
        if (!(jitter01 >= 0)) /* also NaN */
                jitter01 = 0;
        if (jitter01 > 1)
                jitter01 = 1;
        return (uint64_t) ((double) d * (0.8 + 0.4 * jitter01));
}

uint64_t kube_parse_retry_after(const char *value) {
        char buf[32];
        size_t n;
        int64_t secs;

        if (!value)
                return 0;
        value += strspn(value, " \t");
        n = strcspn(value, " \t\r\n");
        if (n == 0 || n >= sizeof(buf))
                return 0;
        memcpy(buf, value, n);
        buf[n] = '\0';
        if (buf[0] == '-' || buf[0] == '+' || safe_atoi64(buf, &secs) < 0 || secs < 0)
                return 0;
        if ((uint64_t) secs > KUBE_RETRY_AFTER_MAX_USEC / USEC_PER_SEC)
                return KUBE_RETRY_AFTER_MAX_USEC;
        return (uint64_t) secs * USEC_PER_SEC;
}

const char *kube_status_text(long status) {
        static const struct {
                long code;
                const char *text;
        } table[] = {
                { 100, "Continue" },
                { 200, "OK" },
                { 201, "Created" },
                { 202, "Accepted" },
                { 204, "No Content" },
                { 206, "Partial Content" },
                { 301, "Moved Permanently" },
                { 302, "Found" },
                { 303, "See Other" },
                { 304, "Not Modified" },
                { 307, "Temporary Redirect" },
                { 308, "Permanent Redirect" },
                { 400, "Bad Request" },
                { 401, "Unauthorized" },
                { 403, "Forbidden" },
                { 404, "Not Found" },
                { 405, "Method Not Allowed" },
                { 406, "Not Acceptable" },
                { 408, "Request Timeout" },
                { 409, "Conflict" },
                { 410, "Gone" },
                { 413, "Request Entity Too Large" },
                { 415, "Unsupported Media Type" },
                { 422, "Unprocessable Entity" },
                { 429, "Too Many Requests" },
                { 500, "Internal Server Error" },
                { 501, "Not Implemented" },
                { 502, "Bad Gateway" },
                { 503, "Service Unavailable" },
                { 504, "Gateway Timeout" },
        };
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (table[i].code == status)
                        return table[i].text;
        return "";
}

char *kube_generic_error(long status, const char *method, const char *server_message, const char **ret_reason) {
        const char *reason = "", *msg = NULL;
        char *s = NULL;

        switch (status) {
        case 409:
                reason = method && streq(method, "POST") ? "AlreadyExists" : "Conflict";
                msg = "the server reported a conflict";
                break;
        case 404:
                reason = "NotFound";
                msg = "the server could not find the requested resource";
                break;
        case 400:
                reason = "BadRequest";
                msg = "the server rejected our request for an unknown reason";
                break;
        case 401:
                reason = "Unauthorized";
                msg = "the server has asked for the client to provide credentials";
                break;
        case 403:
                reason = "Forbidden";
                msg = !isempty(server_message) ? server_message
                                               : "the server does not allow access to the requested resource";
                break;
        case 406:
        case 415:
                reason = status == 406 ? "NotAcceptable" : "UnsupportedMediaType";
                /* the server message has details about what types are acceptable */
                msg = !isempty(server_message) && !streq(server_message, "unknown")
                              ? server_message
                              : "the server was unable to respond with a content type that the client supports";
                break;
        case 405:
                reason = "MethodNotAllowed";
                msg = "the server does not allow this method on the requested resource";
                break;
        case 422:
                reason = "Invalid";
                msg = "the server rejected our request due to an error in our request";
                break;
        case 503:
                reason = "ServiceUnavailable";
                msg = "the server is currently unable to handle the request";
                break;
        case 504:
                reason = "Timeout";
                msg = "the server was unable to return a response in the time allotted, but may still be processing "
                      "the request";
                break;
        case 429:
                reason = "TooManyRequests";
                msg = "the server has received too many requests and has asked us to try again later";
                break;
        default:
                break;
        }
        if (msg)
                s = strdup(msg);
        else if (status >= 500) {
                _cleanup_free_ char *q = go_quote(!isempty(server_message) ? server_message : "unknown");

                reason = "InternalError";
                if (!q || asprintf(&s, "an error on the server (%s) has prevented the request from succeeding", q) < 0)
                        s = NULL;
        } else if (asprintf(&s, "the server responded with the status code %ld but did not return more information",
                            status) < 0)
                s = NULL;
        if (ret_reason)
                *ret_reason = reason;
        return s;
}

char *kube_escape(const char *s) {
        static const char hex[] = "0123456789ABCDEF";
        char *out, *o;

        if (!s)
                return NULL;
        out = malloc(strlen(s) * 3 + 1);
        if (!out)
                return NULL;
        o = out;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                    *p == '.' || *p == '_' || *p == '~')
                        *o++ = (char) *p;
                else {
                        *o++ = '%';
                        *o++ = hex[*p >> 4];
                        *o++ = hex[*p & 15];
                }
        }
        *o = '\0';
        return out;
}

static double jitter01(void) {
        static uint64_t state;

        if (state == 0)
                state = (now_usec() ^ ((uint64_t) getpid() << 32)) | 1;
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return (double) (state >> 11) / 9007199254740992.0; /* 2^53 */
}

static void free_secret(char *s) {
        if (!s)
                return;
        explicit_bzero(s, strlen(s));
        free(s);
}

static void kube_client_transfer_ended(struct kube_client *c);

void kube_request_release_stream(struct kube_request *r) {
        struct kube_client *c = r->client;

        if (r->stream) {
                kube_stream_cancel(r->stream);
                r->stream = NULL;
        }
        if (r->transport && r->transport != c->transport)
                kube_client_transfer_ended(c); /* its retired transport may be idle now */
        r->transport = NULL;
        free(r->full_path);
        r->full_path = NULL;
        free_secret(r->auth);
        r->auth = NULL;
        if (r->gzip) {
                inflateEnd(r->gzip);
                free(r->gzip);
                r->gzip = NULL;
        }
}

/* token_file: re-read at most once a minute; on failure the last good token stays (cachingTokenSource) */
static int refresh_token(struct kube_client *c, struct ck_error **ret_error) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0, b, e;
        uint64_t now = now_usec();
        int r;

        if (!c->token_file)
                return 0;
        if (c->token && c->token_read_usec != 0 && now - c->token_read_usec < KUBE_TOKEN_REFRESH_USEC)
                return 0;
        c->token_read_usec = now ? now : 1;
        r = read_full_file(c->token_file, KUBE_TOKEN_MAX_SIZE, &data, &size);
        if (r >= 0) {
                for (b = 0; b < size && strchr(" \t\r\n", data[b]); b++)
                        ;
                for (e = size; e > b && strchr(" \t\r\n", data[e - 1]); e--)
                        ;
                if (e == b || memchr(data + b, '\0', e - b) || memchr(data + b, '\n', e - b) ||
                    memchr(data + b, '\r', e - b))
                        r = -EINVAL;
                else if (!c->token || strlen(c->token) != e - b || memcmp(c->token, data + b, e - b) != 0) {
                        char *t = strndup(data + b, e - b);
                        if (!t)
                                r = -ENOMEM;
                        else {
                                free_secret(c->token);
                                c->token = t;
                                log_v(4, "Read a new token from %s", c->token_file);
                        }
                }
                explicit_bzero(data, size);
        }
        if (r < 0) {
                if (!c->token)
                        return ck_error_set(ret_error, r, "cannot read the token file %s: %s", c->token_file,
                                            r == -EINVAL ? "no valid token in it" : strerror(-r));
                log_warning("Unable to rotate token from %s: %s", c->token_file,
                            r == -EINVAL ? "no valid token in it" : strerror(-r));
        }
        return 0;
}

int kube_buffer_append(struct kube_request *r, const char *p, size_t n, size_t max) {
        if (n > max || r->len > max - n) {
                r->too_large = true;
                return -EFBIG;
        }
        if (r->len + n + 1 > r->alloc) {
                size_t na = MAX(MAX(r->alloc * 2, r->len + n + 1), (size_t) 16384);
                char *nb;

                na = MIN(na, max + 1);
                nb = realloc(r->buf, na);
                if (!nb)
                        return -ENOMEM;
                r->buf = nb;
                r->alloc = na;
        }
        memcpy(r->buf + r->len, p, n);
        r->len += n;
        r->buf[r->len] = '\0';
        return 0;
}

int kube_request_start_stream(struct kube_request *r, const struct kube_stream_ops *ops, struct ck_error **ret_error) {
        struct kube_client *c = r->client;
        const char *headers[16];
        size_t n = 0;
        struct kube_stream_request req;
        int k;

        k = refresh_token(c, ret_error);
        if (k < 0)
                return k;
        free(r->full_path);
        r->full_path = NULL;
        free_secret(r->auth);
        r->auth = NULL;
        if (asprintf(&r->full_path, "%s%s", c->url_base, r->path) < 0) {
                r->full_path = NULL;
                return -ENOMEM;
        }
        if (c->token && asprintf(&r->auth, "Bearer %s", c->token) < 0) {
                r->auth = NULL;
                return -ENOMEM;
        }
        headers[n++] = "accept";
        headers[n++] = "application/json";
        headers[n++] = "user-agent";
        headers[n++] = c->user_agent;
        if (r->body) {
                headers[n++] = "content-type";
                headers[n++] = r->content_type;
        }
        if (r->auth) {
                headers[n++] = "authorization";
                headers[n++] = r->auth;
        }
        if (c->compression && !r->is_watch) {
                headers[n++] = "accept-encoding";
                headers[n++] = "gzip";
        }
        headers[n] = NULL;
        req = (struct kube_stream_request) {
                .method = r->is_watch ? "GET" : r->method,
                .path = r->full_path,
                .headers = headers,
                .body = r->body ? r->body : (streq(r->method, "POST") && !r->is_watch ? "" : NULL),
                .body_len = r->body_len,
        };
        k = kube_stream_start(c->transport, &req, ops, r, &r->stream);
        if (k < 0)
                return k;
        r->transport = c->transport;
        return 0;
}

/* ---------------------------------------------------------------- request life cycle */

static void on_request_timer(evutil_socket_t fd, short what, void *userdata);

int kube_request_alloc(struct kube_client *c, const char *method, const char *path, struct kube_request **ret) {
        struct kube_request *r;

        if (!c || isempty(path) || path[0] != '/')
                return -EINVAL;
        for (const unsigned char *p = (const unsigned char *) path; *p; p++)
                if (*p <= 0x20 || *p == 0x7f || *p == '#')
                        return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->method = strdup(method);
        r->path = strdup(path);
        r->timer = evtimer_new(c->base, on_request_timer, r);
        if (!r->method || !r->path || !r->timer) {
                kube_request_free(r);
                return -ENOMEM;
        }
        r->client = c;
        DLIST_PREPEND(c->requests, r);
        *ret = r;
        return 0;
}

/* Stops the transfer and timers, returns the easy handle to the pool, unlinks from the client. */
static void kube_request_detach(struct kube_request *r) {
        struct kube_client *c = r->client;

        if (!c)
                return;
        kube_request_release_stream(r);
        if (r->timer)
                event_del(r->timer);
        if (r->idle_timer)
                event_del(r->idle_timer);
        if (r->dispatch_ev)
                event_del(r->dispatch_ev);
        DLIST_REMOVE(c->requests, r);
        r->client = NULL;
}

void kube_request_free(struct kube_request *r) {
        if (!r)
                return;
        kube_request_detach(r);
        if (r->timer)
                event_free(r->timer);
        if (r->idle_timer)
                event_free(r->idle_timer);
        if (r->dispatch_ev)
                event_free(r->dispatch_ev);
        free(r->full_path);
        free_secret(r->auth);
        if (r->gzip) {
                inflateEnd(r->gzip);
                free(r->gzip);
        }
        free(r->method);
        free(r->path);
        free(r->body);
        free(r->content_type);
        free(r->buf);
        json_decref(r->json);
        free(r->error);
        free(r->reason);
        free(r);
}

void kube_request_cancel(struct kube_request *r) {
        if (!r || r->cancelled || r->state == KUBE_REQ_DELIVERING)
                return;
        if (r->dispatching) {
                /* inside this watch's event(): freed when it returns */
                kube_request_detach(r);
                r->cancelled = true;
                return;
        }
        kube_request_free(r);
}

void kube_request_schedule(struct kube_request *r, uint64_t delay_usec) {
        struct kube_client *c = r->client;
        uint64_t wait = 0;

        if (delay_usec > 0) {
                r->state = KUBE_REQ_BACKOFF;
                evtimer_add_usec(r->timer, delay_usec);
                return;
        }
        if (c->rate_limited)
                wait = kube_token_bucket_reserve(&c->bucket, now_usec());
        if (wait > 0)
                log_v(6, "Waited %llu ms for the client-side rate limiter: %s %s", (unsigned long long) (wait / 1000),
                      r->is_watch ? "GET" : r->method, r->path);
        r->state = KUBE_REQ_WAITING;
        evtimer_add_usec(r->timer, wait);
}

void kube_log_transfer(struct kube_request *r, const char *verb, int rc, const char *why) {
        char status[64] = "";
        unsigned long long ms;

        if (log_get_verbosity() < 4)
                return;
        ms = (unsigned long long) ((now_usec() - r->start_usec) / 1000);
        if (r->status > 0)
                snprintf(status, sizeof(status), "%ld %s", r->status, kube_status_text(r->status));
        if (rc == 0)
                log_v(4, "\"HTTP\" verb=\"%s\" URL=\"%s%s\" status=\"%s\" milliseconds=%llu", verb, r->client->server,
                      r->path, status, ms);
        else
                log_v(4, "\"HTTP\" verb=\"%s\" URL=\"%s%s\" status=\"%s\" milliseconds=%llu err=\"%s\"", verb,
                      r->client->server, r->path, status, ms,
                      r->too_large ? "response too large"
                      : why        ? why
                                   : strerror(-rc));
}

char *kube_transfer_error(struct kube_request *r, int rc, const char *why) {
        char *s;

        if (asprintf(&s, "%s %s%s: %s", r->is_watch ? "GET" : r->method, r->client ? r->client->server : "", r->path,
                     why ? why : strerror(-rc)) < 0)
                return NULL;
        return s;
}

static bool printable(const char *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) s[i] < 0x20 && s[i] != '\n' && s[i] != '\t' && s[i] != '\r')
                        return false;
        return true;
}

int kube_response_error(struct kube_request *r, json_t *body) {
        const char *message = NULL, *reason = NULL, *generic_reason = "";
        _cleanup_free_ char *generic = NULL, *server_message = NULL;

        if (json_is_object(body) && json_is_string(json_object_get(body, "kind")) &&
            streq(json_string_value(json_object_get(body, "kind")), "Status")) {
                message = json_string_value(json_object_get(body, "message"));
                reason = json_string_value(json_object_get(body, "reason"));
        }
        if (!body && r->len > 0 && printable(r->buf, r->len)) {
                server_message = strndup(r->buf, MIN(r->len, (size_t) 1024));
                if (!server_message)
                        return -ENOMEM;
                for (size_t n = strlen(server_message); n > 0 && strchr(" \t\r\n", server_message[n - 1]); n--)
                        server_message[n - 1] = '\0';
        }
        generic = kube_generic_error(r->status, r->is_watch ? "GET" : r->method, server_message, &generic_reason);
        if (!generic)
                return -ENOMEM;
        free(r->error);
        free(r->reason);
        r->error = strdup(!isempty(message) ? message : generic);
        r->reason = strdup(!isempty(reason) ? reason : generic_reason);
        return r->error && r->reason ? 0 : -ENOMEM;
}

bool kube_response_uid_mismatch(const struct kube_response *resp) {
        const json_t *body = resp ? resp->body : NULL, *cause;
        const char *message;
        size_t i;

        if (!resp || resp->status < 400 || !json_is_object(body) ||
            !streq_ptr(json_string_value(json_object_get(body, "kind")), "Status"))
                return false;
        json_array_foreach(json_object_get(json_object_get(body, "details"), "causes"), i, cause)
                if (streq_ptr(json_string_value(json_object_get(cause, "field")), "metadata.uid"))
                        return true;
        message = json_string_value(json_object_get(body, "message"));
        return message && strstr(message, "Precondition failed: UID in precondition");
}

static void request_finish(struct kube_request *r, int rc, char *error) {
        if (rc < 0)
                r->r = rc;
        if (error) {
                free(r->error);
                r->error = error;
        }
        if (r->r < 0 && !r->error)
                r->error = strdup(strerror(-r->r));
        if (r->client)
                kube_request_release_stream(r);
        r->state = KUBE_REQ_FINISHED;
        evtimer_add_usec(r->timer, 0);
}

static bool should_retry(struct kube_request *r, int rc, bool refused) {
        if ((r->flags & KUBE_NO_RETRY) || r->attempts >= KUBE_MAX_ATTEMPTS || r->too_large)
                return false;
        if (rc == 0)
                return r->status == 429 || r->status >= 500;
        if (refused)
                return true; /* never reached the server */
        switch (rc) {
        case -ENOMEM:
        case -EINVAL:
        case -EFBIG:
        case -ENOKEY:
                return false;
        default:
                /* the request may have reached the server: only what can be repeated safely */
                return !streq(r->method, "POST");
        }
}

static void transfer_done(struct kube_request *r, int result, const char *why, bool refused) {
        json_error_t jerr;
        char *msg = NULL;
        int rc = 0;

        kube_log_transfer(r, r->method, result, why);

        if (should_retry(r, result, refused)) {
                uint64_t delay = kube_backoff_usec(r->attempts, jitter01());

                delay = MAX(delay, r->retry_after_usec);
                log_v(4, "Retrying %s %s%s in %llu ms (attempt %u of %u): %s", r->method, r->client->server, r->path,
                      (unsigned long long) (delay / 1000), r->attempts + 1, KUBE_MAX_ATTEMPTS,
                      result < 0 ? (why ? why : strerror(-result)) : kube_status_text(r->status));
                kube_request_release_stream(r);
                r->len = 0;
                r->status = 0;
                kube_request_schedule(r, MAX(delay, (uint64_t) 1));
                return;
        }

        if (r->too_large || result == -EFBIG) {
                rc = -EFBIG;
                if (asprintf(&msg, "%s %s%s: the response body is larger than %zu bytes", r->method, r->client->server,
                             r->path, r->client->max_response_size) < 0)
                        msg = NULL;
        } else if (result < 0) {
                rc = result;
                r->status = 0;
                msg = kube_transfer_error(r, result, why);
        } else {
                json_t *body = r->len > 0 ? json_loadb(r->buf, r->len, 0, &jerr) : NULL;

                if (r->status >= 300) {
                        r->json = body;
                        rc = kube_response_error(r, body);
                } else if (r->len > 0 && !body) {
                        rc = -EBADMSG;
                        if (asprintf(&msg, "%s %s%s: cannot decode the response body: %s (line %d, column %d)",
                                     r->method, r->client->server, r->path, jerr.text, jerr.line, jerr.column) < 0)
                                msg = NULL;
                } else
                        r->json = body;
        }
        request_finish(r, rc, msg);
}

static void request_on_headers(int status, const char *retry_after, const char *encoding, void *userdata) {
        struct kube_request *r = userdata;

        r->status = status;
        r->retry_after_usec = kube_parse_retry_after(retry_after);
        if (encoding && strcasecmp(encoding, "gzip") == 0 && !r->gzip) {
                r->gzip = calloc(1, sizeof(*r->gzip));
                if (r->gzip && inflateInit2(r->gzip, 16 + MAX_WBITS) != Z_OK) {
                        free(r->gzip);
                        r->gzip = NULL;
                }
                r->gzip_failed = !r->gzip;
        }
}

static int request_on_data(const char *p, size_t n, void *userdata) {
        struct kube_request *r = userdata;
        char out[16384];
        int k, z;

        if (r->gzip_failed)
                return -ENOMEM;
        if (!r->gzip) {
                k = kube_buffer_append(r, p, n, r->client->max_response_size);
                return k < 0 ? k : 0; /* aborts the stream */
        }
        /* the cap applies to the decoded body */
        r->gzip->next_in = (Bytef *) p;
        r->gzip->avail_in = (uInt) n;
        do {
                r->gzip->next_out = (Bytef *) out;
                r->gzip->avail_out = sizeof(out);
                z = inflate(r->gzip, Z_NO_FLUSH);
                if (z != Z_OK && z != Z_STREAM_END && z != Z_BUF_ERROR)
                        return -EBADMSG;
                k = kube_buffer_append(r, out, sizeof(out) - r->gzip->avail_out, r->client->max_response_size);
                if (k < 0)
                        return k;
        } while (r->gzip->avail_out == 0 || (r->gzip->avail_in > 0 && z == Z_OK));
        return 0;
}

static void request_on_close(int rc, const char *why, bool refused, void *userdata) {
        struct kube_request *r = userdata;

        r->stream = NULL; /* the transport's, and gone */
        event_del(r->timer);
        transfer_done(r, rc, why, refused);
}

static const struct kube_stream_ops request_ops = {
        .on_headers = request_on_headers,
        .on_data = request_on_data,
        .on_close = request_on_close,
};

static void request_start(struct kube_request *r) {
        struct kube_client *c = r->client;
        _cleanup_ck_error_ struct ck_error *error = NULL;
        int k;

        r->attempts++;
        r->start_usec = now_usec();
        r->len = 0;
        r->too_large = false;
        r->status = 0;
        r->retry_after_usec = 0;
        k = kube_request_start_stream(r, &request_ops, &error);
        if (k < 0) {
                request_finish(r, k, error ? ck_error_take_message(TAKE_PTR(error)) : NULL);
                return;
        }
        r->state = KUBE_REQ_RUNNING;
        evtimer_add_usec(r->timer, MAX(c->timeout_usec, (uint64_t) 1));
}

static void request_timed_out(struct kube_request *r) {
        char why[96];

        snprintf(why, sizeof(why), "context deadline exceeded (Client.Timeout exceeded after %llu ms)",
                 (unsigned long long) (r->client->timeout_usec / 1000));
        kube_request_release_stream(r);
        transfer_done(r, -ETIMEDOUT, why, false);
}

static void request_deliver(struct kube_request *r) {
        struct kube_response resp;

        kube_request_detach(r);
        r->state = KUBE_REQ_DELIVERING;
        resp = (struct kube_response) {
                .r = r->r,
                .status = r->status,
                .body = r->json,
                .error = r->error ? r->error : "",
                .reason = r->reason ? r->reason : "",
        };
        r->cb(&resp, r->userdata);
        kube_request_free(r);
}

static void on_request_timer(evutil_socket_t fd, short what, void *userdata) {
        struct kube_request *r = userdata;

        switch (r->state) {
        case KUBE_REQ_BACKOFF:
                kube_request_schedule(r, 0);
                break;
        case KUBE_REQ_WAITING:
                if (!r->is_watch)
                        request_start(r);
                else if (kube_watch_start(r) < 0)
                        return;
                break;
        case KUBE_REQ_RUNNING:
                if (!r->is_watch)
                        request_timed_out(r);
                break;
        case KUBE_REQ_FINISHED:
                request_deliver(r);
                break;
        default:
                break;
        }
}

int kube_request(struct kube_client *c, const char *method, const char *path, const json_t *body,
                 const char *content_type, int flags, kube_callback_t cb, void *userdata, struct kube_request **ret) {
        static const char *const methods[] = { "GET", "POST", "PUT", "PATCH", "DELETE" };
        struct kube_request *r;
        bool known = false;
        int k;

        if (!c || !method || !path || !cb)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(methods); i++)
                known = known || streq(method, methods[i]);
        if (!known || (content_type && (isempty(content_type) || strpbrk(content_type, "\r\n"))))
                return -EINVAL;
        k = kube_request_alloc(c, method, path, &r);
        if (k < 0)
                return k;
        r->cb = cb;
        r->userdata = userdata;
        r->flags = flags;
        r->content_type = strdup(content_type ? content_type : "application/json");
        if (!r->content_type) {
                kube_request_free(r);
                return -ENOMEM;
        }
        if (body) {
                r->body = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
                if (!r->body) {
                        kube_request_free(r);
                        return -ENOMEM;
                }
                r->body_len = strlen(r->body);
        }
        kube_request_schedule(r, 0);
        if (ret)
                *ret = r;
        return 0;
}

/* ---------------------------------------------------------------- the client */

/* "https://host[:port][/prefix]" (no user info, query or fragment) */
static int setup_server(struct kube_client *c, const struct kube_config *cfg) {
        const char *p, *auth_end, *hb, *he, *port_s = NULL;
        size_t n;
        long port;

        c->server = strdup(cfg->server);
        if (!c->server)
                return -ENOMEM;
        for (n = strlen(c->server); n > 0 && c->server[n - 1] == '/'; n--)
                c->server[n - 1] = '\0';

        if (strncasecmp(c->server, "https://", 8) == 0) {
                c->https = true;
                p = c->server + 8;
        } else if (strncasecmp(c->server, "http://", 7) == 0)
                p = c->server + 7;
        else
                goto invalid;
        auth_end = p + strcspn(p, "/?#");
        if (*auth_end == '?' || *auth_end == '#' || strpbrk(auth_end, "?#") || memchr(p, '@', (size_t) (auth_end - p)))
                goto invalid;
        if (*p == '[') {
                hb = p + 1;
                he = memchr(hb, ']', (size_t) (auth_end - hb));
                if (!he)
                        goto invalid;
                if (he + 1 < auth_end) {
                        if (he[1] != ':')
                                goto invalid;
                        port_s = he + 2;
                }
        } else {
                hb = p;
                he = memchr(p, ':', (size_t) (auth_end - p));
                if (he)
                        port_s = he + 1;
                else
                        he = auth_end;
        }
        if (he == hb)
                goto invalid;
        port = c->https ? 443 : 80;
        if (port_s) {
                if (port_s == auth_end)
                        goto invalid;
                port = 0;
                for (const char *q = port_s; q < auth_end; q++) {
                        if (*q < '0' || *q > '9' || port > 65535)
                                goto invalid;
                        port = port * 10 + (*q - '0');
                }
                if (port < 1 || port > 65535)
                        goto invalid;
        }
        for (const char *q = p; q < auth_end; q++)
                if ((unsigned char) *q <= 0x20 || (unsigned char) *q >= 0x7f)
                        goto invalid;
        for (const char *q = auth_end; *q; q++)
                if ((unsigned char) *q <= 0x20 || *q == 0x7f)
                        goto invalid;
        c->port = (int) port;
        c->host = strndup(hb, (size_t) (he - hb));
        c->authority = strndup(p, (size_t) (auth_end - p));
        c->url_base = strdup(auth_end);
        if (!isempty(cfg->tls_server_name) && c->https)
                c->tls_server_name = strdup(cfg->tls_server_name);
        if (!c->host || !c->authority || !c->url_base ||
            (!isempty(cfg->tls_server_name) && c->https && !c->tls_server_name))
                return -ENOMEM;
        return 0;
invalid:
        log_error("Invalid apiserver URL \"%s\"", c->server);
        return -EINVAL;
}

static int new_transport(struct kube_client *c, struct kube_transport **ret) {
        struct kube_transport_config tc = {
                .https = c->https,
                .host = c->host,
                .port = c->port,
                .authority = c->authority,
                .server_name = c->tls_server_name,
                .ca_file = c->ca_file,
                .ca_data = c->ca_data,
                .cert_file = c->cert_file,
                .cert_data = c->cert_data,
                .key_file = c->key_file,
                .key_data = c->key_data,
                .insecure = c->insecure,
                .connect_timeout_usec = (uint64_t) KUBE_CONNECT_TIMEOUT_MS * 1000,
        };

        return kube_transport_new(c->base, &tc, ret);
}

static int dup_field(const char *s, char **ret) {
        if (isempty(s)) {
                *ret = NULL;
                return 0;
        }
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int kube_client_new(struct event_base *base, const struct kube_config *cfg, const struct kube_client_options *o,
                    struct kube_client **ret) {
        struct kube_client *c;
        double qps = o && o->qps != 0 ? o->qps : 50;
        int burst = o && o->burst > 0 ? o->burst : 100, k;

        if (!base || !cfg || isempty(cfg->server) || !ret)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->base = base;
        c->timeout_usec = o && o->timeout_usec > 0 ? o->timeout_usec : 30 * USEC_PER_SEC;
        c->max_response_size = o && o->max_response_size > 0 ? o->max_response_size : 64u * 1024u * 1024u;
        c->insecure = cfg->insecure_skip_tls_verify;
        c->compression = !cfg->disable_compression;
        c->rate_limited = qps > 0;
        if (c->rate_limited)
                kube_token_bucket_init(&c->bucket, qps, burst, now_usec());
        if ((k = setup_server(c, cfg)) < 0 ||
            (k = dup_field(o && !isempty(o->user_agent) ? o->user_agent : DEFAULT_USER_AGENT, &c->user_agent)) < 0 ||
            (k = dup_field(cfg->ca_file, &c->ca_file)) < 0 || (k = dup_field(cfg->ca_data, &c->ca_data)) < 0 ||
            (k = dup_field(cfg->cert_file, &c->cert_file)) < 0 || (k = dup_field(cfg->cert_data, &c->cert_data)) < 0 ||
            (k = dup_field(cfg->key_file, &c->key_file)) < 0 || (k = dup_field(cfg->key_data, &c->key_data)) < 0 ||
            (k = dup_field(cfg->token, &c->token)) < 0 || (k = dup_field(cfg->token_file, &c->token_file)) < 0 ||
            (k = dup_field(cfg->proxy_url, &c->proxy_url)) < 0)
                goto fail;
        if (c->user_agent && strpbrk(c->user_agent, "\r\n")) {
                k = -EINVAL;
                goto fail;
        }
        if (c->token && strpbrk(c->token, "\r\n")) {
                log_error("The bearer token for %s contains a line break", c->server);
                k = -EINVAL;
                goto fail;
        }
        if (c->token && c->token_file)
                c->token_read_usec = MAX(now_usec(), (uint64_t) 1); /* read by kube_config_load just now */
        if (c->proxy_url)
                log_warning("The kubeconfig's proxy-url %s is not supported: connecting to %s directly", c->proxy_url,
                            c->server);
        k = new_transport(c, &c->transport);
        if (k < 0)
                goto fail;
        *ret = c;
        return 0;
fail:
        kube_client_free(c);
        return k;
}

/* ---------------------------------------------------------------- credentials and connections */

static void on_reaper(evutil_socket_t fd, short what, void *userdata) {
        struct kube_client *c = userdata;

        for (size_t i = 0; i < c->n_retired;) {
                if (kube_transport_idle(c->retired[i])) {
                        log_v(4, "Closing the connections to %s that used the previous credentials", c->server);
                        kube_transport_free(c->retired[i]);
                        c->retired[i] = c->retired[--c->n_retired];
                } else
                        i++;
        }
}

/* A stream of a transport that is no longer the client's ended: free the retired transports that are idle
 * (later, from the reaper event, never inside the transport). */
static void kube_client_transfer_ended(struct kube_client *c) {
        if (c->n_retired > 0 && c->reaper)
                evtimer_add_usec(c->reaper, 0);
}

/* Stop reusing the open connections, as client-go's connrotation CloseAll: new transfers open new connections;
 * requests in flight finish on the old ones, which are closed once idle; watches are ended at once (done() gets
 * -ECONNRESET and "connection closed: WHY") so that their owners open them again. */
static int kube_client_reset_connections(struct kube_client *c, const char *why) {
        struct kube_transport *old, *fresh = NULL, **nr;
        int k;

        if (!c)
                return -EINVAL;
        if (!c->reaper) {
                c->reaper = evtimer_new(c->base, on_reaper, c);
                if (!c->reaper)
                        return -ENOMEM;
        }
        nr = reallocarray(c->retired, c->n_retired + 1, sizeof(*c->retired));
        if (!nr)
                return -ENOMEM;
        c->retired = nr;
        k = new_transport(c, &fresh);
        if (k < 0)
                return k;
        old = c->transport;
        c->transport = fresh;
        c->retired[c->n_retired++] = old;
        /* watches hold their connection for minutes: end them now, their owners start them again (upstream's
         * connrotation CloseAll); requests in flight finish on the old connections */
        for (struct kube_request *r = c->requests; r; r = r->next)
                if (r->is_watch && r->transport == old && r->stream) {
                        char *msg = NULL;
                        if (asprintf(&msg, "GET %s%s: connection closed: %s", c->server, r->path,
                                     why ? why : "the client's credentials changed") < 0)
                                msg = NULL;
                        kube_watch_abort(r, -ECONNRESET, msg);
                }
        kube_client_transfer_ended(c);
        return 0;
}

int kube_client_set_client_cert(struct kube_client *c, const char *cert_pem, const char *key_pem) {
        char *cert, *key;

        if (!c || isempty(cert_pem) || isempty(key_pem))
                return -EINVAL;
        cert = strdup(cert_pem);
        key = strdup(key_pem);
        if (!cert || !key) {
                free(cert);
                free_secret(key);
                return -ENOMEM;
        }
        free(c->cert_file);
        free(c->key_file);
        free(c->cert_data);
        free_secret(c->key_data);
        c->cert_file = c->key_file = NULL;
        c->cert_data = cert;
        c->key_data = key;
        log_v(2, "The client for %s uses a new client certificate", c->server);
        return kube_client_reset_connections(c, "the client certificate changed");
}

struct kube_client *kube_client_free(struct kube_client *c) {
        if (!c)
                return NULL;
        while (c->requests) {
                struct kube_request *r = c->requests;
                if (r->dispatching) {
                        /* inside its event(): freed when that returns */
                        kube_request_detach(r);
                        r->cancelled = true;
                } else
                        kube_request_free(r);
        }
        kube_transport_free(c->transport);
        while (c->n_retired > 0)
                kube_transport_free(c->retired[--c->n_retired]);
        free(c->retired);
        if (c->reaper)
                event_free(c->reaper);
        free(c->url_base);
        free(c->server);
        free(c->host);
        free(c->authority);
        free(c->tls_server_name);
        free(c->proxy_url);
        free(c->ca_file);
        free(c->cert_file);
        free(c->key_file);
        free(c->ca_data);
        free(c->cert_data);
        free_secret(c->key_data);
        free_secret(c->token);
        free(c->token_file);
        free(c->user_agent);
        free(c);
        return NULL;
}
