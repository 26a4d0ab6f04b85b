/* SPDX-License-Identifier: Apache-2.0 */
/* The apiserver client over HTTP/2 against an h2 server over TLS (h2server.py next to this file, run by
 * /usr/bin/python3 with Debian's python3-h2, which scripts/install-deps.sh --test installs; skipped without it):
 * 200 watches multiplexed on one TCP connection (the server counts the connections it accepted), a second
 * connection past the server's stream limit, a GOAWAY in the middle of a watch (the stream ends, the watch is
 * resumed from its last resourceVersion on a new connection), and a server that stalls in the middle of a body
 * (the request's deadline fires, the callback runs once; a stalled watch ends once with -ETIMEDOUT). */
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/time.h"
#include "client/client-internal.h"
#include "loopback.h"

#define N_WATCHES 200u

struct ctx {
        struct event_base *base;
        char dir[64];
        pid_t server;
        int port;
        char url[64];
        char ca[96];
        struct kube_client *client;

        unsigned events, dones, responses;
        int last_r;
        long last_status;
        char last_rv[32];
        json_t *last_body;
        struct kube_request *watches[N_WATCHES];
};

static bool have_h2(void) {
        return system("/usr/bin/python3 -c 'import h2, hyperframe' >/dev/null 2>&1") == 0;
}

static int setup_limit(void **state, const char *max_streams) {
        struct ctx *t = calloc(1, sizeof(*t));
        char script[PATH_MAX], src[PATH_MAX], cmd[PATH_MAX + 256], portfile[128];
        _cleanup_free_ char *port = NULL;

        assert_non_null(t);
        t->base = event_base_new();
        snprintf(t->dir, sizeof(t->dir), "/tmp/ckubelet-h2-XXXXXX");
        assert_non_null(mkdtemp(t->dir));
        snprintf(cmd, sizeof(cmd),
                 "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem "
                 "-out cert.pem -days 2 -subj /CN=localhost -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1",
                 t->dir);
        assert_int_equal(system(cmd), 0);
        snprintf(t->ca, sizeof(t->ca), "%s/cert.pem", t->dir);
        /* __FILE__ is relative to the build directory, three levels above this test's executable */
        if (__FILE__[0] == '/')
                snprintf(src, sizeof(src), "%s", __FILE__);
        else {
                char exe[PATH_MAX];
                ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
                assert_true(n > 0);
                exe[n] = '\0';
                snprintf(src, sizeof(src), "%s/%s", dirname(dirname(dirname(exe))), __FILE__);
        }
        snprintf(script, sizeof(script), "%s/h2server.py", dirname(src));
        snprintf(portfile, sizeof(portfile), "%s/port", t->dir);
        t->server = fork();
        assert_true(t->server >= 0);
        if (t->server == 0) {
                execl("/usr/bin/python3", "python3", script, t->dir, portfile, max_streams, (char *) NULL);
                _exit(127);
        }
        for (int i = 0; i < 200 && read_full_file(portfile, 64, &port, NULL) < 0; i++)
                usleep(50 * 1000);
        assert_non_null(port);
        t->port = atoi(port);
        snprintf(t->url, sizeof(t->url), "https://127.0.0.1:%d", t->port);
        *state = t;
        return 0;
}

static int setup(void **state) {
        return setup_limit(state, "1000");
}

/* a server taking 50 concurrent streams a connection */
static int setup_50(void **state) {
        return setup_limit(state, "50");
}

static int teardown(void **state) {
        struct ctx *t = *state;
        char cmd[128];

        kube_client_free(t->client);
        json_decref(t->last_body);
        if (t->server > 0) {
                kill(t->server, SIGTERM);
                waitpid(t->server, NULL, 0);
        }
        snprintf(cmd, sizeof(cmd), "rm -rf %s", t->dir);
        (void) system(cmd);
        event_base_free(t->base);
        free(t);
        return 0;
}

static void new_client(struct ctx *t, uint64_t timeout_usec) {
        struct kube_config cfg = { .server = t->url, .ca_file = t->ca };
        struct kube_client_options o = { .qps = -1, .timeout_usec = timeout_usec };

        assert_int_equal(kube_client_new(t->base, &cfg, &o, &t->client), 0);
}

static void on_event(const char *type, json_t *object, void *userdata) {
        struct ctx *t = userdata;
        const char *rv = json_string_value(json_object_get(json_object_get(object, "metadata"), "resourceVersion"));

        t->events++;
        snprintf(t->last_rv, sizeof(t->last_rv), "%s", rv ? rv : "");
}

static void on_done(int r, long status, const char *error, void *userdata) {
        struct ctx *t = userdata;

        t->dones++;
        t->last_r = r;
        t->last_status = status;
}

static void on_response(const struct kube_response *resp, void *userdata) {
        struct ctx *t = userdata;

        t->responses++;
        t->last_r = resp->r;
        t->last_status = resp->status;
        json_decref(t->last_body);
        t->last_body = json_incref(resp->body);
}

/* The number of TCP connections the server has accepted so far (asked over the client's connection). */
static int server_connections(struct ctx *t) {
        unsigned before = t->responses;

        assert_int_equal(kube_request(t->client, "GET", "/stats", NULL, NULL, 0, on_response, t, NULL), 0);
        assert_reached(t->base, &t->responses, before + 1, 20000);
        assert_int_equal(t->last_status, 200);
        return (int) json_integer_value(json_object_get(t->last_body, "connections"));
}

static void test_multiplexing(void **state) {
        struct ctx *t = *state;

        new_client(t, 0);
        for (unsigned i = 0; i < N_WATCHES; i++) {
                char path[64];
                snprintf(path, sizeof(path), "/watch?watch=true&name=w%u", i);
                assert_int_equal(kube_watch(t->client, path, 60 * USEC_PER_SEC, on_event, on_done, t, &t->watches[i]),
                                 0);
        }
        assert_reached(t->base, &t->events, N_WATCHES, 30000);
        assert_int_equal(t->dones, 0);
        /* all 200 streams (and this request) on one connection: an HTTP/2 one, the only protocol the server speaks */
        assert_int_equal(server_connections(t), 1);
        for (unsigned i = 0; i < N_WATCHES; i++)
                kube_request_cancel(t->watches[i]);
        run_for(t->base, 100);
        assert_int_equal(t->dones, 0); /* cancelled: no callback */
        /* the connection serves on */
        assert_int_equal(server_connections(t), 1);
}

/* More watches than the server's SETTINGS_MAX_CONCURRENT_STREAMS: a second connection takes the rest (none waits
 * behind the long-lived ones), as Go's transport does. */
static void test_stream_limit(void **state) {
        struct ctx *t = *state;

        new_client(t, 0);
        assert_int_equal(server_connections(t), 1); /* the connection is up, its settings known */
        for (unsigned i = 0; i < 60; i++) {
                char path[64];
                snprintf(path, sizeof(path), "/watch?watch=true&name=w%u", i);
                assert_int_equal(kube_watch(t->client, path, 60 * USEC_PER_SEC, on_event, on_done, t, &t->watches[i]),
                                 0);
        }
        assert_reached(t->base, &t->events, 60, 30000);
        assert_int_equal(t->dones, 0);
        assert_int_equal(server_connections(t), 2);
        for (unsigned i = 0; i < 60; i++)
                kube_request_cancel(t->watches[i]);
}

static void test_goaway_mid_watch(void **state) {
        struct ctx *t = *state;
        char path[96];

        new_client(t, 0);
        assert_int_equal(server_connections(t), 1);
        assert_int_equal(kube_watch(t->client, "/goaway-watch?watch=true&resourceVersion=5", 60 * USEC_PER_SEC,
                                    on_event, on_done, t, NULL),
                         0);
        assert_reached(t->base, &t->dones, 1, 20000);
        assert_int_equal(t->events, 1);
        assert_string_equal(t->last_rv, "6");
        assert_int_equal(t->last_r, 0); /* the server ended the stream it had taken: a normal end */
        assert_int_equal(t->last_status, 200);

        /* resumed from the last resourceVersion: on a new connection */
        snprintf(path, sizeof(path), "/watch?watch=true&resourceVersion=%s", t->last_rv);
        assert_int_equal(kube_watch(t->client, path, 60 * USEC_PER_SEC, on_event, on_done, t, &t->watches[0]), 0);
        assert_reached(t->base, &t->events, 2, 20000);
        assert_string_equal(t->last_rv, "7");
        assert_int_equal(server_connections(t), 2);
        kube_request_cancel(t->watches[0]);
}

static void test_stall(void **state) {
        struct ctx *t = *state;

        new_client(t, 500 * 1000);
        assert_int_equal(kube_request(t->client, "GET", "/stall", NULL, NULL, KUBE_NO_RETRY, on_response, t, NULL), 0);
        assert_reached(t->base, &t->responses, 1, 20000);
        assert_int_equal(t->last_r, -ETIMEDOUT);
        assert_int_equal(t->last_status, 0);
        run_for(t->base, 1500);
        assert_int_equal(t->responses, 1); /* once */

        /* a watch that stalls: its idle timer ends it, once */
        assert_int_equal(kube_watch(t->client, "/stall?watch=true", 500 * 1000, on_event, on_done, t, NULL), 0);
        assert_reached(t->base, &t->dones, 1, 20000);
        assert_int_equal(t->last_r, -ETIMEDOUT);
        run_for(t->base, 1500);
        assert_int_equal(t->dones, 1);
        /* the connection still serves */
        assert_int_equal(server_connections(t), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_multiplexing, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stream_limit, setup_50, teardown),
                cmocka_unit_test_setup_teardown(test_goaway_mid_watch, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stall, setup, teardown),
        };

        signal(SIGPIPE, SIG_IGN);
        if (!have_h2()) {
                printf("1..0 # SKIP python3's h2 package is not installed\n");
                return 77;
        }
        return cmocka_run_group_tests(tests, NULL, NULL);
}
