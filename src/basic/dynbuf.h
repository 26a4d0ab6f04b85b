/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A growable byte buffer with a hard cap set once (curl's dynbuf): every buffer filled from the network, a file or
 * a pod says its cap where it is made, and appending past it fails without touching what is there. The bytes are
 * always followed by a NUL (not counted), so a text buffer is a C string. Grows geometrically; a zero-initialized
 * struct with the cap set (DYNBUF_INIT) is empty and owns nothing.
 *
 *         struct dynbuf b = DYNBUF_INIT(64 * 1024);
 *         r = dynbuf_add(&b, data, n);   // -E2BIG past 64 KiB
 *         ...
 *         dynbuf_done(&b);
 */

#include <stddef.h>
#include <stdint.h>

struct dynbuf {
        uint8_t *data; /* NULL until the first byte */
        size_t len;    /* bytes held */
        size_t alloc;  /* bytes allocated (len + 1 at least once data is set) */
        size_t cap;    /* len never passes it */
};

#define DYNBUF_INIT(cap_) ((struct dynbuf) { .cap = (cap_) })

/* Append n bytes: 0; -E2BIG when len + n would pass the cap, -ENOMEM; the buffer unchanged on failure. */
int dynbuf_add(struct dynbuf *b, const void *p, size_t n);
/* Room for n more bytes past len (written by the caller at data + len, then dynbuf_grew): as dynbuf_add. */
int dynbuf_reserve(struct dynbuf *b, size_t n);
/* The caller wrote n bytes after len (within what dynbuf_reserve gave). */
void dynbuf_grew(struct dynbuf *b, size_t n);
/* Keep the first n bytes (n <= len). */
void dynbuf_truncate(struct dynbuf *b, size_t n);
/* Drop the first n bytes (a consumed prefix); the rest moves to the front. */
void dynbuf_consume(struct dynbuf *b, size_t n);
/* The bytes, handed over (NUL-terminated; a 1-byte allocation for an empty buffer), *ret_len their count; the
 * buffer is empty after it. NULL on OOM (the buffer untouched). */
uint8_t *dynbuf_take(struct dynbuf *b, size_t *ret_len);
/* Free the bytes; the cap stays. Accepts NULL. */
void dynbuf_done(struct dynbuf *b);
