/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* For the unit tests and the fuzz target only: reading the peer's header blocks (spdy.h), which the translator
 * never needs; the tests read what spdy_syn_stream wrote with it. */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/spdy.h"

int spdy_inflater_init(struct spdy_zstream *d);

/* Decompresses a header block (block[0..n)) into out[0..cap) (at most SPDY_MAX_HEADER_BLOCK used); returns the
 * plain length, -EMSGSIZE when it would be longer, -EPROTO when zlib refuses the bytes. */
ssize_t spdy_headers_inflate(struct spdy_zstream *d, const uint8_t *block, size_t n, uint8_t *out, size_t cap);

/* The value of header name (lowercase) in a plain header block (the count, then length-prefixed names and values);
 * returns 1 with the value (not NUL-terminated) when there, 0 when not, -EPROTO for a malformed block (lengths past
 * its end, a zero-length name, bytes after the last pair). */
int spdy_headers_get(const uint8_t *plain, size_t n, const char *name, const uint8_t **ret_value, size_t *ret_len);
