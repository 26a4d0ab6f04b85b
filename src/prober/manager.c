/* SPDX-License-Identifier: Apache-2.0 */
/* Probe workers on the event loop; see manager.h. */
#include <inttypes.h>
#include <string.h>
#include <sys/random.h>

#include "basic/error.h"
#include "basic/hashmap.h"
#include "basic/histogram.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer_queue.h"
#include "prober/handlers.h"
#include "prober/manager.h"

/* Wake-ups cost: on a virtual machine a wake-up of the process can cost more than a probe's own work, so the
 * probes are batched.
 *  - All workers share one timer (basic/timer_queue.h) that fires on a 10 ms grid: probes due within the
 *    same 10 ms start in one wake-up, at most 10 ms after their time (plus the loop's own delay; the lateness
 *    histogram shows what it was).
 *  - The periodic runs are aligned on 100 ms slots: after a run, the next is due one period after this one's
 *    schedule, moved back to the start of its 100 ms slot (so once per schedule a probe runs up to 100 ms
 *    early, never late; after that the period keeps it on the slot). However many probes there are, the
 *    periodic ones then wake the process at most ten times a second. The first probe of a container is not
 *    moved earlier: it honours initialDelaySeconds. */
#define PROBE_TIMER_GRANULARITY_USEC (10 * USEC_PER_MSEC)
#define PROBE_SLOT_USEC (100 * USEC_PER_MSEC)

struct probe_pod;

struct probe_worker {
        struct probe_worker *next;
        struct probe_pod *pp;
        char *container_name;
        enum probe_type type;
        const struct probe *spec;          /* into pp->pod */
        const struct container *container; /* into pp->pod */
        struct timer_entry timer;
        uint64_t due;            /* monotonic usec of the current or next run's schedule */
        struct probe_http *http; /* the handler's state, kept between runs */
        struct probe_tcp *tcp;

        char *container_id; /* the instance followed, NULL = none yet */
        bool running;
        int64_t started_at; /* unix nsec */
        bool on_hold;       /* liveness/startup failed: wait for a new instance */
        uint64_t adopted;   /* monotonic usec when this instance was first seen */
        bool answered;      /* a probe of this instance answered (success or failure) */
        bool carry_tried;   /* probe_manager_keep_ready was considered for this instance */
        bool carrying;      /* readiness kept from the API server until the first answer or carry_timer */
        struct timer_entry carry_timer;
        struct probe_state state;
        struct probe_op *op; /* in flight */
        uint64_t counts[3];  /* by enum probe_result */
        bool seen;           /* mark for probe_manager_update_pod */
};

struct probe_pod {
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
        struct timer_queue *timers;
        struct hashmap pods; /* uid → struct probe_pod */
        uint64_t totals[3];  /* every probe run since start, by result */
        struct histogram lateness;
        double lateness_max;
};

static const struct probe *container_probe(const struct container *c, enum probe_type t) {
        return t == PROBE_LIVENESS ? c->liveness_probe : t == PROBE_READINESS ? c->readiness_probe : c->startup_probe;
}

static struct probe_worker *worker_free(struct probe_worker *w) {
        if (!w)
                return NULL;
        probe_op_cancel(w->op);
        probe_http_free(w->http);
        probe_tcp_free(w->tcp);
        timer_queue_disarm(w->pp->p->timers, &w->timer);
        timer_queue_disarm(w->pp->p->timers, &w->carry_timer);
        free(w->container_name);
        free(w->container_id);
        free(w);
        return NULL;
}

static struct probe_pod *probe_pod_free(struct probe_pod *pp) {
        if (!pp)
                return NULL;
        for (struct probe_worker *w; pp->workers;) {
                FLIST_POP(pp->workers, w);
                worker_free(w);
        }
        pod_free(pp->pod);
        free(pp->uid);
        free(pp->host);
        free(pp);
        return NULL;
}

static struct probe_pod *find_pod(const struct prober *p, const char *uid) {
        return hashmap_get(&p->pods, uid);
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

static void arm_at(struct probe_worker *w, uint64_t due) {
        w->due = due;
        if (timer_queue_arm(w->pp->p->timers, &w->timer, due) < 0)
                log_error("pod %s/%s: container %s: cannot schedule its %s probe: out of memory", pod_ns(w),
                          pod_name(w), w->container_name, probe_type_to_string(w->type));
}

static void arm(struct probe_worker *w, uint64_t delay_usec) {
        arm_at(w, now_usec() + delay_usec);
}

static void disarm(struct probe_worker *w) {
        timer_queue_disarm(w->pp->p->timers, &w->timer);
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

/* The next run: one period after this one's schedule, as a ticker (a run that started late does not push the
 * next ones back), at the start of its slot; at once when that time has passed already (the probe outlasted
 * its period). */
static void worker_next(struct probe_worker *w) {
        uint64_t period = (uint64_t) w->spec->period_seconds * USEC_PER_SEC, now = now_usec();
        uint64_t due = w->due + period, slot = due / PROBE_SLOT_USEC * PROBE_SLOT_USEC;

        if (slot > now)
                due = slot;
        arm_at(w, MAX(due, now));
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
        w->answered = true;
        if (w->carrying) {
                /* the first answer: from now on the thresholds count from the readiness kept */
                w->carrying = false;
                timer_queue_disarm(w->pp->p->timers, &w->carry_timer);
                log_v(2,
                      "Readiness kept across the restart ends: pod=\"%s/%s\" containerName=\"%s\" probeResult=\"%s\"",
                      pod_ns(w), pod_name(w), w->container_name, probe_result_to_string(result));
        }
        if (result == PROBE_RESULT_FAILURE) {
                log_v(1,
                      "Probe failed: probeType=\"%s\" pod=\"%s/%s\" containerName=\"%s\" probeResult=\"failure\" "
                      "output=\"%s\"",
                      type, pod_ns(w), pod_name(w), w->container_name, strempty(output));
                if (w->pp->p->cb.failed)
                        w->pp->p->cb.failed(w->pp->p->userdata, w->pp->uid, w->container_name, w->type,
                                            strempty(output));
        } else if (warning) {
                log_v(3,
                      "Probe succeeded with a warning: probeType=\"%s\" pod=\"%s/%s\" containerName=\"%s\" "
                      "output=\"%s\"",
                      type, pod_ns(w), pod_name(w), w->container_name, strempty(output));
                if (w->pp->p->cb.warning)
                        w->pp->p->cb.warning(w->pp->p->userdata, w->pp->uid, w->container_name, w->type,
                                             strempty(output));
        } else
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

static void on_timer(struct timer_entry *e, uint64_t now) {
        struct probe_worker *w = (struct probe_worker *) ((char *) e - offsetof(struct probe_worker, timer));
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

        {
                uint64_t started = now_usec();
                double late = started > w->due ? (double) (started - w->due) / 1e6 : 0;
                histogram_observe(&p->lateness, late);
                if (late > p->lateness_max)
                        p->lateness_max = late;
        }
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
                                    ? probe_http_run(&p->env, &w->http, &req, on_probe_done, w, &w->op)
                                    : probe_tcp_run(&p->env, &w->tcp, &req, on_probe_done, w, &w->op);
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

/* The readiness kept from the API server ends without an answer: the kind's initial result (failure). */
static void carry_end(struct probe_worker *w) {
        if (!w->carrying)
                return;
        w->carrying = false;
        timer_queue_disarm(w->pp->p->timers, &w->carry_timer);
        probe_state_init(&w->state, w->type);
}

static void on_carry_timeout(struct timer_entry *e, uint64_t now) {
        struct probe_worker *w = (struct probe_worker *) ((char *) e - offsetof(struct probe_worker, carry_timer));
        enum probe_result old = w->state.published;

        if (!w->carrying)
                return;
        log_v(2,
              "Readiness kept across the restart ends: no probe answered within periodSeconds + timeoutSeconds: "
              "pod=\"%s/%s\" containerName=\"%s\"",
              pod_ns(w), pod_name(w), w->container_name);
        carry_end(w);
        if (old != w->state.published)
                publish(w);
}

/* Follow the newest instance of the container. */
static void worker_observe(struct probe_worker *w, const struct kc_container *c) {
        bool running = c && c->state == KC_CONTAINER_RUNNING;

        if (c && (!w->container_id || !streq(w->container_id, c->id))) {
                enum probe_result old = w->state.published;
                bool had = w->container_id != NULL;

                probe_op_cancel(w->op);
                w->op = NULL;
                disarm(w);
                if (free_and_strdup(&w->container_id, c->id) < 0)
                        return;
                w->carrying = false;
                timer_queue_disarm(w->pp->p->timers, &w->carry_timer);
                probe_state_init(&w->state, w->type);
                w->on_hold = false;
                w->adopted = now_usec();
                w->answered = false;
                w->carry_tried = false;
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
                        disarm(w);
                }
                carry_end(w); /* not running: not ready anyway */
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
        timer_entry_init(&w->timer, on_timer);
        timer_entry_init(&w->carry_timer, on_carry_timeout);
        if (!w->container_name) {
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
                if (!pp || !(pp->uid = strdup(pod->uid)) || hashmap_put(&p->pods, pp->uid, pp) < 0) {
                        if (pp)
                                free(pp->uid);
                        free(pp);
                        return -ENOMEM;
                }
                pp->p = p;
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
                                FLIST_PREPEND(pp->workers, w);
                        }
                        if (w->spec != spec) {
                                /* the handlers' state was set up for the old spec, which goes with the old pod */
                                probe_http_invalidate(w->http);
                                probe_tcp_invalidate(w->tcp);
                        }
                        w->spec = spec;
                        w->container = c;
                        w->seen = true;
                }
        }
        for (struct probe_worker *w = pp->workers, *next; w; w = next) {
                next = w->next;
                if (!w->seen) {
                        FLIST_REMOVE(pp->workers, w);
                        worker_free(w);
                }
        }
        for (struct probe_worker *w = pp->workers; w; w = w->next)
                worker_observe(w, st ? kc_pod_status_find_container(st, w->container_name) : NULL);
        return 0;
}

void probe_manager_remove_pod(struct prober *p, const char *pod_uid) {
        probe_pod_free(hashmap_remove(&p->pods, pod_uid));
}

bool probe_manager_keep_ready(struct prober *p, const char *pod_uid, const char *container_name,
                              const char *container_id) {
        struct probe_worker *w = find_worker(find_pod(p, pod_uid), container_name, PROBE_READINESS);
        uint64_t bound;

        if (!w || !w->container_id || !container_id || !streq(w->container_id, container_id) || w->carry_tried)
                return false;
        w->carry_tried = true;
        /* the instance ran before this ckubelet started, runs, and no probe of ours answered for it yet */
        if (!w->running || w->on_hold || w->answered || w->started_at <= 0 || w->started_at >= p->start_realtime ||
            w->state.published != PROBE_RESULT_FAILURE)
                return false;
        bound = w->adopted +
                ((uint64_t) w->spec->period_seconds + (uint64_t) MAX(w->spec->timeout_seconds, 1)) * USEC_PER_SEC;
        if (bound <= now_usec())
                return false;
        if (timer_queue_arm(p->timers, &w->carry_timer, bound) < 0)
                return false;
        w->carrying = true;
        w->state.published = PROBE_RESULT_SUCCESS;
        log_v(2,
              "Readiness kept across the restart until the first probe answers: pod=\"%s/%s\" containerName=\"%s\" "
              "containerID=\"%.12s\"",
              pod_ns(w), pod_name(w), w->container_name, w->container_id);
        return true;
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
        void *v;

        for (size_t i = 0; hashmap_iterate(&p->pods, &i, NULL, &v);) {
                const struct probe_pod *pp = v;
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
}

/* from 100 µs to 5 s */
static const double lateness_buckets[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                           0.05,   0.1,     0.25,   0.5,   1,      2.5,   5 };

const struct histogram *probe_manager_lateness(const struct prober *p) {
        return &p->lateness;
}

double probe_manager_lateness_max(const struct prober *p) {
        return p->lateness_max;
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
        histogram_init(&p->lateness, lateness_buckets, ELEMENTSOF(lateness_buckets));
        if (timer_queue_new(base, PROBE_TIMER_GRANULARITY_USEC, &p->timers) < 0) {
                free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

struct prober *probe_manager_free(struct prober *p) {
        if (!p)
                return NULL;
        log_v(1, "Probes run since start: %" PRIu64 " successful, %" PRIu64 " failed, %" PRIu64 " unknown",
              p->totals[PROBE_RESULT_SUCCESS], p->totals[PROBE_RESULT_FAILURE], p->totals[PROBE_RESULT_UNKNOWN]);
        {
                void *v;
                for (size_t i = 0; hashmap_iterate(&p->pods, &i, NULL, &v);)
                        probe_pod_free(v);
                hashmap_done(&p->pods);
        }
        probe_env_done(&p->env);
        p->timers = timer_queue_free(p->timers);
        free(p);
        return NULL;
}
