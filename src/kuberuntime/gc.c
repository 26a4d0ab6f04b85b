/* SPDX-License-Identifier: Apache-2.0 */
/* Which dead containers and sandboxes go (see gc.h). */
#include "kuberuntime/gc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string.h"
#include "basic/time.h"

/* an evict unit: the evictable containers of one (pod UID, container name), newest first */
struct unit {
        const char *uid, *name;
        const struct kr_gc_container **c;
        size_t n;
};

struct selection {
        const struct kr_gc_container **out;
        size_t n_out;
};

static int cmp_newest_first(const void *a, const void *b) {
        const struct kr_gc_container *x = *(const struct kr_gc_container *const *) a;
        const struct kr_gc_container *y = *(const struct kr_gc_container *const *) b;
        if (x->created_nsec != y->created_nsec)
                return x->created_nsec > y->created_nsec ? -1 : 1;
        return strcmp(x->id, y->id);
}

/* removeOldestN: the oldest `remove` of the unit go (from the oldest), the rest stays */
static void remove_oldest(struct selection *sel, struct unit *u, size_t remove) {
        size_t keep;

        if (remove > u->n)
                remove = u->n;
        keep = u->n - remove;
        for (size_t i = u->n; i > keep; i--)
                sel->out[sel->n_out++] = u->c[i - 1];
        u->n = keep;
}

static size_t count_all(const struct unit *units, size_t n) {
        size_t sum = 0;
        for (size_t i = 0; i < n; i++)
                sum += units[i].n;
        return sum;
}

int kr_gc_select_containers(const struct kr_gc_policy *policy, const struct kr_gc_container *containers, size_t n,
                            const struct kr_gc_pods *pods, bool all_sources_ready, bool evict_terminated_pods,
                            uint64_t now_realtime_usec, const struct kr_gc_container ***ret, size_t *ret_n) {
        _cleanup_free_ struct unit *units = NULL;
        _cleanup_free_ const struct kr_gc_container **slots = NULL;
        struct selection sel = {};
        int64_t newest = (int64_t) (now_realtime_usec - MIN(now_realtime_usec, policy->min_age_usec)) * 1000;
        size_t n_units = 0, used = 0;

        units = calloc(n + 1, sizeof(*units));
        slots = calloc(n + 1, sizeof(*slots));
        sel.out = calloc(n + 1, sizeof(*sel.out));
        if (!units || !slots || !sel.out) {
                free(sel.out);
                return -ENOMEM;
        }
        /* evictable: not running, created MinAge ago or earlier; grouped (slots are handed out by unit below) */
        for (size_t i = 0; i < n; i++) {
                const struct kr_gc_container *c = &containers[i];
                size_t u;

                if (c->running || c->created_nsec > newest || !c->pod_uid || !c->name)
                        continue;
                for (u = 0; u < n_units; u++)
                        if (streq(units[u].uid, c->pod_uid) && streq(units[u].name, c->name))
                                break;
                if (u == n_units)
                        units[n_units++] = (struct unit) { .uid = c->pod_uid, .name = c->name };
                units[u].n++;
        }
        for (size_t u = 0; u < n_units; u++) {
                units[u].c = slots + used;
                used += units[u].n;
                units[u].n = 0;
        }
        for (size_t i = 0; i < n; i++) {
                const struct kr_gc_container *c = &containers[i];
                if (c->running || c->created_nsec > newest || !c->pod_uid || !c->name)
                        continue;
                for (size_t u = 0; u < n_units; u++)
                        if (streq(units[u].uid, c->pod_uid) && streq(units[u].name, c->name)) {
                                units[u].c[units[u].n++] = c;
                                break;
                        }
        }
        for (size_t u = 0; u < n_units; u++)
                qsort(units[u].c, units[u].n, sizeof(*units[u].c), cmp_newest_first);

        /* the pods that are gone lose everything */
        if (all_sources_ready)
                for (size_t u = 0; u < n_units; u++)
                        if (pods->deleted(units[u].uid, pods->userdata) ||
                            (evict_terminated_pods && pods->terminated(units[u].uid, pods->userdata)))
                                remove_oldest(&sel, &units[u], units[u].n);

        if (policy->max_per_pod_container >= 0)
                for (size_t u = 0; u < n_units; u++)
                        if (units[u].n > (size_t) policy->max_per_pod_container)
                                remove_oldest(&sel, &units[u], units[u].n - (size_t) policy->max_per_pod_container);

        if (policy->max_containers >= 0 && count_all(units, n_units) > (size_t) policy->max_containers) {
                size_t live_units = 0, per_unit, left;

                for (size_t u = 0; u < n_units; u++)
                        if (units[u].n > 0)
                                live_units++;
                /* an equal share per unit (upstream divides by the number of units, at least 1) */
                per_unit = live_units ? (size_t) policy->max_containers / live_units : 0;
                if (per_unit < 1)
                        per_unit = 1;
                for (size_t u = 0; u < n_units; u++)
                        if (units[u].n > per_unit)
                                remove_oldest(&sel, &units[u], units[u].n - per_unit);
                left = count_all(units, n_units);
                if (left > (size_t) policy->max_containers) {
                        /* then the oldest anywhere */
                        _cleanup_free_ const struct kr_gc_container **flat = calloc(left + 1, sizeof(*flat));
                        struct unit all = { .c = flat };
                        if (!flat) {
                                free(sel.out);
                                return -ENOMEM;
                        }
                        for (size_t u = 0; u < n_units; u++)
                                for (size_t i = 0; i < units[u].n; i++)
                                        flat[all.n++] = units[u].c[i];
                        qsort(flat, all.n, sizeof(*flat), cmp_newest_first);
                        remove_oldest(&sel, &all, left - (size_t) policy->max_containers);
                }
        }
        *ret = sel.out;
        *ret_n = sel.n_out;
        return 0;
}

static int cmp_sandbox_newest_first(const void *a, const void *b) {
        const struct kr_gc_sandbox *x = *(const struct kr_gc_sandbox *const *) a;
        const struct kr_gc_sandbox *y = *(const struct kr_gc_sandbox *const *) b;
        if (x->created_nsec != y->created_nsec)
                return x->created_nsec > y->created_nsec ? -1 : 1;
        return strcmp(x->id, y->id);
}

/* by pod UID, then newest first: a pod's sandboxes side by side */
static int cmp_sandbox_by_pod(const void *a, const void *b) {
        const struct kr_gc_sandbox *x = *(const struct kr_gc_sandbox *const *) a;
        const struct kr_gc_sandbox *y = *(const struct kr_gc_sandbox *const *) b;
        int c = strcmp(x->pod_uid, y->pod_uid);
        return c != 0 ? c : cmp_sandbox_newest_first(a, b);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

/* Sorting (O(n log n)) rather than a search of every sandbox for each pod and of every container for each
 * candidate: with 1,000 pods the pairwise searches were about a million string comparisons per pass. */
int kr_gc_select_sandboxes(const struct kr_gc_sandbox *sandboxes, size_t n, const struct kr_gc_container *containers,
                           size_t n_containers, const struct kr_gc_pods *pods, bool evict_terminated_pods,
                           const struct kr_gc_sandbox ***ret, size_t *ret_n) {
        _cleanup_free_ const struct kr_gc_sandbox **sorted = calloc(n + 1, sizeof(*sorted));
        _cleanup_free_ const char **in_use = calloc(n_containers + 1, sizeof(*in_use));
        const struct kr_gc_sandbox **out = calloc(n + 1, sizeof(*out));
        size_t n_out = 0, n_sorted = 0, n_in_use = 0;

        if (!sorted || !in_use || !out) {
                free(out);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (sandboxes[i].pod_uid)
                        sorted[n_sorted++] = &sandboxes[i];
        qsort(sorted, n_sorted, sizeof(*sorted), cmp_sandbox_by_pod);
        for (size_t c = 0; c < n_containers; c++)
                if (containers[c].sandbox_id)
                        in_use[n_in_use++] = containers[c].sandbox_id;
        qsort(in_use, n_in_use, sizeof(*in_use), cmp_str);

        for (size_t i = 0, g; i < n_sorted; i += g) {
                const char *uid = sorted[i]->pod_uid;
                size_t keep;
                bool gone;

                for (g = 1; i + g < n_sorted && streq(sorted[i + g]->pod_uid, uid); g++)
                        ;
                gone = pods->deleted(uid, pods->userdata) ||
                       (evict_terminated_pods && pods->terminated(uid, pods->userdata));
                /* all of a pod that is gone, else all but the newest; only inactive ones (not ready, no containers) */
                keep = gone ? 0 : 1;
                for (size_t k = keep; k < g; k++) {
                        const struct kr_gc_sandbox *s = sorted[i + k];
                        if (s->ready || (n_in_use > 0 && bsearch(&s->id, in_use, n_in_use, sizeof(*in_use), cmp_str)))
                                continue;
                        out[n_out++] = s;
                }
        }
        *ret = out;
        *ret_n = n_out;
        return 0;
}
