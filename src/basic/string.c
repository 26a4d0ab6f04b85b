/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/string.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

char *strdup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

int free_and_strdup(char **p, const char *s) {
        char *c = NULL;
        if (s) {
                c = strdup(s);
                if (!c)
                        return -ENOMEM;
        }
        free(*p);
        *p = c;
        return 0;
}

bool startswith(const char *s, const char *prefix) {
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool endswith(const char *s, const char *suffix) {
        size_t ls = strlen(s), lx = strlen(suffix);
        return ls >= lx && memcmp(s + ls - lx, suffix, lx) == 0;
}

int safe_atoi64(const char *s, int64_t *ret) {
        char *end;
        long long v;

        if (isempty(s) || isspace((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

int safe_atoi(const char *s, int *ret) {
        int64_t v;
        int r = safe_atoi64(s, &v);
        if (r < 0)
                return r;
        if (v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        *ret = (int) v;
        return 0;
}

int parse_bool(const char *s, bool *ret) {
        /* Go strconv.ParseBool */
        static const char *const t[] = { "1", "t", "T", "true", "TRUE", "True" };
        static const char *const f[] = { "0", "f", "F", "false", "FALSE", "False" };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                if (streq(s, t[i])) {
                        *ret = true;
                        return 0;
                }
                if (streq(s, f[i])) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

char *go_quote(const char *s) {
        size_t len = strlen(strempty(s));
        char *out, *p;

        /* worst case: every byte becomes \xNN */
        out = malloc(len * 4 + 3);
        if (!out)
                return NULL;
        p = out;
        *p++ = '"';
        for (const unsigned char *c = (const unsigned char *) strempty(s); *c; c++) {
                switch (*c) {
                case '"':
                        p = stpcpy(p, "\\\"");
                        break;
                case '\\':
                        p = stpcpy(p, "\\\\");
                        break;
                case '\a':
                        p = stpcpy(p, "\\a");
                        break;
                case '\b':
                        p = stpcpy(p, "\\b");
                        break;
                case '\f':
                        p = stpcpy(p, "\\f");
                        break;
                case '\n':
                        p = stpcpy(p, "\\n");
                        break;
                case '\r':
                        p = stpcpy(p, "\\r");
                        break;
                case '\t':
                        p = stpcpy(p, "\\t");
                        break;
                case '\v':
                        p = stpcpy(p, "\\v");
                        break;
                default:
                        if (*c < 0x20 || *c == 0x7f)
                                p += sprintf(p, "\\x%02x", *c);
                        else
                                *p++ = (char) *c; /* UTF-8 passes through, as Go keeps printable runes */
                }
        }
        *p++ = '"';
        *p = '\0';
        return out;
}

char *strstrip(char *s) {
        char *e;

        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = '\0';
        return s;
}
