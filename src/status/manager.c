/* SPDX-License-Identifier: Apache-2.0 */
#include "status/manager.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/list.h"
#include "basic/hashmap.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "client/client.h"
#include "status/status.h"

#define RETRY_MIN_USEC (500 * 1000)
#define RETRY_MAX_USEC (30 * USEC_PER_SEC)

struct status_entry {
        struct status_manager *m;
        struct status_entry *prev, *next;
        char *uid, *ns, *name;
        json_t *wanted;   /* the newest status */
        json_t *sent;     /* what the API server accepted last */
        json_t *inflight; /* what the request in flight carries */
        struct kube_request *req;
        struct event *retry;
        uint64_t retry_usec;
        bool gone; /* the API server has no pod of this UID (deleted, or replaced by one of the same name) */
        /* the final status (status_manager_set_final): done runs once the API server has it */
        status_final_cb final_done;
        void *final_userdata;
};

struct status_manager {
        struct event_base *base;
        struct kube_client *client;
        struct status_entry *entries;
        struct hashmap by_uid; /* UID → entry (keys borrowed from the entries): a status set per pod per change
                                * must not walk every pod's entry */
};

static void entry_free(struct status_entry *e) {
        if (!e)
                return;
        kube_request_cancel(e->req);
        if (e->retry)
                event_free(e->retry);
        json_decref(e->wanted);
        json_decref(e->sent);
        json_decref(e->inflight);
        free(e->uid);
        free(e->ns);
        free(e->name);
        free(e);
}

struct status_manager *status_manager_free(struct status_manager *m) {
        if (!m)
                return NULL;
        while (m->entries) {
                struct status_entry *e = m->entries;
                DLIST_REMOVE(m->entries, e);
                entry_free(e);
        }
        hashmap_done(&m->by_uid);
        free(m);
        return NULL;
}

int status_manager_new(struct event_base *base, struct kube_client *client, struct status_manager **ret) {
        struct status_manager *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->base = base;
        m->client = client;
        *ret = m;
        return 0;
}

static void entry_send(struct status_entry *e);
static void entry_remove(struct status_entry *e);

/* a final status the API server has (or a pod it no longer has): tell, then forget the pod */
static bool entry_finished(struct status_entry *e) {
        status_final_cb done = e->final_done;

        if (!done || e->req || !(e->gone || (e->sent && json_equal(e->sent, e->wanted))))
                return false;
        _cleanup_free_ char *uid = strdup(e->uid);
        void *userdata = e->final_userdata;
        entry_remove(e);
        done(uid ? uid : "", userdata);
        return true;
}

static void on_patched(const struct kube_response *resp, void *userdata) {
        struct status_entry *e = userdata;

        e->req = NULL;
        if (resp->r >= 0 && resp->status < 300) {
                json_decref(e->sent);
                e->sent = TAKE_PTR(e->inflight);
                e->retry_usec = 0;
                log_v(3, "Patch status for pod: pod=\"%s/%s\" podUID=\"%s\"", e->ns, e->name, e->uid);
                if (e->wanted && !json_equal(e->wanted, e->sent))
                        entry_send(e); /* it changed meanwhile */
                else
                        (void) entry_finished(e);
                return;
        }
        e->inflight = (json_decref(e->inflight), NULL);
        if (resp->status == 404 || resp->status == 409 || kube_response_uid_mismatch(resp)) {
                /* the pod is gone, or it is another pod with that name now (a UID precondition failure comes as
                 * 409, or as 422 from kube-apiserver v1.20): nothing to report for this UID, ever */
                log_v(2, "Pod status not updated: pod=\"%s/%s\" podUID=\"%s\": %s", e->ns, e->name, e->uid,
                      resp->error);
                e->gone = true;
                (void) entry_finished(e);
                return;
        }
        log_warning("Failed to update status for pod: pod=\"%s/%s\" podUID=\"%s\" err=\"%s\"", e->ns, e->name, e->uid,
                    resp->error);
        e->retry_usec = e->retry_usec ? MIN(e->retry_usec * 2, RETRY_MAX_USEC) : RETRY_MIN_USEC;
        evtimer_add_usec(e->retry, e->retry_usec);
}

/* The status as a strategic merge patch (PatchPodStatus): conditions are merged by type, so only the kubelet's
 * own are sent (a client's, a readiness gate's, are left as the API server has them), those it owned in the last
 * status sent but no longer has are deleted, and a condition's reason or message it no longer has is set to null
 * (deleted); so is a field of the last status sent that the new one lacks; the IP lists replace the API
 * server's. */
int status_build_patch(const char *uid, const json_t *wanted, const json_t *sent, json_t **ret) {
        json_auto_t *status = json_deep_copy(wanted), *conds = json_array(), *patch = NULL;
        const json_t *c;
        size_t i;

        if (!status || !conds)
                return -ENOMEM;
        json_array_foreach(json_object_get(wanted, "conditions"), i, c) {
                json_t *copy;

                if (!status_condition_by_kubelet(json_string_value(json_object_get(c, "type"))) &&
                    !status_condition_shared_by_kubelet(json_string_value(json_object_get(c, "type"))))
                        continue;
                /* merged by type: a key the condition no longer has (Ready=True after ContainersNotReady) is
                 * removed explicitly, as upstream's two-way patch does, or the API server keeps the stale one */
                copy = json_deep_copy(c);
                if (!copy || json_array_append_new(conds, copy) < 0)
                        return -ENOMEM;
                static const char *const optional[] = { "reason", "message" };
                for (size_t k = 0; k < ELEMENTSOF(optional); k++)
                        if (!json_object_get(copy, optional[k]) &&
                            json_object_set_new(copy, optional[k], json_null()) < 0)
                                return -ENOMEM;
        }
        json_array_foreach(json_object_get(sent, "conditions"), i, c) {
                const char *type = json_string_value(json_object_get(c, "type"));
                const json_t *w;
                size_t j;
                bool still = false;

                if (!status_condition_by_kubelet(type))
                        continue;
                json_array_foreach(json_object_get(wanted, "conditions"), j, w)
                        still = still || streq_ptr(json_string_value(json_object_get(w, "type")), type);
                if (!still &&
                    json_array_append_new(conds, json_pack("{s:s, s:s}", "type", type, "$patch", "delete")) < 0)
                        return -ENOMEM;
        }
        if (json_object_set(status, "conditions", conds) < 0)
                return -ENOMEM;
        /* a field of the last status sent that no longer applies (the pod's reason, message, resize...) */
        const char *key;
        json_t *v;
        json_object_foreach((json_t *) sent, key, v)
                if (!json_object_get(status, key) && json_object_set_new(status, key, json_null()) < 0)
                        return -ENOMEM;
        static const char *const ip_lists[] = { "podIPs", "hostIPs" };
        for (size_t k = 0; k < ELEMENTSOF(ip_lists); k++) {
                json_t *l = json_object_get(status, ip_lists[k]);
                if (json_is_array(l) && json_array_insert_new(l, 0, json_pack("{s:s}", "$patch", "replace")) < 0)
                        return -ENOMEM;
        }
        /* the UID makes the patch a precondition: a new pod with the same name is not touched */
        patch = json_pack("{s:{s:s}, s:O}", "metadata", "uid", uid, "status", status);
        if (!patch)
                return -ENOMEM;
        *ret = TAKE_PTR(patch);
        return 0;
}

static void entry_send(struct status_entry *e) {
        _cleanup_free_ char *path = NULL;
        json_auto_t *patch = NULL;

        if (e->req || evtimer_pending(e->retry, NULL) || !e->wanted || e->gone)
                return;
        if (asprintf(&path, "/api/v1/namespaces/%s/pods/%s/status", e->ns, e->name) < 0)
                return;
        if (status_build_patch(e->uid, e->wanted, e->sent, &patch) < 0)
                return;
        if (kube_request(e->m->client, "PATCH", path, patch, "application/strategic-merge-patch+json", 0, on_patched, e,
                         &e->req) < 0)
                e->req = NULL;
        else {
                json_decref(e->inflight);
                e->inflight = json_incref(e->wanted);
        }
}

static void on_retry(evutil_socket_t fd, short what, void *userdata) {
        if (!entry_finished(userdata))
                entry_send(userdata);
}

static struct status_entry *entry_get(struct status_manager *m, const char *uid, const char *ns, const char *name) {
        struct status_entry *e = hashmap_get(&m->by_uid, uid);

        if (e)
                return e;
        e = calloc(1, sizeof(*e));
        if (!e || !(e->uid = strdup(uid)) || !(e->ns = strdup(ns)) || !(e->name = strdup(name)) ||
            !(e->retry = evtimer_new(m->base, on_retry, e)) || hashmap_put(&m->by_uid, e->uid, e) < 0) {
                entry_free(e);
                return NULL;
        }
        e->m = m;
        DLIST_PREPEND(m->entries, e);
        return e;
}

void status_manager_set(struct status_manager *m, const char *uid, const char *ns, const char *name, json_t *status) {
        json_auto_t *owned = status;
        struct status_entry *e;

        if (!m || !status)
                return;
        e = entry_get(m, uid, ns, name);
        if (!e)
                return;
        if (e->wanted && json_equal(e->wanted, status))
                return;
        json_decref(e->wanted);
        e->wanted = TAKE_PTR(owned);
        if (e->sent && json_equal(e->sent, e->wanted))
                return;
        entry_send(e);
}

int status_manager_set_final(struct status_manager *m, const char *uid, const char *ns, const char *name,
                             json_t *status, status_final_cb done, void *userdata) {
        json_auto_t *owned = status;
        struct status_entry *e;

        assert(m && uid && ns && name && status && done);
        e = entry_get(m, uid, ns, name);
        if (!e)
                return -ENOMEM;
        e->final_done = done;
        e->final_userdata = userdata;
        if (!e->wanted || !json_equal(e->wanted, status)) {
                json_decref(e->wanted);
                e->wanted = TAKE_PTR(owned);
        }
        /* sent now when it can be; else by the request in flight's end or the retry; when the API server
         * already has it (or has no such pod), the retry timer tells at once, outside this call */
        if (!e->sent || !json_equal(e->sent, e->wanted))
                entry_send(e);
        if (!e->req && !evtimer_pending(e->retry, NULL))
                evtimer_add_usec(e->retry, 0);
        return 0;
}

const json_t *status_manager_get(struct status_manager *m, const char *uid) {
        const struct status_entry *e = m ? hashmap_get(&m->by_uid, uid) : NULL;
        return e ? e->wanted : NULL;
}

bool status_manager_synced(struct status_manager *m, const char *uid) {
        const struct status_entry *e = m ? hashmap_get(&m->by_uid, uid) : NULL;

        if (!e || e->gone || !e->wanted)
                return true;
        return !e->req && e->sent && json_equal(e->sent, e->wanted);
}

static void entry_remove(struct status_entry *e) {
        struct status_manager *m = e->m;

        DLIST_REMOVE(m->entries, e);
        hashmap_remove(&m->by_uid, e->uid);
        entry_free(e);
}

void status_manager_forget(struct status_manager *m, const char *uid) {
        struct status_entry *e = m ? hashmap_get(&m->by_uid, uid) : NULL;

        if (!e || e->final_done)
                return;
        entry_remove(e);
}
