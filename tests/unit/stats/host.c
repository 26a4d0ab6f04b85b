/* SPDX-License-Identifier: Apache-2.0 */
/* Node statistics from fake /proc, /sys and cgroupfs trees: cgroup v1 and v2, /proc/net/dev, routes, nano cores,
 * rlimit, disk usage. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/time.h"
#include "stats/host.h"
#include "testutil.h"

static void test_parse_basic(void **state) {
        uint64_t v = 7;
        unsigned n = 0;

        assert_int_equal(stats_parse_u64(" 123\n", &v), 0);
        assert_int_equal(v, 123);
        assert_int_equal(stats_parse_u64("12x", &v), -EINVAL);
        assert_int_equal(stats_parse_u64("", &v), -EINVAL);
        assert_int_equal(stats_parse_u64("-1", &v), -EINVAL);
        assert_int_equal(stats_parse_u64("99999999999999999999999", &v), -ERANGE);
        assert_int_equal(v, 123); /* untouched on failure */

        assert_int_equal(stats_parse_keyed("cache 10\nrss 20\nrss_huge 30\ntotal_rss 40\n", "rss", &v), 0);
        assert_int_equal(v, 20);
        assert_int_equal(stats_parse_keyed("cache 10\nrss_huge 30\n", "rss", &v), -ENOENT);
        assert_int_equal(stats_parse_keyed("usage_usec 5\tx\n", "usage_usec", &v), 0);
        assert_int_equal(v, 5);
        assert_int_equal(stats_parse_keyed("a 1\nb zz\n", "b", &v), -EINVAL);

        assert_int_equal(stats_parse_meminfo("MemTotal:       16318412 kB\nMemFree:  1 kB\nHugePages_Total:       4\n",
                                             "MemTotal", &v),
                         0);
        assert_int_equal(v, UINT64_C(16318412) * 1024);
        assert_int_equal(stats_parse_meminfo("MemTotal: 2 kB\nHugePages_Total:       4\n", "HugePages_Total", &v), 0);
        assert_int_equal(v, 4);
        assert_int_equal(stats_parse_meminfo("MemTotal: 2 kB\n", "MemFree", &v), -ENOENT);
        /* a key that is a prefix of another does not match it */
        assert_int_equal(stats_parse_meminfo("Inactive(file): 3 kB\nInactive: 9 kB\n", "Inactive", &v), 0);
        assert_int_equal(v, 9 * 1024);

        assert_int_equal(stats_parse_cpu_list("0-3,6,8-9\n", &n), 0);
        assert_int_equal(n, 7);
        assert_int_equal(stats_parse_cpu_list("0\n", &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(stats_parse_cpu_list("3-1", &n), -EINVAL);
        assert_int_equal(stats_parse_cpu_list("", &n), -EINVAL);
        assert_int_equal(n, 1);
}

static const char v1_memory_stat[] = "cache 1000\nrss 2000\nrss_huge 0\npgfault 11\npgmajfault 1\ninactive_file 5\n"
                                     "total_cache 453738496\ntotal_rss 111329280\ntotal_pgfault 10628592\n"
                                     "total_pgmajfault 1179\ntotal_inactive_file 196190208\n";

static void test_cgroup_v1(void **state) {
        struct cgroup_cpu_memory m = {};
        char *root = fake_root_new();

        assert_non_null(root);
        assert_int_equal(stats_cgroup_v1_parse_memory("603996160\n", v1_memory_stat, &m), 0);
        assert_true(m.has_memory);
        assert_int_equal(m.memory_usage_bytes, 603996160);
        assert_int_equal(m.memory_working_set_bytes, 603996160 - 196190208);
        assert_int_equal(m.memory_rss_bytes, 111329280);
        assert_int_equal(m.memory_page_faults, 10628592);
        assert_int_equal(m.memory_major_page_faults, 1179);
        /* working set floored at 0 */
        assert_int_equal(stats_cgroup_v1_parse_memory("100", "total_inactive_file 200\n", &m), 0);
        assert_int_equal(m.memory_working_set_bytes, 0);
        assert_int_equal(stats_working_set(5, 7), 0);
        assert_int_equal(stats_cgroup_v1_parse_memory("x", v1_memory_stat, &m), -EINVAL);

        /* a fake v1 hierarchy with split cpu and cpuacct mounts (as on this host) */
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/cpuacct/cpuacct.usage", "379793781517\n"), 0);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/memory/memory.usage_in_bytes", "603996160\n"), 0);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/memory/memory.stat", v1_memory_stat), 0);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/unified/cgroup.controllers", "\n"), 0); /* hybrid */
        assert_false(stats_cgroup_is_unified(root));
        m = (struct cgroup_cpu_memory) {};
        assert_int_equal(stats_cgroup_read_root(root, &m), 0);
        assert_true(m.has_cpu);
        assert_int_equal(m.cpu_usage_nsec, UINT64_C(379793781517));
        assert_true(m.has_memory);
        assert_int_equal(m.memory_working_set_bytes, 603996160 - 196190208);

        /* the combined cpu,cpuacct mount wins */
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", "42\n"), 0);
        assert_int_equal(stats_cgroup_read_root(root, &m), 0);
        assert_int_equal(m.cpu_usage_nsec, 42);

        fake_root_free(root);
}

static void test_cgroup_v2(void **state) {
        struct cgroup_cpu_memory m = {};
        char *root = fake_root_new();
        uint64_t ns = 0;

        assert_int_equal(stats_cgroup_v2_parse_cpu("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n", &ns), 0);
        assert_int_equal(ns, 1500000);
        assert_int_equal(stats_cgroup_v2_parse_cpu("user_usec 1000\n", &ns), -ENOENT);

        assert_int_equal(stats_cgroup_v2_parse_memory(
                                 "1000\n", "anon 300\nfile 600\ninactive_file 250\npgfault 9\npgmajfault 2\n", &m),
                         0);
        assert_int_equal(m.memory_usage_bytes, 1000);
        assert_int_equal(m.memory_working_set_bytes, 750);
        assert_int_equal(m.memory_rss_bytes, 300);
        assert_int_equal(m.memory_page_faults, 9);
        assert_int_equal(m.memory_major_page_faults, 2);
        /* the root group has no memory.current: anon + file */
        assert_int_equal(stats_cgroup_v2_parse_memory(NULL, "anon 300\nfile 600\ninactive_file 250\n", &m), 0);
        assert_int_equal(m.memory_usage_bytes, 900);
        assert_int_equal(m.memory_working_set_bytes, 650);

        assert_non_null(root);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n"), 0);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/cpu.stat", "usage_usec 2000000\nuser_usec 1\n"), 0);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/memory.stat",
                                    "anon 4096\nfile 8192\ninactive_file 1024\npgfault 5\npgmajfault 1\n"),
                         0);
        assert_true(stats_cgroup_is_unified(root));
        m = (struct cgroup_cpu_memory) {};
        assert_int_equal(stats_cgroup_read_root(root, &m), 0);
        assert_true(m.has_cpu);
        assert_int_equal(m.cpu_usage_nsec, UINT64_C(2000000000));
        assert_true(m.has_memory);
        assert_int_equal(m.memory_usage_bytes, 12288);
        assert_int_equal(m.memory_working_set_bytes, 11264);
        assert_int_equal(m.memory_rss_bytes, 4096);

        /* no root memory.stat (older kernels): /proc/meminfo and /proc/vmstat */
        assert_int_equal(unlink(tpath(root, "/sys/fs/cgroup/memory.stat")), 0);
        assert_int_equal(fake_write(root, "/proc/meminfo",
                                    "MemTotal: 1000 kB\nMemFree: 400 kB\nInactive(file): 100 kB\nAnonPages: 50 kB\n"),
                         0);
        assert_int_equal(fake_write(root, "/proc/vmstat", "pgfault 77\npgmajfault 3\n"), 0);
        assert_int_equal(stats_cgroup_read_root(root, &m), 0);
        assert_int_equal(m.memory_usage_bytes, 600 * 1024);
        assert_int_equal(m.memory_working_set_bytes, 500 * 1024);
        assert_int_equal(m.memory_rss_bytes, 50 * 1024);
        assert_int_equal(m.memory_page_faults, 77);
        assert_int_equal(m.memory_major_page_faults, 3);

        fake_root_free(root);
}

static void test_psi_and_swap(void **state) {
        struct psi_stats ps = { .some.total = 99 };
        uint64_t used = 0, limit = 0;
        char *root = fake_root_new();

        assert_int_equal(stats_parse_psi("some avg10=1.50 avg60=0.25 avg300=0.00 total=123456\n"
                                         "full avg10=0.10 avg60=0.00 avg300=0.01 total=789\n",
                                         &ps),
                         0);
        assert_int_equal(ps.some.total, 123456);
        assert_true(ps.some.avg10 > 1.49 && ps.some.avg10 < 1.51);
        assert_true(ps.some.avg60 > 0.24 && ps.some.avg60 < 0.26);
        assert_int_equal(ps.full.total, 789);
        assert_true(ps.full.avg300 > 0.009 && ps.full.avg300 < 0.011);
        /* cpu.pressure before 5.13: no full line, zeros */
        assert_int_equal(stats_parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", &ps), 0);
        assert_int_equal(ps.some.total, 5);
        assert_int_equal(ps.full.total, 0);
        /* bad input leaves the output alone */
        ps.some.total = 77;
        assert_int_equal(stats_parse_psi("full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n", &ps), -EINVAL);
        assert_int_equal(stats_parse_psi("some avg10=0.00 avg60=0.00 total=5\n", &ps), -EINVAL);
        assert_int_equal(stats_parse_psi("some avg10=x avg60=0.00 avg300=0.00 total=5\n", &ps), -EINVAL);
        assert_int_equal(stats_parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00 total=-5\n", &ps), -EINVAL);
        assert_int_equal(stats_parse_psi("", &ps), -EINVAL);
        assert_int_equal(ps.some.total, 77);

        assert_non_null(root);
        /* the node: the root cgroup's file, else /proc/pressure */
        assert_int_equal(stats_node_read_psi(root, "io", &ps), -ENOENT);
        assert_int_equal(fake_write(root, "/proc/pressure/io",
                                    "some avg10=0.00 avg60=0.00 avg300=0.00 total=11\n"
                                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n"),
                         0);
        assert_int_equal(stats_node_read_psi(root, "io", &ps), 0);
        assert_int_equal(ps.some.total, 11);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/io.pressure",
                                    "some avg10=0.00 avg60=0.00 avg300=0.00 total=12\n"
                                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=8\n"),
                         0);
        assert_int_equal(stats_node_read_psi(root, "io", &ps), 0);
        assert_int_equal(ps.some.total, 12);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/kubepods/memory.pressure",
                                    "some avg10=0.00 avg60=0.00 avg300=0.00 total=3\n"
                                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=2\n"),
                         0);
        assert_int_equal(stats_cgroup_read_psi(root, "/kubepods", "memory", &ps), 0);
        assert_int_equal(ps.full.total, 2);

        /* swap: the cgroup's current and max, the node's from meminfo */
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/kubepods/memory.swap.current", "4096\n"), 0);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/kubepods/memory.swap.max", "max\n"), 0);
        assert_int_equal(stats_cgroup_read_swap(root, "/kubepods", &used, &limit), 0);
        assert_int_equal(used, 4096);
        assert_true(limit == UINT64_MAX);
        assert_int_equal(fake_write(root, "/sys/fs/cgroup/kubepods/memory.swap.max", "1048576\n"), 0);
        assert_int_equal(stats_cgroup_read_swap(root, "/kubepods", &used, &limit), 0);
        assert_int_equal(limit, 1048576);
        assert_int_equal(stats_cgroup_read_swap(root, "/nonexistent", &used, &limit), -ENOENT);
        assert_int_equal(fake_write(root, "/proc/meminfo", "MemTotal: 1000 kB\nSwapTotal: 300 kB\nSwapFree: 100 kB\n"),
                         0);
        assert_int_equal(stats_node_read_swap(root, &used, &limit), 0);
        assert_int_equal(used, 200 * 1024);
        assert_int_equal(limit, 100 * 1024);

        /* swap on: an entry after /proc/swaps' header; no file: off */
        {
                bool on = true;
                assert_int_equal(stats_swap_is_on(root, &on), 0);
                assert_false(on);
                assert_int_equal(fake_write(root, "/proc/swaps", "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"),
                                 0);
                on = true;
                assert_int_equal(stats_swap_is_on(root, &on), 0);
                assert_false(on);
                assert_int_equal(fake_write(root, "/proc/swaps",
                                            "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
                                            "/swapfile                               file\t\t524284\t\t0\t\t-2\n"),
                                 0);
                assert_int_equal(stats_swap_is_on(root, &on), 0);
                assert_true(on);
                /* the swap controller: memory.swap.max in our own v2 cgroup */
                assert_false(stats_swap_controller_v2(root));
                assert_int_equal(fake_write(root, "/sys/fs/cgroup/cgroup.controllers", "memory\n"), 0);
                assert_int_equal(fake_write(root, "/proc/self/cgroup", "0::/system.slice/ckubelet.service\n"), 0);
                assert_false(stats_swap_controller_v2(root));
                assert_int_equal(fake_write(root, "/sys/fs/cgroup/system.slice/ckubelet.service/memory.swap.max",
                                            "max\n"),
                                 0);
                assert_true(stats_swap_controller_v2(root));
        }
        fake_root_free(root);
}

static void test_cgroup_missing(void **state) {
        struct cgroup_cpu_memory m = { .cpu_usage_nsec = 99 };
        char *root = fake_root_new();
        assert_int_equal(stats_cgroup_read_root(root, &m), -ENOENT);
        assert_int_equal(m.cpu_usage_nsec, 99);
        fake_root_free(root);
}

static const char net_dev[] =
        "Inter-|   Receive                                                |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
        "    lo: 54190505    7104    0    0    0     0          0         0 54190505    7104    0    0    0     0       0          0\n"
        "  eth0: 63754930    2073    3    4    0     0          0         0   102260    1442    5    6    0     0       0          0\n"
        "  ck68:   26000     365    0    0    0     0          0       365    11194     103    0    0    0     0       0          0\n"
        "vethabc: 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"
        "  eth1: 100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n"
        " bad: 1 2 3\n";

static const char net_route[] = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
                                "ck68\t0000A80A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n"
                                "eth1\t00000000\t010200C0\t0003\t0\t0\t200\t00000000\t0\t0\t0\n"
                                "eth0\t00000000\t010200C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
                                "eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";

static void test_net_dev(void **state) {
        struct net_dev_stats *v = NULL;
        size_t n = 0;
        char def[IF_NAMESIZE] = "";

        assert_int_equal(stats_proc_net_dev_parse(net_dev, &v, &n), 0);
        assert_int_equal(n, 5);
        assert_string_equal(v[0].name, "lo");
        assert_string_equal(v[1].name, "eth0");
        assert_int_equal(v[1].rx_bytes, 63754930);
        assert_int_equal(v[1].rx_packets, 2073);
        assert_int_equal(v[1].rx_errors, 3);
        assert_int_equal(v[1].rx_dropped, 4);
        assert_int_equal(v[1].tx_bytes, 102260);
        assert_int_equal(v[1].tx_packets, 1442);
        assert_int_equal(v[1].tx_errors, 5);
        assert_int_equal(v[1].tx_dropped, 6);
        assert_string_equal(v[3].name, "vethabc");
        assert_int_equal(v[3].tx_bytes, 9);
        assert_string_equal(v[4].name, "eth1");
        free(v);

        assert_int_equal(stats_proc_net_dev_parse("", &v, &n), 0);
        assert_int_equal(n, 0);
        free(v);

        /* lowest metric among the up default routes */
        assert_int_equal(stats_proc_net_route_default(net_route, def), 0);
        assert_string_equal(def, "eth0");
        assert_int_equal(stats_proc_net_route_default("Iface\tDestination\n", def), -ENOENT);

        assert_true(stats_net_iface_ignored("lo"));
        assert_true(stats_net_iface_ignored("veth1234"));
        assert_true(stats_net_iface_ignored("cni0"));
        assert_true(stats_net_iface_ignored("docker0"));
        assert_true(stats_net_iface_ignored("flannel.1"));
        assert_false(stats_net_iface_ignored("eth0"));
        assert_false(stats_net_iface_ignored("local0"));
}

static void test_node_network(void **state) {
        char *root = fake_root_new();
        struct net_dev_stats *v = NULL;
        char *def = NULL;
        size_t n = 0;

        assert_int_equal(fake_write(root, "/proc/net/dev", net_dev), 0);
        assert_int_equal(fake_write(root, "/proc/net/route", net_route), 0);
        assert_int_equal(fake_mkdir(root, "/sys/class/net/ck68/bridge"), 0); /* a bridge */
        assert_int_equal(stats_node_network_read(root, &v, &n, &def), 0);
        assert_int_equal(n, 2);
        assert_string_equal(v[0].name, "eth0");
        assert_string_equal(v[1].name, "eth1");
        assert_string_equal(def, "eth0");
        free(v);
        free(def);

        /* no default route: the first interface */
        assert_int_equal(fake_write(root, "/proc/net/route", "Iface\tDestination\n"), 0);
        assert_int_equal(stats_node_network_read(root, &v, &n, &def), 0);
        assert_string_equal(def, "eth0");
        free(v);
        free(def);
        fake_root_free(root);
}

static void test_nano_cores(void **state) {
        uint64_t r = 0;
        /* 0.5 s of CPU in 1 s: half a core */
        assert_true(stats_nano_cores(1000000000, 10 * NSEC_PER_SEC, 1500000000, 11 * NSEC_PER_SEC, &r));
        assert_int_equal(r, 500000000);
        /* 3 cores busy for 10 s: no overflow */
        assert_true(stats_nano_cores(0, 0, UINT64_C(30000000000), 10 * NSEC_PER_SEC, &r));
        assert_int_equal(r, UINT64_C(3000000000));
        r = 7;
        assert_false(stats_nano_cores(100, 10, 200, 10, &r)); /* no time elapsed */
        assert_false(stats_nano_cores(100, 10, 200, 9, &r));  /* time went back */
        assert_false(stats_nano_cores(200, 10, 100, 20, &r)); /* counter reset */
        assert_int_equal(r, 7);
        assert_true(stats_nano_cores(100, 10, 100, 20, &r)); /* idle */
        assert_int_equal(r, 0);
}

static void test_rlimit_boot(void **state) {
        char *root = fake_root_new();
        int64_t maxpid = 0, cur = 0, bt = 0;

        assert_int_equal(stats_read_rlimit(root, &maxpid, &cur), -ENOENT);
        assert_int_equal(fake_write(root, "/proc/sys/kernel/pid_max", "4194304\n"), 0);
        assert_int_equal(fake_write(root, "/proc/sys/kernel/threads-max", "191669\n"), 0);
        assert_int_equal(fake_write(root, "/proc/loadavg", "0.52 0.58 0.59 3/467 12345\n"), 0);
        assert_int_equal(stats_read_rlimit(root, &maxpid, &cur), 0);
        assert_int_equal(maxpid, 191669);
        assert_int_equal(cur, 467);
        /* no loadavg: count the numeric entries of /proc */
        assert_int_equal(unlink(tpath(root, "/proc/loadavg")), 0);
        assert_int_equal(fake_mkdir(root, "/proc/1"), 0);
        assert_int_equal(fake_mkdir(root, "/proc/42"), 0);
        assert_int_equal(fake_mkdir(root, "/proc/self"), 0);
        assert_int_equal(stats_read_rlimit(root, &maxpid, &cur), 0);
        assert_int_equal(cur, 2);

        assert_int_equal(fake_write(root, "/proc/stat", "cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n"), 0);
        assert_int_equal(stats_read_boot_time(root, &bt), 0);
        assert_int_equal(bt, 1700000000);
        fake_root_free(root);
}

/* a chain of depth directories under dir, with a 64 KiB file at the bottom, built with dirfds (no PATH_MAX) */
static void make_deep(const char *dir, unsigned depth) {
        static char block[65536];
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), f;

        assert_true(fd >= 0);
        for (unsigned i = 0; i < depth; i++) {
                int nfd;
                assert_int_equal(mkdirat(fd, "d", 0755), 0);
                nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                assert_true(nfd >= 0);
                close(fd);
                fd = nfd;
        }
        memset(block, 'x', sizeof(block));
        f = openat(fd, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        assert_true(f >= 0);
        assert_int_equal(write(f, block, sizeof(block)), (ssize_t) sizeof(block));
        assert_int_equal(fsync(f), 0);
        close(f);
        close(fd);
}

/* issue 26 item 3: data at any depth is counted (the old walk stopped at 16 levels) */
static void test_disk_usage_counts_every_depth(void **state) {
        char *root = fake_root_new();
        _cleanup_free_ char *d17 = NULL, *d300 = NULL;
        uint64_t bytes = 0, inodes = 0;

        assert_int_equal(fake_mkdir(root, "/d17"), 0);
        assert_int_equal(fake_mkdir(root, "/d300"), 0);
        assert_true(asprintf(&d17, "%s/d17", root) > 0);
        assert_true(asprintf(&d300, "%s/d300", root) > 0);
        make_deep(d17, 17);
        assert_int_equal(stats_dir_disk_usage(d17, &bytes, &inodes), 0);
        assert_int_equal(inodes, 1 + 17 + 1);
        assert_true(bytes >= 65536);
        /* deeper than the fds the walk holds at once: its deep levels are reopened and repositioned */
        make_deep(d300, 300);
        assert_int_equal(stats_dir_disk_usage(d300, &bytes, &inodes), 0);
        assert_int_equal(inodes, 1 + 300 + 1);
        assert_true(bytes >= 65536);
        assert_true(bytes < STATS_DU_UNKNOWN);
        fake_root_free(root);
}

static void test_disk_usage_does_not_enter_mounts(void **state) {
        char *root = fake_root_new();
        _cleanup_free_ char *vol = NULL, *other = NULL, *mp = NULL;
        uint64_t bytes = 0, inodes = 0;

        assert_int_equal(fake_mkdir(root, "/vol/m"), 0);
        assert_int_equal(fake_write(root, "/other/a", "a"), 0);
        assert_int_equal(fake_write(root, "/other/b", "b"), 0);
        assert_int_equal(fake_write(root, "/vol/link", "x"), 0);
        assert_true(asprintf(&vol, "%s/vol", root) > 0);
        assert_true(asprintf(&other, "%s/other", root) > 0);
        assert_true(asprintf(&mp, "%s/vol/m", root) > 0);
        if (mount(other, mp, NULL, MS_BIND, NULL) < 0) {
                fake_root_free(root);
                skip(); /* not root */
        }
        assert_int_equal(stats_dir_disk_usage(vol, &bytes, &inodes), 0);
        assert_int_equal(umount2(mp, MNT_DETACH), 0);
        assert_int_equal(inodes, 2); /* vol and link: a bind mount of the same filesystem is another volume */
        fake_root_free(root);
}

static void test_disk_usage(void **state) {
        char *root = fake_root_new();
        _cleanup_free_ char *dir = NULL;
        char big[10000];
        uint64_t bytes = 0, inodes = 0;
        struct fs_usage fs;

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        assert_int_equal(fake_write(root, "/logs/app/0.log", big), 0);
        assert_int_equal(fake_write(root, "/logs/app/1.log", "hello\n"), 0);
        assert_int_equal(fake_mkdir(root, "/logs/app/sub"), 0);
        assert_int_equal(asprintf(&dir, "%s/logs/app", root) > 0, true);
        assert_int_equal(stats_dir_disk_usage(dir, &bytes, &inodes), 0);
        assert_int_equal(inodes, 4); /* app, 0.log, 1.log, sub */
        assert_true(bytes >= 10000);
        assert_int_equal(stats_dir_disk_usage("/nonexistent/ckubelet", &bytes, &inodes), -ENOENT);

        assert_int_equal(stats_fs_usage_statvfs(root, &fs), 0);
        assert_true(fs.capacity_bytes > 0);
        assert_true(fs.capacity_bytes >= fs.available_bytes);
        assert_true(fs.inodes == 0 || fs.inodes >= fs.inodes_free);
        fake_root_free(root);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_basic),
                cmocka_unit_test(test_cgroup_v1),
                cmocka_unit_test(test_cgroup_v2),
                cmocka_unit_test(test_cgroup_missing),
                cmocka_unit_test(test_psi_and_swap),
                cmocka_unit_test(test_net_dev),
                cmocka_unit_test(test_node_network),
                cmocka_unit_test(test_nano_cores),
                cmocka_unit_test(test_rlimit_boot),
                cmocka_unit_test(test_disk_usage),
                cmocka_unit_test(test_disk_usage_counts_every_depth),
                cmocka_unit_test(test_disk_usage_does_not_enter_mounts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
