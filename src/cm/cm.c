/* SPDX-License-Identifier: Apache-2.0 */
/* The QoS cgroups and the pod cgroups on cgroupfs (v1 hierarchies, or the v2 unified hierarchy). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "cm/cm.h"
#include "node/node_status.h"

#define CGROUP_FILE_MAX (1024u * 1024u) /* cgroup.procs of a pod cgroup */
#define CGROUP_DEPTH_MAX 16             /* pod cgroup → sandbox/container cgroups → whatever they made */

struct cm_hierarchy {
        char *mount; /* where it is mounted, e.g. /sys/fs/cgroup/memory */
        bool cpuset; /* v1 cpuset: new cgroups need cpuset.cpus/mems */
};

struct cm {
        bool enabled;
        bool unified;
        char *root;      /* --cgroup-root as given */
        char *root_name; /* its name ("" for /) */
        struct cm_hierarchy *h;
        size_t n_h;
        int64_t pids_limit;       /* --pod-max-pids, <= 0 none */
        int64_t burstable_shares; /* last written, -1 none */
};

bool cm_enabled(const struct cm *m) {
        return m && m->enabled;
}

struct cm *cm_free(struct cm *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_h; i++)
                free(m->h[i].mount);
        free(m->h);
        free(m->root);
        free(m->root_name);
        free(m);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct cm *, cm_free);

/* ---------------------------------------------------------------- hierarchies */

/* "\040" in mountinfo paths */
static void unescape_octal(char *s) {
        char *w = s;
        for (char *r = s; *r;) {
                if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' && r[3] >= '0' &&
                    r[3] <= '7') {
                        *w++ = (char) (((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
                        r += 4;
                } else
                        *w++ = *r++;
        }
        *w = '\0';
}

static bool has_option(const char *opts, const char *want) {
        size_t n = strlen(want);
        for (const char *p = opts; p && *p;) {
                const char *e = strchr(p, ',');
                size_t len = e ? (size_t) (e - p) : strlen(p);
                if (len == n && strneq(p, want, n))
                        return true;
                p = e ? e + 1 : NULL;
        }
        return false;
}

static int add_hierarchy(struct cm *m, const char *mount, bool cpuset) {
        struct cm_hierarchy *n;
        for (size_t i = 0; i < m->n_h; i++)
                if (streq(m->h[i].mount, mount))
                        return 0;
        n = realloc(m->h, (m->n_h + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        m->h = n;
        n[m->n_h].mount = strdup(mount);
        if (!n[m->n_h].mount)
                return -ENOMEM;
        n[m->n_h].cpuset = cpuset;
        m->n_h++;
        return 0;
}

/* Every mounted v1 hierarchy (controllers and named ones such as name=systemd, as runc and upstream's
 * libcontainer manager use them) and the unified hierarchy. */
static int find_hierarchies(struct cm *m) {
        _cleanup_free_ char *data = NULL, *unified = NULL;
        char *line, *saveptr = NULL;
        size_t size;
        int r;

        r = read_full_file("/proc/self/mountinfo", PROC_MOUNTINFO_MAX, &data, &size);
        if (r < 0)
                return log_error_errno(r, "cannot read /proc/self/mountinfo: %s", strerror(-r));
        for (line = strtok_r(data, "\n", &saveptr); line; line = strtok_r(NULL, "\n", &saveptr)) {
                char *f[16], *sep, *tok, *sp = NULL;
                size_t n = 0;

                sep = strstr(line, " - ");
                if (!sep)
                        continue;
                *sep = '\0';
                for (tok = strtok_r(line, " ", &sp); tok && n < 6; tok = strtok_r(NULL, " ", &sp))
                        f[n++] = tok; /* id parent maj:min root mountpoint options */
                if (n < 5)
                        continue;
                sp = NULL;
                tok = strtok_r(sep + 3, " ", &sp); /* fstype source superoptions */
                if (!tok)
                        continue;
                unescape_octal(f[4]);
                if (streq(tok, "cgroup")) {
                        char *source = strtok_r(NULL, " ", &sp), *super = source ? strtok_r(NULL, " ", &sp) : NULL;
                        r = add_hierarchy(m, f[4], super && has_option(super, "cpuset"));
                        if (r < 0)
                                return r;
                } else if (streq(tok, "cgroup2") && !unified) {
                        unified = strdup(f[4]);
                        if (!unified)
                                return -ENOMEM;
                }
        }
        /* hybrid hosts: runc also makes the containers' cgroups in the unified hierarchy (no controllers
         * there), so the pod cgroups are made and removed there too */
        if (unified) {
                m->unified = m->n_h == 0;
                r = add_hierarchy(m, unified, false);
                if (r < 0)
                        return r;
        }
        if (m->n_h == 0)
                return log_error_errno(-ENOENT, "no cgroup hierarchy is mounted: --cgroups-per-qos needs cgroupfs");
        return 0;
}

/* ---------------------------------------------------------------- files */

static int cg_write(const char *dir, const char *file, const char *value) {
        _cleanup_free_ char *p = NULL;
        size_t len = strlen(value);
        ssize_t n;
        int fd, r = 0;

        if (asprintf(&p, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        fd = open(p, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        n = write(fd, value, len);
        if (n < 0)
                r = -errno;
        else if ((size_t) n != len)
                r = -EIO;
        close(fd);
        return r;
}

static bool cg_has(const char *dir, const char *file) {
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s", dir, file) < 0)
                return false;
        return access(p, F_OK) == 0;
}

static void cg_set(const char *dir, const char *file, const char *value) {
        int r;
        if (!cg_has(dir, file))
                return;
        r = cg_write(dir, file, value);
        if (r < 0)
                log_warning("cannot write %s to %s/%s: %s", value, dir, file, strerror(-r));
}

static void cg_set_int(const char *dir, const char *file, int64_t v) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRId64, v);
        cg_set(dir, file, buf);
}

/* a new v1 cpuset cgroup starts with empty cpus/mems: take the parent's (cgroup.clone_children is off) */
static void cpuset_inherit(const char *dir, const char *parent) {
        static const char *const files[] = { "cpuset.cpus", "cpuset.mems" };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *p = NULL, *v = NULL;
                size_t size;
                if (asprintf(&p, "%s/%s", parent, files[i]) < 0 || read_full_file(p, 64 * 1024, &v, &size) < 0)
                        continue;
                if (size > 0 && v[size - 1] == '\n')
                        v[size - 1] = '\0';
                if (!isempty(v))
                        (void) cg_write(dir, files[i], v);
        }
}

static bool has_word(const char *s, const char *want) {
        size_t n = strlen(want);
        for (const char *p = s; *p;) {
                size_t len;
                p += strspn(p, " \t\n");
                len = strcspn(p, " \t\n");
                if (len == n && strneq(p, want, n))
                        return true;
                p += len;
        }
        return false;
}

/* v2: a child gets the controllers its parent enables for its subtree */
static void enable_subtree(const char *dir) {
        static const char *const want[] = { "cpu", "cpuset", "memory", "pids", "io", "hugetlb" };
        _cleanup_free_ char *p = NULL, *avail = NULL;
        size_t size;

        if (asprintf(&p, "%s/cgroup.controllers", dir) < 0 || read_full_file(p, 64 * 1024, &avail, &size) < 0)
                return;
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                char buf[16];
                if (!has_word(avail, want[i]))
                        continue;
                snprintf(buf, sizeof(buf), "+%s", want[i]);
                (void) cg_write(dir, "cgroup.subtree_control", buf);
        }
}

/* mkdir <mount>/<name> level by level; a level we create gets cpuset values (v1) or the parent's subtree
 * controllers (v2) */
static int ensure_dir(const struct cm *m, const struct cm_hierarchy *h, const char *name, char **ret_path) {
        _cleanup_free_ char *path = NULL;

        path = malloc(strlen(h->mount) + strlen(name) + 2);
        if (!path)
                return -ENOMEM;
        strcpy(path, h->mount);
        for (const char *p = name; *p;) {
                size_t len = strcspn(p, "/"), parent_len = strlen(path);
                if (len == 0) {
                        p++;
                        continue;
                }
                if (m->unified)
                        enable_subtree(path);
                path[parent_len] = '/';
                memcpy(path + parent_len + 1, p, len);
                path[parent_len + 1 + len] = '\0';
                if (mkdir(path, 0755) == 0) {
                        if (h->cpuset) {
                                _cleanup_free_ char *parent = strndup(path, parent_len);
                                if (parent)
                                        cpuset_inherit(path, parent);
                        }
                } else if (errno != EEXIST)
                        return -errno;
                p += len;
        }
        if (ret_path)
                *ret_path = TAKE_PTR(path);
        return 0;
}

static void apply_resources(const struct cm *m, const char *dir, const struct cm_resource_config *rc) {
        if (m->unified) {
                if (rc->cpu_shares > 0)
                        cg_set_int(dir, "cpu.weight", (int64_t) cm_cpu_shares_to_weight((uint64_t) rc->cpu_shares));
                if (rc->cpu_period > 0) {
                        char buf[64];
                        if (rc->cpu_quota > 0)
                                snprintf(buf, sizeof(buf), "%" PRId64 " %" PRId64, rc->cpu_quota, rc->cpu_period);
                        else
                                snprintf(buf, sizeof(buf), "max %" PRId64, rc->cpu_period);
                        cg_set(dir, "cpu.max", buf);
                }
                if (rc->memory_limit > 0)
                        cg_set_int(dir, "memory.max", rc->memory_limit);
        } else {
                if (rc->cpu_shares > 0)
                        cg_set_int(dir, "cpu.shares", rc->cpu_shares);
                if (rc->cpu_period > 0) {
                        cg_set_int(dir, "cpu.cfs_period_us", rc->cpu_period);
                        cg_set_int(dir, "cpu.cfs_quota_us", rc->cpu_quota > 0 ? rc->cpu_quota : -1);
                }
                if (rc->memory_limit > 0)
                        cg_set_int(dir, "memory.limit_in_bytes", rc->memory_limit);
        }
        if (rc->pids_limit > 0)
                cg_set_int(dir, "pids.max", rc->pids_limit);
}

/* create the cgroup in every hierarchy and apply rc (NULL: none) */
static int ensure_cgroup(const struct cm *m, const char *name, const struct cm_resource_config *rc) {
        for (size_t i = 0; i < m->n_h; i++) {
                _cleanup_free_ char *path = NULL;
                int r = ensure_dir(m, &m->h[i], name, &path);
                if (r < 0)
                        return log_error_errno(r, "cannot create cgroup %s/%s: %s", m->h[i].mount, name, strerror(-r));
                if (rc)
                        apply_resources(m, path, rc);
        }
        return 0;
}

/* ---------------------------------------------------------------- removal */

/* SIGKILL every process in dir and below */
static void kill_procs(const char *dir, unsigned depth) {
        _cleanup_free_ char *procs = NULL, *data = NULL;
        size_t size;
        _cleanup_closedir_ DIR *d = NULL;

        if (asprintf(&procs, "%s/cgroup.procs", dir) >= 0 &&
            read_full_file(procs, CGROUP_FILE_MAX, &data, &size) >= 0) {
                char *sp = NULL;
                for (char *tok = strtok_r(data, "\n", &sp); tok; tok = strtok_r(NULL, "\n", &sp)) {
                        int pid;
                        if (safe_atoi(tok, &pid) >= 0 && pid > 1 && pid != getpid())
                                (void) kill(pid, SIGKILL);
                }
        }
        if (depth >= CGROUP_DEPTH_MAX)
                return;
        d = opendir(dir);
        if (!d)
                return;
        for (struct dirent *de; (de = readdir(d));) {
                _cleanup_free_ char *sub = NULL;
                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (asprintf(&sub, "%s/%s", dir, de->d_name) >= 0)
                        kill_procs(sub, depth + 1);
        }
}

/* rmdir, children before parents; 0 or the first error (-ENOENT is fine) */
static int remove_tree(const char *dir, unsigned depth) {
        int r = 0;
        _cleanup_closedir_ DIR *d = NULL;

        if (depth < CGROUP_DEPTH_MAX && (d = opendir(dir))) {
                for (struct dirent *de; (de = readdir(d));) {
                        _cleanup_free_ char *sub = NULL;
                        int q;
                        if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        if (asprintf(&sub, "%s/%s", dir, de->d_name) < 0)
                                return -ENOMEM;
                        q = remove_tree(sub, depth + 1);
                        if (q < 0 && r == 0)
                                r = q;
                }
                d = safe_closedir(d);
        }
        if (rmdir(dir) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        return r;
}

static int destroy_cgroup(const struct cm *m, const char *name) {
        int r = 0;
        for (size_t i = 0; i < m->n_h; i++) {
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s/%s", m->h[i].mount, name) < 0)
                        return -ENOMEM;
                kill_procs(path, 0);
        }
        for (size_t i = 0; i < m->n_h; i++) {
                _cleanup_free_ char *path = NULL;
                int q;
                if (asprintf(&path, "%s/%s", m->h[i].mount, name) < 0)
                        return -ENOMEM;
                q = remove_tree(path, 0);
                if (q < 0 && r == 0)
                        r = q;
        }
        return r;
}

/* ---------------------------------------------------------------- the manager */

static bool csv_contains(const char *csv, const char *want) {
        size_t n = strlen(want);
        for (const char *p = strempty(csv); *p;) {
                size_t len = strcspn(p, ",");
                if (len == n && strneq(p, want, n))
                        return true;
                p += len;
                if (*p)
                        p++;
        }
        return false;
}

static int qos_name(const struct cm *m, const char *qos, char **ret) {
        const char *parts[2] = { "kubepods", qos };
        return cm_cgroup_name(m->root, parts, qos ? 2 : 1, ret);
}

int cm_new(const struct kubelet_options *o, int64_t cpu_milli_capacity, int64_t memory_capacity, struct cm **ret) {
        _cleanup_(cm_freep) struct cm *m = NULL;
        _cleanup_free_ char *kubepods = NULL, *burstable = NULL, *besteffort = NULL;
        struct cm_resource_config rc = {};
        int64_t cpu = cpu_milli_capacity, mem = memory_capacity;
        int r;

        if (streq_ptr(o->cgroup_driver, "systemd"))
                return log_error_errno(-EOPNOTSUPP,
                                       "--cgroup-driver=systemd is not supported by ckubelet: it creates the "
                                       "pod cgroups with the cgroupfs layout; use --cgroup-driver=cgroupfs (and "
                                       "SystemdCgroup = false in containerd's runc options)");
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->burstable_shares = -1;
        m->enabled = o->cgroups_per_qos;
        m->pids_limit = o->pod_pids_limit;
        if (!m->enabled) {
                *ret = TAKE_PTR(m);
                return 0;
        }
        m->root = strdup(isempty(o->cgroup_root) ? "/" : o->cgroup_root);
        if (!m->root)
                return -ENOMEM;
        r = cm_cgroup_name(m->root, NULL, 0, &m->root_name);
        if (r < 0)
                return r;
        r = find_hierarchies(m);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_h; i++) {
                _cleanup_free_ char *p = NULL;
                struct stat st;
                if (asprintf(&p, "%s/%s", m->h[i].mount, m->root_name) < 0)
                        return -ENOMEM;
                if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
                        return log_error_errno(-ENOENT,
                                               "invalid configuration: cgroup-root \"%s\" doesn't exist (no %s)",
                                               m->root, p);
        }

        /* kubepods: node allocatable when "pods" is enforced, else capacity (upstream createNodeAllocatableCgroups) */
        if (csv_contains(o->enforce_node_allocatable, "pods")) {
                int64_t kc = 0, km = 0, sc = 0, sm = 0, s;
                (void) node_parse_reserved(o->kube_reserved, &kc, &km, &s, NULL);
                (void) node_parse_reserved(o->system_reserved, &sc, &sm, &s, NULL);
                cpu = MAX(cpu - kc - sc, (int64_t) 0);
                mem = MAX(mem - km - sm, (int64_t) 0);
        }
        r = qos_name(m, NULL, &kubepods);
        if (r >= 0)
                r = qos_name(m, "burstable", &burstable);
        if (r >= 0)
                r = qos_name(m, "besteffort", &besteffort);
        if (r < 0)
                return r;
        rc = (struct cm_resource_config) { .cpu_shares = kr_milli_cpu_to_shares(cpu), .memory_limit = mem };
        r = ensure_cgroup(m, kubepods, &rc);
        if (r < 0)
                return r;
        r = ensure_cgroup(m, burstable, NULL);
        if (r >= 0)
                r = ensure_cgroup(m, besteffort, &(struct cm_resource_config) { .cpu_shares = CPU_MIN_SHARES });
        if (r < 0)
                return r;
        log_info("QoS cgroups ready: /%s (cpu shares %" PRId64 ", memory limit %" PRId64 "), /%s, /%s, in %zu %s",
                 kubepods, rc.cpu_shares, mem, burstable, besteffort, m->n_h,
                 m->unified ? "unified hierarchy" : "cgroup v1 hierarchies");
        *ret = TAKE_PTR(m);
        return 0;
}

static int pod_name(const struct cm *m, const struct pod *pod, char **ret) {
        return cm_pod_cgroup_name(m->root, pod_qos_class(pod), pod->uid, ret);
}

/* the pod's cgroup name and the resources it asks for: 1, or 0 when there are no pod cgroups (ret_ untouched) */
static int pod_config(const struct cm *m, const struct pod *pod, char **ret_name, struct cm_resource_config *ret_rc) {
        int r;

        if (!cm_enabled(m))
                return 0;
        r = pod_name(m, pod, ret_name);
        if (r < 0)
                return r;
        cm_resource_config_for_pod(pod, ret_rc);
        return 1;
}

int cm_pod_cgroup_parent(const struct cm *m, const struct pod *pod, char **ret) {
        _cleanup_free_ char *name = NULL;
        int r;

        if (!cm_enabled(m)) {
                *ret = NULL;
                return 0;
        }
        r = pod_name(m, pod, &name);
        if (r < 0)
                return r;
        return cm_name_to_cgroupfs(name, ret);
}

int cm_pod_ensure(struct cm *m, const struct pod *pod) {
        _cleanup_free_ char *name = NULL;
        struct cm_resource_config rc;
        int r;

        r = pod_config(m, pod, &name, &rc);
        if (r <= 0)
                return r;
        if (m->pids_limit > 0)
                rc.pids_limit = m->pids_limit;
        log_v(4, "pod cgroup /%s: cpu shares %" PRId64 ", quota %" PRId64 "/%" PRId64 ", memory %" PRId64, name,
              rc.cpu_shares, rc.cpu_quota, rc.cpu_period, rc.memory_limit);
        return ensure_cgroup(m, name, &rc);
}

/* a cgroup file's first number; -1 for "max" (unlimited), -ENOENT & co when it cannot be read */
static int cg_read_first(const char *dir, const char *file, int64_t *ret) {
        _cleanup_free_ char *p = NULL, *v = NULL;
        size_t size;
        int r;

        if (asprintf(&p, "%s/%s", dir, file) < 0)
                return -ENOMEM;
        r = read_full_file(p, CGROUP_FILE_MAX, &v, &size);
        if (r < 0)
                return r;
        if (startswith(v, "max")) {
                *ret = -1;
                return 0;
        }
        v[strcspn(v, " \n")] = '\0';
        return safe_atoi64(v, ret);
}

int cm_pod_grow(struct cm *m, const struct pod *pod) {
        _cleanup_free_ char *name = NULL;
        struct cm_resource_config rc;
        int r;

        r = pod_config(m, pod, &name, &rc);
        if (r <= 0)
                return r;
        for (size_t i = 0; i < m->n_h; i++) {
                _cleanup_free_ char *dir = NULL;
                int64_t cur;

                if (asprintf(&dir, "%s/%s", m->h[i].mount, name) < 0)
                        return -ENOMEM;
                /* only raise: an unlimited value (-1, "max") or a larger one stays as it is */
                if (rc.memory_limit > 0 &&
                    cg_read_first(dir, m->unified ? "memory.max" : "memory.limit_in_bytes", &cur) >= 0 && cur >= 0 &&
                    rc.memory_limit > cur)
                        cg_set_int(dir, m->unified ? "memory.max" : "memory.limit_in_bytes", rc.memory_limit);
                if (rc.cpu_quota > 0 && cg_read_first(dir, m->unified ? "cpu.max" : "cpu.cfs_quota_us", &cur) >= 0 &&
                    cur >= 0 && rc.cpu_quota > cur) {
                        if (m->unified) {
                                char buf[64];
                                snprintf(buf, sizeof(buf), "%" PRId64 " %" PRId64, rc.cpu_quota, rc.cpu_period);
                                cg_set(dir, "cpu.max", buf);
                        } else
                                cg_set_int(dir, "cpu.cfs_quota_us", rc.cpu_quota);
                }
        }
        log_v(3, "pod cgroup /%s raised for a resize: cpu quota %" PRId64 ", memory %" PRId64, name, rc.cpu_quota,
              rc.memory_limit);
        return 0;
}

int cm_update_qos(struct cm *m, const struct pod *const *pods, size_t n) {
        _cleanup_free_ char *burstable = NULL;
        int64_t milli = 0, shares;
        int r;

        if (!cm_enabled(m))
                return 0;
        for (size_t i = 0; i < n; i++)
                if (pod_qos_class(pods[i]) == QOS_BURSTABLE) {
                        int64_t c = cm_pod_cpu_requests(pods[i]);
                        milli = milli > INT64_MAX - c ? INT64_MAX : milli + c;
                }
        shares = kr_milli_cpu_to_shares(milli);
        if (shares == m->burstable_shares)
                return 0;
        r = qos_name(m, "burstable", &burstable);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_h; i++) {
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s/%s", m->h[i].mount, burstable) < 0)
                        return -ENOMEM;
                if (m->unified)
                        cg_set_int(path, "cpu.weight", (int64_t) cm_cpu_shares_to_weight((uint64_t) shares));
                else
                        cg_set_int(path, "cpu.shares", shares);
        }
        log_v(2, "QoS cgroup /%s: cpu shares %" PRId64 " (burstable pods request %" PRId64 "m)", burstable, shares,
              milli);
        m->burstable_shares = shares;
        return 0;
}

void cm_cleanup_orphans(struct cm *m, bool (*is_active)(const char *uid, void *userdata), void *userdata) {
        static const char *const qos[] = { NULL, "burstable", "besteffort" };
        char **orphans = NULL;

        if (!cm_enabled(m))
                return;
        for (size_t q = 0; q < ELEMENTSOF(qos); q++) {
                _cleanup_free_ char *dir_name = NULL;
                if (qos_name(m, qos[q], &dir_name) < 0)
                        goto finish;
                for (size_t i = 0; i < m->n_h; i++) {
                        _cleanup_free_ char *path = NULL;
                        _cleanup_closedir_ DIR *d = NULL;
                        if (asprintf(&path, "%s/%s", m->h[i].mount, dir_name) < 0)
                                goto finish;
                        d = opendir(path);
                        if (!d)
                                continue;
                        for (struct dirent *de; (de = readdir(d));) {
                                char *name;
                                if (de->d_type != DT_DIR || !startswith(de->d_name, "pod") || !de->d_name[3] ||
                                    is_active(de->d_name + 3, userdata))
                                        continue;
                                if (asprintf(&name, "%s/%s", dir_name, de->d_name) < 0)
                                        break;
                                if (strv_contains(orphans, name))
                                        free(name);
                                else if (strv_push(&orphans, name) < 0)
                                        break;
                        }
                }
        }
        for (size_t i = 0; orphans && orphans[i]; i++) {
                int r = destroy_cgroup(m, orphans[i]);
                if (r < 0)
                        log_v(3, "Orphaned pod cgroup /%s not removed yet: %s", orphans[i], strerror(-r));
                else
                        log_v(3, "Orphaned pod found, removing pod cgroups: cgroup=\"/%s\"", orphans[i]);
        }
finish:
        strv_free(orphans);
}
