/* SPDX-License-Identifier: Apache-2.0 */
/* The event recorder: the correlator with an injected clock (counting repeats, aggregation of similar events
 * and its window, the spam filter's token buckets, bounded caches, the server's state), the Event JSON, names
 * and log lines; then the recorder against a small evhttp "API server" on 127.0.0.1 (POST, coalescing,
 * strategic-merge PATCH, POST after a PATCH's 404, a full queue, standalone mode). */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "client/client.h"
#include "events/correlator-testing.h"
#include "events/lru.h"
#include "events/recorder-testing.h"

#define NODE "node-1"
#define T0 INT64_C(1700000000123456789) /* 2023-11-14T22:13:20Z */
#define SEC NSEC_PER_SEC

static int64_t fake_now;

static int64_t fake_clock(void *userdata) {
        return fake_now;
}

static const struct event_ref pod_ref = {
        .kind = "Pod",
        .namespace_ = "team-a",
        .name = "web",
        .uid = "uid-1",
        .api_version = "v1",
        .field_path = "spec.containers{app}",
        .resource_version = "42",
};

static const struct event_ref node_ref = {
        .kind = "Node",
        .namespace_ = "",
        .name = NODE,
        .uid = NODE,
        .api_version = "v1",
};

static struct event_correlator *correlator_new(size_t lru_size) {
        struct event_correlator_options o = { .lru_size = lru_size, .clock = fake_clock };
        struct event_correlator *c;

        fake_now = T0;
        assert_int_equal(event_correlator_new(&o, &c), 0);
        return c;
}

static struct event_input input(const struct event_ref *ref, const char *type, const char *reason,
                                const char *message) {
        return (struct event_input) {
                .ref = ref,
                .component = "kubelet",
                .host = NODE,
                .type = type,
                .reason = reason,
                .message = message,
        };
}

/* correlate and check the action; the decision is returned for more checks */
static void correlate(struct event_correlator *c, const struct event_ref *ref, const char *reason, const char *message,
                      enum event_action action, struct event_decision *d) {
        struct event_input in = input(ref, "Normal", reason, message);
        event_decision_done(d);
        assert_int_equal(event_correlate(c, &in, d), 0);
        assert_int_equal(d->action, action);
        if (action == EVENT_ACTION_DROP) {
                assert_null(d->event);
                assert_null(d->name);
        } else {
                assert_non_null(d->event);
                assert_string_equal(json_string_value(json_object_get(json_object_get(d->event, "metadata"), "name")),
                                    d->name);
                assert_int_equal(json_integer_value(json_object_get(d->event, "count")), d->count);
                assert_true((action == EVENT_ACTION_PATCH) == (d->patch != NULL));
        }
}

static const char *str(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        assert_true(json_is_string(v));
        return json_string_value(v);
}

static void test_names(void **state) {
        _cleanup_free_ char *a = event_object_name("web", T0), *b = event_object_name("node-1", T0 + SEC),
                            *z = event_object_name("x", 0);
        char buf[64];

        assert_string_equal(a, "web.17979cfe3d85cd15");
        assert_string_equal(b, "node-1.17979cfe79209715");
        assert_string_equal(z, "x.0");
        /* the object name of an event is the involved object's name and the clock's nanoseconds in hex */
        struct event_correlator *c = correlator_new(0);
        struct event_decision d = {};
        fake_now = T0 + 255;
        correlate(c, &pod_ref, "Pulling", "Pulling image", EVENT_ACTION_CREATE, &d);
        snprintf(buf, sizeof(buf), "web.%llx", (unsigned long long) (T0 + 255));
        assert_string_equal(d.name, buf);
        event_decision_done(&d);
        event_correlator_free(c);
}

static void test_event_json(void **state) {
        struct event_correlator *c = correlator_new(0);
        struct event_decision d = {};
        json_t *e, *io, *src, *meta;

        correlate(c, &pod_ref, "Pulled", "Successfully pulled image \"busybox\"", EVENT_ACTION_CREATE, &d);
        e = d.event;
        assert_string_equal(d.namespace_, "team-a");
        assert_int_equal(d.count, 1);
        assert_false(d.aggregated);
        assert_string_equal(str(e, "kind"), "Event");
        assert_string_equal(str(e, "apiVersion"), "v1");
        meta = json_object_get(e, "metadata");
        assert_string_equal(str(meta, "name"), "web.17979cfe3d85cd15");
        assert_string_equal(str(meta, "namespace"), "team-a");
        assert_null(json_object_get(meta, "resourceVersion"));
        io = json_object_get(e, "involvedObject");
        assert_int_equal(json_object_size(io), 7);
        assert_string_equal(str(io, "kind"), "Pod");
        assert_string_equal(str(io, "namespace"), "team-a");
        assert_string_equal(str(io, "name"), "web");
        assert_string_equal(str(io, "uid"), "uid-1");
        assert_string_equal(str(io, "apiVersion"), "v1");
        assert_string_equal(str(io, "resourceVersion"), "42");
        assert_string_equal(str(io, "fieldPath"), "spec.containers{app}");
        assert_string_equal(str(e, "reason"), "Pulled");
        assert_string_equal(str(e, "message"), "Successfully pulled image \"busybox\"");
        src = json_object_get(e, "source");
        assert_int_equal(json_object_size(src), 2);
        assert_string_equal(str(src, "component"), "kubelet");
        assert_string_equal(str(src, "host"), NODE);
        assert_string_equal(str(e, "firstTimestamp"), "2023-11-14T22:13:20Z");
        assert_string_equal(str(e, "lastTimestamp"), "2023-11-14T22:13:20Z");
        assert_int_equal(json_integer_value(json_object_get(e, "count")), 1);
        assert_string_equal(str(e, "type"), "Normal");
        assert_true(json_is_null(json_object_get(e, "eventTime")));
        assert_string_equal(str(e, "reportingComponent"), "kubelet");
        assert_string_equal(str(e, "reportingInstance"), NODE);
        assert_int_equal(json_object_size(e), 14);

        /* a cluster-scoped object: the event lives in "default", the reference has no namespace */
        fake_now += SEC;
        correlate(c, &node_ref, "NodeReady", "Node node-1 status is now: NodeReady", EVENT_ACTION_CREATE, &d);
        assert_string_equal(d.namespace_, "default");
        assert_string_equal(str(json_object_get(d.event, "metadata"), "namespace"), "default");
        assert_string_equal(d.name, "node-1.17979cfe79209715");
        io = json_object_get(d.event, "involvedObject");
        assert_null(json_object_get(io, "namespace"));
        assert_null(json_object_get(io, "fieldPath"));
        assert_null(json_object_get(io, "resourceVersion"));
        assert_string_equal(str(io, "kind"), "Node");
        assert_string_equal(str(io, "name"), NODE);

        /* bad input */
        struct event_input in = input(&pod_ref, NULL, "X", "y");
        event_decision_done(&d);
        assert_int_equal(event_correlate(c, &in, &d), -EINVAL);
        assert_null(d.event);

        event_decision_done(&d);
        event_correlator_free(c);
}

static void test_identical_events_count(void **state) {
        struct event_correlator *c = correlator_new(0);
        struct event_decision d = {};
        _cleanup_free_ char *name = NULL;

        correlate(c, &pod_ref, "BackOff", "Back-off restarting failed container", EVENT_ACTION_CREATE, &d);
        assert_null(d.patch);
        name = strdup(d.name);

        for (unsigned n = 2; n <= 3; n++) {
                fake_now += 10 * SEC;
                correlate(c, &pod_ref, "BackOff", "Back-off restarting failed container", EVENT_ACTION_PATCH, &d);
                assert_string_equal(d.name, name);
                assert_string_equal(d.namespace_, "team-a");
                assert_int_equal(d.count, n);
                /* the patch: exactly count, lastTimestamp and message */
                assert_int_equal(json_object_size(d.patch), 3);
                assert_int_equal(json_integer_value(json_object_get(d.patch, "count")), n);
                assert_string_equal(str(d.patch, "lastTimestamp"),
                                    n == 2 ? "2023-11-14T22:13:30Z" : "2023-11-14T22:13:40Z");
                assert_string_equal(str(d.patch, "message"), "Back-off restarting failed container");
                /* the whole event (POSTed if the PATCH finds nothing) keeps the first occurrence */
                assert_string_equal(str(d.event, "firstTimestamp"), "2023-11-14T22:13:20Z");
                assert_string_equal(str(d.event, "lastTimestamp"), str(d.patch, "lastTimestamp"));
                assert_int_equal(json_integer_value(json_object_get(d.event, "count")), n);
        }

        /* another container of the same pod is another event */
        struct event_ref other = pod_ref;
        other.field_path = "spec.containers{sidecar}";
        correlate(c, &other, "BackOff", "Back-off restarting failed container", EVENT_ACTION_CREATE, &d);
        assert_string_not_equal(d.name, name);
        /* and another type too */
        struct event_input in = input(&pod_ref, "Warning", "BackOff", "Back-off restarting failed container");
        event_decision_done(&d);
        assert_int_equal(event_correlate(c, &in, &d), 0);
        assert_int_equal(d.action, EVENT_ACTION_CREATE);

        /* identical events never aggregate, however many (below the spam limit) */
        for (unsigned n = 4; n <= 15; n++) {
                fake_now += 30 * SEC;
                correlate(c, &pod_ref, "BackOff", "Back-off restarting failed container", EVENT_ACTION_PATCH, &d);
                assert_int_equal(d.count, n);
                assert_false(d.aggregated);
        }

        event_decision_done(&d);
        event_correlator_free(c);
}

static void test_aggregation(void **state) {
        struct event_correlator *c = correlator_new(0);
        struct event_decision d = {};
        _cleanup_free_ char *aggregate_name = NULL;
        char msg[64];

        /* similar events: same object, type and reason, different messages. Like client-go, the group of the
         * first nine is below maxEvents; the tenth distinct message reaches it and becomes the aggregate event
         * (client-go's "similar-events-should-aggregate-event"), later ones count that aggregate. */
        for (unsigned i = 0; i < 9; i++) {
                snprintf(msg, sizeof(msg), "Liveness probe failed: attempt %u", i);
                correlate(c, &pod_ref, "Unhealthy", msg, EVENT_ACTION_CREATE, &d);
                assert_false(d.aggregated);
                assert_string_equal(str(d.event, "message"), msg);
                fake_now += 30 * SEC;
        }
        correlate(c, &pod_ref, "Unhealthy", "Liveness probe failed: attempt 9", EVENT_ACTION_CREATE, &d);
        assert_true(d.aggregated);
        assert_int_equal(d.count, 1);
        assert_string_equal(str(d.event, "message"),
                            "(combined from similar events): Liveness probe failed: attempt 9");
        assert_string_equal(str(d.event, "reason"), "Unhealthy");
        assert_string_equal(str(d.event, "type"), "Normal");
        assert_string_equal(str(json_object_get(d.event, "involvedObject"), "fieldPath"), "spec.containers{app}");
        /* the aggregate copy carries no reporting fields (client-go's EventAggregate) */
        assert_string_equal(str(d.event, "reportingComponent"), "");
        assert_string_equal(str(json_object_get(d.event, "source"), "component"), "kubelet");
        aggregate_name = strdup(d.name);

        /* the 11th similar event within 10 minutes: the aggregate, counted */
        fake_now += 30 * SEC;
        correlate(c, &pod_ref, "Unhealthy", "Liveness probe failed: attempt 10", EVENT_ACTION_PATCH, &d);
        assert_true(d.aggregated);
        assert_string_equal(d.name, aggregate_name);
        assert_int_equal(d.count, 2);
        assert_string_equal(str(d.patch, "message"),
                            "(combined from similar events): Liveness probe failed: attempt 10");
        /* and the 12th */
        fake_now += 30 * SEC;
        correlate(c, &pod_ref, "Unhealthy", "Liveness probe failed: attempt 11", EVENT_ACTION_PATCH, &d);
        assert_int_equal(d.count, 3);

        /* another reason is another group */
        correlate(c, &pod_ref, "Killing", "Stopping container app", EVENT_ACTION_CREATE, &d);
        assert_false(d.aggregated);

        /* the window is measured from the last similar event: after 10 minutes of quiet, a fresh group */
        fake_now += 600 * SEC + 1;
        correlate(c, &pod_ref, "Unhealthy", "Liveness probe failed: attempt 12", EVENT_ACTION_CREATE, &d);
        assert_false(d.aggregated);
        assert_string_equal(str(d.event, "message"), "Liveness probe failed: attempt 12");
        /* ... which aggregates again at its tenth distinct message */
        for (unsigned i = 13; i < 21; i++) {
                fake_now += 10 * SEC;
                snprintf(msg, sizeof(msg), "Liveness probe failed: attempt %u", i);
                correlate(c, &pod_ref, "Unhealthy", msg, EVENT_ACTION_CREATE, &d);
                assert_false(d.aggregated);
        }
        fake_now += 10 * SEC;
        /* the aggregate of the new window reuses the aggregate Event object (the logger still has it) */
        correlate(c, &pod_ref, "Unhealthy", "Liveness probe failed: attempt 21", EVENT_ACTION_PATCH, &d);
        assert_true(d.aggregated);
        assert_string_equal(d.name, aggregate_name);
        assert_int_equal(d.count, 4);

        /* exactly at 10 minutes the window still holds (client-go: interval > maxInterval resets) */
        fake_now += 600 * SEC;
        correlate(c, &pod_ref, "Unhealthy", "Liveness probe failed: attempt 22", EVENT_ACTION_PATCH, &d);
        assert_true(d.aggregated);
        assert_int_equal(d.count, 5);

        event_decision_done(&d);
        event_correlator_free(c);
}

static void test_spam_filter(void **state) {
        struct event_correlator *c = correlator_new(0);
        struct event_decision d = {};
        struct event_ref other = pod_ref;
        char reason[32];

        /* a burst of 25 events about one object passes, at the same instant */
        for (unsigned i = 0; i < EVENT_SPAM_BURST; i++) {
                snprintf(reason, sizeof(reason), "Reason%u", i);
                correlate(c, &pod_ref, reason, "m", EVENT_ACTION_CREATE, &d);
        }
        /* the 26th is dropped, and the next ones */
        correlate(c, &pod_ref, "Reason25", "m", EVENT_ACTION_DROP, &d);
        fake_now += 299 * SEC;
        correlate(c, &pod_ref, "Reason26", "m", EVENT_ACTION_DROP, &d);
        /* another container of the same pod is the same object */
        struct event_ref container = pod_ref;
        container.field_path = "spec.containers{other}";
        correlate(c, &container, "Reason27", "m", EVENT_ACTION_DROP, &d);
        /* another object is not affected */
        other.name = "db";
        other.uid = "uid-2";
        correlate(c, &other, "Reason0", "m", EVENT_ACTION_CREATE, &d);

        /* one token every 300 s */
        fake_now += 1 * SEC;
        correlate(c, &pod_ref, "Reason28", "m", EVENT_ACTION_CREATE, &d);
        correlate(c, &pod_ref, "Reason29", "m", EVENT_ACTION_DROP, &d);
        fake_now += 300 * SEC;
        correlate(c, &pod_ref, "Reason30", "m", EVENT_ACTION_CREATE, &d);
        correlate(c, &pod_ref, "Reason31", "m", EVENT_ACTION_DROP, &d);

        /* a dropped repeat still counts: the next accepted one patches with the total */
        fake_now += 300 * SEC;
        correlate(c, &pod_ref, "Reason29", "m", EVENT_ACTION_PATCH, &d);
        assert_int_equal(d.count, 2);

        /* the bucket refills up to the burst, not more */
        fake_now += 100000 * SEC;
        for (unsigned i = 0; i < EVENT_SPAM_BURST; i++) {
                snprintf(reason, sizeof(reason), "Again%u", i);
                correlate(c, &pod_ref, reason, "m", EVENT_ACTION_CREATE, &d);
        }
        correlate(c, &pod_ref, "Again25", "m", EVENT_ACTION_DROP, &d);

        /* identical events: the 26th is spam too (client-go's "the-same-event-is-spam-if-happens-too-frequently") */
        fake_now += 100000 * SEC;
        correlate(c, &other, "Same", "again", EVENT_ACTION_CREATE, &d);
        for (unsigned n = 2; n <= EVENT_SPAM_BURST; n++) {
                fake_now += SEC;
                correlate(c, &other, "Same", "again", EVENT_ACTION_PATCH, &d);
                assert_int_equal(d.count, n);
        }
        fake_now += SEC;
        correlate(c, &other, "Same", "again", EVENT_ACTION_DROP, &d);

        event_decision_done(&d);
        event_correlator_free(c);
}

static void test_update_state(void **state) {
        struct event_correlator *c = correlator_new(0);
        struct event_decision d = {};
        json_t *server;

        correlate(c, &pod_ref, "Started", "Started container app", EVENT_ACTION_CREATE, &d);
        server = json_deep_copy(d.event);
        /* the server says it has seen it 5 times */
        json_object_set_new(server, "count", json_integer(5));
        event_correlator_update_state(c, server);
        fake_now += SEC;
        correlate(c, &pod_ref, "Started", "Started container app", EVENT_ACTION_PATCH, &d);
        assert_int_equal(d.count, 6);
        /* a late answer with a lower count does not take counts back */
        json_object_set_new(server, "count", json_integer(2));
        event_correlator_update_state(c, server);
        correlate(c, &pod_ref, "Started", "Started container app", EVENT_ACTION_PATCH, &d);
        assert_int_equal(d.count, 7);
        /* garbage is ignored */
        event_correlator_update_state(c, NULL);
        json_decref(server);
        server = json_pack("{s:s}", "kind", "Status");
        event_correlator_update_state(c, server);
        json_decref(server);

        event_decision_done(&d);
        event_correlator_free(c);
}

static unsigned freed_values;

static void count_free(void *p) {
        freed_values++;
        free(p);
}

static void test_lru(void **state) {
        struct event_lru *l;
        char key[32];

        assert_int_equal(event_lru_new(0, NULL, &l), -EINVAL);
        assert_int_equal(event_lru_new(4, count_free, &l), 0);
        freed_values = 0;
        for (unsigned i = 0; i < 10; i++) {
                snprintf(key, sizeof(key), "k%u", i);
                assert_int_equal(event_lru_add(l, key, strdup(key)), 0);
                assert_true(event_lru_size(l) <= 4);
        }
        assert_int_equal(event_lru_size(l), 4);
        assert_int_equal(freed_values, 6);
        for (unsigned i = 0; i < 10; i++) {
                snprintf(key, sizeof(key), "k%u", i);
                if (i < 6)
                        assert_null(event_lru_get(l, key));
                else
                        assert_string_equal(event_lru_get(l, key), key);
        }
        /* recency: k6 was read first of the survivors, so after touching it k7 is the oldest */
        assert_non_null(event_lru_get(l, "k6"));
        assert_int_equal(event_lru_add(l, "k10", strdup("k10")), 0);
        assert_null(event_lru_get(l, "k7"));
        assert_non_null(event_lru_get(l, "k6"));
        /* replacing a value frees the old one and keeps the size */
        assert_int_equal(event_lru_add(l, "k6", strdup("six")), 0);
        assert_string_equal(event_lru_get(l, "k6"), "six");
        assert_int_equal(event_lru_size(l), 4);
        assert_int_equal(freed_values, 8);
        event_lru_free(l);
        assert_int_equal(freed_values, 12);
        event_lru_free(NULL);
}

static void test_correlator_bounded(void **state) {
        struct event_correlator *c = correlator_new(8);
        struct event_decision d = {};
        char name[32];
        struct event_ref ref = pod_ref;

        /* 100 objects through caches of 8 entries each */
        for (unsigned i = 0; i < 100; i++) {
                snprintf(name, sizeof(name), "pod-%u", i);
                ref.name = name;
                correlate(c, &ref, "Scheduled", "m", EVENT_ACTION_CREATE, &d);
                assert_true(event_correlator_entries(c) <= 3 * 8);
        }
        /* a recent one is remembered, the oldest was evicted and is created anew */
        ref.name = "pod-99";
        correlate(c, &ref, "Scheduled", "m", EVENT_ACTION_PATCH, &d);
        ref.name = "pod-0";
        correlate(c, &ref, "Scheduled", "m", EVENT_ACTION_CREATE, &d);
        event_decision_done(&d);
        event_correlator_free(c);

        /* the default size: 4096 per cache */
        c = correlator_new(0);
        for (unsigned i = 0; i < EVENT_LRU_MAX_ENTRIES + 500; i++) {
                snprintf(name, sizeof(name), "pod-%u", i);
                ref.name = name;
                correlate(c, &ref, "Scheduled", "m", EVENT_ACTION_CREATE, &d);
        }
        assert_int_equal(event_correlator_entries(c), 3 * EVENT_LRU_MAX_ENTRIES);
        event_decision_done(&d);
        event_correlator_free(c);
        event_correlator_free(NULL);
        event_decision_done(NULL);
}

static void test_log_line(void **state) {
        _cleanup_free_ char *a = event_log_line(&pod_ref, "Warning", "Failed", "Error: \"x\"\nline\\2\t\x01"),
                            *b = event_log_line(&node_ref, "Normal", "Starting", "Starting kubelet.");

        assert_string_equal(a, "Event occurred: object=\"team-a/web\" fieldPath=\"spec.containers{app}\" kind=\"Pod\" "
                               "apiVersion=\"v1\" type=\"Warning\" reason=\"Failed\" "
                               "message=\"Error: \\\"x\\\"\\nline\\\\2\\t\\x01\"");
        assert_string_equal(b, "Event occurred: object=\"node-1\" fieldPath=\"\" kind=\"Node\" apiVersion=\"v1\" "
                               "type=\"Normal\" reason=\"Starting\" message=\"Starting kubelet.\"");
}

/* ================================================================ the recorder against a fake API server */

struct request_seen {
        char *method, *uri, *content_type;
        json_t *body;
};

struct ctx {
        struct event_base *base;
        struct evhttp *http;
        int port;
        struct kube_client *client;
        struct event_recorder *recorder;
        struct request_seen seen[64];
        unsigned n_seen;
        bool patch_404;
        int post_status; /* 0 = 201 */
        char log_path[64];
        int saved_stderr;
};

static void on_request(struct evhttp_request *req, void *userdata) {
        struct ctx *t = userdata;
        struct evbuffer *in = evhttp_request_get_input_buffer(req), *out = evbuffer_new();
        struct request_seen *s;
        const char *ct;
        size_t len = evbuffer_get_length(in);
        _cleanup_free_ char *body = malloc(len + 1);
        json_t *json;
        int status = 200;

        assert_non_null(out);
        assert_non_null(body);
        evbuffer_remove(in, body, len);
        body[len] = '\0';
        if (t->n_seen >= ELEMENTSOF(t->seen)) {
                /* only the first ones are kept */
                t->n_seen++;
                evhttp_send_reply(req, 201, "Created", NULL);
                evbuffer_free(out);
                return;
        }
        json = json_loads(body, 0, NULL);
        s = &t->seen[t->n_seen++];
        switch (evhttp_request_get_command(req)) {
        case EVHTTP_REQ_POST:
                s->method = strdup("POST");
                break;
        case EVHTTP_REQ_PATCH:
                s->method = strdup("PATCH");
                break;
        default:
                s->method = strdup("OTHER");
                break;
        }
        s->uri = strdup(evhttp_request_get_uri(req));
        ct = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
        s->content_type = strdup(strempty(ct));
        s->body = json;

        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        if (streq(s->method, "PATCH") && t->patch_404) {
                status = 404;
                evbuffer_add_printf(out,
                                    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                                    "\"message\":\"events \\\"x\\\" not found\",\"reason\":\"NotFound\",\"code\":404}");
        } else if (streq(s->method, "POST") && t->post_status) {
                status = t->post_status;
                evbuffer_add_printf(out,
                                    "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                                    "\"message\":\"forbidden\",\"reason\":\"Forbidden\",\"code\":%d}",
                                    status);
        } else {
                status = streq(s->method, "POST") ? 201 : 200;
                evbuffer_add(out, body, len); /* echo: the server's view is what we sent */
        }
        evhttp_send_reply(req, status, status < 300 ? "OK" : "Failed", out);
        evbuffer_free(out);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        *(bool *) userdata = true;
}

/* run the loop until n requests were seen and nothing is queued or in flight */
static void loop_until(struct ctx *t, unsigned n) {
        bool expired = false;
        struct event *deadline = evtimer_new(t->base, on_deadline, &expired);
        struct timeval tv = { .tv_sec = 5 };
        struct event_recorder_stats st;

        evtimer_add(deadline, &tv);
        for (;;) {
                event_recorder_get_stats(t->recorder, &st);
                if ((t->n_seen >= n && st.queued == 0 && st.in_flight == 0) || expired)
                        break;
                event_base_loop(t->base, EVLOOP_ONCE);
        }
        event_free(deadline);
        if (expired)
                fail_msg("timeout: %u requests seen, %zu queued, %zu in flight", t->n_seen, st.queued, st.in_flight);
        assert_int_equal(t->n_seen, n);
}

static void capture_stderr(struct ctx *t) {
        int fd;

        snprintf(t->log_path, sizeof(t->log_path), "/tmp/ckubelet-events-%d.log", (int) getpid());
        fflush(stderr);
        t->saved_stderr = dup(STDERR_FILENO);
        fd = open(t->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0 && t->saved_stderr >= 0);
        assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        close(fd);
}

static unsigned count_logged(struct ctx *t, const char *needle) {
        _cleanup_free_ char *data = NULL;
        unsigned n = 0;

        fflush(stderr);
        assert_int_equal(read_full_file(t->log_path, 64 * 1024 * 1024, &data, NULL), 0);
        for (const char *p = data; (p = strstr(p, needle)); p += strlen(needle))
                n++;
        return n;
}

static void restore_stderr(struct ctx *t) {
        if (t->saved_stderr < 0)
                return;
        fflush(stderr);
        dup2(t->saved_stderr, STDERR_FILENO);
        close(t->saved_stderr);
        t->saved_stderr = -1;
        unlink(t->log_path);
}

static int setup(void **state) {
        struct ctx *t = calloc(1, sizeof(*t));
        struct evhttp_bound_socket *bound;
        struct sockaddr_in sa;
        socklen_t len = sizeof(sa);
        char server[64];
        struct kube_config cfg = { .server = server };

        if (!t)
                return -1;
        t->saved_stderr = -1;
        /* no proxy between us and 127.0.0.1 */
        unsetenv("http_proxy");
        unsetenv("HTTP_PROXY");
        unsetenv("all_proxy");
        unsetenv("ALL_PROXY");
        t->base = event_base_new();
        t->http = t->base ? evhttp_new(t->base) : NULL;
        if (!t->http)
                return -1;
        evhttp_set_allowed_methods(t->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PATCH | EVHTTP_REQ_PUT);
        evhttp_set_gencb(t->http, on_request, t);
        bound = evhttp_bind_socket_with_handle(t->http, "127.0.0.1", 0);
        if (!bound || getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *) &sa, &len) < 0)
                return -1;
        t->port = ntohs(sa.sin_port);
        snprintf(server, sizeof(server), "http://127.0.0.1:%d", t->port);
        if (kube_client_new(t->base, &cfg, NULL, &t->client) < 0)
                return -1;
        if (event_recorder_new(t->base, t->client, NODE, &t->recorder) < 0)
                return -1;
        *state = t;
        return 0;
}

static int teardown(void **state) {
        struct ctx *t = *state;

        restore_stderr(t);
        event_recorder_free(t->recorder);
        kube_client_free(t->client);
        if (t->http)
                evhttp_free(t->http);
        event_base_free(t->base);
        for (unsigned i = 0; i < MIN(t->n_seen, ELEMENTSOF(t->seen)); i++) {
                free(t->seen[i].method);
                free(t->seen[i].uri);
                free(t->seen[i].content_type);
                json_decref(t->seen[i].body);
        }
        free(t);
        log_set_verbosity(0);
        return 0;
}

static void test_recorder(void **state) {
        struct ctx *t = *state;
        struct event_recorder_stats st;
        struct request_seen *s;
        _cleanup_free_ char *name = NULL, *patch_uri = NULL;

        capture_stderr(t);
        log_set_verbosity(3);

        /* three identical events before the loop runs: one POST carrying count 3 */
        for (unsigned i = 0; i < 3; i++)
                event_recorder_eventf(t->recorder, &pod_ref, "Normal", "Pulling", "Pulling image \"%s\"",
                                      "busybox:1.36");
        assert_int_equal(t->n_seen, 0); /* nothing is sent from inside eventf */
        event_recorder_get_stats(t->recorder, &st);
        assert_int_equal(st.recorded, 3);
        assert_int_equal(st.coalesced, 2);
        assert_int_equal(st.queued, 1);
        loop_until(t, 1);
        s = &t->seen[0];
        assert_string_equal(s->method, "POST");
        assert_string_equal(s->uri, "/api/v1/namespaces/team-a/events");
        assert_string_equal(s->content_type, "application/json");
        assert_non_null(s->body);
        assert_int_equal(json_integer_value(json_object_get(s->body, "count")), 3);
        assert_string_equal(str(s->body, "message"), "Pulling image \"busybox:1.36\"");
        assert_string_equal(str(s->body, "reason"), "Pulling");
        assert_string_equal(str(json_object_get(s->body, "source"), "host"), NODE);
        name = strdup(str(json_object_get(s->body, "metadata"), "name"));
        assert_true(startswith(name, "web."));
        assert_true(asprintf(&patch_uri, "/api/v1/namespaces/team-a/events/%s", name) > 0);
        /* every event is logged at --v=3 (upstream StartStructuredLogging(3)) */
        assert_int_equal(count_logged(t, "Event occurred: object=\"team-a/web\" fieldPath=\"spec.containers{app}\" "
                                         "kind=\"Pod\" apiVersion=\"v1\" type=\"Normal\" reason=\"Pulling\" "
                                         "message=\"Pulling image \\\"busybox:1.36\\\"\""),
                         3);

        /* once it exists, a repeat is a strategic merge patch */
        event_recorder_eventf(t->recorder, &pod_ref, "Normal", "Pulling", "Pulling image \"%s\"", "busybox:1.36");
        loop_until(t, 2);
        s = &t->seen[1];
        assert_string_equal(s->method, "PATCH");
        assert_string_equal(s->uri, patch_uri);
        assert_string_equal(s->content_type, "application/strategic-merge-patch+json");
        assert_int_equal(json_object_size(s->body), 3);
        assert_int_equal(json_integer_value(json_object_get(s->body, "count")), 4);
        assert_string_equal(str(s->body, "message"), "Pulling image \"busybox:1.36\"");

        /* the event expired on the server: PATCH gets 404, then the event is POSTed with its name and count */
        t->patch_404 = true;
        event_recorder_eventf(t->recorder, &pod_ref, "Normal", "Pulling", "Pulling image \"%s\"", "busybox:1.36");
        loop_until(t, 4);
        assert_string_equal(t->seen[2].method, "PATCH");
        assert_string_equal(t->seen[3].method, "POST");
        assert_string_equal(t->seen[3].uri, "/api/v1/namespaces/team-a/events");
        assert_string_equal(str(json_object_get(t->seen[3].body, "metadata"), "name"), name);
        assert_int_equal(json_integer_value(json_object_get(t->seen[3].body, "count")), 5);
        t->patch_404 = false;

        /* a node event goes to "default" */
        event_recorder_eventf(t->recorder, &node_ref, "Normal", "Starting", "Starting kubelet.");
        loop_until(t, 5);
        assert_string_equal(t->seen[4].uri, "/api/v1/namespaces/default/events");
        assert_null(json_object_get(json_object_get(t->seen[4].body, "involvedObject"), "namespace"));

        /* a rejected event is logged and dropped, not retried */
        t->post_status = 403;
        event_recorder_eventf(t->recorder, &node_ref, "Warning", "Rebooted", "Node %s has been rebooted", NODE);
        loop_until(t, 6);
        assert_int_equal(count_logged(t, "Server rejected event (will not retry!)"), 1);
        t->post_status = 0;

        /* an unsupported type is refused */
        event_recorder_eventf(t->recorder, &node_ref, "Bogus", "X", "y");
        assert_int_equal(count_logged(t, "Unsupported event type"), 1);

        event_recorder_get_stats(t->recorder, &st);
        assert_int_equal(st.recorded, 7); /* the unsupported one is not */
        assert_int_equal(st.sent, 4);     /* POST, PATCH, POST after the 404, the node's POST */
        assert_int_equal(st.failed, 1);
        assert_int_equal(st.queued, 0);
        assert_int_equal(st.in_flight, 0);
        event_recorder_eventf(NULL, &node_ref, "Normal", "X", "y");
}

static void test_recorder_limits(void **state) {
        struct ctx *t = *state;
        struct event_recorder_stats st;
        struct event_ref ref = pod_ref;
        char name[32];

        capture_stderr(t);
        /* distinct objects (no spam filtering), nothing sent before the loop runs: the queue holds 1000 */
        for (unsigned i = 0; i < EVENT_QUEUE_MAX + 100; i++) {
                snprintf(name, sizeof(name), "pod-%u", i);
                ref.name = name;
                event_recorder_eventf(t->recorder, &ref, "Normal", "Scheduled", "Successfully assigned %s", name);
        }
        event_recorder_get_stats(t->recorder, &st);
        assert_int_equal(st.queued, EVENT_QUEUE_MAX);
        assert_int_equal(st.queue_dropped, 100);
        assert_int_equal(count_logged(t, "too many queued events"), 100);

        /* the spam filter: the 26th event about one object is dropped */
        ref.name = "noisy";
        for (unsigned i = 0; i < EVENT_SPAM_BURST + 5; i++)
                event_recorder_eventf(t->recorder, &ref, "Warning", "Failed", "Error %u", i);
        event_recorder_get_stats(t->recorder, &st);
        assert_int_equal(st.spam_dropped, 5);

        /* a few requests in flight, the rest queued; freeing cancels them all (teardown) */
        event_base_loop(t->base, EVLOOP_NONBLOCK);
        event_recorder_get_stats(t->recorder, &st);
        assert_true(st.in_flight <= EVENT_MAX_IN_FLIGHT);
}

static void test_standalone(void **state) {
        struct event_base *base = event_base_new();
        struct event_recorder *r;
        struct event_recorder_stats st;

        assert_non_null(base);
        assert_int_equal(event_recorder_new(base, NULL, "", &r), -EINVAL);
        assert_int_equal(event_recorder_new(base, NULL, NODE, &r), 0);
        for (unsigned i = 0; i < 100; i++)
                event_recorder_eventf(r, &pod_ref, "Normal", "Created", "Created container %s", "app");
        event_base_loop(base, EVLOOP_NONBLOCK);
        event_recorder_get_stats(r, &st);
        assert_int_equal(st.recorded, 100);
        assert_int_equal(st.queued, 0);
        assert_int_equal(st.spam_dropped, 0);
        assert_null(event_recorder_free(r));
        assert_null(event_recorder_free(NULL));
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_event_json),
                cmocka_unit_test(test_identical_events_count),
                cmocka_unit_test(test_aggregation),
                cmocka_unit_test(test_spam_filter),
                cmocka_unit_test(test_update_state),
                cmocka_unit_test(test_lru),
                cmocka_unit_test(test_correlator_bounded),
                cmocka_unit_test(test_log_line),
                cmocka_unit_test_setup_teardown(test_recorder, setup, teardown),
                cmocka_unit_test_setup_teardown(test_recorder_limits, setup, teardown),
                cmocka_unit_test(test_standalone),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
