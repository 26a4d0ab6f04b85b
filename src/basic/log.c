/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <stdarg.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

static int verbosity;

void log_set_verbosity(int v) {
        verbosity = v;
}

int log_get_verbosity(void) {
        return verbosity;
}

void log_internal(enum log_level level, const char *file, int line, const char *fmt, ...) {
        static const char letters[] = { 'E', 'W', 'I' };
        struct timeval tv;
        struct tm tm;
        char msg[4096];
        const char *base;
        va_list ap;
        int saved = errno;

        gettimeofday(&tv, NULL);
        localtime_r(&tv.tv_sec, &tm);
        base = strrchr(file, '/');
        base = base ? base + 1 : file;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        fprintf(stderr, "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] %s\n", letters[level], tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, (long) tv.tv_usec, (int) getpid(), base, line, msg);
        errno = saved;
}
