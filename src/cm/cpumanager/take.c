/* SPDX-License-Identifier: Apache-2.0 */
/* upstream's CPU accumulator (cpu_assignment.go), packed strategy: whole NUMA nodes or sockets first (whichever
 * is higher in the hierarchy), then the other level, then whole cores, then single CPUs; at every level the
 * candidates with the fewest free CPUs come first (packing), ties by id. */
#include <errno.h>
#include <stdlib.h>

#include "cm/cpumanager/cpumanager.h"

struct acc {
        const struct cpu_topology *t;
        struct cpuset avail, result;
        int needed;
        bool numa_first;
};

struct ids {
        int v[CPUSET_MAX];
        int n;
};

static int avail_in(const struct acc *a, enum cpu_level l, int id) {
        int n = 0;
        for (size_t i = 0; i < a->t->n; i++)
                n += cpu_info_id(&a->t->cpus[i], l) == id && cpuset_has(&a->avail, a->t->cpus[i].cpu);
        return n;
}

static bool ids_has(const struct ids *s, int v) {
        for (int i = 0; i < s->n; i++)
                if (s->v[i] == v)
                        return true;
        return false;
}

/* ids of level l among the free CPUs (of parent level pl == parent, unless pl is NONE), sorted by free CPUs
 * then id, appended to out without repeats */
static void sorted_ids(const struct acc *a, enum cpu_level l, enum cpu_level pl, int parent, struct ids *out) {
        int start = out->n;

        for (size_t i = 0; i < a->t->n; i++) {
                const struct cpu_info *c = &a->t->cpus[i];
                int id = cpu_info_id(c, l);
                if (!cpuset_has(&a->avail, c->cpu) || (pl != CPU_LEVEL_NONE && cpu_info_id(c, pl) != parent))
                        continue;
                if (!ids_has(out, id) && out->n < CPUSET_MAX)
                        out->v[out->n++] = id;
        }
        /* insertion sort of the new part: (free count, id) */
        for (int i = start + 1; i < out->n; i++)
                for (int j = i; j > start; j--) {
                        int x = out->v[j - 1], y = out->v[j], cx = avail_in(a, l, x), cy = avail_in(a, l, y);
                        if (cx < cy || (cx == cy && x < y))
                                break;
                        out->v[j - 1] = y;
                        out->v[j] = x;
                }
}

static void sorted_level(const struct acc *a, enum cpu_level l, struct ids *out) {
        enum cpu_level top = a->numa_first ? CPU_LEVEL_NUMA : CPU_LEVEL_SOCKET,
                       mid = a->numa_first ? CPU_LEVEL_SOCKET : CPU_LEVEL_NUMA;
        struct ids *tops, *mids;

        out->n = 0;
        if (l == top) {
                sorted_ids(a, l, CPU_LEVEL_NONE, 0, out);
                return;
        }
        tops = calloc(1, sizeof(*tops));
        mids = calloc(1, sizeof(*mids));
        if (tops && mids) {
                sorted_ids(a, top, CPU_LEVEL_NONE, 0, tops);
                if (l == mid)
                        for (int i = 0; i < tops->n; i++)
                                sorted_ids(a, l, top, tops->v[i], out);
                else {
                        for (int i = 0; i < tops->n; i++)
                                sorted_ids(a, mid, top, tops->v[i], mids);
                        for (int i = 0; i < mids->n; i++)
                                sorted_ids(a, l, mid, mids->v[i], out);
                }
        }
        free(tops);
        free(mids);
}

static int full_size(const struct acc *a, enum cpu_level l, int id) {
        switch (l) {
        case CPU_LEVEL_CORE:
                return cputopo_cpus_per_core(a->t);
        case CPU_LEVEL_SOCKET:
                return cputopo_cpus_per_socket(a->t);
        default: {
                struct cpuset s = cputopo_cpus_in(a->t, l, id);
                return cpuset_count(&s);
        }
        }
}

static void take(struct acc *a, const struct cpuset *s) {
        a->result = cpuset_union(&a->result, s);
        a->avail = cpuset_diff(&a->avail, s);
        a->needed -= cpuset_count(s);
}

static void take_full(struct acc *a, enum cpu_level l) {
        struct ids *ids = calloc(1, sizeof(*ids));
        int nfree = 0;

        if (!ids)
                return;
        sorted_level(a, l, ids);
        /* the free ones, computed once as upstream does */
        for (int i = 0; i < ids->n; i++)
                if (avail_in(a, l, ids->v[i]) == full_size(a, l, ids->v[i]))
                        ids->v[nfree++] = ids->v[i];
        for (int i = 0; i < nfree; i++) {
                struct cpuset s = cputopo_cpus_in(a->t, l, ids->v[i]);
                if (a->needed >= cpuset_count(&s))
                        take(a, &s);
        }
        free(ids);
}

static void take_remaining(struct acc *a) {
        struct ids *cores = calloc(1, sizeof(*cores));
        struct cpuset order_taken = {};

        if (!cores)
                return;
        sorted_level(a, CPU_LEVEL_CORE, cores);
        for (int i = 0; i < cores->n && a->needed > 0; i++) {
                struct cpuset in = cputopo_cpus_in(a->t, CPU_LEVEL_CORE, cores->v[i]);
                in = cpuset_and(&in, &a->avail);
                in = cpuset_diff(&in, &order_taken);
                CPUSET_FOREACH(c, &in) {
                        struct cpuset one = {};
                        if (a->needed <= 0)
                                break;
                        cpuset_add(&one, c);
                        take(a, &one);
                }
        }
        free(cores);
}

int cpumanager_take_by_topology(const struct cpu_topology *t, const struct cpuset *available, int n, struct cpuset *ret,
                                struct ck_error **ret_error) {
        struct acc a = { .t = t, .needed = n, .numa_first = t->n_sockets >= t->n_numa };
        struct cpuset all = cputopo_all(t);

        a.avail = cpuset_and(available, &all);
        if (n < 1) {
                *ret = (struct cpuset) {};
                return 0;
        }
        if (n > cpuset_count(&a.avail))
                return ck_error_set(ret_error, -ENOSPC,
                                    "not enough cpus available to satisfy request: requested=%d, available=%d", n,
                                    cpuset_count(available));
        take_full(&a, a.numa_first ? CPU_LEVEL_NUMA : CPU_LEVEL_SOCKET);
        if (a.needed > 0)
                take_full(&a, a.numa_first ? CPU_LEVEL_SOCKET : CPU_LEVEL_NUMA);
        if (a.needed > 0)
                take_full(&a, CPU_LEVEL_CORE);
        if (a.needed > 0)
                take_remaining(&a);
        if (a.needed > 0)
                return ck_error_set(ret_error, -ENOSPC, "failed to allocate cpus");
        *ret = a.result;
        return 0;
}
