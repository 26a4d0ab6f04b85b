/* SPDX-License-Identifier: Apache-2.0 */
/* upstream's CPU accumulator (cpu_assignment.go), packed strategy: whole NUMA nodes or sockets first (whichever
 * is higher in the hierarchy), then the other level, then whole cores, then single CPUs; at every level the
 * candidates with the fewest free CPUs come first (packing), ties by id. */
#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"

#include "cm/cpumanager/cpumanager.h"

struct acc {
        const struct cpu_topology *t;
        struct cpuset avail, result;
        int needed;
        bool numa_first;
};

enum { COMBO_MAX = 64 };

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

static int cmp_int(const void *x, const void *y) {
        int a = *(const int *) x, b = *(const int *) y;
        return (a > b) - (a < b);
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

/* the uncore caches of the free CPUs: by NUMA node in sortAvailableNUMANodes' order, within one by free CPUs */
static void sorted_uncores(const struct acc *a, struct ids *out) {
        struct ids *numas = calloc(1, sizeof(*numas));

        out->n = 0;
        if (!numas)
                return;
        sorted_level(a, CPU_LEVEL_NUMA, numas);
        for (int i = 0; i < numas->n; i++)
                sorted_ids(a, CPU_LEVEL_UNCORE, CPU_LEVEL_NUMA, numas->v[i], out);
        free(numas);
}

/* takeFullUncore: every wholly free uncore cache that the request still covers */
static void take_full_uncore(struct acc *a) {
        struct ids *ids = calloc(1, sizeof(*ids));

        if (!ids)
                return;
        sorted_uncores(a, ids);
        for (int i = 0; i < ids->n; i++) {
                struct cpuset s = cputopo_cpus_in(a->t, CPU_LEVEL_UNCORE, ids->v[i]);
                if (avail_in(a, CPU_LEVEL_UNCORE, ids->v[i]) != cpuset_count(&s) || a->needed < cpuset_count(&s))
                        continue;
                take(a, &s);
        }
        free(ids);
}

/* takePartialUncore: the cores (by id) of the cache with free CPUs, as many as the request needs rounded up to
 * whole cores (all of them when fewer); for an odd request on SMT the last of their free CPUs is left; claimed only
 * when those are exactly the CPUs still needed */
static void take_partial_uncore(struct acc *a, int uncore) {
        int per_core = MAX(cputopo_cpus_per_core(a->t), 1), cores_needed = (a->needed + per_core - 1) / per_core;
        struct cpuset in = cputopo_cpus_in(a->t, CPU_LEVEL_UNCORE, uncore), free_cpus = {};
        struct ids *cores = calloc(1, sizeof(*cores));

        if (!cores)
                return;
        in = cpuset_and(&in, &a->avail);
        CPUSET_FOREACH(c, &in) {
                int core = cputopo_cpu(a->t, c)->core;
                if (!ids_has(cores, core) && cores->n < CPUSET_MAX)
                        cores->v[cores->n++] = core;
        }
        qsort(cores->v, cores->n, sizeof(int), cmp_int);
        for (int i = 0; i < MIN(cores->n, cores_needed); i++) {
                struct cpuset s = cputopo_cpus_in(a->t, CPU_LEVEL_CORE, cores->v[i]);
                s = cpuset_and(&s, &a->avail);
                free_cpus = cpuset_union(&free_cpus, &s);
        }
        if (a->needed % 2 != 0 && per_core > 1 && cpuset_count(&free_cpus) > a->needed) {
                int last = -1;
                CPUSET_FOREACH(c, &free_cpus) {
                        last = c;
                }
                cpuset_del(&free_cpus, last);
        }
        if (cpuset_count(&free_cpus) == a->needed)
                take(a, &free_cpus);
        free(cores);
}

/* takeUncoreCache: over the caches in their order, whole free caches while the request covers one, then the
 * current cache partly */
static void take_uncore_cache(struct acc *a) {
        struct ids *ids = calloc(1, sizeof(*ids));
        int per_uncore = a->t->n_uncore > 0 ? (int) a->t->n / a->t->n_uncore : (int) a->t->n;

        if (!ids)
                return;
        sorted_uncores(a, ids);
        for (int i = 0; i < ids->n && a->needed > 0; i++) {
                if (a->needed >= per_uncore)
                        take_full_uncore(a);
                if (a->needed <= 0)
                        break;
                take_partial_uncore(a, ids->v[i]);
        }
        free(ids);
}

/* The accumulator's available CPUs (those of the topology), and upstream's checks before either take: returns 1 with
 * an empty *ret for a request of no CPUs, -ENOSPC when fewer are available than requested, else 0. */
static int acc_begin(struct acc *a, const struct cpuset *available, int n, struct cpuset *ret,
                     struct ck_error **ret_error) {
        struct cpuset all = cputopo_all(a->t);

        a->avail = cpuset_and(available, &all);
        if (n < 1) {
                *ret = (struct cpuset) {};
                return 1;
        }
        if (n > cpuset_count(&a->avail))
                return ck_error_set(ret_error, -ENOSPC,
                                    "not enough cpus available to satisfy request: requested=%d, available=%d", n,
                                    cpuset_count(available));
        return 0;
}

/* takeByTopologyNUMAPacked */
static int take_packed(const struct cpu_topology *t, const struct cpuset *available, int n, bool uncore,
                       struct cpuset *ret, struct ck_error **ret_error) {
        struct acc a = { .t = t, .needed = n, .numa_first = t->n_sockets >= t->n_numa };
        int r;

        r = acc_begin(&a, available, n, ret, ret_error);
        if (r != 0)
                return r < 0 ? r : 0;
        take_full(&a, a.numa_first ? CPU_LEVEL_NUMA : CPU_LEVEL_SOCKET);
        if (a.needed > 0)
                take_full(&a, a.numa_first ? CPU_LEVEL_SOCKET : CPU_LEVEL_NUMA);
        if (a.needed > 0 && uncore)
                take_uncore_cache(&a);
        if (a.needed > 0)
                take_full(&a, CPU_LEVEL_CORE);
        if (a.needed > 0)
                take_remaining(&a);
        if (a.needed > 0)
                return ck_error_set(ret_error, -ENOSPC, "failed to allocate cpus");
        *ret = a.result;
        return 0;
}

/* ------------------------------------------------ takeByTopologyNUMADistributed (KEP-2902) */

struct dist {
        struct acc *a;
        const struct ids *numas;
        int n, group;
        /* per combo */
        int distribution, remainder;
        int after[COMBO_MAX]; /* free CPUs per entry of numas after the even distribution */
        double best_local;
        int best_local_rem[COMBO_MAX], n_best_local_rem;
        /* overall */
        double best;
        int best_combo[COMBO_MAX], n_best_combo, best_rem[COMBO_MAX], n_best_rem;
};

/* math.Round(x*1000)/1000: half away from zero (no libm in ckubelet) */
static double round3(double x) {
        return x >= 0 ? (double) (long long) (x * 1000 + 0.5) / 1000 : -(double) (long long) (-x * 1000 + 0.5) / 1000;
}

/* Newton's method to the double's precision */
static double sqrt_newton(double x) {
        double r = x > 1 ? x : 1;
        if (x <= 0)
                return 0;
        for (int i = 0; i < 200; i++) {
                double next = (r + x / r) / 2;
                if (next >= r)
                        break;
                r = next;
        }
        return r;
}

/* standardDeviation, with upstream's rounding of the mean and the result to 3 decimals */
static double stddev(const int *v, int n) {
        double m = 0, s = 0;
        for (int i = 0; i < n; i++)
                m += v[i];
        m = round3(m / n);
        for (int i = 0; i < n; i++)
                s += (v[i] - m) * (v[i] - m);
        return round3(sqrt_newton(s / n));
}

static int numa_index(const struct dist *d, int numa) {
        for (int i = 0; i < d->numas->n; i++)
                if (d->numas->v[i] == numa)
                        return i;
        return -1;
}

/* iterateCombinations: every k-subset of v in order; f returns false to stop */
static bool combos(const int *v, int nv, int k, int *acc, int depth, int start,
                   bool (*f)(struct dist *, const int *, int), struct dist *d) {
        if (depth == k)
                return f(d, acc, k);
        for (int i = start; i <= nv - (k - depth); i++) {
                acc[depth] = v[i];
                if (!combos(v, nv, k, acc, depth + 1, i + 1, f, d))
                        return false;
        }
        return true;
}

static bool try_remainder(struct dist *d, const int *subset, int k) {
        int after[COMBO_MAX], sum = 0, rem = d->remainder;
        double balance;

        memcpy(after, d->after, sizeof(after));
        for (int i = 0; i < k; i++)
                sum += after[numa_index(d, subset[i])];
        if (sum < rem)
                return true;
        while (rem > 0) {
                bool progress = false;
                for (int i = 0; i < k && rem > 0; i++) {
                        int x = numa_index(d, subset[i]);
                        if (after[x] < d->group)
                                continue;
                        after[x] -= d->group;
                        rem -= d->group;
                        progress = true;
                }
                if (!progress)
                        break; /* upstream would spin here; it cannot happen after the checks above */
        }
        balance = stddev(after, d->numas->n);
        if (balance < d->best_local) {
                d->best_local = balance;
                memcpy(d->best_local_rem, subset, k * sizeof(int));
                d->n_best_local_rem = k;
        }
        return true;
}

static bool try_combo(struct dist *d, const int *combo, int k) {
        int groups = 0, rem_combo[COMBO_MAX], n_rem_combo = 0, scratch[COMBO_MAX];
        struct cpuset all = {};

        if (d->best == 0)
                return false;
        for (int i = 0; i < k; i++) {
                struct cpuset s = cputopo_cpus_in(d->a->t, CPU_LEVEL_NUMA, combo[i]);
                s = cpuset_and(&s, &d->a->avail);
                all = cpuset_union(&all, &s);
                groups += cpuset_count(&s) / d->group;
        }
        if (cpuset_count(&all) < d->n || groups * d->group < d->n)
                return true;
        d->distribution = d->n / k / d->group * d->group;
        for (int i = 0; i < k; i++)
                if (avail_in(d->a, CPU_LEVEL_NUMA, combo[i]) < d->distribution)
                        return true;
        for (int i = 0; i < d->numas->n; i++)
                d->after[i] = avail_in(d->a, CPU_LEVEL_NUMA, d->numas->v[i]);
        for (int i = 0; i < k; i++)
                d->after[numa_index(d, combo[i])] -= d->distribution;
        d->remainder = d->n - d->distribution * k;
        for (int i = 0; i < k; i++)
                if (d->after[numa_index(d, combo[i])] >= d->group)
                        rem_combo[n_rem_combo++] = combo[i];
        d->best_local = DBL_MAX;
        d->n_best_local_rem = 0;
        if (d->remainder == 0)
                d->best_local = stddev(d->after, d->numas->n);
        for (int j = n_rem_combo; d->remainder > 0 && j >= 1; j--)
                combos(rem_combo, n_rem_combo, j, scratch, 0, 0, try_remainder, d);
        if (d->best_local < d->best) {
                d->best = d->best_local;
                memcpy(d->best_rem, d->best_local_rem, d->n_best_local_rem * sizeof(int));
                d->n_best_rem = d->n_best_local_rem;
                memcpy(d->best_combo, combo, k * sizeof(int));
                d->n_best_combo = k;
        }
        return true;
}

static int take_from_numa(struct acc *a, int numa, int n) {
        struct cpuset in = cputopo_cpus_in(a->t, CPU_LEVEL_NUMA, numa), got = {};
        in = cpuset_and(&in, &a->avail);
        if (take_packed(a->t, &in, n, false, &got, NULL) < 0)
                return -ENOSPC;
        take(a, &got);
        return 0;
}

static int take_distributed(const struct cpu_topology *t, const struct cpuset *available, int n, int group,
                            struct cpuset *ret, struct ck_error **ret_error) {
        struct acc a = { .t = t, .needed = n, .numa_first = t->n_sockets >= t->n_numa };
        _cleanup_free_ struct ids *numas = NULL;
        _cleanup_free_ struct dist *d = NULL;
        int r, n_numa_avail, groups_total, groups_per_numa, groups_needed, min_numas, max_numas, scratch[COMBO_MAX];

        if (group < 1 || n % group != 0)
                return take_packed(t, available, n, false, ret, ret_error);
        r = acc_begin(&a, available, n, ret, ret_error);
        if (r != 0)
                return r < 0 ? r : 0;
        numas = calloc(1, sizeof(*numas));
        d = calloc(1, sizeof(*d));
        if (!numas || !d)
                return ck_error_set(ret_error, -ENOMEM, "out of memory");
        sorted_level(&a, CPU_LEVEL_NUMA, numas);
        if (numas->n > COMBO_MAX || t->n_numa < 1)
                return take_packed(t, available, n, false, ret, ret_error);
        /* rangeNUMANodesNeededToSatisfy */
        n_numa_avail = numas->n;
        groups_total = ((int) t->n - 1) / group + 1;
        groups_per_numa = (groups_total - 1) / t->n_numa + 1;
        groups_needed = (n - 1) / group + 1;
        min_numas = (groups_needed - 1) / groups_per_numa + 1;
        max_numas = MIN(groups_needed, n_numa_avail);

        *d = (struct dist) { .a = &a, .numas = numas, .n = n, .group = group };
        for (int k = min_numas; k <= max_numas; k++) {
                int remainder;

                d->best = DBL_MAX;
                d->n_best_combo = d->n_best_rem = 0;
                combos(numas->v, numas->n, k, scratch, 0, 0, try_combo, d);
                if (d->n_best_combo == 0)
                        continue;
                d->distribution = n / d->n_best_combo / group * group;
                for (int i = 0; i < d->n_best_combo; i++)
                        if (d->distribution > 0 && take_from_numa(&a, d->best_combo[i], d->distribution) < 0)
                                return ck_error_set(ret_error, -ENOSPC,
                                                    "accounting error, not enough CPUs allocated, remaining: %d",
                                                    a.needed);
                remainder = n - d->distribution * d->n_best_combo;
                while (remainder > 0) {
                        bool progress = false;
                        for (int i = 0; i < d->n_best_rem && remainder > 0; i++) {
                                if (avail_in(&a, CPU_LEVEL_NUMA, d->best_rem[i]) < group)
                                        continue;
                                if (take_from_numa(&a, d->best_rem[i], group) < 0)
                                        break;
                                remainder -= group;
                                progress = true;
                        }
                        if (!progress)
                                break;
                }
                if (a.needed > 0)
                        return ck_error_set(ret_error, -ENOSPC,
                                            "accounting error, not enough CPUs allocated, remaining: %d", a.needed);
                if (a.needed < 0)
                        return ck_error_set(ret_error, -ENOSPC,
                                            "accounting error, too many CPUs allocated, remaining: %d", a.needed);
                *ret = a.result;
                return 0;
        }
        return take_packed(t, available, n, false, ret, ret_error);
}

int cpumanager_take_by_topology_opts(const struct cpu_topology *t, const struct cpuset *available, int n,
                                     const struct cpumanager_options *o, struct cpuset *ret,
                                     struct ck_error **ret_error) {
        if (o && o->distribute_cpus_across_numa)
                return take_distributed(t, available, n, o->full_pcpus_only ? cputopo_cpus_per_core(t) : 1, ret,
                                        ret_error);
        return take_packed(t, available, n, o && o->prefer_align_cpus_by_uncorecache, ret, ret_error);
}
