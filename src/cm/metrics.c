/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/metrics.h"

#include "cm/cpumanager/cpumanager.h"

const char *const cm_align_scope_names[CM_ALIGN_SCOPE_MAX] = { "container", "pod" };
const char *const cm_align_boundary_names[CM_ALIGN_BOUNDARY_MAX] = { "numa_node", "physical_cpu", "uncore_cache" };

void cm_metrics_init(struct cm_metrics *m) {
        *m = (struct cm_metrics) {};
        histogram_init_exponential(&m->tm_admission_duration_ms, 0.05, 2, 15);
        m->has_aligned_failures[CM_ALIGN_SCOPE_CONTAINER][CM_ALIGN_NUMA_NODE] = true;
        m->has_aligned_failures[CM_ALIGN_SCOPE_POD][CM_ALIGN_NUMA_NODE] = true;
}

void cm_metrics_init_cpu_static(struct cm_metrics *m) {
        m->has_aligned_failures[CM_ALIGN_SCOPE_CONTAINER][CM_ALIGN_PHYSICAL_CPU] = true;
        m->has_aligned[CM_ALIGN_SCOPE_CONTAINER][CM_ALIGN_PHYSICAL_CPU] = true;
        m->has_aligned[CM_ALIGN_SCOPE_CONTAINER][CM_ALIGN_UNCORE_CACHE] = true;
}

void cm_metrics_aligned(struct cm_metrics *m, enum cm_align_scope s, enum cm_align_boundary b, uint64_t n) {
        m->has_aligned[s][b] = true;
        m->aligned[s][b] += n;
}

void cm_metrics_aligned_failure(struct cm_metrics *m, enum cm_align_scope s, enum cm_align_boundary b) {
        m->has_aligned_failures[s][b] = true;
        m->aligned_failures[s][b]++;
}

void cm_metrics_fill_cpu(struct cm_metrics *m, const struct cpumanager *cpus) {
        const struct cpu_topology *t;
        struct cpuset shared, exclusive, allocatable;

        m->shared_pool_millicores = m->exclusive_cpus = 0;
        m->n_numa = 0;
        if (!cpumanager_is_static(cpus))
                return;
        t = cpumanager_topology(cpus);
        /* GetAvailableCPUs: the shared pool less the reserved CPUs */
        shared = cpumanager_shared_pool(cpus);
        allocatable = cpumanager_allocatable(cpus);
        shared = cpuset_and(&shared, &allocatable);
        exclusive = cpumanager_all_exclusive(cpus);
        m->shared_pool_millicores = (int64_t) cpuset_count(&shared) * 1000;
        m->exclusive_cpus = cpuset_count(&exclusive);
        for (size_t i = 0; i < t->n; i++) {
                size_t k;
                for (k = 0; k < m->n_numa && m->numa_ids[k] != t->cpus[i].numa; k++)
                        ;
                if (k == m->n_numa) {
                        if (m->n_numa >= CM_METRICS_MAX_NUMA)
                                continue;
                        m->numa_ids[m->n_numa] = t->cpus[i].numa;
                        m->numa_cpus[m->n_numa++] = 0;
                }
                m->numa_cpus[k] += cpuset_has(&exclusive, t->cpus[i].cpu);
        }
        /* ascending node ids */
        for (size_t i = 1; i < m->n_numa; i++)
                for (size_t j = i; j > 0 && m->numa_ids[j - 1] > m->numa_ids[j]; j--) {
                        int a = m->numa_ids[j], b = m->numa_cpus[j];
                        m->numa_ids[j] = m->numa_ids[j - 1];
                        m->numa_cpus[j] = m->numa_cpus[j - 1];
                        m->numa_ids[j - 1] = a;
                        m->numa_cpus[j - 1] = b;
                }
}
