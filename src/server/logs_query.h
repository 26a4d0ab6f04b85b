/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The options of a /containerLogs request (the kubelet's getContainerLogs reading v1.PodLogOptions from the
 * query) for the log reader of logs/logs.h. */

#include <stdint.h>

#include "logs/logs.h"

struct ck_error;

/* Build options from the query string of a /containerLogs request (without the '?'; NULL or "" for
 * none), as the kubelet's getContainerLogs does with v1.PodLogOptions: parameters follow, previous,
 * timestamps (false only for "0"/"false", any other value, also empty, is true), tailLines (and the old
 * "tail", where "all" means all lines), limitBytes, sinceSeconds, sinceTime (RFC 3339). Unknown
 * parameters are ignored, parameter names are case-sensitive, the first value of a repeated parameter
 * wins. sinceSeconds is converted relative to now_nsec (unix nsec; pass 0 for the current time).
 *
 * Errors, with the reason in *ret_error (optional; untouched on success):
 *   -EBADMSG  the query or a value cannot be decoded (upstream: 400 "Unable to decode query.")
 *   -EINVAL   validation failed (upstream: 422 "Invalid request."): negative tailLines, limitBytes < 1,
 *             sinceSeconds < 1, sinceSeconds together with sinceTime
 *   -ENOMEM */
int api_log_options_from_query_at(const char *query_string, int64_t now_nsec, struct logs_options *ret,
                                  struct ck_error **ret_error);
int api_log_options_from_query(const char *query_string, struct logs_options *ret, struct ck_error **ret_error);
