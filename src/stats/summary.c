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

/* ---------------------------------------------------------------- JSON helpers */

struct opt {
        bool set;
        uint64_t v;
};
#define OPT(x) ((struct opt) { true, (x) })
#define NONE ((struct opt) { false, 0 })

static struct opt opt_pb(const Runtime__V1__UInt64Value *v) {
        return v ? OPT(v->value) : NONE;
}

struct mount_fs {
        char *path;
        bool ok;
        struct fs_usage fs;
};

struct build {
        struct stats_provider *p;
        uint64_t now_usec; /* realtime */
        bool precise;      /* times with nanoseconds (for the metrics), else seconds (the JSON's) */
        char now[48];      /* RFC 3339 */
        bool oom;
        struct mount_fs *mounts; /* statvfs results of this build, by path */
        size_t n_mounts;
        bool v2;        /* cgroup v2: PSI and swap from the pods' and containers' cgroups */
        char **cgroups; /* v2: the cgroups one and two levels below the pods' cgroup (pods, QoS classes) */
        size_t n_cgroups;
};

static void put(struct build *b, json_t *o, const char *key, json_t *v) {
        if (!v || json_object_set_new(o, key, v) < 0)
                b->oom = true;
}

static void put_opt(struct build *b, json_t *o, const char *key, struct opt v) {
        if (v.set)
                put(b, o, key, stats_juint(v.v));
}

static void append(struct build *b, json_t *a, json_t *v) {
        if (!v || json_array_append_new(a, v) < 0)
                b->oom = true;
}

static json_t *time_json(int64_t unix_nsec, const struct build *b) {
        char buf[48];
        if (unix_nsec <= 0)
                return json_string(b->now);
        if (b->precise)
                return json_string(format_rfc3339nano(unix_nsec, buf, sizeof(buf)) ?: b->now);
        return json_string(format_rfc3339((uint64_t) (unix_nsec / 1000), buf, sizeof(buf)) ?: b->now);
}

static json_t *cpu_json(struct build *b, int64_t time_nsec, struct opt nano_cores, struct opt usage) {
        json_t *o = json_object();
        put(b, o, "time", time_json(time_nsec, b));
        put_opt(b, o, "usageNanoCores", nano_cores);
        put_opt(b, o, "usageCoreNanoSeconds", usage);
        return o;
}

struct mem {
        int64_t time_nsec;
        struct opt available, usage, working_set, rss, page_faults, major_page_faults;
};

static json_t *memory_json(struct build *b, const struct mem *m) {
        json_t *o = json_object();
        put(b, o, "time", time_json(m->time_nsec, b));
        put_opt(b, o, "availableBytes", m->available);
        put_opt(b, o, "usageBytes", m->usage);
        put_opt(b, o, "workingSetBytes", m->working_set);
        put_opt(b, o, "rssBytes", m->rss);
        put_opt(b, o, "pageFaults", m->page_faults);
        put_opt(b, o, "majorPageFaults", m->major_page_faults);
        return o;
}

/* FsStats: capacity, available, inodes and inodesFree from the filesystem (if known), used/inodesUsed given */
static json_t *fs_json(struct build *b, int64_t time_nsec, const struct fs_usage *fs, struct opt used,
                       struct opt inodes_used) {
        json_t *o = json_object();
        put(b, o, "time", time_json(time_nsec, b));
        if (fs) {
                put(b, o, "availableBytes", stats_juint(fs->available_bytes));
                put(b, o, "capacityBytes", stats_juint(fs->capacity_bytes));
        }
        put_opt(b, o, "usedBytes", used);
        if (fs) {
                put(b, o, "inodesFree", stats_juint(fs->inodes_free));
                put(b, o, "inodes", stats_juint(fs->inodes));
        }
        put_opt(b, o, "inodesUsed", inodes_used);
        return o;
}

static json_t *iface_json(struct build *b, const char *name, struct opt rx, struct opt rx_err, struct opt tx,
                          struct opt tx_err) {
        json_t *o = json_object();
        put(b, o, "name", stats_jstr(name));
        put_opt(b, o, "rxBytes", rx);
        put_opt(b, o, "rxErrors", rx_err);
        put_opt(b, o, "txBytes", tx);
        put_opt(b, o, "txErrors", tx_err);
        return o;
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

static json_t *psi_data_json(struct build *b, const struct psi_data *d) {
        json_t *o = json_object();
        put(b, o, "total", stats_juint(d->total));
        put(b, o, "avg10", json_real(d->avg10));
        put(b, o, "avg60", json_real(d->avg60));
        put(b, o, "avg300", json_real(d->avg300));
        return o;
}

static json_t *psi_json(struct build *b, const struct psi_stats *p) {
        json_t *o = json_object();
        put(b, o, "full", psi_data_json(b, &p->full));
        put(b, o, "some", psi_data_json(b, &p->some));
        return o;
}

/* PSIStats into o's "cpu" and "memory" (made if missing) and "io", from the cgroup's files (NULL: the node's) */
static void put_psi(struct build *b, json_t *o, const char *cgroup) {
        static const char *const resource[] = { "cpu", "memory", "io" };
        for (size_t i = 0; i < ELEMENTSOF(resource); i++) {
                struct psi_stats ps;
                json_t *r;
                if ((cgroup ? stats_cgroup_read_psi(b->p->host_root, cgroup, resource[i], &ps)
                            : stats_node_read_psi(b->p->host_root, resource[i], &ps)) < 0)
                        continue;
                r = json_object_get(o, resource[i]);
                if (!r) {
                        r = json_object();
                        put(b, r, "time", json_string(b->now));
                        put(b, o, resource[i], r);
                        if (!r)
                                continue;
                }
                put(b, r, "psi", psi_json(b, &ps));
        }
}

static json_t *swap_json(struct build *b, uint64_t usage, struct opt available) {
        json_t *o = json_object();
        put(b, o, "time", json_string(b->now));
        put_opt(b, o, "swapAvailableBytes", available);
        put(b, o, "swapUsageBytes", stats_juint(usage));
        return o;
}

/* SwapStats of a v2 cgroup: memory.swap.current, and the limit less it when there is one (as cadvisor) */
static void put_cgroup_swap(struct build *b, json_t *o, const char *cgroup) {
        uint64_t usage, limit;
        if (stats_cgroup_read_swap(b->p->host_root, cgroup, &usage, &limit) < 0)
                return;
        put(b, o, "swap", swap_json(b, usage, limit == UINT64_MAX ? NONE : OPT(limit > usage ? limit - usage : 0)));
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

static void add_usage(struct opt *sum, struct opt v) {
        if (v.set) {
                sum->set = true;
                sum->v += v.v;
        }
}

/* one container's stats; adds a running container's cpu/memory to *t and its disk use to *eph */
static json_t *container_json(struct build *b, const struct pod *pod, const struct ctr *k,
                              const Runtime__V1__ContainerStats *s, struct totals *t, struct opt *eph_used,
                              struct opt *eph_inodes) {
        json_t *o = json_object();
        bool running = k->c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING; /* all are, for now */
        struct opt used = NONE, inodes = NONE;

        put(b, o, "name", stats_jstr(k->name));
        put(b, o, "startTime", time_json(k->c->created_at, b));

        if (s->cpu) {
                struct opt usage = opt_pb(s->cpu->usage_core_nano_seconds), nano = NONE;
                uint64_t rate;
                if (s->cpu->usage_nano_cores)
                        nano = OPT(s->cpu->usage_nano_cores->value);
                else if (usage.set && stats_provider_nano_cores(b->p, k->c->id, usage.v, s->cpu->timestamp, &rate))
                        nano = OPT(rate);
                put(b, o, "cpu", cpu_json(b, s->cpu->timestamp, nano, usage));
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
                struct mem mj = {
                        .time_nsec = m->timestamp,
                        /* an unlimited container has none; 0 from the runtime means the same */
                        .available = m->available_bytes && m->available_bytes->value > 0
                                             ? OPT(m->available_bytes->value)
                                             : NONE,
                        .usage = opt_pb(m->usage_bytes),
                        .working_set = opt_pb(m->working_set_bytes),
                        .rss = opt_pb(m->rss_bytes),
                        .page_faults = opt_pb(m->page_faults),
                        .major_page_faults = opt_pb(m->major_page_faults),
                };
                put(b, o, "memory", memory_json(b, &mj));
                if (running && mj.working_set.set) {
                        t->has_mem = true;
                        t->mem_time = MAX(t->mem_time, m->timestamp);
                        t->mem_usage += mj.usage.v;
                        t->mem_ws += mj.working_set.v;
                        t->mem_rss += mj.rss.v;
                        t->mem_pf += mj.page_faults.v;
                        t->mem_mpf += mj.major_page_faults.v;
                }
        }
        if (b->v2) {
                _cleanup_free_ char *cg = container_cgroup(b, pod->cgroup, k->c->id);
                if (cg) {
                        put_psi(b, o, cg);
                        put_cgroup_swap(b, o, cg);
                }
        }
        if (s->writable_layer) {
                const Runtime__V1__FilesystemUsage *w = s->writable_layer;
                used = opt_pb(w->used_bytes);
                inodes = opt_pb(w->inodes_used);
                put(b, o, "rootfs",
                    fs_json(b, w->timestamp, mount_fs(b, w->fs_id ? w->fs_id->mountpoint : NULL), used, inodes));
                add_usage(eph_used, used);
                add_usage(eph_inodes, inodes);
        }
        if (!isempty(b->p->pod_logs_dir)) {
                _cleanup_free_ char *dir = NULL;
                uint64_t bytes, n;
                if (asprintf(&dir, "%s/%s_%s_%s/%s", b->p->pod_logs_dir, pod->namespace_, pod->name, pod->uid,
                             k->name) < 0)
                        b->oom = true;
                else if (stats_dir_disk_usage(dir, &bytes, &n) >= 0) {
                        put(b, o, "logs", fs_json(b, 0, mount_fs(b, b->p->pod_logs_dir), OPT(bytes), OPT(n)));
                        add_usage(eph_used, OPT(bytes));
                        add_usage(eph_inodes, OPT(n));
                }
        }
        return o;
}

static json_t *network_from_cri(struct build *b, const Runtime__V1__NetworkUsage *n) {
        const Runtime__V1__NetworkInterfaceUsage *d = n->default_interface;
        json_t *o = json_object(), *ifs;

        put(b, o, "time", time_json(n->timestamp, b));
        if (d) {
                put(b, o, "name", stats_jstr(d->name));
                put_opt(b, o, "rxBytes", opt_pb(d->rx_bytes));
                put_opt(b, o, "rxErrors", opt_pb(d->rx_errors));
                put_opt(b, o, "txBytes", opt_pb(d->tx_bytes));
                put_opt(b, o, "txErrors", opt_pb(d->tx_errors));
        } else
                put(b, o, "name", json_string(""));
        if (n->n_interfaces > 0) {
                ifs = json_array();
                put(b, o, "interfaces", ifs);
                for (size_t i = 0; ifs && i < n->n_interfaces; i++) {
                        const Runtime__V1__NetworkInterfaceUsage *x = n->interfaces[i];
                        append(b, ifs,
                               iface_json(b, x->name, opt_pb(x->rx_bytes), opt_pb(x->rx_errors), opt_pb(x->tx_bytes),
                                          opt_pb(x->tx_errors)));
                }
        }
        return o;
}

/* the pod's interfaces, from its network namespace (/proc/<pid of the sandbox>/net/dev), as cadvisor does */
static json_t *network_from_proc(struct build *b, const char *sandbox_id) {
        struct sandbox_pid *sp = stats_sandbox_pid_find(b->p, sandbox_id);
        _cleanup_free_ struct net_dev_stats *ifs = NULL;
        _cleanup_free_ char *path = NULL, *text = NULL;
        const struct net_dev_stats *def = NULL;
        json_t *o, *a;
        size_t n = 0, k = 0;

        if (!sp)
                return NULL;
        sp->seen_usec = now_usec();
        if (sp->pid <= 0)
                return NULL;
        if (asprintf(&path, "/proc/%d/net/dev", sp->pid) < 0) {
                b->oom = true;
                return NULL;
        }
        if (stats_read_file(b->p->host_root, path, 4u * 1024u * 1024u, &text) < 0 ||
            stats_proc_net_dev_parse(text, &ifs, &n) < 0)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (!stats_net_iface_ignored(ifs[i].name))
                        ifs[k++] = ifs[i];
        if (k == 0)
                return NULL;
        for (size_t i = 0; i < k && !def; i++)
                if (streq(ifs[i].name, "eth0")) /* upstream's network.DefaultInterfaceName */
                        def = &ifs[i];
        if (!def)
                def = &ifs[0];
        o = json_object();
        put(b, o, "time", json_string(b->now));
        put(b, o, "name", stats_jstr(def->name));
        put(b, o, "rxBytes", stats_juint(def->rx_bytes));
        put(b, o, "rxErrors", stats_juint(def->rx_errors));
        put(b, o, "txBytes", stats_juint(def->tx_bytes));
        put(b, o, "txErrors", stats_juint(def->tx_errors));
        a = json_array();
        put(b, o, "interfaces", a);
        for (size_t i = 0; a && i < k; i++)
                append(b, a,
                       iface_json(b, ifs[i].name, OPT(ifs[i].rx_bytes), OPT(ifs[i].rx_errors), OPT(ifs[i].tx_bytes),
                                  OPT(ifs[i].tx_errors)));
        return o;
}

static json_t *pod_json(struct build *b, struct pod *pod, Runtime__V1__ContainerStats **sorted_stats, size_t n_stats,
                        struct totals *all) {
        json_t *o = json_object(), *ref = json_object(), *cs = json_array();
        struct totals t = { .all_nano = true };
        struct opt eph_used = OPT(0), eph_inodes = OPT(0);

        put(b, ref, "name", stats_jstr(pod->name));
        put(b, ref, "namespace", stats_jstr(pod->namespace_));
        put(b, ref, "uid", stats_jstr(pod->uid));
        put(b, o, "podRef", ref);
        put(b, o, "startTime", time_json(pod->sb->created_at, b));
        put(b, o, "containers", cs);

        if (pod->n_ctrs > 1)
                qsort(pod->ctrs, pod->n_ctrs, sizeof(*pod->ctrs), cmp_ctr_name);
        for (size_t i = 0; i < pod->n_ctrs; i++) {
                const Runtime__V1__ContainerStats *s = find_stats(sorted_stats, n_stats, pod->ctrs[i].c->id);
                if (!s)
                        continue; /* as upstream: a container the runtime has no stats for is left out */
                append(b, cs, container_json(b, pod, &pod->ctrs[i], s, &t, &eph_used, &eph_inodes));
        }

        /* pod cpu and memory: the sum of its running containers */
        if (t.has_cpu) {
                char key[512];
                uint64_t rate;
                struct opt nano = NONE;
                snprintf(key, sizeof(key), "pod/%s", pod->uid);
                /* from the previous sample of the pod's sum; else the sum of its containers' rates, if all have one */
                if (stats_provider_nano_cores(b->p, key, t.cpu_usage, t.cpu_time, &rate))
                        nano = OPT(rate);
                else if (t.all_nano)
                        nano = OPT(t.cpu_nano);
                put(b, o, "cpu", cpu_json(b, t.cpu_time, nano, OPT(t.cpu_usage)));
                all->has_cpu = true;
                all->cpu_usage += t.cpu_usage;
                all->cpu_time = MAX(all->cpu_time, t.cpu_time);
        }
        if (t.has_mem) {
                struct mem m = { .time_nsec = t.mem_time,
                                 .usage = OPT(t.mem_usage),
                                 .working_set = OPT(t.mem_ws),
                                 .rss = OPT(t.mem_rss),
                                 .page_faults = OPT(t.mem_pf),
                                 .major_page_faults = OPT(t.mem_mpf) };
                put(b, o, "memory", memory_json(b, &m));
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
                put_psi(b, o, pod->cgroup);
                put_cgroup_swap(b, o, pod->cgroup);
        }
        if (pod->stats && pod->stats->linux && pod->stats->linux->network)
                put(b, o, "network", network_from_cri(b, pod->stats->linux->network));
        else {
                json_t *net = network_from_proc(b, pod->sb->id);
                if (net)
                        put(b, o, "network", net);
        }
        /* the pod's volumes as last measured; the local ephemeral ones count as its ephemeral storage */
        {
                size_t nv = 0;
                const struct stats_volume_usage *v = stats_volumes_pod(b->p->volumes, pod->uid, &nv);
                json_t *va = nv > 0 ? json_array() : NULL;
                for (size_t i = 0; i < nv; i++) {
                        json_t *vo = fs_json(b, (int64_t) v[i].time_usec * 1000, mount_fs(b, b->p->root_dir),
                                             OPT(v[i].used_bytes), OPT(v[i].inodes_used));
                        if (vo)
                                put(b, vo, "name", stats_jstr(v[i].name));
                        append(b, va, vo);
                        if (stats_volumes_is_local_ephemeral(&v[i])) {
                                add_usage(&eph_used, OPT(v[i].used_bytes));
                                add_usage(&eph_inodes, OPT(v[i].inodes_used));
                        }
                }
                if (va)
                        put(b, o, "volume", va);
        }
        /* containers' writable layers and logs, and local volumes, on the node's filesystem */
        put(b, o, "ephemeral-storage", fs_json(b, 0, mount_fs(b, b->p->root_dir), eph_used, eph_inodes));
        /* the volumes the volume manager measured (PersistentVolumeClaims, csi, nfs, local) */
        if (b->p->pod_volumes) {
                const struct stats_volume *v = NULL;
                size_t nv = b->p->pod_volumes(b->p->pod_volumes_userdata, pod->uid, &v);
                json_t *va = json_object_get(o, "volume");
                if (nv > 0 && !va) {
                        va = json_array();
                        put(b, o, "volume", va);
                }
                for (size_t i = 0; va && i < nv; i++) {
                        struct fs_usage fs = {
                                .capacity_bytes = (uint64_t) MAX(v[i].capacity_bytes, 0),
                                .available_bytes = (uint64_t) MAX(v[i].available_bytes, 0),
                                .inodes = (uint64_t) MAX(v[i].inodes, 0),
                                .inodes_free = (uint64_t) MAX(v[i].inodes_free, 0),
                        };
                        json_t *vo = fs_json(b, (int64_t) v[i].time_usec * 1000, &fs,
                                             OPT((uint64_t) MAX(v[i].used_bytes, 0)),
                                             OPT((uint64_t) MAX(v[i].inodes_used, 0)));
                        put(b, vo, "name", stats_jstr(v[i].name));
                        if (v[i].pvc_name)
                                put(b, vo, "pvcRef",
                                    json_pack("{s:s, s:s}", "name", v[i].pvc_name, "namespace",
                                              strempty(v[i].pvc_namespace)));
                        append(b, va, vo);
                }
        }
        if (pod->stats && pod->stats->linux && pod->stats->linux->process &&
            pod->stats->linux->process->process_count) {
                json_t *ps = json_object();
                put(b, ps, "process_count", stats_juint(pod->stats->linux->process->process_count->value));
                put(b, o, "process_stats", ps);
        }
        return o;
}

static int build_pods(struct build *b, const struct summary_input *in, json_t *pods_json, struct totals *all) {
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
        for (size_t i = 0; i < n_pods; i++)
                append(b, pods_json, pod_json(b, &pods[i], stats, n_stats, all));
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

static json_t *system_containers_json(struct build *b, const struct totals *pods) {
        json_t *a = json_array(), *k, *pc;
        uint64_t cpu, rss, minflt, majflt, rate;
        char start[32];

        format_rfc3339(b->p->start_realtime_usec, start, sizeof(start));

        k = json_object();
        put(b, k, "name", json_string("kubelet"));
        put(b, k, "startTime", json_string(start));
        if (read_self(&cpu, &rss, &minflt, &majflt) >= 0) {
                int64_t t = (int64_t) b->now_usec * 1000;
                struct mem m = { .usage = OPT(rss),
                                 .working_set = OPT(rss),
                                 .rss = OPT(rss),
                                 .page_faults = OPT(minflt),
                                 .major_page_faults = OPT(majflt) };
                bool has_rate = stats_provider_nano_cores(b->p, "system/kubelet", cpu, t, &rate);
                put(b, k, "cpu", cpu_json(b, 0, has_rate ? OPT(rate) : NONE, OPT(cpu)));
                put(b, k, "memory", memory_json(b, &m));
        }
        append(b, a, k);

        pc = json_object();
        put(b, pc, "name", json_string("pods"));
        put(b, pc, "startTime", json_string(start));
        if (b->p->pods_cgroup) {
                /* the pods' cgroup itself, as cadvisor reports it: its limit (node allocatable) less the working set is
                 * what the pods have left (allocatableMemory.available) */
                struct cgroup_cpu_memory cg;
                uint64_t limit = 0;
                if (stats_cgroup_read_memory(b->p->host_root, b->p->pods_cgroup, &cg, &limit) >= 0 && cg.has_memory) {
                        struct mem m = { .time_nsec = (int64_t) b->now_usec * 1000,
                                         .available = limit ? OPT(stats_working_set(limit, cg.memory_working_set_bytes))
                                                            : NONE,
                                         .usage = OPT(cg.memory_usage_bytes),
                                         .working_set = OPT(cg.memory_working_set_bytes),
                                         .rss = OPT(cg.memory_rss_bytes),
                                         .page_faults = OPT(cg.memory_page_faults),
                                         .major_page_faults = OPT(cg.memory_major_page_faults) };
                        put(b, pc, "memory", memory_json(b, &m));
                }
        }
        if (pods->has_cpu) {
                bool has_rate = stats_provider_nano_cores(b->p, "system/pods", pods->cpu_usage, pods->cpu_time, &rate);
                put(b, pc, "cpu", cpu_json(b, pods->cpu_time, has_rate ? OPT(rate) : NONE, OPT(pods->cpu_usage)));
        }
        if (pods->has_mem && !json_object_get(pc, "memory")) {
                struct mem m = { .time_nsec = pods->mem_time,
                                 .usage = OPT(pods->mem_usage),
                                 .working_set = OPT(pods->mem_ws),
                                 .rss = OPT(pods->mem_rss),
                                 .page_faults = OPT(pods->mem_pf),
                                 .major_page_faults = OPT(pods->mem_mpf) };
                put(b, pc, "memory", memory_json(b, &m));
        }
        append(b, a, pc);
        return a;
}

static json_t *node_network_json(struct build *b) {
        _cleanup_free_ struct net_dev_stats *ifs = NULL;
        _cleanup_free_ char *def = NULL;
        size_t n = 0;
        json_t *o, *a;
        int r;

        r = stats_node_network_read(b->p->host_root, &ifs, &n, &def);
        if (r < 0) {
                log_v(4, "stats: cannot read the node's network interfaces: %s", strerror(-r));
                return NULL;
        }
        if (n == 0)
                return NULL;
        o = json_object();
        put(b, o, "time", json_string(b->now));
        for (size_t i = 0; i < n; i++)
                if (def && streq(ifs[i].name, def)) {
                        put(b, o, "name", stats_jstr(ifs[i].name));
                        put(b, o, "rxBytes", stats_juint(ifs[i].rx_bytes));
                        put(b, o, "rxErrors", stats_juint(ifs[i].rx_errors));
                        put(b, o, "txBytes", stats_juint(ifs[i].tx_bytes));
                        put(b, o, "txErrors", stats_juint(ifs[i].tx_errors));
                }
        a = json_array();
        put(b, o, "interfaces", a);
        for (size_t i = 0; a && i < n; i++)
                append(b, a,
                       iface_json(b, ifs[i].name, OPT(ifs[i].rx_bytes), OPT(ifs[i].rx_errors), OPT(ifs[i].tx_bytes),
                                  OPT(ifs[i].tx_errors)));
        return o;
}

static json_t *node_json(struct build *b, const struct summary_input *in, const struct totals *pods) {
        struct stats_provider *p = b->p;
        json_t *o = json_object(), *net;
        struct cgroup_cpu_memory cg;
        int64_t maxpid, curproc;
        char buf[32];
        int r;

        put(b, o, "nodeName", stats_jstr(p->node_name));
        put(b, o, "systemContainers", system_containers_json(b, pods));
        put(b, o, "startTime",
            json_string(p->boot_time_sec > 0
                                ? format_rfc3339((uint64_t) p->boot_time_sec * USEC_PER_SEC, buf, sizeof(buf))
                                : format_rfc3339(p->start_realtime_usec, buf, sizeof(buf))));

        r = stats_cgroup_read_root(p->host_root, &cg);
        if (r < 0)
                log_v(4, "stats: cannot read the root cgroup: %s", strerror(-r));
        else {
                int64_t t = (int64_t) b->now_usec * 1000;
                if (cg.has_cpu) {
                        uint64_t rate;
                        bool has_rate = stats_provider_nano_cores(p, "node", cg.cpu_usage_nsec, t, &rate);
                        put(b, o, "cpu", cpu_json(b, 0, has_rate ? OPT(rate) : NONE, OPT(cg.cpu_usage_nsec)));
                }
                if (cg.has_memory) {
                        struct mem m = {
                                .available = p->memory_capacity > 0
                                                     ? OPT(stats_working_set(p->memory_capacity,
                                                                             cg.memory_working_set_bytes))
                                                     : NONE,
                                .usage = OPT(cg.memory_usage_bytes),
                                .working_set = OPT(cg.memory_working_set_bytes),
                                .rss = OPT(cg.memory_rss_bytes),
                                .page_faults = OPT(cg.memory_page_faults),
                                .major_page_faults = OPT(cg.memory_major_page_faults),
                        };
                        put(b, o, "memory", memory_json(b, &m));
                }
        }

        if (b->v2)
                put_psi(b, o, NULL); /* cadvisor has the root's PSI on v2 only */
        {
                uint64_t used, avail;
                if (stats_node_read_swap(p->host_root, &used, &avail) >= 0)
                        put(b, o, "swap", swap_json(b, used, OPT(avail)));
        }

        net = node_network_json(b);
        if (net)
                put(b, o, "network", net);

        if (!isempty(p->root_dir)) {
                const struct fs_usage *fs = mount_fs(b, p->root_dir);
                if (fs)
                        put(b, o, "fs", fs_json(b, 0, fs, OPT(fs->used_bytes), OPT(fs->inodes_used)));
        }

        if (in->image_fs && in->image_fs->n_image_filesystems > 0) {
                const Runtime__V1__FilesystemUsage *f = in->image_fs->image_filesystems[0];
                _cleanup_free_ char *mp = NULL;
                json_t *rt = json_object();
                if (f->fs_id && !isempty(f->fs_id->mountpoint) &&
                    asprintf(&mp, "%s%s", strempty(p->host_root), f->fs_id->mountpoint) < 0)
                        b->oom = true;
                put(b, rt, "imageFs",
                    fs_json(b, f->timestamp, mount_fs(b, mp), opt_pb(f->used_bytes), opt_pb(f->inodes_used)));
                put(b, o, "runtime", rt);
        }

        if (stats_read_rlimit(p->host_root, &maxpid, &curproc) >= 0) {
                json_t *rl = json_object();
                put(b, rl, "time", json_string(b->now));
                put(b, rl, "maxpid", json_integer(maxpid));
                put(b, rl, "curproc", json_integer(curproc));
                put(b, o, "rlimit", rl);
        }
        return o;
}

int stats_summary_build(struct stats_provider *p, const struct summary_input *in, json_t **ret) {
        return stats_summary_build_times(p, in, false, ret);
}

/* precise: times with nanoseconds (RFC 3339 nano) */
int stats_summary_build_times(struct stats_provider *p, const struct summary_input *in, bool precise, json_t **ret) {
        struct build b = {
                .p = p, .now_usec = now_realtime_usec(), .precise = precise, .v2 = stats_cgroup_is_unified(p->host_root)
        };
        struct totals pods_total = {};
        json_auto_t *doc = json_object(), *pods = json_array();
        int r;

        if (!doc || !pods)
                return -ENOMEM;
        if (precise)
                format_rfc3339nano((int64_t) b.now_usec * 1000, b.now, sizeof(b.now));
        else
                format_rfc3339(b.now_usec, b.now, sizeof(b.now));
        r = build_pods(&b, in, pods, &pods_total);
        if (r < 0) {
                build_done(&b);
                return r;
        }
        put(&b, doc, "node", node_json(&b, in, &pods_total));
        put(&b, doc, "pods", TAKE_PTR(pods));
        build_done(&b);
        stats_provider_cache_prune(p,
                                   now_usec() > STATS_CACHE_MAX_AGE_USEC ? now_usec() - STATS_CACHE_MAX_AGE_USEC : 0);
        stats_sandbox_pids_prune(p, now_usec() > STATS_CACHE_MAX_AGE_USEC ? now_usec() - STATS_CACHE_MAX_AGE_USEC : 0);
        if (b.oom)
                return -ENOMEM;
        *ret = TAKE_PTR(doc);
        return 0;
}
