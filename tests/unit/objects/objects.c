/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "objects/objects.h"

static void test_lookup_answers(void **state) {
        struct pod_objects *o = NULL;
        json_t *cm = json_pack("{s:s, s:{s:s}}", "kind", "ConfigMap", "data", "k", "v"), *got = NULL;
        const char *msg = "unset";

        assert_int_equal(objects_pod_new(&o), 0);
        /* never fetched: not found, no message */
        assert_int_equal(objects_pod_lookup(o, "ConfigMap", "ns", "cm", &got, &msg), -ENOENT);
        assert_null(msg);
        assert_int_equal(objects_pod_put(o, "ConfigMap", "ns", "cm", cm), 0);
        assert_int_equal(objects_pod_lookup(o, "ConfigMap", "ns", "cm", &got, NULL), 0);
        assert_ptr_equal(got, cm);
        /* the same name in another kind or namespace is another object */
        got = NULL;
        assert_int_equal(objects_pod_lookup(o, "Secret", "ns", "cm", &got, NULL), -ENOENT);
        assert_int_equal(objects_pod_lookup(o, "ConfigMap", "other", "cm", &got, NULL), -ENOENT);
        assert_null(got);
        /* a fetch failure replaces the object and carries its message */
        assert_int_equal(objects_pod_put_error(o, "ConfigMap", "ns", "cm", -EHOSTUNREACH, "connection refused"), 0);
        assert_int_equal(objects_pod_lookup(o, "ConfigMap", "ns", "cm", &got, &msg), -EHOSTUNREACH);
        assert_string_equal(msg, "connection refused");
        json_decref(cm);
        objects_pod_free(o);
}

static void test_tokens(void **state) {
        struct pod_objects *o = NULL;
        json_t *st = json_pack("{s:s, s:s}", "token", "abc", "expirationTimestamp", "2026-11-23T13:00:00Z"), *got;

        assert_int_equal(objects_pod_new(&o), 0);
        assert_int_equal(objects_pod_put_token(o, "ns", "default", "", 3607, st), 0);
        assert_int_equal(objects_pod_lookup_token(o, "ns", "default", "", 3607, &got, NULL), 0);
        assert_string_equal(json_string_value(json_object_get(got, "token")), "abc");
        assert_int_equal(objects_pod_lookup_token(o, "ns", "default", "vault", 3607, &got, NULL), -ENOENT);
        assert_int_equal(objects_pod_lookup_token(o, "ns", "default", "", 600, &got, NULL), -ENOENT);
        json_decref(st);
        assert_null(objects_pod_free(o));
        assert_null(objects_pod_free(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_lookup_answers),
                cmocka_unit_test(test_tokens),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
