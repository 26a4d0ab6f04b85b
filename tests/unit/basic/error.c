/* SPDX-License-Identifier: Apache-2.0 */
/* struct ck_error: create, replace, wrap, prefix, hand over, free; %m; a reason; NULL everywhere. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"

static void test_set_and_free(void **state) {
        _cleanup_ck_error_ struct ck_error *e = NULL;

        assert_int_equal(ck_error_set(NULL, -EINVAL, "nobody wants %s", "this"), -EINVAL);
        assert_int_equal(ck_error_set(&e, -ENOENT, "file %s not found", "x"), -ENOENT);
        assert_non_null(e);
        assert_int_equal(e->code, -ENOENT);
        assert_string_equal(ck_error_message(e), "file x not found");
        /* a second error replaces the first, and may wrap its message */
        assert_int_equal(ck_error_set(&e, -EINVAL, "cannot load: %s", ck_error_message(e)), -EINVAL);
        assert_int_equal(e->code, -EINVAL);
        assert_string_equal(ck_error_message(e), "cannot load: file x not found");
        assert_null(ck_error_free(NULL));
        assert_string_equal(ck_error_message(NULL), "");
        /* the message, or the errno of a step that said nothing more */
        assert_string_equal(ck_error_message_or(e, -ENOENT), "cannot load: file x not found");
        assert_string_equal(ck_error_message_or(NULL, -ENOENT), strerror(ENOENT));
        assert_string_equal(ck_error_message_or(NULL, 0), strerror(EIO));
}

static void test_prefix(void **state) {
        _cleanup_ck_error_ struct ck_error *e = NULL;

        assert_int_equal(ck_error_prefix(&e, "nothing to prefix"), 0);
        assert_int_equal(ck_error_prefix(NULL, "nothing to prefix"), 0);
        ck_error_set(&e, -EACCES, "permission denied");
        assert_int_equal(ck_error_prefix(&e, "volume \"%s\"", "data"), -EACCES);
        assert_string_equal(ck_error_message(e), "volume \"data\": permission denied");
}

static void test_errno_and_no_message(void **state) {
        _cleanup_ck_error_ struct ck_error *e = NULL;
        struct ck_error bare = { .code = -ENOENT };
        char *m;

        errno = ENOSPC;
        ck_error_set(&e, -ENOSPC, "write: %m");
        assert_string_equal(ck_error_message(e), "write: No space left on device");
        /* without a message: the code's text */
        assert_string_equal(ck_error_message(&bare), strerror(ENOENT));
        /* handed over as a string, the error freed */
        m = ck_error_take_message(TAKE_PTR(e));
        assert_string_equal(m, "write: No space left on device");
        free(m);
        assert_null(ck_error_take_message(NULL));
}

static void test_reason(void **state) {
        _cleanup_ck_error_ struct ck_error *e = NULL, *other = NULL;
        char reason[] = "OutOfcpu";

        assert_null(ck_error_reason(NULL));
        assert_int_equal(ck_error_set_reason(NULL, -ENOSPC, "OutOfcpu", "nobody wants %s", "this"), -ENOSPC);
        /* a plain error has no reason */
        ck_error_set(&e, -EIO, "plain");
        assert_null(ck_error_reason(e));
        /* the reason is copied: the caller's buffer may change */
        assert_int_equal(ck_error_set_reason(&e, -ENOSPC, reason, "Pod was rejected: %s", "no cpu"), -ENOSPC);
        reason[0] = 'X';
        assert_int_equal(e->code, -ENOSPC);
        assert_string_equal(ck_error_reason(e), "OutOfcpu");
        assert_string_equal(ck_error_message(e), "Pod was rejected: no cpu");
        /* prefixing keeps the reason */
        assert_int_equal(ck_error_prefix(&e, "pod %s", "a/b"), -ENOSPC);
        assert_string_equal(ck_error_reason(e), "OutOfcpu");
        assert_string_equal(ck_error_message(e), "pod a/b: Pod was rejected: no cpu");
        /* a new error may keep the reason and wrap the message of the one it replaces */
        assert_int_equal(ck_error_set_reason(&e, -EPERM, ck_error_reason(e), "again: %s", ck_error_message(e)), -EPERM);
        assert_string_equal(ck_error_reason(e), "OutOfcpu");
        assert_string_equal(ck_error_message(e), "again: pod a/b: Pod was rejected: no cpu");
        /* ck_error_set() replaces it with an error without a reason; a NULL reason is none */
        ck_error_set(&e, -EIO, "plain again");
        assert_null(ck_error_reason(e));
        ck_error_set_reason(&e, -EIO, NULL, "no reason");
        assert_null(ck_error_reason(e));
        ck_error_set_reason(&e, -EIO, "", "empty reason");
        assert_string_equal(ck_error_reason(e), "");
        /* handed over with its reason; a NULL ret leaves it where it is */
        ck_error_set_reason(&e, -ENOSPC, "Evicted", "The node had condition: [MemoryPressure]. ");
        ck_error_pass(&other, &e);
        assert_null(e);
        assert_string_equal(ck_error_reason(other), "Evicted");
        ck_error_pass(NULL, &other);
        assert_non_null(other);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_set_and_free),
                cmocka_unit_test(test_prefix),
                cmocka_unit_test(test_errno_and_no_message),
                cmocka_unit_test(test_reason),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
