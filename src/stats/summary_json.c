/* SPDX-License-Identifier: Apache-2.0 */
/* The typed Summary's own functions (no provider, no host: linked by its readers' tests too), and its JSON
 * (stats/v1alpha1, what /stats/summary serves): the only place the typed summary becomes JSON.
 * Field names and omissions as upstream's encoding/json of its structs: nil pointers (absent values here) left
 * out, times as metav1.Time (RFC 3339, seconds). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string.h"
#include "basic/time.h"
#include "stats/stats-internal.h"
#include "stats/summary.h"

/* ---------------------------------------------------------------- freeing */

static void network_done(struct stats_network *n) {
        free(n->def.name);
        for (size_t i = 0; i < n->n_interfaces; i++)
                free(n->interfaces[i].name);
        free(n->interfaces);
}

static void pod_done(struct stats_pod_summary *p) {
        free(p->name);
        free(p->namespace_);
        free(p->uid);
        for (size_t i = 0; i < p->n_containers; i++)
                free(p->containers[i].name);
        free(p->containers);
        network_done(&p->network);
        for (size_t i = 0; i < p->n_volumes; i++) {
                free(p->volumes[i].name);
                free(p->volumes[i].pvc_name);
                free(p->volumes[i].pvc_namespace);
        }
        free(p->volumes);
}

struct stats_summary *stats_summary_free(struct stats_summary *s) {
        if (!s)
                return NULL;
        free(s->node.node_name);
        for (size_t i = 0; i < s->node.n_system_containers; i++)
                free(s->node.system_containers[i].name);
        free(s->node.system_containers);
        network_done(&s->node.network);
        for (size_t i = 0; i < s->n_pods; i++)
                pod_done(&s->pods[i]);
        free(s->pods);
        free(s);
        return NULL;
}

const struct stats_system_container *stats_summary_pods_container(const struct stats_summary *s) {
        for (size_t i = 0; s && i < s->node.n_system_containers; i++)
                if (streq_ptr(s->node.system_containers[i].name, "pods"))
                        return &s->node.system_containers[i];
        return NULL;
}

/* ---------------------------------------------------------------- JSON */

struct render {
        bool oom;
};

static void put(struct render *w, json_t *o, const char *key, json_t *v) {
        if (!o || !v || json_object_set_new(o, key, v) < 0)
                w->oom = true;
}

static void put_u64(struct render *w, json_t *o, const char *key, struct stats_u64 v) {
        if (v.set)
                put(w, o, key, stats_juint(v.v));
}

static void append(struct render *w, json_t *a, json_t *v) {
        if (!a || !v || json_array_append_new(a, v) < 0)
                w->oom = true;
}

static json_t *time_json(int64_t unix_nsec) {
        char buf[48];
        return json_string(format_rfc3339((uint64_t) (unix_nsec > 0 ? unix_nsec : 0) / 1000, buf, sizeof(buf)) ?: "");
}

static json_t *psi_data_json(struct render *w, const struct stats_psi_data *d) {
        json_t *o = json_object();
        put(w, o, "total", stats_juint(d->total));
        put(w, o, "avg10", json_real(d->avg10));
        put(w, o, "avg60", json_real(d->avg60));
        put(w, o, "avg300", json_real(d->avg300));
        return o;
}

static void put_psi(struct render *w, json_t *o, const struct stats_psi *p) {
        json_t *v;
        if (!p->present)
                return;
        v = json_object();
        put(w, v, "full", psi_data_json(w, &p->full));
        put(w, v, "some", psi_data_json(w, &p->some));
        put(w, o, "psi", v);
}

static void put_cpu(struct render *w, json_t *parent, const struct stats_cpu *c) {
        json_t *o;
        if (!c->present)
                return;
        o = json_object();
        put(w, o, "time", time_json(c->time_nsec));
        put_u64(w, o, "usageNanoCores", c->usage_nano_cores);
        put_u64(w, o, "usageCoreNanoSeconds", c->usage_core_nano_seconds);
        put_psi(w, o, &c->psi);
        put(w, parent, "cpu", o);
}

static void put_memory(struct render *w, json_t *parent, const struct stats_memory *m) {
        json_t *o;
        if (!m->present)
                return;
        o = json_object();
        put(w, o, "time", time_json(m->time_nsec));
        put_u64(w, o, "availableBytes", m->available_bytes);
        put_u64(w, o, "usageBytes", m->usage_bytes);
        put_u64(w, o, "workingSetBytes", m->working_set_bytes);
        put_u64(w, o, "rssBytes", m->rss_bytes);
        put_u64(w, o, "pageFaults", m->page_faults);
        put_u64(w, o, "majorPageFaults", m->major_page_faults);
        put_psi(w, o, &m->psi);
        put(w, parent, "memory", o);
}

static void put_io(struct render *w, json_t *parent, const struct stats_io *io) {
        json_t *o;
        if (!io->psi.present)
                return;
        o = json_object();
        put(w, o, "time", time_json(io->time_nsec));
        put_psi(w, o, &io->psi);
        put(w, parent, "io", o);
}

static void put_swap(struct render *w, json_t *parent, const struct stats_swap *s) {
        json_t *o;
        if (!s->present)
                return;
        o = json_object();
        put(w, o, "time", time_json(s->time_nsec));
        put_u64(w, o, "swapAvailableBytes", s->swap_available_bytes);
        put(w, o, "swapUsageBytes", stats_juint(s->swap_usage_bytes));
        put(w, parent, "swap", o);
}

static json_t *fs_json(struct render *w, const struct stats_fs *f) {
        json_t *o = json_object();
        put(w, o, "time", time_json(f->time_nsec));
        put_u64(w, o, "availableBytes", f->available_bytes);
        put_u64(w, o, "capacityBytes", f->capacity_bytes);
        put_u64(w, o, "usedBytes", f->used_bytes);
        put_u64(w, o, "inodesFree", f->inodes_free);
        put_u64(w, o, "inodes", f->inodes);
        put_u64(w, o, "inodesUsed", f->inodes_used);
        return o;
}

static void put_fs(struct render *w, json_t *parent, const char *key, const struct stats_fs *f) {
        if (f->present)
                put(w, parent, key, fs_json(w, f));
}

static void put_iface(struct render *w, json_t *o, const struct stats_interface *i) {
        if (i->name)
                put(w, o, "name", stats_jstr(i->name));
        put_u64(w, o, "rxBytes", i->rx_bytes);
        put_u64(w, o, "rxErrors", i->rx_errors);
        put_u64(w, o, "txBytes", i->tx_bytes);
        put_u64(w, o, "txErrors", i->tx_errors);
}

static void put_network(struct render *w, json_t *parent, const struct stats_network *n) {
        json_t *o;
        if (!n->present)
                return;
        o = json_object();
        put(w, o, "time", time_json(n->time_nsec));
        put_iface(w, o, &n->def);
        if (n->n_interfaces > 0) {
                json_t *a = json_array();
                for (size_t i = 0; i < n->n_interfaces; i++) {
                        json_t *x = json_object();
                        put(w, x, "name", stats_jstr(n->interfaces[i].name));
                        put_iface(w, x,
                                  &(struct stats_interface) { .rx_bytes = n->interfaces[i].rx_bytes,
                                                              .rx_errors = n->interfaces[i].rx_errors,
                                                              .tx_bytes = n->interfaces[i].tx_bytes,
                                                              .tx_errors = n->interfaces[i].tx_errors });
                        append(w, a, x);
                }
                put(w, o, "interfaces", a);
        }
        put(w, parent, "network", o);
}

static json_t *container_json(struct render *w, const struct stats_container_summary *c) {
        json_t *o = json_object();
        put(w, o, "name", stats_jstr(c->name));
        put(w, o, "startTime", time_json(c->start_nsec));
        put_cpu(w, o, &c->cpu);
        put_memory(w, o, &c->memory);
        put_io(w, o, &c->io);
        put_swap(w, o, &c->swap);
        put_fs(w, o, "rootfs", &c->rootfs);
        put_fs(w, o, "logs", &c->logs);
        return o;
}

static json_t *pod_json(struct render *w, const struct stats_pod_summary *p) {
        json_t *o = json_object(), *ref = json_object(), *cs = json_array();

        put(w, ref, "name", stats_jstr(p->name));
        put(w, ref, "namespace", stats_jstr(p->namespace_));
        put(w, ref, "uid", stats_jstr(p->uid));
        put(w, o, "podRef", ref);
        put(w, o, "startTime", time_json(p->start_nsec));
        for (size_t i = 0; i < p->n_containers; i++)
                append(w, cs, container_json(w, &p->containers[i]));
        put(w, o, "containers", cs);
        put_cpu(w, o, &p->cpu);
        put_memory(w, o, &p->memory);
        put_io(w, o, &p->io);
        put_swap(w, o, &p->swap);
        put_network(w, o, &p->network);
        if (p->n_volumes > 0) {
                json_t *va = json_array();
                for (size_t i = 0; i < p->n_volumes; i++) {
                        const struct stats_volume_summary *v = &p->volumes[i];
                        json_t *vo = fs_json(w, &v->fs);
                        put(w, vo, "name", stats_jstr(v->name));
                        if (v->pvc_name)
                                put(w, vo, "pvcRef",
                                    json_pack("{s:o, s:o}", "name", stats_jstr(v->pvc_name), "namespace",
                                              stats_jstr(v->pvc_namespace)));
                        append(w, va, vo);
                }
                put(w, o, "volume", va);
        }
        put_fs(w, o, "ephemeral-storage", &p->ephemeral_storage);
        if (p->process_count.set) {
                json_t *ps = json_object();
                put_u64(w, ps, "process_count", p->process_count);
                put(w, o, "process_stats", ps);
        }
        return o;
}

static json_t *node_json(struct render *w, const struct stats_node_summary *n) {
        json_t *o = json_object(), *sc = json_array();

        put(w, o, "nodeName", stats_jstr(n->node_name));
        for (size_t i = 0; i < n->n_system_containers; i++) {
                const struct stats_system_container *c = &n->system_containers[i];
                json_t *x = json_object();
                put(w, x, "name", stats_jstr(c->name));
                put(w, x, "startTime", time_json(c->start_nsec));
                put_cpu(w, x, &c->cpu);
                put_memory(w, x, &c->memory);
                append(w, sc, x);
        }
        put(w, o, "systemContainers", sc);
        put(w, o, "startTime", time_json(n->start_nsec));
        put_cpu(w, o, &n->cpu);
        put_memory(w, o, &n->memory);
        put_io(w, o, &n->io);
        put_swap(w, o, &n->swap);
        put_network(w, o, &n->network);
        put_fs(w, o, "fs", &n->fs);
        if (n->image_fs.present) {
                json_t *rt = json_object();
                put_fs(w, rt, "imageFs", &n->image_fs);
                put(w, o, "runtime", rt);
        }
        if (n->rlimit.present) {
                json_t *rl = json_object();
                put(w, rl, "time", time_json(n->rlimit.time_nsec));
                put(w, rl, "maxpid", json_integer(n->rlimit.maxpid));
                put(w, rl, "curproc", json_integer(n->rlimit.curproc));
                put(w, o, "rlimit", rl);
        }
        return o;
}

int stats_summary_to_json(const struct stats_summary *s, json_t **ret) {
        struct render w = {};
        json_auto_t *doc = json_object();
        json_t *pods = json_array();

        assert(s);
        put(&w, doc, "node", node_json(&w, &s->node));
        for (size_t i = 0; i < s->n_pods; i++)
                append(&w, pods, pod_json(&w, &s->pods[i]));
        put(&w, doc, "pods", pods);
        if (w.oom)
                return -ENOMEM;
        *ret = TAKE_PTR(doc);
        return 0;
}
