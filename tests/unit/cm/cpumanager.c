/* SPDX-License-Identifier: Apache-2.0 */
/* The CPU manager (src/cm/cpumanager): cpusets, topology discovery on a fake sysfs tree, upstream's
 * takeByTopology cases (cpu_assignment_test.go's tables), the static policy and its state file. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "apis/manifest.h"
#include "apis/pod.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/macro.h"
#include "cm/cpumanager/cpumanager.h"
#include "cm/check_hints.h"
#include "cm/fake_sysfs.h"

static struct cpuset S(const char *text) {
        struct cpuset s;
        assert_int_equal(cpuset_parse(text, &s), 0);
        return s;
}

static void
assert_set(const struct cpuset *s, const char *want) {
        char buf[CPUSET_TEXT_MAX];
        assert_string_equal(cpuset_format(s, buf, sizeof(buf)), want);
}

static void test_cpuset(void **state) {
        struct cpuset s = S("0-3,8,10-11\n"), t;

        assert_set(&s, "0-3,8,10-11");
        assert_int_equal(cpuset_count(&s), 7);
        s = S("");
        assert_true(cpuset_empty(&s));
        s = S("5,1,2,3");
        assert_set(&s, "1-3,5");
        s = S("1023");
        assert_set(&s, "1023");
        t = S("1-2");
        s = S("0-3");
        s = cpuset_diff(&s, &t);
        assert_set(&s, "0,3");
        assert_int_equal(cpuset_parse("3-1", &t), -EINVAL);
        assert_int_equal(cpuset_parse("a", &t), -EINVAL);
        assert_int_equal(cpuset_parse("1,,2", &t), -EINVAL);
        assert_int_equal(cpuset_parse("1,", &t), -EINVAL);
        assert_int_equal(cpuset_parse("1024", &t), -EINVAL);
        assert_int_equal(cpuset_parse("1.3", &t), -EINVAL);
}

static void test_topology_sysfs(void **state) {
        _cleanup_free_ char *root = fake_sysfs_new();
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct cpu_topology *t = NULL;
        const struct cpu_info *c;
        struct cpuset s;

        assert_int_equal(cputopo_discover(root, &t, &err), 0);
        assert_int_equal(t->n, 32);
        assert_int_equal(t->n_sockets, 2);
        assert_int_equal(t->n_numa, 4);
        assert_int_equal(t->n_cores, 16);
        assert_int_equal(t->n_uncore, 4);
        assert_int_equal(cputopo_cpus_per_core(t), 2);
        assert_int_equal(cputopo_cpus_per_socket(t), 16);
        c = cputopo_cpu(t, 25); /* core 9: socket 1, NUMA node 2 */
        assert_int_equal(c->core, 9);
        assert_int_equal(c->socket, 1);
        assert_int_equal(c->numa, 2);
        assert_int_equal(c->uncore, 12);
        s = cputopo_cpus_in(t, CPU_LEVEL_NUMA, 3);
        assert_set(&s, "12-15,28-31");
        s = cputopo_cpus_in(t, CPU_LEVEL_SOCKET, 0);
        assert_set(&s, "0-7,16-23");
        s = cputopo_cpus_in(t, CPU_LEVEL_CORE, 3);
        assert_set(&s, "3,19");
        cputopo_free(t);

        /* no NUMA directory, no L3: node 0, the socket as uncore (upstream's fallback) */
        {
                _cleanup_free_ char *cmd = NULL;
                assert_true(asprintf(&cmd, "rm -rf '%s/devices/system/node' '%s'/devices/system/cpu/cpu*/cache", root,
                                     root) > 0);
                assert_int_equal(system(cmd), 0);
        }
        assert_int_equal(cputopo_discover(root, &t, &err), 0);
        assert_int_equal(t->n_numa, 1);
        c = cputopo_cpu(t, 25);
        assert_int_equal(c->numa, 0);
        assert_int_equal(c->uncore, 1);
        cputopo_free(t);

        /* a broken tree: an error naming the file */
        fake_sysfs_put(root, "devices/system/cpu/cpu3/topology/physical_package_id", "x\n");
        assert_int_equal(cputopo_discover(root, &t, &err), -EINVAL);
        assert_non_null(strstr(ck_error_message(err), "cpu3/topology/physical_package_id"));
        fake_sysfs_rm(root);
}

/* ---------------------------------------------------------------- upstream's topologies (policy_test.go) */

static struct cpu_topology *topo_single_socket_ht(void) {
        struct cpu_info c[8];
        struct cpu_topology *t;
        for (int i = 0; i < 8; i++)
                c[i] = (struct cpu_info) { .cpu = i, .core = i % 4 };
        assert_int_equal(cputopo_from_table(c, 8, &t), 0);
        return t;
}

static struct cpu_topology *topo_dual_socket_ht(void) {
        struct cpu_info c[12];
        struct cpu_topology *t;
        for (int i = 0; i < 12; i++)
                c[i] = (struct cpu_info) { .cpu = i, .core = i % 6, .socket = i % 2, .numa = i % 2 };
        assert_int_equal(cputopo_from_table(c, 12, &t), 0);
        return t;
}

static struct cpu_topology *topo_dual_socket_multi_numa_ht(void) {
        struct cpu_info c[80];
        struct cpu_topology *t;
        for (int i = 0; i < 80; i++) {
                int core = i % 40;
                c[i] = (struct cpu_info) { .cpu = i, .core = core, .socket = core / 20, .numa = core / 10 };
        }
        assert_int_equal(cputopo_from_table(c, 80, &t), 0);
        return t;
}

static struct cpu_topology *topo_dual_socket_no_ht(void) {
        struct cpu_info c[8];
        struct cpu_topology *t;
        for (int i = 0; i < 8; i++)
                c[i] = (struct cpu_info) { .cpu = i, .core = i, .socket = i / 4, .numa = i / 4 };
        assert_int_equal(cputopo_from_table(c, 8, &t), 0);
        return t;
}

/* A pod's admission as kubelet_cpu_admit makes it under the topology manager's none policy: tm_admit has the CPU
 * manager allocate each init then app container, with no affinity; a refused pod's allocations are rolled back,
 * an admitted pod's stored. */
static int cpu_allocate(void *userdata, const struct pod *p, const struct container *c, const struct tm_hint *affinity,
                        struct ck_error **ret_error) {
        return cpumanager_allocate(userdata, p, c, affinity, ret_error);
}

static int admit_pod(struct cpumanager *m, const struct pod *p, struct ck_error **ret_error) {
        static const struct topologymanager none = {};
        const struct tm_provider cpu = { .userdata = m, .allocate = cpu_allocate };
        struct cpumanager_mark mark = cpumanager_mark(m);
        int r = tm_admit(&none, p, &cpu, 1, ret_error);

        if (r < 0) {
                cpumanager_rollback(m, &mark);
                return r;
        }
        cpumanager_commit(m, &mark);
        return 0;
}

static void check_take(struct cpu_topology *(*mk)(void), const char *avail, int n, const char *want_err,
                       const char *want) {
        struct cpu_topology *t = mk();
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct cpuset a = S(avail), got = {}, w = S(want);
        int r = cpumanager_take_by_topology_opts(t, &a, n, NULL, &got, &err);

        if (want_err) {
                assert_int_equal(r, -ENOSPC);
                assert_string_equal(ck_error_message(err), want_err);
        } else {
                char g[CPUSET_TEXT_MAX], x[CPUSET_TEXT_MAX];
                assert_int_equal(r, 0);
                if (!cpuset_equal(&got, &w))
                        fail_msg("take %d of %s: got %s, want %s", n, avail, cpuset_format(&got, g, sizeof(g)),
                                 cpuset_format(&w, x, sizeof(x)));
        }
        cputopo_free(t);
}

static void test_take_by_topology_upstream(void **state) {
        /* commonTakeByTopologyTestCases and TestTakeByTopologyNUMAPacked (without the uncore-cache option) */
        check_take(topo_single_socket_ht, "0,2,4,6", 5,
                   "not enough cpus available to satisfy request: requested=5, available=4", "");
        check_take(topo_single_socket_ht, "0-7", 0, NULL, "");
        check_take(topo_single_socket_ht, "0-7", 1, NULL, "0");
        check_take(topo_single_socket_ht, "1,3,5,6,7", 1, NULL, "6");
        check_take(topo_single_socket_ht, "0-7", 2, NULL, "0,4");
        check_take(topo_single_socket_ht, "0-7", 8, NULL, "0-7");
        check_take(topo_single_socket_ht, "0-3,6", 2, NULL, "2,6");
        check_take(topo_dual_socket_ht, "0-11", 6, NULL, "0,2,4,6,8,10");
        check_take(topo_dual_socket_multi_numa_ht, "0-79", 40, NULL, "0-19,40-59");
        check_take(topo_dual_socket_multi_numa_ht, "0-79", 20, NULL, "0-9,40-49");
        check_take(topo_dual_socket_multi_numa_ht, "10-39,50-79", 20, NULL, "10-19,50-59");
        check_take(topo_dual_socket_multi_numa_ht, "0-79", 60, NULL, "0-29,40-69");
        check_take(topo_dual_socket_multi_numa_ht, "1-39,41-79", 60, NULL, "10-39,50-79");
        check_take(topo_dual_socket_ht, "1-5,7-11", 1, NULL, "2");
        check_take(topo_dual_socket_ht, "0-11", 8, NULL, "0-2,4,6-8,10");
        check_take(topo_dual_socket_multi_numa_ht, "0-79", 64, NULL, "0-31,40-71");
        /* TestStaticPolicyAdd's cases on the CPUs they leave available (their default set less the reserved CPU 0) */
        check_take(topo_dual_socket_no_ht, "1,3-7", 4, NULL, "4-7");        /* ExpectAllocOneSocket */
        check_take(topo_dual_socket_no_ht, "1,3,6-7", 4, NULL, "1,3,6-7");  /* ExpectAllocFourCores */
        check_take(topo_dual_socket_ht, "1,3-11", 8, NULL, "1,3-5,7,9-11"); /* ExpectAllocOneSocketOneCore */
}

/* upstream's uncore cache topologies (policy_test.go), as their test cases use them */
static struct cpu_topology *topo_uncore_single_socket_no_smt(void) {
        struct cpu_info c[16];
        struct cpu_topology *t;
        for (int i = 0; i < 16; i++)
                c[i] = (struct cpu_info) { .cpu = i, .core = i, .uncore = i / 4 };
        assert_int_equal(cputopo_from_table(c, 16, &t), 0);
        return t;
}

static struct cpu_topology *topo_uncore_dual_socket_no_smt(void) {
        struct cpu_info c[16];
        struct cpu_topology *t;
        for (int i = 0; i < 16; i++)
                c[i] = (struct cpu_info) { .cpu = i, .core = i, .socket = i / 8, .numa = i / 8, .uncore = i / 4 };
        assert_int_equal(cputopo_from_table(c, 16, &t), 0);
        return t;
}

static struct cpu_topology *topo_uncore_single_socket_multi_numa(void) {
        struct cpu_info c[16];
        struct cpu_topology *t;
        for (int i = 0; i < 16; i++)
                c[i] = (struct cpu_info) { .cpu = i, .core = i, .numa = i / 8, .uncore = i / 4 };
        assert_int_equal(cputopo_from_table(c, 16, &t), 0);
        return t;
}

static struct cpu_topology *topo_uncore_single_socket_smt(void) {
        struct cpu_info c[16];
        struct cpu_topology *t;
        for (int i = 0; i < 16; i++)
                c[i] = (struct cpu_info) { .cpu = i, .core = i % 8, .uncore = (i % 8) / 4 };
        assert_int_equal(cputopo_from_table(c, 16, &t), 0);
        return t;
}

/* through cpumanager_take_by_topology_opts: group 0 packed, else distributed across NUMA nodes in groups of that
 * many CPUs (1, or 2 = full-pcpus-only on these SMT-2 topologies) */
static void check_take_opts(struct cpu_topology *(*mk)(void), const char *avail, int n, int group, bool uncore,
                            const char *want) {
        struct cpu_topology *t = mk();
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct cpumanager_options o = { .distribute_cpus_across_numa = group > 0,
                                        .full_pcpus_only = group > 1,
                                        .prefer_align_cpus_by_uncorecache = uncore };
        struct cpuset a = S(avail), got = {}, w = S(want);
        char g[CPUSET_TEXT_MAX], x[CPUSET_TEXT_MAX];

        assert_true(group <= 1 || cputopo_cpus_per_core(t) == group);
        assert_int_equal(cpumanager_take_by_topology_opts(t, &a, n, &o, &got, &err), 0);
        if (!cpuset_equal(&got, &w))
                fail_msg("take %d of %s (group %d, uncore %d): got %s, want %s", n, avail, group, uncore,
                         cpuset_format(&got, g, sizeof(g)), cpuset_format(&w, x, sizeof(x)));
        cputopo_free(t);
}

static void test_take_numa_distributed_upstream(void **state) {
        /* TestTakeByTopologyNUMADistributed: commonTakeByTopologyTestCases with cpuGroupSize 1 */
        check_take_opts(topo_single_socket_ht, "0-7", 0, 1, false, "");
        check_take_opts(topo_single_socket_ht, "0-7", 1, 1, false, "0");
        check_take_opts(topo_single_socket_ht, "1,3,5,6,7", 1, 1, false, "6");
        check_take_opts(topo_single_socket_ht, "0-7", 2, 1, false, "0,4");
        check_take_opts(topo_single_socket_ht, "0-7", 8, 1, false, "0-7");
        check_take_opts(topo_single_socket_ht, "0-3,6", 2, 1, false, "2,6");
        check_take_opts(topo_dual_socket_ht, "0-11", 6, 1, false, "0,2,4,6,8,10");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-79", 40, 1, false, "0-19,40-59");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-79", 20, 1, false, "0-9,40-49");
        check_take_opts(topo_dual_socket_multi_numa_ht, "10-39,50-79", 20, 1, false, "10-19,50-59");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-79", 60, 1, false, "0-29,40-69");
        check_take_opts(topo_dual_socket_multi_numa_ht, "1-39,41-79", 60, 1, false, "10-39,50-79");
        /* commonTakeByTopologyExtendedTestCases */
        check_take_opts(topo_dual_socket_ht, "0-11", 8, 1, false, "0-3,6-9");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-79", 64, 1, false,
                        "0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-79", 48, 1, false, "0-7,10-17,20-27,40-47,50-57,60-67");
        check_take_opts(topo_dual_socket_multi_numa_ht, "1-29,32-39,41-69,72-79", 48, 1, false,
                        "1-8,10-17,20-27,41-48,50-57,60-67");
        check_take_opts(topo_dual_socket_multi_numa_ht, "2-29,31-39,42-69,71-79", 48, 1, false,
                        "10-17,20-27,31-38,50-57,60-67,71-78");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71", 16, 1, false,
                        "0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71");
        /* the cases of TestTakeByTopologyNUMADistributed itself */
        check_take_opts(topo_dual_socket_ht, "1-5,7-11", 1, 1, false, "1");
        check_take_opts(topo_dual_socket_ht, "1-5,7-11", 1, 2, false, "2"); /* 1 is no multiple of 2: packed */
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-79", 26, 1, false, "0-6,10-16,40-45,50-55");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-79", 26, 2, false, "0-6,10-15,40-46,50-55");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-79", 62, 1, false,
                        "0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-79", 62, 2, false,
                        "0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-8,10-18,20-39,40-48,50-58,60-79", 62, 1, false,
                        "0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-8,10-18,20-39,40-48,50-58,60-79", 62, 2, false,
                        "0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77");
        check_take_opts(topo_dual_socket_multi_numa_ht, "0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76", 34, 1, false,
                        "0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74");
}

static void test_take_uncore_upstream(void **state) {
        /* TestTakeByTopologyNUMAPacked's PreferAlignByUncoreCache cases */
        check_take_opts(topo_uncore_single_socket_no_smt, "1-15", 10, 0, true, "1-2,4-11");
        check_take_opts(topo_dual_socket_ht, "1-5,7-11", 1, 0, true, "1");
        check_take_opts(topo_uncore_dual_socket_no_smt, "0-15", 4, 0, true, "0-3");
        check_take_opts(topo_uncore_dual_socket_no_smt, "2-15", 6, 0, true, "2-7");
        check_take_opts(topo_uncore_dual_socket_no_smt, "8-15", 4, 0, true, "8-11");
        check_take_opts(topo_uncore_single_socket_multi_numa, "3-8,12", 2, 0, true, "4-5");
        check_take_opts(topo_uncore_single_socket_smt, "2-7,10-15", 6, 0, true, "4-6,12-14");
        check_take_opts(topo_uncore_single_socket_smt, "1-7,9-15", 10, 0, true, "1,4-7,9,12-15");
}

static struct pod *parse_pod(const char *uid, const char *spec);

/* TestStaticPolicyAdd's cases through the policy: the state (default set and another container's CPUs) read from
 * the state file, one CPU reserved out of kubeReserved + systemReserved (upstream's numReservedCPUs 1) */
static void check_static_add(struct cpu_topology *(*mk)(void), const char *def, const char *other, const char *cpu,
                             const char *want) {
        char tmpl[] = "/tmp/ckubelet-cpumgr-add-XXXXXX";
        _cleanup_free_ char *text = NULL, *path = NULL, *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *aerr = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct cpuset d = S(def), o = S(other), got;
        struct cpumanager *m = NULL;
        struct pod *p;
        char g[CPUSET_TEXT_MAX];

        assert_non_null(mkdtemp(tmpl));
        assert_int_equal(cpumanager_state_format("static", &d, (char *[]) { (char *) "fakePod" },
                                                 (char *[]) { (char *) "fakeContainer100" }, &o, 1, &text),
                         0);
        assert_true(asprintf(&path, "%s/cpu_manager_state", tmpl) > 0);
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0644), 0);
        assert_int_equal(cpumanager_new(&(struct cpumanager_config) { .policy = "static",
                                                                      .reserved_cpu_milli = 1000,
                                                                      .state_dir = tmpl },
                                        mk(), &m, &err),
                         0);
        assert_true(asprintf(&yaml,
                             "  containers:\n  - name: fakeContainer3\n    image: x\n    resources: {limits: "
                             "{cpu: \"%s\", memory: 1G}, requests: {cpu: \"%s\", memory: 1G}}\n",
                             cpu, cpu) > 0);
        p = parse_pod("fakePod", yaml);
        assert_int_equal(admit_pod(m, p, &aerr), 0);
        got = cpumanager_exclusive_cpus(m, "fakePod", "fakeContainer3");
        assert_string_equal(cpuset_format(&got, g, sizeof(g)), want);
        pod_free(p);
        cpumanager_free(m);
        fake_sysfs_rm(tmpl);
}

static void test_static_policy_add_upstream(void **state) {
        check_static_add(topo_single_socket_ht, "0-1,4-5", "2-3,6-7", "2000m", "1,5");   /* ExpectAllocOneCore */
        check_static_add(topo_dual_socket_ht, "0-1,3-11", "2", "6000m", "1,3,5,7,9,11"); /* ExpectAllocOneSocket */
        check_static_add(topo_dual_socket_ht, "0,2-4,6-11", "1,5", "6000m", "2-4,8-10"); /* ExpectAllocThreeCores */
}

/* ---------------------------------------------------------------- the static policy */

static struct pod *parse_pod(const char *uid, const char *spec) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: {name: p, uid: %s}\nspec:\n%s", uid, spec) >
                    0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

#define GU(name, cpu)                                                            \
        "  - name: " name "\n    image: x\n    resources: {limits: {cpu: \"" cpu \
        "\", memory: 100Mi}, requests: {cpu: \"" cpu "\", memory: 100Mi}}\n"

static struct cpumanager *new_static(const char *sysfs, const char *dir, const char *reserved, char **opt_names,
                                     char **opt_values, struct ck_error **err) {
        struct cpu_topology *t = NULL;
        struct cpumanager *m = NULL;
        struct cpumanager_config cfg = { .policy = "static",
                                         .reserved_system_cpus = reserved,
                                         .reserved_cpu_milli = 500,
                                         .state_dir = dir,
                                         .option_names = opt_names,
                                         .option_values = opt_values };

        assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
        if (cpumanager_new(&cfg, t, &m, err) < 0)
                return NULL;
        return m;
}

static char *tmpdir(void) {
        char tmpl[] = "/tmp/ckubelet-cpumgr-state-XXXXXX";
        return strdup(mkdtemp(tmpl));
}

static void test_static_policy(void **state) {
        _cleanup_free_ char *sysfs = fake_sysfs_new(), *dir = tmpdir();
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct cpumanager *m = new_static(sysfs, dir, "0", NULL, NULL, &err);
        struct pod *gu = parse_pod("gu", "  containers:\n" GU("a", "2") GU("b", "1"));
        struct pod *frac = parse_pod("frac", "  containers:\n" GU("a", "1500m"));
        struct pod *be = parse_pod("be", "  containers:\n  - {name: a, image: x}\n");
        struct pod *big = parse_pod("big", "  containers:\n" GU("a", "31"));
        _cleanup_ck_error_ struct ck_error *aerr = NULL;
        struct cpuset s;

        assert_non_null(m);
        s = cpumanager_shared_pool(m);
        assert_set(&s, "0-31");
        s = cpumanager_allocatable(m);
        assert_set(&s, "1-31");
        assert_int_equal(cpumanager_pod_guaranteed_cpus(gu), 3);
        assert_int_equal(cpumanager_pod_guaranteed_cpus(frac), 0);
        {
                /* pod-level resources: no exclusive CPUs while PodLevelResourceManagers is off (v1.37's default) */
                struct pod *plr = parse_pod("plr", "  resources: {requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, "
                                                   "memory: 1Gi}}\n  containers:\n" GU("a", "2"));
                assert_int_equal(cpumanager_pod_guaranteed_cpus(plr), 0);
                pod_free(plr);
        }

        assert_int_equal(admit_pod(m, gu, &aerr), 0);
        /* CPU 0 is reserved: the packed order takes its sibling 16 first, then a whole core */
        s = cpumanager_exclusive_cpus(m, "gu", "a");
        assert_set(&s, "1,17");
        s = cpumanager_exclusive_cpus(m, "gu", "b");
        assert_set(&s, "16");
        s = cpumanager_shared_pool(m);
        assert_set(&s, "0,2-15,18-31");
        assert_true(cpumanager_container_cpus(m, "be", "a", &s));
        assert_set(&s, "0,2-15,18-31");
        assert_true(cpumanager_container_cpus(m, "gu", "a", &s));
        assert_set(&s, "1,17");

        /* not Guaranteed or not integer: the shared pool, nothing taken */
        assert_int_equal(admit_pod(m, frac, &aerr), 0);
        assert_int_equal(admit_pod(m, be, &aerr), 0);
        assert_int_equal(cpumanager_n_entries(m), 2);

        /* not enough: upstream's reason and message, nothing kept */
        assert_int_equal(admit_pod(m, big, &aerr), -ENOSPC);
        assert_string_equal(ck_error_reason(aerr), "UnexpectedAdmissionError");
        assert_string_equal(ck_error_message(aerr),
                            "Allocate failed due to not enough cpus available to satisfy request: "
                            "requested=31, available=28, which is unexpected");
        assert_int_equal(cpumanager_n_entries(m), 2);

        /* released: back to the pool */
        assert_true(cpumanager_remove_container(m, "gu", "b"));
        s = cpumanager_shared_pool(m);
        assert_set(&s, "0,2-16,18-31");
        assert_true(cpumanager_remove_stale(m, (char *[]) { (char *) "other", NULL }));
        s = cpumanager_shared_pool(m);
        assert_set(&s, "0-31");
        assert_int_equal(cpumanager_n_entries(m), 0);

        cpumanager_free(m);
        pod_free(gu);
        pod_free(frac);
        pod_free(be);
        pod_free(big);
        fake_sysfs_rm(dir);
        fake_sysfs_rm(sysfs);
}

static void test_static_options(void **state) {
        _cleanup_free_ char *sysfs = fake_sysfs_new(), *dir = tmpdir();
        _cleanup_ck_error_ struct ck_error *aerr = NULL;
        struct cpumanager *m;
        struct pod *one = parse_pod("one", "  containers:\n" GU("a", "1"));
        struct pod *two = parse_pod("two", "  containers:\n" GU("a", "2"));
        struct pod *init = parse_pod("init", "  initContainers:\n" GU("i", "4") "  containers:\n" GU("a", "4"));
        struct cpuset s, t;

        /* full-pcpus-only: SMTAlignmentError for an odd count, whole cores otherwise */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                m = new_static(sysfs, dir, "0", (char *[]) { (char *) "full-pcpus-only", NULL },
                               (char *[]) { (char *) "true", NULL }, &err);
                assert_non_null(m);
                assert_int_equal(admit_pod(m, one, &aerr), -ENOSPC);
                assert_string_equal(ck_error_reason(aerr), "SMTAlignmentError");
                assert_string_equal(ck_error_message(aerr),
                                    "SMT Alignment Error: requested 1 cpus not multiple cpus per core = 2");
                aerr = ck_error_free(aerr);
                assert_int_equal(admit_pod(m, two, &aerr), 0);
                s = cpumanager_exclusive_cpus(m, "two", "a");
                assert_set(&s, "1,17"); /* not 16: its core holds the reserved CPU 0 */
                cpumanager_free(m);
                fake_sysfs_rm(dir);
                assert_int_equal(mkdir(dir, 0755), 0);
        }
        /* strict-cpu-reservation: the reserved CPUs leave the shared pool */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                m = new_static(sysfs, dir, "0,16", (char *[]) { (char *) "strict-cpu-reservation", NULL },
                               (char *[]) { (char *) "true", NULL }, &err);
                assert_non_null(m);
                s = cpumanager_shared_pool(m);
                assert_set(&s, "1-15,17-31");
                /* an init container's CPUs are reused by the app container (cpusToReuse) */
                assert_int_equal(admit_pod(m, init, &aerr), 0);
                s = cpumanager_exclusive_cpus(m, "init", "i");
                t = cpumanager_exclusive_cpus(m, "init", "a");
                assert_set(&s, "1-2,17-18");
                assert_true(cpuset_equal(&s, &t));
                cpumanager_free(m);
                fake_sysfs_rm(dir);
                assert_int_equal(mkdir(dir, 0755), 0);
        }
        /* distribute-cpus-across-numa (beta): 10 CPUs need two NUMA nodes, 5 from each of the pair that leaves the
         * free CPUs most balanced (nodes 1 and 2; node 0 holds the reserved CPU 0); packed takes all of node 1 and
         * a core of node 0 */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                struct pod *ten = parse_pod("ten", "  containers:\n" GU("a", "10"));
                m = new_static(sysfs, dir, "0", (char *[]) { (char *) "distribute-cpus-across-numa", NULL },
                               (char *[]) { (char *) "true", NULL }, &err);
                assert_non_null(m);
                assert_true(cpumanager_options(m)->distribute_cpus_across_numa);
                assert_int_equal(admit_pod(m, ten, &aerr), 0);
                s = cpumanager_exclusive_cpus(m, "ten", "a");
                assert_set(&s, "4-6,8-10,20-21,24-25");
                cpumanager_free(m);
                fake_sysfs_rm(dir);
                assert_int_equal(mkdir(dir, 0755), 0);
                /* with full-pcpus-only, in whole cores: 2 cores from each of nodes 1 and 2, the fifth from node 1 */
                m = new_static(sysfs, dir, "0",
                               (char *[]) { (char *) "distribute-cpus-across-numa", (char *) "full-pcpus-only", NULL },
                               (char *[]) { (char *) "true", (char *) "true", NULL }, &err);
                assert_non_null(m);
                assert_int_equal(admit_pod(m, ten, &aerr), 0);
                s = cpumanager_exclusive_cpus(m, "ten", "a");
                assert_set(&s, "4-6,8-9,20-22,24-25");
                cpumanager_free(m);
                fake_sysfs_rm(dir);
                assert_int_equal(mkdir(dir, 0755), 0);
                /* prefer-align-cpus-by-uncorecache (beta): all of node 1, then the last 2 CPUs from one L3 cache (one a NUMA
                 * node here): not node 0's, whose first free core has only one CPU free (the other is the reserved
                 * CPU 0), but the first core of node 2's; packed takes core 1 of node 0 */
                m = new_static(sysfs, dir, "0", (char *[]) { (char *) "prefer-align-cpus-by-uncorecache", NULL },
                               (char *[]) { (char *) "true", NULL }, &err);
                assert_non_null(m);
                assert_true(cpumanager_options(m)->prefer_align_cpus_by_uncorecache);
                assert_int_equal(admit_pod(m, ten, &aerr), 0);
                s = cpumanager_exclusive_cpus(m, "ten", "a");
                assert_set(&s, "4-8,20-24");
                cpumanager_free(m);
                fake_sysfs_rm(dir);
                assert_int_equal(mkdir(dir, 0755), 0);
                pod_free(ten);
        }
        /* the two cannot be combined (upstream's message) */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                assert_null(new_static(sysfs, dir, "0",
                                       (char *[]) { (char *) "distribute-cpus-across-numa",
                                                    (char *) "prefer-align-cpus-by-uncorecache", NULL },
                                       (char *[]) { (char *) "true", (char *) "true", NULL }, &err));
                assert_string_equal(ck_error_message(err),
                                    "new static policy error: static policy options prefer-align-cpus-by-uncorecache "
                                    "and distribute-cpus-across-numa can not be used at the same time");
        }
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                assert_null(new_static(sysfs, dir, "0", (char *[]) { (char *) "bogus", NULL },
                                       (char *[]) { (char *) "true", NULL }, &err));
                assert_string_equal(ck_error_message(err),
                                    "new static policy error: unknown CPU Manager Policy option: \"bogus\"");
        }
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                assert_null(new_static(sysfs, dir, "0", (char *[]) { (char *) "full-pcpus-only", NULL },
                                       (char *[]) { (char *) "yes", NULL }, &err));
                assert_string_equal(ck_error_message(err), "new static policy error: bad value for option "
                                                           "\"full-pcpus-only\": strconv.ParseBool: parsing \"yes\": "
                                                           "invalid syntax");
        }
        /* no reservation at all */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                struct cpu_topology *tp = NULL;
                struct cpumanager_config cfg = { .policy = "static" };
                assert_int_equal(cputopo_discover(sysfs, &tp, NULL), 0);
                assert_int_equal(cpumanager_new(&cfg, tp, &m, &err), -EINVAL);
                assert_string_equal(ck_error_message(err),
                                    "[cpumanager] the static policy requires "
                                    "systemreserved.cpu + kubereserved.cpu to be greater than zero");
        }
        pod_free(one);
        pod_free(two);
        pod_free(init);
        fake_sysfs_rm(dir);
        fake_sysfs_rm(sysfs);
}

static void test_state_file(void **state) {
        _cleanup_free_ char *sysfs = fake_sysfs_new(), *dir = tmpdir(), *path = NULL, *text = NULL;
        _cleanup_ck_error_ struct ck_error *aerr = NULL;
        struct pod *a = parse_pod("pod-a", "  containers:\n" GU("c", "2"));
        struct pod *b = parse_pod("pod-b", "  containers:\n" GU("c", "2"));
        struct cpumanager *m;
        struct cpuset sa, sb, x;
        size_t size;
        int n = 0;

        /* upstream's data checksums (state_checkpoint_test.go); the whole file below was checked byte for byte against
         * the output of upstream's MarshalCheckpoint steps run with Go, go-spew and the checkpoint structs */
        assert_int_equal(cpumanager_fnv32a("(string){\"policyName\":\"none\",\"defaultCPUSet\":\"4-6\"}"), 657950972);
        assert_int_equal(cpumanager_fnv32a("(string){\"policyName\":\"other\",\"defaultCPUSet\":\"7-9\",\"entries\":{"
                                           "\"pod\":{\"container1\":\"4-6\",\"container2\":\"1-3\"}}}"),
                         1432271708u);

        assert_true(asprintf(&path, "%s/cpu_manager_state", dir) > 0);
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                m = new_static(sysfs, dir, "0", NULL, NULL, &err);
                assert_non_null(m);
                assert_int_equal(admit_pod(m, a, &aerr), 0);
                sa = cpumanager_exclusive_cpus(m, "pod-a", "c");
                /* kill -9: nothing more is written; the allocation is on disk already */
                cpumanager_free(m);
        }
        assert_int_equal(read_full_file(path, 1 << 20, &text, &size), 0);
        assert_string_equal(text,
                            "{\"policyName\":\"static\",\"defaultCpuSet\":\"0,2-16,18-31\",\"entries\":{\"pod-a\":{"
                            "\"c\":\"1,17\"}},\"checksum\":2511589949,\"data\":\"{\\\"policyName\\\":\\\"static\\\","
                            "\\\"defaultCpuSet\\\":\\\"0,2-16,18-31\\\",\\\"entries\\\":{\\\"pod-a\\\":{\\\"c\\\":"
                            "\\\"1,17\\\"}}}\",\"dataChecksum\":1515402496}");
        /* nothing else in the directory: written through a temporary file renamed over it */
        {
                DIR *d = opendir(dir);
                struct dirent *de;
                while ((de = readdir(d)))
                        n += de->d_name[0] != '.';
                closedir(d);
                assert_int_equal(n, 1);
        }
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                m = new_static(sysfs, dir, "0", NULL, NULL, &err);
                assert_non_null(m);
                x = cpumanager_exclusive_cpus(m, "pod-a", "c");
                assert_true(cpuset_equal(&x, &sa));
                assert_int_equal(admit_pod(m, b, &aerr), 0);
                sb = cpumanager_exclusive_cpus(m, "pod-b", "c");
                x = cpuset_and(&sa, &sb);
                assert_true(cpuset_empty(&x)); /* never one CPU to two containers */
                x = cpumanager_shared_pool(m);
                x = cpuset_and(&x, &sb);
                assert_true(cpuset_empty(&x));
                cpumanager_free(m);
        }
        /* another policy: refused as upstream */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                struct cpu_topology *t = NULL;
                struct cpumanager_config cfg = { .policy = "none", .state_dir = dir };
                assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
                assert_int_equal(cpumanager_new(&cfg, t, &m, &err), -EINVAL);
                assert_non_null(strstr(ck_error_message(err),
                                       "configured policy \"none\" differs from state checkpoint policy \"static\""));
        }
        /* a state whose data does not match its checksum */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                const char *bad = "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-31\",\"checksum\":1,"
                                  "\"data\":\"{\\\"policyName\\\":\\\"static\\\",\\\"defaultCpuSet\\\":\\\"0-31\\\"}\","
                                  "\"dataChecksum\":1234}";
                assert_int_equal(write_file_atomic(path, bad, strlen(bad), 0644), 0);
                assert_null(new_static(sysfs, dir, "0", NULL, NULL, &err));
                assert_non_null(strstr(ck_error_message(err), "checkpoint is corrupted"));
        }
        /* a state that does not add up to the node's CPUs */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                const char *bad = "{\"policyName\":\"static\",\"defaultCpuSet\":\"0-7\",\"checksum\":0}";
                assert_int_equal(write_file_atomic(path, bad, strlen(bad), 0644), 0);
                assert_null(new_static(sysfs, dir, "0", NULL, NULL, &err));
                assert_string_equal(ck_error_message(err),
                                    "current set of available CPUs \"0-31\" doesn't match with CPUs in state \"0-7\"");
        }
        /* upstream's own v4 checkpoint for the none policy (state_checkpoint_test.go "Restore default CPU set") */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                struct cpu_topology *t = NULL;
                struct cpumanager_config cfg = { .policy = "none", .state_dir = dir };
                const char *up = "{\"policyName\":\"other\",\"defaultCPUSet\":\"1-9\",\"checksum\":1234,"
                                 "\"data\":\"{\\\"policyName\\\":\\\"none\\\",\\\"defaultCPUSet\\\":\\\"4-6\\\"}\","
                                 "\"dataChecksum\":657950972}";
                assert_int_equal(write_file_atomic(path, up, strlen(up), 0644), 0);
                assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
                assert_int_equal(cpumanager_new(&cfg, t, &m, &err), 0);
                cpumanager_free(m);
        }
        pod_free(a);
        pod_free(b);
        fake_sysfs_rm(dir);
        fake_sysfs_rm(sysfs);
}

/* ---------------------------------------------------------------- align-by-socket */

/* a static manager on the fake tree whose state is def (the shared pool) and other (another pod's CPUs) */
static struct cpumanager *new_aligned(const char *sysfs, const char *dir, const char *reserved, const char *def,
                                      const char *other, bool align) {
        _cleanup_free_ char *text = NULL, *path = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct cpuset d = S(def), o = S(other);
        struct cpu_topology *t = NULL;
        struct cpumanager *m = NULL;

        assert_int_equal(cpumanager_state_format("static", &d, (char *[]) { (char *) "other" },
                                                 (char *[]) { (char *) "c" }, &o, 1, &text),
                         0);
        assert_true(asprintf(&path, "%s/cpu_manager_state", dir) > 0);
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0644), 0);
        assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
        if (cpumanager_new(&(struct cpumanager_config) { .policy = "static",
                                                         .reserved_system_cpus = reserved,
                                                         .state_dir = dir,
                                                         .alpha_options = true,
                                                         .option_names = (char *[]) { (char *) "align-by-socket",
                                                                                      NULL },
                                                         .option_values = (char *[]) { (char *) (align ? "true"
                                                                                                       : "false"),
                                                                                       NULL } },
                           t, &m, &err) < 0)
                fail_msg("cpumanager_new: %s", ck_error_message(err));
        assert_int_equal(unlink(path), 0);
        return m;
}

/* upstream's cases for the option (policy_options_test.go TestValidateStaticPolicyOptions, topology_hints_test.go
 * TestGetPodTopologyHintsWithPolicyOptions, policy_static_test.go alignBySocketOptionTestCases) on the fake tree:
 * sockets 0 and 1 hold NUMA nodes 0-1 and 2-3 of 8 CPUs each (upstream's topoDualSocketMultiNumaPerSocketHT has the
 * same shape with 20 CPUs a node, so the CPU numbers are translated) */
static void test_align_by_socket(void **state) {
        _cleanup_free_ char *sysfs = fake_sysfs_new(), *dir = tmpdir();
        _cleanup_ck_error_ struct ck_error *aerr = NULL;
        struct pod *two = parse_pod("two", "  containers:\n" GU("a", "2"));
        struct pod *big = parse_pod("big", "  containers:\n" GU("a", "17"));
        struct tm_hints h = {};
        struct cpumanager *m;
        struct cpuset s;

        /* validation: an alpha option behind CPUManagerPolicyAlphaOptions */
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                assert_null(new_static(sysfs, dir, "0", (char *[]) { (char *) "align-by-socket", NULL },
                                       (char *[]) { (char *) "true", NULL }, &err));
                assert_string_equal(ck_error_message(err), "new static policy error: CPU Manager Policy Alpha-level "
                                                           "Options not enabled, but option \"align-by-socket\" "
                                                           "provided");
        }
        {
                /* incompatible with the topology manager's single-numa-node policy, fine with the others */
                _cleanup_ck_error_ struct ck_error *err = NULL;
                struct cpu_topology *t = NULL;
                struct cpumanager_config cfg = { .policy = "static",
                                                 .reserved_system_cpus = "0",
                                                 .alpha_options = true,
                                                 .tm_single_numa_node = true,
                                                 .option_names = (char *[]) { (char *) "align-by-socket", NULL },
                                                 .option_values = (char *[]) { (char *) "true", NULL } };
                assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
                assert_int_equal(cpumanager_new(&cfg, t, &m, &err), -EINVAL);
                assert_string_equal(ck_error_message(err),
                                    "new static policy error: Topolgy manager single-numa-node policy is incompatible "
                                    "with CPUManager align-by-socket policy option");
                err = ck_error_free(err);
                cfg.tm_single_numa_node = false;
                assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
                assert_int_equal(cpumanager_new(&cfg, t, &m, &err), 0);
                cpumanager_free(m);
                /* "false" is no restriction */
                cfg.tm_single_numa_node = true;
                cfg.option_values = (char *[]) { (char *) "false", NULL };
                assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
                assert_int_equal(cpumanager_new(&cfg, t, &m, &err), 0);
                cpumanager_free(m);
        }
        {
                /* more sockets than NUMA nodes (upstream's fakeTopoMultiSocketDualSocketPerNumaHT: 2 sockets a node) */
                _cleanup_ck_error_ struct ck_error *err = NULL;
                struct cpu_info c[16];
                struct cpu_topology *t = NULL;
                for (int i = 0; i < 16; i++)
                        c[i] = (struct cpu_info) {
                                .cpu = i, .core = i % 8, .socket = (i % 8) / 2, .numa = (i % 8) / 4
                        };
                assert_int_equal(cputopo_from_table(c, 16, &t), 0);
                assert_int_equal(cpumanager_new(
                                         &(struct cpumanager_config) {
                                                 .policy = "static",
                                                 .reserved_system_cpus = "0",
                                                 .alpha_options = true,
                                                 .option_names = (char *[]) { (char *) "align-by-socket", NULL },
                                                 .option_values = (char *[]) { (char *) "true", NULL } },
                                         t, &m, &err),
                                 -EINVAL);
                assert_string_equal(ck_error_message(err), "new static policy error: Align by socket is not compatible "
                                                           "with hardware where number of sockets are more than "
                                                           "number of NUMA");
        }
        {
                /* the options' pairs upstream refuses, and a beta option with CPUManagerPolicyBetaOptions off */
                _cleanup_ck_error_ struct ck_error *err = NULL;
                struct cpu_topology *t = NULL;
                struct cpumanager_config cfg = {
                        .policy = "static",
                        .reserved_system_cpus = "0",
                        .alpha_options = true,
                        .option_names = (char *[]) { (char *) "full-pcpus-only",
                                                     (char *) "distribute-cpus-across-cores", NULL },
                        .option_values = (char *[]) { (char *) "true", (char *) "true", NULL }
                };
                assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
                assert_int_equal(cpumanager_new(&cfg, t, &m, &err), -EINVAL);
                assert_string_equal(ck_error_message(err), "new static policy error: static policy options "
                                                           "full-pcpus-only and distribute-cpus-across-cores can not "
                                                           "be used at the same time");
                err = ck_error_free(err);
                cfg.option_names = (char *[]) { (char *) "strict-cpu-reservation", NULL };
                cfg.option_values = (char *[]) { (char *) "true", NULL };
                cfg.beta_options_off = true;
                assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
                assert_int_equal(cpumanager_new(&cfg, t, &m, &err), -EINVAL);
                assert_string_equal(ck_error_message(err), "new static policy error: CPU Manager Policy Beta-level "
                                                           "Options not enabled, but option \"strict-cpu-reservation\" "
                                                           "provided");
                err = ck_error_free(err);
                /* distribute-cpus-across-cores, which ckubelet does not implement: refused, not ignored */
                cfg.beta_options_off = false;
                cfg.option_names = (char *[]) { (char *) "distribute-cpus-across-cores", NULL };
                cfg.option_values = (char *[]) { (char *) "true", NULL };
                assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
                assert_int_equal(cpumanager_new(&cfg, t, &m, &err), -EOPNOTSUPP);
                assert_string_equal(ck_error_message(err), "new static policy error: CPU Manager Policy option "
                                                           "\"distribute-cpus-across-cores\" is not supported by "
                                                           "ckubelet");
        }

        /* hints: 2 CPUs free on node 0, one on node 1 (upstream's 2,3,11): {0} and, socket-aligned, {0,1} preferred */
        m = new_aligned(sysfs, dir, "0", "0,2-3,5", "1,4,6-31", false);
        assert_int_equal(cpumanager_container_hints(m, two, &two->spec.containers[0], &h), 0);
        check_hints(&h, "{0 P} {0-1} {0,2} {0,3} {0-2} {0-1,3} {0,2-3} {0-3}");
        tm_hints_done(&h);
        cpumanager_free(m);
        m = new_aligned(sysfs, dir, "0", "0,2-3,5", "1,4,6-31", true);
        assert_int_equal(cpumanager_container_hints(m, two, &two->spec.containers[0], &h), 0);
        check_hints(&h, "{0 P} {0-1 P} {0,2} {0,3} {0-2} {0-1,3} {0,2-3} {0-3}");
        tm_hints_done(&h);
        cpumanager_free(m);
        /* a pod needing 3 nodes (upstream's 41 CPUs of 0-28,40-57): the hints over 2 sockets, the narrowest number
         * of sockets, all preferred */
        m = new_aligned(sysfs, dir, "31", "0-9,16-22,31", "10-15,23-30", true);
        assert_int_equal(cpumanager_pod_hints(m, big, &h), 0);
        check_hints(&h, "{0-2 P} {0-3 P}");
        tm_hints_done(&h);
        cpumanager_free(m);
        m = new_aligned(sysfs, dir, "31", "0-9,16-22,31", "10-15,23-30", false);
        assert_int_equal(cpumanager_pod_hints(m, big, &h), 0);
        check_hints(&h, "{0-2 P} {0-3}");
        tm_hints_done(&h);
        cpumanager_free(m);

        /* allocation with the affinity {0,2}: the CPUs of its sockets (upstream's 2,11), else only its nodes' (2,21) */
        m = new_aligned(sysfs, dir, "0", "0,2,5,8-9", "1,3-4,6-7,10-31", true);
        assert_int_equal(cpumanager_allocate(m, two, &two->spec.containers[0],
                                             &(struct tm_hint) {
                                                     .affinity = 0x5, .has_affinity = true, .preferred = true },
                                             &aerr),
                         0);
        s = cpumanager_exclusive_cpus(m, "two", "a");
        assert_set(&s, "2,5");
        cpumanager_free(m);
        m = new_aligned(sysfs, dir, "0", "0,2,5,8-9", "1,3-4,6-7,10-31", false);
        assert_int_equal(cpumanager_allocate(m, two, &two->spec.containers[0],
                                             &(struct tm_hint) {
                                                     .affinity = 0x5, .has_affinity = true, .preferred = true },
                                             &aerr),
                         0);
        s = cpumanager_exclusive_cpus(m, "two", "a");
        assert_set(&s, "2,8");
        cpumanager_free(m);

        pod_free(two);
        pod_free(big);
        fake_sysfs_rm(dir);
        fake_sysfs_rm(sysfs);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cpuset),
                cmocka_unit_test(test_topology_sysfs),
                cmocka_unit_test(test_take_by_topology_upstream),
                cmocka_unit_test(test_take_numa_distributed_upstream),
                cmocka_unit_test(test_take_uncore_upstream),
                cmocka_unit_test(test_static_policy_add_upstream),
                cmocka_unit_test(test_static_policy),
                cmocka_unit_test(test_static_options),
                cmocka_unit_test(test_state_file),
                cmocka_unit_test(test_align_by_socket),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
