/* SPDX-License-Identifier: Apache-2.0 */
/* Webhook authentication and authorization of the kubelet API through the API server (as upstream's
 * authentication.webhook and authorization.mode=Webhook): a bearer token is checked with a TokenReview, a
 * request is authorized with a SubjectAccessReview for (user, verb, nodes/<node>/<subresource>). Both answers
 * are cached for the configured TTLs (authentication.webhook.cacheTTL, authorization.webhook.cacheAuthorizedTTL
 * and cacheUnauthorizedTTL; 2 min, 5 min and 30 s by default; 0 caches nothing), tokens keyed by a SHA-256 of
 * the token so that no token is kept, authorizations by a JSON array of the user, its groups, the verb and the
 * subresource, which no name can make ambiguous. While a review is in flight the request waits off the loop's
 * stack; a client that leaves meanwhile cancels it. */

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "client/client.h"
#include "server/server-internal.h"

#define CACHE_MAX 1024

struct api_cache_entry {
        char *key;
        uint64_t expires_usec; /* monotonic */
        bool yes;              /* authenticated / allowed */
        struct api_user user;  /* tokens: who it is */
        char *reason;          /* authorization: the reviewer's reason */
};

struct api_cache {
        struct api_cache_entry *e;
        size_t n;
};

static void entry_done(struct api_cache_entry *e) {
        free(e->key);
        api_user_done(&e->user);
        free(e->reason);
}

void api_cache_free(struct api_cache *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++)
                entry_done(&c->e[i]);
        free(c->e);
        free(c);
}

struct api_cache_entry *api_cache_get_at(struct api_cache *c, const char *key, uint64_t now) {
        for (size_t i = 0; c && i < c->n; i++)
                if (streq(c->e[i].key, key)) {
                        if (c->e[i].expires_usec > now)
                                return &c->e[i];
                        entry_done(&c->e[i]);
                        c->e[i] = c->e[--c->n];
                        return NULL;
                }
        return NULL;
}

static struct api_cache_entry *cache_get(struct api_cache *c, const char *key) {
        return api_cache_get_at(c, key, now_usec());
}

struct api_cache_entry *api_cache_put_at(struct api_cache **cp, char *key, bool yes, uint64_t ttl, uint64_t now) {
        struct api_cache *c = *cp;
        struct api_cache_entry *e;

        if (ttl == 0) {
                free(key);
                return NULL;
        }
        if (!c) {
                c = *cp = calloc(1, sizeof(*c));
                if (!c) {
                        free(key);
                        return NULL;
                }
                c->e = calloc(CACHE_MAX, sizeof(*c->e));
                if (!c->e) {
                        free(c);
                        *cp = NULL;
                        free(key);
                        return NULL;
                }
        }
        /* an older answer for the same key, expired or not, is replaced */
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->e[i].key, key)) {
                        entry_done(&c->e[i]);
                        c->e[i] = c->e[--c->n];
                        break;
                }
        if (c->n == CACHE_MAX) {
                /* full: the entry closest to expiry goes */
                size_t oldest = 0;
                for (size_t i = 1; i < c->n; i++)
                        if (c->e[i].expires_usec < c->e[oldest].expires_usec)
                                oldest = i;
                entry_done(&c->e[oldest]);
                c->e[oldest] = c->e[--c->n];
        }
        e = &c->e[c->n++];
        *e = (struct api_cache_entry) { .key = key, .expires_usec = now + ttl, .yes = yes };
        return e;
}

static struct api_cache_entry *cache_put(struct api_cache **cp, char *key, bool yes, uint64_t ttl) {
        return api_cache_put_at(cp, key, yes, ttl, now_usec());
}

uint64_t api_webhook_ttl(const struct kubelet_options *o, enum api_cache_kind kind, bool yes) {
        if (kind == API_CACHE_TOKEN)
                return o->authentication_token_webhook_cache_ttl_usec;
        return yes ? o->authorization_webhook_cache_authorized_ttl_usec
                   : o->authorization_webhook_cache_unauthorized_ttl_usec;
}

static char *token_key(const char *token) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        char *hex;

        if (!EVP_Digest(token, strlen(token), md, &n, EVP_sha256(), NULL))
                return NULL;
        hex = malloc(n * 2 + 1);
        if (!hex)
                return NULL;
        for (unsigned i = 0; i < n; i++)
                snprintf(hex + 2 * i, 3, "%02x", md[i]);
        return hex;
}

char *api_authz_key(const struct api_user *u, const char *verb, const char *subresource) {
        json_auto_t *key = NULL;
        json_t *groups = json_array();

        /* JSON quotes every string: no user or group name can stand for another split of the same bytes */
        for (char **g = u->groups; groups && g && *g; g++)
                if (json_array_append_new(groups, json_string(*g)) < 0) {
                        json_decref(groups);
                        return NULL;
                }
        key = json_pack("[s, o, s, s]", strempty(u->name), groups, verb, subresource);
        return key ? json_dumps(key, JSON_COMPACT) : NULL;
}

static char *authz_key(const struct api_request *r) {
        return api_authz_key(&r->user, api_request_verb(r->method, r->path), api_subresource(r->path));
}

/* ---------------------------------------------------------------- cached answers */

int api_webhook_authenticate_cached(struct api_request *r, const char *token) {
        _cleanup_free_ char *key = token_key(token);
        struct api_cache_entry *e = key ? cache_get(r->s->token_cache, key) : NULL;

        if (!e)
                return -EINPROGRESS;
        if (!e->yes)
                return -EACCES;
        r->user.name = strdup(e->user.name);
        if (!r->user.name || strv_copy(e->user.groups, &r->user.groups) < 0) {
                api_user_done(&r->user);
                return -ENOMEM;
        }
        return 0;
}

int api_webhook_authorize_cached(struct api_request *r) {
        _cleanup_free_ char *key = authz_key(r);
        struct api_cache_entry *e = key ? cache_get(r->s->authz_cache, key) : NULL;

        if (!e)
                return -EINPROGRESS;
        return e->yes ? 0 : -EPERM;
}

/* ---------------------------------------------------------------- reviews in flight */

struct api_pending {
        struct api_request r; /* path and query point into the evhttp request, alive until it is answered */
        struct evhttp_connection *conn;
        struct kube_request *kreq;
        char *key; /* cache key of the review in flight */
};

static void pending_free(struct api_pending *p) {
        if (!p)
                return;
        kube_request_cancel(p->kreq);
        if (p->conn)
                evhttp_connection_set_closecb(p->conn, NULL, NULL);
        api_user_done(&p->r.user);
        free(p->key);
        free(p);
}

static void on_client_closed(struct evhttp_connection *conn, void *userdata) {
        struct api_pending *p = userdata;

        log_v(2, "API: the client left while its request was being reviewed: %s", p->r.path);
        /* taken off the connection by evhttp (a timeout or the client's end before the answer): ours to free */
        if (p->r.req && evhttp_request_get_connection(p->r.req) != conn)
                evhttp_request_free(p->r.req);
        p->conn = NULL;
        pending_free(p);
}

static void forbidden(struct api_request *r, const char *why) {
        log_v(2, "API: forbidden: user=%s verb=%s subresource=%s path=%s: %s", r->user.name, api_verb(r->method),
              api_subresource(r->path), r->path, why);
        api_reply_text(r->req, 403, "Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=[%s])\n", r->user.name,
                       api_request_verb(r->method, r->path), "nodes", api_subresource(r->path));
}

static int start_review(struct api_pending *p, const char *path, json_t *body, kube_callback_t cb) {
        struct kube_client *c = p->r.s->client;
        int k;

        if (!c)
                return -ENOTCONN;
        k = kube_request(c, "POST", path, body, NULL, 0, cb, p, &p->kreq);
        if (k < 0)
                p->kreq = NULL;
        return k;
}

static void on_sar(const struct kube_response *resp, void *userdata);

/* the user is known: authorize (cached, or a SubjectAccessReview), then route */
static void pending_authorize(struct api_pending *p) {
        const struct kubelet_options *o = p->r.s->o;
        json_auto_t *body = NULL;
        json_t *groups;
        int k;

        k = api_authorize(&p->r);
        if (k == 0) {
                evhttp_connection_set_closecb(p->conn, NULL, NULL);
                p->conn = NULL;
                api_route(&p->r);
                pending_free(p);
                return;
        }
        if (k != -EINPROGRESS) {
                pending_free(p); /* answered */
                return;
        }
        free(p->key);
        p->key = authz_key(&p->r);
        groups = json_array();
        for (char **g = p->r.user.groups; groups && g && *g; g++)
                json_array_append_new(groups, json_string(*g));
        body = json_pack("{s:s, s:s, s:{s:s, s:o, s:{s:s, s:s, s:s, s:s, s:s, s:s}}}", "apiVersion",
                         "authorization.k8s.io/v1", "kind", "SubjectAccessReview", "spec", "user", p->r.user.name,
                         "groups", groups, "resourceAttributes", "verb", api_request_verb(p->r.method, p->r.path),
                         "group", "", "version", "v1", "resource", "nodes", "subresource", api_subresource(p->r.path),
                         "name", o->node_name);
        if (!p->key || !body ||
            start_review(p, "/apis/authorization.k8s.io/v1/subjectaccessreviews", body, on_sar) < 0) {
                forbidden(&p->r, "the SubjectAccessReview could not be sent");
                pending_free(p);
        }
}

static void on_sar(const struct kube_response *resp, void *userdata) {
        struct api_pending *p = userdata;
        const json_t *st = json_object_get(resp->body, "status");
        bool allowed = json_is_true(json_object_get(st, "allowed")) && !json_is_true(json_object_get(st, "denied"));
        const char *reason = json_string_value(json_object_get(st, "reason"));
        struct api_cache_entry *e;

        p->kreq = NULL;
        if (resp->r < 0 || resp->status >= 300) {
                /* no answer is not a "no": not cached */
                log_error("API: SubjectAccessReview failed: %s", resp->error);
                api_reply_text(p->r.req, 500, "Internal Server Error: authorization failed: %s\n", resp->error);
                pending_free(p);
                return;
        }
        e = cache_put(&p->r.s->authz_cache, TAKE_PTR(p->key), allowed,
                      api_webhook_ttl(p->r.s->o, API_CACHE_AUTHZ, allowed));
        if (e && reason)
                e->reason = strdup(reason);
        if (!allowed) {
                forbidden(&p->r, strempty(reason));
                pending_free(p);
                return;
        }
        evhttp_connection_set_closecb(p->conn, NULL, NULL);
        p->conn = NULL;
        api_route(&p->r);
        pending_free(p);
}

static void on_token_review(const struct kube_response *resp, void *userdata) {
        struct api_pending *p = userdata;
        const json_t *st = json_object_get(resp->body, "status"), *user = json_object_get(st, "user"), *g;
        bool ok = json_is_true(json_object_get(st, "authenticated"));
        const char *name = json_string_value(json_object_get(user, "username"));
        struct api_cache_entry *e;
        size_t i;

        p->kreq = NULL;
        if (resp->r < 0 || resp->status >= 300) {
                log_error("API: TokenReview failed: %s", resp->error);
                api_reply_text(p->r.req, 401, "Unauthorized\n");
                pending_free(p);
                return;
        }
        ok = ok && !isempty(name);
        e = cache_put(&p->r.s->token_cache, TAKE_PTR(p->key), ok, api_webhook_ttl(p->r.s->o, API_CACHE_TOKEN, ok));
        if (!ok) {
                log_v(2, "API: bearer token not authenticated for %s: %s", p->r.path,
                      strna(json_string_value(json_object_get(st, "error"))));
                api_reply_text(p->r.req, 401, "Unauthorized\n");
                pending_free(p);
                return;
        }
        p->r.user.name = strdup(name);
        json_array_foreach(json_object_get(user, "groups"), i, g)
                if (json_is_string(g))
                        (void) strv_extend(&p->r.user.groups, json_string_value(g));
        if (!p->r.user.name) {
                api_reply_text(p->r.req, 500, "Internal Error: out of memory\n");
                pending_free(p);
                return;
        }
        if (e) {
                e->user.name = strdup(p->r.user.name);
                (void) strv_copy(p->r.user.groups, &e->user.groups);
        }
        pending_authorize(p);
}

static struct api_pending *pending_new(struct api_request *r) {
        struct api_pending *p = calloc(1, sizeof(*p));

        if (!p)
                return NULL;
        p->r = *r;
        r->user = (struct api_user) {}; /* moved */
        p->conn = evhttp_request_get_connection(r->req);
        if (p->conn)
                evhttp_connection_set_closecb(p->conn, on_client_closed, p);
        return p;
}

void api_webhook_review_token(struct api_request *r, const char *token) {
        struct api_pending *p = pending_new(r);
        json_auto_t *body = NULL;

        if (!p) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        p->key = token_key(token);
        body = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "authentication.k8s.io/v1", "kind", "TokenReview", "spec",
                         "token", token);
        if (!p->key || !body ||
            start_review(p, "/apis/authentication.k8s.io/v1/tokenreviews", body, on_token_review) < 0) {
                api_reply_text(p->r.req, 401, "Unauthorized\n");
                pending_free(p);
        }
        if (body) {
                /* the token is in the body: wipe the copy */
                json_t *spec = json_object_get(body, "spec");
                json_object_del(spec, "token");
        }
}

void api_webhook_authorize(struct api_request *r) {
        struct api_pending *p = pending_new(r);

        if (!p) {
                api_reply_text(r->req, 500, "Internal Error: out of memory\n");
                return;
        }
        pending_authorize(p);
}
