/* SPDX-License-Identifier: Apache-2.0 */
/* The capped buffer (src/basic/dynbuf.c): the cap is exact, a refused append leaves the buffer as it was, the NUL
 * after the bytes, reserve/grew, consume, truncate, take. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "basic/dynbuf.h"

static void test_cap_is_exact(void **state) {
        struct dynbuf b = DYNBUF_INIT(10);
        uint8_t *d;
        size_t n;

        assert_int_equal(dynbuf_add(&b, "0123456", 7), 0);
        assert_string_equal((char *) b.data, "0123456");
        assert_int_equal(dynbuf_add(&b, "7890", 4), -E2BIG); /* 11 > 10 */
        assert_int_equal(b.len, 7);
        assert_string_equal((char *) b.data, "0123456");
        assert_int_equal(dynbuf_add(&b, "789", 3), 0); /* exactly 10 */
        assert_int_equal(b.len, 10);
        assert_int_equal(dynbuf_add(&b, "x", 1), -E2BIG);
        assert_int_equal(dynbuf_add(&b, "", 0), 0);
        assert_int_equal(dynbuf_reserve(&b, SIZE_MAX), -E2BIG); /* no overflow */
        d = dynbuf_take(&b, &n);
        assert_int_equal(n, 10);
        assert_string_equal((char *) d, "0123456789");
        free(d);
        assert_null(b.data);
        assert_int_equal(b.len, 0);
        assert_int_equal(b.cap, 10); /* the cap stays */
        dynbuf_done(&b);
}

static void test_reserve_consume_truncate(void **state) {
        struct dynbuf b = DYNBUF_INIT(1 << 20);
        uint8_t *d;
        size_t n;

        for (int i = 0; i < 1000; i++) {
                assert_int_equal(dynbuf_reserve(&b, 3), 0);
                memcpy(b.data + b.len, "abc", 3);
                dynbuf_grew(&b, 3);
        }
        assert_int_equal(b.len, 3000);
        assert_int_equal(b.data[b.len], 0);
        dynbuf_consume(&b, 2998);
        assert_string_equal((char *) b.data, "bc");
        dynbuf_truncate(&b, 1);
        assert_string_equal((char *) b.data, "b");
        dynbuf_done(&b);
        dynbuf_done(&b); /* twice is fine */
        dynbuf_done(NULL);
        /* an empty buffer hands over an empty string */
        d = dynbuf_take(&b, &n);
        assert_non_null(d);
        assert_int_equal(n, 0);
        assert_string_equal((char *) d, "");
        free(d);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cap_is_exact),
                cmocka_unit_test(test_reserve_consume_truncate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
