/* SPDX-License-Identifier: Apache-2.0 */
/* The node log query's parameters and their checks: see node_log_query.h. */

#include "server/node_log_query.h"

#include "basic/error.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <time.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"

/* Longest query string read. */
#define RAW_MAX (64 * 1024)

struct node_log_query *node_log_query_free(struct node_log_query *q) {
        if (!q)
                return NULL;
        strv_free(q->files);
        strv_free(q->services);
        free(q->since_time);
        free(q->until_time);
        free(q->pattern);
        free(q);
        return NULL;
}

bool node_log_query_has_options(const struct node_log_query *q) {
        return q->since_time || q->until_time || q->has_tail_lines || q->has_boot || !isempty(q->pattern);
}

/* field.ErrorList: messages kept once each, aggregated as upstream's utilerrors.NewAggregate */
struct errs {
        char **msgs;
        bool oom;
};

static void add(struct errs *e, const char *fmt, ...) _printf_(2, 3);
static void add(struct errs *e, const char *fmt, ...) {
        char *m = NULL;
        va_list ap;

        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        if (!m) {
                e->oom = true;
                return;
        }
        if (strv_contains(e->msgs, m)) {
                free(m);
                return;
        }
        if (strv_push(&e->msgs, m) < 0)
                e->oom = true;
}

/* The errors found, as upstream's aggregate prints them (one alone, several as "[a, b]"), into *ret_error */
static int finish(struct errs *e, struct ck_error **ret_error) {
        size_t n = strv_length(e->msgs);
        int r = 0;

        if (e->oom)
                r = -ENOMEM;
        else if (n == 1)
                r = ck_error_set(ret_error, -EINVAL, "%s", e->msgs[0]);
        else if (n > 1) {
                _cleanup_free_ char *joined = strv_join(e->msgs, ", ");
                r = joined ? ck_error_set(ret_error, -EINVAL, "[%s]", joined) : -ENOMEM;
        }
        strv_free(e->msgs);
        e->msgs = NULL;
        return r;
}

/* a Go string as %q prints it (the ASCII subset: quotes, backslashes, control characters escaped) */
static char *quote(const char *s) {
        size_t n = strlen(s);
        char *out = malloc(n * 4 + 3), *p = out;

        if (!out)
                return NULL;
        *p++ = '"';
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                if (c == '"' || c == '\\') {
                        *p++ = '\\';
                        *p++ = (char) c;
                } else if (c == '\n') {
                        p = stpcpy(p, "\\n");
                } else if (c == '\t') {
                        p = stpcpy(p, "\\t");
                } else if (c < 0x20 || c == 0x7f) {
                        p += sprintf(p, "\\x%02x", c);
                } else
                        *p++ = (char) c;
        }
        *p++ = '"';
        *p = '\0';
        return out;
}

/* a []string as encoding/json prints it */
static char *json_list(char *const *l) {
        json_t *a = json_array();
        char *s;

        for (size_t i = 0; a && l && l[i]; i++)
                json_array_append_new(a, json_string(l[i]));
        s = a ? json_dumps(a, JSON_COMPACT) : NULL;
        json_decref(a);
        return s;
}

/* strconv.Atoi: -EINVAL for its "invalid syntax", -ERANGE for its "value out of range" (atoi_go_why) */
static int atoi_go(const char *s, long *ret) {
        const char *p = s;
        bool neg = false;
        unsigned long long v = 0;

        if (*p == '+' || *p == '-')
                neg = *p++ == '-';
        if (!*p)
                return -EINVAL;
        for (; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                v = v * 10 + (unsigned long long) (*p - '0');
                if (v > (unsigned long long) LONG_MAX + 1)
                        return -ERANGE;
        }
        if (!neg && v > (unsigned long long) LONG_MAX)
                return -ERANGE;
        *ret = neg ? (long) (0 - v) : (long) v;
        return 0;
}

static const char *atoi_go_why(int r) {
        return r == -ERANGE ? "value out of range" : "invalid syntax";
}

static void int_param(struct errs *e, const char *name, const char *v, bool *has, long *out) {
        _cleanup_free_ char *q = quote(v);
        int r;

        if (!q) {
                e->oom = true;
                return;
        }
        r = atoi_go(v, out);
        if (r < 0)
                add(e, "%s: Invalid value: %s: strconv.Atoi: parsing %s: %s", name, q, q, atoi_go_why(r));
        else
                *has = true;
}

/* the seconds of an RFC 3339 time parse_rfc3339 accepted, for any year (its nanoseconds wrap after 2262) */
static int64_t rfc3339_seconds(const char *s) {
        struct tm tm = {};
        const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        int64_t off = 0;
        int hh = 0, mm = 0;

        if (!p)
                return 0;
        if (*p == '.')
                for (p++; isdigit((unsigned char) *p); p++)
                        ;
        if ((*p == '+' || *p == '-') && sscanf(p + 1, "%2d:%2d", &hh, &mm) == 2)
                off = (int64_t) (hh * 3600 + mm * 60) * (*p == '+' ? 1 : -1);
        return (int64_t) timegm(&tm) - off;
}

static void time_param(struct errs *e, const char *name, const char *v, char **out, int64_t *nsec, int64_t *sec) {
        _cleanup_free_ char *q = quote(v);

        if (!q) {
                e->oom = true;
                return;
        }
        if (parse_rfc3339(v, nsec) < 0) {
                add(e, "%s: Invalid value: %s: invalid time format", name, q);
                return;
        }
        *sec = rfc3339_seconds(v);
        *out = strdup(v);
        if (!*out)
                e->oom = true;
}

/* strings.TrimSpace(s) == "" */
static bool blank(const char *s) {
        for (; *s; s++)
                if (!isspace((unsigned char) *s))
                        return false;
        return true;
}

int node_log_query_parse(const char *raw, struct node_log_query **ret, struct ck_error **ret_error) {
        struct evkeyvalq params = {};
        struct evkeyval *kv;
        struct node_log_query *q = NULL;
        struct errs e = {};
        _cleanup_strv_free_ char **queries = NULL;
        bool has_query = false;
        int r;

        assert(ret && ret_error);
        *ret = NULL;
        if (isempty(raw))
                return 0;
        if (strlen(raw) > RAW_MAX || evhttp_parse_query_str(raw, &params) < 0) {
                return ck_error_set(ret_error, -EINVAL, "invalid query string");
        }
        q = calloc(1, sizeof(*q));
        if (!q) {
                evhttp_clear_headers(&params);
                return -ENOMEM;
        }
        /* url.Values.Get: the first value of each; every value of "query" */
        const char *since_v = NULL, *until_v = NULL, *boot_v = NULL, *tail_v = NULL, *pattern_v = NULL;
        TAILQ_FOREACH(kv, &params, next) {
                const char *k = kv->key, *v = strempty(kv->value);
                if (streq(k, "query")) {
                        has_query = true;
                        if (strv_extend(&queries, v) < 0)
                                e.oom = true;
                        if (strpbrk(v, "/\\")) {
                                if (strv_extend(&q->files, v) < 0)
                                        e.oom = true;
                        } else if (!blank(v)) {
                                if (strv_extend(&q->services, v) < 0)
                                        e.oom = true;
                        }
                } else if (streq(k, "sinceTime") && !since_v)
                        since_v = v;
                else if (streq(k, "untilTime") && !until_v)
                        until_v = v;
                else if (streq(k, "boot") && !boot_v)
                        boot_v = v;
                else if (streq(k, "tailLines") && !tail_v)
                        tail_v = v;
                else if (streq(k, "pattern") && !pattern_v)
                        pattern_v = v;
        }
        /* in upstream's order; an empty value is no value */
        if (!isempty(since_v))
                time_param(&e, "sinceTime", since_v, &q->since_time, &q->since_nsec, &q->since_sec);
        if (!isempty(until_v))
                time_param(&e, "untilTime", until_v, &q->until_time, &q->until_nsec, &q->until_sec);
        if (!isempty(boot_v))
                int_param(&e, "boot", boot_v, &q->has_boot, &q->boot);
        if (!isempty(tail_v))
                int_param(&e, "tailLines", tail_v, &q->has_tail_lines, &q->tail_lines);
        if (!isempty(pattern_v) && !(q->pattern = strdup(pattern_v)))
                e.oom = true;
        evhttp_clear_headers(&params);
        /* "query" given, but blank */
        if (has_query && !q->files && !q->services) {
                _cleanup_free_ char *l = json_list(queries);
                if (!l)
                        e.oom = true;
                else
                        add(&e, "query: Invalid value: %s: may not be empty", l);
        }
        r = finish(&e, ret_error);
        if (r < 0) {
                node_log_query_free(q);
                return r;
        }
        if (!q->files && !q->services && !node_log_query_has_options(q)) {
                node_log_query_free(q);
                return 0;
        }
        *ret = q;
        return 0;
}

/* [a-zA-Z\-_.:0-9@]+ */
static bool service_name_safe(const char *s) {
        for (; *s; s++)
                if (!isalnum((unsigned char) *s) && !strchr("-_.:@", *s))
                        return false;
        return true;
}

/* the names of Go's syscall errors are glibc's, lower-cased at the start */
static void go_strerror(int err, char *buf, size_t size) {
        snprintf(buf, size, "%s", strerror(err));
        if (buf[0])
                buf[0] = (char) tolower((unsigned char) buf[0]);
}

int node_log_query_validate(const struct node_log_query *q, int logdirfd, struct ck_error **ret_error) {
        struct errs e = {};
        size_t n_files = strv_length(q->files), n_services = strv_length(q->services);

        assert(q && ret_error);
        for (size_t i = 0; i < n_services; i++) {
                _cleanup_free_ char *qs = quote(q->services[i]);
                if (!qs) {
                        e.oom = true;
                        continue;
                }
                if (strlen(q->services[i]) > NODE_LOG_QUERY_MAX_SERVICE_LENGTH)
                        add(&e, "query: Invalid value: %s: length must be less than %d", qs,
                            NODE_LOG_QUERY_MAX_SERVICE_LENGTH);
                else if (!service_name_safe(q->services[i]))
                        add(&e, "query: Invalid value: %s: input contains unsupported characters", qs);
        }
        if (n_services > NODE_LOG_QUERY_MAX_SERVICES)
                add(&e, "query: Too many: %zu: must have at most %d items", n_services, NODE_LOG_QUERY_MAX_SERVICES);

        if (n_files == 0 && n_services == 0)
                add(&e, "query: Required value: cannot be empty with options");
        else if (n_files > 0 && n_services > 0) {
                _cleanup_free_ char *f = strv_join(q->files, " "), *s = strv_join(q->services, " "), *v = NULL,
                                    *qv = NULL;
                if (!f || !s || asprintf(&v, "[%s], [%s]", f, s) < 0 || !(qv = quote(v)))
                        e.oom = true;
                else
                        add(&e, "query: Invalid value: %s: cannot specify a file and service", qv);
        } else if (n_files > 1 || (n_files == 1 && node_log_query_has_options(q))) {
                _cleanup_free_ char *l = json_list(q->files);
                if (!l)
                        e.oom = true;
                else
                        add(&e, "query: Invalid value: %s: %s", l,
                            n_files > 1 ? "cannot specify more than one file" : "cannot specify file with options");
        } else if (n_files == 1) {
                /* os.Root.Stat: beneath the log directory, never outside it */
                _cleanup_free_ char *l = json_list(q->files);
                const char *rel = q->files[0];
                struct stat st;
                char why[128];
                int r = 0;

                while (*rel == '/')
                        rel++;
                if (strstr(q->files[0], "..")) {
                        /* a ".." component may leave the root: refused whatever it names */
                        const char *p = q->files[0];
                        for (; (p = strstr(p, "..")); p += 2)
                                if ((p == q->files[0] || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
                                        r = -EXDEV;
                }
                if (r == 0 && fstatat(logdirfd, *rel ? rel : ".", &st, AT_SYMLINK_NOFOLLOW) < 0)
                        r = -errno;
                if (r == 0 && S_ISLNK(st.st_mode))
                        r = -EXDEV; /* links are not followed here: the file server refuses those leaving /var/log */
                if (!l)
                        e.oom = true;
                else if (r == -EXDEV)
                        add(&e, "query: Invalid value: %s: statat %s: path escapes from parent", l, q->files[0]);
                else if (r < 0) {
                        go_strerror(-r, why, sizeof(why));
                        add(&e, "query: Invalid value: %s: statat %s: %s", l, q->files[0], why);
                }
        }

        if (q->since_time && q->until_time &&
            (q->since_sec > q->until_sec || (q->since_sec == q->until_sec && q->since_nsec > q->until_nsec))) {
                _cleanup_free_ char *qv = quote(q->until_time);
                if (!qv)
                        e.oom = true;
                else
                        add(&e, "untilTime: Invalid value: %s: must be after `sinceTime`", qv);
        }
        if (q->has_boot && q->boot > 0)
                add(&e, "boot: Invalid value: %ld: must be less than 1", q->boot);
        if (q->has_tail_lines && (q->tail_lines < 0 || q->tail_lines > NODE_LOG_QUERY_MAX_TAIL_LINES))
                add(&e, "tailLines: Invalid value: %ld: must be between 0 and %d, inclusive", q->tail_lines,
                    NODE_LOG_QUERY_MAX_TAIL_LINES);
        return finish(&e, ret_error);
}

/* "2006-1-2 15:4:5", in UTC */
static char *journal_time(int64_t sec) {
        time_t t = (time_t) sec;
        struct tm tm;
        char *s = NULL;

        if (!gmtime_r(&t, &tm))
                return NULL;
        if (asprintf(&s, "%d-%d-%d %d:%d:%d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec) < 0)
                return NULL;
        return s;
}

static int push_fmt(char ***l, const char *fmt, ...) _printf_(2, 3);
static int push_fmt(char ***l, const char *fmt, ...) {
        char *m = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&m, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return strv_push(l, m); /* takes m, even on failure */
}

int node_log_query_journal_argv(const struct node_log_query *q, char *const *services, char ***ret) {
        _cleanup_strv_free_ char **a = NULL;
        int r = 0;

        assert(q && ret);
        r = strv_extend(&a, "journalctl");
        if (r >= 0)
                r = strv_extend(&a, "--utc");
        if (r >= 0)
                r = strv_extend(&a, "--no-pager");
        if (r >= 0)
                r = strv_extend(&a, "--output=short-precise");
        if (r >= 0 && q->since_time) {
                _cleanup_free_ char *t = journal_time(q->since_sec);
                r = t ? push_fmt(&a, "--since=%s", t) : -ENOMEM;
        }
        if (r >= 0 && q->until_time) {
                _cleanup_free_ char *t = journal_time(q->until_sec);
                r = t ? push_fmt(&a, "--until=%s", t) : -ENOMEM;
        }
        if (r >= 0 && q->has_tail_lines) {
                r = strv_extend(&a, "--pager-end");
                if (r >= 0)
                        r = push_fmt(&a, "--lines=%ld", q->tail_lines);
        }
        for (size_t i = 0; r >= 0 && services && services[i]; i++)
                if (!isempty(services[i]))
                        r = push_fmt(&a, "--unit=%s", services[i]);
        if (r >= 0 && !isempty(q->pattern))
                r = push_fmt(&a, "--grep=%s", q->pattern);
        if (r >= 0 && q->has_boot) {
                r = strv_extend(&a, "--boot");
                if (r >= 0)
                        r = push_fmt(&a, "%ld", q->boot);
        }
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(a);
        return 0;
}

bool node_log_query_is_native_logger(const char *field_output, const char *service) {
        _cleanup_free_ char *unit = NULL;

        if (!field_output || asprintf(&unit, "%s.service", service) < 0)
                return false;
        return strstr(field_output, unit) != NULL;
}

int node_log_query_heuristic_files(const char *service, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        r = strv_extend(&l, service);
        if (r >= 0)
                r = push_fmt(&l, "%s.log", service);
        if (r >= 0)
                r = push_fmt(&l, "%s/%s.log", service, service);
        if (r < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(l);
        return 0;
}
