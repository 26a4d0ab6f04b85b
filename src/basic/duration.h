/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Go's time.ParseDuration and Duration.String(), as used by the kubelet's duration flags and the
 * metav1.Duration fields of KubeletConfiguration. */

#include <stddef.h>
#include <stdint.h>

struct ck_error;

/* Parse "300ms", "-1.5h", "2h45m", "1µs", "0". On failure returns -EINVAL or -ERANGE and, when ret_error is
 * not NULL, an error with the message Go gives: time: invalid duration "x", time: missing unit in duration "20",
 * time: unknown unit "x" in duration "5x". */
int go_duration_parse(const char *s, int64_t *ret_nsec, struct ck_error **ret_error);

/* Format as Go's Duration.String(): "20s", "1m0s", "2h45m0s", "1.5s", "300ms", "0s". buf must hold at least
 * GO_DURATION_MAX bytes. */
#define GO_DURATION_MAX 64
char *go_duration_format(int64_t nsec, char *buf, size_t size);
