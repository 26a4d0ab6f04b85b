/* SPDX-License-Identifier: Apache-2.0 */
/* kube_watch() against a real HTTP server (evhttp) streaming chunked watch events on the same loop: events
 * split across chunks, the end of the stream, lines that are not events, the idle timeout, error statuses,
 * and cancelling the watch or freeing the client from inside the event callback. */
#include <signal.h>

#include "basic/strv.h"
#include "basic/time.h"
#include "client/client-internal.h"
#include "loopback.h"

#define MS 1000u

struct ctx {
        struct event_base *base;
        struct srv srv;
        struct kube_client *client;
        struct kube_request *watch;

        /* what the server streams */
        int code;
        const char *const *chunks;
        unsigned delay_ms;
        int end; /* SRV_STALL, SRV_END, SRV_DROP */

        /* what the watch delivered */
        unsigned events, dones;
        char **types, **names;
        int r;
        long status;
        char *error;
        uint64_t done_usec;

        /* in-callback actions, at event number n (1-based) */
        unsigned cancel_at, free_at;
        bool free_in_done;
};

static void handle_stream(struct srv *s, struct evhttp_request *req) {
        struct ctx *t = s->userdata;

        srv_stream(s, req, t->code, t->delay_ms, t->end, t->chunks);
}

static void handle_hold(struct srv *s, struct evhttp_request *req) {
        srv_hold(s, req);
}

static void serve(struct ctx *t, int code, unsigned delay_ms, int end, const char *const *chunks) {
        t->code = code;
        t->delay_ms = delay_ms;
        t->end = end;
        t->chunks = chunks;
        t->srv.handler = handle_stream;
        t->srv.userdata = t;
}

static void on_event(const char *type, json_t *object, void *userdata) {
        struct ctx *t = userdata;
        const char *name = json_string_value(json_object_get(json_object_get(object, "metadata"), "name"));

        assert_non_null(type);
        assert_true(json_is_object(object));
        t->events++;
        assert_int_equal(strv_extend(&t->types, type), 0);
        assert_int_equal(strv_extend(&t->names, name ? name : "-"), 0);
        if (t->cancel_at == t->events) {
                kube_request_cancel(t->watch);
                kube_request_cancel(t->watch); /* twice is harmless */
                t->watch = NULL;
        }
        if (t->free_at == t->events) {
                t->client = kube_client_free(t->client);
                t->watch = NULL;
        }
}

static void on_done(int r, long status, const char *error, void *userdata) {
        struct ctx *t = userdata;

        assert_non_null(error);
        t->dones++;
        t->r = r;
        t->status = status;
        free(t->error);
        t->error = strdup(error);
        t->done_usec = now_usec();
        t->watch = NULL;
        if (t->free_in_done)
                t->client = kube_client_free(t->client);
}

static void reset(struct ctx *t) {
        t->events = t->dones = 0;
        t->types = strv_free(t->types);
        t->names = strv_free(t->names);
        t->r = 0;
        t->status = 0;
        free(t->error);
        t->error = NULL;
        t->cancel_at = t->free_at = 0;
        t->free_in_done = false;
        t->srv.hits = 0;
}

static int setup(void **state) {
        struct ctx *t = calloc(1, sizeof(*t));
        struct kube_config cfg = {};

        if (!t)
                return -1;
        t->base = event_base_new();
        if (!t->base || srv_start(&t->srv, t->base) < 0)
                return -1;
        cfg.server = t->srv.url;
        if (kube_client_new(t->base, &cfg, NULL, &t->client) < 0)
                return -1;
        *state = t;
        return 0;
}

static int teardown(void **state) {
        struct ctx *t = *state;

        kube_client_free(t->client);
        srv_stop(&t->srv);
        event_base_free(t->base);
        reset(t);
        free(t);
        return 0;
}

static void watch(struct ctx *t, const char *path, uint64_t idle_usec) {
        unsigned before = t->events + t->dones;

        assert_int_equal(kube_watch(t->client, path, idle_usec, on_event, on_done, t, &t->watch), 0);
        assert_non_null(t->watch);
        assert_int_equal(t->events + t->dones, before); /* nothing inside kube_watch() */
}

#define EV(type, name) "{\"type\":\"" type "\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\"}}}"

/* ---------------------------------------------------------------- streams */

/* the strv l, its items joined by spaces, is want */
static void assert_joined(char **l, const char *want) {
        char *s = strv_join(l, " ");
        assert_non_null(s);
        assert_string_equal(s, want);
        free(s);
}

static void test_events_split_across_chunks(void **state) {
        struct ctx *t = *state;
        static const char *const chunks[] = {
                EV("ADDED", "a") "\n{\"type\":\"MODI",
                "FIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"na",
                "me\":\"b\"}}}",
                "\n",
                EV("DELETED", "c") "\r\n\n" EV("BOOKMARK", "d") "\n" EV("ADDED", "e"),
                "\n{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\"}}\n",
                /* the last line without its newline */
                EV("MODIFIED", "f"),
                NULL,
        };

        serve(t, 200, 15, SRV_END, chunks);
        watch(t, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&resourceVersion=5&watch=true", 5 * 1000 * MS);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, 0);
        assert_int_equal(t->status, 200);
        assert_string_equal(t->error, "");
        assert_int_equal(t->events, 7);
        assert_joined(t->types, "ADDED MODIFIED DELETED BOOKMARK ADDED ERROR MODIFIED");
        assert_joined(t->names, "a b c d e - f");
        assert_int_equal(t->srv.hits, 1);
        assert_string_equal(t->srv.method, "GET");
        assert_string_equal(t->srv.uri, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1&resourceVersion=5&watch=true");
        assert_string_equal(srv_header(&t->srv, "Accept"), "application/json");
        assert_null(t->watch);

        /* all at once, in one chunk; and an empty stream */
        {
                static const char *const one[] = { EV("ADDED", "x") "\n" EV("ADDED", "y") "\n", NULL };
                reset(t);
                serve(t, 200, 0, SRV_END, one);
                watch(t, "/api/v1/pods?watch=true", 0);
                assert_reached(t->base, &t->dones, 1, 10000);
                assert_int_equal(t->r, 0);
                assert_int_equal(t->events, 2);
        }
        reset(t);
        serve(t, 200, 0, SRV_END, NULL);
        watch(t, "/api/v1/pods?watch=true", 0);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, 0);
        assert_int_equal(t->status, 200);
        assert_int_equal(t->events, 0);
}

static void test_bad_lines(void **state) {
        struct ctx *t = *state;
        static const char *const not_json[] = { EV("ADDED", "a") "\nthis is not json\n" EV("ADDED", "b") "\n", NULL };
        static const char *const no_object[] = { EV("ADDED", "a") "\n", "{\"type\":\"ADDED\"}\n" EV("ADDED", "b") "\n",
                                                 NULL };
        static const char *const no_type[] = { "{\"object\":{}}\n", NULL };
        static const char *const array[] = { "[1,2]\n", NULL };

        /* the stream stays open: the watch must end on the bad line, not on a timeout */
        serve(t, 200, 0, SRV_STALL, not_json);
        watch(t, "/api/v1/pods?watch=true", 0);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, -EBADMSG);
        assert_int_equal(t->events, 1);
        assert_string_equal(t->names[0], "a");
        assert_true(strlen(t->error) > 0);
        run_for(t->base, 100);
        assert_int_equal(t->events, 1);
        assert_int_equal(t->dones, 1);

        reset(t);
        serve(t, 200, 10, SRV_STALL, no_object);
        watch(t, "/api/v1/pods?watch=true", 0);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, -EBADMSG);
        assert_int_equal(t->events, 1);

        reset(t);
        serve(t, 200, 0, SRV_END, no_type);
        watch(t, "/api/v1/pods?watch=true", 0);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, -EBADMSG);
        assert_int_equal(t->events, 0);

        reset(t);
        serve(t, 200, 0, SRV_END, array);
        watch(t, "/api/v1/pods?watch=true", 0);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, -EBADMSG);
}

static void test_idle_timeout(void **state) {
        struct ctx *t = *state;
        static const char *const one[] = { EV("ADDED", "a") "\n", NULL };
        static const char *const half[] = { EV("ADDED", "a") "\n{\"type\":\"MODIFIED\",\"obj", NULL };
        static const char *const slow[] = { EV("ADDED", "a") "\n", EV("ADDED", "b") "\n", EV("ADDED", "c") "\n",
                                            EV("ADDED", "d") "\n", NULL };
        uint64_t t0;

        /* one event, then silence */
        serve(t, 200, 0, SRV_STALL, one);
        t0 = now_usec();
        watch(t, "/api/v1/pods?watch=true", 300 * MS);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, -ETIMEDOUT);
        assert_int_equal(t->status, 200);
        assert_int_equal(t->events, 1);
        assert_true(t->done_usec - t0 >= 290 * MS);
        assert_non_null(strstr(t->error, "/api/v1/pods?watch=true"));

        /* silence in the middle of an event: the partial line is dropped, the watch timed out */
        reset(t);
        serve(t, 200, 0, SRV_STALL, half);
        watch(t, "/api/v1/pods?watch=true", 300 * MS);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, -ETIMEDOUT);
        assert_int_equal(t->events, 1);

        /* no answer at all: the timer runs from the start */
        reset(t);
        t->srv.handler = handle_hold;
        t0 = now_usec();
        watch(t, "/api/v1/pods?watch=true", 300 * MS);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, -ETIMEDOUT);
        assert_int_equal(t->status, 0);
        assert_int_equal(t->events, 0);
        assert_true(t->done_usec - t0 >= 290 * MS);

        /* bytes every 100 ms keep a 500 ms timer from firing: 4 events over ~300 ms, then the end */
        reset(t);
        serve(t, 200, 100, SRV_END, slow);
        watch(t, "/api/v1/pods?watch=true", 500 * MS);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, 0);
        assert_int_equal(t->events, 4);
}

static void test_error_status(void **state) {
        struct ctx *t = *state;
        static const char *const expired[] = {
                "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",",
                "\"message\":\"too old resource version: 1 (5)\",\"reason\":\"Expired\",\"code\":410}\n",
                NULL,
        };
        static const char *const text[] = { "upstream connect error\n", NULL };

        serve(t, 410, 10, SRV_END, expired);
        watch(t, "/api/v1/pods?resourceVersion=1&watch=true", 5 * 1000 * MS);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, 0);
        assert_int_equal(t->status, 410);
        assert_string_equal(t->error, "too old resource version: 1 (5)");
        assert_int_equal(t->events, 0);

        /* no Status: the generic message; watches are not retried */
        reset(t);
        serve(t, 503, 0, SRV_END, text);
        watch(t, "/api/v1/pods?watch=true", 0);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, 0);
        assert_int_equal(t->status, 503);
        assert_string_equal(t->error, "the server is currently unable to handle the request");
        assert_int_equal(t->srv.hits, 1);

        reset(t);
        serve(t, 500, 0, SRV_END, text);
        watch(t, "/api/v1/pods?watch=true", 0);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->status, 500);
        assert_string_equal(
                t->error,
                "an error on the server (\"upstream connect error\") has prevented the request from succeeding");
        run_for(t->base, 300);
        assert_int_equal(t->srv.hits, 1);

        /* the request cannot be prepared (its token file is missing): done() with the error, from the loop */
        reset(t);
        {
                struct kube_config cfg = { .server = t->srv.url, .token_file = (char *) "/nonexistent/ckubelet-token" };

                t->client = kube_client_free(t->client);
                assert_int_equal(kube_client_new(t->base, &cfg, NULL, &t->client), 0);
                watch(t, "/api/v1/pods?watch=true", 0);
                assert_reached(t->base, &t->dones, 1, 10000);
                assert_int_equal(t->r, -ENOENT);
                assert_int_equal(t->status, 0);
                assert_non_null(strstr(t->error, "/nonexistent/ckubelet-token"));
                assert_int_equal(t->srv.hits, 0);
        }

        /* bad arguments */
        assert_int_equal(kube_watch(t->client, "pods", 0, on_event, on_done, t, NULL), -EINVAL);
        assert_int_equal(kube_watch(t->client, "/api/v1/pods", 0, NULL, on_done, t, NULL), -EINVAL);
        assert_int_equal(kube_watch(t->client, "/api/v1/pods", 0, on_event, NULL, t, NULL), -EINVAL);
        assert_int_equal(kube_watch(NULL, "/api/v1/pods", 0, on_event, on_done, t, NULL), -EINVAL);
}

static void handle_drop(struct srv *s, struct evhttp_request *req) {
        srv_drop(s, req);
}

static void test_dropped_and_large(void **state) {
        struct ctx *t = *state;
        static const char *const half[] = { EV("ADDED", "a") "\n{\"type\":\"MODIFIED\",\"obj", NULL };
        const size_t huge = KUBE_WATCH_MAX_EVENT + 4096, big = 1024 * 1024;
        char *line, *many;
        const char *chunks[2] = { NULL, NULL };
        size_t n = 0;

        /* the connection breaks mid-stream, in the middle of an event: a transport error, the fragment dropped */
        serve(t, 200, 10, SRV_DROP, half);
        watch(t, "/api/v1/pods?watch=true", 5 * 1000 * MS);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_int_equal(t->r, -ECONNRESET);
        assert_int_equal(t->status, 200);
        assert_int_equal(t->events, 1);
        assert_true(strlen(t->error) > 0);

        /* ...or before any answer */
        reset(t);
        t->srv.handler = handle_drop;
        watch(t, "/api/v1/pods?watch=true", 5 * 1000 * MS);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_true(t->r < 0);
        assert_int_equal(t->status, 0);
        assert_int_equal(t->events, 0);
        assert_int_equal(t->srv.hits, 1);

        /* an event line over 16 MiB */
        reset(t);
        line = malloc(huge + 1);
        assert_non_null(line);
        memset(line, 'x', huge);
        {
                static const char prefix[] = "{\"type\":\"ADDED\",\"object\":{\"data\":\"";
                memcpy(line, prefix, strlen(prefix));
        }
        line[huge] = '\0';
        chunks[0] = line;
        serve(t, 200, 0, SRV_STALL, chunks);
        watch(t, "/api/v1/pods?watch=true", 5 * 1000 * MS);
        assert_reached(t->base, &t->dones, 1, 20000);
        assert_int_equal(t->r, -EFBIG);
        assert_int_equal(t->events, 0);
        assert_non_null(strstr(t->error, "larger than 16777216 bytes"));
        free(line);

        /* 40 events of 1 MiB at once: all of them, in order */
        reset(t);
        many = malloc(40 * (big + 64));
        assert_non_null(many);
        for (unsigned i = 0; i < 40; i++) {
                n += (size_t) sprintf(many + n,
                                      "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"%u\"},\"d\":\"", i);
                memset(many + n, 'd', big);
                n += big;
                n += (size_t) sprintf(many + n, "\"}}\n");
        }
        chunks[0] = many;
        serve(t, 200, 0, SRV_END, chunks);
        watch(t, "/api/v1/pods?watch=true", 5 * 1000 * MS);
        assert_reached(t->base, &t->dones, 1, 20000);
        free(many);
        assert_int_equal(t->r, 0);
        assert_int_equal(t->events, 40);
        for (unsigned i = 0; i < 40; i++) {
                char want[16];
                snprintf(want, sizeof(want), "%u", i);
                assert_string_equal(t->names[i], want);
        }
}

/* ---------------------------------------------------------------- cancel and free */

static const char *const three[] = { EV("ADDED", "a") "\n" EV("ADDED", "b") "\n" EV("ADDED", "c") "\n", NULL };

static void test_cancel(void **state) {
        struct ctx *t = *state;

        /* from inside the event callback, with more events buffered and the stream still open */
        serve(t, 200, 0, SRV_STALL, three);
        t->cancel_at = 1;
        watch(t, "/api/v1/pods?watch=true", 300 * MS);
        assert_reached(t->base, &t->events, 1, 10000);
        run_for(t->base, 500); /* past the idle timeout */
        assert_int_equal(t->events, 1);
        assert_int_equal(t->dones, 0);

        /* from inside the event callback, at the last event of a finished stream */
        reset(t);
        serve(t, 200, 0, SRV_END, three);
        t->cancel_at = 3;
        watch(t, "/api/v1/pods?watch=true", 0);
        assert_reached(t->base, &t->events, 3, 10000);
        run_for(t->base, 200);
        assert_int_equal(t->events, 3);
        assert_int_equal(t->dones, 0);

        /* from outside, while streaming */
        reset(t);
        serve(t, 200, 0, SRV_STALL, three);
        watch(t, "/api/v1/pods?watch=true", 300 * MS);
        assert_reached(t->base, &t->events, 3, 10000);
        kube_request_cancel(t->watch);
        run_for(t->base, 500);
        assert_int_equal(t->events, 3);
        assert_int_equal(t->dones, 0);

        /* before it started */
        reset(t);
        watch(t, "/api/v1/pods?watch=true", 300 * MS);
        kube_request_cancel(t->watch);
        run_for(t->base, 400);
        assert_int_equal(t->srv.hits, 0);
        assert_int_equal(t->events + t->dones, 0);

        /* while connecting / waiting for the headers */
        reset(t);
        t->srv.handler = handle_hold;
        watch(t, "/api/v1/pods?watch=true", 300 * MS);
        assert_reached(t->base, &t->srv.hits, 1, 10000);
        kube_request_cancel(t->watch);
        run_for(t->base, 400);
        assert_int_equal(t->events + t->dones, 0);
}

static void test_free_client(void **state) {
        struct ctx *t = *state;

        /* from inside the event callback, with another watch pending */
        serve(t, 200, 0, SRV_STALL, three);
        t->free_at = 2;
        watch(t, "/api/v1/pods?watch=true", 300 * MS);
        {
                struct kube_request *other = NULL;
                assert_int_equal(kube_watch(t->client, "/api/v1/nodes?watch=true", 300 * MS, on_event, on_done, t,
                                            &other),
                                 0);
        }
        assert_reached(t->base, &t->events, 2, 10000);
        assert_null(t->client);
        run_for(t->base, 500);
        assert_true(t->events <= 3); /* the other watch may have delivered one before */
        assert_int_equal(t->dones, 0);

        /* from inside done() */
        {
                struct kube_config cfg = { .server = t->srv.url };
                assert_int_equal(kube_client_new(t->base, &cfg, NULL, &t->client), 0);
        }
        reset(t);
        serve(t, 200, 0, SRV_END, three);
        t->free_in_done = true;
        watch(t, "/api/v1/pods?watch=true", 0);
        assert_reached(t->base, &t->dones, 1, 10000);
        assert_null(t->client);
        assert_int_equal(t->events, 3);
        run_for(t->base, 100);
        assert_int_equal(t->dones, 1);

        /* with a watch in every state: streaming, stalled, not started */
        {
                struct kube_config cfg = { .server = t->srv.url };
                assert_int_equal(kube_client_new(t->base, &cfg, NULL, &t->client), 0);
        }
        reset(t);
        serve(t, 200, 20, SRV_STALL, three);
        watch(t, "/api/v1/pods?watch=true", 300 * MS);
        watch(t, "/api/v1/nodes?watch=true", 300 * MS);
        assert_reached(t->base, &t->events, 2, 10000);
        watch(t, "/api/v1/services?watch=true", 300 * MS);
        t->client = kube_client_free(t->client);
        {
                unsigned events = t->events;
                run_for(t->base, 500);
                assert_int_equal(t->events, events);
                assert_int_equal(t->dones, 0);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_events_split_across_chunks, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bad_lines, setup, teardown),
                cmocka_unit_test_setup_teardown(test_idle_timeout, setup, teardown),
                cmocka_unit_test_setup_teardown(test_error_status, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dropped_and_large, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_free_client, setup, teardown),
        };

        signal(SIGPIPE, SIG_IGN);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
