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
#include "basic/string.h"
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
        /* uid and extra too: the review is sent with them, so its answer is theirs (upstream caches by the whole
         * review spec) */
        key = json_pack("[s, o, s, s, s, O]", strempty(u->name), groups, verb, subresource, strempty(u->uid),
                        u->extra ? u->extra : json_null());
        return key ? json_dumps(key, JSON_COMPACT) : NULL;
}

static char *authz_key(const struct api_auth *a) {
        return api_authz_key(&a->user, api_request_verb(a->method, a->path), api_auth_subresource(a));
}

/* ---------------------------------------------------------------- cached answers */

int api_webhook_authenticate_cached(struct api_auth *a, const char *token) {
        _cleanup_free_ char *key = token_key(token);
        struct api_cache_entry *e = key ? cache_get(a->s->token_cache, key) : NULL;

        if (!e)
                return -EINPROGRESS;
        if (!e->yes)
                return -EACCES;
        a->user.name = strdup(e->user.name);
        a->user.uid = strdup_or_null(e->user.uid);
        a->user.extra = json_incref(e->user.extra);
        if (!a->user.name || (e->user.uid && !a->user.uid) || strv_copy(e->user.groups, &a->user.groups) < 0) {
                api_user_done(&a->user);
                return -ENOMEM;
        }
        return 0;
}

int api_webhook_authorize_cached(struct api_auth *a) {
        _cleanup_free_ char *key = authz_key(a);
        struct api_cache_entry *e = key ? cache_get(a->s->authz_cache, key) : NULL;

        if (!e)
                return -EINPROGRESS;
        return e->yes ? 0 : -EPERM;
}

/* ---------------------------------------------------------------- reviews in flight */

void api_webhook_cancel(struct api_auth *a) {
        kube_request_cancel(a->kreq);
        a->kreq = NULL;
        free(a->key);
        a->key = NULL;
}

/* decided: tell the one waiting (it may free a) */
static void decided(struct api_auth *a) {
        a->kreq = NULL;
        free(a->key);
        a->key = NULL;
        a->done(a, a->userdata);
}

static void on_sar(const struct kube_response *resp, void *userdata) {
        struct api_auth *a = userdata;
        const json_t *st = json_object_get(resp->body, "status");
        bool allowed = json_is_true(json_object_get(st, "allowed")) && !json_is_true(json_object_get(st, "denied"));
        const char *reason = json_string_value(json_object_get(st, "reason"));
        struct api_cache_entry *e;

        a->kreq = NULL;
        if (resp->r < 0 || resp->status >= 300) {
                /* no answer is not a "no": not cached, and the request fails with upstream's message (the
                 * subresources after this one are not tried, as upstream) */
                log_error("API: SubjectAccessReview failed: user=%s verb=%s subresource=%s: %s", a->user.name,
                          api_request_verb(a->method, a->path), api_auth_subresource(a), resp->error);
                api_auth_refuse(a, 500, "Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
                                a->user.name, api_request_verb(a->method, a->path), "nodes", api_auth_subresource(a));
                decided(a);
                return;
        }
        e = cache_put(&a->s->authz_cache, TAKE_PTR(a->key), allowed,
                      api_webhook_ttl(a->s->o, API_CACHE_AUTHZ, allowed));
        if (e && reason)
                e->reason = strdup(reason);
        if (!allowed) {
                int k;

                log_v(2, "API: denied: user=%s verb=%s subresource=%s path=%s: %s", a->user.name,
                      api_request_verb(a->method, a->path), api_auth_subresource(a), a->path, strempty(reason));
                /* the next subresource (nodes/proxy after a fine-grained one), or the refusal */
                a->attempt++;
                k = api_auth_authorize_next(a);
                if (k == -EINPROGRESS)
                        return; /* another SubjectAccessReview: decided when it is back */
        }
        decided(a);
}

json_t *api_sar_body(const struct api_user *u, const char *verb, const char *subresource, const char *node) {
        json_t *groups = json_array(), *body, *spec;

        for (char **g = u->groups; groups && g && *g; g++)
                json_array_append_new(groups, json_string(*g));
        body = json_pack("{s:s, s:s, s:{s:s, s:o, s:{s:s, s:s, s:s, s:s, s:s, s:s}}}", "apiVersion",
                         "authorization.k8s.io/v1", "kind", "SubjectAccessReview", "spec", "user", strempty(u->name),
                         "groups", groups, "resourceAttributes", "verb", verb, "group", "", "version", "v1", "resource",
                         "nodes", "subresource", subresource, "name", strempty(node));
        spec = json_object_get(body, "spec");
        if (spec && !isempty(u->uid) && json_object_set_new(spec, "uid", json_string(u->uid)) < 0)
                return json_decref(body), NULL;
        if (spec && u->extra && json_object_size(u->extra) > 0 && json_object_set(spec, "extra", u->extra) < 0)
                return json_decref(body), NULL;
        return body;
}

int api_webhook_review_access(struct api_auth *a) {
        const struct kubelet_options *o = a->s->o;
        json_auto_t *body = NULL;

        free(a->key);
        a->key = authz_key(a);
        body = api_sar_body(&a->user, api_request_verb(a->method, a->path), api_auth_subresource(a), o->node_name);
        if (!a->key || !body || !api_host_kube_client(a->s) ||
            kube_request(api_host_kube_client(a->s), "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body,
                         NULL, 0, on_sar, a, &a->kreq) < 0) {
                a->kreq = NULL;
                return api_auth_forbidden(a, "the SubjectAccessReview could not be sent");
        }
        return -EINPROGRESS;
}

/* the TokenReview's user.extra, kept only as an object of string arrays (anything else is dropped) */
static json_t *sanitized_extra(const json_t *extra) {
        json_t *out, *vals;
        const char *k;

        if (!json_is_object(extra) || json_object_size(extra) == 0)
                return NULL;
        out = json_object();
        json_object_foreach((json_t *) extra, k, vals) {
                json_t *arr = json_array(), *v;
                size_t i;

                if (!out || !arr || !json_is_array(vals)) {
                        json_decref(arr);
                        continue;
                }
                json_array_foreach(vals, i, v)
                        if (json_is_string(v))
                                json_array_append(arr, v);
                json_object_set_new(out, k, arr);
        }
        if (out && json_object_size(out) == 0)
                return json_decref(out), NULL;
        return out;
}

static void on_token_review(const struct kube_response *resp, void *userdata) {
        struct api_auth *a = userdata;
        const json_t *st = json_object_get(resp->body, "status"), *user = json_object_get(st, "user"), *g;
        bool ok = json_is_true(json_object_get(st, "authenticated"));
        const char *name = json_string_value(json_object_get(user, "username"));
        struct api_cache_entry *e;
        size_t i;
        int k;

        a->kreq = NULL;
        if (resp->r < 0 || resp->status >= 300) {
                log_error("API: TokenReview failed: %s", resp->error);
                api_auth_refuse(a, 401, "Unauthorized\n");
                decided(a);
                return;
        }
        ok = ok && !isempty(name);
        e = cache_put(&a->s->token_cache, TAKE_PTR(a->key), ok, api_webhook_ttl(a->s->o, API_CACHE_TOKEN, ok));
        if (!ok) {
                log_v(2, "API: bearer token not authenticated for %s: %s", a->path,
                      strna(json_string_value(json_object_get(st, "error"))));
                api_auth_refuse(a, 401, "Unauthorized\n");
                decided(a);
                return;
        }
        a->user.name = strdup(name);
        if (!isempty(json_string_value(json_object_get(user, "uid"))))
                a->user.uid = strdup(json_string_value(json_object_get(user, "uid")));
        a->user.extra = sanitized_extra(json_object_get(user, "extra"));
        json_array_foreach(json_object_get(user, "groups"), i, g)
                if (json_is_string(g))
                        (void) strv_extend(&a->user.groups, json_string_value(g));
        if (!a->user.name) {
                api_auth_refuse(a, 500, "Internal Error: out of memory\n");
                decided(a);
                return;
        }
        if (e) {
                e->user.name = strdup(a->user.name);
                e->user.uid = strdup_or_null(a->user.uid);
                e->user.extra = json_incref(a->user.extra);
                (void) strv_copy(a->user.groups, &e->user.groups);
        }
        k = api_auth_authorize(a);
        if (k == -EINPROGRESS)
                return; /* a SubjectAccessReview: decided when it is back */
        decided(a);
}

int api_webhook_review_token(struct api_auth *a, const char *token) {
        json_auto_t *body = NULL;

        free(a->key);
        a->key = token_key(token);
        body = json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "authentication.k8s.io/v1", "kind", "TokenReview", "spec",
                         "token", token);
        if (!a->key || !body || !api_host_kube_client(a->s) ||
            kube_request(api_host_kube_client(a->s), "POST", "/apis/authentication.k8s.io/v1/tokenreviews", body, NULL,
                         0, on_token_review, a, &a->kreq) < 0) {
                a->kreq = NULL;
                return api_auth_refuse(a, 401, "Unauthorized\n");
        }
        /* the token is in the body: wipe the copy */
        json_object_del(json_object_get(body, "spec"), "token");
        return -EINPROGRESS;
}
