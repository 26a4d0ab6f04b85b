/* SPDX-License-Identifier: Apache-2.0 */
/* /metrics/cadvisor: the parsers of cgroup files, the Prometheus text, and the collector on fake v1 and v2
 * cgroup trees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <event2/buffer.h>

#include "basic/string.h"
#include "stats/cadvisor.h"
#include "testutil.h"

static char *buffer_text(struct evbuffer *b) {
        size_t n = evbuffer_get_length(b);
        char *s = malloc(n + 1);

        assert_non_null(s);
        evbuffer_remove(b, s, n);
        s[n] = '\0';
        return s;
}

/* ---------------------------------------------------------------- parsers */

static void test_parse_cpuacct_stat(void **state) {
        uint64_t u = 0, s = 0;

        assert_int_equal(cadvisor_parse_cpuacct_stat("user 150\nsystem 25\n", 100, &u, &s), 0);
        assert_int_equal(u, UINT64_C(1500000000));
        assert_int_equal(s, UINT64_C(250000000));
        assert_int_equal(cadvisor_parse_cpuacct_stat("user 1\n", 100, &u, &s), -EINVAL);
}

static void test_parse_blkio(void **state) {
        struct cadvisor_dev_name names[] = { { 8, 0, (char *) "/dev/sda" }, { 253, 0, (char *) "/dev/vda" } };
        struct cadvisor_disk_io *v = NULL;
        size_t n = 0;

        assert_int_equal(cadvisor_parse_blkio("8:0 Read 100\n8:0 Write 20\n8:0 Sync 3\n8:0 Total 120\n"
                                              "253:0 Read 7\n253:0 Write 9\n7:1 Read 5\nTotal 141\n",
                                              false, names, 2, &v, &n),
                         0);
        assert_int_equal(n, 3);
        assert_string_equal(v[0].device, "/dev/sda");
        assert_int_equal(v[0].read_bytes, 100);
        assert_int_equal(v[0].write_bytes, 20);
        assert_string_equal(v[1].device, "/dev/vda");
        assert_int_equal(v[1].read_bytes, 7);
        assert_int_equal(v[1].write_bytes, 9);
        assert_string_equal(v[2].device, ""); /* 7:1 is not a known disk: no name, as cAdvisor */
        for (size_t i = 0; i < n; i++)
                free(v[i].device);
        free(v);

        assert_int_equal(cadvisor_parse_blkio("253:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n", true,
                                              names, 2, &v, &n),
                         0);
        assert_int_equal(n, 1);
        assert_string_equal(v[0].device, "/dev/vda");
        assert_int_equal(v[0].read_bytes, 4096);
        assert_int_equal(v[0].write_bytes, 8192);
        free(v[0].device);
        free(v);
}

static void test_parse_cpu_max_weight_limit(void **state) {
        int64_t q;
        uint64_t p, v;

        assert_int_equal(cadvisor_parse_cpu_max("max 100000\n", &q, &p), 0);
        assert_int_equal(q, 0);
        assert_int_equal(p, 100000);
        assert_int_equal(cadvisor_parse_cpu_max("50000 100000\n", &q, &p), 0);
        assert_int_equal(q, 50000);
        assert_int_equal(cadvisor_parse_cpu_max("x", &q, &p), -EINVAL);
        /* cAdvisor's conversion: weight 100 (the default) is 1024 shares less rounding, 1 is 2, 10000 is 262144 */
        assert_int_equal(cadvisor_weight_to_shares(1), 2);
        assert_int_equal(cadvisor_weight_to_shares(100), 2597);
        assert_int_equal(cadvisor_weight_to_shares(10000), 262144);
        assert_int_equal(cadvisor_parse_limit("max\n", &v), 0);
        assert_true(v == UINT64_MAX);
        assert_int_equal(cadvisor_parse_limit("9223372036854771712\n", &v), 0);
        assert_true(v == UINT64_C(9223372036854771712));
        assert_int_equal(cadvisor_parse_oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"), 3);
        assert_int_equal(cadvisor_parse_oom_kills("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n"), 2);
        assert_int_equal(cadvisor_parse_oom_kills("low 0\n"), 0);
}

static void test_mountinfo_split(void **state) {
        char line[] = "36 30 0:32 / /sys/fs/cgroup/pids rw,nosuid shared:5 - cgroup cgroup rw,pids";
        char optional[] = "36 30 0:32 / /mnt rw master:1 shared:5 - ext4 /dev/sda1 rw";
        char none[] = "36 30 0:32 / /mnt rw ext4 /dev/sda1 rw";
        char shortline[] = "1 2 - x";
        char *f[6], *tail = NULL;

        (void) state;
        assert_int_equal(cadvisor_mountinfo_split(line, f, &tail), 6);
        assert_string_equal(f[4], "/sys/fs/cgroup/pids");
        assert_string_equal(f[5], "rw,nosuid");
        assert_string_equal(tail, "cgroup cgroup rw,pids");
        /* no more than 6 fields, whatever optional fields follow */
        assert_int_equal(cadvisor_mountinfo_split(optional, f, &tail), 6);
        assert_string_equal(f[5], "rw");
        assert_string_equal(tail, "ext4 /dev/sda1 rw");
        /* no " - ": no tail */
        tail = line;
        assert_int_equal(cadvisor_mountinfo_split(none, f, &tail), 0);
        assert_null(tail);
        assert_int_equal(cadvisor_mountinfo_split(shortline, f, &tail), 2);
        assert_string_equal(f[1], "2");
        assert_string_equal(tail, "x");
}

static void test_parse_mountinfo(void **state) {
        struct cadvisor_hierarchies h = {};
        const char *hybrid = "24 1 0:21 / /sys rw - sysfs sysfs rw\n"
                             "30 24 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro\n"
                             "31 30 0:27 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
                             "33 30 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
                             "34 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                             "35 30 0:31 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio\n"
                             "36 30 0:32 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
                             "37 30 0:33 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n";
        const char *pure = "24 1 0:21 / /sys rw - sysfs sysfs rw\n"
                           "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";

        assert_int_equal(cadvisor_parse_mountinfo(hybrid, &h), 0);
        assert_false(h.v2);
        assert_string_equal(h.cpu, "/sys/fs/cgroup/cpu,cpuacct");
        assert_string_equal(h.cpuacct, "/sys/fs/cgroup/cpu,cpuacct");
        assert_string_equal(h.memory, "/sys/fs/cgroup/memory");
        assert_string_equal(h.blkio, "/sys/fs/cgroup/blkio");
        assert_string_equal(h.pids, "/sys/fs/cgroup/pids");
        assert_string_equal(h.unified, "/sys/fs/cgroup/unified");
        cadvisor_hierarchies_done(&h);
        assert_int_equal(cadvisor_parse_mountinfo(pure, &h), 0);
        assert_true(h.v2);
        assert_null(h.memory);
        assert_string_equal(h.unified, "/sys/fs/cgroup");
        cadvisor_hierarchies_done(&h);
}

static void test_net_ignored(void **state) {
        assert_true(cadvisor_net_ignored("lo"));
        assert_true(cadvisor_net_ignored("veth1234"));
        assert_true(cadvisor_net_ignored("docker0"));
        assert_false(cadvisor_net_ignored("eth0"));
}

/* ---------------------------------------------------------------- render */

static void labels(struct cadvisor_labels *l, const char *container, const char *id, const char *image,
                   const char *name, const char *ns, const char *pod) {
        l->container = strdup(container);
        l->id = strdup(id);
        l->image = strdup(image);
        l->name = strdup(name);
        l->namespace_ = strdup(ns);
        l->pod = strdup(pod);
}

static void test_render(void **state) {
        struct cadvisor_series s[3] = {};
        struct cadvisor_machine m = {
                .machine_id = "mid",
                .system_uuid = "uuid",
                .boot_id = "boot",
                .kernel_version = "6.1.0",
                .os_version = "Debian GNU/Linux 12 (bookworm)",
                .cores = 2,
                .physical_cores = 1,
                .sockets = 1,
                .memory_bytes = 4294967296,
                .swap_bytes = 0,
        };
        struct evbuffer *b = evbuffer_new();
        _cleanup_free_ char *text = NULL;

        /* given out of order: the output sorts them */
        labels(&s[0].labels, "app", "/kubepods/podu1/c1", "docker.io/library/busybox:1.36", "c1", "default", "p1");
        s[0].stats = (struct cadvisor_stats) {
                .timestamp_ms = 1700000000123,
                .creation_time_sec = 1699999000,
                .start_time_sec = 1699999001,
                .has_cpu = true,
                .cpu_total_ns = 2500000000,
                .cpu_user_ns = 2000000000,
                .cpu_system_ns = 500000000,
                .cfs_periods = 10,
                .cfs_throttled_periods = 2,
                .cfs_throttled_ns = 300000000,
                .has_cpu_spec = true,
                .cpu_shares = 512,
                .cpu_period_us = 100000,
                .cpu_quota_us = 50000,
                .has_memory = true,
                .mem_usage = 1048576,
                .mem_working_set = 524288,
                .mem_limit = UINT64_C(9223372036854771712),
                .has_memory_spec = true,
                .has_processes = true,
                .processes = 1,
                .threads = 2,
                .file_descriptors = 3,
        };
        labels(&s[1].labels, "", "/", "", "", "", "");
        s[1].stats = (struct cadvisor_stats) {
                .timestamp_ms = 1700000000100,
                .has_cpu = true,
                .cpu_total_ns = 1000000000000,
                .has_memory = true,
                .mem_usage = 2000000000,
                .mem_working_set = 1500000000,
        };
        s[1].stats.net = calloc(1, sizeof(struct net_dev_stats));
        s[1].stats.n_net = 1;
        strcpy(s[1].stats.net[0].name, "eth0");
        s[1].stats.net[0].rx_bytes = 42;
        labels(&s[2].labels, "", "/kubepods/podu1/sb", "", "sb", "default", "p1");
        s[2].stats = (struct cadvisor_stats) { .timestamp_ms = 1700000000200 }; /* nothing read but times */

        assert_int_equal(cadvisor_render(s, 3, &m, false, 1700000000999, b), 0);
        text = buffer_text(b);
        evbuffer_free(b);

        /* the version family first, families sorted, help and type lines verbatim */
        assert_true(startswith(text, "# HELP cadvisor_version_info A metric with a constant '1' value labeled by "
                                     "kernel version, OS version, docker version, cadvisor version & cadvisor "
                                     "revision.\n# TYPE cadvisor_version_info gauge\n"));
        assert_non_null(strstr(text, "kernelVersion=\"6.1.0\",osVersion=\"Debian GNU/Linux 12 (bookworm)\"} 1\n"));
        assert_non_null(strstr(text,
                               "# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in "
                               "seconds.\n# TYPE container_cpu_usage_seconds_total counter\n"
                               "container_cpu_usage_seconds_total{container=\"\",cpu=\"total\",id=\"/\",image=\"\","
                               "name=\"\",namespace=\"\",pod=\"\"} 1000 1700000000100\n"
                               "container_cpu_usage_seconds_total{container=\"app\",cpu=\"total\","
                               "id=\"/kubepods/podu1/c1\",image=\"docker.io/library/busybox:1.36\",name=\"c1\","
                               "namespace=\"default\",pod=\"p1\"} 2.5 1700000000123\n"));
        /* the throttling families only for a cgroup with a quota */
        assert_non_null(strstr(text,
                               "# TYPE container_cpu_cfs_throttled_periods_total counter\n"
                               "container_cpu_cfs_throttled_periods_total{container=\"app\",id=\"/kubepods/podu1/c1\","
                               "image=\"docker.io/library/busybox:1.36\",name=\"c1\",namespace=\"default\","
                               "pod=\"p1\"} 2 1700000000123\n# HELP"));
        assert_non_null(strstr(text, "container_cpu_cfs_throttled_seconds_total{container=\"app\""));
        assert_non_null(strstr(text, "} 0.3 1700000000123\n"));
        /* the interface label sorts between image and name */
        assert_non_null(strstr(text, "container_network_receive_bytes_total{container=\"\",id=\"/\",image=\"\","
                                     "interface=\"eth0\",name=\"\",namespace=\"\",pod=\"\"} 42 1700000000100\n"));
        /* spec families carry no timestamp; an unlimited memory limit reads 0 */
        assert_non_null(strstr(text, "container_spec_memory_limit_bytes{container=\"app\",id=\"/kubepods/podu1/c1\","
                                     "image=\"docker.io/library/busybox:1.36\",name=\"c1\",namespace=\"default\","
                                     "pod=\"p1\"} 0\n"));
        assert_non_null(strstr(text, "container_spec_cpu_quota{container=\"app\""));
        assert_non_null(strstr(text, "pod=\"p1\"} 50000\n"));
        assert_non_null(strstr(text, "container_start_time_seconds{container=\"app\""));
        assert_non_null(strstr(text, "pod=\"p1\"} 1.699999001e+09\n"));
        /* last seen: the scrape's time */
        assert_non_null(strstr(text, "container_last_seen{container=\"\",id=\"/\",image=\"\",name=\"\",namespace=\"\","
                                     "pod=\"\"} 1.7e+09 1700000000999\n"));
        assert_non_null(strstr(text, "# HELP container_scrape_error 1 if there was an error while getting container "
                                     "metrics, 0 otherwise\n# TYPE container_scrape_error gauge\n"
                                     "container_scrape_error 0\n"));
        assert_non_null(strstr(text,
                               "# HELP machine_cpu_cores Number of logical CPU cores.\n# TYPE machine_cpu_cores "
                               "gauge\nmachine_cpu_cores{boot_id=\"boot\",machine_id=\"mid\",system_uuid=\"uuid\"} "
                               "2 1700000000999\n"));
        assert_non_null(strstr(text, "machine_memory_bytes{boot_id=\"boot\",machine_id=\"mid\",system_uuid=\"uuid\"} "
                                     "4.294967296e+09 1700000000999\n"));
        assert_non_null(strstr(text, "machine_scrape_error 0\n"));
        /* a cgroup with nothing read has no cpu sample but its times */
        assert_null(strstr(text, "container_cpu_user_seconds_total{container=\"\",id=\"/kubepods/podu1/sb\""));
        assert_non_null(strstr(text, "container_creation_time_seconds{container=\"\",id=\"/kubepods/podu1/sb\""));
        /* families are in name order */
        {
                char prev[128] = "", name[128];
                for (const char *p = strstr(text, "# TYPE "); p; p = strstr(p + 1, "# TYPE ")) {
                        assert_int_equal(sscanf(p, "# TYPE %127s", name), 1);
                        assert_true(strcmp(prev, name) < 0);
                        strcpy(prev, name);
                }
        }
        for (size_t i = 0; i < 3; i++)
                cadvisor_series_done(&s[i]);
}

static void test_render_errors(void **state) {
        struct evbuffer *b = evbuffer_new();
        _cleanup_free_ char *text = NULL;

        assert_int_equal(cadvisor_render(NULL, 0, NULL, true, 1, b), 0);
        text = buffer_text(b);
        evbuffer_free(b);
        assert_non_null(strstr(text, "container_scrape_error 1\n"));
        assert_non_null(strstr(text, "machine_scrape_error 1\n"));
        assert_null(strstr(text, "machine_cpu_cores"));
        assert_null(strstr(text, "container_cpu_usage_seconds_total"));
}

/* ---------------------------------------------------------------- collector */

static const struct cadvisor_series *find(const struct cadvisor_series *v, size_t n, const char *id) {
        for (size_t i = 0; i < n; i++)
                if (streq(v[i].labels.id, id))
                        return &v[i];
        return NULL;
}

static void write_v1_cgroup(const char *root, const char *name, const char *usage_ns, const char *mem) {
        char p[512];
#define W(ctrl, file, content)                                                      \
        do {                                                                        \
                snprintf(p, sizeof(p), "/sys/fs/cgroup/%s%s/%s", ctrl, name, file); \
                assert_int_equal(fake_write(root, p, content), 0);                  \
        } while (0)
        W("cpuacct", "cpuacct.usage", usage_ns);
        W("cpuacct", "cpuacct.stat", "user 300\nsystem 100\n");
        W("cpu", "cpu.stat", "nr_periods 40\nnr_throttled 4\nthrottled_time 123000000\n");
        W("cpu", "cpu.shares", "102\n");
        W("cpu", "cpu.cfs_quota_us", "50000\n");
        W("cpu", "cpu.cfs_period_us", "100000\n");
        W("cpu", "cgroup.procs", "");
        W("memory", "memory.usage_in_bytes", mem);
        W("memory", "memory.max_usage_in_bytes", "9000000\n");
        W("memory", "memory.failcnt", "1\n");
        W("memory", "memory.limit_in_bytes", "67108864\n");
        W("memory", "memory.soft_limit_in_bytes", "9223372036854771712\n");
        W("memory", "memory.stat",
          "cache 1\nrss 2\ntotal_cache 3000\ntotal_rss 4000\ntotal_inactive_file 1000\n"
          "total_mapped_file 50\ntotal_swap 0\n");
        W("memory", "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
        W("blkio", "blkio.throttle.io_service_bytes_recursive", "253:0 Read 4096\n253:0 Write 8192\nTotal 12288\n");
        W("pids", "pids.current", "3\n");
        W("pids", "pids.max", "max\n");
#undef W
}

static void test_collect_v1(void **state) {
        char *root = fake_root_new();
        struct cadvisor_config cfg = { .cgroup_root = "/ckroot" };
        const char *devices[] = { "eth0", NULL };
        struct cadvisor *c = NULL;
        struct cadvisor_series *v = NULL;
        size_t n = 0;
        bool error = true;
        const struct cadvisor_series *s;
        const struct cadvisor_known_container kc[] = {
                { .id = "c1",
                  .pod_uid = "u1",
                  .pod_name = "p1",
                  .pod_namespace = "ns",
                  .container = "app",
                  .image = "docker.io/library/busybox:1.36",
                  .created_at_nsec = INT64_C(1700000000000000000) },
                { .id = "sb1",
                  .pod_uid = "u1",
                  .pod_name = "p1",
                  .pod_namespace = "ns",
                  .container = "",
                  .image = "",
                  .sandbox = true },
        };
        const struct cadvisor_known_pod kp[] = { { .uid = "u1", .name = "p1", .namespace_ = "ns" } };
        const struct cadvisor_known known = { kc, 2, kp, 1 };
        char pidpath[128];

        assert_non_null(root);
        cfg.host_root = root;
        cfg.net_devices = devices;
        assert_int_equal(fake_write(root, "/proc/self/mountinfo",
                                    "33 30 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
                                    "34 30 0:29 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n"
                                    "35 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
                                    "36 30 0:31 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio\n"
                                    "37 30 0:32 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"),
                         0);
        assert_int_equal(fake_write(root, "/sys/block/vda/dev", "253:0\n"), 0);
        assert_int_equal(fake_write(root, "/sys/block/loop0/dev", "7:0\n"), 0);
        assert_int_equal(fake_write(root, "/proc/net/dev",
                                    "Inter-|   Receive\n face |bytes\n"
                                    "    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n"
                                    "  eth0: 1000 10 1 2 0 0 0 0 2000 20 3 4 0 0 0 0\n"
                                    "   ck1: 5 5 0 0 0 0 0 0 5 5 0 0 0 0 0 0\n"),
                         0);
        /* the root */
        write_v1_cgroup(root, "", "5000000000\n", "100000000\n");
        /* kubepods, the pod, its sandbox and container; one cgroup nobody knows */
        write_v1_cgroup(root, "/ckroot/kubepods", "400\n", "1000\n");
        write_v1_cgroup(root, "/ckroot/kubepods/burstable", "300\n", "1000\n");
        write_v1_cgroup(root, "/ckroot/kubepods/burstable/podu1", "200\n", "1000\n");
        write_v1_cgroup(root, "/ckroot/kubepods/burstable/podu1/c1", "2500000000\n", "20000000\n");
        write_v1_cgroup(root, "/ckroot/kubepods/burstable/podu1/sb1", "100\n", "500000\n");
        write_v1_cgroup(root, "/ckroot/kubepods/burstable/podzz", "100\n", "1000\n");
        /* the sandbox's process and its network namespace */
        snprintf(pidpath, sizeof(pidpath), "/sys/fs/cgroup/cpu/ckroot/kubepods/burstable/podu1/sb1/cgroup.procs");
        assert_int_equal(fake_write(root, pidpath, "4242\n"), 0);
        assert_int_equal(fake_write(root, "/proc/4242/net/dev",
                                    "Inter-|   Receive\n face |bytes\n"
                                    "    lo: 9 9 0 0 0 0 0 0 9 9 0 0 0 0 0 0\n"
                                    "  eth0: 77 7 0 0 0 0 0 0 88 8 0 0 0 0 0 0\n"),
                         0);
        assert_int_equal(fake_mkdir(root, "/proc/4242/fd"), 0);
        assert_int_equal(fake_write(root, "/proc/4242/fd/0", ""), 0);
        assert_int_equal(fake_write(root, "/proc/4242/fd/1", ""), 0);

        assert_int_equal(cadvisor_new(&cfg, &c, NULL), 0);
        assert_int_equal(cadvisor_collect(c, &known, &v, &n, &error), 0);
        assert_false(error);
        assert_int_equal(n, 7);

        s = find(v, n, "/");
        assert_non_null(s);
        assert_true(s->stats.has_cpu);
        assert_int_equal(s->stats.cpu_total_ns, UINT64_C(5000000000));
        assert_int_equal(s->stats.n_net, 1);
        assert_string_equal(s->stats.net[0].name, "eth0");
        assert_int_equal(s->stats.net[0].tx_bytes, 2000);

        s = find(v, n, "/ckroot/kubepods/burstable/podu1/c1");
        assert_non_null(s);
        assert_string_equal(s->labels.container, "app");
        assert_string_equal(s->labels.pod, "p1");
        assert_string_equal(s->labels.namespace_, "ns");
        assert_string_equal(s->labels.name, "c1");
        assert_string_equal(s->labels.image, "docker.io/library/busybox:1.36");
        assert_int_equal(s->stats.cpu_total_ns, UINT64_C(2500000000));
        assert_int_equal(s->stats.cpu_user_ns, UINT64_C(3000000000)); /* 300 ticks of USER_HZ 100 */
        assert_int_equal(s->stats.cfs_throttled_periods, 4);
        assert_int_equal(s->stats.cfs_throttled_ns, 123000000);
        assert_int_equal(s->stats.cpu_shares, 102);
        assert_int_equal(s->stats.cpu_quota_us, 50000);
        assert_int_equal(s->stats.mem_usage, 20000000);
        assert_int_equal(s->stats.mem_working_set, 20000000 - 1000);
        assert_int_equal(s->stats.mem_cache, 3000);
        assert_int_equal(s->stats.mem_rss, 4000);
        assert_int_equal(s->stats.mem_limit, 67108864);
        assert_int_equal(s->stats.oom_events, 1);
        assert_int_equal(s->stats.n_disk_io, 1);
        assert_string_equal(s->stats.disk_io[0].device, "/dev/vda");
        assert_int_equal(s->stats.disk_io[0].write_bytes, 8192);
        assert_int_equal(s->stats.threads, 3);
        assert_int_equal(s->stats.threads_max, 0);
        assert_int_equal(s->stats.creation_time_sec, 1700000000);
        assert_int_equal(s->stats.n_net, 0); /* a container has no network series: the sandbox has */

        s = find(v, n, "/ckroot/kubepods/burstable/podu1/sb1");
        assert_non_null(s);
        assert_string_equal(s->labels.container, "");
        assert_string_equal(s->labels.pod, "p1");
        assert_int_equal(s->stats.n_net, 1);
        assert_string_equal(s->stats.net[0].name, "eth0");
        assert_int_equal(s->stats.net[0].rx_bytes, 77);
        assert_int_equal(s->stats.processes, 1);
        assert_int_equal(s->stats.file_descriptors, 2);

        s = find(v, n, "/ckroot/kubepods/burstable/podu1");
        assert_non_null(s);
        assert_string_equal(s->labels.pod, "p1");
        assert_string_equal(s->labels.container, "");
        assert_string_equal(s->labels.name, "");
        s = find(v, n, "/ckroot/kubepods/burstable/podzz");
        assert_non_null(s);
        assert_string_equal(s->labels.pod, "");
        assert_non_null(find(v, n, "/ckroot/kubepods"));

        cadvisor_series_free_all(v, n);
        cadvisor_free(c);
        fake_root_free(root);
}

/* the systemd driver's layout: kubepods given as its slice, pods in "<qos>-pod<uid_>.slice", containers in the
 * "cri-containerd-<id>.scope" of a runtime on the systemd driver */
static void test_collect_v1_systemd_slices(void **state) {
        char *root = fake_root_new();
        struct cadvisor_config cfg = { .cgroup_root = "/", .pods_cgroup = "/kubepods.slice" };
        struct cadvisor *c = NULL;
        struct cadvisor_series *v = NULL;
        size_t n = 0;
        bool error = true;
        const struct cadvisor_series *s;
        const struct cadvisor_known_container kc[] = {
                { .id = "c1",
                  .pod_uid = "u-1",
                  .pod_name = "p1",
                  .pod_namespace = "ns",
                  .container = "app",
                  .image = "busybox" },
        };
        const struct cadvisor_known_pod kp[] = { { .uid = "u-1", .name = "p1", .namespace_ = "ns" } };
        const struct cadvisor_known known = { kc, 1, kp, 1 };

        assert_non_null(root);
        cfg.host_root = root;
        assert_int_equal(fake_write(root, "/proc/self/mountinfo",
                                    "33 30 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
                                    "35 30 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"),
                         0);
        write_v1_cgroup(root, "", "5000000000\n", "100000000\n");
        write_v1_cgroup(root, "/kubepods.slice", "400\n", "1000\n");
        write_v1_cgroup(root, "/kubepods.slice/kubepods-burstable.slice", "300\n", "1000\n");
        write_v1_cgroup(root, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu_1.slice", "200\n",
                        "1000\n");
        write_v1_cgroup(root,
                        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu_1.slice/"
                        "cri-containerd-c1.scope",
                        "100\n", "1000\n");
        write_v1_cgroup(root, "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu_2.slice", "1\n",
                        "1000\n");

        assert_int_equal(cadvisor_new(&cfg, &c, NULL), 0);
        assert_int_equal(cadvisor_collect(c, &known, &v, &n, &error), 0);
        s = find(v, n, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu_1.slice");
        assert_non_null(s);
        assert_string_equal(s->labels.pod, "p1");
        assert_string_equal(s->labels.namespace_, "ns");
        assert_string_equal(s->labels.container, "");
        s = find(v, n,
                 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu_1.slice/cri-containerd-c1.scope");
        assert_non_null(s);
        assert_string_equal(s->labels.container, "app");
        assert_string_equal(s->labels.pod, "p1");
        s = find(v, n, "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu_2.slice");
        assert_non_null(s);
        assert_string_equal(s->labels.pod, ""); /* nobody knows u-2 */
        assert_non_null(find(v, n, "/kubepods.slice"));

        cadvisor_series_free_all(v, n);
        cadvisor_free(c);
        fake_root_free(root);
}

static void test_collect_v2(void **state) {
        char *root = fake_root_new();
        struct cadvisor_config cfg = { .cgroup_root = "/" };
        struct cadvisor *c = NULL;
        struct cadvisor_series *v = NULL;
        size_t n = 0;
        bool error = true;
        const struct cadvisor_series *s;
        const char *pod = "/sys/fs/cgroup/kubepods/podu2";

        assert_non_null(root);
        cfg.host_root = root;
        assert_int_equal(fake_write(root, "/proc/self/mountinfo",
                                    "30 24 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
                         0);
        assert_int_equal(fake_write(root, "/proc/meminfo", "MemTotal: 1000 kB\nMemFree: 400 kB\n"), 0);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/cpu.stat",
                                    "usage_usec 7000000\nuser_usec 5000000\n"
                                    "system_usec 2000000\n"),
                         0);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/memory.stat", "anon 100\nfile 200\ninactive_file 50\n"), 0);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/kubepods/cpu.stat", "usage_usec 1\n"), 0);
        {
                char p[256];
#define W(file, content)                                           \
        do {                                                       \
                snprintf(p, sizeof(p), "%s/%s", pod, file);        \
                assert_int_equal(fake_write(root, p, content), 0); \
        } while (0)
                W("cpu.stat", "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\nnr_periods 9\n"
                              "nr_throttled 3\nthrottled_usec 2000\n");
                W("cpu.weight", "100\n");
                W("cpu.max", "20000 100000\n");
                W("memory.current", "300000\n");
                W("memory.stat", "anon 200000\nfile 100000\nfile_mapped 10\ninactive_file 60000\n");
                W("memory.events", "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n");
                W("memory.max", "max\n");
                W("io.stat", "8:0 rbytes=10 wbytes=20 rios=1 wios=1\n");
                W("pids.current", "4\n");
                W("pids.max", "100\n");
                W("cgroup.procs", "");
                W("cpu.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=2500000\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=1500000\n");
                W("memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=30\n"
                                     "full avg10=0.00 avg60=0.00 avg300=0.00 total=20\n");
#undef W
        }
        assert_int_equal(cadvisor_new(&cfg, &c, NULL), 0);
        assert_int_equal(cadvisor_collect(c, NULL, &v, &n, &error), 0);
        assert_false(error);
        assert_int_equal(n, 3); /* /, /kubepods, /kubepods/podu2 */
        s = find(v, n, "/");
        assert_non_null(s);
        assert_int_equal(s->stats.cpu_total_ns, UINT64_C(7000000000));
        assert_int_equal(s->stats.mem_usage, 600 * 1024); /* MemTotal - MemFree: the root has no memory.current */
        s = find(v, n, "/kubepods/podu2");
        assert_non_null(s);
        assert_int_equal(s->stats.cpu_total_ns, UINT64_C(1500000000));
        assert_int_equal(s->stats.cpu_user_ns, UINT64_C(1000000000));
        assert_int_equal(s->stats.cfs_throttled_ns, 2000000);
        assert_int_equal(s->stats.cpu_quota_us, 20000);
        assert_int_equal(s->stats.cpu_shares, 2597);
        assert_int_equal(s->stats.mem_usage, 300000);
        assert_int_equal(s->stats.mem_working_set, 240000);
        assert_int_equal(s->stats.mem_rss, 200000);
        assert_int_equal(s->stats.mem_cache, 100000);
        assert_int_equal(s->stats.mem_failcnt, 5);
        assert_int_equal(s->stats.oom_events, 1);
        assert_true(s->stats.mem_limit == UINT64_MAX);
        assert_int_equal(s->stats.n_disk_io, 1);
        assert_string_equal(s->stats.disk_io[0].device, ""); /* no /sys/block here */
        assert_int_equal(s->stats.threads, 4);
        assert_int_equal(s->stats.threads_max, 100);
        /* PSI where the cgroup has the files (io.pressure missing here) */
        assert_true(s->stats.has_psi_cpu);
        assert_int_equal(s->stats.psi_cpu.some.total, 2500000);
        assert_int_equal(s->stats.psi_cpu.full.total, 1500000);
        assert_true(s->stats.has_psi_memory);
        assert_int_equal(s->stats.psi_memory.full.total, 20);
        assert_false(s->stats.has_psi_io);
        {
                struct evbuffer *out = evbuffer_new();
                char *text;
                assert_int_equal(cadvisor_render(v, n, NULL, false, 1000, out), 0);
                assert_int_equal(evbuffer_add(out, "", 1), 0);
                text = (char *) evbuffer_pullup(out, -1);
                assert_non_null(strstr(text, "# TYPE container_pressure_cpu_stalled_seconds_total counter\n"));
                assert_non_null(strstr(text,
                                       "container_pressure_cpu_stalled_seconds_total{container=\"\",id=\"/kubepods/"
                                       "podu2\",image=\"\",name=\"\",namespace=\"\",pod=\"\"} 1.5 "));
                assert_non_null(strstr(text,
                                       "container_pressure_cpu_waiting_seconds_total{container=\"\",id=\"/kubepods/"
                                       "podu2\",image=\"\",name=\"\",namespace=\"\",pod=\"\"} 2.5 "));
                assert_non_null(strstr(text,
                                       "# HELP container_pressure_memory_waiting_seconds_total Total time duration "
                                       "tasks in the container have waited due to memory congestion.\n"));
                assert_null(strstr(text, "container_pressure_io_"));
                evbuffer_free(out);
        }
        cadvisor_series_free_all(v, n);
        cadvisor_free(c);
        fake_root_free(root);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_cpuacct_stat),
                cmocka_unit_test(test_parse_blkio),
                cmocka_unit_test(test_parse_cpu_max_weight_limit),
                cmocka_unit_test(test_mountinfo_split),
                cmocka_unit_test(test_parse_mountinfo),
                cmocka_unit_test(test_net_ignored),
                cmocka_unit_test(test_render),
                cmocka_unit_test(test_render_errors),
                cmocka_unit_test(test_collect_v1),
                cmocka_unit_test(test_collect_v1_systemd_slices),
                cmocka_unit_test(test_collect_v2),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
