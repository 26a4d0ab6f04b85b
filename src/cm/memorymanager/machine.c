/* SPDX-License-Identifier: Apache-2.0 */
/* The memory manager's machine (the NUMA nodes' memory and huge pages from sysfs) and its reservedMemory (parsed,
 * checked against the machine and the node allocatable reservation). */
#include "cm/memorymanager/memorymanager.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apis/resource.h"
#include "basic/fs.h"
#include "basic/string.h"

#define RES_NAME_MAX 64

const char *mm_hugepage_name(uint64_t page_kb, char *buf, size_t size) {
        static const char *const suffix[] = { "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
        uint64_t v = page_kb;
        size_t s = 0;

        while (v % 1024 == 0 && v > 0 && s + 1 < ELEMENTSOF(suffix)) {
                v /= 1024;
                s++;
        }
        snprintf(buf, size, "hugepages-%" PRIu64 "%s", v, suffix[s]);
        return buf;
}

/* Quantity.String() of a byte count in the binary format */
static const char *format_bytes(uint64_t v, char *buf, size_t size) {
        static const char *const suffix[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
        size_t s = 0;

        while (v > 0 && v % 1024 == 0 && s + 1 < ELEMENTSOF(suffix)) {
                v /= 1024;
                s++;
        }
        snprintf(buf, size, "%" PRIu64 "%s", v, suffix[s]);
        return buf;
}

bool mm_is_memory_resource(const char *name) {
        return streq(name, "memory") || startswith(name, "hugepages-");
}

/* ---------------------------------------------------------------- machine */

static int read_u64_after(const char *text, const char *key, uint64_t *ret) {
        const char *p = strstr(text, key);
        char *end;
        unsigned long long v;

        if (!p)
                return -ENOENT;
        p += strlen(key);
        v = strtoull(p, &end, 10);
        if (end == p)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* The node ids are the topology manager's (tm_numa_discover: the one listing of devices/system/node); each node's
 * memory and huge pages are read here. A machine without the node directory has no NUMA memory to report. */
int mm_machine_discover(const char *sysfs_root, struct mm_machine *ret, struct ck_error **ret_error) {
        _cleanup_free_ struct tm_numa *numa = calloc(1, sizeof(*numa));
        _cleanup_free_ char *dir = NULL;
        struct mm_machine m = {};
        struct stat st;
        int r;

        if (!numa || asprintf(&dir, "%s/devices/system/node", sysfs_root ?: "/sys") < 0)
                return -ENOMEM;
        if (stat(dir, &st) < 0 && errno == ENOENT) {
                *ret = m; /* tm_numa_discover's implicit node 0 has no meminfo to read */
                return 0;
        }
        r = tm_numa_discover(sysfs_root, numa, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < numa->n; i++) {
                _cleanup_free_ char *path = NULL, *text = NULL, *hdir = NULL;
                struct mm_machine_node *node = &m.nodes[m.n++];
                struct dirent *de;
                uint64_t kb;
                DIR *d;

                node->id = numa->nodes[i];
                if (asprintf(&path, "%s/node%d/meminfo", dir, node->id) < 0)
                        return -ENOMEM;
                r = read_full_file(path, 64 * 1024, &text, NULL);
                if (r < 0)
                        return ck_error_set(ret_error, r, "cannot read %s: %s", path, strerror(-r));
                if (read_u64_after(text, "MemTotal:", &kb) < 0)
                        return ck_error_set(ret_error, -EINVAL, "%s: no MemTotal", path);
                node->memory = kb * 1024;
                if (asprintf(&hdir, "%s/node%d/hugepages", dir, node->id) < 0)
                        return -ENOMEM;
                d = opendir(hdir);
                if (!d)
                        continue;
                while ((de = readdir(d))) {
                        _cleanup_free_ char *np = NULL, *nt = NULL;
                        unsigned long long size;
                        char *end;
                        if (!startswith(de->d_name, "hugepages-"))
                                continue;
                        size = strtoull(de->d_name + strlen("hugepages-"), &end, 10);
                        if (!streq(end, "kB") || size == 0 || node->n_hugepages >= ELEMENTSOF(node->hugepages))
                                continue;
                        if (asprintf(&np, "%s/%s/nr_hugepages", hdir, de->d_name) < 0) {
                                closedir(d);
                                return -ENOMEM;
                        }
                        if (read_full_file(np, 64, &nt, NULL) < 0)
                                continue;
                        node->hugepages[node->n_hugepages].page_kb = size;
                        node->hugepages[node->n_hugepages].pages = strtoull(nt, NULL, 10);
                        node->n_hugepages++;
                }
                closedir(d);
        }
        *ret = m;
        return 0;
}

/* ---------------------------------------------------------------- reservations */

void mm_reservations_free(struct mm_reservation *r, size_t n) {
        for (size_t i = 0; r && i < n; i++)
                free(r[i].resource);
        free(r);
}

static int parse_bytes(const char *s, uint64_t *ret) {
        struct quantity q = {};
        int r = quantity_parse(s, &q);
        if (r < 0)
                return r;
        if (q.value < 0 || q.value * 1000 != q.milli) {
                quantity_done(&q);
                return -EINVAL;
        }
        *ret = (uint64_t) q.value;
        quantity_done(&q);
        return 0;
}

int mm_parse_reserved(const char *text, struct mm_reservation **ret, size_t *ret_n, struct ck_error **ret_error) {
        _cleanup_free_ char *copy = strdup(strempty(text));
        struct mm_reservation *l = NULL;
        size_t n = 0;
        char *s1 = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *node = strtok_r(copy, ";", &s1); node; node = strtok_r(NULL, ";", &s1)) {
                char *colon, *end, *s2 = NULL;
                long id;

                while (*node == ' ')
                        node++;
                colon = strchr(node, ':');
                if (!colon)
                        goto bad;
                *colon = 0;
                id = strtol(node, &end, 10);
                if (*end || end == node || id < 0 || id >= TM_MAX_NUMA)
                        goto bad;
                for (char *kv = strtok_r(colon + 1, ",", &s2); kv; kv = strtok_r(NULL, ",", &s2)) {
                        char *eq = strchr(kv, '=');
                        struct mm_reservation *nl;
                        uint64_t v;

                        if (!eq)
                                goto bad;
                        *eq = 0;
                        if (!mm_is_memory_resource(kv)) {
                                ck_error_set(ret_error, -EINVAL,
                                             "invalid configuration: the limit type \"%s\" for NUMA node %ld is not "
                                             "supported, only [memory hugepages-<HugePageSize>] is accepted",
                                             kv, id);
                                mm_reservations_free(l, n);
                                return -EINVAL;
                        }
                        if (parse_bytes(eq + 1, &v) < 0) {
                                ck_error_set(ret_error, -EINVAL,
                                             "reservedMemory: NUMA node %ld: %s: bad quantity \"%s\"", id, kv, eq + 1);
                                mm_reservations_free(l, n);
                                return -EINVAL;
                        }
                        nl = reallocarray(l, n + 1, sizeof(*nl));
                        if (!nl) {
                                mm_reservations_free(l, n);
                                return -ENOMEM;
                        }
                        l = nl;
                        l[n] = (struct mm_reservation) { .numa = (int) id, .resource = strdup(kv), .bytes = v };
                        if (!l[n].resource) {
                                mm_reservations_free(l, n);
                                return -ENOMEM;
                        }
                        n++;
                }
        }
        *ret = l;
        *ret_n = n;
        return 0;
bad:
        mm_reservations_free(l, n);
        return ck_error_set(ret_error, -EINVAL,
                            "reservedMemory \"%s\": expected <NUMA node>:<resource>=<quantity>[,...][;...], e.g. "
                            "\"0:memory=1Gi,hugepages-2Mi=0;1:memory=2Gi\"",
                            strempty(text));
}

/* validateReservedMemory: per memory type, the reservations' total equals the node allocatable reservation */
int mm_validate_reserved(const struct mm_machine *mach, const struct mm_reservation *rl, size_t n,
                         const char *node_reservation, struct ck_error **ret_error) {
        char names[2 * MM_MAX_RESOURCES + 8][RES_NAME_MAX];
        uint64_t reserved[ELEMENTSOF(names)] = {}, alloc[ELEMENTSOF(names)] = {};
        size_t nn = 0;
        _cleanup_free_ char *copy = strdup(strempty(node_reservation));
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                bool found = false;
                size_t k;
                for (size_t j = 0; j < mach->n; j++)
                        found = found || mach->nodes[j].id == rl[i].numa;
                if (!found)
                        return ck_error_set(ret_error, -EINVAL,
                                            "the reserved memory configuration references a NUMA node %d that does "
                                            "not exist on this machine",
                                            rl[i].numa);
                for (k = 0; k < nn && !streq(names[k], rl[i].resource); k++)
                        ;
                if (k == nn) {
                        if (nn >= ELEMENTSOF(names))
                                return ck_error_set(ret_error, -EINVAL, "reservedMemory: too many memory types");
                        snprintf(names[nn++], RES_NAME_MAX, "%s", rl[i].resource);
                }
                reserved[k] += rl[i].bytes;
        }
        for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(kv, '=');
                uint64_t v;
                size_t k;
                if (!eq)
                        continue;
                *eq = 0;
                if (!mm_is_memory_resource(kv) || parse_bytes(eq + 1, &v) < 0)
                        continue;
                for (k = 0; k < nn && !streq(names[k], kv); k++)
                        ;
                if (k == nn) {
                        if (nn >= ELEMENTSOF(names))
                                return ck_error_set(ret_error, -EINVAL, "reservedMemory: too many memory types");
                        snprintf(names[nn++], RES_NAME_MAX, "%s", kv);
                }
                alloc[k] += v;
        }
        for (size_t k = 0; k < nn; k++)
                if (reserved[k] != alloc[k]) {
                        char a[64], b[64];
                        return ck_error_set(ret_error, -EINVAL,
                                            "the total amount \"%s\" of type \"%s\" is not equal to the value \"%s\" "
                                            "determined by Node Allocatable feature",
                                            format_bytes(reserved[k], a, sizeof(a)), names[k],
                                            format_bytes(alloc[k], b, sizeof(b)));
                }
        return 0;
}
