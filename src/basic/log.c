/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define LOG_LINE_MAX 8192

static int verbosity;
static enum log_format format = LOG_FORMAT_TEXT;

void log_set_verbosity(int v) {
        verbosity = v;
}

int log_get_verbosity(void) {
        return verbosity;
}

void log_set_format(enum log_format f) {
        format = f;
}

int log_format_from_string(const char *s, enum log_format *ret) {
        if (s && strcmp(s, "text") == 0)
                *ret = LOG_FORMAT_TEXT;
        else if (s && strcmp(s, "json") == 0)
                *ret = LOG_FORMAT_JSON;
        else
                return -EINVAL;
        return 0;
}

/* ---- a bounded writer ---- */

struct out {
        char *buf;
        size_t size, len; /* len may pass size: what did not fit is dropped */
};

static void put(struct out *o, const char *s, size_t n) {
        if (o->len < o->size) {
                size_t room = o->size - o->len;
                memcpy(o->buf + o->len, s, n < room ? n : room);
        }
        o->len += n;
}

static void puts_(struct out *o, const char *s) {
        put(o, s, strlen(s));
}

static void putf(struct out *o, const char *fmt, ...) _printf_(2, 3);
static void putf(struct out *o, const char *fmt, ...) {
        char tmp[64];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
        va_end(ap);
        if (n > 0)
                put(o, tmp, (size_t) n < sizeof(tmp) ? (size_t) n : sizeof(tmp) - 1);
}

/* the length of the valid UTF-8 sequence at s (1-4), 0 if it is not one */
static size_t utf8_len(const unsigned char *s) {
        size_t n;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                n = 3;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                n = 4;
        else
                return 0;
        for (size_t i = 1; i < n; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
        if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
                return 0; /* overlong, surrogate */
        if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
                return 0;
        return n;
}

/* a JSON string (as zap writes it: invalid UTF-8 becomes U+FFFD) or Go's %q (klog's quoting) */
static void put_quoted(struct out *o, const char *s, bool json) {
        put(o, "\"", 1);
        for (const unsigned char *p = (const unsigned char *) s; *p;) {
                size_t n = utf8_len(p);

                if (n == 0) {
                        puts_(o, json ? "\\ufffd" : "\\x");
                        if (!json)
                                putf(o, "%02x", *p);
                        p++;
                        continue;
                }
                if (n > 1) {
                        put(o, (const char *) p, n);
                        p += n;
                        continue;
                }
                switch (*p) {
                case '"':
                        puts_(o, "\\\"");
                        break;
                case '\\':
                        puts_(o, "\\\\");
                        break;
                case '\n':
                        puts_(o, "\\n");
                        break;
                case '\r':
                        puts_(o, "\\r");
                        break;
                case '\t':
                        puts_(o, "\\t");
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f)
                                putf(o, json ? "\\u%04x" : "\\x%02x", *p);
                        else
                                put(o, (const char *) p, 1);
                }
                p++;
        }
        put(o, "\"", 1);
}

/* "dir/file.c" of a __FILE__ (zap's short caller: the last directory and the file) */
static const char *short_caller(const char *file) {
        const char *last = strrchr(file, '/');

        if (!last)
                return file;
        for (const char *p = last - 1; p >= file; p--)
                if (*p == '/')
                        return p + 1;
        return file;
}

size_t log_format_line(char *buf, size_t size, enum log_format fmt, uint64_t realtime_usec, int pid,
                       enum log_level level, int v, const char *file, int line, const char *msg,
                       const char *const *kv) {
        static const char letters[] = { 'E', 'W', 'I' };
        struct out o = { .buf = buf, .size = size > 0 ? size - 1 : 0 };

        if (fmt == LOG_FORMAT_JSON) {
                /* float milliseconds, as component-base's epochMillisTimeEncoder */
                putf(&o, "{\"ts\":%llu.%03llu,\"caller\":", (unsigned long long) (realtime_usec / 1000),
                     (unsigned long long) (realtime_usec % 1000));
                {
                        char caller[256];
                        snprintf(caller, sizeof(caller), "%s:%d", short_caller(file), line);
                        put_quoted(&o, caller, true);
                }
                puts_(&o, ",\"msg\":");
                put_quoted(&o, msg, true);
                if (level != LOG_LEVEL_ERROR)
                        putf(&o, ",\"v\":%d", v);
                for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2) {
                        put(&o, ",", 1);
                        put_quoted(&o, kv[i], true);
                        put(&o, ":", 1);
                        put_quoted(&o, kv[i + 1], true);
                }
                put(&o, "}", 1);
        } else {
                struct tm tm;
                time_t secs = (time_t) (realtime_usec / 1000000);
                const char *base = strrchr(file, '/');

                localtime_r(&secs, &tm);
                putf(&o, "%c%02d%02d %02d:%02d:%02d.%06ld %7d ", letters[level], tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec, (long) (realtime_usec % 1000000), pid);
                puts_(&o, base ? base + 1 : file);
                putf(&o, ":%d] ", line);
                if (kv && kv[0]) {
                        put_quoted(&o, msg, false);
                        for (size_t i = 0; kv[i] && kv[i + 1]; i += 2) {
                                put(&o, " ", 1);
                                puts_(&o, kv[i]);
                                put(&o, "=", 1);
                                put_quoted(&o, kv[i + 1], false);
                        }
                } else
                        puts_(&o, msg);
        }
        if (o.len > o.size)
                o.len = o.size; /* truncated: keep the newline */
        buf[o.len++] = '\n';
        return o.len;
}

static void emit(enum log_level level, int v, const char *file, int line, const char *msg, const char *const *kv) {
        char buf[LOG_LINE_MAX];
        struct timeval tv;
        size_t n;

        gettimeofday(&tv, NULL);
        n = log_format_line(buf, sizeof(buf), format, (uint64_t) tv.tv_sec * 1000000 + (uint64_t) tv.tv_usec,
                            (int) getpid(), level, v, file, line, msg, kv);
        /* one write per line: lines of concurrent writers (a sanitizer, a child) do not interleave */
        (void) !write(STDERR_FILENO, buf, n);
}

void log_internal_v(enum log_level level, int v, const char *file, int line, const char *fmt, ...) {
        char msg[4096];
        va_list ap;
        int saved = errno;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        emit(level, v, file, line, msg, NULL);
        errno = saved;
}

void log_internal(enum log_level level, const char *file, int line, const char *fmt, ...) {
        char msg[4096];
        va_list ap;
        int saved = errno;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        emit(level, 0, file, line, msg, NULL);
        errno = saved;
}

void log_internal_kv(enum log_level level, int v, const char *file, int line, const char *msg, const char *const *kv) {
        int saved = errno;

        emit(level, v, file, line, msg, kv);
        errno = saved;
}
