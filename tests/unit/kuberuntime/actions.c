/* SPDX-License-Identifier: Apache-2.0 */
/* The reconciler's decisions (computePodActions) and the container hash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "apis/manifest.h"
#include "basic/error.h"
#include "kuberuntime/actions.h"
#include "prober/prober.h"
#include "basic/backoff.h"
#include "basic/strmap.h"
#include "container/labels.h"
#include "basic/strv.h"

static struct pod *parse_pod(const char *yaml) {
        struct pod_set set = {};
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod *p;

        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        assert_int_equal(set.n, 1);
        p = pod_ref(set.pods[0]);
        if (!p->uid)
                p->uid = strdup("uid-1");
        pod_set_done(&set);
        return p;
}

#define POD(policy)                                                      \
        "apiVersion: v1\nkind: Pod\n"                                    \
        "metadata: {name: web, namespace: default}\n"                    \
        "spec:\n"                                                        \
        "  restartPolicy: " policy "\n"                                  \
        "  containers:\n"                                                \
        "  - {name: a, image: busybox:1.36, command: [sleep, '3600']}\n" \
        "  - {name: b, image: busybox:1.36, command: [sleep, '3600']}\n"

static struct kc_pod_status *status_new(void) {
        struct kc_pod_status *s;
        assert_int_equal(kc_pod_status_new("uid-1", &s), 0);
        return s;
}

static void add_sandbox(struct kc_pod_status *s, const char *id, uint32_t attempt, enum kc_sandbox_state st,
                        int64_t created, bool host_network, const char *ip) {
        struct kc_sandbox *sb = calloc(1, sizeof(*sb));
        sb->id = strdup(id);
        sb->name = strdup("web");
        sb->namespace_ = strdup("default");
        sb->uid = strdup("uid-1");
        sb->attempt = attempt;
        sb->state = st;
        sb->created_at = created;
        sb->have_status = true;
        sb->host_network = host_network;
        sb->ip = strdup(ip);
        assert_int_equal(kc_pod_status_add_sandbox(s, sb), 0);
}

static void add_container(struct kc_pod_status *s, const struct pod *p, size_t idx, const char *id,
                          enum kc_container_state st, int exit_code, int64_t created, bool same_hash) {
        struct kc_container *c = calloc(1, sizeof(*c));
        char hash[KR_HASH_MAX];
        assert_int_equal(kr_container_hash(&p->spec.containers[idx], hash), 0);
        c->id = strdup(id);
        c->sandbox_id = strdup("sb1");
        c->name = strdup(p->spec.containers[idx].name);
        c->state = st;
        c->exit_code = exit_code;
        c->created_at = created;
        c->hash = strdup(same_hash ? hash : "0000000000000000");
        c->have_status = true;
        assert_int_equal(kc_pod_status_add_container(s, c), 0);
}

/* ---- probe results → actions (computePodActions with the liveness/startup managers) */

struct fake_probes {
        const char *id;                      /* the instance the results are for */
        enum probe_result liveness, startup; /* UNKNOWN = no result */
};

static bool fake_get(const void *userdata, enum probe_type t, const struct kc_container *c, enum probe_result *ret) {
        const struct fake_probes *f = userdata;
        enum probe_result r = t == PROBE_LIVENESS  ? f->liveness
                              : t == PROBE_STARTUP ? f->startup
                                                   : PROBE_RESULT_UNKNOWN;
        if (!streq(c->id, f->id) || r == PROBE_RESULT_UNKNOWN)
                return false;
        *ret = r;
        return true;
}

#define PROBE_POD(policy)                                                                    \
        "apiVersion: v1\nkind: Pod\n"                                                        \
        "metadata: {name: web, namespace: default}\n"                                        \
        "spec:\n"                                                                            \
        "  restartPolicy: " policy "\n"                                                      \
        "  containers:\n"                                                                    \
        "  - name: a\n    image: busybox:1.36\n"                                             \
        "    livenessProbe: {exec: {command: ['true']}, terminationGracePeriodSeconds: 5}\n" \
        "    startupProbe: {exec: {command: ['true']}}\n"                                    \
        "  - {name: b, image: busybox:1.36, command: [sleep, '3600']}\n"

/* a ready sandbox with both containers running: instances "c-a" and "c-b" */
static void both_running(struct kc_pod_status *s, const struct pod *p) {
        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_container(s, p, 0, "c-a", KC_CONTAINER_RUNNING, 0, 2, true);
        add_container(s, p, 1, "c-b", KC_CONTAINER_RUNNING, 0, 3, true);
        kc_pod_status_sort(s);
}

static void test_liveness_failure_kills_and_restarts(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(PROBE_POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct fake_probes f = { .id = "c-a", .liveness = PROBE_RESULT_FAILURE };
        struct probe_results probes = { .get = fake_get, .userdata = &f };
        struct kr_pod_actions a;

        both_running(s, p);

        assert_int_equal(kr_compute_pod_actions(p, s, &probes, &a), 0);
        assert_false(a.kill_pod);
        assert_int_equal(a.n_kill, 1);
        assert_string_equal(a.kill[0].container->id, "c-a");
        assert_string_equal(a.kill[0].reason, "LivenessProbe");
        assert_string_equal(a.kill[0].message, "Container a failed liveness probe, will be restarted");
        assert_true(a.kill[0].probe_failure);
        assert_int_equal(a.kill[0].grace_override, 5);
        assert_int_equal(a.n_start, 1);
        assert_int_equal(a.start[0], 0);
        kr_pod_actions_done(&a);

        /* liveness success, unknown (no result yet) or a result for another instance: nothing to do */
        f.liveness = PROBE_RESULT_SUCCESS;
        assert_int_equal(kr_compute_pod_actions(p, s, &probes, &a), 0);
        assert_int_equal(a.n_kill, 0);
        assert_int_equal(a.n_start, 0);
        kr_pod_actions_done(&a);
        f = (struct fake_probes) { .id = "old-instance", .liveness = PROBE_RESULT_FAILURE };
        assert_int_equal(kr_compute_pod_actions(p, s, &probes, &a), 0);
        assert_int_equal(a.n_kill, 0);
        kr_pod_actions_done(&a);

        /* startup failure: same, with its own reason and no probe-level grace period */
        f = (struct fake_probes) { .id = "c-a", .startup = PROBE_RESULT_FAILURE };
        assert_int_equal(kr_compute_pod_actions(p, s, &probes, &a), 0);
        assert_int_equal(a.n_kill, 1);
        assert_string_equal(a.kill[0].reason, "StartupProbe");
        assert_string_equal(a.kill[0].message, "Container a failed startup probe, will be restarted");
        assert_int_equal(a.kill[0].grace_override, -1);
        assert_int_equal(a.n_start, 1);
        kr_pod_actions_done(&a);
}

static void test_liveness_failure_with_restart_never(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(PROBE_POD("Never"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct fake_probes f = { .id = "c-a", .liveness = PROBE_RESULT_FAILURE };
        struct probe_results probes = { .get = fake_get, .userdata = &f };
        struct kr_pod_actions a;

        both_running(s, p);

        /* killed, not restarted; b keeps the pod alive */
        assert_int_equal(kr_compute_pod_actions(p, s, &probes, &a), 0);
        assert_int_equal(a.n_kill, 1);
        assert_string_equal(a.kill[0].message, "Container a failed liveness probe");
        assert_int_equal(a.n_start, 0);
        assert_false(a.kill_pod);
        kr_pod_actions_done(&a);
}

static void test_container_started_and_ready(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(PROBE_POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct fake_probes f = { .id = "c-a" };
        struct probe_results probes = { .get = fake_get, .userdata = &f };
        const struct container *a = &p->spec.containers[0], *b = &p->spec.containers[1];

        both_running(s, p);

        /* no probes: running means started and ready */
        assert_true(probe_container_started(b, kc_pod_status_find_container(s, "b"), &probes));
        assert_true(probe_container_ready(b, kc_pod_status_find_container(s, "b"), NULL));
        assert_false(probe_container_ready(b, NULL, NULL));
        /* a startup probe without a success: neither started nor ready */
        assert_false(probe_container_started(a, kc_pod_status_find_container(s, "a"), &probes));
        assert_false(probe_container_ready(a, kc_pod_status_find_container(s, "a"), &probes));
        f.startup = PROBE_RESULT_SUCCESS;
        assert_true(probe_container_started(a, kc_pod_status_find_container(s, "a"), &probes));
        assert_true(probe_container_ready(a, kc_pod_status_find_container(s, "a"), &probes)); /* no readiness probe */
}

static void test_new_pod_creates_sandbox_and_starts_all(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_true(a.create_sandbox);
        assert_true(a.kill_pod);
        assert_int_equal(a.attempt, 0);
        assert_int_equal(a.n_start, 2);
        assert_int_equal(a.start[0], 0);
        assert_int_equal(a.start[1], 1);
        kr_pod_actions_done(&a);
}

static void test_running_pod_is_left_alone(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.88.0.2");
        add_container(s, p, 0, "c-a", KC_CONTAINER_RUNNING, 0, 2, true);
        add_container(s, p, 1, "c-b", KC_CONTAINER_RUNNING, 0, 3, true);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_false(a.create_sandbox);
        assert_false(a.kill_pod);
        assert_int_equal(a.n_start, 0);
        assert_int_equal(a.n_kill, 0);
        assert_string_equal(a.sandbox_id, "sb1");
        kr_pod_actions_done(&a);
}

static void test_hash_change_restarts_only_that_container(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.88.0.2");
        add_container(s, p, 0, "c-a", KC_CONTAINER_RUNNING, 0, 2, true);
        add_container(s, p, 1, "c-b", KC_CONTAINER_RUNNING, 0, 3, false);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_false(a.create_sandbox);
        assert_false(a.kill_pod);
        assert_int_equal(a.n_kill, 1);
        assert_string_equal(a.kill[0].container->id, "c-b");
        assert_string_equal(a.kill[0].message, "Container b definition changed");
        assert_int_equal(a.n_start, 1);
        assert_int_equal(a.start[0], 1);
        kr_pod_actions_done(&a);
}

static void test_restart_policies(void **state) {
        static const struct {
                const char *policy;
                int exit_code;
                bool restart;
        } table[] = {
                { "Always", 0, true },    { "Always", 1, true }, { "OnFailure", 0, false },
                { "OnFailure", 2, true }, { "Never", 0, false }, { "Never", 137, false },
        };
        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                char yaml[1024];
                snprintf(yaml, sizeof(yaml), POD("%s"), table[i].policy);
                _cleanup_pod_free_ struct pod *p = parse_pod(yaml);
                _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
                struct kr_pod_actions a;

                add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.88.0.2");
                add_container(s, p, 0, "c-a", KC_CONTAINER_EXITED, table[i].exit_code, 2, true);
                add_container(s, p, 1, "c-b", KC_CONTAINER_RUNNING, 0, 3, true);
                kc_pod_status_sort(s);
                assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
                if (table[i].restart) {
                        assert_int_equal(a.n_start, 1);
                        assert_int_equal(a.start[0], 0);
                } else
                        assert_int_equal(a.n_start, 0);
                assert_false(a.kill_pod); /* b still runs */
                kr_pod_actions_done(&a);
        }
}

static void test_done_pod_stops_sandbox_and_is_not_recreated(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Never"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s2 = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.88.0.2");
        add_container(s, p, 0, "c-a", KC_CONTAINER_EXITED, 0, 2, true);
        add_container(s, p, 1, "c-b", KC_CONTAINER_EXITED, 1, 3, true);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_true(a.kill_pod);
        assert_false(a.create_sandbox);
        assert_int_equal(a.n_start, 0);
        kr_pod_actions_done(&a);

        /* after the sandbox stopped: no new sandbox for a finished Never pod */
        add_sandbox(s2, "sb1", 0, KC_SANDBOX_NOTREADY, 1, false, "");
        add_container(s2, p, 0, "c-a", KC_CONTAINER_EXITED, 0, 2, true);
        add_container(s2, p, 1, "c-b", KC_CONTAINER_EXITED, 1, 3, true);
        kc_pod_status_sort(s2);
        assert_int_equal(kr_compute_pod_actions(p, s2, NULL, &a), 0);
        assert_false(a.create_sandbox);
        assert_int_equal(a.n_start, 0);
        kr_pod_actions_done(&a);
}

static void test_dead_sandbox_recreated_with_next_attempt(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("OnFailure"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 3, KC_SANDBOX_NOTREADY, 1, false, "");
        add_container(s, p, 0, "c-a", KC_CONTAINER_EXITED, 0, 2, true);   /* succeeded: stays done */
        add_container(s, p, 1, "c-b", KC_CONTAINER_EXITED, 137, 3, true); /* failed: restarts */
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_true(a.create_sandbox);
        assert_true(a.kill_pod);
        assert_int_equal(a.attempt, 4);
        assert_int_equal(a.n_start, 1);
        assert_int_equal(a.start[0], 1);
        kr_pod_actions_done(&a);
}

static void test_two_ready_sandboxes_are_reconciled(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.88.0.2");
        add_sandbox(s, "sb2", 1, KC_SANDBOX_READY, 5, false, "10.88.0.3");
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_true(a.create_sandbox);
        assert_true(a.kill_pod);
        assert_int_equal(a.attempt, 2);
        kr_pod_actions_done(&a);
}

static void test_host_network_change_recreates_sandbox(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, true, "");
        add_container(s, p, 0, "c-a", KC_CONTAINER_RUNNING, 0, 2, true);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_true(a.create_sandbox);
        assert_string_equal(a.sandbox_reason, "Sandbox for pod has changed. Need to start a new one");
        kr_pod_actions_done(&a);
}

static void test_created_or_unknown_container_restarts(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Never"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.88.0.2");
        add_container(s, p, 0, "c-a", KC_CONTAINER_CREATED, 0, 2, true);
        add_container(s, p, 1, "c-b", KC_CONTAINER_UNKNOWN, 0, 3, true);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_int_equal(a.n_start, 2);
        /* the unknown one is killed first; the never-started one is killed and removed first */
        assert_int_equal(a.n_kill, 2);
        for (size_t i = 0; i < a.n_kill; i++) {
                if (streq(a.kill[i].container->id, "c-a")) {
                        assert_true(a.kill[i].remove);
                        assert_string_equal(a.kill[i].reason, "Created");
                } else {
                        assert_string_equal(a.kill[i].container->id, "c-b");
                        assert_false(a.kill[i].remove);
                }
        }
        kr_pod_actions_done(&a);
}

static void test_hash_depends_on_spec(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Always"));
        char h0[KR_HASH_MAX], h1[KR_HASH_MAX], again[KR_HASH_MAX];

        assert_int_equal(kr_container_hash(&p->spec.containers[0], h0), 0);
        assert_int_equal(kr_container_hash(&p->spec.containers[1], h1), 0);
        assert_int_equal(kr_container_hash(&p->spec.containers[0], again), 0);
        assert_string_equal(h0, again);
        assert_string_not_equal(h0, h1); /* differ by name */
        assert_int_equal(strlen(h0), 16);
}

static const struct kr_gc_policy GC_DEFAULT = { .max_per_pod_container = 1, .max_containers = -1 };

static void test_gc_keeps_newest_dead_instance(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_gc g;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_NOTREADY, 1, false, "");
        add_sandbox(s, "sb0", 0, KC_SANDBOX_NOTREADY, 0, false, "");
        add_sandbox(s, "sb2", 1, KC_SANDBOX_READY, 9, false, "10.88.0.9");
        add_container(s, p, 0, "old-a", KC_CONTAINER_EXITED, 1, 2, true);
        add_container(s, p, 0, "new-a", KC_CONTAINER_EXITED, 1, 5, true);
        add_container(s, p, 1, "run-b", KC_CONTAINER_RUNNING, 0, 4, true);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_gc(p, s, &GC_DEFAULT, INT64_MAX / 2, &g), 0);
        assert_int_equal(g.n_containers, 1);
        assert_string_equal(g.containers[0], "old-a");
        /* sb1 holds new-a and run-b (their sandbox_id is sb1): kept; sb0 is empty: removed */
        assert_int_equal(g.n_sandboxes, 1);
        assert_string_equal(g.sandboxes[0], "sb0");
        kr_pod_gc_done(&g);

        /* not desired any more: everything that is not running goes */
        assert_int_equal(kr_compute_pod_gc(NULL, s, &GC_DEFAULT, INT64_MAX / 2, &g), 0);
        assert_int_equal(g.n_containers, 2);
        assert_int_equal(g.n_sandboxes, 1);
        kr_pod_gc_done(&g);
}

static void test_gc_keeps_previous_of_running_instance(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_gc g;

        /* a restarted container: the running instance and the one before it (`logs --previous`) stay */
        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.88.0.9");
        add_container(s, p, 0, "first-a", KC_CONTAINER_EXITED, 1, 2, true);
        add_container(s, p, 0, "second-a", KC_CONTAINER_EXITED, 1, 3, true);
        add_container(s, p, 0, "third-a", KC_CONTAINER_RUNNING, 0, 5, true);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_gc(p, s, &GC_DEFAULT, INT64_MAX / 2, &g), 0);
        assert_int_equal(g.n_containers, 1);
        assert_string_equal(g.containers[0], "first-a");
        kr_pod_gc_done(&g);

        /* --maximum-dead-containers-per-container=2 keeps both; a MinAge the dead ones have not reached keeps them */
        {
                struct kr_gc_policy two = { .max_per_pod_container = 2, .max_containers = -1 };
                struct kr_gc_policy young = { .min_age_usec = 3600 * 1000000ULL,
                                              .max_per_pod_container = 1,
                                              .max_containers = -1 };
                assert_int_equal(kr_compute_pod_gc(p, s, &two, INT64_MAX / 2, &g), 0);
                assert_int_equal(g.n_containers, 0);
                kr_pod_gc_done(&g);
                assert_int_equal(kr_compute_pod_gc(p, s, &young, 100, &g), 0);
                assert_int_equal(g.n_containers, 0);
                kr_pod_gc_done(&g);
        }
}

/* ---- init containers (computeInitContainerActions) */

#define INIT_POD(policy)                                                 \
        "apiVersion: v1\nkind: Pod\n"                                    \
        "metadata: {name: web, namespace: default}\n"                    \
        "spec:\n"                                                        \
        "  restartPolicy: " policy "\n"                                  \
        "  initContainers:\n"                                            \
        "  - {name: i1, image: busybox:1.36, command: ['true']}\n"       \
        "  - {name: i2, image: busybox:1.36, command: ['true']}\n"       \
        "  containers:\n"                                                \
        "  - {name: a, image: busybox:1.36, command: [sleep, '3600']}\n" \
        "  - {name: b, image: busybox:1.36, command: [sleep, '3600']}\n"

static void add_instance(struct kc_pod_status *s, const struct container *spec, const char *id, const char *sandbox,
                         enum kc_container_state st, int exit_code, int64_t created) {
        struct kc_container *c = calloc(1, sizeof(*c));
        char hash[KR_HASH_MAX];
        assert_int_equal(kr_container_hash(spec, hash), 0);
        c->id = strdup(id);
        c->sandbox_id = strdup(sandbox);
        c->name = strdup(spec->name);
        c->state = st;
        c->exit_code = exit_code;
        c->created_at = created;
        c->hash = strdup(hash);
        c->have_status = true;
        assert_int_equal(kc_pod_status_add_container(s, c), 0);
}

static void test_init_new_pod_starts_first_init_container(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(INIT_POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_true(a.create_sandbox);
        assert_int_equal(a.n_start, 0);
        assert_int_equal(a.n_init_start, 1);
        assert_int_equal(a.init_start[0], 0);
        kr_pod_actions_done(&a);
}

static void test_init_containers_run_in_order(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(INIT_POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        /* i1 running: wait for it, start nothing, keep the sandbox */
        add_instance(s, &p->spec.init_containers[0], "c-i1", "sb1", KC_CONTAINER_RUNNING, 0, 2);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_false(a.kill_pod);
        assert_false(a.create_sandbox);
        assert_int_equal(a.n_start, 0);
        assert_int_equal(a.n_kill, 0);
        kr_pod_actions_done(&a);

        /* i1 completed: i2 next */
        s->containers[0]->state = KC_CONTAINER_EXITED;
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_int_equal(a.n_start, 0);
        assert_int_equal(a.n_init_start, 1);
        assert_int_equal(a.init_start[0], 1);
        assert_false(a.kill_pod);
        kr_pod_actions_done(&a);

        /* i2 completed too: the app containers start, all of them */
        add_instance(s, &p->spec.init_containers[1], "c-i2", "sb1", KC_CONTAINER_EXITED, 0, 3);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_int_equal(a.n_init_start, 0);
        assert_int_equal(a.n_start, 2);
        assert_int_equal(a.start[0], 0);
        assert_int_equal(a.start[1], 1);
        kr_pod_actions_done(&a);

        /* an app container running: initialized, even with the init instances gone (GC) */
        kc_pod_status_free(s);
        s = status_new();
        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_instance(s, &p->spec.containers[0], "c-a", "sb1", KC_CONTAINER_RUNNING, 0, 4);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_int_equal(a.n_init_start, 0);
        assert_int_equal(a.n_start, 1);
        assert_int_equal(a.start[0], 1);
        kr_pod_actions_done(&a);
}

static void init_failed(const char *policy, bool restarted) {
        _cleanup_pod_free_ struct pod *p = parse_pod(policy);
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_instance(s, &p->spec.init_containers[0], "c-i1", "sb1", KC_CONTAINER_EXITED, 0, 2);
        add_instance(s, &p->spec.init_containers[1], "c-i2", "sb1", KC_CONTAINER_EXITED, 3, 3);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_false(a.create_sandbox);
        if (restarted) {
                /* the failed one again (with back-off, in the sync), never the app containers */
                assert_false(a.kill_pod);
                assert_int_equal(a.n_start, 0);
                assert_int_equal(a.n_init_start, 1);
                assert_int_equal(a.init_start[0], 1);
        } else {
                /* restartPolicy Never: the pod is done */
                assert_true(a.kill_pod);
                assert_int_equal(a.n_start, 0);
        }
        kr_pod_actions_done(&a);

        /* once its sandbox is stopped, a pod that never restarts gets no new one */
        if (!restarted) {
                s->sandboxes[0]->state = KC_SANDBOX_NOTREADY;
                assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
                assert_false(a.create_sandbox);
                assert_int_equal(a.n_start, 0);
                kr_pod_actions_done(&a);
        }
}

static void test_init_failure_per_restart_policy(void **state) {
        init_failed(INIT_POD("Always"), true);
        init_failed(INIT_POD("OnFailure"), true);
        init_failed(INIT_POD("Never"), false);
}

static void test_init_oom_killed_counts_as_failed(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(INIT_POD("Never"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_instance(s, &p->spec.init_containers[0], "c-i1", "sb1", KC_CONTAINER_EXITED, 0, 2);
        s->containers[0]->reason = strdup("OOMKilled");
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_true(a.kill_pod);
        assert_int_equal(a.n_start, 0);
        kr_pod_actions_done(&a);
}

static void test_init_created_instance_is_removed_first(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(INIT_POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_instance(s, &p->spec.init_containers[0], "c-i1", "sb1", KC_CONTAINER_EXITED, 0, 2);
        add_instance(s, &p->spec.init_containers[1], "c-i2", "sb1", KC_CONTAINER_CREATED, 0, 3);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_int_equal(a.n_kill, 1);
        assert_string_equal(a.kill[0].container->id, "c-i2");
        assert_true(a.kill[0].remove);
        assert_int_equal(a.n_start, 0);
        assert_int_equal(a.n_init_start, 1);
        assert_int_equal(a.init_start[0], 1);
        kr_pod_actions_done(&a);
}

static void test_init_reruns_after_sandbox_recreation(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(INIT_POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        /* initialized and running in sb1, then sb1 died */
        add_sandbox(s, "sb1", 0, KC_SANDBOX_NOTREADY, 1, false, "10.0.0.2");
        add_instance(s, &p->spec.init_containers[0], "c-i1", "sb1", KC_CONTAINER_EXITED, 0, 2);
        add_instance(s, &p->spec.init_containers[1], "c-i2", "sb1", KC_CONTAINER_EXITED, 0, 3);
        add_instance(s, &p->spec.containers[0], "c-a", "sb1", KC_CONTAINER_EXITED, 137, 4);
        add_instance(s, &p->spec.containers[1], "c-b", "sb1", KC_CONTAINER_EXITED, 137, 5);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_true(a.create_sandbox);
        assert_int_equal(a.attempt, 1);
        assert_int_equal(a.n_start, 0);
        assert_int_equal(a.n_init_start, 1);
        assert_int_equal(a.init_start[0], 0);
        kr_pod_actions_done(&a);

        /* in the new sandbox sb2, i1 completed: i2 runs again although its old instance completed in sb1 */
        add_sandbox(s, "sb2", 1, KC_SANDBOX_READY, 10, false, "10.0.0.3");
        add_instance(s, &p->spec.init_containers[0], "c-i1-2", "sb2", KC_CONTAINER_EXITED, 0, 11);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_false(a.create_sandbox);
        assert_int_equal(a.n_start, 0);
        assert_int_equal(a.n_init_start, 1);
        assert_int_equal(a.init_start[0], 1);
        kr_pod_actions_done(&a);
}

/* ---- sidecars: init containers with restartPolicy Always */

#define SIDECAR_POD(policy, probe)                                                                        \
        "apiVersion: v1\nkind: Pod\n"                                                                     \
        "metadata: {name: web, namespace: default}\n"                                                     \
        "spec:\n"                                                                                         \
        "  restartPolicy: " policy "\n"                                                                   \
        "  initContainers:\n"                                                                             \
        "  - {name: s1, image: busybox:1.36, restartPolicy: Always, command: [sleep, '3600']" probe "}\n" \
        "  - {name: i2, image: busybox:1.36, command: ['true']}\n"                                        \
        "  containers:\n"                                                                                 \
        "  - {name: a, image: busybox:1.36, command: [sleep, '3600']}\n"

static void test_sidecar_gates_the_next_init_container(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(SIDECAR_POD("Always", ""));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_instance(s, &p->spec.init_containers[0], "c-s1", "sb1", KC_CONTAINER_RUNNING, 0, 2);
        kc_pod_status_sort(s);
        /* the sidecar runs (no startup probe): the next init container starts */
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_int_equal(a.n_init_start, 1);
        assert_int_equal(a.init_start[0], 1);
        assert_int_equal(a.n_start, 0);
        assert_false(a.kill_pod);
        kr_pod_actions_done(&a);

        /* i2 completed: the app containers start, the sidecar keeps running */
        add_instance(s, &p->spec.init_containers[1], "c-i2", "sb1", KC_CONTAINER_EXITED, 0, 3);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_int_equal(a.n_init_start, 0);
        assert_int_equal(a.n_kill, 0);
        assert_int_equal(a.n_start, 1);
        assert_int_equal(a.start[0], 0);
        kr_pod_actions_done(&a);
}

static void test_sidecar_startup_probe_gates(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(
                SIDECAR_POD("Always", ", startupProbe: {exec: {command: ['true']}, terminationGracePeriodSeconds: 5}"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct fake_probes f = { .id = "c-s1" };
        struct probe_results probes = { .get = fake_get, .userdata = &f };
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_instance(s, &p->spec.init_containers[0], "c-s1", "sb1", KC_CONTAINER_RUNNING, 0, 2);
        kc_pod_status_sort(s);
        /* no startup result yet: wait */
        assert_int_equal(kr_compute_pod_actions(p, s, &probes, &a), 0);
        assert_int_equal(a.n_init_start, 0);
        assert_int_equal(a.n_start, 0);
        assert_int_equal(a.n_kill, 0);
        kr_pod_actions_done(&a);
        /* started: the next one */
        f.startup = PROBE_RESULT_SUCCESS;
        assert_int_equal(kr_compute_pod_actions(p, s, &probes, &a), 0);
        assert_int_equal(a.n_init_start, 1);
        assert_int_equal(a.init_start[0], 1);
        kr_pod_actions_done(&a);
        /* failed: killed and started again, nothing else */
        f.startup = PROBE_RESULT_FAILURE;
        assert_int_equal(kr_compute_pod_actions(p, s, &probes, &a), 0);
        assert_int_equal(a.n_kill, 1);
        assert_string_equal(a.kill[0].reason, "StartupProbe");
        assert_int_equal(a.kill[0].grace_override, 5); /* the probe's own grace period */
        assert_int_equal(a.n_init_start, 1);
        assert_int_equal(a.init_start[0], 0);
        kr_pod_actions_done(&a);
}

static void test_sidecar_restarted_whatever_the_policy(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(SIDECAR_POD("Never", ""));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_instance(s, &p->spec.init_containers[0], "c-s1", "sb1", KC_CONTAINER_EXITED, 0, 2);
        add_instance(s, &p->spec.init_containers[1], "c-i2", "sb1", KC_CONTAINER_EXITED, 0, 3);
        add_instance(s, &p->spec.containers[0], "c-a", "sb1", KC_CONTAINER_RUNNING, 0, 4);
        kc_pod_status_sort(s);
        /* the sidecar exited while the app runs: restarted although the pod's policy is Never */
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_int_equal(a.n_init_start, 1);
        assert_int_equal(a.init_start[0], 0);
        assert_int_equal(a.n_start, 0);
        assert_false(a.kill_pod);
        kr_pod_actions_done(&a);

        /* the app is done: the pod is done, the sidecar does not keep it alive */
        s->containers[0]->state = KC_CONTAINER_EXITED;
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_true(a.kill_pod);
        assert_int_equal(a.n_init_start, 0);
        assert_int_equal(a.n_start, 0);
        kr_pod_actions_done(&a);
}

/* ---- the start step's decisions: pull policy and crash back-off */

static void test_decide_image_table(void **state) {
        static const struct {
                enum pull_policy policy;
                bool present, backoff;
                enum kr_image_action want;
        } t[] = {
                { PULL_POLICY_ALWAYS, false, false, KR_IMAGE_PULL },
                { PULL_POLICY_ALWAYS, true, false, KR_IMAGE_PULL }, /* present or not: Always pulls */
                { PULL_POLICY_ALWAYS, true, true, KR_IMAGE_PULL_BACKOFF },
                { PULL_POLICY_IF_NOT_PRESENT, true, false, KR_IMAGE_USE_PRESENT },
                { PULL_POLICY_IF_NOT_PRESENT, true, true, KR_IMAGE_USE_PRESENT }, /* no pull: no pull back-off */
                { PULL_POLICY_IF_NOT_PRESENT, false, false, KR_IMAGE_PULL },
                { PULL_POLICY_IF_NOT_PRESENT, false, true, KR_IMAGE_PULL_BACKOFF },
                { PULL_POLICY_NEVER, true, false, KR_IMAGE_USE_PRESENT },
                { PULL_POLICY_NEVER, false, false, KR_IMAGE_NEVER_PULL },
                { PULL_POLICY_NEVER, false, true, KR_IMAGE_NEVER_PULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                if (kr_decide_image(t[i].policy, t[i].present, t[i].backoff) != t[i].want)
                        fail_msg("case %zu: policy %d present %d backoff %d", i, t[i].policy, t[i].present,
                                 t[i].backoff);
        }
        assert_false(kr_image_status_first(PULL_POLICY_ALWAYS));
        assert_true(kr_image_status_first(PULL_POLICY_IF_NOT_PRESENT));
        assert_true(kr_image_status_first(PULL_POLICY_NEVER));
}

#define SEC (1000000ull)

static void test_crash_backoff_decision(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(POD("Always"));
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_crash_backoff d = {};
        struct kr_pod_actions a = {};
        struct backoff b;
        const uint64_t finished = 1000 * SEC;
        struct kc_container *ca, *cb;

        backoff_init(&b, 10 * SEC, 300 * SEC);
        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_container(s, p, 0, "c-a", KC_CONTAINER_EXITED, 1, 2, true);
        add_container(s, p, 1, "c-b", KC_CONTAINER_RUNNING, 0, 3, true);
        kc_pod_status_sort(s);
        ca = (struct kc_container *) kc_pod_status_find_container(s, "a");
        cb = (struct kc_container *) kc_pod_status_find_container(s, "b");
        ca->finished_at = (int64_t) (finished * 1000); /* nsec */

        /* a running container: no back-off applies */
        assert_int_equal(kr_check_crash_backoff(p, &p->spec.containers[1], s, &a, &b, finished + SEC, &d), 0);
        assert_null(d.key);
        assert_false(d.in_backoff);

        /* the first exit: not in back-off yet; the key names pod, namespace, uid, container and spec hash */
        assert_int_equal(kr_check_crash_backoff(p, &p->spec.containers[0], s, &a, &b, finished + SEC, &d), 0);
        assert_non_null(d.key);
        assert_true(strncmp(d.key, "web_default_uid-1_a_", 20) == 0);
        assert_false(d.in_backoff);
        assert_int_equal(d.finished_usec, finished);
        /* the act step records the restart */
        assert_int_equal(backoff_next(&b, d.key, d.finished_usec, finished + SEC), 0);
        kr_crash_backoff_done(&d);

        /* exited again 1 s later: 10 s from then, so in back-off 5 s after it, not after 11 s */
        ca->finished_at = (int64_t) ((finished + SEC) * 1000);
        assert_int_equal(kr_check_crash_backoff(p, &p->spec.containers[0], s, &a, &b, finished + 6 * SEC, &d), 0);
        assert_true(d.in_backoff);
        assert_int_equal(d.until_usec, finished + 11 * SEC);
        assert_int_equal(d.delay_usec, 10 * SEC);
        kr_crash_backoff_done(&d);
        assert_int_equal(kr_check_crash_backoff(p, &p->spec.containers[0], s, &a, &b, finished + 12 * SEC, &d), 0);
        assert_false(d.in_backoff);
        assert_int_equal(backoff_next(&b, d.key, d.finished_usec, finished + 12 * SEC), 0);
        kr_crash_backoff_done(&d);
        /* the delay doubles */
        assert_int_equal(kr_check_crash_backoff(p, &p->spec.containers[0], s, &a, &b, finished + 12 * SEC, &d), 0);
        assert_true(d.in_backoff);
        assert_int_equal(d.delay_usec, 20 * SEC);
        kr_crash_backoff_done(&d);

        /* a running instance killed in this pass for a failed probe counts as finished now */
        a.kill = calloc(1, sizeof(*a.kill));
        a.n_kill = 1;
        a.kill[0] = (struct kr_container_kill) {
                .container = cb, .reason = "LivenessProbe", .probe_failure = true, .grace_override = -1
        };
        assert_int_equal(kr_check_crash_backoff(p, &p->spec.containers[1], s, &a, &b, finished + 50 * SEC, &d), 0);
        assert_non_null(d.key);
        assert_false(d.in_backoff);
        assert_int_equal(d.finished_usec, finished + 50 * SEC);
        kr_crash_backoff_done(&d);
        /* not for a kill of another reason */
        a.kill[0].probe_failure = false;
        assert_int_equal(kr_check_crash_backoff(p, &p->spec.containers[1], s, &a, &b, finished + 50 * SEC, &d), 0);
        assert_null(d.key);
        kr_pod_actions_done(&a);
        backoff_done(&b);
}

/* ---- container restart rules (ContainerRestartRules) */

#define RULES_POD                                                                            \
        "apiVersion: v1\nkind: Pod\n"                                                        \
        "metadata: {name: web, namespace: default}\n"                                        \
        "spec:\n"                                                                            \
        "  restartPolicy: Never\n"                                                           \
        "  containers:\n"                                                                    \
        "  - name: rules\n    image: busybox:1.36\n    restartPolicy: Never\n"               \
        "    restartPolicyRules:\n"                                                          \
        "    - {action: Restart, exitCodes: {operator: In, values: [42, 43]}}\n"             \
        "    - {action: Restart, exitCodes: {operator: NotIn, values: [0, 1, 2, 42, 43]}}\n" \
        "  - {name: always, image: busybox:1.36, restartPolicy: Always}\n"                   \
        "  - {name: onfailure, image: busybox:1.36, restartPolicy: OnFailure}\n"             \
        "  - {name: pods, image: busybox:1.36}\n"

static void test_restart_rules(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(RULES_POD);
        static const struct {
                size_t container;
                int32_t exit_code;
                bool restart;
        } cases[] = {
                /* the rules first: In [42 43] restarts; NotIn [0 1 2 42 43] restarts anything else but 0, 1, 2;
                 * then the container's own Never */
                { 0, 42, true },
                { 0, 43, true },
                { 0, 0, false },
                { 0, 1, false },
                { 0, 2, false },
                { 0, 7, true },
                { 0, 137, true },
                /* the container's own policy in a Never pod */
                { 1, 0, true },
                { 1, 1, true },
                { 2, 0, false },
                { 2, 3, true },
                /* no policy of its own: the pod's Never */
                { 3, 0, false },
                { 3, 1, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                if (container_should_restart_on_exit(&p->spec, &p->spec.containers[cases[i].container],
                                                     cases[i].exit_code) != cases[i].restart)
                        fail_msg("case %zu: container %s exit %d: expected restart=%d", i,
                                 p->spec.containers[cases[i].container].name, cases[i].exit_code, cases[i].restart);
        }
        assert_true(pod_may_restart_containers(&p->spec));

        /* computePodActions: the exited containers that restart are started again, in the Never pod */
        {
                _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
                struct kr_pod_actions a;

                add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
                add_container(s, p, 0, "c-rules", KC_CONTAINER_EXITED, 42, 2, true);
                add_container(s, p, 1, "c-always", KC_CONTAINER_EXITED, 0, 3, true);
                add_container(s, p, 2, "c-onfailure", KC_CONTAINER_EXITED, 0, 4, true);
                add_container(s, p, 3, "c-pods", KC_CONTAINER_EXITED, 1, 5, true);
                kc_pod_status_sort(s);
                assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
                assert_false(a.kill_pod);
                assert_int_equal(a.n_start, 2);
                assert_int_equal(a.start[0], 0);
                assert_int_equal(a.start[1], 1);
                kr_pod_actions_done(&a);
        }
        /* exit 1 matches no rule: the container's Never; nothing else to run: the pod is done */
        {
                _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
                struct kr_pod_actions a;

                add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
                add_container(s, p, 0, "c-rules", KC_CONTAINER_EXITED, 1, 2, true);
                add_container(s, p, 1, "c-always", KC_CONTAINER_RUNNING, 0, 3, true);
                add_container(s, p, 2, "c-onfailure", KC_CONTAINER_EXITED, 0, 4, true);
                add_container(s, p, 3, "c-pods", KC_CONTAINER_EXITED, 0, 5, true);
                kc_pod_status_sort(s);
                assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
                assert_false(a.kill_pod); /* "always" still runs */
                assert_int_equal(a.n_start, 0);
                kr_pod_actions_done(&a);
        }
        /* the sandbox is down: only the containers their rules start again get a new sandbox; when none does, no
         * new sandbox is made (the pod is done, not started again) */
        {
                _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
                struct kr_pod_actions a;

                add_sandbox(s, "sb1", 0, KC_SANDBOX_NOTREADY, 1, false, "");
                add_container(s, p, 0, "c-rules", KC_CONTAINER_EXITED, 1, 2, true);
                add_container(s, p, 1, "c-always", KC_CONTAINER_EXITED, 137, 3, true);
                add_container(s, p, 2, "c-onfailure", KC_CONTAINER_EXITED, 0, 4, true);
                add_container(s, p, 3, "c-pods", KC_CONTAINER_EXITED, 137, 5, true);
                kc_pod_status_sort(s);
                assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
                assert_true(a.create_sandbox);
                assert_int_equal(a.n_start, 1);
                assert_int_equal(a.start[0], 1);
                kr_pod_actions_done(&a);
        }
        {
                _cleanup_pod_free_ struct pod *q = parse_pod("apiVersion: v1\nkind: Pod\n"
                                                             "metadata: {name: web, namespace: default}\n"
                                                             "spec:\n  restartPolicy: Never\n  containers:\n"
                                                             "  - name: rules\n    image: busybox:1.36\n"
                                                             "    restartPolicyRules:\n"
                                                             "    - {action: Restart, exitCodes: {operator: In, "
                                                             "values: [42]}}\n"
                                                             "  - {name: pods, image: busybox:1.36}\n");
                _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
                struct kr_pod_actions a;

                add_sandbox(s, "sb1", 0, KC_SANDBOX_NOTREADY, 1, false, "");
                add_container(s, q, 0, "c-rules", KC_CONTAINER_EXITED, 1, 2, true);
                add_container(s, q, 1, "c-pods", KC_CONTAINER_EXITED, 0, 3, true);
                kc_pod_status_sort(s);
                assert_int_equal(kr_compute_pod_actions(q, s, NULL, &a), 0);
                assert_false(a.create_sandbox);
                assert_int_equal(a.n_start, 0);
                kr_pod_actions_done(&a);
        }
}

/* ---- ephemeral containers */

static void add_named(struct kc_pod_status *s, const char *name, const char *id, enum kc_container_state st,
                      int64_t created, bool sidecar);

static void test_ephemeral_containers(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n"
                "  initContainers: [{name: init, image: busybox:1.36}]\n"
                "  containers: [{name: a, image: busybox:1.36}]\n"
                "  ephemeralContainers:\n"
                "  - {name: dbg1, image: busybox:1.36, targetContainerName: a}\n"
                "  - {name: dbg2, image: busybox:1.36}\n");
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a;

        /* no sandbox yet: the sandbox and the first init container; ephemeral containers wait for it */
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_true(a.create_sandbox);
        assert_int_equal(a.n_ephemeral_start, 0);
        kr_pod_actions_done(&a);

        /* while the init container runs: both ephemeral containers start */
        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_named(s, "init", "c-init", KC_CONTAINER_RUNNING, 2, false);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_int_equal(a.n_ephemeral_start, 2);
        assert_int_equal(a.ephemeral_start[0], 0);
        assert_int_equal(a.ephemeral_start[1], 1);
        assert_int_equal(a.n_start, 0);
        kr_pod_actions_done(&a);

        /* one has run and exited: never started again; the other still is to start */
        add_named(s, "dbg1", "c-dbg1", KC_CONTAINER_EXITED, 3, false);
        kc_pod_status_sort(s);
        assert_int_equal(kr_compute_pod_actions(p, s, NULL, &a), 0);
        assert_int_equal(a.n_ephemeral_start, 1);
        assert_int_equal(a.ephemeral_start[0], 1);
        kr_pod_actions_done(&a);
}

/* ---- the kill step's order (newTerminationOrdering) */

#define ORDER_POD                                                      \
        "apiVersion: v1\nkind: Pod\n"                                  \
        "metadata: {name: web, namespace: default}\n"                  \
        "spec:\n"                                                      \
        "  initContainers:\n"                                          \
        "  - {name: s1, image: busybox:1.36, restartPolicy: Always}\n" \
        "  - {name: init, image: busybox:1.36}\n"                      \
        "  - {name: s2, image: busybox:1.36, restartPolicy: Always}\n" \
        "  - {name: s3, image: busybox:1.36, restartPolicy: Always}\n" \
        "  containers:\n"                                              \
        "  - {name: a, image: busybox:1.36}\n"                         \
        "  - {name: b, image: busybox:1.36}\n"

static void add_named(struct kc_pod_status *s, const char *name, const char *id, enum kc_container_state st,
                      int64_t created, bool sidecar) {
        struct kc_container *c = calloc(1, sizeof(*c));
        c->id = strdup(id);
        c->sandbox_id = strdup("sb1");
        c->name = strdup(name);
        c->state = st;
        c->created_at = created;
        c->hash = strdup("");
        c->have_status = true;
        if (sidecar)
                assert_int_equal(strmap_set(&c->annotations, ANNOTATION_CONTAINER_SIDECAR, "true"), 0);
        assert_int_equal(kc_pod_status_add_container(s, c), 0);
}

static const struct kr_kill_target *target(const struct kr_kill_target *t, size_t n, const char *id) {
        for (size_t i = 0; i < n; i++)
                if (streq(t[i].container->id, id))
                        return &t[i];
        fail_msg("no target %s", id);
        return NULL;
}

static int cmp_str(const void *x, const void *y) {
        return strcmp(*(char *const *) x, *(char *const *) y);
}

/* the ids a target waits for, sorted, joined with ',' */
static char *after_ids(const struct kr_kill_target *t, size_t n, const char *id) {
        const struct kr_kill_target *x = target(t, n, id);
        char **ids = NULL;
        char *j;
        for (size_t i = 0; i < x->n_after; i++)
                assert_int_equal(strv_extend(&ids, t[x->after[i]].container->id), 0);
        if (ids) /* qsort's array may not be NULL, even empty */
                qsort(ids, strv_length(ids), sizeof(char *), cmp_str);
        j = ids ? strv_join(ids, ",") : strdup("");
        strv_free(ids);
        return j;
}

static void test_kill_order(void **state) {
        _cleanup_pod_free_ struct pod *p = parse_pod(ORDER_POD);
        _cleanup_(kc_pod_status_freep) struct kc_pod_status *s = status_new();
        struct kr_pod_actions a = { .kill_pod = true, .sandbox_reason = "why" };
        struct kr_kill_target *t = NULL;
        size_t n = 0;
        static const struct {
                const char *id, *after_with_spec, *after_without_spec;
        } expect[] = {
                /* main containers and a regular init container: at once */
                { "c-a", "", "" },
                { "c-unknown", "", "" },
                { "c-init", "", "" },
                /* s3 started last: it stops first, after the main containers */
                { "c-s3", "c-a,c-unknown", "c-a,c-init,c-unknown" },
                /* s2 after s3; s1 after s2 (spec order). Without the spec: creation order, where s1 was
                 * restarted last (created after s3), so it stops first and s3 after it */
                { "c-s2", "c-a,c-s3,c-unknown", "c-a,c-init,c-s3,c-unknown" },
                { "c-s1", "c-a,c-s2,c-unknown", "c-a,c-init,c-unknown" },
        };

        add_sandbox(s, "sb1", 0, KC_SANDBOX_READY, 1, false, "10.0.0.2");
        add_named(s, "s2", "c-s2", KC_CONTAINER_RUNNING, 3, true);
        add_named(s, "s3", "c-s3", KC_CONTAINER_RUNNING, 4, true);
        add_named(s, "s1", "c-s1", KC_CONTAINER_RUNNING, 9, true); /* restarted last */
        add_named(s, "s1", "c-s1-old", KC_CONTAINER_EXITED, 2, true);
        add_named(s, "init", "c-init", KC_CONTAINER_RUNNING, 5, false);
        add_named(s, "a", "c-a", KC_CONTAINER_RUNNING, 6, false);
        add_named(s, "b", "c-b", KC_CONTAINER_EXITED, 7, false);
        add_named(s, "b", "c-unknown", KC_CONTAINER_UNKNOWN, 8, false);
        kc_pod_status_sort(s);

        /* KillPod with the spec: every running or unknown instance, with the sandbox's reason */
        assert_int_equal(kr_compute_kill_order(p, s, &a, &t, &n), 0);
        assert_int_equal(n, ELEMENTSOF(expect));
        for (size_t i = 0; i < ELEMENTSOF(expect); i++) {
                _cleanup_free_ char *got = after_ids(t, n, expect[i].id);
                const struct kr_kill_target *x = target(t, n, expect[i].id);
                assert_string_equal(got, expect[i].after_with_spec);
                assert_string_equal(x->reason, "Killing");
                assert_string_equal(x->message, "why");
                assert_false(x->remove);
                assert_int_equal(x->grace_override, -1);
        }
        kr_kill_targets_free(t, n);

        /* a pod no longer known: sidecars by their annotation, in creation order; every other one is main */
        assert_int_equal(kr_compute_kill_order(NULL, s, &a, &t, &n), 0);
        assert_int_equal(n, ELEMENTSOF(expect));
        for (size_t i = 0; i < ELEMENTSOF(expect); i++) {
                _cleanup_free_ char *got = after_ids(t, n, expect[i].id);
                if (streq(expect[i].id, "c-s3"))
                        assert_string_equal(got, "c-a,c-init,c-s1,c-unknown");
                else
                        assert_string_equal(got, expect[i].after_without_spec);
        }
        kr_kill_targets_free(t, n);

        /* not KillPod: the decision's kill list (its reasons), no order */
        a.kill_pod = false;
        a.kill = calloc(1, sizeof(*a.kill));
        a.n_kill = 1;
        a.kill[0] = (struct kr_container_kill) { .container = s->containers[0],
                                                 .reason = "LivenessProbe",
                                                 .message = strdup("m"),
                                                 .remove = true,
                                                 .grace_override = 7 };
        assert_int_equal(kr_compute_kill_order(p, s, &a, &t, &n), 0);
        assert_int_equal(n, 1);
        assert_ptr_equal(t[0].container, s->containers[0]);
        assert_string_equal(t[0].reason, "LivenessProbe");
        assert_string_equal(t[0].message, "m");
        assert_true(t[0].remove);
        assert_int_equal(t[0].grace_override, 7);
        assert_int_equal(t[0].n_after, 0);
        kr_kill_targets_free(t, n);
        kr_pod_actions_done(&a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_new_pod_creates_sandbox_and_starts_all),
                cmocka_unit_test(test_running_pod_is_left_alone),
                cmocka_unit_test(test_hash_change_restarts_only_that_container),
                cmocka_unit_test(test_restart_policies),
                cmocka_unit_test(test_done_pod_stops_sandbox_and_is_not_recreated),
                cmocka_unit_test(test_dead_sandbox_recreated_with_next_attempt),
                cmocka_unit_test(test_two_ready_sandboxes_are_reconciled),
                cmocka_unit_test(test_host_network_change_recreates_sandbox),
                cmocka_unit_test(test_created_or_unknown_container_restarts),
                cmocka_unit_test(test_hash_depends_on_spec),
                cmocka_unit_test(test_gc_keeps_newest_dead_instance),
                cmocka_unit_test(test_gc_keeps_previous_of_running_instance),
                cmocka_unit_test(test_liveness_failure_kills_and_restarts),
                cmocka_unit_test(test_liveness_failure_with_restart_never),
                cmocka_unit_test(test_container_started_and_ready),
                cmocka_unit_test(test_init_new_pod_starts_first_init_container),
                cmocka_unit_test(test_init_containers_run_in_order),
                cmocka_unit_test(test_init_failure_per_restart_policy),
                cmocka_unit_test(test_init_oom_killed_counts_as_failed),
                cmocka_unit_test(test_init_created_instance_is_removed_first),
                cmocka_unit_test(test_init_reruns_after_sandbox_recreation),
                cmocka_unit_test(test_sidecar_gates_the_next_init_container),
                cmocka_unit_test(test_sidecar_startup_probe_gates),
                cmocka_unit_test(test_sidecar_restarted_whatever_the_policy),
                cmocka_unit_test(test_decide_image_table),
                cmocka_unit_test(test_crash_backoff_decision),
                cmocka_unit_test(test_restart_rules),
                cmocka_unit_test(test_ephemeral_containers),
                cmocka_unit_test(test_kill_order),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
