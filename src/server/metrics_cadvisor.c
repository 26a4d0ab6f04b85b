/* SPDX-License-Identifier: Apache-2.0 */
/* /metrics/cadvisor (the container metrics of the kubelet's cAdvisor, read by stats/cadvisor.c) and /metrics/slis
 * (the healthz checks' SLI metrics of component-base). */
#include <assert.h>
#include <errno.h>
#include <event2/buffer.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/evbuffer.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "server/server-internal.h"
#include "stats/cadvisor.h"
#include "stats/machine.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* ---------------------------------------------------------------- /metrics/cadvisor */

struct known_builder {
        struct cadvisor_known_container *containers;
        size_t n_containers;
        struct cadvisor_known_pod *pods;
        size_t n_pods;
        bool oom;
};

static void add_known(const struct api_host_container *c, void *userdata) {
        struct known_builder *b = userdata;
        struct cadvisor_known_container *nc;
        bool have_pod = false;

        if (b->oom)
                return;
        if (!isempty(c->id)) { /* else the pod alone */
                nc = reallocarray(b->containers, b->n_containers + 1, sizeof(*nc));
                if (!nc) {
                        b->oom = true;
                        return;
                }
                b->containers = nc;
                /* borrowed: the host's strings live until the handler returns (nothing runs on the loop meanwhile) */
                nc[b->n_containers++] = (struct cadvisor_known_container) {
                        .id = c->id,
                        .pod_uid = c->pod_uid,
                        .pod_name = c->pod_name,
                        .pod_namespace = c->pod_namespace,
                        .container = c->name,
                        .image = c->image,
                        .created_at_nsec = c->created_at_nsec,
                        .sandbox = c->sandbox,
                };
        }
        for (size_t i = 0; i < b->n_pods; i++)
                have_pod = have_pod || streq_ptr(b->pods[i].uid, c->pod_uid);
        if (!have_pod && c->pod_uid) {
                struct cadvisor_known_pod *np = reallocarray(b->pods, b->n_pods + 1, sizeof(*np));
                if (!np) {
                        b->oom = true;
                        return;
                }
                b->pods = np;
                np[b->n_pods++] = (struct cadvisor_known_pod) {
                        .uid = c->pod_uid,
                        .name = c->pod_name,
                        .namespace_ = c->pod_namespace,
                };
        }
}

/* The strings given to add_known() are only valid inside the host's callback: copy them into one arena. */
struct known_copy {
        struct known_builder b;
        char **strings;
        size_t n_strings;
};

static const char *keep(struct known_copy *k, const char *s) {
        char **n, *d;

        if (k->b.oom)
                return "";
        d = strdup(strempty(s));
        n = d ? reallocarray(k->strings, k->n_strings + 1, sizeof(*n)) : NULL;
        if (!n) {
                free(d);
                k->b.oom = true;
                return "";
        }
        k->strings = n;
        n[k->n_strings++] = d;
        return d;
}

static void add_known_copy(const struct api_host_container *c, void *userdata) {
        struct known_copy *k = userdata;
        const struct api_host_container copy = {
                .id = keep(k, c->id),
                .pod_uid = keep(k, c->pod_uid),
                .pod_name = keep(k, c->pod_name),
                .pod_namespace = keep(k, c->pod_namespace),
                .name = keep(k, c->name),
                .image = keep(k, c->image),
                .created_at_nsec = c->created_at_nsec,
                .sandbox = c->sandbox,
        };
        add_known(&copy, &k->b);
}

static void known_copy_done(struct known_copy *k) {
        for (size_t i = 0; i < k->n_strings; i++)
                free(k->strings[i]);
        free(k->strings);
        free(k->b.containers);
        free(k->b.pods);
}

void api_handle_metrics_cadvisor(struct api_request *r) {
        struct known_copy k = {};
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        struct cadvisor_series *series = NULL;
        struct cadvisor_known known;
        struct cadvisor_machine machine, *mp = NULL;
        size_t n = 0;
        bool error = true;
        int ret;

        if (!b) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        api_host_foreach_container(r->s, add_known_copy, &k);
        if (k.b.oom) {
                known_copy_done(&k);
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        known = (struct cadvisor_known) {
                .containers = k.b.containers,
                .n_containers = k.b.n_containers,
                .pods = k.b.pods,
                .n_pods = k.b.n_pods,
        };
        if (r->s->cadvisor) {
                ret = cadvisor_collect(r->s->cadvisor, &known, &series, &n, &error);
                if (ret < 0) {
                        /* as upstream's collector: a failed collection is container_scrape_error 1 */
                        log_error("/metrics/cadvisor: %s", strerror(-ret));
                        error = true;
                        series = NULL;
                        n = 0;
                }
        }
        if (r->s->machine) {
                const struct machine_info *m = r->s->machine;
                machine = (struct cadvisor_machine) {
                        .machine_id = m->machine_id,
                        .system_uuid = m->system_uuid,
                        .boot_id = m->boot_id,
                        .kernel_version = m->kernel_version,
                        .os_version = m->os_image,
                        .cores = m->num_cores,
                        .physical_cores = m->num_physical_cores,
                        .sockets = m->num_sockets,
                        .memory_bytes = m->memory_capacity,
                        .swap_bytes = m->swap_capacity,
                };
                mp = &machine;
        }
        ret = cadvisor_render(series, n, mp, error, (int64_t) (now_realtime_usec() / USEC_PER_MSEC), b);
        cadvisor_series_free_all(series, n);
        known_copy_done(&k);
        if (ret < 0) {
                api_reply_text(r->req, 500, "Internal Error: %s\n", strerror(-ret));
                return;
        }
        api_reply_buffer(r->req, 200, CONTENT_TYPE, b);
}

/* ---------------------------------------------------------------- /metrics/slis */

static const char *const sli_names[API_SLI_CHECKS] = { "ping", "log", "syncloop" };

void api_sli_observe(struct api_server *s, int check, bool ok) {
        struct api_sli *sli;

        assert(check >= 0 && check < API_SLI_CHECKS);
        sli = &s->slis[check];
        sli->observed = true;
        sli->last_ok = ok;
        if (ok)
                sli->success++;
        else
                sli->error++;
}

void api_handle_metrics_slis(struct api_request *r) {
        _cleanup_evbuffer_ struct evbuffer *b = evbuffer_new();
        /* label values sorted: log, ping, syncloop */
        static const int order[] = { API_SLI_LOG, API_SLI_PING, API_SLI_SYNCLOOP };
        bool any = false;

        if (!b) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        for (size_t i = 0; i < API_SLI_CHECKS; i++)
                any = any || r->s->slis[i].observed;
        if (any) {
                evbuffer_add_printf(b, "# HELP kubernetes_healthcheck [STABLE] This metric records the result of a "
                                       "single healthcheck.\n# TYPE kubernetes_healthcheck gauge\n");
                for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                        const struct api_sli *sli = &r->s->slis[order[i]];
                        if (sli->observed)
                                evbuffer_add_printf(b, "kubernetes_healthcheck{name=\"%s\",type=\"healthz\"} %d\n",
                                                    sli_names[order[i]], sli->last_ok ? 1 : 0);
                }
                evbuffer_add_printf(b, "# HELP kubernetes_healthchecks_total [STABLE] This metric records the results "
                                       "of all healthcheck.\n# TYPE kubernetes_healthchecks_total counter\n");
                /* samples sorted by (name, status, type): error before success */
                for (size_t i = 0; i < ELEMENTSOF(order); i++) {
                        const struct api_sli *sli = &r->s->slis[order[i]];
                        if (sli->error > 0)
                                evbuffer_add_printf(b,
                                                    "kubernetes_healthchecks_total{name=\"%s\",status=\"error\","
                                                    "type=\"healthz\"} %" PRIu64 "\n",
                                                    sli_names[order[i]], sli->error);
                        if (sli->success > 0)
                                evbuffer_add_printf(b,
                                                    "kubernetes_healthchecks_total{name=\"%s\",status=\"success\","
                                                    "type=\"healthz\"} %" PRIu64 "\n",
                                                    sli_names[order[i]], sli->success);
                }
        }
        api_reply_buffer(r->req, 200, CONTENT_TYPE, b);
}
