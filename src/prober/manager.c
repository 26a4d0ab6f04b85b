/* SPDX-License-Identifier: Apache-2.0 */
/* Probe workers on the event loop; see manager.h. */
#include <inttypes.h>
#include <string.h>
#include <sys/random.h>

#include "basic/error.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "prober/handlers.h"
#include "prober/manager.h"

struct probe_pod;

struct probe_worker {
        struct probe_worker *next;
        struct probe_pod *pp;
        char *container_name;
        enum probe_type type;
        const struct probe *spec;          /* into pp->pod */
        const struct container *container; /* into pp->pod */
        struct event *timer;

        char *container_id; /* the instance followed, NULL = none yet */
        bool running;
        int64_t started_at; /* unix nsec */
        bool on_hold;       /* liveness/startup failed: wait for a new instance */
        struct probe_state state;
        struct probe_op *op; /* in flight */
        uint64_t op_started; /* monotonic usec */
        uint64_t counts[3];  /* by enum probe_result */
        bool seen;           /* mark for probe_manager_update_pod */
};

struct probe_pod {
        struct probe_pod *next;
        struct prober *p;
        char *uid;
        struct pod *pod; /* reference */
        char *host;
        struct probe_worker *workers;
};

struct prober {
        struct event_base *base;
        struct probe_env env;
        struct prober_callbacks cb;
        void *userdata;
        int64_t start_realtime; /* unix nsec */
        struct probe_pod *pods;
        uint64_t totals[3]; /* every probe run since start, by result */
};

static const struct probe *container_probe(const struct container *c, enum probe_type t) {
        return t == PROBE_LIVENESS ? c->liveness_probe : t == PROBE_READINESS ? c->readiness_probe : c->startup_probe;
}

static struct probe_worker *worker_free(struct probe_worker *w) {
        if (!w)
                return NULL;
        probe_op_cancel(w->op);
        if (w->timer)
                event_free(w->timer);
        free(w->container_name);
        free(w->container_id);
        free(w);
        return NULL;
}

static struct probe_pod *probe_pod_free(struct probe_pod *pp) {
        if (!pp)
                return NULL;
        while (pp->workers) {
                struct probe_worker *w = pp->workers;
                pp->workers = w->next;
                worker_free(w);
        }
        pod_free(pp->pod);
        free(pp->uid);
        free(pp->host);
        free(pp);
        return NULL;
}

static struct probe_pod *find_pod(const struct prober *p, const char *uid) {
        for (struct probe_pod *pp = p->pods; pp; pp = pp->next)
                if (streq(pp->uid, uid))
                        return pp;
        return NULL;
}

static struct probe_worker *find_worker(const struct probe_pod *pp, const char *name, enum probe_type t) {
        for (struct probe_worker *w = pp ? pp->workers : NULL; w; w = w->next)
                if (w->type == t && streq(w->container_name, name))
                        return w;
        return NULL;
}

static const char *pod_ns(const struct probe_worker *w) {
        return w->pp->pod->namespace_;
}

static const char *pod_name(const struct probe_worker *w) {
        return w->pp->pod->name;
}

static void arm(struct probe_worker *w, uint64_t delay_usec) {
        evtimer_add_usec(w->timer, delay_usec);
}

static void publish(struct probe_worker *w) {
        struct prober *p = w->pp->p;
        if (p->cb.changed)
                p->cb.changed(p->userdata, w->pp->uid, w->container_name, w->type, w->state.published);
}

/* The startup probe of this worker's container has not succeeded yet: liveness and readiness wait. */
static bool startup_pending(const struct probe_worker *w) {
        const struct probe_worker *s;
        if (w->type == PROBE_STARTUP)
                return false;
        s = find_worker(w->pp, w->container_name, PROBE_STARTUP);
        return s && (!s->container_id || !w->container_id || !streq(s->container_id, w->container_id) ||
                     s->state.published != PROBE_RESULT_SUCCESS);
}

/* When the first probe of the current instance is due, from now. */
static uint64_t first_delay(const struct probe_worker *w) {
        int64_t now = (int64_t) now_realtime_usec() * 1000;
        int64_t due = w->started_at + (int64_t) w->spec->initial_delay_seconds * 1000000000;
        uint64_t delay = due > now ? (uint64_t) (due - now) / 1000 : 0;

        if (w->started_at > 0 && w->started_at < w->pp->p->start_realtime) {
                /* running since before ckubelet started: spread the first probes over one period */
                uint64_t period = (uint64_t) w->spec->period_seconds * USEC_PER_SEC, r = 0;
                if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
                        r = now_usec();
                delay = MAX(delay, period ? r % period : 0);
        }
        return delay;
}

static void worker_next(struct probe_worker *w) {
        uint64_t period = (uint64_t) w->spec->period_seconds * USEC_PER_SEC, now = now_usec();
        uint64_t due = w->op_started + period;
        arm(w, due > now ? due - now : 0);
}

static void on_probe_done(void *userdata, enum probe_result result, bool warning, const char *output, int error) {
        struct probe_worker *w = userdata;
        const char *type = probe_type_to_string(w->type);

        w->op = NULL;
        if (error < 0) {
                log_v(1, "Probe errored: probeType=\"%s\" pod=\"%s/%s\" containerName=\"%s\" err=\"%s\"", type,
                      pod_ns(w), pod_name(w), w->container_name, strempty(output));
                worker_next(w);
                return;
        }
        w->counts[result]++;
        w->pp->p->totals[result]++;
        if (result == PROBE_RESULT_FAILURE) {
                log_v(1,
                      "Probe failed: probeType=\"%s\" pod=\"%s/%s\" containerName=\"%s\" probeResult=\"failure\" "
                      "output=\"%s\"",
                      type, pod_ns(w), pod_name(w), w->container_name, strempty(output));
                if (w->pp->p->cb.failed)
                        w->pp->p->cb.failed(w->pp->p->userdata, w->pp->uid, w->container_name, w->type,
                                            strempty(output));
        } else if (warning)
                log_v(3,
                      "Probe succeeded with a warning: probeType=\"%s\" pod=\"%s/%s\" containerName=\"%s\" "
                      "output=\"%s\"",
                      type, pod_ns(w), pod_name(w), w->container_name, strempty(output));
        else
                log_v(4, "Probe succeeded: probeType=\"%s\" pod=\"%s/%s\" containerName=\"%s\"", type, pod_ns(w),
                      pod_name(w), w->container_name);

        if (probe_state_record(&w->state, w->spec, result)) {
                log_v(2,
                      "Probe result changed: probeType=\"%s\" pod=\"%s/%s\" containerName=\"%s\" "
                      "containerID=\"%.12s\" result=\"%s\"",
                      type, pod_ns(w), pod_name(w), w->container_name, w->container_id,
                      probe_result_to_string(w->state.published));
                if ((w->type == PROBE_LIVENESS || w->type == PROBE_STARTUP) &&
                    w->state.published == PROBE_RESULT_FAILURE) {
                        /* the container will be killed: stop until a new instance shows up */
                        w->on_hold = true;
                        w->state.run = 0;
                }
                publish(w); /* may call back into probe_manager_update_pod: w stays valid (same spec) */
        }
        if (w->on_hold)
                return;
        if (w->type == PROBE_STARTUP && w->state.published == PROBE_RESULT_SUCCESS) {
                /* started: the startup probe is done; liveness and readiness begin now */
                for (struct probe_worker *o = w->pp->workers; o; o = o->next)
                        if (o != w && streq(o->container_name, w->container_name) && o->running && !o->op)
                                arm(o, first_delay(o));
                return;
        }
        worker_next(w);
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct probe_worker *w = userdata;
        struct probe_request req = {
                .spec = w->spec,
                .container_id = w->container_id,
                .timeout_usec = (uint64_t) MAX(w->spec->timeout_seconds, 1) * USEC_PER_SEC,
        };
        struct prober *p = w->pp->p;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        int r = 0;

        if (!w->running || w->on_hold || w->op || !w->container_id)
                return;
        if (startup_pending(w))
                return; /* the startup worker re-arms us when it succeeds */
        if (w->type == PROBE_STARTUP && w->state.published == PROBE_RESULT_SUCCESS)
                return;

        w->op_started = now_usec();
        req.host = !isempty(w->spec->host) ? w->spec->host : w->pp->host;
        switch (w->spec->handler) {
        case PROBE_HANDLER_EXEC:
                r = probe_exec_start(&p->env, &req, on_probe_done, w, &w->op);
                break;
        case PROBE_HANDLER_HTTP_GET:
        case PROBE_HANDLER_TCP_SOCKET:
                r = probe_resolve_port(&w->spec->port, w->container, &req.port, &why);
                if (r >= 0 && isempty(req.host))
                        r = -EADDRNOTAVAIL;
                if (r >= 0)
                        r = w->spec->handler == PROBE_HANDLER_HTTP_GET
                                    ? probe_http_start(&p->env, &req, on_probe_done, w, &w->op)
                                    : probe_tcp_start(&p->env, &req, on_probe_done, w, &w->op);
                break;
        case PROBE_HANDLER_GRPC:
                req.port = w->spec->grpc_port;
                r = isempty(req.host) ? -EADDRNOTAVAIL : probe_grpc_start(&p->env, &req, on_probe_done, w, &w->op);
                break;
        default:
                r = -EINVAL;
        }
        if (r < 0) {
                w->op = NULL;
                log_v(1, "Probe errored: probeType=\"%s\" pod=\"%s/%s\" containerName=\"%s\" err=\"%s\"",
                      probe_type_to_string(w->type), pod_ns(w), pod_name(w), w->container_name,
                      why                   ? ck_error_message(why)
                      : r == -EADDRNOTAVAIL ? "the pod has no IP address yet"
                                            : strerror(-r));
                worker_next(w);
        }
}

/* Follow the newest instance of the container. */
static void worker_observe(struct probe_worker *w, const struct kc_container *c) {
        bool running = c && c->state == KC_CONTAINER_RUNNING;

        if (c && (!w->container_id || !streq(w->container_id, c->id))) {
                enum probe_result old = w->state.published;
                bool had = w->container_id != NULL;

                probe_op_cancel(w->op);
                w->op = NULL;
                evtimer_del(w->timer);
                if (free_and_strdup(&w->container_id, c->id) < 0)
                        return;
                probe_state_init(&w->state, w->type);
                w->on_hold = false;
                w->running = running;
                w->started_at = c->started_at > 0 ? c->started_at : c->created_at;
                if (running)
                        arm(w, first_delay(w));
                if (had && old != w->state.published)
                        publish(w);
                return;
        }
        if (!c || !running) {
                if (w->running) {
                        probe_op_cancel(w->op);
                        w->op = NULL;
                        evtimer_del(w->timer);
                }
                w->running = false;
                return;
        }
        if (!w->running) {
                w->running = true;
                if (c->started_at > 0)
                        w->started_at = c->started_at;
                arm(w, first_delay(w));
        }
}

static int worker_new(struct probe_pod *pp, const struct container *c, enum probe_type t, struct probe_worker **ret) {
        struct probe_worker *w = calloc(1, sizeof(*w));

        if (!w)
                return -ENOMEM;
        w->pp = pp;
        w->type = t;
        w->container_name = strdup(c->name);
        w->timer = evtimer_new(pp->p->base, on_timer, w);
        if (!w->container_name || !w->timer) {
                worker_free(w);
                return -ENOMEM;
        }
        probe_state_init(&w->state, t);
        *ret = w;
        return 0;
}

/* The probed containers: the app containers, then the sidecars (init containers with restartPolicy Always);
 * NULL for the other init containers, which have no probes. */
static const struct container *probed_container(const struct pod *pod, size_t i) {
        if (i < pod->spec.n_containers)
                return &pod->spec.containers[i];
        i -= pod->spec.n_containers;
        return container_is_sidecar(&pod->spec.init_containers[i]) ? &pod->spec.init_containers[i] : NULL;
}

int probe_manager_update_pod(struct prober *p, const struct pod *pod, const char *host,
                             const struct kc_pod_status *st) {
        size_t n_probed = pod->spec.n_containers + pod->spec.n_init_containers;
        struct probe_pod *pp = find_pod(p, pod->uid);
        int r;

        if (!pp) {
                bool any = false;
                for (size_t i = 0; i < n_probed && !any; i++)
                        for (int t = PROBE_LIVENESS; t <= PROBE_STARTUP; t++)
                                if (probed_container(pod, i) && container_probe(probed_container(pod, i), t))
                                        any = true;
                if (!any)
                        return 0; /* nothing to probe */
                pp = calloc(1, sizeof(*pp));
                if (!pp || !(pp->uid = strdup(pod->uid))) {
                        free(pp);
                        return -ENOMEM;
                }
                pp->p = p;
                pp->next = p->pods;
                p->pods = pp;
        }
        if (pp->pod != pod) {
                pod_free(pp->pod);
                pp->pod = pod_ref((struct pod *) pod);
        }
        if (!streq_ptr(pp->host, host) && free_and_strdup(&pp->host, host) < 0)
                return -ENOMEM;

        for (struct probe_worker *w = pp->workers; w; w = w->next)
                w->seen = false;
        for (size_t i = 0; i < n_probed; i++) {
                const struct container *c = probed_container(pod, i);
                if (!c)
                        continue;
                for (int t = PROBE_LIVENESS; t <= PROBE_STARTUP; t++) {
                        const struct probe *spec = container_probe(c, t);
                        struct probe_worker *w;
                        if (!spec)
                                continue;
                        w = find_worker(pp, c->name, t);
                        if (!w) {
                                r = worker_new(pp, c, t, &w);
                                if (r < 0)
                                        return r;
                                w->next = pp->workers;
                                pp->workers = w;
                        }
                        w->spec = spec;
                        w->container = c;
                        w->seen = true;
                }
        }
        for (struct probe_worker **pw = &pp->workers; *pw;) {
                struct probe_worker *w = *pw;
                if (!w->seen) {
                        *pw = w->next;
                        worker_free(w);
                        continue;
                }
                pw = &w->next;
        }
        for (struct probe_worker *w = pp->workers; w; w = w->next)
                worker_observe(w, st ? kc_pod_status_find_container(st, w->container_name) : NULL);
        return 0;
}

void probe_manager_remove_pod(struct prober *p, const char *pod_uid) {
        for (struct probe_pod **pp = &p->pods; *pp; pp = &(*pp)->next)
                if (streq((*pp)->uid, pod_uid)) {
                        struct probe_pod *x = *pp;
                        *pp = x->next;
                        probe_pod_free(x);
                        return;
                }
}

bool probe_manager_get_result(const struct prober *p, enum probe_type type, const char *pod_uid,
                              const char *container_name, const char *container_id, enum probe_result *ret) {
        const struct probe_worker *w = find_worker(find_pod(p, pod_uid), container_name, type);

        if (!w || !w->container_id || !container_id || !streq(w->container_id, container_id))
                return false;
        *ret = w->state.published;
        return true;
}

static bool results_get(const void *userdata, enum probe_type type, const struct kc_container *instance,
                        enum probe_result *ret) {
        return probe_manager_get_result(userdata, type, instance->pod_uid, instance->name, instance->id, ret);
}

void probe_manager_results(const struct prober *p, struct probe_results *ret) {
        *ret = (struct probe_results) { .get = results_get, .userdata = p };
}

void probe_manager_foreach_count(const struct prober *p, void (*fn)(const struct prober_count *c, void *ud), void *ud) {
        for (const struct probe_pod *pp = p->pods; pp; pp = pp->next)
                for (const struct probe_worker *w = pp->workers; w; w = w->next)
                        for (int r = PROBE_RESULT_UNKNOWN; r <= PROBE_RESULT_FAILURE; r++) {
                                struct prober_count c = {
                                        .pod_namespace = pp->pod->namespace_,
                                        .pod_name = pp->pod->name,
                                        .pod_uid = pp->uid,
                                        .container = w->container_name,
                                        .type = w->type,
                                        .result = r,
                                        .count = w->counts[r],
                                };
                                fn(&c, ud);
                        }
}

int probe_manager_new(struct event_base *base, struct cri_client *cri, uint64_t request_timeout_usec,
                      const struct prober_callbacks *cb, void *userdata, struct prober **ret) {
        struct prober *p = calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        p->base = base;
        p->env = (struct probe_env) { .base = base, .cri = cri, .request_timeout_usec = request_timeout_usec };
        if (cb)
                p->cb = *cb;
        p->userdata = userdata;
        p->start_realtime = (int64_t) now_realtime_usec() * 1000;
        *ret = p;
        return 0;
}

struct prober *probe_manager_free(struct prober *p) {
        if (!p)
                return NULL;
        log_v(1, "Probes run since start: %" PRIu64 " successful, %" PRIu64 " failed, %" PRIu64 " unknown",
              p->totals[PROBE_RESULT_SUCCESS], p->totals[PROBE_RESULT_FAILURE], p->totals[PROBE_RESULT_UNKNOWN]);
        while (p->pods) {
                struct probe_pod *pp = p->pods;
                p->pods = pp->next;
                probe_pod_free(pp);
        }
        probe_env_done(&p->env);
        free(p);
        return NULL;
}
