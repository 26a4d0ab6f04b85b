/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The node log query (/logs/?query=..., NodeLogQuery, GA and locked on since v1.36, with
 * enableSystemLogQuery): the request's parameters as upstream v1.37's newNodeLogQuery reads them and
 * nodeLogQuery.validate checks them, with its messages (field errors, aggregated as "[a, b]" when several).
 * Pure but for the stat of a queried file beneath the log directory. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

struct node_log_query {
        char **files;    /* queries naming a file (with '/' or '\') */
        char **services; /* the other non-blank queries */
        char *since_time, *until_time;
        int64_t since_nsec, until_nsec; /* unix nanoseconds (they wrap after 2262) */
        int64_t since_sec, until_sec;   /* unix seconds, whatever the year */
        bool has_tail_lines, has_boot;
        long tail_lines, boot;
        char *pattern;
};

#define NODE_LOG_QUERY_MAX_TAIL_LINES 100000
#define NODE_LOG_QUERY_MAX_SERVICES 4
#define NODE_LOG_QUERY_MAX_SERVICE_LENGTH 256

/* Parse the raw query string (NULL: none). 0 with *ret NULL when it has none of the query's parameters (the
 * request is a plain /logs/ file request), 0 with *ret set, -EINVAL with *ret_error (400 Bad Request: a time
 * or number that does not parse, a blank query), -ENOMEM. */
int node_log_query_parse(const char *raw, struct node_log_query **ret, struct ck_error **ret_error);

/* Check q; logdirfd is the log directory a queried file must exist beneath. 0, or -EINVAL with *ret_error
 * (406 Not Acceptable), -ENOMEM. */
int node_log_query_validate(const struct node_log_query *q, int logdirfd, struct ck_error **ret_error);

/* does q have options besides the query (upstream's n.options != options{})? */
bool node_log_query_has_options(const struct node_log_query *q);

/* upstream's getLoggingCmd on Linux: journalctl's arguments (argv[0] "journalctl" included, NULL-terminated)
 * for these services: --utc --no-pager --output=short-precise, --since/--until (the times in UTC, upstream's
 * layout "2006-1-2 15:4:5"), --pager-end --lines=N, --unit= per service, --grep= (journalctl's own case
 * handling: insensitive when the pattern is all lower case), --boot N. -ENOMEM. */
int node_log_query_journal_argv(const struct node_log_query *q, char *const *services, char ***ret);

/* upstream's checkForNativeLogger: the output of `journalctl --field _SYSTEMD_UNIT` names "<service>.service" */
bool node_log_query_is_native_logger(const char *field_output, const char *service);

/* upstream's heuristics for a service logging to a file, beneath the log directory, in order: <service>,
 * <service>.log, <service>/<service>.log. -ENOMEM. */
int node_log_query_heuristic_files(const char *service, char ***ret);

struct node_log_query *node_log_query_free(struct node_log_query *q);
static inline void node_log_query_freep(struct node_log_query **q) {
        node_log_query_free(*q);
}
