/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/time.h"
#include "basic/vclock.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

uint64_t now_usec(void) {
        struct timespec ts;
        if (vclock_enabled())
                return vclock_monotonic_usec();
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

struct timeval timeval_from_usec(uint64_t usec) {
        return (struct timeval) { .tv_sec = (time_t) (usec / USEC_PER_SEC),
                                  .tv_usec = (suseconds_t) (usec % USEC_PER_SEC) };
}

int64_t now_realtime_nsec(void) {
        struct timespec ts;
        if (vclock_enabled())
                return (int64_t) vclock_realtime_usec() * 1000;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

uint64_t now_realtime_usec(void) {
        struct timespec ts;
        if (vclock_enabled())
                return vclock_realtime_usec();
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

char *format_rfc3339(uint64_t realtime_usec, char *buf, size_t size) {
        time_t t = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
        return buf;
}

char *format_rfc3339nano(int64_t unix_nsec, char *buf, size_t size) {
        time_t t = (time_t) (unix_nsec / NSEC_PER_SEC);
        struct tm tm;
        char base[32];
        gmtime_r(&t, &tm);
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, size, "%s.%09lldZ", base, (long long) (unix_nsec % NSEC_PER_SEC));
        return buf;
}

int parse_rfc3339(const char *s, int64_t *ret_unix_nsec) {
        struct tm tm = {};
        const char *p;
        int64_t nsec = 0, off = 0;
        time_t t;

        p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        if (*p == '.') {
                int digits = 0;
                p++;
                while (isdigit((unsigned char) *p)) {
                        if (digits < 9) {
                                nsec = nsec * 10 + (*p - '0');
                                digits++;
                        }
                        p++;
                }
                if (digits == 0)
                        return -EINVAL;
                while (digits++ < 9)
                        nsec *= 10;
        }
        if (*p == 'Z' || *p == 'z')
                p++;
        else if (*p == '+' || *p == '-') {
                int hh, mm;
                if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2 || strlen(p) != 6)
                        return -EINVAL;
                off = (hh * 3600 + mm * 60) * (*p == '+' ? 1 : -1);
                p += 6;
        } else
                return -EINVAL;
        if (*p)
                return -EINVAL;
        t = timegm(&tm);
        if (t == (time_t) -1)
                return -EINVAL;
        /* beyond the year 2262 (or before 1677) the nanoseconds saturate instead of wrapping */
        if (__builtin_mul_overflow((int64_t) t - off, (int64_t) NSEC_PER_SEC, ret_unix_nsec) ||
            __builtin_add_overflow(*ret_unix_nsec, nsec, ret_unix_nsec))
                *ret_unix_nsec = (int64_t) t - off < 0 ? INT64_MIN : INT64_MAX;
        return 0;
}
