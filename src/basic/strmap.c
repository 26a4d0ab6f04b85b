/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/strmap.h"

#include <stdlib.h>
#include <string.h>

void strmap_done(struct strmap *m) {
        if (!m)
                return;
        for (size_t i = 0; i < m->n; i++) {
                free(m->keys[i]);
                free(m->values[i]);
        }
        free(m->keys);
        free(m->values);
        *m = (struct strmap) {};
}

int strmap_set(struct strmap *m, const char *k, const char *v) {
        char *nk, *nv, **ks, **vs;

        nv = strdup(v ? v : "");
        if (!nv)
                return -ENOMEM;
        for (size_t i = 0; i < m->n; i++)
                if (streq(m->keys[i], k)) {
                        free(m->values[i]);
                        m->values[i] = nv;
                        return 0;
                }
        nk = strdup(k);
        if (!nk) {
                free(nv);
                return -ENOMEM;
        }
        ks = reallocarray(m->keys, m->n + 1, sizeof(char *));
        if (ks)
                m->keys = ks;
        vs = reallocarray(m->values, m->n + 1, sizeof(char *));
        if (vs)
                m->values = vs;
        if (!ks || !vs) {
                free(nk);
                free(nv);
                return -ENOMEM;
        }
        m->keys[m->n] = nk;
        m->values[m->n] = nv;
        m->n++;
        return 0;
}

const char *strmap_get(const struct strmap *m, const char *k) {
        for (size_t i = 0; m && i < m->n; i++)
                if (streq(m->keys[i], k))
                        return m->values[i];
        return NULL;
}

int strmap_copy(const struct strmap *src, struct strmap *ret) {
        struct strmap c = {};
        for (size_t i = 0; src && i < src->n; i++) {
                int r = strmap_set(&c, src->keys[i], src->values[i]);
                if (r < 0) {
                        strmap_done(&c);
                        return r;
                }
        }
        *ret = c;
        return 0;
}

void strmap_sort(struct strmap *m) {
        /* insertion sort: maps are small */
        for (size_t i = 1; i < m->n; i++)
                for (size_t j = i; j > 0 && strcmp(m->keys[j - 1], m->keys[j]) > 0; j--) {
                        char *tk = m->keys[j], *tv = m->values[j];
                        m->keys[j] = m->keys[j - 1];
                        m->values[j] = m->values[j - 1];
                        m->keys[j - 1] = tk;
                        m->values[j - 1] = tv;
                }
}
