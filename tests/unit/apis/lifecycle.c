/* SPDX-License-Identifier: Apache-2.0 */
/* Lifecycle fields: an init container's restartPolicy (sidecars) with the apiserver's validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "apis/manifest.h"

/* The validation errors of a pod as one string ("" when valid). */
static char *errors_of(const char *spec) {
        _cleanup_free_ char *yaml = NULL, *err = NULL;
        struct pod_set set = {};
        struct field_errors e = {};
        char *s;

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n%s",
                             spec) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", err);
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
        _cleanup_free_ char *err = NULL;
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
        ok = errors_of("  initContainers:\n  - name: s\n    image: busybox\n    restartPolicy: Always\n"
                       "    startupProbe: {exec: {command: ['true']}}\n    readinessProbe: {exec: {command: ['true']}}\n"
                       "  containers:\n  - {name: c, image: busybox}\n");
        assert_string_equal(ok, "");
        app = errors_of("  containers:\n  - {name: c, image: busybox, restartPolicy: Always}\n");
        assert_non_null(strstr(app, "spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers"));
        bad = errors_of("  initContainers:\n  - {name: i, image: busybox, restartPolicy: OnFailure}\n"
                        "  containers:\n  - {name: c, image: busybox}\n");
        assert_non_null(strstr(bad, "spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": "
                                    "supported values: \"Always\""));
        empty = errors_of("  initContainers:\n  - {name: i, image: busybox, restartPolicy: ''}\n"
                          "  containers:\n  - {name: c, image: busybox}\n");
        assert_non_null(strstr(empty, "spec.initContainers[0].restartPolicy: Required value"));
        /* without restartPolicy Always, probes stay forbidden */
        probes = errors_of("  initContainers:\n  - {name: i, image: busybox, startupProbe: {exec: {command: ['true']}}}\n"
                           "  containers:\n  - {name: c, image: busybox}\n");
        assert_non_null(strstr(probes, "spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers "
                                       "without restartPolicy=Always"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sidecar_decoded),
                cmocka_unit_test(test_restart_policy_validation),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
