/* SPDX-License-Identifier: Apache-2.0 */
/* /metrics and /metrics/probes: Prometheus text format 0.0.4 with upstream's metric names. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <event2/buffer.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "basic/evbuffer.h"
#include "basic/histogram.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "cm/metrics.h"
#include "cri/cri.h"
#include "prober/manager.h"
#include "server/server-internal.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

static void header(struct evbuffer *b, const char *name, const char *type, const char *help) {
        evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* a label value with \, " and newline escaped */
static void add_label_value(struct evbuffer *b, const char *v) {
        for (const char *p = strempty(v); *p; p++) {
                if (*p == '\\' || *p == '"')
                        evbuffer_add_printf(b, "\\%c", *p);
                else if (*p == '\n')
                        evbuffer_add(b, "\\n", 2);
                else
                        evbuffer_add(b, p, 1);
        }
}

static void add_double(struct evbuffer *b, double v) {
        if (isinf(v))
                evbuffer_add_printf(b, v > 0 ? "+Inf" : "-Inf");
        else
                evbuffer_add_printf(b, "%.17g", v);
}

/* name{label="value",le="..."} for each bucket, then _sum and _count */
static void add_histogram(struct evbuffer *b, const char *name, const char *label, const char *value,
                          const struct histogram *h) {
        uint64_t cum = 0;

        for (size_t i = 0; i <= h->n_buckets; i++) {
                cum += i < h->n_buckets ? h->counts[i] : 0;
                evbuffer_add_printf(b, "%s_bucket{", name);
                if (label) {
                        evbuffer_add_printf(b, "%s=\"", label);
                        add_label_value(b, value);
                        evbuffer_add(b, "\",", 2);
                }
                evbuffer_add(b, "le=\"", 4);
                if (i < h->n_buckets)
                        add_double(b, h->bounds[i]);
                else
                        evbuffer_add(b, "+Inf", 4);
                evbuffer_add_printf(b, "\"} %llu\n", (unsigned long long) (i < h->n_buckets ? cum : h->count));
        }
        evbuffer_add_printf(b, "%s_sum", name);
        if (label) {
                evbuffer_add_printf(b, "{%s=\"", label);
                add_label_value(b, value);
                evbuffer_add(b, "\"}", 2);
        }
        evbuffer_add(b, " ", 1);
        add_double(b, h->sum);
        evbuffer_add_printf(b, "\n%s_count", name);
        if (label) {
                evbuffer_add_printf(b, "{%s=\"", label);
                add_label_value(b, value);
                evbuffer_add(b, "\"}", 2);
        }
        evbuffer_add_printf(b, " %llu\n", (unsigned long long) h->count);
}

static void add_counter(struct evbuffer *b, const char *name, const char *help, uint64_t v) {
        header(b, name, "counter", help);
        evbuffer_add_printf(b, "%s %llu\n", name, (unsigned long long) v);
}

/* the resource managers' metrics (pkg/kubelet/metrics), every one [ALPHA] upstream */
static void add_cm_metrics(struct evbuffer *b, const struct cm_metrics *m) {
        static const char *const aligned_name[2] = { "kubelet_container_aligned_compute_resources_count",
                                                     "kubelet_container_aligned_compute_resources_failure_count" };
        static const char *const aligned_help[2] = {
                "[ALPHA] Cumulative number of aligned compute resources allocated to containers by alignment type.",
                "[ALPHA] Cumulative number of failures to allocate aligned compute resources to containers by "
                "alignment type."
        };

        for (int f = 0; f < 2; f++) {
                header(b, aligned_name[f], "counter", aligned_help[f]);
                for (int s = 0; s < CM_ALIGN_SCOPE_MAX; s++)
                        for (int k = 0; k < CM_ALIGN_BOUNDARY_MAX; k++)
                                if (f ? m->has_aligned_failures[s][k] : m->has_aligned[s][k])
                                        evbuffer_add_printf(b, "%s{boundary=\"%s\",scope=\"%s\"} %llu\n",
                                                            aligned_name[f], cm_align_boundary_names[k],
                                                            cm_align_scope_names[s],
                                                            (unsigned long long) (f ? m->aligned_failures[s][k]
                                                                                    : m->aligned[s][k]));
        }
        header(b, "kubelet_cpu_manager_allocation_per_numa", "gauge", "[ALPHA] Number of CPUs allocated per NUMA node");
        for (size_t i = 0; i < m->n_numa; i++)
                evbuffer_add_printf(b, "kubelet_cpu_manager_allocation_per_numa{numa_node=\"%d\"} %d\n", m->numa_ids[i],
                                    m->numa_cpus[i]);
        header(b, "kubelet_cpu_manager_exclusive_cpu_allocation_count", "gauge",
               "[ALPHA] The total number of CPUs exclusively allocated to containers running on this node");
        evbuffer_add_printf(b, "kubelet_cpu_manager_exclusive_cpu_allocation_count %lld\n",
                            (long long) m->exclusive_cpus);
        add_counter(b, "kubelet_cpu_manager_pinning_errors_total",
                    "[ALPHA] The number of cpu core allocations which required pinning failed.", m->cpu_pinning_errors);
        add_counter(b, "kubelet_cpu_manager_pinning_requests_total",
                    "[ALPHA] The number of cpu core allocations which required pinning.", m->cpu_pinning_requests);
        header(b, "kubelet_cpu_manager_shared_pool_size_millicores", "gauge",
               "[ALPHA] The size of the shared CPU pool for non-guaranteed QoS pods, in millicores.");
        evbuffer_add_printf(b, "kubelet_cpu_manager_shared_pool_size_millicores %lld\n",
                            (long long) m->shared_pool_millicores);
        add_counter(b, "kubelet_memory_manager_pinning_errors_total",
                    "[ALPHA] The number of memory pages allocations which required pinning that failed.",
                    m->memory_pinning_errors);
        add_counter(b, "kubelet_memory_manager_pinning_requests_total",
                    "[ALPHA] The number of memory pages allocations which required pinning.",
                    m->memory_pinning_requests);
        header(b, "kubelet_topology_manager_admission_duration_ms", "histogram",
               "[ALPHA] Duration in milliseconds to serve a pod admission request.");
        add_histogram(b, "kubelet_topology_manager_admission_duration_ms", NULL, NULL, &m->tm_admission_duration_ms);
        add_counter(b, "kubelet_topology_manager_admission_errors_total",
                    "[ALPHA] The number of admission request failures where resources could not be aligned.",
                    m->tm_admission_errors);
        add_counter(b, "kubelet_topology_manager_admission_requests_total",
                    "[ALPHA] The number of admission requests where resources have to be aligned.",
                    m->tm_admission_requests);
}

struct ops_ctx {
        struct evbuffer *b;
        int pass; /* 0 total, 1 errors, 2 duration */
};

static void add_op(const struct cri_op_stats *s, void *ud) {
        struct ops_ctx *c = ud;

        if (s->count == 0)
                return;
        switch (c->pass) {
        case 0:
                evbuffer_add_printf(c->b, "kubelet_runtime_operations_total{operation_type=\"%s\"} %llu\n",
                                    s->operation, (unsigned long long) s->count);
                break;
        case 1:
                if (s->errors > 0)
                        evbuffer_add_printf(c->b,
                                            "kubelet_runtime_operations_errors_total{operation_type=\"%s\"} %llu\n",
                                            s->operation, (unsigned long long) s->errors);
                break;
        default:
                add_histogram(c->b, "kubelet_runtime_operations_duration_seconds", "operation_type", s->operation,
                              &s->duration);
        }
}

void api_handle_metrics(struct api_request *r) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        struct api_host_counts n;
        struct ops_ctx ctx = { .b = b };

        if (!b) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        api_host_counts(r->s, &n);
        header(b, "kubelet_running_pods", "gauge", "[ALPHA] Number of pods that have a running pod sandbox");
        evbuffer_add_printf(b, "kubelet_running_pods %zu\n", n.running_pods);
        header(b, "kubelet_running_containers", "gauge", "[ALPHA] Number of containers currently running");
        evbuffer_add_printf(b, "kubelet_running_containers{container_state=\"running\"} %zu\n", n.running_containers);
        header(b, "kubelet_desired_pods", "gauge",
               "[ALPHA] The number of pods the kubelet is being instructed to run. "
               "static is true if the pod is not from the apiserver.");
        evbuffer_add_printf(b, "kubelet_desired_pods{static=\"true\"} %zu\n", n.desired_pods);
        header(b, "kubelet_orphaned_runtime_pods_total", "counter",
               "[ALPHA] Number of pods that have been detected in the container runtime without being already known "
               "to the pod worker. This typically indicates the kubelet was restarted while a pod was force deleted "
               "in the API or in the local configuration, which is unusual.");
        evbuffer_add_printf(b, "kubelet_orphaned_runtime_pods_total %" PRIu64 "\n", n.orphaned_runtime_pods);
        header(b, "kubelet_pod_start_duration_seconds", "histogram",
               "[ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run");
        add_histogram(b, "kubelet_pod_start_duration_seconds", NULL, NULL, n.pod_start);
        if (n.pleg_relist_duration) {
                header(b, "kubelet_pleg_relist_duration_seconds", "histogram",
                       "[ALPHA] Duration in seconds for relisting pods in PLEG.");
                add_histogram(b, "kubelet_pleg_relist_duration_seconds", NULL, NULL, n.pleg_relist_duration);
        }
        if (n.pleg_relist_interval) {
                header(b, "kubelet_pleg_relist_interval_seconds", "histogram",
                       "[ALPHA] Interval in seconds between relisting in PLEG.");
                add_histogram(b, "kubelet_pleg_relist_interval_seconds", NULL, NULL, n.pleg_relist_interval);
        }
        /* kubelet_volume_stats_*, per PersistentVolumeClaim (collectors/volume_stats.go) */
        if (r->s->host.volume_stats) {
                const struct stats_volume *v = NULL;
                size_t nv = r->s->host.volume_stats(r->s->host.userdata, NULL, &v);
                static const struct {
                        const char *name, *help;
                        size_t off;
                } fams[] = {
                        { "kubelet_volume_stats_available_bytes", "Number of available bytes in the volume",
                          offsetof(struct stats_volume, available_bytes) },
                        { "kubelet_volume_stats_capacity_bytes", "Capacity in bytes of the volume",
                          offsetof(struct stats_volume, capacity_bytes) },
                        { "kubelet_volume_stats_inodes", "Maximum number of inodes in the volume",
                          offsetof(struct stats_volume, inodes) },
                        { "kubelet_volume_stats_inodes_free", "Number of free inodes in the volume",
                          offsetof(struct stats_volume, inodes_free) },
                        { "kubelet_volume_stats_inodes_used", "Number of used inodes in the volume",
                          offsetof(struct stats_volume, inodes_used) },
                        { "kubelet_volume_stats_used_bytes", "Number of used bytes in the volume",
                          offsetof(struct stats_volume, used_bytes) },
                };
                for (size_t f = 0; nv > 0 && f < ELEMENTSOF(fams); f++) {
                        _cleanup_free_ char *help = NULL;
                        if (asprintf(&help, "[ALPHA] %s", fams[f].help) < 0)
                                break;
                        header(b, fams[f].name, "gauge", help);
                        for (size_t i = 0; i < nv; i++) {
                                int64_t val;
                                /* a claim used by several pods is one series: its first measurement */
                                bool dup = false;
                                for (size_t j = 0; j < i && !dup; j++)
                                        dup = streq_ptr(v[j].pvc_namespace, v[i].pvc_namespace) &&
                                              streq_ptr(v[j].pvc_name, v[i].pvc_name);
                                if (dup || !v[i].pvc_name)
                                        continue;
                                memcpy(&val, (const char *) &v[i] + fams[f].off, sizeof(val));
                                evbuffer_add_printf(b, "%s{namespace=\"", fams[f].name);
                                add_label_value(b, v[i].pvc_namespace);
                                evbuffer_add_printf(b, "\",persistentvolumeclaim=\"");
                                add_label_value(b, v[i].pvc_name);
                                evbuffer_add_printf(b, "\"} %lld\n", (long long) val);
                        }
                }
        }
        header(b, "kubelet_runtime_operations_total", "counter",
               "[ALPHA] Cumulative number of runtime operations by operation type.");
        ctx.pass = 0;
        cri_client_foreach_stats(r->s->cri, add_op, &ctx);
        header(b, "kubelet_runtime_operations_errors_total", "counter",
               "[ALPHA] Cumulative number of runtime operation errors by operation type.");
        ctx.pass = 1;
        cri_client_foreach_stats(r->s->cri, add_op, &ctx);
        header(b, "kubelet_runtime_operations_duration_seconds", "histogram",
               "[ALPHA] Duration in seconds of runtime operations. Broken down by operation type.");
        ctx.pass = 2;
        cri_client_foreach_stats(r->s->cri, add_op, &ctx);
        if (n.cm)
                add_cm_metrics(b, n.cm);
        api_reply_buffer(r->req, 200, CONTENT_TYPE, b);
}

static const char *probe_result_name(enum probe_result r) {
        switch (r) {
        case PROBE_RESULT_SUCCESS:
                return "successful";
        case PROBE_RESULT_FAILURE:
                return "failed";
        default:
                return "unknown";
        }
}

static void add_probe_count(const struct prober_count *c, void *ud) {
        struct evbuffer *b = ud;

        evbuffer_add(b, "prober_probe_total{container=\"", strlen("prober_probe_total{container=\""));
        add_label_value(b, c->container);
        evbuffer_add(b, "\",namespace=\"", strlen("\",namespace=\""));
        add_label_value(b, c->pod_namespace);
        evbuffer_add(b, "\",pod=\"", strlen("\",pod=\""));
        add_label_value(b, c->pod_name);
        evbuffer_add(b, "\",pod_uid=\"", strlen("\",pod_uid=\""));
        add_label_value(b, c->pod_uid);
        evbuffer_add_printf(b, "\",probe_type=\"%s\",result=\"%s\"} %llu\n", probe_type_to_string(c->type),
                            probe_result_name(c->result), (unsigned long long) c->count);
}

void api_handle_metrics_probes(struct api_request *r) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();

        if (!b) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        header(b, "prober_probe_total", "counter",
               "[ALPHA] Cumulative number of a liveness, readiness or startup probe "
               "for a container by result.");
        probe_manager_foreach_count(r->s->prober, add_probe_count, b);
        /* ckubelet's own (no upstream counterpart): how late the probes started against their schedule */
        header(b, "ckubelet_prober_probe_lateness_seconds", "histogram",
               "Time from when a probe was due to when it started: the probe timers' delay (ckubelet only).");
        add_histogram(b, "ckubelet_prober_probe_lateness_seconds", NULL, NULL, probe_manager_lateness(r->s->prober));
        header(b, "ckubelet_prober_probe_lateness_max_seconds", "gauge",
               "The largest probe lateness since the kubelet started (ckubelet only).");
        evbuffer_add(b, "ckubelet_prober_probe_lateness_max_seconds ",
                     strlen("ckubelet_prober_probe_lateness_max_seconds "));
        add_double(b, probe_manager_lateness_max(r->s->prober));
        evbuffer_add(b, "\n", 1);
        api_reply_buffer(r->req, 200, CONTENT_TYPE, b);
}
