/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "macro.h"

/* klog-style logging to stderr: "I1122 10:59:00.123456   1234 file.c:42] message".
 * Verbosity follows the kubelet's --v: log_v(level, ...) prints when level <= --v. */

enum log_level {
        LOG_LEVEL_ERROR,
        LOG_LEVEL_WARNING,
        LOG_LEVEL_INFO,
};

void log_set_verbosity(int v);
int log_get_verbosity(void);

void log_internal(enum log_level level, const char *file, int line, const char *fmt, ...) _printf_(4, 5);

#define log_error(...) log_internal(LOG_LEVEL_ERROR, __FILE__, __LINE__, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_LEVEL_WARNING, __FILE__, __LINE__, __VA_ARGS__)
#define log_info(...) log_internal(LOG_LEVEL_INFO, __FILE__, __LINE__, __VA_ARGS__)
/* Verbose info, shown when v <= --v. */
#define log_v(v, ...)                                                                  \
        do {                                                                           \
                if ((v) <= log_get_verbosity())                                        \
                        log_internal(LOG_LEVEL_INFO, __FILE__, __LINE__, __VA_ARGS__); \
        } while (0)

/* Log an error and return the given negative errno. */
#define log_error_errno(r, ...)         \
        ({                              \
                int _r_ = (r);          \
                log_error(__VA_ARGS__); \
                _r_ < 0 ? _r_ : -_r_;   \
        })
