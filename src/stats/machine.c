/* SPDX-License-Identifier: Apache-2.0 */
/* The machine's description (cadvisor's MachineInfo, upstream kubelet's /spec). */
#include "stats/machine.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "basic/string.h"
#include "basic/time.h"
#include "stats/host.h"
#include "stats/stats-internal.h"

#define SMALL_FILE_MAX (64u * 1024u)
#define CPUINFO_MAX (8u * 1024u * 1024u)
#define MAX_CPUS 8192

/* ---------------------------------------------------------------- helpers */

/* A small text file, whitespace-trimmed at both ends ("" stays ""). */
static int read_trimmed(const char *root, const char *path, char **ret) {
        _cleanup_free_ char *s = NULL;
        char *t;
        int r;

        r = stats_read_file(root, path, SMALL_FILE_MAX, &s);
        if (r < 0)
                return r;
        t = strdup(strstrip(s));
        if (!t)
                return -ENOMEM;
        *ret = t;
        return 0;
}

static int read_trimmed_or_empty(const char *root, const char *path, char **ret) {
        int r = read_trimmed(root, path, ret);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                *ret = strdup("");
                if (!*ret)
                        return -ENOMEM;
        }
        return 0;
}

/* /proc/cpuinfo lines are "key<tabs>: value". Calls fn for each key/value; a blank line ends a processor. */
static void cpuinfo_foreach(const char *text,
                            void (*fn)(const char *key, size_t klen, const char *value, size_t vlen, void *ud),
                            void *ud) {
        for (const char *l = text; *l;) {
                const char *eol = strchrnul(l, '\n'), *colon = memchr(l, ':', (size_t) (eol - l));
                if (colon) {
                        const char *ke = colon, *v = colon + 1;
                        while (ke > l && isspace((unsigned char) ke[-1]))
                                ke--;
                        while (v < eol && isspace((unsigned char) *v))
                                v++;
                        fn(l, (size_t) (ke - l), v, (size_t) (eol - v), ud);
                } else
                        fn("", 0, "", 0, ud); /* processor separator */
                l = *eol ? eol + 1 : eol;
        }
}

struct cpuinfo_scan {
        unsigned processors;
        char vendor[64];
        double mhz; /* first "cpu MHz", 0 if none */
        bool have_mhz;
        long cur_phys, cur_core; /* of the processor being scanned, -1 until seen */
        long pairs[MAX_CPUS][2]; /* unique (physical id, core id) */
        unsigned n_pairs;
        long sockets[MAX_CPUS];
        unsigned n_sockets;
};

static void cpuinfo_flush(struct cpuinfo_scan *s) {
        bool found = false;
        if (s->cur_phys < 0)
                return;
        for (unsigned i = 0; i < s->n_sockets && !found; i++)
                found = s->sockets[i] == s->cur_phys;
        if (!found && s->n_sockets < MAX_CPUS)
                s->sockets[s->n_sockets++] = s->cur_phys;
        if (s->cur_core >= 0) {
                found = false;
                for (unsigned i = 0; i < s->n_pairs && !found; i++)
                        found = s->pairs[i][0] == s->cur_phys && s->pairs[i][1] == s->cur_core;
                if (!found && s->n_pairs < MAX_CPUS) {
                        s->pairs[s->n_pairs][0] = s->cur_phys;
                        s->pairs[s->n_pairs][1] = s->cur_core;
                        s->n_pairs++;
                }
        }
        s->cur_phys = s->cur_core = -1;
}

static long parse_long_n(const char *v, size_t n) {
        char buf[32];
        char *e;
        long x;
        if (n == 0 || n >= sizeof(buf))
                return -1;
        memcpy(buf, v, n);
        buf[n] = '\0';
        errno = 0;
        x = strtol(buf, &e, 10);
        return errno || *e || x < 0 ? -1 : x;
}

static void cpuinfo_line(const char *key, size_t klen, const char *value, size_t vlen, void *ud) {
        struct cpuinfo_scan *s = ud;

#define KEY_IS(k) (klen == strlen(k) && strneq(key, k, klen))
        if (klen == 0) {
                cpuinfo_flush(s);
        } else if (KEY_IS("processor")) {
                cpuinfo_flush(s);
                s->processors++;
        } else if (KEY_IS("vendor_id") && !s->vendor[0]) {
                size_t n = MIN(vlen, sizeof(s->vendor) - 1);
                memcpy(s->vendor, value, n);
                s->vendor[n] = '\0';
        } else if (KEY_IS("cpu MHz") && !s->have_mhz) {
                char buf[32];
                char *e;
                size_t n = MIN(vlen, sizeof(buf) - 1);
                memcpy(buf, value, n);
                buf[n] = '\0';
                s->mhz = strtod(buf, &e);
                s->have_mhz = e != buf && s->mhz > 0;
        } else if (KEY_IS("physical id")) {
                s->cur_phys = parse_long_n(value, vlen);
        } else if (KEY_IS("core id")) {
                s->cur_core = parse_long_n(value, vlen);
        }
#undef KEY_IS
}

/* unique physical cores and sockets from sysfs topology of the online CPUs; false if unavailable */
static bool sysfs_topology(const char *root, unsigned *ret_cores, unsigned *ret_sockets) {
        _cleanup_free_ long(*pairs)[2] = NULL;
        _cleanup_free_ long *sockets = NULL;
        _cleanup_free_ char *dir = NULL;
        unsigned n_pairs = 0, n_sockets = 0;
        struct dirent *de;
        _cleanup_closedir_ DIR *d = NULL;

        if (asprintf(&dir, "%s/sys/devices/system/cpu", strempty(root)) < 0)
                return false;
        d = opendir(dir);
        if (!d)
                return false;
        pairs = calloc(MAX_CPUS, sizeof(*pairs));
        sockets = calloc(MAX_CPUS, sizeof(*sockets));
        if (!pairs || !sockets)
                return false;
        while ((de = readdir(d)) && n_pairs < MAX_CPUS) {
                char path[512];
                uint64_t online = 1, pkg, core;
                bool found = false;

                if (!startswith(de->d_name, "cpu") || !isdigit((unsigned char) de->d_name[3]) ||
                    strspn(de->d_name + 3, "0123456789") != strlen(de->d_name + 3))
                        continue;
                snprintf(path, sizeof(path), "/sys/devices/system/cpu/%s/online", de->d_name);
                (void) stats_read_u64(root, path, &online); /* cpu0 often has no "online" file */
                if (!online)
                        continue;
                snprintf(path, sizeof(path), "/sys/devices/system/cpu/%s/topology/physical_package_id", de->d_name);
                if (stats_read_u64(root, path, &pkg) < 0)
                        continue;
                snprintf(path, sizeof(path), "/sys/devices/system/cpu/%s/topology/core_id", de->d_name);
                if (stats_read_u64(root, path, &core) < 0)
                        continue;
                for (unsigned i = 0; i < n_pairs && !found; i++)
                        found = pairs[i][0] == (long) pkg && pairs[i][1] == (long) core;
                if (!found) {
                        pairs[n_pairs][0] = (long) pkg;
                        pairs[n_pairs][1] = (long) core;
                        n_pairs++;
                }
                found = false;
                for (unsigned i = 0; i < n_sockets && !found; i++)
                        found = sockets[i] == (long) pkg;
                if (!found)
                        sockets[n_sockets++] = (long) pkg;
        }
        if (n_pairs == 0)
                return false;
        *ret_cores = n_pairs;
        *ret_sockets = n_sockets;
        return true;
}

static int read_hugepages(const char *root, struct machine_info *m) {
        _cleanup_free_ char *dir = NULL;
        struct dirent *de;
        _cleanup_closedir_ DIR *d = NULL;

        if (asprintf(&dir, "%s/sys/kernel/mm/hugepages", strempty(root)) < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                char path[512];
                unsigned long long size;
                uint64_t pages;
                struct hugepages_info *n;
                char tail[8];

                /* hugepages-2048kB */
                if (sscanf(de->d_name, "hugepages-%llu%7s", &size, tail) != 2 || !streq(tail, "kB"))
                        continue;
                snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/%s/nr_hugepages", de->d_name);
                if (stats_read_u64(root, path, &pages) < 0)
                        continue;
                n = reallocarray(m->hugepages, m->n_hugepages + 1, sizeof(*n));
                if (!n)
                        return -ENOMEM;
                m->hugepages = n;
                m->hugepages[m->n_hugepages++] = (struct hugepages_info) { .page_size_kb = size, .num_pages = pages };
        }
        /* stable order: by page size */
        for (size_t i = 1; i < m->n_hugepages; i++)
                for (size_t j = i; j > 0 && m->hugepages[j - 1].page_size_kb > m->hugepages[j].page_size_kb; j--) {
                        struct hugepages_info t = m->hugepages[j];
                        m->hugepages[j] = m->hugepages[j - 1];
                        m->hugepages[j - 1] = t;
                }
        return 0;
}

static int cmp_netdev(const void *a, const void *b) {
        return strcmp(((const struct net_device_info *) a)->name, ((const struct net_device_info *) b)->name);
}

static int read_network_devices(const char *root, struct machine_info *m) {
        static const char *const ignored[] = { "lo", "veth", "docker", "nerdctl" }; /* as cadvisor */
        _cleanup_free_ char *dir = NULL;
        struct dirent *de;
        _cleanup_closedir_ DIR *d = NULL;
        int r = 0;

        if (asprintf(&dir, "%s/sys/class/net", strempty(root)) < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (!d)
                return 0;
        while ((de = readdir(d))) {
                struct net_device_info nd = {};
                char path[512];
                _cleanup_free_ char *speed = NULL, *mtu = NULL;
                struct net_device_info *n;
                bool skip = de->d_name[0] == '.';
                int64_t v;

                for (size_t i = 0; i < ELEMENTSOF(ignored) && !skip; i++)
                        skip = startswith(de->d_name, ignored[i]);
                if (skip || strlen(de->d_name) >= IF_NAMESIZE)
                        continue;
                nd.name = strdup(de->d_name);
                snprintf(path, sizeof(path), "/sys/class/net/%s/address", de->d_name);
                if (!nd.name || read_trimmed_or_empty(root, path, &nd.mac_address) < 0) {
                        free(nd.name);
                        r = -ENOMEM;
                        break;
                }
                snprintf(path, sizeof(path), "/sys/class/net/%s/mtu", de->d_name);
                if (read_trimmed(root, path, &mtu) >= 0 && safe_atoi64(mtu, &v) >= 0)
                        nd.mtu = v;
                snprintf(path, sizeof(path), "/sys/class/net/%s/speed", de->d_name);
                if (read_trimmed(root, path, &speed) >= 0 && safe_atoi64(speed, &v) >= 0)
                        nd.speed = v;
                n = reallocarray(m->network_devices, m->n_network_devices + 1, sizeof(*n));
                if (!n) {
                        free(nd.name);
                        free(nd.mac_address);
                        r = -ENOMEM;
                        break;
                }
                m->network_devices = n;
                m->network_devices[m->n_network_devices++] = nd;
        }
        if (m->n_network_devices > 1)
                qsort(m->network_devices, m->n_network_devices, sizeof(*m->network_devices), cmp_netdev);
        return r;
}

/* ---------------------------------------------------------------- os-release, arch */

/* Unquote an os-release value ("Debian GNU\/Linux", 'x', or bare). Returns a new string or NULL on OOM. */
static char *stats_os_release_unquote(const char *v) {
        size_t n = strlen(v);
        char *out, *o;
        char q = 0;

        if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
                q = v[0];
                v++;
                n -= 2;
        }
        out = malloc(n + 1);
        if (!out)
                return NULL;
        o = out;
        for (size_t i = 0; i < n; i++) {
                /* in double quotes (and bare), a backslash escapes $ " \ ` as in shell */
                if (q != '\'' && v[i] == '\\' && i + 1 < n && strchr("$\"\\`", v[i + 1]))
                        i++;
                *o++ = v[i];
        }
        *o = '\0';
        return out;
}

int stats_os_release_pretty_name(const char *text, char **ret) {
        for (const char *l = text; l && *l;) {
                const char *eol = strchrnul(l, '\n');
                while (l < eol && (*l == ' ' || *l == '\t'))
                        l++;
                if (strneq(l, "PRETTY_NAME=", 12) && l + 12 <= eol) {
                        _cleanup_free_ char *raw = NULL;
                        const char *e = eol;
                        char *v;
                        while (e > l + 12 && isspace((unsigned char) e[-1]))
                                e--;
                        raw = strndup(l + 12, (size_t) (e - (l + 12)));
                        if (!raw)
                                return -ENOMEM;
                        v = stats_os_release_unquote(raw);
                        if (!v)
                                return -ENOMEM;
                        *ret = v;
                        return 0;
                }
                l = *eol ? eol + 1 : eol;
        }
        return -ENOENT;
}

const char *stats_machine_goarch(const char *m) {
        static const struct {
                const char *uname, *goarch;
        } map[] = {
                { "x86_64", "amd64" },
                { "amd64", "amd64" },
                { "aarch64", "arm64" },
                { "arm64", "arm64" },
                { "armv7l", "arm" },
                { "armv6l", "arm" },
                { "armv8l", "arm" },
                { "i386", "386" },
                { "i486", "386" },
                { "i586", "386" },
                { "i686", "386" },
                { "ppc64le", "ppc64le" },
                { "ppc64", "ppc64" },
                { "s390x", "s390x" },
                { "riscv64", "riscv64" },
                { "mips64", "mips64" },
                { "loongarch64", "loong64" },
        };
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (streq(m, map[i].uname))
                        return map[i].goarch;
        return m;
}

/* ---------------------------------------------------------------- machine_info */

void stats_machine_info_done(struct machine_info *m) {
        if (!m)
                return;
        free(m->vendor_id);
        free(m->hugepages);
        for (size_t i = 0; i < m->n_network_devices; i++) {
                free(m->network_devices[i].name);
                free(m->network_devices[i].mac_address);
        }
        free(m->network_devices);
        free(m->machine_id);
        free(m->system_uuid);
        free(m->boot_id);
        free(m->kernel_version);
        free(m->os_image);
        free(m->architecture);
        *m = (struct machine_info) {};
}

static void stats_machine_info_donep(struct machine_info *m) {
        stats_machine_info_done(m);
}

int stats_machine_info_read(const char *root, struct machine_info *ret) {
        _cleanup_(stats_machine_info_donep) struct machine_info m = {};
        _cleanup_free_ char *cpuinfo = NULL, *online = NULL, *meminfo = NULL, *osr = NULL;
        _cleanup_free_ struct cpuinfo_scan *scan = NULL;
        uint64_t khz;
        struct utsname u;
        int r;

        m.timestamp_usec = now_realtime_usec();

        /* CPUs */
        scan = calloc(1, sizeof(*scan));
        if (!scan)
                return -ENOMEM;
        scan->cur_phys = scan->cur_core = -1;
        if (stats_read_file(root, "/proc/cpuinfo", CPUINFO_MAX, &cpuinfo) >= 0) {
                cpuinfo_foreach(cpuinfo, cpuinfo_line, scan);
                cpuinfo_flush(scan);
        }
        if (stats_read_file(root, "/sys/devices/system/cpu/online", SMALL_FILE_MAX, &online) < 0 ||
            stats_parse_cpu_list(online, &m.num_cores) < 0) {
                m.num_cores = scan->processors;
                if (m.num_cores == 0 && isempty(root)) {
                        long n = sysconf(_SC_NPROCESSORS_ONLN);
                        m.num_cores = n > 0 ? (unsigned) n : 0;
                }
        }
        if (m.num_cores == 0)
                return -ENODATA;
        if (!sysfs_topology(root, &m.num_physical_cores, &m.num_sockets)) {
                m.num_physical_cores = scan->n_pairs > 0 ? scan->n_pairs : m.num_cores;
                m.num_sockets = scan->n_sockets > 0 ? scan->n_sockets : 1;
        }
        m.vendor_id = strdup(scan->vendor);
        if (!m.vendor_id)
                return -ENOMEM;
        if (stats_read_u64(root, "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", &khz) >= 0 && khz > 0)
                m.cpu_frequency_khz = khz;
        else if (scan->have_mhz)
                m.cpu_frequency_khz = (uint64_t) (scan->mhz * 1000.0);

        /* memory */
        r = stats_read_file(root, "/proc/meminfo", SMALL_FILE_MAX, &meminfo);
        if (r < 0)
                return r;
        r = stats_parse_meminfo(meminfo, "MemTotal", &m.memory_capacity);
        if (r < 0)
                return r;
        (void) stats_parse_meminfo(meminfo, "SwapTotal", &m.swap_capacity);
        r = read_hugepages(root, &m);
        if (r < 0)
                return r;
        r = read_network_devices(root, &m);
        if (r < 0)
                return r;

        /* identity */
        if (read_trimmed(root, "/etc/machine-id", &m.machine_id) == -ENOMEM)
                return -ENOMEM;
        if (!m.machine_id) {
                r = read_trimmed_or_empty(root, "/var/lib/dbus/machine-id", &m.machine_id);
                if (r < 0)
                        return r;
        }
        r = read_trimmed_or_empty(root, "/sys/class/dmi/id/product_uuid", &m.system_uuid);
        if (r < 0)
                return r;
        r = read_trimmed_or_empty(root, "/proc/sys/kernel/random/boot_id", &m.boot_id);
        if (r < 0)
                return r;

        /* software */
        if (uname(&u) < 0)
                return negative_errno();
        if (read_trimmed(root, "/proc/sys/kernel/osrelease", &m.kernel_version) == -ENOMEM)
                return -ENOMEM;
        if (!m.kernel_version || !m.kernel_version[0]) {
                free(m.kernel_version);
                m.kernel_version = strdup(u.release);
                if (!m.kernel_version)
                        return -ENOMEM;
        }
        if (stats_read_file(root, "/etc/os-release", SMALL_FILE_MAX, &osr) < 0)
                (void) stats_read_file(root, "/usr/lib/os-release", SMALL_FILE_MAX, &osr);
        if (osr && stats_os_release_pretty_name(osr, &m.os_image) == -ENOMEM)
                return -ENOMEM;
        if (!m.os_image) {
                m.os_image = strdup("Linux");
                if (!m.os_image)
                        return -ENOMEM;
        }
        m.architecture = strdup(stats_machine_goarch(u.machine));
        if (!m.architecture)
                return -ENOMEM;

        *ret = m;
        m = (struct machine_info) {};
        return 0;
}

/* ---------------------------------------------------------------- JSON */

int stats_machine_info_to_json(const struct machine_info *m, json_t **ret) {
        json_auto_t *o = json_object();
        json_t *hp, *nd, *nvm;
        char ts[64];

        if (!o)
                return -ENOMEM;
        /* built in cadvisor's field order */
        if (!format_rfc3339nano((int64_t) m->timestamp_usec * 1000, ts, sizeof(ts)))
                ts[0] = '\0';
        else {
                /* Go's RFC3339Nano drops trailing zeros of the fraction */
                char *dot = strchr(ts, '.'), *z = dot ? strchr(dot, 'Z') : NULL;
                if (z) {
                        char *e = z;
                        while (e > dot + 1 && e[-1] == '0')
                                e--;
                        if (e == dot + 1)
                                e = dot;
                        memmove(e, z, strlen(z) + 1);
                }
        }
        if (json_object_set_new(o, "timestamp", json_string(ts)) < 0 ||
            json_object_set_new(o, "vendor_id", stats_jstr(m->vendor_id)) < 0 ||
            json_object_set_new(o, "num_cores", json_integer(m->num_cores)) < 0 ||
            json_object_set_new(o, "num_physical_cores", json_integer(m->num_physical_cores)) < 0 ||
            json_object_set_new(o, "num_sockets", json_integer(m->num_sockets)) < 0 ||
            json_object_set_new(o, "cpu_frequency_khz", stats_juint(m->cpu_frequency_khz)) < 0 ||
            json_object_set_new(o, "memory_capacity", stats_juint(m->memory_capacity)) < 0 ||
            json_object_set_new(o, "swap_capacity", stats_juint(m->swap_capacity)) < 0 ||
            json_object_set_new(o, "memory_by_type", json_object()) < 0)
                return -ENOMEM;
        nvm = json_pack("{s:i,s:i,s:i}", "memory_mode_capacity", 0, "app direct_mode_capacity", 0, "avg_power_budget",
                        0);
        if (json_object_set_new(o, "nvm", nvm) < 0)
                return -ENOMEM;
        hp = json_array();
        if (json_object_set_new(o, "hugepages", hp) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_hugepages; i++)
                if (json_array_append_new(hp,
                                          json_pack("{s:I,s:I}", "page_size", (json_int_t) m->hugepages[i].page_size_kb,
                                                    "num_pages", (json_int_t) m->hugepages[i].num_pages)) < 0)
                        return -ENOMEM;
        if (json_object_set_new(o, "machine_id", stats_jstr(m->machine_id)) < 0 ||
            json_object_set_new(o, "system_uuid", stats_jstr(m->system_uuid)) < 0 ||
            json_object_set_new(o, "boot_id", stats_jstr(m->boot_id)) < 0 ||
            json_object_set_new(o, "filesystems", json_array()) < 0 ||
            json_object_set_new(o, "disk_map", json_object()) < 0)
                return -ENOMEM;
        nd = json_array();
        if (json_object_set_new(o, "network_devices", nd) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_network_devices; i++) {
                const struct net_device_info *d = &m->network_devices[i];
                if (json_array_append_new(nd, json_pack("{s:o,s:o,s:I,s:I}", "name", stats_jstr(d->name), "mac_address",
                                                        stats_jstr(d->mac_address), "speed", (json_int_t) d->speed,
                                                        "mtu", (json_int_t) d->mtu)) < 0)
                        return -ENOMEM;
        }
        if (json_object_set_new(o, "topology", json_array()) < 0 ||
            json_object_set_new(o, "cloud_provider", json_string("Unknown")) < 0 ||
            json_object_set_new(o, "instance_type", json_string("Unknown")) < 0 ||
            json_object_set_new(o, "instance_id", json_string("None")) < 0 ||
            /* not in cadvisor's MachineInfo (they are in its VersionInfo / the node's nodeInfo) */
            json_object_set_new(o, "kernel_version", stats_jstr(m->kernel_version)) < 0 ||
            json_object_set_new(o, "os_image", stats_jstr(m->os_image)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

size_t machine_hugepage_sizes(const uint64_t **ret) {
        static uint64_t sizes[MACHINE_HUGEPAGE_SIZES_MAX];
        static size_t n;
        static bool done;

        if (!done) {
                struct machine_info m = {};

                done = true;
                /* the same directory listing as the MachineInfo's, sorted by page size there */
                if (read_hugepages(NULL, &m) >= 0)
                        for (size_t i = 0; i < m.n_hugepages && n < ELEMENTSOF(sizes); i++)
                                if (m.hugepages[i].page_size_kb > 0)
                                        sizes[n++] = m.hugepages[i].page_size_kb * 1024;
                free(m.hugepages);
        }
        *ret = sizes;
        return n;
}
