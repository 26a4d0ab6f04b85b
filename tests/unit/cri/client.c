/* SPDX-License-Identifier: Apache-2.0 */
/* The CRI client's transport behaviour (through grpc/client.c) without a runtime: connection refused, a peer
 * that closes, a peer that never answers (deadline), cancellation on free, an owner cancelling its calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include "basic/time.h"
#include "cri/cri.h"

/* ---------------------------------------------------------------- client transport */

struct result {
        int calls;
        int r;
        int grpc_status;
        char message[512];
        bool inside_call;
        struct cri_client *client;
        int reentrant_r;
};

static bool in_cri_call;

static void on_reply(const struct cri_reply *reply, void *userdata) {
        struct result *res = userdata;
        res->calls++;
        res->r = reply->r;
        res->grpc_status = reply->grpc_status;
        res->inside_call = in_cri_call;
        snprintf(res->message, sizeof(res->message), "%s", reply->message);
        if (res->client) { /* a call from inside a callback during free must be refused */
                Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
                res->reentrant_r = cri_version(res->client, &req, 0, on_reply, res, NULL);
        }
}

static int listen_unix(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        strcpy(sa.sun_path, path);
        unlink(path);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(listen(fd, 16), 0);
        return fd;
}

static void run_until(struct event_base *base, struct result *res, int calls) {
        uint64_t deadline = now_usec() + 5 * USEC_PER_SEC;
        while (res->calls < calls && now_usec() < deadline)
                event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static void test_connection_refused(void **state) {
        struct event_base *base = event_base_new();
        struct cri_client *c = NULL;
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        struct result res = {};

        assert_int_equal(cri_client_new(base, "unix:///nonexistent/ckubelet-test.sock", NULL, USEC_PER_SEC, &c), 0);
        in_cri_call = true;
        assert_int_equal(cri_version(c, &req, 0, on_reply, &res, NULL), 0);
        in_cri_call = false;
        assert_int_equal(res.calls, 0); /* never from inside cri_call */
        run_until(base, &res, 1);
        assert_int_equal(res.calls, 1);
        assert_false(res.inside_call);
        assert_int_equal(res.grpc_status, GRPC_UNAVAILABLE);
        assert_int_equal(res.r, -ECONNREFUSED);
        assert_non_null(strstr(res.message, "/nonexistent/ckubelet-test.sock"));
        cri_client_free(c);
        event_base_free(base);
}

/* tcp: the connect is non-blocking; a refused one fails the call from the loop */
static void test_tcp_connection_refused(void **state) {
        struct event_base *base = event_base_new();
        struct cri_client *c = NULL;
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        struct result res = {};
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        char ep[64];
        int fd;

        /* a port nobody listens on: bind one, then close it */
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
        close(fd);
        snprintf(ep, sizeof(ep), "tcp://127.0.0.1:%d", ntohs(sa.sin_port));

        assert_int_equal(cri_client_new(base, ep, NULL, USEC_PER_SEC, &c), 0);
        in_cri_call = true;
        assert_int_equal(cri_version(c, &req, 0, on_reply, &res, NULL), 0);
        in_cri_call = false;
        run_until(base, &res, 1);
        assert_int_equal(res.calls, 1);
        assert_false(res.inside_call);
        assert_int_equal(res.grpc_status, GRPC_UNAVAILABLE);
        assert_non_null(strstr(res.message, "dial tcp 127.0.0.1:"));
        cri_client_free(c);
        event_base_free(base);
}

static void test_bad_endpoint(void **state) {
        struct event_base *base = event_base_new();
        struct cri_client *c = NULL;
        assert_int_equal(cri_client_new(base, "http://127.0.0.1:1", NULL, USEC_PER_SEC, &c), -EPROTONOSUPPORT);
        assert_null(c);
        /* tcp:// takes addresses, not names */
        assert_int_equal(cri_client_new(base, "tcp://localhost:1", NULL, USEC_PER_SEC, &c), -EINVAL);
        assert_int_equal(cri_client_new(base, "tcp://127.0.0.1:0", NULL, USEC_PER_SEC, &c), -EINVAL);
        assert_int_equal(cri_client_new(base, "tcp://[::1:80", NULL, USEC_PER_SEC, &c), -EINVAL);
        assert_null(c);
        event_base_free(base);
}

static void test_deadline_and_peer_close(void **state) {
        char dir[] = "/tmp/ckubelet-cri-test-XXXXXX", path[128];
        struct event_base *base = event_base_new();
        struct cri_client *c = NULL;
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        struct result res = {};
        uint64_t t0;
        int lfd, afd;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/sock", dir);
        lfd = listen_unix(path);
        assert_int_equal(cri_client_new(base, path, NULL, 200 * 1000, &c), 0);

        /* a peer that accepts and never answers: the deadline fires */
        t0 = now_usec();
        assert_int_equal(cri_version(c, &req, 0, on_reply, &res, NULL), 0);
        run_until(base, &res, 1);
        assert_int_equal(res.calls, 1);
        assert_int_equal(res.grpc_status, GRPC_DEADLINE_EXCEEDED);
        assert_int_equal(res.r, -ETIMEDOUT);
        assert_true(now_usec() - t0 >= 150 * 1000); /* libevent may use the coarse monotonic clock */
        assert_true(now_usec() - t0 < 3 * USEC_PER_SEC);

        /* the peer closes the connection: pending calls fail as unavailable */
        afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        assert_true(afd >= 0);
        assert_int_equal(cri_version(c, &req, 10 * USEC_PER_SEC, on_reply, &res, NULL), 0);
        for (int i = 0; i < 20; i++)
                event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        close(afd);
        run_until(base, &res, 2);
        assert_int_equal(res.calls, 2);
        assert_int_equal(res.grpc_status, GRPC_UNAVAILABLE);
        assert_non_null(strstr(res.message, "closed"));

        /* pending calls are cancelled on free; calls from their callbacks are refused */
        assert_int_equal(cri_version(c, &req, 10 * USEC_PER_SEC, on_reply, &res, NULL), 0);
        res.client = c;
        cri_client_free(c);
        assert_int_equal(res.calls, 3);
        assert_int_equal(res.grpc_status, GRPC_CANCELLED);
        assert_int_equal(res.reentrant_r, -ESHUTDOWN);

        close(lfd);
        unlink(path);
        rmdir(dir);
        event_base_free(base);
}

/* An owner's set of calls: a call leaves it when its callback runs; cri_calls_cancel() ends the rest with no
 * callback, giving each call's context to the set's drop; the client then has nothing left to fail. */
static int dropped;
static void drop(void *userdata) {
        struct result *res = userdata;
        res->calls += 100; /* told apart from a callback */
        dropped++;
}

static void test_owner_cancels(void **state) {
        char dir[] = "/tmp/ckubelet-cri-test-XXXXXX", path[128];
        struct event_base *base = event_base_new();
        struct cri_client *c = NULL;
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        struct cri_calls owner = { .drop = drop }, other = {};
        struct result a = {}, b = {}, x = {};
        int lfd;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/sock", dir);
        lfd = listen_unix(path); /* accepts, never answers */
        assert_int_equal(cri_client_new(base, path, NULL, 0, &c), 0);

        /* one call that ends by itself (its deadline) leaves the set before its callback runs */
        assert_int_equal(cri_version(c, &req, 100 * 1000, on_reply, &x, &other), 0);
        assert_true(cri_calls_pending(&other));
        run_until(base, &x, 1);
        assert_int_equal(x.calls, 1);
        assert_int_equal(x.grpc_status, GRPC_DEADLINE_EXCEEDED);
        assert_false(cri_calls_pending(&other));

        /* two calls in flight (sent, unanswered), cancelled by their owner: no callback, each context dropped */
        assert_int_equal(cri_version(c, &req, 10 * USEC_PER_SEC, on_reply, &a, &owner), 0);
        assert_int_equal(cri_version(c, &req, 10 * USEC_PER_SEC, on_reply, &b, &owner), 0);
        for (int i = 0; i < 20; i++)
                event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        assert_true(cri_calls_pending(&owner));
        cri_calls_cancel(&owner);
        assert_false(cri_calls_pending(&owner));
        assert_int_equal(dropped, 2);
        assert_int_equal(a.calls, 100);
        assert_int_equal(b.calls, 100);
        for (int i = 0; i < 20; i++)
                event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        cri_client_free(c); /* nothing pending: no callback now either */
        assert_int_equal(a.calls, 100);
        assert_int_equal(b.calls, 100);
        cri_calls_cancel(&owner); /* empty: nothing */
        cri_calls_cancel(NULL);
        assert_int_equal(dropped, 2);

        close(lfd);
        unlink(path);
        rmdir(dir);
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_connection_refused),     cmocka_unit_test(test_bad_endpoint),
                cmocka_unit_test(test_tcp_connection_refused), cmocka_unit_test(test_deadline_and_peer_close),
                cmocka_unit_test(test_owner_cancels),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
