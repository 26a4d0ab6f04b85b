/* SPDX-License-Identifier: Apache-2.0 */
/* The Summary API (/stats/summary): upstream's CRI stats provider (pkg/kubelet/stats) on our loop.
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
#include "basic/string.h"
#include "basic/time.h"
#include "container/labels.h"
#include "stats/cadvisor.h"
#include "stats/host.h"
#include "stats/stats-internal.h"
#include "stats/volume_stats.h"

#define CACHE_MAX_AGE_USEC (10 * 60 * USEC_PER_SEC)  /* forget objects not seen for this long */
#define POD_STATS_RETRY_USEC (5 * 60 * USEC_PER_SEC) /* after ListPodSandboxStats failed */

/* ---------------------------------------------------------------- provider */

struct cpu_sample {
        char *key;
        uint64_t usage_nsec;
        int64_t time_nsec;
        bool has_rate;
        uint64_t rate;
        uint64_t seen_usec; /* monotonic */
};

enum query { Q_SANDBOXES, Q_CONTAINERS, Q_CONTAINER_STATS, Q_POD_STATS, Q_IMAGE_FS, _Q_MAX };

static const char *const query_name[_Q_MAX] = {
        [Q_SANDBOXES] = "ListPodSandbox",
        [Q_CONTAINERS] = "ListContainers",
        [Q_CONTAINER_STATS] = "ListContainerStats",
        [Q_POD_STATS] = "ListPodSandboxStats",
        [Q_IMAGE_FS] = "ImageFsInfo",
};
static const bool query_required[_Q_MAX] = {
        [Q_SANDBOXES] = true,
        [Q_CONTAINERS] = true,
        [Q_CONTAINER_STATS] = true,
};

struct summary_req;

struct req_slot {
        struct summary_req *req;
        enum query q;
};

/* a PodSandboxStatus call for a sandbox whose pid is not known */
struct status_slot {
        struct summary_req *req;
        char *sandbox_id;
};

struct summary_req {
        struct summary_req *prev, *next;
        struct stats_provider *p; /* NULL once cancelled: the request only waits for its CRI calls */
        stats_summary_cb cb;
        void *userdata;
        unsigned pending; /* CRI calls in flight */
        int error;
        bool precise; /* stats_summary_get_precise */
        ProtobufCMessage *resp[_Q_MAX];
        struct req_slot slots[_Q_MAX];
        struct status_slot *status; /* PodSandboxStatus calls for sandboxes whose pid is not known */
        size_t n_status;
        struct event *defer; /* completion without CRI calls */
};

struct sandbox_pid {
        char *id;
        int pid;
        uint64_t seen_usec; /* monotonic */
};

struct stats_provider {
        struct event_base *base;
        struct cri_client *cri;
        char *node_name, *root_dir, *pod_logs_dir, *host_root;
        char *pods_cgroup; /* NULL: the "pods" system container is the pods' sum */
        const struct stats_volumes *volumes;
        size_t (*pod_volumes)(void *userdata, const char *pod_uid, const struct stats_volume **ret);
        void *pod_volumes_userdata;
        uint64_t memory_capacity;     /* MemTotal, 0 if unknown */
        int64_t boot_time_sec;        /* 0 if unknown */
        uint64_t start_realtime_usec; /* this process */
        struct cpu_sample *cache;     /* sorted by key */
        size_t n_cache, alloc_cache;
        struct sandbox_pid *pids; /* sandbox → pid of its infra process, for the pod network */
        size_t n_pids;
        uint64_t pod_stats_retry_usec; /* ListPodSandboxStats failed: not before this (monotonic) */
        struct summary_req *reqs;
};

static void req_free(struct summary_req *req) {
        if (!req)
                return;
        for (size_t i = 0; i < _Q_MAX; i++)
                if (req->resp[i])
                        protobuf_c_message_free_unpacked(req->resp[i], NULL);
        for (size_t i = 0; i < req->n_status; i++)
                free(req->status[i].sandbox_id);
        free(req->status);
        if (req->defer)
                event_free(req->defer);
        free(req);
}

static void req_unlink(struct stats_provider *p, struct summary_req *req) {
        if (req->prev)
                req->prev->next = req->next;
        else if (p->reqs == req)
                p->reqs = req->next;
        if (req->next)
                req->next->prev = req->prev;
        req->prev = req->next = NULL;
}

/* ---------------------------------------------------------------- CPU sample cache */

static ssize_t cache_find(struct stats_provider *p, const char *key, size_t *ret_pos) {
        size_t lo = 0, hi = p->n_cache;
        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                int c = strcmp(p->cache[mid].key, key);
                if (c == 0)
                        return (ssize_t) mid;
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_pos = lo;
        return -1;
}

bool stats_provider_nano_cores(struct stats_provider *p, const char *key, uint64_t usage_nsec, int64_t time_nsec,
                               uint64_t *ret) {
        struct cpu_sample *e;
        size_t pos = 0;
        ssize_t i;
        uint64_t rate;

        i = cache_find(p, key, &pos);
        if (i < 0) {
                char *k = strdup(key);
                if (!k)
                        return false;
                if (p->n_cache == p->alloc_cache) {
                        size_t na = p->alloc_cache ? p->alloc_cache * 2 : 32;
                        struct cpu_sample *nc = reallocarray(p->cache, na, sizeof(*nc));
                        if (!nc) {
                                free(k);
                                return false;
                        }
                        p->cache = nc;
                        p->alloc_cache = na;
                }
                memmove(p->cache + pos + 1, p->cache + pos, (p->n_cache - pos) * sizeof(*p->cache));
                p->cache[pos] = (struct cpu_sample) {
                        .key = k, .usage_nsec = usage_nsec, .time_nsec = time_nsec, .seen_usec = now_usec()
                };
                p->n_cache++;
                return false;
        }
        e = &p->cache[i];
        e->seen_usec = now_usec();
        if (time_nsec == e->time_nsec && usage_nsec == e->usage_nsec) {
                /* the same sample again (the runtime caches its stats): the rate computed when it was new */
                if (e->has_rate)
                        *ret = e->rate;
                return e->has_rate;
        }
        if (!stats_nano_cores(e->usage_nsec, e->time_nsec, usage_nsec, time_nsec, &rate)) {
                /* restarted counter or clock going backwards: start over from this sample */
                e->usage_nsec = usage_nsec;
                e->time_nsec = time_nsec;
                e->has_rate = false;
                return false;
        }
        e->usage_nsec = usage_nsec;
        e->time_nsec = time_nsec;
        e->has_rate = true;
        e->rate = rate;
        *ret = rate;
        return true;
}

size_t stats_provider_cache_size(struct stats_provider *p) {
        return p ? p->n_cache : 0;
}

void stats_provider_cache_prune(struct stats_provider *p, uint64_t older_than_usec) {
        size_t k = 0;
        for (size_t i = 0; i < p->n_cache; i++) {
                if (p->cache[i].seen_usec < older_than_usec) {
                        free(p->cache[i].key);
                        continue;
                }
                p->cache[k++] = p->cache[i];
        }
        p->n_cache = k;
}

/* ---------------------------------------------------------------- sandbox pids */

static struct sandbox_pid *sandbox_pid_find(struct stats_provider *p, const char *id) {
        for (size_t i = 0; i < p->n_pids; i++)
                if (streq(p->pids[i].id, id))
                        return &p->pids[i];
        return NULL;
}

int stats_provider_set_sandbox_pid(struct stats_provider *p, const char *sandbox_id, int pid) {
        struct sandbox_pid *e = sandbox_pid_find(p, sandbox_id), *n;
        char *id;

        if (e) {
                e->pid = pid;
                e->seen_usec = now_usec();
                return 0;
        }
        id = strdup(sandbox_id);
        n = reallocarray(p->pids, p->n_pids + 1, sizeof(*n));
        if (!id || !n) {
                free(id);
                if (n)
                        p->pids = n;
                return -ENOMEM;
        }
        p->pids = n;
        p->pids[p->n_pids++] = (struct sandbox_pid) { .id = id, .pid = pid, .seen_usec = now_usec() };
        return 0;
}

static void sandbox_pids_prune(struct stats_provider *p, uint64_t older_than_usec) {
        size_t k = 0;
        for (size_t i = 0; i < p->n_pids; i++) {
                if (p->pids[i].seen_usec < older_than_usec) {
                        free(p->pids[i].id);
                        continue;
                }
                p->pids[k++] = p->pids[i];
        }
        p->n_pids = k;
}

/* The pid in containerd's verbose PodSandboxStatus info ({"pid": 1234, ...} under the key "info"). */
int stats_sandbox_pid_from_info(const char *info_json, int *ret) {
        json_auto_t *j = NULL;
        json_t *v;
        json_int_t pid;

        if (!info_json)
                return -EINVAL;
        j = json_loads(info_json, JSON_REJECT_DUPLICATES, NULL);
        if (!j)
                return -EINVAL;
        v = json_object_get(j, "pid");
        pid = json_is_integer(v) ? json_integer_value(v) : 0;
        if (pid <= 0 || pid > INT32_MAX)
                return -ENOENT;
        *ret = (int) pid;
        return 0;
}

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

/* protobuf-c map entries all look like this */
struct pb_map_entry {
        ProtobufCMessage base;
        char *key;
        char *value;
};

static const char *map_get(void *const *entries, size_t n, const char *key) {
        for (size_t i = 0; i < n; i++) {
                const struct pb_map_entry *e = entries[i];
                if (e && e->key && streq(e->key, key))
                        return e->value;
        }
        return NULL;
}
#define LABEL(m, key) map_get((void *const *) (m)->labels, (m)->n_labels, (key))

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
        struct sandbox_pid *sp = sandbox_pid_find(b->p, sandbox_id);
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

static int stats_summary_build_times(struct stats_provider *p, const struct summary_input *in, bool precise,
                                     json_t **ret);

int stats_summary_build(struct stats_provider *p, const struct summary_input *in, json_t **ret) {
        return stats_summary_build_times(p, in, false, ret);
}

/* precise: times with nanoseconds (RFC 3339 nano) */
static int stats_summary_build_times(struct stats_provider *p, const struct summary_input *in, bool precise,
                                     json_t **ret) {
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
        stats_provider_cache_prune(p, now_usec() > CACHE_MAX_AGE_USEC ? now_usec() - CACHE_MAX_AGE_USEC : 0);
        sandbox_pids_prune(p, now_usec() > CACHE_MAX_AGE_USEC ? now_usec() - CACHE_MAX_AGE_USEC : 0);
        if (b.oom)
                return -ENOMEM;
        *ret = TAKE_PTR(doc);
        return 0;
}

/* ---------------------------------------------------------------- requests */

static void req_complete(struct summary_req *req) {
        struct stats_provider *p = req->p;
        stats_summary_cb cb = req->cb;
        void *userdata = req->userdata;
        json_t *summary = NULL;
        int r = req->error;

        if (r >= 0) {
                struct summary_input in = {
                        .sandboxes = (const Runtime__V1__ListPodSandboxResponse *) req->resp[Q_SANDBOXES],
                        .containers = (const Runtime__V1__ListContainersResponse *) req->resp[Q_CONTAINERS],
                        .container_stats = (const Runtime__V1__ListContainerStatsResponse *)
                                                   req->resp[Q_CONTAINER_STATS],
                        .pod_stats = (const Runtime__V1__ListPodSandboxStatsResponse *) req->resp[Q_POD_STATS],
                        .image_fs = (const Runtime__V1__ImageFsInfoResponse *) req->resp[Q_IMAGE_FS],
                };
                r = stats_summary_build_times(p, &in, req->precise, &summary);
        }
        req_unlink(p, req);
        req_free(req);
        cb(r, r < 0 ? NULL : summary, userdata);
}

/* a deep copy of a message (the CRI client's is valid only during its callback) */
static ProtobufCMessage *message_copy(const ProtobufCMessage *m) {
        size_t n = protobuf_c_message_get_packed_size(m);
        _cleanup_free_ uint8_t *buf = malloc(n ? n : 1);
        if (!buf)
                return NULL;
        protobuf_c_message_pack(m, buf);
        return protobuf_c_message_unpack(m->descriptor, NULL, n, buf);
}

/* one CRI call of the request is over */
static void req_step_done(struct summary_req *req) {
        req->pending--;
        if (req->pending > 0)
                return;
        if (!req->p) {
                req_free(req); /* cancelled: the callback already ran */
                return;
        }
        req_complete(req);
}

static void on_status_reply(const struct cri_reply *reply, void *userdata) {
        struct status_slot *slot = userdata;
        struct summary_req *req = slot->req;

        if (req->p && reply->r >= 0 && reply->msg) {
                const Runtime__V1__PodSandboxStatusResponse *resp = (const Runtime__V1__PodSandboxStatusResponse *)
                                                                            reply->msg;
                const char *info = map_get((void *const *) resp->info, resp->n_info, "info");
                int pid;
                if (stats_sandbox_pid_from_info(info, &pid) < 0) {
                        log_v(4, "stats: no pid in the status of sandbox %s", slot->sandbox_id);
                        pid = 0; /* remembered as unknown: not asked again */
                }
                (void) stats_provider_set_sandbox_pid(req->p, slot->sandbox_id, pid);
        } else if (req->p)
                log_v(4, "stats: PodSandboxStatus %s failed: %s", slot->sandbox_id, reply->message);
        req_step_done(req);
}

/* Ask for the pid of READY sandboxes not seen before (their network namespace gives the pod's network stats
 * when the runtime has no ListPodSandboxStats for them). */
static void resolve_sandbox_pids(struct summary_req *req, const Runtime__V1__ListPodSandboxResponse *resp) {
        struct stats_provider *p = req->p;
        size_t n = 0;

        for (size_t i = 0; i < resp->n_items; i++)
                if (resp->items[i]->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY &&
                    !isempty(resp->items[i]->id) && !sandbox_pid_find(p, resp->items[i]->id))
                        n++;
        if (n == 0)
                return;
        req->status = calloc(n, sizeof(*req->status));
        if (!req->status)
                return;
        for (size_t i = 0; i < resp->n_items && req->n_status < n; i++) {
                const Runtime__V1__PodSandbox *sb = resp->items[i];
                Runtime__V1__PodSandboxStatusRequest sreq = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
                struct status_slot *slot = &req->status[req->n_status];

                if (sb->state != RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY || isempty(sb->id) ||
                    sandbox_pid_find(p, sb->id))
                        continue;
                slot->req = req;
                slot->sandbox_id = strdup(sb->id);
                if (!slot->sandbox_id)
                        return;
                req->n_status++;
                sreq.pod_sandbox_id = sb->id;
                sreq.verbose = true;
                if (cri_pod_sandbox_status(p->cri, &sreq, 0, on_status_reply, slot) >= 0)
                        req->pending++;
        }
}

static void on_reply(const struct cri_reply *reply, void *userdata) {
        struct req_slot *slot = userdata;
        struct summary_req *req = slot->req;

        if (req->p) {
                if (reply->r < 0) {
                        if (query_required[slot->q]) {
                                if (req->error >= 0)
                                        req->error = reply->r;
                                log_v(2, "stats: %s failed: %s", query_name[slot->q], reply->message);
                        } else
                                log_v(4, "stats: %s failed: %s", query_name[slot->q], reply->message);
                        if (slot->q == Q_POD_STATS) /* e.g. containerd 1.6 for sandboxes without a cgroup parent */
                                req->p->pod_stats_retry_usec = now_usec() + POD_STATS_RETRY_USEC;
                } else if (reply->msg) {
                        req->resp[slot->q] = message_copy(reply->msg);
                        if (!req->resp[slot->q] && query_required[slot->q] && req->error >= 0)
                                req->error = -ENOMEM;
                        if (slot->q == Q_SANDBOXES && req->resp[slot->q] && req->error >= 0)
                                resolve_sandbox_pids(req,
                                                     (const Runtime__V1__ListPodSandboxResponse *) req->resp[slot->q]);
                }
        }
        req_step_done(req);
}

static void on_defer(evutil_socket_t fd, short what, void *userdata) {
        req_complete(userdata);
}

static int stats_summary_get_times(struct stats_provider *p, bool precise, stats_summary_cb cb, void *userdata);

int stats_summary_get(struct stats_provider *p, stats_summary_cb cb, void *userdata) {
        return stats_summary_get_times(p, false, cb, userdata);
}

int stats_summary_get_precise(struct stats_provider *p, stats_summary_cb cb, void *userdata) {
        return stats_summary_get_times(p, true, cb, userdata);
}

static int stats_summary_get_times(struct stats_provider *p, bool precise, stats_summary_cb cb, void *userdata) {
        struct summary_req *req;
        int r;

        if (!p || !cb)
                return -EINVAL;
        req = calloc(1, sizeof(*req));
        if (!req)
                return -ENOMEM;
        req->p = p;
        req->precise = precise;
        req->cb = cb;
        req->userdata = userdata;
        for (size_t i = 0; i < _Q_MAX; i++)
                req->slots[i] = (struct req_slot) { .req = req, .q = (enum query) i };

        if (p->cri) {
                Runtime__V1__PodSandboxStateValue ready = RUNTIME__V1__POD_SANDBOX_STATE_VALUE__INIT;
                Runtime__V1__PodSandboxFilter sf = RUNTIME__V1__POD_SANDBOX_FILTER__INIT;
                Runtime__V1__ListPodSandboxRequest sreq = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
                Runtime__V1__ListContainersRequest creq = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
                Runtime__V1__ListContainerStatsRequest csreq = RUNTIME__V1__LIST_CONTAINER_STATS_REQUEST__INIT;
                Runtime__V1__ListPodSandboxStatsRequest psreq = RUNTIME__V1__LIST_POD_SANDBOX_STATS_REQUEST__INIT;
                Runtime__V1__ImageFsInfoRequest ireq = RUNTIME__V1__IMAGE_FS_INFO_REQUEST__INIT;

                ready.state = RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
                sf.state = &ready;
                sreq.filter = &sf;
                for (size_t i = 0; i < _Q_MAX; i++) {
                        switch ((enum query) i) {
                        case Q_SANDBOXES:
                                r = cri_list_pod_sandbox(p->cri, &sreq, 0, on_reply, &req->slots[i]);
                                break;
                        case Q_CONTAINERS:
                                r = cri_list_containers(p->cri, &creq, 0, on_reply, &req->slots[i]);
                                break;
                        case Q_CONTAINER_STATS:
                                r = cri_list_container_stats(p->cri, &csreq, 0, on_reply, &req->slots[i]);
                                break;
                        case Q_POD_STATS:
                                if (p->pod_stats_retry_usec > now_usec())
                                        continue; /* failed not long ago */
                                r = cri_list_pod_sandbox_stats(p->cri, &psreq, 0, on_reply, &req->slots[i]);
                                break;
                        case Q_IMAGE_FS:
                                r = cri_image_fs_info(p->cri, &ireq, 0, on_reply, &req->slots[i]);
                                break;
                        default:
                                r = -EINVAL;
                        }
                        if (r >= 0)
                                req->pending++;
                        else if (query_required[i] && req->error >= 0)
                                req->error = r;
                }
                if (req->pending == 0) {
                        r = req->error < 0 ? req->error : -EIO;
                        req_free(req);
                        return r;
                }
        } else {
                req->defer = event_new(p->base, -1, 0, on_defer, req);
                if (!req->defer) {
                        req_free(req);
                        return -ENOMEM;
                }
                event_active(req->defer, EV_TIMEOUT, 0);
        }
        req->next = p->reqs;
        if (p->reqs)
                p->reqs->prev = req;
        p->reqs = req;
        return 0;
}

/* ---------------------------------------------------------------- lifecycle */

int stats_provider_new(struct event_base *base, struct cri_client *cri, const struct stats_config *cfg,
                       struct stats_provider **ret) {
        struct stats_provider *p;
        _cleanup_free_ char *meminfo = NULL;

        if (!base || !cfg)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->base = base;
        p->cri = cri;
        p->node_name = strdup(strempty(cfg->node_name));
        p->root_dir = strdup(strempty(cfg->root_dir));
        p->pod_logs_dir = strdup(strempty(cfg->pod_logs_dir));
        p->host_root = strdup(strempty(cfg->host_root));
        p->pods_cgroup = strdup_or_null(cfg->pods_cgroup);
        p->volumes = cfg->volumes;
        p->pod_volumes = cfg->pod_volumes;
        p->pod_volumes_userdata = cfg->pod_volumes_userdata;
        if (!p->node_name || !p->root_dir || !p->pod_logs_dir || !p->host_root ||
            (cfg->pods_cgroup && !p->pods_cgroup)) {
                stats_provider_free(p);
                return -ENOMEM;
        }
        if (stats_read_file(p->host_root, "/proc/meminfo", 64 * 1024, &meminfo) >= 0)
                (void) stats_parse_meminfo(meminfo, "MemTotal", &p->memory_capacity);
        (void) stats_read_boot_time(p->host_root, &p->boot_time_sec);
        p->start_realtime_usec = now_realtime_usec();
        *ret = p;
        return 0;
}

struct stats_provider *stats_provider_free(struct stats_provider *p) {
        struct summary_req *req;

        if (!p)
                return NULL;
        while ((req = p->reqs)) {
                stats_summary_cb cb = req->cb;
                void *userdata = req->userdata;
                req_unlink(p, req);
                req->p = NULL;
                if (req->pending == 0)
                        req_free(req); /* nothing in flight (a deferred completion) */
                cb(-ECANCELED, NULL, userdata);
        }
        for (size_t i = 0; i < p->n_cache; i++)
                free(p->cache[i].key);
        free(p->cache);
        for (size_t i = 0; i < p->n_pids; i++)
                free(p->pids[i].id);
        free(p->pids);
        free(p->node_name);
        free(p->root_dir);
        free(p->pod_logs_dir);
        free(p->host_root);
        free(p->pods_cgroup);
        free(p);
        return NULL;
}
