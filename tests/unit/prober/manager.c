/* SPDX-License-Identifier: Apache-2.0 */
/* The probe manager's workers on the virtual clock, with exec probes answered by the fake runtime's ExecSync:
 * initial delays and periods, thresholds, what is published and when, workers following container instances
 * (a new instance starts afresh), startup probes holding liveness and readiness, errors and timeouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "config/config.h"
#include "fake/fake_runtime.h"
#include "fake/vloop.h"
#include "prober/manager.h"

#define UID "u1"

struct change {
        char *container;
        enum probe_type type;
        enum probe_result result;
};

struct ctx {
        struct event_base *base;
        struct fake_runtime *rt;
        struct cri_client *cri;
        struct prober *p;
        struct pod *pod;
        char *sandbox;
        struct change changes[64];
        unsigned n_changes, n_failed;
        char *last_output;
};

static void on_changed(void *userdata, const char *pod_uid, const char *container, enum probe_type type,
                       enum probe_result result) {
        struct ctx *c = userdata;
        assert_string_equal(pod_uid, UID);
        assert_true(c->n_changes < ELEMENTSOF(c->changes));
        c->changes[c->n_changes++] = (struct change) { .container = strdup(container), .type = type, .result = result };
}

static void on_failed(void *userdata, const char *pod_uid, const char *container, enum probe_type type,
                      const char *output) {
        struct ctx *c = userdata;
        c->n_failed++;
        free(c->last_output);
        c->last_output = strdup(output);
}

static int setup(void **state) {
        static const struct prober_callbacks cb = { .changed = on_changed, .failed = on_failed };
        struct ctx *c = calloc(1, sizeof(*c));

        assert_non_null(c);
        c->base = event_base_new();
        assert_non_null(c->base);
        vloop_enable(c->base);
        assert_int_equal(fake_runtime_new(c->base, &c->rt), 0);
        assert_int_equal(cri_client_new(c->base, fake_runtime_endpoint(c->rt), NULL, 2 * USEC_PER_SEC, &c->cri), 0);
        assert_int_equal(probe_manager_new(c->base, c->cri, 2 * USEC_PER_SEC, &cb, c, &c->p), 0);
        assert_int_equal(fake_runtime_add_sandbox(c->rt, UID, "web", 0, &c->sandbox), 0);
        *state = c;
        return 0;
}

static int teardown(void **state) {
        struct ctx *c = *state;

        probe_manager_free(c->p);
        cri_client_free(c->cri);
        fake_runtime_free(c->rt);
        event_base_free(c->base);
        vloop_disable();
        pod_free(c->pod);
        for (unsigned i = 0; i < c->n_changes; i++)
                free(c->changes[i].container);
        free(c->last_output);
        free(c->sandbox);
        free(c);
        return 0;
}

static void set_pod(struct ctx *c, const char *containers_yaml) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, uid: " UID "}\nspec:\n%s",
                             containers_yaml) > 0);
        if (pod_config_static_pods_from_manifest(yaml, strlen(yaml), "testnode", CONFIG_SOURCE_FILE, "/m/web.yaml",
                                                 &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        assert_int_equal(set.n, 1);
        pod_free(c->pod);
        c->pod = pod_ref(set.pods[0]);
        pod_set_done(&set);
}

static enum kc_container_state state_of(Runtime__V1__ContainerState s) {
        switch (s) {
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED:
                return KC_CONTAINER_CREATED;
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING:
                return KC_CONTAINER_RUNNING;
        case RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED:
                return KC_CONTAINER_EXITED;
        default:
                return KC_CONTAINER_UNKNOWN;
        }
}

/* a container's start time as the runtime reports it, when set (unix nsec): one from before the prober started,
 * as after a restart of ckubelet */
static int64_t forced_started_at;

/* What a sync pass would hand the prober: the runtime's view of the pod. */
static void observe(struct ctx *c) {
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *st = NULL;

        assert_int_equal(kc_pod_status_new(UID, &st), 0);
        for (size_t i = 0; i < fake_runtime_n_containers(c->rt); i++) {
                const struct fake_container *f = fake_runtime_container_at(c->rt, i);
                struct kc_container *k = calloc(1, sizeof(*k));

                assert_non_null(k);
                k->id = strdup(f->id);
                k->sandbox_id = strdup(f->sandbox_id);
                k->name = strdup(f->name);
                k->pod_uid = strdup(UID);
                k->hash = strdup("");
                k->attempt = f->attempt;
                k->restart_count = (int) f->attempt;
                k->state = state_of(f->state);
                k->created_at = f->created_at;
                k->have_status = true;
                k->started_at = forced_started_at ? forced_started_at : f->started_at;
                k->finished_at = f->finished_at;
                assert_non_null(k->id);
                assert_int_equal(kc_pod_status_add_container(st, k), 0);
        }
        kc_pod_status_sort(st);
        assert_int_equal(probe_manager_update_pod(c->p, c->pod, "10.88.0.2", st), 0);
}

static char *start(struct ctx *c, const char *name, uint32_t attempt) {
        char *id = NULL;
        assert_int_equal(fake_runtime_add_container(c->rt, c->sandbox, name, attempt, true, &id), 0);
        return id;
}

/* ExecSync calls running argv[0] == command, and the time of the n-th (from 0) */
static size_t execs(struct ctx *c, const char *command, size_t nth, uint64_t *ret_at) {
        size_t n = 0;
        for (size_t i = 0; i < fake_runtime_n_calls(c->rt); i++) {
                const struct fake_call *call = fake_runtime_call(c->rt, i);
                const Runtime__V1__ExecSyncRequest *r = (const void *) call->req;
                if (!streq(call->method, "ExecSync") || r->n_cmd < 1 || !streq(r->cmd[0], command))
                        continue;
                if (n == nth && ret_at)
                        *ret_at = call->at_usec;
                n++;
        }
        return n;
}

static enum probe_result result(struct ctx *c, enum probe_type t, const char *name, const char *id) {
        enum probe_result r;
        if (!probe_manager_get_result(c->p, t, UID, name, id, &r))
                fail_msg("no %s result for %s", probe_type_to_string(t), id);
        return r;
}

struct exec_want {
        struct ctx *c;
        const char *command;
        size_t n;
};

static bool execs_reached(void *userdata) {
        struct exec_want *w = userdata;
        return execs(w->c, w->command, 0, NULL) >= w->n;
}

static void run_execs(struct ctx *c, const char *command, size_t n) {
        struct exec_want w = { c, command, n };
        if (!vloop_run_until(c->base, execs_reached, &w, 10 * 60 * USEC_PER_SEC))
                fail_msg("%zu %s probes not run", n, command);
        vloop_settle(c->base);
}

/* Liveness: first probe at startedAt + initialDelaySeconds, then every periodSeconds; starts as success; a
 * failure is published after failureThreshold failures in a row, once, and the worker then holds. */
static void test_liveness_thresholds(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *id = NULL;
        uint64_t t0 = now_usec(), at;

        set_pod(c, "  containers:\n  - name: app\n    image: busybox:1.36\n"
                   "    livenessProbe: {exec: {command: [live]}, initialDelaySeconds: 10, periodSeconds: 7, "
                   "failureThreshold: 3}\n");
        id = start(c, "app", 0);
        observe(c);
        assert_int_equal(result(c, PROBE_LIVENESS, "app", id), PROBE_RESULT_SUCCESS);
        run_execs(c, "live", 3);
        assert_int_equal(execs(c, "live", 0, &at), 3);
        assert_int_equal(at - t0, 10 * USEC_PER_SEC);
        execs(c, "live", 1, &at);
        assert_int_equal(at - t0, 17 * USEC_PER_SEC);
        execs(c, "live", 2, &at);
        assert_int_equal(at - t0, 24 * USEC_PER_SEC);
        assert_int_equal(c->n_changes, 0);

        /* two failures change nothing; a success in between starts the count again */
        assert_int_equal(fake_runtime_set_exec(c->rt, "app", 1, "it hurts"), 0);
        run_execs(c, "live", 5);
        assert_int_equal(c->n_failed, 2);
        assert_string_equal(c->last_output, "it hurts");
        assert_int_equal(fake_runtime_set_exec(c->rt, "app", 0, ""), 0);
        run_execs(c, "live", 6);
        assert_int_equal(fake_runtime_set_exec(c->rt, "app", 1, "it hurts"), 0);
        run_execs(c, "live", 8);
        assert_int_equal(c->n_changes, 0);
        assert_int_equal(result(c, PROBE_LIVENESS, "app", id), PROBE_RESULT_SUCCESS);
        /* the third in a row publishes the failure */
        run_execs(c, "live", 9);
        assert_int_equal(c->n_changes, 1);
        assert_string_equal(c->changes[0].container, "app");
        assert_int_equal(c->changes[0].type, PROBE_LIVENESS);
        assert_int_equal(c->changes[0].result, PROBE_RESULT_FAILURE);
        assert_int_equal(result(c, PROBE_LIVENESS, "app", id), PROBE_RESULT_FAILURE);
        /* and the worker holds until the container is replaced */
        vloop_run_for(c->base, 5 * 60 * USEC_PER_SEC);
        assert_int_equal(execs(c, "live", 0, NULL), 9);
        assert_int_equal(c->n_changes, 1);
}

/* A new instance of the container: the result starts again from the kind's initial value (published), the old
 * instance has none, and the first probe of the new one waits for its initial delay. */
static void test_new_instance_resets(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *old = NULL, *new = NULL;
        uint64_t started, at;

        set_pod(c, "  containers:\n  - name: app\n    image: busybox:1.36\n"
                   "    livenessProbe: {exec: {command: [live]}, initialDelaySeconds: 10, periodSeconds: 5, "
                   "failureThreshold: 1}\n");
        old = start(c, "app", 0);
        observe(c);
        assert_int_equal(fake_runtime_set_exec(c->rt, "app", 1, ""), 0);
        run_execs(c, "live", 1);
        assert_int_equal(result(c, PROBE_LIVENESS, "app", old), PROBE_RESULT_FAILURE);
        assert_int_equal(c->n_changes, 1);

        /* killed and started again, as the kubelet does */
        assert_int_equal(fake_runtime_exit(c->rt, old, 137, 0), 0);
        vloop_run_for(c->base, 3 * USEC_PER_SEC);
        assert_int_equal(fake_runtime_set_exec(c->rt, "app", 0, ""), 0);
        started = now_usec();
        new = start(c, "app", 1);
        observe(c);
        assert_int_equal(c->n_changes, 2);
        assert_int_equal(c->changes[1].result, PROBE_RESULT_SUCCESS);
        assert_int_equal(result(c, PROBE_LIVENESS, "app", new), PROBE_RESULT_SUCCESS);
        {
                enum probe_result r;
                assert_false(probe_manager_get_result(c->p, PROBE_LIVENESS, UID, "app", old, &r));
        }
        run_execs(c, "live", 2);
        execs(c, "live", 1, &at);
        assert_int_equal(at - started, 10 * USEC_PER_SEC);
}

/* Readiness starts as failure and needs successThreshold successes; a startup probe holds liveness and
 * readiness until it succeeds, then stops. */
static void test_startup_then_readiness(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *id = NULL;

        set_pod(c, "  containers:\n  - name: app\n    image: busybox:1.36\n"
                   "    startupProbe: {exec: {command: [started]}, periodSeconds: 5, failureThreshold: 30}\n"
                   "    readinessProbe: {exec: {command: [ready]}, periodSeconds: 5, successThreshold: 2}\n"
                   "    livenessProbe: {exec: {command: [live]}, periodSeconds: 5}\n");
        assert_int_equal(fake_runtime_set_exec_for(c->rt, "app", "started", 1, "starting"), 0);
        id = start(c, "app", 0);
        observe(c);
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_FAILURE);
        assert_int_equal(result(c, PROBE_STARTUP, "app", id), PROBE_RESULT_UNKNOWN);
        run_execs(c, "started", 6);
        assert_int_equal(execs(c, "ready", 0, NULL), 0);
        assert_int_equal(execs(c, "live", 0, NULL), 0);
        assert_int_equal(c->n_changes, 0);

        assert_int_equal(fake_runtime_set_exec_for(c->rt, "app", "started", 0, ""), 0);
        run_execs(c, "ready", 2);
        assert_int_equal(result(c, PROBE_STARTUP, "app", id), PROBE_RESULT_SUCCESS);
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_SUCCESS);
        assert_true(execs(c, "live", 0, NULL) >= 1);
        /* published in order: started, then ready (after two successes) */
        assert_int_equal(c->n_changes, 2);
        assert_int_equal(c->changes[0].type, PROBE_STARTUP);
        assert_int_equal(c->changes[0].result, PROBE_RESULT_SUCCESS);
        assert_int_equal(c->changes[1].type, PROBE_READINESS);
        assert_int_equal(c->changes[1].result, PROBE_RESULT_SUCCESS);
        /* the startup probe is done */
        {
                size_t n = execs(c, "started", 0, NULL);
                vloop_run_for(c->base, 60 * USEC_PER_SEC);
                assert_int_equal(execs(c, "started", 0, NULL), n);
                assert_true(execs(c, "ready", 0, NULL) >= 12);
        }
}

/* A probe that cannot run (the runtime errs) is not counted; one that outlives its timeout is a failure. */
static void test_errors_and_timeouts(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *id = NULL;

        set_pod(c, "  containers:\n  - name: app\n    image: busybox:1.36\n"
                   "    readinessProbe: {exec: {command: [ready]}, periodSeconds: 5, timeoutSeconds: 1}\n");
        id = start(c, "app", 0);
        observe(c);
        run_execs(c, "ready", 1);
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_SUCCESS);

        assert_int_equal(fake_runtime_fail(c->rt, "ExecSync", FAKE_EVERY_CALL, GRPC_UNAVAILABLE, "runtime gone"), 0);
        run_execs(c, "ready", 6);
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_SUCCESS);
        assert_int_equal(c->n_failed, 0);

        /* the runtime takes longer than timeoutSeconds + the request timeout: a failure, "timed out" */
        fake_runtime_clear_failures(c->rt, NULL);
        assert_int_equal(fake_runtime_set_delay(c->rt, "ExecSync", 60 * USEC_PER_SEC), 0);
        /* a probe's outcome comes before the next is issued: 9 issued, 2 timed out */
        run_execs(c, "ready", 9);
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_SUCCESS);
        run_execs(c, "ready", 10); /* the third (failureThreshold's default) */
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_FAILURE);
        assert_int_equal(c->n_failed, 3);
        assert_string_equal(c->last_output, "command \"ready\" timed out");
}

/* After a restart of ckubelet (probe_manager_keep_ready): an instance that ran before keeps the readiness the API
 * server showed until its first probe answers; the thresholds then count from success (failureThreshold failures
 * make it not ready); considered once per instance; a new instance never gets it. */
static void test_keep_ready_until_answered(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *id = NULL, *new = NULL;

        set_pod(c, "  containers:\n  - name: app\n    image: busybox:1.36\n"
                   "    readinessProbe: {exec: {command: [ready]}, periodSeconds: 10, timeoutSeconds: 1, "
                   "failureThreshold: 2}\n");
        assert_int_equal(fake_runtime_set_exec(c->rt, "app", 1, ""), 0);
        id = start(c, "app", 0);
        forced_started_at = 1000000000LL;
        observe(c);
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_FAILURE); /* readiness starts so */
        assert_false(probe_manager_keep_ready(c->p, UID, "app", "another-id"));
        assert_true(probe_manager_keep_ready(c->p, UID, "app", id));
        assert_false(probe_manager_keep_ready(c->p, UID, "app", id)); /* once per instance */
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_SUCCESS);
        /* the first answer is a failure: still ready (1 of failureThreshold 2), the second makes it not ready */
        run_execs(c, "ready", 1);
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_SUCCESS);
        run_execs(c, "ready", 2);
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_FAILURE);

        /* a new instance (started after the prober) starts as not ready and is never kept */
        assert_int_equal(fake_runtime_exit(c->rt, id, 137, 0), 0);
        forced_started_at = 0;
        new = start(c, "app", 1);
        observe(c);
        assert_false(probe_manager_keep_ready(c->p, UID, "app", new));
        assert_int_equal(result(c, PROBE_READINESS, "app", new), PROBE_RESULT_FAILURE);
}

/* No probe answers (the runtime is down: errors are not answers): the kept readiness ends periodSeconds +
 * timeoutSeconds after the instance was first seen, and the initial failure is published. */
static void test_keep_ready_bounded(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *id = NULL;
        uint64_t seen;

        set_pod(c, "  containers:\n  - name: app\n    image: busybox:1.36\n"
                   "    readinessProbe: {exec: {command: [ready]}, periodSeconds: 10, timeoutSeconds: 3}\n");
        id = start(c, "app", 0);
        forced_started_at = 1000000000LL;
        seen = now_usec();
        observe(c);
        forced_started_at = 0;
        assert_true(probe_manager_keep_ready(c->p, UID, "app", id));
        fake_runtime_set_down(c->rt, true);
        vloop_run_for(c->base, 13 * USEC_PER_SEC - (now_usec() - seen) - 100000);
        assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_SUCCESS);
        {
                unsigned before = c->n_changes;
                vloop_run_for(c->base, 200000);
                assert_int_equal(result(c, PROBE_READINESS, "app", id), PROBE_RESULT_FAILURE);
                assert_int_equal(c->n_changes, before + 1);
                assert_int_equal(c->changes[before].result, PROBE_RESULT_FAILURE);
        }
        fake_runtime_set_down(c->rt, false);
}

/* Workers follow the spec: a probe removed from the spec stops; a pod removed stops them all; a container
 * that is not running is not probed. */
static void test_workers_follow_spec(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *a = NULL, *b = NULL;
        size_t n;

        set_pod(c, "  containers:\n"
                   "  - {name: a, image: busybox:1.36, readinessProbe: {exec: {command: [ra]}, periodSeconds: 5}}\n"
                   "  - {name: b, image: busybox:1.36, readinessProbe: {exec: {command: [rb]}, periodSeconds: 5}}\n");
        a = start(c, "a", 0);
        b = start(c, "b", 0);
        observe(c);
        run_execs(c, "rb", 2);
        assert_true(execs(c, "ra", 0, NULL) >= 2);

        /* b's probe removed from the spec */
        set_pod(c, "  containers:\n"
                   "  - {name: a, image: busybox:1.36, readinessProbe: {exec: {command: [ra]}, periodSeconds: 5}}\n"
                   "  - {name: b, image: busybox:1.36}\n");
        observe(c);
        n = execs(c, "rb", 0, NULL);
        vloop_run_for(c->base, 30 * USEC_PER_SEC);
        assert_int_equal(execs(c, "rb", 0, NULL), n);
        assert_true(execs(c, "ra", 0, NULL) >= 7);

        /* a exits: not probed while it is not running */
        assert_int_equal(fake_runtime_exit(c->rt, a, 0, 0), 0);
        observe(c);
        n = execs(c, "ra", 0, NULL);
        vloop_run_for(c->base, 30 * USEC_PER_SEC);
        assert_int_equal(execs(c, "ra", 0, NULL), n);

        /* the pod goes */
        probe_manager_remove_pod(c->p, UID);
        {
                enum probe_result r;
                assert_false(probe_manager_get_result(c->p, PROBE_READINESS, UID, "a", a, &r));
        }
        n = fake_runtime_count(c->rt, "ExecSync");
        vloop_run_for(c->base, 30 * USEC_PER_SEC);
        assert_int_equal(fake_runtime_count(c->rt, "ExecSync"), n);
        (void) b;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_liveness_thresholds, setup, teardown),
                cmocka_unit_test_setup_teardown(test_new_instance_resets, setup, teardown),
                cmocka_unit_test_setup_teardown(test_startup_then_readiness, setup, teardown),
                cmocka_unit_test_setup_teardown(test_errors_and_timeouts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_workers_follow_spec, setup, teardown),
                cmocka_unit_test_setup_teardown(test_keep_ready_until_answered, setup, teardown),
                cmocka_unit_test_setup_teardown(test_keep_ready_bounded, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
