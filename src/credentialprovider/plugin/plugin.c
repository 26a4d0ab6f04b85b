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

#include "basic/duration.h"
#include "basic/error.h"
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

char *credprov_request_encode(const char *api_version, const char *image) {
        json_auto_t *o = json_pack("{s:s, s:s, s:s}", "kind", "CredentialProviderRequest", "apiVersion", api_version,
                                   "image", image);
        return o ? json_dumps(o, JSON_COMPACT) : NULL;
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

static json_t *cache_find(struct credprov_cache *c, const char *key) {
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->entries[i].key, key))
                        return c->entries[i].auth;
        return NULL;
}

json_t *credprov_cache_get(struct credprov_cache *c, const char *image, uint64_t now_usec) {
        _cleanup_free_ char *registry = NULL;
        json_t *v;

        cache_purge(c, now_usec);
        v = cache_find(c, image);
        if (v)
                return v;
        registry = credprov_registry_of(image);
        if (registry && (v = cache_find(c, registry)))
                return v;
        return cache_find(c, GLOBAL_CACHE_KEY);
}

int credprov_cache_add(struct credprov_cache *c, const char *image, const struct credprov_response *r,
                       int64_t default_nsec, uint64_t now_usec) {
        int64_t d = r->has_cache_duration ? r->cache_duration_nsec : default_nsec;
        _cleanup_free_ char *key = NULL;
        struct credprov_cache_entry *slot = NULL;

        if (d <= 0)
                return 0; /* 0: not cached at all */
        key = r->cache_key_type == CREDPROV_CACHE_IMAGE      ? strdup(image)
              : r->cache_key_type == CREDPROV_CACHE_REGISTRY ? credprov_registry_of(image)
                                                             : strdup(GLOBAL_CACHE_KEY);
        if (!key)
                return -ENOMEM;
        cache_purge(c, now_usec);
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->entries[i].key, key))
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
        if (l->prev)
                l->prev->next = l->next;
        else
                l->p->lookups = l->next;
        if (l->next)
                l->next->prev = l->prev;
        l->prev = l->next = NULL;
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
        if (e->prev)
                e->prev->next = e->next;
        else
                e->prov->execs = e->next;
        if (e->next)
                e->next->prev = e->prev;
}

static void exec_free(struct exec *e) {
        free(e->image);
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
                if (k >= 0) {
                        if (credprov_cache_add(&pv->cache, e->image, &resp, pv->cfg->default_cache_duration_nsec,
                                               now_usec()) < 0)
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

static struct exec *exec_find(struct provider *pv, const char *image) {
        for (struct exec *e = pv->execs; e; e = e->next)
                if (streq(e->image, image))
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

static int exec_start(struct provider *pv, const char *image, struct exec **ret) {
        _cleanup_free_ char *req = credprov_request_encode(pv->cfg->api_version, image);
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
        e->req = TAKE_PTR(req);
        if (!e->image) {
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
        e->next = pv->execs;
        if (pv->execs)
                pv->execs->prev = e;
        pv->execs = e;
        *ret = e;
        return 0;
}

static bool provider_matches(const struct provider *pv, const char *image) {
        for (size_t i = 0; pv->cfg->match_images[i]; i++)
                if (cred_url_match(pv->cfg->match_images[i], image) > 0)
                        return true;
        return false;
}

int credprov_lookup(struct credprov *p, const char *image, credprov_cb cb, void *userdata,
                    struct credprov_lookup **ret) {
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
                pt = &l->parts[l->n_parts++];
                *pt = (struct part) { .l = l, .prov = pv };
                cached = credprov_cache_get(&pv->cache, image, now_usec());
                if (cached) {
                        pt->auth = json_incref(cached);
                        continue;
                }
                pt->waiting = exec_find(pv, image);
                if (!pt->waiting) {
                        int r = exec_start(pv, image, &pt->waiting);
                        if (r < 0) {
                                if (asprintf(&pt->error, "error execing credential provider plugin %s for image %s: %s",
                                             pv->cfg->name, image, strerror(-r)) < 0)
                                        pt->error = NULL;
                                log_error("Failed getting credential from external registry credential provider: %s",
                                          strna(pt->error));
                                continue;
                        }
                }
                pt->next_waiter = pt->waiting->waiters;
                pt->waiting->waiters = pt;
                l->pending++;
        }
        l->next = p->lookups;
        if (p->lookups)
                p->lookups->prev = l;
        p->lookups = l;
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
                for (struct part **pp = &pt->waiting->waiters; *pp; pp = &(*pp)->next_waiter)
                        if (*pp == pt) {
                                *pp = pt->next_waiter;
                                break;
                        }
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
