/* SPDX-License-Identifier: Apache-2.0 */
/* Pod admission: pod count, cpu and memory requests against allocatable, upstream's reasons and messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "kubelet/admission.h"

static struct pod *parse_pod(const char *spec) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n%s", spec) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

#define MIB (1024LL * 1024)

static void test_requests(void **state) {
        int64_t cpu, mem;
        struct pod *p;

        p = parse_pod("  containers:\n  - {name: a, image: i}\n");
        kubelet_pod_requests(p, &cpu, &mem);
        assert_int_equal(cpu, 0);
        assert_int_equal(mem, 0);
        pod_free(p);
        /* sum of app containers; a limit stands for a missing request */
        p = parse_pod("  containers:\n"
                      "  - {name: a, image: i, resources: {requests: {cpu: 100m, memory: 64Mi}}}\n"
                      "  - {name: b, image: i, resources: {limits: {cpu: 250m, memory: 1Gi}}}\n");
        kubelet_pod_requests(p, &cpu, &mem);
        assert_int_equal(cpu, 350);
        assert_int_equal(mem, 64 * MIB + 1024 * MIB);
        pod_free(p);
        /* the largest init container wins when larger than the sum */
        p = parse_pod("  initContainers:\n  - {name: i, image: i, resources: {requests: {cpu: '2', memory: 16Mi}}}\n"
                      "  containers:\n  - {name: a, image: i, resources: {requests: {cpu: 100m, memory: 64Mi}}}\n");
        kubelet_pod_requests(p, &cpu, &mem);
        assert_int_equal(cpu, 2000);
        assert_int_equal(mem, 64 * MIB);
        pod_free(p);
        /* the pod's overhead counts too */
        p = parse_pod("  overhead: {cpu: 250m, memory: 120Mi}\n"
                      "  containers:\n  - {name: a, image: i, resources: {requests: {cpu: 100m, memory: 64Mi}}}\n");
        kubelet_pod_requests(p, &cpu, &mem);
        assert_int_equal(cpu, 350);
        assert_int_equal(mem, 184 * MIB);
        pod_free(p);
}

/* a refusal: -ENOSPC, and an error (freed here) with that reason and message */
static void assert_refused(int r, struct ck_error **e, const char *reason, const char *message) {
        assert_int_equal(r, -ENOSPC);
        assert_non_null(*e);
        assert_int_equal((*e)->code, -ENOSPC);
        assert_string_equal(ck_error_reason(*e), reason);
        assert_string_equal(ck_error_message(*e), message);
        *e = ck_error_free(*e);
}

static void test_admit(void **state) {
        struct admission_node node = { .max_pods = 3, .cpu_milli = 2000, .memory_bytes = 1024 * MIB };
        struct pod *big = parse_pod("  containers:\n  - {name: a, image: i, resources: {requests: {cpu: 1500m}}}\n");
        struct pod *mid = parse_pod(
                "  containers:\n  - {name: a, image: i, resources: {requests: {cpu: 600m, memory: 900Mi}}}\n");
        struct pod *none = parse_pod("  containers:\n  - {name: a, image: i}\n");
        const struct pod *admitted[3] = { big, none, none };
        _cleanup_ck_error_ struct ck_error *aerr = NULL;

        assert_int_equal(kubelet_admit(mid, admitted, 0, &node, &aerr), 0);
        assert_null(aerr);
        /* cpu: 600 + 1500 > 2000 */
        assert_refused(kubelet_admit(mid, admitted, 1, &node, &aerr), &aerr, "OutOfcpu",
                       "Pod was rejected: Node didn't have enough resource: cpu, requested: 600, used: 1500, "
                       "capacity: 2000");
        /* a pod without requests always fits the resources, but not the pod count */
        assert_int_equal(kubelet_admit(none, admitted, 2, &node, &aerr), 0);
        assert_refused(kubelet_admit(none, admitted, 3, &node, &aerr), &aerr, "OutOfpods",
                       "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 3, "
                       "capacity: 3");
        /* memory */
        node.cpu_milli = 8000;
        admitted[0] = mid;
        assert_int_equal(kubelet_admit(mid, admitted, 1, &node, &aerr), -ENOSPC);
        assert_string_equal(ck_error_reason(aerr), "OutOfmemory");
        assert_non_null(
                strstr(ck_error_message(aerr), "memory, requested: 943718400, used: 943718400, capacity: 1073741824"));
        aerr = ck_error_free(aerr);
        /* no pod limit */
        node.max_pods = 0;
        assert_int_equal(kubelet_admit(none, admitted, 3, &node, &aerr), 0);
        pod_free(big);
        pod_free(mid);
        pod_free(none);
}

static void test_sysctls(void **state) {
        char *allowed[] = { "net.core.somaxconn", NULL };
        struct admission_node node = { .max_pods = 1, .cpu_milli = 1000, .memory_bytes = 1024 * MIB };
        _cleanup_ck_error_ struct ck_error *aerr = NULL;
        struct pod *p;

        p = parse_pod("  securityContext: {sysctls: [{name: net.ipv4.tcp_syncookies, value: '1'}, "
                      "{name: net.core.somaxconn, value: '1024'}]}\n  containers:\n  - {name: a, image: i}\n");
        /* checked before the resources: a forbidden sysctl is reported even when the node is full */
        assert_refused(kubelet_admit(p, (const struct pod *const *) &p, 1, &node, &aerr), &aerr, "SysctlForbidden",
                       "Pod was rejected: forbidden sysctl: \"net.core.somaxconn\" not allowlisted");
        node.allowed_unsafe_sysctls = allowed;
        assert_int_equal(kubelet_admit(p, NULL, 0, &node, &aerr), 0);
        assert_null(aerr);
        pod_free(p);
}

/* device plugin resources: requests default to limits, init containers count as for cpu, a resource the node
 * does not have is not counted (removeMissingExtendedResources) */
static void test_extended(void **state) {
        const struct admission_extended ext[] = { { "example.com/dev", 3 } };
        struct admission_node node = {
                .cpu_milli = 1000, .memory_bytes = 1024 * MIB, .extended = ext, .n_extended = 1
        };
        struct pod *two = parse_pod(
                "  containers:\n  - {name: a, image: i, resources: {limits: {example.com/dev: 2}}}\n");
        struct pod *init = parse_pod(
                "  initContainers:\n  - {name: i, image: i, resources: {limits: {example.com/dev: 2}}}\n"
                "  containers:\n  - {name: a, image: i, resources: {limits: {example.com/dev: 1}}}\n");
        struct pod *other = parse_pod(
                "  containers:\n  - {name: a, image: i, resources: {limits: {other.com/x: 9}}}\n");
        const struct pod *admitted[] = { two };
        _cleanup_ck_error_ struct ck_error *aerr = NULL;

        assert_int_equal(pod_request_units(two, "example.com/dev"), 2);
        assert_int_equal(pod_request_units(init, "example.com/dev"), 2);
        assert_int_equal(pod_request_units(other, "example.com/dev"), 0);
        assert_int_equal(kubelet_admit(two, NULL, 0, &node, &aerr), 0);
        assert_refused(kubelet_admit(init, admitted, 1, &node, &aerr), &aerr, "OutOfexample.com/dev",
                       "Pod was rejected: Node didn't have enough resource: example.com/dev, requested: 2, "
                       "used: 2, capacity: 3");
        assert_int_equal(kubelet_admit(other, admitted, 1, &node, &aerr), 0);
        pod_free(two);
        pod_free(init);
        pod_free(other);
}

/* the pod's OS: its kubernetes.io/os node selector, then spec.os, must be the node's (linux) */
static void test_admit_os(void **state) {
        struct admission_node node = { .cpu_milli = 2000, .memory_bytes = 1024 * MIB };
        static const struct {
                const char *spec, *reason, *message;
        } cases[] = {
                { "  os: {name: linux}\n  nodeSelector: {kubernetes.io/os: linux}\n", NULL, NULL },
                { "  nodeSelector: {kubernetes.io/os: windows}\n", "PodOSSelectorNodeLabelDoesNotMatch",
                  "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" },
                { "  os: {name: windows}\n", "PodOSNotSupported",
                  "Failed to admit pod as the OS field doesn't match node OS" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *spec = NULL;
                _cleanup_ck_error_ struct ck_error *aerr = NULL;
                struct pod *p;
                assert_true(asprintf(&spec, "%s  containers:\n  - {name: a, image: i}\n", cases[i].spec) > 0);
                p = parse_pod(spec);
                if (!cases[i].reason)
                        assert_int_equal(kubelet_admit(p, NULL, 0, &node, &aerr), 0);
                else {
                        assert_int_equal(kubelet_admit(p, NULL, 0, &node, &aerr), -ENOSPC);
                        assert_string_equal(ck_error_reason(aerr), cases[i].reason);
                        assert_string_equal(ck_error_message(aerr), cases[i].message);
                }
                aerr = ck_error_free(aerr);
                pod_free(p);
        }
}

/* rejectPodAdmissionBasedOnSupplementalGroupsPolicy: Strict needs the runtime's support (its Status features);
 * Merge, or no policy, is admitted anywhere */
static void test_admit_supplemental_groups_policy(void **state) {
        struct admission_node node = { .cpu_milli = 2000, .memory_bytes = 1024 * MIB };
        struct pod *strict = parse_pod("  securityContext: {supplementalGroupsPolicy: Strict}\n"
                                       "  containers:\n  - {name: a, image: i}\n"),
                   *merge = parse_pod("  securityContext: {supplementalGroupsPolicy: Merge}\n"
                                      "  containers:\n  - {name: a, image: i}\n");
        _cleanup_ck_error_ struct ck_error *aerr = NULL;

        assert_refused(kubelet_admit(strict, NULL, 0, &node, &aerr), &aerr, "SupplementalGroupsPolicyNotSupported",
                       "SupplementalGroupsPolicy=Strict is not supported in this node");
        assert_int_equal(kubelet_admit(merge, NULL, 0, &node, &aerr), 0);
        node.supplemental_groups_policy = true;
        assert_int_equal(kubelet_admit(strict, NULL, 0, &node, &aerr), 0);
        pod_free(strict);
        pod_free(merge);
}

/* the AppArmor admit handler's reason and message, as the pod's status gets them */
static void test_admit_apparmor(void **state) {
        struct admission_node node = { .cpu_milli = 2000, .memory_bytes = 1024 * MIB };
        struct pod *p = parse_pod("  securityContext: {appArmorProfile: {type: RuntimeDefault}}\n"
                                  "  containers:\n  - {name: a, image: i}\n");
        _cleanup_ck_error_ struct ck_error *aerr = NULL;

        assert_refused(kubelet_admit(p, NULL, 0, &node, &aerr), &aerr, "AppArmor",
                       "Cannot enforce AppArmor: AppArmor is not enabled on the host");
        node.apparmor_enabled = true;
        assert_int_equal(kubelet_admit(p, NULL, 0, &node, &aerr), 0);
        assert_null(aerr);
        pod_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_admit_supplemental_groups_policy),
                cmocka_unit_test(test_admit_apparmor),
                cmocka_unit_test(test_admit_os),
                cmocka_unit_test(test_requests),
                cmocka_unit_test(test_extended),
                cmocka_unit_test(test_admit),
                cmocka_unit_test(test_sysctls),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
