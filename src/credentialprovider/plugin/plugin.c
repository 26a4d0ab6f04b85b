/* SPDX-License-Identifier: Apache-2.0 */
/* Exec credential provider plugins: the request/response wire, the cache, and the providers running plugins as
 * child processes on the loop. */
#include "credentialprovider/plugin/plugin.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/list.h"
#include "basic/duration.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "basic/json.h"
#include "basic/log.h"
#include "basic/spawn.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"

#define GLOBAL_CACHE_KEY "global"

extern char **environ;

/* ---------------------------------------------------------------- wire */

void credprov_response_done(struct credprov_response *r) {
        if (!r)
                return;
        json_decref(r->auth);
        *r = (struct credprov_response) {};
}

char *credprov_request_encode(const char *api_version, const char *image, const char *sa_token,
                              const json_t *sa_annotations) {
        json_auto_t *o = json_pack("{s:s, s:s, s:s}", "kind", "CredentialProviderRequest", "apiVersion", api_version,
                                   "image", image);
        if (!o)
                return NULL;
        /* omitempty, as the v1 type has them */
        if (!isempty(sa_token) && json_object_set_new(o, "serviceAccountToken", json_string(sa_token)) < 0)
                return NULL;
        if (json_object_size(sa_annotations) > 0 &&
            json_object_set_new(o, "serviceAccountAnnotations", json_deep_copy(sa_annotations)) < 0)
                return NULL;
        return json_dumps(o, JSON_COMPACT);
}

/* ---------------------------------------------------------------- service account tokens */

/* upstream's keys are cryptobyte strings: each string with a 16-bit big-endian length, a map as a 32-bit count
 * then its keys in order, each followed by its value; kept here as hex */
struct keybuf {
        unsigned char *b;
        size_t n;
        bool failed;
};

static void kb_bytes(struct keybuf *k, const void *p, size_t n) {
        unsigned char *nb;

        if (k->failed)
                return;
        nb = realloc(k->b, k->n + n + 1);
        if (!nb) {
                k->failed = true;
                return;
        }
        k->b = nb;
        memcpy(k->b + k->n, p, n);
        k->n += n;
}

static void kb_string(struct keybuf *k, const char *s) {
        size_t n = strlen(strempty(s));
        unsigned char len[2] = { (unsigned char) (n >> 8), (unsigned char) n };

        if (n > UINT16_MAX) {
                k->failed = true;
                return;
        }
        kb_bytes(k, len, 2);
        kb_bytes(k, strempty(s), n);
}

static int cmp_strp(const void *a, const void *b) {
        return strcmp(*(const char *const *) a, *(const char *const *) b);
}

static void kb_annotations(struct keybuf *k, const json_t *annotations) {
        size_t n = json_object_size(annotations), i = 0;
        unsigned char cnt[4] = { (unsigned char) (n >> 24), (unsigned char) (n >> 16), (unsigned char) (n >> 8),
                                 (unsigned char) n };
        _cleanup_free_ const char **keys = NULL;
        const char *key;
        json_t *v;

        kb_bytes(k, cnt, 4);
        if (n == 0)
                return;
        keys = calloc(n, sizeof(*keys));
        if (!keys) {
                k->failed = true;
                return;
        }
        json_object_foreach((json_t *) annotations, key, v)
                keys[i++] = key;
        qsort(keys, n, sizeof(*keys), cmp_strp);
        for (i = 0; i < n; i++) {
                kb_string(k, keys[i]);
                kb_string(k, json_string_value(json_object_get(annotations, keys[i])));
        }
}

static char *kb_hex(struct keybuf *k) {
        static const char hex[] = "0123456789abcdef";
        char *s;

        if (k->failed) {
                free(k->b);
                return NULL;
        }
        s = malloc(2 * k->n + 1);
        if (s) {
                for (size_t i = 0; i < k->n; i++) {
                        s[2 * i] = hex[k->b[i] >> 4];
                        s[2 * i + 1] = hex[k->b[i] & 15];
                }
                s[2 * k->n] = '\0';
        }
        free(k->b);
        return s;
}

char *credprov_token_hash(const char *token) {
        char buf[65], *s = NULL;

        if (isempty(token))
                return strdup("");
        if (hash_hex("sha256", token, strlen(token), buf, sizeof(buf)) < 0 || asprintf(&s, "sha256:%s", buf) < 0)
                return NULL;
        return s;
}

char *credprov_sa_cache_key(const char *ns, const char *sa_name, const char *sa_uid, const json_t *annotations,
                            const char *cache_type, const char *token) {
        struct keybuf k = {};

        kb_string(&k, ns);
        kb_string(&k, sa_name);
        kb_string(&k, sa_uid);
        kb_annotations(&k, annotations);
        if (streq_ptr(cache_type, "Token")) {
                _cleanup_free_ char *h = credprov_token_hash(token);
                if (!h)
                        k.failed = true;
                kb_string(&k, "token");
                kb_string(&k, h);
        }
        return kb_hex(&k);
}

char *credprov_flight_key(const char *image, const char *token, const json_t *annotations) {
        _cleanup_free_ char *h = credprov_token_hash(token);
        struct keybuf k = {};

        if (!h)
                return NULL;
        kb_string(&k, image);
        kb_string(&k, h);
        kb_annotations(&k, annotations);
        return kb_hex(&k);
}

json_t *credprov_sa_annotations(const struct credprov_token_attributes *a, const json_t *sa_annotations,
                                const char **ret_missing) {
        json_auto_t *o = json_object();

        *ret_missing = NULL;
        if (!o)
                return NULL;
        for (size_t i = 0; a->required_annotation_keys && a->required_annotation_keys[i]; i++) {
                const json_t *v = json_object_get(sa_annotations, a->required_annotation_keys[i]);
                if (!json_is_string(v)) {
                        *ret_missing = a->required_annotation_keys[i];
                        return NULL;
                }
                if (json_object_set_new(o, a->required_annotation_keys[i], json_string(json_string_value(v))) < 0)
                        return NULL;
        }
        for (size_t i = 0; a->optional_annotation_keys && a->optional_annotation_keys[i]; i++) {
                const json_t *v = json_object_get(sa_annotations, a->optional_annotation_keys[i]);
                if (json_is_string(v) &&
                    json_object_set_new(o, a->optional_annotation_keys[i], json_string(json_string_value(v))) < 0)
                        return NULL;
        }
        return TAKE_PTR(o);
}

int credprov_response_decode(const char *out, size_t len, const char *api_version, struct credprov_response *ret,
                             struct ck_error **ret_error) {
        static const char *const fields[] = { "kind", "apiVersion", "cacheKeyType", "cacheDuration", "auth" };
        json_auto_t *doc = NULL;
        json_error_t jerr;
        const char *api, *kind, *key, *ckt;
        json_t *v, *auth, *entry;
        struct credprov_response r = {};

        doc = json_loadb(out, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!doc || !json_is_object(doc))
                /* json.DefaultMetaFactory.Interpret failed; the text of the output is not repeated */
                return ck_error_set(ret_error, -EINVAL,
                                    "error reading GVK from response: couldn't get version/kind; json parse error: %s",
                                    doc ? "not an object" : jerr.text);
        api = json_string_at(doc, "apiVersion", NULL);
        kind = json_string_at(doc, "kind", NULL);
        if (!streq(api, api_version))
                return ck_error_set(ret_error, -EINVAL,
                                    "apiVersion from credential plugin response did not match expected apiVersion:%s, "
                                    "actual apiVersion:%s",
                                    api_version, api);
        /* the decoder's errors may quote the credentials: upstream replaces them with one message */
        if (!streq(kind, "CredentialProviderResponse"))
                goto bad;
        json_object_foreach(doc, key, v) {
                bool known = false;
                for (size_t i = 0; i < ELEMENTSOF(fields); i++)
                        known = known || streq(key, fields[i]);
                if (!known)
                        goto bad;
        }
        ckt = json_string_value(json_object_get(doc, "cacheKeyType"));
        v = json_object_get(doc, "cacheDuration");
        if (v && !json_is_null(v)) {
                if (!json_is_string(v) || go_duration_parse(json_string_value(v), &r.cache_duration_nsec, NULL) < 0)
                        goto bad;
                r.has_cache_duration = true;
        }
        auth = json_object_get(doc, "auth");
        if (auth && !json_is_null(auth) && !json_is_object(auth))
                goto bad;
        json_object_foreach(auth, key, entry) {
                const char *k2;
                json_t *f;
                if (!json_is_object(entry))
                        goto bad;
                json_object_foreach(entry, k2, f)
                        if ((!streq(k2, "username") && !streq(k2, "password")) ||
                            (!json_is_string(f) && !json_is_null(f)))
                                goto bad;
        }
        if (streq_ptr(ckt, "Image"))
                r.cache_key_type = CREDPROV_CACHE_IMAGE;
        else if (streq_ptr(ckt, "Registry"))
                r.cache_key_type = CREDPROV_CACHE_REGISTRY;
        else if (streq_ptr(ckt, "Global"))
                r.cache_key_type = CREDPROV_CACHE_GLOBAL;
        else
                return ck_error_set(ret_error, -EINVAL,
                                    "credential provider plugin did not return a valid cacheKeyType: \"%s\"",
                                    strempty(ckt));
        r.auth = auth && json_is_object(auth) ? json_incref(auth) : json_object();
        if (!r.auth)
                return -ENOMEM;
        *ret = r;
        return 0;
bad:
        return ck_error_set(ret_error, -EINVAL, "error decoding credential provider plugin response from stdout");
}

char *credprov_registry_of(const char *image) {
        const char *slash = strchr(image, '/');
        return slash ? strndup(image, (size_t) (slash - image)) : strdup(image);
}

/* ---------------------------------------------------------------- cache */

static void entry_done(struct credprov_cache_entry *e) {
        free(e->key);
        free(e->sa_key);
        json_decref(e->auth);
}

void credprov_cache_done(struct credprov_cache *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++)
                entry_done(&c->entries[i]);
        free(c->entries);
        *c = (struct credprov_cache) {};
}

static void cache_purge(struct credprov_cache *c, uint64_t now) {
        size_t k = 0;

        for (size_t i = 0; i < c->n; i++) {
                if (now >= c->entries[i].expires_usec)
                        entry_done(&c->entries[i]);
                else
                        c->entries[k++] = c->entries[i];
        }
        c->n = k;
}

static json_t *cache_find(struct credprov_cache *c, const char *key, const char *sa_key) {
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->entries[i].key, key) && streq(c->entries[i].sa_key, strempty(sa_key)))
                        return c->entries[i].auth;
        return NULL;
}

json_t *credprov_cache_get(struct credprov_cache *c, const char *image, const char *sa_key, uint64_t now_usec) {
        _cleanup_free_ char *registry = NULL;
        json_t *v;

        cache_purge(c, now_usec);
        v = cache_find(c, image, sa_key);
        if (v)
                return v;
        registry = credprov_registry_of(image);
        if (registry && (v = cache_find(c, registry, sa_key)))
                return v;
        return cache_find(c, GLOBAL_CACHE_KEY, sa_key);
}

int credprov_cache_add(struct credprov_cache *c, const char *image, const char *sa_key,
                       const struct credprov_response *r, int64_t default_nsec, uint64_t now_usec) {
        int64_t d = r->has_cache_duration ? r->cache_duration_nsec : default_nsec;
        _cleanup_free_ char *key = NULL, *sk = NULL;
        struct credprov_cache_entry *slot = NULL;

        if (d <= 0)
                return 0; /* 0: not cached at all */
        key = r->cache_key_type == CREDPROV_CACHE_IMAGE      ? strdup(image)
              : r->cache_key_type == CREDPROV_CACHE_REGISTRY ? credprov_registry_of(image)
                                                             : strdup(GLOBAL_CACHE_KEY);
        sk = strdup(strempty(sa_key));
        if (!key || !sk)
                return -ENOMEM;
        cache_purge(c, now_usec);
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->entries[i].key, key) && streq(c->entries[i].sa_key, sk))
                        slot = &c->entries[i];
        if (!slot && c->n >= CREDPROV_CACHE_MAX) {
                /* full: the entry that would expire first goes */
                slot = &c->entries[0];
                for (size_t i = 1; i < c->n; i++)
                        if (c->entries[i].expires_usec < slot->expires_usec)
                                slot = &c->entries[i];
        }
        if (!slot) {
                struct credprov_cache_entry *n = reallocarray(c->entries, c->n + 1, sizeof(*n));
                if (!n)
                        return -ENOMEM;
                c->entries = n;
                slot = &n[c->n++];
        } else
                entry_done(slot);
        *slot = (struct credprov_cache_entry) {
                .key = TAKE_PTR(key),
                .sa_key = TAKE_PTR(sk),
                .auth = json_incref(r->auth),
                .expires_usec = now_usec + (uint64_t) (d / 1000),
        };
        return 0;
}

/* ---------------------------------------------------------------- providers */

struct provider;
struct exec;

struct part {
        struct credprov_lookup *l;
        struct provider *prov;
        json_t *auth; /* the provider's answer (a reference), NULL when none */
        char *error;
        struct exec *waiting; /* the run this part waits for */
        struct part *next_waiter;
};

struct credprov_lookup {
        struct credprov *p;
        struct credprov_lookup *prev, *next;
        credprov_cb cb;
        void *userdata;
        size_t n_parts, pending;
        struct part *parts;
        struct event *deferred;
};

struct exec {
        struct provider *prov;
        struct exec *prev, *next;
        char *image;
        char *flight_key;        /* the image, or credprov_flight_key with a service account token */
        char *sa_key;            /* its answer's cache key's service account part ("" without) */
        char *token;             /* the service account token given, NULL: none */
        char *req;               /* the request, while it waits for its turn */
        struct exec *queue_next; /* waiting for its turn (spawn NULL) */
        struct spawn *spawn;
        uint64_t started_usec;
        struct part *waiters;
};

struct provider {
        struct credprov *p;
        const struct credprov_provider *cfg;
        char *path;
        char **argv;
        char **envp;
        struct credprov_cache cache;
        struct exec *execs;
        unsigned running;                     /* its plugin processes running, at most CREDPROV_MAX_RUNNING */
        struct exec *queue_head, *queue_tail; /* its runs waiting for their turn, in order */
};

struct credprov {
        struct event_base *base;
        struct credprov_config config;
        struct provider *providers;
        size_t n;
        struct credprov_lookup *lookups;
};

static void lookup_free(struct credprov_lookup *l) {
        if (!l)
                return;
        for (size_t i = 0; i < l->n_parts; i++) {
                json_decref(l->parts[i].auth);
                free(l->parts[i].error);
        }
        free(l->parts);
        if (l->deferred)
                event_free(l->deferred);
        free(l);
}

static void lookup_unlink(struct credprov_lookup *l) {
        DLIST_REMOVE(l->p->lookups, l);
}

static void lookup_deliver(struct credprov_lookup *l) {
        struct cred_keyring k = {};
        _cleanup_strv_free_ char **errors = NULL;
        _cleanup_free_ char *error = NULL;

        for (size_t i = 0; i < l->n_parts; i++) {
                if (l->parts[i].auth && cred_keyring_add_config(&k, l->parts[i].auth) < 0 && !l->parts[i].error)
                        l->parts[i].error = strdup("the plugin's credentials could not be read");
                if (l->parts[i].error)
                        (void) strv_extend(&errors, l->parts[i].error);
        }
        if (errors)
                error = strv_join(errors, "; ");
        lookup_unlink(l);
        l->cb(&k, error, l->userdata);
        cred_keyring_done(&k);
        lookup_free(l);
}

static void on_deferred(evutil_socket_t fd, short what, void *userdata) {
        lookup_deliver(userdata);
}

/* a part has its answer; the lookup's callback runs from its own event once all have (never from inside a
 * plugin's completion, where a callback cancelling other lookups would pull the list from under it) */
static void part_finished(struct part *pt) {
        struct credprov_lookup *l = pt->l;

        pt->waiting = NULL;
        assert(l->pending > 0);
        if (--l->pending == 0)
                evtimer_add_usec(l->deferred, 0);
}

static void exec_unlink(struct exec *e) {
        DLIST_REMOVE(e->prov->execs, e);
}

static void exec_free(struct exec *e) {
        free(e->image);
        free(e->flight_key);
        free(e->sa_key);
        if (e->token)
                explicit_bzero(e->token, strlen(e->token));
        free(e->token);
        if (e->req)
                explicit_bzero(e->req, strlen(e->req));
        free(e->req);
        free(e);
}

static char *exec_error(const struct provider *pv, const char *image, const struct spawn_result *r) {
        _cleanup_free_ char *err = strndup(r->err, r->err_len);
        char *m = NULL;
        const char *why;
        char buf[64];

        if (r->timed_out)
                why = "context deadline exceeded";
        else if (r->output_capped) {
                snprintf(buf, sizeof(buf), "output over %u bytes", CREDPROV_STDOUT_MAX);
                why = buf;
        } else if (r->signal) {
                snprintf(buf, sizeof(buf), "signal: %s", r->signal == 9 ? "killed" : strsignal(r->signal));
                why = buf;
        } else {
                snprintf(buf, sizeof(buf), "exit status %d", r->exit_code);
                why = buf;
        }
        /* stderr goes with the error as upstream (the plugin decides what it writes there); trimmed */
        if (err) {
                size_t n = strlen(err);
                while (n > 0 && (err[n - 1] == '\n' || err[n - 1] == ' '))
                        err[--n] = '\0';
        }
        if (asprintf(&m, "error execing credential provider plugin %s for image %s: %s%s%s", pv->cfg->name, image, why,
                     isempty(err) ? "" : ": ", strempty(err)) < 0)
                return NULL;
        return m;
}

static void start_queued(struct provider *p);

/* is the token given back as a password? */
static bool echoes_token(const json_t *auth, const char *token) {
        const char *key;
        json_t *v;

        json_object_foreach((json_t *) auth, key, v)
                if (streq_ptr(json_string_value(json_object_get(v, "password")), token))
                        return true;
        return false;
}

static void on_exec_done(const struct spawn_result *r, void *userdata) {
        struct exec *e = userdata;
        struct provider *pv = e->prov;
        struct credprov_response resp = {};
        _cleanup_free_ char *error = NULL;
        _cleanup_ck_error_ struct ck_error *derr = NULL;
        double secs = (double) (now_usec() - e->started_usec) / 1e6;

        exec_unlink(e);
        if (r->timed_out || r->output_capped || r->signal || r->exit_code != 0)
                error = exec_error(pv, e->image, r);
        else {
                int k = credprov_response_decode(r->out, r->out_len, pv->cfg->api_version, &resp, &derr);
                if (k < 0)
                        error = ck_error_take_message(TAKE_PTR(derr));
                if (k >= 0 && e->token && pv->cfg->token_attributes &&
                    !streq_ptr(pv->cfg->token_attributes->cache_type, "Token") && echoes_token(resp.auth, e->token)) {
                        k = -EINVAL;
                        error = strdup("credential provider plugin returned the service account token as the password "
                                       "which is not allowed when service account cache type is not set to 'Token'");
                }
                if (k >= 0) {
                        if (credprov_cache_add(&pv->cache, e->image, e->sa_key, &resp,
                                               pv->cfg->default_cache_duration_nsec, now_usec()) < 0)
                                log_error("credential provider %s: cannot cache its answer: out of memory",
                                          pv->cfg->name);
                } else if (!error)
                        error = strdup("out of memory");
        }
        if (error)
                log_error("Failed getting credential from external registry credential provider: %s", error);
        else
                log_v(4, "credential provider %s answered for image %s in %.3fs", pv->cfg->name, e->image, secs);

        for (struct part *pt = e->waiters, *next; pt; pt = next) {
                next = pt->next_waiter;
                pt->next_waiter = NULL;
                if (error)
                        pt->error = strdup(error);
                else
                        pt->auth = json_incref(resp.auth);
                part_finished(pt);
        }
        credprov_response_done(&resp);
        exec_free(e);
        pv->running--;
        start_queued(pv);
}

static struct exec *exec_find(struct provider *pv, const char *flight_key) {
        for (struct exec *e = pv->execs; e; e = e->next)
                if (streq(e->flight_key, flight_key))
                        return e;
        return NULL;
}

static int exec_spawn(struct exec *e) {
        struct provider *pv = e->prov;
        int r;

        log_v(5, "Getting image %s credentials from external exec plugin %s", e->image, pv->cfg->name);
        e->started_usec = now_usec();
        r = spawn_start(pv->p->base, pv->path, pv->argv, pv->envp, e->req, strlen(e->req), CREDPROV_STDOUT_MAX,
                        CREDPROV_STDERR_MAX, CREDPROV_EXEC_TIMEOUT_USEC, on_exec_done, e, &e->spawn);
        if (r < 0)
                return r;
        explicit_bzero(e->req, strlen(e->req)); /* it may hold a service account token */
        e->req = mfree(e->req);
        pv->running++;
        return 0;
}

/* a queued run that could not be started: its waiters get the error */
static void exec_failed(struct exec *e, int r) {
        _cleanup_free_ char *error = NULL;

        exec_unlink(e);
        if (asprintf(&error, "error execing credential provider plugin %s for image %s: %s", e->prov->cfg->name,
                     e->image, strerror(-r)) < 0)
                error = NULL;
        log_error("Failed getting credential from external registry credential provider: %s", strna(error));
        for (struct part *pt = e->waiters, *next; pt; pt = next) {
                next = pt->next_waiter;
                pt->next_waiter = NULL;
                pt->error = strdup_or_null(error);
                part_finished(pt);
        }
        exec_free(e);
}

/* the provider's next runs in order while there is room (issue 26: one process at a time per plugin by default, so
 * that a pod of many images cannot fork one process per image at once, while a plugin that hangs holds up only the
 * images it matches) */
static void start_queued(struct provider *p) {
        while (p->queue_head && p->running < CREDPROV_MAX_RUNNING) {
                struct exec *e = p->queue_head;
                int r;

                p->queue_head = e->queue_next;
                if (!p->queue_head)
                        p->queue_tail = NULL;
                e->queue_next = NULL;
                r = exec_spawn(e);
                if (r < 0)
                        exec_failed(e, r);
        }
}

static int exec_start(struct provider *pv, const char *image, const char *flight_key, const char *sa_key,
                      const char *token, const json_t *annotations, struct exec **ret) {
        _cleanup_free_ char *req = credprov_request_encode(pv->cfg->api_version, image, token, annotations);
        struct provider *p = pv;
        struct exec *e;
        int r;

        if (!req)
                return -ENOMEM;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->prov = pv;
        e->image = strdup(image);
        e->flight_key = strdup(flight_key);
        e->sa_key = strdup(strempty(sa_key));
        e->token = token ? strdup(token) : NULL;
        e->req = TAKE_PTR(req);
        if (!e->image || !e->flight_key || !e->sa_key || (token && !e->token)) {
                exec_free(e);
                return -ENOMEM;
        }
        if (p->running < CREDPROV_MAX_RUNNING && !p->queue_head) {
                r = exec_spawn(e);
                if (r < 0) {
                        exec_free(e);
                        return r;
                }
        } else {
                log_v(5, "credential provider %s for image %s: waiting for the plugin runs before it", pv->cfg->name,
                      image);
                if (p->queue_tail)
                        p->queue_tail->queue_next = e;
                else
                        p->queue_head = e;
                p->queue_tail = e;
        }
        DLIST_PREPEND(pv->execs, e);
        *ret = e;
        return 0;
}

static bool provider_matches(const struct provider *pv, const char *image) {
        for (size_t i = 0; pv->cfg->match_images[i]; i++)
                if (cred_url_match(pv->cfg->match_images[i], image) > 0)
                        return true;
        return false;
}

bool credprov_wants_service_account(struct credprov *p, const char *image) {
        for (size_t i = 0; p && i < p->n; i++)
                if (p->providers[i].cfg->token_attributes && provider_matches(&p->providers[i], image))
                        return true;
        return false;
}

char **credprov_token_audiences(struct credprov *p, const char *image, const json_t *sa_annotations) {
        _cleanup_strv_free_ char **l = NULL;

        for (size_t i = 0; p && i < p->n; i++) {
                const struct credprov_token_attributes *a = p->providers[i].cfg->token_attributes;
                json_auto_t *annots = NULL;
                const char *missing;

                if (!a || !provider_matches(&p->providers[i], image) || strv_contains(l, a->audience))
                        continue;
                annots = credprov_sa_annotations(a, sa_annotations, &missing);
                if (!annots)
                        continue;
                if (strv_extend(&l, a->audience) < 0)
                        return NULL;
        }
        return TAKE_PTR(l);
}

/* the service account part of a provider with tokenAttributes: 1 to run it (or use its cache) with *ret_token,
 * *ret_annotations and *ret_sa_key; 0 when it gives nothing (no service account and one required, or a required
 * annotation missing: quietly, as upstream); -errno with *ret_error */
static int part_service_account(const struct provider *pv, const char *image, const struct credprov_pod_sa *sa,
                                const char **ret_token, json_t **ret_annotations, char **ret_sa_key,
                                struct ck_error **ret_error) {
        const struct credprov_token_attributes *a = pv->cfg->token_attributes;
        json_auto_t *annots = NULL;
        const char *missing, *token;

        if (!sa || isempty(sa->name)) {
                if (a->require_service_account) {
                        log_v(5, "credential provider %s: image %s: Service account name is empty", pv->cfg->name,
                              image);
                        return 0;
                }
                return 1; /* without a token (static pods) */
        }
        if (sa->error)
                return ck_error_set(ret_error, -EIO, "%s", sa->error);
        annots = credprov_sa_annotations(a, sa->annotations, &missing);
        if (!annots && missing) {
                log_v(5, "credential provider %s: image %s: pod %s/%s: required annotation %s not found", pv->cfg->name,
                      image, strempty(sa->namespace), strempty(sa->pod_name), missing);
                return 0;
        }
        if (!annots)
                return -ENOMEM;
        token = json_string_value(json_object_get(sa->tokens, a->audience));
        if (isempty(token))
                return ck_error_set(ret_error, -EIO, "failed to get service account token: no token for audience %s",
                                    a->audience);
        *ret_sa_key = credprov_sa_cache_key(sa->namespace, sa->name, sa->uid, annots, a->cache_type, token);
        if (!*ret_sa_key)
                return -ENOMEM;
        *ret_token = token;
        *ret_annotations = TAKE_PTR(annots);
        return 1;
}

int credprov_lookup(struct credprov *p, const char *image, const struct credprov_pod_sa *sa, credprov_cb cb,
                    void *userdata, struct credprov_lookup **ret) {
        struct credprov_lookup *l;

        assert(p && image && cb);
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->p = p;
        l->cb = cb;
        l->userdata = userdata;
        l->parts = calloc(p->n ? p->n : 1, sizeof(*l->parts));
        l->deferred = evtimer_new(p->base, on_deferred, l);
        if (!l->parts || !l->deferred) {
                lookup_free(l);
                return -ENOMEM;
        }
        for (size_t i = 0; i < p->n; i++) {
                struct provider *pv = &p->providers[i];
                struct part *pt;
                json_t *cached;

                if (!provider_matches(pv, image))
                        continue;
                _cleanup_free_ char *sa_key = NULL, *flight = NULL;
                json_auto_t *annots = NULL;
                const char *token = NULL;

                pt = &l->parts[l->n_parts++];
                *pt = (struct part) { .l = l, .prov = pv };
                if (pv->cfg->token_attributes) {
                        _cleanup_ck_error_ struct ck_error *sa_error = NULL;
                        int k = part_service_account(pv, image, sa, &token, &annots, &sa_key, &sa_error);
                        if (k == 0)
                                continue;
                        if (k < 0) {
                                pt->error = ck_error_take_message(TAKE_PTR(sa_error));
                                if (!pt->error)
                                        pt->error = strdup("out of memory");
                                log_error("Failed to provide credentials for image %s (provider %s): %s", image,
                                          pv->cfg->name, strna(pt->error));
                                continue;
                        }
                }
                cached = credprov_cache_get(&pv->cache, image, sa_key, now_usec());
                if (cached) {
                        pt->auth = json_incref(cached);
                        continue;
                }
                flight = token ? credprov_flight_key(image, token, annots) : strdup(image);
                if (!flight) {
                        pt->error = strdup("out of memory");
                        continue;
                }
                pt->waiting = exec_find(pv, flight);
                if (!pt->waiting) {
                        int r = exec_start(pv, image, flight, sa_key, token, annots, &pt->waiting);
                        if (r < 0) {
                                if (asprintf(&pt->error, "error execing credential provider plugin %s for image %s: %s",
                                             pv->cfg->name, image, strerror(-r)) < 0)
                                        pt->error = NULL;
                                log_error("Failed getting credential from external registry credential provider: %s",
                                          strna(pt->error));
                                continue;
                        }
                }
                FLIST_PREPEND_F(next_waiter, pt->waiting->waiters, pt);
                l->pending++;
        }
        DLIST_PREPEND(p->lookups, l);
        if (l->pending == 0)
                evtimer_add_usec(l->deferred, 0);
        if (ret)
                *ret = l;
        return 0;
}

void credprov_lookup_cancel(struct credprov_lookup *l) {
        if (!l)
                return;
        /* the runs go on (their answers fill the cache); this lookup stops waiting */
        for (size_t i = 0; i < l->n_parts; i++) {
                struct part *pt = &l->parts[i];
                if (!pt->waiting)
                        continue;
                FLIST_REMOVE_F(next_waiter, pt->waiting->waiters, pt);
                pt->waiting = NULL;
        }
        lookup_unlink(l);
        lookup_free(l);
}

struct credprov *credprov_free(struct credprov *p) {
        if (!p)
                return NULL;
        while (p->lookups)
                credprov_lookup_cancel(p->lookups);
        for (size_t i = 0; i < p->n; i++) {
                struct provider *pv = &p->providers[i];

                pv->queue_head = pv->queue_tail = NULL; /* its runs are freed below */
                while (pv->execs) {
                        struct exec *e = pv->execs;
                        exec_unlink(e);
                        spawn_cancel(e->spawn); /* NULL while queued */
                        exec_free(e);
                }
                credprov_cache_done(&pv->cache);
                free(pv->path);
                strv_free(pv->argv);
                strv_free(pv->envp);
        }
        free(p->providers);
        credprov_config_done(&p->config);
        free(p);
        return NULL;
}

static int provider_setup(struct provider *pv, const char *bin_dir, struct ck_error **ret_error) {
        const struct credprov_provider *c = pv->cfg;
        struct stat st;

        if (asprintf(&pv->path, "%s/%s", bin_dir, c->name) < 0)
                return -ENOMEM;
        if (stat(pv->path, &st) < 0) {
                if (errno == ENOENT)
                        return ck_error_set(ret_error, -ENOENT, "plugin binary executable %s did not exist", pv->path);
                return ck_error_set(ret_error, -errno, "error inspecting binary executable %s: %m", pv->path);
        }
        if (strv_extend(&pv->argv, pv->path) < 0)
                return -ENOMEM;
        for (size_t i = 0; c->args && c->args[i]; i++)
                if (strv_extend(&pv->argv, c->args[i]) < 0)
                        return -ENOMEM;
        /* the kubelet's environment, then the provider's variables (which win) */
        for (char **e = environ; e && *e; e++)
                if (strv_extend(&pv->envp, *e) < 0)
                        return -ENOMEM;
        for (size_t i = 0; i < c->n_env; i++) {
                char *kv;
                if (asprintf(&kv, "%s=%s", c->env[i].name, c->env[i].value) < 0 || strv_push(&pv->envp, kv) < 0)
                        return -ENOMEM;
        }
        if (!pv->envp && strv_extend(&pv->envp, "PATH=/usr/sbin:/usr/bin:/sbin:/bin") < 0)
                return -ENOMEM;
        return 0;
}

int credprov_new(struct event_base *base, const char *config_path, const char *bin_dir, struct credprov **ret,
                 struct ck_error **ret_error) {
        struct credprov *p;
        struct stat st;
        int r;

        if (isempty(bin_dir) || stat(bin_dir, &st) < 0) {
                if (isempty(bin_dir) || errno == ENOENT)
                        return ck_error_set(ret_error, -ENOENT, "plugin binary directory %s did not exist",
                                            strempty(bin_dir));
                return ck_error_set(ret_error, -errno, "error inspecting binary directory %s: %m", bin_dir);
        }
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->base = base;
        r = credprov_config_load(config_path, &p->config, ret_error);
        if (r < 0)
                goto fail;
        p->providers = calloc(p->config.n, sizeof(*p->providers));
        if (!p->providers) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < p->config.n; i++) {
                p->providers[i] = (struct provider) { .p = p, .cfg = &p->config.providers[i] };
                p->n = i + 1;
                r = provider_setup(&p->providers[i], bin_dir, ret_error);
                if (r < 0)
                        goto fail;
        }
        *ret = p;
        return 0;
fail:
        credprov_free(p);
        return r;
}
