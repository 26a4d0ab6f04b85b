/* SPDX-License-Identifier: Apache-2.0 */
/* QoS class, CPU shares/quota and OOM score adjustment, against upstream's numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "kuberuntime/resources.h"

static struct pod *parse_pod(const char *containers) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n%s",
                             containers) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

#define GIB (1024LL * 1024 * 1024)

static void test_qos_classes(void **state) {
        struct pod *p;

        p = parse_pod("  - {name: a, image: i}\n");
        assert_int_equal(pod_qos_class(p), QOS_BEST_EFFORT);
        pod_free(p);
        /* limits only: requests default to limits → Guaranteed */
        p = parse_pod("  - {name: a, image: i, resources: {limits: {cpu: 500m, memory: 1Gi}}}\n");
        assert_int_equal(pod_qos_class(p), QOS_GUARANTEED);
        pod_free(p);
        p = parse_pod("  - {name: a, image: i, resources: {limits: {cpu: 500m, memory: 1Gi}}}\n"
                      "  - {name: b, image: i}\n");
        assert_int_equal(pod_qos_class(p), QOS_BURSTABLE);
        pod_free(p);
        p = parse_pod(
                "  - {name: a, image: i, resources: {requests: {cpu: 100m}, limits: {cpu: 500m, memory: 1Gi}}}\n");
        assert_int_equal(pod_qos_class(p), QOS_BURSTABLE);
        pod_free(p);
        /* only non-compute resources: still BestEffort */
        p = parse_pod("  - {name: a, image: i, resources: {requests: {ephemeral-storage: 1Gi}}}\n");
        assert_int_equal(pod_qos_class(p), QOS_BEST_EFFORT);
        assert_string_equal(qos_class_to_string(pod_qos_class(p)), "BestEffort");
        pod_free(p);
}

static void test_cpu_conversions(void **state) {
        assert_int_equal(kr_milli_cpu_to_shares(0), 2);
        assert_int_equal(kr_milli_cpu_to_shares(1), 2);
        assert_int_equal(kr_milli_cpu_to_shares(100), 102);
        assert_int_equal(kr_milli_cpu_to_shares(1000), 1024);
        assert_int_equal(kr_milli_cpu_to_shares(1000000), 262144);
        assert_int_equal(kr_milli_cpu_to_quota(0, 100000), 0);
        assert_int_equal(kr_milli_cpu_to_quota(5, 100000), 1000); /* minimum quota */
        assert_int_equal(kr_milli_cpu_to_quota(250, 100000), 25000);
        assert_int_equal(kr_milli_cpu_to_quota(2000, 100000), 200000);
}

static void test_oom_score_adj(void **state) {
        struct pod *p;

        p = parse_pod("  - {name: a, image: i, resources: {limits: {cpu: 1, memory: 1Gi}}}\n");
        assert_int_equal(kr_container_oom_score_adj(p, &p->spec.containers[0], 8 * GIB), -997);
        pod_free(p);
        p = parse_pod("  - {name: a, image: i}\n");
        assert_int_equal(kr_container_oom_score_adj(p, &p->spec.containers[0], 8 * GIB), 1000);
        pod_free(p);
        /* burstable: 1000 - 1000*request/capacity, within [3, 999] */
        p = parse_pod("  - {name: a, image: i, resources: {requests: {memory: 2Gi}}}\n"
                      "  - {name: b, image: i, resources: {requests: {cpu: 100m}}}\n"
                      "  - {name: c, image: i, resources: {requests: {memory: 8Gi}}}\n");
        assert_int_equal(kr_container_oom_score_adj(p, &p->spec.containers[0], 8 * GIB), 750);
        assert_int_equal(kr_container_oom_score_adj(p, &p->spec.containers[1], 8 * GIB), 999);
        assert_int_equal(kr_container_oom_score_adj(p, &p->spec.containers[2], 8 * GIB), 3);
        pod_free(p);
}

static void test_container_resources(void **state) {
        struct kr_linux_resources r;
        struct pod *p = parse_pod(
                "  - {name: a, image: i, resources: {requests: {cpu: 250m, memory: 64Mi}, limits: {cpu: 500m, memory: 128Mi}}}\n"
                "  - {name: b, image: i}\n");

        kr_container_resources(p, &p->spec.containers[0], 8 * GIB, &r);
        assert_int_equal(r.cpu_shares, 256);
        assert_int_equal(r.cpu_period, 100000);
        assert_int_equal(r.cpu_quota, 50000);
        assert_int_equal(r.memory_limit_in_bytes, 128 * 1024 * 1024);
        kr_container_resources(p, &p->spec.containers[1], 8 * GIB, &r);
        assert_int_equal(r.cpu_shares, 2);
        assert_int_equal(r.cpu_quota, 0);
        assert_int_equal(r.cpu_period, 0);
        assert_int_equal(r.memory_limit_in_bytes, 0);
        assert_int_equal(r.oom_score_adj, 999);
        pod_free(p);
}

/* ComputePodQOS, getCPULimit/getMemoryLimit and the OOM score adjustment with pod-level resources (upstream's
 * TestComputePodQOS and TestGetContainerOOMScoreAdjust pod-level cases) */
static void test_pod_level_resources(void **state) {
        struct kr_linux_resources r;
        struct pod *p;

        /* the pod's class alone: Guaranteed at pod level although the containers say nothing */
        p = parse_pod("  - {name: a, image: i}\n  resources: {requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 1, "
                      "memory: 1Gi}}\n");
        assert_int_equal(pod_qos_class(p), QOS_GUARANTEED);
        /* a container without limits gets the pod's: quota, memory limit, and its shares from the cpu limit */
        kr_container_resources(p, &p->spec.containers[0], 8 * GIB, &r);
        assert_int_equal(r.cpu_shares, 1024);
        assert_int_equal(r.cpu_quota, 100000);
        assert_int_equal(r.cpu_period, 100000);
        assert_int_equal(r.memory_limit_in_bytes, GIB);
        assert_int_equal(r.oom_score_adj, -997);
        pod_free(p);
        /* Burstable at pod level although each container is Guaranteed */
        p = parse_pod("  - {name: a, image: i, resources: {limits: {cpu: 500m, memory: 256Mi}}}\n"
                      "  resources: {requests: {cpu: 500m, memory: 256Mi}, limits: {cpu: 1, memory: 1Gi}}\n");
        assert_int_equal(pod_qos_class(p), QOS_BURSTABLE);
        /* its own limits win */
        kr_container_resources(p, &p->spec.containers[0], 8 * GIB, &r);
        assert_int_equal(r.cpu_quota, 50000);
        assert_int_equal(r.memory_limit_in_bytes, 256 * 1024 * 1024);
        pod_free(p);
        /* limits only at pod level: requests are not defaulted (PodLevelResourcesFixDefaulting), so Burstable */
        p = parse_pod("  - {name: a, image: i}\n  resources: {limits: {cpu: 1, memory: 1Gi}}\n");
        assert_int_equal(pod_qos_class(p), QOS_BURSTABLE);
        pod_free(p);
        /* only cpu at pod level: memory is BestEffort, so Burstable */
        p = parse_pod("  - {name: a, image: i}\n  resources: {requests: {cpu: 1}, limits: {cpu: 1}}\n");
        assert_int_equal(pod_qos_class(p), QOS_BURSTABLE);
        pod_free(p);
        /* unsupported names only: the containers decide */
        p = parse_pod("  - {name: a, image: i, resources: {limits: {cpu: 1, memory: 1Gi}}}\n"
                      "  resources: {requests: {ephemeral-storage: 1Gi}}\n");
        assert_int_equal(pod_qos_class(p), QOS_GUARANTEED);
        pod_free(p);
        /* OOM score: the pod's memory request beyond the containers' shared equally: (4Gi - 2Gi) / 2 = 1Gi more each,
         * 1000 - 1000 * 3Gi / 8Gi = 625 and 1000 - 1000 * 1Gi / 8Gi = 875 */
        p = parse_pod("  - {name: a, image: i, resources: {requests: {memory: 2Gi}}}\n  - {name: b, image: i}\n"
                      "  resources: {requests: {memory: 4Gi}}\n");
        assert_int_equal(pod_qos_class(p), QOS_BURSTABLE);
        assert_int_equal(kr_container_oom_score_adj(p, &p->spec.containers[0], 8 * GIB), 625);
        assert_int_equal(kr_container_oom_score_adj(p, &p->spec.containers[1], 8 * GIB), 875);
        pod_free(p);
}

/* NodeSwap: LimitedSwap's per-container memory.swap.max (calcSwapForBurstablePods), NoSwap's 0 */
static void test_swap_limit(void **state) {
        struct pod *p;

        /* Burstable, request below limit: request / node memory * swap, truncated */
        p = parse_pod("  - {name: a, image: i, resources: {requests: {memory: 100Mi}, limits: {memory: 1Gi}}}\n"
                      "  - {name: b, image: i, resources: {requests: {memory: 1Gi}}}\n"
                      "  - {name: c, image: i}\n"
                      "  - {name: d, image: i, resources: {requests: {memory: 5Gi}}}\n"
                      "  - {name: e, image: i, resources: {requests: {cpu: 1}}}\n"
                      "  - {name: f, image: i, resources: {requests: {memory: 1Gi}, limits: {memory: 1Gi}}}\n");
        assert_int_equal(pod_qos_class(p), QOS_BURSTABLE);
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[0], true, false, 4100000000, GIB), 27460973);
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[1], true, false, 4 * GIB, 2 * GIB), 536870912);
        /* no memory request or limit, a request above the node's memory, request equal to limit: none */
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[2], true, false, 4 * GIB, 2 * GIB), 0);
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[3], true, false, 4 * GIB, 2 * GIB), 0);
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[4], true, false, 4 * GIB, 2 * GIB), 0);
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[5], true, false, 4 * GIB, 2 * GIB), 0);
        /* NoSwap, a critical pod, an unknown node memory: none */
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[1], false, false, 4 * GIB, 2 * GIB), 0);
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[1], true, true, 4 * GIB, 2 * GIB), 0);
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[1], true, false, 0, 2 * GIB), 0);
        pod_free(p);
        /* Guaranteed and BestEffort pods never swap */
        p = parse_pod("  - {name: a, image: i, resources: {limits: {cpu: 500m, memory: 1Gi}}}\n");
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[0], true, false, 4 * GIB, 2 * GIB), 0);
        pod_free(p);
        p = parse_pod("  - {name: a, image: i}\n");
        assert_int_equal(kr_container_swap_limit(p, &p->spec.containers[0], true, false, 4 * GIB, 2 * GIB), 0);
        pod_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_qos_classes),   cmocka_unit_test(test_cpu_conversions),
                cmocka_unit_test(test_oom_score_adj), cmocka_unit_test(test_container_resources),
                cmocka_unit_test(test_swap_limit),    cmocka_unit_test(test_pod_level_resources),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
