/* SPDX-License-Identifier: Apache-2.0 */
/* The static CPU manager in the sync core, on the fake runtime and a fake sysfs tree (2 sockets x 2 NUMA nodes x
 * 4 cores x 2 threads): a Guaranteed pod's container is created with its exclusive CPUs, a BestEffort one with
 * the shared pool; when the Guaranteed pod goes, the reconcile pass (cpuManagerReconcilePeriod, on the virtual
 * clock) gives the BestEffort container the whole pool back through UpdateContainerResources; the state file
 * holds the assignment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "cm/fake_sysfs.h"
#include "fake/test_kubelet.h"
#include "kubelet/kubelet-internal.h"

#define MIN_USEC (60 * USEC_PER_SEC)

/* stderr into a file while the kubelet runs (its "Pod admission denied" line); restored by stderr_restore, which
 * returns what was logged and echoes it to the real stderr */
static int stderr_capture(const char *path) {
        int saved, fd;

        fflush(stderr);
        saved = dup(STDERR_FILENO);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0 && saved >= 0);
        assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        close(fd);
        return saved;
}

static char *stderr_restore(const char *path, int saved) {
        char *data = NULL;

        fflush(stderr);
        assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
        close(saved);
        assert_int_equal(read_full_file(path, 64 * 1024 * 1024, &data, NULL), 0);
        fputs(data, stderr);
        return data;
}

static const char *cpuset_of(struct test_kubelet *t, const char *uid, const char *name) {
        const struct fake_container *c = fake_runtime_find(t->rt, uid, name);
        assert_non_null(c);
        assert_non_null(c->config->linux);
        assert_non_null(c->config->linux->resources);
        return c->config->linux->resources->cpuset_cpus;
}

struct want_cpuset {
        struct test_kubelet *t;
        const char *uid, *name, *cpus;
};

static bool has_cpuset(void *userdata) {
        struct want_cpuset *w = userdata;
        const struct fake_container *c = fake_runtime_find(w->t->rt, w->uid, w->name);
        return c && c->config->linux && c->config->linux->resources &&
               streq_ptr(c->config->linux->resources->cpuset_cpus, w->cpus);
}

#define GU_POD                                                                       \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: gu, namespace: ns1, uid: gu}\n" \
        "spec:\n  containers:\n  - name: a\n    image: " TK_IMAGE "\n"               \
        "    resources: {limits: {cpu: \"1\", memory: 64Mi}, requests: {cpu: \"1\", memory: 64Mi}}\n"
#define BE_POD                                                                       \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: be, namespace: ns1, uid: be}\n" \
        "spec:\n  containers:\n  - name: b\n    image: " TK_IMAGE "\n"

static void test_static_policy_cpusets(void **state) {
        struct test_kubelet *t = tk_new();
        _cleanup_free_ char *sysfs = NULL, *statefile = NULL, *text = NULL;
        size_t size;

        assert_true(asprintf(&sysfs, "%s/sys", t->dir) > 0);
        fake_sysfs_make(sysfs);
        t->opts.sysfs_root = strdup(sysfs);
        t->opts.cpu_manager_policy = strdup("static");
        t->opts.reserved_system_cpus = strdup("0");
        tk_set_pods(t, GU_POD "---\n" BE_POD);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "gu", .container = "a" }), MIN_USEC);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "be", .container = "b" }), MIN_USEC);

        /* CPU 0 is reserved: its sibling 16 is the first CPU the packed order gives away */
        assert_string_equal(cpuset_of(t, "gu", "a"), "16");
        /* created with the pool of its admission time; at the latest after a reconcile period, the pool without 16 */
        tk_wait(t, has_cpuset, (&(struct want_cpuset) { t, "be", "b", "0-15,17-31" }), MIN_USEC);
        assert_true(asprintf(&statefile, "%s/root/cpu_manager_state", t->dir) > 0);
        assert_int_equal(read_full_file(statefile, 1 << 20, &text, &size), 0);
        assert_non_null(strstr(text, "\"entries\":{\"gu\":{\"a\":\"16\"}}"));
        /* the metrics: one pinning request, one CPU exclusive (on NUMA node 0), the shared pool less the reserved
         * CPU and it; both pods through the topology manager's admission */
        {
                struct kubelet_counts n;
                kubelet_counts(t->k, &n);
                assert_int_equal(n.cm->cpu_pinning_requests, 1);
                assert_int_equal(n.cm->cpu_pinning_errors, 0);
                assert_int_equal(n.cm->exclusive_cpus, 1);
                assert_int_equal(n.cm->shared_pool_millicores, 30000);
                assert_int_equal(n.cm->n_numa, 4);
                assert_int_equal(n.cm->numa_ids[0], 0);
                assert_int_equal(n.cm->numa_cpus[0], 1);
                assert_int_equal(n.cm->numa_cpus[1], 0);
                assert_int_equal(n.cm->tm_admission_requests, 2);
                assert_int_equal(n.cm->tm_admission_duration_ms.count, 2);
                assert_int_equal(n.cm->tm_admission_errors, 0);
                assert_int_equal(n.cm->memory_pinning_requests, 0); /* the memory manager's None policy */
                /* a single L3 per NUMA node: the one CPU is aligned to it; the static policy's series exist */
                assert_int_equal(n.cm->aligned[CM_ALIGN_SCOPE_CONTAINER][CM_ALIGN_UNCORE_CACHE], 1);
                assert_true(n.cm->has_aligned_failures[CM_ALIGN_SCOPE_CONTAINER][CM_ALIGN_PHYSICAL_CPU]);
                assert_true(n.cm->has_aligned_failures[CM_ALIGN_SCOPE_POD][CM_ALIGN_NUMA_NODE]);
        }

        /* the Guaranteed pod goes: its CPU returns to the pool, and the BestEffort container is updated */
        tk_set_pods(t, BE_POD);
        tk_wait(t, tk_pod_gone, (&(struct tk_want) { .t = t, .uid = "gu" }), MIN_USEC);
        tk_wait(t, has_cpuset, (&(struct want_cpuset) { t, "be", "b", "0-31" }), MIN_USEC);
        assert_non_null(fake_runtime_last(t->rt, "UpdateContainerResources", NULL));
        {
                struct kubelet_counts n;
                kubelet_counts(t->k, &n);
                assert_int_equal(n.cm->exclusive_cpus, 0);
                assert_int_equal(n.cm->shared_pool_millicores, 31000);
                assert_int_equal(n.cm->numa_cpus[0], 0);
        }
        free(text);
        text = NULL;
        assert_int_equal(read_full_file(statefile, 1 << 20, &text, &size), 0);
        assert_null(strstr(text, "\"entries\""));
        tk_free(t);
}

/* without a policy (none, the default): no cpuset is sent */
static void test_none_policy(void **state) {
        struct test_kubelet *t = tk_new();

        tk_set_pods(t, GU_POD);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "gu", .container = "a" }), MIN_USEC);
        {
                const char *cpus = cpuset_of(t, "gu", "a");
                struct kubelet_counts n;
                assert_true(!cpus || !*cpus);
                /* the metrics: admitted through the topology manager, nothing pinned, no CPU gauges */
                kubelet_counts(t->k, &n);
                assert_int_equal(n.cm->tm_admission_requests, 1);
                assert_int_equal(n.cm->cpu_pinning_requests, 0);
                assert_int_equal(n.cm->shared_pool_millicores, 0);
                assert_int_equal(n.cm->n_numa, 0);
                assert_false(n.cm->has_aligned[CM_ALIGN_SCOPE_CONTAINER][CM_ALIGN_PHYSICAL_CPU]);
        }
        tk_free(t);
}

/* a Guaranteed container that finished for good (restartPolicy Never) gives its CPU back while its pod stays */
static void test_finished_container_released(void **state) {
        struct test_kubelet *t = tk_new();
        _cleanup_free_ char *sysfs = NULL;

        assert_true(asprintf(&sysfs, "%s/sys", t->dir) > 0);
        fake_sysfs_make(sysfs);
        t->opts.sysfs_root = strdup(sysfs);
        t->opts.cpu_manager_policy = strdup("static");
        t->opts.reserved_system_cpus = strdup("0");
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "once", 5 * USEC_PER_SEC, 0), 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: job, namespace: ns1, uid: job}\n"
                       "spec:\n  restartPolicy: Never\n  containers:\n  - name: once\n    image: " TK_IMAGE "\n"
                       "    resources: {limits: {cpu: \"1\", memory: 64Mi}, requests: {cpu: \"1\", memory: 64Mi}}\n"
                       "---\n" BE_POD);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "be", .container = "b" }), MIN_USEC);
        assert_string_equal(cpuset_of(t, "job", "once"), "16");
        tk_wait(t, has_cpuset, (&(struct want_cpuset) { t, "be", "b", "0-15,17-31" }), MIN_USEC);
        /* it exits 0 after 5 s and is not restarted: CPU 16 returns to the pool */
        tk_wait(t, has_cpuset, (&(struct want_cpuset) { t, "be", "b", "0-31" }), MIN_USEC);
        assert_int_equal(fake_runtime_count_instances(t->rt, "job", "once", -1), 1);
        tk_free(t);
}

/* a sysfs that cannot be read: the none policy starts all the same, the static one refuses the start */
static void test_unreadable_sysfs(void **state) {
        struct test_kubelet *t = tk_new();
        struct kubelet *k = NULL;

        t->opts.sysfs_root = strdup("/nonexistent-sysfs");
        tk_set_pods(t, GU_POD);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "gu", .container = "a" }), MIN_USEC);
        tk_stop(t);

        t->opts.cpu_manager_policy = strdup("static");
        t->opts.reserved_system_cpus = strdup("0");
        assert_int_equal(kubelet_new(t->base, &t->opts, &k), 0);
        {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                assert_true(kubelet_start(k, &err) < 0);
                /* the reason travels up to the one who logs it */
                assert_non_null(strstr(ck_error_message(err), "failed to initialize cpu manager"));
        }
        kubelet_free(k);
        tk_free(t);
}

/* single-numa-node with the static CPU manager and the Static memory manager: the Guaranteed container's CPU and
 * memory on one NUMA node (cpuset_cpus and cpuset_mems in its CRI config); a pod whose memory fits on no single
 * node (15.5Gi; each has 15Gi allocatable) is refused and holds nothing; a restart keeps the assignment */
static void test_topology_and_memory(void **state) {
        struct test_kubelet *t = tk_new();
        _cleanup_free_ char *sysfs = NULL, *statefile = NULL, *text = NULL, *log_path = NULL, *logged = NULL;
        const struct fake_container *c;
        int saved_stderr;

        assert_true(asprintf(&sysfs, "%s/sys", t->dir) > 0);
        fake_sysfs_make(sysfs);
        t->opts.sysfs_root = strdup(sysfs);
        t->opts.cpu_manager_policy = strdup("static");
        t->opts.reserved_system_cpus = strdup("0");
        t->opts.topology_manager_policy = strdup("single-numa-node");
        t->opts.memory_manager_policy = strdup("Static");
        t->opts.reserved_memory = strdup("0:memory=100Mi");
        free(t->opts.eviction_hard);
        t->opts.eviction_hard = strdup("memory.available=100Mi");
        tk_set_pods(t, GU_POD "---\n"
                              "apiVersion: v1\nkind: Pod\nmetadata: {name: wide, namespace: ns1, uid: wide}\n"
                              "spec:\n  containers:\n  - name: w\n    image: " TK_IMAGE "\n"
                              "    resources: {limits: {cpu: \"1\", memory: 15872Mi}, requests: {cpu: \"1\", "
                              "memory: 15872Mi}}\n");
        assert_true(asprintf(&log_path, "%s/kubelet.log", t->dir) > 0);
        saved_stderr = stderr_capture(log_path);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "gu", .container = "a" }), MIN_USEC);
        logged = stderr_restore(log_path, saved_stderr);
        /* the refusal's reason and message, as the pod's status would get them */
        assert_non_null(strstr(logged, "podUID=\"wide\" reason=\"TopologyAffinityError\" message=\"Resources cannot be "
                                       "allocated with Topology locality\""));
        c = fake_runtime_find(t->rt, "gu", "a");
        assert_string_equal(c->config->linux->resources->cpuset_cpus, "16");
        assert_string_equal(c->config->linux->resources->cpuset_mems, "0");
        assert_null(fake_runtime_find(t->rt, "wide", "w"));
        assert_true(strv_contains(t->k->rejected, "wide"));
        assert_true(asprintf(&statefile, "%s/root/memory_manager_state", t->dir) > 0);
        assert_int_equal(read_full_file(statefile, 1 << 20, &text, NULL), 0);
        assert_non_null(strstr(text, "\"entries\":{\"gu\":{\"a\":[{\"numaAffinity\":[0],\"type\":\"memory\","
                                     "\"size\":67108864}]}}"));
        tk_stop(t);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "gu", .container = "a" }), MIN_USEC);
        free(text);
        text = NULL;
        assert_int_equal(read_full_file(statefile, 1 << 20, &text, NULL), 0);
        assert_non_null(strstr(text, "\"numberOfAssignments\":1"));
        assert_null(strstr(text, "\"numberOfAssignments\":2"));
        assert_int_equal(fake_runtime_count_instances(t->rt, "gu", "a", -1), 1);
        tk_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_static_policy_cpusets),       cmocka_unit_test(test_none_policy),
                cmocka_unit_test(test_finished_container_released), cmocka_unit_test(test_unreadable_sysfs),
                cmocka_unit_test(test_topology_and_memory),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
