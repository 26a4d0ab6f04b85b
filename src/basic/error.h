/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One error convention (docs/design.md, "Errors"): a function returns a negative errno for what failed; where
 * a message must travel too, it also fills a `struct ck_error **ret_error` output: the errno and a malloc'ed
 * message in words a person reads (naming the file, field, object or request, and the reason). The layer that
 * knows the cause creates it, the layers above may prefix context, and the layer that decides (logs, events,
 * status, an HTTP reply) uses it once and frees it. Programmer errors are assert()s, not errors.
 *
 *         return ck_error_set(ret_error, -EINVAL, "invalid --node-labels \"%s\": %s", item, why);
 *
 * An error may also carry a reason: upstream's short CamelCase word for a machine ("OutOfcpu", "Evicted",
 * "TopologyAffinityError"), where the message is for a person; an admission refusal is such an error, and the
 * deciding layer writes both into the pod's status:
 *
 *         return ck_error_set_reason(ret_error, -ENOSPC, "NodeShutdown", "%s", shutdown_message);
 */

#include "basic/macro.h"

struct ck_error {
        int code;           /* negative errno */
        char *message;      /* may be NULL (out of memory): ck_error_message() falls back on strerror */
        const char *reason; /* NULL, or a copy held in the error's own allocation (ck_error_set_reason) */
};

/* Make *ret an error (replacing one already there) and return code, which must be negative. ret may be NULL
 * (the caller wants no message). The format may use %m (errno as the caller left it) and the message of the error
 * it replaces (wrapping it: ck_error_set(e, r, "cannot x: %s", ck_error_message(*e))). After it *ret is never NULL: without memory it is a shared "out of memory"
 * error that ck_error_free() leaves alone. */
int ck_error_set(struct ck_error **ret, int code, const char *fmt, ...) _printf_(3, 4);
/* ck_error_set() with a reason, copied (it may be the reason of the error it replaces; NULL: none). Without
 * memory the shared "out of memory" error has no reason: a caller that needs one treats an error without a reason
 * as not decided. */
int ck_error_set_reason(struct ck_error **ret, int code, const char *reason, const char *fmt, ...) _printf_(4, 5);
/* Put context before the message of *e ("<context>: <message>") and return its code; nothing when e or *e is
 * NULL (then 0). */
int ck_error_prefix(struct ck_error **e, const char *fmt, ...) _printf_(2, 3);
/* The message; strerror of the code when there is none; "" for NULL. Valid while e lives. */
const char *ck_error_message(const struct ck_error *e);
/* The message of e, or strerror(-r) when a step that failed with r had nothing more to say (e NULL). */
const char *ck_error_message_or(const struct ck_error *e, int r);
/* The reason; NULL for none (an error made by ck_error_set(), the "out of memory" one, NULL). ck_error_prefix()
 * keeps it. Valid while e lives. */
const char *ck_error_reason(const struct ck_error *e);
/* The message handed over (caller frees; a copy of the strerror text when there is none); NULL on OOM or for
 * NULL. The error is freed. */
char *ck_error_take_message(struct ck_error *e);
/* Hand *e over to the caller's *ret (freeing an error *ret held); *e becomes NULL. With ret NULL (the caller
 * wants no message) *e is left for its own cleanup. */
void ck_error_pass(struct ck_error **ret, struct ck_error **e);
struct ck_error *ck_error_free(struct ck_error *e); /* accepts NULL, returns NULL */
DEFINE_TRIVIAL_CLEANUP_FUNC(struct ck_error *, ck_error_free)
#define _cleanup_ck_error_ _cleanup_(ck_error_freep)
