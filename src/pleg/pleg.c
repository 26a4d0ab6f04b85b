/* SPDX-License-Identifier: Apache-2.0 */
#include "pleg/pleg.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "container/labels.h"

/* One entry per sandbox or container: what we compare between relists. */
struct pleg_item {
        char *id;
        char *uid;
        int state;
};

struct pleg_list {
        size_t n, cap;
        struct pleg_item *items;
};

struct pleg {
        struct event_base *base;
        struct cri_client *cri;
        struct cri_calls calls; /* the relist's, cancelled by pleg_free */
        uint64_t period_usec;
        struct pleg_callbacks cb;
        void *userdata;
        struct event *timer;

        bool in_flight;
        bool again;  /* a relist was requested while one was in flight */
        int pending; /* outstanding calls of the relist in flight */
        bool failed;
        struct pleg_list next;

        uint64_t next_started, last_relist_started; /* realtime: when the relist in flight / the last one began */
        uint64_t mono_started, mono_prev_started;   /* monotonic: the relist in flight's start, the one before's */
        uint64_t listed_mono;                       /* monotonic: when the relist of the current listing began */
        struct histogram duration, interval;        /* kubelet_pleg_relist_{duration,interval}_seconds */
        struct pleg_list current;
        char **uids; /* sorted, distinct */
        size_t n_uids;
        uint64_t gone; /* ids seen to disappear since start */
        size_t n_sandboxes, n_running_sandboxes, n_containers, n_running_containers;
        size_t next_sandboxes, next_running_sandboxes, next_containers, next_running_containers;

        /* the evented PLEG (EventedPLEG): the runtime's container events, a container's exit asking for its pod's
         * relist at once */
        bool evented;
        struct cri_stream *stream;  /* open (or opening) */
        struct event *stream_timer; /* (re)opens it, on the loop */
        unsigned stream_attempts;   /* failed streams since start (upstream never resets it) */
};

/* eventedPlegMaxStreamRetries */
#define PLEG_EVENT_STREAM_RETRIES 5

static void list_done(struct pleg_list *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].id);
                free(l->items[i].uid);
        }
        free(l->items);
        *l = (struct pleg_list) {};
}

static int list_add(struct pleg_list *l, const char *id, const char *uid, int state) {
        struct pleg_item *n;

        if (l->n == l->cap) { /* doubling: a listing of n items costs O(n), not n reallocations */
                size_t cap = MAX(l->cap * 2, (size_t) 16);
                n = reallocarray(l->items, cap, sizeof(*n));
                if (!n)
                        return -ENOMEM;
                l->items = n;
                l->cap = cap;
        }
        n = l->items;
        n[l->n] = (struct pleg_item) { .id = strdup(id), .uid = strdup(uid ? uid : ""), .state = state };
        if (!n[l->n].id || !n[l->n].uid) {
                free(n[l->n].id);
                free(n[l->n].uid);
                return -ENOMEM;
        }
        l->n++;
        return 0;
}

static int cmp_item(const void *a, const void *b) {
        return strcmp(((const struct pleg_item *) a)->id, ((const struct pleg_item *) b)->id);
}

struct pleg *pleg_free(struct pleg *p) {
        if (!p)
                return NULL;
        cri_calls_cancel(&p->calls);
        if (p->timer)
                event_free(p->timer);
        if (p->stream_timer)
                event_free(p->stream_timer);
        cri_stream_cancel(p->stream);
        list_done(&p->current);
        list_done(&p->next);
        strv_free(p->uids);
        free(p);
        return NULL;
}

static void arm(struct pleg *p, uint64_t usec) {
        evtimer_add_usec(p->timer, usec);
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* Sorts the n strings of v and moves the distinct ones to its front; returns how many there are. */
static size_t sort_unique(const char **v, size_t n) {
        size_t m = 0;

        if (n == 0)
                return 0;
        qsort(v, n, sizeof(v[0]), cmp_str);
        for (size_t i = 1; i < n; i++)
                if (!streq(v[i], v[m]))
                        v[++m] = v[i];
        return m + 1;
}

/* Compare the two sorted lists and report pods whose items changed, each once. The sets of UIDs are made by
 * sorting (O(n log n) in the sandboxes and containers): with 1,000 pods a relist compares ~2,000 items every
 * second, where a pairwise search for duplicates costs millions of string comparisons. */
static bool diff_and_swap(struct pleg *p) {
        _cleanup_free_ const char **changed = NULL, **all = NULL;
        char **uids = NULL;
        size_t i = 0, j = 0, n_changed = 0, n_all = 0;
        struct pleg_list *o = &p->current, *n = &p->next;

        if (n->n > 0)
                qsort(n->items, n->n, sizeof(n->items[0]), cmp_item);
        /* borrowed from o and n, both alive until after the callbacks */
        changed = malloc(sizeof(*changed) * (o->n + n->n + 1));
        all = malloc(sizeof(*all) * (n->n + 1));
        if (!changed || !all) {
                log_error("PLEG: out of memory comparing listings; keeping the previous one");
                list_done(n);
                return false;
        }
        while (i < o->n || j < n->n) {
                int c = i >= o->n ? 1 : j >= n->n ? -1 : strcmp(o->items[i].id, n->items[j].id);
                const char *uid = NULL;
                if (c < 0) {
                        uid = o->items[i++].uid; /* gone */
                        p->gone++;
                } else if (c > 0)
                        uid = n->items[j++].uid; /* new */
                else {
                        if (o->items[i].state != n->items[j].state)
                                uid = n->items[j].uid;
                        i++;
                        j++;
                }
                if (!isempty(uid))
                        changed[n_changed++] = uid;
        }
        for (size_t k = 0; k < n->n; k++)
                if (!isempty(n->items[k].uid))
                        all[n_all++] = n->items[k].uid;
        n_changed = sort_unique(changed, n_changed);
        n_all = sort_unique(all, n_all);

        /* the sorted set of UIDs in the new listing (pleg_has_pod searches it) */
        uids = calloc(n_all + 1, sizeof(char *));
        for (size_t k = 0; uids && k < n_all; k++)
                if (!(uids[k] = strdup(all[k])))
                        uids = strv_free(uids);
        if (!uids) {
                log_error("PLEG: out of memory comparing listings; keeping the previous one");
                list_done(n);
                return false;
        }
        for (size_t k = 0; k < n_changed; k++)
                if (p->cb.pod_changed)
                        p->cb.pod_changed(changed[k], p->userdata);

        list_done(&p->current);
        p->current = *n;
        *n = (struct pleg_list) {};
        strv_free(p->uids);
        p->uids = uids;
        p->n_uids = n_all;
        p->n_sandboxes = p->next_sandboxes;
        p->n_running_sandboxes = p->next_running_sandboxes;
        p->n_containers = p->next_containers;
        p->n_running_containers = p->next_running_containers;
        return true;
}

static void relist_finish(struct pleg *p) {
        bool ok = !p->failed;

        histogram_observe(&p->duration, (double) (now_usec() - p->mono_started) / 1e6);
        if (ok) {
                if (diff_and_swap(p))
                        p->listed_mono = p->mono_started;
                p->last_relist_started = p->next_started;
        } else
                list_done(&p->next);
        p->in_flight = false;
        if (p->cb.relisted)
                p->cb.relisted(ok, p->userdata);
        if (p->again) {
                p->again = false;
                arm(p, 0);
        } else
                arm(p, p->period_usec);
}

static void on_sandboxes(const struct cri_reply *reply, void *userdata) {
        struct pleg *p = userdata;

        if (reply->r < 0) {
                log_v(2, "PLEG: ListPodSandbox failed: %s", reply->message);
                p->failed = true;
        } else {
                const Runtime__V1__ListPodSandboxResponse *resp = (const void *) reply->msg;
                for (size_t i = 0; i < resp->n_items; i++) {
                        const Runtime__V1__PodSandbox *s = resp->items[i];
                        int st = s->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY ? 0 : 1;
                        if (list_add(&p->next, s->id, s->metadata ? s->metadata->uid : "", 100 + st) < 0)
                                p->failed = true;
                        p->next_sandboxes++;
                        if (st == 0)
                                p->next_running_sandboxes++;
                }
        }
        if (--p->pending == 0)
                relist_finish(p);
}

static void on_containers(const struct cri_reply *reply, void *userdata) {
        struct pleg *p = userdata;

        if (reply->r < 0) {
                log_v(2, "PLEG: ListContainers failed: %s", reply->message);
                p->failed = true;
        } else {
                const Runtime__V1__ListContainersResponse *resp = (const void *) reply->msg;
                for (size_t i = 0; i < resp->n_containers; i++) {
                        const Runtime__V1__Container *c = resp->containers[i];
                        const char *uid = "";
                        for (size_t k = 0; k < c->n_labels; k++)
                                if (streq(c->labels[k]->key, LABEL_POD_UID))
                                        uid = c->labels[k]->value;
                        if (list_add(&p->next, c->id, uid, (int) c->state) < 0)
                                p->failed = true;
                        p->next_containers++;
                        if (c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING)
                                p->next_running_containers++;
                }
        }
        if (--p->pending == 0)
                relist_finish(p);
}

static void relist(evutil_socket_t fd, short what, void *userdata) {
        struct pleg *p = userdata;
        Runtime__V1__ListPodSandboxRequest sreq = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__ListContainersRequest creq = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        int r;

        if (p->in_flight) {
                p->again = true;
                return;
        }
        p->in_flight = true;
        p->next_started = now_realtime_usec();
        p->mono_started = now_usec();
        if (p->mono_prev_started)
                histogram_observe(&p->interval, (double) (p->mono_started - p->mono_prev_started) / 1e6);
        p->mono_prev_started = p->mono_started;
        p->failed = false;
        p->pending = 2;
        p->next_sandboxes = p->next_running_sandboxes = p->next_containers = p->next_running_containers = 0;
        list_done(&p->next);

        r = cri_list_pod_sandbox(p->cri, &sreq, 0, on_sandboxes, p, &p->calls);
        if (r < 0) {
                p->failed = true;
                p->pending--;
        }
        r = cri_list_containers(p->cri, &creq, 0, on_containers, p, &p->calls);
        if (r < 0) {
                p->failed = true;
                p->pending--;
        }
        if (p->pending == 0)
                relist_finish(p);
}

int pleg_new(struct event_base *base, struct cri_client *cri, uint64_t period_usec, const struct pleg_callbacks *cb,
             void *userdata, struct pleg **ret) {
        /* prometheus.DefBuckets */
        static const double def_buckets[] = { .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10 };
        struct pleg *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        histogram_init(&p->duration, def_buckets, ELEMENTSOF(def_buckets));
        histogram_init(&p->interval, def_buckets, ELEMENTSOF(def_buckets));
        p->base = base;
        p->cri = cri;
        p->period_usec = period_usec;
        p->cb = *cb;
        p->userdata = userdata;
        p->timer = evtimer_new(base, relist, p);
        if (!p->timer) {
                pleg_free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

/* ---- the evented PLEG (pkg/kubelet/pleg/evented.go as of v1.37): a watcher of the runtime's container events
 * that asks for a relist of the pod whose container stopped; the relist above stays what observes the runtime. */

static struct pleg_item *find_item(struct pleg *p, const char *id) {
        struct pleg_item key = { .id = (char *) id };
        if (!id || p->current.n == 0)
                return NULL;
        return bsearch(&key, p->current.items, p->current.n, sizeof(key), cmp_item);
}

static void on_event(const Runtime__V1__ContainerEventResponse *ev, void *userdata) {
        struct pleg *p = userdata;
        const char *uid;

        /* the sandbox may be gone already: a later event or relist tells */
        if (!ev->pod_sandbox_status || !ev->pod_sandbox_status->metadata) {
                log_error("Evented PLEG: received ContainerEventResponse with nil PodSandboxStatus or "
                          "PodSandboxStatus.Metadata (containerID=%s)",
                          strempty(ev->container_id));
                return;
        }
        if (ev->container_event_type != RUNTIME__V1__CONTAINER_EVENT_TYPE__CONTAINER_STOPPED_EVENT)
                return;
        uid = ev->pod_sandbox_status->metadata->uid;
        if (isempty(uid))
                return;
        /* relistPod: the pod's record takes the states the event carries, so that the next relist does not report
         * the same change again; the pod worker reads the pod's statuses from the runtime as after a relist */
        for (size_t i = 0; i < ev->n_containers_statuses; i++) {
                const Runtime__V1__ContainerStatus *st = ev->containers_statuses[i];
                struct pleg_item *it = st ? find_item(p, st->id) : NULL;
                if (it)
                        it->state = (int) st->state;
        }
        if (p->cb.pod_changed)
                p->cb.pod_changed(uid, p->userdata);
        log_v(4, "Evented PLEG: requested pod relist after container termination (podUID=%s containerID=%s)", uid,
              strempty(ev->container_id));
}

static void stream_failed(struct pleg *p, const char *why) {
        p->stream_attempts++;
        if (p->stream_attempts >= PLEG_EVENT_STREAM_RETRIES) {
                log_error("Evented PLEG: disabling container-termination fast path after exhausting event stream "
                          "retries (retries=%u): %s",
                          p->stream_attempts, why);
                return;
        }
        log_v(4, "Evented PLEG: failed to get container events, retrying: %s", why);
        evtimer_add_usec(p->stream_timer, 0);
}

static void on_stream_end(const struct cri_reply *reply, void *userdata) {
        struct pleg *p = userdata;

        p->stream = NULL;
        if (reply->r == -ECANCELED)
                return; /* the client is going away (shutdown) */
        stream_failed(p, reply->r < 0 ? reply->message : "CRI container event stream closed without an error");
}

static void open_stream(evutil_socket_t fd, short what, void *userdata) {
        struct pleg *p = userdata;
        int r;

        if (p->stream)
                return;
        r = cri_get_container_events(p->cri, on_event, on_stream_end, p, &p->stream);
        if (r == -ESHUTDOWN)
                return;
        if (r < 0)
                stream_failed(p, strerror(-r));
}

int pleg_set_evented(struct pleg *p, bool evented) {
        assert(p);
        p->evented = evented;
        if (evented && !p->stream_timer) {
                p->stream_timer = evtimer_new(p->base, open_stream, p);
                if (!p->stream_timer)
                        return -ENOMEM;
        }
        return 0;
}

int pleg_start(struct pleg *p) {
        arm(p, 0);
        if (p->evented)
                evtimer_add_usec(p->stream_timer, 0);
        return 0;
}

uint64_t pleg_last_relist_started_usec(const struct pleg *p) {
        return p->last_relist_started;
}

bool pleg_listed_after(const struct pleg *p, uint64_t mono_usec) {
        return p && p->listed_mono > mono_usec;
}

bool pleg_has_id(const struct pleg *p, const char *id) {
        struct pleg_item key = { .id = (char *) id };
        if (!p || !id || p->current.n == 0)
                return false;
        return bsearch(&key, p->current.items, p->current.n, sizeof(key), cmp_item) != NULL;
}

uint64_t pleg_gone_count(const struct pleg *p) {
        return p ? p->gone : 0;
}

const struct histogram *pleg_relist_duration(const struct pleg *p) {
        return &p->duration;
}

const struct histogram *pleg_relist_interval(const struct pleg *p) {
        return &p->interval;
}

bool pleg_has_pod(const struct pleg *p, const char *uid) {
        char *const *found;
        if (!p || !uid || p->n_uids == 0)
                return false;
        found = bsearch(&uid, p->uids, p->n_uids, sizeof(char *), cmp_str);
        return found != NULL;
}

char *const *pleg_pod_uids(const struct pleg *p) {
        static char *const empty[] = { NULL };
        return p->uids ? p->uids : empty;
}

void pleg_counts(const struct pleg *p, size_t *ret_sandboxes, size_t *ret_running_sandboxes, size_t *ret_containers,
                 size_t *ret_running_containers) {
        if (ret_sandboxes)
                *ret_sandboxes = p->n_sandboxes;
        if (ret_running_sandboxes)
                *ret_running_sandboxes = p->n_running_sandboxes;
        if (ret_containers)
                *ret_containers = p->n_containers;
        if (ret_running_containers)
                *ret_running_containers = p->n_running_containers;
}
