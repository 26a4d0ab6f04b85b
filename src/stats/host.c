/* SPDX-License-Identifier: Apache-2.0 */
/* Node-level statistics from /proc, /sys and cgroupfs (what cadvisor's root container gives upstream). */
#include "stats/host.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/string.h"

#define SMALL_FILE_MAX (64u * 1024u)        /* cgroup files, meminfo, loadavg */
#define TABLE_FILE_MAX (4u * 1024u * 1024u) /* /proc/net/dev, /proc/net/route, /proc/stat */

/* ---------------------------------------------------------------- files */

int stats_read_file(const char *root, const char *path, size_t max_size, char **ret) {
        _cleanup_free_ char *p = NULL;
        char *data = NULL;
        int r;

        if (asprintf(&p, "%s%s", strempty(root), path) < 0)
                return -ENOMEM;
        r = read_full_file(p, max_size, &data, NULL);
        if (r < 0)
                return r;
        *ret = data;
        return 0;
}

int stats_read_u64(const char *root, const char *path, uint64_t *ret) {
        _cleanup_free_ char *s = NULL;
        int r = stats_read_file(root, path, SMALL_FILE_MAX, &s);
        if (r < 0)
                return r;
        return stats_parse_u64(s, ret);
}

/* ---------------------------------------------------------------- parsers */

/* An unsigned decimal at *s (after blanks); *end just past it. */
static int parse_u64_token(const char *s, const char **end, uint64_t *ret) {
        unsigned long long v;
        char *e;

        while (*s == ' ' || *s == '\t')
                s++;
        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &e, 10);
        if (errno == ERANGE)
                return -ERANGE;
        *end = e;
        *ret = (uint64_t) v;
        return 0;
}

int stats_parse_u64(const char *text, uint64_t *ret) {
        const char *end;
        uint64_t v;
        int r;

        if (!text)
                return -EINVAL;
        r = parse_u64_token(text, &end, &v);
        if (r < 0)
                return r;
        while (isspace((unsigned char) *end))
                end++;
        if (*end)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* The line starting with exactly `key` followed by one of `seps`; returns the text after the separator. */
static const char *find_key(const char *text, const char *key, const char *seps) {
        size_t kl = strlen(key);

        for (const char *l = text; l && *l;) {
                if (strneq(l, key, kl) && l[kl] && strchr(seps, l[kl]))
                        return l + kl + 1;
                l = strchr(l, '\n');
                if (l)
                        l++;
        }
        return NULL;
}

int stats_parse_keyed(const char *text, const char *key, uint64_t *ret) {
        const char *v, *end;
        uint64_t x;
        int r;

        if (!text || isempty(key))
                return -EINVAL;
        v = find_key(text, key, " \t");
        if (!v)
                return -ENOENT;
        r = parse_u64_token(v, &end, &x);
        if (r < 0)
                return r;
        if (*end && *end != '\n' && !isspace((unsigned char) *end))
                return -EINVAL;
        *ret = x;
        return 0;
}

int stats_parse_meminfo(const char *text, const char *key, uint64_t *ret_bytes) {
        const char *v, *end;
        uint64_t x;
        int r;

        if (!text || isempty(key))
                return -EINVAL;
        v = find_key(text, key, ":");
        if (!v)
                return -ENOENT;
        r = parse_u64_token(v, &end, &x);
        if (r < 0)
                return r;
        while (*end == ' ' || *end == '\t')
                end++;
        if (strneq(end, "kB", 2)) {
                if (x > UINT64_MAX / 1024)
                        return -ERANGE;
                x *= 1024;
        }
        *ret_bytes = x;
        return 0;
}

int stats_parse_cpu_list(const char *text, unsigned *ret) {
        unsigned n = 0;
        const char *p = text;

        if (!text)
                return -EINVAL;
        while (isspace((unsigned char) *p))
                p++;
        while (*p && !isspace((unsigned char) *p)) {
                uint64_t a, b;
                const char *end;
                if (parse_u64_token(p, &end, &a) < 0)
                        return -EINVAL;
                b = a;
                if (*end == '-') {
                        if (parse_u64_token(end + 1, &end, &b) < 0 || b < a)
                                return -EINVAL;
                }
                if (b - a >= 65536 || n + (b - a + 1) > 65536 * 16)
                        return -ERANGE;
                n += (unsigned) (b - a + 1);
                if (*end == ',')
                        end++;
                else if (*end && !isspace((unsigned char) *end))
                        return -EINVAL;
                p = end;
        }
        if (n == 0)
                return -EINVAL;
        *ret = n;
        return 0;
}

/* ---------------------------------------------------------------- cgroups */

uint64_t stats_working_set(uint64_t usage, uint64_t inactive_file) {
        return usage < inactive_file ? 0 : usage - inactive_file;
}

/* value of the first key present, 0 if none */
static uint64_t keyed_or_zero(const char *text, const char *key, const char *fallback) {
        uint64_t v;
        if (stats_parse_keyed(text, key, &v) == 0)
                return v;
        if (fallback && stats_parse_keyed(text, fallback, &v) == 0)
                return v;
        return 0;
}

int stats_cgroup_v1_parse_memory(const char *usage_text, const char *stat_text, struct cgroup_cpu_memory *m) {
        uint64_t usage;
        int r;

        r = stats_parse_u64(usage_text, &usage);
        if (r < 0)
                return r;
        if (!stat_text)
                return -EINVAL;
        m->has_memory = true;
        m->memory_usage_bytes = usage;
        m->memory_working_set_bytes = stats_working_set(usage, keyed_or_zero(stat_text, "total_inactive_file",
                                                                             "inactive_file"));
        m->memory_rss_bytes = keyed_or_zero(stat_text, "total_rss", "rss");
        m->memory_page_faults = keyed_or_zero(stat_text, "total_pgfault", "pgfault");
        m->memory_major_page_faults = keyed_or_zero(stat_text, "total_pgmajfault", "pgmajfault");
        return 0;
}

int stats_cgroup_v2_parse_memory(const char *current_text, const char *stat_text, struct cgroup_cpu_memory *m) {
        uint64_t usage;
        int r;

        if (!stat_text)
                return -EINVAL;
        if (current_text) {
                r = stats_parse_u64(current_text, &usage);
                if (r < 0)
                        return r;
        } else {
                uint64_t anon, file;
                r = stats_parse_keyed(stat_text, "anon", &anon);
                if (r < 0)
                        return r;
                r = stats_parse_keyed(stat_text, "file", &file);
                if (r < 0)
                        return r;
                usage = anon + file;
        }
        m->has_memory = true;
        m->memory_usage_bytes = usage;
        m->memory_working_set_bytes = stats_working_set(usage, keyed_or_zero(stat_text, "inactive_file", NULL));
        m->memory_rss_bytes = keyed_or_zero(stat_text, "anon", NULL);
        m->memory_page_faults = keyed_or_zero(stat_text, "pgfault", NULL);
        m->memory_major_page_faults = keyed_or_zero(stat_text, "pgmajfault", NULL);
        return 0;
}

int stats_cgroup_v2_parse_cpu(const char *cpu_stat_text, uint64_t *ret_nsec) {
        uint64_t usec;
        int r = stats_parse_keyed(cpu_stat_text, "usage_usec", &usec);
        if (r < 0)
                return r;
        if (usec > UINT64_MAX / 1000)
                return -ERANGE;
        *ret_nsec = usec * 1000;
        return 0;
}

bool stats_cgroup_is_unified(const char *root) {
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/sys/fs/cgroup/cgroup.controllers", strempty(root)) < 0)
                return false;
        return access(p, F_OK) == 0;
}

/* The root group's memory on v2 when it has no memory.stat: from /proc/meminfo and /proc/vmstat. */
static int root_memory_from_meminfo(const char *root, struct cgroup_cpu_memory *m) {
        _cleanup_free_ char *mi = NULL, *vm = NULL;
        uint64_t total, free_, inactive_file = 0, anon = 0;
        int r;

        r = stats_read_file(root, "/proc/meminfo", SMALL_FILE_MAX, &mi);
        if (r < 0)
                return r;
        r = stats_parse_meminfo(mi, "MemTotal", &total);
        if (r < 0)
                return r;
        r = stats_parse_meminfo(mi, "MemFree", &free_);
        if (r < 0)
                return r;
        (void) stats_parse_meminfo(mi, "Inactive(file)", &inactive_file);
        (void) stats_parse_meminfo(mi, "AnonPages", &anon);
        m->has_memory = true;
        m->memory_usage_bytes = total > free_ ? total - free_ : 0;
        m->memory_working_set_bytes = stats_working_set(m->memory_usage_bytes, inactive_file);
        m->memory_rss_bytes = anon;
        m->memory_page_faults = m->memory_major_page_faults = 0;
        if (stats_read_file(root, "/proc/vmstat", SMALL_FILE_MAX, &vm) >= 0) {
                m->memory_page_faults = keyed_or_zero(vm, "pgfault", NULL);
                m->memory_major_page_faults = keyed_or_zero(vm, "pgmajfault", NULL);
        }
        return 0;
}

int stats_cgroup_read_root(const char *root, struct cgroup_cpu_memory *ret) {
        struct cgroup_cpu_memory m = {};
        int r;

        if (stats_cgroup_is_unified(root)) {
                _cleanup_free_ char *cpu = NULL, *cur = NULL, *st = NULL;
                if (stats_read_file(root, "/sys/fs/cgroup/cpu.stat", SMALL_FILE_MAX, &cpu) >= 0 &&
                    stats_cgroup_v2_parse_cpu(cpu, &m.cpu_usage_nsec) >= 0)
                        m.has_cpu = true;
                (void) stats_read_file(root, "/sys/fs/cgroup/memory.current", SMALL_FILE_MAX, &cur);
                r = stats_read_file(root, "/sys/fs/cgroup/memory.stat", SMALL_FILE_MAX, &st);
                if (r >= 0)
                        r = stats_cgroup_v2_parse_memory(cur, st, &m);
                if (r < 0)
                        (void) root_memory_from_meminfo(root, &m);
        } else {
                static const char *const cpuacct[] = {
                        "/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage",
                        "/sys/fs/cgroup/cpuacct/cpuacct.usage",
                        "/sys/fs/cgroup/cpuacct,cpu/cpuacct.usage",
                };
                _cleanup_free_ char *usage = NULL, *st = NULL;
                for (size_t i = 0; i < ELEMENTSOF(cpuacct) && !m.has_cpu; i++)
                        if (stats_read_u64(root, cpuacct[i], &m.cpu_usage_nsec) >= 0)
                                m.has_cpu = true;
                if (stats_read_file(root, "/sys/fs/cgroup/memory/memory.usage_in_bytes", SMALL_FILE_MAX, &usage) >= 0 &&
                    stats_read_file(root, "/sys/fs/cgroup/memory/memory.stat", SMALL_FILE_MAX, &st) >= 0)
                        (void) stats_cgroup_v1_parse_memory(usage, st, &m);
        }
        if (!m.has_cpu && !m.has_memory)
                return -ENOENT;
        *ret = m;
        return 0;
}

int stats_cgroup_read_memory(const char *root, const char *cgroup, struct cgroup_cpu_memory *ret, uint64_t *ret_limit) {
        _cleanup_free_ char *usage_path = NULL, *stat_path = NULL, *limit_path = NULL;
        _cleanup_free_ char *usage = NULL, *st = NULL, *limit = NULL;
        struct cgroup_cpu_memory m = {};
        bool v2 = stats_cgroup_is_unified(root);
        uint64_t lim = 0;
        int r;

        if (asprintf(&usage_path, "/sys/fs/cgroup%s%s/%s", v2 ? "" : "/memory", cgroup,
                     v2 ? "memory.current" : "memory.usage_in_bytes") < 0 ||
            asprintf(&stat_path, "/sys/fs/cgroup%s%s/memory.stat", v2 ? "" : "/memory", cgroup) < 0 ||
            asprintf(&limit_path, "/sys/fs/cgroup%s%s/%s", v2 ? "" : "/memory", cgroup,
                     v2 ? "memory.max" : "memory.limit_in_bytes") < 0)
                return -ENOMEM;
        r = stats_read_file(root, usage_path, SMALL_FILE_MAX, &usage);
        if (r >= 0)
                r = stats_read_file(root, stat_path, SMALL_FILE_MAX, &st);
        if (r < 0)
                return r;
        r = v2 ? stats_cgroup_v2_parse_memory(usage, st, &m) : stats_cgroup_v1_parse_memory(usage, st, &m);
        if (r < 0)
                return r;
        /* "max" (v2) or a huge page-rounded value (v1) means no limit */
        if (stats_read_file(root, limit_path, SMALL_FILE_MAX, &limit) >= 0 && stats_parse_u64(limit, &lim) >= 0 &&
            lim >= (UINT64_C(1) << 62))
                lim = 0;
        *ret = m;
        *ret_limit = lim;
        return 0;
}

/* ---------------------------------------------------------------- pressure and swap */

/* "avg10=0.12 avg60=0.00 avg300=0.00 total=1234" after the line's first word */
static int parse_psi_line(const char *s, struct psi_data *ret) {
        struct psi_data d = {};
        unsigned seen = 0;

        while (*s && *s != '\n') {
                const char *eq, *end;
                char *e;
                while (*s == ' ' || *s == '\t')
                        s++;
                if (!*s || *s == '\n')
                        break;
                eq = strchr(s, '=');
                end = s + strcspn(s, " \t\n");
                if (!eq || eq > end)
                        return -EINVAL;
                errno = 0;
                if (startswith(s, "avg10=") || startswith(s, "avg60=") || startswith(s, "avg300=")) {
                        double v = strtod(eq + 1, &e);
                        if (e != end || errno != 0 || v < 0)
                                return -EINVAL;
                        if (s[3] == '1') {
                                d.avg10 = v;
                                seen |= 1;
                        } else if (s[3] == '6') {
                                d.avg60 = v;
                                seen |= 2;
                        } else {
                                d.avg300 = v;
                                seen |= 4;
                        }
                } else if (startswith(s, "total=")) {
                        const char *t;
                        int r = parse_u64_token(eq + 1, &t, &d.total);
                        if (r < 0 || t != end)
                                return -EINVAL;
                        seen |= 8;
                } /* other keys: ignored */
                s = end;
        }
        if (seen != 15)
                return -EINVAL;
        *ret = d;
        return 0;
}

int stats_parse_psi(const char *text, struct psi_stats *ret) {
        struct psi_stats p = {};
        bool some = false;
        int r;

        assert(text);
        for (const char *l = text; *l;) {
                const char *eol = strchrnul(l, '\n');
                if (startswith(l, "some ")) {
                        r = parse_psi_line(l + 5, &p.some);
                        if (r < 0)
                                return r;
                        some = true;
                } else if (startswith(l, "full ")) {
                        r = parse_psi_line(l + 5, &p.full);
                        if (r < 0)
                                return r;
                }
                l = *eol ? eol + 1 : eol;
        }
        if (!some)
                return -EINVAL;
        *ret = p;
        return 0;
}

int stats_cgroup_read_psi(const char *root, const char *cgroup, const char *resource, struct psi_stats *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        if (asprintf(&path, "/sys/fs/cgroup%s/%s.pressure", streq(cgroup, "/") ? "" : cgroup, resource) < 0)
                return -ENOMEM;
        r = stats_read_file(root, path, SMALL_FILE_MAX, &text);
        if (r < 0)
                return r;
        return stats_parse_psi(text, ret);
}

int stats_node_read_psi(const char *root, const char *resource, struct psi_stats *ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        r = stats_cgroup_read_psi(root, "/", resource, ret);
        if (r != -ENOENT)
                return r;
        if (asprintf(&path, "/proc/pressure/%s", resource) < 0)
                return -ENOMEM;
        r = stats_read_file(root, path, SMALL_FILE_MAX, &text);
        if (r < 0)
                return r;
        return stats_parse_psi(text, ret);
}

int stats_cgroup_read_swap(const char *root, const char *cgroup, uint64_t *ret_usage, uint64_t *ret_limit) {
        _cleanup_free_ char *cur = NULL, *max = NULL, *text = NULL;
        uint64_t usage, limit = UINT64_MAX;
        int r;

        if (asprintf(&cur, "/sys/fs/cgroup%s/memory.swap.current", cgroup) < 0 ||
            asprintf(&max, "/sys/fs/cgroup%s/memory.swap.max", cgroup) < 0)
                return -ENOMEM;
        r = stats_read_u64(root, cur, &usage);
        if (r < 0)
                return r;
        r = stats_read_file(root, max, SMALL_FILE_MAX, &text);
        if (r < 0)
                return r;
        if (!startswith(text, "max")) {
                r = stats_parse_u64(text, &limit);
                if (r < 0)
                        return r;
        }
        *ret_usage = usage;
        *ret_limit = limit;
        return 0;
}

int stats_node_read_swap(const char *root, uint64_t *ret_usage, uint64_t *ret_available) {
        _cleanup_free_ char *mi = NULL;
        uint64_t total, free_;
        int r;

        r = stats_read_file(root, "/proc/meminfo", SMALL_FILE_MAX, &mi);
        if (r < 0)
                return r;
        r = stats_parse_meminfo(mi, "SwapTotal", &total);
        if (r < 0)
                return r;
        r = stats_parse_meminfo(mi, "SwapFree", &free_);
        if (r < 0)
                return r;
        *ret_usage = total > free_ ? total - free_ : 0;
        *ret_available = free_;
        return 0;
}

int stats_swap_is_on(const char *root, bool *ret) {
        _cleanup_free_ char *text = NULL;
        const char *nl;
        int r;

        r = stats_read_file(root, "/proc/swaps", SMALL_FILE_MAX, &text);
        if (r == -ENOENT) {
                *ret = false;
                return 0;
        }
        if (r < 0)
                return r;
        nl = strchr(text, '\n');
        /* anything but blanks after the header line */
        *ret = nl && nl[1 + strspn(nl + 1, " \t\n")] != '\0';
        return 0;
}

bool stats_swap_controller_v2(const char *root) {
        _cleanup_free_ char *text = NULL, *path = NULL;
        const char *l, *eol;

        if (!stats_cgroup_is_unified(root) || stats_read_file(root, "/proc/self/cgroup", SMALL_FILE_MAX, &text) < 0)
                return false;
        l = startswith(text, "0::") ? text : strstr(text, "\n0::");
        if (!l)
                return false;
        if (*l == '\n')
                l++;
        l += 3;
        eol = strchrnul(l, '\n');
        if (asprintf(&path, "%s/sys/fs/cgroup%.*s/memory.swap.max", strempty(root), (int) (eol - l), l) < 0)
                return false;
        return access(path, F_OK) == 0;
}

/* ---------------------------------------------------------------- network */

int stats_proc_net_dev_parse(const char *text, struct net_dev_stats **ret, size_t *ret_n) {
        _cleanup_free_ struct net_dev_stats *v = NULL;
        size_t n = 0, alloc = 0;

        if (!text)
                return -EINVAL;
        for (const char *l = text; *l;) {
                const char *eol = strchrnul(l, '\n'), *colon, *p, *b;
                uint64_t f[16];
                size_t k;

                colon = memchr(l, ':', (size_t) (eol - l));
                if (!colon || memchr(l, '|', (size_t) (eol - l)))
                        goto next; /* the two header lines */
                b = l;
                while (b < colon && isspace((unsigned char) *b))
                        b++;
                if (colon - b <= 0 || colon - b >= IF_NAMESIZE)
                        goto next;
                p = colon + 1;
                for (k = 0; k < ELEMENTSOF(f); k++)
                        if (p >= eol || parse_u64_token(p, &p, &f[k]) < 0 || p > eol)
                                break;
                if (k < ELEMENTSOF(f))
                        goto next; /* malformed line */
                if (n == alloc) {
                        size_t na = alloc ? alloc * 2 : 8;
                        struct net_dev_stats *nv = reallocarray(v, na, sizeof(*v));
                        if (!nv)
                                return -ENOMEM;
                        v = nv;
                        alloc = na;
                }
                v[n] = (struct net_dev_stats) {
                        .rx_bytes = f[0],
                        .rx_packets = f[1],
                        .rx_errors = f[2],
                        .rx_dropped = f[3],
                        .tx_bytes = f[8],
                        .tx_packets = f[9],
                        .tx_errors = f[10],
                        .tx_dropped = f[11],
                };
                memcpy(v[n].name, b, (size_t) (colon - b));
                v[n].name[colon - b] = '\0';
                n++;
next:
                l = *eol ? eol + 1 : eol;
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
        return 0;
}

int stats_proc_net_route_default(const char *text, char ret[static IF_NAMESIZE]) {
        char best[IF_NAMESIZE] = "";
        unsigned long best_metric = 0;

        if (!text)
                return -EINVAL;
        for (const char *l = text; *l;) {
                const char *eol = strchrnul(l, '\n');
                char line[512], ifname[64];
                unsigned long dest, gw, flags, refcnt, use, metric, mask;
                size_t len = MIN((size_t) (eol - l), sizeof(line) - 1);

                memcpy(line, l, len);
                line[len] = '\0';
                if (sscanf(line, "%63s %lx %lx %lx %lu %lu %lu %lx", ifname, &dest, &gw, &flags, &refcnt, &use, &metric,
                           &mask) == 8 &&
                    dest == 0 && mask == 0 && (flags & 0x1) /* RTF_UP */ && strlen(ifname) < IF_NAMESIZE &&
                    (!best[0] || metric < best_metric)) {
                        strcpy(best, ifname);
                        best_metric = metric;
                }
                l = *eol ? eol + 1 : eol;
        }
        if (!best[0])
                return -ENOENT;
        strcpy(ret, best);
        return 0;
}

bool stats_net_iface_ignored(const char *name) {
        static const char *const prefixes[] = {
                "veth", "cni", "docker", "nerdctl", "flannel", "cali", "cilium", "vxlan", "tunl", "weave", "kube-",
        };
        if (isempty(name) || streq(name, "lo"))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
                if (startswith(name, prefixes[i]))
                        return true;
        return false;
}

/* The driver of an interface of our network namespace is "bridge" (sysfs may show another namespace). */
static bool iface_driver_is_bridge(int sock, const char *name) {
        struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
        struct ifreq ifr = {};

        if (sock < 0 || strlen(name) >= sizeof(ifr.ifr_name))
                return false;
        strcpy(ifr.ifr_name, name);
        ifr.ifr_data = (void *) &info;
        if (ioctl(sock, SIOCETHTOOL, &ifr) < 0)
                return false;
        return strneq(info.driver, "bridge", sizeof(info.driver));
}

int stats_node_network_read(const char *root, struct net_dev_stats **ret, size_t *ret_n, char **ret_default) {
        _cleanup_free_ char *dev = NULL, *route = NULL, *def = NULL;
        _cleanup_free_ struct net_dev_stats *all = NULL;
        char defname[IF_NAMESIZE] = "";
        _cleanup_close_ int sock = -1;
        size_t n = 0, k = 0;
        int r;

        r = stats_read_file(root, "/proc/net/dev", TABLE_FILE_MAX, &dev);
        if (r < 0)
                return r;
        r = stats_proc_net_dev_parse(dev, &all, &n);
        if (r < 0)
                return r;
        if (stats_read_file(root, "/proc/net/route", TABLE_FILE_MAX, &route) >= 0)
                (void) stats_proc_net_route_default(route, defname);
        if (isempty(root))
                sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *bridge = NULL;
                if (stats_net_iface_ignored(all[i].name))
                        continue;
                if (asprintf(&bridge, "%s/sys/class/net/%s/bridge", strempty(root), all[i].name) < 0)
                        return -ENOMEM;
                if (access(bridge, F_OK) == 0 || iface_driver_is_bridge(sock, all[i].name))
                        continue;
                all[k++] = all[i];
        }
        for (size_t i = 0; i < k && !def; i++)
                if (streq(all[i].name, defname)) {
                        def = strdup(defname);
                        if (!def)
                                return -ENOMEM;
                }
        if (!def && k > 0) {
                def = strdup(all[0].name);
                if (!def)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(all);
        *ret_n = k;
        *ret_default = TAKE_PTR(def);
        return 0;
}

/* ---------------------------------------------------------------- cpu rate */

bool stats_nano_cores(uint64_t prev_usage_nsec, int64_t prev_time_nsec, uint64_t cur_usage_nsec, int64_t cur_time_nsec,
                      uint64_t *ret) {
        double v;

        if (cur_time_nsec <= prev_time_nsec || cur_usage_nsec < prev_usage_nsec)
                return false;
        /* as upstream: float64(usage delta) / float64(interval) * 1e9 */
        v = (double) (cur_usage_nsec - prev_usage_nsec) / (double) (cur_time_nsec - prev_time_nsec) * 1e9;
        *ret = v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t) v;
        return true;
}

/* ---------------------------------------------------------------- filesystems */

int stats_fs_usage_statvfs(const char *path, struct fs_usage *ret) {
        struct statvfs s;

        if (statvfs(path, &s) < 0)
                return negative_errno();
        *ret = (struct fs_usage) {
                .capacity_bytes = (uint64_t) s.f_blocks * s.f_frsize,
                .available_bytes = (uint64_t) s.f_bavail * s.f_frsize,
                .used_bytes = (uint64_t) (s.f_blocks - MIN(s.f_bfree, s.f_blocks)) * s.f_frsize,
                .inodes = s.f_files,
                .inodes_free = s.f_ffree,
                .inodes_used = s.f_files - MIN(s.f_ffree, s.f_files),
        };
        return 0;
}

/* ---------------------------------------------------------------- processes */

static int count_proc_dirs(const char *root, int64_t *ret) {
        _cleanup_free_ char *p = NULL;
        struct dirent *de;
        int64_t n = 0;
        _cleanup_closedir_ DIR *d = NULL;

        if (asprintf(&p, "%s/proc", strempty(root)) < 0)
                return -ENOMEM;
        d = opendir(p);
        if (!d)
                return negative_errno();
        while ((de = readdir(d)))
                if (isdigit((unsigned char) de->d_name[0]) && strspn(de->d_name, "0123456789") == strlen(de->d_name))
                        n++;
        *ret = n;
        return 0;
}

int stats_read_rlimit(const char *root, int64_t *ret_maxpid, int64_t *ret_curproc) {
        _cleanup_free_ char *la = NULL;
        uint64_t pid_max, threads_max;
        int64_t maxpid, cur = -1;
        int r;

        r = stats_read_u64(root, "/proc/sys/kernel/pid_max", &pid_max);
        if (r < 0)
                return r;
        if (stats_read_u64(root, "/proc/sys/kernel/threads-max", &threads_max) >= 0 && threads_max < pid_max)
                pid_max = threads_max;
        maxpid = pid_max > INT64_MAX ? INT64_MAX : (int64_t) pid_max;

        /* "0.10 0.20 0.30 2/345 6789": the total after the slash counts every task */
        if (stats_read_file(root, "/proc/loadavg", SMALL_FILE_MAX, &la) >= 0) {
                unsigned long long running, total;
                if (sscanf(la, "%*s %*s %*s %llu/%llu", &running, &total) == 2 && total <= INT64_MAX)
                        cur = (int64_t) total;
        }
        if (cur < 0) {
                r = count_proc_dirs(root, &cur);
                if (r < 0)
                        return r;
        }
        *ret_maxpid = maxpid;
        *ret_curproc = cur;
        return 0;
}

int stats_read_boot_time(const char *root, int64_t *ret_unix_sec) {
        _cleanup_free_ char *s = NULL;
        uint64_t v;
        int r;

        r = stats_read_file(root, "/proc/stat", TABLE_FILE_MAX, &s);
        if (r < 0)
                return r;
        r = stats_parse_keyed(s, "btime", &v);
        if (r < 0)
                return r;
        if (v > INT64_MAX)
                return -ERANGE;
        *ret_unix_sec = (int64_t) v;
        return 0;
}
