/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>

#include "macro.h"

/* ---- string vectors: NULL-terminated arrays of malloc'd strings ---- */
size_t strv_length(char *const *l);
/* Free l[i] and close the gap; i must be < strv_length(l). */
void strv_remove_at(char **l, size_t i);
char **strv_free(char **l); /* accepts NULL, returns NULL */
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)
#define _cleanup_strv_free_ _cleanup_(strv_freep)
int strv_push(char ***l, char *value);          /* takes ownership of value, even on failure */
int strv_extend(char ***l, const char *value);  /* copies value */
int strv_copy(char *const *l, char ***ret);
bool strv_equal(char *const *a, char *const *b);
bool strv_contains(char *const *l, const char *s);
char *strv_join(char *const *l, const char *sep); /* NULL on OOM; "" for an empty vector */

/* ---- string map: ordered list of key/value pairs (unique keys) ---- */
struct strmap {
        size_t n;
        char **keys;
        char **values;
};
void strmap_done(struct strmap *m);                           /* frees contents, accepts NULL */
int strmap_set(struct strmap *m, const char *k, const char *v); /* copies both, replaces existing */
const char *strmap_get(const struct strmap *m, const char *k);
int strmap_copy(const struct strmap *src, struct strmap *ret);
void strmap_sort(struct strmap *m);                           /* sort by key */

/* ---- strings ---- */
char *strdup_or_null(const char *s);     /* NULL stays NULL; aborts on OOM never: returns NULL */
int free_and_strdup(char **p, const char *s);
static inline bool streq_ptr(const char *a, const char *b) { return a && b ? streq(a, b) : a == b; }
bool startswith(const char *s, const char *prefix);
bool endswith(const char *s, const char *suffix);
/* Parse a decimal integer with full-string and range checks; -EINVAL/-ERANGE. */
int safe_atoi64(const char *s, int64_t *ret);
int safe_atoi(const char *s, int *ret);
/* Parse a Go-style duration ("20s", "2m", "1h30m", "500ms", "0"); result in microseconds. */
int parse_duration_usec(const char *s, int64_t *ret_usec);
int parse_bool(const char *s, bool *ret);

/* ---- files ---- */
/* Read a whole file, refusing files larger than max_size (-EFBIG). Result is NUL-terminated. */
int read_full_file(const char *path, size_t max_size, char **ret_data, size_t *ret_size);
/* Write atomically (temp file + rename) with O_CLOEXEC. */
int write_file_atomic(const char *path, const void *data, size_t size, int mode);
int mkdir_p(const char *path, int mode);

/* ---- time ---- */
uint64_t now_usec(void);       /* CLOCK_MONOTONIC */
uint64_t now_realtime_usec(void);
struct timeval timeval_from_usec(uint64_t usec);
struct event;
/* (Re)arm a libevent timer to fire in usec. */
void evtimer_add_usec(struct event *ev, uint64_t usec);
/* RFC 3339 UTC with seconds, "2026-11-22T10:59:00Z" (into buf of at least 32 bytes). */
char *format_rfc3339(uint64_t realtime_usec, char *buf, size_t size);
/* RFC 3339 with nanoseconds, as in CRI log lines. */
char *format_rfc3339nano(int64_t unix_nsec, char *buf, size_t size);
int parse_rfc3339(const char *s, int64_t *ret_unix_nsec);

/* ---- hashing (OpenSSL EVP) ---- */
/* hex digest of data; buf must hold 2*digest_len+1. algo: "md5", "sha256". */
int hash_hex(const char *algo, const void *data, size_t len, char *buf, size_t bufsize);
/* FNV-1a 64, for spec hashes */
uint64_t fnv1a64(uint64_t h, const void *data, size_t len);
#define FNV1A64_INIT UINT64_C(0xcbf29ce484222325)

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_SEC INT64_C(1000000000)
