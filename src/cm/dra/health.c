/* SPDX-License-Identifier: Apache-2.0 */
#include "cm/dra/health.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "cm/dra/claims.h"

struct entry {
        char *driver, *pool, *device;
        enum dra_health health;
        char *message;         /* NULL when none */
        uint64_t timeout_usec; /* never 0 */
        uint64_t updated_usec; /* CLOCK_MONOTONIC, when it came (or became Unknown) */
};

struct dra_health_cache {
        struct entry *entries;
        size_t n, allocated;
};

/* "Healthy", "Unhealthy", "Unknown" (v1.ResourceHealthStatus) */
static const char *dra_health_to_string(enum dra_health h) {
        switch (h) {
        case DRA_HEALTH_HEALTHY:
                return "Healthy";
        case DRA_HEALTH_UNHEALTHY:
                return "Unhealthy";
        default:
                return "Unknown";
        }
}

static void entry_done(struct entry *e) {
        free(e->driver);
        free(e->pool);
        free(e->device);
        free(e->message);
}

void dra_health_keys_free(struct dra_health_key *keys, size_t n) {
        for (size_t i = 0; keys && i < n; i++) {
                free(keys[i].driver);
                free(keys[i].pool);
                free(keys[i].device);
        }
        free(keys);
}

int dra_health_cache_new(struct dra_health_cache **ret) {
        struct dra_health_cache *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *ret = c;
        return 0;
}

struct dra_health_cache *dra_health_cache_free(struct dra_health_cache *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < c->n; i++)
                entry_done(&c->entries[i]);
        free(c->entries);
        free(c);
        return NULL;
}

static struct entry *find(const struct dra_health_cache *c, const char *driver, const char *pool, const char *device) {
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->entries[i].driver, driver) && streq(c->entries[i].pool, pool) &&
                    streq(c->entries[i].device, device))
                        return &c->entries[i];
        return NULL;
}

struct keys {
        struct dra_health_key *k;
        size_t n;
        bool oom;
};

static void keys_add(struct keys *ks, const struct entry *e) {
        struct dra_health_key *nk;

        if (ks->oom)
                return;
        nk = realloc(ks->k, (ks->n + 1) * sizeof(*nk));
        if (!nk) {
                ks->oom = true;
                return;
        }
        ks->k = nk;
        nk[ks->n] = (struct dra_health_key) { strdup(e->driver), strdup(e->pool), strdup(e->device) };
        ks->n++;
        if (!nk[ks->n - 1].driver || !nk[ks->n - 1].pool || !nk[ks->n - 1].device)
                ks->oom = true;
}

static int keys_return(struct keys *ks, struct dra_health_key **ret, size_t *ret_n) {
        if (ks->oom) {
                dra_health_keys_free(ks->k, ks->n);
                return -ENOMEM;
        }
        *ret = ks->k;
        *ret_n = ks->n;
        return 0;
}

static bool name_ok(const char *s) {
        return s && *s && strlen(s) <= DRA_HEALTH_MAX_NAME;
}

/* the message as upstream keeps it: at most DRA_HEALTH_MAX_MESSAGE bytes, a longer one cut with "..." */
static char *message_dup(const char *m) {
        size_t n;
        char *s;

        if (!m || !*m)
                return NULL;
        n = strlen(m);
        if (n <= DRA_HEALTH_MAX_MESSAGE)
                return strdup(m);
        s = malloc(DRA_HEALTH_MAX_MESSAGE + 1);
        if (!s)
                return NULL;
        memcpy(s, m, DRA_HEALTH_MAX_MESSAGE - 3);
        memcpy(s + DRA_HEALTH_MAX_MESSAGE - 3, "...", 4);
        return s;
}

static uint64_t timeout_of(int64_t sec) {
        if (sec <= 0)
                return DRA_HEALTH_DEFAULT_TIMEOUT_USEC;
        if (sec > DRA_HEALTH_MAX_TIMEOUT_SEC)
                sec = DRA_HEALTH_MAX_TIMEOUT_SEC;
        return (uint64_t) sec * UINT64_C(1000000);
}

static bool timed_out(const struct entry *e, uint64_t now_usec) {
        return now_usec > e->updated_usec && now_usec - e->updated_usec > e->timeout_usec;
}

int dra_health_update(struct dra_health_cache *c, const char *driver, const struct dra_health_report *reports, size_t n,
                      uint64_t now_usec, struct dra_health_key **ret_changed, size_t *ret_n_changed) {
        struct keys ks = { 0 };
        bool *seen;
        size_t old_n;

        assert(c && driver && (reports || n == 0));
        if (n > DRA_HEALTH_MAX_DEVICES)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!name_ok(reports[i].pool) || !name_ok(reports[i].device))
                        return -EINVAL;
        if (c->n + n > c->allocated) {
                size_t want = c->n + n + 16;
                struct entry *ne = realloc(c->entries, want * sizeof(*ne));
                if (!ne)
                        return -ENOMEM;
                c->entries = ne;
                c->allocated = want;
        }
        old_n = c->n;
        seen = calloc(old_n + n + 1, sizeof(bool));
        if (!seen)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const struct dra_health_report *r = &reports[i];
                struct entry *e = find(c, driver, r->pool, r->device);
                char *msg = message_dup(r->message);
                uint64_t timeout = timeout_of(r->timeout_sec);
                enum dra_health h = r->health == DRA_HEALTH_HEALTHY || r->health == DRA_HEALTH_UNHEALTHY
                                            ? r->health
                                            : DRA_HEALTH_UNKNOWN;

                if (r->message && *r->message && !msg) {
                        ks.oom = true;
                        continue;
                }
                if (!e) {
                        e = &c->entries[c->n];
                        *e = (struct entry) { .driver = strdup(driver),
                                              .pool = strdup(r->pool),
                                              .device = strdup(r->device),
                                              .health = h,
                                              .message = msg,
                                              .timeout_usec = timeout,
                                              .updated_usec = now_usec };
                        if (!e->driver || !e->pool || !e->device) {
                                entry_done(e);
                                ks.oom = true;
                                continue;
                        }
                        c->n++;
                        seen[e - c->entries] = true;
                        keys_add(&ks, e);
                        continue;
                }
                seen[e - c->entries] = true;
                if (e->health != h || !streq_ptr(e->message, msg) || e->timeout_usec != timeout)
                        keys_add(&ks, e);
                free(e->message);
                e->message = msg;
                e->health = h;
                e->timeout_usec = timeout;
                e->updated_usec = now_usec;
        }
        /* the driver's devices not in this report: Unknown once their time passed */
        for (size_t i = 0; i < old_n; i++) {
                struct entry *e = &c->entries[i];
                if (seen[i] || !streq(e->driver, driver) || e->health == DRA_HEALTH_UNKNOWN || !timed_out(e, now_usec))
                        continue;
                e->health = DRA_HEALTH_UNKNOWN;
                e->message = mfree(e->message);
                e->updated_usec = now_usec;
                keys_add(&ks, e);
        }
        free(seen);
        return keys_return(&ks, ret_changed, ret_n_changed);
}

int dra_health_clear_driver(struct dra_health_cache *c, const char *driver, struct dra_health_key **ret_changed,
                            size_t *ret_n_changed) {
        struct keys ks = { 0 };
        size_t j = 0;

        for (size_t i = 0; i < c->n; i++) {
                struct entry *e = &c->entries[i];
                if (!streq(e->driver, driver)) {
                        c->entries[j++] = *e;
                        continue;
                }
                if (e->health != DRA_HEALTH_UNKNOWN)
                        keys_add(&ks, e);
                entry_done(e);
        }
        c->n = j;
        return keys_return(&ks, ret_changed, ret_n_changed);
}

int dra_health_expire(struct dra_health_cache *c, uint64_t now_usec, struct dra_health_key **ret_changed,
                      size_t *ret_n_changed) {
        struct keys ks = { 0 };

        for (size_t i = 0; i < c->n; i++) {
                struct entry *e = &c->entries[i];
                if (e->health == DRA_HEALTH_UNKNOWN || !timed_out(e, now_usec))
                        continue;
                e->health = DRA_HEALTH_UNKNOWN;
                e->message = mfree(e->message);
                e->updated_usec = now_usec;
                keys_add(&ks, e);
        }
        return keys_return(&ks, ret_changed, ret_n_changed);
}

uint64_t dra_health_next_expiry(const struct dra_health_cache *c) {
        uint64_t best = 0;

        for (size_t i = 0; c && i < c->n; i++) {
                const struct entry *e = &c->entries[i];
                /* timed out once strictly past updated + timeout */
                uint64_t at = e->updated_usec + e->timeout_usec + 1;
                if (e->health != DRA_HEALTH_UNKNOWN && (best == 0 || at < best))
                        best = at;
        }
        return best;
}

enum dra_health dra_health_get(const struct dra_health_cache *c, const char *driver, const char *pool,
                               const char *device, uint64_t now_usec, const char **ret_message) {
        const struct entry *e = c ? find(c, driver, pool, device) : NULL;

        if (ret_message)
                *ret_message = NULL;
        if (!e || timed_out(e, now_usec))
                return DRA_HEALTH_UNKNOWN;
        if (ret_message)
                *ret_message = e->message;
        return e->health;
}

int dra_health_affected_pods(const struct dra_claims *claims, const struct dra_health_key *changed, size_t n,
                             char ***ret_pod_uids) {
        _cleanup_strv_free_ char **uids = NULL;

        for (size_t i = 0; i < dra_claims_count(claims); i++) {
                const struct dra_claim *cl = dra_claims_at((struct dra_claims *) claims, i);
                bool hit = false;

                for (size_t d = 0; d < cl->n_devices && !hit; d++)
                        for (size_t k = 0; k < n && !hit; k++)
                                hit = streq(cl->devices[d].driver, changed[k].driver) &&
                                      streq(cl->devices[d].pool, changed[k].pool) &&
                                      streq(cl->devices[d].device, changed[k].device);
                if (!hit)
                        continue;
                for (char **u = cl->pod_uids; u && *u; u++)
                        if (!strv_contains(uids, *u) && strv_extend(&uids, *u) < 0)
                                return -ENOMEM;
        }
        *ret_pod_uids = TAKE_PTR(uids);
        return 0;
}

/* a device belongs to the reference's request: no request named, a device without request names, or one of its
 * names is the request's base ("req" of "req/sub") or the request itself */
static bool device_for_request(const struct dra_device *d, const char *request) {
        size_t base;

        if (!request || !*request || strv_length(d->request_names) == 0)
                return true;
        base = strcspn(request, "/");
        for (char **s = d->request_names; s && *s; s++)
                if (streq(*s, request) || (strlen(*s) == base && strncmp(*s, request, base) == 0))
                        return true;
        return false;
}

static int cmp_resource(const void *a, const void *b) {
        return strcmp(json_string_value(json_object_get(*(json_t *const *) a, "resourceID")),
                      json_string_value(json_object_get(*(json_t *const *) b, "resourceID")));
}

int dra_health_claim_status(const struct dra_health_cache *c, const struct dra_claim *claim, const char *ref_name,
                            const char *request, bool with_message, uint64_t now_usec, json_t **ret) {
        json_auto_t *list = json_array(), *sorted = NULL;
        _cleanup_free_ char *name = NULL;
        _cleanup_strv_free_ char **ids = NULL;
        _cleanup_free_ json_t **items = NULL;
        size_t m;

        if (!list)
                return -ENOMEM;
        for (size_t d = 0; d < claim->n_devices; d++) {
                const struct dra_device *dev = &claim->devices[d];
                _cleanup_free_ char *id = NULL;
                const char *message = NULL;
                enum dra_health h;
                json_t *o;

                if (!device_for_request(dev, request))
                        continue;
                if (strv_length(dev->cdi_ids) > 0)
                        id = strdup(dev->cdi_ids[0]);
                else if (asprintf(&id, "%s/%s/%s", dev->driver, dev->pool, dev->device) < 0)
                        id = NULL;
                if (!id)
                        return -ENOMEM;
                if (strv_contains(ids, id))
                        continue;
                if (strv_extend(&ids, id) < 0)
                        return -ENOMEM;
                h = dra_health_get(c, dev->driver, dev->pool, dev->device, now_usec, &message);
                o = json_pack("{s:s, s:s}", "resourceID", id, "health", dra_health_to_string(h));
                if (!o || json_array_append_new(list, o) < 0)
                        return -ENOMEM;
                if (with_message && message && json_object_set_new(o, "message", json_string(message)) < 0)
                        return -ENOMEM;
        }
        m = json_array_size(list);
        if (m == 0) {
                *ret = NULL;
                return 0;
        }
        items = calloc(m, sizeof(*items));
        sorted = json_array();
        if (!items || !sorted)
                return -ENOMEM;
        for (size_t i = 0; i < m; i++)
                items[i] = json_array_get(list, i);
        qsort(items, m, sizeof(*items), cmp_resource);
        for (size_t i = 0; i < m; i++)
                if (json_array_append(sorted, items[i]) < 0)
                        return -ENOMEM;
        if (request && *request ? asprintf(&name, "claim:%s/%s", ref_name, request) < 0
                                : asprintf(&name, "claim:%s", ref_name) < 0)
                return -ENOMEM;
        *ret = json_pack("{s:s, s:O}", "name", name, "resources", sorted);
        return *ret ? 0 : -ENOMEM;
}
