/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The machine's static description, as cadvisor's MachineInfo (upstream kubelet's /spec) and the node status'
 * capacity/nodeInfo are built from it. */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct hugepages_info {
        uint64_t page_size_kb;
        uint64_t num_pages;
};

struct net_device_info {
        char *name;
        char *mac_address;
        int64_t speed; /* Mbit/s, 0 when unknown */
        int64_t mtu;
};

struct machine_info {
        uint64_t timestamp_usec; /* realtime, when read */
        char *vendor_id;         /* /proc/cpuinfo vendor_id, "" if unknown */
        unsigned num_cores;      /* online CPUs */
        unsigned num_physical_cores;
        unsigned num_sockets;
        uint64_t cpu_frequency_khz; /* cpufreq max, else /proc/cpuinfo "cpu MHz", else 0 */
        uint64_t memory_capacity;   /* MemTotal, bytes */
        uint64_t swap_capacity;     /* SwapTotal, bytes */
        struct hugepages_info *hugepages;
        size_t n_hugepages;
        struct net_device_info *network_devices; /* physical interfaces (those with a device link in sysfs) */
        size_t n_network_devices;
        char *machine_id;     /* /etc/machine-id */
        char *system_uuid;    /* /sys/class/dmi/id/product_uuid, "" if unreadable */
        char *boot_id;        /* /proc/sys/kernel/random/boot_id */
        char *kernel_version; /* uname release */
        char *os_image;       /* PRETTY_NAME of os-release, "Linux" if unknown */
        char *architecture;   /* GOARCH spelling: amd64, arm64, ... */
};

/* Read the machine's description. root: prefix for every path ("" or NULL: the real host). Fails only when
 * the essentials (CPU count, MemTotal) cannot be found; other fields default to "" / 0. ret is filled only on
 * success; free it with stats_machine_info_done(). */
int stats_machine_info_read(const char *root, struct machine_info *ret);
/* Frees the contents; accepts NULL. */
void stats_machine_info_done(struct machine_info *m);
/* cadvisor v1 MachineInfo JSON (upstream field names), plus kernel_version and os_image. */
int stats_machine_info_to_json(const struct machine_info *m, json_t **ret);

/* PRETTY_NAME from os-release text; -ENOENT if absent. */
int stats_os_release_pretty_name(const char *text, char **ret);
/* GOARCH name for a uname machine ("x86_64" → "amd64"); unknown ones are returned as is. */
const char *stats_machine_goarch(const char *uname_machine);

/* The machine's huge page sizes in bytes, ascending, as libcontainer's HugePageSizes: the directories of
 * /sys/kernel/mm/hugepages, read once (the first call reads, on whatever thread; sysfs does not block). None when
 * the kernel has no huge pages. At most MACHINE_HUGEPAGE_SIZES_MAX. */
#define MACHINE_HUGEPAGE_SIZES_MAX 8
size_t machine_hugepage_sizes(const uint64_t **ret);
