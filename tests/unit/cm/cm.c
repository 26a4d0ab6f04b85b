/* SPDX-License-Identifier: Apache-2.0 */
/* Cgroup naming (cgroupfs and systemd forms) and ResourceConfigForPod, against upstream's values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "cm/cm.h"

static struct pod *parse_pod(const char *spec) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: 1234-5678}\nspec:\n%s", spec) >
                    0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static void check_name(const char *root, enum qos_class q, const char *uid, const char *want_fs,
                       const char *want_systemd) {
        _cleanup_free_ char *name = NULL, *fs = NULL, *sd = NULL;

        assert_int_equal(cm_pod_cgroup_name(root, q, uid, &name), 0);
        assert_int_equal(cm_name_to_cgroupfs(name, &fs), 0);
        assert_string_equal(fs, want_fs);
        assert_int_equal(cm_name_to_systemd(name, &sd), 0);
        assert_string_equal(sd, want_systemd);
}

static void test_naming(void **state) {
        _cleanup_free_ char *n = NULL, *s = NULL, *f = NULL;
        const char *parts[] = { "kubepods", "besteffort" };
        const char *bad[] = { "a/b" };
        char *x = (char *) 1;

        check_name("/", QOS_GUARANTEED, "1234-5678", "/kubepods/pod1234-5678",
                   "/kubepods.slice/kubepods-pod1234_5678.slice");
        check_name("/", QOS_BURSTABLE, "1234-5678", "/kubepods/burstable/pod1234-5678",
                   "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_5678.slice");
        check_name("", QOS_BEST_EFFORT, "ab", "/kubepods/besteffort/podab",
                   "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podab.slice");
        /* a cgroup root is split into components; empty ones are dropped */
        check_name("//my-root//x/", QOS_BURSTABLE, "u", "/my-root/x/kubepods/burstable/podu",
                   "/my_root.slice/my_root-x.slice/my_root-x-kubepods.slice/my_root-x-kubepods-burstable.slice/"
                   "my_root-x-kubepods-burstable-podu.slice");

        assert_int_equal(cm_cgroup_name("/", parts, 2, &n), 0);
        assert_string_equal(n, "kubepods/besteffort");
        assert_int_equal(cm_cgroup_name("/", NULL, 0, &f), 0);
        assert_string_equal(f, "");
        assert_int_equal(cm_name_to_systemd(f, &s), 0);
        assert_string_equal(s, "/");

        assert_int_equal(cm_cgroup_name("/", bad, 1, &x), -EINVAL);
        assert_int_equal(cm_pod_cgroup_name("/", QOS_BURSTABLE, "", &x), -EINVAL);
        assert_int_equal(cm_name_to_systemd("a//b", &x), -EINVAL);
        assert_ptr_equal(x, (char *) 1); /* untouched on failure */
}

static void check_config(const char *spec, int64_t shares, int64_t quota, int64_t period, int64_t memory) {
        struct pod *p = parse_pod(spec);
        struct cm_resource_config rc;

        cm_resource_config_for_pod(p, &rc);
        assert_int_equal(rc.cpu_shares, shares);
        assert_int_equal(rc.cpu_quota, quota);
        assert_int_equal(rc.cpu_period, period);
        assert_int_equal(rc.memory_limit, memory);
        assert_int_equal(rc.pids_limit, 0);
        pod_free(p);
}

#define MI (1024LL * 1024)

static void test_resource_config_for_pod(void **state) {
        struct pod *p;

        /* BestEffort: minimum shares only */
        check_config("  containers:\n  - {name: a, image: i}\n", 2, 0, 0, 0);
        /* Guaranteed: shares from the requests (defaulted from the limits), quota from the summed cpu limits,
         * memory the summed limits */
        check_config("  containers:\n"
                     "  - {name: a, image: i, resources: {limits: {cpu: 250m, memory: 64Mi}}}\n"
                     "  - {name: b, image: i, resources: {limits: {cpu: 250m, memory: 32Mi}}}\n",
                     512, 50000, 100000, 96 * MI);
        /* Burstable, every container with cpu and memory limits: quota and memory set */
        check_config("  containers:\n"
                     "  - {name: a, image: i, resources: {requests: {cpu: 100m}, limits: {cpu: 1, memory: 64Mi}}}\n"
                     "  - {name: b, image: i, resources: {requests: {cpu: 100m}, limits: {cpu: 500m, memory: 1Gi}}}\n",
                     204, 150000, 100000, 1024 * MI + 64 * MI);
        /* Burstable, one container without a cpu limit and one without a memory limit: neither is set */
        check_config("  containers:\n"
                     "  - {name: a, image: i, resources: {requests: {cpu: 300m, memory: 16Mi}, limits: {cpu: 600m}}}\n"
                     "  - {name: b, image: i, resources: {requests: {cpu: 100m}, limits: {memory: 32Mi}}}\n",
                     409, 0, 0, 0);
        /* Burstable with memory requests only: 2 shares (no cpu request) */
        check_config("  containers:\n  - {name: a, image: i, resources: {requests: {memory: 16Mi}}}\n", 2, 0, 0, 0);
        /* a tiny cpu limit gets the minimum quota (1ms) */
        check_config("  containers:\n  - {name: a, image: i, resources: {limits: {cpu: 1m, memory: 8Mi}}}\n", 2, 1000,
                     100000, 8 * MI);
        /* init containers count: the larger of their request and the app containers' sum */
        p = parse_pod("  initContainers:\n"
                      "  - {name: i, image: i, resources: {requests: {cpu: '2'}}}\n"
                      "  containers:\n"
                      "  - {name: a, image: i, resources: {requests: {cpu: 500m}}}\n");
        assert_int_equal(cm_pod_cpu_requests(p), 2000);
        pod_free(p);
        /* the pod's overhead (RuntimeClass): added to the requests and to the limits declared */
        check_config("  overhead: {cpu: 250m, memory: 120Mi}\n  containers:\n"
                     "  - {name: a, image: i, resources: {limits: {cpu: 250m, memory: 64Mi}}}\n",
                     512, 50000, 100000, 184 * MI);
        check_config("  overhead: {cpu: 100m, memory: 120Mi}\n  containers:\n"
                     "  - {name: a, image: i, resources: {requests: {cpu: 100m}, limits: {memory: 64Mi}}}\n",
                     204, 0, 0, 184 * MI);
        p = parse_pod("  overhead: {cpu: 100m}\n  containers:\n  - {name: a, image: i}\n");
        assert_int_equal(cm_pod_cpu_requests(p), 100);
        pod_free(p);
}

static void test_shares_to_weight(void **state) {
        assert_int_equal(cm_cpu_shares_to_weight(2), 1);
        assert_int_equal(cm_cpu_shares_to_weight(1024), 39);
        assert_int_equal(cm_cpu_shares_to_weight(262144), 10000);
        assert_int_equal(cm_cpu_shares_to_weight(0), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_naming),
                cmocka_unit_test(test_resource_config_for_pod),
                cmocka_unit_test(test_shares_to_weight),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
