/* SPDX-License-Identifier: Apache-2.0 */
/* resource.Quantity: parsing (ParseQuantity), exact comparison and the canonical form (String()).
 *
 * A quantity is kept exactly as an integer count of nano units (10^-9), as upstream rounds every value up to
 * nano precision; the magnitude is capped at INT64_MAX units. The count fits in a signed 128-bit integer. */
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "apis/apis-internal.h"
#include "apis/pod.h"
#include "basic/string.h"

#define QUANTITY_MAX_LEN 1024

#define NANO INT64_C(1000000000)
#define CAP_NANO ((__int128) INT64_MAX * NANO)

static const char err_format[] =
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
static const char err_suffix[] = "unable to parse quantity's suffix";

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

/* The scanner of upstream parseQuantityString: sign, numerator (leading zeros stripped), denominator, suffix. */
struct scanned {
        bool negative;
        const char *num;
        size_t num_len;
        const char *denom;
        size_t denom_len;
        const char *suffix;
        size_t suffix_len;
};

static int scan(const char *s, struct scanned *ret) {
        size_t pos = 0, end = strlen(s), i;
        struct scanned q = { .num = "0", .num_len = 1, .denom = "", .suffix = "" };

        if (pos < end && (s[0] == '-' || s[0] == '+')) {
                q.negative = s[0] == '-';
                pos++;
        }
        while (pos < end && s[pos] == '0')
                pos++;
        if (pos >= end) {
                *ret = q;
                return 0;
        }
        for (i = pos; i < end && is_digit(s[i]); i++)
                ;
        if (i > pos) {
                q.num = s + pos;
                q.num_len = i - pos;
        }
        pos = i;
        if (pos < end && s[pos] == '.') {
                pos++;
                for (i = pos; i < end && is_digit(s[i]); i++)
                        ;
                q.denom = s + pos;
                q.denom_len = i - pos;
                pos = i;
        }
        q.suffix = s + pos;
        for (i = pos; i < end && strchr("eEinumkKMGTP", s[i]); i++)
                ;
        if (i < end && (s[i] == '-' || s[i] == '+'))
                i++;
        for (; i < end; i++)
                if (!is_digit(s[i]))
                        return -EINVAL; /* ErrFormatWrong */
        q.suffix_len = end - pos;
        *ret = q;
        return 0;
}

/* quantitySuffixer.interpret: base-10 exponent or base-2 exponent, and the format. */
static int interpret_suffix(const char *s, size_t n, int64_t *ret_exp10, int64_t *ret_exp2,
                            enum quantity_format *ret_format) {
        static const struct {
                const char *s;
                int exp10, exp2;
                enum quantity_format f;
        } table[] = {
                { "", 0, 0, QUANTITY_DECIMAL_SI },   { "n", -9, 0, QUANTITY_DECIMAL_SI },
                { "u", -6, 0, QUANTITY_DECIMAL_SI }, { "m", -3, 0, QUANTITY_DECIMAL_SI },
                { "k", 3, 0, QUANTITY_DECIMAL_SI },  { "M", 6, 0, QUANTITY_DECIMAL_SI },
                { "G", 9, 0, QUANTITY_DECIMAL_SI },  { "T", 12, 0, QUANTITY_DECIMAL_SI },
                { "P", 15, 0, QUANTITY_DECIMAL_SI }, { "E", 18, 0, QUANTITY_DECIMAL_SI },
                { "Ki", 0, 10, QUANTITY_BINARY_SI }, { "Mi", 0, 20, QUANTITY_BINARY_SI },
                { "Gi", 0, 30, QUANTITY_BINARY_SI }, { "Ti", 0, 40, QUANTITY_BINARY_SI },
                { "Pi", 0, 50, QUANTITY_BINARY_SI }, { "Ei", 0, 60, QUANTITY_BINARY_SI },
        };
        char buf[32];
        int64_t e;

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strlen(table[i].s) == n && strneq(table[i].s, s, n)) {
                        *ret_exp10 = table[i].exp10;
                        *ret_exp2 = table[i].exp2;
                        *ret_format = table[i].f;
                        return 0;
                }
        /* "e3", "E-3", "e+3": strconv.ParseInt(suffix[1:], 10, 64) */
        if (n >= 2 && n < sizeof(buf) && (s[0] == 'e' || s[0] == 'E')) {
                memcpy(buf, s + 1, n - 1);
                buf[n - 1] = '\0';
                if (buf[0] == '+') {
                        if (!is_digit(buf[1]))
                                return -EINVAL;
                        memmove(buf, buf + 1, n - 1);
                }
                if (safe_atoi64(buf, &e) < 0)
                        return -EINVAL;
                *ret_exp10 = e;
                *ret_exp2 = 0;
                *ret_format = QUANTITY_DECIMAL_EXPONENT;
                return 0;
        }
        return -EINVAL;
}

static int parse_exact(const char *s, __int128 *ret_nano, enum quantity_format *ret_format,
                       struct ck_error **ret_error) {
        _cleanup_free_ unsigned char *digits = NULL; /* little-endian decimal digits of the mantissa */
        enum quantity_format format;
        int64_t exp10, exp2, k;
        size_t m, cap;
        struct scanned q;
        __int128 v = 0;
        bool inexact = false;

        if (isempty(s) || strlen(s) > QUANTITY_MAX_LEN)
                return ck_error_set(ret_error, -EINVAL, "%s", err_format);
        if (streq(s, "0")) {
                *ret_nano = 0;
                *ret_format = QUANTITY_DECIMAL_SI;
                return 0;
        }
        if (scan(s, &q) < 0)
                return ck_error_set(ret_error, -EINVAL, "%s", err_format);
        if (interpret_suffix(q.suffix, q.suffix_len, &exp10, &exp2, &format) < 0)
                return ck_error_set(ret_error, -EINVAL, "%s", err_suffix);

        /* mantissa = num denom as an integer; value = mantissa * 10^(exp10 - len(denom)) * 2^exp2 */
        cap = q.num_len + q.denom_len + 20; /* 2^60 adds at most 19 digits */
        digits = calloc(cap, 1);
        if (!digits)
                return -ENOMEM;
        m = 0;
        for (size_t i = q.denom_len; i > 0; i--)
                digits[m++] = (unsigned char) (q.denom[i - 1] - '0');
        for (size_t i = q.num_len; i > 0; i--)
                digits[m++] = (unsigned char) (q.num[i - 1] - '0');
        for (int64_t b = 0; b < exp2; b++) {
                unsigned carry = 0;
                for (size_t i = 0; i < m; i++) {
                        unsigned d = digits[i] * 2u + carry;
                        digits[i] = (unsigned char) (d % 10);
                        carry = d / 10;
                }
                if (carry)
                        digits[m++] = (unsigned char) carry;
        }
        while (m > 0 && digits[m - 1] == 0)
                m--;

        /* nano units: shift by 10^(exp10 - len(denom) + 9), rounding up what falls off */
        exp10 = MAX(MIN(exp10, INT64_C(1000000)), INT64_C(-1000000));
        k = exp10 - (int64_t) q.denom_len + 9;
        if (m == 0)
                v = 0;
        else if (k >= 0) {
                if ((int64_t) m + k > 30)
                        v = CAP_NANO;
                else {
                        for (size_t i = m; i > 0; i--)
                                v = v * 10 + digits[i - 1];
                        for (int64_t i = 0; i < k; i++)
                                v *= 10;
                }
        } else {
                size_t drop = (size_t) -k;
                if (drop >= m)
                        v = 1; /* non-zero values round up to 1n */
                else if (m - drop > 30)
                        v = CAP_NANO;
                else {
                        for (size_t i = 0; i < drop; i++)
                                if (digits[i])
                                        inexact = true;
                        for (size_t i = m; i > drop; i--)
                                v = v * 10 + digits[i - 1];
                        if (inexact)
                                v++;
                }
        }
        if (v > CAP_NANO)
                v = CAP_NANO;
        if (format == QUANTITY_BINARY_SI && v > 0 && v < NANO)
                format = QUANTITY_DECIMAL_SI;

        *ret_nano = q.negative ? -v : v;
        *ret_format = format;
        return 0;
}

int quantity_parse_exact(const char *s, __int128 *ret_nano, enum quantity_format *ret_format,
                         struct ck_error **ret_error) {
        enum quantity_format f = QUANTITY_DECIMAL_SI;
        __int128 v = 0;
        int r;

        r = parse_exact(s, &v, &f, ret_error);
        if (r < 0)
                return r;
        if (ret_nano)
                *ret_nano = v;
        if (ret_format)
                *ret_format = f;
        return 0;
}

/* ceil(|v| / div) with the sign of v, saturated to int64 */
static int64_t scaled(__int128 v, int64_t div) {
        bool neg = v < 0;
        __int128 a = neg ? -v : v;
        __int128 c = (a + div - 1) / div;
        if (c > INT64_MAX)
                c = INT64_MAX;
        return neg ? -(int64_t) c : (int64_t) c;
}

int quantity_parse(const char *s, struct quantity *ret) {
        char *str;
        __int128 v;
        int r;

        if (!s || !ret)
                return -EINVAL;
        r = quantity_parse_exact(s, &v, NULL, NULL);
        if (r < 0)
                return r;
        str = strdup(s);
        if (!str)
                return -ENOMEM;
        *ret = (struct quantity) {
                .str = str,
                .value = scaled(v, NANO),
                .milli = scaled(v, NANO / 1000),
        };
        return 0;
}

void quantity_done(struct quantity *q) {
        if (!q)
                return;
        free(q->str);
        *q = (struct quantity) {};
}

int quantity_cmp(const struct quantity *a, const struct quantity *b) {
        __int128 x = 0, y = 0;
        if (!a || !b || quantity_parse_exact(a->str, &x, NULL, NULL) < 0 ||
            quantity_parse_exact(b->str, &y, NULL, NULL) < 0)
                return 0;
        return x < y ? -1 : x > y ? 1 : 0;
}

static void format_u128(unsigned __int128 v, char *buf /* >= 41 bytes */) {
        char tmp[41];
        size_t n = 0;
        do {
                tmp[n++] = (char) ('0' + (int) (v % 10));
                v /= 10;
        } while (v > 0);
        for (size_t i = 0; i < n; i++)
                buf[i] = tmp[n - 1 - i];
        buf[n] = '\0';
}

char *quantity_canonical(const struct quantity *q) {
        static const char *const dec_suffix[] = { "n", "u", "m", "", "k", "M", "G", "T", "P", "E" };
        static const char *const bin_suffix[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
        enum quantity_format f;
        unsigned __int128 a;
        char num[48], *s;
        const char *suffix = "";
        char expbuf[24];
        bool neg;
        __int128 v;

        if (!q || quantity_parse_exact(q->str, &v, &f, NULL) < 0)
                return NULL;
        if (v == 0)
                return strdup("0");
        neg = v < 0;
        a = (unsigned __int128) (neg ? -v : v);

        if (f == QUANTITY_BINARY_SI && (a < (unsigned __int128) 1024 * NANO || a % NANO != 0))
                f = QUANTITY_DECIMAL_SI; /* below 1024 or fractional: shown as DecimalSI, as upstream */

        if (f == QUANTITY_BINARY_SI) {
                unsigned e = 0;
                a /= NANO;
                while (e + 1 < ELEMENTSOF(bin_suffix) && a % 1024 == 0) {
                        a /= 1024;
                        e++;
                }
                suffix = bin_suffix[e];
        } else {
                int exp = -9;
                while (a % 10 == 0) {
                        a /= 10;
                        exp++;
                }
                switch (exp % 3) {
                case 1:
                case -2:
                        a *= 10;
                        exp -= 1;
                        break;
                case 2:
                case -1:
                        a *= 100;
                        exp -= 2;
                        break;
                }
                if (f == QUANTITY_DECIMAL_EXPONENT) {
                        if (exp != 0) {
                                snprintf(expbuf, sizeof(expbuf), "e%d", exp);
                                suffix = expbuf;
                        }
                } else if (exp >= -9 && exp <= 18)
                        suffix = dec_suffix[(exp + 9) / 3];
                else {
                        snprintf(expbuf, sizeof(expbuf), "e%d", exp);
                        suffix = expbuf;
                }
        }
        format_u128(a, num);
        if (asprintf(&s, "%s%s%s", neg ? "-" : "", num, suffix) < 0)
                return NULL;
        return s;
}

char *quantity_format_int(int64_t value, bool binary_si) {
        struct quantity q = {};
        char *s;

        /* a BinarySI quantity is written with the largest binary suffix that divides it ("98632Ki", "100Mi");
         * quantity_canonical does that for a string in binary form, which "<n>Ki" gives when n is a multiple of
         * 1024; anything else prints as DecimalSI or a plain number, as upstream */
        if (binary_si && value % 1024 == 0 && (value >= 1024 || value <= -1024)) {
                if (asprintf(&q.str, "%" PRId64 "Ki", value / 1024) < 0)
                        return NULL;
        } else if (binary_si && value != 0 && (value >= 1024 || value <= -1024)) {
                if (asprintf(&s, "%" PRId64, value) < 0)
                        return NULL;
                return s;
        } else if (asprintf(&q.str, "%" PRId64, value) < 0)
                return NULL;
        s = quantity_canonical(&q);
        free(q.str);
        return s;
}
