/* SPDX-License-Identifier: Apache-2.0 */
/* The end of a pod worker's pass and of its pod: the pass's outcome (coalescing, back-off on errors, the next
 * wake-up), a terminated pod's final status and its DELETE from the API server, and the name a terminating
 * worker keeps busy. */

#include <string.h>

#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "kubelet/kubelet-internal.h"
#include "kubelet/mirror.h"
#include "kubelet/pod_sync.h"

#define WORKER_BACKOFF_MIN_USEC (1 * USEC_PER_SEC)
#define WORKER_BACKOFF_MAX_USEC (10 * USEC_PER_SEC)

bool kubelet_name_is_busy(struct kubelet *k, const struct pod_worker *w) {
        if (!w->full_name)
                return false;
        for (struct pod_worker *o = k->workers; o; o = o->next)
                if (o != w && !o->pod && o->full_name && streq(o->full_name, w->full_name))
                        return true;
        return false;
}

/* a DELETE in flight, owned by the kubelet so that shutdown cancels it and frees its name */
struct api_delete {
        struct kubelet *k;
        struct api_delete *next, *prev;
        struct kube_request *req;
        char *what; /* namespace/name, for the log */
        char *uid;
};

void kubelet_api_delete_free(struct api_delete *d) {
        if (!d)
                return;
        DLIST_REMOVE(d->k->deletes, d);
        kube_request_cancel(d->req);
        free(d->what);
        free(d->uid);
        free(d);
}

static void on_pod_deleted(const struct kube_response *resp, void *userdata) {
        struct api_delete *d = userdata;

        d->req = NULL;
        /* 404, or the UID precondition failed (another pod of that name now): the pod of that UID is gone */
        if (resp->r < 0 || (resp->status >= 300 && resp->status != 404 && !kube_response_uid_mismatch(resp))) {
                log_error("Failed to delete pod %s from the API server: %s", d->what, resp->error);
                /* the next reconcile gives the pod a worker again, whose end sends the DELETE again */
                for (size_t i = 0; d->k->api_deleted && d->k->api_deleted[i]; i++)
                        if (streq(d->k->api_deleted[i], d->uid)) {
                                strv_remove_at(d->k->api_deleted, i);
                                break;
                        }
        } else
                log_info("Pod deleted from the API server: pod=\"%s\"", d->what);
        kubelet_api_delete_free(d);
}

/* the pod is stopped: delete it with grace period 0 so that it leaves the API (status manager's
 * canBeDeleted → Delete with a UID precondition) */
static void delete_from_api(struct kubelet *k, const char *ns, const char *name, const char *uid) {
        _cleanup_free_ char *path = NULL;
        struct api_delete *d;
        json_auto_t *body = NULL;

        if (!k->client || !ns || !name)
                return;
        d = calloc(1, sizeof(*d));
        if (!d)
                return;
        d->k = k;
        DLIST_PREPEND(k->deletes, d);
        if (asprintf(&path, "/api/v1/namespaces/%s/pods/%s", ns, name) < 0 ||
            asprintf(&d->what, "%s/%s", ns, name) < 0) {
                d->what = NULL;
                kubelet_api_delete_free(d);
                return;
        }
        d->uid = strdup(uid);
        if (!d->uid || (!strv_contains(k->api_deleted, uid) && strv_extend(&k->api_deleted, uid) < 0)) {
                log_error("Failed to delete pod %s from the API server: out of memory", d->what);
                kubelet_api_delete_free(d);
                return;
        }
        body = json_pack("{s:s, s:s, s:i, s:{s:s}}", "kind", "DeleteOptions", "apiVersion", "v1", "gracePeriodSeconds",
                         0, "preconditions", "uid", uid);
        if (kube_request(k->client, "DELETE", path, body, NULL, 0, on_pod_deleted, d, &d->req) < 0) {
                log_error("Failed to delete pod %s from the API server: out of memory", d->what);
                kubelet_api_delete_free(d);
        }
}

/* a deleted API pod's final status is in the API server (or the pod is gone): it may be deleted now */
static void on_final_status(const char *uid, void *userdata) {
        struct kubelet *k = userdata;
        _cleanup_free_ char *ns = NULL, *name = NULL;
        const char *slash;

        for (size_t i = 0; k->final_statuses && k->final_statuses[i]; i++) {
                /* "uid namespace/name" */
                const char *e = k->final_statuses[i], *sp = strchr(e, ' ');
                if (!sp || (size_t) (sp - e) != strlen(uid) || strncmp(e, uid, sp - e) != 0)
                        continue;
                slash = strchr(sp + 1, '/');
                if (slash) {
                        ns = strndup(sp + 1, slash - sp - 1);
                        name = strdup(slash + 1);
                }
                strv_remove_at(k->final_statuses, i);
                break;
        }
        if (k->stopping || !ns || !name)
                return;
        delete_from_api(k, ns, name, uid);
}

/* TerminatePod, then the DELETE once the API server has the final status (canBeDeleted: a terminal phase in the
 * API server first); without a status manager, the DELETE at once */
static void finish_api_pod(struct kubelet *k, struct pod_worker *w) {
        _cleanup_free_ char *entry = NULL;
        json_t *status = NULL, *final = NULL;
        const json_t *base;
        const struct pod *p = kubelet_status_pod(w);

        if (!k->status || !p || !w->api_ns || !w->api_name) {
                delete_from_api(k, w->api_ns, w->api_name, w->uid);
                return;
        }
        base = status_manager_get(k->status, w->uid);
        if (!base && kubelet_worker_status_json(k, w, &status) >= 0)
                base = status;
        if (!base || status_pod_terminate(base, p->spec.n_init_containers > 0, false, &final) < 0 ||
            asprintf(&entry, "%s %s/%s", w->uid, w->api_ns, w->api_name) < 0 ||
            strv_extend(&k->final_statuses, entry) < 0 ||
            (!strv_contains(k->api_deleted, w->uid) && strv_extend(&k->api_deleted, w->uid) < 0)) {
                json_decref(status);
                json_decref(final);
                delete_from_api(k, w->api_ns, w->api_name, w->uid);
                return;
        }
        json_decref(status);
        if (status_manager_set_final(k->status, w->uid, w->api_ns, w->api_name, final, on_final_status, k) < 0)
                delete_from_api(k, w->api_ns, w->api_name, w->uid);
}

static ssize_t ended_index(const struct kubelet *k, const char *uid) {
        for (size_t i = 0; i < k->n_ended; i++)
                if (streq(k->ended[i].uid, uid))
                        return (ssize_t) i;
        return -1;
}

static void ended_remove_at(struct kubelet *k, size_t i) {
        free(k->ended[i].uid);
        memmove(&k->ended[i], &k->ended[i + 1], (k->n_ended - i - 1) * sizeof(k->ended[0]));
        k->n_ended--;
}

/* The listing the kubelet reconciles with may be older than the worker's end: it may still show what the pod's
 * last pass removed, or not yet show the pod at all (a pod started and stopped between two relists), so that a
 * leftover would be found as "not desired" and given a worker again. The pod is remembered until a relist begun
 * after its end, and, if the runtime refused to remove some of it, while that listing still shows it. */
static void ended_add(struct kubelet *k, const char *uid, bool left_to_gc) {
        ssize_t i = ended_index(k, uid);
        struct ended_pod *n;
        char *u;

        if (i >= 0) {
                k->ended[i].mono_usec = now_usec();
                k->ended[i].left_to_gc = k->ended[i].left_to_gc || left_to_gc;
                return;
        }
        u = strdup(uid);
        n = u ? reallocarray(k->ended, k->n_ended + 1, sizeof(*n)) : NULL;
        if (!n) {
                free(u);
                log_error("pod %s: out of memory remembering its end; a stale listing may find it again", uid);
                return;
        }
        k->ended = n;
        k->ended[k->n_ended++] = (struct ended_pod) { .uid = u, .mono_usec = now_usec(), .left_to_gc = left_to_gc };
}

bool kubelet_pod_ended(const struct kubelet *k, const char *uid) {
        return ended_index(k, uid) >= 0;
}

void kubelet_ended_prune(struct kubelet *k) {
        for (size_t i = 0; i < k->n_ended;) {
                const struct ended_pod *e = &k->ended[i];
                bool fresh = pleg_listed_after(k->pleg, e->mono_usec);

                if (kubelet_pod_desired(k, e->uid) || (fresh && (!e->left_to_gc || !pleg_has_pod(k->pleg, e->uid))))
                        ended_remove_at(k, i);
                else
                        i++;
        }
}

void kubelet_ended_free(struct kubelet *k) {
        for (size_t i = 0; i < k->n_ended; i++)
                free(k->ended[i].uid);
        k->ended = mfree(k->ended);
        k->n_ended = 0;
}

/* a terminating worker finished: wake the workers waiting for its full name, drop it */
static void kubelet_worker_terminated(struct kubelet *k, struct pod_worker *w) {
        _cleanup_free_ char *name = w->full_name ? strdup(w->full_name) : NULL;

        if (w->leftovers > 0) {
                /* podResourcesAreReclaimed: its containers are stopped; what the runtime would not remove stays for
                 * the container GC, and no worker is made for it again while it lasts */
                log_info("pod %s (%s) terminated; %zu of its dead containers and sandboxes that the runtime refused "
                         "to remove are left to the container garbage collector",
                         strna(w->full_name), w->uid, w->leftovers);
        } else
                log_info("pod %s (%s) terminated and removed from the runtime", strna(w->full_name), w->uid);
        ended_add(k, w->uid, w->leftovers > 0);
        if (w->deleting)
                finish_api_pod(k, w);
        (void) kubelet_allocation_set(k->allocation, w->uid, NULL); /* its allocation goes with it */
        kubelet_worker_free(w);
        kubelet_sync_mirror_pods(k);       /* a static pod's mirror pod goes now */
        kubelet_retry_deferred_resizes(k); /* room was freed */
        if (!name)
                return;
        for (struct pod_worker *o = k->workers; o; o = o->next)
                if (o->pod && o->full_name && streq(o->full_name, name))
                        kubelet_worker_request_sync(o);
}

void kubelet_worker_sync_done(struct pod_worker *w, bool did_work, uint64_t wake_usec, bool error, bool gone) {
        struct kubelet *k = w->k;

        w->busy = false;
        if (k->stopping)
                return;
        if (!w->pod && gone && !error) {
                /* its volumes go first (the pod's resources are reclaimed before the API forgets it); the volume
                 * manager tells when they are gone (on_volumes_gone) */
                w->runtime_gone = true;
                volmgr_pod_remove(k->volumes, w->uid);
                if (volmgr_pod_has_volumes(k->volumes, w->uid)) {
                        log_v(3, "pod %s: waiting for its volumes to be unmounted", w->uid);
                        kubelet_worker_schedule(w, WORKER_BACKOFF_MAX_USEC);
                        return;
                }
                kubelet_worker_terminated(k, w);
                return;
        }
        if (error) {
                uint64_t d = WORKER_BACKOFF_MIN_USEC << MIN(w->failures, 4u);
                w->failures++;
                kubelet_worker_schedule(w, MIN(d, WORKER_BACKOFF_MAX_USEC));
                w->pending = false;
                return;
        }
        w->failures = 0;
        if (wake_usec) {
                uint64_t now = now_usec();
                kubelet_worker_schedule(w, wake_usec > now ? wake_usec - now : 0);
        }
        if (did_work || w->pending)
                kubelet_worker_request_sync(w);
}
