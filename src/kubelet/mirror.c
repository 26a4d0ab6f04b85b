/* SPDX-License-Identifier: Apache-2.0 */
#include "kubelet/mirror.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/strv.h"
#include "config/config.h"

/* ---------------------------------------------------------------- the decision */

static const struct mirror_observed *find_observed(const struct mirror_observed *o, size_t n, const struct pod *p,
                                                   size_t *ret_index) {
        for (size_t i = 0; i < n; i++)
                if (streq_ptr(o[i].namespace_, p->namespace_) && streq_ptr(o[i].name, p->name)) {
                        *ret_index = i;
                        return &o[i];
                }
        return NULL;
}

static bool earlier_instance_terminating(const struct pod *const *static_pods, const bool *terminating, size_t n,
                                         size_t i) {
        for (size_t k = 0; terminating && k < n; k++)
                if (k != i && terminating[k] && streq_ptr(static_pods[k]->namespace_, static_pods[i]->namespace_) &&
                    streq_ptr(static_pods[k]->name, static_pods[i]->name))
                        return true;
        return false;
}

int kubelet_mirror_plan(const struct pod *const *static_pods, const bool *terminating, size_t n_static,
                        const struct mirror_observed *observed, size_t n_observed, struct mirror_action **ret_actions,
                        size_t *ret_n) {
        struct mirror_action *a = calloc(n_static + n_observed + 1, sizeof(*a));
        size_t n = 0;

        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < n_static; i++) {
                const struct pod *p = static_pods[i];
                const char *hash = strmap_get(&p->annotations, ANNOTATION_CONFIG_HASH);
                size_t j;
                const struct mirror_observed *o = find_observed(observed, n_observed, p, &j);

                if (terminating && terminating[i])
                        continue; /* kept as it is until the pod is gone (its status still shows there) */
                if (earlier_instance_terminating(static_pods, terminating, n_static, i))
                        /* a new version of a static pod waits for the old one to finish (upstream's worker does not
                         * start it, so nothing syncs its mirror pod): the old mirror pod stays for the old one's
                         * grace period (e2e_node's "mirror pod termination should satisfy grace period when static
                         * pod is updated") */
                        continue;
                if (o && !o->deleting && streq_ptr(o->hash, hash))
                        continue; /* up to date */
                if (o) {
                        /* outdated (no longer the mirror of this static pod) or deleted with a grace period
                         * (deletionTimestamp set: no kubelet will finish that deletion, the static pod keeps
                         * running): gone, as upstream treats it. Deleted for good (grace period 0, the UID as
                         * precondition); the new one is created once the old one is gone */
                        a[n++] = (struct mirror_action) { MIRROR_DELETE, j };
                        continue;
                }
                a[n++] = (struct mirror_action) { MIRROR_CREATE, i };
        }
        /* orphans: no static pod of that name any more */
        for (size_t j = 0; j < n_observed; j++) {
                bool wanted = false;
                for (size_t i = 0; i < n_static && !wanted; i++)
                        wanted = streq_ptr(observed[j].namespace_, static_pods[i]->namespace_) &&
                                 streq_ptr(observed[j].name, static_pods[i]->name);
                if (!wanted) /* a graceful deletion of it is finished too, as upstream's DeleteMirrorPod does */
                        a[n++] = (struct mirror_action) { MIRROR_DELETE, j };
        }
        *ret_actions = a;
        *ret_n = n;
        return 0;
}

json_t *kubelet_mirror_pod_build(const struct pod *p, const char *node_name, const char *node_uid) {
        json_auto_t *pod = p->raw ? json_deep_copy(p->raw) : json_object();
        json_auto_t *meta = NULL, *ann = NULL;
        json_t *spec;

        if (!pod)
                return NULL;
        meta = json_object();
        ann = json_object();
        if (!meta || !ann)
                return NULL;
        for (size_t i = 0; i < p->annotations.n; i++)
                if (json_object_set_new(ann, p->annotations.keys[i], json_string(p->annotations.values[i])) < 0)
                        return NULL;
        if (json_object_set_new(ann, ANNOTATION_CONFIG_MIRROR,
                                json_string(strempty(strmap_get(&p->annotations, ANNOTATION_CONFIG_HASH)))) < 0)
                return NULL;
        /* a fresh metadata: the API server assigns uid, resourceVersion and creationTimestamp */
        if (json_object_set_new(meta, "name", json_string(p->name)) < 0 ||
            json_object_set_new(meta, "namespace", json_string(p->namespace_)) < 0)
                return NULL;
        if (p->labels.n > 0) {
                json_t *labels = json_object();
                for (size_t i = 0; labels && i < p->labels.n; i++)
                        json_object_set_new(labels, p->labels.keys[i], json_string(p->labels.values[i]));
                if (!labels || json_object_set_new(meta, "labels", labels) < 0)
                        return NULL;
        }
        if (json_object_set_new(meta, "annotations", TAKE_PTR(ann)) < 0)
                return NULL;
        if (json_object_set_new(meta, "ownerReferences",
                                json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion", "v1", "kind", "Node", "name",
                                          node_name, "uid", node_uid, "controller", true)) < 0)
                return NULL;
        if (json_object_set_new(pod, "metadata", TAKE_PTR(meta)) < 0)
                return NULL;
        json_object_set_new(pod, "apiVersion", json_string("v1"));
        json_object_set_new(pod, "kind", json_string("Pod"));
        json_object_del(pod, "status");
        spec = json_object_get(pod, "spec");
        if (!json_is_object(spec) || json_object_set_new(spec, "nodeName", json_string(node_name)) < 0)
                return NULL;
        return TAKE_PTR(pod);
}

/* ---------------------------------------------------------------- the manager */

struct mirror_op {
        struct mirror_manager *m;
        struct mirror_op *prev, *next;
        char *key; /* namespace/name */
        char *uid; /* DELETE: the mirror pod's UID */
        struct kube_request *req;
};

struct mirror_manager {
        struct kube_client *client;
        char *node_name;
        bool seen;             /* the API server's pods were listed */
        json_t *observed_json; /* the mirror pods as last reported */
        struct mirror_observed *observed;
        size_t n_observed;
        char **deleted;        /* UIDs we deleted that the watch has not reported gone yet */
        struct mirror_op *ops; /* in flight */
        struct pod **last;     /* the static pods of the last sync (references) */
        bool *last_terminating;
        size_t n_last;
        char *node_uid;
};

static void last_clear(struct mirror_manager *m) {
        for (size_t i = 0; i < m->n_last; i++)
                pod_free(m->last[i]);
        free(m->last);
        free(m->last_terminating);
        m->last = NULL;
        m->last_terminating = NULL;
        m->n_last = 0;
}

static void op_free(struct mirror_op *o) {
        if (!o)
                return;
        kube_request_cancel(o->req);
        free(o->key);
        free(o->uid);
        free(o);
}

struct mirror_manager *kubelet_mirror_free(struct mirror_manager *m) {
        if (!m)
                return NULL;
        while (m->ops) {
                struct mirror_op *o = m->ops;
                DLIST_REMOVE(m->ops, o);
                op_free(o);
        }
        last_clear(m);
        json_decref(m->observed_json);
        free(m->observed);
        strv_free(m->deleted);
        free(m->node_name);
        free(m->node_uid);
        free(m);
        return NULL;
}

int kubelet_mirror_new(struct kube_client *client, const char *node_name, struct mirror_manager **ret) {
        struct mirror_manager *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->client = client;
        m->node_name = strdup(node_name);
        if (!m->node_name)
                return kubelet_mirror_free(m), -ENOMEM;
        *ret = m;
        return 0;
}

static const char *meta_string(const json_t *pod, const char *key) {
        return json_string_value(json_object_get(json_object_get(pod, "metadata"), key));
}

void kubelet_mirror_observed(struct mirror_manager *m, const json_t *mirror_pods) {
        struct mirror_observed *o;
        size_t i, n = 0;
        json_t *pod;

        o = calloc(json_array_size(mirror_pods) + 1, sizeof(*o));
        if (!o)
                return;
        json_decref(m->observed_json);
        m->observed_json = json_incref((json_t *) mirror_pods);
        json_array_foreach(mirror_pods, i, pod) {
                const char *uid = meta_string(pod, "uid");
                if (strv_contains(m->deleted, uid))
                        continue; /* deleted by us, the watch has not caught up */
                o[n++] = (struct mirror_observed) {
                        .namespace_ = meta_string(pod, "namespace"),
                        .name = meta_string(pod, "name"),
                        .uid = uid,
                        .hash = json_string_value(
                                json_object_get(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                                                ANNOTATION_CONFIG_MIRROR)),
                        .deleting = json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") != NULL,
                };
        }
        /* forget tombstones the API server no longer lists */
        for (size_t k = 0; m->deleted && m->deleted[k];) {
                bool listed = false;
                json_array_foreach(mirror_pods, i, pod)
                        listed = listed || streq_ptr(meta_string(pod, "uid"), m->deleted[k]);
                if (!listed)
                        strv_remove_at(m->deleted, k);
                else
                        k++;
        }
        free(m->observed);
        m->observed = o;
        m->n_observed = n;
        m->seen = true;
        kubelet_mirror_sync(m, (const struct pod *const *) m->last, m->last_terminating, m->n_last, m->node_uid);
}

const char *kubelet_mirror_uid(const struct mirror_manager *m, const struct pod *p) {
        const char *hash = p ? strmap_get(&p->annotations, ANNOTATION_CONFIG_HASH) : NULL;

        for (size_t i = 0; m && p && i < m->n_observed; i++)
                if (streq_ptr(m->observed[i].namespace_, p->namespace_) && streq_ptr(m->observed[i].name, p->name) &&
                    !m->observed[i].deleting && streq_ptr(m->observed[i].hash, hash))
                        return m->observed[i].uid;
        return NULL;
}

const json_t *kubelet_mirror_status(const struct mirror_manager *m, const struct pod *p) {
        const char *uid = kubelet_mirror_uid(m, p);
        json_t *pod;
        size_t i;

        if (!uid)
                return NULL;
        json_array_foreach(m->observed_json, i, pod)
                if (streq_ptr(meta_string(pod, "uid"), uid))
                        return json_object_get(pod, "status");
        return NULL;
}

static bool op_pending(const struct mirror_manager *m, const char *key) {
        for (const struct mirror_op *o = m->ops; o; o = o->next)
                if (streq(o->key, key))
                        return true;
        return false;
}

static void op_done(struct mirror_op *o) {
        struct mirror_manager *m = o->m;

        DLIST_REMOVE(m->ops, o);
        o->req = NULL;
        op_free(o);
}

static void resync(struct mirror_manager *m) {
        /* the plan may go on (a create after a delete) */
        kubelet_mirror_sync(m, (const struct pod *const *) m->last, m->last_terminating, m->n_last, m->node_uid);
}

static void on_deleted(const struct kube_response *resp, void *userdata) {
        struct mirror_op *o = userdata;
        struct mirror_manager *m = o->m;

        /* gone already, or replaced by another pod of that name (the UID precondition failed, whatever code
         * carries it): the mirror pod of that UID is no more */
        if (resp->r >= 0 && (resp->status < 300 || resp->status == 404 || kube_response_uid_mismatch(resp))) {
                log_info("Deleted mirror pod: pod=\"%s\" podUID=\"%s\"", o->key, o->uid);
                if (strv_extend(&m->deleted, o->uid) >= 0) {
                        /* take it out of the observed set now */
                        for (size_t i = 0; i < m->n_observed; i++)
                                if (streq_ptr(m->observed[i].uid, o->uid)) {
                                        m->observed[i] = m->observed[--m->n_observed];
                                        break;
                                }
                }
        } else {
                /* tried again at the next sync, not at once (a refusal would loop) */
                log_error("Failed deleting a mirror pod: pod=\"%s\" err=\"%s\"", o->key, resp->error);
                op_done(o);
                return;
        }
        op_done(o);
        resync(m);
}

static void on_created(const struct kube_response *resp, void *userdata) {
        struct mirror_op *o = userdata;

        if (resp->r >= 0 && resp->status < 300)
                log_info("Created mirror pod: pod=\"%s\" podUID=\"%s\"", o->key, strna(meta_string(resp->body, "uid")));
        else if (resp->status != 409) /* AlreadyExists: the watch brings it */
                log_error("Failed creating a mirror pod: pod=\"%s\" err=\"%s\"", o->key, resp->error);
        op_done(o);
}

static int op_start(struct mirror_manager *m, const char *ns, const char *name, const char *uid, json_t *body) {
        _cleanup_free_ char *path = NULL;
        struct mirror_op *o;
        int r;

        o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->m = m;
        if (asprintf(&o->key, "%s/%s", ns, name) < 0) {
                o->key = NULL;
                op_free(o);
                return -ENOMEM;
        }
        if (uid) {
                o->uid = strdup(uid);
                r = asprintf(&path, "/api/v1/namespaces/%s/pods/%s", ns, name);
        } else
                r = asprintf(&path, "/api/v1/namespaces/%s/pods", ns);
        if (r < 0 || (uid && !o->uid)) {
                path = NULL;
                op_free(o);
                return -ENOMEM;
        }
        r = kube_request(m->client, uid ? "DELETE" : "POST", path, body, NULL, 0, uid ? on_deleted : on_created, o,
                         &o->req);
        if (r < 0) {
                o->req = NULL;
                op_free(o);
                return r;
        }
        DLIST_PREPEND(m->ops, o);
        return 0;
}

void kubelet_mirror_sync(struct mirror_manager *m, const struct pod *const *static_pods, const bool *terminating,
                         size_t n, const char *node_uid) {
        _cleanup_free_ struct mirror_action *actions = NULL;
        struct pod **keep;
        bool *term;
        size_t n_actions = 0;

        if (!m)
                return;
        if (static_pods != (const struct pod *const *) m->last) {
                keep = calloc(n + 1, sizeof(*keep));
                term = calloc(n + 1, sizeof(*term));
                if (!keep || !term) {
                        free(keep);
                        free(term);
                        return;
                }
                for (size_t i = 0; i < n; i++) {
                        keep[i] = pod_ref((struct pod *) static_pods[i]);
                        term[i] = terminating && terminating[i];
                }
                last_clear(m);
                m->last = keep;
                m->last_terminating = term;
                m->n_last = n;
                static_pods = (const struct pod *const *) keep;
                terminating = term;
        }
        if (node_uid && !streq_ptr(node_uid, m->node_uid))
                (void) free_and_strdup(&m->node_uid, node_uid);
        if (!m->seen || !m->node_uid)
                return;
        if (kubelet_mirror_plan(static_pods, terminating, n, m->observed, m->n_observed, &actions, &n_actions) < 0)
                return;
        for (size_t i = 0; i < n_actions; i++) {
                _cleanup_free_ char *key = NULL;
                const char *ns, *name;
                int r;

                if (actions[i].kind == MIRROR_CREATE) {
                        ns = static_pods[actions[i].index]->namespace_;
                        name = static_pods[actions[i].index]->name;
                } else {
                        ns = m->observed[actions[i].index].namespace_;
                        name = m->observed[actions[i].index].name;
                }
                if (asprintf(&key, "%s/%s", ns, name) < 0 || op_pending(m, key))
                        continue;
                if (actions[i].kind == MIRROR_CREATE) {
                        json_auto_t *body = kubelet_mirror_pod_build(static_pods[actions[i].index], m->node_name,
                                                                     m->node_uid);
                        if (!body)
                                continue;
                        log_v(2, "Creating a mirror pod for static pod: pod=\"%s\"", key);
                        r = op_start(m, ns, name, NULL, body);
                } else {
                        json_auto_t *body = json_pack("{s:s, s:s, s:i, s:{s:s}}", "kind", "DeleteOptions", "apiVersion",
                                                      "v1", "gracePeriodSeconds", 0, "preconditions", "uid",
                                                      m->observed[actions[i].index].uid);
                        log_v(2, "Deleting a mirror pod: pod=\"%s\" podUID=\"%s\"", key,
                              m->observed[actions[i].index].uid);
                        r = op_start(m, ns, name, m->observed[actions[i].index].uid, body);
                }
                if (r < 0)
                        log_error("mirror pod %s: %s", key, strerror(-r));
        }
}
