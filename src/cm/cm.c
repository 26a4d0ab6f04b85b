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

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "apis/resource.h"
#include "cm/cm.h"
#include "cm/systemd.h"
#include "node/node_status.h"
#include "stats/machine.h"

#define CGROUP_FILE_MAX (1024u * 1024u) /* cgroup.procs of a pod cgroup */
#define CGROUP_DEPTH_MAX 16             /* pod cgroup → sandbox/container cgroups → whatever they made */

struct cm_hierarchy {
        char *mount;  /* where it is mounted, e.g. /sys/fs/cgroup/memory */
        bool cpuset;  /* v1 cpuset: new cgroups need cpuset.cpus/mems */
        bool systemd; /* name=systemd, or the unified hierarchy beside v1 ones: systemd makes the slices there */
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
        bool systemd;             /* --cgroup-driver=systemd: the cgroups are slices that systemd makes */
        struct cm_sd *sd;         /* its D-Bus client */
        char **stopping;          /* the pod slices a StopUnit is in flight for (their cgroup names) */
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
        m->sd = cm_sd_free(m->sd); /* drops the calls in flight (their pod syncs are gone) */
        strv_free(m->stopping);
        free(m->root);
        free(m->root_name);
        free(m);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct cm *, cm_free);

/* where a cgroup name is below each hierarchy's mount: the name itself (cgroupfs), or its slices expanded
 * ("kubepods.slice/kubepods-burstable.slice"; systemd), without a leading '/' */
static int fs_name(const struct cm *m, const char *name, char **ret) {
        _cleanup_free_ char *sd = NULL;
        char *s;
        int r;

        if (!m->systemd) {
                s = strdup(name);
        } else {
                r = cm_name_to_systemd(name, &sd);
                if (r < 0)
                        return r;
                s = strdup(sd + 1);
        }
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

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

static int add_hierarchy(struct cm *m, const char *mount, bool cpuset, bool systemd) {
        struct cm_hierarchy *n;
        for (size_t i = 0; i < m->n_h; i++)
                if (streq(m->h[i].mount, mount))
                        return 0;
        n = reallocarray(m->h, m->n_h + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        m->h = n;
        n[m->n_h].mount = strdup(mount);
        if (!n[m->n_h].mount)
                return -ENOMEM;
        n[m->n_h].cpuset = cpuset;
        n[m->n_h].systemd = systemd;
        m->n_h++;
        return 0;
}

/* Every mounted v1 hierarchy (controllers and named ones such as name=systemd, as runc and upstream's
 * libcontainer manager use them) and the unified hierarchy. */
static int find_hierarchies(struct cm *m, struct ck_error **ret_error) {
        _cleanup_free_ char *data = NULL, *unified = NULL;
        char *line, *saveptr = NULL;
        size_t size;
        int r;

        r = read_full_file("/proc/self/mountinfo", PROC_MOUNTINFO_MAX, &data, &size);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot read /proc/self/mountinfo: %s", strerror(-r));
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
                        r = add_hierarchy(m, f[4], super && has_option(super, "cpuset"),
                                          super && has_option(super, "name=systemd"));
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
                r = add_hierarchy(m, unified, false, true);
                if (r < 0)
                        return r;
        }
        if (m->n_h == 0)
                return ck_error_set(ret_error, -ENOENT,
                                    "no cgroup hierarchy is mounted: --cgroups-per-qos needs cgroupfs");
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
        for (size_t i = 0; i < rc->n_hugepages; i++) {
                char unit[RESOURCE_HUGEPAGE_UNIT_MAX], file[64];
                resource_hugepage_unit(rc->hugepages[i].page_size, unit);
                snprintf(file, sizeof(file), "hugetlb.%s.%s", unit, m->unified ? "max" : "limit_in_bytes");
                cg_set_int(dir, file, rc->hugepages[i].limit);
        }
}

/* create the cgroup in every hierarchy and apply rc (NULL: none). With the systemd driver the slice exists (systemd
 * made it in its own hierarchies); the controllers' directories are made here as runc's joinCgroups does, and the
 * values are written to cgroupfs as upstream's Update. */
static int ensure_cgroup(const struct cm *m, const char *cg_name, const struct cm_resource_config *rc,
                         struct ck_error **ret_error) {
        _cleanup_free_ char *name = NULL;
        int r = fs_name(m, cg_name, &name);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_h; i++) {
                _cleanup_free_ char *path = NULL;
                if (m->systemd && m->h[i].systemd) {
                        if (asprintf(&path, "%s/%s", m->h[i].mount, name) < 0)
                                return -ENOMEM;
                        if (access(path, F_OK) < 0)
                                continue;
                } else {
                        r = ensure_dir(m, &m->h[i], name, &path);
                        if (r < 0)
                                return ck_error_set(ret_error, r, "cannot create cgroup %s/%s: %s", m->h[i].mount, name,
                                                    strerror(-r));
                }
                if (rc)
                        apply_resources(m, path, rc);
        }
        return 0;
}

/* Exists: the cgroup's directory is there in every hierarchy */
static bool cgroup_exists(const struct cm *m, const char *cg_name) {
        _cleanup_free_ char *name = NULL;
        if (fs_name(m, cg_name, &name) < 0)
                return false;
        for (size_t i = 0; i < m->n_h; i++) {
                _cleanup_free_ char *path = NULL;
                struct stat st;
                if (asprintf(&path, "%s/%s", m->h[i].mount, name) < 0 || stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
                        return false;
        }
        return true;
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

static int destroy_cgroup(const struct cm *m, const char *cg_name) {
        _cleanup_free_ char *name = NULL;
        int r = fs_name(m, cg_name, &name);
        if (r < 0)
                return r;
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

/* the "pid=N" of a --kube-reserved/--system-reserved list (validated at start-up), 0 without one */
static int64_t reserved_pids(const char *csv) {
        for (const char *p = strempty(csv); *p;) {
                size_t len = strcspn(p, ",");
                if (len > 4 && strneq(p, "pid=", 4)) {
                        char buf[32];
                        int64_t v;
                        if (len - 4 < sizeof(buf)) {
                                memcpy(buf, p + 4, len - 4);
                                buf[len - 4] = '\0';
                                if (safe_atoi64(buf, &v) >= 0 && v > 0)
                                        return v;
                        }
                }
                p += len;
                if (*p)
                        p++;
        }
        return 0;
}

static int qos_name(const struct cm *m, const char *qos, char **ret) {
        const char *parts[2] = { "kubepods", qos };
        return cm_cgroup_name(m->root, parts, qos ? 2 : 1, ret);
}

/* Create: with the systemd driver the slice first (StartTransientUnit, blocking: start-up only) unless it exists,
 * then the directories and the values on cgroupfs */
static int ensure_qos_cgroup(struct cm *m, const char *name, const struct cm_resource_config *rc,
                             struct ck_error **ret_error) {
        if (m->systemd && !cgroup_exists(m, name)) {
                _cleanup_free_ char *unit = NULL, *parent = NULL;
                _cleanup_ck_error_ struct ck_error *why = NULL;
                struct cm_slice_properties props;
                int r;

                r = cm_name_to_systemd_unit(name, &unit, &parent);
                if (r >= 0)
                        r = cm_systemd_slice_properties(unit, parent, rc ? rc : &(struct cm_resource_config) {},
                                                        m->unified, cm_sd_version(m->sd), &props);
                if (r < 0)
                        return ck_error_set(ret_error, r, "cannot name the systemd slice of cgroup %s: %s", name,
                                            strerror(-r));
                r = cm_sd_start_slice_sync(m->sd, unit, &props, &why);
                if (r < 0)
                        return ck_error_set(ret_error, r, "failed to create the systemd slice %s: %s", unit,
                                            ck_error_message(why));
                log_info("systemd slice %s created (Wants=%s)", unit, parent);
        }
        return ensure_cgroup(m, name, rc, ret_error);
}

int cm_new(struct event_base *base, const struct kubelet_options *o, int64_t cpu_milli_capacity,
           int64_t memory_capacity, struct cm **ret, struct ck_error **ret_error) {
        _cleanup_(cm_freep) struct cm *m = NULL;
        _cleanup_free_ char *kubepods = NULL, *burstable = NULL, *besteffort = NULL;
        struct cm_resource_config rc = {};
        int64_t cpu = cpu_milli_capacity, mem = memory_capacity, pids = 0;
        int r;

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
        /* the root is read in the cgroupfs form with either driver (upstream ParseCgroupfsToCgroupName): with the
         * systemd one "/a/b" is the slice a-b.slice (a.slice/a-b.slice on cgroupfs) */
        m->systemd = streq_ptr(o->cgroup_driver, "systemd");
        m->root = strdup(isempty(o->cgroup_root) ? "/" : o->cgroup_root);
        if (!m->root)
                return -ENOMEM;
        r = cm_cgroup_name(m->root, NULL, 0, &m->root_name);
        if (r < 0)
                return r;
        r = find_hierarchies(m, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_h; i++) {
                _cleanup_free_ char *p = NULL, *fs = NULL;
                struct stat st;
                r = fs_name(m, m->root_name, &fs);
                if (r < 0)
                        return r;
                if (asprintf(&p, "%s/%s", m->h[i].mount, fs) < 0)
                        return -ENOMEM;
                if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
                        return ck_error_set(ret_error, -ENOENT,
                                            "invalid configuration: cgroup-root \"%s\" doesn't exist (no %s)",
                                            isempty(o->cgroup_root) ? "/" : o->cgroup_root, p);
        }
        /* the cgroup manager talks to systemd from here on (upstream: the first Create) */
        if (m->systemd) {
                r = cm_sd_open(base, &m->sd);
                if (r < 0)
                        return r;
        }

        /* the pid capacity: kernel.pid_max (upstream pidlimit.Stats) */
        {
                _cleanup_free_ char *v = NULL;
                size_t size;
                if (read_full_file("/proc/sys/kernel/pid_max", 64, &v, &size) >= 0) {
                        v[strcspn(v, "\n")] = '\0';
                        if (safe_atoi64(v, &pids) < 0)
                                pids = 0;
                }
        }
        /* kubepods: node allocatable when "pods" is enforced, else capacity (upstream createNodeAllocatableCgroups) */
        if (csv_contains(o->enforce_node_allocatable, "pods")) {
                int64_t kc = 0, km = 0, sc = 0, sm = 0, s;
                (void) node_parse_reserved(o->kube_reserved, &kc, &km, &s, NULL);
                (void) node_parse_reserved(o->system_reserved, &sc, &sm, &s, NULL);
                cpu = MAX(cpu - kc - sc, (int64_t) 0);
                mem = MAX(mem - km - sm, (int64_t) 0);
                if (pids > 0)
                        pids = MAX(pids - reserved_pids(o->kube_reserved) - reserved_pids(o->system_reserved),
                                   (int64_t) 0);
        }
        r = qos_name(m, NULL, &kubepods);
        if (r >= 0)
                r = qos_name(m, "burstable", &burstable);
        if (r >= 0)
                r = qos_name(m, "besteffort", &besteffort);
        if (r < 0)
                return r;
        rc = (struct cm_resource_config) { .cpu_shares = kr_milli_cpu_to_shares(cpu),
                                           .memory_limit = mem,
                                           .pids_limit = pids };
        r = ensure_qos_cgroup(m, kubepods, &rc, ret_error);
        if (r < 0)
                return r;
        r = ensure_qos_cgroup(m, burstable, NULL, ret_error);
        if (r >= 0)
                r = ensure_qos_cgroup(m, besteffort, &(struct cm_resource_config) { .cpu_shares = CPU_MIN_SHARES },
                                      ret_error);
        if (r < 0)
                return r;
        {
                _cleanup_free_ char *f1 = NULL, *f2 = NULL, *f3 = NULL;
                if (fs_name(m, kubepods, &f1) < 0 || fs_name(m, burstable, &f2) < 0 || fs_name(m, besteffort, &f3) < 0)
                        return -ENOMEM;
                log_info("QoS cgroups ready: /%s (cpu shares %" PRId64 ", memory limit %" PRId64 ", pids %" PRId64
                         "), /%s, /%s, in %zu %s, cgroup driver %s",
                         f1, rc.cpu_shares, mem, pids, f2, f3, m->n_h,
                         m->unified ? "unified hierarchy" : "cgroup v1 hierarchies",
                         m->systemd ? "systemd" : "cgroupfs");
        }
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
        {
                const uint64_t *sizes;
                size_t n = machine_hugepage_sizes(&sizes);
                cm_resource_config_hugepages(pod, sizes, n, ret_rc);
        }
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
        /* cgroupManager.Name(): the cgroupfs path, or the expanded slices
         * ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice") */
        return m->systemd ? cm_name_to_systemd(name, ret) : cm_name_to_cgroupfs(name, ret);
}

struct pod_start {
        struct cm *m;
        char *name;
        struct cm_resource_config rc;
        cm_done_fn done;
        void *userdata;
};

static void pod_start_free(void *userdata) {
        struct pod_start *ps = userdata;
        free(ps->name);
        free(ps);
}

static void on_pod_slice(int r, const char *message, void *userdata) {
        struct pod_start *ps = userdata;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ char *msg = NULL;

        if (r >= 0) {
                r = ensure_cgroup(ps->m, ps->name, &ps->rc, &err);
                if (r < 0)
                        msg = ck_error_take_message(TAKE_PTR(err));
        } else {
                /* pod_container_manager EnsureExists's words; the name printed as the CgroupName list */
                for (char *c = ps->name; *c; c++)
                        if (*c == '/')
                                *c = ' ';
                if (asprintf(&msg, "failed to create container for [%s] : %s", ps->name,
                             message ? message : strerror(-r)) < 0)
                        msg = NULL;
        }
        if (ps->done)
                ps->done(r, msg, ps->userdata);
        else if (r < 0)
                log_error("%s", msg ? msg : strerror(-r));
        pod_start_free(ps);
}

int cm_pod_ensure_async(struct cm *m, const struct pod *pod, cm_done_fn done, void *userdata,
                        struct ck_error **ret_error) {
        _cleanup_free_ char *name = NULL, *unit = NULL, *parent = NULL;
        struct cm_slice_properties props;
        struct cm_resource_config rc;
        struct pod_start *ps;
        int r;

        r = pod_config(m, pod, &name, &rc);
        if (r <= 0)
                return r;
        if (m->pids_limit > 0)
                rc.pids_limit = m->pids_limit;
        log_v(4, "pod cgroup /%s: cpu shares %" PRId64 ", quota %" PRId64 "/%" PRId64 ", memory %" PRId64, name,
              rc.cpu_shares, rc.cpu_quota, rc.cpu_period, rc.memory_limit);
        /* an existing cgroup only gets its values (pod_container_manager EnsureExists → Update) */
        if (!m->systemd || cgroup_exists(m, name))
                return ensure_cgroup(m, name, &rc, ret_error);
        r = cm_name_to_systemd_unit(name, &unit, &parent);
        if (r >= 0)
                r = cm_systemd_slice_properties(unit, parent, &rc, m->unified, cm_sd_version(m->sd), &props);
        if (r < 0)
                return r;
        ps = calloc(1, sizeof(*ps));
        if (!ps)
                return -ENOMEM;
        *ps = (struct pod_start) { .m = m, .name = TAKE_PTR(name), .rc = rc, .done = done, .userdata = userdata };
        r = cm_sd_start_slice(m->sd, unit, &props, on_pod_slice, pod_start_free, ps);
        if (r < 0) {
                free(ps->name);
                free(ps);
                return r;
        }
        log_v(3, "StartTransientUnit %s (Wants=%s) sent", unit, parent);
        return 1;
}

int cm_pod_ensure(struct cm *m, const struct pod *pod, struct ck_error **ret_error) {
        int r = cm_pod_ensure_async(m, pod, NULL, NULL, ret_error);
        return r < 0 ? r : 0;
}

int cm_pods_cgroup(const struct cm *m, char **ret) {
        _cleanup_free_ char *name = NULL, *fs = NULL;
        int r;

        if (!cm_enabled(m)) {
                *ret = NULL;
                return 0;
        }
        r = qos_name(m, NULL, &name);
        if (r >= 0)
                r = fs_name(m, name, &fs);
        if (r < 0)
                return r;
        return cm_name_to_cgroupfs(fs, ret);
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
        {
                char *fs = NULL;
                r = fs_name(m, name, &fs);
                if (r < 0)
                        return r;
                free_and_replace(name, fs);
        }
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

static void on_qos_properties(int r, const char *message, void *userdata) {
        if (r < 0)
                log_warning("cannot set the CPU weight of the burstable QoS slice: %s",
                            message ? message : strerror(-r));
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
        if (r >= 0) {
                char *fs = NULL;
                r = fs_name(m, burstable, &fs);
                if (r >= 0)
                        free_and_replace(burstable, fs);
        }
        if (r < 0)
                return r;
        if (m->systemd) {
                /* systemd owns the slice and writes its own CPUWeight= (CPUShares=) into it whenever it realizes the
                 * slice again (a pod slice started under it): set the property too, as libcontainer's systemd
                 * manager does (setUnitProperties, then the files) */
                _cleanup_free_ char *name = NULL, *unit = NULL, *parent = NULL;
                struct cm_slice_properties props = {};
                r = qos_name(m, "burstable", &name);
                if (r >= 0)
                        r = cm_name_to_systemd_unit(name, &unit, &parent);
                if (r < 0)
                        return r;
                props.p[props.n++] = (struct cm_unit_property) {
                        .name = m->unified ? "CPUWeight" : "CPUShares",
                        .type = CM_PROPERTY_U64,
                        .u = m->unified ? cm_cpu_shares_to_weight((uint64_t) shares) : (uint64_t) shares,
                };
                r = cm_sd_set_properties(m->sd, unit, &props, on_qos_properties, NULL, NULL);
                if (r < 0)
                        log_warning("cannot set %s of the systemd slice %s: %s", props.p[0].name, unit, strerror(-r));
        }
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

struct pod_stop {
        struct cm *m;
        char *name;
};

static void pod_stop_free(void *userdata) {
        struct pod_stop *st = userdata;
        free(st->name);
        free(st);
}

/* StopUnit ended (or failed: logged): what is left of the slice's directories goes as with cgroupfs
 * (runc's Destroy: RemovePaths after stopUnit) */
static void on_pod_slice_stopped(int r, const char *message, void *userdata) {
        struct pod_stop *st = userdata;
        int q;

        if (r < 0)
                log_warning("StopUnit of pod cgroup /%s: %s", st->name, message ? message : strerror(-r));
        for (size_t i = 0; st->m->stopping && st->m->stopping[i]; i++)
                if (streq(st->m->stopping[i], st->name)) {
                        strv_remove_at(st->m->stopping, i);
                        break;
                }
        q = destroy_cgroup(st->m, st->name);
        if (q < 0)
                log_v(3, "Orphaned pod cgroup /%s not removed yet: %s", st->name, strerror(-q));
        else
                log_v(3, "Orphaned pod found, removing pod cgroups: cgroup=\"/%s\"", st->name);
        pod_stop_free(st);
}

/* pod_container_manager Destroy: kill what runs in it, then the cgroup manager's Destroy (StopUnit of the slice with
 * the systemd driver, then the directories) */
static void destroy_pod_cgroup(struct cm *m, const char *name) {
        _cleanup_free_ char *unit = NULL, *parent = NULL, *fs = NULL;
        struct pod_stop *st;
        int r;

        if (!m->systemd) {
                r = destroy_cgroup(m, name);
                if (r < 0)
                        log_v(3, "Orphaned pod cgroup /%s not removed yet: %s", name, strerror(-r));
                else
                        log_v(3, "Orphaned pod found, removing pod cgroups: cgroup=\"/%s\"", name);
                return;
        }
        if (strv_contains(m->stopping, name))
                return; /* its StopUnit is in flight */
        if (fs_name(m, name, &fs) < 0)
                return;
        for (size_t i = 0; i < m->n_h; i++) {
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s/%s", m->h[i].mount, fs) >= 0)
                        kill_procs(path, 0);
        }
        r = cm_name_to_systemd_unit(name, &unit, &parent);
        if (r < 0)
                return;
        st = calloc(1, sizeof(*st));
        if (!st || !(st->name = strdup(name)) || strv_extend(&m->stopping, name) < 0) {
                if (st)
                        free(st->name);
                free(st);
                return;
        }
        st->m = m;
        r = cm_sd_stop_unit(m->sd, unit, on_pod_slice_stopped, pod_stop_free, st);
        if (r < 0) {
                log_warning("cannot send StopUnit for %s: %s", unit, strerror(-r));
                on_pod_slice_stopped(0, NULL, st); /* the directories still go */
                return;
        }
        log_v(3, "StopUnit %s sent", unit);
}

void cm_cleanup_orphans(struct cm *m, bool (*is_active)(const char *uid, void *userdata), void *userdata) {
        static const char *const qos[] = { NULL, "burstable", "besteffort" };
        char **orphans = NULL;

        if (!cm_enabled(m))
                return;
        for (size_t q = 0; q < ELEMENTSOF(qos); q++) {
                _cleanup_free_ char *qos_cg = NULL, *dir_name = NULL;
                if (qos_name(m, qos[q], &qos_cg) < 0 || fs_name(m, qos_cg, &dir_name) < 0)
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
                                _cleanup_free_ char *uid = NULL, *pod_dir = NULL;
                                char *name;
                                if (de->d_type != DT_DIR || cm_pod_uid_from_dir(m->systemd, de->d_name, &uid) < 0 ||
                                    is_active(uid, userdata))
                                        continue;
                                if (asprintf(&pod_dir, "pod%s", uid) < 0 ||
                                    asprintf(&name, "%s%s%s", qos_cg, isempty(qos_cg) ? "" : "/", pod_dir) < 0)
                                        break;
                                if (strv_contains(orphans, name))
                                        free(name);
                                else if (strv_push(&orphans, name) < 0)
                                        break;
                        }
                }
        }
        for (size_t i = 0; orphans && orphans[i]; i++)
                destroy_pod_cgroup(m, orphans[i]);
finish:
        strv_free(orphans);
}
