/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/dynbuf.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int dynbuf_reserve(struct dynbuf *b, size_t n) {
        size_t want, alloc;
        uint8_t *d;

        assert(b);
        if (n > b->cap || b->len > b->cap - n)
                return -E2BIG;
        want = b->len + n + 1; /* and the NUL */
        if (want <= b->alloc)
                return 0;
        alloc = b->alloc ? b->alloc : 64;
        while (alloc < want)
                alloc = alloc > SIZE_MAX / 2 ? want : alloc * 2;
        if (alloc > b->cap + 1)
                alloc = b->cap + 1 >= want ? b->cap + 1 : want;
        d = realloc(b->data, alloc);
        if (!d)
                return -ENOMEM;
        if (!b->data)
                d[0] = '\0';
        b->data = d;
        b->alloc = alloc;
        return 0;
}

void dynbuf_grew(struct dynbuf *b, size_t n) {
        assert(b && b->len + n < b->alloc);
        b->len += n;
        b->data[b->len] = '\0';
}

int dynbuf_add(struct dynbuf *b, const void *p, size_t n) {
        int r = dynbuf_reserve(b, n);
        if (r < 0)
                return r;
        if (n > 0)
                memcpy(b->data + b->len, p, n);
        dynbuf_grew(b, n);
        return 0;
}

void dynbuf_truncate(struct dynbuf *b, size_t n) {
        assert(b && n <= b->len);
        b->len = n;
        if (b->data)
                b->data[n] = '\0';
}

void dynbuf_consume(struct dynbuf *b, size_t n) {
        assert(b && n <= b->len);
        if (n == 0)
                return;
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
        b->data[b->len] = '\0';
}

uint8_t *dynbuf_take(struct dynbuf *b, size_t *ret_len) {
        uint8_t *d;

        assert(b && ret_len);
        if (!b->data) {
                d = calloc(1, 1);
                if (!d)
                        return NULL;
        } else
                d = b->data;
        *ret_len = b->len;
        b->data = NULL;
        b->len = b->alloc = 0;
        return d;
}

void dynbuf_done(struct dynbuf *b) {
        if (!b)
                return;
        free(b->data);
        b->data = NULL;
        b->len = b->alloc = 0;
}
