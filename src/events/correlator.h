/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The event correlator (client-go tools/record events_cache.go EventCorrelator: spam filter + aggregator +
 * event logger) and the v1 Event objects it produces. Pure: nothing here touches the loop or the network; the
 * recorder (recorder.h) sends what it decides. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EVENT_TYPE_NORMAL "Normal"
#define EVENT_TYPE_WARNING "Warning"
#define EVENT_SOURCE_COMPONENT "kubelet"

/* events_cache.go's constants */
#define EVENT_LRU_MAX_ENTRIES 4096           /* maxLruCacheEntries */
#define EVENT_AGGREGATE_MAX_EVENTS 10        /* defaultAggregateMaxEvents */
#define EVENT_AGGREGATE_INTERVAL_SEC 600     /* defaultAggregateIntervalInSeconds */
#define EVENT_SPAM_BURST 25                  /* defaultSpamBurst */
#define EVENT_SPAM_QPS ((float) (1. / 300.)) /* defaultSpamQPS (a float32 upstream) */
#define EVENT_AGGREGATE_MESSAGE_PREFIX "(combined from similar events): "

/* The involvedObject (a v1 ObjectReference). All strings are borrowed. */
struct event_ref {
        const char *kind;                     /* "Pod", "Node" */
        const char *namespace_;               /* "" (or NULL) for cluster-scoped objects (Node) */
        const char *name, *uid, *api_version; /* api_version "v1" */
        const char *field_path;               /* "spec.containers{app}" or NULL */
        const char *resource_version;         /* may be NULL */
};

struct event_correlator_options {
        size_t lru_size;           /* each of the three caches; 0 = EVENT_LRU_MAX_ENTRIES */
        unsigned burst;            /* 0 = EVENT_SPAM_BURST */
        float qps;                 /* 0 = EVENT_SPAM_QPS */
        unsigned max_events;       /* 0 = EVENT_AGGREGATE_MAX_EVENTS */
        unsigned max_interval_sec; /* 0 = EVENT_AGGREGATE_INTERVAL_SEC */
        /* The clock: unix time in nanoseconds. NULL = CLOCK_REALTIME. It stamps events (names, timestamps) and
         * drives the aggregation window and the token buckets. */
        int64_t (*clock)(void *userdata);
        void *clock_userdata;
};

/* An incoming event, as the recorder makes it (all borrowed). */
struct event_input {
        const struct event_ref *ref;
        const char *component, *host; /* the source; also reportingComponent / reportingInstance */
        const char *type, *reason, *message;
};

enum event_action {
        EVENT_ACTION_DROP,   /* spam filtered: do nothing */
        EVENT_ACTION_CREATE, /* POST event */
        EVENT_ACTION_PATCH,  /* PATCH patch to namespace_/name; on 404 POST event */
};

struct event_decision {
        enum event_action action;
        char *namespace_, *name; /* of the Event object (not for DROP) */
        unsigned count;          /* its count */
        bool aggregated;         /* the event was folded into an aggregate event */
        json_t *event;           /* the whole v1 Event (CREATE and PATCH) */
        json_t *patch;           /* PATCH: the strategic merge patch {"count", "lastTimestamp", "message"} */
};
void event_decision_done(struct event_decision *d); /* accepts NULL */

struct event_correlator;
int event_correlator_new(const struct event_correlator_options *o, struct event_correlator **ret); /* o may be NULL */
struct event_correlator *event_correlator_free(struct event_correlator *c);                        /* accepts NULL */

/* EventCorrelate: aggregate, observe (count repeats), then filter spam. ret is always initialized; -EINVAL for
 * a missing field, -ENOMEM. */
int event_correlate(struct event_correlator *c, const struct event_input *in, struct event_decision *ret);
/* UpdateState: the Event the API server returned (name, count, firstTimestamp) for the event it describes.
 * An observation with a higher count than the server's (events correlated while the request was in flight)
 * is kept. */
void event_correlator_update_state(struct event_correlator *c, const json_t *event);

/* ---- helpers ---- */
/* The Event object's name: "<name>.<unix nanoseconds in lowercase hex>". NULL on OOM. */
char *event_object_name(const char *involved_name, int64_t unix_nsec);
