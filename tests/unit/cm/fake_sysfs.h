/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A fake sysfs for the resource managers' tests (cm/cpumanager.c, cm/memorymanager.c, cm/topologymanager.c,
 * kubelet/cpumanager.c): 2 sockets x 2 NUMA nodes per
 * socket x 4 cores per NUMA node x 2 threads; CPUs numbered as Linux does (first threads 0-15, siblings 16-31),
 * one L3 cache per NUMA node; each NUMA node with its distances, 16 GiB of memory (meminfo) and 512 2 MiB huge pages.
 * Include after cmocka.h. */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fs.h"
#include "basic/macro.h"

/* root/rel with the formatted text, its directories made */
static inline void fake_sysfs_put(const char *root, const char *rel, const char *fmt, ...) _printf_(3, 4);
static inline void fake_sysfs_put(const char *root, const char *rel, const char *fmt, ...) {
        _cleanup_free_ char *path = NULL, *dir = NULL, *text = NULL;
        va_list ap;

        assert_true(asprintf(&path, "%s/%s", root, rel) > 0);
        dir = strdup(path);
        *strrchr(dir, '/') = 0;
        assert_int_equal(mkdir_p(dir, 0755), 0);
        va_start(ap, fmt);
        assert_true(vasprintf(&text, fmt, ap) >= 0);
        va_end(ap);
        assert_int_equal(write_file_atomic(path, text, strlen(text), 0644), 0);
}

/* the tree under root */
static inline void fake_sysfs_make(const char *root) {
        fake_sysfs_put(root, "devices/system/cpu/online", "0-31\n");
        for (int cpu = 0; cpu < 32; cpu++) {
                int core = cpu % 16, socket = core / 8, numa = core / 4;
                char rel[256];

                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
                fake_sysfs_put(root, rel, "%d\n", socket);
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/core_id", cpu);
                fake_sysfs_put(root, rel, "%d\n", core % 8); /* core_id repeats across sockets, as on real machines */
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu);
                fake_sysfs_put(root, rel, "%d,%d\n", core, core + 16);
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index0/level", cpu);
                fake_sysfs_put(root, rel, "1\n");
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index3/level", cpu);
                fake_sysfs_put(root, rel, "3\n");
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index1/level", cpu);
                fake_sysfs_put(root, rel, "1\n");
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index2/level", cpu);
                fake_sysfs_put(root, rel, "2\n");
                snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index3/id", cpu);
                fake_sysfs_put(root, rel, "%d\n", 10 + numa); /* one L3 per NUMA node */
        }
        for (int n = 0; n < 4; n++) {
                char rel[256];
                snprintf(rel, sizeof(rel), "devices/system/node/node%d/cpulist", n);
                fake_sysfs_put(root, rel, "%d-%d,%d-%d\n", n * 4, n * 4 + 3, n * 4 + 16, n * 4 + 19);
                /* the distances: 10 to itself, 11 to the other node of its socket, 21 across sockets */
                snprintf(rel, sizeof(rel), "devices/system/node/node%d/distance", n);
                fake_sysfs_put(root, rel, "%d %d %d %d\n",
                               n == 0       ? 10
                               : n / 2 == 0 ? 11
                                            : 21,
                               n == 1       ? 10
                               : n / 2 == 0 ? 11
                                            : 21,
                               n == 2       ? 10
                               : n / 2 == 1 ? 11
                                            : 21,
                               n == 3       ? 10
                               : n / 2 == 1 ? 11
                                            : 21);
                /* 16 GiB of memory each, 1 GiB of it in 512 2 MiB pages, none in 1 GiB pages */
                snprintf(rel, sizeof(rel), "devices/system/node/node%d/meminfo", n);
                fake_sysfs_put(root, rel,
                               "Node %d MemTotal:       16777216 kB\nNode %d MemFree:        15000000 kB\n"
                               "Node %d HugePages_Total:   512\nNode %d HugePages_Free:    512\n",
                               n, n, n, n);
                snprintf(rel, sizeof(rel), "devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages", n);
                fake_sysfs_put(root, rel, "512\n");
                snprintf(rel, sizeof(rel), "devices/system/node/node%d/hugepages/hugepages-1048576kB/nr_hugepages", n);
                fake_sysfs_put(root, rel, "0\n");
        }
}

/* a new temporary directory holding the tree (the path, to free) */
static inline char *fake_sysfs_new(void) {
        char tmpl[] = "/tmp/ckubelet-cm-sysfs-XXXXXX";
        char *root;

        assert_non_null(mkdtemp(tmpl));
        root = strdup(tmpl);
        assert_non_null(root);
        fake_sysfs_make(root);
        return root;
}

/* removes a tree (the fake sysfs, a test's state directory) */
static inline void fake_sysfs_rm(const char *root) {
        _cleanup_free_ char *cmd = NULL;

        assert_true(asprintf(&cmd, "rm -rf '%s'", root) > 0);
        assert_int_equal(system(cmd), 0);
}
