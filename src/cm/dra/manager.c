/* SPDX-License-Identifier: Apache-2.0 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/list.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "cm/devicemanager/ckpt_writer.h"
#include "cm/dra/claims.h"
#include "cm/dra/manager.h"
#include "cm/dra/manager-testing.h"
#include "cm/dra/plugins.h"
#include "dra.pb-c.h"

struct dra_prepare {
        struct dra_manager *m;
        struct dra_prepare *next;
        char **claim_uids;
        dra_prepare_done_t done;
        void *userdata;
};

/* one NodePrepareResources / NodeUnprepareResources call to one driver */
struct driver_call {
        struct dra_manager *m;
        struct driver_call *prev, *next;
        char *driver;
        char **claim_uids;
        bool unprepare;
        bool cancelled; /* the manager is being freed */
};

/* a claim's outcome of the calls of one round */
struct claim_round {
        unsigned pending; /* driver calls not answered yet */
        char *error;      /* the first failure */
};

struct dra_manager {
        struct event_base *base;
        struct dra_plugins *plugins;
        struct dra_claims *claims;
        struct dm_ckpt_writer *writer;
        struct dra_prepare *waiting;
        struct driver_call *calls;
        unsigned unprepares;
        /* per claim UID: the round in flight (parallel to nothing: looked up by UID) */
        char **round_uids;
        struct claim_round *rounds;
        size_t n_rounds;
        struct event *settle; /* runs the waiters whose claims are ready, later on the loop */
};

static void checkpoint(struct dra_manager *m) {
        char *text = NULL;

        if (dra_claims_checkpoint_encode(m->claims, &text) < 0) {
                log_error("DRA: cannot encode the checkpoint: out of memory");
                return;
        }
        dm_ckpt_writer_set(m->writer, text);
}

static struct claim_round *round_of(struct dra_manager *m, const char *uid, bool create) {
        struct claim_round *r;

        for (size_t i = 0; i < m->n_rounds; i++)
                if (streq(m->round_uids[i], uid))
                        return &m->rounds[i];
        if (!create)
                return NULL;
        r = reallocarray(m->rounds, m->n_rounds + 1, sizeof(*r));
        if (!r)
                return NULL;
        m->rounds = r;
        if (strv_extend(&m->round_uids, uid) < 0)
                return NULL;
        m->rounds[m->n_rounds] = (struct claim_round) { 0 };
        return &m->rounds[m->n_rounds++];
}

static void round_drop(struct dra_manager *m, const char *uid) {
        for (size_t i = 0; i < m->n_rounds; i++)
                if (streq(m->round_uids[i], uid)) {
                        free(m->rounds[i].error);
                        strv_remove_at(m->round_uids, i);
                        memmove(m->rounds + i, m->rounds + i + 1, (m->n_rounds - i - 1) * sizeof(*m->rounds));
                        m->n_rounds--;
                        return;
                }
}

static void settle_soon(struct dra_manager *m) {
        event_active(m->settle, EV_TIMEOUT, 0);
}

static struct driver_call *driver_call_free(struct driver_call *c) {
        if (!c)
                return NULL;
        free(c->driver);
        strv_free(c->claim_uids);
        free(c);
        return NULL;
}

static void driver_call_unlink(struct dra_manager *m, struct driver_call *c) {
        DLIST_REMOVE(m->calls, c);
}

static void claim_failed(struct dra_manager *m, const char *uid, const char *fmt, ...) _printf_(3, 4);
static void claim_failed(struct dra_manager *m, const char *uid, const char *fmt, ...) {
        struct claim_round *r = round_of(m, uid, true);
        va_list ap;

        if (!r || r->error)
                return;
        va_start(ap, fmt);
        if (vasprintf(&r->error, fmt, ap) < 0)
                r->error = NULL;
        va_end(ap);
}

static void claim_call_done(struct dra_manager *m, struct driver_call *c, const char *uid) {
        struct claim_round *r = round_of(m, uid, false);
        struct dra_claim *claim = dra_claims_find(m->claims, uid);

        if (!r)
                return;
        assert(r->pending > 0);
        if (--r->pending > 0 || !claim)
                return;
        if (!c->unprepare) {
                claim->state = r->error ? DRA_CLAIM_NEW : DRA_CLAIM_PREPARED;
                if (r->error)
                        log_error("DRA: %s", r->error);
                /* the round's error stays for the waiters (settle), dropped then */
                return;
        }
        if (r->error) {
                log_error("DRA: unprepare dynamic resources: %s (tried again in %d s)", r->error,
                          (int) (DRA_UNPREPARE_RETRY_USEC / 1000000));
                (void) dra_claim_unprepare_end(claim, false);
                claim->unprepare_retry_usec = now_usec() + DRA_UNPREPARE_RETRY_USEC;
                round_drop(m, uid);
                return;
        }
        round_drop(m, uid);
        if (dra_claim_unprepare_end(claim, true)) {
                log_info("DRA: ResourceClaim %s/%s unprepared", claim->namespace, claim->name);
                dra_claims_remove(m->claims, uid);
        }
}

static void on_prepared(const struct grpc_reply *reply, void *userdata) {
        struct driver_call *c = userdata;
        struct dra_manager *m = c->m;
        const Dra__V1__NodePrepareResourcesResponse *resp = (const void *) reply->msg;

        if (c->cancelled) {
                driver_call_free(c);
                return;
        }
        driver_call_unlink(m, c);

        for (char **u = c->claim_uids; u && *u; u++) {
                struct dra_claim *claim = dra_claims_find(m->claims, *u);
                const Dra__V1__NodePrepareResourceResponse *res = NULL;

                if (reply->r < 0) {
                        claim_failed(m, *u, "NodePrepareResources: rpc error: code = %s desc = %s",
                                     grpc_code_to_string(reply->grpc_status), reply->message);
                        claim_call_done(m, c, *u);
                        continue;
                }
                for (size_t i = 0; i < resp->n_claims; i++)
                        if (streq_ptr(resp->claims[i]->key, *u))
                                res = resp->claims[i]->value;
                if (!claim)
                        ;
                else if (!res)
                        claim_failed(m, *u, "NodePrepareResources skipped 1 ResourceClaims");
                else if (!isempty(res->error))
                        claim_failed(m, *u, "NodePrepareResources failed for ResourceClaim %s: %s", claim->name,
                                     res->error);
                else {
                        struct dra_device *devs = calloc(res->n_devices ?: 1, sizeof(*devs));
                        char *pools[1] = { NULL };
                        (void) pools;
                        if (!devs) {
                                claim_failed(m, *u, "out of memory");
                        } else {
                                for (size_t i = 0; i < res->n_devices; i++) {
                                        const Dra__V1__Device *d = res->devices[i];
                                        devs[i].pool = d->pool_name;
                                        devs[i].device = d->device_name;
                                        devs[i].share_id = isempty(d->share_id) ? NULL : d->share_id;
                                        /* protobuf-c's repeated strings are not NULL-terminated: copied below */
                                        devs[i].request_names = NULL;
                                        devs[i].cdi_ids = NULL;
                                        for (size_t j = 0; j < d->n_request_names; j++)
                                                (void) strv_extend(&devs[i].request_names, d->request_names[j]);
                                        for (size_t j = 0; j < d->n_cdi_device_ids; j++)
                                                (void) strv_extend(&devs[i].cdi_ids, d->cdi_device_ids[j]);
                                }
                                if (dra_claim_set_driver_devices(claim, c->driver, devs, res->n_devices) < 0)
                                        claim_failed(m, *u, "out of memory");
                                for (size_t i = 0; i < res->n_devices; i++) {
                                        strv_free(devs[i].request_names);
                                        strv_free(devs[i].cdi_ids);
                                }
                                free(devs);
                        }
                }
                claim_call_done(m, c, *u);
        }
        driver_call_free(c);
        checkpoint(m);
        settle_soon(m);
}

static void on_unprepared(const struct grpc_reply *reply, void *userdata) {
        struct driver_call *c = userdata;
        struct dra_manager *m = c->m;
        const Dra__V1__NodeUnprepareResourcesResponse *resp = (const void *) reply->msg;

        if (c->cancelled) {
                driver_call_free(c);
                return;
        }
        driver_call_unlink(m, c);
        m->unprepares--;
        for (char **u = c->claim_uids; u && *u; u++) {
                struct dra_claim *claim = dra_claims_find(m->claims, *u);
                const Dra__V1__NodeUnprepareResourceResponse *res = NULL;

                if (reply->r < 0)
                        claim_failed(m, *u, "NodeUnprepareResources: rpc error: code = %s desc = %s",
                                     grpc_code_to_string(reply->grpc_status), reply->message);
                else {
                        for (size_t i = 0; i < resp->n_claims; i++)
                                if (streq_ptr(resp->claims[i]->key, *u))
                                        res = resp->claims[i]->value;
                        if (!res)
                                claim_failed(m, *u, "NodeUnprepareResources skipped 1 ResourceClaims");
                        else if (!isempty(res->error))
                                claim_failed(m, *u, "NodeUnprepareResources failed for ResourceClaim %s: %s",
                                             claim ? claim->name : *u, res->error);
                }
                claim_call_done(m, c, *u);
        }
        driver_call_free(c);
        checkpoint(m);
        settle_soon(m);
}

/* One call per driver for these claims (prepare or unprepare), each claim's round counting its drivers' answers. */
static void start_calls(struct dra_manager *m, char *const *uids, bool unprepare) {
        _cleanup_strv_free_ char **drivers = NULL;

        for (char *const *u = uids; u && *u; u++) {
                struct dra_claim *claim = dra_claims_find(m->claims, *u);
                struct claim_round *r;

                if (!claim)
                        continue;
                r = round_of(m, *u, true);
                if (!r)
                        continue;
                free(r->error);
                r->error = NULL;
                r->pending = 0;
                for (char **d = claim->drivers; d && *d; d++)
                        if (!strv_contains(drivers, *d))
                                (void) strv_extend(&drivers, *d);
        }
        for (char **d = drivers; d && *d; d++) {
                Dra__V1__NodePrepareResourcesRequest preq = DRA__V1__NODE_PREPARE_RESOURCES_REQUEST__INIT;
                Dra__V1__NodeUnprepareResourcesRequest ureq = DRA__V1__NODE_UNPREPARE_RESOURCES_REQUEST__INIT;
                Dra__V1__Claim *items = NULL, **ptrs = NULL;
                struct driver_call *c = calloc(1, sizeof(*c));
                size_t n = 0, cap = strv_length((char **) uids);
                int r;

                items = calloc(cap ?: 1, sizeof(*items));
                ptrs = calloc(cap ?: 1, sizeof(*ptrs));
                if (!c || !items || !ptrs || !(c->driver = strdup(*d))) {
                        free(items);
                        free(ptrs);
                        driver_call_free(c);
                        continue;
                }
                c->m = m;
                c->unprepare = unprepare;
                for (char *const *u = uids; u && *u; u++) {
                        struct dra_claim *claim = dra_claims_find(m->claims, *u);
                        if (!claim || !strv_contains(claim->drivers, *d))
                                continue;
                        dra__v1__claim__init(&items[n]);
                        items[n].namespace_ = claim->namespace;
                        items[n].uid = claim->uid;
                        items[n].name = claim->name;
                        ptrs[n] = &items[n];
                        n++;
                        (void) strv_extend(&c->claim_uids, *u);
                        round_of(m, *u, true)->pending++;
                }
                if (unprepare) {
                        ureq.n_claims = n;
                        ureq.claims = ptrs;
                        r = dra_plugins_call(m->plugins, *d, "NodeUnprepareResources", &ureq.base,
                                             &dra__v1__node_unprepare_resources_response__descriptor, on_unprepared, c);
                } else {
                        preq.n_claims = n;
                        preq.claims = ptrs;
                        r = dra_plugins_call(m->plugins, *d, "NodePrepareResources", &preq.base,
                                             &dra__v1__node_prepare_resources_response__descriptor, on_prepared, c);
                }
                free(items);
                free(ptrs);
                if (r < 0) {
                        for (char **u = c->claim_uids; u && *u; u++) {
                                if (r == -ENOENT)
                                        claim_failed(m, *u, "DRA driver %s is not registered", *d);
                                else
                                        claim_failed(m, *u, "%s: %s",
                                                     unprepare ? "NodeUnprepareResources" : "NodePrepareResources",
                                                     strerror(-r));
                                claim_call_done(m, c, *u);
                        }
                        driver_call_free(c);
                        settle_soon(m);
                        continue;
                }
                if (unprepare)
                        m->unprepares++;
                DLIST_PREPEND(m->calls, c);
        }
}

static void prepare_free(struct dra_prepare *p) {
        if (!p)
                return;
        strv_free(p->claim_uids);
        free(p);
}

/* Start what the waiters need, and finish the waiters that can be. */
static void settle(evutil_socket_t fd, short what, void *userdata) {
        struct dra_manager *m = userdata;
        _cleanup_strv_free_ char **to_prepare = NULL;
        (void) fd;
        (void) what;

        for (struct dra_prepare **q = &m->waiting, *p; (p = *q);) {
                const char *error = NULL;
                bool ready = true;

                for (char **u = p->claim_uids; u && *u; u++) {
                        struct dra_claim *claim = dra_claims_find(m->claims, *u);
                        struct claim_round *r = round_of(m, *u, false);
                        if (!claim)
                                continue; /* cannot happen while the pod holds it */
                        if (claim->state == DRA_CLAIM_NEW && r && r->pending == 0 && r->error) {
                                error = r->error;
                                break;
                        }
                        if (claim->state != DRA_CLAIM_PREPARED)
                                ready = false;
                }
                if (!error && !ready) {
                        q = &p->next;
                        continue;
                }
                *q = p->next;
                p->done(error ? -EIO : 0, error, p->userdata);
                prepare_free(p);
        }
        /* the errors were told; claims NEW now are prepared anew for the waiters left */
        for (size_t i = 0; i < m->n_rounds;) {
                struct dra_claim *claim = dra_claims_find(m->claims, m->round_uids[i]);
                if (m->rounds[i].pending == 0 && (!claim || claim->state != DRA_CLAIM_UNPREPARING))
                        round_drop(m, m->round_uids[i]);
                else
                        i++;
        }
        for (struct dra_prepare *p = m->waiting; p; p = p->next)
                for (char **u = p->claim_uids; u && *u; u++) {
                        struct dra_claim *claim = dra_claims_find(m->claims, *u);
                        if (claim && claim->state == DRA_CLAIM_NEW && !strv_contains(to_prepare, *u))
                                (void) strv_extend(&to_prepare, *u);
                }
        for (char **u = to_prepare; u && *u; u++) {
                struct dra_claim *claim = dra_claims_find(m->claims, *u);
                /* an allocation without drivers has nothing to prepare */
                claim->state = strv_length(claim->drivers) > 0 ? DRA_CLAIM_PREPARING : DRA_CLAIM_PREPARED;
        }
        if (to_prepare) {
                start_calls(m, to_prepare, false);
                settle_soon(m);
        }
}

int dra_manager_new(struct event_base *base, const char *root_dir, struct dra_plugins *plugins,
                    struct dra_manager **ret, struct ck_error **ret_error) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        struct dra_manager *m;
        int r;

        if (asprintf(&path, "%s/%s", root_dir, DRA_CHECKPOINT_FILE) < 0)
                return -ENOMEM;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->base = base;
        m->plugins = plugins;
        m->settle = event_new(base, -1, 0, settle, m);
        if (!m->settle) {
                dra_manager_free(m);
                return -ENOMEM;
        }
        r = read_full_file(path, DRA_CHECKPOINT_MAX_SIZE, &text, NULL);
        if (r >= 0) {
                r = dra_claims_checkpoint_decode(text, &m->claims, ret_error);
                if (r < 0) {
                        ck_error_prefix(ret_error, "DRA checkpoint %s", path);
                        dra_manager_free(m);
                        return r;
                }
                log_info("DRA: %zu prepared ResourceClaims from %s", dra_claims_count(m->claims), path);
        } else if (r != -ENOENT) {
                dra_manager_free(m);
                return ck_error_set(ret_error, r, "cannot read the DRA checkpoint %s: %s", path, strerror(-r));
        } else {
                r = dra_claims_new(&m->claims);
                if (r < 0) {
                        dra_manager_free(m);
                        return r;
                }
        }
        r = dm_ckpt_writer_new(base, path, &m->writer);
        if (r < 0) {
                dra_manager_free(m);
                return r;
        }
        *ret = m;
        return 0;
}

struct dra_manager *dra_manager_free(struct dra_manager *m) {
        if (!m)
                return NULL;
        while (m->calls) {
                struct driver_call *c = m->calls;
                c->cancelled = true; /* freed by their callbacks, which the plugins' clients run when freed */
                DLIST_REMOVE(m->calls, c);
        }
        for (struct dra_prepare *p = m->waiting, *next; p; p = next) {
                next = p->next;
                prepare_free(p);
        }
        if (m->claims && m->writer)
                checkpoint(m);
        dm_ckpt_writer_free(m->writer);
        dra_claims_free(m->claims);
        for (size_t i = 0; i < m->n_rounds; i++)
                free(m->rounds[i].error);
        free(m->rounds);
        strv_free(m->round_uids);
        if (m->settle)
                event_free(m->settle);
        free(m);
        return NULL;
}

struct dra_claims *dra_manager_claims(struct dra_manager *m) {
        return m->claims;
}

unsigned dra_manager_unprepares_in_flight(const struct dra_manager *m) {
        return m->unprepares;
}

int dra_manager_prepare(struct dra_manager *m, const char *pod_uid, const struct dra_claim_ref *claims, size_t n,
                        dra_prepare_done_t done, void *userdata, struct dra_prepare **ret) {
        struct dra_prepare *p = calloc(1, sizeof(*p));
        int r;

        if (!p)
                return -ENOMEM;
        p->m = m;
        p->done = done;
        p->userdata = userdata;
        for (size_t i = 0; i < n; i++) {
                struct dra_claim *claim = NULL;

                r = dra_claims_add_pod(m->claims, claims[i].uid, claims[i].name, claims[i].namespace, pod_uid, &claim);
                if (r == -EEXIST) {
                        prepare_free(p);
                        return -EEXIST; /* "old ResourceClaim with same name ... and different UID" */
                }
                if (r < 0 || strv_extend(&p->claim_uids, claims[i].uid) < 0) {
                        prepare_free(p);
                        return -ENOMEM;
                }
                if (claim->state == DRA_CLAIM_NEW)
                        for (char *const *d = claims[i].drivers; d && *d; d++)
                                if (!strv_contains(claim->drivers, *d) && strv_extend(&claim->drivers, *d) < 0) {
                                        prepare_free(p);
                                        return -ENOMEM;
                                }
        }
        FLIST_PREPEND(m->waiting, p);
        settle_soon(m);
        if (ret)
                *ret = p;
        return 0;
}

void dra_prepare_cancel(struct dra_prepare *p) {
        if (!p)
                return;
        FLIST_REMOVE(p->m->waiting, p);
        prepare_free(p);
}

static void unprepare_unused(struct dra_manager *m) {
        _cleanup_strv_free_ char **uids = NULL;

        for (size_t i = 0; i < dra_claims_count(m->claims); i++) {
                struct dra_claim *claim = dra_claims_at(m->claims, i);
                if (claim->state == DRA_CLAIM_PREPARED && strv_length(claim->pod_uids) == 0 &&
                    now_usec() >= claim->unprepare_retry_usec && dra_claim_unprepare_begin(claim) == 0)
                        (void) strv_extend(&uids, claim->uid);
        }
        if (uids) {
                checkpoint(m);
                start_calls(m, uids, true);
        }
}

void dra_manager_gc(struct dra_manager *m, char *const *active_pod_uids) {
        _cleanup_strv_free_ char **gone = NULL;

        for (size_t i = 0; i < dra_claims_count(m->claims); i++) {
                struct dra_claim *claim = dra_claims_at(m->claims, i);
                for (char **p = claim->pod_uids; p && *p; p++)
                        if (!strv_contains((char **) active_pod_uids, *p) && !strv_contains(gone, *p))
                                (void) strv_extend(&gone, *p);
        }
        for (char **p = gone; p && *p; p++)
                (void) dra_claims_remove_pod(m->claims, *p, NULL);
        unprepare_unused(m);
        if (gone)
                checkpoint(m);
}
