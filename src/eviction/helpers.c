/* SPDX-License-Identifier: Apache-2.0 */
/* Eviction signals, threshold parsing and the eviction manager's pure decisions (upstream
 * pkg/kubelet/eviction/helpers.go, api/types.go). */
#include "eviction/helpers.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apis/pod_volumes.h"
#include "apis/resource.h"
#include "basic/duration.h"
#include "basic/error.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/time.h"
#include "config/config.h"
#include "kuberuntime/resources.h"

/* ---------------------------------------------------------------- signals */

static const char *const signal_names[_EVICTION_SIGNAL_MAX] = {
        [EVICTION_SIGNAL_MEMORY_AVAILABLE] = "memory.available",
        [EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE] = "allocatableMemory.available",
        [EVICTION_SIGNAL_NODEFS_AVAILABLE] = "nodefs.available",
        [EVICTION_SIGNAL_NODEFS_INODES_FREE] = "nodefs.inodesFree",
        [EVICTION_SIGNAL_IMAGEFS_AVAILABLE] = "imagefs.available",
        [EVICTION_SIGNAL_IMAGEFS_INODES_FREE] = "imagefs.inodesFree",
        [EVICTION_SIGNAL_PID_AVAILABLE] = "pid.available",
};

static const char *eviction_signal_to_string(enum eviction_signal s) {
        return (unsigned) s < _EVICTION_SIGNAL_MAX ? signal_names[s] : "unknown";
}

/* -EINVAL for a name that is not a signal */
static int eviction_signal_from_string(const char *s, enum eviction_signal *ret) {
        for (unsigned i = 0; i < _EVICTION_SIGNAL_MAX; i++)
                if (streq_ptr(s, signal_names[i])) {
                        *ret = (enum eviction_signal) i;
                        return 0;
                }
        return -EINVAL;
}

enum eviction_resource eviction_signal_resource(enum eviction_signal s) {
        switch (s) {
        case EVICTION_SIGNAL_MEMORY_AVAILABLE:
        case EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE:
                return EVICTION_RESOURCE_MEMORY;
        case EVICTION_SIGNAL_NODEFS_AVAILABLE:
        case EVICTION_SIGNAL_IMAGEFS_AVAILABLE:
                return EVICTION_RESOURCE_EPHEMERAL_STORAGE;
        case EVICTION_SIGNAL_NODEFS_INODES_FREE:
        case EVICTION_SIGNAL_IMAGEFS_INODES_FREE:
                return EVICTION_RESOURCE_INODES;
        case EVICTION_SIGNAL_PID_AVAILABLE:
        default:
                return EVICTION_RESOURCE_PIDS;
        }
}

const char *eviction_resource_to_string(enum eviction_resource r) {
        static const char *const names[] = { [EVICTION_RESOURCE_MEMORY] = "memory",
                                             [EVICTION_RESOURCE_EPHEMERAL_STORAGE] = "ephemeral-storage",
                                             [EVICTION_RESOURCE_INODES] = "inodes",
                                             [EVICTION_RESOURCE_PIDS] = "pids" };
        return (unsigned) r < ELEMENTSOF(names) ? names[r] : "unknown";
}

static unsigned eviction_signal_condition(enum eviction_signal s) {
        switch (eviction_signal_resource(s)) {
        case EVICTION_RESOURCE_MEMORY:
                return EVICTION_MEMORY_PRESSURE;
        case EVICTION_RESOURCE_EPHEMERAL_STORAGE:
        case EVICTION_RESOURCE_INODES:
                return EVICTION_DISK_PRESSURE;
        case EVICTION_RESOURCE_PIDS:
        default:
                return EVICTION_PID_PRESSURE;
        }
}

/* Memory and disk amounts are bytes (BinarySI); inodes and pids are counts (DecimalSI). */
static bool eviction_signal_is_bytes(enum eviction_signal s) {
        enum eviction_resource r = eviction_signal_resource(s);
        return r == EVICTION_RESOURCE_MEMORY || r == EVICTION_RESOURCE_EPHEMERAL_STORAGE;
}

int64_t eviction_value_quantity(const struct eviction_value *v, int64_t capacity) {
        if (!v->is_percentage)
                return v->quantity;
        return (int64_t) ((double) capacity * (double) v->percentage);
}

/* ---------------------------------------------------------------- parsing (ParseThresholdConfig) */

/* "k=v,k2=v2" → pairs; a later key replaces an earlier one */
struct kv {
        char *key, *value;
};

static void kv_free(struct kv *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(l[i].key);
                free(l[i].value);
        }
        free(l);
}

static int split_map(const char *s, struct kv **ret, size_t *ret_n) {
        _cleanup_free_ char *copy = strdup(strempty(s));
        struct kv *l = NULL;
        size_t n = 0;
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(item, '=');
                size_t i;
                struct kv *nl;

                if (!eq || eq == item)
                        continue; /* options.c only stores well-formed pairs */
                *eq = '\0';
                for (i = 0; i < n; i++)
                        if (streq(l[i].key, item))
                                break;
                if (i < n) {
                        if (free_and_strdup(&l[i].value, eq + 1) < 0)
                                goto oom;
                        continue;
                }
                nl = reallocarray(l, n + 1, sizeof(*l));
                if (!nl)
                        goto oom;
                l = nl;
                l[n].key = strdup(item);
                l[n].value = strdup(eq + 1);
                n++;
                if (!l[n - 1].key || !l[n - 1].value)
                        goto oom;
        }
        *ret = l;
        *ret_n = n;
        return 0;
oom:
        kv_free(l, n);
        return -ENOMEM;
}

static void threshold_value_done(struct eviction_value *v) {
        free(v->quantity_str);
        *v = (struct eviction_value) {};
}

/* strconv.ParseFloat(strings.TrimRight(s, "%"), 32) / 100 */
static int parse_percentage(const char *s, float *ret, struct ck_error **ret_error) {
        _cleanup_free_ char *num = strdup(s);
        char *end;
        double d;
        size_t len;

        if (!num)
                return -ENOMEM;
        len = strlen(num);
        while (len > 0 && num[len - 1] == '%')
                num[--len] = '\0';
        errno = 0;
        d = strtod(num, &end);
        if (len == 0 || *end != '\0' || isspace((unsigned char) num[0]) || strpbrk(num, "xXpPnN"))
                return ck_error_set(ret_error, -EINVAL, "strconv.ParseFloat: parsing \"%s\": invalid syntax", num);
        if (errno == ERANGE || isinf((float) d))
                return ck_error_set(ret_error, -EINVAL, "strconv.ParseFloat: parsing \"%s\": value out of range", num);
        *ret = (float) d / 100.0f;
        return 0;
}

static int parse_quantity_value(const char *s, struct eviction_value *ret, struct ck_error **ret_error) {
        struct quantity q;
        int r;

        r = quantity_parse(s, &q);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "quantities must match the regular expression "
                                    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
        *ret = (struct eviction_value) { .quantity = q.value, .quantity_str = quantity_canonical(&q) };
        quantity_done(&q);
        return ret->quantity_str ? 0 : -ENOMEM;
}

/* parseThresholdStatement: 0 with *ret set, 1 when the statement is ignored ("0%", "100%") */
static int parse_threshold(const char *key, const char *val, struct eviction_threshold *ret,
                           struct ck_error **ret_error) {
        enum eviction_signal signal;
        struct eviction_value v = {};
        int r;

        if (eviction_signal_from_string(key, &signal) < 0)
                return ck_error_set(ret_error, -EINVAL, "unsupported eviction signal %s", key);
        if (endswith(val, "%")) {
                if (streq(val, "0%") || streq(val, "100%"))
                        return 1;
                r = parse_percentage(val, &v.percentage, ret_error);
                if (r < 0)
                        return r;
                if (v.percentage < 0)
                        return ck_error_set(ret_error, -EINVAL, "eviction percentage threshold %s must be >= 0%%: %s",
                                            key, val);
                if (v.percentage > 100)
                        return ck_error_set(ret_error, -EINVAL, "eviction percentage threshold %s must be <= 100%%: %s",
                                            key, val);
                v.is_percentage = true;
        } else {
                r = parse_quantity_value(val, &v, ret_error);
                if (r < 0)
                        return r;
                if (v.quantity <= 0 || streq(v.quantity_str, "0") || v.quantity_str[0] == '-') {
                        r = ck_error_set(ret_error, -EINVAL, "eviction threshold %s must be positive: %s", key,
                                         v.quantity_str);
                        threshold_value_done(&v);
                        return r;
                }
        }
        *ret = (struct eviction_threshold) { .signal = signal, .value = v };
        return 0;
}

static int append_threshold(struct eviction_threshold **l, size_t *n, struct eviction_threshold *t) {
        struct eviction_threshold *nl;

        if (*n >= EVICTION_MAX_THRESHOLDS)
                return -E2BIG;
        nl = reallocarray(*l, *n + 1, sizeof(**l));
        if (!nl)
                return -ENOMEM;
        *l = nl;
        nl[(*n)++] = *t;
        *t = (struct eviction_threshold) {};
        return 0;
}

static int copy_value(const struct eviction_value *src, struct eviction_value *ret) {
        *ret = *src;
        ret->quantity_str = NULL;
        if (src->quantity_str && !(ret->quantity_str = strdup(src->quantity_str)))
                return -ENOMEM;
        return 0;
}

int eviction_parse_thresholds(const char *enforce_node_allocatable, const char *hard, const char *soft,
                              const char *soft_grace_period, const char *minimum_reclaim,
                              struct eviction_threshold **ret, size_t *ret_n, struct ck_error **ret_error) {
        struct kv *h = NULL, *s = NULL, *g = NULL, *m = NULL;
        size_t nh = 0, ns = 0, ng = 0, nm = 0, n = 0, n_hard;
        struct eviction_threshold *l = NULL, t = {};
        int r;

        r = split_map(hard, &h, &nh);
        if (r >= 0)
                r = split_map(soft, &s, &ns);
        if (r >= 0)
                r = split_map(soft_grace_period, &g, &ng);
        if (r >= 0)
                r = split_map(minimum_reclaim, &m, &nm);
        if (r < 0)
                goto finish;

        for (size_t i = 0; i < nh; i++) {
                r = parse_threshold(h[i].key, h[i].value, &t, ret_error);
                if (r < 0)
                        goto finish;
                if (r == 0 && (r = append_threshold(&l, &n, &t)) < 0)
                        goto finish;
        }
        n_hard = n;
        for (size_t i = 0; i < ns; i++) {
                r = parse_threshold(s[i].key, s[i].value, &t, ret_error);
                if (r < 0)
                        goto finish;
                if (r == 0 && (r = append_threshold(&l, &n, &t)) < 0)
                        goto finish;
        }
        /* the grace periods: every signal must be valid; each soft threshold needs one */
        for (size_t i = 0; i < ng; i++) {
                enum eviction_signal sig;
                int64_t nsec;

                if (eviction_signal_from_string(g[i].key, &sig) < 0) {
                        r = ck_error_set(ret_error, -EINVAL, "unsupported eviction signal %s", g[i].key);
                        goto finish;
                }
                r = go_duration_parse(g[i].value, &nsec, ret_error);
                if (r < 0)
                        goto finish;
                if (nsec < 0) {
                        r = ck_error_set(ret_error, -EINVAL,
                                         "invalid eviction grace period specified: %s, must be a positive value",
                                         g[i].value);
                        goto finish;
                }
                for (size_t k = n_hard; k < n; k++)
                        if (l[k].signal == sig)
                                l[k].grace_period_usec = ((uint64_t) nsec + 999) / 1000;
        }
        for (size_t k = n_hard; k < n; k++) {
                bool found = false;
                for (size_t i = 0; i < ng && !found; i++)
                        found = streq(g[i].key, eviction_signal_to_string(l[k].signal));
                if (!found) {
                        r = ck_error_set(ret_error, -EINVAL,
                                         "grace period must be specified for the soft eviction threshold %s",
                                         eviction_signal_to_string(l[k].signal));
                        goto finish;
                }
        }
        /* minimum reclaims */
        for (size_t i = 0; i < nm; i++) {
                struct eviction_value v = {};
                enum eviction_signal sig;

                if (eviction_signal_from_string(m[i].key, &sig) < 0) {
                        r = ck_error_set(ret_error, -EINVAL, "unsupported eviction signal %s", m[i].key);
                        goto finish;
                }
                if (endswith(m[i].value, "%")) {
                        r = parse_percentage(m[i].value, &v.percentage, ret_error);
                        if (r < 0)
                                goto finish;
                        if (v.percentage <= 0) {
                                r = ck_error_set(ret_error, -EINVAL,
                                                 "eviction percentage minimum reclaim %s must be positive: %s",
                                                 m[i].key, m[i].value);
                                goto finish;
                        }
                        v.is_percentage = true;
                } else {
                        r = parse_quantity_value(m[i].value, &v, ret_error);
                        if (r < 0)
                                goto finish;
                        if (v.quantity_str[0] == '-') {
                                threshold_value_done(&v);
                                r = ck_error_set(ret_error, -EINVAL,
                                                 "negative eviction minimum reclaim specified for %s", m[i].key);
                                goto finish;
                        }
                }
                for (size_t k = 0; k < n; k++)
                        if (l[k].signal == sig) {
                                threshold_value_done(&l[k].min_reclaim);
                                r = copy_value(&v, &l[k].min_reclaim);
                                if (r < 0) {
                                        threshold_value_done(&v);
                                        goto finish;
                                }
                                l[k].has_min_reclaim = true;
                        }
                threshold_value_done(&v);
        }
        /* node allocatable enforced on pods: the hard memory thresholds also apply to the pods' cgroup */
        if (enforce_node_allocatable) {
                _cleanup_free_ char *copy = strdup(enforce_node_allocatable);
                char *save = NULL;
                bool pods = false;

                if (!copy) {
                        r = -ENOMEM;
                        goto finish;
                }
                for (char *tok = strtok_r(copy, ",", &save); tok && !pods; tok = strtok_r(NULL, ",", &save))
                        pods = streq(tok, "pods");
                for (size_t k = 0, end = n; pods && k < end; k++) {
                        if (l[k].signal != EVICTION_SIGNAL_MEMORY_AVAILABLE || l[k].grace_period_usec != 0)
                                continue;
                        t = (struct eviction_threshold) { .signal = EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE,
                                                          .has_min_reclaim = l[k].has_min_reclaim };
                        r = copy_value(&l[k].value, &t.value);
                        if (r >= 0 && l[k].has_min_reclaim)
                                r = copy_value(&l[k].min_reclaim, &t.min_reclaim);
                        if (r >= 0)
                                r = append_threshold(&l, &n, &t);
                        if (r < 0)
                                goto finish;
                }
        }
        *ret = TAKE_PTR(l);
        *ret_n = n;
        r = 0;
finish:
        threshold_value_done(&t.value);
        threshold_value_done(&t.min_reclaim);
        eviction_thresholds_free(l, n);
        kv_free(h, nh);
        kv_free(s, ns);
        kv_free(g, ng);
        kv_free(m, nm);
        if (r == -E2BIG)
                r = ck_error_set(ret_error, -EINVAL, "too many eviction thresholds");
        else if (r == -ENOMEM)
                (void) ck_error_set(ret_error, r, "out of memory");
        return r;
}

void eviction_thresholds_free(struct eviction_threshold *t, size_t n) {
        if (!t)
                return;
        for (size_t i = 0; i < n; i++) {
                threshold_value_done(&t[i].value);
                threshold_value_done(&t[i].min_reclaim);
        }
        free(t);
}

static char *value_format(const struct eviction_value *v) {
        char *s;
        if (v->is_percentage)
                return asprintf(&s, "%g%%", (double) v->percentage * 100) < 0 ? NULL : s;
        return strdup(strempty(v->quantity_str));
}

char *eviction_threshold_format(const struct eviction_threshold *t) {
        _cleanup_free_ char *v = value_format(&t->value);
        char d[GO_DURATION_MAX], *s;

        if (!v)
                return NULL;
        if (asprintf(&s, "threshold(signal=%s, value=%s, gracePeriod=%s)", eviction_signal_to_string(t->signal), v,
                     go_duration_format((int64_t) t->grace_period_usec * 1000, d, sizeof(d))) < 0)
                return NULL;
        return s;
}

/* ---------------------------------------------------------------- observations (makeSignalObservations) */

static void observe(struct eviction_observations *obs, enum eviction_signal s, uint64_t available, uint64_t capacity,
                    uint64_t at) {
        obs->s[s] = (struct eviction_observation) { .present = true,
                                                    .available = (int64_t) MIN(available, (uint64_t) INT64_MAX),
                                                    .capacity = (int64_t) MIN(capacity, (uint64_t) INT64_MAX),
                                                    .time_usec = at };
}

static void observe_memory(struct eviction_observations *obs, enum eviction_signal s, const struct stats_memory *mem,
                           uint64_t at) {
        if (mem && mem->present && mem->available_bytes.set && mem->working_set_bytes.set)
                observe(obs, s, mem->available_bytes.v, mem->available_bytes.v + mem->working_set_bytes.v, at);
}

static void observe_fs(struct eviction_observations *obs, enum eviction_signal bytes, enum eviction_signal inodes,
                       const struct stats_fs *fs, uint64_t at) {
        if (!fs->present || !fs->available_bytes.set || !fs->capacity_bytes.set)
                return;
        observe(obs, bytes, fs->available_bytes.v, fs->capacity_bytes.v, at);
        if (fs->inodes_free.set && fs->inodes.set)
                observe(obs, inodes, fs->inodes_free.v, fs->inodes.v, at);
}

static void fs_usage_from(const struct stats_fs *fs, struct eviction_fs_usage *ret) {
        if (!fs->present)
                return;
        ret->present = fs->used_bytes.set;
        ret->used_bytes = fs->used_bytes.v;
        ret->has_inodes = fs->inodes_used.set;
        ret->inodes_used = fs->inodes_used.v;
}

static void pod_stats_done(struct eviction_pod_stats *p) {
        for (size_t i = 0; i < p->n_containers; i++)
                free(p->containers[i].name);
        free(p->containers);
        for (size_t i = 0; i < p->n_volumes; i++)
                free(p->volumes[i].name);
        free(p->volumes);
        free(p->uid);
}

static int pod_stats_from(const struct stats_pod_summary *ps, struct eviction_pod_stats *p) {
        if (isempty(ps->uid))
                return 0; /* skipped by the caller */
        p->uid = strdup(ps->uid);
        if (!p->uid)
                return -ENOMEM;
        p->has_memory = ps->memory.present && ps->memory.working_set_bytes.set;
        p->working_set_bytes = p->has_memory ? ps->memory.working_set_bytes.v : 0;
        p->has_process_count = ps->process_count.set;
        p->process_count = ps->process_count.v;
        if (ps->n_containers > 0) {
                p->containers = calloc(ps->n_containers, sizeof(*p->containers));
                if (!p->containers)
                        return -ENOMEM;
                for (size_t i = 0; i < ps->n_containers; i++) {
                        const struct stats_container_summary *e = &ps->containers[i];
                        struct eviction_container_stats *c = &p->containers[p->n_containers];
                        if (!e->name)
                                continue;
                        c->name = strdup(e->name);
                        if (!c->name)
                                return -ENOMEM;
                        p->n_containers++;
                        c->has_memory = e->memory.present && e->memory.working_set_bytes.set;
                        c->working_set_bytes = c->has_memory ? e->memory.working_set_bytes.v : 0;
                        fs_usage_from(&e->rootfs, &c->rootfs);
                        fs_usage_from(&e->logs, &c->logs);
                }
        }
        if (ps->n_volumes > 0) {
                p->volumes = calloc(ps->n_volumes, sizeof(*p->volumes));
                if (!p->volumes)
                        return -ENOMEM;
                for (size_t i = 0; i < ps->n_volumes; i++) {
                        const struct stats_volume_summary *e = &ps->volumes[i];
                        struct eviction_volume_stats *v = &p->volumes[p->n_volumes];
                        if (!e->name)
                                continue;
                        v->name = strdup(e->name);
                        if (!v->name)
                                return -ENOMEM;
                        p->n_volumes++;
                        fs_usage_from(&e->fs, &v->fs);
                }
        }
        return 1;
}

static int cmp_pod_uid(const void *a, const void *b) {
        return strcmp(((const struct eviction_pod_stats *) a)->uid, ((const struct eviction_pod_stats *) b)->uid);
}

int eviction_stats_from_summary(const struct stats_summary *summary, uint64_t observed_usec,
                                struct eviction_stats *ret) {
        const struct stats_system_container *pods_cg;
        const struct stats_rlimit *rl;
        struct eviction_stats st = {};
        int r;

        if (!summary)
                return -EINVAL;
        observe_memory(&st.obs, EVICTION_SIGNAL_MEMORY_AVAILABLE, &summary->node.memory, observed_usec);
        pods_cg = stats_summary_pods_container(summary);
        if (pods_cg)
                observe_memory(&st.obs, EVICTION_SIGNAL_ALLOCATABLE_MEMORY_AVAILABLE, &pods_cg->memory, observed_usec);
        observe_fs(&st.obs, EVICTION_SIGNAL_NODEFS_AVAILABLE, EVICTION_SIGNAL_NODEFS_INODES_FREE, &summary->node.fs,
                   observed_usec);
        observe_fs(&st.obs, EVICTION_SIGNAL_IMAGEFS_AVAILABLE, EVICTION_SIGNAL_IMAGEFS_INODES_FREE,
                   &summary->node.image_fs, observed_usec);
        rl = &summary->node.rlimit;
        if (rl->present && rl->maxpid >= 0 && rl->curproc >= 0)
                observe(&st.obs, EVICTION_SIGNAL_PID_AVAILABLE,
                        rl->maxpid > rl->curproc ? (uint64_t) (rl->maxpid - rl->curproc) : 0, (uint64_t) rl->maxpid,
                        observed_usec);

        if (summary->n_pods > 0) {
                st.pods = calloc(summary->n_pods, sizeof(*st.pods));
                if (!st.pods)
                        return -ENOMEM;
                for (size_t i = 0; i < summary->n_pods; i++) {
                        r = pod_stats_from(&summary->pods[i], &st.pods[st.n_pods]);
                        if (r < 0) {
                                st.n_pods++;
                                eviction_stats_done(&st);
                                return r;
                        }
                        if (r > 0)
                                st.n_pods++;
                }
                qsort(st.pods, st.n_pods, sizeof(*st.pods), cmp_pod_uid);
        }
        *ret = st;
        return 0;
}

void eviction_stats_done(struct eviction_stats *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_pods; i++)
                pod_stats_done(&s->pods[i]);
        free(s->pods);
        *s = (struct eviction_stats) {};
}

const struct eviction_pod_stats *eviction_stats_find_pod(const struct eviction_stats *s, const char *uid) {
        struct eviction_pod_stats key = { .uid = (char *) uid };
        if (!s || !uid || s->n_pods == 0)
                return NULL;
        return bsearch(&key, s->pods, s->n_pods, sizeof(*s->pods), cmp_pod_uid);
}

/* ---------------------------------------------------------------- thresholds */

uint32_t eviction_thresholds_met(const struct eviction_threshold *t, size_t n, uint32_t candidates,
                                 const struct eviction_observations *obs, bool enforce_min_reclaim) {
        uint32_t met = 0;

        for (size_t i = 0; i < n && i < EVICTION_MAX_THRESHOLDS; i++) {
                const struct eviction_observation *o = &obs->s[t[i].signal];
                int64_t q;

                if (!(candidates & (UINT32_C(1) << i)) || !o->present)
                        continue;
                q = eviction_value_quantity(&t[i].value, o->capacity);
                if (enforce_min_reclaim && t[i].has_min_reclaim)
                        q += eviction_value_quantity(&t[i].min_reclaim, o->capacity);
                if (q > o->available)
                        met |= UINT32_C(1) << i;
        }
        return met;
}

static unsigned condition_index(unsigned bit) {
        return bit == EVICTION_MEMORY_PRESSURE ? 0 : bit == EVICTION_DISK_PRESSURE ? 1 : 2;
}

void eviction_synchronize(const struct eviction_threshold *t, size_t n, uint64_t transition_period_usec,
                          struct eviction_state *st, const struct eviction_observations *obs, uint64_t now_usec,
                          struct eviction_decision *ret) {
        uint32_t all = n >= 32 ? UINT32_MAX : (UINT32_C(1) << n) - 1;
        uint32_t met, grace_met = 0, updated = 0;
        unsigned observed_conditions = 0, reported = 0;

        *ret = (struct eviction_decision) {};
        /* thresholds met now, and the ones met before that have not reclaimed their minimum yet */
        met = eviction_thresholds_met(t, n, all, obs, false);
        if (st->thresholds_met)
                met |= eviction_thresholds_met(t, n, st->thresholds_met, obs, true);

        /* when each was first met */
        for (size_t i = 0; i < n; i++) {
                if (met & (UINT32_C(1) << i)) {
                        if (!st->first_observed_usec[i])
                                st->first_observed_usec[i] = now_usec ? now_usec : 1;
                        observed_conditions |= eviction_signal_condition(t[i].signal);
                } else
                        st->first_observed_usec[i] = 0;
        }

        /* node conditions stay for the transition period after they were last observed */
        for (unsigned bit = 1; bit <= EVICTION_PID_PRESSURE; bit <<= 1) {
                uint64_t *last = &st->condition_last_observed_usec[condition_index(bit)];
                if (observed_conditions & bit)
                        *last = now_usec ? now_usec : 1;
                if (*last && now_usec - *last < transition_period_usec)
                        reported |= bit;
        }
        st->conditions = reported;
        ret->conditions = reported;

        /* the ones whose grace period is over */
        for (size_t i = 0; i < n; i++)
                if ((met & (UINT32_C(1) << i)) && now_usec - st->first_observed_usec[i] >= t[i].grace_period_usec)
                        grace_met |= UINT32_C(1) << i;
        st->thresholds_met = grace_met;

        /* and whose stats are newer than the last ones (thresholdsUpdatedStats) */
        for (size_t i = 0; i < n; i++) {
                const struct eviction_observation *o = &obs->s[t[i].signal], *l = &st->last.s[t[i].signal];
                if (!(grace_met & (UINT32_C(1) << i)) || !o->present)
                        continue;
                if (!st->have_last || !l->present || o->time_usec == 0 || o->time_usec > l->time_usec)
                        updated |= UINT32_C(1) << i;
        }
        st->last = *obs;
        st->have_last = true;
        ret->met = updated;

        /* byEvictionPriority: memory first */
        for (int pass = 0; pass < 2 && !ret->reclaim; pass++)
                for (size_t i = 0; i < n && !ret->reclaim; i++) {
                        if (!(updated & (UINT32_C(1) << i)))
                                continue;
                        if (pass == 0 && eviction_signal_resource(t[i].signal) != EVICTION_RESOURCE_MEMORY)
                                continue;
                        ret->reclaim = true;
                        ret->threshold = i;
                        ret->resource = eviction_signal_resource(t[i].signal);
                }
}

char *eviction_conditions_format(unsigned conditions) {
        static const char *const names[] = { "MemoryPressure", "DiskPressure", "PIDPressure" };
        char buf[64] = "[";

        for (unsigned i = 0; i < 3; i++)
                if (conditions & (1u << i)) {
                        if (buf[1])
                                strcat(buf, " ");
                        strcat(buf, names[i]);
                }
        strcat(buf, "]");
        return strdup(buf);
}

/* ---------------------------------------------------------------- pods */

#define SYSTEM_CRITICAL_PRIORITY 2000000000

bool eviction_pod_is_critical(const struct pod *pod) {
        return pod_config_is_static(pod) || strmap_get(&pod->annotations, ANNOTATION_CONFIG_MIRROR) ||
               pod->spec.priority >= SYSTEM_CRITICAL_PRIORITY;
}

static int64_t container_value(const struct resource_list *l, const char *resource) {
        const struct quantity *q = resource_list_get(l, resource);
        return q ? q->value : 0;
}

static int64_t sat_add(int64_t a, int64_t b) {
        return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* GetResourceRequestQuantity for "memory" or "ephemeral-storage": app containers and sidecars summed, each
 * regular init container counted with the sidecars started before it, the larger wins. */
static int64_t eviction_pod_request(const struct pod *pod, const char *resource) {
        int64_t sum = 0, sidecars = 0, init_max = 0;

        /* GetResourceRequestQuantity: with pod-level resources, their request alone (and the overhead) */
        if (pod_level_resources_set(pod))
                return resource_pod_request_for_eviction(pod, resource);

        for (size_t i = 0; i < pod->spec.n_containers; i++)
                sum = sat_add(sum, container_value(&pod->spec.containers[i].resources.requests, resource));
        for (size_t i = 0; i < pod->spec.n_init_containers; i++) {
                const struct container *c = &pod->spec.init_containers[i];
                int64_t v = container_value(&c->resources.requests, resource);
                if (container_is_sidecar(c)) {
                        sidecars = sat_add(sidecars, v);
                        init_max = MAX(init_max, sidecars);
                } else
                        init_max = MAX(init_max, sat_add(sidecars, v));
        }
        return MAX(sat_add(sum, sidecars), init_max);
}

enum fs_stats { FS_ROOT = 1 << 0, FS_LOGS = 1 << 1, FS_LOCAL_VOLUMES = 1 << 2 };

/* localVolumeNames: hostPath, emptyDir not in memory, configMap, gitRepo */
static bool volume_is_local(const struct volume *v) {
        return v->type == VOLUME_HOST_PATH || (v->type == VOLUME_EMPTY_DIR && !streq_ptr(v->medium, "Memory")) ||
               v->type == VOLUME_CONFIG_MAP || streq_ptr(v->type_name, "gitRepo");
}

/* IsLocalEphemeralVolume: emptyDir on disk, configMap, gitRepo */
static bool volume_is_local_ephemeral(const struct volume *v) {
        return (v->type == VOLUME_EMPTY_DIR && isempty(v->medium)) || v->type == VOLUME_CONFIG_MAP ||
               streq_ptr(v->type_name, "gitRepo");
}

static const struct eviction_volume_stats *volume_stats(const struct eviction_pod_stats *s, const char *name) {
        for (size_t i = 0; s && i < s->n_volumes; i++)
                if (streq(s->volumes[i].name, name))
                        return &s->volumes[i];
        return NULL;
}

/* podDiskUsage / podLocalEphemeralStorageUsage: bytes or inodes over the chosen stats */
static int64_t pod_disk_usage(const struct pod *pod, const struct eviction_pod_stats *s, unsigned measure, bool inodes,
                              bool ephemeral_volumes_only) {
        uint64_t sum = 0;

        for (size_t i = 0; i < s->n_containers; i++) {
                const struct eviction_container_stats *c = &s->containers[i];
                if (measure & FS_ROOT)
                        sum += inodes ? (c->rootfs.has_inodes ? c->rootfs.inodes_used : 0)
                                      : (c->rootfs.present ? c->rootfs.used_bytes : 0);
                if (measure & FS_LOGS)
                        sum += inodes ? (c->logs.has_inodes ? c->logs.inodes_used : 0)
                                      : (c->logs.present ? c->logs.used_bytes : 0);
        }
        if ((measure & FS_LOCAL_VOLUMES) && pod->spec.volumes)
                for (size_t i = 0; i < pod->spec.volumes->n_volumes; i++) {
                        const struct volume *v = &pod->spec.volumes->volumes[i];
                        const struct eviction_volume_stats *vs;
                        if (ephemeral_volumes_only ? !volume_is_local_ephemeral(v) : !volume_is_local(v))
                                continue;
                        vs = volume_stats(s, v->name);
                        if (vs)
                                sum += inodes ? (vs->fs.has_inodes ? vs->fs.inodes_used : 0)
                                              : (vs->fs.present ? vs->fs.used_bytes : 0);
                }
        return (int64_t) MIN(sum, (uint64_t) INT64_MAX);
}

struct rank_ctx {
        enum eviction_signal signal;
        unsigned measure;
        bool inodes;
};

/* cmpBool: true first */
static int cmp_bool(bool a, bool b) {
        return a == b ? 0 : a ? -1 : 1;
}

static int cmp_i64(int64_t a, int64_t b) {
        return a < b ? -1 : a > b ? 1 : 0;
}

static int cmp_candidates(const void *pa, const void *pb, void *userdata) {
        const struct eviction_candidate *a = pa, *b = pb;
        const struct rank_ctx *ctx = userdata;
        int c;

        if (ctx->signal == EVICTION_SIGNAL_PID_AVAILABLE) {
                /* priority, then the larger process count first */
                c = cmp_i64(a->pod->spec.priority, b->pod->spec.priority);
                if (c != 0)
                        return c;
                if (!a->stats || !b->stats)
                        return cmp_bool(!a->stats, !b->stats);
                return cmp_i64((int64_t) (b->stats->has_process_count ? b->stats->process_count : 0),
                               (int64_t) (a->stats->has_process_count ? a->stats->process_count : 0));
        }

        /* pods without stats first (then by priority), then the ones exceeding their requests */
        if (!a->stats || !b->stats) {
                c = cmp_bool(!a->stats, !b->stats);
                return c != 0 ? c : cmp_i64(a->pod->spec.priority, b->pod->spec.priority);
        }
        if (eviction_signal_resource(ctx->signal) == EVICTION_RESOURCE_MEMORY) {
                int64_t ua = a->stats->has_memory ? (int64_t) a->stats->working_set_bytes : 0;
                int64_t ub = b->stats->has_memory ? (int64_t) b->stats->working_set_bytes : 0;
                int64_t ra = eviction_pod_request(a->pod, "memory"), rb = eviction_pod_request(b->pod, "memory");

                c = cmp_bool(ua > ra, ub > rb);
                if (c == 0)
                        c = cmp_i64(a->pod->spec.priority, b->pod->spec.priority);
                if (c == 0)
                        c = cmp_i64(ub - rb, ua - ra);
                return c;
        } else {
                int64_t ua = pod_disk_usage(a->pod, a->stats, ctx->measure, ctx->inodes, false);
                int64_t ub = pod_disk_usage(b->pod, b->stats, ctx->measure, ctx->inodes, false);
                /* inodes have no requests; the last step subtracts the storage request as upstream's disk() does */
                int64_t qa = ctx->inodes ? 0 : eviction_pod_request(a->pod, "ephemeral-storage");
                int64_t qb = ctx->inodes ? 0 : eviction_pod_request(b->pod, "ephemeral-storage");
                int64_t sa = eviction_pod_request(a->pod, "ephemeral-storage");
                int64_t sb = eviction_pod_request(b->pod, "ephemeral-storage");

                c = cmp_bool(ua > qa, ub > qb);
                if (c == 0)
                        c = cmp_i64(a->pod->spec.priority, b->pod->spec.priority);
                if (c == 0)
                        c = cmp_i64(ub - sb, ua - sa);
                return c;
        }
}

void eviction_rank(enum eviction_signal signal, bool dedicated_image_fs, struct eviction_candidate *pods, size_t n) {
        struct rank_ctx ctx = { .signal = signal };

        switch (signal) {
        case EVICTION_SIGNAL_NODEFS_AVAILABLE:
        case EVICTION_SIGNAL_NODEFS_INODES_FREE:
                ctx.measure = dedicated_image_fs ? FS_LOGS | FS_LOCAL_VOLUMES : FS_ROOT | FS_LOGS | FS_LOCAL_VOLUMES;
                break;
        case EVICTION_SIGNAL_IMAGEFS_AVAILABLE:
        case EVICTION_SIGNAL_IMAGEFS_INODES_FREE:
                ctx.measure = dedicated_image_fs ? FS_ROOT : FS_ROOT | FS_LOGS | FS_LOCAL_VOLUMES;
                break;
        default:
                break;
        }
        ctx.inodes = signal == EVICTION_SIGNAL_NODEFS_INODES_FREE || signal == EVICTION_SIGNAL_IMAGEFS_INODES_FREE;
        if (n > 1)
                qsort_r(pods, n, sizeof(*pods), cmp_candidates, &ctx);
}

/* a quantity as Quantity.String() prints it; "" on OOM */
static char *qstr(int64_t v, bool bytes) {
        return quantity_format_int(v, bytes);
}

char *eviction_message(enum eviction_resource resource, const struct pod *pod, const struct eviction_pod_stats *stats,
                       const struct eviction_threshold *t, size_t n, uint32_t met,
                       const struct eviction_observations *obs) {
        _cleanup_free_ char *msg = NULL;
        char *s;

        if (asprintf(&msg, "The node was low on resource: %s. ", eviction_resource_to_string(resource)) < 0)
                return NULL;
        /* getThresholdMetInfo: the first met threshold of that resource with an observation */
        for (size_t i = 0; i < n; i++) {
                const struct eviction_observation *o = &obs->s[t[i].signal];
                _cleanup_free_ char *q = NULL, *a = NULL;
                bool bytes = eviction_signal_is_bytes(t[i].signal);

                if (!(met & (UINT32_C(1) << i)) || eviction_signal_resource(t[i].signal) != resource || !o->present)
                        continue;
                if (!t[i].value.is_percentage && t[i].value.quantity_str)
                        q = strdup(t[i].value.quantity_str);
                else
                        q = qstr(eviction_value_quantity(&t[i].value, o->capacity), bytes);
                a = qstr(o->available, bytes);
                if (!q || !a || asprintf(&s, "%sThreshold quantity: %s, available: %s. ", msg, q, a) < 0)
                        return NULL;
                free(msg);
                msg = s;
                break;
        }
        /* the containers using more than they requested */
        for (size_t i = 0; stats && i < stats->n_containers; i++) {
                const struct eviction_container_stats *cs = &stats->containers[i];
                for (size_t k = 0; k < pod->spec.n_containers; k++) {
                        const struct container *c = &pod->spec.containers[k];
                        const struct quantity *req;
                        _cleanup_free_ char *u = NULL, *r = NULL;
                        int64_t usage, request;
                        bool have = false;

                        if (!streq_ptr(c->name, cs->name))
                                continue;
                        req = resource_list_get(&c->resources.requests, eviction_resource_to_string(resource));
                        request = req ? req->value : 0;
                        if (resource == EVICTION_RESOURCE_EPHEMERAL_STORAGE && cs->rootfs.present && cs->logs.present) {
                                usage = (int64_t) (cs->rootfs.used_bytes + cs->logs.used_bytes);
                                have = true;
                        } else if (resource == EVICTION_RESOURCE_MEMORY && cs->has_memory) {
                                usage = (int64_t) cs->working_set_bytes;
                                have = true;
                        }
                        if (!have || usage <= request)
                                continue;
                        u = qstr(usage, true);
                        r = req ? quantity_canonical(req) : strdup("0");
                        if (!u || !r ||
                            asprintf(&s, "%sContainer %s was using %s, which exceeds its request of %s. ", msg, c->name,
                                     u, r) < 0)
                                return NULL;
                        free(msg);
                        msg = s;
                }
        }
        return TAKE_PTR(msg);
}

bool eviction_local_storage_exceeded(const struct pod *pod, const struct eviction_pod_stats *stats,
                                     bool dedicated_image_fs, uint64_t etc_hosts_bytes, char **ret_message) {
        int64_t limit_sum = 0;
        bool have_limit = false;

        if (!stats)
                return false;
        /* emptyDir volumes over their sizeLimit */
        for (size_t i = 0; pod->spec.volumes && i < pod->spec.volumes->n_volumes; i++) {
                const struct volume *v = &pod->spec.volumes->volumes[i];
                const struct eviction_volume_stats *vs;
                if (v->type != VOLUME_EMPTY_DIR || !v->size_limit.str || v->size_limit.value <= 0)
                        continue;
                vs = volume_stats(stats, v->name);
                if (vs && vs->fs.present && (int64_t) vs->fs.used_bytes > v->size_limit.value) {
                        _cleanup_free_ char *n = go_quote(v->name), *canon = quantity_canonical(&v->size_limit),
                                            *l = NULL;
                        l = canon ? go_quote(canon) : NULL;
                        if (!n || !l ||
                            asprintf(ret_message, "Usage of EmptyDir volume %s exceeds the limit %s. ", n, l) < 0)
                                *ret_message = NULL;
                        return true;
                }
        }
        /* the pod's usage over the sum of its containers' limits */
        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                const struct quantity *q = resource_list_get(&pod->spec.containers[i].resources.limits,
                                                             "ephemeral-storage");
                if (q) {
                        have_limit = true;
                        limit_sum = sat_add(limit_sum, q->value);
                }
        }
        for (size_t i = 0; i < pod->spec.n_init_containers; i++) {
                const struct quantity *q = resource_list_get(&pod->spec.init_containers[i].resources.limits,
                                                             "ephemeral-storage");
                if (q) {
                        have_limit = true;
                        limit_sum = MAX(limit_sum, q->value);
                }
        }
        if (have_limit) {
                unsigned measure = dedicated_image_fs ? FS_LOGS | FS_LOCAL_VOLUMES
                                                      : FS_ROOT | FS_LOGS | FS_LOCAL_VOLUMES;
                int64_t used = sat_add(pod_disk_usage(pod, stats, measure, false, true), (int64_t) etc_hosts_bytes);
                if (used > limit_sum) {
                        _cleanup_free_ char *l = qstr(limit_sum, true);
                        if (!l || asprintf(ret_message,
                                           "Pod ephemeral local storage usage exceeds the total limit of "
                                           "containers %s. ",
                                           l) < 0)
                                *ret_message = NULL;
                        return true;
                }
        }
        /* a container over its own limit */
        for (size_t i = 0; i < stats->n_containers; i++) {
                const struct eviction_container_stats *cs = &stats->containers[i];
                for (size_t k = 0; k < pod->spec.n_containers; k++) {
                        const struct container *c = &pod->spec.containers[k];
                        const struct quantity *q = resource_list_get(&c->resources.limits, "ephemeral-storage");
                        uint64_t used;

                        if (!streq_ptr(c->name, cs->name) || !q || q->value == 0)
                                continue;
                        used = (cs->logs.present ? cs->logs.used_bytes : 0) +
                               (!dedicated_image_fs && cs->rootfs.present ? cs->rootfs.used_bytes : 0);
                        if ((int64_t) used > q->value) {
                                _cleanup_free_ char *canon = quantity_canonical(q), *l = NULL;
                                l = canon ? go_quote(canon) : NULL;
                                if (!l || asprintf(ret_message,
                                                   "Container %s exceeded its local ephemeral storage limit "
                                                   "%s. ",
                                                   c->name, l) < 0)
                                        *ret_message = NULL;
                                return true;
                        }
                }
        }
        return false;
}

/* TolerationsTolerateTaint for the NoSchedule taint node.kubernetes.io/memory-pressure (no value) */
static bool tolerates_memory_pressure(const struct pod *pod) {
        const json_t *tols = json_object_get(json_object_get(pod->raw, "spec"), "tolerations"), *t;
        size_t i;

        json_array_foreach(tols, i, t) {
                const char *key = json_string_value(json_object_get(t, "key"));
                const char *op = json_string_value(json_object_get(t, "operator"));
                const char *effect = json_string_value(json_object_get(t, "effect"));
                const char *value = json_string_value(json_object_get(t, "value"));

                if (!isempty(effect) && !streq(effect, "NoSchedule"))
                        continue;
                if (!isempty(key) && !streq(key, "node.kubernetes.io/memory-pressure"))
                        continue;
                if (streq_ptr(op, "Exists"))
                        return true;
                if ((isempty(op) || streq(op, "Equal")) && !isempty(key) && isempty(value))
                        return true;
        }
        return false;
}

int eviction_admit(unsigned conditions, const struct pod *pod, struct ck_error **ret_error) {
        _cleanup_free_ char *c = NULL;

        if (conditions == 0 || eviction_pod_is_critical(pod))
                return 0;
        if (conditions == EVICTION_MEMORY_PRESSURE &&
            (pod_qos_class(pod) != QOS_BEST_EFFORT || tolerates_memory_pressure(pod)))
                return 0;
        c = eviction_conditions_format(conditions);
        if (!c)
                return -ENOMEM;
        return ck_error_set_reason(ret_error, -ENOSPC, "Evicted", "The node had condition: %s. ", c);
}
