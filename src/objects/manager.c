/* SPDX-License-Identifier: Apache-2.0 */
#include "objects/manager.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "basic/workpool.h"
#include "objects/objects-internal.h"
#include "objects/podcert.h"

static const char *resource_of(const char *kind) {
        return streq(kind, "ConfigMap") ? "configmaps" : streq(kind, "Secret") ? "secrets" : "services";
}

/* where the object's kind is listed: a namespace's collection, or (RuntimeClass) the cluster's */
static char *collection_path(const struct mobj *o) {
        _cleanup_free_ char *ns = kube_escape(o->ns);
        char *p = NULL;

        if (streq(o->kind, OBJ_KIND_RUNTIME_CLASS))
                return strdup("/apis/node.k8s.io/v1/runtimeclasses");
        if (streq(o->kind, OBJ_KIND_TRUST_BUNDLE_LIST))
                return strdup("/apis/certificates.k8s.io/v1/clustertrustbundles");
        if (streq(o->kind, OBJ_KIND_PCR_LIST))
                return strdup("/apis/certificates.k8s.io/v1/podcertificaterequests");
        if (!ns || asprintf(&p, "/api/v1/namespaces/%s/%s", ns, resource_of(o->kind)) < 0)
                return NULL;
        return p;
}

static bool is_service(const struct mobj *o) {
        return streq(o->kind, OBJ_KIND_SERVICE) || streq(o->kind, OBJ_KIND_SERVICE_LIST);
}

/* the query that selects a list's objects: the node's PodCertificateRequests (the Node authorizer allows only
 * that), every ClusterTrustBundle, a namespace's services; "" or "fieldSelector=...&" */
static char *list_selector(const struct mobj *o) {
        _cleanup_free_ char *sel = NULL, *esel = NULL;
        char *q = NULL;

        if (!streq(o->kind, OBJ_KIND_PCR_LIST))
                return strdup("");
        if (asprintf(&sel, "spec.nodeName=%s", o->name) < 0 || !(esel = kube_escape(sel)) ||
            asprintf(&q, "fieldSelector=%s&", esel) < 0)
                return NULL;
        return q;
}

bool objects_token_requires_refresh(int64_t now, int64_t expiration, int64_t expiration_seconds) {
        int64_t issued = expiration - expiration_seconds;

        if (now > issued + TOKEN_MAX_TTL_SECONDS)
                return true;
        return now > expiration - expiration_seconds * 20 / 100;
}

/* ---------------------------------------------------------------- readiness */

static bool token_pending(const struct mtoken *t, int64_t now) {
        if (t->status && t->expires > now)
                return false; /* a usable token, maybe being refreshed */
        return !t->answered || t->req;
}

static bool pod_ready(const struct mpod *p) {
        int64_t now = (int64_t) (now_realtime_usec() / USEC_PER_SEC);
        for (size_t i = 0; i < p->n_objs; i++)
                /* a static pod does not wait for the services (serviceHasSynced is for API pods) */
                if (!p->objs[i]->answered && (p->api || !is_service(p->objs[i])))
                        return false;
        for (size_t i = 0; i < p->n_tokens; i++)
                if (token_pending(p->tokens[i], now))
                        return false;
        /* a podCertificate source: until its first request was made (or failed); the signer's answer is not
         * waited for here, the volume's SetUp reports "not issued yet" meanwhile, as upstream */
        for (size_t i = 0; i < p->n_certs; i++)
                if (p->certs[i]->state == CERT_INITIAL && !p->certs[i]->tried)
                        return false;
        return true;
}

void objects_wake_ready_pods(struct objects_manager *m) {
        for (struct mpod *p = m->pods, *next; p; p = next) {
                next = p->next;
                if (p->ready && pod_ready(p)) {
                        objects_ready_t cb = p->ready;
                        p->ready = NULL;
                        cb(p->ready_data); /* may unregister p; restart the scan */
                        next = m->pods;
                }
        }
}

static bool pod_uses(const struct mpod *p, const struct mobj *o) {
        for (size_t i = 0; i < p->n_objs; i++)
                if (p->objs[i] == o)
                        return true;
        return false;
}

static void notify_changed(struct objects_manager *m, struct mobj *o) {
        struct mpod *p;
        size_t n = 0;
        char **uids = NULL;

        /* the service environment is made when a container is created and a RuntimeClass's handler is read when
         * a sandbox is, as upstream: nothing to sync */
        if (is_service(o) || streq(o->kind, OBJ_KIND_RUNTIME_CLASS))
                return;

        /* collect first: the callback may change the registrations */
        DLIST_FOREACH(p, m->pods)
        if (pod_uses(p, o) && !p->ready)
                n++;
        uids = calloc(n + 1, sizeof(*uids));
        if (!uids)
                return;
        n = 0;
        DLIST_FOREACH(p, m->pods)
        if (pod_uses(p, o) && !p->ready && (uids[n] = strdup(p->uid)))
                n++;
        for (size_t i = 0; i < n; i++) {
                log_info("%s %s/%s changed: syncing pod %s", o->kind, o->ns, o->name, uids[i]);
                m->changed(uids[i], m->userdata);
        }
        strv_free(uids);
}

/* ---------------------------------------------------------------- objects */

static void obj_start(struct mobj *o);

static void obj_free(struct mobj *o) {
        if (!o)
                return;
        if (o->m)
                DLIST_REMOVE(o->m->objs, o);
        kube_request_cancel(o->req);
        if (o->retry)
                event_free(o->retry);
        json_decref(o->obj);
        free(o->message);
        free(o->rv);
        free(o->ns);
        free(o->name);
        free(o);
}

static void obj_retry_cb(evutil_socket_t fd, short what, void *userdata) {
        obj_start(userdata);
}

static void obj_schedule(struct mobj *o, bool failed) {
        if (failed)
                o->delay = o->delay ? MIN(o->delay * 2, (uint64_t) RETRY_MAX_USEC) : RETRY_MIN_USEC;
        else
                o->delay = 0;
        evtimer_add_usec(o->retry, o->delay);
}

/* Set the known state; true when it differs from the previous one (another object or resourceVersion, or
 * found/not found changed). */
static bool obj_set(struct mobj *o, json_t *obj, int err, const char *message) {
        const char *old_rv = json_string_value(json_object_get(json_object_get(o->obj, "metadata"), "resourceVersion"));
        const char *new_rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
        bool changed = o->answered && (!!o->obj != !!obj || !streq_ptr(old_rv, new_rv) || (!obj && o->err != err) ||
                                       (o->list && !json_equal(o->obj, obj)));

        json_decref(o->obj);
        o->obj = json_incref(obj);
        o->err = obj ? 0 : err;
        free(o->message);
        o->message = message ? strdup(message) : NULL;
        o->answered = true;
        return changed;
}

static void obj_on_watch_event(const char *type, json_t *object, void *userdata) {
        struct mobj *o = userdata;
        const char *rv = json_string_value(json_object_get(json_object_get(object, "metadata"), "resourceVersion"));
        bool changed = false;

        if (streq(type, "ERROR")) {
                log_v(2, "%s %s/%s: watch error: %s", o->kind, o->ns, o->name,
                      strna(json_string_value(json_object_get(object, "message"))));
                free(o->rv);
                o->rv = NULL; /* relist */
                return;
        }
        if (rv)
                (void) free_and_strdup(&o->rv, rv);
        if (o->list) {
                /* a namespace's services: the event's service replaces (or joins, or leaves) the list */
                const char *name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));
                json_t *it;
                size_t i;
                if (!name || !json_is_array(o->obj) || streq(type, "BOOKMARK"))
                        return;
                json_array_foreach(o->obj, i, it)
                        if (streq_ptr(json_string_value(json_object_get(json_object_get(it, "metadata"), "name")),
                                      name)) {
                                json_array_remove(o->obj, i);
                                break;
                        }
                if ((streq(type, "ADDED") || streq(type, "MODIFIED")) && json_array_size(o->obj) < OBJ_MAX_SERVICES)
                        json_array_append(o->obj, object);
                if (streq(o->kind, OBJ_KIND_PCR_LIST))
                        objects_certs_pcr_event(o->m, object);
                else if (streq(o->kind, OBJ_KIND_TRUST_BUNDLE_LIST))
                        notify_changed(o->m, o);
                return;
        }
        if (streq(type, "ADDED") || streq(type, "MODIFIED"))
                changed = obj_set(o, object, 0, NULL);
        else if (streq(type, "DELETED")) {
                _cleanup_free_ char *msg = objects_not_found_message(o->kind, o->name);
                changed = obj_set(o, NULL, -ENOENT, msg);
        }
        if (changed)
                notify_changed(o->m, o);
}

static void obj_on_watch_done(int r, long status, const char *error, void *userdata) {
        struct mobj *o = userdata;

        o->req = NULL;
        if (r < 0 || status != 200) {
                log_v(2, "%s %s/%s: watch ended: %s", o->kind, o->ns, o->name, strna(error));
                free(o->rv);
                o->rv = NULL;
                obj_schedule(o, true);
                return;
        }
        /* a normal end: watch again from the last resourceVersion, at once unless it ended at once (a server
         * closing every watch must not make the loop spin) */
        obj_schedule(o, now_usec() - o->watch_started < USEC_PER_SEC);
}

static void obj_watch(struct mobj *o) {
        _cleanup_free_ char *coll = collection_path(o), *name = kube_escape(o->name), *path = NULL, *rv = NULL,
                            *lsel = list_selector(o);
        unsigned timeout = 300 + (unsigned) (random() % 300); /* as the reflector: 5 to 10 min */
        int r;

        rv = kube_escape(o->rv);
        /* one object by its name, or (a namespace's services, ...) the whole list */
        if (!coll || !name || !rv || !lsel ||
            asprintf(&path, "%s?%s%s%s%sresourceVersion=%s&watch=true&allowWatchBookmarks=true&timeoutSeconds=%u", coll,
                     o->list ? lsel : "", o->list ? "" : "fieldSelector=metadata.name%3D", o->list ? "" : name,
                     o->list ? "" : "&", rv, timeout) < 0) {
                obj_schedule(o, true);
                return;
        }
        o->watch_started = now_usec();
        r = kube_watch(o->m->client, path, (uint64_t) (timeout + 60) * USEC_PER_SEC, obj_on_watch_event,
                       obj_on_watch_done, o, &o->req);
        if (r < 0) {
                o->req = NULL;
                obj_schedule(o, true);
        }
}

static int errno_of(const struct kube_response *resp) {
        if (resp->r < 0)
                return resp->r;
        switch (resp->status) {
        case 404:
                return -ENOENT;
        case 401:
        case 403:
                return -EACCES;
        default:
                return -EIO;
        }
}

static void obj_on_list(const struct kube_response *resp, void *userdata) {
        struct mobj *o = userdata;
        struct objects_manager *m = o->m;
        const json_t *items = json_object_get(resp->body, "items");
        const char *rv = json_string_value(json_object_get(json_object_get(resp->body, "metadata"), "resourceVersion"));
        json_t *found = NULL, *it;
        bool changed;
        size_t i;

        o->req = NULL;
        if (resp->r < 0 || resp->status != 200 || !json_is_array(items) || isempty(rv)) {
                int err = errno_of(resp);
                _cleanup_free_ char *msg = NULL;
                if (resp->r >= 0 && resp->status == 200)
                        err = -EBADMSG;
                if (o->list && !is_service(o) ? asprintf(&msg, "failed to list %ss: %s",
                                                         streq(o->kind, OBJ_KIND_PCR_LIST) ? "PodCertificateRequest"
                                                                                           : "ClusterTrustBundle",
                                                         isempty(resp->error) ? "invalid list" : resp->error) < 0
                    : o->list                 ? asprintf(&msg, "failed to list services of namespace %s: %s", o->ns,
                                         isempty(resp->error) ? "invalid list" : resp->error) < 0
                    : streq(o->kind, OBJ_KIND_RUNTIME_CLASS)
                            ? asprintf(&msg, "failed to lookup RuntimeClass %s: %s", o->name,
                                       isempty(resp->error) ? "invalid list" : resp->error) < 0
                            : asprintf(&msg, "failed to get %s %s/%s: %s",
                                       streq(o->kind, "ConfigMap") ? "configmap"
                                       : streq(o->kind, "Secret")  ? "secret"
                                                                   : "service",
                                       o->ns, o->name, isempty(resp->error) ? "invalid list" : resp->error) < 0)
                        msg = NULL;
                if (!o->answered && now_usec() - o->first_try < FIRST_ANSWER_WAIT_USEC) {
                        /* not an answer yet: try again soon (FIRST_ANSWER_WAIT_USEC) */
                        log_v(2, "%s, trying again", strna(msg));
                        o->delay = o->delay ? MIN(o->delay * 2, (uint64_t) FIRST_ANSWER_WAIT_USEC / 2)
                                            : FIRST_ANSWER_RETRY_USEC;
                        evtimer_add_usec(o->retry, o->delay);
                        return;
                }
                log_warning("%s", strna(msg));
                /* keep a value already known (the watch will be retried); a first answer is the error */
                if (!o->answered) {
                        (void) obj_set(o, NULL, err == -ENOENT ? -EIO : err, msg);
                        o->delay = 0; /* the usual back-off from here */
                }
                obj_schedule(o, true);
                objects_wake_ready_pods(o->m);
                return;
        }
        if (o->list) {
                json_auto_t *copy = json_array();
                json_array_foreach(items, i, it)
                        if (json_array_size(copy) < OBJ_MAX_SERVICES)
                                json_array_append(copy, it);
                log_v(2, "%s %s: %zu (resourceVersion %s)", o->kind, o->ns, json_array_size(copy), rv);
                changed = copy && obj_set(o, copy, 0, NULL);
                o->delay = 0;
                (void) free_and_strdup(&o->rv, rv);
                obj_watch(o);
                if (changed && streq(o->kind, OBJ_KIND_TRUST_BUNDLE_LIST))
                        notify_changed(m, o);
                else if (streq(o->kind, OBJ_KIND_PCR_LIST))
                        json_array_foreach(o->obj, i, it)
                                objects_certs_pcr_event(m, it);
                objects_wake_ready_pods(m);
                return;
        }
        json_array_foreach(items, i, it)
                if (streq_ptr(json_string_value(json_object_get(json_object_get(it, "metadata"), "name")), o->name))
                        found = it;
        log_v(2, "%s %s/%s: %s (resourceVersion %s)", o->kind, o->ns, o->name, found ? "fetched" : "not found", rv);
        if (found)
                changed = obj_set(o, found, 0, NULL);
        else {
                _cleanup_free_ char *msg = objects_not_found_message(o->kind, o->name);
                changed = obj_set(o, NULL, -ENOENT, msg);
        }
        o->delay = 0;
        (void) free_and_strdup(&o->rv, rv);
        obj_watch(o);
        if (changed)
                notify_changed(m, o); /* may free o */
        objects_wake_ready_pods(m);
}

static void obj_start(struct mobj *o) {
        _cleanup_free_ char *coll = collection_path(o), *sel = NULL, *esel = NULL, *path = NULL,
                            *lsel = list_selector(o);
        int r;

        if (o->rv) {
                obj_watch(o);
                return;
        }
        if (!o->first_try)
                o->first_try = now_usec();
        if (asprintf(&sel, "metadata.name=%s", o->name) < 0)
                sel = NULL;
        esel = sel ? kube_escape(sel) : NULL;
        if (!coll || !esel || !lsel ||
            (o->list ? asprintf(&path, "%s?%s", coll, lsel) : asprintf(&path, "%s?fieldSelector=%s", coll, esel)) < 0) {
                obj_schedule(o, true);
                return;
        }
        r = kube_request(o->m->client, "GET", path, NULL, NULL, 0, obj_on_list, o, &o->req);
        if (r < 0) {
                o->req = NULL;
                obj_schedule(o, true);
        }
}

static struct mobj *obj_get(struct objects_manager *m, const char *kind, const char *ns, const char *name) {
        struct mobj *o;

        DLIST_FOREACH(o, m->objs)
        if (streq(o->kind, kind) && streq(o->ns, ns) && streq(o->name, name))
                return o;
        o = calloc(1, sizeof(*o));
        if (!o)
                return NULL;
        o->m = m;
        o->kind = streq(kind, "ConfigMap")                  ? "ConfigMap"
                  : streq(kind, "Secret")                   ? "Secret"
                  : streq(kind, OBJ_KIND_SERVICE_LIST)      ? OBJ_KIND_SERVICE_LIST
                  : streq(kind, OBJ_KIND_RUNTIME_CLASS)     ? OBJ_KIND_RUNTIME_CLASS
                  : streq(kind, OBJ_KIND_TRUST_BUNDLE_LIST) ? OBJ_KIND_TRUST_BUNDLE_LIST
                  : streq(kind, OBJ_KIND_PCR_LIST)          ? OBJ_KIND_PCR_LIST
                                                            : OBJ_KIND_SERVICE;
        o->list = streq(o->kind, OBJ_KIND_SERVICE_LIST) || streq(o->kind, OBJ_KIND_TRUST_BUNDLE_LIST) ||
                  streq(o->kind, OBJ_KIND_PCR_LIST);
        o->ns = strdup(ns);
        o->name = strdup(name);
        o->retry = evtimer_new(m->base, obj_retry_cb, o);
        if (!o->ns || !o->name || !o->retry) {
                obj_free(o);
                return NULL;
        }
        DLIST_PREPEND(m->objs, o);
        log_v(2, "watching %s %s/%s", o->kind, ns, name);
        obj_start(o);
        return o;
}

static void obj_unref(struct mobj *o) {
        if (o && --o->refs == 0) {
                log_v(2, "no longer watching %s %s/%s", o->kind, o->ns, o->name);
                obj_free(o);
        }
}

/* ---------------------------------------------------------------- tokens */

static void token_free(struct mtoken *t) {
        if (!t)
                return;
        kube_request_cancel(t->req);
        json_decref(t->status);
        free(t->message);
        free(t->sa);
        free(t->audience);
        free(t);
}

static void token_on_reply(const struct kube_response *resp, void *userdata) {
        struct mtoken *t = userdata;
        json_t *status = json_object_get(resp->body, "status");
        const char *tok = json_string_value(json_object_get(status, "token"));
        const char *exp = json_string_value(json_object_get(status, "expirationTimestamp"));
        int64_t nsec;

        t->req = NULL;
        t->answered = true;
        if (resp->r >= 0 && resp->status / 100 == 2 && !isempty(tok) && exp && parse_rfc3339(exp, &nsec) >= 0) {
                json_decref(t->status);
                t->status = json_incref(status);
                t->expires = nsec / 1000000000;
                t->err = 0;
                free(t->message);
                t->message = NULL;
                log_v(2, "got a token for service account %s/%s (audience \"%s\") for pod %s", t->p->ns, t->sa,
                      t->audience, t->p->uid);
        } else {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "failed to fetch token: %s",
                             isempty(resp->error) ? "invalid TokenRequest answer" : resp->error) < 0)
                        msg = NULL;
                log_error("pod %s: service account %s/%s: %s", t->p->uid, t->p->ns, t->sa, strna(msg));
                t->err = resp->r < 0 || resp->status / 100 != 2 ? errno_of(resp) : -EBADMSG;
                if (t->err == -ENOENT)
                        t->err = -EIO; /* a missing service account is an error, never "optional" */
                free(t->message);
                t->message = TAKE_PTR(msg);
        }
        objects_wake_ready_pods(t->p->m);
}

static void token_request(struct mtoken *t) {
        struct mpod *p = t->p;
        _cleanup_free_ char *ns = kube_escape(p->ns), *sa = kube_escape(t->sa), *path = NULL;
        json_auto_t *body = NULL, *spec = NULL;
        int r;

        if (!ns || !sa || asprintf(&path, "/api/v1/namespaces/%s/serviceaccounts/%s/token", ns, sa) < 0)
                goto fail;
        spec = json_pack("{s:I, s:{s:s, s:s, s:s, s:s}}", "expirationSeconds", (json_int_t) t->expiration_seconds,
                         "boundObjectRef", "apiVersion", "v1", "kind", "Pod", "name", p->name, "uid", p->uid);
        if (spec && !isempty(t->audience) && json_object_set_new(spec, "audiences", json_pack("[s]", t->audience)) < 0)
                goto fail;
        body = spec ? json_pack("{s:s, s:s, s:O}", "apiVersion", "authentication.k8s.io/v1", "kind", "TokenRequest",
                                "spec", spec)
                    : NULL;
        if (!body)
                goto fail;
        log_v(2, "requesting a token for service account %s/%s (audience \"%s\", %" PRId64 "s) for pod %s", p->ns,
              t->sa, t->audience, t->expiration_seconds, p->uid);
        r = kube_request(p->m->client, "POST", path, body, NULL, 0, token_on_reply, t, &t->req);
        if (r >= 0)
                return;
        t->req = NULL;
fail:
        t->answered = true;
        t->err = -ENOMEM;
        (void) free_and_strdup(&t->message, "failed to fetch token: out of memory");
}

/* ---------------------------------------------------------------- pods */

struct mpod *objects_pod_find(struct objects_manager *m, const char *uid) {
        struct mpod *p;

        DLIST_FOREACH(p, m->pods)
        if (streq(p->uid, uid))
                return p;
        return NULL;
}

static void pod_free(struct mpod *p) {
        if (!p)
                return;
        if (p->m)
                DLIST_REMOVE(p->m->pods, p);
        for (size_t i = 0; i < p->n_objs; i++)
                obj_unref(p->objs[i]);
        free(p->objs);
        for (size_t i = 0; i < p->n_tokens; i++)
                token_free(p->tokens[i]);
        free(p->tokens);
        for (size_t i = 0; i < p->n_certs; i++)
                objects_cert_free(p->certs[i]);
        free(p->certs);
        free(p->uid);
        free(p->ns);
        free(p->name);
        free(p);
}

void objects_manager_unregister(struct objects_manager *m, const char *uid) {
        if (m && uid)
                pod_free(objects_pod_find(m, uid));
}

static struct mtoken **token_find(struct mpod *p, const struct token_ref *t) {
        for (size_t i = 0; p && i < p->n_tokens; i++)
                if (p->tokens[i] && streq(p->tokens[i]->sa, t->service_account) &&
                    streq(p->tokens[i]->audience, t->audience) &&
                    p->tokens[i]->expiration_seconds == t->expiration_seconds)
                        return &p->tokens[i];
        return NULL;
}

/* take a reference of the object for the pod (once); p->objs has room */
static int pod_add_obj(struct objects_manager *m, struct mpod *p, const char *kind, const char *ns, const char *name) {
        struct mobj *o = obj_get(m, kind, ns, name);

        if (!o)
                return -ENOMEM;
        if (pod_uses(p, o)) {
                if (o->refs == 0)
                        obj_free(o);
                return 0;
        }
        o->refs++;
        p->objs[p->n_objs++] = o;
        return 0;
}

int objects_manager_register(struct objects_manager *m, const char *uid, const char *ns, const char *pod_name, bool api,
                             const struct pod_refs *refs) {
        struct mpod *old, *p;
        bool use_api;

        if (!m)
                return 0;
        old = objects_pod_find(m, uid);
        use_api = api && m->client;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->m = m;
        p->api = use_api;
        p->uid = strdup(uid);
        p->ns = strdup(strempty(ns));
        p->name = strdup(strempty(pod_name));
        if (!p->uid || !p->ns || !p->name)
                goto oom;
        if (m->client) {
                /* the service environment's objects, for static pods too (upstream's service lister is the
                 * node's): the master service, and the namespace's services with enableServiceLinks */
                p->objs = calloc(refs->n_objs + 3, sizeof(*p->objs));
                if (!p->objs)
                        goto oom;
                if (pod_add_obj(m, p, OBJ_KIND_SERVICE, OBJ_MASTER_SERVICE_NAMESPACE, OBJ_MASTER_SERVICE_NAME) < 0 ||
                    (refs->service_links && pod_add_obj(m, p, OBJ_KIND_SERVICE_LIST, p->ns, "") < 0))
                        goto oom;
                /* its RuntimeClass (runtimeclass.Manager), cluster-scoped */
                if (refs->runtime_class && pod_add_obj(m, p, OBJ_KIND_RUNTIME_CLASS, "", refs->runtime_class) < 0)
                        goto oom;
        }
        if (use_api) {
                p->tokens = calloc(refs->n_tokens + 1, sizeof(*p->tokens));
                if (!p->objs || !p->tokens)
                        goto oom;
                /* room for the ClusterTrustBundles */
                {
                        struct mobj **more = realloc(p->objs, (refs->n_objs + 4) * sizeof(*more));
                        if (!more)
                                goto oom;
                        p->objs = more;
                }
                for (size_t i = 0; i < refs->n_objs; i++)
                        if (pod_add_obj(m, p, refs->objs[i].kind, p->ns, refs->objs[i].name) < 0)
                                goto oom;
                for (size_t i = 0; i < refs->n_tokens; i++) {
                        struct mtoken **prev = token_find(old, &refs->tokens[i]), *t;
                        if (prev) {
                                /* keep the cached token (and a request in flight) across re-registrations */
                                t = TAKE_PTR(*prev);
                        } else {
                                t = calloc(1, sizeof(*t));
                                if (!t)
                                        goto oom;
                                *t = (struct mtoken) { .sa = strdup(refs->tokens[i].service_account),
                                                       .audience = strdup(refs->tokens[i].audience),
                                                       .expiration_seconds = refs->tokens[i].expiration_seconds };
                                if (!t->sa || !t->audience) {
                                        token_free(t);
                                        goto oom;
                                }
                        }
                        t->p = p;
                        p->tokens[p->n_tokens++] = t;
                }
                if (refs->trust_bundles && pod_add_obj(m, p, OBJ_KIND_TRUST_BUNDLE_LIST, "", "") < 0)
                        goto oom;
                p->certs = calloc(refs->n_certs + 1, sizeof(*p->certs));
                if (!p->certs)
                        goto oom;
                for (size_t i = 0; i < refs->n_certs; i++) {
                        struct mcert **prev = objects_cert_find(old, &refs->certs[i]), *c;
                        /* keep the key, the chain and a request under way across re-registrations */
                        c = prev ? TAKE_PTR(*prev) : objects_cert_new(m, &refs->certs[i]);
                        if (!c)
                                goto oom;
                        c->p = p;
                        p->certs[p->n_certs++] = c;
                }
                if (refs->n_certs > 0 && !m->pcrs && !isempty(m->node_name)) {
                        /* the node's PodCertificateRequests, watched from now on (upstream's informer) */
                        m->pcrs = obj_get(m, OBJ_KIND_PCR_LIST, "", m->node_name);
                        if (!m->pcrs)
                                goto oom;
                        m->pcrs->refs = 1;
                }
        }
        if (old) {
                p->ready = old->ready;
                p->ready_data = old->ready_data;
                pod_free(old); /* after the new references were taken: shared objects stay watched */
        }
        DLIST_PREPEND(m->pods, p);
        return 0;
oom:
        pod_free(p);
        return -ENOMEM;
}

int objects_manager_wait(struct objects_manager *m, const char *uid, objects_ready_t ready, void *userdata) {
        struct mpod *p = m ? objects_pod_find(m, uid) : NULL;
        int64_t now = (int64_t) (now_realtime_usec() / USEC_PER_SEC);

        if (!p)
                return 0;
        for (size_t i = 0; i < p->n_tokens; i++) {
                struct mtoken *t = p->tokens[i];
                if (t->req)
                        continue;
                if (!t->status || objects_token_requires_refresh(now, t->expires, t->expiration_seconds))
                        token_request(t);
        }
        for (size_t i = 0; i < p->n_certs; i++)
                objects_cert_advance(p->certs[i]);
        p = objects_pod_find(
                m, uid); /* still the same registration: objects_cert_advance does not call back synchronously */
        if (!p)
                return 0;
        if (pod_ready(p))
                return 0;
        p->ready = ready;
        p->ready_data = userdata;
        return 1;
}

void objects_manager_cancel_wait(struct objects_manager *m, const char *uid) {
        struct mpod *p = m && uid ? objects_pod_find(m, uid) : NULL;
        if (p)
                p->ready = NULL;
}

int objects_manager_fill(struct objects_manager *m, const char *uid, struct pod_objects *o) {
        struct mpod *p = m ? objects_pod_find(m, uid) : NULL;
        int64_t now = (int64_t) (now_realtime_usec() / USEC_PER_SEC);
        int r;

        if (!p)
                return 0;
        for (size_t i = 0; i < p->n_objs; i++) {
                const struct mobj *x = p->objs[i];
                if (!x->answered)
                        r = objects_pod_put_error(o, x->kind, x->ns, x->name, -EAGAIN, "not fetched yet");
                else if (x->obj)
                        r = objects_pod_put(o, x->kind, x->ns, x->name, x->obj);
                else
                        r = objects_pod_put_error(o, x->kind, x->ns, x->name, x->err, x->message);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < p->n_tokens; i++) {
                const struct mtoken *t = p->tokens[i];
                if (t->status && t->expires > now)
                        r = objects_pod_put_token(o, p->ns, t->sa, t->audience, t->expiration_seconds, t->status);
                else
                        r = objects_pod_put_token_error(o, p->ns, t->sa, t->audience, t->expiration_seconds,
                                                        t->err < 0 ? t->err : -EAGAIN,
                                                        t->message ? t->message : "token not fetched yet");
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < p->n_certs; i++) {
                const struct mcert *c = p->certs[i];
                char idx[32];
                snprintf(idx, sizeof(idx), "%zu", c->index);
                if (c->state == CERT_FRESH && c->key && c->chain) {
                        json_auto_t *cred = json_pack("{s:s, s:s}", "key", c->key, "chain", c->chain);
                        r = cred ? objects_pod_put(o, OBJ_KIND_POD_CERTIFICATE, c->volume, idx, cred) : -ENOMEM;
                } else
                        r = objects_pod_put_error(o, OBJ_KIND_POD_CERTIFICATE, c->volume, idx, -EAGAIN,
                                                  c->state == CERT_DENIED || c->state == CERT_FAILED
                                                          ? c->message
                                                          : "credential bundle is not issued yet");
                if (r < 0)
                        return r;
        }
        return 0;
}

int objects_manager_new(struct event_base *base, struct kube_client *client, objects_changed_t changed, void *userdata,
                        struct objects_manager **ret) {
        struct objects_manager *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        *m = (struct objects_manager) { .base = base, .client = client, .changed = changed, .userdata = userdata };
        if (base) {
                int r = workpool_new(base, "keygen", 1, &m->keygen);
                if (r < 0) {
                        free(m);
                        return r;
                }
        }
        *ret = m;
        return 0;
}

struct objects_manager *objects_manager_free(struct objects_manager *m) {
        if (!m)
                return NULL;
        m->keygen = workpool_free(m->keygen); /* its done() calls still find their sources */
        while (m->pods)
                pod_free(m->pods);
        while (m->objs)
                obj_free(m->objs);
        free(m->node_name);
        free(m->node_uid);
        free(m);
        return NULL;
}

int objects_manager_set_node_name(struct objects_manager *m, const char *node_name) {
        return m ? free_and_strdup(&m->node_name, node_name) : 0;
}

void objects_manager_set_client(struct objects_manager *m, struct kube_client *client) {
        if (m)
                m->client = client;
}
