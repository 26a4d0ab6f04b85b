/* SPDX-License-Identifier: Apache-2.0 */
/* The topology manager (src/cm/topologymanager): upstream's policy merge tables (policy_test.go, turned into
 * topologymanager_cases.h by scripts/gen-topology-cases.py) for every policy, its options and NUMA discovery, and
 * admission with the CPU manager as hint provider on the fake topology (2 sockets x 2 NUMA nodes x 4 cores x 2
 * threads). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
#include "cm/topologymanager/topologymanager.h"

struct tm_case_hint {
        uint64_t mask;
        bool any, all; /* nil; NewTestBitMask(numaNodes...) */
        bool preferred;
};
struct tm_case_resource {
        const char *name;
        int n; /* -1: nil */
        const struct tm_case_hint *hints;
};
struct tm_case_provider {
        int n; /* 0: an empty map */
        const struct tm_case_resource *res;
};
struct tm_case {
        const char *name;
        const struct tm_case_provider *hp;
        size_t n_hp;
        struct tm_case_hint expected;
};

#include "cm/topologymanager_cases.h"

static struct tm_numa numa_nodes(size_t n) {
        /* commonNUMAInfoFourNodes / EightNodes */
        static const uint64_t d8[8][8] = {
                { 10, 11, 12, 12, 30, 30, 30, 30 }, { 11, 10, 12, 12, 30, 30, 30, 30 },
                { 12, 12, 10, 11, 30, 30, 30, 30 }, { 12, 12, 11, 10, 30, 30, 30, 30 },
                { 30, 30, 30, 30, 10, 11, 12, 12 }, { 30, 30, 30, 30, 11, 10, 12, 12 },
                { 30, 30, 30, 30, 12, 12, 10, 11 }, { 30, 30, 30, 30, 12, 12, 13, 10 },
        };
        struct tm_numa numa = { .n = n, .has_distances = true };
        for (size_t i = 0; i < n; i++) {
                numa.nodes[i] = (int) i;
                for (size_t j = 0; j < n; j++)
                        numa.distances[i][j] = d8[i][j];
        }
        return numa;
}

static struct tm_hint to_hint(const struct tm_case_hint *h, const struct tm_numa *numa) {
        if (h->any)
                return (struct tm_hint) { .preferred = h->preferred };
        return (struct tm_hint) { .affinity = h->all ? tm_default_affinity(numa) : h->mask,
                                  .has_affinity = true,
                                  .preferred = h->preferred };
}

static size_t run_cases(const struct topologymanager *m, const struct tm_case *cases, size_t n) {
        for (size_t i = 0; i < n; i++) {
                const struct tm_case *c = &cases[i];
                struct tm_hints h = {};
                struct tm_hint got, want = to_hint(&c->expected, &m->numa);
                char a[64], b[64];

                for (size_t p = 0; p < c->n_hp; p++) {
                        if (c->hp[p].n == 0)
                                assert_int_equal(tm_hints_add_any(&h), 0);
                        for (int r = 0; r < c->hp[p].n; r++) {
                                const struct tm_case_resource *res = &c->hp[p].res[r];
                                struct tm_hint v[16];
                                if (res->n < 0) {
                                        assert_int_equal(tm_hints_add_any(&h), 0);
                                        continue;
                                }
                                for (int k = 0; k < res->n; k++)
                                        v[k] = to_hint(&res->hints[k], &m->numa);
                                assert_int_equal(tm_hints_add(&h, v, (size_t) res->n), 0);
                        }
                }
                (void) tm_merge(m, &h, &got);
                tm_hints_done(&h);
                if (got.has_affinity != want.has_affinity || got.preferred != want.preferred ||
                    (want.has_affinity && got.affinity != want.affinity))
                        fail_msg("%s: expected {%s %d}, got {%s %d}", c->name,
                                 want.has_affinity ? tm_mask_format(want.affinity, a, sizeof(a)) : "nil",
                                 want.preferred, got.has_affinity ? tm_mask_format(got.affinity, b, sizeof(b)) : "nil",
                                 got.preferred);
        }
        return n;
}

static struct topologymanager policy(enum tm_policy p, size_t nodes, bool closest) {
        return (struct topologymanager) { .policy = p,
                                          .opts = { .prefer_closest_numa = closest, .max_allowable_numa_nodes = 8 },
                                          .numa = numa_nodes(nodes) };
}

/* TestPolicyBestEffortMerge, TestPolicyRestrictedMerge (four nodes) and their ClosestNUMA variants (eight) */
static void test_merge_best_effort_restricted(void **state) {
        enum tm_policy ps[] = { TM_POLICY_BEST_EFFORT, TM_POLICY_RESTRICTED };
        size_t total = 0;

        for (size_t i = 0; i < ELEMENTSOF(ps); i++) {
                struct topologymanager m = policy(ps[i], 4, false);
                total += run_cases(&m, tm_cases_common, ELEMENTSOF(tm_cases_common));
                total += run_cases(&m, tm_cases_best_effort, ELEMENTSOF(tm_cases_best_effort));
                total += run_cases(&m, tm_cases_no_policies, ELEMENTSOF(tm_cases_no_policies));
                m = policy(ps[i], 8, true);
                total += run_cases(&m, tm_cases_common, ELEMENTSOF(tm_cases_common));
                total += run_cases(&m, tm_cases_best_effort, ELEMENTSOF(tm_cases_best_effort));
                total += run_cases(&m, tm_cases_closest, ELEMENTSOF(tm_cases_closest));
        }
        print_message("%zu upstream merge cases\n", total);
}

/* TestPolicySingleNumaNodeMerge */
static void test_merge_single_numa_node(void **state) {
        struct topologymanager m = policy(TM_POLICY_SINGLE_NUMA_NODE, 4, false);
        size_t total = run_cases(&m, tm_cases_single_numa, ELEMENTSOF(tm_cases_single_numa));
        print_message("%zu upstream merge cases\n", total);
}

/* the admission results of the policies (canAdmitPodResult) and the none policy */
static void test_merge_admit(void **state) {
        struct topologymanager m = policy(TM_POLICY_BEST_EFFORT, 2, false);
        struct tm_hints h = {};
        struct tm_hint got;

        /* one resource that fits only on both nodes, not preferred */
        assert_int_equal(tm_hints_add(&h, &(struct tm_hint) { .affinity = 3, .has_affinity = true }, 1), 0);
        assert_true(tm_merge(&m, &h, &got));
        assert_int_equal(got.affinity, 3);
        assert_false(got.preferred);
        m.policy = TM_POLICY_RESTRICTED;
        assert_false(tm_merge(&m, &h, &got));
        m.policy = TM_POLICY_SINGLE_NUMA_NODE;
        assert_false(tm_merge(&m, &h, &got));
        assert_false(got.has_affinity);
        m.policy = TM_POLICY_NONE;
        assert_true(tm_merge(&m, &h, &got));
        assert_false(got.has_affinity);
        tm_hints_done(&h);
}

struct masks {
        uint64_t v[16];
        size_t n;
};

static void collect_mask(uint64_t mask, void *userdata) {
        struct masks *m = userdata;
        assert_true(m->n < ELEMENTSOF(m->v));
        m->v[m->n++] = mask;
}

/* IterateBitMasks: by size, then lexicographic */
static void test_iterate_masks(void **state) {
        int nodes[] = { 0, 1, 3 };
        struct masks m = {};
        const uint64_t want[] = { 0x1, 0x2, 0x8, 0x3, 0x9, 0xa, 0xb };
        char buf[64];

        tm_iterate_masks(nodes, 3, collect_mask, &m);
        assert_int_equal(m.n, ELEMENTSOF(want));
        for (size_t i = 0; i < m.n; i++)
                assert_int_equal(m.v[i], want[i]);
        assert_string_equal(tm_mask_format(0xb, buf, sizeof(buf)), "0-1,3");
        assert_true(tm_narrower(0x1, 0x2));
        assert_true(tm_narrower(0x4, 0x3));
        assert_false(tm_narrower(0x3, 0x4));
}

/* NewPolicyOptions (policy_options_test.go) and the configuration's names */
static void test_options(void **state) {
        struct tm_options o;
        enum tm_policy p;
        enum tm_scope s;
        struct ck_error *err = NULL;

        assert_int_equal(tm_parse_options(NULL, NULL, &o, NULL), 0);
        assert_false(o.prefer_closest_numa);
        assert_int_equal(o.max_allowable_numa_nodes, 8);
        assert_int_equal(tm_parse_options((char *[]) { (char *) "prefer-closest-numa-nodes",
                                                       (char *) "max-allowable-numa-nodes", NULL },
                                          (char *[]) { (char *) "true", (char *) "12", NULL }, &o, NULL),
                         0);
        assert_true(o.prefer_closest_numa);
        assert_int_equal(o.max_allowable_numa_nodes, 12);
        assert_int_equal(tm_parse_options((char *[]) { (char *) "prefer-closest-numa-nodes", NULL },
                                          (char *[]) { (char *) "yes", NULL }, &o, &err),
                         -EINVAL);
        assert_string_equal(ck_error_message(err), "bad value for option \"prefer-closest-numa-nodes\": "
                                                   "strconv.ParseBool: parsing \"yes\": invalid syntax");
        err = ck_error_free(err);
        assert_int_equal(tm_parse_options((char *[]) { (char *) "max-allowable-numa-nodes", NULL },
                                          (char *[]) { (char *) "4", NULL }, &o, &err),
                         -EINVAL);
        assert_string_equal(ck_error_message(err),
                            "the minimum value of \"max-allowable-numa-nodes\" should not be less than 8");
        err = ck_error_free(err);
        assert_int_equal(tm_parse_options((char *[]) { (char *) "bogus", NULL }, (char *[]) { (char *) "1", NULL }, &o,
                                          &err),
                         -EINVAL);
        assert_string_equal(ck_error_message(err), "unknown Topology Manager Policy option: \"bogus\"");
        err = ck_error_free(err);
        assert_int_equal(tm_parse_policy("single-numa-node", &p, NULL), 0);
        assert_int_equal(p, TM_POLICY_SINGLE_NUMA_NODE);
        assert_int_equal(tm_parse_policy("", &p, NULL), 0);
        assert_int_equal(p, TM_POLICY_NONE);
        assert_int_equal(tm_parse_policy("invalid-policy", &p, &err), -EINVAL);
        assert_string_equal(ck_error_message(err),
                            "invalid configuration: topologyManagerPolicy (--topology-manager-policy) "
                            "\"invalid-policy\" must be one of: [\"none\" \"best-effort\" \"restricted\" "
                            "\"single-numa-node\"]");
        err = ck_error_free(err);
        assert_int_equal(tm_parse_scope("pod", &s, NULL), 0);
        assert_int_equal(s, TM_SCOPE_POD);
        assert_int_equal(tm_parse_scope("node", &s, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "invalid configuration: topologyManagerScope "
                                                   "(--topology-manager-scope) \"node\" must be one of: "
                                                   "\"container\", or \"pod\"");
        err = ck_error_free(err);
}

/* the NUMA nodes and distances of the fake tree; NewManager's refusals */
static void test_numa_discover(void **state) {
        _cleanup_free_ char *root = fake_sysfs_new();
        struct tm_numa numa;
        struct topologymanager m;
        struct ck_error *err = NULL;

        assert_int_equal(tm_numa_discover(root, &numa, NULL), 0);
        assert_int_equal(numa.n, 4);
        assert_true(numa.has_distances);
        assert_int_equal(numa.distances[0][0], 10);
        assert_int_equal(numa.distances[0][1], 11);
        assert_int_equal(numa.distances[1][2], 21);
        assert_int_equal(numa.distances[3][2], 11);
        assert_int_equal(tm_init(&m,
                                 &(struct tm_config) {
                                         .policy = "restricted",
                                         .scope = "pod",
                                         .option_names = (char *[]) { (char *) "prefer-closest-numa-nodes", NULL },
                                         .option_values = (char *[]) { (char *) "true", NULL } },
                                 &numa, NULL),
                         0);
        assert_int_equal(m.policy, TM_POLICY_RESTRICTED);
        assert_int_equal(m.scope, TM_SCOPE_POD);
        assert_true(m.opts.prefer_closest_numa);
        /* more NUMA nodes than max-allowable-numa-nodes */
        numa = numa_nodes(8);
        numa.n = 8;
        {
                struct tm_numa big = numa;
                big.n = 9;
                big.nodes[8] = 8;
                assert_int_equal(tm_init(&m, &(struct tm_config) { .policy = "best-effort" }, &big, &err), -EOPNOTSUPP);
                assert_string_equal(ck_error_message(err), "unsupported on machines with more than 8 NUMA Nodes");
                err = ck_error_free(err);
                /* the none policy does not look */
                assert_int_equal(tm_init(&m, &(struct tm_config) { .policy = "none" }, &big, NULL), 0);
        }
        /* no node directory: one node 0 */
        fake_sysfs_rm(root);
        assert_int_equal(tm_numa_discover(root, &numa, NULL), 0);
        assert_int_equal(numa.n, 1);
        assert_int_equal(numa.nodes[0], 0);
}

/* ---------------------------------------------------------------- with the CPU manager */

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

static struct cpumanager *new_cpus(const char *sysfs) {
        struct cpu_topology *t = NULL;
        struct cpumanager *m = NULL;

        assert_int_equal(cputopo_discover(sysfs, &t, NULL), 0);
        assert_int_equal(cpumanager_new(&(struct cpumanager_config) { .policy = "static", .reserved_system_cpus = "0" },
                                        t, &m, NULL),
                         0);
        return m;
}

/* the static policy's GetTopologyHints (topology_hints_test.go's cases on the fake topology: 4 NUMA nodes of 8
 * CPUs, CPU 0 reserved) */
static void test_cpu_hints(void **state) {
        _cleanup_free_ char *sysfs = fake_sysfs_new();
        struct cpumanager *m = new_cpus(sysfs);
        struct pod *one = parse_pod("one", "  containers:\n" GU("a", "1")),
                   *eight = parse_pod("eight", "  containers:\n" GU("a", "8")),
                   *frac = parse_pod("frac", "  containers:\n" GU("a", "1500m")),
                   *pod = parse_pod("pod", "  containers:\n" GU("a", "4") GU("b", "4"));
        struct tm_hints h = {};

        /* 1 CPU: every set of nodes; the single nodes preferred */
        assert_int_equal(cpumanager_container_hints(m, one, &one->spec.containers[0], &h), 0);
        check_hints(&h, "{0 P} {1 P} {2 P} {3 P} {0-1} {0,2} {0,3} {1-2} {1,3} {2-3} {0-2} {0-1,3} {0,2-3} {1-3} "
                        "{0-3}");
        tm_hints_done(&h);
        /* 8 CPUs: node 0 has only 7 free (CPU 0 is reserved), still a node's size: the single nodes preferred */
        assert_int_equal(cpumanager_container_hints(m, eight, &eight->spec.containers[0], &h), 0);
        check_hints(&h, "{1 P} {2 P} {3 P} {0-1} {0,2} {0,3} {1-2} {1,3} {2-3} {0-2} {0-1,3} {0,2-3} {1-3} {0-3}");
        tm_hints_done(&h);
        /* no exclusive CPUs: no preference */
        assert_int_equal(cpumanager_container_hints(m, frac, &frac->spec.containers[0], &h), 0);
        check_hints(&h, "{nil P}");
        tm_hints_done(&h);
        /* the pod scope: the pod's 8 CPUs */
        assert_int_equal(cpumanager_pod_hints(m, pod, &h), 0);
        check_hints(&h, "{1 P} {2 P} {3 P} {0-1} {0,2} {0,3} {1-2} {1,3} {2-3} {0-2} {0-1,3} {0,2-3} {1-3} {0-3}");
        tm_hints_done(&h);
        pod_free(one);
        pod_free(eight);
        pod_free(frac);
        pod_free(pod);
        cpumanager_free(m);
        fake_sysfs_rm(sysfs);
}

static int p_container_hints(void *userdata, const struct pod *p, const struct container *c, struct tm_hints *acc) {
        return cpumanager_container_hints(userdata, p, c, acc);
}
static int p_pod_hints(void *userdata, const struct pod *p, struct tm_hints *acc) {
        return cpumanager_pod_hints(userdata, p, acc);
}
static int p_allocate(void *userdata, const struct pod *p, const struct container *c, const struct tm_hint *affinity,
                      struct ck_error **ret_error) {
        return cpumanager_allocate(userdata, p, c, affinity, ret_error);
}

static int admit(const struct topologymanager *tm, struct cpumanager *m, const struct pod *p,
                 struct ck_error **ret_error) {
        const struct tm_provider prov = { m, p_container_hints, p_pod_hints, p_allocate };
        struct cpumanager_mark mark = cpumanager_mark(m);
        int r = tm_admit(tm, p, &prov, 1, ret_error);
        if (r < 0)
                cpumanager_rollback(m, &mark);
        else
                cpumanager_commit(m, &mark);
        return r;
}

static void assert_cpus(struct cpumanager *m, const char *uid, const char *c, const char *want) {
        struct cpuset s = cpumanager_exclusive_cpus(m, uid, c);
        char buf[CPUSET_TEXT_MAX];
        assert_string_equal(cpuset_format(&s, buf, sizeof(buf)), want);
}

/* admission: the CPUs follow the merged affinity; what cannot be aligned is refused with TopologyAffinityError */
static void test_admit_with_cpus(void **state) {
        _cleanup_free_ char *sysfs = fake_sysfs_new();
        struct tm_numa numa;
        struct topologymanager tm;
        struct cpumanager *m = new_cpus(sysfs);
        struct pod *seven = parse_pod("seven", "  containers:\n" GU("a", "7")),
                   *two = parse_pod("two", "  containers:\n" GU("a", "2")),
                   *nine = parse_pod("nine", "  containers:\n" GU("a", "9")),
                   *podscope = parse_pod("ps", "  containers:\n" GU("a", "3") GU("b", "3"));
        _cleanup_ck_error_ struct ck_error *aerr = NULL;

        assert_int_equal(tm_numa_discover(sysfs, &numa, NULL), 0);
        assert_int_equal(tm_init(&tm, &(struct tm_config) { .policy = "single-numa-node" }, &numa, NULL), 0);
        /* 7 CPUs: the narrowest hint is one node; node 0 (7 free CPUs) is the lowest */
        assert_int_equal(admit(&tm, m, seven, &aerr), 0);
        assert_cpus(m, "seven", "a", "1-3,16-19");
        /* 2 CPUs: node 0 is full, node 1 */
        assert_int_equal(admit(&tm, m, two, &aerr), 0);
        assert_cpus(m, "two", "a", "4,20");
        /* 9 CPUs do not fit on one node: refused, nothing kept */
        assert_int_equal(admit(&tm, m, nine, &aerr), -ENOSPC);
        assert_string_equal(ck_error_reason(aerr), "TopologyAffinityError");
        assert_string_equal(ck_error_message(aerr), "Resources cannot be allocated with Topology locality");
        aerr = ck_error_free(aerr);
        assert_int_equal(cpumanager_n_entries(m), 2);
        /* best-effort admits them across two nodes, the aligned part first */
        tm.policy = TM_POLICY_BEST_EFFORT;
        assert_int_equal(admit(&tm, m, nine, &aerr), 0);
        {
                struct cpuset s = cpumanager_exclusive_cpus(m, "nine", "a");
                assert_int_equal(cpuset_count(&s), 9);
        }
        /* the pod scope: both containers on one node (6 CPUs on node 3 or what is left of node 1 / 2) */
        tm.policy = TM_POLICY_SINGLE_NUMA_NODE;
        tm.scope = TM_SCOPE_POD;
        assert_int_equal(admit(&tm, m, podscope, &aerr), 0);
        {
                struct cpuset a = cpumanager_exclusive_cpus(m, "ps", "a"), b = cpumanager_exclusive_cpus(m, "ps", "b"),
                              u = cpuset_union(&a, &b);
                const struct cpu_topology *t = cpumanager_topology(m);
                int node = -1;
                assert_int_equal(cpuset_count(&u), 6);
                CPUSET_FOREACH(c, &u) {
                        if (node < 0)
                                node = cputopo_cpu(t, c)->numa;
                        assert_int_equal(cputopo_cpu(t, c)->numa, node);
                }
        }
        pod_free(seven);
        pod_free(two);
        pod_free(nine);
        pod_free(podscope);
        cpumanager_free(m);
        fake_sysfs_rm(sysfs);
}

/* the device manager's hints for one resource (generateDeviceTopologyHints, on the devices' NUMA nodes) */
static void check_device_hints(const int64_t *all, size_t n_all, const int64_t *usable, size_t n_usable, int request,
                               const char *want) {
        struct tm_hints h = {};

        assert_int_equal(tm_device_hints(all, n_all, usable, n_usable, request, &h), 0);
        check_hints(&h, want);
        tm_hints_done(&h);
}

static void test_device_hints(void **state) {
        static const int64_t two_two[] = { 0, 0, 1, 1 }, one_in_use[] = { 0, 1, 1 }, one_each[] = { 0, 1 },
                             none[] = { -1, -1 };

        check_device_hints(two_two, 4, two_two, 4, 1, "{0 P} {1 P} {0-1}");
        /* a device of node 0 in use: node 1 alone can serve 2 */
        check_device_hints(two_two, 4, one_in_use, 3, 2, "{1 P} {0-1}");
        /* 3 need both nodes: the narrowest possible, preferred */
        check_device_hints(two_two, 4, two_two, 4, 3, "{0-1 P}");
        /* only both nodes together serve 2 though one node could hold 2: not preferred */
        check_device_hints(two_two, 4, one_each, 2, 2, "{0-1}");
        /* more than there are: no hint at all */
        check_device_hints(two_two, 4, one_each, 2, 3, "{nil}");
        /* no NUMA node on any device: no preference */
        check_device_hints(none, 2, none, 2, 1, "{nil P}");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_merge_best_effort_restricted),
                cmocka_unit_test(test_merge_single_numa_node),
                cmocka_unit_test(test_merge_admit),
                cmocka_unit_test(test_iterate_masks),
                cmocka_unit_test(test_options),
                cmocka_unit_test(test_numa_discover),
                cmocka_unit_test(test_cpu_hints),
                cmocka_unit_test(test_device_hints),
                cmocka_unit_test(test_admit_with_cpus),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
