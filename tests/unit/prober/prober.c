/* SPDX-License-Identifier: Apache-2.0 */
/* Probe port resolution, host:port joining and threshold counting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "prober/prober.h"

static void test_resolve_port(void **state) {
        struct container_port ports[] = { { .name = (char *) "http", .container_port = 8080 },
                                          { .name = (char *) "metrics", .container_port = 9100 } };
        struct container c = { .name = (char *) "app", .ports = ports, .n_ports = 2 };
        struct int_or_string p;
        struct ck_error *err = NULL;
        int port = 0;

        p = (struct int_or_string) { .int_val = 80 };
        assert_int_equal(probe_resolve_port(&p, &c, &port, &err), 0);
        assert_int_equal(port, 80);
        p = (struct int_or_string) { .is_string = true, .str_val = (char *) "metrics" };
        assert_int_equal(probe_resolve_port(&p, &c, &port, &err), 0);
        assert_int_equal(port, 9100);
        /* last ditch: a number in a string */
        p = (struct int_or_string) { .is_string = true, .str_val = (char *) "8443" };
        assert_int_equal(probe_resolve_port(&p, &c, &port, &err), 0);
        assert_int_equal(port, 8443);

        port = 7;
        p = (struct int_or_string) { .is_string = true, .str_val = (char *) "grpc" };
        assert_int_equal(probe_resolve_port(&p, &c, &port, &err), -ENOENT);
        assert_int_equal(port, 7); /* untouched on failure */
        assert_string_equal(ck_error_message(err),
                            "port \"grpc\" is neither a port name of container \"app\" nor a number");
        ck_error_free(err);
        err = NULL;
        p = (struct int_or_string) { .int_val = 0 };
        assert_int_equal(probe_resolve_port(&p, &c, &port, &err), -ERANGE);
        assert_string_equal(ck_error_message(err), "invalid port number: 0");
        ck_error_free(err);
        err = NULL;
        p = (struct int_or_string) { .is_string = true, .str_val = (char *) "70000" };
        assert_int_equal(probe_resolve_port(&p, &c, &port, NULL), -ERANGE);
}

static void test_join_host_port(void **state) {
        char *s = probe_join_host_port("10.88.0.5", 8080);
        assert_string_equal(s, "10.88.0.5:8080");
        free(s);
        s = probe_join_host_port("::1", 8080);
        assert_string_equal(s, "[::1]:8080");
        free(s);
        s = probe_join_host_port("fd00::5", 443);
        assert_string_equal(s, "[fd00::5]:443");
        free(s);
}

static void test_initial_results(void **state) {
        struct probe_state s;
        probe_state_init(&s, PROBE_READINESS);
        assert_int_equal(s.published, PROBE_RESULT_FAILURE);
        probe_state_init(&s, PROBE_LIVENESS);
        assert_int_equal(s.published, PROBE_RESULT_SUCCESS);
        probe_state_init(&s, PROBE_STARTUP);
        assert_int_equal(s.published, PROBE_RESULT_UNKNOWN);
}

static void test_thresholds(void **state) {
        struct probe spec = { .success_threshold = 2, .failure_threshold = 3 };
        struct probe_state s;

        probe_state_init(&s, PROBE_READINESS);
        /* one success is not enough with successThreshold 2 */
        assert_false(probe_state_record(&s, &spec, PROBE_RESULT_SUCCESS));
        assert_int_equal(s.published, PROBE_RESULT_FAILURE);
        assert_true(probe_state_record(&s, &spec, PROBE_RESULT_SUCCESS));
        assert_int_equal(s.published, PROBE_RESULT_SUCCESS);
        assert_false(probe_state_record(&s, &spec, PROBE_RESULT_SUCCESS)); /* unchanged */
        /* failures: the third in a row flips it; an interleaved success resets the run */
        assert_false(probe_state_record(&s, &spec, PROBE_RESULT_FAILURE));
        assert_false(probe_state_record(&s, &spec, PROBE_RESULT_FAILURE));
        assert_false(probe_state_record(&s, &spec, PROBE_RESULT_SUCCESS));
        assert_false(probe_state_record(&s, &spec, PROBE_RESULT_FAILURE));
        assert_false(probe_state_record(&s, &spec, PROBE_RESULT_FAILURE));
        assert_int_equal(s.published, PROBE_RESULT_SUCCESS);
        assert_true(probe_state_record(&s, &spec, PROBE_RESULT_FAILURE));
        assert_int_equal(s.published, PROBE_RESULT_FAILURE);
        assert_false(probe_state_record(&s, &spec, PROBE_RESULT_FAILURE));
}

static void test_liveness_default_thresholds(void **state) {
        struct probe spec = { .success_threshold = 1, .failure_threshold = 1 };
        struct probe_state s;

        probe_state_init(&s, PROBE_LIVENESS);
        assert_false(probe_state_record(&s, &spec, PROBE_RESULT_SUCCESS)); /* already success */
        assert_true(probe_state_record(&s, &spec, PROBE_RESULT_FAILURE));  /* failureThreshold 1 */
        assert_true(probe_state_record(&s, &spec, PROBE_RESULT_SUCCESS));
        assert_string_equal(probe_type_to_string(PROBE_LIVENESS), "Liveness");
        assert_string_equal(probe_result_to_string(PROBE_RESULT_FAILURE), "failure");
}

/* httpguts.ValidHeaderFieldName / ValidHeaderFieldValue: what Go's client refuses to send, in its words */
static void test_http_headers(void **state) {
        struct http_header ok[] = { { .name = "X-Custom", .value = "a b\tc" }, { .name = "Host", .value = "" } };
        struct http_header crlf[] = { { .name = "X-Test", .value = "a\r\nX-Injected: yes" } };
        struct http_header lf[] = { { .name = "X", .value = "a\nb" } };
        struct http_header bad_name[] = { { .name = "X Test", .value = "a" } };
        struct http_header del[] = { { .name = "X", .value = "a\x7f" } };
        struct ck_error *e = NULL;

        assert_int_equal(probe_check_http_headers(ok, 2, &e), 0);
        assert_null(e);
        assert_int_equal(probe_check_http_headers(crlf, 1, &e), -EINVAL);
        assert_string_equal(ck_error_message(e),
                            "net/http: invalid header field value \"a\\r\\nX-Injected: yes\" for key X-Test");
        e = ck_error_free(e);
        assert_int_equal(probe_check_http_headers(lf, 1, &e), -EINVAL);
        e = ck_error_free(e);
        assert_int_equal(probe_check_http_headers(del, 1, &e), -EINVAL);
        e = ck_error_free(e);
        assert_int_equal(probe_check_http_headers(bad_name, 1, &e), -EINVAL);
        assert_string_equal(ck_error_message(e), "net/http: invalid header field name \"X Test\"");
        e = ck_error_free(e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_resolve_port),
                cmocka_unit_test(test_join_host_port),
                cmocka_unit_test(test_initial_results),
                cmocka_unit_test(test_thresholds),
                cmocka_unit_test(test_liveness_default_thresholds),
                cmocka_unit_test(test_http_headers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
