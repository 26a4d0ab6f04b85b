/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/error.h"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* what *ret becomes when there is no memory for an error: never freed */
static struct ck_error oom_error = { .code = -ENOMEM };

struct ck_error *ck_error_free(struct ck_error *e) {
        if (!e || e == &oom_error)
                return NULL;
        free(e->message);
        free(e);
        return NULL;
}

static int error_setv(struct ck_error **ret, int code, const char *reason, const char *fmt, va_list ap) _printf_(4, 0);
static int error_setv(struct ck_error **ret, int code, const char *reason, const char *fmt, va_list ap) {
        struct ck_error *e;
        size_t n = reason ? strlen(reason) + 1 : 0;
        char *m = NULL;

        assert(code < 0);
        if (!ret)
                return code;
        /* first: the format may use %m, and errno is as the caller left it only until we allocate */
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        /* the reason lives after the struct, copied before *ret (which it may point into) is freed */
        e = malloc(sizeof(*e) + n);
        if (e) {
                *e = (struct ck_error) { .code = code, .message = m };
                if (reason)
                        e->reason = memcpy((char *) (e + 1), reason, n);
        } else {
                free(m);
                e = &oom_error;
        }
        ck_error_free(*ret);
        *ret = e;
        return code;
}

int ck_error_set(struct ck_error **ret, int code, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        code = error_setv(ret, code, NULL, fmt, ap);
        va_end(ap);
        return code;
}

int ck_error_set_reason(struct ck_error **ret, int code, const char *reason, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        code = error_setv(ret, code, reason, fmt, ap);
        va_end(ap);
        return code;
}

int ck_error_prefix(struct ck_error **e, const char *fmt, ...) {
        char *prefix = NULL, *m = NULL;

        if (!e || !*e)
                return 0;
        if (*e == &oom_error || VA_FORMAT(prefix, fmt) < 0)
                return (*e)->code;
        if (asprintf(&m, "%s: %s", prefix, ck_error_message(*e)) >= 0) {
                free((*e)->message);
                (*e)->message = m;
        }
        free(prefix);
        return (*e)->code;
}

const char *ck_error_message(const struct ck_error *e) {
        if (!e)
                return "";
        if (e->message)
                return e->message;
        return strerror(e->code < 0 ? -e->code : EIO);
}

const char *ck_error_message_or(const struct ck_error *e, int r) {
        return e ? ck_error_message(e) : strerror(r < 0 ? -r : EIO);
}

const char *ck_error_reason(const struct ck_error *e) {
        return e ? e->reason : NULL;
}

char *ck_error_take_message(struct ck_error *e) {
        char *m;

        if (!e)
                return NULL;
        if (e->message && e != &oom_error) {
                m = e->message;
                e->message = NULL;
        } else
                m = strdup(ck_error_message(e));
        ck_error_free(e);
        return m;
}

void ck_error_pass(struct ck_error **ret, struct ck_error **e) {
        assert(e);
        if (!ret)
                return;
        ck_error_free(*ret);
        *ret = TAKE_PTR(*e);
}
