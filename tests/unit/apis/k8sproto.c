/* SPDX-License-Identifier: Apache-2.0 */
/* JSON → protobuf of a v1 Pod (src/apis/k8sproto.c). The expected bytes were made by Python's protobuf runtime
 * from upstream's own k8s.io/api v0.37.2 generated.proto (deterministic serialization, fields in number order,
 * map entries by key), so they check the schema table and the encoder against upstream, not against themselves. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "apis/k8sproto.h"
#include "basic/json.h"
#include "basic/macro.h"

static int pod_message(void) {
        int m = k8sproto_message_find("k8s.io.api.core.v1.Pod");
        assert_true(m >= 0);
        return m;
}

static char *hex(const uint8_t *p, size_t n) {
        char *s = malloc(2 * n + 1);
        assert_non_null(s);
        for (size_t i = 0; i < n; i++)
                snprintf(s + 2 * i, 3, "%02x", p[i]);
        s[2 * n] = '\0';
        return s;
}

static void check(const char *json, const char *want_hex) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        _cleanup_free_ char *got = NULL;
        json_auto_t *obj = json_loads(json, 0, NULL);
        size_t len = 0;

        assert_non_null(obj);
        assert_int_equal(k8sproto_encode(obj, pod_message(), &data, &len, &err), 0);
        assert_null(err);
        got = hex(data, len);
        assert_string_equal(got, want_hex);
}

static void check_error(const char *json, int code, const char *want) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        uint8_t *data = (uint8_t *) "untouched";
        json_auto_t *obj = json_loads(json, 0, NULL);
        size_t len = 7;

        assert_non_null(obj);
        assert_int_equal(k8sproto_encode(obj, pod_message(), &data, &len, &err), code);
        assert_string_equal((const char *) data, "untouched");
        assert_int_equal(len, 7);
        assert_string_equal(ck_error_message(err), want);
}

static void test_strings_and_unknown_fields(void **state) {
        check("{\"metadata\": {\"name\": \"a\"}}", "0a030a0161");
        /* what the schema does not know, and null, are left out */
        check("{\"kind\": \"Pod\", \"apiVersion\": \"v1\", \"metadata\": {\"name\": \"a\", \"bogus\": 1, \"namespace\": null}}",
              "0a030a0161");
        check("{}", "");
}

static void test_time(void **state) {
        check("{\"metadata\": {\"creationTimestamp\": \"1970-01-01T00:00:01.5Z\"}}", "0a0a420808011080cab5ee01");
}

static void test_map_of_quantities_in_key_order(void **state) {
        /* a number as a quantity goes out as its text */
        check("{\"spec\": {\"containers\": [{\"name\": \"c\", \"resources\": {\"limits\": {\"memory\": \"1Gi\", \"cpu\": 2}}}]}}",
              "122412220a0163421d0a0a0a0363707512030a01320a0f0a066d656d6f727912050a03314769");
        check("{\"metadata\": {\"labels\": {\"b\": \"2\", \"a\": \"1\"}}}", "0a105a060a01611201315a060a0162120132");
}

static void test_inline_structs_and_intorstring(void **state) {
        /* Probe's ProbeHandler is inlined in the JSON, a field of its own in the proto */
        check("{\"spec\": {\"containers\": [{\"name\": \"c\", \"livenessProbe\": {\"tcpSocket\": {\"port\": 8080}, "
              "\"periodSeconds\": 3}}]}}",
              "121412120a0163520d0a091a070a05080010903f2003");
        check("{\"spec\": {\"containers\": [{\"name\": \"c\", \"livenessProbe\": {\"tcpSocket\": {\"port\": \"http\"}}}]}}",
              "121512130a0163520e0a0c1a0a0a0808011a0468747470");
        /* a Volume's VolumeSource, and the LocalObjectReference in a ConfigMapVolumeSource */
        check("{\"spec\": {\"volumes\": [{\"name\": \"cm\", \"configMap\": {\"name\": \"x\", \"optional\": true}}]}}",
              "12120a100a02636d120a9a01070a030a01782001");
        /* an inlined struct with nothing in it is left out */
        check("{\"spec\": {\"volumes\": [{\"name\": \"v\"}]}}", "12050a030a0176");
}

static void test_negative_and_long(void **state) {
        _cleanup_free_ char *json = NULL, *want = NULL;
        char name[201];

        check("{\"spec\": {\"terminationGracePeriodSeconds\": -1}}", "120b20ffffffffffffffffff01");
        /* lengths past 127 take two bytes: the body moves down in place */
        memset(name, 'n', 200);
        name[200] = '\0';
        assert_true(asprintf(&json, "{\"metadata\": {\"name\": \"%s\"}}", name) > 0);
        want = malloc(2 * 206 + 1);
        assert_non_null(want);
        strcpy(want, "0acb010ac801");
        for (int i = 0; i < 200; i++)
                strcat(want, "6e");
        check(json, want);
}

static void test_errors_name_the_field(void **state) {
        check_error("{\"spec\": {\"containers\": [{\"name\": \"ok\"}, {\"name\": 5}]}}", -EINVAL,
                    "spec.containers[1].name: expected a string");
        check_error("{\"metadata\": {\"creationTimestamp\": \"yesterday\"}}", -EINVAL,
                    "metadata.creationTimestamp: expected an RFC 3339 time");
        check_error("{\"spec\": {\"containers\": {}}}", -EINVAL, "spec.containers: expected an array");
        check_error("{\"spec\": {\"containers\": [{\"ports\": [{\"containerPort\": 4294967296}]}]}}", -EINVAL,
                    "spec.containers[0].ports[0].containerPort: out of the range of a 32-bit integer");
        check_error("[]", -EINVAL, "(the object): expected an object");
}

static void test_size_cap(void **state) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        uint8_t *data = NULL;
        size_t len = 0, n = K8SPROTO_MAX_SIZE;
        char *big = malloc(n + 1);
        json_t *obj;

        assert_non_null(big);
        memset(big, 'x', n);
        big[n] = '\0';
        obj = json_pack("{s:{s:s}}", "metadata", "name", big);
        free(big);
        assert_non_null(obj);
        assert_int_equal(k8sproto_encode(obj, pod_message(), &data, &len, &err), -E2BIG);
        assert_null(data);
        assert_non_null(strstr(ck_error_message(err), "passes"));
        json_decref(obj);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_strings_and_unknown_fields),
                cmocka_unit_test(test_time),
                cmocka_unit_test(test_map_of_quantities_in_key_order),
                cmocka_unit_test(test_inline_structs_and_intorstring),
                cmocka_unit_test(test_negative_and_long),
                cmocka_unit_test(test_errors_name_the_field),
                cmocka_unit_test(test_size_cap),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
