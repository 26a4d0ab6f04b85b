/* SPDX-License-Identifier: Apache-2.0 */
/* The Summary API document built from canned CRI answers and a fake host; the CPU sample cache; the request
 * lifecycle (deferred callback, cancellation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/time.h"
#include "stats/stats-internal.h"
#include "stats/summary-testing.h"
#include "testutil.h"

#define SEC(x) ((int64_t) (x) *NSEC_PER_SEC)
#define T0 INT64_C(1700000000)

/* ---------------------------------------------------------------- cache */

static void test_cache(void **state) {
        struct event_base *base = event_base_new();
        struct stats_config cfg = { .node_name = "n" };
        struct stats_provider *p = NULL;
        uint64_t r = 0;

        assert_int_equal(stats_provider_new(base, NULL, &cfg, &p), 0);
        assert_false(stats_provider_nano_cores(p, "c1", 1000, SEC(T0), &r)); /* first sample */
        assert_true(stats_provider_nano_cores(p, "c1", 1000 + 250000000, SEC(T0 + 1), &r));
        assert_int_equal(r, 250000000);
        /* the same sample again: the same rate */
        r = 0;
        assert_true(stats_provider_nano_cores(p, "c1", 1000 + 250000000, SEC(T0 + 1), &r));
        assert_int_equal(r, 250000000);
        /* keys are independent */
        assert_false(stats_provider_nano_cores(p, "c0", 5, SEC(T0), &r));
        assert_false(stats_provider_nano_cores(p, "c2", 5, SEC(T0), &r));
        assert_int_equal(stats_provider_cache_size(p), 3);
        assert_true(stats_provider_nano_cores(p, "c2", 5 + 2 * NSEC_PER_SEC, SEC(T0 + 2), &r));
        assert_int_equal(r, NSEC_PER_SEC);
        /* a restarted container (counter back to a small value): no rate, then from the new sample */
        assert_false(stats_provider_nano_cores(p, "c1", 10, SEC(T0 + 2), &r));
        assert_true(stats_provider_nano_cores(p, "c1", 10 + NSEC_PER_SEC / 2, SEC(T0 + 3), &r));
        assert_int_equal(r, NSEC_PER_SEC / 2);
        /* pruning by last use */
        stats_provider_cache_prune(p, 0);
        assert_int_equal(stats_provider_cache_size(p), 3);
        stats_provider_cache_prune(p, now_usec() + 1);
        assert_int_equal(stats_provider_cache_size(p), 0);
        assert_false(stats_provider_nano_cores(p, "c1", 10, SEC(T0 + 4), &r));
        assert_null(stats_provider_free(p));
        assert_null(stats_provider_free(NULL));
        event_base_free(base);
}

/* ---------------------------------------------------------------- build */

/* the summary as /stats/summary serves it: built from the answers, then rendered as JSON (server/handlers.c) */
static int build_json(struct stats_provider *p, const struct summary_input *in, json_t **ret) {
        _cleanup_(stats_summary_freep) struct stats_summary *s = NULL;
        int r = stats_summary_build(p, in, &s);

        if (r < 0)
                return r;
        return stats_summary_to_json(s, ret);
}

#define LABELS_ENTRY(T, k, v) \
        { PROTOBUF_C_MESSAGE_INIT(&runtime__v1__##T##__labels_entry__descriptor), (char *) (k), (char *) (v) }

static Runtime__V1__PodSandbox__LabelsEntry sb1_l[] = {
        LABELS_ENTRY(pod_sandbox, "io.kubernetes.pod.name", "web"),
        LABELS_ENTRY(pod_sandbox, "io.kubernetes.pod.namespace", "default"),
        LABELS_ENTRY(pod_sandbox, "io.kubernetes.pod.uid", "uid-1"),
};
static Runtime__V1__PodSandbox__LabelsEntry sb2_l[] = {
        LABELS_ENTRY(pod_sandbox, "io.kubernetes.pod.name", "api"),
        LABELS_ENTRY(pod_sandbox, "io.kubernetes.pod.namespace", "kube-system"),
        LABELS_ENTRY(pod_sandbox, "io.kubernetes.pod.uid", "uid-2"),
};

struct fixture {
        char *root;
        Runtime__V1__PodSandbox sb[3];
        Runtime__V1__PodSandboxMetadata sb3_md;
        Runtime__V1__PodSandbox *sbp[3];
        Runtime__V1__PodSandbox__LabelsEntry *sb1_lp[3], *sb2_lp[3];
        Runtime__V1__ListPodSandboxResponse sandboxes;
        Runtime__V1__Container__LabelsEntry cl[4][1];
        Runtime__V1__Container__LabelsEntry *clp[4][1];
        Runtime__V1__Container c[4];
        Runtime__V1__Container *cp[4];
        Runtime__V1__ListContainersResponse containers;
        Runtime__V1__ContainerAttributes attr[4];
        Runtime__V1__CpuUsage cpu[4];
        Runtime__V1__MemoryUsage mem[4];
        Runtime__V1__FilesystemUsage wl[4];
        Runtime__V1__FilesystemIdentifier wl_id;
        Runtime__V1__UInt64Value u[40];
        size_t nu;
        Runtime__V1__ContainerStats st[4];
        Runtime__V1__ContainerStats *stp[4];
        Runtime__V1__ListContainerStatsResponse stats;
        Runtime__V1__PodSandboxAttributes pattr;
        Runtime__V1__NetworkInterfaceUsage eth0;
        Runtime__V1__NetworkInterfaceUsage *ifs[1];
        Runtime__V1__NetworkUsage net;
        Runtime__V1__ProcessUsage proc;
        Runtime__V1__LinuxPodSandboxStats lps;
        Runtime__V1__PodSandboxStats ps;
        Runtime__V1__PodSandboxStats *psp[1];
        Runtime__V1__ListPodSandboxStatsResponse pod_stats;
        Runtime__V1__FilesystemIdentifier img_id;
        Runtime__V1__FilesystemUsage img;
        Runtime__V1__FilesystemUsage *imgp[1];
        Runtime__V1__ImageFsInfoResponse image_fs;
};

static Runtime__V1__UInt64Value *u64(struct fixture *f, uint64_t v) {
        Runtime__V1__UInt64Value *x = &f->u[f->nu++];
        assert_true(f->nu <= ELEMENTSOF(f->u));
        *x = (Runtime__V1__UInt64Value) RUNTIME__V1__UINT64_VALUE__INIT;
        x->value = v;
        return x;
}

static const char v1_memory_stat[] = "total_rss 3000\ntotal_pgfault 40\ntotal_pgmajfault 4\ntotal_inactive_file 1000\n";

static struct fixture *fixture_new(void) {
        struct fixture *f = calloc(1, sizeof(*f));
        const char *names[4] = { "app", "sidecar", "app", "x" };
        const char *sbs[4] = { "sb1", "sb1", "sb1", "sb2" };
        const int states[4] = { RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING,
                                RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING,
                                RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED,
                                RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING };
        static const char *ids[4] = { "c1", "c2", "c3", "c4" };
        char big[5000];

        assert_non_null(f);
        f->root = fake_root_new();
        assert_non_null(f->root);

        /* the host */
        assert_int_equal(fake_write(f->root, "/sys/fs/cgroup/cpuacct/cpuacct.usage", "5000000000\n"), 0);
        assert_int_equal(fake_write(f->root, "/sys/fs/cgroup/memory/memory.usage_in_bytes", "10000\n"), 0);
        assert_int_equal(fake_write(f->root, "/sys/fs/cgroup/memory/memory.stat", v1_memory_stat), 0);
        assert_int_equal(fake_write(f->root, "/proc/meminfo", "MemTotal: 100 kB\nMemFree: 50 kB\n"), 0);
        assert_int_equal(fake_write(f->root, "/proc/stat", "cpu 1 2 3\nbtime 1690000000\n"), 0);
        assert_int_equal(fake_write(f->root, "/proc/net/dev",
                                    "Inter-| Receive | Transmit\n face |bytes packets|bytes packets\n"
                                    "    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
                                    "  eth0: 1000 10 1 0 0 0 0 0 2000 20 2 0 0 0 0 0\n"
                                    "  eth1: 10 1 0 0 0 0 0 0 20 2 0 0 0 0 0 0\n"),
                         0);
        assert_int_equal(fake_write(f->root, "/proc/net/route",
                                    "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\n"
                                    "eth1\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\n"),
                         0);
        assert_int_equal(fake_write(f->root, "/proc/sys/kernel/pid_max", "32768\n"), 0);
        assert_int_equal(fake_write(f->root, "/proc/loadavg", "0.00 0.00 0.00 1/99 5\n"), 0);
        memset(big, 'l', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        assert_int_equal(fake_write(f->root, "/var/log/pods/default_web_uid-1/app/0.log", big), 0);

        /* sandboxes: web (ready), api (not ready), and web's old sandbox (ready, older: ignored) */
        for (int i = 0; i < 3; i++) {
                f->sb[i] = (Runtime__V1__PodSandbox) RUNTIME__V1__POD_SANDBOX__INIT;
                f->sbp[i] = &f->sb[i];
        }
        f->sb[0].id = (char *) "sb1";
        f->sb[0].state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
        f->sb[0].created_at = SEC(T0);
        f->sb[0].n_labels = 3;
        for (int i = 0; i < 3; i++) {
                f->sb1_lp[i] = &sb1_l[i];
                f->sb2_lp[i] = &sb2_l[i];
        }
        f->sb[0].labels = f->sb1_lp;
        f->sb[1].id = (char *) "sb2";
        f->sb[1].state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY;
        f->sb[1].created_at = SEC(T0);
        f->sb[1].n_labels = 3;
        f->sb[1].labels = f->sb2_lp;
        /* no labels: the metadata is used */
        f->sb3_md = (Runtime__V1__PodSandboxMetadata) RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
        f->sb3_md.name = (char *) "web";
        f->sb3_md.namespace_ = (char *) "default";
        f->sb3_md.uid = (char *) "uid-1";
        f->sb[2].id = (char *) "sb0";
        f->sb[2].metadata = &f->sb3_md;
        f->sb[2].state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
        f->sb[2].created_at = SEC(T0 - 100);
        f->sandboxes = (Runtime__V1__ListPodSandboxResponse) RUNTIME__V1__LIST_POD_SANDBOX_RESPONSE__INIT;
        f->sandboxes.n_items = 3;
        f->sandboxes.items = f->sbp;

        /* containers and their stats */
        for (int i = 0; i < 4; i++) {
                f->cl[i][0] = (Runtime__V1__Container__LabelsEntry) LABELS_ENTRY(container,
                                                                                 "io.kubernetes.container.name",
                                                                                 names[i]);
                f->clp[i][0] = &f->cl[i][0];
                f->c[i] = (Runtime__V1__Container) RUNTIME__V1__CONTAINER__INIT;
                f->c[i].id = (char *) ids[i];
                f->c[i].pod_sandbox_id = (char *) sbs[i];
                f->c[i].state = states[i];
                f->c[i].created_at = SEC(T0 + 10 + i);
                f->c[i].n_labels = 1;
                f->c[i].labels = f->clp[i];
                f->cp[i] = &f->c[i];

                f->attr[i] = (Runtime__V1__ContainerAttributes) RUNTIME__V1__CONTAINER_ATTRIBUTES__INIT;
                f->attr[i].id = (char *) ids[i];
                f->cpu[i] = (Runtime__V1__CpuUsage) RUNTIME__V1__CPU_USAGE__INIT;
                f->cpu[i].timestamp = SEC(T0 + 60);
                f->cpu[i].usage_core_nano_seconds = u64(f, (uint64_t) (i + 1) * NSEC_PER_SEC);
                f->mem[i] = (Runtime__V1__MemoryUsage) RUNTIME__V1__MEMORY_USAGE__INIT;
                f->mem[i].timestamp = SEC(T0 + 61);
                f->mem[i].working_set_bytes = u64(f, 100 * (i + 1));
                f->mem[i].usage_bytes = u64(f, 200 * (i + 1));
                f->mem[i].rss_bytes = u64(f, 50 * (i + 1));
                f->mem[i].page_faults = u64(f, 10);
                f->mem[i].major_page_faults = u64(f, 1);
                f->mem[i].available_bytes = u64(f, 0); /* no limit */
                f->st[i] = (Runtime__V1__ContainerStats) RUNTIME__V1__CONTAINER_STATS__INIT;
                f->st[i].attributes = &f->attr[i];
                f->st[i].cpu = &f->cpu[i];
                f->st[i].memory = &f->mem[i];
                f->stp[i] = &f->st[i];
        }
        /* the runtime computes usageNanoCores for the sidecar */
        f->cpu[1].usage_nano_cores = u64(f, 123);
        /* app's writable layer */
        f->wl_id = (Runtime__V1__FilesystemIdentifier) RUNTIME__V1__FILESYSTEM_IDENTIFIER__INIT;
        f->wl_id.mountpoint = f->root;
        f->wl[0] = (Runtime__V1__FilesystemUsage) RUNTIME__V1__FILESYSTEM_USAGE__INIT;
        f->wl[0].timestamp = SEC(T0 + 62);
        f->wl[0].fs_id = &f->wl_id;
        f->wl[0].used_bytes = u64(f, 4096);
        f->wl[0].inodes_used = u64(f, 7);
        f->st[0].writable_layer = &f->wl[0];
        f->containers = (Runtime__V1__ListContainersResponse) RUNTIME__V1__LIST_CONTAINERS_RESPONSE__INIT;
        f->containers.n_containers = 4;
        f->containers.containers = f->cp;
        f->stats = (Runtime__V1__ListContainerStatsResponse) RUNTIME__V1__LIST_CONTAINER_STATS_RESPONSE__INIT;
        /* no stats for the sidecar? it has them; c3 (exited) too */
        f->stats.n_stats = 4;
        f->stats.stats = f->stp;

        /* sandbox stats of web */
        f->eth0 = (Runtime__V1__NetworkInterfaceUsage) RUNTIME__V1__NETWORK_INTERFACE_USAGE__INIT;
        f->eth0.name = (char *) "eth0";
        f->eth0.rx_bytes = u64(f, 1111);
        f->eth0.rx_errors = u64(f, 0);
        f->eth0.tx_bytes = u64(f, 2222);
        f->eth0.tx_errors = u64(f, 0);
        f->ifs[0] = &f->eth0;
        f->net = (Runtime__V1__NetworkUsage) RUNTIME__V1__NETWORK_USAGE__INIT;
        f->net.timestamp = SEC(T0 + 63);
        f->net.default_interface = &f->eth0;
        f->net.n_interfaces = 1;
        f->net.interfaces = f->ifs;
        f->proc = (Runtime__V1__ProcessUsage) RUNTIME__V1__PROCESS_USAGE__INIT;
        f->proc.timestamp = SEC(T0 + 63);
        f->proc.process_count = u64(f, 3);
        f->lps = (Runtime__V1__LinuxPodSandboxStats) RUNTIME__V1__LINUX_POD_SANDBOX_STATS__INIT;
        f->lps.network = &f->net;
        f->lps.process = &f->proc;
        f->pattr = (Runtime__V1__PodSandboxAttributes) RUNTIME__V1__POD_SANDBOX_ATTRIBUTES__INIT;
        f->pattr.id = (char *) "sb1";
        f->ps = (Runtime__V1__PodSandboxStats) RUNTIME__V1__POD_SANDBOX_STATS__INIT;
        f->ps.attributes = &f->pattr;
        f->ps.linux = &f->lps;
        f->psp[0] = &f->ps;
        f->pod_stats = (Runtime__V1__ListPodSandboxStatsResponse) RUNTIME__V1__LIST_POD_SANDBOX_STATS_RESPONSE__INIT;
        f->pod_stats.n_stats = 1;
        f->pod_stats.stats = f->psp;

        /* image filesystem: the mountpoint is under the host root */
        f->img_id = (Runtime__V1__FilesystemIdentifier) RUNTIME__V1__FILESYSTEM_IDENTIFIER__INIT;
        f->img_id.mountpoint = (char *) "/var";
        f->img = (Runtime__V1__FilesystemUsage) RUNTIME__V1__FILESYSTEM_USAGE__INIT;
        f->img.timestamp = SEC(T0 + 64);
        f->img.fs_id = &f->img_id;
        f->img.used_bytes = u64(f, 1000000);
        f->img.inodes_used = u64(f, 100);
        f->imgp[0] = &f->img;
        f->image_fs = (Runtime__V1__ImageFsInfoResponse) RUNTIME__V1__IMAGE_FS_INFO_RESPONSE__INIT;
        f->image_fs.n_image_filesystems = 1;
        f->image_fs.image_filesystems = f->imgp;
        return f;
}

static void fixture_free(struct fixture *f) {
        fake_root_free(f->root);
        free(f);
}

static struct summary_input fixture_input(struct fixture *f) {
        return (struct summary_input) { .sandboxes = &f->sandboxes,
                                        .containers = &f->containers,
                                        .container_stats = &f->stats,
                                        .pod_stats = &f->pod_stats,
                                        .image_fs = &f->image_fs };
}

static uint64_t jget_u(const json_t *o, const char *path) {
        /* "a.b.c" */
        char buf[256], *save = NULL;
        const json_t *v = o;
        snprintf(buf, sizeof(buf), "%s", path);
        for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
                v = json_object_get(v, k);
        if (!json_is_integer(v))
                fail_msg("%s is not an integer", path);
        return (uint64_t) json_integer_value(v);
}

static const char *jget_s(const json_t *o, const char *path) {
        char buf[256], *save = NULL;
        const json_t *v = o;
        snprintf(buf, sizeof(buf), "%s", path);
        for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save))
                v = json_object_get(v, k);
        if (!json_is_string(v))
                fail_msg("%s is not a string", path);
        return json_string_value(v);
}

static bool jhas(const json_t *o, const char *path) {
        char buf[256], *save = NULL;
        const json_t *v = o;
        snprintf(buf, sizeof(buf), "%s", path);
        for (char *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
                v = json_object_get(v, k);
        return v != NULL;
}

static void test_build(void **state) {
        struct fixture *f = fixture_new();
        struct event_base *base = event_base_new();
        _cleanup_free_ char *logs = NULL;
        struct stats_provider *p = NULL;
        struct summary_input in = fixture_input(f);
        json_t *s = NULL, *node, *pods, *pod, *app, *side, *sys;
        struct stats_config cfg = { .node_name = "testnode", .root_dir = f->root, .host_root = f->root };

        assert_true(asprintf(&logs, "%s/var/log/pods", f->root) > 0);
        cfg.pod_logs_dir = logs;
        assert_int_equal(stats_provider_new(base, (struct cri_client *) NULL, &cfg, &p), 0);
        assert_int_equal(build_json(p, &in, &s), 0);

        node = json_object_get(s, "node");
        assert_string_equal(jget_s(node, "nodeName"), "testnode");
        assert_string_equal(jget_s(node, "startTime"), "2023-07-22T04:26:40Z"); /* btime */
        assert_int_equal(jget_u(node, "cpu.usageCoreNanoSeconds"), UINT64_C(5000000000));
        assert_false(jhas(node, "cpu.usageNanoCores")); /* first sample */
        assert_int_equal(jget_u(node, "memory.usageBytes"), 10000);
        assert_int_equal(jget_u(node, "memory.workingSetBytes"), 9000);
        assert_int_equal(jget_u(node, "memory.availableBytes"), 100 * 1024 - 9000);
        assert_int_equal(jget_u(node, "memory.rssBytes"), 3000);
        assert_int_equal(jget_u(node, "memory.pageFaults"), 40);
        assert_int_equal(jget_u(node, "memory.majorPageFaults"), 4);
        /* the default route's interface inline, every counted interface in the list */
        assert_string_equal(jget_s(node, "network.name"), "eth1");
        assert_int_equal(jget_u(node, "network.rxBytes"), 10);
        assert_int_equal(json_array_size(json_object_get(json_object_get(node, "network"), "interfaces")), 2);
        assert_true(jget_u(node, "fs.capacityBytes") > 0);
        assert_true(jhas(node, "fs.inodesUsed"));
        assert_int_equal(jget_u(node, "runtime.imageFs.usedBytes"), 1000000);
        assert_int_equal(jget_u(node, "runtime.imageFs.inodesUsed"), 100);
        assert_true(jget_u(node, "runtime.imageFs.capacityBytes") > 0);
        assert_string_equal(jget_s(node, "runtime.imageFs.time"), "2023-11-14T22:14:24Z");
        assert_int_equal(jget_u(node, "rlimit.maxpid"), 32768);
        assert_int_equal(jget_u(node, "rlimit.curproc"), 99);
        sys = json_object_get(node, "systemContainers");
        assert_int_equal(json_array_size(sys), 2);
        assert_string_equal(jget_s(json_array_get(sys, 0), "name"), "kubelet");
        assert_true(jget_u(json_array_get(sys, 0), "memory.workingSetBytes") > 0);
        assert_string_equal(jget_s(json_array_get(sys, 1), "name"), "pods");
        assert_int_equal(jget_u(json_array_get(sys, 1), "cpu.usageCoreNanoSeconds"), UINT64_C(3000000000));
        assert_int_equal(jget_u(json_array_get(sys, 1), "memory.workingSetBytes"), 300);

        /* one pod: the ready sandbox of web (the older ready one and api's not-ready one are left out) */
        pods = json_object_get(s, "pods");
        assert_int_equal(json_array_size(pods), 1);
        pod = json_array_get(pods, 0);
        assert_string_equal(jget_s(pod, "podRef.name"), "web");
        assert_string_equal(jget_s(pod, "podRef.namespace"), "default");
        assert_string_equal(jget_s(pod, "podRef.uid"), "uid-1");
        assert_string_equal(jget_s(pod, "startTime"), "2023-11-14T22:13:20Z");
        /* running containers only, by name */
        assert_int_equal(json_array_size(json_object_get(pod, "containers")), 2);
        app = json_array_get(json_object_get(pod, "containers"), 0);
        side = json_array_get(json_object_get(pod, "containers"), 1);
        assert_string_equal(jget_s(app, "name"), "app");
        assert_string_equal(jget_s(app, "startTime"), "2023-11-14T22:13:30Z");
        assert_string_equal(jget_s(app, "cpu.time"), "2023-11-14T22:14:20Z");
        assert_int_equal(jget_u(app, "cpu.usageCoreNanoSeconds"), NSEC_PER_SEC);
        assert_false(jhas(app, "cpu.usageNanoCores"));
        assert_string_equal(jget_s(app, "memory.time"), "2023-11-14T22:14:21Z");
        assert_int_equal(jget_u(app, "memory.workingSetBytes"), 100);
        assert_int_equal(jget_u(app, "memory.usageBytes"), 200);
        assert_int_equal(jget_u(app, "memory.rssBytes"), 50);
        assert_int_equal(jget_u(app, "memory.pageFaults"), 10);
        assert_int_equal(jget_u(app, "memory.majorPageFaults"), 1);
        assert_false(jhas(app, "memory.availableBytes"));
        assert_int_equal(jget_u(app, "rootfs.usedBytes"), 4096);
        assert_int_equal(jget_u(app, "rootfs.inodesUsed"), 7);
        assert_true(jget_u(app, "rootfs.capacityBytes") > 0);
        assert_true(jget_u(app, "logs.usedBytes") >= 5000);
        assert_int_equal(jget_u(app, "logs.inodesUsed"), 2); /* app/ and 0.log */
        assert_true(jhas(app, "logs.capacityBytes"));
        assert_string_equal(jget_s(side, "name"), "sidecar");
        assert_int_equal(jget_u(side, "cpu.usageNanoCores"), 123); /* from the runtime */
        assert_false(jhas(side, "rootfs"));
        assert_false(jhas(side, "logs")); /* no log directory */
        /* the pod: sums of its running containers */
        assert_int_equal(jget_u(pod, "cpu.usageCoreNanoSeconds"), UINT64_C(3000000000));
        assert_int_equal(jget_u(pod, "memory.workingSetBytes"), 300);
        assert_int_equal(jget_u(pod, "memory.usageBytes"), 600);
        assert_string_equal(jget_s(pod, "network.name"), "eth0");
        assert_int_equal(jget_u(pod, "network.rxBytes"), 1111);
        assert_int_equal(jget_u(pod, "network.txBytes"), 2222);
        assert_int_equal(json_array_size(json_object_get(json_object_get(pod, "network"), "interfaces")), 1);
        assert_int_equal(jget_u(pod, "process_stats.process_count"), 3);
        assert_int_equal(jget_u(pod, "ephemeral-storage.usedBytes"), 4096 + jget_u(app, "logs.usedBytes"));
        assert_int_equal(jget_u(pod, "ephemeral-storage.inodesUsed"), 7 + 2);
        assert_true(jhas(pod, "ephemeral-storage.capacityBytes"));
        assert_false(jhas(pod, "volume"));
        json_decref(s);

        /* one second later: rates from the previous samples */
        f->cpu[0].timestamp = SEC(T0 + 61);
        f->cpu[0].usage_core_nano_seconds->value = NSEC_PER_SEC + NSEC_PER_SEC / 4;
        f->cpu[1].timestamp = SEC(T0 + 61);
        f->cpu[1].usage_core_nano_seconds->value = 2 * NSEC_PER_SEC + NSEC_PER_SEC / 4;
        assert_int_equal(build_json(p, &in, &s), 0);
        pod = json_array_get(json_object_get(s, "pods"), 0);
        app = json_array_get(json_object_get(pod, "containers"), 0);
        assert_int_equal(jget_u(app, "cpu.usageNanoCores"), NSEC_PER_SEC / 4);
        assert_int_equal(jget_u(pod, "cpu.usageNanoCores"), NSEC_PER_SEC / 2);
        assert_int_equal(jget_u(pod, "cpu.usageCoreNanoSeconds"), UINT64_C(3500000000));
        json_decref(s);

        /* without the optional answers */
        in.pod_stats = NULL;
        in.image_fs = NULL;
        assert_int_equal(build_json(p, &in, &s), 0);
        pod = json_array_get(json_object_get(s, "pods"), 0);
        assert_false(jhas(pod, "network"));
        assert_false(jhas(pod, "process_stats"));
        assert_false(jhas(json_object_get(s, "node"), "runtime"));
        json_decref(s);

        /* no sandbox stats from the runtime: the network namespace of the sandbox's process */
        assert_int_equal(fake_write(f->root, "/proc/4242/net/dev",
                                    "Inter-| Receive | Transmit\n face |bytes packets|bytes packets\n"
                                    "    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n"
                                    "  net1: 7 1 0 0 0 0 0 0 8 1 0 0 0 0 0 0\n"
                                    "  eth0: 300 3 1 0 0 0 0 0 400 4 2 0 0 0 0 0\n"),
                         0);
        assert_int_equal(stats_provider_set_sandbox_pid(p, "sb1", 4242), 0);
        assert_int_equal(build_json(p, &in, &s), 0);
        pod = json_array_get(json_object_get(s, "pods"), 0);
        assert_string_equal(jget_s(pod, "network.name"), "eth0");
        assert_int_equal(jget_u(pod, "network.rxBytes"), 300);
        assert_int_equal(jget_u(pod, "network.rxErrors"), 1);
        assert_int_equal(jget_u(pod, "network.txBytes"), 400);
        assert_int_equal(jget_u(pod, "network.txErrors"), 2);
        assert_int_equal(json_array_size(json_object_get(json_object_get(pod, "network"), "interfaces")), 2);
        json_decref(s);

        stats_provider_free(p);
        event_base_free(base);
        fixture_free(f);
}

/* cgroup v2: PSI of the node, the pod's cgroup and the containers' cgroups (systemd and cgroupfs names), swap */
static void test_build_v2_psi_swap(void **state) {
        struct fixture *f = fixture_new();
        struct event_base *base = event_base_new();
        struct stats_provider *p = NULL;
        struct summary_input in = fixture_input(f);
        json_t *s = NULL, *node, *pod, *app, *side;
        struct stats_config cfg = {
                .node_name = "n", .root_dir = f->root, .host_root = f->root, .pods_cgroup = "/kubepods.slice"
        };
        static const char *const res[] = { "cpu", "memory", "io" };
        const char *pod_cg = "/sys/fs/cgroup/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-poduid_1.slice";
        char path[512], text[256];

        /* v1 first: no psi, no container swap */
        assert_int_equal(stats_provider_new(base, (struct cri_client *) NULL, &cfg, &p), 0);
        assert_int_equal(build_json(p, &in, &s), 0);
        assert_false(jhas(json_object_get(s, "node"), "cpu.psi"));
        assert_false(jhas(json_object_get(s, "node"), "io"));
        json_decref(s);

        assert_int_equal(fake_write(f->root, "/sys/fs/cgroup/cgroup.controllers", "cpu io memory pids\n"), 0);
        assert_int_equal(fake_write(f->root, "/sys/fs/cgroup/cpu.stat", "usage_usec 5\n"), 0);
        assert_int_equal(fake_write(f->root, "/proc/meminfo",
                                    "MemTotal: 100 kB\nMemFree: 50 kB\nSwapTotal: 64 kB\nSwapFree: 16 kB\n"),
                         0);
        for (size_t i = 0; i < ELEMENTSOF(res); i++) {
                snprintf(path, sizeof(path), "/proc/pressure/%s", res[i]);
                snprintf(text, sizeof(text),
                         "some avg10=1.25 avg60=0.00 avg300=0.00 total=%zu\nfull avg10=0.00 avg60=0.50 avg300=0.00 "
                         "total=%zu\n",
                         100 + i, 200 + i);
                assert_int_equal(fake_write(f->root, path, text), 0);
                snprintf(path, sizeof(path), "%s/%s.pressure", pod_cg, res[i]);
                snprintf(text, sizeof(text),
                         "some avg10=0.00 avg60=0.00 avg300=0.00 total=%zu\nfull avg10=0.00 avg60=0.00 avg300=0.00 "
                         "total=%zu\n",
                         300 + i, 400 + i);
                assert_int_equal(fake_write(f->root, path, text), 0);
                snprintf(path, sizeof(path), "%s/cri-containerd-c1.scope/%s.pressure", pod_cg, res[i]);
                snprintf(text, sizeof(text),
                         "some avg10=0.00 avg60=0.00 avg300=0.00 total=%zu\nfull avg10=0.00 avg60=0.00 avg300=0.00 "
                         "total=%zu\n",
                         500 + i, 600 + i);
                assert_int_equal(fake_write(f->root, path, text), 0);
        }
        snprintf(path, sizeof(path), "%s/cri-containerd-c1.scope/memory.swap.current", pod_cg);
        assert_int_equal(fake_write(f->root, path, "1000\n"), 0);
        snprintf(path, sizeof(path), "%s/cri-containerd-c1.scope/memory.swap.max", pod_cg);
        assert_int_equal(fake_write(f->root, path, "4000\n"), 0);
        snprintf(path, sizeof(path), "%s/memory.swap.current", pod_cg);
        assert_int_equal(fake_write(f->root, path, "1500\n"), 0);
        snprintf(path, sizeof(path), "%s/memory.swap.max", pod_cg);
        assert_int_equal(fake_write(f->root, path, "max\n"), 0);
        /* the sidecar (c2): cgroupfs-style name, with only a cpu.pressure lacking its full line */
        snprintf(path, sizeof(path), "%s/c2/cpu.pressure", pod_cg);
        assert_int_equal(fake_write(f->root, path, "some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n"), 0);

        assert_int_equal(build_json(p, &in, &s), 0);
        node = json_object_get(s, "node");
        assert_int_equal(jget_u(node, "cpu.psi.some.total"), 100);
        assert_int_equal(jget_u(node, "cpu.psi.full.total"), 200);
        assert_int_equal(jget_u(node, "memory.psi.some.total"), 101);
        assert_int_equal(jget_u(node, "io.psi.full.total"), 202);
        assert_true(jhas(node, "io.time"));
        assert_true(
                json_real_value(
                        json_object_get(json_object_get(json_object_get(json_object_get(node, "cpu"), "psi"), "some"),
                                        "avg10")) == 1.25);
        assert_true(jhas(node, "cpu.psi.full.avg300"));
        assert_int_equal(jget_u(node, "swap.swapUsageBytes"), 48 * 1024);
        assert_int_equal(jget_u(node, "swap.swapAvailableBytes"), 16 * 1024);

        pod = json_array_get(json_object_get(s, "pods"), 0);
        assert_int_equal(jget_u(pod, "cpu.psi.some.total"), 300);
        assert_int_equal(jget_u(pod, "memory.psi.full.total"), 401);
        assert_int_equal(jget_u(pod, "io.psi.some.total"), 302);
        assert_int_equal(jget_u(pod, "swap.swapUsageBytes"), 1500);
        assert_false(jhas(pod, "swap.swapAvailableBytes")); /* unlimited */
        app = json_array_get(json_object_get(pod, "containers"), 0);
        side = json_array_get(json_object_get(pod, "containers"), 1);
        assert_int_equal(jget_u(app, "cpu.psi.some.total"), 500);
        assert_int_equal(jget_u(app, "cpu.usageCoreNanoSeconds"), NSEC_PER_SEC); /* the runtime's numbers kept */
        assert_int_equal(jget_u(app, "memory.psi.full.total"), 601);
        assert_int_equal(jget_u(app, "memory.workingSetBytes"), 100);
        assert_int_equal(jget_u(app, "io.psi.full.total"), 602);
        assert_int_equal(jget_u(app, "swap.swapUsageBytes"), 1000);
        assert_int_equal(jget_u(app, "swap.swapAvailableBytes"), 3000);
        assert_int_equal(jget_u(side, "cpu.psi.some.total"), 42);
        assert_int_equal(jget_u(side, "cpu.psi.full.total"), 0);
        assert_false(jhas(side, "memory.psi"));
        assert_false(jhas(side, "io"));
        assert_false(jhas(side, "swap"));
        json_decref(s);

        stats_provider_free(p);
        event_base_free(base);
        fixture_free(f);
}

static void test_sandbox_pid(void **state) {
        int pid = 0;
        assert_int_equal(stats_sandbox_pid_from_info("{\"pid\": 1234, \"processStatus\": \"running\"}", &pid), 0);
        assert_int_equal(pid, 1234);
        assert_int_equal(stats_sandbox_pid_from_info("{\"processStatus\": \"running\"}", &pid), -ENOENT);
        assert_int_equal(stats_sandbox_pid_from_info("{\"pid\": 0}", &pid), -ENOENT);
        assert_int_equal(stats_sandbox_pid_from_info("not json", &pid), -EINVAL);
        assert_int_equal(stats_sandbox_pid_from_info(NULL, &pid), -EINVAL);
        assert_int_equal(pid, 1234);
}

/* ---------------------------------------------------------------- requests */

struct result {
        int calls;
        int r;
        json_t *summary;
};

static void on_summary(int r, struct stats_summary *summary, void *userdata) {
        struct result *res = userdata;
        res->calls++;
        res->r = r;
        json_decref(res->summary);
        res->summary = NULL;
        if (summary)
                assert_int_equal(stats_summary_to_json(summary, &res->summary), 0);
        stats_summary_free(summary);
}

static void test_get_without_runtime(void **state) {
        struct event_base *base = event_base_new();
        struct stats_config cfg = {
                .node_name = "n", .root_dir = "/", .pod_logs_dir = "/nonexistent", .host_root = ""
        };
        struct stats_provider *p = NULL;
        struct result res = {}, res2 = {};

        assert_int_equal(stats_provider_new(base, NULL, &cfg, &p), 0);
        assert_int_equal(stats_summary_get(p, on_summary, &res), 0);
        assert_int_equal(res.calls, 0); /* never from inside */
        (void) event_base_loop(base, EVLOOP_NONBLOCK);
        assert_int_equal(res.calls, 1);
        assert_int_equal(res.r, 0);
        assert_non_null(res.summary);
        assert_string_equal(jget_s(json_object_get(res.summary, "node"), "nodeName"), "n");
        assert_int_equal(json_array_size(json_object_get(res.summary, "pods")), 0);
        /* the real host: its root cgroup and memory */
        assert_true(jhas(json_object_get(res.summary, "node"), "memory.workingSetBytes"));
        assert_true(jhas(json_object_get(res.summary, "node"), "fs.capacityBytes"));
        assert_true(jhas(json_object_get(res.summary, "node"), "rlimit.maxpid"));

        /* freeing the provider cancels what is pending, exactly once */
        assert_int_equal(stats_summary_get(p, on_summary, &res2), 0);
        stats_provider_free(p);
        assert_int_equal(res2.calls, 1);
        assert_int_equal(res2.r, -ECANCELED);
        assert_null(res2.summary);
        assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 1); /* nothing left */
        assert_int_equal(res2.calls, 1);
        assert_int_equal(res.calls, 1);
        assert_int_equal(stats_summary_get(NULL, on_summary, &res), -EINVAL);
        json_decref(res.summary);
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cache),
                cmocka_unit_test(test_build),
                cmocka_unit_test(test_build_v2_psi_swap),
                cmocka_unit_test(test_sandbox_pid),
                cmocka_unit_test(test_get_without_runtime),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
