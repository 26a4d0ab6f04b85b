/* SPDX-License-Identifier: Apache-2.0 */
/* /metrics/resource: the resource metrics collector of upstream (pkg/kubelet/metrics/collectors), written from a
 * Summary API document in the Prometheus text format as client_golang gathers it: families sorted by name,
 * samples sorted by label values, empty families left out. */
#include <event2/buffer.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/time.h"
#include "stats/summary.h"

char *stats_format_float(double v, char *buf, size_t size) {
        char e[48];
        const char *x;
        int p, exp;

        if (isnan(v)) {
                snprintf(buf, size, "NaN");
                return buf;
        }
        if (isinf(v)) {
                snprintf(buf, size, "%s", v > 0 ? "+Inf" : "-Inf");
                return buf;
        }
        if (v == 0) {
                snprintf(buf, size, "%s", signbit(v) ? "-0" : "0");
                return buf;
        }
        /* the shortest %e that reads back as v has the digits Go's shortest formatting picks */
        for (p = 0; p < 17; p++) {
                snprintf(e, sizeof(e), "%.*e", p, v);
                if (strtod(e, NULL) == v)
                        break;
        }
        x = strchr(e, 'e');
        exp = x ? atoi(x + 1) : 0;
        if (exp < -4 || exp >= 6)
                snprintf(buf, size, "%s", e);
        else
                snprintf(buf, size, "%.*f", p - exp > 0 ? p - exp : 0, v);
        return buf;
}

/* ---------------------------------------------------------------- reading the summary */

struct sample {
        const char *container, *namespace_, *pod; /* borrowed from the summary */
        bool has_cpu, has_mem, has_start;
        double cpu, mem, start;
        int64_t cpu_ms, mem_ms; /* -1: no timestamp */
};

/* cpu and memory of a node/pod/container's stats */
static void read_cpu_mem(const struct stats_cpu *cpu, const struct stats_memory *mem, struct sample *s) {
        if (cpu->present && cpu->usage_core_nano_seconds.set) {
                s->has_cpu = true;
                s->cpu = (double) cpu->usage_core_nano_seconds.v / 1e9;
                s->cpu_ms = cpu->time_nsec > 0 ? cpu->time_nsec / 1000000 : -1;
        }
        if (mem->present && mem->working_set_bytes.set) {
                s->has_mem = true;
                s->mem = (double) mem->working_set_bytes.v;
                s->mem_ms = mem->time_nsec > 0 ? mem->time_nsec / 1000000 : -1;
        }
}

static int cmp_str(const char *a, const char *b) {
        return strcmp(strempty(a), strempty(b));
}

static int cmp_container(const void *a, const void *b) {
        const struct sample *x = a, *y = b;
        int c = cmp_str(x->container, y->container);
        if (c == 0)
                c = cmp_str(x->namespace_, y->namespace_);
        if (c == 0)
                c = cmp_str(x->pod, y->pod);
        return c;
}

static int cmp_pod(const void *a, const void *b) {
        const struct sample *x = a, *y = b;
        int c = cmp_str(x->namespace_, y->namespace_);
        return c ? c : cmp_str(x->pod, y->pod);
}

/* ---------------------------------------------------------------- writing */

static int add_label_value(struct evbuffer *out, const char *v) {
        for (const char *p = strempty(v); *p; p++) {
                int r;
                if (*p == '\\')
                        r = evbuffer_add(out, "\\\\", 2);
                else if (*p == '"')
                        r = evbuffer_add(out, "\\\"", 2);
                else if (*p == '\n')
                        r = evbuffer_add(out, "\\n", 2);
                else
                        r = evbuffer_add(out, p, 1);
                if (r < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int add_header(struct evbuffer *out, const char *name, const char *help, const char *type) {
        return evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type) < 0 ? -ENOMEM : 0;
}

/* name{container="",namespace="",pod=""} value [timestamp]; labels that are NULL are left out */
static int add_sample(struct evbuffer *out, const char *name, const char *container, const char *namespace_,
                      const char *pod, double value, int64_t ts_ms) {
        char num[64];
        const char *keys[] = { "container", "namespace", "pod" };
        const char *vals[] = { container, namespace_, pod };
        bool first = true;

        if (evbuffer_add_printf(out, "%s", name) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                if (!vals[i])
                        continue;
                if (evbuffer_add_printf(out, "%s%s=\"", first ? "{" : ",", keys[i]) < 0 ||
                    add_label_value(out, vals[i]) < 0 || evbuffer_add(out, "\"", 1) < 0)
                        return -ENOMEM;
                first = false;
        }
        if (!first && evbuffer_add(out, "}", 1) < 0)
                return -ENOMEM;
        stats_format_float(value, num, sizeof(num));
        if (ts_ms >= 0 ? evbuffer_add_printf(out, " %s %" PRId64 "\n", num, ts_ms) < 0
                       : evbuffer_add_printf(out, " %s\n", num) < 0)
                return -ENOMEM;
        return 0;
}

enum family_kind { F_CPU, F_MEM, F_START };

static int add_family(struct evbuffer *out, const char *name, const char *help, const char *type,
                      const struct sample *v, size_t n, enum family_kind kind, bool with_container) {
        bool header = false;
        int r;

        for (size_t i = 0; i < n; i++) {
                bool has = kind == F_CPU ? v[i].has_cpu : kind == F_MEM ? v[i].has_mem : v[i].has_start;
                double value = kind == F_CPU ? v[i].cpu : kind == F_MEM ? v[i].mem : v[i].start;
                int64_t ts = kind == F_CPU ? v[i].cpu_ms : kind == F_MEM ? v[i].mem_ms : -1;
                if (!has)
                        continue;
                if (!header) {
                        r = add_header(out, name, help, type);
                        if (r < 0)
                                return r;
                        header = true;
                }
                r = add_sample(out, name, with_container ? v[i].container : NULL, v[i].namespace_, v[i].pod, value, ts);
                if (r < 0)
                        return r;
        }
        return 0;
}

int stats_resource_metrics(const struct stats_summary *summary, struct evbuffer *out) {
        _cleanup_free_ struct sample *cs = NULL, *ps = NULL;
        struct sample node = { .cpu_ms = -1, .mem_ms = -1 };
        size_t ncs = 0, nps = 0;
        int r;

        if (summary) {
                size_t n = 0;
                read_cpu_mem(&summary->node.cpu, &summary->node.memory, &node);
                for (size_t i = 0; i < summary->n_pods; i++)
                        n += summary->pods[i].n_containers;
                ps = calloc(summary->n_pods + 1, sizeof(*ps));
                cs = calloc(n + 1, sizeof(*cs));
                if (!ps || !cs)
                        return -ENOMEM;
                for (size_t i = 0; i < summary->n_pods; i++) {
                        const struct stats_pod_summary *pod = &summary->pods[i];

                        if (!pod->name || !pod->namespace_)
                                continue;
                        ps[nps] = (struct sample) {
                                .namespace_ = pod->namespace_, .pod = pod->name, .cpu_ms = -1, .mem_ms = -1
                        };
                        read_cpu_mem(&pod->cpu, &pod->memory, &ps[nps]);
                        nps++;
                        for (size_t j = 0; j < pod->n_containers; j++) {
                                const struct stats_container_summary *c = &pod->containers[j];
                                if (!c->name)
                                        continue;
                                cs[ncs] = (struct sample) { .container = c->name,
                                                            .namespace_ = pod->namespace_,
                                                            .pod = pod->name,
                                                            .cpu_ms = -1,
                                                            .mem_ms = -1 };
                                read_cpu_mem(&c->cpu, &c->memory, &cs[ncs]);
                                /* upstream skips a start time at or before the epoch */
                                if (c->start_nsec / NSEC_PER_SEC > 0) {
                                        cs[ncs].has_start = true;
                                        cs[ncs].start = (double) c->start_nsec / 1e9;
                                }
                                ncs++;
                        }
                }
                if (ncs > 1)
                        qsort(cs, ncs, sizeof(*cs), cmp_container);
                if (nps > 1)
                        qsort(ps, nps, sizeof(*ps), cmp_pod);
        }

        r = add_family(out, "container_cpu_usage_seconds_total",
                       "[STABLE] Cumulative cpu time consumed by the container in core-seconds", "counter", cs, ncs,
                       F_CPU, true);
        if (r >= 0)
                r = add_family(out, "container_memory_working_set_bytes",
                               "[STABLE] Current working set of the container in bytes", "gauge", cs, ncs, F_MEM, true);
        if (r >= 0)
                r = add_family(out, "container_start_time_seconds",
                               "[STABLE] Start time of the container since unix epoch in seconds", "gauge", cs, ncs,
                               F_START, true);
        if (r >= 0)
                r = add_family(out, "node_cpu_usage_seconds_total",
                               "[STABLE] Cumulative cpu time consumed by the node in core-seconds", "counter", &node, 1,
                               F_CPU, false);
        if (r >= 0)
                r = add_family(out, "node_memory_working_set_bytes",
                               "[STABLE] Current working set of the node in bytes", "gauge", &node, 1, F_MEM, false);
        if (r >= 0)
                r = add_family(out, "pod_cpu_usage_seconds_total",
                               "[STABLE] Cumulative cpu time consumed by the pod in core-seconds", "counter", ps, nps,
                               F_CPU, false);
        if (r >= 0)
                r = add_family(out, "pod_memory_working_set_bytes", "[STABLE] Current working set of the pod in bytes",
                               "gauge", ps, nps, F_MEM, false);
        if (r >= 0)
                r = add_header(out, "resource_scrape_error",
                               "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
                               "gauge");
        if (r >= 0)
                r = add_sample(out, "resource_scrape_error", NULL, NULL, NULL, summary ? 0 : 1, -1);
        if (r >= 0)
                r = add_header(out, "scrape_error",
                               "[ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container "
                               "metrics, 0 otherwise",
                               "gauge");
        if (r >= 0)
                r = add_sample(out, "scrape_error", NULL, NULL, NULL, summary ? 0 : 1, -1);
        return r;
}
