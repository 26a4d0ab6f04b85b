/* SPDX-License-Identifier: Apache-2.0 */
/* The small helpers of src/basic: strings, string vectors and maps, time, hashing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/hash.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/strv.h"
#include "basic/time.h"

static void test_atoi(void **state) {
        int64_t v;
        int i;
        assert_int_equal(safe_atoi64("123", &v), 0);
        assert_int_equal(v, 123);
        assert_int_equal(safe_atoi64("-5", &v), 0);
        assert_int_equal(v, -5);
        assert_int_equal(safe_atoi64("12a", &v), -EINVAL);
        assert_int_equal(safe_atoi64(" 1", &v), -EINVAL);
        assert_int_equal(safe_atoi64("99999999999999999999", &v), -ERANGE);
        assert_int_equal(safe_atoi("3000000000", &i), -ERANGE);
}

static void test_strv_strmap(void **state) {
        _cleanup_strv_free_ char **l = NULL;
        struct strmap m = {};
        assert_int_equal(strv_extend(&l, "a"), 0);
        assert_int_equal(strv_extend(&l, "b"), 0);
        assert_int_equal(strv_length(l), 2);
        assert_true(strv_contains(l, "b"));
        assert_int_equal(strmap_set(&m, "z", "1"), 0);
        assert_int_equal(strmap_set(&m, "a", "2"), 0);
        assert_int_equal(strmap_set(&m, "z", "3"), 0);
        assert_int_equal(m.n, 2);
        assert_string_equal(strmap_get(&m, "z"), "3");
        strmap_sort(&m);
        assert_string_equal(m.keys[0], "a");
        strmap_done(&m);
}

static void test_rfc3339(void **state) {
        int64_t ns;
        char buf[64];
        assert_int_equal(parse_rfc3339("2026-11-22T10:59:00Z", &ns), 0);
        assert_string_equal(format_rfc3339((uint64_t) (ns / 1000), buf, sizeof(buf)), "2026-11-22T10:59:00Z");
        assert_int_equal(parse_rfc3339("2026-11-22T10:59:00.5+01:00", &ns), 0);
        assert_string_equal(format_rfc3339nano(ns, buf, sizeof(buf)), "2026-11-22T09:59:00.500000000Z");
        assert_int_equal(parse_rfc3339("yesterday", &ns), -EINVAL);
}

static void test_strstrip(void **state) {
        char a[] = " \t key = v \n", b[] = "   ", c[] = "x";
        (void) state;

        assert_string_equal(strstrip(a), "key = v");
        assert_string_equal(strstrip(b), "");
        assert_string_equal(strstrip(c), "x");
}

static void test_hash(void **state) {
        char buf[65];
        assert_int_equal(hash_hex("md5", "abc", 3, buf, sizeof(buf)), 0);
        assert_string_equal(buf, "900150983cd24fb0d6963f7d28e17f72");
        assert_int_equal(hash_hex("md5", "abc", 3, buf, 10), -ENOBUFS);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_atoi), cmocka_unit_test(test_strv_strmap), cmocka_unit_test(test_rfc3339),
                cmocka_unit_test(test_hash), cmocka_unit_test(test_strstrip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
