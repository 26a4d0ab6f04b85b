/* SPDX-License-Identifier: Apache-2.0 */
/* Lifecycle fields: an init container's restartPolicy (sidecars) with the apiserver's validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>

#include "apis/manifest.h"
#include "basic/error.h"

/* The validation errors of a pod as one string ("" when valid). */
static char *errors_of(const char *spec) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct field_errors e = {};
        char *s;

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n%s",
                             spec) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        if (pod_validate(set.pods[0], &e) == 0)
                s = strdup("");
        else
                s = field_errors_to_string(&e);
        field_errors_done(&e);
        pod_set_done(&set);
        return s;
}

static void test_sidecar_decoded(void **state) {
        const char *yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                           "  initContainers:\n  - {name: s, image: busybox, restartPolicy: Always}\n"
                           "  - {name: i, image: busybox}\n"
                           "  containers:\n  - {name: c, image: busybox}\n";
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};

        assert_int_equal(manifest_parse(yaml, strlen(yaml), &set, &err), 0);
        assert_true(container_is_sidecar(&set.pods[0]->spec.init_containers[0]));
        assert_false(container_is_sidecar(&set.pods[0]->spec.init_containers[1]));
        assert_false(container_is_sidecar(&set.pods[0]->spec.containers[0]));
        pod_set_done(&set);
}

static void test_restart_policy_validation(void **state) {
        _cleanup_free_ char *ok = NULL, *app = NULL, *bad = NULL, *empty = NULL, *probes = NULL;

        /* a sidecar may have probes */
        ok = errors_of(
                "  initContainers:\n  - name: s\n    image: busybox\n    restartPolicy: Always\n"
                "    startupProbe: {exec: {command: ['true']}}\n    readinessProbe: {exec: {command: ['true']}}\n"
                "  containers:\n  - {name: c, image: busybox}\n");
        assert_string_equal(ok, "");
        /* ContainerRestartRules: a regular container (and a regular init container) may have its own */
        app = errors_of("  containers:\n  - {name: c, image: busybox, restartPolicy: Never}\n"
                        "  initContainers:\n  - {name: i, image: busybox, restartPolicy: OnFailure}\n");
        assert_string_equal(app, "");
        bad = errors_of("  initContainers:\n  - {name: i, image: busybox, restartPolicy: Sometimes}\n"
                        "  containers:\n  - {name: c, image: busybox}\n");
        assert_non_null(strstr(bad, "spec.initContainers[0].restartPolicy: Unsupported value: \"Sometimes\": "
                                    "supported values: \"Always\", \"Never\", \"OnFailure\""));
        empty = errors_of("  initContainers:\n  - {name: i, image: busybox, restartPolicy: ''}\n"
                          "  containers:\n  - {name: c, image: busybox}\n");
        assert_non_null(strstr(empty, "spec.initContainers[0].restartPolicy: Required value"));
        /* without restartPolicy Always, probes stay forbidden */
        probes = errors_of(
                "  initContainers:\n  - {name: i, image: busybox, startupProbe: {exec: {command: ['true']}}}\n"
                "  containers:\n  - {name: c, image: busybox}\n");
        assert_non_null(strstr(probes,
                               "spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers "
                               "without restartPolicy=Always"));
}

static void test_restart_rules_validation(void **state) {
        static const struct {
                const char *spec, *want; /* want: "" = valid, else a substring of the errors */
        } cases[] = {
                { "  containers:\n  - name: c\n    image: busybox\n    restartPolicy: Never\n"
                  "    restartPolicyRules:\n    - {action: Restart, exitCodes: {operator: In, values: [42, 43]}}\n"
                  "    - {action: Restart, exitCodes: {operator: NotIn, values: [0]}}\n",
                  "" },
                /* rules need the container's own restartPolicy */
                { "  containers:\n  - name: c\n    image: busybox\n"
                  "    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n",
                  "spec.containers[0].restartPolicy: Required value: must be set when restartPolicyRules are "
                  "specified" },
                { "  containers:\n  - name: c\n    image: busybox\n    restartPolicy: Never\n"
                  "    restartPolicyRules: [{action: Ignore, exitCodes: {operator: In, values: [42]}}]\n",
                  "spec.containers[0].restartPolicyRules[0].action: Unsupported value: \"Ignore\": supported values: "
                  "\"Restart\"" },
                { "  containers:\n  - name: c\n    image: busybox\n    restartPolicy: Never\n"
                  "    restartPolicyRules: [{action: Restart, exitCodes: {operator: Is, values: [42]}}]\n",
                  "spec.containers[0].restartPolicyRules[0].exitCodes.operator: Unsupported value: \"Is\": "
                  "supported values: \"In\", \"NotIn\"" },
                { "  containers:\n  - name: c\n    image: busybox\n    restartPolicy: Never\n"
                  "    restartPolicyRules: [{action: Restart}]\n",
                  "spec.containers[0].restartPolicyRules[0].exitCodes: Required value" },
                /* a sidecar restarts anyway */
                { "  initContainers:\n  - name: s\n    image: busybox\n    restartPolicy: Always\n"
                  "    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [1]}}]\n"
                  "  containers:\n  - {name: c, image: busybox}\n",
                  "spec.initContainers[0].restartPolicyRules: Forbidden: may not be set for init containers with "
                  "restartPolicy=Always" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *got = errors_of(cases[i].spec);
                if (isempty(cases[i].want))
                        assert_string_equal(got, "");
                else if (!strstr(got, cases[i].want))
                        fail_msg("case %zu: %s", i, got);
        }
}

#define APP(lc)                                                                                                           \
        "  containers:\n  - name: c\n    image: busybox\n    ports: [{name: web, containerPort: 80}]\n    lifecycle: " lc \
        "\n"

static void test_hooks_decoded(void **state) {
        const char *yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" APP(
                "{postStart: {exec: {command: [sh, -c, 'echo hi']}}, preStop: {httpGet: {port: web, host: h, "
                "httpHeaders: [{name: X-A, value: b}]}}}") "  initContainers:\n  - {name: s, image: busybox, restartPolicy: Always, lifecycle: {preStop: {sleep: {seconds: 3}}}}\n";
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        const struct container *c;

        assert_int_equal(manifest_parse(yaml, strlen(yaml), &set, &err), 0);
        c = &set.pods[0]->spec.containers[0];
        assert_non_null(c->post_start);
        assert_int_equal(c->post_start->type, LIFECYCLE_HANDLER_EXEC);
        assert_int_equal(c->post_start->n_handlers, 1);
        assert_string_equal(c->post_start->action.exec_command[2], "echo hi");
        assert_non_null(c->pre_stop);
        assert_int_equal(c->pre_stop->type, LIFECYCLE_HANDLER_HTTP_GET);
        assert_true(c->pre_stop->action.port.is_string);
        assert_string_equal(c->pre_stop->action.port.str_val, "web");
        assert_string_equal(c->pre_stop->action.host, "h");
        /* defaults of SetDefaults_HTTPGetAction */
        assert_string_equal(c->pre_stop->action.path, "/");
        assert_string_equal(c->pre_stop->action.scheme, "HTTP");
        assert_int_equal(c->pre_stop->action.n_http_headers, 1);
        assert_string_equal(c->pre_stop->action.http_headers[0].value, "b");
        c = &set.pods[0]->spec.init_containers[0];
        assert_null(c->post_start);
        assert_int_equal(c->pre_stop->type, LIFECYCLE_HANDLER_SLEEP);
        assert_int_equal(c->pre_stop->sleep_seconds, 3);
        pod_set_done(&set);
}

static void test_hooks_decode_errors(void **state) {
        const char *yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" APP(
                "{preStop: {exec: {command: 3}}}");
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};

        assert_true(manifest_parse(yaml, strlen(yaml), &set, &err) < 0);
        assert_non_null(strstr(ck_error_message(err), "spec.containers[0].lifecycle.preStop.exec.command"));
        pod_set_done(&set);
}

static void test_hooks_validation(void **state) {
        _cleanup_free_ char *ok = NULL, *none = NULL, *two = NULL, *cmd = NULL, *http = NULL, *sleep0 = NULL,
                            *sleep_long = NULL, *init = NULL, *tcp = NULL;

        ok = errors_of(
                APP("{postStart: {httpGet: {port: 80, path: /x, scheme: HTTPS}}, preStop: {sleep: {seconds: 30}}}"));
        assert_string_equal(ok, "");
        /* tcpSocket is accepted (deprecated; it fails when run) */
        tcp = errors_of(APP("{preStop: {tcpSocket: {port: web}}}"));
        assert_string_equal(tcp, "");
        none = errors_of(APP("{postStart: {}}"));
        assert_string_equal(none,
                            "spec.containers[0].lifecycle.postStart: Required value: must specify a handler type");
        two = errors_of(APP("{preStop: {exec: {command: ['true']}, sleep: {seconds: 1}}}"));
        assert_string_equal(
                two, "spec.containers[0].lifecycle.preStop.sleep: Forbidden: may not specify more than 1 handler type");
        cmd = errors_of(APP("{preStop: {exec: {command: []}}}"));
        assert_string_equal(cmd, "spec.containers[0].lifecycle.preStop.exec.command: Required value");
        http = errors_of(APP("{postStart: {httpGet: {port: 0, scheme: FTP, httpHeaders: [{name: 'a b', value: c}]}}}"));
        assert_non_null(strstr(http, "spec.containers[0].lifecycle.postStart.httpGet.port: Invalid value: 0: must be "
                                     "between 1 and 65535, inclusive"));
        assert_non_null(strstr(http,
                               "spec.containers[0].lifecycle.postStart.httpGet.scheme: Unsupported value: \"FTP\": "
                               "supported values: \"HTTP\", \"HTTPS\""));
        assert_non_null(
                strstr(http,
                       "spec.containers[0].lifecycle.postStart.httpGet.httpHeaders[0].name: Invalid value: \"a b\""));
        /* 0 is legal since v1.34 (KEP-4818), a negative value is not */
        sleep0 = errors_of(APP("{preStop: {sleep: {seconds: 0}}}"));
        assert_string_equal(sleep0, "");
        free(sleep0);
        sleep0 = errors_of(APP("{preStop: {sleep: {seconds: -1}}}"));
        assert_string_equal(sleep0, "spec.containers[0].lifecycle.preStop.sleep: Invalid value: -1: must be "
                                    "non-negative and less than terminationGracePeriodSeconds (30)");
        sleep_long = errors_of("  terminationGracePeriodSeconds: 5\n" APP("{preStop: {sleep: {seconds: 6}}}"));
        assert_string_equal(sleep_long,
                            "spec.containers[0].lifecycle.preStop.sleep: Invalid value: 6: must be non-negative "
                            "and less than terminationGracePeriodSeconds (5)");
        /* regular init containers may not have hooks */
        init = errors_of(
                "  initContainers:\n  - {name: i, image: busybox, lifecycle: {preStop: {exec: {command: ['true']}}}}\n"
                "  containers:\n  - {name: c, image: busybox}\n");
        assert_string_equal(init, "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers "
                                  "without restartPolicy=Always");
}

/* lifecycle.stopSignal (KEP-4960, validateStopSignal): spec.os.name required; linux's signals; windows' two */
static void test_stop_signal_validation(void **state) {
        _cleanup_free_ char *ok = NULL, *rt = NULL, *no_os = NULL, *bad = NULL, *win = NULL, *win_ok = NULL,
                            *init = NULL;

        ok = errors_of("  os: {name: linux}\n" APP("{stopSignal: SIGUSR1}"));
        assert_string_equal(ok, "");
        rt = errors_of("  os: {name: linux}\n" APP("{stopSignal: SIGRTMAX-14}"));
        assert_string_equal(rt, "");
        no_os = errors_of(APP("{stopSignal: SIGUSR1}"));
        assert_string_equal(no_os, "spec.containers[0].lifecycle.stopSignal: Forbidden: may not be set for containers "
                                   "with empty `spec.os.name`");
        bad = errors_of("  os: {name: linux}\n" APP("{stopSignal: SIGFOO}"));
        /* sets.List: the names sorted as strings */
        assert_non_null(strstr(bad, "spec.containers[0].lifecycle.stopSignal: Unsupported value: \"SIGFOO\": "
                                    "supported values: \"SIGABRT\", \"SIGALRM\", \"SIGBUS\", \"SIGCHLD\""));
        assert_non_null(strstr(bad, "\"SIGQUIT\", \"SIGRTMAX\", \"SIGRTMAX-1\", \"SIGRTMAX-10\", "));
        assert_non_null(strstr(bad, "\"SIGWINCH\", \"SIGXCPU\", \"SIGXFSZ\""));
        win = errors_of("  os: {name: windows}\n" APP("{stopSignal: SIGUSR1}"));
        assert_string_equal(win, "spec.containers[0].lifecycle.stopSignal: Unsupported value: \"SIGUSR1\": "
                                 "supported values: \"SIGKILL\", \"SIGTERM\"");
        win_ok = errors_of("  os: {name: windows}\n" APP("{stopSignal: SIGKILL}"));
        assert_string_equal(win_ok, "");
        /* a regular init container's lifecycle is forbidden as a whole */
        init = errors_of("  os: {name: linux}\n  initContainers:\n  - {name: i, image: busybox, lifecycle: "
                         "{stopSignal: SIGUSR1}}\n  containers:\n  - {name: c, image: busybox}\n");
        assert_string_equal(init, "spec.initContainers[0].lifecycle: Forbidden: may not be set for init containers "
                                  "without restartPolicy=Always");
        /* the CRI's Signal numbers */
        assert_int_equal(stop_signal_number("SIGABRT"), 1);
        assert_int_equal(stop_signal_number("SIGTERM"), 23);
        assert_int_equal(stop_signal_number("SIGUSR1"), 29);
        assert_int_equal(stop_signal_number("SIGRTMIN+15"), 50);
        assert_int_equal(stop_signal_number("SIGRTMAX-14"), 51);
        assert_int_equal(stop_signal_number("SIGRTMAX"), 65);
        assert_int_equal(stop_signal_number("SIGFOO"), 0);
        assert_int_equal(stop_signal_number(NULL), 0);
        assert_string_equal(stop_signal_name(29), "SIGUSR1");
        assert_null(stop_signal_name(0));
        assert_null(stop_signal_name(66));
}

static void test_handler_from_json(void **state) {
        struct lifecycle_handler *h = NULL;
        json_t *j = json_loads("{\"httpGet\":{\"port\":8080}}", 0, NULL);
        json_t *bad = json_loads("{\"exec\":{\"command\":[\"a\"]},\"sleep\":{\"seconds\":1}}", 0, NULL);

        assert_int_equal(lifecycle_handler_from_json(j, &h), 0);
        assert_int_equal(h->type, LIFECYCLE_HANDLER_HTTP_GET);
        assert_int_equal(h->action.port.int_val, 8080);
        assert_string_equal(h->action.path, "/");
        lifecycle_handler_free(h);
        h = NULL;
        assert_int_equal(lifecycle_handler_from_json(bad, &h), -EINVAL);
        assert_null(h);
        assert_int_equal(lifecycle_handler_from_json(NULL, &h), -EINVAL);
        json_decref(j);
        json_decref(bad);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sidecar_decoded),
                cmocka_unit_test(test_restart_policy_validation),
                cmocka_unit_test(test_hooks_decoded),
                cmocka_unit_test(test_hooks_decode_errors),
                cmocka_unit_test(test_hooks_validation),
                cmocka_unit_test(test_handler_from_json),
                cmocka_unit_test(test_restart_rules_validation),
                cmocka_unit_test(test_stop_signal_validation),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
