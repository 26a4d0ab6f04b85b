/* SPDX-License-Identifier: Apache-2.0 */
/* client-go's EventCorrelator (events_cache.go: EventSourceObjectSpamFilter, EventAggregator with
 * EventAggregatorByReasonFunc / EventAggregatorByReasonMessageFunc, eventLogger) and the v1 Event objects it
 * decides about (event.go makeEvent). Pure: an injectable clock, no I/O. Deliberate differences from client-go:
 *  - cache keys join their fields with a separator (client-go concatenates them without one);
 *  - an aggregate group keeps 64-bit hashes of the messages it has seen, not the messages, and drops the
 *    oldest one where client-go's PopAny drops an arbitrary one. */
#include "events/correlator.h"
#include "events/correlator-testing.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "basic/hash.h"
#include "basic/json.h"
#include "basic/time.h"
#include "events/lru.h"

#define KEY_SEP "\x1f"
#define DEFAULT_NAMESPACE "default" /* metav1.NamespaceDefault, for events about cluster-scoped objects */

static const char *ref_namespace(const struct event_ref *ref) {
        return strempty(ref->namespace_);
}

/* ---------------------------------------------------------------- event objects */

char *event_object_name(const char *involved_name, int64_t unix_nsec) {
        char *s;

        /* fmt.Sprintf("%v.%x", ref.Name, t.UnixNano()) */
        if (unix_nsec < 0) {
                if (asprintf(&s, "%s.-%" PRIx64, involved_name, (uint64_t) -unix_nsec) < 0)
                        return NULL;
        } else if (asprintf(&s, "%s.%" PRIx64, involved_name, (uint64_t) unix_nsec) < 0)
                return NULL;
        return s;
}

static json_t *time_json(int64_t unix_nsec) {
        char buf[64];
        /* metav1.Time marshals to RFC 3339 in seconds, UTC */
        return json_string(format_rfc3339((uint64_t) MAX(unix_nsec, 0) / 1000, buf, sizeof(buf)));
}

/* set key to a string unless it is empty (Go's omitempty); false on OOM */
static bool set_nonempty(json_t *o, const char *key, const char *value) {
        if (isempty(value))
                return true;
        return json_object_set_new(o, key, json_string(value)) == 0;
}

static json_t *involved_object_json(const struct event_ref *ref) {
        json_auto_t *o = json_object();

        if (!o)
                return NULL;
        if (!set_nonempty(o, "kind", ref->kind) || !set_nonempty(o, "namespace", ref->namespace_) ||
            !set_nonempty(o, "name", ref->name) || !set_nonempty(o, "uid", ref->uid) ||
            !set_nonempty(o, "apiVersion", ref->api_version) ||
            !set_nonempty(o, "resourceVersion", ref->resource_version) ||
            !set_nonempty(o, "fieldPath", ref->field_path))
                return NULL;
        return TAKE_PTR(o);
}

/* A v1 Event. reporting: set reportingComponent/reportingInstance from the source (recorder.generateEvent
 * does; the EventAggregator's aggregate copy does not, so they marshal as ""). */
static json_t *build_event(const struct event_input *in, const char *namespace_, const char *name, const char *message,
                           int64_t first_nsec, int64_t last_nsec, unsigned count, bool reporting) {
        json_auto_t *e = NULL, *meta = NULL, *involved = NULL, *source = NULL;

        e = json_object();
        meta = json_object();
        source = json_object();
        involved = involved_object_json(in->ref);
        if (!e || !meta || !source || !involved)
                return NULL;
        if (json_object_set_new(meta, "name", json_string(name)) < 0 ||
            json_object_set_new(meta, "namespace", json_string(isempty(namespace_) ? DEFAULT_NAMESPACE : namespace_)) <
                    0)
                return NULL;
        if (!set_nonempty(source, "component", in->component) || !set_nonempty(source, "host", in->host))
                return NULL;
        if (json_object_set_new(e, "kind", json_string("Event")) < 0 ||
            json_object_set_new(e, "apiVersion", json_string("v1")) < 0 ||
            json_object_set_new(e, "metadata", TAKE_PTR(meta)) < 0 ||
            json_object_set_new(e, "involvedObject", TAKE_PTR(involved)) < 0 ||
            !set_nonempty(e, "reason", in->reason) || !set_nonempty(e, "message", message) ||
            json_object_set_new(e, "source", TAKE_PTR(source)) < 0 ||
            json_object_set_new(e, "firstTimestamp", time_json(first_nsec)) < 0 ||
            json_object_set_new(e, "lastTimestamp", time_json(last_nsec)) < 0 ||
            json_object_set_new(e, "count", json_integer(count)) < 0 || !set_nonempty(e, "type", in->type) ||
            json_object_set_new(e, "eventTime", json_null()) < 0 ||
            json_object_set_new(e, "reportingComponent", json_string(reporting ? strempty(in->component) : "")) < 0 ||
            json_object_set_new(e, "reportingInstance", json_string(reporting ? strempty(in->host) : "")) < 0)
                return NULL;
        return TAKE_PTR(e);
}

/* ---------------------------------------------------------------- the correlator */

struct spam_record { /* a token bucket (flowcontrol's, over golang.org/x/time/rate) */
        double tokens;
        int64_t last_nsec;
};

struct aggregate_record {
        uint64_t *local_keys; /* hashes of the messages seen in the group, at most max_events */
        unsigned n_local_keys;
        int64_t last_nsec; /* the last time a similar event was seen */
};

struct log_record { /* eventLog */
        unsigned count;
        int64_t first_nsec;
        char *name;
};

struct event_correlator {
        struct event_lru *spam, *aggregate, *log;
        unsigned burst, max_events;
        double qps;
        int64_t max_interval_nsec;
        int64_t (*clock)(void *userdata);
        void *clock_userdata;
};

static void aggregate_record_free(void *p) {
        struct aggregate_record *a = p;
        free(a->local_keys);
        free(a);
}

static void log_record_free(void *p) {
        struct log_record *l = p;
        free(l->name);
        free(l);
}

static int64_t realtime_nsec(void *userdata) {
        return now_realtime_nsec();
}

struct event_correlator *event_correlator_free(struct event_correlator *c) {
        if (!c)
                return NULL;
        event_lru_free(c->spam);
        event_lru_free(c->aggregate);
        event_lru_free(c->log);
        free(c);
        return NULL;
}

int event_correlator_new(const struct event_correlator_options *o, struct event_correlator **ret) {
        static const struct event_correlator_options defaults = {};
        struct event_correlator *c;
        size_t size;
        int r;

        if (!o)
                o = &defaults;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        size = o->lru_size ? o->lru_size : EVENT_LRU_MAX_ENTRIES;
        c->burst = o->burst ? o->burst : EVENT_SPAM_BURST;
        c->qps = o->qps > 0 ? (double) o->qps : (double) EVENT_SPAM_QPS;
        c->max_events = o->max_events ? o->max_events : EVENT_AGGREGATE_MAX_EVENTS;
        c->max_interval_nsec = (int64_t) (o->max_interval_sec ? o->max_interval_sec : EVENT_AGGREGATE_INTERVAL_SEC) *
                               NSEC_PER_SEC;
        c->clock = o->clock ? o->clock : realtime_nsec;
        c->clock_userdata = o->clock_userdata;
        if ((r = event_lru_new(size, free, &c->spam)) < 0 ||
            (r = event_lru_new(size, aggregate_record_free, &c->aggregate)) < 0 ||
            (r = event_lru_new(size, log_record_free, &c->log)) < 0) {
                event_correlator_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

size_t event_correlator_entries(const struct event_correlator *c) {
        return c ? event_lru_size(c->spam) + event_lru_size(c->aggregate) + event_lru_size(c->log) : 0;
}

void event_decision_done(struct event_decision *d) {
        if (!d)
                return;
        free(d->namespace_);
        free(d->name);
        json_decref(d->event);
        json_decref(d->patch);
        *d = (struct event_decision) {};
}

/* getEventKey: source, involvedObject (with fieldPath), type, reason, message */
static char *event_key(const char *component, const char *host, const char *kind, const char *ns, const char *name,
                       const char *field_path, const char *uid, const char *api_version, const char *type,
                       const char *reason, const char *message) {
        char *s;
        if (asprintf(&s,
                     "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP
                     "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s",
                     strempty(component), strempty(host), strempty(kind), strempty(ns), strempty(name),
                     strempty(field_path), strempty(uid), strempty(api_version), strempty(type), strempty(reason),
                     strempty(message)) < 0)
                return NULL;
        return s;
}

/* EventAggregatorByReasonFunc's aggregate key: source, involvedObject (no fieldPath), type, reason,
 * reportingController, reportingInstance; its local key is the message */
static char *aggregate_key(const struct event_input *in) {
        const struct event_ref *ref = in->ref;
        char *s;
        if (asprintf(&s,
                     "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP
                     "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s",
                     strempty(in->component), strempty(in->host), strempty(ref->kind), ref_namespace(ref),
                     strempty(ref->name), strempty(ref->uid), strempty(ref->api_version), strempty(in->type),
                     strempty(in->reason), strempty(in->component), strempty(in->host)) < 0)
                return NULL;
        return s;
}

/* getSpamKey: source and involvedObject (no fieldPath) */
static char *spam_key(const struct event_input *in) {
        const struct event_ref *ref = in->ref;
        char *s;
        if (asprintf(&s, "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s",
                     strempty(in->component), strempty(in->host), strempty(ref->kind), ref_namespace(ref),
                     strempty(ref->name), strempty(ref->uid), strempty(ref->api_version)) < 0)
                return NULL;
        return s;
}

/* EventAggregate: true when the event is folded into the group's aggregate event */
static int aggregate(struct event_correlator *c, const char *key, const char *message, int64_t now, bool *ret) {
        struct aggregate_record *a = event_lru_get(c->aggregate, key);
        uint64_t local = fnv1a64(FNV1A64_INIT, strempty(message), strlen(strempty(message)));
        bool found = false;
        int r;

        if (!a) {
                a = calloc(1, sizeof(*a));
                if (!a || !(a->local_keys = calloc(c->max_events, sizeof(uint64_t)))) {
                        free(a);
                        return -ENOMEM;
                }
                r = event_lru_add(c->aggregate, key, a);
                if (r < 0)
                        return r;
        } else if (now - a->last_nsec > c->max_interval_nsec)
                a->n_local_keys = 0; /* the previous record is too old: start afresh */
        for (unsigned i = 0; i < a->n_local_keys; i++)
                if (a->local_keys[i] == local)
                        found = true;
        if (!found)
                a->local_keys[a->n_local_keys++] = local; /* n_local_keys < max_events holds between calls */
        a->last_nsec = now;
        if (a->n_local_keys < c->max_events) {
                *ret = false;
                return 0;
        }
        /* do not grow the set any larger than max: drop one (the oldest) */
        memmove(a->local_keys, a->local_keys + 1, (a->n_local_keys - 1) * sizeof(uint64_t));
        a->n_local_keys--;
        *ret = true;
        return 0;
}

static bool spam_filter(struct event_correlator *c, const char *key, int64_t now) {
        struct spam_record *s = event_lru_get(c->spam, key);

        if (!s) {
                s = calloc(1, sizeof(*s));
                if (!s)
                        return false; /* no memory for the bucket: let the event pass */
                s->tokens = c->burst;
                s->last_nsec = now;
                if (event_lru_add(c->spam, key, s) < 0)
                        return false;
        }
        /* TryAccept: refill for the time elapsed (none if the clock went back), capped at burst */
        if (now > s->last_nsec) {
                s->tokens += (double) (now - s->last_nsec) / (double) NSEC_PER_SEC * c->qps;
                if (s->tokens > c->burst)
                        s->tokens = c->burst;
        }
        s->last_nsec = now;
        if (s->tokens < 1)
                return true;
        s->tokens -= 1;
        return false;
}

int event_correlate(struct event_correlator *c, const struct event_input *in, struct event_decision *ret) {
        _cleanup_free_ char *ekey = NULL, *akey = NULL, *skey = NULL, *aggregate_message = NULL;
        struct event_decision d = {};
        const struct event_ref *ref;
        struct log_record *obs;
        const char *ns, *key, *message;
        int64_t now, first;
        bool aggregated;
        int r;

        *ret = (struct event_decision) {};
        if (!c || !in || !in->ref || isempty(in->ref->name) || isempty(in->ref->kind) || isempty(in->type) ||
            !in->reason)
                return -EINVAL;
        ref = in->ref;
        now = c->clock(c->clock_userdata);
        ns = isempty(ref->namespace_) ? DEFAULT_NAMESPACE : ref->namespace_;

        ekey = event_key(in->component, in->host, ref->kind, ref_namespace(ref), ref->name, ref->field_path, ref->uid,
                         ref->api_version, in->type, in->reason, in->message);
        akey = aggregate_key(in);
        skey = spam_key(in);
        if (!ekey || !akey || !skey)
                return -ENOMEM;

        /* the aggregator */
        r = aggregate(c, akey, in->message, now, &aggregated);
        if (r < 0)
                return r;
        if (aggregated) {
                if (asprintf(&aggregate_message, EVENT_AGGREGATE_MESSAGE_PREFIX "%s", strempty(in->message)) < 0)
                        return -ENOMEM;
                key = akey;
                message = aggregate_message;
        } else {
                key = ekey;
                message = in->message;
        }

        /* the logger: a repeat of an event already recorded becomes a patch of it */
        d.namespace_ = strdup(ns);
        if (!d.namespace_)
                return -ENOMEM;
        obs = event_lru_get(c->log, key);
        if (obs && obs->count > 0) {
                d.action = EVENT_ACTION_PATCH;
                d.name = strdup(obs->name);
                d.count = obs->count + 1;
                first = obs->first_nsec;
                obs->count = d.count;
        } else {
                d.action = EVENT_ACTION_CREATE;
                d.name = event_object_name(ref->name, now);
                d.count = 1;
                first = now;
                if (d.name) {
                        obs = calloc(1, sizeof(*obs));
                        if (obs) {
                                obs->count = 1;
                                obs->first_nsec = now;
                                obs->name = strdup(d.name);
                        }
                        if (!obs || !obs->name) {
                                if (obs)
                                        log_record_free(obs);
                                event_decision_done(&d);
                                return -ENOMEM;
                        }
                        r = event_lru_add(c->log, key, obs);
                        if (r < 0) {
                                event_decision_done(&d);
                                return r;
                        }
                }
        }
        if (!d.name) {
                event_decision_done(&d);
                return -ENOMEM;
        }
        d.aggregated = aggregated;

        /* the spam filter, last: filtered events still count above (as upstream) */
        if (spam_filter(c, skey, now)) {
                event_decision_done(&d);
                ret->action = EVENT_ACTION_DROP;
                ret->aggregated = aggregated;
                return 0;
        }

        d.event = build_event(in, ns, d.name, message, first, now, d.count, !aggregated);
        if (!d.event) {
                event_decision_done(&d);
                return -ENOMEM;
        }
        if (d.action == EVENT_ACTION_PATCH) {
                /* CreateTwoWayMergePatch against the same event with count 0, lastTimestamp 0 and no message */
                d.patch = json_object();
                if (!d.patch || json_object_set_new(d.patch, "count", json_integer(d.count)) < 0 ||
                    json_object_set_new(d.patch, "lastTimestamp", time_json(now)) < 0 ||
                    !set_nonempty(d.patch, "message", message)) {
                        event_decision_done(&d);
                        return -ENOMEM;
                }
        }
        *ret = d;
        return 0;
}

void event_correlator_update_state(struct event_correlator *c, const json_t *event) {
        _cleanup_free_ char *key = NULL;
        struct log_record *obs, *n;
        const char *name, *first;
        json_int_t count;
        int64_t first_nsec = 0;

        if (!c || !json_is_object(event))
                return;
        name = json_string_at(event, "metadata", "name");
        count = json_integer_value(json_object_get(event, "count"));
        first = json_string_at(event, "firstTimestamp", NULL);
        if (isempty(name) || count < 0 || count > UINT32_MAX)
                return;
        if (!isempty(first) && parse_rfc3339(first, &first_nsec) < 0)
                first_nsec = 0;
        key = event_key(json_string_at(event, "source", "component"), json_string_at(event, "source", "host"),
                        json_string_at(event, "involvedObject", "kind"),
                        json_string_at(event, "involvedObject", "namespace"),
                        json_string_at(event, "involvedObject", "name"),
                        json_string_at(event, "involvedObject", "fieldPath"),
                        json_string_at(event, "involvedObject", "uid"),
                        json_string_at(event, "involvedObject", "apiVersion"), json_string_at(event, "type", NULL),
                        json_string_at(event, "reason", NULL), json_string_at(event, "message", NULL));
        if (!key)
                return;
        obs = event_lru_get(c->log, key);
        if (obs && obs->count > (unsigned) count)
                return; /* we have correlated more occurrences since this request was made */
        n = calloc(1, sizeof(*n));
        if (!n || !(n->name = strdup(name))) {
                free(n);
                return;
        }
        n->count = (unsigned) count;
        n->first_nsec = first_nsec;
        (void) event_lru_add(c->log, key, n);
}
