/* SPDX-License-Identifier: Apache-2.0 */
/* Machine info from a fake root, and its cadvisor-shaped JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/time.h"
#include "stats/machine.h"
#include "testutil.h"

static const char cpuinfo[] =
        "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel name\t: Fake CPU\n"
        "cpu MHz\t\t: 2096.023\nphysical id\t: 0\nsiblings\t: 2\ncore id\t\t: 0\ncpu cores\t: 2\n\n"
        "processor\t: 1\nvendor_id\t: GenuineIntel\ncpu MHz\t\t: 1800.000\nphysical id\t: 0\ncore id\t\t: 1\n\n"
        "processor\t: 2\nvendor_id\t: GenuineIntel\ncpu MHz\t\t: 1800.000\nphysical id\t: 1\ncore id\t\t: 0\n\n"
        "processor\t: 3\nvendor_id\t: GenuineIntel\ncpu MHz\t\t: 1800.000\nphysical id\t: 1\ncore id\t\t: 0\n\n";

static char *make_root(void) {
        char *root = fake_root_new();
        assert_non_null(root);
        assert_int_equal(fake_write(root, "/proc/cpuinfo", cpuinfo), 0);
        assert_int_equal(fake_write(root, "/sys/devices/system/cpu/online", "0-3\n"), 0);
        assert_int_equal(
                fake_write(root, "/proc/meminfo",
                           "MemTotal:       16318412 kB\nMemFree:         1000 kB\nSwapTotal:       2097148 kB\n"),
                0);
        assert_int_equal(fake_write(root, "/etc/machine-id", "3d1219c7c4c5404aaa1f6d2a48adfda4\n"), 0);
        assert_int_equal(fake_write(root, "/sys/class/dmi/id/product_uuid", "EC2A1B2C-0000-1111-2222-333344445555\n"),
                         0);
        assert_int_equal(fake_write(root, "/proc/sys/kernel/random/boot_id", "db78cbc0-ce77-47a0-8404-f154b7cc7e18\n"),
                         0);
        assert_int_equal(fake_write(root, "/proc/sys/kernel/osrelease", "6.1.0-test-amd64\n"), 0);
        assert_int_equal(
                fake_write(root, "/etc/os-release",
                           "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\n"),
                0);
        assert_int_equal(fake_write(root, "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "16\n"), 0);
        assert_int_equal(fake_write(root, "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "0\n"), 0);
        assert_int_equal(fake_write(root, "/sys/class/net/eth0/address", "02:fc:00:00:00:01\n"), 0);
        assert_int_equal(fake_write(root, "/sys/class/net/eth0/mtu", "1500\n"), 0);
        assert_int_equal(fake_write(root, "/sys/class/net/eth0/speed", "10000\n"), 0);
        assert_int_equal(fake_write(root, "/sys/class/net/lo/mtu", "65536\n"), 0);
        assert_int_equal(fake_write(root, "/sys/class/net/veth1/mtu", "1500\n"), 0);
        return root;
}

static void test_read(void **state) {
        char *root = make_root();
        struct machine_info m = {};

        assert_int_equal(stats_machine_info_read(root, &m), 0);
        assert_int_equal(m.num_cores, 4);
        /* no sysfs topology in the fake root: cpuinfo's (physical id, core id) pairs */
        assert_int_equal(m.num_physical_cores, 3);
        assert_int_equal(m.num_sockets, 2);
        assert_string_equal(m.vendor_id, "GenuineIntel");
        assert_int_equal(m.cpu_frequency_khz, 2096023); /* the first "cpu MHz", as cadvisor */
        assert_int_equal(m.memory_capacity, UINT64_C(16318412) * 1024);
        assert_int_equal(m.swap_capacity, UINT64_C(2097148) * 1024);
        assert_string_equal(m.machine_id, "3d1219c7c4c5404aaa1f6d2a48adfda4");
        assert_string_equal(m.system_uuid, "EC2A1B2C-0000-1111-2222-333344445555");
        assert_string_equal(m.boot_id, "db78cbc0-ce77-47a0-8404-f154b7cc7e18");
        assert_string_equal(m.kernel_version, "6.1.0-test-amd64");
        assert_string_equal(m.os_image, "Debian GNU/Linux 12 (bookworm)");
        assert_non_null(m.architecture);
        assert_int_equal(m.n_hugepages, 2);
        assert_int_equal(m.hugepages[0].page_size_kb, 2048);
        assert_int_equal(m.hugepages[0].num_pages, 16);
        assert_int_equal(m.hugepages[1].page_size_kb, 1048576);
        assert_int_equal(m.n_network_devices, 1); /* lo and veth are left out, as cadvisor */
        assert_string_equal(m.network_devices[0].name, "eth0");
        assert_string_equal(m.network_devices[0].mac_address, "02:fc:00:00:00:01");
        assert_int_equal(m.network_devices[0].mtu, 1500);
        assert_int_equal(m.network_devices[0].speed, 10000);
        stats_machine_info_done(&m);
        stats_machine_info_done(&m); /* idempotent */
        stats_machine_info_done(NULL);
        fake_root_free(root);
}

static void test_sysfs_and_fallbacks(void **state) {
        char *root = make_root();
        struct machine_info m = {};

        /* sysfs topology wins over cpuinfo; cpufreq max wins over "cpu MHz"; cpu2 offline */
        for (int i = 0; i < 4; i++) {
                char p[128];
                snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", i);
                assert_int_equal(fake_write(root, p, "0\n"), 0);
                snprintf(p, sizeof(p), "/sys/devices/system/cpu/cpu%d/topology/core_id", i);
                assert_int_equal(fake_write(root, p, i < 2 ? "0\n" : "1\n"), 0);
        }
        assert_int_equal(fake_write(root, "/sys/devices/system/cpu/cpu3/online", "0\n"), 0);
        assert_int_equal(fake_write(root, "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "3500000\n"), 0);
        assert_int_equal(unlink(tpath(root, "/sys/class/dmi/id/product_uuid")), 0);
        assert_int_equal(unlink(tpath(root, "/etc/os-release")), 0);
        assert_int_equal(fake_write(root, "/usr/lib/os-release", "PRETTY_NAME='Fake OS \"1\"'\n"), 0);
        assert_int_equal(unlink(tpath(root, "/etc/machine-id")), 0);
        assert_int_equal(fake_write(root, "/var/lib/dbus/machine-id", "abc\n"), 0);

        assert_int_equal(stats_machine_info_read(root, &m), 0);
        assert_int_equal(m.num_physical_cores, 2);
        assert_int_equal(m.num_sockets, 1);
        assert_int_equal(m.cpu_frequency_khz, 3500000);
        assert_string_equal(m.system_uuid, "");
        assert_string_equal(m.os_image, "Fake OS \"1\"");
        assert_string_equal(m.machine_id, "abc");
        stats_machine_info_done(&m);

        /* no os-release at all */
        assert_int_equal(unlink(tpath(root, "/usr/lib/os-release")), 0);
        assert_int_equal(stats_machine_info_read(root, &m), 0);
        assert_string_equal(m.os_image, "Linux");
        stats_machine_info_done(&m);

        /* no MemTotal: an error, ret untouched */
        assert_int_equal(fake_write(root, "/proc/meminfo", "MemFree: 1 kB\n"), 0);
        m.num_cores = 77;
        assert_int_equal(stats_machine_info_read(root, &m), -ENOENT);
        assert_int_equal(m.num_cores, 77);
        fake_root_free(root);
}

static void test_os_release(void **state) {
        char *s = NULL;
        assert_int_equal(stats_os_release_pretty_name("ID=x\n  PRETTY_NAME=\"A \\\"quoted\\\" \\$name\"  \n", &s), 0);
        assert_string_equal(s, "A \"quoted\" $name");
        free(s);
        assert_int_equal(stats_os_release_pretty_name("PRETTY_NAME=bare\n", &s), 0);
        assert_string_equal(s, "bare");
        free(s);
        assert_int_equal(stats_os_release_pretty_name("NAME=x\n", &s), -ENOENT);
        assert_string_equal(stats_machine_goarch("x86_64"), "amd64");
        assert_string_equal(stats_machine_goarch("aarch64"), "arm64");
        assert_string_equal(stats_machine_goarch("armv7l"), "arm");
        assert_string_equal(stats_machine_goarch("weird"), "weird");
}

static void test_json(void **state) {
        char *root = make_root();
        struct machine_info m = {};
        json_t *j = NULL;
        const char *keys[] = { "timestamp",       "vendor_id",
                               "num_cores",       "num_physical_cores",
                               "num_sockets",     "cpu_frequency_khz",
                               "memory_capacity", "swap_capacity",
                               "memory_by_type",  "nvm",
                               "hugepages",       "machine_id",
                               "system_uuid",     "boot_id",
                               "filesystems",     "disk_map",
                               "network_devices", "topology",
                               "cloud_provider",  "instance_type",
                               "instance_id",     "kernel_version",
                               "os_image" };
        const char *key;
        json_t *v;
        size_t i = 0;

        assert_int_equal(stats_machine_info_read(root, &m), 0);
        assert_int_equal(stats_machine_info_to_json(&m, &j), 0);
        /* cadvisor's field order */
        json_object_foreach(j, key, v) {
                assert_true(i < ELEMENTSOF(keys));
                assert_string_equal(key, keys[i]);
                i++;
        }
        assert_int_equal(i, ELEMENTSOF(keys));
        assert_int_equal(json_integer_value(json_object_get(j, "num_cores")), 4);
        {
                const char *ts = json_string_value(json_object_get(j, "timestamp"));
                int64_t ns;
                assert_non_null(ts);
                assert_int_equal(parse_rfc3339(ts, &ns), 0);
                assert_true(ts[strlen(ts) - 1] == 'Z');
                m.timestamp_usec = UINT64_C(1700000000120000);
                json_decref(j);
                assert_int_equal(stats_machine_info_to_json(&m, &j), 0);
                assert_string_equal(json_string_value(json_object_get(j, "timestamp")), "2023-11-14T22:13:20.12Z");
                m.timestamp_usec = UINT64_C(1700000000000000);
                json_decref(j);
                assert_int_equal(stats_machine_info_to_json(&m, &j), 0);
                assert_string_equal(json_string_value(json_object_get(j, "timestamp")), "2023-11-14T22:13:20Z");
        }
        assert_int_equal(json_integer_value(json_object_get(j, "cpu_frequency_khz")), 2096023);
        assert_int_equal(json_integer_value(json_object_get(j, "memory_capacity")), INT64_C(16710053888));
        assert_string_equal(json_string_value(json_object_get(j, "machine_id")), "3d1219c7c4c5404aaa1f6d2a48adfda4");
        assert_string_equal(json_string_value(json_object_get(j, "system_uuid")),
                            "EC2A1B2C-0000-1111-2222-333344445555");
        assert_string_equal(json_string_value(json_object_get(j, "boot_id")), "db78cbc0-ce77-47a0-8404-f154b7cc7e18");
        assert_string_equal(json_string_value(json_object_get(j, "kernel_version")), "6.1.0-test-amd64");
        assert_string_equal(json_string_value(json_object_get(j, "os_image")), "Debian GNU/Linux 12 (bookworm)");
        v = json_array_get(json_object_get(j, "hugepages"), 0);
        assert_int_equal(json_integer_value(json_object_get(v, "page_size")), 2048);
        assert_int_equal(json_integer_value(json_object_get(v, "num_pages")), 16);
        v = json_array_get(json_object_get(j, "network_devices"), 0);
        assert_string_equal(json_string_value(json_object_get(v, "name")), "eth0");
        assert_string_equal(json_string_value(json_object_get(v, "mac_address")), "02:fc:00:00:00:01");
        assert_int_equal(json_integer_value(json_object_get(v, "speed")), 10000);
        assert_int_equal(json_integer_value(json_object_get(v, "mtu")), 1500);
        json_decref(j);
        stats_machine_info_done(&m);
        fake_root_free(root);
}

static void test_real_host(void **state) {
        struct machine_info m = {};
        json_t *j = NULL;

        /* the machine we run on: whatever it is, the essentials are there */
        assert_int_equal(stats_machine_info_read("", &m), 0);
        assert_true(m.num_cores >= 1);
        assert_true(m.num_physical_cores >= 1 && m.num_physical_cores <= m.num_cores);
        assert_true(m.num_sockets >= 1);
        assert_true(m.memory_capacity > 0);
        assert_non_null(m.kernel_version);
        assert_true(m.kernel_version[0] != '\0');
        assert_int_equal(stats_machine_info_to_json(&m, &j), 0);
        json_decref(j);
        stats_machine_info_done(&m);
        assert_int_equal(stats_machine_info_read(NULL, &m), 0);
        stats_machine_info_done(&m);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_read),       cmocka_unit_test(test_sysfs_and_fallbacks),
                cmocka_unit_test(test_os_release), cmocka_unit_test(test_json),
                cmocka_unit_test(test_real_host),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
