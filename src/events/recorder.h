/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet's event recorder (client-go tools/record: EventRecorder + EventBroadcaster sink + the
 * EventCorrelator of events_cache.go): core/v1 Events about pods and the node are POSTed to
 * /api/v1/namespaces/<ns>/events; repeats of an event already sent are PATCHed (count, lastTimestamp,
 * message) instead, similar events are aggregated and a spam filter limits each object's events.
 *
 * Everything runs on the kubelet's loop; event_recorder_eventf() never blocks: it logs the event, correlates
 * it at once and queues the resulting request (at most EVENT_QUEUE_MAX pending, then events are dropped with
 * a log line). At most EVENT_MAX_IN_FLIGHT requests are in flight, at most one per Event object; a queued
 * update of an Event object not yet sent absorbs later updates of the same object. Failed requests are
 * logged and dropped (the API client retries transport errors, 429 and 5xx itself). */

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_client;

#define EVENT_QUEUE_MAX 1000    /* client-go maxQueuedEvents */
#define EVENT_MAX_IN_FLIGHT 4

#define EVENT_TYPE_NORMAL "Normal"
#define EVENT_TYPE_WARNING "Warning"
#define EVENT_SOURCE_COMPONENT "kubelet"

/* The involvedObject (a v1 ObjectReference). All strings are borrowed. */
struct event_ref {
        const char *kind;             /* "Pod", "Node" */
        const char *namespace_;       /* "" (or NULL) for cluster-scoped objects (Node) */
        const char *name, *uid, *api_version; /* api_version "v1" */
        const char *field_path;       /* "spec.containers{app}" or NULL */
        const char *resource_version; /* may be NULL */
};

struct event_recorder;

/* client may be NULL (standalone: events are only logged). The source is {component: "kubelet", host:
 * node_name}, reportingComponent/reportingInstance the same. */
int event_recorder_new(struct event_base *base, struct kube_client *client, const char *node_name,
                       struct event_recorder **ret);
/* Requests in flight are cancelled, queued ones dropped. Free it before the client. Accepts NULL; returns NULL. */
struct event_recorder *event_recorder_free(struct event_recorder *r);

/* type "Normal" or "Warning" (others are refused with a log line, as client-go's ValidateEventType); reason
 * "Pulling" etc.; the message is printf-style. Logged at --v=2 like upstream's "Event occurred" line. Never
 * blocks; accepts r == NULL (does nothing). */
void event_recorder_eventf(struct event_recorder *r, const struct event_ref *ref, const char *type, const char *reason,
                           const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Counters, for tests and metrics. */
struct event_recorder_stats {
        uint64_t recorded;    /* accepted by eventf (valid type) */
        uint64_t spam_dropped;/* dropped by the spam filter */
        uint64_t queue_dropped; /* dropped because the queue was full (or out of memory) */
        uint64_t coalesced;   /* absorbed by a queued update of the same Event object */
        uint64_t sent;        /* requests that succeeded (2xx) */
        uint64_t failed;      /* requests that failed (logged) */
        size_t queued, in_flight;
};
void event_recorder_get_stats(const struct event_recorder *r, struct event_recorder_stats *ret);

/* ================================================================ pure logic (exposed for unit tests) ====
 * Nothing below touches the loop or the network. */

/* events_cache.go's constants */
#define EVENT_LRU_MAX_ENTRIES 4096                      /* maxLruCacheEntries */
#define EVENT_AGGREGATE_MAX_EVENTS 10                   /* defaultAggregateMaxEvents */
#define EVENT_AGGREGATE_INTERVAL_SEC 600                /* defaultAggregateIntervalInSeconds */
#define EVENT_SPAM_BURST 25                             /* defaultSpamBurst */
#define EVENT_SPAM_QPS ((float) (1. / 300.))            /* defaultSpamQPS (a float32 upstream) */
#define EVENT_AGGREGATE_MESSAGE_PREFIX "(combined from similar events): "

/* ---- a bounded LRU map: string key -> owned value (groupcache/lru) ---- */
struct event_lru;
/* capacity > 0; free_value (may be NULL) frees values on removal, eviction and event_lru_free(). */
int event_lru_new(size_t capacity, void (*free_value)(void *value), struct event_lru **ret);
struct event_lru *event_lru_free(struct event_lru *l); /* accepts NULL */
/* The value or NULL; a hit makes the entry the most recently used. */
void *event_lru_get(struct event_lru *l, const char *key);
/* Insert or replace (the old value is freed unless it is value itself); the entry becomes the most
 * recently used; when over capacity the least recently used entry is evicted. value is taken, even on
 * failure (-ENOMEM). */
int event_lru_add(struct event_lru *l, const char *key, void *value);
size_t event_lru_size(const struct event_lru *l);
size_t event_lru_capacity(const struct event_lru *l);

/* ---- the correlator (EventCorrelator: spam filter + aggregator + event logger) ---- */
struct event_correlator_options {
        size_t lru_size;                /* each of the three caches; 0 = EVENT_LRU_MAX_ENTRIES */
        unsigned burst;                 /* 0 = EVENT_SPAM_BURST */
        float qps;                      /* 0 = EVENT_SPAM_QPS */
        unsigned max_events;            /* 0 = EVENT_AGGREGATE_MAX_EVENTS */
        unsigned max_interval_sec;      /* 0 = EVENT_AGGREGATE_INTERVAL_SEC */
        /* The clock: unix time in nanoseconds. NULL = CLOCK_REALTIME. It stamps events (names, timestamps) and
         * drives the aggregation window and the token buckets. */
        int64_t (*clock)(void *userdata);
        void *clock_userdata;
};

/* An incoming event, as the recorder makes it (all borrowed). */
struct event_input {
        const struct event_ref *ref;
        const char *component, *host;   /* the source; also reportingComponent / reportingInstance */
        const char *type, *reason, *message;
};

enum event_action {
        EVENT_ACTION_DROP,              /* spam filtered: do nothing */
        EVENT_ACTION_CREATE,            /* POST event */
        EVENT_ACTION_PATCH,             /* PATCH patch to namespace_/name; on 404 POST event */
};

struct event_decision {
        enum event_action action;
        char *namespace_, *name;        /* of the Event object (not for DROP) */
        unsigned count;                 /* its count */
        bool aggregated;                /* the event was folded into an aggregate event */
        json_t *event;                  /* the whole v1 Event (CREATE and PATCH) */
        json_t *patch;                  /* PATCH: the strategic merge patch {"count", "lastTimestamp", "message"} */
};
void event_decision_done(struct event_decision *d); /* accepts NULL */

struct event_correlator;
int event_correlator_new(const struct event_correlator_options *o, struct event_correlator **ret); /* o may be NULL */
struct event_correlator *event_correlator_free(struct event_correlator *c); /* accepts NULL */

/* EventCorrelate: aggregate, observe (count repeats), then filter spam. ret is always initialized; -EINVAL for
 * a missing field, -ENOMEM. */
int event_correlate(struct event_correlator *c, const struct event_input *in, struct event_decision *ret);
/* UpdateState: the Event the API server returned (name, count, firstTimestamp) for the event it describes.
 * An observation with a higher count than the server's (events correlated while the request was in flight)
 * is kept. */
void event_correlator_update_state(struct event_correlator *c, const json_t *event);
/* Entries held by the three caches together (each at most lru_size). */
size_t event_correlator_entries(const struct event_correlator *c);

/* ---- helpers ---- */
/* The Event object's name: "<name>.<unix nanoseconds in lowercase hex>". NULL on OOM. */
char *event_object_name(const char *involved_name, int64_t unix_nsec);
/* The v1 Event (count 1, firstTimestamp = lastTimestamp = t). namespace: "" becomes "default". NULL on OOM. */
json_t *event_build(const struct event_input *in, const char *namespace_, const char *name, int64_t unix_nsec);
/* The log line: Event occurred: object="ns/name" fieldPath="..." kind="Pod" apiVersion="v1" type="Normal"
 * reason="Pulled" message="..." (values quoted like Go's %q). NULL on OOM. */
char *event_log_line(const struct event_ref *ref, const char *type, const char *reason, const char *message);
