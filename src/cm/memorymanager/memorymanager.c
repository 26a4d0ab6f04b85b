/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/memorymanager/memorymanager.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apis/qos.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "cm/cpumanager/cpumanager.h"

#define STATE_MAX (4 * 1024 * 1024)
#define RES_NAME_MAX 64

struct mm_table {
        uint64_t total, system_reserved, allocatable, reserved, free;
};

struct node_state {
        int id;
        int n_assign;
        uint64_t cells;
        bool has[MM_MAX_RESOURCES];
        struct mm_table t[MM_MAX_RESOURCES];
};

struct block {
        uint64_t mask;
        int res;
        uint64_t size;
};

struct entry {
        char *uid, *name;
        struct block b[MM_MAX_RESOURCES];
        size_t n;
};

struct memorymanager {
        bool is_static;
        char res[MM_MAX_RESOURCES][RES_NAME_MAX]; /* the resource names, sorted */
        size_t n_res;
        struct node_state nodes[TM_MAX_NUMA]; /* by id, ascending */
        size_t n_nodes;
        struct entry *entries;
        size_t n_entries;
        char *state_path;
        /* initContainersReusableMemory: the memory of the last pod's init containers that its next containers
         * reuse, per NUMA mask and resource */
        char *reuse_uid;
        struct reuse {
                uint64_t mask;
                int res;
                uint64_t size;
        } reuse[MM_MAX_RESOURCES * 8];
        size_t n_reuse;
};

struct mm_mark {
        struct node_state nodes[TM_MAX_NUMA];
        size_t n_entries;
        struct entry *entries; /* a copy of the blocks (init containers' shrink as their memory is reused) */
        char *reuse_uid;
        struct reuse reuse[MM_MAX_RESOURCES * 8];
        size_t n_reuse;
};

/* ---------------------------------------------------------------- small helpers */

static int res_index(const struct memorymanager *m, const char *name) {
        for (size_t i = 0; i < m->n_res; i++)
                if (streq(m->res[i], name))
                        return (int) i;
        return -1;
}

static struct node_state *node_find(struct memorymanager *m, int id) {
        for (size_t i = 0; i < m->n_nodes; i++)
                if (m->nodes[i].id == id)
                        return &m->nodes[i];
        return NULL;
}

static int mask_bits(uint64_t mask, int *out) {
        int n = 0;
        for (int i = 0; i < 64; i++)
                if (mask >> i & 1)
                        out[n++] = i;
        return n;
}

/* ---------------------------------------------------------------- the default machine state */

static uint64_t system_reserved(const struct mm_reservation *rl, size_t n, int node, const char *res) {
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++)
                if (rl[i].numa == node && streq(rl[i].resource, res))
                        v = rl[i].bytes; /* the last one wins, as convertReserved's map */
        return v;
}

static int add_res(struct memorymanager *m, const char *name) {
        if (res_index(m, name) >= 0)
                return 0;
        if (m->n_res >= MM_MAX_RESOURCES)
                return -E2BIG;
        snprintf(m->res[m->n_res++], RES_NAME_MAX, "%s", name);
        for (size_t i = m->n_res - 1; i > 0 && strcmp(m->res[i - 1], m->res[i]) > 0; i--) {
                char t[RES_NAME_MAX];
                memcpy(t, m->res[i], RES_NAME_MAX);
                memcpy(m->res[i], m->res[i - 1], RES_NAME_MAX);
                memcpy(m->res[i - 1], t, RES_NAME_MAX);
        }
        return 0;
}

static int default_state(struct memorymanager *m, const struct mm_machine *mach, const struct mm_reservation *rl,
                         size_t n, struct node_state *out) {
        int r = add_res(m, "memory");
        for (size_t i = 0; r >= 0 && i < mach->n; i++)
                for (size_t h = 0; r >= 0 && h < mach->nodes[i].n_hugepages; h++) {
                        char name[RES_NAME_MAX];
                        r = add_res(m, mm_hugepage_name(mach->nodes[i].hugepages[h].page_kb, name, sizeof(name)));
                }
        if (r < 0)
                return r;
        for (size_t i = 0; i < mach->n; i++) {
                const struct mm_machine_node *mn = &mach->nodes[i];
                struct node_state *s = &out[i];
                uint64_t huge = 0;
                int mi = res_index(m, "memory");

                *s = (struct node_state) { .id = mn->id, .cells = UINT64_C(1) << mn->id };
                for (size_t h = 0; h < mn->n_hugepages; h++) {
                        char name[RES_NAME_MAX];
                        int k = res_index(m, mm_hugepage_name(mn->hugepages[h].page_kb, name, sizeof(name)));
                        uint64_t total = mn->hugepages[h].pages * mn->hugepages[h].page_kb * 1024,
                                 sr = system_reserved(rl, n, mn->id, name);
                        s->has[k] = true;
                        s->t[k] = (struct mm_table) {
                                .total = total, .system_reserved = sr, .allocatable = total - sr, .free = total - sr
                        };
                        huge += total;
                }
                {
                        uint64_t sr = system_reserved(rl, n, mn->id, "memory"), a = mn->memory - sr - huge;
                        s->has[mi] = true;
                        s->t[mi] = (struct mm_table) {
                                .total = mn->memory, .system_reserved = sr, .allocatable = a, .free = a
                        };
                }
        }
        return 0;
}

/* ---------------------------------------------------------------- state file */

struct sbuf {
        char *s;
        size_t len;
        int r;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) _printf_(2, 3);
static void sb_printf(struct sbuf *b, const char *fmt, ...) {
        va_list ap;
        char *t = NULL, *n;
        int len;

        if (b->r < 0)
                return;
        va_start(ap, fmt);
        len = vasprintf(&t, fmt, ap);
        va_end(ap);
        if (len < 0) {
                b->r = -ENOMEM;
                return;
        }
        n = realloc(b->s, b->len + (size_t) len + 1);
        if (!n) {
                free(t);
                b->r = -ENOMEM;
                return;
        }
        memcpy(n + b->len, t, (size_t) len + 1);
        b->s = n;
        b->len += (size_t) len;
        free(t);
}

static void sb_json_string(struct sbuf *b, const char *s) {
        json_auto_t *j = json_string(s);
        _cleanup_free_ char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
        if (!t) {
                b->r = -ENOMEM;
                return;
        }
        sb_printf(b, "%s", t);
}

static int cmp_entry(const void *a, const void *b) {
        const struct entry *x = a, *y = b;
        int c = strcmp(x->uid, y->uid);
        return c ?: strcmp(x->name, y->name);
}

static int cmp_id_string(const void *a, const void *b) {
        char x[16], y[16];
        snprintf(x, sizeof(x), "%d", ((const struct node_state *) a)->id);
        snprintf(y, sizeof(y), "%d", ((const struct node_state *) b)->id);
        return strcmp(x, y);
}

/* Go's json.Marshal of MemoryManagerCheckpointData (policyName, machineState, entries when not empty) and spew's
 * dump of the v1 struct for its checksum */
static int format_state(const struct memorymanager *m, char **ret_data, char **ret_spew) {
        struct sbuf d = {}, s = {};
        _cleanup_free_ struct entry *sorted = calloc(m->n_entries + 1, sizeof(*sorted));
        struct node_state byname[TM_MAX_NUMA];
        const char *policy = m->is_static ? "Static" : "None";

        if (!sorted)
                return -ENOMEM;
        if (m->n_entries > 0)
                memcpy(sorted, m->entries, m->n_entries * sizeof(*sorted));
        qsort(sorted, m->n_entries, sizeof(*sorted), cmp_entry);
        memcpy(byname, m->nodes, m->n_nodes * sizeof(*byname));
        qsort(byname, m->n_nodes, sizeof(*byname), cmp_id_string);

        sb_printf(&d, "{\"policyName\":\"%s\",\"machineState\":{", policy);
        for (size_t i = 0; i < m->n_nodes; i++) {
                const struct node_state *n = &byname[i];
                int bits[64], nb = mask_bits(n->cells, bits);
                bool first = true;
                sb_printf(&d, "%s\"%d\":{\"numberOfAssignments\":%d,\"memoryMap\":{", i ? "," : "", n->id, n->n_assign);
                for (size_t k = 0; k < m->n_res; k++) {
                        if (!n->has[k])
                                continue;
                        sb_printf(&d,
                                  "%s\"%s\":{\"total\":%" PRIu64 ",\"systemReserved\":%" PRIu64
                                  ",\"allocatable\":%" PRIu64 ",\"reserved\":%" PRIu64 ",\"free\":%" PRIu64 "}",
                                  first ? "" : ",", m->res[k], n->t[k].total, n->t[k].system_reserved,
                                  n->t[k].allocatable, n->t[k].reserved, n->t[k].free);
                        first = false;
                }
                sb_printf(&d, "},\"cells\":[");
                for (int b = 0; b < nb; b++)
                        sb_printf(&d, "%s%d", b ? "," : "", bits[b]);
                sb_printf(&d, "]}");
        }
        sb_printf(&d, "}");
        if (m->n_entries > 0) {
                sb_printf(&d, ",\"entries\":{");
                for (size_t i = 0; i < m->n_entries; i++) {
                        const struct entry *e = &sorted[i];
                        bool new_pod = i == 0 || !streq(sorted[i - 1].uid, e->uid);
                        if (new_pod) {
                                sb_printf(&d, "%s", i ? "}," : "");
                                sb_json_string(&d, e->uid);
                                sb_printf(&d, ":{");
                        } else
                                sb_printf(&d, ",");
                        sb_json_string(&d, e->name);
                        sb_printf(&d, ":[");
                        for (size_t k = 0; k < e->n; k++) {
                                int bits[64], nb = mask_bits(e->b[k].mask, bits);
                                sb_printf(&d, "%s{\"numaAffinity\":[", k ? "," : "");
                                for (int b = 0; b < nb; b++)
                                        sb_printf(&d, "%s%d", b ? "," : "", bits[b]);
                                sb_printf(&d, "],\"type\":\"%s\",\"size\":%" PRIu64 "}", m->res[e->b[k].res],
                                          e->b[k].size);
                        }
                        sb_printf(&d, "]");
                }
                sb_printf(&d, "}}");
        }
        sb_printf(&d, "}");

        sb_printf(&s, "(*state.MemoryManagerCheckpoint){PolicyName:(string)%s MachineState:(state.NUMANodeMap)map[",
                  policy);
        for (size_t i = 0; i < m->n_nodes; i++) {
                const struct node_state *n = &m->nodes[i];
                int bits[64], nb = mask_bits(n->cells, bits);
                bool first = true;
                sb_printf(&s,
                          "%s%d:<*>{NumberOfAssignments:(int)%d MemoryMap:(map[v1.ResourceName]*state.MemoryTable)map[",
                          i ? " " : "", n->id, n->n_assign);
                for (size_t k = 0; k < m->n_res; k++) {
                        if (!n->has[k])
                                continue;
                        sb_printf(&s,
                                  "%s%s:<*>{TotalMemSize:(uint64)%" PRIu64 " SystemReserved:(uint64)%" PRIu64
                                  " Allocatable:(uint64)%" PRIu64 " Reserved:(uint64)%" PRIu64 " Free:(uint64)%" PRIu64
                                  "}",
                                  first ? "" : " ", m->res[k], n->t[k].total, n->t[k].system_reserved,
                                  n->t[k].allocatable, n->t[k].reserved, n->t[k].free);
                        first = false;
                }
                sb_printf(&s, "] Cells:([]int)[");
                for (int b = 0; b < nb; b++)
                        sb_printf(&s, "%s%d", b ? " " : "", bits[b]);
                sb_printf(&s, "]}");
        }
        sb_printf(&s, "] Entries:(state.ContainerMemoryAssignments)map[");
        for (size_t i = 0; i < m->n_entries; i++) {
                const struct entry *e = &sorted[i];
                bool new_pod = i == 0 || !streq(sorted[i - 1].uid, e->uid);
                if (new_pod)
                        sb_printf(&s, "%s%s:map[", i ? "] " : "", e->uid);
                else
                        sb_printf(&s, " ");
                sb_printf(&s, "%s:[", e->name);
                for (size_t k = 0; k < e->n; k++) {
                        int bits[64], nb = mask_bits(e->b[k].mask, bits);
                        sb_printf(&s, "%s{NUMAAffinity:([]int)[", k ? " " : "");
                        for (int b = 0; b < nb; b++)
                                sb_printf(&s, "%s%d", b ? " " : "", bits[b]);
                        sb_printf(&s, "] Type:(v1.ResourceName)%s Size:(uint64)%" PRIu64 "}", m->res[e->b[k].res],
                                  e->b[k].size);
                }
                sb_printf(&s, "]");
        }
        sb_printf(&s, "%s] Checksum:(checksum.Checksum)0}", m->n_entries > 0 ? "]" : "");
        if (d.r < 0 || s.r < 0) {
                free(d.s);
                free(s.s);
                return -ENOMEM;
        }
        *ret_data = d.s;
        *ret_spew = s.s;
        return 0;
}

int memorymanager_state_text(const struct memorymanager *m, char **ret) {
        _cleanup_free_ char *data = NULL, *spew = NULL, *dh = NULL;
        json_auto_t *top = NULL, *jdata = NULL;
        char *out;
        int r;

        r = format_state(m, &data, &spew);
        if (r < 0)
                return r;
        if (asprintf(&dh, "(string)%s", data) < 0) {
                dh = NULL;
                return -ENOMEM;
        }
        jdata = json_loads(data, 0, NULL);
        if (!jdata)
                return -ENOMEM;
        /* the v1 fields (policyName, machineState, entries) repeat the data's, then the checksums */
        top = json_object();
        if (!top || json_object_update(top, jdata) < 0 ||
            json_object_set_new(top, "checksum", json_integer(cpumanager_fnv32a(spew))) < 0 ||
            json_object_set_new(top, "data", json_string(data)) < 0 ||
            json_object_set_new(top, "dataChecksum", json_integer(cpumanager_fnv32a(dh))) < 0)
                return -ENOMEM;
        out = json_dumps(top, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!out)
                return -ENOMEM;
        *ret = out;
        return 0;
}

static int store(struct memorymanager *m) {
        _cleanup_free_ char *text = NULL;
        int r;

        if (!m->state_path)
                return 0;
        r = memorymanager_state_text(m, &text);
        if (r < 0)
                return r;
        r = write_file_atomic(m->state_path, text, strlen(text), 0644);
        if (r < 0)
                log_error("memorymanager: cannot write %s: %s", m->state_path, strerror(-r));
        return r;
}

static int corrupt(struct memorymanager *m, struct ck_error **ret_error, const char *why) {
        return ck_error_set(ret_error, -EINVAL,
                            "could not restore state from checkpoint: %s, please drain this node and delete the memory "
                            "manager checkpoint file \"%s\" before restarting Kubelet",
                            why, m->state_path);
}

static uint64_t json_u64(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);
        return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t) json_integer_value(v) : 0;
}

static int json_mask(json_t *a, uint64_t *ret) {
        size_t i;
        json_t *v;
        uint64_t m = 0;

        if (!json_is_array(a))
                return -EINVAL;
        json_array_foreach(a, i, v) {
                if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= 64)
                        return -EINVAL;
                m |= UINT64_C(1) << json_integer_value(v);
        }
        *ret = m;
        return 0;
}

static int add_entry(struct memorymanager *m, const char *uid, const char *name, const struct block *b, size_t n) {
        struct entry *l = reallocarray(m->entries, m->n_entries + 1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        m->entries = l;
        l[m->n_entries] = (struct entry) { .uid = strdup(uid), .name = strdup(name), .n = n };
        if (!l[m->n_entries].uid || !l[m->n_entries].name) {
                free(l[m->n_entries].uid);
                free(l[m->n_entries].name);
                return -ENOMEM;
        }
        if (n > 0)
                memcpy(l[m->n_entries].b, b, n * sizeof(*b));
        m->n_entries++;
        return 0;
}

/* the state read back into m (nodes as they were written, entries); *ret_had_state false when there is none */
static int restore(struct memorymanager *m, bool *ret_had_state, struct ck_error **ret_error) {
        _cleanup_free_ char *text = NULL, *dh = NULL;
        json_auto_t *top = NULL, *data = NULL;
        json_t *ms, *entries, *pod, *blocks, *node;
        const char *policy, *d, *uid, *key;
        size_t size;
        int r;

        *ret_had_state = false;
        r = read_full_file(m->state_path, STATE_MAX, &text, &size);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot read %s: %s", m->state_path, strerror(-r));
        top = json_loadb(text, size, 0, NULL);
        if (!json_is_object(top))
                return corrupt(m, ret_error, "failed to deserialize memory manager checkpoint");
        d = json_string_value(json_object_get(top, "data"));
        if (!d || !json_is_integer(json_object_get(top, "dataChecksum")))
                return corrupt(m, ret_error, "checkpoint is corrupted");
        if (asprintf(&dh, "(string)%s", d) < 0) {
                dh = NULL;
                return -ENOMEM;
        }
        if ((uint64_t) json_integer_value(json_object_get(top, "dataChecksum")) != cpumanager_fnv32a(dh))
                return corrupt(m, ret_error, "checkpoint is corrupted");
        data = json_loads(d, 0, NULL);
        if (!json_is_object(data))
                return corrupt(m, ret_error, "failed to deserialize memory manager checkpoint data");
        policy = json_string_value(json_object_get(data, "policyName"));
        if (!streq_ptr(policy, m->is_static ? "Static" : "None"))
                return ck_error_set(ret_error, -EINVAL,
                                    "could not restore state from checkpoint: [memorymanager] configured policy \"%s\" "
                                    "differs from state checkpoint policy \"%s\", please drain this node and delete "
                                    "the memory manager checkpoint file \"%s\" before restarting Kubelet",
                                    m->is_static ? "Static" : "None", strempty(policy), m->state_path);
        *ret_had_state = true;
        ms = json_object_get(data, "machineState");
        m->n_nodes = 0;
        json_object_foreach(ms, key, node) {
                struct node_state *s;
                json_t *mm, *t;
                const char *rn;
                char *end;
                long id = strtol(key, &end, 10);

                if (*end || id < 0 || id >= TM_MAX_NUMA || m->n_nodes >= TM_MAX_NUMA || !json_is_object(node))
                        return corrupt(m, ret_error, "bad machineState");
                s = &m->nodes[m->n_nodes++];
                *s = (struct node_state) { .id = (int) id,
                                           .n_assign = (int) json_integer_value(
                                                   json_object_get(node, "numberOfAssignments")) };
                if (json_mask(json_object_get(node, "cells"), &s->cells) < 0)
                        return corrupt(m, ret_error, "bad machineState cells");
                mm = json_object_get(node, "memoryMap");
                json_object_foreach(mm, rn, t) {
                        int k = res_index(m, rn);
                        if (k < 0) {
                                if (add_res(m, rn) < 0)
                                        return corrupt(m, ret_error, "too many memory types");
                                continue; /* a type the machine does not have: the state differs (below) */
                        }
                        s->has[k] = true;
                        s->t[k] = (struct mm_table) { .total = json_u64(t, "total"),
                                                      .system_reserved = json_u64(t, "systemReserved"),
                                                      .allocatable = json_u64(t, "allocatable"),
                                                      .reserved = json_u64(t, "reserved"),
                                                      .free = json_u64(t, "free") };
                }
        }
        for (size_t i = 1; i < m->n_nodes; i++) /* by id */
                for (size_t j = i; j > 0 && m->nodes[j - 1].id > m->nodes[j].id; j--) {
                        struct node_state t = m->nodes[j];
                        m->nodes[j] = m->nodes[j - 1];
                        m->nodes[j - 1] = t;
                }
        entries = json_object_get(data, "entries");
        json_object_foreach(entries, uid, pod) {
                const char *name;
                json_object_foreach(pod, name, blocks) {
                        struct block b[MM_MAX_RESOURCES];
                        size_t n = 0, i;
                        json_t *jb;
                        json_array_foreach(blocks, i, jb) {
                                int k = res_index(m, strempty(json_string_value(json_object_get(jb, "type"))));
                                if (k < 0 || n >= MM_MAX_RESOURCES)
                                        return ck_error_set(ret_error, -EINVAL,
                                                            "[memorymanager] (pod: %s, container: %s) the memory "
                                                            "assignment uses memory resource that does not exist",
                                                            uid, name);
                                b[n] = (struct block) { .res = k, .size = json_u64(jb, "size") };
                                if (json_mask(json_object_get(jb, "numaAffinity"), &b[n].mask) < 0)
                                        return corrupt(m, ret_error, "bad numaAffinity");
                                n++;
                        }
                        r = add_entry(m, uid, name, b, n);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* updateMachineState / updateExpectedMachineState: the blocks' sizes taken from the free memory of their nodes */
static void take_blocks(struct memorymanager *m, struct node_state *nodes, size_t n_nodes, const struct block *b,
                        size_t n) {
        for (size_t i = 0; i < n; i++) {
                uint64_t want = b[i].size;
                int bits[64], nb = mask_bits(b[i].mask, bits);
                for (int k = 0; k < nb; k++) {
                        struct node_state *s = NULL;
                        struct mm_table *t;
                        for (size_t j = 0; j < n_nodes; j++)
                                if (nodes[j].id == bits[k])
                                        s = &nodes[j];
                        if (!s)
                                continue;
                        s->n_assign++;
                        s->cells = b[i].mask;
                        if (want == 0 || !s->has[b[i].res])
                                continue;
                        t = &s->t[b[i].res];
                        if (t->free == 0)
                                continue;
                        if (t->free >= want) {
                                t->reserved += want;
                                t->free -= want;
                                want = 0;
                                continue;
                        }
                        want -= t->free;
                        t->reserved += t->free;
                        t->free = 0;
                }
        }
}

/* validateState: the state read must be what its assignments make of the machine */
static int validate_state(struct memorymanager *m, const struct node_state *def, size_t n_def,
                          struct ck_error **ret_error) {
        struct node_state expected[TM_MAX_NUMA];

        memcpy(expected, def, n_def * sizeof(*expected));
        for (size_t i = 0; i < m->n_entries; i++) {
                const struct entry *e = &m->entries[i];
                for (size_t k = 0; k < e->n; k++) {
                        int bits[64], nb = mask_bits(e->b[k].mask, bits);
                        for (int j = 0; j < nb; j++) {
                                bool found = false;
                                for (size_t q = 0; q < n_def; q++)
                                        found = found || expected[q].id == bits[j];
                                if (!found)
                                        return ck_error_set(ret_error, -EINVAL,
                                                            "[memorymanager] (pod: %s, container: %s) the memory "
                                                            "assignment uses the NUMA that does not exist",
                                                            e->uid, e->name);
                        }
                }
                take_blocks(m, expected, n_def, e->b, e->n);
        }
        if (m->n_nodes != n_def)
                goto differ;
        for (size_t i = 0; i < n_def; i++) {
                const struct node_state *a = &m->nodes[i], *b = &expected[i];
                if (a->id != b->id || a->n_assign != b->n_assign || a->cells != b->cells)
                        goto differ;
                for (size_t k = 0; k < m->n_res; k++) {
                        uint64_t fa = 0, fb = 0, ra = 0, rb = 0;
                        int bits[64], nb;
                        if (a->has[k] != b->has[k])
                                goto differ;
                        if (!a->has[k])
                                continue;
                        if (a->t[k].total != b->t[k].total || a->t[k].system_reserved != b->t[k].system_reserved ||
                            a->t[k].allocatable != b->t[k].allocatable)
                                goto differ;
                        /* free and reserved compared over the group of cells */
                        nb = mask_bits(a->cells, bits);
                        for (int j = 0; j < nb; j++)
                                for (size_t q = 0; q < n_def; q++) {
                                        if (m->nodes[q].id == bits[j]) {
                                                fa += m->nodes[q].t[k].free;
                                                ra += m->nodes[q].t[k].reserved;
                                        }
                                        if (expected[q].id == bits[j]) {
                                                fb += expected[q].t[k].free;
                                                rb += expected[q].t[k].reserved;
                                        }
                                }
                        if (fa != fb || ra != rb)
                                goto differ;
                }
        }
        return 0;
differ:
        return ck_error_set(ret_error, -EINVAL,
                            "[memorymanager] the expected machine state is different from the real one, please drain "
                            "this node and delete the memory manager checkpoint file \"%s\" before restarting Kubelet",
                            strna(m->state_path));
}

int memorymanager_new(const struct mm_config *cfg, const struct mm_machine *machine, struct memorymanager **ret,
                      struct ck_error **ret_error) {
        _cleanup_(memorymanager_freep) struct memorymanager *m = calloc(1, sizeof(*m));
        struct mm_reservation *rl = NULL;
        size_t n_rl = 0;
        struct node_state def[TM_MAX_NUMA];
        bool had = false;
        int r;

        if (!m)
                return -ENOMEM;
        if (isempty(cfg->policy) || streq(cfg->policy, "None"))
                m->is_static = false;
        else if (streq(cfg->policy, "Static"))
                m->is_static = true;
        else
                return ck_error_set(ret_error, -EINVAL, "unknown policy: \"%s\"", cfg->policy);
        if (cfg->state_dir && asprintf(&m->state_path, "%s/%s", cfg->state_dir, MM_STATE_FILE) < 0) {
                m->state_path = NULL;
                return -ENOMEM;
        }
        if (m->is_static) {
                uint64_t total = 0;
                r = mm_parse_reserved(cfg->reserved_memory, &rl, &n_rl, ret_error);
                if (r < 0)
                        return r;
                r = mm_validate_reserved(machine, rl, n_rl, cfg->node_reservation, ret_error);
                for (size_t i = 0; r >= 0 && i < n_rl; i++)
                        if (streq(rl[i].resource, "memory"))
                                total += rl[i].bytes;
                if (r >= 0 && total == 0)
                        r = ck_error_set(ret_error, -EINVAL,
                                         "[memorymanager] you should specify the system reserved memory");
                if (r >= 0)
                        r = default_state(m, machine, rl, n_rl, def);
                mm_reservations_free(rl, n_rl);
                if (r < 0)
                        return r;
        }
        if (m->state_path) {
                r = restore(m, &had, ret_error);
                if (r < 0)
                        return r;
        }
        if (m->is_static) {
                if (!had || m->n_nodes == 0) {
                        if (m->n_entries > 0)
                                return ck_error_set(ret_error, -EINVAL,
                                                    "[memorymanager] machine state can not be empty when it has "
                                                    "memory assignments");
                        memcpy(m->nodes, def, machine->n * sizeof(*def));
                        m->n_nodes = machine->n;
                } else {
                        r = validate_state(m, def, machine->n, ret_error);
                        if (r < 0)
                                return r;
                }
        } else {
                /* the none policy keeps nothing */
                for (size_t i = 0; i < m->n_entries; i++) {
                        free(m->entries[i].uid);
                        free(m->entries[i].name);
                }
                m->n_entries = 0;
                m->n_nodes = 0;
        }
        r = store(m);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot write %s: %s", m->state_path, strerror(-r));
        *ret = TAKE_PTR(m);
        return 0;
}

struct memorymanager *memorymanager_free(struct memorymanager *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_entries; i++) {
                free(m->entries[i].uid);
                free(m->entries[i].name);
        }
        free(m->entries);
        free(m->state_path);
        free(m->reuse_uid);
        free(m);
        return NULL;
}

bool memorymanager_is_static(const struct memorymanager *m) {
        return m && m->is_static;
}

size_t memorymanager_n_entries(const struct memorymanager *m) {
        return m ? m->n_entries : 0;
}

/* ---------------------------------------------------------------- requests and hints */

struct request {
        uint64_t size[MM_MAX_RESOURCES];
        bool has[MM_MAX_RESOURCES];
        int n;
};

/* getContainerRequestedResources: memory and huge pages of the container's requests (the limits where a request
 * is not set, as the API server defaults them) */
static int container_request(const struct memorymanager *m, const struct container *c, struct request *ret) {
        *ret = (struct request) {};
        for (int pass = 0; pass < 2; pass++) {
                const struct resource_list *l = pass == 0 ? &c->resources.requests : &c->resources.limits;
                for (size_t i = 0; i < l->n; i++) {
                        int k;
                        if (!mm_is_memory_resource(l->names[i]))
                                continue;
                        k = res_index(m, l->names[i]);
                        if (k < 0)
                                return -ENOENT; /* a huge page size the machine does not have */
                        if (ret->has[k])
                                continue;
                        if (l->values[i].value < 0)
                                return -EINVAL;
                        ret->has[k] = true;
                        ret->size[k] = (uint64_t) l->values[i].value;
                        ret->n++;
                }
        }
        return 0;
}

static int pod_request(const struct memorymanager *m, const struct pod *p, struct request *ret) {
        struct request init = {}, restartable = {}, app = {};
        int r;

        for (size_t i = 0; i < p->spec.n_init_containers; i++) {
                const struct container *c = &p->spec.init_containers[i];
                struct request q;
                r = container_request(m, c, &q);
                if (r < 0)
                        return r;
                for (size_t k = 0; k < m->n_res; k++) {
                        if (!q.has[k])
                                continue;
                        init.has[k] = true;
                        if (container_is_sidecar(c)) {
                                restartable.has[k] = true;
                                restartable.size[k] += q.size[k];
                        } else if (restartable.size[k] + q.size[k] > init.size[k])
                                init.size[k] = restartable.size[k] + q.size[k];
                }
        }
        for (size_t i = 0; i < p->spec.n_containers; i++) {
                struct request q;
                r = container_request(m, &p->spec.containers[i], &q);
                if (r < 0)
                        return r;
                for (size_t k = 0; k < m->n_res; k++)
                        if (q.has[k]) {
                                app.has[k] = true;
                                app.size[k] += q.size[k];
                        }
        }
        *ret = (struct request) {};
        for (size_t k = 0; k < m->n_res; k++) {
                if (!app.has[k])
                        continue;
                ret->has[k] = true;
                ret->size[k] = MAX(app.size[k] + restartable.size[k], init.size[k]);
                ret->n++;
        }
        return 0;
}

static const struct node_state *state_node(const struct memorymanager *m, int id) {
        return node_find((struct memorymanager *) m, id);
}

static struct entry *find_entry(const struct memorymanager *m, const char *uid, const char *name);

/* getPodReusableMemory */
static uint64_t reusable(const struct memorymanager *m, const char *uid, uint64_t mask, int res) {
        if (!uid || !streq_ptr(m->reuse_uid, uid))
                return 0;
        for (size_t i = 0; i < m->n_reuse; i++)
                if (m->reuse[i].mask == mask && m->reuse[i].res == res)
                        return m->reuse[i].size;
        return 0;
}

static struct reuse *reuse_slot(struct memorymanager *m, uint64_t mask, int res) {
        for (size_t i = 0; i < m->n_reuse; i++)
                if (m->reuse[i].mask == mask && m->reuse[i].res == res)
                        return &m->reuse[i];
        if (m->n_reuse >= ELEMENTSOF(m->reuse))
                return NULL;
        m->reuse[m->n_reuse] = (struct reuse) { .mask = mask, .res = res };
        return &m->reuse[m->n_reuse++];
}

/* a regular init container (not a sidecar) */
static bool is_regular_init(const struct pod *p, const struct container *c) {
        for (size_t i = 0; i < p->spec.n_init_containers; i++)
                if (streq(p->spec.init_containers[i].name, c->name))
                        return !container_is_sidecar(&p->spec.init_containers[i]);
        return false;
}

/* updatePodReusableMemory: an init container's blocks become reusable (the largest per mask and resource), the
 * next containers' use them up; only the last pod's are kept */
static void update_reuse(struct memorymanager *m, const struct pod *p, const struct container *c, const struct block *b,
                         size_t n) {
        if (!streq_ptr(m->reuse_uid, p->uid)) {
                free(m->reuse_uid);
                m->reuse_uid = strdup(p->uid);
                m->n_reuse = 0;
        }
        if (is_regular_init(p, c)) {
                for (size_t i = 0; i < n; i++) {
                        struct reuse *r = reuse_slot(m, b[i].mask, b[i].res);
                        if (r && b[i].size > r->size)
                                r->size = b[i].size;
                }
                return;
        }
        for (size_t i = 0; i < n; i++) {
                struct reuse *r = NULL;
                for (size_t k = 0; k < m->n_reuse; k++)
                        if (m->reuse[k].mask == b[i].mask && m->reuse[k].res == b[i].res)
                                r = &m->reuse[k];
                if (r && r->size != 0)
                        r->size = b[i].size >= r->size ? 0 : r->size - b[i].size;
        }
}

/* updateInitContainersMemoryBlocks: the blocks of the init containers before c shrink by what c reuses of them
 * (same resource and NUMA nodes), so that their release does not free it twice */
static void shrink_init_blocks(struct memorymanager *m, const struct pod *p, const struct container *c,
                               const struct block *b, size_t n) {
        for (size_t i = 0; i < n; i++) {
                uint64_t size = b[i].size;
                for (size_t j = 0; j < p->spec.n_init_containers && size > 0; j++) {
                        const struct container *ic = &p->spec.init_containers[j];
                        struct entry *e;
                        if (streq(ic->name, c->name))
                                break;
                        if (container_is_sidecar(ic))
                                continue;
                        e = find_entry(m, p->uid, ic->name);
                        for (size_t k = 0; e && k < e->n && size > 0; k++) {
                                struct block *ib = &e->b[k];
                                if (ib->size == 0 || ib->res != b[i].res || ib->mask != b[i].mask)
                                        continue;
                                if (ib->size > size) {
                                        ib->size -= size;
                                        size = 0;
                                } else {
                                        size -= ib->size;
                                        ib->size = 0;
                                }
                        }
                }
        }
}

struct calc {
        const struct memorymanager *m;
        const struct request *req;
        const char *uid; /* the pod's (its reusable memory counts as free) */
        int min_size;
        struct tm_hint v[256];
        size_t n;
};

static void calc_mask(uint64_t mask, void *userdata) {
        struct calc *c = userdata;
        const struct memorymanager *m = c->m;
        int bits[64], nb = mask_bits(mask, bits);
        bool single = nb == 1;
        uint64_t fr[MM_MAX_RESOURCES] = {}, al[MM_MAX_RESOURCES] = {};

        for (int j = 0; j < nb; j++) {
                const struct node_state *s = state_node(m, bits[j]);
                for (size_t k = 0; s && k < m->n_res; k++)
                        if (c->req->has[k]) {
                                fr[k] += s->t[k].free;
                                al[k] += s->t[k].allocatable;
                        }
        }
        for (size_t k = 0; k < m->n_res; k++)
                if (c->req->has[k] && al[k] < c->req->size[k])
                        return;
        if (nb < c->min_size)
                c->min_size = nb;
        if (single && tm_count(state_node(m, bits[0])->cells) > 1)
                return; /* the node is part of a group already */
        for (int j = 0; j < nb; j++) {
                const struct node_state *s = state_node(m, bits[j]);
                if (!single && s->n_assign > 0 && (tm_count(s->cells) == 1 || s->cells != mask))
                        return;
        }
        for (size_t k = 0; k < m->n_res; k++)
                if (c->req->has[k] && fr[k] + reusable(m, c->uid, mask, (int) k) < c->req->size[k])
                        return;
        if (c->n < ELEMENTSOF(c->v))
                c->v[c->n++] = (struct tm_hint) { .affinity = mask, .has_affinity = true };
}

/* calculateHints: the same hints for every resource requested (none at all: no resource gets any) */
static void calculate(const struct memorymanager *m, const struct request *req, const char *uid, struct calc *c) {
        int nodes[TM_MAX_NUMA];

        *c = (struct calc) { .m = m, .req = req, .uid = uid, .min_size = (int) m->n_nodes };
        for (size_t i = 0; i < m->n_nodes; i++)
                nodes[i] = m->nodes[i].id;
        tm_iterate_masks(nodes, m->n_nodes, calc_mask, c);
        for (size_t i = 0; i < c->n; i++)
                c->v[i].preferred = tm_count(c->v[i].affinity) == c->min_size;
}

static int add_calculated(const struct memorymanager *m, const struct request *req, const char *uid,
                          struct tm_hints *acc) {
        _cleanup_free_ struct calc *c = calloc(1, sizeof(*c));
        int r = 0;

        if (!c)
                return -ENOMEM;
        calculate(m, req, uid, c);
        if (c->n == 0)
                return tm_hints_add_any(acc); /* an empty map: upstream's "no preference" */
        for (size_t k = 0; r >= 0 && k < m->n_res; k++)
                if (req->has[k])
                        r = tm_hints_add(acc, c->v, c->n);
        return r;
}

/* regenerateHints: a container's existing blocks, if they match what it asks for */
static int add_regenerated(const struct memorymanager *m, const struct entry *e, const struct request *req,
                           struct tm_hints *acc) {
        int r = 0;

        if ((int) e->n != req->n)
                return tm_hints_add_any(acc); /* nil: no preference */
        for (size_t i = 0; i < e->n; i++)
                if (!req->has[e->b[i].res] || req->size[e->b[i].res] != e->b[i].size)
                        return tm_hints_add_any(acc);
        for (size_t i = 0; r >= 0 && i < e->n; i++)
                r = tm_hints_add(acc,
                                 &(struct tm_hint) {
                                         .affinity = e->b[i].mask, .has_affinity = true, .preferred = true },
                                 1);
        return r;
}

static struct entry *find_entry(const struct memorymanager *m, const char *uid, const char *name) {
        for (size_t i = 0; m && i < m->n_entries; i++)
                if (streq(m->entries[i].uid, uid) && streq(m->entries[i].name, name))
                        return &m->entries[i];
        return NULL;
}

int memorymanager_container_hints(const struct memorymanager *m, const struct pod *p, const struct container *c,
                                  struct tm_hints *acc) {
        struct request req;
        const struct entry *e;

        if (!memorymanager_is_static(m) || pod_qos_class(p) != QOS_GUARANTEED)
                return tm_hints_add_any(acc);
        if (container_request(m, c, &req) < 0 || req.n == 0)
                return tm_hints_add_any(acc);
        e = find_entry(m, p->uid, c->name);
        if (e)
                return add_regenerated(m, e, &req, acc);
        return add_calculated(m, &req, p->uid, acc);
}

int memorymanager_pod_hints(const struct memorymanager *m, const struct pod *p, struct tm_hints *acc) {
        struct request req;

        if (!memorymanager_is_static(m) || pod_qos_class(p) != QOS_GUARANTEED)
                return tm_hints_add_any(acc);
        if (pod_request(m, p, &req) < 0 || req.n == 0)
                return tm_hints_add_any(acc);
        for (size_t i = 0; i < p->spec.n_init_containers + p->spec.n_containers; i++) {
                const struct container *c = i < p->spec.n_init_containers
                                                    ? &p->spec.init_containers[i]
                                                    : &p->spec.containers[i - p->spec.n_init_containers];
                const struct entry *e = find_entry(m, p->uid, c->name);
                if (e)
                        return add_regenerated(m, e, &req, acc);
        }
        return add_calculated(m, &req, p->uid, acc);
}

/* ---------------------------------------------------------------- allocation */

/* findBestHint */
static bool best_hint(const struct tm_hint *v, size_t n, struct tm_hint *ret) {
        bool have = false;
        for (size_t i = 0; i < n; i++) {
                if (!have || (v[i].preferred && !ret->preferred) ||
                    (v[i].preferred == ret->preferred && tm_narrower(v[i].affinity, ret->affinity))) {
                        *ret = v[i];
                        have = true;
                }
        }
        return have;
}

static bool satisfies(const struct memorymanager *m, uint64_t mask, const struct request *req) {
        uint64_t fr[MM_MAX_RESOURCES] = {};
        int bits[64], nb = mask_bits(mask, bits);
        for (int j = 0; j < nb; j++) {
                const struct node_state *s = state_node(m, bits[j]);
                for (size_t k = 0; s && k < m->n_res; k++)
                        fr[k] += s->t[k].free;
        }
        for (size_t k = 0; k < m->n_res; k++)
                if (req->has[k] && fr[k] < req->size[k])
                        return false;
        return true;
}

static int fail(struct ck_error **ret_error, const char *err) {
        return ck_error_set_reason(ret_error, -ENOSPC, "UnexpectedAdmissionError",
                                   "Allocate failed due to %s, which is unexpected", err);
}

int memorymanager_allocate(struct memorymanager *m, const struct pod *p, const struct container *c,
                           const struct tm_hint *affinity, struct ck_error **ret_error) {
        _cleanup_free_ struct calc *calc = NULL;
        struct request req;
        struct tm_hint best = affinity ? *affinity : (struct tm_hint) {};
        struct block b[MM_MAX_RESOURCES];
        size_t n = 0;
        int r;

        if (!memorymanager_is_static(m) || pod_qos_class(p) != QOS_GUARANTEED)
                return 0;
        r = container_request(m, c, &req);
        if (r == -ENOENT)
                return fail(ret_error,
                            "[memorymanager] the container requests a huge page size this node does not have");
        if (r < 0 || req.n == 0)
                return 0;
        {
                const struct entry *e = find_entry(m, p->uid, c->name);
                if (e) {
                        update_reuse(m, p, c, e->b, e->n);
                        return 0;
                }
        }
        calc = calloc(1, sizeof(*calc));
        if (!calc)
                return -ENOMEM;
        if (!best.has_affinity) {
                struct tm_hint def;
                calculate(m, &req, p->uid, calc);
                if (calc->n == 0)
                        return fail(ret_error,
                                    "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with "
                                    "enough memory is available");
                (void) best_hint(calc->v, calc->n, &def);
                if (!def.preferred && best.preferred)
                        return fail(ret_error, "[memorymanager] failed to find the default preferred hint");
                best = def;
        }
        if (!satisfies(m, best.affinity, &req)) {
                /* extendTopologyManagerHint: the best hint that contains the affinity */
                struct tm_hint ext;
                size_t k = 0;
                calculate(m, &req, p->uid, calc);
                for (size_t i = 0; i < calc->n; i++)
                        if ((calc->v[i].affinity & best.affinity) == best.affinity)
                                calc->v[k++] = calc->v[i];
                if (!best_hint(calc->v, k, &ext))
                        return fail(ret_error,
                                    "[memorymanager] failed to find NUMA nodes to extend the current topology hint");
                if (!ext.preferred && best.preferred)
                        return fail(ret_error, "[memorymanager] failed to find the extended preferred hint");
                best = ext;
        }
        /* isAffinityViolatingNUMAAllocations */
        if (tm_count(best.affinity) > 1) {
                int bits[64], nb = mask_bits(best.affinity, bits);
                for (int j = 0; j < nb; j++) {
                        const struct node_state *s = state_node(m, bits[j]);
                        if (s && s->n_assign > 0 && (tm_count(s->cells) == 1 || s->cells != best.affinity))
                                return fail(ret_error, "[memorymanager] preferred hint violates NUMA node allocation");
                }
        }
        for (size_t k = 0; k < m->n_res; k++)
                if (req.has[k])
                        b[n++] = (struct block) { .mask = best.affinity, .res = (int) k, .size = req.size[k] };
        r = add_entry(m, p->uid, c->name, b, n);
        if (r < 0)
                return r;
        {
                /* the machine state takes what the pod's init containers do not already hold */
                struct block take[MM_MAX_RESOURCES] = {};
                for (size_t i = 0; i < n; i++) {
                        uint64_t reuse = reusable(m, p->uid, b[i].mask, b[i].res);
                        take[i] = b[i];
                        take[i].size = reuse >= b[i].size ? 0 : b[i].size - reuse;
                }
                take_blocks(m, m->nodes, m->n_nodes, take, n);
        }
        update_reuse(m, p, c, b, n);
        shrink_init_blocks(m, p, c, b, n);
        return 0;
}

struct mm_mark *memorymanager_mark(const struct memorymanager *m) {
        struct mm_mark *k = calloc(1, sizeof(*k));

        if (!k || !m)
                return k;
        memcpy(k->nodes, m->nodes, sizeof(k->nodes));
        k->n_entries = m->n_entries;
        k->entries = calloc(m->n_entries + 1, sizeof(*k->entries));
        if (!k->entries || (m->reuse_uid && !(k->reuse_uid = strdup(m->reuse_uid)))) {
                free(k->entries);
                free(k);
                return NULL;
        }
        if (m->n_entries > 0) /* the blocks; the names are the manager's */
                memcpy(k->entries, m->entries, m->n_entries * sizeof(*k->entries));
        memcpy(k->reuse, m->reuse, sizeof(k->reuse));
        k->n_reuse = m->n_reuse;
        return k;
}

static struct mm_mark *mark_free(struct mm_mark *k) {
        if (k) {
                free(k->entries);
                free(k->reuse_uid);
                free(k);
        }
        return NULL;
}

void memorymanager_rollback(struct memorymanager *m, struct mm_mark *mark) {
        if (m && mark) {
                while (m->n_entries > mark->n_entries) {
                        m->n_entries--;
                        free(m->entries[m->n_entries].uid);
                        free(m->entries[m->n_entries].name);
                }
                for (size_t i = 0; i < m->n_entries; i++)
                        memcpy(m->entries[i].b, mark->entries[i].b, sizeof(m->entries[i].b));
                memcpy(m->nodes, mark->nodes, sizeof(m->nodes));
                free(m->reuse_uid);
                m->reuse_uid = TAKE_PTR(mark->reuse_uid);
                memcpy(m->reuse, mark->reuse, sizeof(m->reuse));
                m->n_reuse = mark->n_reuse;
        }
        mark_free(mark);
}

void memorymanager_commit(struct memorymanager *m, struct mm_mark *mark) {
        if (m && mark && m->n_entries != mark->n_entries)
                (void) store(m);
        mark_free(mark);
}

/* ---------------------------------------------------------------- release and queries */

/* releaseMemory */
static void release(struct memorymanager *m, struct entry *e) {
        size_t i = (size_t) (e - m->entries);

        for (size_t k = 0; k < e->n; k++) {
                uint64_t rel = e->b[k].size;
                int bits[64], nb = mask_bits(e->b[k].mask, bits);
                for (int j = 0; j < nb; j++) {
                        struct node_state *s = node_find(m, bits[j]);
                        struct mm_table *t;
                        if (!s)
                                continue;
                        s->n_assign--;
                        if (s->n_assign == 0)
                                s->cells = UINT64_C(1) << s->id;
                        if (rel == 0 || !s->has[e->b[k].res])
                                continue;
                        t = &s->t[e->b[k].res];
                        if (t->reserved == 0)
                                continue;
                        if (t->reserved < rel) {
                                rel -= t->reserved;
                                t->free += t->reserved;
                                t->reserved = 0;
                                continue;
                        }
                        t->free += rel;
                        t->reserved -= rel;
                        rel = 0;
                }
        }
        free(e->uid);
        free(e->name);
        memmove(e, e + 1, (m->n_entries - i - 1) * sizeof(*e));
        m->n_entries--;
}

void memorymanager_remove_container(struct memorymanager *m, const char *pod_uid, const char *container) {
        struct entry *e = find_entry(m, pod_uid, container);
        if (!e)
                return;
        release(m, e);
        (void) store(m);
}

void memorymanager_remove_stale(struct memorymanager *m, char *const *active_uids) {
        bool dropped = false;
        for (size_t i = m ? m->n_entries : 0; i > 0; i--)
                if (!strv_contains((char **) active_uids, m->entries[i - 1].uid)) {
                        release(m, &m->entries[i - 1]);
                        dropped = true;
                }
        if (dropped)
                (void) store(m);
}

uint64_t memorymanager_container_nodes(const struct memorymanager *m, const char *pod_uid, const char *container) {
        const struct entry *e = find_entry(m, pod_uid, container);
        uint64_t mask = 0;
        for (size_t k = 0; e && k < e->n; k++)
                mask |= e->b[k].mask;
        return mask;
}

void memorymanager_foreach_container_block(const struct memorymanager *m, const char *pod_uid, const char *container,
                                           mm_block_cb cb, void *userdata) {
        const struct entry *e = find_entry(m, pod_uid, container);
        for (size_t k = 0; e && k < e->n; k++)
                cb(m->res[e->b[k].res], e->b[k].size, e->b[k].mask, userdata);
}

void memorymanager_foreach_allocatable(const struct memorymanager *m, mm_block_cb cb, void *userdata) {
        for (size_t i = 0; m && i < m->n_nodes; i++)
                for (size_t k = 0; k < m->n_res; k++)
                        if (m->nodes[i].has[k] && m->nodes[i].t[k].allocatable > 0)
                                cb(m->res[k], m->nodes[i].t[k].allocatable, UINT64_C(1) << m->nodes[i].id, userdata);
}
