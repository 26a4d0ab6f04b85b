/* SPDX-License-Identifier: Apache-2.0 */
/* The container garbage collector's passes on the loop (see container_gc.h). */
#include "kuberuntime/container_gc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "container/labels.h"

#define UNKNOWN_STOP_TIMEOUT_SEC 2 /* minimumGracePeriodInSeconds */

struct waiter {
        kr_container_gc_done_fn done;
        void *userdata;
};

/* a listing, copied out of the reply */
struct listing {
        struct kr_gc_container *containers;
        size_t n_containers;
        struct kr_gc_sandbox *sandboxes;
        size_t n_sandboxes;
        char **strings; /* owns every string the entries point to (NULL-terminated) */
        size_t n_strings, cap_strings;
        bool have_containers, have_sandboxes;
};

enum phase { PHASE_LIST, PHASE_REMOVE_CONTAINERS, PHASE_RELIST, PHASE_REMOVE_SANDBOXES };

struct gc_pass {
        struct kr_container_gc *g;
        struct cri_calls calls, removals; /* the listing's; the removals' (cancelled when the collector goes) */
        bool evict_terminated;
        struct waiter *waiters;
        size_t n_waiters;
        enum phase phase;
        unsigned pending;
        bool cancelled;
        int error;
        struct listing l;
};

struct kr_container_gc {
        struct event_base *base;
        struct cri_client *cri;
        struct kr_container_gc_config cfg;
        struct gc_pass *pass;
        bool again, again_evict_terminated; /* asked for while a pass runs */
        struct waiter *again_waiters;
        size_t n_again_waiters;
};

static void pass_step(struct gc_pass *p);

static void waiters_call(struct waiter **w, size_t *n, int r) {
        struct waiter *l = TAKE_PTR(*w);
        size_t k = *n;

        *n = 0;
        for (size_t i = 0; i < k; i++)
                l[i].done(r, l[i].userdata);
        free(l);
}

static int waiters_add(struct waiter **w, size_t *n, kr_container_gc_done_fn done, void *userdata) {
        struct waiter *nw;

        if (!done)
                return 0;
        nw = reallocarray(*w, *n + 1, sizeof(*nw));
        if (!nw)
                return -ENOMEM;
        *w = nw;
        nw[(*n)++] = (struct waiter) { done, userdata };
        return 0;
}

static void listing_done(struct listing *l) {
        free(l->containers);
        free(l->sandboxes);
        strv_free(l->strings);
        *l = (struct listing) {};
}

/* keep a copy of s in l; NULL stays NULL. The array grows by doubling: a listing of 1,000 pods keeps several
 * thousand strings, and appending by strv_extend (a walk to the end and a realloc each time) was quadratic. */
static const char *keep(struct listing *l, const char *s, int *r) {
        char *c;

        if (!s)
                return NULL;
        if (l->n_strings + 1 >= l->cap_strings) {
                size_t cap = MAX(l->cap_strings * 2, (size_t) 64);
                char **n = reallocarray(l->strings, cap, sizeof(char *));
                if (!n) {
                        *r = -ENOMEM;
                        return NULL;
                }
                l->strings = n;
                l->cap_strings = cap;
        }
        c = strdup(s);
        if (!c) {
                *r = -ENOMEM;
                return NULL;
        }
        l->strings[l->n_strings++] = c;
        l->strings[l->n_strings] = NULL;
        return c;
}

static const char *map_get(size_t n, Runtime__V1__Container__LabelsEntry **e, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(e[i]->key, key))
                        return e[i]->value;
        return NULL;
}

static const char *sandbox_label(size_t n, Runtime__V1__PodSandbox__LabelsEntry **e, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(e[i]->key, key))
                        return e[i]->value;
        return NULL;
}

static void pass_free(struct gc_pass *p) {
        if (!p)
                return;
        waiters_call(&p->waiters, &p->n_waiters, -ECANCELED);
        listing_done(&p->l);
        free(p);
}

static void pass_finish(struct gc_pass *p) {
        struct kr_container_gc *g = p->g;

        g->pass = NULL;
        waiters_call(&p->waiters, &p->n_waiters, p->error);
        pass_free(p);
        if (g->again) {
                struct waiter *w = TAKE_PTR(g->again_waiters);
                size_t n = g->n_again_waiters;
                bool et = g->again_evict_terminated;

                g->n_again_waiters = 0;
                g->again = g->again_evict_terminated = false;
                if (kr_container_gc_collect(g, et, NULL, NULL) < 0 || !g->pass)
                        waiters_call(&w, &n, -ENOMEM);
                else {
                        g->pass->waiters = w;
                        g->pass->n_waiters = n;
                }
        }
}

static void pass_release(struct gc_pass *p) {
        if (--p->pending > 0)
                return;
        if (p->cancelled) {
                pass_finish(p);
                return;
        }
        pass_step(p);
}

/* a listing's reply: true when it has one to read; a cancel or a failure is noted in the pass instead */
static bool pass_listed(struct gc_pass *p, const struct cri_reply *reply, const char *what) {
        if (reply->r == -ECANCELED)
                p->cancelled = true;
        else if (reply->r < 0) {
                log_error("container GC: failed to list %s: %s", what, reply->message);
                p->error = reply->r;
        } else
                return reply->msg != NULL;
        return false;
}

static void on_containers(const struct cri_reply *reply, void *userdata) {
        struct gc_pass *p = userdata;
        const Runtime__V1__ListContainersResponse *resp = (const void *) reply->msg;
        int r = 0;

        if (pass_listed(p, reply, "containers")) {
                p->l.containers = calloc(resp->n_containers + 1, sizeof(*p->l.containers));
                if (!p->l.containers)
                        r = -ENOMEM;
                for (size_t i = 0; r >= 0 && i < resp->n_containers; i++) {
                        const Runtime__V1__Container *c = resp->containers[i];
                        const char *uid = map_get(c->n_labels, c->labels, LABEL_POD_UID);
                        struct kr_gc_container *x = &p->l.containers[p->l.n_containers];

                        if (!uid)
                                continue; /* not ours (no kubelet labels) */
                        *x = (struct kr_gc_container) {
                                .id = keep(&p->l, c->id, &r),
                                .sandbox_id = keep(&p->l, c->pod_sandbox_id, &r),
                                .pod_uid = keep(&p->l, uid, &r),
                                .name = keep(&p->l, c->metadata ? c->metadata->name : NULL, &r),
                                .created_nsec = c->created_at,
                                .running = c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING,
                                .unknown = c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_UNKNOWN,
                        };
                        p->l.n_containers++;
                }
                if (r < 0)
                        p->error = r;
                else
                        p->l.have_containers = true;
                /* the listing after the removals: what the log manager may clean up against */
                if (p->phase == PHASE_RELIST && p->g && p->g->cfg.listed)
                        p->g->cfg.listed(resp, p->g->cfg.userdata);
        }
        pass_release(p);
}

static void on_sandboxes(const struct cri_reply *reply, void *userdata) {
        struct gc_pass *p = userdata;
        const Runtime__V1__ListPodSandboxResponse *resp = (const void *) reply->msg;
        int r = 0;

        if (pass_listed(p, reply, "pod sandboxes")) {
                p->l.sandboxes = calloc(resp->n_items + 1, sizeof(*p->l.sandboxes));
                if (!p->l.sandboxes)
                        r = -ENOMEM;
                for (size_t i = 0; r >= 0 && i < resp->n_items; i++) {
                        const Runtime__V1__PodSandbox *s = resp->items[i];
                        const char *uid = sandbox_label(s->n_labels, s->labels, LABEL_POD_UID);

                        if (!uid)
                                continue;
                        p->l.sandboxes[p->l.n_sandboxes++] = (struct kr_gc_sandbox) {
                                .id = keep(&p->l, s->id, &r),
                                .pod_uid = keep(&p->l, uid, &r),
                                .created_nsec = s->created_at,
                                .ready = s->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY,
                        };
                }
                if (r < 0)
                        p->error = r;
                else
                        p->l.have_sandboxes = true;
        }
        pass_release(p);
}

static void list(struct gc_pass *p) {
        Runtime__V1__ListContainersRequest creq = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        Runtime__V1__ListPodSandboxRequest sreq = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
        int r;

        listing_done(&p->l);
        p->pending = 1;
        r = cri_list_containers(p->g->cri, &creq, 0, on_containers, p, &p->calls);
        if (r >= 0)
                p->pending++;
        else
                p->error = r;
        r = cri_list_pod_sandbox(p->g->cri, &sreq, 0, on_sandboxes, p, &p->calls);
        if (r >= 0)
                p->pending++;
        else
                p->error = r;
        pass_release(p);
}

struct removal {
        struct gc_pass *p;
        char *id;
        char *pod_uid;
};

static void removal_free(struct removal *x) {
        if (!x)
                return;
        free(x->id);
        free(x->pod_uid);
        free(x);
}

static void removal_drop(void *userdata) {
        removal_free(userdata);
}

/* a removal to issue: NULL when out of memory (noted in the pass) */
static struct removal *removal_new(struct gc_pass *p, const char *id, const char *pod_uid) {
        struct removal *x = calloc(1, sizeof(*x));

        if (!x || !(x->id = strdup(id)) || (pod_uid && !(x->pod_uid = strdup(pod_uid)))) {
                removal_free(x);
                p->error = -ENOMEM;
                return NULL;
        }
        x->p = p;
        p->removals.drop = removal_drop;
        return x;
}

static bool may_remove(const struct kr_container_gc *g, const char *id) {
        return !g->cfg.may_remove || g->cfg.may_remove(id, g->cfg.userdata);
}

/* a removal that may_remove allowed and that ends without a reply of RemoveContainer/RemovePodSandbox (it could not
 * be sent, or the stop before it failed) is reported as failed too, so that the caller's bookkeeping of what is in
 * flight ends with it */
static void report_unsent(const struct kr_container_gc *g, bool sandbox, const char *id, const char *pod_uid, int r) {
        if (g && g->cfg.removed)
                g->cfg.removed(sandbox, id, pod_uid, r, strerror(-r), g->cfg.userdata);
}

static void on_removed(const struct cri_reply *reply, void *userdata) {
        struct removal *x = userdata;
        struct gc_pass *p = x->p;

        bool sandbox = p->phase != PHASE_REMOVE_CONTAINERS;

        if (reply->r == -ECANCELED)
                p->cancelled = true;
        else {
                if (reply->r < 0 && reply->r != -ENOENT) {
                        if (!p->g->cfg.removed)
                                log_error("container GC: failed to remove %s %s: %s", sandbox ? "sandbox" : "container",
                                          x->id, reply->message);
                } else
                        log_v(2, "container GC: removed %s %.12s", sandbox ? "sandbox" : "container", x->id);
                if (p->g->cfg.removed)
                        p->g->cfg.removed(sandbox, x->id, x->pod_uid, reply->r == -ENOENT ? 0 : reply->r,
                                          reply->message, p->g->cfg.userdata);
        }
        removal_free(x);
        pass_release(p);
}

static void remove_container(struct removal *x) {
        Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
        int r;

        req.container_id = x->id;
        r = cri_remove_container(x->p->g->cri, &req, 0, on_removed, x, &x->p->removals);
        if (r < 0) {
                log_error("container GC: failed to remove container %s: %s", x->id, strerror(-r));
                report_unsent(x->p->g, false, x->id, x->pod_uid, r);
                removal_free(x);
                return;
        }
        x->p->pending++;
}

static void on_unknown_stopped(const struct cri_reply *reply, void *userdata) {
        struct removal *x = userdata;
        struct gc_pass *p = x->p;

        if (reply->r == -ECANCELED) {
                p->cancelled = true;
                removal_free(x);
                pass_release(p);
                return;
        }
        if (reply->r < 0 && reply->r != -ENOENT) {
                log_error("Failed to stop container \"%s\": %s", x->id, reply->message);
                report_unsent(p->g, false, x->id, x->pod_uid, reply->r);
                removal_free(x);
                pass_release(p);
                return;
        }
        remove_container(x);
        pass_release(p);
}

static void remove_containers(struct gc_pass *p) {
        struct kr_container_gc *g = p->g;
        const struct kr_gc_container **sel = NULL;
        size_t n = 0;
        bool ready = g->cfg.all_sources_ready ? g->cfg.all_sources_ready(g->cfg.userdata) : false;
        int r;

        r = kr_gc_select_containers(&g->cfg.policy, p->l.containers, p->l.n_containers, &g->cfg.pods, ready,
                                    p->evict_terminated, now_realtime_usec(), &sel, &n);
        if (r < 0) {
                p->error = r;
                pass_finish(p);
                return;
        }
        p->pending = 1;
        for (size_t i = 0; i < n; i++) {
                struct removal *x;

                if (!may_remove(g, sel[i]->id))
                        continue; /* refused before: in back-off */
                x = removal_new(p, sel[i]->id, sel[i]->pod_uid);
                if (!x) {
                        report_unsent(g, false, sel[i]->id, sel[i]->pod_uid, -ENOMEM);
                        break;
                }
                if (sel[i]->unknown) {
                        /* it could still be running: stop it first */
                        Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
                        log_info("container GC: container %s is in unknown state, try killing it before removal",
                                 x->id);
                        req.container_id = x->id;
                        req.timeout = UNKNOWN_STOP_TIMEOUT_SEC;
                        r = cri_stop_container(g->cri, &req, 0, on_unknown_stopped, x, &p->removals);
                        if (r < 0) {
                                report_unsent(g, false, x->id, x->pod_uid, r);
                                removal_free(x);
                                continue;
                        }
                        p->pending++;
                        continue;
                }
                remove_container(x);
        }
        free(sel);
        pass_release(p);
}

static void remove_sandboxes(struct gc_pass *p) {
        struct kr_container_gc *g = p->g;
        const struct kr_gc_sandbox **sel = NULL;
        size_t n = 0;
        int r;

        r = kr_gc_select_sandboxes(p->l.sandboxes, p->l.n_sandboxes, p->l.containers, p->l.n_containers, &g->cfg.pods,
                                   p->evict_terminated, &sel, &n);
        if (r < 0) {
                p->error = r;
                pass_finish(p);
                return;
        }
        p->pending = 1;
        for (size_t i = 0; i < n; i++) {
                Runtime__V1__RemovePodSandboxRequest req = RUNTIME__V1__REMOVE_POD_SANDBOX_REQUEST__INIT;
                struct removal *x;

                if (!may_remove(g, sel[i]->id))
                        continue; /* refused before: in back-off */
                x = removal_new(p, sel[i]->id, sel[i]->pod_uid);
                if (!x) {
                        report_unsent(g, true, sel[i]->id, sel[i]->pod_uid, -ENOMEM);
                        break;
                }
                req.pod_sandbox_id = x->id;
                r = cri_remove_pod_sandbox(g->cri, &req, 0, on_removed, x, &p->removals);
                if (r < 0) {
                        report_unsent(g, true, x->id, x->pod_uid, r);
                        removal_free(x);
                        continue;
                }
                p->pending++;
        }
        free(sel);
        pass_release(p);
}

/* the next phase, once the previous one's calls are all in */
static void pass_step(struct gc_pass *p) {
        if (p->error < 0 && p->phase != PHASE_REMOVE_SANDBOXES) {
                pass_finish(p);
                return;
        }
        switch (p->phase) {
        case PHASE_LIST:
                p->phase = PHASE_REMOVE_CONTAINERS;
                remove_containers(p);
                break;
        case PHASE_REMOVE_CONTAINERS:
                p->phase = PHASE_RELIST;
                list(p);
                break;
        case PHASE_RELIST:
                p->phase = PHASE_REMOVE_SANDBOXES;
                remove_sandboxes(p);
                break;
        case PHASE_REMOVE_SANDBOXES:
                pass_finish(p);
                break;
        }
}

int kr_container_gc_collect(struct kr_container_gc *g, bool evict_terminated_pods, kr_container_gc_done_fn done,
                            void *userdata) {
        struct gc_pass *p;
        int r;

        if (g->pass) {
                r = waiters_add(&g->again_waiters, &g->n_again_waiters, done, userdata);
                if (r < 0)
                        return r;
                g->again = true;
                g->again_evict_terminated = g->again_evict_terminated || evict_terminated_pods;
                return 0;
        }
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        r = waiters_add(&p->waiters, &p->n_waiters, done, userdata);
        if (r < 0) {
                free(p);
                return r;
        }
        p->g = g;
        p->evict_terminated = evict_terminated_pods;
        p->phase = PHASE_LIST;
        g->pass = p;
        list(p);
        return 0;
}

int kr_container_gc_new(struct event_base *base, struct cri_client *cri, const struct kr_container_gc_config *cfg,
                        struct kr_container_gc **ret) {
        struct kr_container_gc *g = calloc(1, sizeof(*g));

        if (!g)
                return -ENOMEM;
        g->base = base;
        g->cri = cri;
        g->cfg = *cfg;
        *ret = g;
        return 0;
}

struct kr_container_gc *kr_container_gc_free(struct kr_container_gc *g) {
        if (!g)
                return NULL;
        if (g->pass) {
                struct gc_pass *p = TAKE_PTR(g->pass);
                cri_calls_cancel(&p->calls);
                cri_calls_cancel(&p->removals);
                pass_free(p); /* its waiters are told -ECANCELED */
        }
        waiters_call(&g->again_waiters, &g->n_again_waiters, -ECANCELED);
        free(g);
        return NULL;
}
