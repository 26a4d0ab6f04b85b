/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/* Logging to stderr, one line per message, in one of upstream's two formats (--logging-format):
 *   text: klog's "I1122 10:59:00.123456   1234 file.c:42] message"; structured messages (log_*_kv) as
 *         klog's InfoS: "I... file.c:42] \"Message\" key=\"value\"".
 *   json: component-base's JSON logger: {"ts":<ms since the epoch>,"caller":"dir/file.c:42","msg":"...","v":0,
 *         "key":"value"}; "v" (the verbosity of the call) on info lines only, as zapr writes it.
 * Verbosity follows the kubelet's --v: log_v(level, ...) prints when level <= --v. */

enum log_level {
        LOG_LEVEL_ERROR,
        LOG_LEVEL_WARNING,
        LOG_LEVEL_INFO,
};

enum log_format {
        LOG_FORMAT_TEXT,
        LOG_FORMAT_JSON,
};

void log_set_verbosity(int v);
int log_get_verbosity(void);
void log_set_format(enum log_format f);
/* "text" or "json"; -EINVAL for anything else */
int log_format_from_string(const char *s, enum log_format *ret);

void log_internal(enum log_level level, const char *file, int line, const char *fmt, ...) _printf_(4, 5);
void log_internal_v(enum log_level level, int v, const char *file, int line, const char *fmt, ...) _printf_(5, 6);
/* A structured message: KV holds key, value, key, value, ..., NULL (strings). */
void log_internal_kv(enum log_level level, int v, const char *file, int line, const char *msg, const char *const *kv);

#define log_error(...) log_internal(LOG_LEVEL_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_LEVEL_WARNING, __FILE__, __LINE__, __VA_ARGS__)
#define log_info(...) log_internal(LOG_LEVEL_INFO, __FILE__, __LINE__, __VA_ARGS__)
/* Verbose info, shown when v <= --v. */
#define log_v(v, ...)                                                                         \
        do {                                                                                  \
                if ((v) <= log_get_verbosity())                                               \
                        log_internal_v(LOG_LEVEL_INFO, (v), __FILE__, __LINE__, __VA_ARGS__); \
        } while (0)

/* Structured, with at least one key/value pair: log_info_kv("Rotating certificates", "signer", name) */
#define log_kv(level, v, msg, ...) \
        log_internal_kv((level), (v), __FILE__, __LINE__, (msg), (const char *const[]) { __VA_ARGS__, NULL })
#define log_info_kv(msg, ...) log_kv(LOG_LEVEL_INFO, 0, msg, __VA_ARGS__)
#define log_warning_kv(msg, ...) log_kv(LOG_LEVEL_WARNING, 0, msg, __VA_ARGS__)
#define log_error_kv(msg, ...) log_kv(LOG_LEVEL_ERROR, 0, msg, __VA_ARGS__)
#define log_v_kv(v, msg, ...)                                          \
        do {                                                           \
                if ((v) <= log_get_verbosity())                        \
                        log_kv(LOG_LEVEL_INFO, (v), msg, __VA_ARGS__); \
        } while (0)

/* Log an error and return the given negative errno. */
#define log_error_errno(r, ...)         \
        ({                              \
                int _r_ = (r);          \
                log_error(__VA_ARGS__); \
                _r_ < 0 ? _r_ : -_r_;   \
        })

/* The pure part, for the unit tests: one line ending in a newline (no NUL) into buf, cut to fit; returns its
 * length (at most size). */
size_t log_format_line(char *buf, size_t size, enum log_format format, uint64_t realtime_usec, int pid,
                       enum log_level level, int v, const char *file, int line, const char *msg, const char *const *kv);
