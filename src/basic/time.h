/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Clocks and timestamps: monotonic and wall-clock microseconds, RFC 3339 formatting and parsing. */

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include "basic/macro.h"

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define NSEC_PER_SEC INT64_C(1000000000)

uint64_t now_usec(void); /* CLOCK_MONOTONIC */
uint64_t now_realtime_usec(void);
int64_t now_realtime_nsec(void); /* unix nanoseconds */
struct timeval timeval_from_usec(uint64_t usec);
/* RFC 3339 UTC with seconds, "2026-11-22T10:59:00Z" (into buf of at least 32 bytes). */
char *format_rfc3339(uint64_t realtime_usec, char *buf, size_t size);
/* RFC 3339 with nanoseconds, as in CRI log lines. */
char *format_rfc3339nano(int64_t unix_nsec, char *buf, size_t size);
/* Times past what int64 nanoseconds hold (after 2262, before 1677) saturate to INT64_MAX / INT64_MIN. */
int parse_rfc3339(const char *s, int64_t *ret_unix_nsec);
