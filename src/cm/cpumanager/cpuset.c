/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/cpumanager/cpuset.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

int cpuset_count(const struct cpuset *s) {
        int n = 0;
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                n += __builtin_popcountll(s->w[i]);
        return n;
}

bool cpuset_empty(const struct cpuset *s) {
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                if (s->w[i])
                        return false;
        return true;
}

bool cpuset_equal(const struct cpuset *a, const struct cpuset *b) {
        return memcmp(a->w, b->w, sizeof(a->w)) == 0;
}

struct cpuset cpuset_union(const struct cpuset *a, const struct cpuset *b) {
        struct cpuset r;
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                r.w[i] = a->w[i] | b->w[i];
        return r;
}

struct cpuset cpuset_diff(const struct cpuset *a, const struct cpuset *b) {
        struct cpuset r;
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                r.w[i] = a->w[i] & ~b->w[i];
        return r;
}

struct cpuset cpuset_and(const struct cpuset *a, const struct cpuset *b) {
        struct cpuset r;
        for (size_t i = 0; i < CPUSET_WORDS; i++)
                r.w[i] = a->w[i] & b->w[i];
        return r;
}

int cpuset_next(const struct cpuset *s, int from) {
        for (int c = from < 0 ? 0 : from; c < CPUSET_MAX; c++) {
                uint64_t w = s->w[c / 64] >> (c % 64);
                if (!w) {
                        c = (c / 64) * 64 + 63;
                        continue;
                }
                return c + __builtin_ctzll(w);
        }
        return -1;
}

static int parse_id(const char **p, int *ret) {
        long v = 0;

        if (!isdigit((unsigned char) **p))
                return -EINVAL;
        while (isdigit((unsigned char) **p)) {
                v = v * 10 + (**p - '0');
                if (v >= CPUSET_MAX)
                        return -EINVAL;
                (*p)++;
        }
        *ret = (int) v;
        return 0;
}

int cpuset_parse(const char *text, struct cpuset *ret) {
        struct cpuset s = {};
        const char *p = text, *end;

        if (!text)
                return -EINVAL;
        while (isspace((unsigned char) *p))
                p++;
        end = p + strlen(p);
        while (end > p && isspace((unsigned char) end[-1]))
                end--;
        while (p < end) {
                int a, b;
                if (parse_id(&p, &a) < 0)
                        return -EINVAL;
                b = a;
                if (p < end && *p == '-') {
                        p++;
                        if (parse_id(&p, &b) < 0 || b < a)
                                return -EINVAL;
                }
                for (int c = a; c <= b; c++)
                        cpuset_add(&s, c);
                if (p < end) {
                        if (*p != ',' || p + 1 >= end)
                                return -EINVAL;
                        p++;
                }
        }
        *ret = s;
        return 0;
}

const char *cpuset_format(const struct cpuset *s, char *buf, size_t size) {
        size_t n = 0;

        if (size == 0)
                return buf;
        buf[0] = 0;
        for (int c = cpuset_next(s, 0); c >= 0;) {
                int e = c;
                int w;
                while (cpuset_has(s, e + 1))
                        e++;
                w = e == c ? snprintf(buf + n, size - n, "%s%d", n ? "," : "", c)
                           : snprintf(buf + n, size - n, "%s%d-%d", n ? "," : "", c, e);
                if (w < 0 || (size_t) w >= size - n)
                        break;
                n += (size_t) w;
                c = cpuset_next(s, e + 1);
        }
        return buf;
}
