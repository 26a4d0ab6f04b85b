/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Digests (OpenSSL EVP) and FNV-1a 64 for spec hashes. */

#include <stddef.h>
#include <stdint.h>

/* hex digest of data; buf must hold 2*digest_len+1. algo: "md5", "sha256". */
int hash_hex(const char *algo, const void *data, size_t len, char *buf, size_t bufsize);
/* FNV-1a 64, for spec hashes */
uint64_t fnv1a64(uint64_t h, const void *data, size_t len);
#define FNV1A64_INIT UINT64_C(0xcbf29ce484222325)
