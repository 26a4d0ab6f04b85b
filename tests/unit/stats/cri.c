/* SPDX-License-Identifier: Apache-2.0 */
/* stats_summary_get against a real runtime: tests/e2e/test_api.py (test_stats_provider_against_the_runtime)
 * runs it with the e2e session's containerd and a running pod. Under `meson test` there is no runtime: it
 * exits 77, which meson (and tests/run.sh) count as skipped. By hand:
 *   CKUBELET_TEST_CRI_ENDPOINT=unix:///tmp/ctrd/containerd.sock \
 *   CKUBELET_TEST_EXPECT_POD=default/web CKUBELET_TEST_POD_LOGS_DIR=/tmp/logs CKUBELET_TEST_PRINT=1 test-stats-cri
 * CKUBELET_TEST_EXPECT_POD (namespace/name): a pod that must be in the summary, with running containers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/log.h"
#include "basic/time.h"
#include "stats/summary.h"

struct ctx {
        struct event_base *base;
        int calls;
        int r;
        json_t *summary;             /* as /stats/summary serves it */
        struct stats_summary *typed; /* as the provider gives it */
};

static void on_summary(int r, struct stats_summary *summary, void *userdata) {
        struct ctx *c = userdata;
        c->calls++;
        c->r = r;
        json_decref(c->summary);
        c->summary = NULL;
        stats_summary_free(c->typed);
        c->typed = summary;
        if (summary)
                assert_int_equal(stats_summary_to_json(summary, &c->summary), 0);
        event_base_loopbreak(c->base);
}

static void on_timeout(evutil_socket_t fd, short what, void *userdata) {
        event_base_loopbreak(userdata);
}

static void run_until_called(struct ctx *c, int calls) {
        struct timeval tv = { .tv_sec = 30 };
        struct event *t = evtimer_new(c->base, on_timeout, c->base);
        evtimer_add(t, &tv);
        while (c->calls < calls && event_base_loop(c->base, EVLOOP_ONCE) == 0 && evtimer_pending(t, NULL))
                ;
        event_free(t);
}

static const json_t *find_pod(const json_t *summary, const char *ns_name) {
        const json_t *pod;
        size_t i;
        json_array_foreach(json_object_get(summary, "pods"), i, pod) {
                const json_t *ref = json_object_get(pod, "podRef");
                char buf[512];
                snprintf(buf, sizeof(buf), "%s/%s", json_string_value(json_object_get(ref, "namespace")),
                         json_string_value(json_object_get(ref, "name")));
                if (streq(buf, ns_name))
                        return pod;
        }
        return NULL;
}

static void test_summary(void **state) {
        const char *endpoint = getenv("CKUBELET_TEST_CRI_ENDPOINT"), *expect = getenv("CKUBELET_TEST_EXPECT_POD");
        struct stats_config cfg = {
                .node_name = "testnode",
                .root_dir = getenv("CKUBELET_TEST_ROOT_DIR") ?: "/",
                .pod_logs_dir = getenv("CKUBELET_TEST_POD_LOGS_DIR") ?: "/var/log/pods",
                .host_root = "",
        };
        struct cri_client *cri = NULL;
        struct stats_provider *p = NULL;
        struct ctx c = {};
        const json_t *pod, *node;
        struct evbuffer *b;

        if (getenv("CKUBELET_TEST_V"))
                log_set_verbosity(atoi(getenv("CKUBELET_TEST_V")));
        c.base = event_base_new();
        assert_int_equal(cri_client_new(c.base, endpoint, NULL, 10 * USEC_PER_SEC, &cri), 0);
        assert_int_equal(stats_provider_new(c.base, cri, &cfg, &p), 0);

        assert_int_equal(stats_summary_get(p, on_summary, &c), 0);
        assert_int_equal(c.calls, 0);
        run_until_called(&c, 1);
        assert_int_equal(c.calls, 1);
        assert_int_equal(c.r, 0);
        node = json_object_get(c.summary, "node");
        assert_non_null(json_object_get(node, "cpu"));
        assert_non_null(json_object_get(json_object_get(node, "runtime"), "imageFs"));
        if (expect) {
                pod = find_pod(c.summary, expect);
                assert_non_null(pod);
                assert_true(json_array_size(json_object_get(pod, "containers")) > 0);
        }

        /* a second sample a little later: rates */
        usleep(1100 * 1000);
        assert_int_equal(stats_summary_get(p, on_summary, &c), 0);
        run_until_called(&c, 2);
        assert_int_equal(c.calls, 2);
        assert_int_equal(c.r, 0);
        node = json_object_get(c.summary, "node");
        assert_non_null(json_object_get(json_object_get(node, "cpu"), "usageNanoCores"));
        if (expect) {
                const json_t *ctr;
                size_t i;
                pod = find_pod(c.summary, expect);
                assert_non_null(pod);
                assert_non_null(json_object_get(json_object_get(pod, "cpu"), "usageNanoCores"));
                assert_non_null(json_object_get(json_object_get(pod, "memory"), "workingSetBytes"));
                assert_non_null(json_object_get(pod, "network"));
                json_array_foreach(json_object_get(pod, "containers"), i, ctr) {
                        assert_non_null(json_object_get(json_object_get(ctr, "cpu"), "usageCoreNanoSeconds"));
                        assert_non_null(json_object_get(json_object_get(ctr, "cpu"), "usageNanoCores"));
                        assert_non_null(json_object_get(json_object_get(ctr, "memory"), "workingSetBytes"));
                        assert_non_null(json_object_get(ctr, "rootfs"));
                }
        }
        b = evbuffer_new();
        assert_int_equal(stats_resource_metrics(c.typed, b), 0);
        if (getenv("CKUBELET_TEST_PRINT")) {
                char *s = json_dumps(c.summary, JSON_INDENT(2));
                printf("%s\n", s);
                free(s);
                fwrite(evbuffer_pullup(b, -1), 1, evbuffer_get_length(b), stdout);
        }
        evbuffer_free(b);

        /* cancelled while the CRI calls are in flight: -ECANCELED at once, nothing after */
        assert_int_equal(stats_summary_get(p, on_summary, &c), 0);
        stats_provider_free(p);
        assert_int_equal(c.calls, 3);
        assert_int_equal(c.r, -ECANCELED);
        (void) event_base_loop(c.base, EVLOOP_NONBLOCK);
        assert_int_equal(c.calls, 3);
        cri_client_free(cri);

        /* and with the client freed first */
        assert_int_equal(cri_client_new(c.base, endpoint, NULL, 10 * USEC_PER_SEC, &cri), 0);
        assert_int_equal(stats_provider_new(c.base, cri, &cfg, &p), 0);
        assert_int_equal(stats_summary_get(p, on_summary, &c), 0);
        cri_client_free(cri);
        run_until_called(&c, 4);
        assert_int_equal(c.calls, 4);
        assert_true(c.r < 0);
        stats_provider_free(p);

        json_decref(c.summary);
        stats_summary_free(c.typed);
        event_base_free(c.base);
}

int main(void) {
        if (isempty(getenv("CKUBELET_TEST_CRI_ENDPOINT"))) {
                fprintf(stderr, "skipped: no CKUBELET_TEST_CRI_ENDPOINT (the e2e tests run this against containerd)\n");
                return 77; /* meson's exit code for a skipped test */
        }
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_summary),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
