/* SPDX-License-Identifier: Apache-2.0 */
/* The lifecycle hook runner: messages as upstream words them, sleep on a timer, the deadline, named ports,
 * the unsupported tcpSocket handler and cancellation, on the virtual clock (the runner's timers go through the
 * loop's timer seam). (exec and httpGet against a runtime / a server are covered end to end in
 * tests/e2e/test_hooks.py.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>
#include <errno.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "basic/time.h"
#include "basic/vclock-testing.h"
#include "kubelet/hooks.h"

struct outcome {
        int calls;
        int error;
        char *message;
        struct event_base *base;
};

static void on_done(void *userdata, int error, const char *message) {
        struct outcome *o = userdata;
        o->calls++;
        o->error = error;
        free(o->message);
        o->message = message ? strdup(message) : NULL;
        if (o->base)
                event_base_loopbreak(o->base);
}

static struct pod *load(const char *lifecycle) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
                             "  - name: c\n    image: busybox\n    ports: [{name: web, containerPort: 80}]\n"
                             "    lifecycle: %s\n",
                             lifecycle) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static struct hook_target target(const struct pod *p) {
        return (struct hook_target) { .pod_desc = "p_default(u)",
                                      .container_name = "c",
                                      .container_id = "abc",
                                      .pod_ip = NULL,
                                      .spec = &p->spec.containers[0] };
}

static void test_messages(void **state) {
        struct pod *p = load(
                "{postStart: {exec: {command: [sh, -c, 'exit 1']}}, preStop: {httpGet: {port: 80, path: /x}}}");
        struct hook_target t = target(p);
        _cleanup_free_ char *e = kubelet_hook_failure_message(p->spec.containers[0].post_start, &t,
                                                              "command 'sh -c exit 1' exited with 1: ", "out\n\"q\"");
        _cleanup_free_ char *h = kubelet_hook_failure_message(p->spec.containers[0].pre_stop, &t, "boom", NULL);

        assert_string_equal(e,
                            "Exec lifecycle hook ([sh -c exit 1]) for Container \"c\" in Pod \"p_default(u)\" failed - "
                            "error: command 'sh -c exit 1' exited with 1: , message: \"out\\n\\\"q\\\"\"");
        assert_string_equal(
                h, "HTTP lifecycle hook (/x) for Container \"c\" in Pod \"p_default(u)\" failed - error: boom");
        pod_free(p);
}

/* Runs a hook to its end on the virtual clock: whenever nothing can run without time passing, the clock jumps to
 * the next timer; *ret_took is the virtual time it took. */
static void run(const char *lifecycle, bool pre_stop, uint64_t timeout_usec, struct outcome *o, uint64_t *ret_took) {
        struct event_base *base = event_base_new();
        struct probe_env env = { .base = base };
        struct hook_run *list = NULL;
        struct pod *p = load(lifecycle);
        struct hook_target t = target(p);
        const struct container *c = &p->spec.containers[0];
        uint64_t t0;

        assert_non_null(base);
        vclock_enable(base, 1000 * USEC_PER_SEC, UINT64_C(1704067200) * USEC_PER_SEC);
        t0 = now_usec();
        o->base = base;
        o->calls = 0;
        assert_int_equal(kubelet_hook_run_start(&env, &list, pre_stop ? c->pre_stop : c->post_start, &t, timeout_usec,
                                                on_done, o),
                         0);
        assert_non_null(list);
        assert_int_equal(o->calls, 0); /* never from inside the start */
        for (;;) {
                uint64_t next;
                assert_true(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
                if (o->calls > 0)
                        break;
                /* the runner's timers are on the virtual clock: one is armed while the hook runs */
                assert_true(vclock_next_deadline(&next));
                vclock_set(next);
        }
        *ret_took = now_usec() - t0;
        assert_int_equal(o->calls, 1);
        assert_null(list);
        probe_env_done(&env);
        vclock_disable();
        event_base_free(base);
        pod_free(p);
}

static void test_sleep(void **state) {
        struct outcome o = {};
        uint64_t took;

        run("{preStop: {sleep: {seconds: 1}}}", true, 5 * USEC_PER_SEC, &o, &took);
        assert_int_equal(o.error, 0);
        assert_null(o.message);
        assert_int_equal(took, USEC_PER_SEC);
        /* a long sleep (an hour), cut at the deadline */
        run("{preStop: {sleep: {seconds: 3600}}}", true, 200 * USEC_PER_MSEC, &o, &took);
        assert_int_equal(o.error, -ETIME);
        assert_string_equal(o.message, "Sleep lifecycle hook (3600) for Container \"c\" in Pod \"p_default(u)\" "
                                       "failed - error: context deadline exceeded");
        assert_int_equal(took, 200 * USEC_PER_MSEC);
        /* an hour's sleep within a longer deadline: no test waits for it */
        run("{preStop: {sleep: {seconds: 3600}}}", true, 2 * 3600 * USEC_PER_SEC, &o, &took);
        assert_int_equal(o.error, 0);
        assert_int_equal(took, 3600 * USEC_PER_SEC);
        free(o.message);
}

static void test_tcp_socket_and_http_errors(void **state) {
        struct outcome o = {};
        uint64_t took;

        run("{postStart: {tcpSocket: {port: 80}}}", false, 5 * USEC_PER_SEC, &o, &took);
        assert_true(o.error < 0);
        assert_string_equal(o.message,
                            "Cannot run handler: invalid handler: tcpSocket is not supported as a lifecycle handler");
        /* no pod IP known and no host given */
        run("{postStart: {httpGet: {port: web}}}", false, 5 * USEC_PER_SEC, &o, &took);
        assert_true(o.error < 0);
        assert_non_null(strstr(o.message, "HTTP lifecycle hook (/) for Container \"c\""));
        assert_non_null(strstr(o.message, "no pod IP"));
        /* a port name the container does not have */
        run("{postStart: {httpGet: {port: nope, host: 127.0.0.1}}}", false, 5 * USEC_PER_SEC, &o, &took);
        assert_non_null(strstr(o.message, "couldn't find port: nope in container c"));
        free(o.message);
}

static void test_cancel(void **state) {
        struct event_base *base = event_base_new();
        struct probe_env env = { .base = base };
        struct hook_run *list = NULL;
        struct pod *p = load("{preStop: {sleep: {seconds: 5}}, postStart: {sleep: {seconds: 5}}}");
        struct hook_target t = target(p);
        struct outcome a = {}, b = {};

        assert_int_equal(kubelet_hook_run_start(&env, &list, p->spec.containers[0].pre_stop, &t, USEC_PER_SEC * 10,
                                                on_done, &a),
                         0);
        assert_int_equal(kubelet_hook_run_start(&env, &list, p->spec.containers[0].post_start, &t, USEC_PER_SEC * 10,
                                                on_done, &b),
                         0);
        kubelet_hook_run_cancel_all(&list);
        assert_null(list);
        assert_int_equal(a.calls, 1);
        assert_int_equal(a.error, -ECANCELED);
        assert_int_equal(b.calls, 1);
        assert_int_equal(b.error, -ECANCELED);
        assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 1); /* nothing left on the loop */
        probe_env_done(&env);
        event_base_free(base);
        pod_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_messages),
                cmocka_unit_test(test_sleep),
                cmocka_unit_test(test_tcp_socket_and_http_errors),
                cmocka_unit_test(test_cancel),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
