/* SPDX-License-Identifier: Apache-2.0 */
/* The Prometheus text of /metrics/cadvisor from what cadvisor.c read: cAdvisor's families (names, help texts,
 * types and labels of its PrometheusCollector and PrometheusMachineCollector, as the kubelet registers them),
 * written as client_golang's registry does: families sorted by name, samples sorted by label values. Pure. */
#include "stats/cadvisor.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string.h"
#include "stats/summary.h"

void cadvisor_stats_done(struct cadvisor_stats *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_disk_io; i++)
                free(s->disk_io[i].device);
        free(s->disk_io);
        for (size_t i = 0; i < s->n_fs; i++)
                free(s->fs[i].device);
        free(s->fs);
        free(s->net);
        *s = (struct cadvisor_stats) {};
}

void cadvisor_series_done(struct cadvisor_series *s) {
        if (!s)
                return;
        free(s->labels.container);
        free(s->labels.id);
        free(s->labels.image);
        free(s->labels.name);
        free(s->labels.namespace_);
        free(s->labels.pod);
        cadvisor_stats_done(&s->stats);
}

/* ---------------------------------------------------------------- samples */

/* the family's extra label, and where it sorts among the base labels */
enum extra_label {
        EXTRA_NONE,
        EXTRA_CPU,       /* container, cpu, id, ... */
        EXTRA_DEVICE,    /* container, device, id, ... */
        EXTRA_INTERFACE, /* ..., image, interface, name, ... */
};

struct sample {
        const struct cadvisor_labels *l;
        const char *extra;
        double value;
        int64_t ts_ms; /* < 0: none */
};

struct sample_list {
        struct sample *v;
        size_t n, cap;
        enum extra_label extra;
};

static int add(struct sample_list *sl, const struct cadvisor_series *s, const char *extra, double value, bool ts) {
        if (sl->n == sl->cap) {
                size_t cap = sl->cap ? sl->cap * 2 : 16;
                struct sample *n = reallocarray(sl->v, cap, sizeof(*n));
                if (!n)
                        return -ENOMEM;
                sl->v = n;
                sl->cap = cap;
        }
        sl->v[sl->n++] = (struct sample) {
                .l = &s->labels,
                .extra = extra,
                .value = value,
                .ts_ms = ts ? s->stats.timestamp_ms : -1,
        };
        return 0;
}

/* the label values in label-name order */
static size_t label_values(const struct sample *s, enum extra_label extra, const char *out[static 7]) {
        const struct cadvisor_labels *l = s->l;
        size_t n = 0;

        out[n++] = l->container;
        if (extra == EXTRA_CPU || extra == EXTRA_DEVICE)
                out[n++] = s->extra;
        out[n++] = l->id;
        out[n++] = l->image;
        if (extra == EXTRA_INTERFACE)
                out[n++] = s->extra;
        out[n++] = l->name;
        out[n++] = l->namespace_;
        out[n++] = l->pod;
        return n;
}

static enum extra_label sort_extra;

static int sample_cmp(const void *a, const void *b) {
        const char *va[7], *vb[7];
        size_t n = label_values(a, sort_extra, va);

        (void) label_values(b, sort_extra, vb);
        for (size_t i = 0; i < n; i++) {
                int c = strcmp(strempty(va[i]), strempty(vb[i]));
                if (c != 0)
                        return c;
        }
        return 0;
}

/* a label value with \\, " and newline escaped; the runs between them in one piece */
static void add_escaped(struct evbuffer *b, const char *v) {
        const char *p = strempty(v);

        for (;;) {
                size_t n = strcspn(p, "\\\"\n");
                if (n > 0)
                        evbuffer_add(b, p, n);
                p += n;
                if (!*p)
                        return;
                evbuffer_add(b, *p == '\n' ? "\\n" : *p == '"' ? "\\\"" : "\\\\", 2);
                p++;
        }
}

static const char *extra_name(enum extra_label e) {
        switch (e) {
        case EXTRA_CPU:
                return "cpu";
        case EXTRA_DEVICE:
                return "device";
        case EXTRA_INTERFACE:
                return "interface";
        default:
                return NULL;
        }
}

static int write_family(struct evbuffer *b, const char *name, const char *help, const char *type,
                        struct sample_list *sl) {
        static const char *const base[] = { "container", "id", "image", "name", "namespace", "pod" };
        const char *names[7];
        size_t nn = 0;
        char num[64];

        if (sl->n == 0)
                return 0;
        names[nn++] = base[0];
        if (sl->extra == EXTRA_CPU || sl->extra == EXTRA_DEVICE)
                names[nn++] = extra_name(sl->extra);
        names[nn++] = base[1];
        names[nn++] = base[2];
        if (sl->extra == EXTRA_INTERFACE)
                names[nn++] = extra_name(sl->extra);
        names[nn++] = base[3];
        names[nn++] = base[4];
        names[nn++] = base[5];

        sort_extra = sl->extra;
        qsort(sl->v, sl->n, sizeof(*sl->v), sample_cmp);
        if (evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < sl->n; i++) {
                const char *values[7];
                (void) label_values(&sl->v[i], sl->extra, values);
                evbuffer_add_printf(b, "%s{", name);
                for (size_t j = 0; j < nn; j++) {
                        evbuffer_add_printf(b, "%s%s=\"", j ? "," : "", names[j]);
                        add_escaped(b, values[j]);
                        evbuffer_add(b, "\"", 1);
                }
                stats_format_float(sl->v[i].value, num, sizeof(num));
                if (sl->v[i].ts_ms >= 0)
                        evbuffer_add_printf(b, "} %s %" PRId64 "\n", num, sl->v[i].ts_ms);
                else
                        evbuffer_add_printf(b, "} %s\n", num);
        }
        return 0;
}

/* ---------------------------------------------------------------- families */

#define NS_PER_SEC 1e9

/* "Size after which we consider memory to be unlimited" in cAdvisor: limits above read 0 */
static double spec_memory(uint64_t v) {
        return v > (UINT64_C(1) << 62) ? 0 : (double) v;
}

typedef int (*family_fn)(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms);

static int f_cfs_periods(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        const struct cadvisor_stats *st = &s->stats;
        return st->has_cpu && st->cpu_quota_us != 0 ? add(sl, s, NULL, (double) st->cfs_periods, true) : 0;
}
static int f_cfs_throttled_periods(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        const struct cadvisor_stats *st = &s->stats;
        return st->has_cpu && st->cpu_quota_us != 0 ? add(sl, s, NULL, (double) st->cfs_throttled_periods, true) : 0;
}
static int f_cfs_throttled_seconds(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        const struct cadvisor_stats *st = &s->stats;
        return st->has_cpu && st->cpu_quota_us != 0 ? add(sl, s, NULL, (double) st->cfs_throttled_ns / NS_PER_SEC, true)
                                                    : 0;
}
static int f_cpu_system(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_cpu ? add(sl, s, NULL, (double) s->stats.cpu_system_ns / NS_PER_SEC, true) : 0;
}
static int f_cpu_usage(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        /* no per-cpu usage (the kubelet does not enable it): one "total" sample, when there is any usage */
        return s->stats.has_cpu && s->stats.cpu_total_ns > 0
                       ? add(sl, s, "total", (double) s->stats.cpu_total_ns / NS_PER_SEC, true)
                       : 0;
}
static int f_cpu_user(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_cpu ? add(sl, s, NULL, (double) s->stats.cpu_user_ns / NS_PER_SEC, true) : 0;
}
static int f_creation_time(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return add(sl, s, NULL, (double) s->stats.creation_time_sec, false);
}
static int f_fds(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_processes ? add(sl, s, NULL, (double) s->stats.file_descriptors, true) : 0;
}

static int fs_each(struct sample_list *sl, const struct cadvisor_series *s, size_t field) {
        for (size_t i = 0; i < s->stats.n_fs; i++) {
                const struct cadvisor_fs *f = &s->stats.fs[i];
                uint64_t v = field == 0 ? f->inodes_free : field == 1 ? f->inodes : field == 2 ? f->limit : f->usage;
                if (add(sl, s, f->device, (double) v, true) < 0)
                        return -ENOMEM;
        }
        return 0;
}
static int f_fs_inodes_free(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return fs_each(sl, s, 0);
}
static int f_fs_inodes_total(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return fs_each(sl, s, 1);
}
static int f_fs_limit(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return fs_each(sl, s, 2);
}
static int f_fs_usage(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return fs_each(sl, s, 3);
}

static int io_each(struct sample_list *sl, const struct cadvisor_series *s, bool write) {
        for (size_t i = 0; i < s->stats.n_disk_io; i++) {
                const struct cadvisor_disk_io *d = &s->stats.disk_io[i];
                if (add(sl, s, d->device, (double) (write ? d->write_bytes : d->read_bytes), true) < 0)
                        return -ENOMEM;
        }
        return 0;
}
static int f_fs_reads_bytes(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return io_each(sl, s, false);
}
static int f_fs_writes_bytes(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return io_each(sl, s, true);
}

static int f_last_seen(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        int r = add(sl, s, NULL, (double) (now_ms / 1000), false);
        if (r >= 0)
                sl->v[sl->n - 1].ts_ms = now_ms;
        return r;
}

#define MEM_FAMILY(fn, field)                                                                     \
        static int fn(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {  \
                return s->stats.has_memory ? add(sl, s, NULL, (double) s->stats.field, true) : 0; \
        }
MEM_FAMILY(f_mem_cache, mem_cache)
MEM_FAMILY(f_mem_failcnt, mem_failcnt)
MEM_FAMILY(f_mem_mapped_file, mem_mapped_file)
MEM_FAMILY(f_mem_max_usage, mem_max_usage)
MEM_FAMILY(f_mem_rss, mem_rss)
MEM_FAMILY(f_mem_swap, mem_swap)
MEM_FAMILY(f_mem_usage, mem_usage)
MEM_FAMILY(f_mem_working_set, mem_working_set)

enum net_field { RX_BYTES, RX_ERRORS, RX_DROPPED, RX_PACKETS, TX_BYTES, TX_ERRORS, TX_DROPPED, TX_PACKETS };

static int net_each(struct sample_list *sl, const struct cadvisor_series *s, enum net_field f) {
        for (size_t i = 0; i < s->stats.n_net; i++) {
                const struct net_dev_stats *n = &s->stats.net[i];
                uint64_t v;
                switch (f) {
                case RX_BYTES:
                        v = n->rx_bytes;
                        break;
                case RX_ERRORS:
                        v = n->rx_errors;
                        break;
                case RX_DROPPED:
                        v = n->rx_dropped;
                        break;
                case RX_PACKETS:
                        v = n->rx_packets;
                        break;
                case TX_BYTES:
                        v = n->tx_bytes;
                        break;
                case TX_ERRORS:
                        v = n->tx_errors;
                        break;
                case TX_DROPPED:
                        v = n->tx_dropped;
                        break;
                default:
                        v = n->tx_packets;
                        break;
                }
                if (add(sl, s, n->name, (double) v, true) < 0)
                        return -ENOMEM;
        }
        return 0;
}

#define NET_FAMILY(fn, field)                                                                    \
        static int fn(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) { \
                return net_each(sl, s, field);                                                   \
        }
NET_FAMILY(f_rx_bytes, RX_BYTES)
NET_FAMILY(f_rx_errors, RX_ERRORS)
NET_FAMILY(f_rx_dropped, RX_DROPPED)
NET_FAMILY(f_rx_packets, RX_PACKETS)
NET_FAMILY(f_tx_bytes, TX_BYTES)
NET_FAMILY(f_tx_errors, TX_ERRORS)
NET_FAMILY(f_tx_dropped, TX_DROPPED)
NET_FAMILY(f_tx_packets, TX_PACKETS)

static int f_oom(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return add(sl, s, NULL, (double) s->stats.oom_events, true);
}
static int f_processes(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_processes ? add(sl, s, NULL, (double) s->stats.processes, true) : 0;
}
static int f_cpu_period(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_cpu_spec ? add(sl, s, NULL, (double) s->stats.cpu_period_us, false) : 0;
}
static int f_cpu_quota(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_cpu_spec && s->stats.cpu_quota_us != 0
                       ? add(sl, s, NULL, (double) s->stats.cpu_quota_us, false)
                       : 0;
}
static int f_cpu_shares(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_cpu_spec ? add(sl, s, NULL, (double) s->stats.cpu_shares, false) : 0;
}
static int f_mem_limit(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_memory_spec ? add(sl, s, NULL, spec_memory(s->stats.mem_limit), false) : 0;
}
static int f_mem_reservation(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_memory_spec ? add(sl, s, NULL, spec_memory(s->stats.mem_reservation), false) : 0;
}
static int f_mem_swap_limit(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_memory_spec ? add(sl, s, NULL, spec_memory(s->stats.mem_swap_limit), false) : 0;
}
static int f_start_time(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return add(sl, s, NULL, (double) s->stats.start_time_sec, false);
}
static int f_threads(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_processes ? add(sl, s, NULL, (double) s->stats.threads, true) : 0;
}
static int f_threads_max(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {
        return s->stats.has_processes ? add(sl, s, NULL, (double) s->stats.threads_max, true) : 0;
}

/* cadvisor's PSI totals are microseconds */
#define PSI_FAMILY(fn, res, which)                                                                                    \
        static int fn(struct sample_list *sl, const struct cadvisor_series *s, int64_t now_ms) {                      \
                return s->stats.has_psi_##res ? add(sl, s, NULL, (double) s->stats.psi_##res.which.total / 1e6, true) \
                                              : 0;                                                                    \
        }
PSI_FAMILY(f_psi_cpu_full, cpu, full)
PSI_FAMILY(f_psi_cpu_some, cpu, some)
PSI_FAMILY(f_psi_memory_full, memory, full)
PSI_FAMILY(f_psi_memory_some, memory, some)
PSI_FAMILY(f_psi_io_full, io, full)
PSI_FAMILY(f_psi_io_some, io, some)

struct family {
        const char *name, *type, *help;
        enum extra_label extra;
        family_fn fn;
};

/* sorted by name */
static const struct family families[] = {
        { "container_cpu_cfs_periods_total", "counter", "Number of elapsed enforcement period intervals.", EXTRA_NONE,
          f_cfs_periods },
        { "container_cpu_cfs_throttled_periods_total", "counter", "Number of throttled period intervals.", EXTRA_NONE,
          f_cfs_throttled_periods },
        { "container_cpu_cfs_throttled_seconds_total", "counter",
          "Total time duration the container has been throttled.", EXTRA_NONE, f_cfs_throttled_seconds },
        { "container_cpu_system_seconds_total", "counter", "Cumulative system cpu time consumed in seconds.",
          EXTRA_NONE, f_cpu_system },
        { "container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed in seconds.", EXTRA_CPU,
          f_cpu_usage },
        { "container_cpu_user_seconds_total", "counter", "Cumulative user cpu time consumed in seconds.", EXTRA_NONE,
          f_cpu_user },
        { "container_creation_time_seconds", "gauge", "Container creation time since unix epoch in seconds.",
          EXTRA_NONE, f_creation_time },
        { "container_file_descriptors", "gauge", "Number of open file descriptors for the container.", EXTRA_NONE,
          f_fds },
        { "container_fs_inodes_free", "gauge", "Number of available Inodes", EXTRA_DEVICE, f_fs_inodes_free },
        { "container_fs_inodes_total", "gauge", "Number of Inodes", EXTRA_DEVICE, f_fs_inodes_total },
        { "container_fs_limit_bytes", "gauge",
          "Number of bytes that can be consumed by the container on this filesystem.", EXTRA_DEVICE, f_fs_limit },
        { "container_fs_reads_bytes_total", "counter", "Cumulative count of bytes read", EXTRA_DEVICE,
          f_fs_reads_bytes },
        { "container_fs_usage_bytes", "gauge", "Number of bytes that are consumed by the container on this filesystem.",
          EXTRA_DEVICE, f_fs_usage },
        { "container_fs_writes_bytes_total", "counter", "Cumulative count of bytes written", EXTRA_DEVICE,
          f_fs_writes_bytes },
        { "container_last_seen", "gauge", "Last time a container was seen by the exporter", EXTRA_NONE, f_last_seen },
        { "container_memory_cache", "gauge", "Number of bytes of page cache memory.", EXTRA_NONE, f_mem_cache },
        { "container_memory_failcnt", "counter", "Number of memory usage hits limits", EXTRA_NONE, f_mem_failcnt },
        { "container_memory_mapped_file", "gauge", "Size of memory mapped files in bytes.", EXTRA_NONE,
          f_mem_mapped_file },
        { "container_memory_max_usage_bytes", "gauge", "Maximum memory usage recorded in bytes", EXTRA_NONE,
          f_mem_max_usage },
        { "container_memory_rss", "gauge", "Size of RSS in bytes.", EXTRA_NONE, f_mem_rss },
        { "container_memory_swap", "gauge", "Container swap usage in bytes.", EXTRA_NONE, f_mem_swap },
        { "container_memory_usage_bytes", "gauge",
          "Current memory usage in bytes, including all memory regardless of when it was accessed", EXTRA_NONE,
          f_mem_usage },
        { "container_memory_working_set_bytes", "gauge", "Current working set in bytes.", EXTRA_NONE,
          f_mem_working_set },
        { "container_network_receive_bytes_total", "counter", "Cumulative count of bytes received", EXTRA_INTERFACE,
          f_rx_bytes },
        { "container_network_receive_errors_total", "counter", "Cumulative count of errors encountered while receiving",
          EXTRA_INTERFACE, f_rx_errors },
        { "container_network_receive_packets_dropped_total", "counter",
          "Cumulative count of packets dropped while receiving", EXTRA_INTERFACE, f_rx_dropped },
        { "container_network_receive_packets_total", "counter", "Cumulative count of packets received", EXTRA_INTERFACE,
          f_rx_packets },
        { "container_network_transmit_bytes_total", "counter", "Cumulative count of bytes transmitted", EXTRA_INTERFACE,
          f_tx_bytes },
        { "container_network_transmit_errors_total", "counter",
          "Cumulative count of errors encountered while transmitting", EXTRA_INTERFACE, f_tx_errors },
        { "container_network_transmit_packets_dropped_total", "counter",
          "Cumulative count of packets dropped while transmitting", EXTRA_INTERFACE, f_tx_dropped },
        { "container_network_transmit_packets_total", "counter", "Cumulative count of packets transmitted",
          EXTRA_INTERFACE, f_tx_packets },
        { "container_oom_events_total", "counter", "Count of out of memory events observed for the container",
          EXTRA_NONE, f_oom },
        { "container_pressure_cpu_stalled_seconds_total", "counter",
          "Total time duration no tasks in the container could make progress due to CPU congestion.", EXTRA_NONE,
          f_psi_cpu_full },
        { "container_pressure_cpu_waiting_seconds_total", "counter",
          "Total time duration tasks in the container have waited due to CPU congestion.", EXTRA_NONE, f_psi_cpu_some },
        { "container_pressure_io_stalled_seconds_total", "counter",
          "Total time duration no tasks in the container could make progress due to IO congestion.", EXTRA_NONE,
          f_psi_io_full },
        { "container_pressure_io_waiting_seconds_total", "counter",
          "Total time duration tasks in the container have waited due to IO congestion.", EXTRA_NONE, f_psi_io_some },
        { "container_pressure_memory_stalled_seconds_total", "counter",
          "Total time duration no tasks in the container could make progress due to memory congestion.", EXTRA_NONE,
          f_psi_memory_full },
        { "container_pressure_memory_waiting_seconds_total", "counter",
          "Total time duration tasks in the container have waited due to memory congestion.", EXTRA_NONE,
          f_psi_memory_some },
        { "container_processes", "gauge", "Number of processes running inside the container.", EXTRA_NONE,
          f_processes },
        /* container_scrape_error: written apart, between these */
        { "container_spec_cpu_period", "gauge", "CPU period of the container.", EXTRA_NONE, f_cpu_period },
        { "container_spec_cpu_quota", "gauge", "CPU quota of the container.", EXTRA_NONE, f_cpu_quota },
        { "container_spec_cpu_shares", "gauge", "CPU share of the container.", EXTRA_NONE, f_cpu_shares },
        { "container_spec_memory_limit_bytes", "gauge", "Memory limit for the container.", EXTRA_NONE, f_mem_limit },
        { "container_spec_memory_reservation_limit_bytes", "gauge", "Memory reservation limit for the container.",
          EXTRA_NONE, f_mem_reservation },
        { "container_spec_memory_swap_limit_bytes", "gauge", "Memory swap limit for the container.", EXTRA_NONE,
          f_mem_swap_limit },
        { "container_start_time_seconds", "gauge", "Start time of the container since unix epoch in seconds.",
          EXTRA_NONE, f_start_time },
        { "container_threads", "gauge", "Number of threads running inside the container", EXTRA_NONE, f_threads },
        { "container_threads_max", "gauge",
          "Maximum number of threads allowed inside the container, infinity if value is zero", EXTRA_NONE,
          f_threads_max },
};

/* ---------------------------------------------------------------- machine */

static int machine_family(struct evbuffer *b, const struct cadvisor_machine *m, const char *name, const char *help,
                          double v, int64_t ts_ms) {
        char num[64];

        stats_format_float(v, num, sizeof(num));
        if (evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s{boot_id=\"", name, help, name, name) < 0)
                return -ENOMEM;
        add_escaped(b, m->boot_id);
        evbuffer_add(b, "\",machine_id=\"", strlen("\",machine_id=\""));
        add_escaped(b, m->machine_id);
        evbuffer_add(b, "\",system_uuid=\"", strlen("\",system_uuid=\""));
        add_escaped(b, m->system_uuid);
        evbuffer_add_printf(b, "\"} %s %" PRId64 "\n", num, ts_ms);
        return 0;
}

static int write_scrape_error(struct evbuffer *b, const char *name, const char *help, bool error) {
        return evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %d\n", name, help, name, name, error ? 1 : 0) <
                               0
                       ? -ENOMEM
                       : 0;
}

int cadvisor_render(const struct cadvisor_series *series, size_t n, const struct cadvisor_machine *machine,
                    bool scrape_error, int64_t now_ms, struct evbuffer *out) {
        struct sample_list sl = {};
        int r = 0;

        {
                /* cadvisor_version_info sorts first */
                const char *kernel = machine ? machine->kernel_version : "", *os = machine ? machine->os_version : "";
                evbuffer_add_printf(
                        out, "# HELP cadvisor_version_info A metric with a constant '1' value labeled by kernel "
                             "version, OS version, docker version, cadvisor version & cadvisor revision.\n"
                             "# TYPE cadvisor_version_info gauge\n"
                             "cadvisor_version_info{cadvisorRevision=\"\",cadvisorVersion=\"\",dockerVersion=\"\","
                             "kernelVersion=\"");
                add_escaped(out, kernel);
                evbuffer_add(out, "\",osVersion=\"", strlen("\",osVersion=\""));
                add_escaped(out, os);
                evbuffer_add(out, "\"} 1\n", 5);
        }
        for (size_t f = 0; f < ELEMENTSOF(families); f++) {
                if (streq(families[f].name, "container_spec_cpu_period")) {
                        r = write_scrape_error(out, "container_scrape_error",
                                               "1 if there was an error while getting container metrics, 0 otherwise",
                                               scrape_error);
                        if (r < 0)
                                goto out;
                }
                sl.n = 0;
                sl.extra = families[f].extra;
                for (size_t i = 0; i < n; i++) {
                        r = families[f].fn(&sl, &series[i], now_ms);
                        if (r < 0)
                                goto out;
                }
                r = write_family(out, families[f].name, families[f].help, families[f].type, &sl);
                if (r < 0)
                        goto out;
        }
        if (machine) {
                if (machine_family(out, machine, "machine_cpu_cores", "Number of logical CPU cores.", machine->cores,
                                   now_ms) < 0 ||
                    machine_family(out, machine, "machine_cpu_physical_cores", "Number of physical CPU cores.",
                                   machine->physical_cores, now_ms) < 0 ||
                    machine_family(out, machine, "machine_cpu_sockets", "Number of CPU sockets.", machine->sockets,
                                   now_ms) < 0 ||
                    machine_family(out, machine, "machine_memory_bytes", "Amount of memory installed on the machine.",
                                   (double) machine->memory_bytes, now_ms) < 0) {
                        r = -ENOMEM;
                        goto out;
                }
        }
        r = write_scrape_error(out, "machine_scrape_error",
                               "1 if there was an error while getting machine metrics, 0 otherwise.", !machine);
        if (r < 0)
                goto out;
        if (machine &&
            machine_family(out, machine, "machine_swap_bytes", "Amount of swap memory available on the machine.",
                           (double) machine->swap_bytes, now_ms) < 0)
                r = -ENOMEM;
out:
        free(sl.v);
        return r;
}
