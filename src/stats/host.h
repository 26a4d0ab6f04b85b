/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Host-level statistics read from /proc, /sys and cgroupfs: the sources of the Summary API's node section.
 *
 * Every reader takes `root`, a prefix for all paths ("" or NULL for the real host; the unit tests pass a temp
 * dir with fake files). The parsers are pure functions on the file's text. Every file is read whole with a
 * hard size cap. Outputs are left untouched on failure. */

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- small file helpers ---- */

/* Read <root><path> (capped at max_size) into a NUL-terminated string. */
int stats_read_file(const char *root, const char *path, size_t max_size, char **ret);
/* Read <root><path> holding one unsigned decimal number ("123\n"). */
int stats_read_u64(const char *root, const char *path, uint64_t *ret);

/* ---- parsers ---- */

/* One unsigned decimal number, surrounding whitespace allowed. -EINVAL/-ERANGE. */
int stats_parse_u64(const char *text, uint64_t *ret);
/* "key value" lines (memory.stat, cpu.stat): the value of key; -ENOENT when the key is missing. */
int stats_parse_keyed(const char *text, const char *key, uint64_t *ret);
/* /proc/meminfo: "MemTotal:  16318412 kB" → bytes; -ENOENT when the key is missing. */
int stats_parse_meminfo(const char *text, const char *key, uint64_t *ret_bytes);
/* A cpu list as in /sys/devices/system/cpu/online ("0-3,6,8-9\n"): the number of CPUs. */
int stats_parse_cpu_list(const char *text, unsigned *ret);

/* ---- cgroups (node cpu and memory) ---- */

struct cgroup_cpu_memory {
        bool has_cpu;
        uint64_t cpu_usage_nsec; /* cumulative, all cores */
        bool has_memory;
        uint64_t memory_usage_bytes;
        uint64_t memory_working_set_bytes; /* usage - inactive_file, floored at 0 */
        uint64_t memory_rss_bytes;
        uint64_t memory_page_faults;
        uint64_t memory_major_page_faults;
};

/* Working set from usage and the inactive file pages, as cadvisor: floored at 0. */
uint64_t stats_working_set(uint64_t usage, uint64_t inactive_file);

/* Memory of a cgroup v1 group from memory.usage_in_bytes and memory.stat (total_* keys of the hierarchy). */
int stats_cgroup_v1_parse_memory(const char *usage_text, const char *stat_text, struct cgroup_cpu_memory *m);
/* Memory of a cgroup v2 group from memory.current and memory.stat. usage_text NULL (the root group has no
 * memory.current): usage is anon + file, as runc computes it for the root. */
int stats_cgroup_v2_parse_memory(const char *current_text, const char *stat_text, struct cgroup_cpu_memory *m);
/* CPU of a cgroup v2 group from cpu.stat usage_usec. */
int stats_cgroup_v2_parse_cpu(const char *cpu_stat_text, uint64_t *ret_nsec);

/* Whether <root>/sys/fs/cgroup is the unified (v2) hierarchy: cgroup.controllers exists there. */
bool stats_cgroup_is_unified(const char *root);
/* CPU and memory of the root cgroup (the whole node), v1 or v2. Missing controllers leave has_cpu/has_memory
 * false; fails only if neither could be read. On v2 without a root memory.stat, falls back to /proc/meminfo
 * (MemTotal - MemFree, Inactive(file), AnonPages). */
int stats_cgroup_read_root(const char *root, struct cgroup_cpu_memory *ret);
/* Memory of the cgroup at cgroupfs path `cgroup` ("/kubepods") in the memory hierarchy (v1: memory.usage_in_bytes,
 * memory.stat, memory.limit_in_bytes; v2: memory.current, memory.stat, memory.max). *ret_limit: its limit, 0 when
 * unlimited. */
int stats_cgroup_read_memory(const char *root, const char *cgroup, struct cgroup_cpu_memory *ret, uint64_t *ret_limit);

/* ---- pressure stall information and swap (cgroup v2) ---- */

/* One line of a *.pressure file. total: the kernel's cumulative stall time in microseconds (passed on as is, as
 * cadvisor and the upstream Summary do); the averages in percent. */
struct psi_data {
        uint64_t total;
        double avg10, avg60, avg300;
};
struct psi_stats {
        struct psi_data some, full;
};
/* A cpu/memory/io.pressure text ("some avg10=0.12 avg60=0.00 avg300=0.00 total=1234\nfull ..."): a missing "full"
 * line (cpu.pressure before Linux 5.13) leaves zeros, as cadvisor. -EINVAL without a "some" line. */
int stats_parse_psi(const char *text, struct psi_stats *ret);
/* <root>/sys/fs/cgroup<cgroup>/<resource>.pressure (resource "cpu", "memory", "io"). */
int stats_cgroup_read_psi(const char *root, const char *cgroup, const char *resource, struct psi_stats *ret);
/* The node's: the root cgroup's file, else <root>/proc/pressure/<resource>. */
int stats_node_read_psi(const char *root, const char *resource, struct psi_stats *ret);

/* Swap of a v2 cgroup: memory.swap.current, and memory.swap.max (*ret_limit UINT64_MAX for "max"). */
int stats_cgroup_read_swap(const char *root, const char *cgroup, uint64_t *ret_usage, uint64_t *ret_limit);
/* The node's swap from /proc/meminfo: used = SwapTotal - SwapFree, available = SwapFree. */
int stats_node_read_swap(const char *root, uint64_t *ret_usage, uint64_t *ret_available);

/* Whether swap is on: <root>/proc/swaps has a line after its header (upstream's IsSwapOn); a missing file is off. */
int stats_swap_is_on(const char *root, bool *ret);
/* Whether the swap controller is there on cgroup v2: memory.swap.max in this process's own cgroup (from
 * <root>/proc/self/cgroup's "0::" line), as upstream's checkSwapControllerAvailability. false on v1. */
bool stats_swap_controller_v2(const char *root);

/* ---- network (/proc/net/dev) ---- */

struct net_dev_stats {
        char name[IF_NAMESIZE];
        uint64_t rx_bytes, rx_packets, rx_errors, rx_dropped;
        uint64_t tx_bytes, tx_packets, tx_errors, tx_dropped;
};

/* Parse /proc/net/dev; interfaces in file order. */
int stats_proc_net_dev_parse(const char *text, struct net_dev_stats **ret, size_t *ret_n);
/* The interface of the first IPv4 default route in /proc/net/route text; -ENOENT if none. */
int stats_proc_net_route_default(const char *text, char ret[static IF_NAMESIZE]);
/* Names never counted as node interfaces: loopback, veth pairs, CNI/container bridges and tunnels. */
bool stats_net_iface_ignored(const char *name);
/* The node's interfaces from <root>/proc/net/dev: not ignored by name and not a bridge
 * (<root>/sys/class/net/<name>/bridge). *ret_default: the default route's interface if among them, else the
 * first one, else NULL. */
int stats_node_network_read(const char *root, struct net_dev_stats **ret, size_t *ret_n, char **ret_default);

/* ---- cpu rate ---- */

/* usageNanoCores from two cumulative samples (ns of CPU, sample time in ns). false when it cannot be computed
 * (no time elapsed, or the counter went backwards). */
bool stats_nano_cores(uint64_t prev_usage_nsec, int64_t prev_time_nsec, uint64_t cur_usage_nsec, int64_t cur_time_nsec,
                      uint64_t *ret);

/* ---- filesystems ---- */

struct fs_usage {
        uint64_t capacity_bytes, available_bytes, used_bytes;
        uint64_t inodes, inodes_free, inodes_used;
};

/* statvfs of path: used = (blocks - bfree) * frsize, available = bavail * frsize, as cadvisor. */
int stats_fs_usage_statvfs(const char *path, struct fs_usage *ret);
/* Disk usage of a directory tree (du, du.c): bytes = sum of st_blocks * 512, inodes = entries including the
 * directory itself. Everything is counted: iterative, no depth or entry limit (slow on a big tree: workers only);
 * symlinks are not followed, mount points (bind mounts included) are not entered. A tree that changed under the walk
 * so that part of it could not be read (a deep directory replaced meanwhile) gives STATS_DU_UNKNOWN for both: the
 * unknown remainder counts as over any limit, never as nothing. */
#define STATS_DU_UNKNOWN (UINT64_C(1) << 60)
int stats_dir_disk_usage(const char *path, uint64_t *ret_bytes, uint64_t *ret_inodes);

/* ---- processes ---- */

/* maxpid = min(kernel.pid_max, kernel.threads-max); curproc = the number of tasks (/proc/loadavg's "running/total",
 * else the numeric directories in <root>/proc). */
int stats_read_rlimit(const char *root, int64_t *ret_maxpid, int64_t *ret_curproc);
/* Boot time (unix seconds) from <root>/proc/stat btime. */
int stats_read_boot_time(const char *root, int64_t *ret_unix_sec);
