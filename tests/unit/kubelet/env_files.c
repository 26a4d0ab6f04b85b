/* SPDX-License-Identifier: Apache-2.0 */
/* env[].valueFrom.fileKeyRef through the sync on the fake runtime: the value read from the file in the pod's emptyDir
 * reaches the container's config (an optional key that is absent is not set), a required key that is absent fails
 * the container with CreateContainerConfigError and upstream's message, and the read runs on a worker: one that
 * blocks (the test hook, as a stalled volume) fails only its container at the deadline while another pod starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/string.h"
#include "basic/time.h"
#include "basic/workpool-testing.h"
#include "fake/test_kubelet.h"
#include "kubelet/kubelet-internal.h"
#include "kuberuntime/envfile.h"

#define MIN_USEC (60 * USEC_PER_SEC)

/* the env file of pod uid's emptyDir "data", written before the kubelet starts (as its init container would) */
static void put_env_file(struct test_kubelet *t, const char *uid, const char *content) {
        _cleanup_free_ char *dir = NULL, *p = NULL;
        FILE *f;

        assert_true(asprintf(&dir, "%s/root/pods/%s/volumes/kubernetes.io~empty-dir/data", t->dir, uid) > 0);
        assert_int_equal(mkdir_p(dir, 0755), 0);
        assert_true(asprintf(&p, "%s/config.env", dir) > 0);
        f = fopen(p, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static const char *env_of(const struct fake_container *c, const char *key) {
        for (size_t i = 0; i < c->config->n_envs; i++)
                if (streq(c->config->envs[i]->key, key))
                        return c->config->envs[i]->value;
        return NULL;
}

static const char *waiting_message(struct test_kubelet *t, const char *uid, const char *container) {
        json_t *c = tk_container_status(t, uid, container);
        return json_string_value(json_object_get(json_object_get(json_object_get(c, "state"), "waiting"), "message"));
}

#define POD(name, uid, key, optional)                                                            \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: " name ", namespace: ns1, uid: " uid "}\n"  \
        "spec:\n  volumes: [{name: data, emptyDir: {}}]\n  containers:\n"                        \
        "  - name: a\n    image: busybox:1.36\n    imagePullPolicy: IfNotPresent\n    env:\n"    \
        "    - {name: PLAIN, value: p}\n"                                                        \
        "    - {name: V, valueFrom: {fileKeyRef: {volumeName: data, path: config.env, key: " key \
        ", optional: " optional "}}}\n"                                                          \
        "    - {name: R, value: '$(V)-$(PLAIN)'}\n"

static void test_env_from_file(void **state) {
        struct test_kubelet *t = tk_new();
        const struct fake_container *c;
        _cleanup_free_ char *want = NULL;

        put_env_file(t, "u1", "# written by init\nV='from file'\n");
        put_env_file(t, "u2", "OTHER='x'\n");
        put_env_file(t, "u3", "OTHER='x'\n");
        tk_set_pods(t, POD("ok", "u1", "V", "false") "---\n" POD("missing", "u2", "V",
                                                                 "false") "---\n" POD("optional", "u3", "V", "true"));
        tk_start(t);
        tk_wait(t, tk_running, &((struct tk_want) { .t = t, .uid = "u1", .container = "a" }), MIN_USEC);
        c = fake_runtime_find(t->rt, "u1", "a");
        assert_non_null(c);
        assert_string_equal(env_of(c, "V"), "from file");
        assert_string_equal(env_of(c, "R"), "from file-p");

        /* optional and absent: not set */
        tk_wait(t, tk_running, &((struct tk_want) { .t = t, .uid = "u3", .container = "a" }), MIN_USEC);
        c = fake_runtime_find(t->rt, "u3", "a");
        assert_null(env_of(c, "V"));
        assert_string_equal(env_of(c, "R"), "$(V)-p");

        /* required and absent: CreateContainerConfigError, upstream's message */
        tk_wait(t, tk_waiting,
                &((struct tk_want) { .t = t, .uid = "u2", .container = "a", .what = "CreateContainerConfigError" }),
                MIN_USEC);
        assert_true(asprintf(&want,
                             "environment variable key \"V\" not found in file "
                             "\"%s/root/pods/u2/volumes/kubernetes.io~empty-dir/data/config.env\"",
                             t->dir) > 0);
        assert_string_equal(waiting_message(t, "u2", "a"), want);
        assert_null(fake_runtime_find(t->rt, "u2", "a"));
        tk_free(t);
}

static int pipefd[2] = { -1, -1 };
static atomic_bool released;
static atomic_int entered, left;

/* a worker thread's progress, in real time (bounded): the hook runs on the volume contents pool */
static bool wait_real(atomic_int *v, int want) {
        for (int i = 0; i < 10000 && atomic_load(v) != want; i++)
                usleep(1000);
        return atomic_load(v) == want;
}

static void blocking_hook(const struct kr_env_file_req *q) {
        char c;

        if (atomic_load(&released) || !strstr(q->volume_dir, "/pods/u1/"))
                return;
        atomic_fetch_add(&entered, 1);
        (void) read(pipefd[0], &c, 1); /* as a read from a volume that does not answer */
        atomic_fetch_add(&left, 1);
}

static bool no_stuck_job(void *userdata) {
        struct test_kubelet *t = userdata;
        return workpool_stuck(t->k->pool_contents) == 0;
}

static void test_stalled_read_fails_only_its_container(void **state) {
        struct test_kubelet *t = tk_new();

        assert_int_equal(pipe(pipefd), 0);
        kr_env_file_read_test_hook = blocking_hook;
        put_env_file(t, "u1", "V='1'\n");
        put_env_file(t, "u2", "V='2'\n");
        tk_set_pods(t, POD("stuck", "u1", "V", "false") "---\n" POD("fine", "u2", "V", "false"));
        tk_start(t);
        /* the other pod starts while the read of the first hangs on its worker: the loop runs */
        assert_true(vloop_run_until_io(t->base, tk_running, &(struct tk_want) { .t = t, .uid = "u2", .container = "a" },
                                       MIN_USEC, 20000));
        assert_string_equal(env_of(fake_runtime_find(t->rt, "u2", "a"), "V"), "2");
        assert_true(wait_real(&entered, 1));
        assert_null(fake_runtime_find(t->rt, "u1", "a"));
        /* the deadline (30 s) passes: only that container fails */
        assert_true(vloop_run_until_io(t->base, tk_waiting,
                                       &(struct tk_want) { .t = t,
                                                           .uid = "u1",
                                                           .container = "a",
                                                           .what = "CreateContainerConfigError" },
                                       MIN_USEC, 20000));
        assert_non_null(strstr(waiting_message(t, "u1", "a"), "did not finish within 30 s"));
        assert_null(fake_runtime_find(t->rt, "u1", "a"));
        /* the volume answers again: the late result is thrown away */
        atomic_store(&released, true);
        assert_int_equal(write(pipefd[1], "x", 1), 1);
        assert_true(wait_real(&left, 1));
        /* the worker is done with it before the kubelet goes: its late result delivered on the loop (the hook
         * returning is not enough: a pool freed before the thread took the job back leaves it stuck, a leak) */
        assert_true(vloop_run_until_io(t->base, no_stuck_job, t, 0, 20000));
        tk_free(t);
        kr_env_file_read_test_hook = NULL;
        close(pipefd[0]);
        close(pipefd[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_env_from_file),
                cmocka_unit_test(test_stalled_read_fails_only_its_container),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
