/* SPDX-License-Identifier: Apache-2.0 */
/* resource.Quantity parsing, rounding, saturation, comparison and canonical form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "apis/apis-internal.h"
#include "apis/pod.h"
#include "basic/string.h"

static void test_values(void **state) {
        static const struct {
                const char *s;
                int64_t value, milli;
        } table[] = {
                { "0", 0, 0 },
                { "1", 1, 1000 },
                { "100m", 1, 100 },
                { "1500m", 2, 1500 },
                { "0.5", 1, 500 },
                { "2.5", 3, 2500 },
                { "1k", 1000, 1000000 },
                { "1Ki", 1024, 1024000 },
                { "1Mi", 1048576, 1048576000 },
                { "1.5Gi", 1610612736, 1610612736000 },
                { "128Mi", 134217728, 134217728000 },
                { "1M", 1000000, 1000000000 },
                { "1G", 1000000000, 1000000000000 },
                { "1e3", 1000, 1000000 },
                { "1E3", 1000, 1000000 },
                { "1e-3", 1, 1 },
                { "1.5e3", 1500, 1500000 },
                { "+1", 1, 1000 },
                { "-1", -1, -1000 },
                { "-100m", -1, -100 },
                { "1n", 1, 1 },
                { "1u", 1, 1 },
                { "1001u", 1, 2 },
                { "0.0000000001", 1, 1 }, /* below 1n: rounded up to 1n */
                { "1.", 1, 1000 },
                { "1.G", 1000000000, 1000000000000 },
                { ".5", 1, 500 },
                { "000123", 123, 123000 },
                { "9223372036854775807", INT64_MAX, INT64_MAX },
                { "100Ei", INT64_MAX, INT64_MAX }, /* saturates */
                { "1e100", INT64_MAX, INT64_MAX },
                { "8E", 8000000000000000000, INT64_MAX },
                { "1T", 1000000000000, 1000000000000000 },
                { "1Pi", 1125899906842624, 1125899906842624000 },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                struct quantity q = {};
                if (quantity_parse(table[i].s, &q) < 0)
                        fail_msg("%s: did not parse", table[i].s);
                if (q.value != table[i].value || q.milli != table[i].milli)
                        fail_msg("%s: got value %lld milli %lld, want %lld %lld", table[i].s, (long long) q.value,
                                 (long long) q.milli, (long long) table[i].value, (long long) table[i].milli);
                assert_string_equal(q.str, table[i].s);
                quantity_done(&q);
        }
}

static void test_errors(void **state) {
        static const struct {
                const char *s;
                const char *msg;
        } table[] = {
                { "", "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'" },
                { "abc", "quantities must match the regular expression" },
                { "1x", "quantities must match the regular expression" },
                { "1.5.5", "quantities must match the regular expression" },
                { "1 ", "quantities must match the regular expression" },
                { " 1", "quantities must match the regular expression" },
                { "1Mi3", "unable to parse quantity's suffix" },
                { "1K", "unable to parse quantity's suffix" },
                { "1e", "unable to parse quantity's suffix" },
                { "1ee3", "unable to parse quantity's suffix" },
                { "1mi", "unable to parse quantity's suffix" },
                { "1i", "unable to parse quantity's suffix" },
                { "1e+", "unable to parse quantity's suffix" },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                struct quantity q = { .str = NULL, .value = 42 };
                _cleanup_ck_error_ struct ck_error *err = NULL;
                if (quantity_parse(table[i].s, &q) != -EINVAL)
                        fail_msg("%s: parsed", table[i].s);
                assert_int_equal(q.value, 42); /* untouched */
                assert_int_equal(quantity_parse_exact(table[i].s, NULL, NULL, &err), -EINVAL);
                assert_non_null(err);
                if (!startswith(ck_error_message(err), table[i].msg))
                        fail_msg("%s: message %s", table[i].s, ck_error_message(err));
        }
}

static void test_canonical(void **state) {
        static const struct {
                const char *in, *out;
        } table[] = {
                { "0", "0" },     { "1", "1" },          { "0.5", "500m" },   { "2000", "2k" },
                { "1000m", "1" }, { "1500m", "1500m" },  { "100m", "100m" },  { "1.5", "1500m" },
                { "1Gi", "1Gi" }, { "1.5Gi", "1536Mi" }, { "1024Mi", "1Gi" }, { "512Ki", "512Ki" },
                { "1Ki", "1Ki" }, { "0.5Ki", "512" },    { "1e3", "1e3" },    { "1500e-3", "1500e-3" },
                { "-2", "-2" },   { "1024", "1024" },    { "12e2", "1200" },  { "0.1Mi", "104857600m" },
                { "1n", "1n" },   { "10u", "10u" },      { "1000000", "1M" },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                struct quantity q = {};
                char *s;
                assert_int_equal(quantity_parse(table[i].in, &q), 0);
                s = quantity_canonical(&q);
                assert_non_null(s);
                if (!streq(s, table[i].out))
                        fail_msg("%s: canonical %s, want %s", table[i].in, s, table[i].out);
                free(s);
                quantity_done(&q);
        }
}

static void test_cmp(void **state) {
        struct quantity a = {}, b = {}, c = {};
        assert_int_equal(quantity_parse("1", &a), 0);
        assert_int_equal(quantity_parse("1000m", &b), 0);
        assert_int_equal(quantity_parse("1001m", &c), 0);
        assert_int_equal(quantity_cmp(&a, &b), 0);
        assert_true(quantity_cmp(&a, &c) < 0);
        assert_true(quantity_cmp(&c, &b) > 0);
        quantity_done(&a);
        quantity_done(&b);
        quantity_done(&c);
        /* exact below the milli unit */
        assert_int_equal(quantity_parse("1000001u", &a), 0);
        assert_int_equal(quantity_parse("1000002u", &b), 0);
        assert_int_equal(a.milli, b.milli);
        assert_true(quantity_cmp(&a, &b) < 0);
        quantity_done(&a);
        quantity_done(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_values),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_canonical),
                cmocka_unit_test(test_cmp),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
