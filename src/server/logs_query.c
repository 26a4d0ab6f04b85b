/* SPDX-License-Identifier: Apache-2.0 */
/* The options of a /containerLogs request from its query string: see logs_query.h. */

#include "server/logs_query.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "basic/error.h"
#include "basic/time.h"

/* Longest query string accepted. */
#define QUERY_MAX (64 * 1024)

/* strconv.ParseInt(s, 10, 64) */
static int parse_int64_strict(const char *s, int64_t *ret) {
        const char *p = s;
        bool neg = false;
        uint64_t v = 0, lim;

        if (*p == '+' || *p == '-')
                neg = *p++ == '-';
        if (!*p)
                return -EINVAL;
        lim = neg ? (uint64_t) INT64_MAX + 1 : (uint64_t) INT64_MAX;
        for (; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                if (v > (lim - (uint64_t) (*p - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        *ret = neg ? (int64_t) (0 - v) : (int64_t) v;
        return 0;
}

/* Go's Convert_Slice_string_To_bool: false only for "0" and "false" (any case). */
static bool query_bool(const char *v) {
        return !(streq(v, "0") || strcasecmp(v, "false") == 0);
}

/* Rewrite the query so that libevent's parser accepts what Go's url.ParseQuery accepts: empty pieces
 * ("a=1&&b=2") are dropped, a key without '=' gets an empty value. */
static int normalize_query(const char *qs, char **ret) {
        size_t n = strlen(qs);
        _cleanup_free_ char *s = malloc(n * 2 + 1);
        char *o;
        const char *p = qs;

        if (!s)
                return -ENOMEM;
        o = s;
        while (*p) {
                const char *amp = strchr(p, '&');
                size_t l = amp ? (size_t) (amp - p) : strlen(p);
                if (l > 0) {
                        if (o != s)
                                *o++ = '&';
                        memcpy(o, p, l);
                        o += l;
                        if (!memchr(p, '=', l))
                                *o++ = '=';
                }
                p += l;
                if (*p == '&')
                        p++;
        }
        *o = '\0';
        *ret = TAKE_PTR(s);
        return 0;
}

enum {
        Q_FOLLOW,
        Q_PREVIOUS,
        Q_TIMESTAMPS,
        Q_TAIL_LINES,
        Q_TAIL,
        Q_LIMIT_BYTES,
        Q_SINCE_SECONDS,
        Q_SINCE_TIME,
        _Q_MAX,
};

static const char *const query_names[_Q_MAX] = {
        [Q_FOLLOW] = "follow",
        [Q_PREVIOUS] = "previous",
        [Q_TIMESTAMPS] = "timestamps",
        [Q_TAIL_LINES] = "tailLines",
        [Q_TAIL] = "tail",
        [Q_LIMIT_BYTES] = "limitBytes",
        [Q_SINCE_SECONDS] = "sinceSeconds",
        [Q_SINCE_TIME] = "sinceTime",
};

/* Append one validation error, upstream's aggregate style: "a" or "[a, b]" (brackets added at the end). */
static int add_invalid(char **errs, size_t *n, const char *fmt, ...) _printf_(3, 4);
static int add_invalid(char **errs, size_t *n, const char *fmt, ...) {
        _cleanup_free_ char *e = NULL;
        char *joined;
        if (VA_FORMAT(e, fmt) < 0)
                return -ENOMEM;
        if (*errs) {
                if (asprintf(&joined, "%s, %s", *errs, e) < 0)
                        return -ENOMEM;
                free(*errs);
                *errs = joined;
        } else
                *errs = TAKE_PTR(e);
        (*n)++;
        return 0;
}

int api_log_options_from_query_at(const char *query_string, int64_t now_nsec, struct logs_options *ret,
                                  struct ck_error **ret_error) {
        struct evkeyvalq q;
        struct evkeyval *kv;
        _cleanup_free_ char *norm = NULL, *errs = NULL;
        const char *val[_Q_MAX] = {};
        struct logs_options o;
        int64_t tail = -1, limit = -1, since_seconds = 0, since_time = 0;
        bool have_tail = false, have_limit = false, have_since_seconds = false, have_since_time = false;
        size_t nerr = 0;
        int r;

        logs_options_init(&o);
        if (isempty(query_string)) {
                *ret = o;
                return 0;
        }
        if (strlen(query_string) > QUERY_MAX) {
                return ck_error_set(ret_error, -EBADMSG, "Unable to decode query: query string too long");
        }
        /* libevent decodes "%00" into a string end, which would hide trailing garbage */
        if (strstr(query_string, "%00")) {
                return ck_error_set(ret_error, -EBADMSG, "Unable to decode query: NUL byte in query");
        }
        r = normalize_query(query_string, &norm);
        if (r < 0)
                return r;

        TAILQ_INIT(&q);
        if (evhttp_parse_query_str(norm, &q) < 0) {
                return ck_error_set(ret_error, -EBADMSG, "Unable to decode query.");
        }

        TAILQ_FOREACH(kv, &q, next) {
                size_t klen = 0;
                _cleanup_free_ char *key = evhttp_uridecode(kv->key, 1, &klen);
                if (!key) {
                        r = -ENOMEM;
                        goto finish;
                }
                if (klen != strlen(key))
                        continue;
                for (size_t i = 0; i < _Q_MAX; i++)
                        if (!val[i] && streq(key, query_names[i])) /* the first value wins */
                                val[i] = kv->value;
        }

        if (val[Q_FOLLOW])
                o.follow = query_bool(val[Q_FOLLOW]);
        if (val[Q_PREVIOUS])
                o.previous = query_bool(val[Q_PREVIOUS]);
        if (val[Q_TIMESTAMPS])
                o.timestamps = query_bool(val[Q_TIMESTAMPS]);

        /* backwards compatibility: "tail" replaces tailLines, "all" the same as omitting it */
        if (!isempty(val[Q_TAIL]))
                val[Q_TAIL_LINES] = streq(val[Q_TAIL], "all") ? NULL : val[Q_TAIL];

        if (val[Q_TAIL_LINES]) {
                if (parse_int64_strict(val[Q_TAIL_LINES], &tail) < 0) {
                        r = ck_error_set(ret_error, -EBADMSG, "Unable to decode query: tailLines: invalid value \"%s\"",
                                         val[Q_TAIL_LINES]);
                        goto finish;
                }
                have_tail = true;
        }
        if (val[Q_LIMIT_BYTES]) {
                if (parse_int64_strict(val[Q_LIMIT_BYTES], &limit) < 0) {
                        r = ck_error_set(ret_error, -EBADMSG,
                                         "Unable to decode query: limitBytes: invalid value \"%s\"",
                                         val[Q_LIMIT_BYTES]);
                        goto finish;
                }
                have_limit = true;
        }
        if (val[Q_SINCE_SECONDS]) {
                if (parse_int64_strict(val[Q_SINCE_SECONDS], &since_seconds) < 0) {
                        r = ck_error_set(ret_error, -EBADMSG,
                                         "Unable to decode query: sinceSeconds: invalid value \"%s\"",
                                         val[Q_SINCE_SECONDS]);
                        goto finish;
                }
                have_since_seconds = true;
        }
        if (val[Q_SINCE_TIME]) {
                const char *s = val[Q_SINCE_TIME];
                int32_t off;
                /* metav1.Time's UnmarshalQueryParameter: "" and "null" are the zero time, still "set" */
                if (!isempty(s) && !streq(s, "null") && logs_parse_timestamp(s, strlen(s), &since_time, &off) < 0) {
                        r = ck_error_set(ret_error, -EBADMSG, "Unable to decode query: sinceTime: invalid value \"%s\"",
                                         s);
                        goto finish;
                }
                have_since_time = true;
        }

        /* validation.ValidatePodLogOptions */
        if (have_tail && tail < 0 &&
            (r = add_invalid(&errs, &nerr, "tailLines: Invalid value: %" PRId64 ": must be greater than or equal to 0",
                             tail)) < 0)
                goto finish;
        if (have_limit && limit < 1 &&
            (r = add_invalid(&errs, &nerr, "limitBytes: Invalid value: %" PRId64 ": must be greater than 0", limit)) <
                    0)
                goto finish;
        if (have_since_seconds && have_since_time) {
                r = add_invalid(&errs, &nerr,
                                "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified");
                if (r < 0)
                        goto finish;
        } else if (have_since_seconds && since_seconds < 1) {
                r = add_invalid(&errs, &nerr, "sinceSeconds: Invalid value: %" PRId64 ": must be greater than 0",
                                since_seconds);
                if (r < 0)
                        goto finish;
        }
        if (nerr > 0) {
                r = nerr > 1 ? ck_error_set(ret_error, -EINVAL, "[%s]", errs)
                             : ck_error_set(ret_error, -EINVAL, "%s", errs);
                goto finish;
        }

        /* logs.NewLogOptions */
        if (have_tail)
                o.tail_lines = tail;
        if (have_limit)
                o.limit_bytes = limit;
        if (have_since_seconds) {
                if (now_nsec <= 0)
                        now_nsec = (int64_t) now_realtime_usec() * 1000;
                if (since_seconds < now_nsec / NSEC_PER_SEC)
                        o.since_nsec = now_nsec - since_seconds * NSEC_PER_SEC;
        }
        if (have_since_time && since_time > o.since_nsec)
                o.since_nsec = since_time;

        *ret = o;
        r = 0;
finish:
        evhttp_clear_headers(&q);
        return r;
}

int api_log_options_from_query(const char *query_string, struct logs_options *ret, struct ck_error **ret_error) {
        return api_log_options_from_query_at(query_string, 0, ret, ret_error);
}
