/* SPDX-License-Identifier: Apache-2.0 */
/* The eviction manager's pure parts: threshold parsing, signals from a Summary, thresholds met with grace and
 * transition periods, ranking, messages, local storage limits and admission. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include <event2/event.h>

#include "apis/manifest.h"
#include "basic/error.h"
#include "eviction/helpers.h"
#include "eviction/threshold_notifier.h"
#include "../stats/summary_from_json.h"

#define MIB (1024LL * 1024)
#define SEC UINT64_C(1000000)

/* an API pod (static pods are critical and never evicted) */
static struct pod *parse_pod(const char *name, const char *spec) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  uid: uid-%s\n"
                             "  annotations: {kubernetes.io/config.source: api}\nspec:\n%s",
                             name, name, spec) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static void parse_ok(const char *enforce, const char *hard, const char *soft, const char *grace, const char *reclaim,
                     struct eviction_threshold **t, size_t *n) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        if (eviction_parse_thresholds(enforce, hard, soft, grace, reclaim, t, n, &err) < 0)
                fail_msg("parse failed: %s", ck_error_message(err));
}

static void parse_err(const char *hard, const char *soft, const char *grace, const char *reclaim, const char *want) {
        struct eviction_threshold *t = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        size_t n = 0;

        assert_int_equal(eviction_parse_thresholds("", hard, soft, grace, reclaim, &t, &n, &err), -EINVAL);
        assert_non_null(err);
        assert_string_equal(ck_error_message(err), want);
}

static void test_parse_defaults(void **state) {
        struct eviction_threshold *t = NULL;
        size_t n = 0;

        parse_ok("pods", "memory.available=100Mi,nodefs.available=10%,imagefs.available=15%,nodefs.inodesFree=5%", "",
                 "", "", &t, &n);
        assert_int_equal(n, 5); /* the allocatable copy of the memory threshold last */
        assert_int_equal(t[0].signal, EVICTION_SIGNAL_MEMORY_AVAILABLE);
        assert_false(t[0].value.is_percentage);
        assert_int_equal(t[0].value.quantity, 100 * MIB);
        assert_string_equal(t[0].value.quantity_str, "100Mi");
        assert_int_equal(t[0].grace_period_usec, 0);
        assert_int_equal(t[1].signal, EVICTION_SIGNAL_NODEFS_AVAILABLE);
        assert_true(t[1].value.is_percentage);
        /* float32 as upstream: 10% of 1000 is 100 */
        assert_int_equal(eviction_value_quantity(&t[1].value, 1000), 100);
        assert_int_equal(eviction_value_quantity(&t[3].value, 200000), 10000);
        assert_int_equal(t[4].signal, EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE);
        assert_int_equal(t[4].value.quantity, 100 * MIB);
        eviction_thresholds_free(t, n);

        /* without "pods" enforced there is no allocatable copy; 0% and 100% are ignored */
        parse_ok("", "memory.available=1Gi,nodefs.available=0%,imagefs.available=100%", "", "", "", &t, &n);
        assert_int_equal(n, 1);
        eviction_thresholds_free(t, n);
}

static void test_parse_soft_and_reclaim(void **state) {
        struct eviction_threshold *t = NULL;
        _cleanup_free_ char *f = NULL;
        size_t n = 0;

        parse_ok("pods", "memory.available=200Mi", "memory.available=1.5Gi,nodefs.available=20%",
                 "memory.available=1m30s,nodefs.available=30s,pid.available=1s",
                 "memory.available=0.5Gi,nodefs.available=5%", &t, &n);
        assert_int_equal(n, 4);
        assert_int_equal(t[1].signal, EVICTION_SIGNAL_MEMORY_AVAILABLE);
        assert_int_equal(t[1].grace_period_usec, 90 * SEC);
        assert_string_equal(t[1].value.quantity_str, "1536Mi");
        assert_int_equal(t[2].grace_period_usec, 30 * SEC);
        assert_true(t[0].has_min_reclaim);
        assert_int_equal(t[0].min_reclaim.quantity, 512 * MIB);
        assert_true(t[2].has_min_reclaim);
        assert_true(t[2].min_reclaim.is_percentage);
        /* the allocatable copy carries the hard threshold's minimum reclaim */
        assert_int_equal(t[3].signal, EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE);
        assert_int_equal(t[3].grace_period_usec, 0);
        assert_true(t[3].has_min_reclaim);
        f = eviction_threshold_format(&t[1]);
        assert_string_equal(f, "threshold(signal=memory.available, value=1536Mi, gracePeriod=1m30s)");
        eviction_thresholds_free(t, n);
}

static void test_parse_errors(void **state) {
        parse_err("memory.foo=1Gi", "", "", "", "unsupported eviction signal memory.foo");
        parse_err("memory.available=0", "", "", "", "eviction threshold memory.available must be positive: 0");
        parse_err("memory.available=-1Gi", "", "", "", "eviction threshold memory.available must be positive: -1Gi");
        parse_err("memory.available=abc", "", "", "",
                  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
        parse_err("nodefs.available=x%", "", "", "", "strconv.ParseFloat: parsing \"x\": invalid syntax");
        parse_err("nodefs.available=-5%", "", "", "",
                  "eviction percentage threshold nodefs.available must be >= 0%: -5%");
        parse_err("", "memory.available=1Gi", "", "",
                  "grace period must be specified for the soft eviction threshold memory.available");
        parse_err("", "memory.available=1Gi", "memory.available=-1s", "",
                  "invalid eviction grace period specified: -1s, must be a positive value");
        parse_err("", "", "foo=1s", "", "unsupported eviction signal foo");
        parse_err("", "", "", "nodefs.available=0%",
                  "eviction percentage minimum reclaim nodefs.available must be positive: 0%");
        parse_err("", "", "", "memory.available=-1",
                  "negative eviction minimum reclaim specified for memory.available");
}

static const char *SUMMARY =
        "{\"node\": {\"nodeName\": \"n\","
        " \"systemContainers\": [{\"name\": \"kubelet\"},"
        "   {\"name\": \"pods\", \"memory\": {\"availableBytes\": 314572800, \"workingSetBytes\": 209715200}}],"
        " \"memory\": {\"availableBytes\": 1073741824, \"workingSetBytes\": 3221225472, \"usageBytes\": 4000000000},"
        " \"fs\": {\"availableBytes\": 1000, \"capacityBytes\": 10000, \"inodesFree\": 50, \"inodes\": 2000},"
        " \"runtime\": {\"imageFs\": {\"availableBytes\": 3000, \"capacityBytes\": 10000}},"
        " \"rlimit\": {\"maxpid\": 1000, \"curproc\": 990}},"
        " \"pods\": ["
        "  {\"podRef\": {\"name\": \"b\", \"namespace\": \"default\", \"uid\": \"uid-b\"},"
        "   \"memory\": {\"workingSetBytes\": 104857600}, \"process_stats\": {\"process_count\": 3},"
        "   \"containers\": [{\"name\": \"c\", \"memory\": {\"workingSetBytes\": 104857600},"
        "     \"rootfs\": {\"usedBytes\": 4096, \"inodesUsed\": 4}, \"logs\": {\"usedBytes\": 8192, \"inodesUsed\": 2}}],"
        "   \"volume\": [{\"name\": \"scratch\", \"usedBytes\": 2097152, \"inodesUsed\": 3}]},"
        "  {\"podRef\": {\"name\": \"a\", \"namespace\": \"default\", \"uid\": \"uid-a\"},"
        "   \"memory\": {\"workingSetBytes\": 10485760}}"
        " ]}";

static void load_stats(struct eviction_stats *st, uint64_t at) {
        json_error_t e;
        json_t *j = json_loads(SUMMARY, 0, &e);
        struct stats_summary *s;
        assert_non_null(j);
        s = summary_from_json(j);
        assert_int_equal(eviction_stats_from_summary(s, at, st), 0);
        stats_summary_free(s);
        json_decref(j);
}

static void test_signals(void **state) {
        struct eviction_stats st;
        const struct eviction_pod_stats *p;

        load_stats(&st, 5);
        assert_true(st.obs.s[EVICTION_SIGNAL_MEMORY_AVAILABLE].present);
        assert_int_equal(st.obs.s[EVICTION_SIGNAL_MEMORY_AVAILABLE].available, 1073741824);
        assert_int_equal(st.obs.s[EVICTION_SIGNAL_MEMORY_AVAILABLE].capacity, 1073741824LL + 3221225472LL);
        assert_int_equal(st.obs.s[EVICTION_SIGNAL_MEMORY_AVAILABLE].time_usec, 5);
        assert_int_equal(st.obs.s[EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].available, 300 * MIB);
        assert_int_equal(st.obs.s[EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE].capacity, 500 * MIB);
        assert_int_equal(st.obs.s[EVICTION_SIGNAL_NODEFS_AVAILABLE].available, 1000);
        assert_int_equal(st.obs.s[EVICTION_SIGNAL_NODEFS_INODES_FREE].capacity, 2000);
        assert_int_equal(st.obs.s[EVICTION_SIGNAL_IMAGEFS_AVAILABLE].available, 3000);
        assert_false(st.obs.s[EVICTION_SIGNAL_IMAGEFS_INODES_FREE].present); /* the runtime gave no inodes */
        assert_int_equal(st.obs.s[EVICTION_SIGNAL_PID_AVAILABLE].available, 10);
        assert_int_equal(st.n_pods, 2);
        p = eviction_stats_find_pod(&st, "uid-b");
        assert_non_null(p);
        assert_int_equal(p->working_set_bytes, 100 * MIB);
        assert_int_equal(p->process_count, 3);
        assert_int_equal(p->n_containers, 1);
        assert_int_equal(p->containers[0].rootfs.used_bytes, 4096);
        assert_int_equal(p->containers[0].logs.inodes_used, 2);
        assert_int_equal(p->n_volumes, 1);
        assert_int_equal(p->volumes[0].fs.used_bytes, 2 * MIB);
        assert_null(eviction_stats_find_pod(&st, "uid-x"));
        eviction_stats_done(&st);
}

static void test_thresholds_and_conditions(void **state) {
        struct eviction_threshold *t = NULL;
        struct eviction_state es = {};
        struct eviction_decision d;
        struct eviction_stats st;
        size_t n = 0;

        /* nodefs.available is at 10% (1000 of 10000): a hard threshold at 15% is met, a soft one at 12% only after
         * its grace period; pid.available (10 of 1000) is below 5% */
        parse_ok("", "nodefs.available=15%,pid.available=5%", "memory.available=2Gi", "memory.available=10s", "", &t,
                 &n);
        assert_int_equal(n, 3);
        load_stats(&st, 1 * SEC);
        assert_int_equal(eviction_thresholds_met(t, n, 7, &st.obs, false), 7);

        eviction_synchronize(t, n, 5 * SEC, &es, &st.obs, 100 * SEC, &d);
        assert_int_equal(d.conditions, EVICTION_MEMORY_PRESSURE | EVICTION_DISK_PRESSURE | EVICTION_PID_PRESSURE);
        assert_int_equal(d.met, 3); /* the soft one waits for its grace period */
        assert_true(d.reclaim);
        assert_int_equal(d.threshold, 0);
        assert_int_equal(d.resource, EVICTION_RESOURCE_EPHEMERAL_STORAGE);

        /* the same stats again: nothing new to act on */
        eviction_synchronize(t, n, 5 * SEC, &es, &st.obs, 105 * SEC, &d);
        assert_int_equal(d.met, 0);
        assert_false(d.reclaim);
        eviction_stats_done(&st);

        /* 10 s later the soft memory threshold's grace is over: memory goes first */
        load_stats(&st, 2 * SEC);
        eviction_synchronize(t, n, 5 * SEC, &es, &st.obs, 110 * SEC, &d);
        assert_int_equal(d.met, 7);
        assert_true(d.reclaim);
        assert_int_equal(d.threshold, 2);
        assert_int_equal(d.resource, EVICTION_RESOURCE_MEMORY);
        eviction_stats_done(&st);

        /* disk and pid pressure go away, memory stays until 114: each condition stays for the transition period
         * after it was last observed */
        load_stats(&st, 3 * SEC);
        st.obs.s[EVICTION_SIGNAL_NODEFS_AVAILABLE].available = 9000;
        st.obs.s[EVICTION_SIGNAL_PID_AVAILABLE].available = 900;
        eviction_synchronize(t, n, 5 * SEC, &es, &st.obs, 112 * SEC, &d);
        assert_int_equal(d.met, 4);
        assert_int_equal(d.conditions, EVICTION_MEMORY_PRESSURE | EVICTION_DISK_PRESSURE | EVICTION_PID_PRESSURE);
        st.obs.s[EVICTION_SIGNAL_MEMORY_AVAILABLE].available = 8LL << 30;
        st.obs.s[EVICTION_SIGNAL_MEMORY_AVAILABLE].time_usec = 4 * SEC;
        eviction_synchronize(t, n, 5 * SEC, &es, &st.obs, 114 * SEC, &d);
        assert_int_equal(d.met, 0);
        assert_int_equal(d.conditions, EVICTION_MEMORY_PRESSURE | EVICTION_DISK_PRESSURE | EVICTION_PID_PRESSURE);
        eviction_synchronize(t, n, 5 * SEC, &es, &st.obs, 115 * SEC, &d);
        assert_int_equal(d.conditions, EVICTION_MEMORY_PRESSURE); /* 5 s after 110: disk and pid gone */
        eviction_synchronize(t, n, 5 * SEC, &es, &st.obs, 117 * SEC, &d);
        assert_int_equal(d.conditions, 0);
        eviction_stats_done(&st);
        eviction_thresholds_free(t, n);
}

static void test_min_reclaim(void **state) {
        struct eviction_threshold *t = NULL;
        struct eviction_state es = {};
        struct eviction_decision d;
        struct eviction_stats st;
        size_t n = 0;

        /* nodefs.available<15% with a 10% minimum reclaim: once met it stays met until 25% is available */
        parse_ok("", "nodefs.available=15%", "", "", "nodefs.available=10%", &t, &n);
        load_stats(&st, 1);
        eviction_synchronize(t, n, 0, &es, &st.obs, 10 * SEC, &d);
        assert_int_equal(d.met, 1);
        st.obs.s[EVICTION_SIGNAL_NODEFS_AVAILABLE].available = 2000; /* 20%: above the threshold, below it + minimum */
        st.obs.s[EVICTION_SIGNAL_NODEFS_AVAILABLE].time_usec = 2;
        eviction_synchronize(t, n, 0, &es, &st.obs, 11 * SEC, &d);
        assert_int_equal(d.met, 1);
        st.obs.s[EVICTION_SIGNAL_NODEFS_AVAILABLE].available = 2600;
        st.obs.s[EVICTION_SIGNAL_NODEFS_AVAILABLE].time_usec = 3;
        eviction_synchronize(t, n, 0, &es, &st.obs, 12 * SEC, &d);
        assert_int_equal(d.met, 0);
        assert_int_equal(d.conditions, 0); /* a zero transition period reports nothing, as upstream */
        eviction_stats_done(&st);
        eviction_thresholds_free(t, n);
}

static void test_rank_memory(void **state) {
        struct pod *be = parse_pod("be", "  containers:\n  - {name: c, image: i}\n");
        struct pod *burst =
                parse_pod("burst", "  containers:\n  - {name: c, image: i, resources: {requests: {memory: 50Mi}}}\n");
        struct pod *guar = parse_pod("guar",
                                     "  priority: 1000\n  containers:\n"
                                     "  - {name: c, image: i, resources: {limits: {memory: 200Mi, cpu: 100m}}}\n");
        struct pod *hi = parse_pod("hi", "  priority: 5000\n  containers:\n  - {name: c, image: i}\n");
        struct pod *nostats = parse_pod("nostats", "  containers:\n  - {name: c, image: i}\n");
        struct eviction_pod_stats s_be = { .uid = "uid-be", .has_memory = true, .working_set_bytes = 10 * MIB };
        struct eviction_pod_stats s_burst = { .uid = "uid-burst", .has_memory = true, .working_set_bytes = 300 * MIB };
        struct eviction_pod_stats s_guar = { .uid = "uid-guar", .has_memory = true, .working_set_bytes = 150 * MIB };
        struct eviction_pod_stats s_hi = { .uid = "uid-hi", .has_memory = true, .working_set_bytes = 900 * MIB };
        struct eviction_candidate c[] = {
                { guar, &s_guar }, { hi, &s_hi }, { be, &s_be }, { burst, &s_burst }, { nostats, NULL },
        };

        eviction_rank(EVICTION_SIGNAL_MEMORY_AVAILABLE, false, c, ELEMENTSOF(c));
        /* no stats first; then those above their requests by priority (be and burst at 0, then hi), the larger
         * excess first among equals; the Guaranteed pod within its request last */
        assert_string_equal(c[0].pod->name, "nostats");
        assert_string_equal(c[1].pod->name, "burst"); /* 250Mi above its request */
        assert_string_equal(c[2].pod->name, "be");    /* 10Mi above */
        assert_string_equal(c[3].pod->name, "hi");
        assert_string_equal(c[4].pod->name, "guar");
        pod_free(be);
        pod_free(burst);
        pod_free(guar);
        pod_free(hi);
        pod_free(nostats);
}

static void test_rank_disk_and_pids(void **state) {
        struct pod *logs = parse_pod("logs", "  containers:\n  - {name: c, image: i}\n");
        struct pod *vol = parse_pod("vol",
                                    "  volumes:\n  - {name: scratch, emptyDir: {}}\n  containers:\n"
                                    "  - {name: c, image: i, resources: {requests: {ephemeral-storage: 100Mi}}}\n");
        struct eviction_container_stats cl = { .name = "c",
                                               .rootfs = { true, 1 * MIB, true, 10 },
                                               .logs = { true, 50 * MIB, true, 5 } };
        struct eviction_container_stats cv = { .name = "c", .rootfs = { true, 1 * MIB, true, 10 } };
        struct eviction_volume_stats vv = { .name = "scratch", .fs = { true, 120 * MIB, true, 1000 } };
        struct eviction_pod_stats s_logs = {
                .uid = "uid-logs", .containers = &cl, .n_containers = 1, .has_process_count = true, .process_count = 2
        };
        struct eviction_pod_stats s_vol = { .uid = "uid-vol",
                                            .containers = &cv,
                                            .n_containers = 1,
                                            .volumes = &vv,
                                            .n_volumes = 1,
                                            .has_process_count = true,
                                            .process_count = 40 };
        struct eviction_candidate c[] = { { vol, &s_vol }, { logs, &s_logs } };

        /* both exceed their requests (0 and 100Mi); above the request: logs 51Mi, vol 21Mi */
        eviction_rank(EVICTION_SIGNAL_NODEFS_AVAILABLE, false, c, 2);
        assert_string_equal(c[0].pod->name, "logs");
        /* with a dedicated image filesystem, imagefs counts the writable layers only: both 1Mi, vol within its
         * request goes last */
        eviction_rank(EVICTION_SIGNAL_IMAGEFS_AVAILABLE, true, c, 2);
        assert_string_equal(c[0].pod->name, "logs");
        /* inodes: vol's emptyDir holds 1000, but as upstream's disk() the storage request (100Mi) is subtracted
         * from the count before comparing, so logs (15 inodes) comes first */
        eviction_rank(EVICTION_SIGNAL_NODEFS_INODES_FREE, false, c, 2);
        assert_string_equal(c[0].pod->name, "logs");
        /* pids: the larger process count */
        eviction_rank(EVICTION_SIGNAL_PID_AVAILABLE, false, c, 2);
        assert_string_equal(c[0].pod->name, "vol");
        pod_free(logs);
        pod_free(vol);
}

static void test_message(void **state) {
        struct pod *p = parse_pod("be", "  containers:\n  - {name: hog, image: i}\n"
                                        "  - {name: small, image: i, resources: {requests: {memory: 64Mi}}}\n");
        struct eviction_container_stats cs[] = {
                { .name = "hog", .has_memory = true, .working_set_bytes = 524288000 },
                { .name = "small", .has_memory = true, .working_set_bytes = 10 * MIB },
        };
        struct eviction_pod_stats s = { .uid = "uid-be", .containers = cs, .n_containers = 2 };
        struct eviction_threshold *t = NULL;
        struct eviction_observations obs = {};
        _cleanup_free_ char *m = NULL, *m2 = NULL;
        size_t n = 0;

        parse_ok("pods", "memory.available=100Mi,nodefs.available=10%", "", "", "", &t, &n);
        obs.s[EVICTION_SIGNAL_MEMORY_AVAILABLE] = (struct eviction_observation) { true, 83890176, 8LL << 30, 1 };
        obs.s[EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE] = (struct eviction_observation) { true, 1000, 2000, 1 };
        m = eviction_message(EVICTION_RESOURCE_MEMORY, p, &s, t, n, 1u << 0, &obs);
        assert_string_equal(m, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 81924Ki. "
                               "Container hog was using 500Mi, which exceeds its request of 0. ");
        /* a percentage threshold: the quantity it stands for; a count that is not a multiple of 1024 */
        obs.s[EVICTION_SIGNAL_NODEFS_AVAILABLE] = (struct eviction_observation) { true, 1000000, 20000000, 1 };
        m2 = eviction_message(EVICTION_RESOURCE_EPHEMERAL_STORAGE, p, NULL, t, n, 1u << 1, &obs);
        assert_string_equal(m2, "The node was low on resource: ephemeral-storage. Threshold quantity: 2000000, "
                                "available: 1000000. ");
        eviction_thresholds_free(t, n);
        pod_free(p);
}

static void test_local_storage(void **state) {
        struct pod *p =
                parse_pod("ed",
                          "  volumes:\n  - {name: scratch, emptyDir: {sizeLimit: 20Mi}}\n"
                          "  containers:\n  - {name: c, image: i, resources: {limits: {ephemeral-storage: 50Mi}}}\n");
        struct eviction_container_stats cs = { .name = "c",
                                               .rootfs = { true, 1 * MIB, true, 1 },
                                               .logs = { true, 1 * MIB, true, 1 } };
        struct eviction_volume_stats vs = { .name = "scratch", .fs = { true, 10 * MIB, true, 1 } };
        struct eviction_pod_stats s = {
                .uid = "uid-ed", .containers = &cs, .n_containers = 1, .volumes = &vs, .n_volumes = 1
        };
        char *msg = NULL;

        assert_false(eviction_local_storage_exceeded(p, &s, false, 100, &msg));
        vs.fs.used_bytes = 21 * MIB;
        assert_true(eviction_local_storage_exceeded(p, &s, false, 100, &msg));
        assert_string_equal(msg, "Usage of EmptyDir volume \"scratch\" exceeds the limit \"20Mi\". ");
        free(msg);
        vs.fs.used_bytes = 19 * MIB;
        cs.logs.used_bytes = 31 * MIB; /* 19 + 31 + 1 + hosts > 50Mi: the pod's total */
        assert_true(eviction_local_storage_exceeded(p, &s, false, 100, &msg));
        assert_string_equal(msg, "Pod ephemeral local storage usage exceeds the total limit of containers 50Mi. ");
        free(msg);
        pod_free(p);

        p = parse_pod("c", "  containers:\n  - {name: c, image: i, resources: {limits: {ephemeral-storage: 50Mi}}}\n"
                           "  - {name: d, image: i}\n");
        cs.logs.used_bytes = 49 * MIB;
        cs.rootfs.used_bytes = 2 * MIB;
        s.n_volumes = 0;
        /* the container alone: its logs and writable layer; with a dedicated image filesystem only its logs */
        assert_false(eviction_local_storage_exceeded(p, &s, true, 0, &msg));
        assert_true(eviction_local_storage_exceeded(p, &s, false, 0, &msg));
        assert_string_equal(msg, "Pod ephemeral local storage usage exceeds the total limit of containers 50Mi. ");
        free(msg);
        pod_free(p);
}

static void test_admit(void **state) {
        struct pod *be = parse_pod("be", "  containers:\n  - {name: c, image: i}\n");
        struct pod *tol = parse_pod("tol",
                                    "  tolerations:\n  - {key: node.kubernetes.io/memory-pressure, operator: Exists, "
                                    "effect: NoSchedule}\n  containers:\n  - {name: c, image: i}\n");
        struct pod *burst = parse_pod("burst",
                                      "  containers:\n  - {name: c, image: i, resources: {requests: {memory: 1Mi}}}\n");
        struct pod *crit = parse_pod("crit", "  priority: 2000000000\n  containers:\n  - {name: c, image: i}\n");
        _cleanup_ck_error_ struct ck_error *aerr = NULL;

        assert_int_equal(eviction_admit(0, be, &aerr), 0);
        assert_null(aerr);
        assert_int_equal(eviction_admit(EVICTION_MEMORY_PRESSURE, be, &aerr), -ENOSPC);
        assert_string_equal(ck_error_reason(aerr), "Evicted");
        assert_string_equal(ck_error_message(aerr), "The node had condition: [MemoryPressure]. ");
        aerr = ck_error_free(aerr);
        assert_int_equal(eviction_admit(EVICTION_MEMORY_PRESSURE, tol, &aerr), 0);
        assert_int_equal(eviction_admit(EVICTION_MEMORY_PRESSURE, burst, &aerr), 0);
        assert_null(aerr);
        assert_int_equal(eviction_admit(EVICTION_MEMORY_PRESSURE | EVICTION_DISK_PRESSURE, burst, &aerr), -ENOSPC);
        assert_string_equal(ck_error_reason(aerr), "Evicted");
        assert_string_equal(ck_error_message(aerr), "The node had condition: [MemoryPressure DiskPressure]. ");
        aerr = ck_error_free(aerr);
        assert_int_equal(eviction_admit(EVICTION_DISK_PRESSURE | EVICTION_PID_PRESSURE, crit, &aerr), 0);
        assert_null(aerr);
        assert_true(eviction_pod_is_critical(crit));
        assert_false(eviction_pod_is_critical(be));
        pod_free(be);
        pod_free(tol);
        pod_free(burst);
        pod_free(crit);
}

static void test_notifier_level(void **state) {
        char buf[64];

        /* capacity 8Gi, threshold 100Mi, 1Gi of inactive file pages in the usage: the kernel is asked to signal at a
         * usage of 8Gi - 100Mi + 1Gi, where the working set reaches the threshold */
        assert_int_equal(eviction_notifier_level(8LL << 30, 100 * MIB, (5LL << 30) + (1LL << 30), 5LL << 30),
                         (8LL << 30) - 100 * MIB + (1LL << 30));
        assert_int_equal(eviction_notifier_level(100, 200, 10, 10), 0);
        assert_int_equal(eviction_notifier_control_line(7, 9, 123456789, buf, sizeof(buf)), 13);
        assert_string_equal(buf, "7 9 123456789");
        assert_int_equal(eviction_notifier_control_line(7, 9, 123456789, buf, 5), -ENOBUFS);
}

static void no_notification(void *userdata, const char *what) {
}

/* v2: the PSI trigger is armed on the system-wide memory pressure (a directory without memory.pressure falls back
 * to it) also where the kernel refuses the 1 s window (no CAP_SYS_RESOURCE, as in a container: EINVAL before) */
static void test_notifier_psi_trigger(void **state) {
        struct event_base *base;
        struct eviction_notifier *n = NULL;
        int fd = open("/proc/pressure/memory", O_RDWR | O_CLOEXEC);

        if (fd < 0) {
                skip(); /* no PSI, or not allowed to write triggers */
                return;
        }
        close(fd);
        base = event_base_new();
        assert_non_null(base);
        assert_int_equal(eviction_notifier_new(base, "/nonexistent-cgroup", true, "hard memory eviction threshold",
                                               no_notification, NULL, &n),
                         0);
        assert_int_equal(eviction_notifier_set_threshold(n, 0), 0);
        assert_int_equal(eviction_notifier_set_threshold(n, 0), 0); /* armed once */
        eviction_notifier_free(n);
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_defaults),
                cmocka_unit_test(test_parse_soft_and_reclaim),
                cmocka_unit_test(test_parse_errors),
                cmocka_unit_test(test_signals),
                cmocka_unit_test(test_thresholds_and_conditions),
                cmocka_unit_test(test_min_reclaim),
                cmocka_unit_test(test_rank_memory),
                cmocka_unit_test(test_rank_disk_and_pids),
                cmocka_unit_test(test_message),
                cmocka_unit_test(test_local_storage),
                cmocka_unit_test(test_admit),
                cmocka_unit_test(test_notifier_level),
                cmocka_unit_test(test_notifier_psi_trigger),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
