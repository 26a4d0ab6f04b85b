/* SPDX-License-Identifier: Apache-2.0 */
/* Cgroup naming (cgroupfs and systemd forms) and ResourceConfigForPod, against upstream's values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "apis/resource.h"
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

/* ResourceConfigForPod with pod-level resources (spec.resources) */
/* Huge pages (HugePageLimits, GetHugepageLimitsFromResources, libcontainer's size names): the pod cgroup gets a
 * limit for every page size of the machine, 0 for those it does not ask for; a container without its own hugepages
 * limit gets the pod-level one */
static void test_hugepages(void **state) {
        const uint64_t sizes[] = { 2 * MI, 1024 * MI };
        struct cm_resource_config rc = {};
        char unit[RESOURCE_HUGEPAGE_UNIT_MAX];
        uint64_t b = 0;
        struct pod *p;
        (void) state;

        assert_int_equal(resource_hugepage_size("hugepages-2Mi", &b), 0);
        assert_true(b == 2 * MI);
        assert_int_equal(resource_hugepage_size("hugepages-1Gi", &b), 0);
        assert_true(b == 1024 * MI);
        assert_int_equal(resource_hugepage_size("hugepages-", &b), -EINVAL);
        assert_int_equal(resource_hugepage_size("memory", &b), -EINVAL);
        assert_int_equal(resource_hugepage_size("hugepages-1500m", &b), -EINVAL);
        resource_hugepage_unit(2 * MI, unit);
        assert_string_equal(unit, "2MB");
        resource_hugepage_unit(1024 * MI, unit);
        assert_string_equal(unit, "1GB");
        resource_hugepage_unit(64 * 1024, unit);
        assert_string_equal(unit, "64KB");

        /* two containers' 2Mi pages summed (one spelled in Ki), an init container's counted as the largest init */
        p = parse_pod("  initContainers:\n"
                      "  - {name: i, image: i, resources: {limits: {hugepages-2Mi: 8Mi, memory: 10Mi}}}\n"
                      "  containers:\n"
                      "  - {name: a, image: i, resources: {limits: {hugepages-2Mi: 4Mi, memory: 10Mi}}}\n"
                      "  - {name: b, image: i, resources: {limits: {hugepages-2Mi: 2Mi, memory: 10Mi}}}\n");
        cm_resource_config_hugepages(p, sizes, ELEMENTSOF(sizes), &rc);
        assert_int_equal(rc.n_hugepages, 2);
        assert_true(rc.hugepages[0].page_size == 2 * MI && rc.hugepages[0].limit == 8 * (int64_t) MI);
        assert_true(rc.hugepages[1].page_size == 1024 * MI && rc.hugepages[1].limit == 0);
        assert_int_equal(resource_container_hugepages(p, &p->spec.containers[0], 2 * MI), 4 * MI);
        assert_int_equal(resource_container_hugepages(p, &p->spec.containers[1], 1024 * MI), 0);
        pod_free(p);

        p = parse_pod("  containers:\n"
                      "  - {name: a, image: i, resources: {limits: {hugepages-2Mi: 4Mi, memory: 10Mi}}}\n"
                      "  - {name: b, image: i, resources: {limits: {hugepages-2048Ki: 2Mi, memory: 10Mi}}}\n");
        cm_resource_config_hugepages(p, sizes, ELEMENTSOF(sizes), &rc);
        assert_true(rc.hugepages[0].limit == 6 * (int64_t) MI);
        pod_free(p);

        /* pod-level hugepages: the pod cgroup's, and every container's that sets none of that size */
        p = parse_pod("  resources: {requests: {memory: 100Mi, hugepages-2Mi: 16Mi}, limits: {memory: 100Mi, "
                      "hugepages-2Mi: 16Mi}}\n"
                      "  containers:\n"
                      "  - {name: a, image: i}\n"
                      "  - {name: b, image: i, resources: {limits: {hugepages-2Mi: 4Mi}}}\n");
        cm_resource_config_hugepages(p, sizes, ELEMENTSOF(sizes), &rc);
        assert_true(rc.hugepages[0].limit == 16 * (int64_t) MI && rc.hugepages[1].limit == 0);
        assert_int_equal(resource_container_hugepages(p, &p->spec.containers[0], 2 * MI), 16 * MI);
        assert_int_equal(resource_container_hugepages(p, &p->spec.containers[1], 2 * MI), 4 * MI);
        assert_int_equal(resource_container_hugepages(p, &p->spec.containers[0], 1024 * MI), 0);
        pod_free(p);

        /* no huge pages anywhere: every size 0 */
        p = parse_pod("  containers:\n  - {name: a, image: i}\n");
        cm_resource_config_hugepages(p, sizes, ELEMENTSOF(sizes), &rc);
        assert_true(rc.n_hugepages == 2 && rc.hugepages[0].limit == 0 && rc.hugepages[1].limit == 0);
        pod_free(p);
}

static void test_resource_config_pod_level(void **state) {
        struct pod *p;

        /* Guaranteed at pod level, containers without resources: the pod's values */
        check_config("  resources: {requests: {cpu: 1, memory: 100Mi}, limits: {cpu: 1, memory: 100Mi}}\n"
                     "  containers:\n  - {name: a, image: i}\n  - {name: b, image: i}\n",
                     1024, 100000, 100000, 100 * MI);
        /* Burstable at pod level: shares from its request, quota and memory from its limits although no container
         * has a limit */
        check_config("  resources: {requests: {cpu: 500m, memory: 50Mi}, limits: {cpu: 2, memory: 200Mi}}\n"
                     "  containers:\n  - {name: a, image: i, resources: {requests: {cpu: 100m}}}\n",
                     512, 200000, 100000, 200 * MI);
        /* pod-level limits only (no defaulting of the pod's requests in v1.37, PodLevelResourcesFixDefaulting):
         * Burstable, shares from the containers' requests */
        check_config("  resources: {limits: {cpu: 500m, memory: 64Mi}}\n"
                     "  containers:\n  - {name: a, image: i, resources: {requests: {cpu: 100m}}}\n",
                     102, 50000, 100000, 64 * MI);
        /* pod-level cpu request only: no quota, no memory limit */
        check_config("  resources: {requests: {cpu: 1}}\n  containers:\n  - {name: a, image: i}\n", 1024, 0, 0, 0);
        /* a pod-level memory limit with a container cpu limit only: memory from the pod, no quota (the other
         * container has no cpu limit) */
        check_config("  resources: {requests: {memory: 10Mi}, limits: {memory: 64Mi}}\n  containers:\n"
                     "  - {name: a, image: i, resources: {limits: {cpu: 200m}}}\n  - {name: b, image: i}\n",
                     204, 0, 0, 64 * MI);
        /* the overhead is added to the pod-level values */
        check_config("  overhead: {cpu: 250m, memory: 120Mi}\n"
                     "  resources: {requests: {cpu: 1, memory: 100Mi}, limits: {cpu: 1, memory: 100Mi}}\n"
                     "  containers:\n  - {name: a, image: i}\n",
                     1280, 125000, 100000, 220 * MI);
        p = parse_pod("  resources: {requests: {cpu: 750m}}\n  containers:\n"
                      "  - {name: a, image: i, resources: {requests: {cpu: 500m}}}\n");
        assert_int_equal(cm_pod_cpu_requests(p), 750);
        pod_free(p);
        /* sidecars add to the app containers (AggregateContainerRequests) */
        p = parse_pod("  initContainers:\n"
                      "  - {name: s, image: i, restartPolicy: Always, resources: {requests: {cpu: 300m}}}\n"
                      "  - {name: i, image: i, resources: {requests: {cpu: 600m}}}\n"
                      "  containers:\n  - {name: a, image: i, resources: {requests: {cpu: 500m}}}\n");
        assert_int_equal(cm_pod_cpu_requests(p), 900);
        pod_free(p);
}

static void test_systemd_unit_names(void **state) {
        _cleanup_free_ char *n = NULL, *n2 = NULL, *u = NULL, *par = NULL, *r1 = NULL, *r2 = NULL, *r3 = NULL,
                            *uid = NULL;
        char *x = (char *) 1, *y = (char *) 1;

        /* updateSystemdCgroupInfo: the last slice and its parent; a top-level slice's parent is "-.slice" */
        assert_int_equal(cm_pod_cgroup_name("/", QOS_BURSTABLE, "1234-5678", &n), 0);
        assert_int_equal(cm_name_to_systemd_unit(n, &u, &par), 0);
        assert_string_equal(u, "kubepods-burstable-pod1234_5678.slice");
        assert_string_equal(par, "kubepods-burstable.slice");
        free(u);
        free(par);
        assert_int_equal(cm_name_to_systemd_unit("kubepods", &u, &par), 0);
        assert_string_equal(u, "kubepods.slice");
        assert_string_equal(par, "-.slice");
        free(u);
        free(par);
        assert_int_equal(cm_name_to_systemd_unit("kubepods/pod1234-5678", &u, &par), 0);
        assert_string_equal(u, "kubepods-pod1234_5678.slice");
        assert_string_equal(par, "kubepods.slice");
        assert_int_equal(cm_name_to_systemd_unit("", &x, &y), -EINVAL);
        assert_ptr_equal(x, (char *) 1);

        /* --cgroup-root is read in the cgroupfs form with the systemd driver too (upstream ParseCgroupfsToCgroupName) */
        assert_int_equal(cm_cgroup_name("/ckubelet-1-2", NULL, 0, &r1), 0);
        assert_int_equal(cm_name_to_systemd_unit(r1, &r2, &r3), 0);
        assert_string_equal(r2, "ckubelet_1_2.slice");
        assert_string_equal(r3, "-.slice");
        free(r2);
        free(r3);
        r2 = r3 = NULL;
        assert_int_equal(cm_pod_cgroup_name("/a/b-c", QOS_BEST_EFFORT, "u-1", &n2), 0);
        assert_int_equal(cm_name_to_systemd(n2, &r2), 0);
        assert_string_equal(r2, "/a.slice/a-b_c.slice/a-b_c-kubepods.slice/a-b_c-kubepods-besteffort.slice/"
                                "a-b_c-kubepods-besteffort-podu_1.slice");

        /* pod directories back to UIDs */
        assert_int_equal(cm_pod_uid_from_dir(true, "kubepods-burstable-pod1234_5678.slice", &uid), 0);
        assert_string_equal(uid, "1234-5678");
        free(uid);
        assert_int_equal(cm_pod_uid_from_dir(true, "kubepods-pod9_9.slice", &uid), 0);
        assert_string_equal(uid, "9-9");
        free(uid);
        assert_int_equal(cm_pod_uid_from_dir(false, "pod1234-5678", &uid), 0);
        assert_string_equal(uid, "1234-5678");
        assert_int_equal(cm_pod_uid_from_dir(true, "kubepods-burstable.slice", &x), -EINVAL);
        assert_int_equal(cm_pod_uid_from_dir(true, "kubepods-pod.slice", &x), -EINVAL);
        assert_int_equal(cm_pod_uid_from_dir(true, "pod1234", &x), -EINVAL);
        assert_int_equal(cm_pod_uid_from_dir(false, "pod", &x), -EINVAL);
        assert_int_equal(cm_pod_uid_from_dir(false, "cri-containerd-1.scope", &x), -EINVAL);
        assert_ptr_equal(x, (char *) 1);

        assert_int_equal(cm_systemd_version_parse("\"v245.4-1.fc32\""), 245);
        assert_int_equal(cm_systemd_version_parse("247.3-7"), 247);
        assert_int_equal(cm_systemd_version_parse("252"), 252);
        assert_int_equal(cm_systemd_version_parse("abc"), -EINVAL);
}

static const struct cm_unit_property *prop(const struct cm_slice_properties *p, const char *name) {
        for (size_t i = 0; i < p->n; i++)
                if (streq(p->p[i].name, name))
                        return &p->p[i];
        return NULL;
}

static void check_u64(const struct cm_slice_properties *p, const char *name, uint64_t want) {
        const struct cm_unit_property *x = prop(p, name);
        if (!x)
                fail_msg("no property %s", name);
        assert_int_equal(x->type, CM_PROPERTY_U64);
        assert_true(x->u == want);
}

static void test_slice_properties(void **state) {
        struct cm_slice_properties p;
        struct cm_resource_config rc;
        struct pod *pod;
        const char *common[] = { "Description",       "Wants",
                                 "MemoryAccounting",  "CPUAccounting",
                                 "BlockIOAccounting", "DefaultDependencies",
                                 "DevicePolicy",      "DeviceAllow" };

        /* a Guaranteed pod: 500m and 96Mi, 2048 pids (--pod-max-pids), systemd 247 */
        pod = parse_pod("  containers:\n"
                        "  - {name: a, image: i, resources: {limits: {cpu: 250m, memory: 64Mi}}}\n"
                        "  - {name: b, image: i, resources: {limits: {cpu: 250m, memory: 32Mi}}}\n");
        cm_resource_config_for_pod(pod, &rc);
        pod_free(pod);
        rc.pids_limit = 2048;
        assert_int_equal(cm_systemd_slice_properties("kubepods-pod1234_5678.slice", "kubepods.slice", &rc, false, 247,
                                                     &p),
                         0);
        for (size_t i = 0; i < ELEMENTSOF(common); i++)
                assert_string_equal(p.p[i].name, common[i]); /* in runc's order */
        assert_string_equal(p.p[0].s, "libcontainer container kubepods-pod1234_5678.slice");
        assert_int_equal(p.p[1].type, CM_PROPERTY_UNITS);
        assert_string_equal(p.p[1].s, "kubepods.slice");
        assert_true(p.p[2].u == 1 && p.p[3].u == 1 && p.p[4].u == 1);
        assert_true(p.p[5].type == CM_PROPERTY_BOOL && p.p[5].u == 0);
        assert_string_equal(p.p[6].s, "auto");
        assert_int_equal(p.p[7].type, CM_PROPERTY_DEVICE_ALLOW);
        check_u64(&p, "MemoryLimit", 96 * MI);
        check_u64(&p, "CPUShares", 512);
        check_u64(&p, "CPUQuotaPeriodUSec", 100000);
        check_u64(&p, "CPUQuotaPerSecUSec", 500000); /* 50ms per 100ms */
        assert_non_null(prop(&p, "TasksAccounting"));
        check_u64(&p, "TasksMax", 2048);
        assert_int_equal(p.n, 14);

        /* systemd before 242 has no CPUQuotaPeriodUSec; 1m (1ms per 100ms = 10ms/s) stays, 1.5ms rounds up */
        rc = (struct cm_resource_config) { .cpu_shares = 2, .cpu_quota = 1500, .cpu_period = 100000 };
        assert_int_equal(cm_systemd_slice_properties("a.slice", "-.slice", &rc, false, 241, &p), 0);
        assert_null(prop(&p, "CPUQuotaPeriodUSec"));
        check_u64(&p, "CPUQuotaPerSecUSec", 20000);
        assert_null(prop(&p, "MemoryLimit"));
        assert_null(prop(&p, "TasksMax"));

        /* a BestEffort pod: only shares */
        pod = parse_pod("  containers:\n  - {name: a, image: i}\n");
        cm_resource_config_for_pod(pod, &rc);
        pod_free(pod);
        assert_int_equal(cm_systemd_slice_properties("kubepods-besteffort-pod1.slice", "kubepods-besteffort.slice", &rc,
                                                     false, 247, &p),
                         0);
        check_u64(&p, "CPUShares", 2);
        assert_null(prop(&p, "CPUQuotaPerSecUSec"));
        assert_int_equal(p.n, 9);

        /* kubepods on cgroup v2: MemoryMax, CPUWeight, IOAccounting; a period without quota is unlimited */
        rc = (struct cm_resource_config) { .cpu_shares = 2048, .memory_limit = 8 * 1024 * MI, .cpu_period = 100000 };
        assert_int_equal(cm_systemd_slice_properties("kubepods.slice", "-.slice", &rc, true, 252, &p), 0);
        assert_string_equal(p.p[4].name, "IOAccounting");
        check_u64(&p, "MemoryMax", 8 * 1024 * MI);
        check_u64(&p, "CPUWeight", cm_cpu_shares_to_weight(2048));
        check_u64(&p, "CPUQuotaPerSecUSec", UINT64_MAX);
        assert_null(prop(&p, "CPUShares"));
}

static void test_shares_to_weight(void **state) {
        assert_int_equal(cm_cpu_shares_to_weight(2), 1);
        assert_int_equal(cm_cpu_shares_to_weight(1024), 39);
        assert_int_equal(cm_cpu_shares_to_weight(262144), 10000);
        assert_int_equal(cm_cpu_shares_to_weight(0), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_naming),           cmocka_unit_test(test_resource_config_for_pod),
                cmocka_unit_test(test_shares_to_weight), cmocka_unit_test(test_systemd_unit_names),
                cmocka_unit_test(test_slice_properties), cmocka_unit_test(test_resource_config_pod_level),
                cmocka_unit_test(test_hugepages),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
