/* SPDX-License-Identifier: Apache-2.0 */
/* The status manager through the real API client against a scripted HTTP server on loopback (the fake at the
 * HTTP layer, tests/unit/client/loopback.h), on the virtual clock: what it PATCHes and where, at most one
 * request per pod in flight with later changes coalesced, nothing sent twice, retries with back-off, and
 * no retry for a pod that is gone. */
#include "client/loopback.h"

#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "client/client.h"
#include "fake/vloop.h"
#include "status/manager.h"

#define QUIET_USEC (20 * USEC_PER_MSEC)

struct ctx {
        struct event_base *base;
        struct srv srv;
        struct kube_client *client;
        struct status_manager *m;
        int code;          /* the answer to PATCHes */
        const char *reply; /* its body, if not the default one */
        bool hold;         /* keep the next request unanswered */
        struct evhttp_request *held;
};

static void handler(struct srv *s, struct evhttp_request *req) {
        struct ctx *c = s->userdata;

        if (c->hold) {
                c->hold = false;
                c->held = req;
                return;
        }
        if (c->reply)
                srv_reply_json(req, c->code, c->reply);
        else if (c->code == 404)
                srv_reply_json(req, 404,
                               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                               "\"reason\":\"NotFound\",\"code\":404,"
                               "\"message\":\"pods \\\"web\\\" not found\"}");
        else if (c->code >= 300)
                srv_reply_json(req, c->code,
                               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
                               "\"message\":\"no\"}");
        else
                srv_reply_json(req, 200, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}");
}

static int setup(void **state) {
        struct ctx *c = calloc(1, sizeof(*c));
        struct kube_config cfg = {};

        assert_non_null(c);
        c->base = event_base_new();
        assert_non_null(c->base);
        vloop_enable(c->base);
        assert_int_equal(srv_start(&c->srv, c->base), 0);
        c->srv.handler = handler;
        c->srv.userdata = c;
        c->code = 200;
        cfg.server = c->srv.url;
        assert_int_equal(kube_client_new(c->base, &cfg, NULL, &c->client), 0);
        assert_int_equal(status_manager_new(c->base, c->client, &c->m), 0);
        *state = c;
        return 0;
}

static int teardown(void **state) {
        struct ctx *c = *state;

        status_manager_free(c->m);
        kube_client_free(c->client);
        if (c->held)
                srv_hold(&c->srv, c->held); /* answered by srv_stop */
        srv_stop(&c->srv);
        event_base_free(c->base);
        vloop_disable();
        free(c);
        return 0;
}

static bool hits_reached(void *userdata) {
        return vloop_count_reached(userdata);
}

/* run until the server saw n requests (virtual time moves only when nothing is in flight) */
static bool wait_hits(struct ctx *c, unsigned n, uint64_t cap_usec) {
        struct vloop_count w = { &c->srv.hits, n };
        return vloop_run_until_io(c->base, hits_reached, &w, cap_usec, QUIET_USEC);
}

static void idle_for(struct ctx *c, uint64_t usec) {
        struct vloop_count w = { &c->srv.hits, UINT32_MAX };
        (void) vloop_run_until_io(c->base, hits_reached, &w, usec, QUIET_USEC);
}

static json_t *status(const char *phase) {
        json_t *s = json_pack("{s:s}", "phase", phase);
        assert_non_null(s);
        return s;
}

static void assert_body(struct ctx *c, const char *uid, const char *phase) {
        json_error_t e;
        json_t *b = json_loads(c->srv.body, 0, &e);

        assert_non_null(b);
        assert_string_equal(json_string_value(json_object_get(json_object_get(b, "metadata"), "uid")), uid);
        assert_string_equal(json_string_value(json_object_get(json_object_get(b, "status"), "phase")), phase);
        json_decref(b);
}

static void test_patch_once(void **state) {
        struct ctx *c = *state;

        status_manager_set(c->m, "u1", "ns1", "web", status("Pending"));
        assert_true(wait_hits(c, 1, 10 * USEC_PER_SEC));
        assert_string_equal(c->srv.method, "PATCH");
        assert_string_equal(c->srv.uri, "/api/v1/namespaces/ns1/pods/web/status");
        /* a strategic merge patch: the conditions of other clients are merged, not replaced */
        assert_string_equal(srv_header(&c->srv, "Content-Type"), "application/strategic-merge-patch+json");
        /* the UID makes it a precondition: another pod with that name is not touched */
        assert_body(c, "u1", "Pending");

        /* the same status again: nothing to send */
        status_manager_set(c->m, "u1", "ns1", "web", status("Pending"));
        idle_for(c, 60 * USEC_PER_SEC);
        assert_int_equal(c->srv.hits, 1);

        status_manager_set(c->m, "u1", "ns1", "web", status("Running"));
        assert_true(wait_hits(c, 2, 10 * USEC_PER_SEC));
        assert_body(c, "u1", "Running");
}

/* one request per pod in flight; what changes meanwhile is sent once it is answered, the newest only */
static void test_coalesced(void **state) {
        struct ctx *c = *state;

        c->hold = true;
        status_manager_set(c->m, "u1", "ns1", "web", status("Pending"));
        assert_true(wait_hits(c, 1, 10 * USEC_PER_SEC));
        assert_non_null(c->held);
        status_manager_set(c->m, "u1", "ns1", "web", status("Running"));
        status_manager_set(c->m, "u1", "ns1", "web", status("Succeeded"));
        /* another pod is not held up */
        status_manager_set(c->m, "u2", "ns1", "db", status("Running"));
        assert_true(wait_hits(c, 2, 10 * USEC_PER_SEC));
        assert_string_equal(c->srv.uri, "/api/v1/namespaces/ns1/pods/db/status");
        idle_for(c, 5 * USEC_PER_SEC);
        assert_int_equal(c->srv.hits, 2);

        srv_reply_json(c->held, 200, "{}");
        c->held = NULL;
        assert_true(wait_hits(c, 3, 10 * USEC_PER_SEC));
        assert_body(c, "u1", "Succeeded");
        idle_for(c, 60 * USEC_PER_SEC);
        assert_int_equal(c->srv.hits, 3);
}

/* a refused update is retried after 0.5 s, 1 s, 2 s, 4 s ...; a pod that is gone (404) is not */
static void test_retry_and_gone(void **state) {
        struct ctx *c = *state;

        c->code = 403; /* not retried by the client itself: every hit is the manager's */
        status_manager_set(c->m, "u1", "ns1", "web", status("Running"));
        assert_true(wait_hits(c, 5, 60 * USEC_PER_SEC));
        for (unsigned i = 1; i < 5; i++) {
                uint64_t gap = c->srv.hit_usec[i] - c->srv.hit_usec[i - 1], want = (500 * USEC_PER_MSEC) << (i - 1);
                if (gap != want)
                        fail_msg("retry %u after %.3f s, expected %.3f s", i, (double) gap / 1e6, (double) want / 1e6);
        }
        /* accepted at last: no more requests */
        c->code = 200;
        assert_true(wait_hits(c, 6, 60 * USEC_PER_SEC));
        assert_body(c, "u1", "Running");
        idle_for(c, 2 * 60 * USEC_PER_SEC);
        assert_int_equal(c->srv.hits, 6);

        /* gone: not retried */
        c->code = 404;
        status_manager_set(c->m, "u1", "ns1", "web", status("Succeeded"));
        assert_true(wait_hits(c, 7, 10 * USEC_PER_SEC));
        idle_for(c, 2 * 60 * USEC_PER_SEC);
        assert_int_equal(c->srv.hits, 7);
}

/* kube-apiserver v1.20.2's answer to a status PATCH whose metadata.uid is not the pod's (the mirror pod was
 * replaced by one with a new UID before the patch landed) */
#define UID_MISMATCH_422                                                                                                 \
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","                             \
        "\"message\":\"Pod \\\"static-n1\\\" is invalid: metadata.uid: Invalid value: \\\"u1\\\": field is immutable\"," \
        "\"reason\":\"Invalid\",\"details\":{\"name\":\"static-n1\",\"kind\":\"Pod\",\"causes\":[{\"reason\":"           \
        "\"FieldValueInvalid\",\"message\":\"Invalid value: \\\"u1\\\": field is immutable\","                           \
        "\"field\":\"metadata.uid\"}]},\"code\":422}"

/* a UID precondition failure is "replaced" whatever code carries it: not retried, nothing more sent for that UID;
 * a 422 on another field is an error like any other, retried */
static void test_replaced_422(void **state) {
        struct ctx *c = *state;

        c->code = 422;
        c->reply = UID_MISMATCH_422;
        status_manager_set(c->m, "u1", "kube-system", "static-n1", status("Running"));
        assert_true(wait_hits(c, 1, 10 * USEC_PER_SEC));
        idle_for(c, 2 * 60 * USEC_PER_SEC);
        assert_int_equal(c->srv.hits, 1);
        /* a later status of that UID is not sent either; the new pod's (its own UID) is */
        status_manager_set(c->m, "u1", "kube-system", "static-n1", status("Succeeded"));
        idle_for(c, 60 * USEC_PER_SEC);
        assert_int_equal(c->srv.hits, 1);
        c->code = 200;
        c->reply = NULL;
        status_manager_set(c->m, "u2", "kube-system", "static-n1", status("Running"));
        assert_true(wait_hits(c, 2, 10 * USEC_PER_SEC));
        assert_body(c, "u2", "Running");

        /* the 409 of a precondition, as newer API servers answer it */
        c->code = 409;
        c->reply = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"Conflict\","
                   "\"message\":\"Precondition failed: UID in precondition: u2, UID in object meta: u3\",\"code\":409}";
        status_manager_set(c->m, "u2", "kube-system", "static-n1", status("Succeeded"));
        assert_true(wait_hits(c, 3, 10 * USEC_PER_SEC));
        idle_for(c, 2 * 60 * USEC_PER_SEC);
        assert_int_equal(c->srv.hits, 3);

        /* invalid for another reason: retried */
        c->code = 422;
        c->reply = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"reason\":\"Invalid\","
                   "\"details\":{\"causes\":[{\"field\":\"status.phase\"}]},\"code\":422}";
        status_manager_set(c->m, "u4", "kube-system", "other", status("Running"));
        assert_true(wait_hits(c, 6, 60 * USEC_PER_SEC));
}

/* a pod forgotten while its request is in flight: nothing more is sent for it */
static void test_forget_in_flight(void **state) {
        struct ctx *c = *state;

        c->hold = true;
        status_manager_set(c->m, "u1", "ns1", "web", status("Running"));
        assert_true(wait_hits(c, 1, 10 * USEC_PER_SEC));
        status_manager_set(c->m, "u1", "ns1", "web", status("Succeeded"));
        status_manager_forget(c->m, "u1");
        srv_reply_json(c->held, 500, "{}");
        c->held = NULL;
        idle_for(c, 2 * 60 * USEC_PER_SEC);
        assert_int_equal(c->srv.hits, 1);
}

struct final_seen {
        unsigned calls, hits_then;
        struct ctx *c;
};

static void on_final(const char *uid, void *userdata) {
        struct final_seen *f = userdata;
        assert_string_equal(uid, "u1");
        f->calls++;
        f->hits_then = f->c->srv.hits;
}

static bool final_called(void *userdata) {
        return ((struct final_seen *) userdata)->calls > 0;
}

/* a final status: done only once the API server accepted it (after retries), never inside the call, once; the
 * pod's entry survives the worker's forget until then */
static void test_final_after_accepted(void **state) {
        struct ctx *c = *state;
        struct final_seen f = { .c = c };

        c->code = 500;
        status_manager_set(c->m, "u1", "ns1", "web", status("Running"));
        assert_int_equal(status_manager_set_final(c->m, "u1", "ns1", "web", status("Failed"), on_final, &f), 0);
        status_manager_forget(c->m, "u1"); /* the worker goes at once */
        assert_int_equal(f.calls, 0);
        assert_true(wait_hits(c, 3, 60 * USEC_PER_SEC));
        assert_int_equal(f.calls, 0); /* refused so far */
        c->code = 200;
        assert_true(vloop_run_until_io(c->base, final_called, &f, 60 * USEC_PER_SEC, QUIET_USEC));
        assert_body(c, "u1", "Failed");
        assert_int_equal(f.hits_then, c->srv.hits);
        idle_for(c, 2 * 60 * USEC_PER_SEC);
        assert_int_equal(f.calls, 1);
        assert_null(status_manager_get(c->m, "u1")); /* forgotten with it */
}

/* already accepted, or the pod is gone: done at once, but not inside the call */
static void test_final_synced_or_gone(void **state) {
        struct ctx *c = *state;
        struct final_seen f = { .c = c };

        status_manager_set(c->m, "u1", "ns1", "web", status("Failed"));
        assert_true(wait_hits(c, 1, 10 * USEC_PER_SEC));
        idle_for(c, USEC_PER_SEC);
        assert_int_equal(status_manager_set_final(c->m, "u1", "ns1", "web", status("Failed"), on_final, &f), 0);
        assert_int_equal(f.calls, 0);
        assert_true(vloop_run_until_io(c->base, final_called, &f, 10 * USEC_PER_SEC, QUIET_USEC));
        assert_int_equal(c->srv.hits, 1); /* nothing new to send */

        f.calls = 0;
        c->code = 404;
        assert_int_equal(status_manager_set_final(c->m, "u1", "ns1", "web", status("Succeeded"), on_final, &f), 0);
        assert_true(vloop_run_until_io(c->base, final_called, &f, 10 * USEC_PER_SEC, QUIET_USEC));
        idle_for(c, 2 * 60 * USEC_PER_SEC);
        assert_int_equal(f.calls, 1);
        assert_int_equal(c->srv.hits, 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_patch_once, setup, teardown),
                cmocka_unit_test_setup_teardown(test_coalesced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_retry_and_gone, setup, teardown),
                cmocka_unit_test_setup_teardown(test_forget_in_flight, setup, teardown),
                cmocka_unit_test_setup_teardown(test_replaced_422, setup, teardown),
                cmocka_unit_test_setup_teardown(test_final_after_accepted, setup, teardown),
                cmocka_unit_test_setup_teardown(test_final_synced_or_gone, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
