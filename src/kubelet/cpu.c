/* SPDX-License-Identifier: Apache-2.0 */
#include "kubelet/cpu.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "apis/qos.h"
#include "cm/cpumanager/cpumanager.h"
#include "cm/devicemanager/manager.h"
#include "cm/memorymanager/memorymanager.h"
#include "cm/topologymanager/topologymanager.h"
#include "features/features.h"
#include "kubelet/kubelet-internal.h"

#define CPU_SENT_MAX 4096 /* containers whose last cpuset is remembered (more than a node runs) */

struct cpu_sent {
        char *id;
        char *cpus;
        bool seen;
};

static struct cpu_sent *sent_find(struct kubelet *k, const char *id) {
        for (size_t i = 0; i < k->n_cpu_sent; i++)
                if (streq(k->cpu_sent[i].id, id))
                        return &k->cpu_sent[i];
        return NULL;
}

static void sent_set(struct kubelet *k, const char *id, const char *cpus) {
        struct cpu_sent *e = sent_find(k, id), *n;

        if (e) {
                (void) free_and_strdup(&e->cpus, cpus);
                e->seen = true;
                return;
        }
        if (k->n_cpu_sent >= CPU_SENT_MAX)
                return; /* sent again at the next pass: harmless */
        n = reallocarray(k->cpu_sent, k->n_cpu_sent + 1, sizeof(*n));
        if (!n)
                return;
        k->cpu_sent = n;
        n[k->n_cpu_sent] = (struct cpu_sent) { .id = strdup(id), .cpus = strdup(cpus), .seen = true };
        if (!n[k->n_cpu_sent].id || !n[k->n_cpu_sent].cpus) {
                free(n[k->n_cpu_sent].id);
                free(n[k->n_cpu_sent].cpus);
                return;
        }
        k->n_cpu_sent++;
}

static uint64_t reconcile_period(const struct kubelet *k) {
        /* never 0 (options default it): a timer of 0 would spin the loop */
        return k->opts->cpu_manager_reconcile_period_usec ?: 10 * USEC_PER_SEC;
}

static void kubelet_cpu_reconcile(struct kubelet *k);

static void on_reconcile_timer(evutil_socket_t fd, short what, void *userdata) {
        struct kubelet *k = userdata;

        kubelet_cpu_reconcile(k);
        evtimer_add_usec(k->cpu_reconcile, reconcile_period(k));
}

/* "a=b,c=d" → names and values */
static int split_options(const char *s, char ***ret_names, char ***ret_values) {
        _cleanup_strv_free_ char **names = NULL, **values = NULL;
        _cleanup_free_ char *copy = strdup(strempty(s));
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *i = strtok_r(copy, ",", &save); i; i = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(i, '=');
                if (!eq)
                        return -EINVAL;
                *eq = 0;
                if (strv_extend(&names, i) < 0 || strv_extend(&values, eq + 1) < 0)
                        return -ENOMEM;
        }
        *ret_names = TAKE_PTR(names);
        *ret_values = TAKE_PTR(values);
        return 0;
}

/* The topology manager (NewManager), created with the CPU manager: a policy, scope or option upstream refuses
 * refuses the start */
static int topology_start(struct kubelet *k, struct ck_error **ret_error) {
        const struct kubelet_options *o = k->opts;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_strv_free_ char **names = NULL, **values = NULL;
        _cleanup_free_ struct topologymanager *tm = calloc(1, sizeof(*tm));
        struct tm_numa numa = {};
        enum tm_policy policy;
        int r;

        if (!tm)
                return -ENOMEM;
        r = split_options(o->topology_manager_policy_options, &names, &values);
        if (r < 0)
                return ck_error_set(ret_error, r, "topologyManagerPolicyOptions \"%s\": expected name=value pairs",
                                    strempty(o->topology_manager_policy_options));
        r = tm_parse_policy(o->topology_manager_policy, &policy, &err);
        if (r >= 0 && policy != TM_POLICY_NONE)
                r = tm_numa_discover(o->sysfs_root, &numa, &err);
        if (r >= 0)
                r = tm_init(tm,
                            &(struct tm_config) { .policy = o->topology_manager_policy,
                                                  .scope = o->topology_manager_scope,
                                                  .option_names = names,
                                                  .option_values = values },
                            &numa, &err);
        if (r < 0)
                return ck_error_set(ret_error, r, "failed to initialize topology manager: %s",
                                    ck_error_message_or(err, r));
        if (tm->policy != TM_POLICY_NONE)
                log_info("topology manager: policy %s, scope %s, %zu NUMA nodes", o->topology_manager_policy,
                         tm->scope == TM_SCOPE_POD ? "pod" : "container", tm->numa.n);
        k->topology = TAKE_PTR(tm);
        return 0;
}

/* "name=quantity" items of a --kube-reserved / --system-reserved text that are huge pages, appended to l */
static int hugepages_reserved(const char *s, char ***l) {
        _cleanup_free_ char *copy = strdup(strempty(s));
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *i = strtok_r(copy, ",", &save); i; i = strtok_r(NULL, ",", &save))
                if (startswith(i, "hugepages-") && strv_extend(l, i) < 0)
                        return -ENOMEM;
        return 0;
}

/* The memory manager (NewManager + Start), after the eviction manager: its reservedMemory is checked against
 * kube-reserved + system-reserved + the hard memory.available threshold (GetNodeAllocatableReservation) */
static int memory_start(struct kubelet *k, struct ck_error **ret_error) {
        const struct kubelet_options *o = k->opts;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_strv_free_ char **items = NULL;
        _cleanup_free_ char *reservation = NULL;
        struct mm_machine machine = {};
        int64_t km = 0, sm = 0, x, eb, sb;
        float ef, sf;
        char *item;
        int r;

        if (!isempty(o->memory_manager_policy) && !streq(o->memory_manager_policy, "None")) {
                r = mm_machine_discover(o->sysfs_root, &machine, &err);
                if (r < 0)
                        return ck_error_set(ret_error, r, "failed to initialize memory manager: %s",
                                            ck_error_message(err));
                if (machine.n == 0) {
                        /* no NUMA in sysfs: one node 0 with all the memory, as cadvisor reports it */
                        machine.n = 1;
                        machine.nodes[0] = (struct mm_machine_node) { .id = 0, .memory = k->machine.memory_capacity };
                }
        }
        (void) node_parse_reserved(o->kube_reserved, &x, &km, &x, NULL);
        (void) node_parse_reserved(o->system_reserved, &x, &sm, &x, NULL);
        kubelet_eviction_reservation(k, &eb, &ef, &sb, &sf);
        if (ef > 0)
                eb = (int64_t) ((double) ef * (double) k->machine.memory_capacity);
        if (km + sm + eb > 0 && (asprintf(&item, "memory=%" PRId64, km + sm + eb) < 0 || strv_push(&items, item) < 0))
                return -ENOMEM;
        if (hugepages_reserved(o->kube_reserved, &items) < 0 || hugepages_reserved(o->system_reserved, &items) < 0)
                return -ENOMEM;
        reservation = items ? strv_join(items, ",") : strdup("");
        if (!reservation)
                return -ENOMEM;
        r = memorymanager_new(&(struct mm_config) { .policy = o->memory_manager_policy,
                                                    .reserved_memory = o->reserved_memory,
                                                    .node_reservation = reservation,
                                                    .state_dir = o->root_dir },
                              &machine, &k->memory, &err);
        if (r < 0)
                return ck_error_set(ret_error, r, "failed to initialize memory manager: %s", ck_error_message(err));
        if (memorymanager_is_static(k->memory))
                log_info("memory manager: Static policy, %zu NUMA nodes, %zu assignments", machine.n,
                         memorymanager_n_entries(k->memory));
        return 0;
}

int kubelet_cpu_start(struct kubelet *k, struct ck_error **ret_error) {
        const struct kubelet_options *o = k->opts;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_strv_free_ char **names = NULL, **values = NULL;
        struct cpu_topology *topo = NULL;
        int64_t kc = 0, sc = 0, x;
        int r;

        r = split_options(o->cpu_manager_policy_options, &names, &values);
        if (r < 0)
                return ck_error_set(ret_error, r, "cpuManagerPolicyOptions \"%s\": expected name=value pairs",
                                    strempty(o->cpu_manager_policy_options));
        if (!isempty(o->cpu_manager_policy) && !streq(o->cpu_manager_policy, "none") &&
            !streq(o->cpu_manager_policy, "static"))
                return ck_error_set(ret_error, -EINVAL, "failed to initialize cpu manager: unknown policy: \"%s\"",
                                    o->cpu_manager_policy);
        r = cputopo_discover(o->sysfs_root, &topo, &err);
        if (r < 0 && (isempty(o->cpu_manager_policy) || streq(o->cpu_manager_policy, "none"))) {
                /* the none policy pins nothing: a sysfs it cannot read is no reason to refuse the start */
                log_warning("CPU manager: cannot read the CPU topology (%s); the none policy does not need it",
                            ck_error_message(err));
                err = ck_error_free(err);
                r = cputopo_from_table(&(struct cpu_info) {}, 1, &topo);
        }
        if (r < 0)
                return ck_error_set(ret_error, r, "failed to initialize cpu manager: %s", ck_error_message_or(err, r));
        (void) node_parse_reserved(o->kube_reserved, &kc, &x, &x, NULL);
        (void) node_parse_reserved(o->system_reserved, &sc, &x, &x, NULL);
        r = cpumanager_new(&(struct cpumanager_config) { .policy = o->cpu_manager_policy,
                                                         .option_names = names,
                                                         .option_values = values,
                                                         .reserved_system_cpus = o->reserved_system_cpus,
                                                         .reserved_cpu_milli = kc + sc,
                                                         .state_dir = o->root_dir,
                                                         .alpha_options =
                                                                 feature_enabled(o->feature_gates,
                                                                                 "CPUManagerPolicyAlphaOptions"),
                                                         .beta_options_off =
                                                                 !feature_enabled(o->feature_gates,
                                                                                  "CPUManagerPolicyBetaOptions"),
                                                         .tm_single_numa_node = streq_ptr(o->topology_manager_policy,
                                                                                          "single-numa-node") },
                           topo, &k->cpus, &err);
        if (r < 0)
                return ck_error_set(ret_error, r, "failed to initialize cpu manager: %s", ck_error_message(err));
        r = topology_start(k, ret_error);
        if (r < 0)
                return r;
        r = memory_start(k, ret_error);
        if (r < 0)
                return r;
        if (cpumanager_is_static(k->cpus) || memorymanager_is_static(k->memory)) {
                char buf[CPUSET_TEXT_MAX];
                struct cpuset pool = cpumanager_shared_pool(k->cpus);
                if (cpumanager_is_static(k->cpus)) {
                        cm_metrics_init_cpu_static(&k->cm_metrics);
                        log_info("CPU manager: static policy, %zu CPUs, shared pool %s",
                                 cpumanager_topology(k->cpus)->n, cpuset_format(&pool, buf, sizeof(buf)));
                }
                k->cpu_reconcile = evtimer_new(k->base, on_reconcile_timer, k);
                if (!k->cpu_reconcile)
                        return -ENOMEM;
                evtimer_add_usec(k->cpu_reconcile, reconcile_period(k));
        }
        return 0;
}

void kubelet_cpu_free(struct kubelet *k) {
        cri_calls_cancel(&k->cpu_calls);
        if (k->cpu_reconcile) {
                event_free(k->cpu_reconcile);
                k->cpu_reconcile = NULL;
        }
        k->cpus = cpumanager_free(k->cpus);
        k->topology = mfree(k->topology);
        k->memory = memorymanager_free(k->memory);
        for (size_t i = 0; i < k->n_cpu_sent; i++) {
                free(k->cpu_sent[i].id);
                free(k->cpu_sent[i].cpus);
        }
        free(k->cpu_sent);
        k->cpu_sent = NULL;
        k->n_cpu_sent = 0;
}

/* ---------------------------------------------------------------- the topology manager's providers */

/* The device manager's hints (GetTopologyHints / GetPodTopologyHints): ckubelet's device manager allocates before
 * the topology manager runs (its allocation is asynchronous), so its hints are upstream's for devices already
 * allocated: every set of NUMA nodes holding the allocated devices, the narrowest that could hold as many of the
 * resource's devices preferred; a resource whose devices report no NUMA node has no preference. */
struct dev_list {
        struct dev {
                const char *resource;
                int64_t numa;
                bool has_numa;
        } * v;
        size_t n;
        bool oom;
};

static void dev_collect(const char *resource, const char *id, int64_t numa, bool has_numa, void *userdata) {
        struct dev_list *l = userdata;
        struct dev *n;

        if (l->oom)
                return;
        n = reallocarray(l->v, l->n + 1, sizeof(*n));
        if (!n) {
                l->oom = true;
                return;
        }
        l->v = n;
        l->v[l->n++] = (struct dev) { .resource = resource, .numa = numa, .has_numa = has_numa };
}

/* the NUMA nodes (-1: none) of a resource's devices in l */
static int64_t *resource_numa(const struct dev_list *l, const char *res, size_t *ret_n) {
        int64_t *v = calloc(l->n + 1, sizeof(*v));
        size_t n = 0;

        for (size_t i = 0; v && i < l->n; i++)
                if (streq(l->v[i].resource, res))
                        v[n++] = l->v[i].has_numa ? l->v[i].numa : -1;
        *ret_n = n;
        return v;
}

/* the hints of resource: all its healthy devices in all, those that may serve it in usable */
static int resource_hints(const struct dev_list *all, const struct dev_list *usable, const char *res, int request,
                          struct tm_hints *acc) {
        size_t na, nu;
        _cleanup_free_ int64_t *a = resource_numa(all, res, &na), *u = resource_numa(usable, res, &nu);

        if (!a || !u)
                return -ENOMEM;
        return tm_device_hints(a, na, u, nu, request, acc);
}

static int device_hints(struct kubelet *k, const struct pod *p, const struct container *c, struct tm_hints *acc) {
        struct dev_list all = {}, alloc = {};
        bool any = false;
        int r = 0;

        if (!k->devices)
                return tm_hints_add_any(acc);
        dm_foreach_allocatable_device(k->devices, dev_collect, &all);
        for (size_t i = 0; i < p->spec.n_init_containers + p->spec.n_containers; i++) {
                const struct container *x = i < p->spec.n_init_containers
                                                    ? &p->spec.init_containers[i]
                                                    : &p->spec.containers[i - p->spec.n_init_containers];
                if (!c || x == c)
                        dm_foreach_container_device(k->devices, p->uid, x->name, dev_collect, &alloc);
        }
        if (all.oom || alloc.oom)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < alloc.n; i++) {
                const char *res = alloc.v[i].resource;
                bool seen = false;
                int request = 0;

                for (size_t j = 0; j < i; j++)
                        seen = seen || streq(alloc.v[j].resource, res);
                if (seen)
                        continue;
                any = true;
                for (size_t j = 0; j < alloc.n; j++)
                        request += streq(alloc.v[j].resource, res);
                r = resource_hints(&all, &alloc, res, request, acc);
        }
        if (r >= 0 && !any)
                r = tm_hints_add_any(acc);
        free(all.v);
        free(alloc.v);
        return r;
}

/* the request of a device resource: a container's limit, or the pod's (getPodDeviceRequest: the largest of an
 * init container's and the app containers' sum) */
static int64_t device_request(const struct pod *p, const struct container *c, const char *resource) {
        int64_t init = 0, app = 0;

        if (c) {
                const struct quantity *q = resource_list_get(&c->resources.limits, resource);
                return q ? q->value : 0;
        }
        for (size_t i = 0; i < p->spec.n_init_containers; i++) {
                const struct quantity *q = resource_list_get(&p->spec.init_containers[i].resources.limits, resource);
                if (q && q->value > init)
                        init = q->value;
        }
        for (size_t i = 0; i < p->spec.n_containers; i++) {
                const struct quantity *q = resource_list_get(&p->spec.containers[i].resources.limits, resource);
                app += q ? q->value : 0;
        }
        return MAX(init, app);
}

/* The device manager's hints before allocation (generateDeviceTopologyHints): for each device resource the
 * container (or pod) asks for, every set of NUMA nodes whose available devices suffice, the narrowest that could
 * hold as many of the resource's devices preferred; a resource whose devices have no NUMA node: no preference. */
static int device_request_hints(struct kubelet *k, const struct pod *p, const struct container *c,
                                struct tm_hints *acc) {
        bool any = false;
        int r = 0;

        for (size_t x = 0; r >= 0 && x < p->spec.n_init_containers + p->spec.n_containers; x++) {
                const struct container *cc = x < p->spec.n_init_containers
                                                     ? &p->spec.init_containers[x]
                                                     : &p->spec.containers[x - p->spec.n_init_containers];
                if (c && cc != c)
                        continue;
                for (size_t i = 0; r >= 0 && i < cc->resources.limits.n; i++) {
                        const char *res = cc->resources.limits.names[i];
                        struct dev_list all = {}, avail = {};
                        bool seen = false;

                        /* each resource once (the pod scope sees it in several containers) */
                        for (size_t y = 0; y < x && !seen; y++) {
                                const struct container *o =
                                        y < p->spec.n_init_containers
                                                ? &p->spec.init_containers[y]
                                                : &p->spec.containers[y - p->spec.n_init_containers];
                                seen = !c && resource_list_get(&o->resources.limits, res);
                        }
                        if (seen || dm_admission_allocatable(k->devices, res) < 0 || device_request(p, c, res) <= 0)
                                continue;
                        any = true;
                        dm_foreach_allocatable_device(k->devices, dev_collect, &all);
                        dm_foreach_available_device(k->devices, res, dev_collect, &avail);
                        r = all.oom || avail.oom
                                    ? -ENOMEM
                                    : resource_hints(&all, &avail, res, (int) device_request(p, c, res), acc);
                        free(all.v);
                        free(avail.v);
                }
        }
        if (r >= 0 && !any)
                r = tm_hints_add_any(acc);
        return r;
}

bool kubelet_device_affinity(void *userdata, const struct pod *p, const struct container *c, uint64_t *ret_mask) {
        struct kubelet *k = userdata;
        struct tm_hints h = {};
        struct tm_hint best = {};
        bool pod_scope, ok;
        int r;

        if (!k->topology || k->topology->policy == TM_POLICY_NONE || !k->devices)
                return false;
        pod_scope = k->topology->scope == TM_SCOPE_POD;
        r = pod_scope ? cpumanager_pod_hints(k->cpus, p, &h) : cpumanager_container_hints(k->cpus, p, c, &h);
        if (r >= 0)
                r = pod_scope ? memorymanager_pod_hints(k->memory, p, &h)
                              : memorymanager_container_hints(k->memory, p, c, &h);
        if (r >= 0)
                r = device_request_hints(k, p, pod_scope ? NULL : c, &h);
        /* the best hint, admitted or not (a refusal comes at the topology manager's admission) */
        ok = r >= 0 && (tm_merge(k->topology, &h, &best) || true) && best.has_affinity;
        tm_hints_done(&h);
        if (!ok)
                return false;
        *ret_mask = best.affinity;
        return true;
}

static int dev_container_hints(void *userdata, const struct pod *p, const struct container *c, struct tm_hints *acc) {
        return device_hints(userdata, p, c, acc);
}
static int dev_pod_hints(void *userdata, const struct pod *p, struct tm_hints *acc) {
        return device_hints(userdata, p, NULL, acc);
}
static int dev_allocate(void *userdata, const struct pod *p, const struct container *c, const struct tm_hint *affinity,
                        struct ck_error **ret_error) {
        return 0; /* allocated already, before the topology manager ran */
}

static int cpu_container_hints(void *userdata, const struct pod *p, const struct container *c, struct tm_hints *acc) {
        struct kubelet *k = userdata;
        return cpumanager_container_hints(k->cpus, p, c, acc);
}
static int cpu_pod_hints(void *userdata, const struct pod *p, struct tm_hints *acc) {
        struct kubelet *k = userdata;
        return cpumanager_pod_hints(k->cpus, p, acc);
}
/* all the CPUs in one uncore (L3) cache (isAlignedAtUncoreCache) */
static bool one_uncore_cache(const struct cpu_topology *t, const struct cpuset *s) {
        int id = -1;
        CPUSET_FOREACH(cpu, s) {
                const struct cpu_info *ci = cputopo_cpu(t, cpu);
                if (!ci || (id >= 0 && ci->uncore != id))
                        return false;
                id = ci->uncore;
        }
        return true;
}

/* the static policy's Allocate with its metrics: a pinning request for each container with exclusive CPUs, an
 * error when it fails; under full-pcpus-only the physical CPU alignment (or its failure), and a new allocation
 * within one uncore cache */
static int cpu_allocate(void *userdata, const struct pod *p, const struct container *c, const struct tm_hint *affinity,
                        struct ck_error **ret_error) {
        struct kubelet *k = userdata;
        bool pinning = cpumanager_is_static(k->cpus) && cpumanager_container_guaranteed_cpus(p, c) > 0,
             full_pcpus = pinning && cpumanager_options(k->cpus)->full_pcpus_only;
        size_t before = cpumanager_n_entries(k->cpus);
        int r;

        r = cpumanager_allocate(k->cpus, p, c, affinity, ret_error);
        if (!pinning)
                return r;
        k->cm_metrics.cpu_pinning_requests++;
        if (r < 0) {
                k->cm_metrics.cpu_pinning_errors++;
                if (full_pcpus)
                        cm_metrics_aligned_failure(&k->cm_metrics, CM_ALIGN_SCOPE_CONTAINER, CM_ALIGN_PHYSICAL_CPU);
                return r;
        }
        if (full_pcpus)
                cm_metrics_aligned(&k->cm_metrics, CM_ALIGN_SCOPE_CONTAINER, CM_ALIGN_PHYSICAL_CPU, 1);
        if (cpumanager_n_entries(k->cpus) > before) {
                struct cpuset s = cpumanager_exclusive_cpus(k->cpus, p->uid, c->name);
                if (one_uncore_cache(cpumanager_topology(k->cpus), &s))
                        cm_metrics_aligned(&k->cm_metrics, CM_ALIGN_SCOPE_CONTAINER, CM_ALIGN_UNCORE_CACHE, 1);
        }
        return r;
}

static int mem_container_hints(void *userdata, const struct pod *p, const struct container *c, struct tm_hints *acc) {
        struct kubelet *k = userdata;
        return memorymanager_container_hints(k->memory, p, c, acc);
}
static int mem_pod_hints(void *userdata, const struct pod *p, struct tm_hints *acc) {
        struct kubelet *k = userdata;
        return memorymanager_pod_hints(k->memory, p, acc);
}
static int mem_allocate(void *userdata, const struct pod *p, const struct container *c, const struct tm_hint *affinity,
                        struct ck_error **ret_error) {
        struct kubelet *k = userdata;
        /* the Static policy's Allocate: a pinning request for each container of a Guaranteed pod */
        bool pinning = memorymanager_is_static(k->memory) && pod_qos_class(p) == QOS_GUARANTEED;
        int r = memorymanager_allocate(k->memory, p, c, affinity, ret_error);

        if (pinning) {
                k->cm_metrics.memory_pinning_requests++;
                if (r < 0)
                        k->cm_metrics.memory_pinning_errors++;
        }
        return r;
}

int kubelet_cpu_admit(struct kubelet *k, const struct pod *p, struct ck_error **ret_error) {
        _cleanup_strv_free_ char **active = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        /* in upstream's order: the CPU manager, the memory manager, then the device manager */
        const struct tm_provider providers[] = {
                { k, cpu_container_hints, cpu_pod_hints, cpu_allocate },
                { k, mem_container_hints, mem_pod_hints, mem_allocate },
                { k, dev_container_hints, dev_pod_hints, dev_allocate },
        };
        static const struct topologymanager none = {};
        const struct topologymanager *tm = k->topology ?: &none;
        struct cpumanager_mark mark;
        struct mm_mark *mmark;
        uint64_t start = now_usec();
        int r;

        /* the topology manager's Admit runs for every pod */
        k->cm_metrics.tm_admission_requests++;
        if (!cpumanager_is_static(k->cpus) && !memorymanager_is_static(k->memory) && tm->policy == TM_POLICY_NONE) {
                histogram_observe(&k->cm_metrics.tm_admission_duration_ms, (double) ((now_usec() - start) / 1000));
                return 0;
        }
        /* the pods that are gone give their CPUs and memory back first (removeStaleState), once every source has
         * spoken */
        if (k->config_received && kubelet_active_pod_uids(k, &active) >= 0) {
                if (cpumanager_is_static(k->cpus))
                        (void) cpumanager_remove_stale(k->cpus, active);
                memorymanager_remove_stale(k->memory, active);
        }
        mark = cpumanager_mark(k->cpus);
        mmark = memorymanager_mark(k->memory);
        if (!mmark)
                return -ENOMEM;
        r = tm_admit(tm, p, providers, ELEMENTSOF(providers), &err);
        /* whole milliseconds, as upstream's time.Since(start).Milliseconds() */
        histogram_observe(&k->cm_metrics.tm_admission_duration_ms, (double) ((now_usec() - start) / 1000));
        if (r < 0) {
                if (r == -ENOSPC) {
                        k->cm_metrics.tm_admission_errors++;
                        if (streq_ptr(ck_error_reason(err), TM_ERROR_REASON))
                                cm_metrics_aligned_failure(&k->cm_metrics,
                                                           tm->scope == TM_SCOPE_POD ? CM_ALIGN_SCOPE_POD
                                                                                     : CM_ALIGN_SCOPE_CONTAINER,
                                                           CM_ALIGN_NUMA_NODE);
                }
                cpumanager_rollback(k->cpus, &mark);
                memorymanager_rollback(k->memory, mmark);
                ck_error_pass(ret_error, &err);
                return r;
        }
        /* IsAlignmentGuaranteed (single-numa-node): each container aligned, or the pod */
        if (tm->policy == TM_POLICY_SINGLE_NUMA_NODE)
                cm_metrics_aligned(&k->cm_metrics,
                                   tm->scope == TM_SCOPE_POD ? CM_ALIGN_SCOPE_POD : CM_ALIGN_SCOPE_CONTAINER,
                                   CM_ALIGN_NUMA_NODE,
                                   tm->scope == TM_SCOPE_POD ? 1 : p->spec.n_init_containers + p->spec.n_containers);
        cpumanager_commit(k->cpus, &mark);
        memorymanager_commit(k->memory, mmark);
        return 0;
}

/* the field holds protobuf-c's shared empty string until set: not freed */
static int set_field(char **field, const char *value) {
        char *n = strdup(value);
        if (!n)
                return -ENOMEM;
        if (*field != protobuf_c_empty_string)
                free(*field);
        *field = n;
        return 0;
}

int kubelet_cpu_apply(struct kubelet *k, const struct pod *p, const struct container *c,
                      Runtime__V1__ContainerConfig *cfg) {
        char buf[CPUSET_TEXT_MAX];
        struct cpuset s;
        uint64_t mems;
        int r;

        if (!cfg->linux || !cfg->linux->resources)
                return 0;
        if (cpumanager_container_cpus(k->cpus, p->uid, c->name, &s) && !cpuset_empty(&s)) {
                r = set_field(&cfg->linux->resources->cpuset_cpus, cpuset_format(&s, buf, sizeof(buf)));
                if (r < 0)
                        return r;
        }
        /* the memory manager's NUMA nodes (PreCreateContainer's CpusetMems) */
        mems = memorymanager_container_nodes(k->memory, p->uid, c->name);
        if (mems != 0) {
                r = set_field(&cfg->linux->resources->cpuset_mems, tm_mask_format(mems, buf, sizeof(buf)));
                if (r < 0)
                        return r;
        }
        return 0;
}

struct cpu_update {
        struct kubelet *k;
        char *id, *cpus;
};

static void cpu_update_free(void *userdata) {
        struct cpu_update *u = userdata;
        free(u->id);
        free(u->cpus);
        free(u);
}

static void on_update(const struct cri_reply *reply, void *userdata) {
        struct cpu_update *u = userdata;

        if (reply->r < 0)
                log_error("CPU manager: container %.12s: UpdateContainerResources (cpuset %s): %s", u->id, u->cpus,
                          reply->message);
        else {
                log_v(2, "CPU manager: container %.12s: cpuset %s", u->id, u->cpus);
                sent_set(u->k, u->id, u->cpus);
        }
        cpu_update_free(u);
}

static void update_container(struct kubelet *k, const char *id, const char *cpus) {
        Runtime__V1__UpdateContainerResourcesRequest req = RUNTIME__V1__UPDATE_CONTAINER_RESOURCES_REQUEST__INIT;
        Runtime__V1__LinuxContainerResources lr = RUNTIME__V1__LINUX_CONTAINER_RESOURCES__INIT;
        struct cpu_update *u = calloc(1, sizeof(*u));
        char *slash;
        int r;

        if (!u || !(u->id = strdup(id)) || !(u->cpus = strdup(cpus))) {
                if (u)
                        free(u->id);
                free(u);
                return;
        }
        u->k = k;
        /* the cpuset only, as upstream's updateContainerCPUSet: the runtime keeps the other values; "cpus/mems"
         * with the memory manager's NUMA nodes, sent as cpuset_mems */
        lr.cpuset_cpus = u->cpus;
        slash = strchr(u->cpus, '/');
        if (slash) {
                *slash = 0;
                lr.cpuset_mems = slash + 1;
        }
        req.container_id = u->id;
        req.linux = &lr;
        k->cpu_calls.drop = cpu_update_free;
        r = cri_update_container_resources(k->cri, &req, 0, on_update, u, &k->cpu_calls);
        if (slash) /* the request is packed: u->cpus is "cpus/mems" again, what on_update remembers */
                *slash = '/';
        if (r < 0)
                cpu_update_free(u);
}

/* a container whose newest instance exited and will not run again (an init container that succeeded, an app
 * container under restartPolicy Never, or OnFailure after a success): its CPUs go back to the pool, as upstream
 * releases a terminated container's at reconcile; a container that will restart keeps them */
static void release_finished(struct kubelet *k, const struct pod *p, const struct kc_pod_status *st) {
        for (size_t i = 0; i < p->spec.n_init_containers + p->spec.n_containers; i++) {
                bool init = i < p->spec.n_init_containers;
                const struct container *c = init ? &p->spec.init_containers[i]
                                                 : &p->spec.containers[i - p->spec.n_init_containers];
                const struct kc_container *kc = kc_pod_status_find_container(st, c->name);
                bool done;

                if (!kc || kc->state != KC_CONTAINER_EXITED || container_is_sidecar(c))
                        continue;
                done = init ? kc->exit_code == 0
                            : p->spec.restart_policy == RESTART_POLICY_NEVER ||
                                       (p->spec.restart_policy == RESTART_POLICY_ON_FAILURE && kc->exit_code == 0);
                if (done && cpumanager_remove_container(k->cpus, p->uid, c->name))
                        log_v(2, "CPU manager: pod %s container %s finished: its CPUs are back in the shared pool",
                              p->uid, c->name);
                if (done && memorymanager_container_nodes(k->memory, p->uid, c->name)) {
                        memorymanager_remove_container(k->memory, p->uid, c->name);
                        log_v(2, "memory manager: pod %s container %s finished: its memory is free again", p->uid,
                              c->name);
                }
        }
}

/* one reconcile pass (the timer's) */
static void kubelet_cpu_reconcile(struct kubelet *k) {
        _cleanup_strv_free_ char **active = NULL;

        if (!cpumanager_is_static(k->cpus) && !memorymanager_is_static(k->memory))
                return;
        if (k->config_received && kubelet_active_pod_uids(k, &active) >= 0) {
                (void) cpumanager_remove_stale(k->cpus, active);
                memorymanager_remove_stale(k->memory, active);
        }
        for (size_t i = 0; i < k->n_cpu_sent; i++)
                k->cpu_sent[i].seen = false;
        for (struct pod_worker *w = k->workers; w; w = w->next) {
                const struct kc_pod_status *st = w->observed;

                if (!w->pod || !st)
                        continue;
                release_finished(k, w->pod, st);
                for (size_t i = 0; i < st->n_containers; i++) {
                        const struct kc_container *c = st->containers[i];
                        struct cpu_sent *e = sent_find(k, c->id);
                        char buf[CPUSET_TEXT_MAX + 256];
                        struct cpuset s;
                        uint64_t mems;

                        if (e)
                                e->seen = true;
                        if (c->state != KC_CONTAINER_RUNNING && c->state != KC_CONTAINER_CREATED)
                                continue;
                        if (!cpumanager_container_cpus(k->cpus, w->uid, c->name, &s) || cpuset_empty(&s))
                                continue;
                        cpuset_format(&s, buf, sizeof(buf));
                        /* with the memory manager's NUMA nodes: "cpus/mems" is what was sent */
                        mems = memorymanager_container_nodes(k->memory, w->uid, c->name);
                        if (mems) {
                                size_t len = strlen(buf);
                                buf[len] = '/';
                                tm_mask_format(mems, buf + len + 1, sizeof(buf) - len - 1);
                        }
                        if (e && streq(e->cpus, buf))
                                continue;
                        update_container(k, c->id, buf);
                }
        }
        /* forget the containers that are gone */
        for (size_t i = k->n_cpu_sent; i > 0; i--)
                if (!k->cpu_sent[i - 1].seen) {
                        free(k->cpu_sent[i - 1].id);
                        free(k->cpu_sent[i - 1].cpus);
                        memmove(&k->cpu_sent[i - 1], &k->cpu_sent[i], (k->n_cpu_sent - i) * sizeof(*k->cpu_sent));
                        k->n_cpu_sent--;
                }
}
