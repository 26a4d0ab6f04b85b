/* SPDX-License-Identifier: Apache-2.0 */
/* Probes: decoding, defaults (SetDefaults_Probe, SetDefaults_HTTPGetAction) and the apiserver's validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "basic/strv.h"

static struct pod *parse(const char *container_extra) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n"
                             "  containers:\n  - name: c\n    image: busybox:1.36\n"
                             "    ports: [{name: http, containerPort: 8080}]\n%s",
                             container_extra) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

/* The validation errors of a pod as one string ("" when valid). */
static char *errors_of(const char *container_extra) {
        struct pod *p = parse(container_extra);
        struct field_errors e = {};
        char *s;
        if (pod_validate(p, &e) == 0)
                s = strdup("");
        else
                s = field_errors_to_string(&e);
        field_errors_done(&e);
        pod_free(p);
        return s;
}

static void expect_error(const char *extra, const char *want) {
        _cleanup_free_ char *got = errors_of(extra);
        if (!strstr(got, want))
                fail_msg("for\n%s\nwant an error containing\n  %s\ngot\n  %s", extra, want, got);
}

static void test_decode_and_defaults(void **state) {
        struct pod *p = parse("    livenessProbe:\n"
                              "      httpGet: {port: http, httpHeaders: [{name: X-A, value: b}]}\n"
                              "      initialDelaySeconds: 5\n"
                              "    readinessProbe:\n"
                              "      tcpSocket: {port: 8080, host: 127.0.0.1}\n"
                              "      periodSeconds: 2\n      failureThreshold: 1\n"
                              "    startupProbe:\n"
                              "      exec: {command: [cat, /tmp/ok]}\n"
                              "      terminationGracePeriodSeconds: 7\n");
        const struct container *c = &p->spec.containers[0];
        const struct probe *l = c->liveness_probe, *r = c->readiness_probe, *s = c->startup_probe;

        assert_non_null(l);
        assert_int_equal(l->handler, PROBE_HANDLER_HTTP_GET);
        assert_true(l->port.is_string);
        assert_string_equal(l->port.str_val, "http");
        assert_string_equal(l->path, "/");      /* defaulted */
        assert_string_equal(l->scheme, "HTTP"); /* defaulted */
        assert_int_equal(l->n_http_headers, 1);
        assert_string_equal(l->http_headers[0].name, "X-A");
        assert_int_equal(l->initial_delay_seconds, 5);
        assert_int_equal(l->timeout_seconds, 1);
        assert_int_equal(l->period_seconds, 10);
        assert_int_equal(l->success_threshold, 1);
        assert_int_equal(l->failure_threshold, 3);

        assert_int_equal(r->handler, PROBE_HANDLER_TCP_SOCKET);
        assert_false(r->port.is_string);
        assert_int_equal(r->port.int_val, 8080);
        assert_string_equal(r->host, "127.0.0.1");
        assert_int_equal(r->period_seconds, 2);
        assert_int_equal(r->failure_threshold, 1);

        assert_int_equal(s->handler, PROBE_HANDLER_EXEC);
        assert_int_equal(strv_length(s->exec_command), 2);
        assert_true(s->has_termination_grace_period);
        assert_int_equal(s->termination_grace_period_seconds, 7);
        pod_free(p);

        p = parse("    livenessProbe: {grpc: {port: 9000, service: health}}\n");
        assert_int_equal(p->spec.containers[0].liveness_probe->handler, PROBE_HANDLER_GRPC);
        assert_int_equal(p->spec.containers[0].liveness_probe->grpc_port, 9000);
        assert_string_equal(p->spec.containers[0].liveness_probe->grpc_service, "health");
        assert_null(p->spec.containers[0].readiness_probe);
        pod_free(p);
}

static void test_valid_probes(void **state) {
        _cleanup_free_ char *a = errors_of("    livenessProbe: {httpGet: {port: http, scheme: HTTPS}}\n"
                                           "    readinessProbe: {tcpSocket: {port: 8080}, successThreshold: 3}\n"
                                           "    startupProbe: {exec: {command: [\"true\"]}, failureThreshold: 30}\n");
        assert_string_equal(a, "");
}

static void test_invalid_probes(void **state) {
        expect_error("    livenessProbe: {initialDelaySeconds: 1}\n",
                     "spec.containers[0].livenessProbe: Required value: must specify a handler type");
        expect_error("    livenessProbe: {exec: {command: [\"true\"]}, tcpSocket: {port: 1}}\n",
                     "spec.containers[0].livenessProbe: Forbidden: may not specify more than 1 handler type");
        expect_error("    readinessProbe: {exec: {}}\n",
                     "spec.containers[0].readinessProbe.exec.command: Required value");
        expect_error(
                "    livenessProbe: {tcpSocket: {port: 0}}\n",
                "spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive");
        expect_error(
                "    livenessProbe: {httpGet: {port: 70000}}\n",
                "spec.containers[0].livenessProbe.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive");
        expect_error("    livenessProbe: {httpGet: {port: Not_A_Name}}\n",
                     "spec.containers[0].livenessProbe.httpGet.port: Invalid value: \"Not_A_Name\"");
        expect_error(
                "    livenessProbe: {httpGet: {port: 80, scheme: FTP}}\n",
                "spec.containers[0].livenessProbe.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\"");
        expect_error(
                "    livenessProbe: {httpGet: {port: 80, httpHeaders: [{name: \"a b\", value: x}]}}\n",
                "spec.containers[0].livenessProbe.httpGet.httpHeaders[0].name: Invalid value: \"a b\": a valid HTTP header must consist of alphanumeric characters or '-'");
        expect_error(
                "    livenessProbe: {grpc: {port: 0}}\n",
                "spec.containers[0].livenessProbe.grpc.port: Invalid value: 0: must be between 1 and 65535, inclusive");
        expect_error("    livenessProbe: {exec: {command: [\"true\"]}, successThreshold: 2}\n",
                     "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1");
        expect_error("    startupProbe: {exec: {command: [\"true\"]}, successThreshold: 2}\n",
                     "spec.containers[0].startupProbe.successThreshold: Invalid value: 2: must be 1");
        expect_error(
                "    readinessProbe: {exec: {command: [\"true\"]}, terminationGracePeriodSeconds: 5}\n",
                "spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes");
        expect_error(
                "    livenessProbe: {exec: {command: [\"true\"]}, terminationGracePeriodSeconds: 0}\n",
                "spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0");
        expect_error(
                "    livenessProbe: {exec: {command: [\"true\"]}, initialDelaySeconds: -1}\n",
                "spec.containers[0].livenessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0");
        expect_error(
                "    livenessProbe: {exec: {command: [\"true\"]}, periodSeconds: -3}\n",
                "spec.containers[0].livenessProbe.periodSeconds: Invalid value: -3: must be greater than or equal to 0");
}

static void test_type_errors(void **state) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        const char *yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                           "  - {name: c, image: busybox, livenessProbe: {httpGet: {port: [1]}}}\n";

        assert_int_equal(manifest_parse(yaml, strlen(yaml), &set, &err), -EINVAL);
        assert_non_null(strstr(ck_error_message(err),
                               "spec.containers[0].livenessProbe.httpGet.port: Invalid value: \"array\": "
                               "must be of type int or string"));
}

static void test_init_containers_may_not_have_probes(void **state) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        const char *yaml =
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                "  initContainers:\n  - {name: i, image: busybox, livenessProbe: {exec: {command: [\"true\"]}}}\n"
                "  containers:\n  - {name: c, image: busybox}\n";
        struct field_errors e = {};
        _cleanup_free_ char *s = NULL;

        assert_int_equal(manifest_parse(yaml, strlen(yaml), &set, &err), 0);
        assert_int_equal(pod_validate(set.pods[0], &e), -EINVAL);
        s = field_errors_to_string(&e);
        assert_non_null(
                strstr(s, "spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers"));
        field_errors_done(&e);
        pod_set_done(&set);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_decode_and_defaults), cmocka_unit_test(test_valid_probes),
                cmocka_unit_test(test_invalid_probes),      cmocka_unit_test(test_init_containers_may_not_have_probes),
                cmocka_unit_test(test_type_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
