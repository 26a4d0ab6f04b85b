/* SPDX-License-Identifier: Apache-2.0 */
/* The event recorder: client-go's tools/record (event.go: makeEvent, recordToSink/recordEvent, the structured
 * "Event occurred" log line) and its EventCorrelator (events_cache.go: EventSourceObjectSpamFilter,
 * EventAggregator with EventAggregatorByReasonFunc / EventAggregatorByReasonMessageFunc, eventLogger), on the
 * kubelet's loop. The correlator is pure (an injectable clock, no I/O); the recorder correlates each event at
 * once and queues the resulting POST or PATCH. Deliberate differences from client-go:
 *  - cache keys join their fields with a separator (client-go concatenates them without one);
 *  - an aggregate group keeps 64-bit hashes of the messages it has seen, not the messages, and drops the
 *    oldest one where client-go's PopAny drops an arbitrary one;
 *  - failed writes are not retried here (the API client retries transport errors, 429 and 5xx), where
 *    client-go retries 12 times 10 s apart; the Event's resourceVersion is not tracked (patches never carry
 *    it). */
#include "events/recorder.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/hash.h"
#include "basic/log.h"
#include "basic/time.h"
#include "client/client.h"

#define KEY_SEP "\x1f"
#define DEFAULT_NAMESPACE "default" /* metav1.NamespaceDefault, for events about cluster-scoped objects */

/* ================================================================ LRU */

struct lru_entry {
        char *key;
        void *value;
        uint64_t hash;
        struct lru_entry *hnext;        /* hash chain */
        struct lru_entry *prev, *next;  /* recency: head is the most recently used */
};

struct event_lru {
        size_t capacity, size, n_buckets; /* n_buckets: a power of two */
        struct lru_entry **buckets;
        struct lru_entry *head, *tail;
        void (*free_value)(void *value);
};

static uint64_t key_hash(const char *key) {
        return fnv1a64(FNV1A64_INIT, key, strlen(key));
}

int event_lru_new(size_t capacity, void (*free_value)(void *value), struct event_lru **ret) {
        struct event_lru *l;

        if (capacity == 0 || capacity > SIZE_MAX / 4)
                return -EINVAL;
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->capacity = capacity;
        l->free_value = free_value;
        for (l->n_buckets = 16; l->n_buckets < capacity; l->n_buckets *= 2)
                ;
        l->buckets = calloc(l->n_buckets, sizeof(*l->buckets));
        if (!l->buckets) {
                free(l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

static void lru_entry_free(struct event_lru *l, struct lru_entry *e) {
        if (l->free_value && e->value)
                l->free_value(e->value);
        free(e->key);
        free(e);
}

struct event_lru *event_lru_free(struct event_lru *l) {
        if (!l)
                return NULL;
        while (l->head) {
                struct lru_entry *e = l->head;
                l->head = e->next;
                lru_entry_free(l, e);
        }
        free(l->buckets);
        free(l);
        return NULL;
}

static void lru_unlink(struct event_lru *l, struct lru_entry *e) {
        if (e->prev)
                e->prev->next = e->next;
        else
                l->head = e->next;
        if (e->next)
                e->next->prev = e->prev;
        else
                l->tail = e->prev;
        e->prev = e->next = NULL;
}

static void lru_push_front(struct event_lru *l, struct lru_entry *e) {
        e->prev = NULL;
        e->next = l->head;
        if (l->head)
                l->head->prev = e;
        l->head = e;
        if (!l->tail)
                l->tail = e;
}

static struct lru_entry *lru_find(struct event_lru *l, const char *key, uint64_t hash) {
        for (struct lru_entry *e = l->buckets[hash & (l->n_buckets - 1)]; e; e = e->hnext)
                if (e->hash == hash && streq(e->key, key))
                        return e;
        return NULL;
}

static void lru_remove(struct event_lru *l, struct lru_entry *e) {
        struct lru_entry **p = &l->buckets[e->hash & (l->n_buckets - 1)];

        while (*p != e)
                p = &(*p)->hnext;
        *p = e->hnext;
        lru_unlink(l, e);
        l->size--;
        lru_entry_free(l, e);
}

void *event_lru_get(struct event_lru *l, const char *key) {
        struct lru_entry *e = lru_find(l, key, key_hash(key));

        if (!e)
                return NULL;
        if (l->head != e) {
                lru_unlink(l, e);
                lru_push_front(l, e);
        }
        return e->value;
}

int event_lru_add(struct event_lru *l, const char *key, void *value) {
        uint64_t hash = key_hash(key);
        struct lru_entry *e = lru_find(l, key, hash);

        if (e) {
                if (e->value != value && l->free_value && e->value)
                        l->free_value(e->value);
                e->value = value;
                if (l->head != e) {
                        lru_unlink(l, e);
                        lru_push_front(l, e);
                }
                return 0;
        }
        e = calloc(1, sizeof(*e));
        if (!e || !(e->key = strdup(key))) {
                free(e);
                if (l->free_value && value)
                        l->free_value(value);
                return -ENOMEM;
        }
        e->value = value;
        e->hash = hash;
        e->hnext = l->buckets[hash & (l->n_buckets - 1)];
        l->buckets[hash & (l->n_buckets - 1)] = e;
        lru_push_front(l, e);
        l->size++;
        while (l->size > l->capacity)
                lru_remove(l, l->tail);
        return 0;
}

size_t event_lru_size(const struct event_lru *l) {
        return l ? l->size : 0;
}

size_t event_lru_capacity(const struct event_lru *l) {
        return l ? l->capacity : 0;
}

/* ================================================================ event objects */

static const char *ref_namespace(const struct event_ref *ref) {
        return strempty(ref->namespace_);
}

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
        json_t *o = json_object();

        if (!o)
                return NULL;
        if (!set_nonempty(o, "kind", ref->kind) || !set_nonempty(o, "namespace", ref->namespace_) ||
            !set_nonempty(o, "name", ref->name) || !set_nonempty(o, "uid", ref->uid) ||
            !set_nonempty(o, "apiVersion", ref->api_version) ||
            !set_nonempty(o, "resourceVersion", ref->resource_version) ||
            !set_nonempty(o, "fieldPath", ref->field_path)) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/* A v1 Event. reporting: set reportingComponent/reportingInstance from the source (recorder.generateEvent
 * does; the EventAggregator's aggregate copy does not, so they marshal as ""). */
static json_t *build_event(const struct event_input *in, const char *namespace_, const char *name,
                           const char *message, int64_t first_nsec, int64_t last_nsec, unsigned count,
                           bool reporting) {
        json_t *e = NULL, *meta = NULL, *involved = NULL, *source = NULL;

        e = json_object();
        meta = json_object();
        source = json_object();
        involved = involved_object_json(in->ref);
        if (!e || !meta || !source || !involved)
                goto fail;
        if (json_object_set_new(meta, "name", json_string(name)) < 0 ||
            json_object_set_new(meta, "namespace", json_string(isempty(namespace_) ? DEFAULT_NAMESPACE : namespace_)) < 0)
                goto fail;
        if (!set_nonempty(source, "component", in->component) || !set_nonempty(source, "host", in->host))
                goto fail;
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
                goto fail;
        return e;
fail:
        json_decref(e);
        json_decref(meta);
        json_decref(involved);
        json_decref(source);
        return NULL;
}

json_t *event_build(const struct event_input *in, const char *namespace_, const char *name, int64_t unix_nsec) {
        return build_event(in, namespace_, name, in->message, unix_nsec, unix_nsec, 1, true);
}

/* Go's %q for a string, close enough: quotes, backslash escapes, \xNN for other control bytes */
static int append_quoted(char **buf, size_t *len, size_t *cap, const char *s) {
        s = strempty(s);
        size_t need = *len + 4 * strlen(s) + 3;
        if (need > *cap) {
                char *n = realloc(*buf, need);
                if (!n)
                        return -ENOMEM;
                *buf = n;
                *cap = need;
        }
        char *p = *buf + *len;
        *p++ = '"';
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                switch (c) {
                case '"': *p++ = '\\'; *p++ = '"'; break;
                case '\\': *p++ = '\\'; *p++ = '\\'; break;
                case '\n': *p++ = '\\'; *p++ = 'n'; break;
                case '\r': *p++ = '\\'; *p++ = 'r'; break;
                case '\t': *p++ = '\\'; *p++ = 't'; break;
                default:
                        if (c < 0x20 || c == 0x7f)
                                p += sprintf(p, "\\x%02x", c);
                        else
                                *p++ = (char) c;
                }
        }
        *p++ = '"';
        *p = '\0';
        *len = (size_t) (p - *buf);
        return 0;
}

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
                size_t l = strlen(fields[i].label);
                if (len + l + 1 > cap) {
                        char *n = realloc(buf, len + l + 1);
                        if (!n)
                                return NULL;
                        buf = n;
                        cap = len + l + 1;
                }
                memcpy(buf + len, fields[i].label, l + 1);
                len += l;
                if (append_quoted(&buf, &len, &cap, i == 0 ? object : fields[i].value) < 0)
                        return NULL;
        }
        return TAKE_PTR(buf);
}

/* ================================================================ correlator */

struct spam_record {            /* a token bucket (flowcontrol's, over golang.org/x/time/rate) */
        double tokens;
        int64_t last_nsec;
};

struct aggregate_record {
        uint64_t *local_keys;   /* hashes of the messages seen in the group, at most max_events */
        unsigned n_local_keys;
        int64_t last_nsec;      /* the last time a similar event was seen */
};

struct log_record {             /* eventLog */
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
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t) ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
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
        if (asprintf(&s, "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP
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
        if (asprintf(&s, "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP "%s" KEY_SEP
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
        uint64_t local = key_hash(strempty(message));
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

static const char *json_str(const json_t *o, const char *a, const char *b) {
        const json_t *v = json_object_get(o, a);
        if (b)
                v = json_object_get(v, b);
        return json_is_string(v) ? json_string_value(v) : "";
}

void event_correlator_update_state(struct event_correlator *c, const json_t *event) {
        _cleanup_free_ char *key = NULL;
        struct log_record *obs, *n;
        const char *name, *first;
        json_int_t count;
        int64_t first_nsec = 0;

        if (!c || !json_is_object(event))
                return;
        name = json_str(event, "metadata", "name");
        count = json_integer_value(json_object_get(event, "count"));
        first = json_str(event, "firstTimestamp", NULL);
        if (isempty(name) || count < 0 || count > UINT32_MAX)
                return;
        if (!isempty(first) && parse_rfc3339(first, &first_nsec) < 0)
                first_nsec = 0;
        key = event_key(json_str(event, "source", "component"), json_str(event, "source", "host"),
                        json_str(event, "involvedObject", "kind"), json_str(event, "involvedObject", "namespace"),
                        json_str(event, "involvedObject", "name"), json_str(event, "involvedObject", "fieldPath"),
                        json_str(event, "involvedObject", "uid"), json_str(event, "involvedObject", "apiVersion"),
                        json_str(event, "type", NULL), json_str(event, "reason", NULL),
                        json_str(event, "message", NULL));
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

/* ================================================================ the recorder */

struct event_pending {
        struct event_recorder *r;
        struct event_pending *prev, *next; /* in r->queue or r->in_flight */
        bool in_flight;
        char *namespace_, *name;
        json_t *event;  /* POST this (or after a PATCH's 404) */
        json_t *patch;  /* PATCH this first, if set */
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
        p->prev = l->tail;
        p->next = NULL;
        if (l->tail)
                l->tail->next = p;
        else
                l->head = p;
        l->tail = p;
        l->n++;
}

static void list_remove(struct pending_list *l, struct event_pending *p) {
        if (p->prev)
                p->prev->next = p->next;
        else
                l->head = p->next;
        if (p->next)
                p->next->prev = p->prev;
        else
                l->tail = p->prev;
        p->prev = p->next = NULL;
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
        int64_t now = realtime_nsec(NULL);

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
                 json_str(p->event, "involvedObject", "name"), json_str(p->event, "reason", NULL));
        return buf;
}

static bool namespace_terminating(const json_t *status) {
        const json_t *causes = json_object_get(json_object_get(status, "details"), "causes");
        size_t i;
        json_t *c;

        json_array_foreach(causes, i, c)
                if (streq(json_str(c, "type", NULL), "NamespaceTerminating"))
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
                        log_error("Unable to write event (will not retry!): %s err=\"%s\"", describe(p, desc, sizeof(desc)),
                                  resp->error);
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
                log_error("Unable to record event: too many queued events, dropped event: event=\"%s/%s\" reason=\"%s\"",
                          d->namespace_, d->name, json_str(d->event, "reason", NULL));
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
        if (line)
                log_v(2, "%s", line);
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
                log_v(5, "Event dropped by the spam filter: object=\"%s%s%s\" reason=\"%s\"", ref_namespace(ref),
                      isempty(ref->namespace_) ? "" : "/", ref->name, strempty(reason));
        } else
                enqueue(r, &d);
        event_decision_done(&d);
}
