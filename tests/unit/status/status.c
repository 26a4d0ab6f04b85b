/* SPDX-License-Identifier: Apache-2.0 */
/* The v1 PodStatus from spec + runtime view (generateAPIPodStatus): phase, conditions, container states. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "status/status.h"
#include "status/manager.h"
#include "basic/string.h"

static struct pod *parse_pod(const char *policy) {
        struct pod_set set = {};
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default, uid: uid-1}\n"
                             "spec:\n  restartPolicy: %s\n  containers:\n"
                             "  - {name: b, image: busybox:1.36, resources: {limits: {cpu: 1, memory: 1Gi}}}\n"
                             "  - {name: a, image: busybox:1.36, resources: {limits: {cpu: 1, memory: 1Gi}}}\n",
                             policy) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static struct kc_pod_status *status_new(bool ready_sandbox) {
        struct kc_pod_status *s;
        struct kc_sandbox *sb = calloc(1, sizeof(*sb));
        assert_int_equal(kc_pod_status_new("uid-1", &s), 0);
        sb->id = strdup("sb1");
        sb->state = ready_sandbox ? KC_SANDBOX_READY : KC_SANDBOX_NOTREADY;
        sb->have_status = true;
        sb->ip = strdup("10.88.0.7");
        sb->created_at = 1;
        assert_int_equal(kc_pod_status_add_sandbox(s, sb), 0);
        return s;
}

static void add(struct kc_pod_status *s, const char *name, const char *id, enum kc_container_state st, int exit_code,
                int64_t created, int restarts) {
        struct kc_container *c = calloc(1, sizeof(*c));
        c->id = strdup(id);
        c->sandbox_id = strdup("sb1");
        c->name = strdup(name);
        c->state = st;
        c->exit_code = exit_code;
        c->created_at = created;
        c->started_at = created * 1000000000LL;
        c->finished_at = st == KC_CONTAINER_EXITED ? (created + 1) * 1000000000LL : 0;
        c->reason = strdup(st == KC_CONTAINER_EXITED ? (exit_code ? "Error" : "Completed") : "");
        c->image_ref = strdup("sha256:abc");
        c->restart_count = restarts;
        c->have_status = true;
        assert_int_equal(kc_pod_status_add_container(s, c), 0);
        kc_pod_status_sort(s);
}

static const char *phase(const struct pod *p, const struct kc_pod_status *s) {
        struct pod_status_input in = { .pod = p, .observed = s };
        return status_pod_phase(&in);
}

static void test_phase(void **state) {
        _cleanup_pod_free_ struct pod *always = parse_pod("Always"), *never = parse_pod("Never"),
                                      *onfail = parse_pod("OnFailure");
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *none = status_new(true), *mixed = status_new(true),
                                                            *done = status_new(true), *failed = status_new(true);

        assert_string_equal(phase(always, NULL), "Pending");
        assert_string_equal(phase(always, none), "Pending");
        add(mixed, "a", "a1", KC_CONTAINER_RUNNING, 0, 5, 0);
        assert_string_equal(phase(always, mixed), "Pending"); /* b not created yet */
        add(mixed, "b", "b1", KC_CONTAINER_EXITED, 1, 4, 0);
        assert_string_equal(phase(always, mixed), "Running");
        add(done, "a", "a1", KC_CONTAINER_EXITED, 0, 4, 0);
        add(done, "b", "b1", KC_CONTAINER_EXITED, 0, 4, 0);
        assert_string_equal(phase(never, done), "Succeeded");
        assert_string_equal(phase(onfail, done), "Succeeded");
        assert_string_equal(phase(always, done), "Running"); /* they will be restarted */
        add(failed, "a", "a1", KC_CONTAINER_EXITED, 0, 4, 0);
        add(failed, "b", "b1", KC_CONTAINER_EXITED, 2, 4, 0);
        assert_string_equal(phase(never, failed), "Failed");
        assert_string_equal(phase(onfail, failed), "Running");
}

static json_t *find(json_t *arr, const char *key, const char *value) {
        size_t i;
        json_t *e;
        json_array_foreach(arr, i, e)
                if (streq(json_string_value(json_object_get(e, key)), value))
                        return e;
        fail_msg("no %s=%s", key, value);
        return NULL;
}

static void test_generate(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod("Always");
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new(true);
        struct container_waiting w = { .name = (char *) "b",
                                       .reason = "CrashLoopBackOff",
                                       .message = (char *) "back-off 10s restarting failed container=b" };
        struct pod_status_input in = { .pod = p,
                                       .observed = s,
                                       .waiting = &w,
                                       .n_waiting = 1,
                                       .host_ip = "192.0.2.2",
                                       .start_time_usec = 1700000000000000,
                                       .initialized_usec = 1700000000000000 };
        json_t *st = NULL, *cs, *a, *b, *ready;

        add(s, "a", "a2", KC_CONTAINER_RUNNING, 0, 9, 1);
        add(s, "a", "a1", KC_CONTAINER_EXITED, 137, 3, 0);
        add(s, "b", "b1", KC_CONTAINER_EXITED, 3, 5, 4);
        assert_int_equal(status_pod_generate(&in, &st), 0);

        assert_string_equal(json_string_value(json_object_get(st, "phase")), "Running");
        assert_string_equal(json_string_value(json_object_get(st, "qosClass")), "Guaranteed");
        assert_string_equal(json_string_value(json_object_get(st, "podIP")), "10.88.0.7");
        assert_string_equal(json_string_value(json_object_get(st, "hostIP")), "192.0.2.2");
        assert_string_equal(json_string_value(json_object_get(st, "startTime")), "2023-11-14T22:13:20Z");
        cs = json_object_get(st, "containerStatuses");
        assert_int_equal(json_array_size(cs), 2);
        /* sorted by name */
        assert_string_equal(json_string_value(json_object_get(json_array_get(cs, 0), "name")), "a");
        a = find(cs, "name", "a");
        assert_true(json_is_true(json_object_get(a, "ready"))); /* no readiness probe: ready once running */
        assert_true(json_is_true(json_object_get(a, "started")));
        assert_int_equal(json_integer_value(json_object_get(a, "restartCount")), 1);
        assert_string_equal(json_string_value(json_object_get(a, "containerID")), "containerd://a2");
        assert_non_null(json_object_get(json_object_get(a, "state"), "running"));
        assert_int_equal(json_integer_value(
                                 json_object_get(json_object_get(json_object_get(a, "lastState"), "terminated"),
                                                 "exitCode")),
                         137);
        b = find(cs, "name", "b");
        assert_false(json_is_true(json_object_get(b, "ready")));
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(json_object_get(b, "state"), "waiting"), "reason")),
                            "CrashLoopBackOff");
        /* what it was becomes the last state */
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(json_object_get(b, "lastState"), "terminated"),
                                                    "reason")),
                            "Error");
        ready = find(json_object_get(st, "conditions"), "type", "Ready");
        assert_string_equal(json_string_value(json_object_get(ready, "status")), "False");
        assert_string_equal(json_string_value(json_object_get(ready, "reason")), "ContainersNotReady");
        assert_string_equal(json_string_value(json_object_get(ready, "message")),
                            "containers with unready status: [b]");
        assert_string_equal(json_string_value(json_object_get(find(json_object_get(st, "conditions"), "type",
                                                                   "PodReadyToStartContainers"),
                                                              "status")),
                            "True");
        json_decref(st);

        /* nothing in the runtime yet */
        in.observed = NULL;
        in.n_waiting = 0;
        assert_int_equal(status_pod_generate(&in, &st), 0);
        assert_string_equal(json_string_value(json_object_get(st, "phase")), "Pending");
        assert_null(json_object_get(st, "podIP"));
        a = find(json_object_get(st, "containerStatuses"), "name", "a");
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(json_object_get(a, "state"), "waiting"), "reason")),
                            "ContainerCreating");
        json_decref(st);
}

static struct pod *parse_init_pod(const char *policy) {
        struct pod_set set = {};
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default, uid: uid-1}\n"
                             "spec:\n  restartPolicy: %s\n  initContainers:\n"
                             "  - {name: i1, image: busybox:1.36}\n  - {name: i2, image: busybox:1.36}\n"
                             "  containers:\n  - {name: a, image: busybox:1.36}\n",
                             policy) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static const char *cond_field(json_t *st, const char *type, const char *field) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(st, "conditions"), i, c)
                if (streq(json_string_value(json_object_get(c, "type")), type))
                        return json_string_value(json_object_get(c, field));
        return NULL;
}

static void test_init_containers_status(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_init_pod("Never");
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new(true);
        struct pod_status_input in = { .pod = p, .observed = s, .host_ip = "10.0.0.1" };
        json_t *st, *ics;

        add(s, "i1", "c-i1", KC_CONTAINER_RUNNING, 0, 2, 0);
        assert_int_equal(status_pod_generate(&in, &st), 0);
        assert_string_equal(json_string_value(json_object_get(st, "phase")), "Pending");
        assert_string_equal(cond_field(st, "Initialized", "status"), "False");
        assert_string_equal(cond_field(st, "Initialized", "reason"), "ContainersNotInitialized");
        assert_string_equal(cond_field(st, "Initialized", "message"), "containers with incomplete status: [i1 i2]");
        ics = json_object_get(st, "initContainerStatuses");
        assert_int_equal(json_array_size(ics), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(ics, 0), "name")), "i1");
        assert_non_null(json_object_get(json_object_get(json_array_get(ics, 0), "state"), "running"));
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(json_object_get(json_array_get(ics, 1), "state"),
                                                                    "waiting"),
                                                    "reason")),
                            "PodInitializing");
        assert_string_equal(json_string_value(json_object_get(
                                    json_object_get(json_object_get(json_array_get(json_object_get(st,
                                                                                                   "containerStatuses"),
                                                                                   0),
                                                                    "state"),
                                                    "waiting"),
                                    "reason")),
                            "PodInitializing");
        json_decref(st);

        /* i1 failed with restartPolicy Never: the pod failed */
        s->containers[0]->state = KC_CONTAINER_EXITED;
        s->containers[0]->exit_code = 1;
        assert_string_equal(status_pod_phase(&in), "Failed");

        /* both completed and the app runs: initialized, ready init containers, Running */
        s->containers[0]->exit_code = 0;
        add(s, "i2", "c-i2", KC_CONTAINER_EXITED, 0, 3, 0);
        add(s, "a", "c-a", KC_CONTAINER_RUNNING, 0, 5, 0);
        assert_int_equal(status_pod_generate(&in, &st), 0);
        assert_string_equal(json_string_value(json_object_get(st, "phase")), "Running");
        assert_string_equal(cond_field(st, "Initialized", "status"), "True");
        assert_null(cond_field(st, "Initialized", "message"));
        ics = json_object_get(st, "initContainerStatuses");
        assert_true(json_is_true(json_object_get(json_array_get(ics, 0), "ready")));
        assert_true(json_is_true(json_object_get(json_array_get(ics, 1), "ready")));
        json_decref(st);
}

/* the transition check under a given pod restartPolicy */
static int check_with(struct pod *p, const json_t *old, const json_t *st, enum restart_policy policy,
                      struct ck_error **why) {
        p->spec.restart_policy = policy;
        return status_pod_check_transition(old, st, &p->spec, why);
}

/* containers the runtime no longer knows keep their terminated state from the previous status, and a status that
 * would take a terminated container back to waiting or running is refused (the apiserver's validation does) */
static void test_old_status_and_transitions(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_init_pod("OnFailure");
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new(true);
        struct pod_status_input in = { .pod = p, .observed = s, .host_ip = "10.0.0.1" };
        _cleanup_ck_error_ struct ck_error *why = NULL;
        json_t *old, *st, *ics;

        /* i1 and i2 completed and were removed from the runtime (a node restart); the app runs */
        old = json_pack("{s:[{s:s, s:{s:{s:i, s:s}}, s:i}, {s:s, s:{s:{s:i, s:s}}, s:i}],"
                        " s:[{s:s, s:{s:{s:s}}, s:i, s:{s:{s:i}}}]}",
                        "initContainerStatuses", "name", "i1", "state", "terminated", "exitCode", 0, "reason",
                        "Completed", "restartCount", 0, "name", "i2", "state", "terminated", "exitCode", 0, "reason",
                        "Completed", "restartCount", 0, "containerStatuses", "name", "a", "state", "waiting", "reason",
                        "CrashLoopBackOff", "restartCount", 4, "lastState", "terminated", "exitCode", 2);
        assert_non_null(old);
        in.old_status = old;
        assert_int_equal(status_pod_generate(&in, &st), 0);
        ics = json_object_get(st, "initContainerStatuses");
        assert_true(
                json_equal(json_array_get(ics, 0), json_array_get(json_object_get(old, "initContainerStatuses"), 0)));
        assert_true(
                json_equal(json_array_get(ics, 1), json_array_get(json_object_get(old, "initContainerStatuses"), 1)));
        /* the app container, not created again yet: waiting, with its restarts and last state */
        assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(st, "containerStatuses"), 0),
                                                            "restartCount")),
                         4);
        assert_int_equal(json_integer_value(json_object_get(
                                 json_object_get(json_object_get(json_array_get(json_object_get(st,
                                                                                                "containerStatuses"),
                                                                                0),
                                                                 "lastState"),
                                                 "terminated"),
                                 "exitCode")),
                         2);
        assert_int_equal(check_with(p, old, st, RESTART_POLICY_ON_FAILURE, &why), 0);
        json_decref(st);

        /* without the previous status they would wait again: an illegal transition unless the policy is Always */
        in.old_status = NULL;
        assert_int_equal(status_pod_generate(&in, &st), 0);
        assert_int_equal(check_with(p, old, st, RESTART_POLICY_ON_FAILURE, &why), -EINVAL);
        assert_string_equal(ck_error_message(why),
                            "terminated container i1 attempted illegal transition to non-terminated state");
        why = ck_error_free(why);
        assert_int_equal(check_with(p, old, st, RESTART_POLICY_ALWAYS, &why), 0);
        assert_int_equal(check_with(p, NULL, st, RESTART_POLICY_NEVER, &why), 0);
        json_decref(st);

        /* a failed container may run again under OnFailure, not under Never */
        json_integer_set(
                json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(old,
                                                                                               "initContainerStatuses"),
                                                                               0),
                                                                "state"),
                                                "terminated"),
                                "exitCode"),
                1);
        json_integer_set(
                json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(old,
                                                                                               "initContainerStatuses"),
                                                                               1),
                                                                "state"),
                                                "terminated"),
                                "exitCode"),
                1);
        add(s, "i1", "c-i1", KC_CONTAINER_RUNNING, 0, 2, 1);
        add(s, "i2", "c-i2", KC_CONTAINER_RUNNING, 0, 2, 1);
        assert_int_equal(status_pod_generate(&in, &st), 0);
        assert_int_equal(check_with(p, old, st, RESTART_POLICY_ON_FAILURE, &why), 0);
        assert_int_equal(check_with(p, old, st, RESTART_POLICY_NEVER, &why), -EINVAL);
        json_decref(st);
        json_decref(old);
}

/* a pod past its activeDeadlineSeconds (ShouldEvict): Failed with the handler's reason and message, its
 * containers' states as they are */
static void test_evicted_by_sync_handler(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod("Always");
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new(false);
        struct pod_status_input in = {
                .pod = p,
                .observed = s,
                .evict_reason = "DeadlineExceeded",
                .evict_message = "Pod was active on the node longer than the specified deadline"
        };
        json_t *st;

        add(s, "a", "a1", KC_CONTAINER_EXITED, 137, 5, 0);
        add(s, "b", "b1", KC_CONTAINER_EXITED, 143, 4, 0);
        assert_string_equal(status_pod_phase(&in), "Failed");
        assert_int_equal(status_pod_generate(&in, &st), 0);
        assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
        assert_string_equal(json_string_value(json_object_get(st, "reason")), "DeadlineExceeded");
        assert_string_equal(json_string_value(json_object_get(st, "message")),
                            "Pod was active on the node longer than the specified deadline");
        assert_string_equal(cond_field(st, "Ready", "reason"), "PodCompleted");
        json_decref(st);
        /* without it the same containers make a Running pod (restartPolicy Always) */
        in.evict_reason = in.evict_message = NULL;
        assert_string_equal(status_pod_phase(&in), "Running");
}

/* getPhase with a container's own restart policy and rules: a Never pod stays Running while one will restart */
static void test_phase_with_restart_rules(void **state) {
        const char *yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default, uid: uid-1}\n"
                           "spec:\n  restartPolicy: Never\n  containers:\n"
                           "  - name: a\n    image: busybox\n    restartPolicy: Never\n"
                           "    restartPolicyRules: [{action: Restart, exitCodes: {operator: In, values: [42]}}]\n"
                           "  - {name: b, image: busybox}\n";
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct kc_pod_status *s;

        assert_int_equal(manifest_parse(yaml, strlen(yaml), &set, &err), 0);
        s = status_new(true);
        add(s, "a", "a1", KC_CONTAINER_EXITED, 42, 5, 0);
        add(s, "b", "b1", KC_CONTAINER_EXITED, 0, 4, 0);
        assert_string_equal(phase(set.pods[0], s), "Running"); /* a exited 42: it is restarted */
        kc_pod_status_free(s);
        s = status_new(true);
        add(s, "a", "a1", KC_CONTAINER_EXITED, 3, 5, 0);
        add(s, "b", "b1", KC_CONTAINER_EXITED, 0, 4, 0);
        assert_string_equal(phase(set.pods[0], s), "Failed"); /* 3 matches no rule: a's Never */
        kc_pod_status_free(s);
        s = status_new(true);
        add(s, "a", "a1", KC_CONTAINER_EXITED, 0, 5, 0);
        add(s, "b", "b1", KC_CONTAINER_EXITED, 0, 4, 0);
        assert_string_equal(phase(set.pods[0], s), "Succeeded");
        kc_pod_status_free(s);
        pod_set_done(&set);

        /* a failed init container: Failed only when it is not started again (the pod's Never, or its own) */
        static const struct {
                const char *pod_policy, *own, *phase;
        } inits[] = {
                { "Always", "", "Pending" },
                { "OnFailure", "", "Pending" },
                { "Never", "", "Failed" },
                { "Never", ", restartPolicy: OnFailure", "Pending" },
                { "Always", ", restartPolicy: Never", "Failed" },
        };
        for (size_t i = 0; i < ELEMENTSOF(inits); i++) {
                _cleanup_free_ char *y = NULL;
                assert_true(asprintf(&y,
                                     "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default, uid: u}\n"
                                     "spec:\n  restartPolicy: %s\n  initContainers: [{name: i, image: busybox%s}]\n"
                                     "  containers: [{name: a, image: busybox}]\n",
                                     inits[i].pod_policy, inits[i].own) > 0);
                assert_int_equal(manifest_parse(y, strlen(y), &set, &err), 0);
                s = status_new(true);
                add(s, "i", "i1", KC_CONTAINER_EXITED, 1, 5, 0);
                if (!streq(phase(set.pods[0], s), inits[i].phase))
                        fail_msg("case %zu: %s", i, phase(set.pods[0], s));
                kc_pod_status_free(s);
                pod_set_done(&set);
        }
}

/* readinessGates: Ready only when the containers are ready and every gate's condition (set by a client) is True;
 * the client's conditions are kept in the status, first */
static void test_readiness_gates(void **state) {
        static const struct {
                const char *conditions; /* the pod's status.conditions as the API server has them */
                bool containers_ready;
                const char *ready, *reason, *message;
        } cases[] = {
                { "[]", true, "False", "ReadinessGatesNotReady",
                  "corresponding condition of pod readiness gate \"example.com/lb\" does not exist., corresponding "
                  "condition of pod readiness gate \"example.com/dns\" does not exist." },
                { "[{type: example.com/lb, status: 'True'}, {type: example.com/dns, status: 'False'}]", true, "False",
                  "ReadinessGatesNotReady",
                  "the status of pod readiness gate \"example.com/dns\" is not \"True\", but False" },
                { "[{type: example.com/lb, status: 'True'}, {type: example.com/dns, status: 'True'}, "
                  "{type: Ready, status: 'False'}]",
                  true, "True", NULL, NULL },
                /* containers not ready: their reason, whatever the gates */
                { "[{type: example.com/lb, status: 'True'}, {type: example.com/dns, status: 'True'}]", false, "False",
                  "ContainersNotReady", "containers with unready status: [a]" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *yaml = NULL;
                _cleanup_ck_error_ struct ck_error *err = NULL;
                _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new(true);
                struct pod_set set = {};
                json_t *st, *conds;
                size_t n_client = 0;

                assert_true(asprintf(&yaml,
                                     "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default, uid: u}\n"
                                     "spec:\n  readinessGates: [{conditionType: example.com/lb}, "
                                     "{conditionType: example.com/dns}]\n"
                                     "  containers: [{name: a, image: busybox}]\nstatus: {conditions: %s}\n",
                                     cases[i].conditions) > 0);
                if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                        fail_msg("manifest: %s", ck_error_message(err));
                if (cases[i].containers_ready)
                        add(s, "a", "a1", KC_CONTAINER_RUNNING, 0, 5, 0);
                {
                        struct pod_status_input in = { .pod = set.pods[0], .observed = s, .now_usec = 1 };
                        assert_int_equal(status_pod_generate(&in, &st), 0);
                }
                if (!streq(cond_field(st, "Ready", "status"), cases[i].ready))
                        fail_msg("case %zu: Ready %s", i, cond_field(st, "Ready", "status"));
                assert_true(streq_ptr(cond_field(st, "Ready", "reason"), cases[i].reason));
                assert_true(streq_ptr(cond_field(st, "Ready", "message"), cases[i].message));
                assert_string_equal(cond_field(st, "ContainersReady", "status"),
                                    cases[i].containers_ready ? "True" : "False");
                /* the client's conditions come first and as they are; the kubelet's Ready is its own */
                conds = json_object_get(st, "conditions");
                for (size_t j = 0; j < json_array_size(conds); j++)
                        if (startswith(json_string_value(json_object_get(json_array_get(conds, j), "type")),
                                       "example.com/"))
                                assert_int_equal(j, n_client++);
                assert_int_equal(json_array_size(conds), 5 + n_client);
                json_decref(st);
                pod_set_done(&set);
        }
}

/* the status PATCH: a strategic merge patch that sends the kubelet's conditions only */
static void test_status_patch(void **state) {
        json_t *wanted = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}], s:[{s:s}]}", "phase", "Running", "conditions",
                                   "type", "example.com/lb", "status", "True", "type", "Ready", "status", "True",
                                   "podIPs", "ip", "10.0.0.2");
        /* issue 37: Ready=True after ContainersNotReady must not keep the stale reason and message (merged by
         * type, they stay unless set to null); nor the status the pod's message no longer applies to */
        json_t *sent = json_pack("{s:[{s:s, s:s, s:s, s:s}, {s:s, s:s}], s:s}", "conditions", "type", "Ready", "status",
                                 "False", "reason", "ContainersNotReady", "message",
                                 "containers with unready status: [c]", "type", "PodResizeInProgress", "status", "True",
                                 "message", "stale");
        json_t *patch = NULL;
        _cleanup_free_ char *got = NULL;

        assert_int_equal(status_build_patch("u-1", wanted, sent, &patch), 0);
        got = json_dumps(patch, JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(got, "{\"metadata\":{\"uid\":\"u-1\"},\"status\":{\"conditions\":[{\"message\":null,"
                                 "\"reason\":null,\"status\":\"True\","
                                 "\"type\":\"Ready\"},{\"$patch\":\"delete\",\"type\":\"PodResizeInProgress\"}],"
                                 "\"message\":null,\"phase\":\"Running\",\"podIPs\":[{\"$patch\":\"replace\"},{\"ip\":"
                                 "\"10.0.0.2\"}]}}");
        json_decref(patch);
        json_decref(wanted);
        json_decref(sent);
}

/* DisruptionTarget is shared (PodConditionSharedByKubelet): the kubelet's is sent, a client's is never deleted */
static void test_status_patch_disruption_target(void **state) {
        json_t *wanted = json_pack("{s:s, s:[{s:s, s:s, s:s}]}", "phase", "Failed", "conditions", "type",
                                   "DisruptionTarget", "status", "True", "reason", "TerminationByKubelet");
        json_t *none = json_pack("{s:s, s:[]}", "phase", "Failed", "conditions");
        json_t *sent = json_pack("{s:[{s:s, s:s}]}", "conditions", "type", "DisruptionTarget", "status", "True");
        json_t *patch = NULL;
        _cleanup_free_ char *got = NULL, *got2 = NULL;

        assert_int_equal(status_build_patch("u-1", wanted, NULL, &patch), 0);
        got = json_dumps(patch, JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(got,
                            "{\"metadata\":{\"uid\":\"u-1\"},\"status\":{\"conditions\":[{\"message\":null,\"reason\":"
                            "\"TerminationByKubelet\",\"status\":\"True\",\"type\":\"DisruptionTarget\"}],"
                            "\"phase\":\"Failed\"}}");
        json_decref(patch);
        assert_int_equal(status_build_patch("u-1", none, sent, &patch), 0);
        got2 = json_dumps(patch, JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(got2, "{\"metadata\":{\"uid\":\"u-1\"},\"status\":{\"conditions\":[],\"phase\":"
                                  "\"Failed\"}}");
        json_decref(patch);
        json_decref(wanted);
        json_decref(none);
        json_decref(sent);
}

/* allocatedResourcesStatus (ResourceHealthStatus): the app containers' devices and their health, as given */
static void test_allocated_resources_status(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod("Always");
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new(true);
        json_auto_t *devices = json_pack("{s:[{s:s, s:[{s:s, s:s}, {s:s, s:s}]}]}", "a", "name", "example.com/dev",
                                         "resources", "resourceID", "d0", "health", "Healthy", "resourceID", "d1",
                                         "health", "Unhealthy");
        struct pod_status_input in = { .pod = p, .observed = s, .allocated_resources_status = devices };
        json_auto_t *st = NULL;
        json_t *a, *b;

        add(s, "a", "a1", KC_CONTAINER_RUNNING, 0, 4, 0);
        add(s, "b", "b1", KC_CONTAINER_RUNNING, 0, 4, 0);
        assert_int_equal(status_pod_generate(&in, &st), 0);
        a = find(json_object_get(st, "containerStatuses"), "name", "a");
        b = find(json_object_get(st, "containerStatuses"), "name", "b");
        assert_true(json_equal(json_object_get(a, "allocatedResourcesStatus"), json_object_get(devices, "a")));
        assert_null(json_object_get(b, "allocatedResourcesStatus"));
}

/* status.allocatedResources and status.resources at pod level (InPlacePodLevelResourcesVerticalScaling, beta on):
 * PodRequests and PodLimits of the allocated pod, for every pod */
static void test_pod_level_status_resources(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod("Always");
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new(true);
        struct pod_status_input in = { .pod = p, .observed = s };
        struct pod_set set = {};
        struct pod *pl;
        json_auto_t *st = NULL, *st2 = NULL, *st3 = NULL, *alloc = json_pack("{s:{}, s:{}}", "a", "b");
        const char *yaml = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default, uid: uid-1}\n"
                           "spec:\n  resources: {requests: {cpu: 1500m, memory: 1Gi}, limits: {cpu: 2, memory: 2Gi}}\n"
                           "  containers:\n"
                           "  - {name: b, image: busybox:1.36, resources: {requests: {cpu: 500m, "
                           "ephemeral-storage: 1Gi}}}\n"
                           "  - {name: a, image: busybox:1.36}\n";

        add(s, "a", "a1", KC_CONTAINER_RUNNING, 0, 4, 0);
        add(s, "b", "b1", KC_CONTAINER_RUNNING, 0, 4, 0);
        /* the containers' sums when the pod has no pod-level resources */
        assert_int_equal(status_pod_generate(&in, &st), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(st, "allocatedResources"), "cpu")), "2");
        assert_string_equal(json_string_value(json_object_get(json_object_get(st, "allocatedResources"), "memory")),
                            "2Gi");
        assert_true(json_equal(json_object_get(json_object_get(st, "resources"), "limits"),
                               json_object_get(json_object_get(st, "resources"), "requests")));
        /* pod-level values replace the aggregate of cpu and memory; other resources stay the containers' */
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        pl = set.pods[0];
        in.pod = pl;
        assert_int_equal(status_pod_generate(&in, &st2), 0);
        {
                json_auto_t *want_req = json_pack("{s:s, s:s, s:s}", "cpu", "1500m", "memory", "1Gi",
                                                  "ephemeral-storage", "1Gi");
                json_auto_t *want_lim = json_pack("{s:s, s:s}", "cpu", "2", "memory", "2Gi");
                assert_true(json_equal(json_object_get(st2, "allocatedResources"), want_req));
                assert_true(json_equal(json_object_get(json_object_get(st2, "resources"), "requests"), want_req));
                assert_true(json_equal(json_object_get(json_object_get(st2, "resources"), "limits"), want_lim));
        }
        /* the allocated pod's, not the desired one's; a running container without resources has "resources": {}
         * (the apiserver refuses a resize when the first running container's status lacks it) */
        in.pod = pl;
        in.allocated_pod = p;
        in.allocation = alloc;
        assert_int_equal(status_pod_generate(&in, &st3), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(st3, "allocatedResources"), "cpu")), "2");
        {
                json_t *a = find(json_object_get(st3, "containerStatuses"), "name", "a");
                assert_non_null(json_object_get(a, "resources"));
                assert_int_equal(json_object_size(json_object_get(a, "resources")), 0);
        }
        pod_set_done(&set);
}

/* containerStatuses[].volumeMounts: every mount of the spec; a read-only one with recursiveReadOnly resolved to
 * Enabled or Disabled by what the runtime handler supports; a container not started yet has them too */
static void test_volume_mounts(void **state) {
        struct pod_set set = {};
        _cleanup_ck_error_ struct ck_error *err = NULL;
        const char *y = "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default, uid: uid-1}\n"
                        "spec:\n  volumes: [{name: v, emptyDir: {}}]\n  containers:\n"
                        "  - {name: a, image: i, volumeMounts: [{name: v, mountPath: /rw},"
                        " {name: v, mountPath: /ro, readOnly: true},"
                        " {name: v, mountPath: /rro, readOnly: true, recursiveReadOnly: IfPossible}]}\n"
                        "  - {name: b, image: i}\n";
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new(true);
        struct pod *p;
        json_t *a, *l;

        assert_int_equal(manifest_parse(y, strlen(y), &set, &err), 0);
        p = set.pods[0];
        add(s, "a", "a1", KC_CONTAINER_RUNNING, 0, 4, 0);
        for (int supported = 0; supported <= 1; supported++) {
                struct pod_status_input in = { .pod = p, .observed = s, .runtime_supports_rro = supported };
                json_auto_t *st = NULL, *want = NULL;
                assert_int_equal(status_pod_generate(&in, &st), 0);
                a = find(json_object_get(st, "containerStatuses"), "name", "a");
                l = json_object_get(a, "volumeMounts");
                want = json_pack("[{s:s, s:s}, {s:s, s:s, s:b, s:s}, {s:s, s:s, s:b, s:s}]", "name", "v", "mountPath",
                                 "/rw", "name", "v", "mountPath", "/ro", "readOnly", 1, "recursiveReadOnly", "Disabled",
                                 "name", "v", "mountPath", "/rro", "readOnly", 1, "recursiveReadOnly",
                                 supported ? "Enabled" : "Disabled");
                if (!json_equal(l, want))
                        fail_msg("volumeMounts: %s", json_dumps(l, JSON_COMPACT));
                /* b has no mounts and is not started: no volumeMounts */
                assert_null(
                        json_object_get(find(json_object_get(st, "containerStatuses"), "name", "b"), "volumeMounts"));
        }
        {
                /* a not started: a waiting status, with the mounts */
                _cleanup_(kc_pod_status_freep) struct kc_pod_status *none = status_new(true);
                struct pod_status_input in = { .pod = p, .observed = none };
                json_auto_t *st = NULL;
                assert_int_equal(status_pod_generate(&in, &st), 0);
                a = find(json_object_get(st, "containerStatuses"), "name", "a");
                assert_int_equal(json_array_size(json_object_get(a, "volumeMounts")), 3);
        }
        pod_set_done(&set);
}

/* containerStatuses[].user: what the runtime said the process runs as (ContainerStatus.user.linux), absent when
 * it said nothing */
static void test_user(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod("Always");
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new(true);
        struct pod_status_input in = { .pod = p, .observed = s };
        json_auto_t *st = NULL, *want = json_pack("{s:{s:i, s:i, s:[i, i]}}", "linux", "uid", 1000, "gid", 3000,
                                                  "supplementalGroups", 3000, 4000);
        struct kc_container *a;

        add(s, "a", "a1", KC_CONTAINER_RUNNING, 0, 4, 0);
        add(s, "b", "b1", KC_CONTAINER_RUNNING, 0, 4, 0);
        a = (struct kc_container *) kc_pod_status_find_container(s, "a");
        a->have_user = true;
        a->user_uid = 1000;
        a->user_gid = 3000;
        a->user_groups = calloc(2, sizeof(int64_t));
        a->user_groups[0] = 3000;
        a->user_groups[1] = 4000;
        a->n_user_groups = 2;
        assert_int_equal(status_pod_generate(&in, &st), 0);
        assert_true(
                json_equal(json_object_get(find(json_object_get(st, "containerStatuses"), "name", "a"), "user"), want));
        assert_null(json_object_get(find(json_object_get(st, "containerStatuses"), "name", "b"), "user"));
}

/* podIsTerminal: stopped containers give Succeeded or Failed whatever the restart policy */
static void test_phase_terminal(void **state) {
        _cleanup_pod_free_ struct pod *always = parse_pod("Always");
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *done = status_new(false), *killed = status_new(false),
                                                            *running = status_new(true);
        struct pod_status_input in = { .pod = always, .terminal = true };

        add(done, "a", "a1", KC_CONTAINER_EXITED, 0, 4, 0);
        add(done, "b", "b1", KC_CONTAINER_EXITED, 0, 4, 0);
        add(killed, "a", "a1", KC_CONTAINER_EXITED, 0, 4, 0);
        add(killed, "b", "b1", KC_CONTAINER_EXITED, 137, 4, 0);
        add(running, "a", "a1", KC_CONTAINER_RUNNING, 0, 4, 0);
        add(running, "b", "b1", KC_CONTAINER_EXITED, 137, 4, 0);
        assert_string_equal(phase(always, done), "Running"); /* not terminal: restarted */
        in.observed = done;
        assert_string_equal(status_pod_phase(&in), "Succeeded");
        in.observed = killed;
        assert_string_equal(status_pod_phase(&in), "Failed");
        in.observed = running;
        assert_string_equal(status_pod_phase(&in), "Running"); /* still stopping */

        /* once finished, with its sandbox stopped, the pod keeps the IP of the last status */
        {
                json_auto_t *old = json_pack("{s:s, s:[{s:s}]}", "podIP", "10.1.2.3", "podIPs", "ip", "10.1.2.3");
                json_auto_t *st = NULL, *st2 = NULL;
                in.observed = killed;
                in.old_status = old;
                assert_int_equal(status_pod_generate(&in, &st), 0);
                assert_string_equal(json_string_value(json_object_get(st, "phase")), "Failed");
                assert_string_equal(json_string_value(json_object_get(st, "podIP")), "10.1.2.3");
                assert_string_equal(json_string_value(
                                            json_object_get(json_array_get(json_object_get(st, "podIPs"), 0), "ip")),
                                    "10.1.2.3");
                /* a pod that is not finished whose sandbox stopped (to be made again) has none until the new one has
                 * its own */
                in.observed = done;
                in.terminal = false;
                assert_int_equal(status_pod_generate(&in, &st2), 0);
                assert_null(json_object_get(st2, "podIP"));
                in.old_status = NULL;
        }
}

static json_t *cstatus(const char *name, const char *state, int exit_code, bool last_terminated) {
        json_t *st = streq(state, "terminated") ? json_pack("{s:{s:i}}", state, "exitCode", exit_code)
                                                : json_pack("{s:{}}", state);
        json_t *cs = json_pack("{s:s, s:o, s:o, s:b}", "name", name, "state", st, "lastState",
                               last_terminated ? json_pack("{s:{s:i}}", "terminated", "exitCode", exit_code)
                                               : json_object(),
                               "ready", streq(state, "running"));
        assert_non_null(cs);
        return cs;
}

static const char *state_of(const json_t *status, const char *list, size_t i) {
        const json_t *st = json_object_get(json_array_get(json_object_get(status, list), i), "state");
        return json_object_get(st, "terminated")
                       ? json_string_value(json_object_get(json_object_get(st, "terminated"), "reason")) ?: "terminated"
               : json_object_get(st, "running") ? "running"
                                                : "waiting";
}

/* TerminatePod: what never terminated is marked so (once initialized), a pending or running phase is Failed */
static void test_terminate(void **state) {
        json_auto_t *running = json_pack("{s:s, s:[o, o]}", "phase", "Running", "containerStatuses",
                                         cstatus("a", "running", 0, false), cstatus("b", "terminated", 0, false));
        json_auto_t *inits = json_pack("{s:s, s:[o, o, o], s:[o]}", "phase", "Pending", "initContainerStatuses",
                                       cstatus("i1", "terminated", 0, false), cstatus("i2", "running", 0, false),
                                       cstatus("i3", "waiting", 0, false), "containerStatuses",
                                       cstatus("a", "waiting", 0, false));
        json_auto_t *waiting = json_pack("{s:s, s:[o, o], s:[o]}", "phase", "Pending", "initContainerStatuses",
                                         cstatus("i1", "waiting", 0, false), cstatus("i2", "waiting", 0, false),
                                         "containerStatuses", cstatus("a", "waiting", 0, false));
        json_auto_t *done = json_pack("{s:s, s:[o]}", "phase", "Succeeded", "containerStatuses",
                                      cstatus("a", "terminated", 0, false));
        json_t *out = NULL;

        assert_int_equal(status_pod_terminate(running, false, false, &out), 0);
        assert_string_equal(json_string_value(json_object_get(out, "phase")), "Failed");
        assert_string_equal(state_of(out, "containerStatuses", 0), "ContainerStatusUnknown");
        assert_int_equal(json_integer_value(json_object_get(
                                 json_object_get(json_object_get(json_array_get(json_object_get(out,
                                                                                                "containerStatuses"),
                                                                                0),
                                                                 "state"),
                                                 "terminated"),
                                 "exitCode")),
                         137);
        assert_true(
                json_is_false(json_object_get(json_array_get(json_object_get(out, "containerStatuses"), 0), "ready")));
        assert_string_equal(state_of(out, "containerStatuses", 1), "terminated");  /* kept */
        assert_string_equal(state_of(running, "containerStatuses", 0), "running"); /* a copy */
        json_decref(out);

        /* not initialized: app containers stay waiting; init containers up to the last started are marked */
        assert_int_equal(status_pod_terminate(inits, true, false, &out), 0);
        assert_string_equal(state_of(out, "containerStatuses", 0), "waiting");
        assert_string_equal(state_of(out, "initContainerStatuses", 0), "terminated");
        assert_string_equal(state_of(out, "initContainerStatuses", 1), "ContainerStatusUnknown");
        assert_string_equal(state_of(out, "initContainerStatuses", 2), "waiting");
        assert_string_equal(json_string_value(json_object_get(out, "phase")), "Failed");
        json_decref(out);

        /* nothing started: the first init container is marked */
        assert_int_equal(status_pod_terminate(waiting, true, false, &out), 0);
        assert_string_equal(state_of(out, "initContainerStatuses", 0), "ContainerStatusUnknown");
        assert_string_equal(state_of(out, "initContainerStatuses", 1), "waiting");
        json_decref(out);

        /* terminal already: kept; a static pod's phase stays */
        assert_int_equal(status_pod_terminate(done, false, false, &out), 0);
        assert_string_equal(json_string_value(json_object_get(out, "phase")), "Succeeded");
        json_decref(out);
        assert_int_equal(status_pod_terminate(running, false, true, &out), 0);
        assert_string_equal(json_string_value(json_object_get(out, "phase")), "Running");
        json_decref(out);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_status_patch_disruption_target),
                cmocka_unit_test(test_phase),
                cmocka_unit_test(test_phase_terminal),
                cmocka_unit_test(test_allocated_resources_status),
                cmocka_unit_test(test_pod_level_status_resources),
                cmocka_unit_test(test_volume_mounts),
                cmocka_unit_test(test_user),
                cmocka_unit_test(test_terminate),
                cmocka_unit_test(test_evicted_by_sync_handler),
                cmocka_unit_test(test_phase_with_restart_rules),
                cmocka_unit_test(test_readiness_gates),
                cmocka_unit_test(test_status_patch),
                cmocka_unit_test(test_generate),
                cmocka_unit_test(test_init_containers_status),
                cmocka_unit_test(test_old_status_and_transitions),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
