/* SPDX-License-Identifier: Apache-2.0 */
/* The merger (pkg/kubelet/config/config.go, podStorage): every source hands over its complete set (SET
 * semantics); we keep the last set per source and give the kubelet the union whenever it changes.
 *
 *  - A pod that a source delivers again unchanged (same UID, config hash, name and document) keeps the
 *    object delivered first, as upstream's checkAndUpdatePod keeps "existing": config.seen stays the time
 *    the pod was first seen and the kubelet sees the very same pointer.
 *  - Names must be unique across the union (filterInvalidPods): the first source — in the order the
 *    sources were added — wins, and within a source the first pod wins; the loser is logged and dropped.
 *    Duplicate UIDs are treated the same way.
 *  - The update callback runs from the event loop, never from inside pod_config_set_source_pods, and only
 *    when the merged set differs from the one delivered before. The first delivery waits until every
 *    source has delivered (or failed) once; with no source at all it is an empty set. Until that first
 *    call the kubelet does not know the desired set and must not remove anything it finds running. */
#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/strv.h"
#include "config/config-internal.h"

struct source_entry {
        char *name;
        struct pod_set pods; /* last good set */
        bool reported;       /* delivered a set, or failed, at least once */
        void *data;
        void (*free_fn)(void *data);
};

struct pod_config {
        struct event_base *base;
        char *node_name;
        config_update_cb cb;
        void *userdata;
        config_mirror_cb mirror_cb;
        void *mirror_userdata;

        struct source_entry *sources;
        size_t n_sources;

        struct event *deliver_event;
        struct pod_set delivered; /* references to what the callback saw last */
        bool delivered_once;
};

static void deliver(evutil_socket_t fd, short what, void *userdata);

int pod_config_new(struct event_base *base, const char *node_name, config_update_cb cb, void *userdata,
                   struct pod_config **ret) {
        struct pod_config *c;

        if (!base || isempty(node_name) || !cb || !ret)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->base = base;
        c->cb = cb;
        c->userdata = userdata;
        c->node_name = strdup(node_name);
        c->deliver_event = event_new(base, -1, 0, deliver, c);
        if (!c->node_name || !c->deliver_event) {
                pod_config_free(c);
                return -ENOMEM;
        }
        /* Sources are added right after this, before the loop runs. If none is, the loop's first iteration
         * delivers the (empty) desired set, so that the kubelet knows where it stands. */
        event_active(c->deliver_event, EV_TIMEOUT, 0);
        *ret = c;
        return 0;
}

struct pod_config *pod_config_free(struct pod_config *c) {
        if (!c)
                return NULL;
        /* sources first: they may hold events and transfers that refer to c */
        for (size_t i = 0; i < c->n_sources; i++)
                if (c->sources[i].free_fn)
                        c->sources[i].free_fn(c->sources[i].data);
        for (size_t i = 0; i < c->n_sources; i++) {
                free(c->sources[i].name);
                pod_set_done(&c->sources[i].pods);
        }
        free(c->sources);
        if (c->deliver_event)
                event_free(c->deliver_event);
        pod_set_done(&c->delivered);
        free(c->node_name);
        free(c);
        return NULL;
}

struct event_base *pod_config_get_event_base(struct pod_config *c) {
        return c->base;
}

const char *pod_config_get_node_name(struct pod_config *c) {
        return c->node_name;
}

bool pod_config_is_static(const struct pod *p) {
        return !streq_ptr(strmap_get(&p->annotations, ANNOTATION_CONFIG_SOURCE), CONFIG_SOURCE_API);
}

void pod_config_set_mirror_callback(struct pod_config *c, config_mirror_cb cb, void *userdata) {
        c->mirror_cb = cb;
        c->mirror_userdata = userdata;
}

void pod_config_report_mirror_pods(struct pod_config *c, const json_t *mirror_pods) {
        if (c->mirror_cb)
                c->mirror_cb(mirror_pods, c->mirror_userdata);
}

static struct source_entry *source_find(struct pod_config *c, const char *name) {
        for (size_t i = 0; i < c->n_sources; i++)
                if (streq(c->sources[i].name, name))
                        return &c->sources[i];
        return NULL;
}

static int source_add(struct pod_config *c, const char *name, struct source_entry **ret) {
        struct source_entry *n;
        char *copy;

        copy = strdup(name);
        if (!copy)
                return -ENOMEM;
        n = reallocarray(c->sources, c->n_sources + 1, sizeof(*n));
        if (!n) {
                free(copy);
                return -ENOMEM;
        }
        c->sources = n;
        c->sources[c->n_sources] = (struct source_entry) { .name = copy };
        *ret = &c->sources[c->n_sources++];
        return 0;
}

int pod_config_register_source(struct pod_config *c, const char *name, void *data, void (*free_fn)(void *data)) {
        struct source_entry *e;
        int r;

        if (!c || isempty(name))
                return -EINVAL;
        if (source_find(c, name))
                return -EEXIST;
        r = source_add(c, name, &e);
        if (r < 0)
                return r;
        e->data = data;
        e->free_fn = free_fn;
        return 0;
}

static void schedule_delivery(struct pod_config *c) {
        /* an active event runs once per loop iteration however often it is activated */
        event_active(c->deliver_event, EV_TIMEOUT, 0);
}

void *pod_config_source_data(struct pod_config *c, const char *name) {
        struct source_entry *e = c && name ? source_find(c, name) : NULL;

        return e ? e->data : NULL;
}

void pod_config_source_attempted(struct pod_config *c, const char *name) {
        struct source_entry *e;

        if (!c || !name)
                return;
        e = source_find(c, name);
        if (e && !e->reported) {
                e->reported = true;
                schedule_delivery(c);
        }
}

/* Compare two pods as the merger does: same UID, config hash, namespace, name and the same document. */
static bool pod_config_pods_equal(const struct pod *a, const struct pod *b) {
        if (a == b)
                return true;
        if (!a || !b)
                return false;
        if (!streq_ptr(a->uid, b->uid) || !streq_ptr(a->name, b->name) || !streq_ptr(a->namespace_, b->namespace_))
                return false;
        if (!streq_ptr(strmap_get(&a->annotations, ANNOTATION_CONFIG_HASH),
                       strmap_get(&b->annotations, ANNOTATION_CONFIG_HASH)) ||
            !streq_ptr(strmap_get(&a->annotations, ANNOTATION_CONFIG_SOURCE),
                       strmap_get(&b->annotations, ANNOTATION_CONFIG_SOURCE)))
                return false;
        /* a pod that sets metadata.uid keeps its UID (and hash) across edits: the document tells */
        if (!a->raw || !b->raw)
                return a->raw == b->raw;
        return json_equal(a->raw, b->raw);
}

int pod_config_set_source_pods(struct pod_config *c, const char *source, struct pod_set *pods) {
        struct pod_set next = {};
        struct source_entry *e;
        int r = 0;

        if (!c || isempty(source) || !pods) {
                if (pods)
                        pod_set_done(pods);
                return -EINVAL;
        }
        e = source_find(c, source);
        if (!e) {
                r = source_add(c, source, &e);
                if (r < 0) {
                        pod_set_done(pods);
                        return r;
                }
        }

        for (size_t i = 0; i < pods->n; i++) {
                struct pod *p = TAKE_PTR(pods->pods[i]);

                if (!p)
                        continue;
                if (isempty(p->uid) || isempty(p->name) || isempty(p->namespace_)) {
                        log_warning("Ignoring a pod without UID, name or namespace from source %s", source);
                        pod_free(p);
                        continue;
                }
                /* unchanged: keep the object delivered before */
                for (size_t j = 0; j < e->pods.n; j++)
                        if (e->pods.pods[j] && pod_config_pods_equal(e->pods.pods[j], p)) {
                                pod_free(p);
                                p = pod_ref(e->pods.pods[j]);
                                break;
                        }
                r = pod_set_add(&next, p);
                if (r < 0)
                        break;
        }
        pod_set_done(pods);
        if (r < 0) {
                pod_set_done(&next);
                return r;
        }

        pod_set_done(&e->pods);
        e->pods = next;
        e->reported = true;
        log_v(4, "Source %s delivered %zu pods", source, e->pods.n);
        schedule_delivery(c);
        return 0;
}

static bool sets_equal(const struct pod_set *a, const struct pod_set *b) {
        if (a->n != b->n)
                return false;
        for (size_t i = 0; i < a->n; i++)
                if (!pod_config_pods_equal(a->pods[i], b->pods[i]))
                        return false;
        return true;
}

/* The union, with duplicate names and UIDs dropped. Warnings go into *warnings (one line each) so that
 * they are logged only when the result changes, not on every rescan. */
static int merge(struct pod_config *c, struct pod_set *ret, char ***warnings) {
        struct pod_set m = {};
        int r;

        for (size_t s = 0; s < c->n_sources; s++) {
                const struct source_entry *e = &c->sources[s];

                for (size_t i = 0; i < e->pods.n; i++) {
                        struct pod *p = e->pods.pods[i];
                        const struct pod *dup = NULL;
                        const char *what = NULL;

                        for (size_t j = 0; j < m.n && !dup; j++) {
                                const struct pod *o = m.pods[j];
                                if (streq(o->name, p->name) && streq(o->namespace_, p->namespace_)) {
                                        dup = o;
                                        what = "name";
                                } else if (streq(o->uid, p->uid)) {
                                        dup = o;
                                        what = "UID";
                                }
                        }
                        if (dup) {
                                char *w;
                                if (asprintf(&w,
                                             "Pod %s/%s (UID %s) from source %s has a duplicate %s, already used by "
                                             "pod %s/%s from source %s; ignoring it",
                                             p->namespace_, p->name, p->uid, e->name, what, dup->namespace_, dup->name,
                                             strna(strmap_get(&dup->annotations, ANNOTATION_CONFIG_SOURCE))) < 0 ||
                                    strv_push(warnings, w) < 0) {
                                        pod_set_done(&m);
                                        return -ENOMEM;
                                }
                                continue;
                        }
                        r = pod_set_add(&m, pod_ref(p));
                        if (r < 0) {
                                pod_set_done(&m);
                                return r;
                        }
                }
        }
        *ret = m;
        return 0;
}

static void deliver(evutil_socket_t fd, short what, void *userdata) {
        struct pod_config *c = userdata;
        _cleanup_strv_free_ char **warnings = NULL;
        struct pod_set m = {};
        int r;

        for (size_t i = 0; i < c->n_sources; i++)
                if (!c->sources[i].reported) {
                        log_v(4, "Waiting for source %s before the first update", c->sources[i].name);
                        return;
                }

        r = merge(c, &m, &warnings);
        if (r < 0) {
                /* nothing delivered; the next change of any source retries */
                log_error("Cannot merge pod sources: %s", strerror(-r));
                return;
        }
        if (c->delivered_once && sets_equal(&m, &c->delivered)) {
                pod_set_done(&m);
                return;
        }
        for (char **w = warnings; w && *w; w++)
                log_warning("%s", *w);

        pod_set_done(&c->delivered);
        c->delivered = m;
        c->delivered_once = true;
        log_v(2, "Desired pods changed: %zu pods from %zu sources", c->delivered.n, c->n_sources);
        c->cb(&c->delivered, c->userdata);
}
