/* SPDX-License-Identifier: Apache-2.0 */
/* kube_request() against a real HTTP server (evhttp) on the same loop: JSON bodies, v1 Status and generic
 * errors, retries with back-off and Retry-After, the response size cap, methods and bodies, the bearer
 * token (sent, never logged), the QPS limiter, cancellation and freeing the client with requests pending. */
#include <fcntl.h>
#include <signal.h>

#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/time.h"
#include "client/client-internal.h"
#include "loopback.h"

#define MS 1000u

struct call {
        unsigned calls;
        int r;
        long status;
        char *error, *reason, *body;
        uint64_t at_usec;
        struct ctx *t;
};

struct ctx {
        struct event_base *base;
        struct srv srv;
        struct kube_client *client;
        json_t *empty;      /* {} */
        unsigned completed; /* callbacks run, over all calls */

        /* per-test server script */
        int codes[8]; /* status of hit i (the last one repeats) */
        const char *bodies[8];
        const char *retry_after;
        size_t big_len;
        bool big_chunked;

        /* in-callback actions */
        struct kube_request *to_cancel;
        bool free_client_in_cb;

        char log_path[64];
        int saved_stderr;
};

static void call_done(struct call *c) {
        free(c->error);
        free(c->reason);
        free(c->body);
        *c = (struct call) { .t = c->t };
}

static void on_response(const struct kube_response *resp, void *userdata) {
        struct call *c = userdata;
        struct ctx *t = c->t;

        assert_non_null(resp->error);
        assert_non_null(resp->reason);
        c->calls++;
        c->r = resp->r;
        c->status = resp->status;
        free(c->error);
        free(c->reason);
        free(c->body);
        c->error = strdup(resp->error);
        c->reason = strdup(resp->reason);
        c->body = resp->body ? json_dumps(resp->body, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
        c->at_usec = now_usec();
        t->completed++;
        if (t->to_cancel) {
                kube_request_cancel(t->to_cancel);
                t->to_cancel = NULL;
        }
        if (t->free_client_in_cb) {
                t->client = kube_client_free(t->client);
                t->free_client_in_cb = false;
        }
}

static int setup(void **state) {
        struct ctx *t = calloc(1, sizeof(*t));

        if (!t)
                return -1;
        t->saved_stderr = -1;
        t->base = event_base_new();
        t->empty = json_object();
        if (!t->base || !t->empty || srv_start(&t->srv, t->base) < 0)
                return -1;
        *state = t;
        return 0;
}

static void restore_stderr(struct ctx *t);

static int teardown(void **state) {
        struct ctx *t = *state;

        restore_stderr(t);
        log_set_verbosity(0);
        kube_client_free(t->client);
        srv_stop(&t->srv);
        event_base_free(t->base);
        json_decref(t->empty);
        free(t);
        return 0;
}

static void new_client(struct ctx *t, const struct kube_config *cfg, const struct kube_client_options *o) {
        struct kube_config def = { .server = t->srv.url };

        assert_int_equal(kube_client_new(t->base, cfg ? cfg : &def, o, &t->client), 0);
}

static void request(struct ctx *t, const char *method, const char *path, const json_t *body, const char *ct, int flags,
                    struct call *c, struct kube_request **ret) {
        c->t = t;
        assert_int_equal(kube_request(t->client, method, path, body, ct, flags, on_response, c, ret), 0);
        assert_int_equal(c->calls, 0); /* never inside kube_request() */
}

/* Request and wait for its callback. */
static void roundtrip(struct ctx *t, const char *method, const char *path, const json_t *body, const char *ct,
                      int flags, struct call *c) {
        unsigned before = t->completed;

        call_done(c);
        request(t, method, path, body, ct, flags, c, NULL);
        assert_reached(t->base, &t->completed, before + 1, 10000);
        assert_int_equal(c->calls, 1);
}

/* Run the loop until the request reaches that state (it must not complete meanwhile). */
static void run_until_state(struct ctx *t, struct kube_request *r, enum kube_request_state state) {
        bool expired = false;
        struct event *deadline = evtimer_new(t->base, srv_on_deadline, &expired);
        struct timeval tv = { .tv_sec = 5 };
        unsigned before = t->completed;

        assert_non_null(deadline);
        evtimer_add(deadline, &tv);
        while (r->state != state && !expired) {
                assert_int_equal(t->completed, before);
                event_base_loop(t->base, EVLOOP_ONCE);
        }
        event_free(deadline);
        assert_int_equal(r->state, state);
        assert_int_equal(t->completed, before);
}

/* ---------------------------------------------------------------- handlers */

/* codes[]/bodies[] by hit number; the last entry set repeats */
static void handle_script(struct srv *s, struct evhttp_request *req) {
        struct ctx *t = s->userdata;
        size_t i = MIN((size_t) s->hits - 1, ELEMENTSOF(t->codes) - 1);
        const char *body;
        char hdr[64];

        while (i > 0 && t->codes[i] == 0)
                i--;
        if (t->codes[i] < 0) {
                srv_drop(s, req); /* -1: close the connection without an answer */
                return;
        }
        body = t->bodies[i] ? t->bodies[i] : "";
        if (t->retry_after)
                snprintf(hdr, sizeof(hdr), "Retry-After: %s", t->retry_after);
        srv_reply(req, t->codes[i], body[0] == '{' ? "application/json" : "text/plain",
                  t->retry_after && t->codes[i] >= 429 ? hdr : NULL, body, strlen(body));
}

static void script(struct ctx *t, int code0, const char *body0, int code1, const char *body1, int code2,
                   const char *body2) {
        memset(t->codes, 0, sizeof(t->codes));
        memset(t->bodies, 0, sizeof(t->bodies));
        t->codes[0] = code0;
        t->bodies[0] = body0;
        t->codes[1] = code1;
        t->bodies[1] = body1;
        t->codes[2] = code2;
        t->bodies[2] = body2;
        t->srv.hits = 0;
        t->srv.handler = handle_script;
        t->srv.userdata = t;
}

static void handle_big(struct srv *s, struct evhttp_request *req) {
        struct ctx *t = s->userdata;
        char *body = malloc(t->big_len + 1);

        assert_non_null(body);
        /* a JSON object of the wanted length: {"x":"xxx...x"} */
        memset(body, 'x', t->big_len);
        memcpy(body, "{\"x\":\"", 6);
        memcpy(body + t->big_len - 2, "\"}", 2);
        body[t->big_len] = '\0';
        if (t->big_chunked) {
                const char *chunks[] = { body, NULL };
                srv_stream(s, req, 200, 0, SRV_END, chunks);
        } else
                srv_reply(req, 200, "application/json", NULL, body, t->big_len);
        free(body);
}

static void handle_hold(struct srv *s, struct evhttp_request *req) {
        srv_hold(s, req);
}

/* /api/v1/held: no answer; /api/v1/backoff: 503; anything else: 200 {} */
static void handle_paths(struct srv *s, struct evhttp_request *req) {
        if (startswith(s->uri, "/api/v1/held"))
                srv_hold(s, req);
        else if (startswith(s->uri, "/api/v1/backoff"))
                srv_reply(req, 503, NULL, NULL, NULL, 0);
        else
                srv_reply_json(req, 200, "{}");
}

/* ---------------------------------------------------------------- tests */

static const char node_json[] = "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"}}";

static void test_get_json(void **state) {
        struct ctx *t = *state;
        struct call c = { 0 };
        struct kube_client_options o = { .user_agent = "test-agent/1.0" };
        char server[128];

        new_client(t, NULL, NULL);
        script(t, 200, node_json, 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes/n1?resourceVersion=0", NULL, NULL, 0, &c);
        assert_int_equal(c.r, 0);
        assert_int_equal(c.status, 200);
        assert_string_equal(c.error, "");
        assert_string_equal(c.reason, "");
        assert_string_equal(c.body, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"n1\"}}");
        assert_int_equal(t->srv.hits, 1);
        assert_string_equal(t->srv.method, "GET");
        assert_string_equal(t->srv.uri, "/api/v1/nodes/n1?resourceVersion=0");
        assert_string_equal(srv_header(&t->srv, "Accept"), "application/json");
        assert_true(startswith(srv_header(&t->srv, "User-Agent"), "ckubelet/" CKUBELET_VERSION " (linux/"));
        assert_true(endswith(srv_header(&t->srv, "User-Agent"), ") kubernetes/v" KUBE_VERSION_MAJOR_MINOR));
        assert_null(srv_header(&t->srv, "Authorization"));
        assert_null(srv_header(&t->srv, "Content-Type"));
        assert_non_null(strstr(srv_header(&t->srv, "Accept-Encoding"), "gzip"));
        assert_string_equal(t->srv.body, "");

        /* an empty 2xx body: no body, no error */
        script(t, 200, "", 0, NULL, 0, NULL);
        roundtrip(t, "DELETE", "/api/v1/namespaces/default/pods/p", NULL, NULL, 0, &c);
        assert_int_equal(c.r, 0);
        assert_int_equal(c.status, 200);
        assert_null(c.body);
        assert_string_equal(t->srv.method, "DELETE");

        /* a server URL with a path prefix and a trailing slash, and a custom user agent */
        t->client = kube_client_free(t->client);
        snprintf(server, sizeof(server), "%s/prefix/", t->srv.url);
        {
                struct kube_config cfg = { .server = server };
                new_client(t, &cfg, &o);
        }
        script(t, 201, "{\"a\":[1,2]}", 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
        assert_int_equal(c.status, 201);
        assert_string_equal(c.body, "{\"a\":[1,2]}");
        assert_string_equal(t->srv.uri, "/prefix/api/v1/nodes");
        assert_string_equal(srv_header(&t->srv, "User-Agent"), "test-agent/1.0");

        /* disable-compression: no Accept-Encoding */
        t->client = kube_client_free(t->client);
        {
                struct kube_config cfg = { .server = t->srv.url, .disable_compression = true };
                new_client(t, &cfg, NULL);
        }
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
        assert_int_equal(c.status, 201);
        assert_null(srv_header(&t->srv, "Accept-Encoding"));
        call_done(&c);
}

static const char status_404[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
        "\"message\":\"nodes \\\"n9\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"n9\",\"kind\":\"nodes\"},"
        "\"code\":404}";
static const char status_409[] =
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"Operation cannot be fulfilled on "
        "nodes \\\"n1\\\": the object has been modified; please apply your changes to the latest version and try "
        "again\",\"reason\":\"Conflict\",\"code\":409}";

static void test_errors(void **state) {
        struct ctx *t = *state;
        struct call c = { 0 };

        new_client(t, NULL, NULL);

        /* a v1 Status: its message and reason, and the body */
        script(t, 404, status_404, 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes/n9", NULL, NULL, 0, &c);
        assert_int_equal(c.r, 0);
        assert_int_equal(c.status, 404);
        assert_string_equal(c.error, "nodes \"n9\" not found");
        assert_string_equal(c.reason, "NotFound");
        assert_non_null(c.body);
        assert_non_null(strstr(c.body, "\"kind\":\"Status\""));
        assert_int_equal(t->srv.hits, 1); /* 4xx are not retried */

        script(t, 409, status_409, 0, NULL, 0, NULL);
        roundtrip(t, "PUT", "/api/v1/nodes/n1", t->empty, NULL, 0, &c);
        assert_int_equal(c.status, 409);
        assert_string_equal(c.reason, "Conflict");
        assert_true(startswith(c.error, "Operation cannot be fulfilled on nodes \"n1\""));

        /* not JSON: the generic error for the code */
        script(t, 404, "404 page not found\n", 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/apis/foo/v1/bars", NULL, NULL, 0, &c);
        assert_int_equal(c.r, 0);
        assert_int_equal(c.status, 404);
        assert_string_equal(c.error, "the server could not find the requested resource");
        assert_string_equal(c.reason, "NotFound");
        assert_null(c.body);

        /* a 409 without a Status for a POST: AlreadyExists */
        script(t, 409, "", 0, NULL, 0, NULL);
        roundtrip(t, "POST", "/api/v1/namespaces/default/events", t->empty, NULL, 0, &c);
        assert_string_equal(c.reason, "AlreadyExists");
        assert_string_equal(c.error, "the server reported a conflict");

        /* a Status without message and reason: the generic ones */
        script(t, 422, "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"code\":422}", 0, NULL, 0,
               NULL);
        roundtrip(t, "PATCH", "/api/v1/nodes/n1/status", t->empty, "application/merge-patch+json", 0, &c);
        assert_string_equal(c.reason, "Invalid");
        assert_string_equal(c.error, "the server rejected our request due to an error in our request");

        /* JSON that is not a Status */
        script(t, 400, "{\"error\":\"bad\"}", 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
        assert_string_equal(c.reason, "BadRequest");
        assert_string_equal(c.error, "the server rejected our request for an unknown reason");

        /* 403: the server's text is the message */
        script(t, 403, "nodes is forbidden: User \"system:anonymous\" cannot list resource \"nodes\"\n", 0, NULL, 0,
               NULL);
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
        assert_string_equal(c.reason, "Forbidden");
        assert_string_equal(c.error, "nodes is forbidden: User \"system:anonymous\" cannot list resource \"nodes\"");

        /* 5xx without retries: delivered once, with the server's text */
        script(t, 500, "boom\n", 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, KUBE_NO_RETRY, &c);
        assert_int_equal(c.r, 0);
        assert_int_equal(c.status, 500);
        assert_string_equal(c.reason, "InternalError");
        assert_string_equal(c.error, "an error on the server (\"boom\") has prevented the request from succeeding");
        assert_int_equal(t->srv.hits, 1);

        script(t, 503, "", 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, KUBE_NO_RETRY, &c);
        assert_int_equal(c.status, 503);
        assert_string_equal(c.reason, "ServiceUnavailable");
        assert_string_equal(c.error, "the server is currently unable to handle the request");
        assert_int_equal(t->srv.hits, 1);

        /* a 2xx body that is not JSON */
        script(t, 200, "hello, world", 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
        assert_int_equal(c.r, -EBADMSG);
        assert_int_equal(c.status, 200);
        assert_null(c.body);
        assert_non_null(strstr(c.error, "cannot decode the response body"));
        assert_int_equal(t->srv.hits, 1); /* not retried */
        call_done(&c);
}

static void test_retries(void **state) {
        struct ctx *t = *state;
        struct call c = { 0 };
        uint64_t gap;

        new_client(t, NULL, NULL);

        /* 500 twice, then 200: retried, and the success is delivered */
        script(t, 500, "", 500, "{}", 200, node_json);
        roundtrip(t, "GET", "/api/v1/nodes/n1", NULL, NULL, 0, &c);
        assert_int_equal(c.r, 0);
        assert_int_equal(c.status, 200);
        assert_string_equal(c.error, "");
        assert_non_null(strstr(c.body, "\"name\":\"n1\""));
        assert_int_equal(t->srv.hits, 3);
        /* jittered back-off: 100 ms, then 200 ms (times [0.8, 1.2)) */
        assert_true(t->srv.hit_usec[1] - t->srv.hit_usec[0] >= 75 * MS);
        assert_true(t->srv.hit_usec[2] - t->srv.hit_usec[1] >= 155 * MS);

        /* 429 and 502 are retried too; a POST that reached the server is retried on a status */
        script(t, 429, "", 502, "", 201, "{}");
        roundtrip(t, "POST", "/api/v1/namespaces/default/events", t->empty, NULL, 0, &c);
        assert_int_equal(c.status, 201);
        assert_int_equal(t->srv.hits, 3);
        assert_string_equal(t->srv.method, "POST");
        assert_string_equal(t->srv.body, "{}"); /* the body is sent again */

        /* KUBE_NO_RETRY: the 500 is delivered */
        script(t, 500, "", 200, "{}", 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes/n1", NULL, NULL, KUBE_NO_RETRY, &c);
        assert_int_equal(c.status, 500);
        assert_int_equal(t->srv.hits, 1);

        /* always 503: five attempts, then the last answer */
        script(t, 503,
               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"message\":\"etcd is down\",\"reason\":"
               "\"ServiceUnavailable\",\"code\":503}",
               0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes/n1", NULL, NULL, 0, &c);
        assert_int_equal(c.r, 0);
        assert_int_equal(c.status, 503);
        assert_string_equal(c.error, "etcd is down");
        assert_string_equal(c.reason, "ServiceUnavailable");
        assert_int_equal(t->srv.hits, KUBE_MAX_ATTEMPTS);

        /* Retry-After is honoured when longer than the back-off */
        t->retry_after = "1";
        script(t, 429, "", 200, "{}", 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
        assert_int_equal(c.status, 200);
        assert_int_equal(t->srv.hits, 2);
        gap = t->srv.hit_usec[1] - t->srv.hit_usec[0];
        assert_true(gap >= 990 * MS);
        assert_true(gap < 5000 * MS);
        /* ...and ignored when it is not a number of seconds: the back-off alone */
        t->retry_after = "Wed, 21 Oct 2015 07:28:00 GMT";
        script(t, 503, "", 200, "{}", 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
        assert_int_equal(c.status, 200);
        assert_int_equal(t->srv.hits, 2);
        assert_true(t->srv.hit_usec[1] - t->srv.hit_usec[0] < 900 * MS);
        t->retry_after = NULL;
        call_done(&c);
}

static void test_too_large(void **state) {
        struct ctx *t = *state;
        struct kube_client_options o = { .max_response_size = 1000 };
        struct call c = { 0 };

        new_client(t, NULL, &o);
        t->srv.handler = handle_big;
        t->srv.userdata = t;

        /* with a Content-Length */
        t->big_len = 5000;
        t->srv.hits = 0;
        roundtrip(t, "GET", "/api/v1/pods", NULL, NULL, 0, &c);
        assert_int_equal(c.r, -EFBIG);
        assert_null(c.body);
        assert_non_null(strstr(c.error, "larger than 1000 bytes"));
        assert_int_equal(t->srv.hits, 1); /* not retried */

        /* chunked, without a length: cut off */
        t->big_chunked = true;
        t->srv.hits = 0;
        roundtrip(t, "GET", "/api/v1/pods", NULL, NULL, 0, &c);
        assert_int_equal(c.r, -EFBIG);
        assert_int_equal(t->srv.hits, 1);

        /* exactly the limit is fine, both ways */
        t->big_len = 1000;
        roundtrip(t, "GET", "/api/v1/pods", NULL, NULL, 0, &c);
        assert_int_equal(c.r, 0);
        assert_int_equal(c.status, 200);
        assert_int_equal(strlen(c.body), 1000);
        t->big_chunked = false;
        roundtrip(t, "GET", "/api/v1/pods", NULL, NULL, 0, &c);
        assert_int_equal(c.r, 0);
        assert_int_equal(strlen(c.body), 1000);

        /* a big error body is not retried either */
        {
                static char big_error[3000];
                memset(big_error, 'e', sizeof(big_error) - 1);
                script(t, 500, big_error, 200, "{}", 0, NULL);
        }
        roundtrip(t, "GET", "/api/v1/pods", NULL, NULL, 0, &c);
        assert_int_equal(c.r, -EFBIG);
        assert_int_equal(t->srv.hits, 1);
        call_done(&c);
}

static void test_methods_and_bodies(void **state) {
        struct ctx *t = *state;
        struct call c = { 0 };
        json_t *body = json_pack("{s:s, s:{s:s, s:i}, s:[b, n]}", "kind", "Event", "metadata", "name", "e\xc3\xa9\"1",
                                 "generation", 3, "list", 1);
        _cleanup_free_ char *want = json_dumps(body, JSON_COMPACT);

        assert_non_null(body);
        new_client(t, NULL, NULL);
        script(t, 201, "{}", 0, NULL, 0, NULL);

        roundtrip(t, "POST", "/api/v1/namespaces/default/events", body, NULL, 0, &c);
        assert_string_equal(t->srv.method, "POST");
        assert_string_equal(t->srv.uri, "/api/v1/namespaces/default/events");
        assert_string_equal(t->srv.body, want);
        assert_string_equal(srv_header(&t->srv, "Content-Type"), "application/json");
        assert_int_equal(atoi(srv_header(&t->srv, "Content-Length")), strlen(want));
        assert_null(srv_header(&t->srv, "Expect"));

        roundtrip(t, "PATCH", "/api/v1/nodes/n1/status", body, "application/strategic-merge-patch+json", 0, &c);
        assert_string_equal(t->srv.method, "PATCH");
        assert_string_equal(t->srv.body, want);
        assert_string_equal(srv_header(&t->srv, "Content-Type"), "application/strategic-merge-patch+json");

        roundtrip(t, "PATCH", "/api/v1/nodes/n1", body, "application/merge-patch+json", 0, &c);
        assert_string_equal(srv_header(&t->srv, "Content-Type"), "application/merge-patch+json");

        roundtrip(t, "PUT", "/api/v1/nodes/n1", body, NULL, 0, &c);
        assert_string_equal(t->srv.method, "PUT");
        assert_string_equal(t->srv.body, want);

        roundtrip(t, "DELETE", "/api/v1/namespaces/default/pods/p", body, NULL, 0, &c);
        assert_string_equal(t->srv.method, "DELETE");
        assert_string_equal(t->srv.body, want);

        /* a POST without a body; a GET after a POST on the same (pooled) handle is a plain GET */
        roundtrip(t, "POST", "/api/v1/x", NULL, NULL, 0, &c);
        assert_string_equal(t->srv.method, "POST");
        assert_string_equal(t->srv.body, "");
        roundtrip(t, "GET", "/api/v1/x", NULL, NULL, 0, &c);
        assert_string_equal(t->srv.method, "GET");
        assert_string_equal(t->srv.body, "");
        assert_null(srv_header(&t->srv, "Content-Type"));

        /* a JSON scalar body */
        {
                json_t *s = json_string("just a string");
                roundtrip(t, "PUT", "/api/v1/x", s, NULL, 0, &c);
                assert_string_equal(t->srv.body, "\"just a string\"");
                json_decref(s);
        }

        /* bad arguments fail at once */
        assert_int_equal(kube_request(t->client, "HEAD", "/api", NULL, NULL, 0, on_response, &c, NULL), -EINVAL);
        assert_int_equal(kube_request(t->client, "get", "/api", NULL, NULL, 0, on_response, &c, NULL), -EINVAL);
        assert_int_equal(kube_request(t->client, "GET", "api/v1", NULL, NULL, 0, on_response, &c, NULL), -EINVAL);
        assert_int_equal(kube_request(t->client, "GET", "", NULL, NULL, 0, on_response, &c, NULL), -EINVAL);
        assert_int_equal(kube_request(t->client, "GET", "/api v1", NULL, NULL, 0, on_response, &c, NULL), -EINVAL);
        assert_int_equal(kube_request(t->client, "GET", "/api\r\nX: y", NULL, NULL, 0, on_response, &c, NULL), -EINVAL);
        assert_int_equal(kube_request(t->client, "GET", "/api#frag", NULL, NULL, 0, on_response, &c, NULL), -EINVAL);
        assert_int_equal(kube_request(t->client, "POST", "/api", body, "text/x\r\nX: y", 0, on_response, &c, NULL),
                         -EINVAL);
        assert_int_equal(kube_request(t->client, "POST", "/api", body, "", 0, on_response, &c, NULL), -EINVAL);
        assert_int_equal(kube_request(t->client, "GET", "/api", NULL, NULL, 0, NULL, &c, NULL), -EINVAL);
        assert_int_equal(kube_request(NULL, "GET", "/api", NULL, NULL, 0, on_response, &c, NULL), -EINVAL);
        run_for(t->base, 50);
        assert_int_equal(c.calls, 1);
        json_decref(body);
        call_done(&c);
}

/* ---------------------------------------------------------------- tokens and logs */

static void capture_stderr(struct ctx *t) {
        int fd;

        snprintf(t->log_path, sizeof(t->log_path), "/tmp/ckubelet-client-%d.log", (int) getpid());
        fflush(stderr);
        t->saved_stderr = dup(STDERR_FILENO);
        fd = open(t->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        assert_true(fd >= 0 && t->saved_stderr >= 0);
        assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        close(fd);
}

static char *captured(struct ctx *t) {
        char *data = NULL;

        fflush(stderr);
        assert_int_equal(read_full_file(t->log_path, 64 * 1024 * 1024, &data, NULL), 0);
        return data;
}

static void restore_stderr(struct ctx *t) {
        _cleanup_free_ char *data = NULL;

        if (t->saved_stderr < 0)
                return;
        fflush(stderr);
        dup2(t->saved_stderr, STDERR_FILENO);
        close(t->saved_stderr);
        t->saved_stderr = -1;
        if (read_full_file(t->log_path, 64 * 1024 * 1024, &data, NULL) >= 0)
                fputs(data, stderr);
        unlink(t->log_path);
}

#define TOKEN "s3cr3t-b34r3r-t0k3n"

static void test_bearer_token(void **state) {
        struct ctx *t = *state;
        struct kube_config cfg = { .server = t->srv.url, .token = (char *) TOKEN };
        struct call c = { 0 };
        _cleanup_free_ char *log = NULL;

        capture_stderr(t);
        log_set_verbosity(10);
        new_client(t, &cfg, NULL);

        script(t, 200, node_json, 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes/n1", NULL, NULL, 0, &c);
        assert_int_equal(c.status, 200);
        assert_string_equal(srv_header(&t->srv, "Authorization"), "Bearer " TOKEN);

        /* errors, retries and transport failures are logged at high verbosity: never with the token */
        script(t, 500, "", 401, "{\"kind\":\"Status\",\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\"}", 0,
               NULL);
        roundtrip(t, "POST", "/api/v1/namespaces/default/events", t->empty, NULL, 0, &c);
        assert_int_equal(c.status, 401);
        assert_string_equal(c.reason, "Unauthorized");
        assert_null(strstr(c.error, TOKEN));
        assert_string_equal(srv_header(&t->srv, "Authorization"), "Bearer " TOKEN); /* the retry has it too */

        script(t, 200, "not json", 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
        assert_int_equal(c.r, -EBADMSG);
        assert_null(strstr(c.error, TOKEN));

        log = captured(t);
        assert_non_null(strstr(log, "/api/v1/nodes")); /* something was logged */
        assert_null(strstr(log, TOKEN));
        restore_stderr(t);
        log_set_verbosity(0);

        /* a token file: read when needed */
        t->client = kube_client_free(t->client);
        {
                char path[] = "/tmp/ckubelet-token-XXXXXX";
                int fd = mkstemp(path);
                struct kube_config fcfg = { .server = t->srv.url, .token_file = path };

                assert_true(fd >= 0);
                assert_int_equal(write(fd, "file-token\n", 11), 11);
                close(fd);
                new_client(t, &fcfg, NULL);
                script(t, 200, "{}", 0, NULL, 0, NULL);
                roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
                assert_int_equal(c.r, 0);
                assert_string_equal(srv_header(&t->srv, "Authorization"), "Bearer file-token");

                /* a missing token file and no token yet: the request fails without reaching the server */
                t->client = kube_client_free(t->client);
                assert_int_equal(unlink(path), 0);
                new_client(t, &fcfg, NULL);
                t->srv.hits = 0;
                roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
                assert_int_equal(c.r, -ENOENT);
                assert_int_equal(c.status, 0);
                assert_non_null(strstr(c.error, path));
                assert_int_equal(t->srv.hits, 0);
        }

        /* token file rotation: re-read at most once a minute, the last good token kept */
        if (now_usec() > 120 * 1000 * MS) {
                char path[] = "/tmp/ckubelet-token-XXXXXX";
                int fd = mkstemp(path);
                struct kube_config fcfg = { .server = t->srv.url, .token_file = path };

                assert_true(fd >= 0);
                assert_int_equal(write(fd, "tok1", 4), 4);
                close(fd);
                t->client = kube_client_free(t->client);
                new_client(t, &fcfg, NULL);
                script(t, 200, "{}", 0, NULL, 0, NULL);
                roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
                assert_string_equal(srv_header(&t->srv, "Authorization"), "Bearer tok1");

                assert_int_equal(write_file_atomic(path, "tok2\n", 5, 0600), 0);
                roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
                assert_string_equal(srv_header(&t->srv, "Authorization"), "Bearer tok1"); /* not yet */
                t->client->token_read_usec -= 61 * 1000 * MS;                             /* a minute later */
                roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
                assert_string_equal(srv_header(&t->srv, "Authorization"), "Bearer tok2");

                /* the file gone, then empty: the last good token stays */
                assert_int_equal(unlink(path), 0);
                t->client->token_read_usec -= 61 * 1000 * MS;
                capture_stderr(t);
                roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
                assert_int_equal(c.r, 0);
                assert_string_equal(srv_header(&t->srv, "Authorization"), "Bearer tok2");
                assert_int_equal(write_file_atomic(path, "\n", 1, 0600), 0);
                t->client->token_read_usec -= 61 * 1000 * MS;
                roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c);
                assert_string_equal(srv_header(&t->srv, "Authorization"), "Bearer tok2");
                {
                        _cleanup_free_ char *warnings = captured(t);
                        assert_non_null(strstr(warnings, "Unable to rotate token"));
                        assert_null(strstr(warnings, "tok2"));
                }
                restore_stderr(t);
                unlink(path);
        }

        /* a token with a line break is refused */
        t->client = kube_client_free(t->client);
        cfg.token = (char *) "abc\r\nX-Injected: 1";
        assert_int_equal(kube_client_new(t->base, &cfg, NULL, &t->client), -EINVAL);
        assert_null(t->client);
        call_done(&c);
}

/* ---------------------------------------------------------------- rate limiting */

static void test_qps(void **state) {
        struct ctx *t = *state;
        struct kube_client_options o = { .qps = 20, .burst = 2 };
        struct call c[6];
        uint64_t t0, at[6];

        new_client(t, NULL, &o);
        script(t, 200, "{}", 0, NULL, 0, NULL);
        t0 = now_usec();
        for (size_t i = 0; i < ELEMENTSOF(c); i++) {
                c[i] = (struct call) { 0 };
                request(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &c[i], NULL);
        }
        assert_reached(t->base, &t->completed, 6, 10000);
        for (size_t i = 0; i < ELEMENTSOF(c); i++) {
                assert_int_equal(c[i].calls, 1);
                assert_int_equal(c[i].status, 200);
                at[i] = c[i].at_usec - t0;
        }
        /* sorted completion times: the k-th (from 0) cannot come before its slot at (k - 1) * 50 ms */
        for (size_t i = 0; i < ELEMENTSOF(at); i++)
                for (size_t j = i + 1; j < ELEMENTSOF(at); j++)
                        if (at[j] < at[i]) {
                                uint64_t x = at[i];
                                at[i] = at[j];
                                at[j] = x;
                        }
        for (size_t k = 2; k < ELEMENTSOF(at); k++)
                if (at[k] + 10 * MS < (k - 1) * 50 * MS)
                        fail_msg("request %zu completed after %llu ms, before its slot at %zu ms", k,
                                 (unsigned long long) (at[k] / MS), (k - 1) * 50);
        assert_true(at[5] >= 180 * MS);
        for (size_t i = 0; i < ELEMENTSOF(c); i++)
                call_done(&c[i]);

        /* retries take a token like any request: with qps 2 and burst 1, the retry waits for its slot */
        t->client = kube_client_free(t->client);
        o = (struct kube_client_options) { .qps = 2, .burst = 1 };
        new_client(t, NULL, &o);
        script(t, 500, "", 200, "{}", 0, NULL);
        t0 = now_usec();
        {
                struct call r = { 0 };
                roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, 0, &r);
                assert_int_equal(r.status, 200);
                assert_int_equal(t->srv.hits, 2);
                assert_true(t->srv.hit_usec[1] - t0 >= 480 * MS);
                call_done(&r);
        }
}

/* ---------------------------------------------------------------- cancellation and freeing */

static void test_cancel(void **state) {
        struct ctx *t = *state;
        struct kube_client_options o = { .qps = 2, .burst = 1 };
        struct call a = { 0 }, b = { 0 };
        struct kube_request *ra = NULL, *rb = NULL;

        new_client(t, NULL, &o);

        /* before it started */
        script(t, 200, "{}", 0, NULL, 0, NULL);
        request(t, "GET", "/api/v1/a", NULL, NULL, 0, &a, &ra);
        assert_non_null(ra);
        kube_request_cancel(ra);
        run_for(t->base, 150);
        assert_int_equal(a.calls, 0);
        assert_int_equal(t->srv.hits, 0);
        kube_request_cancel(NULL);

        /* waiting for its rate-limiter slot: the first request takes the only token, the second waits 500 ms */
        t->client = kube_client_free(t->client);
        new_client(t, NULL, &o);
        request(t, "GET", "/api/v1/a", NULL, NULL, 0, &a, &ra);
        request(t, "GET", "/api/v1/b", NULL, NULL, 0, &b, &rb);
        assert_reached(t->base, &t->srv.hits, 1, 5000);
        assert_int_equal(rb->state, KUBE_REQ_WAITING);
        kube_request_cancel(rb);
        assert_reached(t->base, &a.calls, 1, 5000);
        run_for(t->base, 700);
        assert_int_equal(a.calls, 1);
        assert_int_equal(b.calls, 0);
        assert_int_equal(t->srv.hits, 1);
        assert_string_equal(t->srv.uri, "/api/v1/a");
        call_done(&a);

        /* while the transfer runs */
        t->client = kube_client_free(t->client);
        new_client(t, NULL, NULL);
        t->srv.handler = handle_hold;
        t->srv.hits = 0;
        request(t, "GET", "/api/v1/held", NULL, NULL, 0, &a, &ra);
        assert_reached(t->base, &t->srv.hits, 1, 5000);
        kube_request_cancel(ra);
        run_for(t->base, 200);
        assert_int_equal(a.calls, 0);

        /* during its back-off */
        script(t, 500, "", 200, "{}", 0, NULL);
        request(t, "GET", "/api/v1/retried", NULL, NULL, 0, &a, &ra);
        run_until_state(t, ra, KUBE_REQ_BACKOFF);
        assert_int_equal(t->srv.hits, 1);
        kube_request_cancel(ra);
        run_for(t->base, 400);
        assert_int_equal(a.calls, 0);
        assert_int_equal(t->srv.hits, 1);

        /* finished, its callback armed but not run yet */
        script(t, 200, "{}", 0, NULL, 0, NULL);
        request(t, "GET", "/api/v1/finished", NULL, NULL, 0, &a, &ra);
        run_until_state(t, ra, KUBE_REQ_FINISHED);
        kube_request_cancel(ra);
        run_for(t->base, 100);
        assert_int_equal(a.calls, 0);
        assert_int_equal(t->srv.hits, 1);

        /* from another request's callback */
        t->srv.handler = handle_hold;
        t->srv.hits = 0;
        request(t, "GET", "/api/v1/held", NULL, NULL, 0, &b, &rb);
        assert_reached(t->base, &t->srv.hits, 1, 5000);
        script(t, 200, "{}", 0, NULL, 0, NULL);
        t->to_cancel = rb;
        request(t, "GET", "/api/v1/quick", NULL, NULL, 0, &a, &ra);
        assert_reached(t->base, &a.calls, 1, 5000);
        assert_null(t->to_cancel);
        run_for(t->base, 200);
        assert_int_equal(b.calls, 0);
        call_done(&a);
        call_done(&b);
}

static void test_free_with_pending(void **state) {
        struct ctx *t = *state;
        struct kube_client_options o = { .qps = 5, .burst = 3 };
        struct call c[6] = { 0 };

        /* one held by the server, one in back-off, one done but undelivered, the others rate-limited */
        new_client(t, NULL, &o);
        t->srv.handler = handle_paths;
        request(t, "GET", "/api/v1/held", NULL, NULL, 0, &c[0], NULL);
        assert_reached(t->base, &t->srv.hits, 1, 5000);
        request(t, "GET", "/api/v1/backoff", NULL, NULL, 0, &c[1], NULL);
        assert_reached(t->base, &t->srv.hits, 2, 5000);
        {
                struct kube_request *r = NULL;

                /* this one finished, its callback armed */
                request(t, "GET", "/api/v1/a", NULL, NULL, 0, &c[2], &r);
                run_until_state(t, r, KUBE_REQ_FINISHED);
        }
        request(t, "GET", "/api/v1/b", NULL, NULL, 0, &c[3], NULL);
        request(t, "POST", "/api/v1/c", t->empty, NULL, 0, &c[4], NULL);
        request(t, "PATCH", "/api/v1/d", t->empty, "application/merge-patch+json", 0, &c[5], NULL);
        t->client = kube_client_free(t->client);
        run_for(t->base, 400);
        for (size_t i = 0; i < ELEMENTSOF(c); i++)
                assert_int_equal(c[i].calls, 0);
        assert_int_equal(t->completed, 0);

        /* freeing the client from a callback, with another request running */
        new_client(t, NULL, NULL);
        t->srv.handler = handle_hold;
        t->srv.hits = 0;
        request(t, "GET", "/api/v1/held", NULL, NULL, 0, &c[0], NULL);
        assert_reached(t->base, &t->srv.hits, 1, 5000);
        script(t, 200, "{}", 0, NULL, 0, NULL);
        t->free_client_in_cb = true;
        request(t, "GET", "/api/v1/quick", NULL, NULL, 0, &c[1], NULL);
        request(t, "GET", "/api/v1/quick2", NULL, NULL, 0, &c[2], NULL);
        assert_reached(t->base, &t->completed, 1, 5000);
        assert_null(t->client);
        run_for(t->base, 200);
        assert_int_equal(t->completed, 1);
        assert_int_equal(c[0].calls, 0);
        assert_int_equal(c[1].calls + c[2].calls, 1);
        for (size_t i = 0; i < ELEMENTSOF(c); i++)
                call_done(&c[i]);
        kube_client_free(NULL);
}

/* ---------------------------------------------------------------- transport failures */

static void test_transport_errors(void **state) {
        struct ctx *t = *state;
        struct kube_client_options o = { .timeout_usec = 200 * MS };
        struct call c = { 0 };
        uint64_t t0;

        /* a request timeout (not retried here) */
        new_client(t, NULL, &o);
        t->srv.handler = handle_hold;
        t0 = now_usec();
        roundtrip(t, "GET", "/api/v1/slow", NULL, NULL, KUBE_NO_RETRY, &c);
        assert_int_equal(c.r, -ETIMEDOUT);
        assert_int_equal(c.status, 0);
        assert_true(now_usec() - t0 >= 190 * MS);
        assert_non_null(strstr(c.error, "/api/v1/slow"));
        assert_null(c.body);

        /* nobody listening */
        t->client = kube_client_free(t->client);
        srv_stop(&t->srv);
        new_client(t, NULL, NULL);
        roundtrip(t, "GET", "/api/v1/nodes", NULL, NULL, KUBE_NO_RETRY, &c);
        assert_int_equal(c.r, -ECONNREFUSED);
        assert_int_equal(c.status, 0);
        assert_true(strlen(c.error) > 0);
        /* retried (a connection could not be made, even for a POST), then delivered */
        roundtrip(t, "POST", "/api/v1/nodes", t->empty, NULL, 0, &c);
        assert_int_equal(c.r, -ECONNREFUSED);
        call_done(&c);
}

static void test_dropped_connection(void **state) {
        struct ctx *t = *state;
        struct call c = { 0 };

        /* the server closes the connection without answering */
        new_client(t, NULL, NULL);
        script(t, -1, NULL, 0, NULL, 0, NULL);
        roundtrip(t, "GET", "/api/v1/nodes/n1", NULL, NULL, KUBE_NO_RETRY, &c);
        assert_int_equal(c.r, -ECONNRESET);
        assert_int_equal(c.status, 0);
        assert_non_null(strstr(c.error, "/api/v1/nodes/n1"));
        assert_int_equal(t->srv.hits, 1);

        /* a GET is retried */
        script(t, -1, NULL, -1, NULL, 200, "{}");
        roundtrip(t, "GET", "/api/v1/nodes/n1", NULL, NULL, 0, &c);
        assert_int_equal(c.r, 0);
        assert_int_equal(c.status, 200);
        assert_int_equal(t->srv.hits, 3);

        /* a POST that reached the server is not: it may have been acted on (a fresh client: curl itself
         * retries a request that died on a reused keep-alive connection) */
        t->client = kube_client_free(t->client);
        new_client(t, NULL, NULL);
        script(t, -1, NULL, 201, "{}", 0, NULL);
        roundtrip(t, "POST", "/api/v1/namespaces/default/events", t->empty, NULL, 0, &c);
        assert_int_equal(c.r, -ECONNRESET);
        assert_int_equal(c.status, 0);
        assert_int_equal(t->srv.hits, 1);
        run_for(t->base, 300);
        assert_int_equal(t->srv.hits, 1);
        call_done(&c);
}

static void test_client_new(void **state) {
        struct ctx *t = *state;
        struct kube_client *k = NULL;
        struct kube_config cfg = { .server = (char *) "ftp://127.0.0.1" };
        struct kube_client_options o = { .user_agent = "x\r\ny" };

        capture_stderr(t); /* errors are logged */
        assert_int_equal(kube_client_new(t->base, &cfg, NULL, &k), -EINVAL);
        cfg.server = (char *) "http://127.0.0.1:1/?watch=1";
        assert_int_equal(kube_client_new(t->base, &cfg, NULL, &k), -EINVAL);
        cfg.server = (char *) "not a url";
        assert_int_equal(kube_client_new(t->base, &cfg, NULL, &k), -EINVAL);
        cfg.server = (char *) "";
        assert_int_equal(kube_client_new(t->base, &cfg, NULL, &k), -EINVAL);
        cfg.server = NULL;
        assert_int_equal(kube_client_new(t->base, &cfg, NULL, &k), -EINVAL);
        cfg.server = t->srv.url;
        assert_int_equal(kube_client_new(NULL, &cfg, NULL, &k), -EINVAL);
        assert_int_equal(kube_client_new(t->base, NULL, NULL, &k), -EINVAL);
        assert_int_equal(kube_client_new(t->base, &cfg, &o, &k), -EINVAL);
        assert_null(k);
        restore_stderr(t);
        assert_int_equal(kube_client_new(t->base, &cfg, NULL, &k), 0);
        assert_non_null(k);
        assert_null(kube_client_free(k));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_get_json, setup, teardown),
                cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_retries, setup, teardown),
                cmocka_unit_test_setup_teardown(test_too_large, setup, teardown),
                cmocka_unit_test_setup_teardown(test_methods_and_bodies, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bearer_token, setup, teardown),
                cmocka_unit_test_setup_teardown(test_qps, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_free_with_pending, setup, teardown),
                cmocka_unit_test_setup_teardown(test_transport_errors, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dropped_connection, setup, teardown),
                cmocka_unit_test_setup_teardown(test_client_new, setup, teardown),
        };

        signal(SIGPIPE, SIG_IGN);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
