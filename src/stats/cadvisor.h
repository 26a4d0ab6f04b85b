/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* /metrics/cadvisor: the container metrics the upstream kubelet serves from its embedded cAdvisor, with
 * cAdvisor's metric names, types, help texts and labels, read straight from cgroupfs and /proc on each scrape.
 *
 * The series cAdvisor emits for a kubelet node: the root cgroup (id="/", the whole machine: its cpu, memory,
 * block I/O, the physical interfaces, the filesystems of block devices) and every cgroup under
 * <cgroup-root>/kubepods: the QoS cgroups, the pod cgroups (pod and namespace labels, as the kubelet's
 * GetPodByCgroupfs adds them) and one cgroup per container, the sandbox's included (image, name = the runtime
 * id, pod, namespace; container = the container's name, "" for the sandbox). Network series come from the
 * sandbox only (its network namespace, through /proc/<pid>/net/dev of a process in it), as cAdvisor's
 * containerd handler reports them, so that a pod's traffic is counted once. Every series carries the six labels
 * container, id, image, name, namespace, pod (empty when unknown), plus cpu / device / interface where the
 * family has them.
 *
 * No call to the runtime: the labels come from what the kubelet last observed (struct cadvisor_known), the
 * numbers from files. A scrape reads about twenty small files per cgroup, lists the file descriptors of the
 * processes directly in it and walks the kubepods tree once. */

#include <event2/buffer.h>
#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "stats/host.h"

/* ---- what is read for one cgroup ---- */

struct cadvisor_disk_io {
        char *device; /* "/dev/vda", or "" when the major:minor is not a known block device */
        uint64_t read_bytes, write_bytes;
};

struct cadvisor_fs {
        char *device; /* the mount source, "/dev/vda1" */
        uint64_t limit, usage, inodes, inodes_free;
};

struct cadvisor_stats {
        int64_t timestamp_ms;      /* when the numbers were read (unix ms) */
        int64_t creation_time_sec; /* the runtime's creation time for containers, else the cgroup's */
        int64_t start_time_sec;    /* the cgroup's creation time */

        bool has_cpu;
        uint64_t cpu_total_ns, cpu_user_ns, cpu_system_ns;
        uint64_t cfs_periods, cfs_throttled_periods, cfs_throttled_ns;

        bool has_cpu_spec;
        uint64_t cpu_shares; /* v2: converted from cpu.weight */
        uint64_t cpu_period_us;
        int64_t cpu_quota_us; /* 0: no quota */

        bool has_memory;
        uint64_t mem_usage, mem_max_usage, mem_cache, mem_rss, mem_swap, mem_mapped_file, mem_working_set;
        uint64_t mem_failcnt;
        uint64_t oom_events;

        bool has_memory_spec;
        uint64_t mem_limit, mem_swap_limit, mem_reservation; /* bytes; above 2^62 ("unlimited") they read 0 */

        struct cadvisor_disk_io *disk_io;
        size_t n_disk_io;
        struct cadvisor_fs *fs;
        size_t n_fs;
        struct net_dev_stats *net;
        size_t n_net;

        bool has_processes;
        uint64_t processes, file_descriptors, threads, threads_max;

        /* v2: cpu.pressure, memory.pressure, io.pressure (the root: /proc/pressure when it has none) */
        bool has_psi_cpu, has_psi_memory, has_psi_io;
        struct psi_stats psi_cpu, psi_memory, psi_io;
};

void cadvisor_stats_done(struct cadvisor_stats *s);

/* the base labels of a series (never NULL once filled; "" when unknown) */
struct cadvisor_labels {
        char *container, *id, *image, *name, *namespace_, *pod;
};

struct cadvisor_series {
        struct cadvisor_labels labels;
        struct cadvisor_stats stats;
};

void cadvisor_series_done(struct cadvisor_series *s);

/* what the machine collector reports (cAdvisor's MachineInfo) */
struct cadvisor_machine {
        const char *machine_id, *system_uuid, *boot_id;
        const char *kernel_version, *os_version;
        unsigned cores, physical_cores, sockets;
        uint64_t memory_bytes, swap_bytes;
};

/* Prometheus text (format 0.0.4) of the series and the machine, as upstream's handler writes it: families
 * sorted by name, each with # HELP and # TYPE, samples sorted by their label values, label names sorted,
 * cAdvisor's timestamps (ms) on the samples that have them. scrape_error sets container_scrape_error.
 * machine NULL: machine_scrape_error 1 and no machine families. Pure; -ENOMEM. */
int cadvisor_render(const struct cadvisor_series *series, size_t n, const struct cadvisor_machine *machine,
                    bool scrape_error, int64_t now_ms, struct evbuffer *out);

/* ---- parsers of cgroup and /proc files (pure; exposed for tests) ---- */

/* cpuacct.stat: "user N\nsystem N\n" in clock ticks → ns */
int cadvisor_parse_cpuacct_stat(const char *text, long ticks_per_sec, uint64_t *ret_user_ns, uint64_t *ret_system_ns);
/* v1 blkio (io_service_bytes style: "8:0 Read 123\n8:0 Write 5\n...Total N") or v2 io.stat
 * ("8:0 rbytes=1 wbytes=2 ..."): per major:minor read/write bytes, in file order. Devices are named through
 * name_of(major, minor) (NULL: "") */
struct cadvisor_dev_name {
        unsigned major, minor;
        char *name;
};
int cadvisor_parse_blkio(const char *text, bool v2, const struct cadvisor_dev_name *names, size_t n_names,
                         struct cadvisor_disk_io **ret, size_t *ret_n);
/* v2 cpu.max "max 100000" / "50000 100000": quota (0 for max) and period */
int cadvisor_parse_cpu_max(const char *text, int64_t *ret_quota_us, uint64_t *ret_period_us);
/* v2 cpu.weight → cAdvisor's shares: 2 + ((weight - 1) * 262142) / 9999 */
uint64_t cadvisor_weight_to_shares(uint64_t weight);
/* a limit file: a number, or "max" (v2) → UINT64_MAX */
int cadvisor_parse_limit(const char *text, uint64_t *ret);
/* "oom_kill N" in v1 memory.oom_control or v2 memory.events; 0 when absent */
uint64_t cadvisor_parse_oom_kills(const char *text);
/* /proc/self/mountinfo: the mount points of the cgroup hierarchies (v1 controllers cpu, cpuacct, memory, blkio,
 * pids; the unified one) and whether the host is pure v2 (cgroup2 mounted at /sys/fs/cgroup). */
struct cadvisor_hierarchies {
        char *cpu, *cpuacct, *memory, *blkio, *pids; /* v1 mount points, NULL when not mounted */
        char *unified;                               /* the cgroup2 mount point, NULL if none */
        bool v2;                                     /* pure v2: every controller in unified */
};
/* One line of /proc/self/mountinfo, split in place: its first fields (6 at the most) into f, their number returned;
 * *ret_tail the part after " - " (filesystem type, source, super options), NULL for a line without one. */
size_t cadvisor_mountinfo_split(char *line, char *f[static 6], char **ret_tail);
int cadvisor_parse_mountinfo(const char *text, struct cadvisor_hierarchies *ret);
void cadvisor_hierarchies_done(struct cadvisor_hierarchies *h);
/* whether a cgroup directory's name is the pod's: "pod<uid>", or with the systemd driver
 * "kubepods[-<qos>]-pod<uid with '_' for '-'>.slice" */
bool cadvisor_pod_dir_matches(const char *dirname, const char *uid);
/* interfaces cAdvisor does not report for a container: lo, veth*, docker*, nerdctl* */
bool cadvisor_net_ignored(const char *name);

/* ---- the collector ---- */

/* A container or sandbox the kubelet knows, by its runtime id (the last component of its cgroup). */
struct cadvisor_known_container {
        const char *id;
        const char *pod_uid, *pod_name, *pod_namespace;
        const char *container; /* "" for the sandbox */
        const char *image;
        int64_t created_at_nsec; /* the runtime's creation time, 0 if unknown */
        bool sandbox;
};

struct cadvisor_known_pod {
        const char *uid, *name, *namespace_;
};

struct cadvisor_known {
        const struct cadvisor_known_container *containers;
        size_t n_containers;
        const struct cadvisor_known_pod *pods;
        size_t n_pods;
};

struct cadvisor_config {
        const char *host_root;          /* prefix of every path ("" or NULL: the real host) */
        const char *cgroup_root;        /* --cgroup-root: kubepods is below it */
        const char *pods_cgroup;        /* the kubepods cgroup ("/kubepods.slice"), NULL: <cgroup_root>/kubepods */
        const char *const *net_devices; /* the machine's physical interfaces (root network series), NULL-terminated */
};

struct cadvisor;

/* Finds the cgroup hierarchies and the block devices once. A failure's reason is in *ret_error (may be NULL). */
int cadvisor_new(const struct cadvisor_config *cfg, struct cadvisor **ret, struct ck_error **ret_error);
struct cadvisor *cadvisor_free(struct cadvisor *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct cadvisor *, cadvisor_free)

/* Reads every series now (the root, then the kubepods tree, labelled from known). Cgroups that vanish while
 * being read are skipped; a file that cannot be read leaves its part out. *ret_error: the root could not be
 * read at all (upstream's container_scrape_error). */
int cadvisor_collect(struct cadvisor *c, const struct cadvisor_known *known, struct cadvisor_series **ret,
                     size_t *ret_n, bool *ret_error);
void cadvisor_series_free_all(struct cadvisor_series *s, size_t n);
