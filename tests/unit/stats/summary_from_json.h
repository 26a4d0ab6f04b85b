/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Tests only: a struct stats_summary from a stats/v1alpha1 JSON document (the inverse of stats_summary_to_json), so
 * that tests can write their summaries as upstream's JSON. A field missing from the JSON is absent in the struct. */

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "basic/time.h"
#include "stats/summary.h"

static inline struct stats_u64 sfj_u64(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
                return (struct stats_u64) {};
        return (struct stats_u64) { true, (uint64_t) json_integer_value(v) };
}

static inline int64_t sfj_time(const json_t *o, const char *key) {
        const char *t = json_string_value(json_object_get(o, key));
        int64_t ns = 0;
        if (t)
                (void) parse_rfc3339(t, &ns);
        return ns;
}

static inline char *sfj_str(const json_t *o, const char *key) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ? strdup(s) : NULL;
}

static inline void sfj_psi(const json_t *o, struct stats_psi *p) {
        const json_t *psi = json_object_get(o, "psi");
        struct stats_psi_data *d[] = { &p->full, &p->some };
        const char *k[] = { "full", "some" };
        if (!psi)
                return;
        p->present = true;
        for (int i = 0; i < 2; i++) {
                const json_t *x = json_object_get(psi, k[i]);
                d[i]->total = sfj_u64(x, "total").v;
                d[i]->avg10 = json_number_value(json_object_get(x, "avg10"));
                d[i]->avg60 = json_number_value(json_object_get(x, "avg60"));
                d[i]->avg300 = json_number_value(json_object_get(x, "avg300"));
        }
}

static inline void sfj_cpu(const json_t *o, struct stats_cpu *c) {
        if (!o)
                return;
        c->present = true;
        c->time_nsec = sfj_time(o, "time");
        c->usage_nano_cores = sfj_u64(o, "usageNanoCores");
        c->usage_core_nano_seconds = sfj_u64(o, "usageCoreNanoSeconds");
        sfj_psi(o, &c->psi);
}

static inline void sfj_memory(const json_t *o, struct stats_memory *m) {
        if (!o)
                return;
        m->present = true;
        m->time_nsec = sfj_time(o, "time");
        m->available_bytes = sfj_u64(o, "availableBytes");
        m->usage_bytes = sfj_u64(o, "usageBytes");
        m->working_set_bytes = sfj_u64(o, "workingSetBytes");
        m->rss_bytes = sfj_u64(o, "rssBytes");
        m->page_faults = sfj_u64(o, "pageFaults");
        m->major_page_faults = sfj_u64(o, "majorPageFaults");
        sfj_psi(o, &m->psi);
}

static inline void sfj_io(const json_t *o, struct stats_io *io) {
        if (!o)
                return;
        io->time_nsec = sfj_time(o, "time");
        sfj_psi(o, &io->psi);
}

static inline void sfj_swap(const json_t *o, struct stats_swap *s) {
        if (!o)
                return;
        s->present = true;
        s->time_nsec = sfj_time(o, "time");
        s->swap_available_bytes = sfj_u64(o, "swapAvailableBytes");
        s->swap_usage_bytes = sfj_u64(o, "swapUsageBytes").v;
}

static inline void sfj_fs(const json_t *o, struct stats_fs *f) {
        if (!o)
                return;
        f->present = true;
        f->time_nsec = sfj_time(o, "time");
        f->available_bytes = sfj_u64(o, "availableBytes");
        f->capacity_bytes = sfj_u64(o, "capacityBytes");
        f->used_bytes = sfj_u64(o, "usedBytes");
        f->inodes_free = sfj_u64(o, "inodesFree");
        f->inodes = sfj_u64(o, "inodes");
        f->inodes_used = sfj_u64(o, "inodesUsed");
}

static inline void sfj_iface(const json_t *o, struct stats_interface *i) {
        i->name = sfj_str(o, "name");
        i->rx_bytes = sfj_u64(o, "rxBytes");
        i->rx_errors = sfj_u64(o, "rxErrors");
        i->tx_bytes = sfj_u64(o, "txBytes");
        i->tx_errors = sfj_u64(o, "txErrors");
}

static inline void sfj_network(const json_t *o, struct stats_network *n) {
        const json_t *a = json_object_get(o, "interfaces"), *e;
        size_t i;
        if (!o)
                return;
        n->present = true;
        n->time_nsec = sfj_time(o, "time");
        sfj_iface(o, &n->def);
        n->interfaces = calloc(json_array_size(a) + 1, sizeof(*n->interfaces));
        json_array_foreach(a, i, e)
                sfj_iface(e, &n->interfaces[n->n_interfaces++]);
}

static inline struct stats_summary *summary_from_json(const json_t *j) {
        struct stats_summary *s = calloc(1, sizeof(*s));
        const json_t *node = json_object_get(j, "node"), *a, *e, *pj;
        size_t i, k;

        s->node.node_name = sfj_str(node, "nodeName");
        s->node.start_nsec = sfj_time(node, "startTime");
        a = json_object_get(node, "systemContainers");
        s->node.system_containers = calloc(json_array_size(a) + 1, sizeof(*s->node.system_containers));
        json_array_foreach(a, i, e) {
                struct stats_system_container *c = &s->node.system_containers[s->node.n_system_containers++];
                c->name = sfj_str(e, "name");
                c->start_nsec = sfj_time(e, "startTime");
                sfj_cpu(json_object_get(e, "cpu"), &c->cpu);
                sfj_memory(json_object_get(e, "memory"), &c->memory);
        }
        sfj_cpu(json_object_get(node, "cpu"), &s->node.cpu);
        sfj_memory(json_object_get(node, "memory"), &s->node.memory);
        sfj_io(json_object_get(node, "io"), &s->node.io);
        sfj_swap(json_object_get(node, "swap"), &s->node.swap);
        sfj_network(json_object_get(node, "network"), &s->node.network);
        sfj_fs(json_object_get(node, "fs"), &s->node.fs);
        sfj_fs(json_object_get(json_object_get(node, "runtime"), "imageFs"), &s->node.image_fs);
        if (json_object_get(node, "rlimit")) {
                const json_t *rl = json_object_get(node, "rlimit");
                s->node.rlimit = (struct stats_rlimit) { .present = true,
                                                         .time_nsec = sfj_time(rl, "time"),
                                                         .maxpid = json_integer_value(json_object_get(rl, "maxpid")),
                                                         .curproc = json_integer_value(
                                                                 json_object_get(rl, "curproc")) };
        }

        a = json_object_get(j, "pods");
        s->pods = calloc(json_array_size(a) + 1, sizeof(*s->pods));
        json_array_foreach(a, i, pj) {
                struct stats_pod_summary *p = &s->pods[s->n_pods++];
                const json_t *ref = json_object_get(pj, "podRef"), *cs = json_object_get(pj, "containers"),
                             *vs = json_object_get(pj, "volume");
                p->name = sfj_str(ref, "name");
                p->namespace_ = sfj_str(ref, "namespace");
                p->uid = sfj_str(ref, "uid");
                p->start_nsec = sfj_time(pj, "startTime");
                p->containers = calloc(json_array_size(cs) + 1, sizeof(*p->containers));
                json_array_foreach(cs, k, e) {
                        struct stats_container_summary *c = &p->containers[p->n_containers++];
                        c->name = sfj_str(e, "name");
                        c->start_nsec = sfj_time(e, "startTime");
                        sfj_cpu(json_object_get(e, "cpu"), &c->cpu);
                        sfj_memory(json_object_get(e, "memory"), &c->memory);
                        sfj_io(json_object_get(e, "io"), &c->io);
                        sfj_swap(json_object_get(e, "swap"), &c->swap);
                        sfj_fs(json_object_get(e, "rootfs"), &c->rootfs);
                        sfj_fs(json_object_get(e, "logs"), &c->logs);
                }
                sfj_cpu(json_object_get(pj, "cpu"), &p->cpu);
                sfj_memory(json_object_get(pj, "memory"), &p->memory);
                sfj_io(json_object_get(pj, "io"), &p->io);
                sfj_swap(json_object_get(pj, "swap"), &p->swap);
                sfj_network(json_object_get(pj, "network"), &p->network);
                p->volumes = calloc(json_array_size(vs) + 1, sizeof(*p->volumes));
                json_array_foreach(vs, k, e) {
                        struct stats_volume_summary *v = &p->volumes[p->n_volumes++];
                        const json_t *pvc = json_object_get(e, "pvcRef");
                        v->name = sfj_str(e, "name");
                        sfj_fs(e, &v->fs);
                        if (pvc) {
                                v->pvc_name = sfj_str(pvc, "name");
                                v->pvc_namespace = sfj_str(pvc, "namespace");
                        }
                }
                sfj_fs(json_object_get(pj, "ephemeral-storage"), &p->ephemeral_storage);
                p->process_count = sfj_u64(json_object_get(pj, "process_stats"), "process_count");
        }
        return s;
}
