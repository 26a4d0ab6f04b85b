/* SPDX-License-Identifier: Apache-2.0 */
/* The http source against a small evhttp server on 127.0.0.1 (ephemeral port) on the same event loop:
 * first fetch at once, headers sent, unchanged bodies, 404, oversized bodies (with and without
 * Content-Length), unparsable bodies, empty bodies, an unreachable server. */
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
#include "basic/strv.h"
#include "basic/time.h"
#include "config/config.h"

#define NODE "node-1"

struct ctx {
        struct event_base *base;
        struct pod_config *config;
        unsigned calls;
        char **names;

        struct evhttp *http;
        int port;
        char url[64];
        int status;
        const char *body;
        size_t body_len;
        bool chunked;
        unsigned requests;
        char **received; /* "name: value" of the last request's headers */

        char log_path[64];
        int saved_stderr;
};

static void on_update(const struct pod_set *pods, void *userdata) {
        struct ctx *t = userdata;

        t->calls++;
        t->names = strv_free(t->names);
        for (size_t i = 0; i < pods->n; i++)
                assert_int_equal(strv_extend(&t->names, pods->pods[i]->name), 0);
}

static void on_request(struct evhttp_request *req, void *userdata) {
        struct ctx *t = userdata;
        struct evkeyvalq *h = evhttp_request_get_input_headers(req);
        struct evbuffer *buf = evbuffer_new();

        /* /moved/...: a relative redirect to ../pods.yaml; /loop: a redirect to itself */
        if (strncmp(evhttp_request_get_uri(req), "/moved/", 7) == 0 || streq(evhttp_request_get_uri(req), "/loop")) {
                evhttp_add_header(evhttp_request_get_output_headers(req), "Location",
                                  streq(evhttp_request_get_uri(req), "/loop") ? "/loop" : "../pods.yaml");
                evhttp_send_reply(req, 302, "Found", NULL);
                evbuffer_free(buf);
                return;
        }
        t->requests++;
        t->received = strv_free(t->received);
        for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next) {
                char *line;
                assert_true(asprintf(&line, "%s: %s", kv->key, kv->value) > 0);
                assert_int_equal(strv_push(&t->received, line), 0);
        }
        assert_non_null(buf);
        evbuffer_add(buf, t->body, t->body_len);
        if (t->chunked) {
                evhttp_send_reply_start(req, t->status, "OK");
                evhttp_send_reply_chunk(req, buf);
                evhttp_send_reply_end(req);
        } else
                evhttp_send_reply(req, t->status, t->status == 200 ? "OK" : "Not Found", buf);
        evbuffer_free(buf);
}

static void on_deadline(evutil_socket_t fd, short what, void *userdata) {
        *(bool *) userdata = true;
}

static long loop_for(struct ctx *t, unsigned prev, long ms, bool until_update) {
        uint64_t start = now_usec();
        bool expired = false;
        struct event *deadline = evtimer_new(t->base, on_deadline, &expired);
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

        evtimer_add(deadline, &tv);
        while (!expired && !(until_update && t->calls != prev))
                event_base_loop(t->base, EVLOOP_ONCE);
        event_free(deadline);
        return t->calls == prev ? -1 : (long) ((now_usec() - start) / 1000);
}

static long expect_update(struct ctx *t, long timeout_ms) {
        long ms = loop_for(t, t->calls, timeout_ms, true);
        if (ms < 0)
                fail_msg("no update within %ld ms", timeout_ms);
        return ms;
}

/* No update for at least ms, during which the source polled twice more (so the first poll after a change of the
 * served body was answered and handled before the second began). The polls are waited for up to 10 s: a sanitized
 * build on a loaded machine can take longer than the window for one (a fetch of the 10 MiB body). */
static void expect_no_update(struct ctx *t, long ms) {
        unsigned prev = t->calls, requests = t->requests;
        uint64_t start = now_usec();

        loop_for(t, prev, ms, false);
        while (t->calls == prev && t->requests < requests + 2 && now_usec() - start < 10 * USEC_PER_SEC)
                loop_for(t, prev, 50, false);
        if (t->calls != prev)
                fail_msg("unexpected update");
        assert_true(t->requests >= requests + 2); /* it did poll meanwhile */
}

static void capture_stderr(struct ctx *t) {
        int fd;

        snprintf(t->log_path, sizeof(t->log_path), "/tmp/ckubelet-http-%d.log", (int) getpid());
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

/* The log must come to hold exactly n copies of needle: wait for them (a loaded machine, or a sanitized
 * build streaming 10 MiB, may take longer than a polling window), with no pods update meanwhile. */
static void assert_logged(struct ctx *t, const char *needle, unsigned n) {
        uint64_t deadline = now_usec() + 10 * USEC_PER_SEC;
        unsigned prev = t->calls, got;

        while ((got = count_logged(t, needle)) < n && now_usec() < deadline)
                loop_for(t, prev, 50, false);
        if (t->calls != prev)
                fail_msg("unexpected update while waiting for \"%s\"", needle);
        if (got != n)
                fail_msg("\"%s\" logged %u times, expected %u", needle, got, n);
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

static int setup(void **state) {
        struct ctx *t = calloc(1, sizeof(*t));
        struct evhttp_bound_socket *bound;
        struct sockaddr_in sa;
        socklen_t len = sizeof(sa);

        if (!t)
                return -1;
        t->saved_stderr = -1;
        t->base = event_base_new();
        t->http = t->base ? evhttp_new(t->base) : NULL;
        if (!t->http)
                return -1;
        evhttp_set_gencb(t->http, on_request, t);
        evhttp_set_max_body_size(t->http, 1024);
        bound = evhttp_bind_socket_with_handle(t->http, "127.0.0.1", 0);
        if (!bound || getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *) &sa, &len) < 0)
                return -1;
        t->port = ntohs(sa.sin_port);
        snprintf(t->url, sizeof(t->url), "http://127.0.0.1:%d/pods.yaml", t->port);
        t->status = 200;
        if (pod_config_new(t->base, NODE, on_update, t, &t->config) < 0)
                return -1;
        *state = t;
        return 0;
}

static int teardown(void **state) {
        struct ctx *t = *state;

        restore_stderr(t);
        pod_config_free(t->config);
        if (t->http)
                evhttp_free(t->http);
        event_base_free(t->base);
        strv_free(t->names);
        strv_free(t->received);
        free(t);
        return 0;
}

static const char two_pods[] =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
        "spec: {containers: [{name: c, image: nginx}]}\n"
        "---\n"
        "{\"apiVersion\": \"v1\", \"kind\": \"PodList\", \"items\": [{\"metadata\": {\"name\": \"db\"}, "
        "\"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"postgres\"}]}}]}\n";
static const char one_pod[] = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n"
                              "spec: {containers: [{name: c, image: nginx:2}]}\n";

static void serve(struct ctx *t, int status, const char *body, size_t len, bool chunked) {
        t->status = status;
        t->body = body;
        t->body_len = len;
        t->chunked = chunked;
}

static void test_http(void **state) {
        struct ctx *t = *state;
        char *const headers[] = { "X-Token: abc", "X-Multi: one", "X-Multi: two", "X-Empty: ", NULL };
        _cleanup_free_ char *big = malloc(MANIFEST_MAX_SIZE + 1);
        long ms;

        assert_non_null(big);
        memset(big, '#', MANIFEST_MAX_SIZE + 1);
        capture_stderr(t);

        serve(t, 200, two_pods, strlen(two_pods), false);
        assert_int_equal(pod_config_add_http_source(t->config, t->url, headers, 100 * USEC_PER_MSEC), 0);
        assert_int_equal(pod_config_add_http_source(t->config, t->url, NULL, USEC_PER_SEC), -EEXIST);
        assert_int_equal(t->requests, 0); /* nothing happens before the loop runs */
        /* the first fetch is made at once; not timed here (a sanitized build on a loaded machine missed a 500 ms
         * bound), only bounded by the wait */
        ms = expect_update(t, 2000);
        assert_true(ms >= 0);
        assert_int_equal(strv_length(t->names), 2);
        assert_string_equal(t->names[0], "web-" NODE);
        assert_string_equal(t->names[1], "db-" NODE);
        assert_true(strv_contains(t->received, "X-Token: abc"));
        assert_true(strv_contains(t->received, "X-Multi: one"));
        assert_true(strv_contains(t->received, "X-Multi: two"));
        assert_true(strv_contains(t->received, "X-Empty: "));
        assert_true(strv_contains(t->received, "User-Agent: ckubelet/" CKUBELET_VERSION));

        /* unchanged: polled, no update */
        expect_no_update(t, 350);

        /* 404: an error, logged once, pods kept */
        serve(t, 404, "nope", 4, false);
        expect_no_update(t, 450);
        assert_logged(t, "server returned HTTP status 404", 1);
        assert_int_equal(strv_length(t->names), 2);

        /* the same body as before the error: no update, but the recovery is logged */
        serve(t, 200, two_pods, strlen(two_pods), false);
        expect_no_update(t, 350);
        assert_logged(t, "Successfully read pods from URL", 1);
        serve(t, 404, "nope", 4, false);
        expect_no_update(t, 350);
        assert_logged(t, "server returned HTTP status 404", 2);

        /* too large, with a Content-Length */
        serve(t, 200, big, MANIFEST_MAX_SIZE + 1, false);
        expect_no_update(t, 450);
        assert_logged(t, "response body is larger than 10485760 bytes", 1);

        /* back to good: an update, and "success" is logged */
        serve(t, 200, one_pod, strlen(one_pod), false);
        expect_update(t, 2000);
        assert_int_equal(strv_length(t->names), 1);
        assert_logged(t, "Successfully read pods from URL", 2);

        /* too large, streamed without a Content-Length: the transfer is cut off */
        serve(t, 200, big, MANIFEST_MAX_SIZE + 1, true);
        expect_no_update(t, 450);
        assert_logged(t, "response body is larger than 10485760 bytes", 2);
        assert_int_equal(strv_length(t->names), 1);

        /* a body that is not a valid manifest: error with document and field, pods kept */
        static const char no_image[] =
                "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c}]}\n";
        serve(t, 200, no_image, strlen(no_image), false);
        expect_no_update(t, 350);
        assert_int_equal(count_logged(t, "document 1 (pod \"x\"): spec.containers[0].image: Required value"), 1);
        /* a 404 in between, then the same bad body: its error is reported again */
        serve(t, 404, "nope", 4, false);
        expect_no_update(t, 250);
        serve(t, 200, no_image, strlen(no_image), false);
        expect_no_update(t, 250);
        assert_int_equal(count_logged(t, "document 1 (pod \"x\"): spec.containers[0].image: Required value"), 2);

        /* empty body: zero pods, as upstream */
        serve(t, 200, "", 0, false);
        expect_update(t, 2000);
        assert_int_equal(strv_length(t->names), 0);
        assert_logged(t, "Zero-length data received from", 1);
        expect_no_update(t, 350);
        assert_logged(t, "Zero-length data received from", 1);

        serve(t, 200, two_pods, strlen(two_pods), false);
        expect_update(t, 2000);
        assert_int_equal(strv_length(t->names), 2);
        restore_stderr(t);
}

static void test_unreachable(void **state) {
        struct ctx *t = *state;
        long ms;

        /* nobody listens there any more */
        evhttp_free(t->http);
        t->http = NULL;
        capture_stderr(t);
        assert_int_equal(pod_config_add_http_source(t->config, t->url, NULL, 100 * USEC_PER_MSEC), 0);
        /* the failed first fetch does not hold the first update back (bounded by the wait, not timed: see above) */
        ms = expect_update(t, 3000);
        assert_true(ms >= 0);
        assert_int_equal(strv_length(t->names), 0);
        loop_for(t, t->calls, 400, false);
        assert_logged(t, "Failed to read pods from URL", 1);
        restore_stderr(t);
}

/* redirects are followed (a relative Location too), at most 10 of them */
static void test_redirect(void **state) {
        struct ctx *t = *state;
        char url[96];

        capture_stderr(t);
        serve(t, 200, two_pods, strlen(two_pods), false);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/moved/x", t->port);
        assert_int_equal(pod_config_add_http_source(t->config, url, NULL, 100 * USEC_PER_MSEC), 0);
        expect_update(t, 2000);
        assert_int_equal(strv_length(t->names), 2);
        assert_true(strv_contains(t->received, "User-Agent: ckubelet/" CKUBELET_VERSION));
        restore_stderr(t);
}

static void test_redirect_loop(void **state) {
        struct ctx *t = *state;
        char url[96];

        capture_stderr(t);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/loop", t->port);
        assert_int_equal(pod_config_add_http_source(t->config, url, NULL, USEC_PER_SEC), 0);
        expect_update(t, 3000); /* the first (failed) fetch: an empty set */
        assert_logged(t, "stopped after too many redirects", 1);
        assert_int_equal(t->requests, 0);
        restore_stderr(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_http, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unreachable, setup, teardown),
                cmocka_unit_test_setup_teardown(test_redirect, setup, teardown),
                cmocka_unit_test_setup_teardown(test_redirect_loop, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
