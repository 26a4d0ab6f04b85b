/* SPDX-License-Identifier: Apache-2.0 */
/* The /metrics/cadvisor collector: reads the root cgroup and the kubepods tree from cgroupfs (v1 or v2) and
 * /proc, and labels each cgroup from what the kubelet knows. Local, bounded file reads only: every file has a
 * size cap, the tree walk a depth and entry cap, the file descriptor count a cap per cgroup. */
#include "stats/cadvisor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <linux/magic.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"

#define SMALL_FILE_MAX (64u * 1024u)        /* a cgroup file */
#define PROCS_FILE_MAX (1024u * 1024u)      /* cgroup.procs */
#define TABLE_FILE_MAX (4u * 1024u * 1024u) /* /proc/<pid>/net/dev, io.stat, blkio tables */
#define WALK_MAX_DEPTH 6                    /* <root...>/kubepods/<qos>/pod<uid>/<container> and some slack */
#define WALK_MAX_CGROUPS 20000u
#define FDS_COUNTED_MAX 65536u              /* file descriptors counted per cgroup */
#define FS_REFRESH_USEC (60 * USEC_PER_SEC) /* the block-device filesystems are listed again after this */

struct fs_mount {
        char *device, *path;
};

struct cadvisor {
        char *root;     /* path prefix */
        char *kubepods; /* cgroup name of <cgroup-root>/kubepods, with a leading '/' */
        struct cadvisor_hierarchies h;
        struct cadvisor_dev_name *disks;
        size_t n_disks;
        char **net_devices;
        struct fs_mount *mounts;
        size_t n_mounts;
        uint64_t mounts_read_usec;
        long ticks;
        int proc_fd;         /* <root>/proc */
        bool proc_is_procfs; /* (the tests' fake trees are not): sizes of /proc/<pid>/fd mean something */
        /* the directories of the cgroup being read, one per hierarchy (a path walk per file costs more than the
         * read itself) */
        struct {
                const char *name;
                struct {
                        const char *mount;
                        int fd;
                } dirs[8];
                size_t n;
        } cur;
};

/* ---------------------------------------------------------------- set-up */

static void mounts_free(struct cadvisor *c) {
        for (size_t i = 0; i < c->n_mounts; i++) {
                free(c->mounts[i].device);
                free(c->mounts[i].path);
        }
        free(c->mounts);
        c->mounts = NULL;
        c->n_mounts = 0;
}

static void cur_reset(struct cadvisor *c) {
        for (size_t i = 0; i < c->cur.n; i++)
                if (c->cur.dirs[i].fd >= 0)
                        close(c->cur.dirs[i].fd);
        c->cur.n = 0;
        c->cur.name = NULL;
}

struct cadvisor *cadvisor_free(struct cadvisor *c) {
        if (!c)
                return NULL;
        cur_reset(c);
        if (c->proc_fd >= 0)
                close(c->proc_fd);
        free(c->root);
        free(c->kubepods);
        cadvisor_hierarchies_done(&c->h);
        for (size_t i = 0; i < c->n_disks; i++)
                free(c->disks[i].name);
        free(c->disks);
        strv_free(c->net_devices);
        mounts_free(c);
        free(c);
        return NULL;
}

/* the whole disks of /sys/block (not loop, ram or sr), as cAdvisor's DiskMap names them: "/dev/<name>" */
static int read_disks(struct cadvisor *c) {
        _cleanup_free_ char *dir = NULL;
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (asprintf(&dir, "%s/sys/block", c->root) < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d)
                return 0;
        while ((de = readdir(d)) && c->n_disks < 4096) {
                _cleanup_free_ char *p = NULL, *text = NULL;
                unsigned major, minor;
                struct cadvisor_dev_name *n;

                if (de->d_name[0] == '.' || startswith(de->d_name, "loop") || startswith(de->d_name, "ram") ||
                    startswith(de->d_name, "sr"))
                        continue;
                if (asprintf(&p, "/sys/block/%s/dev", de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (stats_read_file(c->root, p, SMALL_FILE_MAX, &text) < 0 ||
                    sscanf(text, "%u:%u", &major, &minor) != 2)
                        continue;
                n = reallocarray(c->disks, c->n_disks + 1, sizeof(*n));
                if (!n) {
                        r = -ENOMEM;
                        break;
                }
                c->disks = n;
                n[c->n_disks] = (struct cadvisor_dev_name) { .major = major, .minor = minor };
                if (asprintf(&n[c->n_disks].name, "/dev/%s", de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                c->n_disks++;
        }
        closedir(d);
        return r;
}

/* mounted block-device filesystems of the kinds cAdvisor reports, one per device */
static int read_mounts(struct cadvisor *c) {
        static const char *const types[] = { "ext2", "ext3", "ext4", "xfs", "btrfs", "zfs" };
        _cleanup_free_ char *text = NULL;
        int r;

        mounts_free(c);
        c->mounts_read_usec = now_usec();
        r = stats_read_file(c->root, "/proc/self/mountinfo", PROC_MOUNTINFO_MAX, &text);
        if (r < 0)
                return r;
        for (const char *l = text; *l && c->n_mounts < 64;) {
                const char *eol = strchrnul(l, '\n');
                _cleanup_free_ char *line = strndup(l, (size_t) (eol - l));
                char *tail, *save = NULL, *f[6], *fstype, *source;
                size_t nf;
                bool known = false, dup = false;

                l = *eol ? eol + 1 : eol;
                if (!line)
                        return -ENOMEM;
                nf = cadvisor_mountinfo_split(line, f, &tail);
                if (!tail)
                        continue;
                fstype = strtok_r(tail, " ", &save);
                source = fstype ? strtok_r(NULL, " ", &save) : NULL;
                if (nf < 5 || !source || !startswith(source, "/dev/"))
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(types); i++)
                        known = known || streq(fstype, types[i]);
                for (size_t i = 0; i < c->n_mounts; i++)
                        dup = dup || streq(c->mounts[i].device, source);
                if (!known || dup)
                        continue;
                {
                        struct fs_mount *n = reallocarray(c->mounts, c->n_mounts + 1, sizeof(*n));
                        if (!n)
                                return -ENOMEM;
                        c->mounts = n;
                        n[c->n_mounts].device = strdup(source);
                        n[c->n_mounts].path = strdup(f[4]);
                        if (!n[c->n_mounts].device || !n[c->n_mounts].path) {
                                free(n[c->n_mounts].device);
                                free(n[c->n_mounts].path);
                                return -ENOMEM;
                        }
                        c->n_mounts++;
                }
        }
        return 0;
}

int cadvisor_new(const struct cadvisor_config *cfg, struct cadvisor **ret, struct ck_error **ret_error) {
        _cleanup_(cadvisor_freep) struct cadvisor *c = NULL;
        _cleanup_free_ char *mi = NULL;
        const char *parts[] = { "kubepods" };
        _cleanup_free_ char *name = NULL;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->proc_fd = -1;
        c->root = strdup(strempty(cfg->host_root));
        if (!c->root)
                return -ENOMEM;
        {
                _cleanup_free_ char *proc = NULL;
                if (asprintf(&proc, "%s/proc", c->root) < 0)
                        return -ENOMEM;
                c->proc_fd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (c->proc_fd >= 0) {
                        struct statfs sfs;
                        c->proc_is_procfs = fstatfs(c->proc_fd, &sfs) == 0 && sfs.f_type == PROC_SUPER_MAGIC;
                }
        }
        c->ticks = sysconf(_SC_CLK_TCK);
        if (c->ticks <= 0)
                c->ticks = 100;
        r = stats_read_file(c->root, "/proc/self/mountinfo", PROC_MOUNTINFO_MAX, &mi);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot read /proc/self/mountinfo: %s", strerror(-r));
        r = cadvisor_parse_mountinfo(mi, &c->h);
        if (r < 0)
                return r;
        /* the kubepods cgroup: as the cgroup manager names it, else <cgroup-root>/kubepods (cm_cgroup_name's rule:
         * empty components skipped) */
        if (cfg->pods_cgroup) {
                c->kubepods = strdup(cfg->pods_cgroup);
                if (!c->kubepods)
                        return -ENOMEM;
        } else {
                _cleanup_free_ char *rootcopy = strdup(strempty(cfg->cgroup_root));
                char *save = NULL;
                _cleanup_strv_free_ char **l = NULL;
                if (!rootcopy)
                        return -ENOMEM;
                for (char *t = strtok_r(rootcopy, "/", &save); t; t = strtok_r(NULL, "/", &save))
                        if (strv_extend(&l, t) < 0)
                                return -ENOMEM;
                if (strv_extend(&l, parts[0]) < 0)
                        return -ENOMEM;
                name = strv_join(l, "/");
                if (!name || asprintf(&c->kubepods, "/%s", name) < 0)
                        return -ENOMEM;
        }
        r = read_disks(c);
        if (r < 0)
                return r;
        if (cfg->net_devices && strv_copy((char *const *) cfg->net_devices, &c->net_devices) < 0)
                return -ENOMEM;
        (void) read_mounts(c);
        *ret = TAKE_PTR(c);
        return 0;
}

/* ---------------------------------------------------------------- reading one cgroup */

/* the directory <root><mount><name>, opened once per cgroup read; -1 when it is not there */
static int cg_dir(struct cadvisor *c, const char *mount, const char *name) {
        _cleanup_free_ char *p = NULL;
        int fd;

        if (c->cur.name != name)
                cur_reset(c);
        c->cur.name = name;
        for (size_t i = 0; i < c->cur.n; i++)
                if (streq(c->cur.dirs[i].mount, mount))
                        return c->cur.dirs[i].fd;
        if (asprintf(&p, "%s%s%s", c->root, mount, streq(name, "/") ? "" : name) < 0)
                return -1;
        fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (c->cur.n < ELEMENTSOF(c->cur.dirs)) {
                c->cur.dirs[c->cur.n].mount = mount;
                c->cur.dirs[c->cur.n].fd = fd;
                c->cur.n++;
        } else if (fd >= 0) {
                close(fd);
                fd = -1;
        }
        return fd;
}

/* <root><mount><name>/<file> */
static int cg_read(struct cadvisor *c, const char *mount, const char *name, const char *file, size_t max, char **ret) {
        int fd;

        if (!mount)
                return -ENOENT;
        fd = cg_dir(c, mount, name);
        if (fd < 0)
                return -ENOENT;
        return read_full_file_at(fd, file, max, ret, NULL);
}

static int cg_u64(struct cadvisor *c, const char *mount, const char *name, const char *file, uint64_t *ret) {
        _cleanup_free_ char *t = NULL;
        int r = cg_read(c, mount, name, file, SMALL_FILE_MAX, &t);
        if (r < 0)
                return r;
        return cadvisor_parse_limit(t, ret);
}

static uint64_t keyed(const char *text, const char *key) {
        uint64_t v = 0;
        if (text)
                (void) stats_parse_keyed(text, key, &v);
        return v;
}

static const char *cpu_mount(struct cadvisor *c) {
        return c->h.v2 ? c->h.unified : c->h.cpu;
}

/* the lowest modification time of the cgroup directory and of a file that rarely changes in it, as cAdvisor
 * takes a cgroup's creation time */
static int64_t cgroup_time(struct cadvisor *c, const char *mount, const char *name) {
        struct stat st;
        int64_t t = (int64_t) (now_realtime_usec() / USEC_PER_SEC);
        int fd;

        if (!mount || (fd = cg_dir(c, mount, name)) < 0)
                return t;
        if (fstatat(fd, "", &st, AT_EMPTY_PATH) >= 0 && st.st_mtim.tv_sec < t)
                t = st.st_mtim.tv_sec;
        if (fstatat(fd, c->h.v2 ? "cgroup.events" : "cgroup.clone_children", &st, 0) >= 0 && st.st_mtim.tv_sec < t)
                t = st.st_mtim.tv_sec;
        return t;
}

/* processes in the cgroup itself (not its children, as cAdvisor reads cgroup.procs of the cpu controller) and
 * their open file descriptors; *ret_first_pid: the first one (0 if none) */
static void read_processes(struct cadvisor *c, const char *name, struct cadvisor_stats *s, int *ret_first_pid) {
        _cleanup_free_ char *procs = NULL;
        uint64_t n = 0, fds = 0;

        *ret_first_pid = 0;
        if (cg_read(c, cpu_mount(c), name, "cgroup.procs", PROCS_FILE_MAX, &procs) < 0)
                return;
        for (const char *l = procs; *l;) {
                const char *eol = strchrnul(l, '\n');
                char pid[16], path[64];
                size_t len = (size_t) (eol - l);
                struct stat st;
                DIR *d;
                int fdfd;
                struct dirent *de;

                l = *eol ? eol + 1 : eol;
                if (len == 0 || len >= sizeof(pid))
                        continue;
                memcpy(pid, eol - len, len);
                pid[len] = '\0';
                n++;
                if (*ret_first_pid == 0)
                        *ret_first_pid = atoi(pid);
                if (fds >= FDS_COUNTED_MAX)
                        continue;
                snprintf(path, sizeof(path), "%s/fd", pid);
                /* Linux 6.2 and later give the count as the size of /proc/<pid>/fd; else it is listed */
                if (c->proc_is_procfs && fstatat(c->proc_fd, path, &st, 0) >= 0 && st.st_size > 0) {
                        fds += (uint64_t) st.st_size;
                        continue;
                }
                fdfd = c->proc_fd >= 0 ? openat(c->proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
                d = fdfd >= 0 ? fdopendir(fdfd) : NULL;
                if (!d) {
                        if (fdfd >= 0)
                                close(fdfd);
                        continue;
                }
                while ((de = readdir(d)) && fds < FDS_COUNTED_MAX)
                        if (de->d_name[0] != '.')
                                fds++;
                closedir(d);
        }
        s->has_processes = true;
        s->processes = n;
        s->file_descriptors = MIN(fds, (uint64_t) FDS_COUNTED_MAX);
}

static void read_pids(struct cadvisor *c, const char *name, struct cadvisor_stats *s) {
        const char *m = c->h.v2 ? c->h.unified : c->h.pids;
        uint64_t v;

        if (cg_u64(c, m, name, "pids.current", &v) >= 0)
                s->threads = v;
        /* "max" is unlimited: 0, which the help text reads as infinity */
        if (cg_u64(c, m, name, "pids.max", &v) >= 0)
                s->threads_max = v == UINT64_MAX ? 0 : v;
}

static void read_blkio(struct cadvisor *c, const char *name, struct cadvisor_stats *s) {
        static const char *const v1_files[] = {
                "blkio.bfq.io_service_bytes_recursive",
                "blkio.io_service_bytes_recursive",
                "blkio.throttle.io_service_bytes_recursive",
                "blkio.throttle.io_service_bytes",
        };

        if (c->h.v2) {
                _cleanup_free_ char *t = NULL;
                if (cg_read(c, c->h.unified, name, "io.stat", TABLE_FILE_MAX, &t) >= 0)
                        (void) cadvisor_parse_blkio(t, true, c->disks, c->n_disks, &s->disk_io, &s->n_disk_io);
                return;
        }
        /* the first policy's file that has entries, as libcontainer tries them */
        for (size_t i = 0; i < ELEMENTSOF(v1_files); i++) {
                _cleanup_free_ char *t = NULL;
                if (cg_read(c, c->h.blkio, name, v1_files[i], TABLE_FILE_MAX, &t) < 0)
                        continue;
                if (cadvisor_parse_blkio(t, false, c->disks, c->n_disks, &s->disk_io, &s->n_disk_io) < 0)
                        return;
                if (s->n_disk_io > 0)
                        return;
                free(s->disk_io);
                s->disk_io = NULL;
        }
}

static void read_psi_one(struct cadvisor *c, const char *name, const char *resource, bool *ret_has,
                         struct psi_stats *ret) {
        _cleanup_free_ char *t = NULL, *file = NULL;

        if (asprintf(&file, "%s.pressure", resource) < 0)
                return;
        if (cg_read(c, c->h.unified, name, file, SMALL_FILE_MAX, &t) < 0) {
                _cleanup_free_ char *p = NULL;
                if (!streq(name, "/") || asprintf(&p, "/proc/pressure/%s", resource) < 0 ||
                    stats_read_file(c->root, p, SMALL_FILE_MAX, &t) < 0)
                        return;
        }
        *ret_has = stats_parse_psi(t, ret) >= 0;
}

static void read_psi(struct cadvisor *c, const char *name, struct cadvisor_stats *s) {
        read_psi_one(c, name, "cpu", &s->has_psi_cpu, &s->psi_cpu);
        read_psi_one(c, name, "memory", &s->has_psi_memory, &s->psi_memory);
        read_psi_one(c, name, "io", &s->has_psi_io, &s->psi_io);
}

static void read_cpu_v1(struct cadvisor *c, const char *name, struct cadvisor_stats *s) {
        _cleanup_free_ char *stat = NULL, *cpustat = NULL;
        uint64_t v;
        const char *acct = c->h.cpuacct ? c->h.cpuacct : c->h.cpu;

        if (cg_u64(c, acct, name, "cpuacct.usage", &s->cpu_total_ns) >= 0) {
                s->has_cpu = true;
                if (cg_read(c, acct, name, "cpuacct.stat", SMALL_FILE_MAX, &stat) >= 0)
                        (void) cadvisor_parse_cpuacct_stat(stat, c->ticks, &s->cpu_user_ns, &s->cpu_system_ns);
        }
        if (cg_read(c, c->h.cpu, name, "cpu.stat", SMALL_FILE_MAX, &cpustat) >= 0) {
                s->cfs_periods = keyed(cpustat, "nr_periods");
                s->cfs_throttled_periods = keyed(cpustat, "nr_throttled");
                s->cfs_throttled_ns = keyed(cpustat, "throttled_time");
        }
        if (cg_u64(c, c->h.cpu, name, "cpu.shares", &s->cpu_shares) >= 0) {
                _cleanup_free_ char *q = NULL;
                int64_t quota = 0;
                s->has_cpu_spec = true;
                if (cg_u64(c, c->h.cpu, name, "cpu.cfs_period_us", &v) >= 0)
                        s->cpu_period_us = v;
                long long quota_ll;
                if (cg_read(c, c->h.cpu, name, "cpu.cfs_quota_us", SMALL_FILE_MAX, &q) >= 0 &&
                    sscanf(q, "%lld", &quota_ll) == 1 && quota_ll > 0)
                        quota = quota_ll;
                s->cpu_quota_us = quota;
        }
}

static void read_cpu_v2(struct cadvisor *c, const char *name, struct cadvisor_stats *s) {
        _cleanup_free_ char *cpustat = NULL, *max = NULL;
        uint64_t weight;

        if (cg_read(c, c->h.unified, name, "cpu.stat", SMALL_FILE_MAX, &cpustat) >= 0) {
                s->has_cpu = true;
                s->cpu_total_ns = keyed(cpustat, "usage_usec") * 1000;
                s->cpu_user_ns = keyed(cpustat, "user_usec") * 1000;
                s->cpu_system_ns = keyed(cpustat, "system_usec") * 1000;
                s->cfs_periods = keyed(cpustat, "nr_periods");
                s->cfs_throttled_periods = keyed(cpustat, "nr_throttled");
                s->cfs_throttled_ns = keyed(cpustat, "throttled_usec") * 1000;
        }
        if (cg_u64(c, c->h.unified, name, "cpu.weight", &weight) >= 0) {
                s->has_cpu_spec = true;
                s->cpu_shares = cadvisor_weight_to_shares(weight);
                s->cpu_period_us = 100000;
                if (cg_read(c, c->h.unified, name, "cpu.max", SMALL_FILE_MAX, &max) >= 0)
                        (void) cadvisor_parse_cpu_max(max, &s->cpu_quota_us, &s->cpu_period_us);
        }
}

static void read_memory_v1(struct cadvisor *c, const char *name, struct cadvisor_stats *s) {
        _cleanup_free_ char *stat = NULL, *oom = NULL;
        const char *m = c->h.memory;
        bool total;

        if (cg_u64(c, m, name, "memory.usage_in_bytes", &s->mem_usage) < 0)
                return;
        s->has_memory = true;
        (void) cg_u64(c, m, name, "memory.max_usage_in_bytes", &s->mem_max_usage);
        (void) cg_u64(c, m, name, "memory.failcnt", &s->mem_failcnt);
        if (cg_read(c, m, name, "memory.stat", SMALL_FILE_MAX, &stat) >= 0) {
                uint64_t inactive;
                /* hierarchical accounting (use_hierarchy): the total_ keys, as libcontainer picks them */
                total = stats_parse_keyed(stat, "total_cache", &inactive) >= 0;
                s->mem_cache = keyed(stat, total ? "total_cache" : "cache");
                s->mem_rss = keyed(stat, total ? "total_rss" : "rss");
                s->mem_swap = keyed(stat, total ? "total_swap" : "swap");
                s->mem_mapped_file = keyed(stat, total ? "total_mapped_file" : "mapped_file");
                inactive = keyed(stat, "total_inactive_file");
                s->mem_working_set = stats_working_set(s->mem_usage, inactive);
        } else
                s->mem_working_set = s->mem_usage;
        if (cg_read(c, m, name, "memory.oom_control", SMALL_FILE_MAX, &oom) >= 0)
                s->oom_events = cadvisor_parse_oom_kills(oom);
        if (cg_u64(c, m, name, "memory.limit_in_bytes", &s->mem_limit) >= 0) {
                s->has_memory_spec = true;
                (void) cg_u64(c, m, name, "memory.memsw.limit_in_bytes", &s->mem_swap_limit);
                (void) cg_u64(c, m, name, "memory.soft_limit_in_bytes", &s->mem_reservation);
        }
}

static void read_memory_v2(struct cadvisor *c, const char *name, struct cadvisor_stats *s) {
        _cleanup_free_ char *stat = NULL, *events = NULL;
        const char *m = c->h.unified;
        bool root = streq(name, "/");

        if (cg_read(c, m, name, "memory.stat", SMALL_FILE_MAX, &stat) < 0)
                return;
        if (cg_u64(c, m, name, "memory.current", &s->mem_usage) < 0) {
                _cleanup_free_ char *mi = NULL;
                uint64_t total, free_;
                /* the root group has no memory.current: the machine's used memory */
                if (!root || stats_read_file(c->root, "/proc/meminfo", SMALL_FILE_MAX, &mi) < 0 ||
                    stats_parse_meminfo(mi, "MemTotal", &total) < 0 || stats_parse_meminfo(mi, "MemFree", &free_) < 0)
                        return;
                s->mem_usage = total > free_ ? total - free_ : 0;
        }
        s->has_memory = true;
        (void) cg_u64(c, m, name, "memory.peak", &s->mem_max_usage);
        (void) cg_u64(c, m, name, "memory.swap.current", &s->mem_swap);
        s->mem_cache = keyed(stat, "file");
        s->mem_rss = keyed(stat, "anon");
        s->mem_mapped_file = keyed(stat, "file_mapped");
        s->mem_working_set = stats_working_set(s->mem_usage, keyed(stat, "inactive_file"));
        if (cg_read(c, m, name, "memory.events", SMALL_FILE_MAX, &events) >= 0) {
                s->mem_failcnt = keyed(events, "max");
                s->oom_events = cadvisor_parse_oom_kills(events);
        }
        if (cg_u64(c, m, name, "memory.max", &s->mem_limit) >= 0) {
                s->has_memory_spec = true;
                (void) cg_u64(c, m, name, "memory.swap.max", &s->mem_swap_limit);
                (void) cg_u64(c, m, name, "memory.low", &s->mem_reservation);
        }
}

/* the interfaces of the network namespace pid is in, less the ones cAdvisor ignores */
static void read_pid_network(const struct cadvisor *c, int pid, struct cadvisor_stats *s) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        struct net_dev_stats *all = NULL;
        size_t n = 0, k = 0;

        if (pid <= 0 || asprintf(&path, "/proc/%d/net/dev", pid) < 0)
                return;
        if (stats_read_file(c->root, path, TABLE_FILE_MAX, &text) < 0 || stats_proc_net_dev_parse(text, &all, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                if (!cadvisor_net_ignored(all[i].name))
                        all[k++] = all[i];
        s->net = all;
        s->n_net = k;
}

/* the machine's physical interfaces, from the kubelet's own network namespace */
static void read_root_network(const struct cadvisor *c, struct cadvisor_stats *s) {
        _cleanup_free_ char *text = NULL;
        struct net_dev_stats *all = NULL;
        size_t n = 0, k = 0;

        if (!c->net_devices || stats_read_file(c->root, "/proc/net/dev", TABLE_FILE_MAX, &text) < 0 ||
            stats_proc_net_dev_parse(text, &all, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                if (strv_contains(c->net_devices, all[i].name))
                        all[k++] = all[i];
        s->net = all;
        s->n_net = k;
}

static void read_root_fs(struct cadvisor *c, struct cadvisor_stats *s) {
        if (now_usec() - c->mounts_read_usec > FS_REFRESH_USEC)
                (void) read_mounts(c);
        s->fs = calloc(c->n_mounts ? c->n_mounts : 1, sizeof(*s->fs));
        if (!s->fs)
                return;
        for (size_t i = 0; i < c->n_mounts; i++) {
                _cleanup_free_ char *p = NULL;
                struct statvfs v;
                struct cadvisor_fs *f = &s->fs[s->n_fs];

                if (asprintf(&p, "%s%s", c->root, c->mounts[i].path) < 0 || statvfs(p, &v) < 0)
                        continue;
                f->device = strdup(c->mounts[i].device);
                if (!f->device)
                        continue;
                f->limit = (uint64_t) v.f_blocks * v.f_frsize;
                f->usage = f->limit - (uint64_t) v.f_bfree * v.f_frsize; /* capacity - free, as cAdvisor */
                f->inodes = v.f_files;
                f->inodes_free = v.f_ffree;
                s->n_fs++;
        }
}

/* Everything for one cgroup. false when the cgroup is gone (nothing could be read). */
static bool read_cgroup(struct cadvisor *c, const char *name, bool network, struct cadvisor_stats *s) {
        int pid = 0;

        s->timestamp_ms = (int64_t) (now_realtime_usec() / USEC_PER_MSEC);
        if (c->h.v2) {
                read_cpu_v2(c, name, s);
                read_memory_v2(c, name, s);
        } else {
                read_cpu_v1(c, name, s);
                read_memory_v1(c, name, s);
        }
        if (!s->has_cpu && !s->has_memory) {
                cur_reset(c);
                return false;
        }
        if (c->h.v2)
                read_psi(c, name, s);
        read_blkio(c, name, s);
        read_pids(c, name, s);
        read_processes(c, name, s, &pid);
        if (network)
                read_pid_network(c, pid, s);
        s->start_time_sec = cgroup_time(c, c->h.v2 ? c->h.unified : c->h.memory, name);
        s->creation_time_sec = s->start_time_sec;
        cur_reset(c);
        return true;
}

/* ---------------------------------------------------------------- labels */

static int set_labels(struct cadvisor_labels *l, const char *id, const char *container, const char *image,
                      const char *name, const char *ns, const char *pod) {
        l->id = strdup(id);
        l->container = strdup(strempty(container));
        l->image = strdup(strempty(image));
        l->name = strdup(strempty(name));
        l->namespace_ = strdup(strempty(ns));
        l->pod = strdup(strempty(pod));
        return l->id && l->container && l->image && l->name && l->namespace_ && l->pod ? 0 : -ENOMEM;
}

static const struct cadvisor_known_container *find_container(const struct cadvisor_known *k, const char *dirname) {
        const char *id = dirname;
        size_t len;

        /* a runtime on the systemd driver names them "cri-containerd-<id>.scope" */
        if (startswith(id, "cri-containerd-") && endswith(id, ".scope"))
                id += strlen("cri-containerd-");
        len = strlen(id) - (id != dirname ? strlen(".scope") : 0);
        for (size_t i = 0; k && i < k->n_containers; i++)
                if (k->containers[i].id && strlen(k->containers[i].id) == len && strneq(k->containers[i].id, id, len))
                        return &k->containers[i];
        return NULL;
}

/* "pod<uid>", or with the systemd driver "kubepods[-<qos>]-pod<uid with '_' for '-'>.slice" */
bool cadvisor_pod_dir_matches(const char *dirname, const char *uid) {
        const char *p = dirname;
        size_t n = strlen(uid);

        if (endswith(dirname, ".slice")) {
                const char *dash = strrchr(dirname, '-');
                p = dash ? dash + 1 : dirname;
                if (!startswith(p, "pod") || strlen(p) != 3 + n + strlen(".slice"))
                        return false;
                for (size_t i = 0; i < n; i++)
                        if (p[3 + i] != (uid[i] == '-' ? '_' : uid[i]))
                                return false;
                return true;
        }
        return startswith(p, "pod") && streq(p + 3, uid);
}

static const struct cadvisor_known_pod *find_pod(const struct cadvisor_known *k, const char *dirname) {
        for (size_t i = 0; k && i < k->n_pods; i++)
                if (k->pods[i].uid && cadvisor_pod_dir_matches(dirname, k->pods[i].uid))
                        return &k->pods[i];
        return NULL;
}

/* ---------------------------------------------------------------- the walk */

struct collect {
        struct cadvisor *c;
        const struct cadvisor_known *known;
        struct cadvisor_series *v;
        size_t n, cap;
};

static int add_cgroup(struct collect *col, const char *name, const char *leaf) {
        const struct cadvisor_known_container *kc = leaf ? find_container(col->known, leaf) : NULL;
        const struct cadvisor_known_pod *kp = leaf && !kc ? find_pod(col->known, leaf) : NULL;
        struct cadvisor_series *s;
        int r;

        if (col->n == col->cap) {
                size_t cap = col->cap ? col->cap * 2 : 32;
                struct cadvisor_series *nv = reallocarray(col->v, cap, sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                col->v = nv;
                col->cap = cap;
        }
        s = &col->v[col->n];
        *s = (struct cadvisor_series) {};
        if (!read_cgroup(col->c, name, kc && kc->sandbox, &s->stats)) {
                cadvisor_stats_done(&s->stats);
                return 0;
        }
        if (kc) {
                r = set_labels(&s->labels, name, kc->container, kc->image, kc->id, kc->pod_namespace, kc->pod_name);
                if (kc->created_at_nsec > 0)
                        s->stats.creation_time_sec = kc->created_at_nsec / NSEC_PER_SEC;
        } else if (kp)
                r = set_labels(&s->labels, name, NULL, NULL, NULL, kp->namespace_, kp->name);
        else
                r = set_labels(&s->labels, name, NULL, NULL, NULL, NULL, NULL);
        col->n++;
        return r;
}

static int walk(struct collect *col, const char *name, const char *leaf, unsigned depth) {
        _cleanup_free_ char *dir = NULL;
        DIR *d;
        const char *mount = col->c->h.v2 ? col->c->h.unified : col->c->h.memory;
        struct dirent *de;
        int r;

        if (col->n >= WALK_MAX_CGROUPS)
                return 0;
        r = add_cgroup(col, name, leaf);
        if (r < 0 || depth >= WALK_MAX_DEPTH)
                return r;
        if (asprintf(&dir, "%s%s%s", col->c->root, mount, name) < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                _cleanup_free_ char *child = NULL;
                if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
                        continue;
                if (asprintf(&child, "%s/%s", name, de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (de->d_type == DT_UNKNOWN) {
                        _cleanup_free_ char *full = NULL;
                        struct stat st;
                        if (asprintf(&full, "%s/%s", dir, de->d_name) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                        if (lstat(full, &st) < 0 || !S_ISDIR(st.st_mode))
                                continue;
                }
                r = walk(col, child, de->d_name, depth + 1);
                if (r < 0)
                        break;
        }
        closedir(d);
        return r < 0 ? r : 0;
}

void cadvisor_series_free_all(struct cadvisor_series *s, size_t n) {
        for (size_t i = 0; i < n; i++)
                cadvisor_series_done(&s[i]);
        free(s);
}

int cadvisor_collect(struct cadvisor *c, const struct cadvisor_known *known, struct cadvisor_series **ret,
                     size_t *ret_n, bool *ret_error) {
        struct collect col = { .c = c, .known = known };
        struct cadvisor_series *root;
        int r;

        /* the root: the whole machine, with its interfaces and filesystems */
        r = add_cgroup(&col, "/", NULL);
        if (r < 0)
                goto fail;
        *ret_error = col.n == 0;
        if (col.n == 1) {
                root = &col.v[0];
                read_root_network(c, &root->stats);
                read_root_fs(c, &root->stats);
        }
        if (c->h.v2 ? !!c->h.unified : !!c->h.memory) {
                r = walk(&col, c->kubepods, NULL, 0);
                if (r < 0)
                        goto fail;
        }
        *ret = col.v;
        *ret_n = col.n;
        return 0;
fail:
        cadvisor_series_free_all(col.v, col.n);
        return r;
}
