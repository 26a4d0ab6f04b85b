/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/topologymanager/topologymanager.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"

/* ---------------------------------------------------------------- hints */

static int push(struct tm_hints *h, const struct tm_hint *v, size_t n) {
        struct tm_hint_list *l = reallocarray(h->lists, h->n + 1, sizeof(*l));
        struct tm_hint *copy;

        if (!l)
                return -ENOMEM;
        h->lists = l;
        copy = calloc(n, sizeof(*copy));
        if (!copy)
                return -ENOMEM;
        memcpy(copy, v, n * sizeof(*copy));
        h->lists[h->n++] = (struct tm_hint_list) { .v = copy, .n = n };
        return 0;
}

int tm_hints_add_any(struct tm_hints *h) {
        return push(h, &(struct tm_hint) { .preferred = true }, 1);
}

int tm_hints_add(struct tm_hints *h, const struct tm_hint *v, size_t n) {
        if (n == 0)
                return push(h, &(struct tm_hint) { .preferred = false }, 1);
        return push(h, v, n);
}

void tm_hints_done(struct tm_hints *h) {
        if (!h)
                return;
        for (size_t i = 0; i < h->n; i++)
                free(h->lists[i].v);
        free(h->lists);
        *h = (struct tm_hints) {};
}

/* ---------------------------------------------------------------- masks */

static void iterate(const int *nodes, size_t n, size_t size, uint64_t accum, size_t have,
                    void (*cb)(uint64_t mask, void *userdata), void *userdata) {
        if (have == size) {
                cb(accum, userdata);
                return;
        }
        for (size_t i = 0; i < n; i++)
                iterate(nodes + i + 1, n - i - 1, size, accum | (UINT64_C(1) << nodes[i]), have + 1, cb, userdata);
}

void tm_iterate_masks(const int *nodes, size_t n, void (*cb)(uint64_t mask, void *userdata), void *userdata) {
        for (size_t size = 1; size <= n; size++)
                iterate(nodes, n, size, 0, 0, cb, userdata);
}

const char *tm_mask_format(uint64_t m, char *buf, size_t size) {
        size_t len = 0;

        assert(size > 0);
        buf[0] = 0;
        for (int i = 0; i < 64 && len < size; i++) {
                int j = i;
                if (!((m >> i) & 1))
                        continue;
                while (j + 1 < 64 && ((m >> (j + 1)) & 1))
                        j++;
                len += (size_t) snprintf(buf + len, size - len, j > i ? "%s%d-%d" : "%s%d", len ? "," : "", i, j);
                i = j;
        }
        return buf;
}

/* ---------------------------------------------------------------- configuration */

int tm_parse_policy(const char *s, enum tm_policy *ret, struct ck_error **ret_error) {
        if (isempty(s) || streq(s, "none"))
                *ret = TM_POLICY_NONE;
        else if (streq(s, "best-effort"))
                *ret = TM_POLICY_BEST_EFFORT;
        else if (streq(s, "restricted"))
                *ret = TM_POLICY_RESTRICTED;
        else if (streq(s, "single-numa-node"))
                *ret = TM_POLICY_SINGLE_NUMA_NODE;
        else
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: topologyManagerPolicy (--topology-manager-policy) \"%s\" "
                                    "must be one of: [\"none\" \"best-effort\" \"restricted\" \"single-numa-node\"]",
                                    s);
        return 0;
}

int tm_parse_scope(const char *s, enum tm_scope *ret, struct ck_error **ret_error) {
        if (isempty(s) || streq(s, "container"))
                *ret = TM_SCOPE_CONTAINER;
        else if (streq(s, "pod"))
                *ret = TM_SCOPE_POD;
        else
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: topologyManagerScope (--topology-manager-scope) \"%s\" "
                                    "must be one of: \"container\", or \"pod\"",
                                    s);
        return 0;
}

int tm_parse_options(char *const *names, char *const *values, struct tm_options *ret, struct ck_error **ret_error) {
        struct tm_options o = { .max_allowable_numa_nodes = TM_DEFAULT_MAX_ALLOWABLE_NUMA_NODES };

        for (size_t i = 0; names && names[i]; i++) {
                const char *name = names[i], *value = values[i];
                if (streq(name, "prefer-closest-numa-nodes")) {
                        if (parse_bool(value, &o.prefer_closest_numa) < 0)
                                return ck_error_set(ret_error, -EINVAL,
                                                    "bad value for option \"%s\": strconv.ParseBool: parsing \"%s\": "
                                                    "invalid syntax",
                                                    name, value);
                } else if (streq(name, "max-allowable-numa-nodes")) {
                        char *end = NULL;
                        long v;
                        errno = 0;
                        v = strtol(value, &end, 10);
                        if (errno != 0 || isempty(value) || *end || v < INT32_MIN || v > INT32_MAX)
                                return ck_error_set(ret_error, -EINVAL,
                                                    "unable to convert policy option to integer \"%s\": "
                                                    "strconv.Atoi: parsing \"%s\": invalid syntax",
                                                    name, value);
                        if (v < TM_DEFAULT_MAX_ALLOWABLE_NUMA_NODES)
                                return ck_error_set(ret_error, -EINVAL,
                                                    "the minimum value of \"%s\" should not be less than %d", name,
                                                    TM_DEFAULT_MAX_ALLOWABLE_NUMA_NODES);
                        if (v > TM_DEFAULT_MAX_ALLOWABLE_NUMA_NODES)
                                log_warning("topology manager: the value of max-allowable-numa-nodes (%ld) is more "
                                            "than the default recommended value %d",
                                            v, TM_DEFAULT_MAX_ALLOWABLE_NUMA_NODES);
                        o.max_allowable_numa_nodes = (int) v;
                } else
                        return ck_error_set(ret_error, -EINVAL, "unknown Topology Manager Policy option: \"%s\"", name);
        }
        *ret = o;
        return 0;
}

static int cmp_int(const void *a, const void *b) {
        return *(const int *) a - *(const int *) b;
}

int tm_numa_discover(const char *sysfs_root, struct tm_numa *ret, struct ck_error **ret_error) {
        _cleanup_free_ char *dir = NULL;
        struct tm_numa n = {};
        DIR *d;
        struct dirent *de;

        if (asprintf(&dir, "%s/devices/system/node", sysfs_root ?: "/sys") < 0)
                return -ENOMEM;
        d = opendir(dir);
        if (d) {
                while ((de = readdir(d))) {
                        char *end;
                        long id;
                        if (!startswith(de->d_name, "node") || !de->d_name[4])
                                continue;
                        id = strtol(de->d_name + 4, &end, 10);
                        if (*end || id < 0)
                                continue;
                        if (id >= TM_MAX_NUMA || n.n >= TM_MAX_NUMA) {
                                closedir(d);
                                return ck_error_set(ret_error, -EOPNOTSUPP,
                                                    "%s: NUMA node %ld: ids of %d and more "
                                                    "are not supported",
                                                    dir, id, TM_MAX_NUMA);
                        }
                        n.nodes[n.n++] = (int) id;
                }
                closedir(d);
        }
        if (n.n == 0) {
                n.nodes[0] = 0;
                n.n = 1;
        }
        qsort(n.nodes, n.n, sizeof(int), cmp_int);
        n.has_distances = true;
        for (size_t i = 0; i < n.n; i++) {
                _cleanup_free_ char *path = NULL, *text = NULL;
                char *p, *end;
                size_t j = 0;

                if (asprintf(&path, "%s/node%d/distance", dir, n.nodes[i]) < 0)
                        return -ENOMEM;
                if (read_full_file(path, 4096, &text, NULL) < 0) {
                        n.has_distances = false;
                        continue;
                }
                /* the distances to every node, in the order of the node ids (the kernel's) */
                for (p = text; j < n.n; j++, p = end) {
                        unsigned long long v = strtoull(p, &end, 10);
                        if (end == p)
                                break;
                        n.distances[i][j] = v;
                }
                if (j < n.n)
                        n.has_distances = false;
        }
        *ret = n;
        return 0;
}

int tm_init(struct topologymanager *m, const struct tm_config *cfg, const struct tm_numa *numa,
            struct ck_error **ret_error) {
        int r;

        *m = (struct topologymanager) { .opts.max_allowable_numa_nodes = TM_DEFAULT_MAX_ALLOWABLE_NUMA_NODES };
        r = tm_parse_policy(cfg->policy, &m->policy, ret_error);
        if (r < 0)
                return r;
        r = tm_parse_scope(cfg->scope, &m->scope, ret_error);
        if (r < 0)
                return r;
        m->numa = *numa;
        if (m->policy == TM_POLICY_NONE)
                return 0; /* upstream's none policy reads neither its options nor the topology */
        r = tm_parse_options(cfg->option_names, cfg->option_values, &m->opts, ret_error);
        if (r < 0)
                return r;
        if (m->opts.prefer_closest_numa && !numa->has_distances)
                return ck_error_set(ret_error, -EINVAL,
                                    "cannot discover NUMA topology: error getting NUMA distances from cadvisor");
        if (numa->n > (size_t) m->opts.max_allowable_numa_nodes)
                return ck_error_set(ret_error, -EOPNOTSUPP, "unsupported on machines with more than %d NUMA Nodes",
                                    m->opts.max_allowable_numa_nodes);
        return 0;
}

/* ---------------------------------------------------------------- merge */

static double average_distance(const struct tm_numa *n, uint64_t m) {
        double sum = 0, count = 0;
        for (size_t i = 0; i < n->n; i++)
                for (size_t j = 0; j < n->n; j++)
                        if ((m >> n->nodes[i] & 1) && (m >> n->nodes[j] & 1)) {
                                sum += (double) n->distances[i][j];
                                count++;
                        }
        return count > 0 ? sum / count : 0;
}

struct merger {
        const struct topologymanager *m;
        const struct tm_hint_list *lists;
        size_t n;
        int best_non_preferred;
        uint64_t def;
        bool have_best;
        struct tm_hint best;
        const struct tm_hint **accum;
};

/* CompareNUMAAffinityMasks: true when the candidate wins */
static bool masks_candidate_wins(const struct merger *g, const struct tm_hint *cur, const struct tm_hint *cand) {
        uint64_t a = cur->affinity, b = cand->affinity, best;

        if (a == b)
                return false;
        if (g->m->policy != TM_POLICY_SINGLE_NUMA_NODE && g->m->opts.prefer_closest_numa) {
                if (tm_count(a) != tm_count(b))
                        best = tm_narrower(a, b) ? a : b;
                else {
                        double da = average_distance(&g->m->numa, a), db = average_distance(&g->m->numa, b);
                        best = da == db ? (a < b ? a : b) : da < db ? a : b;
                }
        } else
                best = tm_narrower(a, b) ? a : b;
        return best != a;
}

static bool candidate_wins(const struct merger *g, const struct tm_hint *cur, const struct tm_hint *cand) {
        int cc = tm_count(cur->affinity), nc = tm_count(cand->affinity), best = g->best_non_preferred;

        if (nc == 0)
                return false;
        if (cur->preferred != cand->preferred)
                return cand->preferred;
        if (cur->preferred)
                return masks_candidate_wins(g, cur, cand);
        /* both not preferred: the narrowest that still satisfies the resource asking for the most nodes */
        if (cc > best)
                return masks_candidate_wins(g, cur, cand);
        if (cc == best)
                return nc == best && masks_candidate_wins(g, cur, cand);
        if (nc > best)
                return false;
        if (nc == best)
                return true;
        if (nc != cc)
                return nc > cc;
        return masks_candidate_wins(g, cur, cand);
}

static void permute(struct merger *g, size_t i) {
        if (i == g->n) {
                struct tm_hint merged = { .affinity = g->def, .has_affinity = true, .preferred = true };
                bool first = true;
                uint64_t first_mask = 0;

                for (size_t k = 0; k < g->n; k++) {
                        const struct tm_hint *h = g->accum[k];
                        if (h->has_affinity) {
                                if (first)
                                        first_mask = h->affinity, first = false;
                                else if (h->affinity != first_mask)
                                        merged.preferred = false;
                                merged.affinity &= h->affinity;
                        }
                        if (!h->preferred)
                                merged.preferred = false;
                }
                if (!g->have_best) {
                        if (tm_count(merged.affinity) > 0) {
                                g->best = merged;
                                g->have_best = true;
                        }
                } else if (candidate_wins(g, &g->best, &merged))
                        g->best = merged;
                return;
        }
        for (size_t j = 0; j < g->lists[i].n; j++) {
                g->accum[i] = &g->lists[i].v[j];
                permute(g, i + 1);
        }
}

/* maxOfMinAffinityCounts */
static int max_of_min_counts(const struct tm_hint_list *lists, size_t n) {
        int max = 0;
        for (size_t i = 0; i < n; i++) {
                const struct tm_hint *narrow = NULL;
                for (size_t j = 0; j < lists[i].n; j++) {
                        const struct tm_hint *h = &lists[i].v[j];
                        if (!h->has_affinity)
                                continue;
                        if (!narrow || tm_narrower(h->affinity, narrow->affinity))
                                narrow = h;
                }
                if (narrow && tm_count(narrow->affinity) > max)
                        max = tm_count(narrow->affinity);
        }
        return max;
}

static struct tm_hint merge_lists(const struct topologymanager *m, const struct tm_hint_list *lists, size_t n) {
        _cleanup_free_ const struct tm_hint **accum = calloc(n + 1, sizeof(*accum));
        struct merger g = {
                .m = m,
                .lists = lists,
                .n = n,
                .best_non_preferred = max_of_min_counts(lists, n),
                .def = tm_default_affinity(&m->numa),
                .accum = accum,
        };

        if (!accum) /* out of memory: the default affinity, not preferred (refused by the strict policies) */
                return (struct tm_hint) { .affinity = g.def, .has_affinity = true };
        permute(&g, 0);
        if (!g.have_best)
                return (struct tm_hint) { .affinity = g.def, .has_affinity = true, .preferred = false };
        return g.best;
}

bool tm_merge(const struct topologymanager *m, const struct tm_hints *h, struct tm_hint *ret) {
        struct tm_hint best;

        switch (m->policy) {
        case TM_POLICY_NONE:
                *ret = (struct tm_hint) {};
                return true;
        case TM_POLICY_BEST_EFFORT:
                *ret = merge_lists(m, h->lists, h->n);
                return true;
        case TM_POLICY_RESTRICTED:
                *ret = merge_lists(m, h->lists, h->n);
                return ret->preferred;
        case TM_POLICY_SINGLE_NUMA_NODE: {
                /* filterSingleNumaHints: only preferred hints of "any" or of one node */
                _cleanup_free_ struct tm_hint_list *lists = calloc(h->n + 1, sizeof(*lists));
                _cleanup_free_ struct tm_hint *pool = NULL;
                size_t total = 0, used = 0;

                for (size_t i = 0; i < h->n; i++)
                        total += h->lists[i].n;
                pool = calloc(total + 1, sizeof(*pool));
                if (!lists || !pool) {
                        *ret = (struct tm_hint) {};
                        return false;
                }
                for (size_t i = 0; i < h->n; i++) {
                        lists[i].v = pool + used;
                        for (size_t j = 0; j < h->lists[i].n; j++) {
                                const struct tm_hint *x = &h->lists[i].v[j];
                                if (x->preferred && (!x->has_affinity || tm_count(x->affinity) == 1))
                                        lists[i].v[lists[i].n++] = *x;
                        }
                        used += lists[i].n;
                }
                best = merge_lists(m, lists, h->n);
                if (best.affinity == tm_default_affinity(&m->numa))
                        best = (struct tm_hint) { .preferred = best.preferred };
                *ret = best;
                return best.preferred;
        }
        }
        return false;
}

/* ---------------------------------------------------------------- admission */

static int refuse(struct ck_error **ret_error) {
        return ck_error_set_reason(ret_error, -ENOSPC, TM_ERROR_REASON, "%s", TM_ERROR_MESSAGE);
}

static int allocate_all(const struct tm_provider *providers, size_t n, const struct pod *p, const struct container *c,
                        const struct tm_hint *affinity, struct ck_error **ret_error) {
        for (size_t i = 0; i < n; i++) {
                int r = providers[i].allocate(providers[i].userdata, p, c, affinity, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const struct container *nth_container(const struct pod *p, size_t i) {
        return i < p->spec.n_init_containers ? &p->spec.init_containers[i]
                                             : &p->spec.containers[i - p->spec.n_init_containers];
}

int tm_admit(const struct topologymanager *m, const struct pod *p, const struct tm_provider *providers, size_t n,
             struct ck_error **ret_error) {
        size_t nc = p->spec.n_init_containers + p->spec.n_containers;
        struct tm_hint best = {};
        char buf[256];
        int r;

        if (m->policy == TM_POLICY_NONE) {
                for (size_t i = 0; i < nc; i++) {
                        r = allocate_all(providers, n, p, nth_container(p, i), &best, ret_error);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        if (m->scope == TM_SCOPE_POD) {
                _cleanup_(tm_hints_done) struct tm_hints h = {};
                for (size_t i = 0; i < n; i++) {
                        r = providers[i].pod_hints(providers[i].userdata, p, &h);
                        if (r < 0)
                                return r;
                }
                if (!tm_merge(m, &h, &best)) {
                        log_info("topology manager: pod %s/%s: no NUMA affinity satisfies its resources under the %s "
                                 "scope",
                                 p->namespace_, p->name, "pod");
                        return refuse(ret_error);
                }
                log_v(2, "topology manager: pod %s/%s: affinity %s%s", p->namespace_, p->name,
                      best.has_affinity ? tm_mask_format(best.affinity, buf, sizeof(buf)) : "any",
                      best.preferred ? " (preferred)" : "");
        }
        for (size_t i = 0; i < nc; i++) {
                const struct container *c = nth_container(p, i);
                if (m->scope == TM_SCOPE_CONTAINER) {
                        _cleanup_(tm_hints_done) struct tm_hints h = {};
                        for (size_t k = 0; k < n; k++) {
                                r = providers[k].container_hints(providers[k].userdata, p, c, &h);
                                if (r < 0)
                                        return r;
                        }
                        if (!tm_merge(m, &h, &best)) {
                                log_info("topology manager: pod %s/%s container %s: no NUMA affinity satisfies its "
                                         "resources",
                                         p->namespace_, p->name, c->name);
                                return refuse(ret_error);
                        }
                        log_v(2, "topology manager: pod %s/%s container %s: affinity %s%s", p->namespace_, p->name,
                              c->name, best.has_affinity ? tm_mask_format(best.affinity, buf, sizeof(buf)) : "any",
                              best.preferred ? " (preferred)" : "");
                }
                r = allocate_all(providers, n, p, c, &best, ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

struct dev_gen {
        const int64_t *all, *usable;
        size_t n_all, n_usable;
        int request, min_size;
        struct tm_hint v[256];
        size_t n;
};

static int count_in(const int64_t *v, size_t n, uint64_t mask) {
        int c = 0;
        for (size_t i = 0; i < n; i++)
                c += v[i] >= 0 && v[i] < TM_MAX_NUMA && (mask >> v[i] & 1);
        return c;
}

static void dev_mask(uint64_t mask, void *userdata) {
        struct dev_gen *g = userdata;

        if (count_in(g->all, g->n_all, mask) >= g->request && tm_count(mask) < g->min_size)
                g->min_size = tm_count(mask);
        if (count_in(g->usable, g->n_usable, mask) < g->request || g->n >= ELEMENTSOF(g->v))
                return;
        g->v[g->n++] = (struct tm_hint) { .affinity = mask, .has_affinity = true };
}

int tm_device_hints(const int64_t *all, size_t n_all, const int64_t *usable, size_t n_usable, int request,
                    struct tm_hints *acc) {
        _cleanup_free_ struct dev_gen *g = calloc(1, sizeof(*g));
        int nodes[TM_MAX_NUMA];
        size_t n = 0;

        if (!g)
                return -ENOMEM;
        /* the resource's NUMA nodes */
        for (size_t j = 0; j < n_all + n_usable; j++) {
                int64_t d = j < n_all ? all[j] : usable[j - n_all];
                bool dup = false;
                if (d < 0 || d >= TM_MAX_NUMA)
                        continue;
                for (size_t q = 0; q < n; q++)
                        dup = dup || nodes[q] == (int) d;
                if (!dup)
                        nodes[n++] = (int) d;
        }
        if (n == 0)
                return tm_hints_add_any(acc);
        qsort(nodes, n, sizeof(int), cmp_int);
        *g = (struct dev_gen) { .all = all,
                                .usable = usable,
                                .n_all = n_all,
                                .n_usable = n_usable,
                                .request = request,
                                .min_size = (int) n };
        tm_iterate_masks(nodes, n, dev_mask, g);
        for (size_t h = 0; h < g->n; h++)
                g->v[h].preferred = tm_count(g->v[h].affinity) == g->min_size;
        return tm_hints_add(acc, g->v, g->n);
}
