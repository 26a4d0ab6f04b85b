/* SPDX-License-Identifier: Apache-2.0 */
/* pods/v1alpha1 on the kubelet's loop: pods encoded at once from the provider's JSON, watches as held gRPC
 * calls fed by a coalescing flush. */
#include "podsapi/server.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "apis/k8sproto.h"
#include "basic/list.h"
#include "basic/error.h"
#include "basic/hash.h"
#include "basic/hashmap.h"
#include "basic/json.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "grpc/client.h"
#include "grpc/server.h"
#include "pods.pb-c.h"

struct watcher {
        struct podsapi_server *s;
        struct grpc_server_call *call;
        struct watcher *prev, *next;
};

/* a pod the watchers may hear of: what they were last told (the hash of its encoding), and whether a change is
 * waiting for the flush */
struct entry {
        char *uid;
        uint64_t hash;
        bool sent, pending;
};

struct podsapi_server {
        struct podsapi_provider p;
        struct grpc_server *server;
        int pod_message; /* k8s.io.api.core.v1.Pod in the schema */
        struct event *flush;
        bool flush_armed;
        struct watcher *watchers;
        size_t n_watchers;
        struct hashmap entries;       /* uid → struct entry; kept only while someone watches */
        struct grpc_rate_limit limit; /* of List and Get */
};

static struct entry *entry_free(struct entry *e) {
        if (e) {
                free(e->uid);
                free(e);
        }
        return NULL;
}

static void entries_clear(struct podsapi_server *s) {
        const char *key;
        void *value;
        size_t i = 0;

        while (hashmap_iterate(&s->entries, &i, &key, &value))
                entry_free(value);
        hashmap_clear(&s->entries);
}

static struct entry *entry_get(struct podsapi_server *s, const char *uid) {
        struct entry *e = hashmap_get(&s->entries, uid);

        if (e)
                return e;
        e = calloc(1, sizeof(*e));
        if (!e || !(e->uid = strdup(uid)) || hashmap_put(&s->entries, e->uid, e) < 0)
                return entry_free(e);
        return e;
}

static int cmp_uid(const void *a, const void *b) {
        const char *x = json_string_value(json_object_get(json_object_get(*(json_t *const *) a, "metadata"), "uid"));
        const char *y = json_string_value(json_object_get(json_object_get(*(json_t *const *) b, "metadata"), "uid"));
        return strcmp(strempty(x), strempty(y));
}

/* the provider's pods, sorted by UID as upstream lists them */
static int sorted_pods(struct podsapi_server *s, json_t ***ret, size_t *ret_n, json_t **ret_array) {
        json_auto_t *array = NULL;
        _cleanup_free_ json_t **v = NULL;
        size_t n;
        int r;

        r = s->p.pods_json(s->p.userdata, &array);
        if (r < 0)
                return r;
        n = json_array_size(array);
        v = calloc(MAX(n, (size_t) 1), sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                v[i] = json_array_get(array, i);
        qsort(v, n, sizeof(*v), cmp_uid);
        *ret = TAKE_PTR(v);
        *ret_n = n;
        *ret_array = TAKE_PTR(array);
        return 0;
}

static const char *pod_uid(const json_t *pod) {
        return json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
}

/* ---------------------------------------------------------------- watches */

static void watcher_unlink(struct watcher *w) {
        struct podsapi_server *s = w->s;

        DLIST_REMOVE(s->watchers, w);
        s->n_watchers--;
        free(w);
        if (s->n_watchers == 0)
                entries_clear(s); /* nobody to tell: changes are not tracked until the next watch */
}

static void on_watch_closed(struct grpc_server_call *call, void *userdata) {
        struct watcher *w = userdata;
        log_v(3, "pods API: a watch client disconnected");
        watcher_unlink(w);
}

/* an event to every watcher; those that cannot take it are dropped as upstream drops a full channel */
static void broadcast(struct podsapi_server *s, V1alpha1__EventType type, const uint8_t *pod, size_t len) {
        V1alpha1__WatchPodsEvent ev = V1ALPHA1__WATCH_PODS_EVENT__INIT;
        struct watcher *next;

        ev.type = type;
        ev.pod.data = (uint8_t *) pod;
        ev.pod.len = len;
        for (struct watcher *w = s->watchers; w; w = next) {
                next = w->next;
                if (grpc_server_stream_send(w->call, &ev.base) < 0) {
                        log_info("pods API: watch client channel is full, dropping client");
                        grpc_server_stream_end(w->call, GRPC_RESOURCE_EXHAUSTED, "watch client channel closed");
                        watcher_unlink(w);
                }
        }
}

static int encode(struct podsapi_server *s, const json_t *pod, uint8_t **ret, size_t *ret_len,
                  struct ck_error **ret_error) {
        return k8sproto_encode(pod, s->pod_message, ret, ret_len, ret_error);
}

/* the changes reported since the last flush, one event per pod whose encoding changed */
static void flush_pending(struct podsapi_server *s) {
        _cleanup_free_ struct entry **pending = NULL;
        size_t n = 0, i = 0;
        const char *key;
        void *value;

        s->flush_armed = false;
        if (s->n_watchers == 0)
                return;
        pending = calloc(MAX(hashmap_size(&s->entries), (size_t) 1), sizeof(*pending));
        if (!pending)
                return;
        while (hashmap_iterate(&s->entries, &i, &key, &value))
                if (((struct entry *) value)->pending)
                        pending[n++] = value;
        for (size_t j = 0; j < n && s->n_watchers > 0; j++) {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                _cleanup_free_ uint8_t *data = NULL;
                json_auto_t *pod = NULL;
                struct entry *e = pending[j];
                uint64_t h;
                size_t len;

                e->pending = false;
                if (s->p.pod_json(s->p.userdata, e->uid, &pod) < 0)
                        continue; /* gone: its removal tells the watchers */
                if (encode(s, pod, &data, &len, &err) < 0) {
                        log_error("pods API: error marshalling watch event pod %s: %s", e->uid, ck_error_message(err));
                        continue;
                }
                h = fnv1a64(UINT64_C(0xcbf29ce484222325), data, len);
                if (e->sent && e->hash == h)
                        continue;
                broadcast(s, e->sent ? V1ALPHA1__EVENT_TYPE__MODIFIED : V1ALPHA1__EVENT_TYPE__ADDED, data, len);
                if (s->n_watchers == 0)
                        return; /* the last watcher was dropped: the entries are gone */
                e->sent = true;
                e->hash = h;
        }
}

static void on_flush(evutil_socket_t fd, short what, void *userdata) {
        flush_pending(userdata);
}

void podsapi_pod_changed(struct podsapi_server *s, const char *uid) {
        struct entry *e;

        if (!s || s->n_watchers == 0 || isempty(uid))
                return;
        e = entry_get(s, uid);
        if (!e)
                return;
        e->pending = true;
        if (!s->flush_armed && evtimer_add_usec(s->flush, 0) == 0)
                s->flush_armed = true;
}

void podsapi_pod_removed(struct podsapi_server *s, const char *uid, const char *namespace_, const char *name) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        json_auto_t *pod = NULL;
        struct entry *e;
        size_t len;

        if (!s || s->n_watchers == 0 || isempty(uid))
                return;
        e = hashmap_remove(&s->entries, uid);
        if (!e)
                return;
        if (e->sent) {
                pod = json_pack("{s:{s:s, s:s, s:s}}", "metadata", "name", strempty(name), "namespace",
                                strempty(namespace_), "uid", uid);
                if (pod && encode(s, pod, &data, &len, &err) == 0)
                        broadcast(s, V1ALPHA1__EVENT_TYPE__DELETED, data, len);
        }
        entry_free(e);
}

static void on_watch(struct grpc_server_call *call, const ProtobufCMessage *req, void *userdata) {
        struct podsapi_server *s = userdata;
        _cleanup_free_ json_t **pods = NULL;
        json_auto_t *array = NULL;
        struct watcher *w;
        size_t n;

        log_v(3, "pods API: WatchPods called");
        if (!s->p.ready(s->p.userdata)) {
                grpc_server_reply_error(call, GRPC_FAILED_PRECONDITION, "Kubelet is initializing");
                return;
        }
        if (s->n_watchers >= PODSAPI_MAX_WATCHERS) {
                grpc_server_reply_error(call, GRPC_RESOURCE_EXHAUSTED, "too many watch clients (%d)",
                                        PODSAPI_MAX_WATCHERS);
                return;
        }
        /* the watchers already there first hear of what changed before this one's list */
        flush_pending(s);
        if (sorted_pods(s, &pods, &n, &array) < 0) {
                grpc_server_reply_error(call, GRPC_INTERNAL, "cannot list the pods");
                return;
        }
        w = calloc(1, sizeof(*w));
        if (!w) {
                grpc_server_reply_error(call, GRPC_RESOURCE_EXHAUSTED, "out of memory");
                return;
        }
        w->s = s;
        w->call = call;
        DLIST_PREPEND(s->watchers, w);
        s->n_watchers++;
        grpc_server_call_hold(call, on_watch_closed, w);
        for (size_t i = 0; i < n; i++) {
                V1alpha1__WatchPodsEvent ev = V1ALPHA1__WATCH_PODS_EVENT__INIT;
                _cleanup_ck_error_ struct ck_error *err = NULL;
                _cleanup_free_ uint8_t *data = NULL;
                struct entry *e;
                size_t len;
                int r;

                if (encode(s, pods[i], &data, &len, &err) < 0) {
                        log_error("pods API: error marshalling initial watch event pod: %s", ck_error_message(err));
                        grpc_server_stream_end(call, GRPC_INTERNAL, "error marshalling initial watch event pod: %s",
                                               ck_error_message(err));
                        watcher_unlink(w);
                        return;
                }
                ev.type = V1ALPHA1__EVENT_TYPE__ADDED;
                ev.pod.data = data;
                ev.pod.len = len;
                r = grpc_server_stream_send(call, &ev.base);
                if (r < 0) {
                        grpc_server_stream_end(call, GRPC_RESOURCE_EXHAUSTED, "watch client channel closed");
                        watcher_unlink(w);
                        return;
                }
                /* what this watcher has now is what the others have, or newer: the next change of it goes to all */
                e = pod_uid(pods[i]) ? entry_get(s, pod_uid(pods[i])) : NULL;
                if (e) {
                        e->sent = true;
                        e->hash = fnv1a64(UINT64_C(0xcbf29ce484222325), data, len);
                }
        }
        V1alpha1__WatchPodsEvent done = V1ALPHA1__WATCH_PODS_EVENT__INIT;
        done.type = V1ALPHA1__EVENT_TYPE__INITIAL_SYNC_COMPLETE;
        if (grpc_server_stream_send(call, &done.base) < 0) {
                grpc_server_stream_end(call, GRPC_RESOURCE_EXHAUSTED, "watch client channel closed");
                watcher_unlink(w);
        }
}

/* ---------------------------------------------------------------- List and Get */

static bool admit(struct podsapi_server *s, struct grpc_server_call *call) {
        if (!grpc_rate_limit_allow(&s->limit)) {
                grpc_server_reply_error(call, GRPC_RESOURCE_EXHAUSTED, "rejected by rate limit");
                return false;
        }
        if (!s->p.ready(s->p.userdata)) {
                grpc_server_reply_error(call, GRPC_FAILED_PRECONDITION, "Kubelet is initializing");
                return false;
        }
        return true;
}

static void on_list(struct grpc_server_call *call, const ProtobufCMessage *req, void *userdata) {
        struct podsapi_server *s = userdata;
        V1alpha1__ListPodsResponse resp = V1ALPHA1__LIST_PODS_RESPONSE__INIT;
        _cleanup_free_ json_t **pods = NULL;
        _cleanup_free_ ProtobufCBinaryData *bins = NULL;
        json_auto_t *array = NULL;
        size_t n, done = 0;

        log_v(3, "pods API: ListPods called");
        if (!admit(s, call))
                return;
        if (sorted_pods(s, &pods, &n, &array) < 0 || !(bins = calloc(MAX(n, (size_t) 1), sizeof(*bins)))) {
                grpc_server_reply_error(call, GRPC_INTERNAL, "cannot list the pods");
                return;
        }
        for (; done < n; done++) {
                _cleanup_ck_error_ struct ck_error *err = NULL;
                if (encode(s, pods[done], &bins[done].data, &bins[done].len, &err) < 0) {
                        grpc_server_reply_error(call, GRPC_INTERNAL, "failed to marshal pod: %s",
                                                ck_error_message(err));
                        break;
                }
        }
        if (done == n) {
                resp.pods = bins;
                resp.n_pods = n;
                grpc_server_reply(call, &resp.base);
        }
        for (size_t i = 0; i < done; i++)
                free(bins[i].data);
}

static void on_get(struct grpc_server_call *call, const ProtobufCMessage *msg, void *userdata) {
        const V1alpha1__GetPodRequest *req = (const V1alpha1__GetPodRequest *) msg;
        struct podsapi_server *s = userdata;
        V1alpha1__GetPodResponse resp = V1ALPHA1__GET_POD_RESPONSE__INIT;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ uint8_t *data = NULL;
        json_auto_t *pod = NULL;
        size_t len;

        log_v(3, "pods API: GetPod called for %s", strempty(req->poduid));
        if (!admit(s, call))
                return;
        if (isempty(req->poduid) || s->p.pod_json(s->p.userdata, req->poduid, &pod) < 0) {
                grpc_server_reply_error(call, GRPC_NOT_FOUND, "pod with UID %s not found", strempty(req->poduid));
                return;
        }
        if (encode(s, pod, &data, &len, &err) < 0) {
                grpc_server_reply_error(call, GRPC_INTERNAL, "failed to marshal pod: %s", ck_error_message(err));
                return;
        }
        resp.pod.data = data;
        resp.pod.len = len;
        grpc_server_reply(call, &resp.base);
}

static const struct grpc_server_method methods[] = {
        { "/v1alpha1.Pods/WatchPods", &v1alpha1__watch_pods_request__descriptor, on_watch },
        { "/v1alpha1.Pods/ListPods", &v1alpha1__list_pods_request__descriptor, on_list },
        { "/v1alpha1.Pods/GetPod", &v1alpha1__get_pod_request__descriptor, on_get },
};

/* ---------------------------------------------------------------- the server */

int podsapi_server_new(struct event_base *base, const char *socket_path, const struct podsapi_provider *p,
                       struct podsapi_server **ret) {
        struct podsapi_server *s;
        int r;

        assert(base && socket_path && p && p->pods_json && p->pod_json && p->ready && ret);
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->p = *p;
        grpc_rate_limit_init(&s->limit, PODSAPI_QPS, PODSAPI_BURST);
        s->pod_message = k8sproto_message_find("k8s.io.api.core.v1.Pod");
        assert(s->pod_message >= 0);
        s->flush = evtimer_new(base, on_flush, s);
        if (!s->flush) {
                podsapi_server_free(s);
                return -ENOMEM;
        }
        r = grpc_server_new(base, socket_path, methods, ELEMENTSOF(methods), s, &s->server);
        if (r < 0) {
                podsapi_server_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

struct podsapi_server *podsapi_server_free(struct podsapi_server *s) {
        if (!s)
                return NULL;
        /* the watches end with the server's connections (their close callbacks unlink them) */
        s->server = grpc_server_free(s->server);
        assert(s->n_watchers == 0);
        entries_clear(s);
        hashmap_done(&s->entries);
        if (s->flush)
                event_free(s->flush);
        free(s);
        return NULL;
}
