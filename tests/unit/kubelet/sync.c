/* SPDX-License-Identifier: Apache-2.0 */
/* The sync loop through the kubelet's own entry points, against the fake runtime on the virtual clock. */
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

/* A pod starts: sandbox, then its containers in spec order, each from ImageStatus to CreateContainer to
 * StartContainer, with the labels, annotations and log paths upstream gives them. */
static void test_pod_starts(void **state) {
        struct test_kubelet *t = *state;
        const struct fake_container *a, *b;
        const struct fake_sandbox *sb;
        _cleanup_free_ char *actions = NULL;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns1, uid: u1}\n"
                       "spec:\n  containers:\n"
                       "  - {name: a, image: busybox:1.36, imagePullPolicy: IfNotPresent}\n"
                       "  - {name: b, image: busybox:1.36, imagePullPolicy: IfNotPresent}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "b" }), MIN_USEC);

        actions = fake_runtime_actions(t->rt, 0);
        assert_string_equal(actions, "RunPodSandbox:web-testnode CreateContainer:a StartContainer:a "
                                     "CreateContainer:b StartContainer:b");
        sb = fake_runtime_pod_sandbox(t->rt, "u1");
        assert_non_null(sb);
        assert_int_equal(sb->config->metadata->attempt, 0);
        assert_string_equal(sb->config->metadata->name, "web-testnode");
        assert_string_equal(sb->config->metadata->namespace_, "ns1");
        assert_string_equal(fake_sandbox_label(sb, "io.kubernetes.pod.uid"), "u1");

        a = fake_runtime_find(t->rt, "u1", "a");
        b = fake_runtime_find(t->rt, "u1", "b");
        assert_non_null(a);
        assert_int_equal(a->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING);
        assert_string_equal(a->sandbox_id, sb->id);
        assert_string_equal(b->sandbox_id, sb->id);
        assert_int_equal(a->attempt, 0);
        assert_string_equal(fake_container_label(a, "io.kubernetes.pod.uid"), "u1");
        assert_string_equal(fake_container_label(a, "io.kubernetes.pod.name"), "web-testnode");
        assert_string_equal(fake_container_label(a, "io.kubernetes.pod.namespace"), "ns1");
        assert_string_equal(fake_container_label(a, "io.kubernetes.container.name"), "a");
        assert_string_equal(fake_container_annotation(a, "io.kubernetes.container.restartCount"), "0");
        assert_int_equal(strlen(fake_container_annotation(a, "io.kubernetes.container.hash")), 16);
        assert_string_not_equal(fake_container_annotation(a, "io.kubernetes.container.hash"),
                                fake_container_annotation(b, "io.kubernetes.container.hash"));
        assert_string_equal(a->config->log_path, "a/0.log");
        /* podLogsDir/<namespace>_<name>_<uid> */
        assert_non_null(strstr(sb->config->log_directory, "/logs/ns1_web-testnode_u1"));
        assert_string_equal(tk_phase(t, "u1"), "Running");
}

static const char *waiting_message(struct test_kubelet *t, const char *uid, const char *container) {
        json_t *c = tk_container_status(t, uid, container);
        return json_string_value(json_object_get(json_object_get(json_object_get(c, "state"), "waiting"), "message"));
}

/* StartContainer calls of a container that succeeded, by time (monotonic usec), oldest first */
static size_t start_times(struct test_kubelet *t, const char *container, uint64_t *ret, size_t max) {
        size_t n = 0;
        for (size_t i = 0; i < fake_runtime_n_calls(t->rt) && n < max; i++) {
                const struct fake_call *c = fake_runtime_call(t->rt, i);
                if (streq(c->method, "StartContainer") && streq(c->subject, container) && c->status == 0)
                        ret[n++] = c->at_usec;
        }
        return n;
}

#define CRASH_POD                                                                     \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns1, uid: u1}\n" \
        "spec:\n  containers:\n  - {name: app, image: busybox:1.36, imagePullPolicy: IfNotPresent}\n"

/* crashLoopBackOff.maxContainerRestartPeriod: 5 s caps every step, the first one (10 s) too */
static void test_crash_loop_backoff_max(void **state) {
        static const uint64_t delays[] = { 0, 5, 5, 5 };
        struct test_kubelet *t = *state;
        struct tk_want w = { .t = t, .uid = "u1", .container = "app", .n = ELEMENTSOF(delays) };
        uint64_t starts[8];
        size_t n;

        t->opts.crash_loop_backoff_max_usec = 5 * USEC_PER_SEC;
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "app", USEC_PER_SEC, 1), 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns1, uid: u1}\n"
                       "spec:\n  containers:\n  - {name: app, image: busybox:1.36, imagePullPolicy: IfNotPresent}\n");
        tk_start(t);
        tk_wait(t, tk_restarts, &w, 10 * MIN_USEC);
        n = start_times(t, "app", starts, ELEMENTSOF(starts));
        assert_true(n >= ELEMENTSOF(delays) + 1);
        for (size_t i = 0; i < ELEMENTSOF(delays); i++) {
                uint64_t gap = starts[i + 1] - (starts[i] + USEC_PER_SEC);
                if (gap < delays[i] * USEC_PER_SEC || gap > delays[i] * USEC_PER_SEC + 1500 * USEC_PER_MSEC)
                        fail_msg("restart %zu came %.3f s after the exit, expected %llu s", i + 1, (double) gap / 1e6,
                                 (unsigned long long) delays[i]);
        }
}

/* restartPolicy Always and a container that crashes a second after each start: restarted at once, then after
 * 10 s, 20 s, 40 s ... counted from its exit, capped at 5 min, waiting in CrashLoopBackOff meanwhile; a run of
 * more than 10 min resets the back-off. */
static void test_crash_loop_backoff(void **state) {
        static const uint64_t delays[] = { 0, 10, 20, 40, 80, 160, 300, 300 };
        struct test_kubelet *t = *state;
        struct tk_want w = { .t = t, .uid = "u1", .container = "app" };
        uint64_t starts[16];
        size_t n;

        assert_int_equal(fake_runtime_set_lifetime(t->rt, "app", USEC_PER_SEC, 1), 0);
        tk_set_pods(t, CRASH_POD);
        tk_start(t);

        /* in back-off after the fifth crash (80 s): waiting, with upstream's message */
        w.n = 4;
        tk_wait(t, tk_restarts, &w, 30 * MIN_USEC);
        w.what = "CrashLoopBackOff";
        tk_wait(t, tk_waiting, &w, 2 * MIN_USEC);
        assert_string_equal(waiting_message(t, "u1", "app"),
                            "back-off 1m20s restarting failed container=app pod=web-testnode_ns1(u1)");
        assert_string_equal(tk_phase(t, "u1"), "Running");

        w.n = ELEMENTSOF(delays);
        tk_wait(t, tk_restarts, &w, 30 * MIN_USEC);
        n = start_times(t, "app", starts, ELEMENTSOF(starts));
        assert_int_equal(n, ELEMENTSOF(delays) + 1);
        for (size_t i = 0; i < ELEMENTSOF(delays); i++) {
                /* each instance ran 1 s; the kubelet sees the exit within a relist period (1 s) */
                uint64_t gap = starts[i + 1] - (starts[i] + USEC_PER_SEC);
                if (gap < delays[i] * USEC_PER_SEC || gap > delays[i] * USEC_PER_SEC + 1500 * USEC_PER_MSEC)
                        fail_msg("restart %zu came %.3f s after the exit, expected %llu s", i + 1, (double) gap / 1e6,
                                 (unsigned long long) delays[i]);
        }
        /* the restart count and the attempt follow the instances */
        {
                const struct fake_container *c = fake_runtime_find(t->rt, "u1", "app");
                json_t *st = tk_container_status(t, "u1", "app");
                assert_int_equal(c->attempt, ELEMENTSOF(delays));
                assert_string_equal(c->config->log_path, "app/8.log");
                assert_int_equal(json_integer_value(json_object_get(st, "restartCount")), ELEMENTSOF(delays));
                assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(st, "lastState"),
                                                                                    "terminated"),
                                                                    "exitCode")),
                                 1);
                /* dead instances are collected: the newest and the one before at most */
                assert_true(fake_runtime_count_instances(t->rt, "u1", "app", -1) <= 2);
        }

        /* a run of more than 10 minutes: restarted at once, and the back-off starts again at 10 s */
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "app", 11 * MIN_USEC, 1), 0);
        w.n = ELEMENTSOF(delays) + 1;
        tk_wait(t, tk_restarts, &w, 10 * MIN_USEC);
        tk_wait(t, tk_running, &w, MIN_USEC);
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "app", USEC_PER_SEC, 1), 0);
        w.n = ELEMENTSOF(delays) + 3;
        tk_wait(t, tk_restarts, &w, 20 * MIN_USEC);
        n = start_times(t, "app", starts, ELEMENTSOF(starts));
        assert_int_equal(n, ELEMENTSOF(delays) + 4);
        assert_true(starts[n - 2] - (starts[n - 3] + 11 * MIN_USEC) <= 1500 * USEC_PER_MSEC);
        assert_true(starts[n - 1] - (starts[n - 2] + USEC_PER_SEC) >= 10 * USEC_PER_SEC);
        assert_true(starts[n - 1] - (starts[n - 2] + USEC_PER_SEC) <= 11500 * USEC_PER_MSEC);
}

/* a field of the container's state.terminated */
static json_t *terminated(struct test_kubelet *t, const char *uid, const char *container, const char *field) {
        json_t *c = tk_container_status(t, uid, container);
        return json_object_get(json_object_get(json_object_get(c, "state"), "terminated"), field);
}

/* How many calls of method (about subject, when not NULL) from index since on. */
static size_t count_since(struct test_kubelet *t, size_t since, const char *method, const char *subject) {
        size_t n = 0;
        for (size_t i = since; i < fake_runtime_n_calls(t->rt); i++) {
                const struct fake_call *c = fake_runtime_call(t->rt, i);
                if (streq(c->method, method) && (!subject || streq(c->subject, subject)))
                        n++;
        }
        return n;
}

/* Index of the first call of method about subject from since on, or SIZE_MAX. */
static size_t find_call(struct test_kubelet *t, size_t since, const char *method, const char *subject) {
        for (size_t i = since; i < fake_runtime_n_calls(t->rt); i++) {
                const struct fake_call *c = fake_runtime_call(t->rt, i);
                if (streq(c->method, method) && (!subject || streq(c->subject, subject)))
                        return i;
        }
        return SIZE_MAX;
}

/* restartPolicy: Never leaves a failed container (the pod fails), OnFailure restarts only a failed one (a
 * successful one completes the pod), Always restarts even a successful one. */
static void test_restart_policies(void **state) {
        struct test_kubelet *t = *state;
        struct tk_want never = { .t = t, .uid = "u-never", .what = "Failed" };
        struct tk_want onf_ok = { .t = t, .uid = "u-onf-ok", .what = "Succeeded" };
        struct tk_want onf_bad = { .t = t, .uid = "u-onf-bad", .container = "onf-bad", .n = 2 };
        struct tk_want always = { .t = t, .uid = "u-always", .container = "always-ok", .n = 2 };

        assert_int_equal(fake_runtime_set_lifetime(t->rt, "never-bad", 5 * USEC_PER_SEC, 3), 0);
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "onf-ok", 5 * USEC_PER_SEC, 0), 0);
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "onf-bad", 5 * USEC_PER_SEC, 1), 0);
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "always-ok", 5 * USEC_PER_SEC, 0), 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: never, uid: u-never}\n"
                       "spec:\n  restartPolicy: Never\n  containers:\n  - {name: never-bad, image: busybox:1.36}\n"
                       "---\napiVersion: v1\nkind: Pod\nmetadata: {name: onf-ok, uid: u-onf-ok}\n"
                       "spec:\n  restartPolicy: OnFailure\n  containers:\n  - {name: onf-ok, image: busybox:1.36}\n"
                       "---\napiVersion: v1\nkind: Pod\nmetadata: {name: onf-bad, uid: u-onf-bad}\n"
                       "spec:\n  restartPolicy: OnFailure\n  containers:\n  - {name: onf-bad, image: busybox:1.36}\n"
                       "---\napiVersion: v1\nkind: Pod\nmetadata: {name: always, uid: u-always}\n"
                       "spec:\n  containers:\n  - {name: always-ok, image: busybox:1.36}\n");
        tk_start(t);
        tk_wait(t, tk_phase_is, &never, MIN_USEC);
        tk_wait(t, tk_phase_is, &onf_ok, MIN_USEC);
        tk_wait(t, tk_restarts, &onf_bad, 2 * MIN_USEC);
        tk_wait(t, tk_restarts, &always, 2 * MIN_USEC);
        /* and the finished ones stay finished */
        tk_run_for(t, 5 * MIN_USEC);
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "never-bad"), 1);
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "onf-ok"), 1);
        assert_string_equal(tk_phase(t, "u-never"), "Failed");
        assert_string_equal(tk_phase(t, "u-onf-ok"), "Succeeded");
        assert_int_equal(json_integer_value(terminated(t, "u-never", "never-bad", "exitCode")), 3);
        assert_string_equal(json_string_value(terminated(t, "u-never", "never-bad", "reason")), "Error");
        assert_string_equal(json_string_value(terminated(t, "u-onf-ok", "onf-ok", "reason")), "Completed");
}

#define TWO_PODS                                                                                         \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: keep, uid: u1}\n"                                   \
        "spec:\n  containers:\n  - {name: a, image: busybox:1.36}\n  - {name: b, image: busybox:1.36}\n" \
        "---\napiVersion: v1\nkind: Pod\nmetadata: {name: drop, uid: u2}\n"                              \
        "spec:\n  terminationGracePeriodSeconds: 7\n  containers:\n  - {name: c, image: busybox:1.36}\n"

/* A kubelet killed and started again finds its pods running with matching hashes and keeps them: no call
 * that changes anything. A pod that nobody wants any more is killed with the grace period it was created
 * with (its annotation), and removed. */
static void test_adoption_after_kill(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *a_id = NULL, *b_id = NULL, *actions = NULL;
        size_t since;

        tk_set_pods(t, TWO_PODS);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "b" }), MIN_USEC);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u2", .container = "c" }), MIN_USEC);
        a_id = strdup(fake_runtime_find(t->rt, "u1", "a")->id);
        b_id = strdup(fake_runtime_find(t->rt, "u1", "b")->id);

        /* kill -9 and start again with the same pods */
        tk_stop(t);
        since = fake_runtime_n_calls(t->rt);
        tk_start(t);
        tk_run_for(t, 2 * MIN_USEC);
        actions = fake_runtime_actions(t->rt, since);
        assert_string_equal(actions, "");
        assert_string_equal(fake_runtime_find(t->rt, "u1", "a")->id, a_id);
        assert_string_equal(tk_phase(t, "u1"), "Running");
        assert_string_equal(tk_phase(t, "u2"), "Running");

        /* again, and u2 is no longer wanted: killed with its own grace period, removed; u1 untouched */
        tk_stop(t);
        tk_set_pods(t,
                    "apiVersion: v1\nkind: Pod\nmetadata: {name: keep, uid: u1}\n"
                    "spec:\n  containers:\n  - {name: a, image: busybox:1.36}\n  - {name: b, image: busybox:1.36}\n");
        since = fake_runtime_n_calls(t->rt);
        tk_start(t);
        tk_wait(t, tk_pod_gone, (&(struct tk_want) { .t = t, .uid = "u2" }), 2 * MIN_USEC);
        free(actions);
        actions = fake_runtime_actions(t->rt, since);
        assert_string_equal(actions, "StopContainer:c StopPodSandbox:drop-testnode RemoveContainer:c "
                                     "RemovePodSandbox:drop-testnode");
        assert_int_equal(FAKE_REQ(fake_runtime_last(t->rt, "StopContainer", "c"), StopContainerRequest)->timeout, 7);
        assert_string_equal(fake_runtime_find(t->rt, "u1", "a")->id, a_id);
        assert_string_equal(fake_runtime_find(t->rt, "u1", "b")->id, b_id);
        assert_null(tk_pod(t, "u2"));
}

/* A container created but never started (the kubelet died between CreateContainer and StartContainer) is
 * removed before a new instance is made: never two instances. */
static void test_created_never_started_is_removed(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *created = NULL;
        size_t since, removed, create;

        assert_int_equal(fake_runtime_set_delay(t->rt, "StartContainer", 3600 * USEC_PER_SEC), 0);
        tk_set_pods(t, CRASH_POD);
        tk_start(t);
        tk_wait(t, tk_calls, (&(struct tk_want) { .t = t, .what = "StartContainer", .n = 1 }), MIN_USEC);
        /* killed while StartContainer is in flight: the runtime never got it */
        tk_stop(t);
        created = strdup(fake_runtime_find(t->rt, "u1", "app")->id);
        assert_int_equal(fake_runtime_find(t->rt, "u1", "app")->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED);

        assert_int_equal(fake_runtime_set_delay(t->rt, "StartContainer", 0), 0);
        since = fake_runtime_n_calls(t->rt);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        removed = find_call(t, since, "RemoveContainer", "app");
        create = find_call(t, since, "CreateContainer", "app");
        assert_true(removed != SIZE_MAX);
        assert_true(create != SIZE_MAX && removed < create);
        assert_string_equal(FAKE_REQ(fake_runtime_call(t->rt, removed), RemoveContainerRequest)->container_id, created);
        assert_null(fake_runtime_container(t->rt, created));
        assert_int_equal(fake_runtime_count_instances(t->rt, "u1", "app", -1), 1);
}

/* A changed container spec (a new hash) restarts that container only. */
static void test_hash_change_restarts_one(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *a_id = NULL, *b_id = NULL, *a_hash = NULL, *actions = NULL;
        const struct fake_container *a;
        size_t since;

        tk_set_pods(t,
                    "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                    "spec:\n  containers:\n  - {name: a, image: busybox:1.36}\n  - {name: b, image: busybox:1.36}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "b" }), MIN_USEC);
        a_id = strdup(fake_runtime_find(t->rt, "u1", "a")->id);
        b_id = strdup(fake_runtime_find(t->rt, "u1", "b")->id);
        a_hash = strdup(fake_container_annotation(fake_runtime_find(t->rt, "u1", "a"), "io.kubernetes.container.hash"));

        since = fake_runtime_n_calls(t->rt);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  containers:\n  - {name: a, image: busybox:1.36, args: [sleep, '60']}\n"
                       "  - {name: b, image: busybox:1.36}\n");
        tk_wait(t, tk_restarts, (&(struct tk_want) { .t = t, .uid = "u1", .container = "a", .n = 1 }), MIN_USEC);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "a" }), MIN_USEC);
        tk_run_for(t, MIN_USEC);
        actions = fake_runtime_actions(t->rt, since);
        /* the old instance stays, dead (MaxPerPodContainer: one dead instance kept) */
        assert_string_equal(actions, "StopContainer:a CreateContainer:a StartContainer:a");
        assert_int_equal(fake_runtime_container(t->rt, a_id)->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED);
        a = fake_runtime_find(t->rt, "u1", "a");
        assert_string_not_equal(a->id, a_id);
        assert_string_not_equal(fake_container_annotation(a, "io.kubernetes.container.hash"), a_hash);
        assert_int_equal(a->config->n_args, 2);
        assert_string_equal(fake_runtime_find(t->rt, "u1", "b")->id, b_id);
}

/* A failing liveness probe (ExecSync answering 1) kills the container after failureThreshold probes, with the
 * probe's own terminationGracePeriodSeconds, and it is started again; a new instance is probed afresh. */
static void test_liveness_kill(void **state) {
        struct test_kubelet *t = *state;
        size_t set_at, stop, execs;
        uint64_t first_fail = 0;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  terminationGracePeriodSeconds: 30\n  containers:\n"
                       "  - name: app\n    image: busybox:1.36\n"
                       "    livenessProbe: {exec: {command: [check]}, initialDelaySeconds: 5, periodSeconds: 10,"
                       " failureThreshold: 3, terminationGracePeriodSeconds: 4}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        tk_run_for(t, MIN_USEC);
        /* healthy: probed every 10 s from 5 s after the start, never killed */
        assert_true(fake_runtime_count(t->rt, "ExecSync") >= 5);
        assert_int_equal(fake_runtime_count(t->rt, "StopContainer"), 0);
        assert_string_equal(FAKE_REQ(fake_runtime_last(t->rt, "ExecSync", "app"), ExecSyncRequest)->cmd[0], "check");

        assert_int_equal(fake_runtime_set_exec(t->rt, "app", 1, "unhealthy"), 0);
        set_at = fake_runtime_n_calls(t->rt);
        tk_wait(t, tk_restarts, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app", .n = 1 }), 2 * MIN_USEC);
        stop = find_call(t, set_at, "StopContainer", "app");
        assert_true(stop != SIZE_MAX);
        /* three failures, then the kill */
        execs = count_since(t, set_at, "ExecSync", "app") - count_since(t, stop, "ExecSync", "app");
        assert_int_equal(execs, 3);
        first_fail = fake_runtime_call(t->rt, find_call(t, set_at, "ExecSync", "app"))->at_usec;
        assert_true(fake_runtime_call(t->rt, stop)->at_usec - first_fail >= 20 * USEC_PER_SEC);
        assert_true(fake_runtime_call(t->rt, stop)->at_usec - first_fail < 22 * USEC_PER_SEC);
        assert_int_equal(FAKE_REQ(fake_runtime_call(t->rt, stop), StopContainerRequest)->timeout, 4);
        /* the killed instance, as the status shows it */
        {
                json_t *c = tk_container_status(t, "u1", "app");
                json_t *last = json_object_get(json_object_get(c, "lastState"), "terminated");
                assert_int_equal(json_integer_value(json_object_get(last, "exitCode")), 137);
        }

        /* the new instance starts healthy (liveness starts as success) and is probed again after the delay */
        assert_int_equal(fake_runtime_set_exec(t->rt, "app", 0, ""), 0);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        tk_run_for(t, 2 * MIN_USEC);
        assert_true(tk_running(&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }));
        assert_int_equal(fake_runtime_count(t->rt, "StopContainer"), 1);
}

static size_t pull_times(struct test_kubelet *t, const char *image, uint64_t *ret, size_t max) {
        size_t n = 0;
        for (size_t i = 0; i < fake_runtime_n_calls(t->rt) && n < max; i++) {
                const struct fake_call *c = fake_runtime_call(t->rt, i);
                if (streq(c->method, "PullImage") && streq(c->subject, image))
                        ret[n++] = c->at_usec;
        }
        return n;
}

/* Pull policies: Always pulls at each start, IfNotPresent only what is missing, Never never (the container
 * waits in ErrImageNeverPull while the others run). */
static void test_pull_policies(void **state) {
        struct test_kubelet *t = *state;
        size_t pull, create;

        tk_set_pods(t,
                    "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                    "spec:\n  containers:\n"
                    "  - {name: always, image: busybox:1.36, imagePullPolicy: Always}\n"
                    "  - {name: present, image: busybox:1.36, imagePullPolicy: IfNotPresent}\n"
                    "  - {name: missing, image: 'registry.example:5000/tools/dig:2', imagePullPolicy: IfNotPresent}\n"
                    "  - {name: never, image: 'absent:1', imagePullPolicy: Never}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "missing" }), MIN_USEC);
        tk_wait(t, tk_waiting,
                (&(struct tk_want) { .t = t, .uid = "u1", .container = "never", .what = "ErrImageNeverPull" }),
                MIN_USEC);
        assert_string_equal(waiting_message(t, "u1", "never"),
                            "Container image \"absent:1\" is not present with pull policy of Never");
        assert_true(tk_running(&(struct tk_want) { .t = t, .uid = "u1", .container = "always" }));
        assert_true(tk_running(&(struct tk_want) { .t = t, .uid = "u1", .container = "present" }));

        pull = find_call(t, 0, "PullImage", "busybox:1.36");
        create = find_call(t, 0, "CreateContainer", "always");
        assert_true(pull != SIZE_MAX && pull < create);
        assert_int_equal(fake_runtime_count_subject(t->rt, "PullImage", "busybox:1.36"), 1);
        assert_int_equal(fake_runtime_count_subject(t->rt, "PullImage", "registry.example:5000/tools/dig:2"), 1);
        assert_int_equal(fake_runtime_count_subject(t->rt, "PullImage", "absent:1"), 0);
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "never"), 0);
        /* the container runs the image pulled, by its id */
        assert_string_equal(fake_runtime_find(t->rt, "u1", "missing")->image_ref,
                            fake_runtime_image(t->rt, "registry.example:5000/tools/dig:2")->id);

        /* Always pulls again for a new instance */
        assert_int_equal(fake_runtime_exit(t->rt, fake_runtime_find(t->rt, "u1", "always")->id, 1, 0), 0);
        tk_wait(t, tk_restarts, (&(struct tk_want) { .t = t, .uid = "u1", .container = "always", .n = 1 }), MIN_USEC);
        assert_int_equal(fake_runtime_count_subject(t->rt, "PullImage", "busybox:1.36"), 2);
}

/* A pull that fails: ErrImagePull, then ImagePullBackOff while the next pull waits 10 s, 20 s, ...; once the
 * image can be pulled the container starts. */
static void test_pull_backoff(void **state) {
        struct test_kubelet *t = *state;
        struct tk_want w = { .t = t, .uid = "u1", .container = "app" };
        uint64_t pulls[8];
        size_t n;

        assert_int_equal(fake_runtime_set_pullable(t->rt, "bad:1", false), 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  containers:\n  - {name: app, image: 'bad:1'}\n");
        tk_start(t);
        w.what = "ErrImagePull";
        tk_wait(t, tk_waiting, &w, MIN_USEC);
        assert_non_null(
                strstr(waiting_message(t, "u1", "app"), "failed to resolve reference \"docker.io/library/bad:1\""));
        w.what = "ImagePullBackOff";
        tk_wait(t, tk_waiting, &w, MIN_USEC);
        assert_string_equal(waiting_message(t, "u1", "app"), "Back-off pulling image \"bad:1\"");
        assert_string_equal(tk_phase(t, "u1"), "Pending");

        tk_run_for(t, 80 * USEC_PER_SEC);
        n = pull_times(t, "bad:1", pulls, ELEMENTSOF(pulls));
        assert_true(n >= 4);
        for (size_t i = 0; i + 1 < 4; i++) {
                uint64_t gap = pulls[i + 1] - pulls[i], want = (10u << i) * USEC_PER_SEC;
                if (gap < want || gap > want + 2 * USEC_PER_SEC)
                        fail_msg("pull %zu came %.3f s after the one before, expected %llu s", i + 2,
                                 (double) gap / 1e6, (unsigned long long) (want / USEC_PER_SEC));
        }

        assert_int_equal(fake_runtime_set_pullable(t->rt, "bad:1", true), 0);
        tk_wait(t, tk_running, &w, 3 * MIN_USEC);
        assert_string_equal(tk_phase(t, "u1"), "Running");
}

/* Image volumes (getImageVolumes): pulled with their pullPolicy before the first container is created; the CRI
 * mount carries the pulled image's id (no host path, read-only, the subPath as image_sub_path). A volume that
 * cannot be had holds back only the containers that mount it, with the pull's reason and message (ErrImagePull,
 * then ImagePullBackOff; ErrImageNeverPull); once it can be pulled they start. */
static void test_image_volumes(void **state) {
        struct test_kubelet *t = *state;
        struct tk_want w = { .t = t, .uid = "u1", .container = "pulled" };
        const Runtime__V1__ContainerConfig *cfg;
        size_t pull, create;

        assert_int_equal(fake_runtime_set_pullable(t->rt, "bad:1", false), 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  volumes:\n"
                       "  - {name: data, image: {reference: 'registry.example/data:1'}}\n"
                       "  - {name: never, image: {reference: 'absent:1', pullPolicy: Never}}\n"
                       "  - {name: bad, image: {reference: 'bad:1'}}\n"
                       "  containers:\n"
                       "  - {name: pulled, image: busybox:1.36, volumeMounts: [{name: data, mountPath: /d},"
                       " {name: data, mountPath: /s, subPath: a/b}]}\n"
                       "  - {name: blocked, image: busybox:1.36, volumeMounts: [{name: never, mountPath: /n}]}\n"
                       "  - {name: failing, image: busybox:1.36, volumeMounts: [{name: bad, mountPath: /b}]}\n"
                       "  - {name: other, image: busybox:1.36}\n");
        tk_start(t);
        tk_wait(t, tk_running, &w, MIN_USEC);
        w.container = "blocked";
        w.what = "ErrImageNeverPull";
        tk_wait(t, tk_waiting, &w, MIN_USEC);
        assert_string_equal(waiting_message(t, "u1", "blocked"),
                            "Container image \"absent:1\" is not present with pull policy of Never");
        w.container = "failing";
        w.what = "ErrImagePull";
        tk_wait(t, tk_waiting, &w, MIN_USEC);
        assert_non_null(strstr(waiting_message(t, "u1", "failing"), "bad:1"));
        assert_true(tk_running(&(struct tk_want) { .t = t, .uid = "u1", .container = "other" }));
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "blocked"), 0);
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "failing"), 0);
        assert_int_equal(fake_runtime_count_subject(t->rt, "PullImage", "absent:1"), 0);

        /* pulled before the first container is created, once for the pass */
        pull = find_call(t, 0, "PullImage", "registry.example/data:1");
        create = find_call(t, 0, "CreateContainer", NULL);
        assert_true(pull != SIZE_MAX && pull < create);
        create = find_call(t, 0, "CreateContainer", "pulled");
        cfg = FAKE_REQ(fake_runtime_call(t->rt, create), CreateContainerRequest)->config;
        assert_true(cfg->n_mounts >= 2);
        for (size_t i = 0; i < 2; i++) {
                assert_string_equal(cfg->mounts[i]->host_path, "");
                assert_true(cfg->mounts[i]->readonly);
                assert_non_null(cfg->mounts[i]->image);
                assert_string_equal(cfg->mounts[i]->image->image,
                                    fake_runtime_image(t->rt, "registry.example/data:1")->id);
        }
        assert_string_equal(cfg->mounts[0]->image_sub_path, "");
        assert_string_equal(cfg->mounts[1]->image_sub_path, "a/b");

        /* the failed pull backs off as a container image's does; then it is pulled and the container starts */
        w.what = "ImagePullBackOff";
        tk_wait(t, tk_waiting, &w, MIN_USEC);
        assert_string_equal(waiting_message(t, "u1", "failing"), "Back-off pulling image \"bad:1\"");
        assert_int_equal(fake_runtime_set_pullable(t->rt, "bad:1", true), 0);
        tk_wait(t, tk_running, &w, 3 * MIN_USEC);
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "blocked"), 0);
}

/* Init containers run one at a time, in order, each after the one before completed, then the app
 * containers; one that fails under restartPolicy Never fails the pod and nothing else starts. */
static void test_init_containers(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *actions = NULL;
        size_t i2;

        assert_int_equal(fake_runtime_set_lifetime(t->rt, "i1", 3 * USEC_PER_SEC, 0), 0);
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "i2", 3 * USEC_PER_SEC, 0), 0);
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "bad-init", 3 * USEC_PER_SEC, 2), 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  initContainers:\n  - {name: i1, image: busybox:1.36}\n"
                       "  - {name: i2, image: busybox:1.36}\n"
                       "  containers:\n  - {name: app, image: busybox:1.36}\n"
                       "---\napiVersion: v1\nkind: Pod\nmetadata: {name: fails, uid: u2}\n"
                       "spec:\n  restartPolicy: Never\n  initContainers:\n  - {name: bad-init, image: busybox:1.36}\n"
                       "  containers:\n  - {name: never-runs, image: busybox:1.36}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        tk_wait(t, tk_phase_is, (&(struct tk_want) { .t = t, .uid = "u2", .what = "Failed" }), MIN_USEC);

        {
                /* the first pod's actions alone */
                char *all = fake_runtime_actions(t->rt, 0), *p = all;
                size_t n = 0;
                actions = calloc(1, strlen(all) + 1);
                assert_non_null(actions);
                for (char *tok = strtok_r(p, " ", &p); tok; tok = strtok_r(NULL, " ", &p))
                        if (!strstr(tok, "bad-init") && !strstr(tok, "fails-testnode"))
                                n += (size_t) sprintf(actions + n, "%s%s", n ? " " : "", tok);
                free(all);
        }
        assert_string_equal(actions, "RunPodSandbox:web-testnode CreateContainer:i1 StartContainer:i1 "
                                     "CreateContainer:i2 StartContainer:i2 CreateContainer:app StartContainer:app");
        /* i2 was created once i1 had completed (3 s after its start) */
        i2 = find_call(t, 0, "CreateContainer", "i2");
        assert_true(fake_runtime_call(t->rt, i2)->at_usec >=
                    fake_runtime_call(t->rt, find_call(t, 0, "StartContainer", "i1"))->at_usec + 3 * USEC_PER_SEC);
        {
                json_t *st = tk_container_status(t, "u1", "i1");
                assert_string_equal(json_string_value(
                                            json_object_get(json_object_get(json_object_get(st, "state"), "terminated"),
                                                            "reason")),
                                    "Completed");
        }
        tk_run_for(t, MIN_USEC);
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "never-runs"), 0);
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "bad-init"), 1);
}

/* A pod removed from the source is stopped with its terminationGracePeriodSeconds: containers, then the
 * sandbox, then everything removed. */
static void test_removed_pod_stopped(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *actions = NULL;
        size_t since;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  terminationGracePeriodSeconds: 17\n  containers:\n"
                       "  - {name: a, image: busybox:1.36}\n  - {name: b, image: busybox:1.36}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "b" }), MIN_USEC);
        since = fake_runtime_n_calls(t->rt);
        tk_set_pods(t, "");
        tk_wait(t, tk_pod_gone, (&(struct tk_want) { .t = t, .uid = "u1" }), MIN_USEC);
        actions = fake_runtime_actions(t->rt, since);
        assert_true(streq(actions, "StopContainer:a StopContainer:b StopPodSandbox:web-testnode RemoveContainer:a "
                                   "RemoveContainer:b RemovePodSandbox:web-testnode") ||
                    streq(actions, "StopContainer:b StopContainer:a StopPodSandbox:web-testnode RemoveContainer:b "
                                   "RemoveContainer:a RemovePodSandbox:web-testnode") ||
                    streq(actions, "StopContainer:a StopContainer:b StopPodSandbox:web-testnode RemoveContainer:b "
                                   "RemoveContainer:a RemovePodSandbox:web-testnode") ||
                    streq(actions, "StopContainer:b StopContainer:a StopPodSandbox:web-testnode RemoveContainer:a "
                                   "RemoveContainer:b RemovePodSandbox:web-testnode"));
        for (size_t i = since; i < fake_runtime_n_calls(t->rt); i++) {
                const struct fake_call *c = fake_runtime_call(t->rt, i);
                if (streq(c->method, "StopContainer"))
                        assert_int_equal(((Runtime__V1__StopContainerRequest *) (void *) c->req)->timeout, 17);
        }
        assert_null(tk_pod(t, "u1"));
}

/* The runtime goes down: nothing is killed or created meanwhile, nor when it is back (the pod is adopted as
 * it runs); a container that died during the outage is restarted once the runtime answers again. A kubelet
 * started while the runtime is down waits for it. */
static void test_runtime_down(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *id = NULL, *actions = NULL;
        size_t since;

        tk_set_pods(t, CRASH_POD);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        id = strdup(fake_runtime_find(t->rt, "u1", "app")->id);
        since = fake_runtime_n_calls(t->rt);

        fake_runtime_set_down(t->rt, true);
        tk_run_for(t, 3 * MIN_USEC);
        assert_true(fake_runtime_count(t->rt, "ListPodSandbox") > 0);
        fake_runtime_set_down(t->rt, false);
        tk_run_for(t, MIN_USEC);
        actions = fake_runtime_actions(t->rt, since);
        assert_string_equal(actions, "");
        assert_string_equal(fake_runtime_find(t->rt, "u1", "app")->id, id);
        assert_string_equal(tk_phase(t, "u1"), "Running");

        /* died while the runtime was down: restarted when it is back */
        fake_runtime_set_down(t->rt, true);
        assert_int_equal(fake_runtime_exit(t->rt, id, 1, 0), 0);
        tk_run_for(t, MIN_USEC);
        assert_int_equal(count_since(t, since, "CreateContainer", NULL), 0);
        fake_runtime_set_down(t->rt, false);
        tk_wait(t, tk_restarts, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app", .n = 1 }), MIN_USEC);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);

        /* a kubelet started while the runtime is down does nothing until it answers, then adopts */
        free(id);
        id = strdup(fake_runtime_find(t->rt, "u1", "app")->id);
        tk_stop(t);
        fake_runtime_set_down(t->rt, true);
        since = fake_runtime_n_calls(t->rt);
        tk_start(t);
        tk_run_for(t, 2 * MIN_USEC);
        fake_runtime_set_down(t->rt, false);
        tk_run_for(t, MIN_USEC);
        free(actions);
        actions = fake_runtime_actions(t->rt, since);
        assert_string_equal(actions, "");
        assert_string_equal(fake_runtime_find(t->rt, "u1", "app")->id, id);
        assert_string_equal(tk_phase(t, "u1"), "Running");
}

/* The sandbox dies: a new one (the next attempt) is made and the containers start again in it. */
static void test_sandbox_dies(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *old = NULL;
        const struct fake_sandbox *sb;

        tk_set_pods(t, CRASH_POD);
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        old = strdup(fake_runtime_pod_sandbox(t->rt, "u1")->id);
        assert_int_equal(fake_runtime_sandbox_die(t->rt, old), 0);
        tk_wait(t, tk_restarts, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app", .n = 1 }), MIN_USEC);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        sb = fake_runtime_pod_sandbox(t->rt, "u1");
        assert_string_not_equal(sb->id, old);
        assert_int_equal(sb->config->metadata->attempt, 1);
        assert_int_equal(sb->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY);
        assert_string_equal(fake_runtime_find(t->rt, "u1", "app")->sandbox_id, sb->id);
        /* the dead sandbox stays while it holds the dead instance kept, and goes with it */
        tk_run_for(t, MIN_USEC);
        assert_int_equal(fake_runtime_sandbox(t->rt, old)->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_NOTREADY);
        assert_int_equal(fake_runtime_exit(t->rt, fake_runtime_find(t->rt, "u1", "app")->id, 1, 0), 0);
        tk_wait(t, tk_restarts, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app", .n = 2 }), MIN_USEC);
        tk_run_for(t, MIN_USEC);
        assert_null(fake_runtime_sandbox(t->rt, old));
        assert_int_equal(fake_runtime_n_sandboxes(t->rt), 1);
        assert_int_equal(fake_runtime_count_instances(t->rt, "u1", "app", -1), 2);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_pod_starts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_crash_loop_backoff, setup, teardown),
                cmocka_unit_test_setup_teardown(test_crash_loop_backoff_max, setup, teardown),
                cmocka_unit_test_setup_teardown(test_restart_policies, setup, teardown),
                cmocka_unit_test_setup_teardown(test_adoption_after_kill, setup, teardown),
                cmocka_unit_test_setup_teardown(test_created_never_started_is_removed, setup, teardown),
                cmocka_unit_test_setup_teardown(test_hash_change_restarts_one, setup, teardown),
                cmocka_unit_test_setup_teardown(test_liveness_kill, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pull_policies, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pull_backoff, setup, teardown),
                cmocka_unit_test_setup_teardown(test_image_volumes, setup, teardown),
                cmocka_unit_test_setup_teardown(test_init_containers, setup, teardown),
                cmocka_unit_test_setup_teardown(test_removed_pod_stopped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_down, setup, teardown),
                cmocka_unit_test_setup_teardown(test_sandbox_dies, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
