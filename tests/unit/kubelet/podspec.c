/* SPDX-License-Identifier: Apache-2.0 */
/* Today's pod spec fields through the kubelet's own sync, against the fake runtime on the virtual clock: the
 * sidecars' stop order, activeDeadlineSeconds, container restart rules, ephemeral containers of a pod. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/string.h"
#include "basic/time.h"
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

/* A pod removed: the main containers are stopped first, then the sidecars in reverse order of their start, each
 * only once the ones it waits for are down, with what is left of the grace period */
static void test_sidecars_stop_in_reverse_order(void **state) {
        struct test_kubelet *t = *state;
        _cleanup_free_ char *actions = NULL;
        const struct fake_call *app, *s1, *s2;
        size_t since;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  terminationGracePeriodSeconds: 20\n"
                       "  initContainers:\n"
                       "  - {name: s1, image: busybox:1.36, restartPolicy: Always}\n"
                       "  - {name: s2, image: busybox:1.36, restartPolicy: Always}\n"
                       "  containers:\n  - {name: app, image: busybox:1.36}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        /* each container takes 5 s to stop */
        assert_return_code(fake_runtime_set_delay(t->rt, "StopContainer", 5 * USEC_PER_SEC), 0);
        since = fake_runtime_n_calls(t->rt);
        tk_set_pods(t, "");
        tk_wait(t, tk_pod_gone, (&(struct tk_want) { .t = t, .uid = "u1" }), MIN_USEC);
        actions = fake_runtime_actions(t->rt, since);
        assert_true(startswith(actions, "StopContainer:app StopContainer:s2 StopContainer:s1 StopPodSandbox:"));
        app = fake_runtime_last(t->rt, "StopContainer", "app");
        s2 = fake_runtime_last(t->rt, "StopContainer", "s2");
        s1 = fake_runtime_last(t->rt, "StopContainer", "s1");
        assert_non_null(app);
        assert_non_null(s2);
        assert_non_null(s1);
        /* s2 only once app is down, s1 once s2 is; each with what is left of the 20 s */
        assert_true(s2->at_usec >= app->at_usec + 5 * USEC_PER_SEC);
        assert_true(s1->at_usec >= s2->at_usec + 5 * USEC_PER_SEC);
        assert_int_equal(FAKE_REQ(app, StopContainerRequest)->timeout, 20);
        assert_in_range(FAKE_REQ(s2, StopContainerRequest)->timeout, 1, 15);
        assert_in_range(FAKE_REQ(s1, StopContainerRequest)->timeout, 1, 10);
}

/* A sidecar's preStop exec that never ends (upstream's "should terminate sidecars simultaneously if prestop doesn't
 * exit"): it runs in the runtime with no timeout of its own (ExecSync timeout 0, as upstream's RunInContainer), the
 * kubelet stops waiting for it when the grace period is over and stops the container with the 2 s minimum; the
 * command is not cut at the grace period but ends with its container, 32 s after it began. */
static void test_pre_stop_outlives_grace_period(void **state) {
        struct test_kubelet *t = *state;
        const struct fake_call *exec, *stop;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  terminationGracePeriodSeconds: 30\n"
                       "  initContainers:\n"
                       "  - name: s1\n    image: busybox:1.36\n    restartPolicy: Always\n"
                       "    lifecycle: {preStop: {exec: {command: [loop-forever]}}}\n"
                       "  containers:\n  - {name: app, image: busybox:1.36}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        /* the command answers only after 10 minutes: when its container is gone, in a real runtime */
        assert_return_code(fake_runtime_set_delay(t->rt, "ExecSync", 10 * MIN_USEC), 0);
        tk_set_pods(t, "");
        tk_wait(t, tk_pod_gone, (&(struct tk_want) { .t = t, .uid = "u1" }), 2 * MIN_USEC);
        exec = fake_runtime_last(t->rt, "ExecSync", "s1");
        stop = fake_runtime_last(t->rt, "StopContainer", "s1");
        assert_non_null(exec);
        assert_non_null(stop);
        assert_string_equal(FAKE_REQ(exec, ExecSyncRequest)->cmd[0], "loop-forever");
        assert_int_equal(FAKE_REQ(exec, ExecSyncRequest)->timeout, 0);
        /* stopped when the grace period is over, with the minimum; the exec was still in flight then */
        assert_in_range(stop->at_usec - exec->at_usec, 30 * USEC_PER_SEC, 31 * USEC_PER_SEC);
        assert_int_equal(FAKE_REQ(stop, StopContainerRequest)->timeout, 2);
        assert_int_equal(exec->status, -1);
}

/* The pod removed and added again, the same UID (a manifest deleted and written again), while its worker is busy
 * starting it: the next pass stops it all the same, then it starts again, its container's restart count 1
 * (upstream's restartRequested; e2e_node's "should successfully recreate when file is removed and recreated") */
static bool start_sent(void *userdata) {
        struct test_kubelet *t = userdata;
        return fake_runtime_count(t->rt, "StartContainer") > 0;
}

static void test_removed_and_added_again(void **state) {
        struct test_kubelet *t = *state;
        const char *pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                          "spec:\n  containers:\n  - {name: app, image: busybox:1.36}\n";
        _cleanup_free_ char *actions = NULL;

        assert_return_code(fake_runtime_set_delay(t->rt, "StartContainer", 2 * USEC_PER_SEC), 0);
        tk_set_pods(t, pod);
        tk_start(t);
        tk_wait(t, start_sent, t, MIN_USEC);
        tk_set_pods(t, ""); /* the pass that starts it is in flight */
        tk_run_for(t, 100 * USEC_PER_MSEC);
        tk_set_pods(t, pod);
        tk_wait(t, tk_restarts, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app", .n = 1 }), MIN_USEC);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        /* stopped (sandbox included), then started anew */
        actions = fake_runtime_actions(t->rt, 0);
        assert_string_equal(actions, "RunPodSandbox:web-testnode CreateContainer:app StartContainer:app "
                                     "StopContainer:app StopPodSandbox:web-testnode RunPodSandbox:web-testnode "
                                     "CreateContainer:app StartContainer:app");
        assert_int_equal(fake_runtime_count_instances(t->rt, "u1", "app",
                                                      RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING),
                         1);
        assert_int_equal(fake_runtime_count_instances(t->rt, "u1", "app", -1), 2);
}

/* activeDeadlineSeconds: at the deadline (virtual time) the pod is stopped and fails, and stays so */
static void test_active_deadline(void **state) {
        struct test_kubelet *t = *state;
        json_t *pod;
        size_t since;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  activeDeadlineSeconds: 30\n  terminationGracePeriodSeconds: 1\n"
                       "  containers:\n  - {name: app, image: busybox:1.36}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        since = fake_runtime_n_calls(t->rt);
        tk_run_for(t, 20 * USEC_PER_SEC);
        assert_string_equal(tk_phase(t, "u1"), "Running");
        tk_wait(t, tk_phase_is, (&(struct tk_want) { .t = t, .uid = "u1", .what = "Failed" }), MIN_USEC);
        pod = tk_pod(t, "u1");
        assert_string_equal(json_string_value(json_object_get(json_object_get(pod, "status"), "reason")),
                            "DeadlineExceeded");
        assert_string_equal(json_string_value(json_object_get(json_object_get(pod, "status"), "message")),
                            "Pod was active on the node longer than the specified deadline");
        tk_run_for(t, 5 * MIN_USEC);
        {
                _cleanup_free_ char *actions = fake_runtime_actions(t->rt, since);
                assert_string_equal(actions, "StopContainer:app StopPodSandbox:web-testnode");
        }
        assert_string_equal(tk_phase(t, "u1"), "Failed");
}

/* ContainerRestartRules: in a Never pod a container is started again on the exit codes of its rules only */
static void test_restart_rules(void **state) {
        struct test_kubelet *t = *state;

        fake_runtime_set_lifetime(t->rt, "app", 2 * USEC_PER_SEC, 42);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  restartPolicy: Never\n  containers:\n"
                       "  - name: app\n    image: busybox:1.36\n    restartPolicy: Never\n"
                       "    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n");
        tk_start(t);
        tk_wait(t, tk_restarts, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app", .n = 2 }), 2 * MIN_USEC);
        assert_string_equal(tk_phase(t, "u1"), "Running");
        /* another exit code: not started again, the pod fails */
        fake_runtime_set_lifetime(t->rt, "app", 2 * USEC_PER_SEC, 1);
        tk_wait(t, tk_phase_is, (&(struct tk_want) { .t = t, .uid = "u1", .what = "Failed" }), 5 * MIN_USEC);
        /* and stays done: its sandbox is stopped and no new one is made to start it again */
        tk_run_for(t, 5 * MIN_USEC);
        assert_int_equal(fake_runtime_count(t->rt, "RunPodSandbox"), 1);
        assert_int_equal(fake_runtime_count_instances(t->rt, "u1", "app",
                                                      RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING),
                         0);
        assert_string_equal(tk_phase(t, "u1"), "Failed");
}

/* An ephemeral container added to a running pod: started once, in the process namespace of its target's running
 * instance, reported in ephemeralContainerStatuses, never started again after it exits */
static void test_ephemeral_container(void **state) {
        struct test_kubelet *t = *state;
        const struct fake_container *app, *dbg;
        const Runtime__V1__NamespaceOption *ns;
        json_t *st;
        size_t n_created;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  containers:\n  - {name: app, image: busybox:1.36}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        fake_runtime_set_lifetime(t->rt, "debug", 10 * USEC_PER_SEC, 0);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  containers:\n  - {name: app, image: busybox:1.36}\n"
                       "  ephemeralContainers:\n  - {name: debug, image: busybox:1.36, targetContainerName: app}\n");
        tk_wait(t, tk_calls, (&(struct tk_want) { .t = t, .what = "StartContainer", .n = 2 }), MIN_USEC);
        app = fake_runtime_find(t->rt, "u1", "app");
        dbg = fake_runtime_find(t->rt, "u1", "debug");
        assert_non_null(app);
        assert_non_null(dbg);
        ns = dbg->config->linux->security_context->namespace_options;
        assert_int_equal(ns->pid, RUNTIME__V1__NAMESPACE_MODE__TARGET);
        assert_string_equal(ns->target_id, app->id);
        /* the app container was not touched */
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "app"), 1);
        tk_run_for(t, 5 * USEC_PER_SEC);
        st = json_object_get(json_object_get(tk_pod(t, "u1"), "status"), "ephemeralContainerStatuses");
        assert_int_equal(json_array_size(st), 1);
        assert_string_equal(json_string_value(json_object_get(json_array_get(st, 0), "name")), "debug");
        assert_non_null(json_object_get(json_object_get(json_array_get(st, 0), "state"), "running"));
        /* it exits (0): not started again, the pod keeps running */
        n_created = fake_runtime_count_subject(t->rt, "CreateContainer", "debug");
        assert_int_equal(n_created, 1);
        tk_run_for(t, 5 * MIN_USEC);
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "debug"), 1);
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "app"), 1);
        assert_string_equal(tk_phase(t, "u1"), "Running");
        st = json_object_get(json_object_get(tk_pod(t, "u1"), "status"), "ephemeralContainerStatuses");
        assert_non_null(json_object_get(json_object_get(json_array_get(st, 0), "state"), "terminated"));
}

/* In-place resize is not for static pods (upstream's refusal): a static pod's new container resources are
 * Infeasible, nothing is applied to the running container and it is not restarted */
static void test_static_pod_resize_infeasible(void **state) {
        struct test_kubelet *t = *state;
        json_t *conds, *c = NULL;
        size_t i;

        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  containers:\n  - name: app\n    image: busybox:1.36\n"
                       "    resources: {requests: {cpu: 100m}, limits: {cpu: 200m}}\n");
        tk_start(t);
        tk_wait(t, tk_running, (&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }), MIN_USEC);
        tk_set_pods(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: u1}\n"
                       "spec:\n  containers:\n  - name: app\n    image: busybox:1.36\n"
                       "    resources: {requests: {cpu: 150m}, limits: {cpu: 300m}}\n");
        tk_run_for(t, MIN_USEC);
        conds = json_object_get(json_object_get(tk_pod(t, "u1"), "status"), "conditions");
        json_array_foreach(conds, i, c)
                if (streq_ptr(json_string_value(json_object_get(c, "type")), "PodResizePending"))
                        break;
        assert_true(i < json_array_size(conds));
        assert_string_equal(json_string_value(json_object_get(c, "status")), "True");
        assert_string_equal(json_string_value(json_object_get(c, "reason")), "Infeasible");
        assert_string_equal(json_string_value(json_object_get(c, "message")),
                            "In-place resize of static-pods is not supported");
        assert_int_equal(fake_runtime_count(t->rt, "UpdateContainerResources"), 0);
        assert_int_equal(fake_runtime_count_subject(t->rt, "CreateContainer", "app"), 1);
        assert_true(tk_running(&(struct tk_want) { .t = t, .uid = "u1", .container = "app" }));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_sidecars_stop_in_reverse_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_pre_stop_outlives_grace_period, setup, teardown),
                cmocka_unit_test_setup_teardown(test_removed_and_added_again, setup, teardown),
                cmocka_unit_test_setup_teardown(test_active_deadline, setup, teardown),
                cmocka_unit_test_setup_teardown(test_restart_rules, setup, teardown),
                cmocka_unit_test_setup_teardown(test_ephemeral_container, setup, teardown),
                cmocka_unit_test_setup_teardown(test_static_pod_resize_infeasible, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
