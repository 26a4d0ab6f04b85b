/* SPDX-License-Identifier: Apache-2.0 */
/* The apiserver source (pkg/kubelet/config/apiserver.go, a reflector): LIST the pods bound to this node,
 * then WATCH from the list's resourceVersion, resuming from the last version seen (bookmarks included). A
 * 410 Gone — at the start of a watch or as an ERROR event — means the version is too old: list again. A
 * watch that ends normally (timeoutSeconds) is restarted; one that fails or goes quiet (no byte for a while,
 * a dead connection) is restarted after a back-off. Every change delivers the complete set (SET semantics).
 * A pod that does not decode is logged and left out; the others are not disturbed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "client/client.h"
#include "config/config-internal.h"

#define WATCH_IDLE_TIMEOUT_USEC (120 * USEC_PER_SEC) /* bookmarks come every minute; nothing for 2 min is dead */
#define RETRY_MIN_USEC (800 * 1000)
#define RETRY_MAX_USEC (30 * USEC_PER_SEC)

struct api_pod {
        char *key; /* namespace/name */
        json_t *obj;
};

struct api_source {
        struct pod_config *config;
        struct event_base *base;
        struct kube_client *client;
        char *node;
        char *selector; /* fieldSelector=spec.nodeName%3D<node> */

        struct kube_request *req;
        struct event *timer;
        struct event *deliver_ev; /* coalesces a burst of watch events into one delivery */
        uint64_t retry_usec;
        char *resource_version;
        bool listed; /* delivered a set at least once */

        struct api_pod *pods;
        size_t n_pods;
};

static void api_source_free(void *data) {
        struct api_source *s = data;
        if (!s)
                return;
        kube_request_cancel(s->req);
        if (s->timer)
                event_free(s->timer);
        if (s->deliver_ev)
                event_free(s->deliver_ev);
        for (size_t i = 0; i < s->n_pods; i++) {
                free(s->pods[i].key);
                json_decref(s->pods[i].obj);
        }
        free(s->pods);
        free(s->node);
        free(s->selector);
        free(s->resource_version);
        free(s);
}

static void start_list(struct api_source *s);
static void start_watch(struct api_source *s);

static void retry_later(struct api_source *s) {
        s->retry_usec = s->retry_usec ? MIN(s->retry_usec * 2, RETRY_MAX_USEC) : RETRY_MIN_USEC;
        evtimer_add_usec(s->timer, s->retry_usec);
}

static void on_timer(evutil_socket_t fd, short what, void *userdata) {
        struct api_source *s = userdata;
        if (s->resource_version)
                start_watch(s);
        else
                start_list(s);
}

static char *pod_key(const json_t *obj) {
        const json_t *meta = json_object_get(obj, "metadata");
        char *k = NULL;
        if (asprintf(&k, "%s/%s", strempty(json_string_value(json_object_get(meta, "namespace"))),
                     strempty(json_string_value(json_object_get(meta, "name")))) < 0)
                return NULL;
        return k;
}

static void set_resource_version(struct api_source *s, const json_t *obj) {
        const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
        if (!isempty(rv))
                (void) free_and_strdup(&s->resource_version, rv);
}

static void store_put(struct api_source *s, json_t *obj) {
        _cleanup_free_ char *key = pod_key(obj);
        struct api_pod *n;

        if (!key)
                return;
        for (size_t i = 0; i < s->n_pods; i++)
                if (streq(s->pods[i].key, key)) {
                        json_decref(s->pods[i].obj);
                        s->pods[i].obj = json_incref(obj);
                        return;
                }
        n = reallocarray(s->pods, s->n_pods + 1, sizeof(*n));
        if (!n)
                return;
        s->pods = n;
        n[s->n_pods++] = (struct api_pod) { .key = TAKE_PTR(key), .obj = json_incref(obj) };
}

static void store_remove(struct api_source *s, const json_t *obj) {
        _cleanup_free_ char *key = pod_key(obj);
        for (size_t i = 0; key && i < s->n_pods; i++)
                if (streq(s->pods[i].key, key)) {
                        free(s->pods[i].key);
                        json_decref(s->pods[i].obj);
                        s->pods[i] = s->pods[--s->n_pods];
                        return;
                }
}

static void store_clear(struct api_source *s) {
        for (size_t i = 0; i < s->n_pods; i++) {
                free(s->pods[i].key);
                json_decref(s->pods[i].obj);
        }
        s->n_pods = 0;
}

/* decode every stored pod; a bad one is logged and skipped */
static void deliver(struct api_source *s) {
        struct pod_set set = {};
        json_auto_t *mirrors = json_array();

        for (size_t i = 0; i < s->n_pods; i++) {
                struct field_errors errs = {};
                struct pod *p = NULL;
                int r;

                if (json_object_get(json_object_get(json_object_get(s->pods[i].obj, "metadata"), "annotations"),
                                    ANNOTATION_CONFIG_MIRROR)) {
                        /* a mirror pod: the static pod runs, not this copy */
                        json_array_append(mirrors, s->pods[i].obj);
                        continue;
                }
                r = pod_decode(s->pods[i].obj, &p, &errs);

                if (r < 0 || !p) {
                        _cleanup_free_ char *why = field_errors_to_string(&errs);
                        log_error("api source: pod %s cannot be used: %s", s->pods[i].key, strna(why));
                        field_errors_done(&errs);
                        pod_free(p);
                        continue;
                }
                field_errors_done(&errs);
                if (!pod_uid_is_valid(p->uid)) {
                        /* the UID names directories: never one that walks out of them */
                        log_error("api source: pod %s cannot be used: metadata.uid: Invalid value: \"%s\": %s",
                                  s->pods[i].key, strna(p->uid), POD_UID_INVALID_MSG);
                        pod_free(p);
                        continue;
                }
                if (pod_apply_defaults_checked(p) < 0 ||
                    strmap_set(&p->annotations, ANNOTATION_CONFIG_SOURCE, CONFIG_SOURCE_API) < 0) {
                        pod_free(p);
                        continue;
                }
                if (pod_set_add(&set, p) < 0)
                        break;
        }
        s->listed = true;
        event_del(s->deliver_ev);
        if (pod_config_set_source_pods(s->config, CONFIG_SOURCE_API, &set) < 0)
                log_error("api source: cannot deliver the pods");
        pod_set_done(&set);
        if (mirrors)
                pod_config_report_mirror_pods(s->config, mirrors);
}

/* ---------------------------------------------------------------- watch */

static void on_watch_event(const char *type, json_t *object, void *userdata) {
        struct api_source *s = userdata;

        if (streq(type, "ERROR")) {
                long code = (long) json_integer_value(json_object_get(object, "code"));
                log_info("api source: watch error %ld: %s", code,
                         strna(json_string_value(json_object_get(object, "message"))));
                if (code == 410) { /* too old: relist */
                        free(s->resource_version);
                        s->resource_version = NULL;
                }
                return;
        }
        set_resource_version(s, object);
        if (streq(type, "BOOKMARK"))
                return;
        if (streq(type, "ADDED") || streq(type, "MODIFIED"))
                store_put(s, object);
        else if (streq(type, "DELETED"))
                store_remove(s, object);
        else
                return;
        s->retry_usec = 0;
        event_active(s->deliver_ev, EV_TIMEOUT, 0);
}

static void on_deliver(evutil_socket_t fd, short what, void *userdata) {
        deliver(userdata);
}

static void on_watch_done(int r, long status, const char *error, void *userdata) {
        struct api_source *s = userdata;

        s->req = NULL;
        if (status == 410) {
                log_info("api source: watch: resourceVersion too old, listing again");
                free(s->resource_version);
                s->resource_version = NULL;
                start_list(s);
                return;
        }
        if (r == 0 && status == 200) {
                /* the server ended the watch (timeoutSeconds): resume at once */
                if (s->resource_version)
                        start_watch(s);
                else
                        start_list(s);
                return;
        }
        log_warning("api source: watch ended: %s%s", r == -ETIMEDOUT ? "no data (dead connection?) " : "",
                    strempty(error));
        retry_later(s);
}

static void start_watch(struct api_source *s) {
        _cleanup_free_ char *path = NULL, *rv = kube_escape(strempty(s->resource_version));
        /* a random timeout spreads watch restarts, as the reflector does (5–10 min) */
        unsigned timeout = 300 + (unsigned) (now_usec() % 300);

        if (!rv || asprintf(&path,
                            "/api/v1/pods?%s&resourceVersion=%s&allowWatchBookmarks=true&watch=true"
                            "&timeoutSeconds=%u",
                            s->selector, rv, timeout) < 0) {
                retry_later(s);
                return;
        }
        if (kube_watch(s->client, path, WATCH_IDLE_TIMEOUT_USEC, on_watch_event, on_watch_done, s, &s->req) < 0) {
                s->req = NULL;
                retry_later(s);
        }
}

/* ---------------------------------------------------------------- list */

static void on_list(const struct kube_response *resp, void *userdata) {
        struct api_source *s = userdata;
        size_t i;
        json_t *item;

        s->req = NULL;
        if (resp->r < 0 || resp->status != 200 || !json_is_object(resp->body)) {
                log_error("api source: failed to list pods: %s", resp->error);
                if (!s->listed)
                        pod_config_source_attempted(s->config, CONFIG_SOURCE_API);
                retry_later(s);
                return;
        }
        store_clear(s);
        json_array_foreach(json_object_get(resp->body, "items"), i, item)
                store_put(s, item);
        free(s->resource_version);
        s->resource_version = NULL;
        set_resource_version(s, resp->body);
        s->retry_usec = 0;
        log_v(2, "api source: listed %zu pods at resourceVersion %s", s->n_pods, strna(s->resource_version));
        deliver(s);
        start_watch(s);
}

static void start_list(struct api_source *s) {
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "/api/v1/pods?%s", s->selector) < 0 ||
            kube_request(s->client, "GET", path, NULL, NULL, 0, on_list, s, &s->req) < 0) {
                s->req = NULL;
                retry_later(s);
        }
}

int pod_config_add_api_source(struct pod_config *c, struct kube_client *client) {
        const char *node = pod_config_get_node_name(c);
        _cleanup_free_ char *sel = NULL, *esc = NULL;
        struct api_source *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->config = c;
        s->base = pod_config_get_event_base(c);
        s->client = client;
        s->node = strdup(node);
        if (asprintf(&sel, "spec.nodeName=%s", node) < 0 || !(esc = kube_escape(sel)) ||
            asprintf(&s->selector, "fieldSelector=%s", esc) < 0 || !s->node) {
                api_source_free(s);
                return -ENOMEM;
        }
        s->timer = evtimer_new(s->base, on_timer, s);
        s->deliver_ev = evtimer_new(s->base, on_deliver, s);
        if (!s->timer || !s->deliver_ev) {
                api_source_free(s);
                return -ENOMEM;
        }
        r = pod_config_register_source(c, CONFIG_SOURCE_API, s, api_source_free);
        if (r < 0) {
                api_source_free(s);
                return r;
        }
        if (client)
                event_active(s->timer, EV_TIMEOUT, 0);
        return 0;
}

int pod_config_start_api_source(struct pod_config *c, struct kube_client *client) {
        struct api_source *s = pod_config_source_data(c, CONFIG_SOURCE_API);

        if (!s || !client)
                return -EINVAL;
        if (s->client)
                return -EBUSY;
        s->client = client;
        event_active(s->timer, EV_TIMEOUT, 0);
        return 0;
}
