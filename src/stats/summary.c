/* SPDX-License-Identifier: Apache-2.0 */
/* The Summary API (/stats/summary): the document built from the runtime's answers and the host's files (the
 * requests that gather the answers are provider.c's).
 *
 * A request sends ListPodSandbox, ListContainers, ListContainerStats, ListPodSandboxStats and ImageFsInfo at
 * once and keeps a copy of each answer. For a READY sandbox seen for the first time it also asks
 * PodSandboxStatus(verbose) for the pid of its infra process: containerd 1.6 refuses ListPodSandboxStats for
 * sandboxes without a cgroup parent (ours), so the pod network comes from /proc/<pid>/net/dev as cadvisor reads it.
 * When the last answer is in, the JSON document is built in one go, reading the host's files (cgroups, /proc,
 * statvfs, the log directories) at that moment. */
#include "stats/summary.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/protobuf.h"
#include "basic/string.h"
#include "basic/time.h"
#include "container/labels.h"
#include "stats/cadvisor.h"
#include "stats/host.h"
#include "stats/stats-internal.h"
#include "stats/volume_stats.h"

/* ---------------------------------------------------------------- helpers */

typedef struct stats_u64 opt_t;
#define OPT(x) ((opt_t) { true, (x) })
#define NONE ((opt_t) { false, 0 })

static opt_t opt_pb(const Runtime__V1__UInt64Value *v) {
        return v ? OPT(v->value) : NONE;
}

struct mount_fs {
        char *path;
        bool ok;
        struct fs_usage fs;
};

struct build {
        struct stats_provider *p;
        int64_t now_nsec; /* realtime: the time of stats the runtime gave none for */
        bool oom;
        struct mount_fs *mounts; /* statvfs results of this build, by path */
        size_t n_mounts;
        bool v2;        /* cgroup v2: PSI and swap from the pods' and containers' cgroups */
        char **cgroups; /* v2: the cgroups one and two levels below the pods' cgroup (pods, QoS classes) */
        size_t n_cgroups;
};

static char *dup_str(struct build *b, const char *s) {
        char *d = strdup(strempty(s));
        if (!d)
                b->oom = true;
        return d;
}

static int64_t stat_time(const struct build *b, int64_t unix_nsec) {
        return unix_nsec > 0 ? unix_nsec : b->now_nsec;
}

static void set_cpu(struct build *b, struct stats_cpu *c, int64_t time_nsec, opt_t nano_cores, opt_t usage) {
        c->present = true;
        c->time_nsec = stat_time(b, time_nsec);
        c->usage_nano_cores = nano_cores;
        c->usage_core_nano_seconds = usage;
}

/* FsStats: capacity, available, inodes and inodesFree from the filesystem (if known), used/inodesUsed given */
static void set_fs(struct build *b, struct stats_fs *f, int64_t time_nsec, const struct fs_usage *fs, opt_t used,
                   opt_t inodes_used) {
        *f = (struct stats_fs) {
                .present = true, .time_nsec = stat_time(b, time_nsec), .used_bytes = used, .inodes_used = inodes_used
        };
        if (fs) {
                f->available_bytes = OPT(fs->available_bytes);
                f->capacity_bytes = OPT(fs->capacity_bytes);
                f->inodes_free = OPT(fs->inodes_free);
                f->inodes = OPT(fs->inodes);
        }
}

static void set_iface(struct build *b, struct stats_interface *i, const char *name, opt_t rx, opt_t rx_err, opt_t tx,
                      opt_t tx_err) {
        *i = (struct stats_interface) {
                .name = dup_str(b, name), .rx_bytes = rx, .rx_errors = rx_err, .tx_bytes = tx, .tx_errors = tx_err
        };
}

/* statvfs of a path, once per build */
static const struct fs_usage *mount_fs(struct build *b, const char *path) {
        struct mount_fs *m;
        char *copy;

        if (isempty(path))
                return NULL;
        for (size_t i = 0; i < b->n_mounts; i++)
                if (streq(b->mounts[i].path, path))
                        return b->mounts[i].ok ? &b->mounts[i].fs : NULL;
        copy = strdup(path);
        m = reallocarray(b->mounts, b->n_mounts + 1, sizeof(*m));
        if (!copy || !m) {
                free(copy);
                b->oom = true;
                return NULL;
        }
        b->mounts = m;
        m = &b->mounts[b->n_mounts++];
        m->path = copy;
        m->ok = stats_fs_usage_statvfs(path, &m->fs) >= 0;
        return m->ok ? &m->fs : NULL;
}

static void build_done(struct build *b) {
        for (size_t i = 0; i < b->n_cgroups; i++)
                free(b->cgroups[i]);
        free(b->cgroups);
        for (size_t i = 0; i < b->n_mounts; i++)
                free(b->mounts[i].path);
        free(b->mounts);
}

/* ---------------------------------------------------------------- PSI and swap (cgroup v2) */

#define SCAN_MAX_CGROUPS 8192

static int scan_add(struct build *b, const char *path) {
        char **v, *d;
        if (b->n_cgroups >= SCAN_MAX_CGROUPS)
                return -E2BIG;
        v = reallocarray(b->cgroups, b->n_cgroups + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        b->cgroups = v;
        d = strdup(path);
        if (!d)
                return -ENOMEM;
        b->cgroups[b->n_cgroups++] = d;
        return 0;
}

/* the directories below <cgroupfs><dir>, depth levels deep (cgroupfs only: never pod-writable) */
static void scan_dir(struct build *b, const char *dir, unsigned depth) {
        _cleanup_free_ char *full = NULL;
        struct dirent *de;
        DIR *d;
        int r;

        if (asprintf(&full, "%s/sys/fs/cgroup%s", strempty(b->p->host_root), dir) < 0) {
                b->oom = true;
                return;
        }
        d = opendir(full);
        if (!d)
                return;
        while ((de = readdir(d))) {
                _cleanup_free_ char *child = NULL;
                if (de->d_name[0] == '.' || de->d_type != DT_DIR)
                        continue;
                if (asprintf(&child, "%s/%s", dir, de->d_name) < 0) {
                        child = NULL;
                        b->oom = true;
                        break;
                }
                r = scan_add(b, child);
                if (r == -ENOMEM)
                        b->oom = true;
                if (r < 0)
                        break; /* -E2BIG: the pods found so far */
                if (depth > 1)
                        scan_dir(b, child, depth - 1);
        }
        closedir(d);
}

/* the pod's cgroup (relative to cgroupfs), NULL if not found */
static const char *pod_cgroup(const struct build *b, const char *uid) {
        for (size_t i = 0; i < b->n_cgroups; i++) {
                const char *base = strrchr(b->cgroups[i], '/');
                if (base && cadvisor_pod_dir_matches(base + 1, uid))
                        return b->cgroups[i];
        }
        return NULL;
}

/* the container's cgroup under its pod's: "<id>" (cgroupfs driver) or "cri-containerd-<id>.scope" (systemd) */
static char *container_cgroup(const struct build *b, const char *pod_cg, const char *id) {
        for (unsigned i = 0; pod_cg && i < 2; i++) {
                _cleanup_free_ char *full = NULL;
                char *cg = NULL;
                if ((i == 0 ? asprintf(&cg, "%s/%s", pod_cg, id)
                            : asprintf(&cg, "%s/cri-containerd-%s.scope", pod_cg, id)) < 0)
                        return NULL;
                if (asprintf(&full, "%s/sys/fs/cgroup%s", strempty(b->p->host_root), cg) >= 0 &&
                    access(full, F_OK) == 0)
                        return cg;
                free(cg);
        }
        return NULL;
}

static void set_psi(struct stats_psi *dst, const struct psi_stats *ps) {
        dst->present = true;
        dst->full = (struct stats_psi_data) { ps->full.total, ps->full.avg10, ps->full.avg60, ps->full.avg300 };
        dst->some = (struct stats_psi_data) { ps->some.total, ps->some.avg10, ps->some.avg60, ps->some.avg300 };
}

/* PSIStats of cpu, memory and io, from the cgroup's files (NULL: the node's); a cpu or memory stat made for it
 * has the build's time only */
static void read_psi(struct build *b, struct stats_cpu *cpu, struct stats_memory *mem, struct stats_io *io,
                     const char *cgroup) {
        static const char *const resource[] = { "cpu", "memory", "io" };
        for (size_t i = 0; i < ELEMENTSOF(resource); i++) {
                struct psi_stats ps;
                if ((cgroup ? stats_cgroup_read_psi(b->p->host_root, cgroup, resource[i], &ps)
                            : stats_node_read_psi(b->p->host_root, resource[i], &ps)) < 0)
                        continue;
                if (i == 0) {
                        if (!cpu->present)
                                *cpu = (struct stats_cpu) { .present = true, .time_nsec = b->now_nsec };
                        set_psi(&cpu->psi, &ps);
                } else if (i == 1) {
                        if (!mem->present)
                                *mem = (struct stats_memory) { .present = true, .time_nsec = b->now_nsec };
                        set_psi(&mem->psi, &ps);
                } else {
                        io->time_nsec = b->now_nsec;
                        set_psi(&io->psi, &ps);
                }
        }
}

static void set_swap(struct build *b, struct stats_swap *s, uint64_t usage, opt_t available) {
        *s = (struct stats_swap) {
                .present = true, .time_nsec = b->now_nsec, .swap_available_bytes = available, .swap_usage_bytes = usage
        };
}

/* SwapStats of a v2 cgroup: memory.swap.current, and the limit less it when there is one (as cadvisor) */
static void read_cgroup_swap(struct build *b, struct stats_swap *s, const char *cgroup) {
        uint64_t usage, limit;
        if (stats_cgroup_read_swap(b->p->host_root, cgroup, &usage, &limit) < 0)
                return;
        set_swap(b, s, usage, limit == UINT64_MAX ? NONE : OPT(limit > usage ? limit - usage : 0));
}

#define LABEL(m, key) pb_map_get((void *const *) (m)->labels, (m)->n_labels, (key))

/* ---------------------------------------------------------------- pods */

struct ctr {
        const Runtime__V1__Container *c;
        const char *uid, *name;
};

struct pod {
        const Runtime__V1__PodSandbox *sb;
        const char *name, *namespace_, *uid;
        const Runtime__V1__PodSandboxStats *stats; /* NULL if none */
        struct ctr *ctrs;                          /* kept containers of this pod */
        size_t n_ctrs;
        const char *cgroup; /* v2: the pod's cgroup, if found */
};

struct totals {
        bool has_cpu, has_mem;
        uint64_t cpu_usage, cpu_nano;
        bool all_nano; /* every contributor had usageNanoCores */
        int64_t cpu_time, mem_time;
        uint64_t mem_usage, mem_ws, mem_rss, mem_pf, mem_mpf;
};

static int cmp_pod(const void *a, const void *b) {
        const struct pod *x = a, *y = b;
        int c = strcmp(x->namespace_, y->namespace_);
        if (c == 0)
                c = strcmp(x->name, y->name);
        return c ? c : strcmp(x->uid, y->uid);
}

/* by pod UID, container name, creation time */
static int cmp_ctr(const void *a, const void *b) {
        const struct ctr *x = a, *y = b;
        int c = strcmp(x->uid, y->uid);
        if (c == 0)
                c = strcmp(x->name, y->name);
        if (c == 0)
                c = x->c->created_at < y->c->created_at ? -1 : x->c->created_at > y->c->created_at;
        return c;
}

static int cmp_ctr_name(const void *a, const void *b) {
        const struct ctr *x = a, *y = b;
        int c = strcmp(x->name, y->name);
        return c ? c : (x->c->created_at < y->c->created_at ? -1 : x->c->created_at > y->c->created_at);
}

static int cmp_stats_id(const void *a, const void *b) {
        const Runtime__V1__ContainerStats *x = *(Runtime__V1__ContainerStats *const *) a,
                                          *y = *(Runtime__V1__ContainerStats *const *) b;
        return strcmp(x->attributes->id, y->attributes->id);
}

static const Runtime__V1__ContainerStats *find_stats(Runtime__V1__ContainerStats **sorted, size_t n, const char *id) {
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(sorted[mid]->attributes->id, id);
                if (c == 0)
                        return sorted[mid];
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

static void add_usage(opt_t *sum, opt_t v) {
        if (v.set) {
                sum->set = true;
                sum->v += v.v;
        }
}

/* one container's stats; adds a running container's cpu/memory to *t and its disk use to *eph */
static void build_container(struct build *b, const struct pod *pod, const struct ctr *k,
                            const Runtime__V1__ContainerStats *s, struct totals *t, opt_t *eph_used, opt_t *eph_inodes,
                            struct stats_container_summary *o) {
        bool running = k->c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING; /* all are, for now */
        opt_t used = NONE, inodes = NONE;

        o->name = dup_str(b, k->name);
        o->start_nsec = stat_time(b, k->c->created_at);

        if (s->cpu) {
                opt_t usage = opt_pb(s->cpu->usage_core_nano_seconds), nano = NONE;
                uint64_t rate;
                if (s->cpu->usage_nano_cores)
                        nano = OPT(s->cpu->usage_nano_cores->value);
                else if (usage.set && stats_provider_nano_cores(b->p, k->c->id, usage.v, s->cpu->timestamp, &rate))
                        nano = OPT(rate);
                set_cpu(b, &o->cpu, s->cpu->timestamp, nano, usage);
                if (running && usage.set) {
                        t->has_cpu = true;
                        t->cpu_usage += usage.v;
                        t->cpu_time = MAX(t->cpu_time, s->cpu->timestamp);
                        if (nano.set)
                                t->cpu_nano += nano.v;
                        else
                                t->all_nano = false;
                }
        }
        if (s->memory) {
                const Runtime__V1__MemoryUsage *m = s->memory;
                o->memory = (struct stats_memory) {
                        .present = true,
                        .time_nsec = stat_time(b, m->timestamp),
                        /* an unlimited container has none; 0 from the runtime means the same */
                        .available_bytes = m->available_bytes && m->available_bytes->value > 0
                                                   ? OPT(m->available_bytes->value)
                                                   : NONE,
                        .usage_bytes = opt_pb(m->usage_bytes),
                        .working_set_bytes = opt_pb(m->working_set_bytes),
                        .rss_bytes = opt_pb(m->rss_bytes),
                        .page_faults = opt_pb(m->page_faults),
                        .major_page_faults = opt_pb(m->major_page_faults),
                };
                if (running && o->memory.working_set_bytes.set) {
                        t->has_mem = true;
                        t->mem_time = MAX(t->mem_time, m->timestamp);
                        t->mem_usage += o->memory.usage_bytes.v;
                        t->mem_ws += o->memory.working_set_bytes.v;
                        t->mem_rss += o->memory.rss_bytes.v;
                        t->mem_pf += o->memory.page_faults.v;
                        t->mem_mpf += o->memory.major_page_faults.v;
                }
        }
        if (b->v2) {
                _cleanup_free_ char *cg = container_cgroup(b, pod->cgroup, k->c->id);
                if (cg) {
                        read_psi(b, &o->cpu, &o->memory, &o->io, cg);
                        read_cgroup_swap(b, &o->swap, cg);
                }
        }
        if (s->writable_layer) {
                const Runtime__V1__FilesystemUsage *w = s->writable_layer;
                used = opt_pb(w->used_bytes);
                inodes = opt_pb(w->inodes_used);
                set_fs(b, &o->rootfs, w->timestamp, mount_fs(b, w->fs_id ? w->fs_id->mountpoint : NULL), used, inodes);
                add_usage(eph_used, used);
                add_usage(eph_inodes, inodes);
        }
        if (!isempty(b->p->pod_logs_dir)) {
                _cleanup_free_ char *dir = NULL;
                uint64_t bytes, n;
                if (asprintf(&dir, "%s/%s_%s_%s/%s", b->p->pod_logs_dir, pod->namespace_, pod->name, pod->uid,
                             k->name) < 0) {
                        dir = NULL;
                        b->oom = true;
                } else if (stats_dir_disk_usage(dir, &bytes, &n) >= 0) {
                        set_fs(b, &o->logs, 0, mount_fs(b, b->p->pod_logs_dir), OPT(bytes), OPT(n));
                        add_usage(eph_used, OPT(bytes));
                        add_usage(eph_inodes, OPT(n));
                }
        }
}

static void network_from_cri(struct build *b, const Runtime__V1__NetworkUsage *n, struct stats_network *o) {
        const Runtime__V1__NetworkInterfaceUsage *d = n->default_interface;

        o->present = true;
        o->time_nsec = stat_time(b, n->timestamp);
        if (d)
                set_iface(b, &o->def, d->name, opt_pb(d->rx_bytes), opt_pb(d->rx_errors), opt_pb(d->tx_bytes),
                          opt_pb(d->tx_errors));
        else
                o->def.name = dup_str(b, "");
        if (n->n_interfaces > 0) {
                o->interfaces = calloc(n->n_interfaces, sizeof(*o->interfaces));
                if (!o->interfaces) {
                        b->oom = true;
                        return;
                }
                for (size_t i = 0; i < n->n_interfaces; i++) {
                        const Runtime__V1__NetworkInterfaceUsage *x = n->interfaces[i];
                        set_iface(b, &o->interfaces[o->n_interfaces++], x->name, opt_pb(x->rx_bytes),
                                  opt_pb(x->rx_errors), opt_pb(x->tx_bytes), opt_pb(x->tx_errors));
                }
        }
}

/* interfaces read from /proc/net/dev: the default one (def, may be NULL) inline, all of them listed */
static void network_from_dev(struct build *b, const struct net_dev_stats *ifs, size_t n,
                             const struct net_dev_stats *def, struct stats_network *o) {
        o->present = true;
        o->time_nsec = b->now_nsec;
        if (def)
                set_iface(b, &o->def, def->name, OPT(def->rx_bytes), OPT(def->rx_errors), OPT(def->tx_bytes),
                          OPT(def->tx_errors));
        o->interfaces = calloc(n + 1, sizeof(*o->interfaces));
        if (!o->interfaces) {
                b->oom = true;
                return;
        }
        for (size_t i = 0; i < n; i++)
                set_iface(b, &o->interfaces[o->n_interfaces++], ifs[i].name, OPT(ifs[i].rx_bytes),
                          OPT(ifs[i].rx_errors), OPT(ifs[i].tx_bytes), OPT(ifs[i].tx_errors));
}

/* the pod's interfaces, from its network namespace (/proc/<pid of the sandbox>/net/dev), as cadvisor does */
static void network_from_proc(struct build *b, const char *sandbox_id, struct stats_network *o) {
        struct sandbox_pid *sp = stats_sandbox_pid_find(b->p, sandbox_id);
        _cleanup_free_ struct net_dev_stats *ifs = NULL;
        _cleanup_free_ char *path = NULL, *text = NULL;
        const struct net_dev_stats *def = NULL;
        size_t n = 0, k = 0;

        if (!sp)
                return;
        sp->seen_usec = now_usec();
        if (sp->pid <= 0)
                return;
        if (asprintf(&path, "/proc/%d/net/dev", sp->pid) < 0) {
                path = NULL;
                b->oom = true;
                return;
        }
        if (stats_read_file(b->p->host_root, path, 4u * 1024u * 1024u, &text) < 0 ||
            stats_proc_net_dev_parse(text, &ifs, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                if (!stats_net_iface_ignored(ifs[i].name))
                        ifs[k++] = ifs[i];
        if (k == 0)
                return;
        for (size_t i = 0; i < k && !def; i++)
                if (streq(ifs[i].name, "eth0")) /* upstream's network.DefaultInterfaceName */
                        def = &ifs[i];
        network_from_dev(b, ifs, k, def ?: &ifs[0], o);
}

static struct stats_volume_summary *add_volume(struct build *b, struct stats_pod_summary *o) {
        struct stats_volume_summary *v = reallocarray(o->volumes, o->n_volumes + 1, sizeof(*v));
        if (!v) {
                b->oom = true;
                return NULL;
        }
        o->volumes = v;
        v = &o->volumes[o->n_volumes++];
        *v = (struct stats_volume_summary) {};
        return v;
}

static void build_pod(struct build *b, struct pod *pod, Runtime__V1__ContainerStats **sorted_stats, size_t n_stats,
                      struct totals *all, struct stats_pod_summary *o) {
        struct totals t = { .all_nano = true };
        opt_t eph_used = OPT(0), eph_inodes = OPT(0);

        o->name = dup_str(b, pod->name);
        o->namespace_ = dup_str(b, pod->namespace_);
        o->uid = dup_str(b, pod->uid);
        o->start_nsec = stat_time(b, pod->sb->created_at);

        if (pod->n_ctrs > 1)
                qsort(pod->ctrs, pod->n_ctrs, sizeof(*pod->ctrs), cmp_ctr_name);
        o->containers = calloc(pod->n_ctrs + 1, sizeof(*o->containers));
        if (!o->containers) {
                b->oom = true;
                return;
        }
        for (size_t i = 0; i < pod->n_ctrs; i++) {
                const Runtime__V1__ContainerStats *s = find_stats(sorted_stats, n_stats, pod->ctrs[i].c->id);
                if (!s)
                        continue; /* as upstream: a container the runtime has no stats for is left out */
                build_container(b, pod, &pod->ctrs[i], s, &t, &eph_used, &eph_inodes,
                                &o->containers[o->n_containers++]);
        }

        /* pod cpu and memory: the sum of its running containers */
        if (t.has_cpu) {
                char key[512];
                uint64_t rate;
                opt_t nano = NONE;
                snprintf(key, sizeof(key), "pod/%s", pod->uid);
                /* from the previous sample of the pod's sum; else the sum of its containers' rates, if all have one */
                if (stats_provider_nano_cores(b->p, key, t.cpu_usage, t.cpu_time, &rate))
                        nano = OPT(rate);
                else if (t.all_nano)
                        nano = OPT(t.cpu_nano);
                set_cpu(b, &o->cpu, t.cpu_time, nano, OPT(t.cpu_usage));
                all->has_cpu = true;
                all->cpu_usage += t.cpu_usage;
                all->cpu_time = MAX(all->cpu_time, t.cpu_time);
        }
        if (t.has_mem) {
                o->memory = (struct stats_memory) { .present = true,
                                                    .time_nsec = stat_time(b, t.mem_time),
                                                    .usage_bytes = OPT(t.mem_usage),
                                                    .working_set_bytes = OPT(t.mem_ws),
                                                    .rss_bytes = OPT(t.mem_rss),
                                                    .page_faults = OPT(t.mem_pf),
                                                    .major_page_faults = OPT(t.mem_mpf) };
                all->has_mem = true;
                all->mem_time = MAX(all->mem_time, t.mem_time);
                all->mem_usage += t.mem_usage;
                all->mem_ws += t.mem_ws;
                all->mem_rss += t.mem_rss;
                all->mem_pf += t.mem_pf;
                all->mem_mpf += t.mem_mpf;
        }
        if (pod->cgroup) {
                /* PSI cannot be summed: from the pod's cgroup, as upstream (cadvisor's pod cgroup) */
                read_psi(b, &o->cpu, &o->memory, &o->io, pod->cgroup);
                read_cgroup_swap(b, &o->swap, pod->cgroup);
        }
        if (pod->stats && pod->stats->linux && pod->stats->linux->network)
                network_from_cri(b, pod->stats->linux->network, &o->network);
        else
                network_from_proc(b, pod->sb->id, &o->network);
        /* the pod's volumes as last measured; the local ephemeral ones count as its ephemeral storage */
        {
                size_t nv = 0;
                const struct stats_volume_usage *v = stats_volumes_pod(b->p->volumes, pod->uid, &nv);
                for (size_t i = 0; i < nv; i++) {
                        struct stats_volume_summary *vo = add_volume(b, o);
                        if (!vo)
                                break;
                        set_fs(b, &vo->fs, (int64_t) v[i].time_usec * 1000, mount_fs(b, b->p->root_dir),
                               OPT(v[i].used_bytes), OPT(v[i].inodes_used));
                        vo->name = dup_str(b, v[i].name);
                        if (stats_volumes_is_local_ephemeral(&v[i])) {
                                add_usage(&eph_used, OPT(v[i].used_bytes));
                                add_usage(&eph_inodes, OPT(v[i].inodes_used));
                        }
                }
        }
        /* containers' writable layers and logs, and local volumes, on the node's filesystem */
        set_fs(b, &o->ephemeral_storage, 0, mount_fs(b, b->p->root_dir), eph_used, eph_inodes);
        /* the volumes the volume manager measured (PersistentVolumeClaims, csi, nfs, local) */
        if (b->p->pod_volumes) {
                const struct stats_volume *v = NULL;
                size_t nv = b->p->pod_volumes(b->p->pod_volumes_userdata, pod->uid, &v);
                for (size_t i = 0; i < nv; i++) {
                        struct fs_usage fs = {
                                .capacity_bytes = (uint64_t) MAX(v[i].capacity_bytes, 0),
                                .available_bytes = (uint64_t) MAX(v[i].available_bytes, 0),
                                .inodes = (uint64_t) MAX(v[i].inodes, 0),
                                .inodes_free = (uint64_t) MAX(v[i].inodes_free, 0),
                        };
                        struct stats_volume_summary *vo = add_volume(b, o);
                        if (!vo)
                                break;
                        set_fs(b, &vo->fs, (int64_t) v[i].time_usec * 1000, &fs,
                               OPT((uint64_t) MAX(v[i].used_bytes, 0)), OPT((uint64_t) MAX(v[i].inodes_used, 0)));
                        vo->name = dup_str(b, v[i].name);
                        if (v[i].pvc_name) {
                                vo->pvc_name = dup_str(b, v[i].pvc_name);
                                vo->pvc_namespace = dup_str(b, v[i].pvc_namespace);
                        }
                }
        }
        if (pod->stats && pod->stats->linux && pod->stats->linux->process && pod->stats->linux->process->process_count)
                o->process_count = OPT(pod->stats->linux->process->process_count->value);
}

static int build_pods(struct build *b, const struct summary_input *in, struct stats_summary *out, struct totals *all) {
        _cleanup_free_ struct pod *pods = NULL;
        _cleanup_free_ struct ctr *ctrs = NULL;
        _cleanup_free_ Runtime__V1__ContainerStats **stats = NULL;
        size_t n_pods = 0, n_ctrs = 0, n_stats = 0;

        if (!in->sandboxes)
                return 0;

        /* READY sandboxes; one per pod UID, the newest */
        pods = calloc(in->sandboxes->n_items + 1, sizeof(*pods));
        if (!pods)
                return -ENOMEM;
        for (size_t i = 0; i < in->sandboxes->n_items; i++) {
                const Runtime__V1__PodSandbox *sb = in->sandboxes->items[i];
                const Runtime__V1__PodSandboxMetadata *md = sb->metadata;
                const char *name = LABEL(sb, LABEL_POD_NAME), *ns = LABEL(sb, LABEL_POD_NAMESPACE),
                           *uid = LABEL(sb, LABEL_POD_UID);
                bool dup = false;

                if (sb->state != RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY)
                        continue;
                if (!name && md)
                        name = md->name;
                if (!ns && md)
                        ns = md->namespace_;
                if (!uid && md)
                        uid = md->uid;
                if (isempty(name) || isempty(uid))
                        continue;
                for (size_t j = 0; j < n_pods && !dup; j++)
                        if (streq(pods[j].uid, uid)) {
                                dup = true;
                                if (sb->created_at > pods[j].sb->created_at)
                                        pods[j].sb = sb;
                        }
                if (!dup)
                        pods[n_pods++] = (struct pod) {
                                .sb = sb, .name = name, .namespace_ = strempty(ns), .uid = uid
                        };
        }

        /* sandbox stats, by sandbox ID */
        for (size_t i = 0; in->pod_stats && i < in->pod_stats->n_stats; i++) {
                const Runtime__V1__PodSandboxStats *ps = in->pod_stats->stats[i];
                if (!ps->attributes || isempty(ps->attributes->id))
                        continue;
                for (size_t j = 0; j < n_pods; j++)
                        if (streq(pods[j].sb->id, ps->attributes->id))
                                pods[j].stats = ps;
        }

        /* running containers of those sandboxes (upstream's removeTerminatedContainers keeps only those) */
        if (in->containers) {
                ctrs = calloc(in->containers->n_containers + 1, sizeof(*ctrs));
                if (!ctrs)
                        return -ENOMEM;
                for (size_t i = 0; i < in->containers->n_containers; i++) {
                        const Runtime__V1__Container *c = in->containers->containers[i];
                        const char *name = LABEL(c, LABEL_CONTAINER_NAME);
                        const char *uid = NULL;
                        if (c->state != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING)
                                continue;
                        if (!name && c->metadata)
                                name = c->metadata->name;
                        if (isempty(name) || isempty(c->id))
                                continue;
                        for (size_t j = 0; j < n_pods && !uid; j++)
                                if (streq(pods[j].sb->id, strempty(c->pod_sandbox_id)))
                                        uid = pods[j].uid;
                        if (!uid)
                                continue;
                        ctrs[n_ctrs++] = (struct ctr) { .c = c, .uid = uid, .name = name };
                }
                /* each pod's containers contiguous */
                if (n_ctrs > 1)
                        qsort(ctrs, n_ctrs, sizeof(*ctrs), cmp_ctr);
                for (size_t j = 0; j < n_pods; j++)
                        for (size_t i = 0; i < n_ctrs; i++)
                                if (streq(ctrs[i].uid, pods[j].uid)) {
                                        if (!pods[j].ctrs)
                                                pods[j].ctrs = &ctrs[i];
                                        pods[j].n_ctrs++;
                                }
        }

        if (in->container_stats) {
                stats = calloc(in->container_stats->n_stats + 1, sizeof(*stats));
                if (!stats)
                        return -ENOMEM;
                for (size_t i = 0; i < in->container_stats->n_stats; i++) {
                        Runtime__V1__ContainerStats *s = in->container_stats->stats[i];
                        if (s->attributes && s->attributes->id)
                                stats[n_stats++] = s;
                }
                if (n_stats > 1)
                        qsort(stats, n_stats, sizeof(*stats), cmp_stats_id);
        }

        if (n_pods > 1)
                qsort(pods, n_pods, sizeof(*pods), cmp_pod);
        if (b->v2 && b->p->pods_cgroup && n_pods > 0) {
                scan_dir(b, b->p->pods_cgroup, 2);
                for (size_t i = 0; i < n_pods; i++)
                        pods[i].cgroup = pod_cgroup(b, pods[i].uid);
        }
        out->pods = calloc(n_pods + 1, sizeof(*out->pods));
        if (!out->pods)
                return -ENOMEM;
        for (size_t i = 0; i < n_pods; i++)
                build_pod(b, &pods[i], stats, n_stats, all, &out->pods[out->n_pods++]);
        return 0;
}

/* ---------------------------------------------------------------- node */

/* this process: cumulative CPU (ns), resident memory and page faults, from /proc/self/stat */
static int read_self(uint64_t *ret_cpu_nsec, uint64_t *ret_rss, uint64_t *ret_minflt, uint64_t *ret_majflt) {
        _cleanup_free_ char *s = NULL;
        unsigned long minflt, majflt, utime, stime;
        long rss, tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
        const char *p;
        int r;

        r = stats_read_file(NULL, "/proc/self/stat", 64 * 1024, &s);
        if (r < 0)
                return r;
        p = strrchr(s, ')');
        if (!p || tck <= 0 || page <= 0)
                return -EINVAL;
        /* fields 3.. after the command: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
         * stime cutime cstime priority nice threads itrealvalue starttime vsize rss */
        if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %lu %*u %lu %*u %lu %lu %*d %*d %*d %*d %*d %*d %*u %*u %ld",
                   &minflt, &majflt, &utime, &stime, &rss) != 5)
                return -EINVAL;
        *ret_cpu_nsec = (uint64_t) (utime + stime) * (uint64_t) NSEC_PER_SEC / (uint64_t) tck;
        *ret_rss = rss > 0 ? (uint64_t) rss * (uint64_t) page : 0;
        *ret_minflt = minflt;
        *ret_majflt = majflt;
        return 0;
}

static void build_system_containers(struct build *b, const struct totals *pods, struct stats_node_summary *node) {
        struct stats_system_container *k, *pc;
        uint64_t cpu, rss, minflt, majflt, rate;
        int64_t start = (int64_t) b->p->start_realtime_usec * 1000;

        node->system_containers = calloc(2, sizeof(*node->system_containers));
        if (!node->system_containers) {
                b->oom = true;
                return;
        }
        node->n_system_containers = 2;
        k = &node->system_containers[0];
        pc = &node->system_containers[1];

        k->name = dup_str(b, "kubelet");
        k->start_nsec = start;
        if (read_self(&cpu, &rss, &minflt, &majflt) >= 0) {
                bool has_rate = stats_provider_nano_cores(b->p, "system/kubelet", cpu, b->now_nsec, &rate);
                set_cpu(b, &k->cpu, 0, has_rate ? OPT(rate) : NONE, OPT(cpu));
                k->memory = (struct stats_memory) { .present = true,
                                                    .time_nsec = b->now_nsec,
                                                    .usage_bytes = OPT(rss),
                                                    .working_set_bytes = OPT(rss),
                                                    .rss_bytes = OPT(rss),
                                                    .page_faults = OPT(minflt),
                                                    .major_page_faults = OPT(majflt) };
        }

        pc->name = dup_str(b, "pods");
        pc->start_nsec = start;
        if (b->p->pods_cgroup) {
                /* the pods' cgroup itself, as cadvisor reports it: its limit (node allocatable) less the working set is
                 * what the pods have left (allocatableMemory.available) */
                struct cgroup_cpu_memory cg;
                uint64_t limit = 0;
                if (stats_cgroup_read_memory(b->p->host_root, b->p->pods_cgroup, &cg, &limit) >= 0 && cg.has_memory)
                        pc->memory = (struct stats_memory) {
                                .present = true,
                                .time_nsec = b->now_nsec,
                                .available_bytes = limit ? OPT(stats_working_set(limit, cg.memory_working_set_bytes))
                                                         : NONE,
                                .usage_bytes = OPT(cg.memory_usage_bytes),
                                .working_set_bytes = OPT(cg.memory_working_set_bytes),
                                .rss_bytes = OPT(cg.memory_rss_bytes),
                                .page_faults = OPT(cg.memory_page_faults),
                                .major_page_faults = OPT(cg.memory_major_page_faults)
                        };
        }
        if (pods->has_cpu) {
                bool has_rate = stats_provider_nano_cores(b->p, "system/pods", pods->cpu_usage, pods->cpu_time, &rate);
                set_cpu(b, &pc->cpu, pods->cpu_time, has_rate ? OPT(rate) : NONE, OPT(pods->cpu_usage));
        }
        if (pods->has_mem && !pc->memory.present)
                pc->memory = (struct stats_memory) { .present = true,
                                                     .time_nsec = stat_time(b, pods->mem_time),
                                                     .usage_bytes = OPT(pods->mem_usage),
                                                     .working_set_bytes = OPT(pods->mem_ws),
                                                     .rss_bytes = OPT(pods->mem_rss),
                                                     .page_faults = OPT(pods->mem_pf),
                                                     .major_page_faults = OPT(pods->mem_mpf) };
}

static void build_node_network(struct build *b, struct stats_network *o) {
        _cleanup_free_ struct net_dev_stats *ifs = NULL;
        _cleanup_free_ char *def = NULL;
        const struct net_dev_stats *d = NULL;
        size_t n = 0;
        int r;

        r = stats_node_network_read(b->p->host_root, &ifs, &n, &def);
        if (r < 0) {
                log_v(4, "stats: cannot read the node's network interfaces: %s", strerror(-r));
                return;
        }
        if (n == 0)
                return;
        for (size_t i = 0; i < n; i++)
                if (def && streq(ifs[i].name, def))
                        d = &ifs[i];
        network_from_dev(b, ifs, n, d, o); /* no default route: no default interface inline */
}

static void build_node(struct build *b, const struct summary_input *in, const struct totals *pods,
                       struct stats_node_summary *o) {
        struct stats_provider *p = b->p;
        struct cgroup_cpu_memory cg;
        int64_t maxpid, curproc;
        int r;

        o->node_name = dup_str(b, p->node_name);
        build_system_containers(b, pods, o);
        o->start_nsec = p->boot_time_sec > 0 ? p->boot_time_sec * NSEC_PER_SEC
                                             : (int64_t) p->start_realtime_usec * 1000;

        r = stats_cgroup_read_root(p->host_root, &cg);
        if (r < 0)
                log_v(4, "stats: cannot read the root cgroup: %s", strerror(-r));
        else {
                if (cg.has_cpu) {
                        uint64_t rate;
                        bool has_rate = stats_provider_nano_cores(p, "node", cg.cpu_usage_nsec, b->now_nsec, &rate);
                        set_cpu(b, &o->cpu, 0, has_rate ? OPT(rate) : NONE, OPT(cg.cpu_usage_nsec));
                }
                if (cg.has_memory)
                        o->memory = (struct stats_memory) {
                                .present = true,
                                .time_nsec = b->now_nsec,
                                .available_bytes = p->memory_capacity > 0
                                                           ? OPT(stats_working_set(p->memory_capacity,
                                                                                   cg.memory_working_set_bytes))
                                                           : NONE,
                                .usage_bytes = OPT(cg.memory_usage_bytes),
                                .working_set_bytes = OPT(cg.memory_working_set_bytes),
                                .rss_bytes = OPT(cg.memory_rss_bytes),
                                .page_faults = OPT(cg.memory_page_faults),
                                .major_page_faults = OPT(cg.memory_major_page_faults),
                        };
        }

        if (b->v2)
                read_psi(b, &o->cpu, &o->memory, &o->io, NULL); /* cadvisor has the root's PSI on v2 only */
        {
                uint64_t used, avail;
                if (stats_node_read_swap(p->host_root, &used, &avail) >= 0)
                        set_swap(b, &o->swap, used, OPT(avail));
        }

        build_node_network(b, &o->network);

        if (!isempty(p->root_dir)) {
                const struct fs_usage *fs = mount_fs(b, p->root_dir);
                if (fs)
                        set_fs(b, &o->fs, 0, fs, OPT(fs->used_bytes), OPT(fs->inodes_used));
        }

        if (in->image_fs && in->image_fs->n_image_filesystems > 0) {
                const Runtime__V1__FilesystemUsage *f = in->image_fs->image_filesystems[0];
                _cleanup_free_ char *mp = NULL;
                if (f->fs_id && !isempty(f->fs_id->mountpoint) &&
                    asprintf(&mp, "%s%s", strempty(p->host_root), f->fs_id->mountpoint) < 0) {
                        mp = NULL;
                        b->oom = true;
                }
                set_fs(b, &o->image_fs, f->timestamp, mount_fs(b, mp), opt_pb(f->used_bytes), opt_pb(f->inodes_used));
        }

        if (stats_read_rlimit(p->host_root, &maxpid, &curproc) >= 0)
                o->rlimit = (struct stats_rlimit) {
                        .present = true, .time_nsec = b->now_nsec, .maxpid = maxpid, .curproc = curproc
                };
}

int stats_summary_build(struct stats_provider *p, const struct summary_input *in, struct stats_summary **ret) {
        struct build b = { .p = p,
                           .now_nsec = (int64_t) now_realtime_usec() * 1000,
                           .v2 = stats_cgroup_is_unified(p->host_root) };
        _cleanup_(stats_summary_freep) struct stats_summary *s = calloc(1, sizeof(*s));
        struct totals pods_total = {};
        int r;

        if (!s)
                return -ENOMEM;
        r = build_pods(&b, in, s, &pods_total);
        if (r < 0) {
                build_done(&b);
                return r;
        }
        build_node(&b, in, &pods_total, &s->node);
        build_done(&b);
        stats_provider_cache_prune(p,
                                   now_usec() > STATS_CACHE_MAX_AGE_USEC ? now_usec() - STATS_CACHE_MAX_AGE_USEC : 0);
        stats_sandbox_pids_prune(p, now_usec() > STATS_CACHE_MAX_AGE_USEC ? now_usec() - STATS_CACHE_MAX_AGE_USEC : 0);
        if (b.oom)
                return -ENOMEM;
        *ret = TAKE_PTR(s);
        return 0;
}
