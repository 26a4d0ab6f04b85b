/* SPDX-License-Identifier: Apache-2.0 */
/* struct ck_error: create, replace, wrap, prefix, hand over, free; %m; NULL everywhere. */
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

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_set_and_free),
                cmocka_unit_test(test_prefix),
                cmocka_unit_test(test_errno_and_no_message),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
