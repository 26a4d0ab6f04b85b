/* SPDX-License-Identifier: Apache-2.0 */
/* The event recorder: client-go's tools/record (event.go: recordToSink/recordEvent, the structured "Event
 * occurred" log line) on the kubelet's loop. It correlates each event at once (correlator.c) and queues the
 * resulting POST or PATCH. Deliberate differences from client-go: failed writes are not retried here (the API
 * client retries transport errors, 429 and 5xx), where client-go retries 12 times 10 s apart; the Event's
 * resourceVersion is not tracked (patches never carry it). */
#include "events/recorder.h"
#include "events/recorder-testing.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/json.h"
#include "basic/list.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "client/client.h"

char *event_log_line(const struct event_ref *ref, const char *type, const char *reason, const char *message) {
        _cleanup_free_ char *object = NULL, *buf = NULL;
        size_t len = 0, cap = 0;
        const struct {
                const char *label, *value;
        } fields[] = {
                { "Event occurred: object=", NULL },
                { " fieldPath=", ref->field_path },
                { " kind=", ref->kind },
                { " apiVersion=", ref->api_version },
                { " type=", type },
                { " reason=", reason },
                { " message=", message },
        };

        /* klog.KRef: "ns/name", or "name" for cluster-scoped objects */
        if (isempty(ref->namespace_))
                object = strdup(strempty(ref->name));
        else if (asprintf(&object, "%s/%s", ref->namespace_, strempty(ref->name)) < 0)
                object = NULL;
        if (!object)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                _cleanup_free_ char *q = go_quote(i == 0 ? object : fields[i].value);
                size_t l = strlen(fields[i].label), ql;

                if (!q)
                        return NULL;
                ql = strlen(q);
                if (len + l + ql + 1 > cap) {
                        char *n = realloc(buf, len + l + ql + 1);
                        if (!n)
                                return NULL;
                        buf = n;
                        cap = len + l + ql + 1;
                }
                memcpy(buf + len, fields[i].label, l);
                len += l;
                memcpy(buf + len, q, ql + 1);
                len += ql;
        }
        return TAKE_PTR(buf);
}

struct event_pending {
        struct event_recorder *r;
        struct event_pending *prev, *next; /* in r->queue or r->in_flight */
        bool in_flight;
        char *namespace_, *name;
        json_t *event; /* POST this (or after a PATCH's 404) */
        json_t *patch; /* PATCH this first, if set */
        struct kube_request *req;
};

struct pending_list {
        struct event_pending *head, *tail;
        size_t n;
};

struct event_recorder {
        struct event_base *base;
        struct kube_client *client;
        char *node_name;
        struct event_correlator *correlator;
        struct event *dispatch;
        struct pending_list queue, in_flight;
        int64_t last_nsec;
        struct event_recorder_stats stats;
};

static void list_append(struct pending_list *l, struct event_pending *p) {
        DLIST_APPEND_T(l->head, l->tail, p);
        l->n++;
}

static void list_remove(struct pending_list *l, struct event_pending *p) {
        DLIST_REMOVE_T(l->head, l->tail, p);
        l->n--;
}

static void pending_free(struct event_pending *p) {
        if (!p)
                return;
        kube_request_cancel(p->req);
        free(p->namespace_);
        free(p->name);
        json_decref(p->event);
        json_decref(p->patch);
        free(p);
}

/* unlink p from its list and free it */
static void pending_drop(struct event_pending *p) {
        list_remove(p->in_flight ? &p->r->in_flight : &p->r->queue, p);
        pending_free(p);
}

static struct event_pending *list_find(struct pending_list *l, const char *ns, const char *name) {
        for (struct event_pending *p = l->head; p; p = p->next)
                if (streq(p->name, name) && streq(p->namespace_, ns))
                        return p;
        return NULL;
}

/* names are unique per event: the clock never repeats a nanosecond */
static int64_t recorder_clock(void *userdata) {
        struct event_recorder *r = userdata;
        int64_t now = now_realtime_nsec();

        if (now <= r->last_nsec)
                now = r->last_nsec + 1;
        r->last_nsec = now;
        return now;
}

struct event_recorder *event_recorder_free(struct event_recorder *r) {
        if (!r)
                return NULL;
        while (r->in_flight.head)
                pending_drop(r->in_flight.head);
        while (r->queue.head)
                pending_drop(r->queue.head);
        if (r->dispatch)
                event_free(r->dispatch);
        event_correlator_free(r->correlator);
        free(r->node_name);
        free(r);
        return NULL;
}

static void on_dispatch(evutil_socket_t fd, short what, void *userdata);

int event_recorder_new(struct event_base *base, struct kube_client *client, const char *node_name,
                       struct event_recorder **ret) {
        struct event_recorder *r;
        int k;

        if (!base || isempty(node_name))
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->base = base;
        r->client = client;
        r->node_name = strdup(node_name);
        r->dispatch = event_new(base, -1, 0, on_dispatch, r);
        if (!r->node_name || !r->dispatch) {
                event_recorder_free(r);
                return -ENOMEM;
        }
        if (client) {
                struct event_correlator_options o = { .clock = recorder_clock, .clock_userdata = r };
                k = event_correlator_new(&o, &r->correlator);
                if (k < 0) {
                        event_recorder_free(r);
                        return k;
                }
        }
        *ret = r;
        return 0;
}

void event_recorder_get_stats(const struct event_recorder *r, struct event_recorder_stats *ret) {
        *ret = (struct event_recorder_stats) {};
        if (!r)
                return;
        *ret = r->stats;
        ret->queued = r->queue.n;
        ret->in_flight = r->in_flight.n;
}

static void schedule_dispatch(struct event_recorder *r) {
        if (r->queue.n > 0 && r->in_flight.n < EVENT_MAX_IN_FLIGHT)
                event_active(r->dispatch, EV_TIMEOUT, 0);
}

/* a short description for log lines (no secrets in events) */
static const char *describe(const struct event_pending *p, char *buf, size_t size) {
        snprintf(buf, size, "event=\"%s/%s\" involvedObject=\"%s\" reason=\"%s\"", p->namespace_, p->name,
                 json_string_at(p->event, "involvedObject", "name"), json_string_at(p->event, "reason", NULL));
        return buf;
}

static bool namespace_terminating(const json_t *status) {
        const json_t *causes = json_object_get(json_object_get(status, "details"), "causes");
        size_t i;
        json_t *c;

        json_array_foreach(causes, i, c)
                if (streq(json_string_at(c, "type", NULL), "NamespaceTerminating"))
                        return true;
        return false;
}

static void send_pending(struct event_pending *p);

static void on_response(const struct kube_response *resp, void *userdata) {
        struct event_pending *p = userdata;
        struct event_recorder *r = p->r;
        char desc[512];

        p->req = NULL;
        if (resp->r >= 0 && resp->status >= 200 && resp->status < 300) {
                r->stats.sent++;
                log_v(5, "Event recorded: %s count=%" JSON_INTEGER_FORMAT, describe(p, desc, sizeof(desc)),
                      json_integer_value(json_object_get(p->event, "count")));
                /* the server's state: name, count, firstTimestamp */
                event_correlator_update_state(r->correlator, resp->body ? resp->body : p->event);
                pending_drop(p);
        } else if (p->patch && resp->r >= 0 && resp->status == 404) {
                /* the event to update is gone (expired, deleted): create it anew, as recordEvent does */
                log_v(4, "Event to update not found, creating it: %s", describe(p, desc, sizeof(desc)));
                p->patch = (json_decref(p->patch), NULL);
                send_pending(p);
        } else {
                r->stats.failed++;
                if (resp->r < 0)
                        log_error("Unable to write event (will not retry!): %s err=\"%s\"",
                                  describe(p, desc, sizeof(desc)), resp->error);
                else if (streq(resp->reason, "AlreadyExists") || namespace_terminating(resp->body))
                        log_v(5, "Server rejected event (will not retry!): %s status=%ld err=\"%s\"",
                              describe(p, desc, sizeof(desc)), resp->status, resp->error);
                else
                        log_error("Server rejected event (will not retry!): %s status=%ld err=\"%s\"",
                                  describe(p, desc, sizeof(desc)), resp->status, resp->error);
                pending_drop(p);
        }
        schedule_dispatch(r);
}

/* Start p's request; p is in the in-flight list. On failure p is dropped. */
static void send_pending(struct event_pending *p) {
        _cleanup_free_ char *ns = NULL, *name = NULL, *path = NULL;
        struct event_recorder *r = p->r;
        char desc[512];
        int k;

        ns = kube_escape(p->namespace_);
        name = kube_escape(p->name);
        if (!ns || !name)
                k = -ENOMEM;
        else if (p->patch)
                k = asprintf(&path, "/api/v1/namespaces/%s/events/%s", ns, name) < 0 ? -ENOMEM : 0;
        else
                k = asprintf(&path, "/api/v1/namespaces/%s/events", ns) < 0 ? -ENOMEM : 0;
        if (k < 0)
                path = NULL;
        else if (p->patch)
                k = kube_request(r->client, "PATCH", path, p->patch, "application/strategic-merge-patch+json", 0,
                                 on_response, p, &p->req);
        else
                k = kube_request(r->client, "POST", path, p->event, NULL, 0, on_response, p, &p->req);
        if (k < 0) {
                p->req = NULL;
                r->stats.failed++;
                log_error("Unable to write event (will not retry!): %s err=\"%s\"", describe(p, desc, sizeof(desc)),
                          strerror(-k));
                pending_drop(p);
        }
}

static void on_dispatch(evutil_socket_t fd, short what, void *userdata) {
        struct event_recorder *r = userdata;
        struct event_pending *p, *next;

        for (p = r->queue.head; p && r->in_flight.n < EVENT_MAX_IN_FLIGHT; p = next) {
                next = p->next;
                /* one request per Event object at a time: a PATCH waits for the POST that creates it */
                if (list_find(&r->in_flight, p->namespace_, p->name))
                        continue;
                list_remove(&r->queue, p);
                p->in_flight = true;
                list_append(&r->in_flight, p);
                send_pending(p);
        }
}

static void enqueue(struct event_recorder *r, struct event_decision *d) {
        struct event_pending *p;

        p = list_find(&r->queue, d->namespace_, d->name);
        if (p) {
                /* an update of an Event object whose request is not sent yet: it carries this one too */
                json_decref(p->event);
                p->event = TAKE_PTR(d->event);
                if (p->patch) {
                        json_decref(p->patch);
                        p->patch = TAKE_PTR(d->patch);
                }
                /* else the queued POST now creates the object with this count, message and lastTimestamp */
                r->stats.coalesced++;
                return;
        }
        if (r->queue.n >= EVENT_QUEUE_MAX) {
                r->stats.queue_dropped++;
                log_error(
                        "Unable to record event: too many queued events, dropped event: event=\"%s/%s\" reason=\"%s\"",
                        d->namespace_, d->name, json_string_at(d->event, "reason", NULL));
                return;
        }
        p = calloc(1, sizeof(*p));
        if (!p) {
                r->stats.queue_dropped++;
                log_error("Unable to record event: out of memory");
                return;
        }
        p->r = r;
        p->namespace_ = TAKE_PTR(d->namespace_);
        p->name = TAKE_PTR(d->name);
        p->event = TAKE_PTR(d->event);
        p->patch = TAKE_PTR(d->patch);
        list_append(&r->queue, p);
        schedule_dispatch(r);
}

void event_recorder_eventf(struct event_recorder *r, const struct event_ref *ref, const char *type, const char *reason,
                           const char *fmt, ...) {
        _cleanup_free_ char *message = NULL, *line = NULL;
        struct event_decision d = {};
        struct event_input in;
        int k;

        if (!r)
                return;
        if (!ref || isempty(ref->kind) || isempty(ref->name)) {
                log_error("Could not construct reference, will not report event: reason=\"%s\"", strempty(reason));
                return;
        }
        if (!type || (!streq(type, EVENT_TYPE_NORMAL) && !streq(type, EVENT_TYPE_WARNING))) {
                log_error("Unsupported event type: eventType=\"%s\"", strempty(type));
                return;
        }
        if (VA_FORMAT(message, fmt) < 0) {
                log_error("Unable to record event: out of memory");
                return;
        }
        line = event_log_line(ref, type, strempty(reason), message);
        /* at -v 3, as upstream's StartStructuredLogging(3): an event is for the API (kubectl describe), not a log
         * line of every pod start at the -v 2 that installations run with */
        if (line)
                log_v(3, "%s", line);
        r->stats.recorded++;
        if (!r->client)
                return; /* standalone: logged only */

        in = (struct event_input) {
                .ref = ref,
                .component = EVENT_SOURCE_COMPONENT,
                .host = r->node_name,
                .type = type,
                .reason = strempty(reason),
                .message = message,
        };
        k = event_correlate(r->correlator, &in, &d);
        if (k < 0) {
                log_error("Event correlation failed: %s", strerror(-k));
                return;
        }
        if (d.action == EVENT_ACTION_DROP) {
                r->stats.spam_dropped++;
                log_v(5, "Event dropped by the spam filter: object=\"%s%s%s\" reason=\"%s\"", strempty(ref->namespace_),
                      isempty(ref->namespace_) ? "" : "/", ref->name, strempty(reason));
        } else
                enqueue(r, &d);
        event_decision_done(&d);
}

void event_recorder_set_client(struct event_recorder *r, struct kube_client *client) {
        if (!r)
                return;
        if (client && !r->correlator) {
                struct event_correlator_options o = { .clock = recorder_clock, .clock_userdata = r };
                if (event_correlator_new(&o, &r->correlator) < 0) {
                        log_error("out of memory: events are only logged");
                        return;
                }
        }
        r->client = client;
}
