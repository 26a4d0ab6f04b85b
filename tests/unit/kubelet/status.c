/* SPDX-License-Identifier: Apache-2.0 */
/* The pod status the kubelet generates (/pods, and what the status manager sends), as a pod goes through
 * its life on the fake runtime: phase, conditions with readiness probes, container states and the reasons of
 * waiting containers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "fake/test_kubelet.h"

#define MIN_USEC (60 * USEC_PER_SEC)

static int setup(void **state) {
        *state = tk_new();
        return 0;
}

static int teardown(void **state) {
        tk_free(*state);
        return 0;
}

static json_t *condition(struct test_kubelet *t, const char *uid, const char *type) {
        json_t *c;
        size_t i;

        json_array_foreach(json_object_get(json_object_get(tk_pod(t, uid), "status"), "conditions"), i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "type")), type))
                        return c;
        return NULL;
}

static const char *str(json_t *o, const char *a, const char *b, const char *c) {
        json_t *x = json_object_get(o, a);
        if (b)
                x = json_object_get(x, b);
        if (c)
                x = json_object_get(x, c);
        return json_string_value(x);
}

static bool condition_is(void *userdata) {
        const struct tk_want *w = userdata;
        return streq_ptr(tk_condition(w->t, w->uid, w->container), w->what);
}

/* Pending while the image is pulled (waiting ContainerCreating, not ready), Running once it runs (ready),
 * Succeeded once it completed (not ready: PodCompleted). */
static void test_phases_and_conditions(void **state) {
        struct test_kubelet *t = *state;
        const struct fake_container *fc;
        json_t *pod, *c, *st;
        char buf[64];

        assert_int_equal(fake_runtime_set_delay(t->rt, "PullImage", 20 * USEC_PER_SEC), 0);
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "app", MIN_USEC, 0), 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  restartPolicy: OnFailure\n  containers:\n  - {name: app, image: 'slow:1'}\n");
        tk_start(t);
        tk_wait(t, tk_calls, (&(struct tk_want) { .t = t, .what = "PullImage", .n = 1 }), MIN_USEC);
        tk_run_for(t, 5 * USEC_PER_SEC);

        pod = tk_pod(t, "u1");
        assert_non_null(pod);
        st = json_object_get(pod, "status");
        assert_string_equal(str(st, "phase", NULL, NULL), "Pending");
        assert_string_equal(str(st, "qosClass", NULL, NULL), "BestEffort");
        assert_string_equal(str(st, "hostIP", NULL, NULL), "10.0.0.1");
        assert_string_equal(str(st, "startTime", NULL, NULL), "2024-01-01T00:00:00Z");
        assert_string_equal(tk_waiting_reason(t, "u1", "app"), "ContainerCreating");
        assert_string_equal(tk_condition(t, "u1", "PodScheduled"), "True");
        assert_string_equal(tk_condition(t, "u1", "Initialized"), "True");
        assert_string_equal(tk_condition(t, "u1", "ContainersReady"), "False");
        c = condition(t, "u1", "Ready");
        assert_string_equal(str(c, "status", NULL, NULL), "False");
        assert_string_equal(str(c, "reason", NULL, NULL), "ContainersNotReady");
        assert_string_equal(str(c, "message", NULL, NULL), "containers with unready status: [app]");

        tk_wait(t, tk_phase_is, (&(struct tk_want) { .t = t, .uid = "u1", .what = "Running" }), MIN_USEC);
        assert_string_equal(tk_condition(t, "u1", "Ready"), "True");
        assert_string_equal(tk_condition(t, "u1", "ContainersReady"), "True");
        assert_string_equal(tk_condition(t, "u1", "PodReadyToStartContainers"), "True");
        assert_string_equal(str(json_object_get(tk_pod(t, "u1"), "status"), "podIP", NULL, NULL),
                            fake_runtime_pod_sandbox(t->rt, "u1")->ip);
        c = tk_container_status(t, "u1", "app");
        fc = fake_runtime_find(t->rt, "u1", "app");
        assert_true(json_is_true(json_object_get(c, "ready")));
        assert_true(json_is_true(json_object_get(c, "started")));
        assert_string_equal(str(c, "state", "running", "startedAt"),
                            format_rfc3339((uint64_t) (fc->started_at / 1000), buf, sizeof(buf)));
        assert_string_equal(str(c, "image", NULL, NULL), "slow:1");
        assert_string_equal(str(c, "imageID", NULL, NULL), fc->image_ref);
        {
                _cleanup_free_ char *id = NULL;
                assert_true(asprintf(&id, "containerd://%s", fc->id) > 0);
                assert_string_equal(str(c, "containerID", NULL, NULL), id);
        }

        tk_wait(t, tk_phase_is, (&(struct tk_want) { .t = t, .uid = "u1", .what = "Succeeded" }), 2 * MIN_USEC);
        c = condition(t, "u1", "Ready");
        assert_string_equal(str(c, "status", NULL, NULL), "False");
        assert_string_equal(str(c, "reason", NULL, NULL), "PodCompleted");
        assert_null(json_object_get(c, "message"));
        c = tk_container_status(t, "u1", "app");
        assert_string_equal(str(c, "state", "terminated", "reason"), "Completed");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(c, "state"), "terminated"),
                                                            "exitCode")),
                         0);
}

/* A readiness probe: not ready until it succeeds (after its initial delay), not ready again after
 * failureThreshold failures, ready again after successThreshold successes; it never kills. */
static void test_readiness(void **state) {
        struct test_kubelet *t = *state;
        struct tk_want ready = { .t = t, .uid = "u1", .container = "Ready", .what = "True" };
        struct tk_want unready = { .t = t, .uid = "u1", .container = "Ready", .what = "False" };
        const struct fake_call *first;
        json_t *c;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  containers:\n  - name: app\n    image: busybox:1.36\n"
                       "    readinessProbe: {exec: {command: [ready]}, initialDelaySeconds: 10, periodSeconds: 5,"
                       " failureThreshold: 2, successThreshold: 2}\n");
        tk_start(t);
        tk_wait(t, tk_phase_is, (&(struct tk_want) { .t = t, .uid = "u1", .what = "Running" }), MIN_USEC);
        assert_string_equal(tk_condition(t, "u1", "Ready"), "False");
        assert_true(json_is_false(json_object_get(tk_container_status(t, "u1", "app"), "ready")));

        tk_wait(t, condition_is, &ready, MIN_USEC);
        /* two successes: at 10 s and 15 s after the start */
        first = fake_runtime_last(t->rt, "ExecSync", "app");
        assert_int_equal(fake_runtime_count(t->rt, "ExecSync"), 2);
        assert_true(first->at_usec - fake_runtime_call(t->rt, 0)->at_usec >= 15 * USEC_PER_SEC);
        assert_string_equal(tk_condition(t, "u1", "ContainersReady"), "True");
        assert_true(json_is_true(json_object_get(tk_container_status(t, "u1", "app"), "ready")));

        assert_int_equal(fake_runtime_set_exec(t->rt, "app", 1, "not yet"), 0);
        tk_wait(t, condition_is, &unready, MIN_USEC);
        c = condition(t, "u1", "ContainersReady");
        assert_string_equal(str(c, "reason", NULL, NULL), "ContainersNotReady");
        assert_string_equal(str(c, "message", NULL, NULL), "containers with unready status: [app]");
        assert_string_equal(tk_phase(t, "u1"), "Running");

        assert_int_equal(fake_runtime_set_exec(t->rt, "app", 0, ""), 0);
        tk_wait(t, condition_is, &ready, MIN_USEC);
        tk_run_for(t, 2 * MIN_USEC);
        assert_int_equal(fake_runtime_count(t->rt, "StopContainer"), 0);
        assert_int_equal(fake_runtime_count(t->rt, "CreateContainer"), 1);
}

/* The reasons of a container that waits after a runtime error, with the runtime's message; the next attempt
 * clears them. */
static void test_waiting_reasons(void **state) {
        struct test_kubelet *t = *state;
        struct tk_want w = { .t = t, .uid = "u1", .container = "app" };

        assert_int_equal(fake_runtime_fail(t->rt, "CreateContainer", 1, GRPC_UNKNOWN, "no space left on device"), 0);
        assert_int_equal(fake_runtime_fail(t->rt, "StartContainer", 1, GRPC_UNKNOWN, "exec: \"nope\": not found"), 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  containers:\n  - {name: app, image: busybox:1.36}\n");
        tk_start(t);
        w.what = "CreateContainerError";
        tk_wait(t, tk_waiting, &w, MIN_USEC);
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(json_object_get(tk_container_status(t, "u1", "app"),
                                                                                    "state"),
                                                                    "waiting"),
                                                    "message")),
                            "no space left on device");
        assert_string_equal(tk_phase(t, "u1"), "Pending");
        w.what = "RunContainerError";
        tk_wait(t, tk_waiting, &w, MIN_USEC);
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(json_object_get(tk_container_status(t, "u1", "app"),
                                                                                    "state"),
                                                                    "waiting"),
                                                    "message")),
                            "exec: \"nope\": not found");
        /* then it runs: the instance that never started was removed, one instance left */
        tk_wait(t, tk_running, &w, MIN_USEC);
        tk_wait(t, tk_phase_is, (&(struct tk_want) { .t = t, .uid = "u1", .what = "Running" }), MIN_USEC);
        assert_null(tk_waiting_reason(t, "u1", "app"));
        assert_int_equal(fake_runtime_count_instances(t->rt, "u1", "app", -1), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_phases_and_conditions, setup, teardown),
                cmocka_unit_test_setup_teardown(test_readiness, setup, teardown),
                cmocka_unit_test_setup_teardown(test_waiting_reasons, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
