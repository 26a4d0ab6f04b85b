/* SPDX-License-Identifier: Apache-2.0 */
/* Parsers of the cgroup and /proc files /metrics/cadvisor reads (pure). */
#include "stats/cadvisor.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string.h"

int cadvisor_parse_cpuacct_stat(const char *text, long ticks_per_sec, uint64_t *ret_user_ns, uint64_t *ret_system_ns) {
        uint64_t user, system;

        if (ticks_per_sec <= 0)
                return -EINVAL;
        if (stats_parse_keyed(text, "user", &user) < 0 || stats_parse_keyed(text, "system", &system) < 0)
                return -EINVAL;
        /* ticks → ns as libcontainer does: ticks * 1e9 / USER_HZ */
        *ret_user_ns = user * (UINT64_C(1000000000) / (uint64_t) ticks_per_sec);
        *ret_system_ns = system * (UINT64_C(1000000000) / (uint64_t) ticks_per_sec);
        return 0;
}

static const char *dev_name(const struct cadvisor_dev_name *names, size_t n, unsigned major, unsigned minor) {
        for (size_t i = 0; i < n; i++)
                if (names[i].major == major && names[i].minor == minor)
                        return names[i].name;
        return "";
}

/* the entry of major:minor in v, added at the end when new */
static struct cadvisor_disk_io *io_entry(struct cadvisor_disk_io **v, size_t *n, const char *name) {
        struct cadvisor_disk_io *nv;

        for (size_t i = 0; i < *n; i++)
                if (streq((*v)[i].device, name))
                        return &(*v)[i];
        if (*n >= 4096)
                return NULL; /* a hard cap on devices */
        nv = reallocarray(*v, *n + 1, sizeof(**v));
        if (!nv)
                return NULL;
        *v = nv;
        nv[*n] = (struct cadvisor_disk_io) { .device = strdup(name) };
        if (!nv[*n].device)
                return NULL;
        return &nv[(*n)++];
}

int cadvisor_parse_blkio(const char *text, bool v2, const struct cadvisor_dev_name *names, size_t n_names,
                         struct cadvisor_disk_io **ret, size_t *ret_n) {
        struct cadvisor_disk_io *v = NULL;
        size_t n = 0;

        if (!text)
                return -EINVAL;
        for (const char *l = text; *l;) {
                const char *eol = strchrnul(l, '\n');
                char line[1024];
                size_t len = MIN((size_t) (eol - l), sizeof(line) - 1);
                unsigned major, minor;
                int off = 0;

                memcpy(line, l, len);
                line[len] = '\0';
                l = *eol ? eol + 1 : eol;
                if (sscanf(line, "%u:%u %n", &major, &minor, &off) != 2 || off == 0)
                        continue;
                if (v2) {
                        /* "8:0 rbytes=1 wbytes=2 rios=3 ..." */
                        uint64_t rb = 0, wb = 0;
                        struct cadvisor_disk_io *e;
                        char *save = NULL;
                        for (char *tok = strtok_r(line + off, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                                if (startswith(tok, "rbytes="))
                                        (void) stats_parse_u64(tok + 7, &rb);
                                else if (startswith(tok, "wbytes="))
                                        (void) stats_parse_u64(tok + 7, &wb);
                        }
                        e = io_entry(&v, &n, dev_name(names, n_names, major, minor));
                        if (!e)
                                goto oom;
                        e->read_bytes += rb;
                        e->write_bytes += wb;
                } else {
                        /* "8:0 Read 123" */
                        char op[16];
                        unsigned long long x;
                        struct cadvisor_disk_io *e;
                        if (sscanf(line + off, "%15s %llu", op, &x) != 2)
                                continue;
                        if (!streq(op, "Read") && !streq(op, "Write"))
                                continue;
                        e = io_entry(&v, &n, dev_name(names, n_names, major, minor));
                        if (!e)
                                goto oom;
                        if (streq(op, "Read"))
                                e->read_bytes += x;
                        else
                                e->write_bytes += x;
                }
        }
        *ret = v;
        *ret_n = n;
        return 0;
oom:
        for (size_t i = 0; i < n; i++)
                free(v[i].device);
        free(v);
        return -ENOMEM;
}

int cadvisor_parse_cpu_max(const char *text, int64_t *ret_quota_us, uint64_t *ret_period_us) {
        char q[32];
        unsigned long long period;
        int64_t quota;

        if (!text || sscanf(text, "%31s %llu", q, &period) != 2)
                return -EINVAL;
        if (streq(q, "max"))
                quota = 0;
        else if (safe_atoi64(q, &quota) < 0 || quota < 0)
                return -EINVAL;
        *ret_quota_us = quota;
        *ret_period_us = period;
        return 0;
}

uint64_t cadvisor_weight_to_shares(uint64_t weight) {
        if (weight == 0)
                return 0;
        return 2 + ((weight - 1) * 262142) / 9999;
}

int cadvisor_parse_limit(const char *text, uint64_t *ret) {
        const char *p = text;

        if (!text)
                return -EINVAL;
        while (isspace((unsigned char) *p))
                p++;
        if (startswith(p, "max")) {
                *ret = UINT64_MAX;
                return 0;
        }
        return stats_parse_u64(p, ret);
}

uint64_t cadvisor_parse_oom_kills(const char *text) {
        uint64_t v = 0;

        if (text)
                (void) stats_parse_keyed(text, "oom_kill", &v);
        return v;
}

/* "\040" and friends in mountinfo paths */
static void unescape_octal(char *s) {
        char *w = s;

        for (char *p = s; *p;) {
                if (p[0] == '\\' && p[1] >= '0' && p[1] <= '7' && p[2] >= '0' && p[2] <= '7' && p[3] >= '0' &&
                    p[3] <= '7') {
                        *w++ = (char) (((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
                        p += 4;
                } else
                        *w++ = *p++;
        }
        *w = '\0';
}

static bool has_option(const char *opts, const char *want) {
        size_t n = strlen(want);

        for (const char *p = opts; p && *p;) {
                const char *e = strchrnul(p, ',');
                if ((size_t) (e - p) == n && strneq(p, want, n))
                        return true;
                p = *e ? e + 1 : e;
        }
        return false;
}

void cadvisor_hierarchies_done(struct cadvisor_hierarchies *h) {
        if (!h)
                return;
        free(h->cpu);
        free(h->cpuacct);
        free(h->memory);
        free(h->blkio);
        free(h->pids);
        free(h->unified);
        *h = (struct cadvisor_hierarchies) {};
}

size_t cadvisor_mountinfo_split(char *line, char *f[static 6], char **ret_tail) {
        char *sep, *save = NULL;
        size_t nf = 0;

        sep = strstr(line, " - ");
        if (!sep) {
                *ret_tail = NULL;
                return 0;
        }
        *sep = '\0';
        for (char *t = strtok_r(line, " ", &save); t && nf < 6; t = strtok_r(NULL, " ", &save))
                f[nf++] = t;
        *ret_tail = sep + 3;
        return nf;
}

int cadvisor_parse_mountinfo(const char *text, struct cadvisor_hierarchies *ret) {
        struct cadvisor_hierarchies h = {};

        if (!text)
                return -EINVAL;
        for (const char *l = text; *l;) {
                const char *eol = strchrnul(l, '\n');
                _cleanup_free_ char *line = strndup(l, (size_t) (eol - l));
                char *f[16], *tail;
                size_t nf;

                l = *eol ? eol + 1 : eol;
                if (!line) {
                        cadvisor_hierarchies_done(&h);
                        return -ENOMEM;
                }
                nf = cadvisor_mountinfo_split(line, f, &tail);
                if (!tail || nf < 5)
                        continue;
                {
                        char *save2 = NULL, *fstype = strtok_r(tail, " ", &save2), *source, *super;
                        char **slot[5] = {};
                        source = fstype ? strtok_r(NULL, " ", &save2) : NULL;
                        super = source ? strtok_r(NULL, " ", &save2) : NULL;
                        if (!fstype)
                                continue;
                        unescape_octal(f[4]);
                        if (streq(fstype, "cgroup2")) {
                                if (!h.unified) {
                                        h.unified = strdup(f[4]);
                                        if (!h.unified)
                                                goto oom;
                                }
                                if (streq(f[4], "/sys/fs/cgroup"))
                                        h.v2 = true;
                                continue;
                        }
                        if (!streq(fstype, "cgroup") || !super)
                                continue;
                        if (has_option(super, "cpu"))
                                slot[0] = &h.cpu;
                        if (has_option(super, "cpuacct"))
                                slot[1] = &h.cpuacct;
                        if (has_option(super, "memory"))
                                slot[2] = &h.memory;
                        if (has_option(super, "blkio"))
                                slot[3] = &h.blkio;
                        if (has_option(super, "pids"))
                                slot[4] = &h.pids;
                        for (size_t i = 0; i < ELEMENTSOF(slot); i++)
                                if (slot[i] && !*slot[i]) {
                                        *slot[i] = strdup(f[4]);
                                        if (!*slot[i])
                                                goto oom;
                                }
                }
        }
        if (h.memory)
                h.v2 = false; /* a v1 memory controller: the legacy or hybrid layout */
        *ret = h;
        return 0;
oom:
        cadvisor_hierarchies_done(&h);
        return -ENOMEM;
}

bool cadvisor_net_ignored(const char *name) {
        return startswith(name, "lo") || startswith(name, "veth") || startswith(name, "docker") ||
               startswith(name, "nerdctl");
}
