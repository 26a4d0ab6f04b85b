/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/strv.h"

#include <stdlib.h>
#include <string.h>

size_t strv_length(char *const *l) {
        size_t n = 0;
        if (!l)
                return 0;
        while (l[n])
                n++;
        return n;
}

void strv_remove_at(char **l, size_t i) {
        free(l[i]);
        memmove(l + i, l + i + 1, (strv_length(l + i + 1) + 1) * sizeof(char *));
}

char *strv_join(char *const *l, const char *sep) {
        size_t n = 1, k = strlen(sep), i;
        char *s, *p;

        for (i = 0; l && l[i]; i++)
                n += strlen(l[i]) + k;
        s = p = malloc(n);
        if (!s)
                return NULL;
        for (i = 0; l && l[i]; i++) {
                if (i > 0)
                        p = stpcpy(p, sep);
                p = stpcpy(p, l[i]);
        }
        *p = '\0';
        return s;
}

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
        return NULL;
}

int strv_push(char ***l, char *value) {
        size_t n = strv_length(*l);
        char **c;

        if (!value)
                return -EINVAL;
        c = reallocarray(*l, n + 2, sizeof(char *));
        if (!c) {
                free(value);
                return -ENOMEM;
        }
        c[n] = value;
        c[n + 1] = NULL;
        *l = c;
        return 0;
}

int strv_extend(char ***l, const char *value) {
        char *v = strdup(value);
        if (!v)
                return -ENOMEM;
        return strv_push(l, v);
}

int strv_copy(char *const *l, char ***ret) {
        _cleanup_strv_free_ char **c = NULL;
        size_t n = strv_length(l);

        c = calloc(n + 1, sizeof(char *));
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                c[i] = strdup(l[i]);
                if (!c[i])
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

bool strv_contains(char *const *l, const char *s) {
        for (size_t i = 0; l && l[i]; i++)
                if (streq(l[i], s))
                        return true;
        return false;
}
