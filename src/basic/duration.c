/* SPDX-License-Identifier: Apache-2.0 */
/* Durations as Go's time package parses and prints them: a sequence of decimal numbers, each with an
 * optional fraction and a unit suffix (ns, us, µs, ms, s, m, h), optionally signed; "0" alone needs no unit.
 * Exponents, hex and whitespace are not accepted. Integer arithmetic in nanoseconds with overflow checks
 * (at most 2562047h47m16.854775807s, as int64 nanoseconds). */
#include "basic/duration.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "basic/error.h"
#include "basic/macro.h"

#define NS_MAX ((uint64_t) INT64_MAX + 1) /* 1<<63: the magnitude of INT64_MIN */

static const struct {
        const char *name;
        uint64_t nsec;
} duration_units[] = {
        { "ns", 1 },
        { "us", 1000 },
        { "\xc2\xb5s", 1000 }, /* U+00B5 micro sign */
        { "\xce\xbcs", 1000 }, /* U+03BC greek small letter mu */
        { "ms", 1000000 },
        { "s", UINT64_C(1000000000) },
        { "m", UINT64_C(60000000000) },
        { "h", UINT64_C(3600000000000) },
};

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

int go_duration_parse(const char *s, int64_t *ret_nsec, struct ck_error **ret_error) {
        const char *orig = s, *p = s;
        uint64_t total = 0;
        bool neg = false;

        if (!s)
                return -EINVAL;
        if (*p == '-' || *p == '+')
                neg = *p++ == '-';
        if (streq(p, "0")) {
                *ret_nsec = 0;
                return 0;
        }
        if (*p == '\0')
                return ck_error_set(ret_error, -EINVAL, "time: invalid duration \"%s\"", orig);

        while (*p) {
                uint64_t v = 0, f = 0, scale = 1, unit = 0;
                bool pre = false, post = false, f_overflow = false;
                const char *u;
                size_t ul;

                if (!is_digit(*p) && *p != '.')
                        return ck_error_set(ret_error, -EINVAL, "time: invalid duration \"%s\"", orig);
                for (; is_digit(*p); p++) {
                        uint64_t d = (uint64_t) (*p - '0');
                        if (v > (NS_MAX - d) / 10)
                                return ck_error_set(ret_error, -ERANGE, "time: invalid duration \"%s\"", orig);
                        v = v * 10 + d;
                        pre = true;
                }
                if (*p == '.') {
                        p++;
                        for (; is_digit(*p); p++) {
                                post = true;
                                if (f_overflow)
                                        continue; /* further digits are below nanosecond precision */
                                if (f > (UINT64_MAX / 10 - 9) || scale > UINT64_MAX / 10) {
                                        f_overflow = true;
                                        continue;
                                }
                                f = f * 10 + (uint64_t) (*p - '0');
                                scale *= 10;
                        }
                }
                if (!pre && !post)
                        return ck_error_set(ret_error, -EINVAL, "time: invalid duration \"%s\"", orig);

                u = p;
                while (*p && *p != '.' && !is_digit(*p))
                        p++;
                ul = (size_t) (p - u);
                if (ul == 0)
                        return ck_error_set(ret_error, -EINVAL, "time: missing unit in duration \"%s\"", orig);
                for (size_t i = 0; i < ELEMENTSOF(duration_units); i++)
                        if (strlen(duration_units[i].name) == ul && strneq(u, duration_units[i].name, ul)) {
                                unit = duration_units[i].nsec;
                                break;
                        }
                if (unit == 0)
                        return ck_error_set(ret_error, -EINVAL, "time: unknown unit \"%.*s\" in duration \"%s\"",
                                            (int) ul, u, orig);
                if (v > NS_MAX / unit)
                        return ck_error_set(ret_error, -ERANGE, "time: invalid duration \"%s\"", orig);
                v *= unit;
                if (f > 0) {
                        /* long double keeps fractions of hours exact to the nanosecond */
                        v += (uint64_t) ((long double) f * ((long double) unit / (long double) scale));
                        if (v > NS_MAX)
                                return ck_error_set(ret_error, -ERANGE, "time: invalid duration \"%s\"", orig);
                }
                if (total > NS_MAX - v)
                        return ck_error_set(ret_error, -ERANGE, "time: invalid duration \"%s\"", orig);
                total += v;
        }
        if (neg) {
                *ret_nsec = total == NS_MAX ? INT64_MIN : -(int64_t) total;
                return 0;
        }
        if (total > (uint64_t) INT64_MAX)
                return ck_error_set(ret_error, -ERANGE, "time: invalid duration \"%s\"", orig);
        *ret_nsec = (int64_t) total;
        return 0;
}

/* "<whole>[.<frac without trailing zeros>]" where v has prec fractional decimal digits */
static int format_frac(char *buf, size_t size, uint64_t v, unsigned prec) {
        uint64_t div = 1, frac;
        char digits[24];
        int n;

        for (unsigned i = 0; i < prec; i++)
                div *= 10;
        frac = v % div;
        if (frac == 0)
                return snprintf(buf, size, "%" PRIu64, v / div);
        n = snprintf(digits, sizeof(digits), "%0*" PRIu64, (int) prec, frac);
        while (n > 0 && digits[n - 1] == '0')
                digits[--n] = '\0';
        return snprintf(buf, size, "%" PRIu64 ".%s", v / div, digits);
}

char *go_duration_format(int64_t nsec, char *buf, size_t size) {
        uint64_t u = nsec < 0 ? (uint64_t) 0 - (uint64_t) nsec : (uint64_t) nsec;
        const char *sign = nsec < 0 ? "-" : "";
        char num[48];

        if (!buf || size == 0)
                return NULL;
        if (u == 0) {
                snprintf(buf, size, "0s");
                return buf;
        }
        if (u < UINT64_C(1000000000)) {
                const char *unit;
                unsigned prec;
                if (u < 1000) {
                        prec = 0;
                        unit = "ns";
                } else if (u < 1000000) {
                        prec = 3;
                        unit = "\xc2\xb5s";
                } else {
                        prec = 6;
                        unit = "ms";
                }
                format_frac(num, sizeof(num), u, prec);
                snprintf(buf, size, "%s%s%s", sign, num, unit);
                return buf;
        }

        uint64_t secs = u / UINT64_C(1000000000), h = secs / 3600, m = (secs / 60) % 60;
        format_frac(num, sizeof(num), (secs % 60) * UINT64_C(1000000000) + u % UINT64_C(1000000000), 9);
        if (h > 0)
                snprintf(buf, size, "%s%" PRIu64 "h%" PRIu64 "m%ss", sign, h, m, num);
        else if (m > 0)
                snprintf(buf, size, "%s%" PRIu64 "m%ss", sign, m, num);
        else
                snprintf(buf, size, "%s%ss", sign, num);
        return buf;
}
