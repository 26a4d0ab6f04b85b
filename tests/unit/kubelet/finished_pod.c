/* SPDX-License-Identifier: Apache-2.0 */
/* A pod that finished for good (restartPolicy Never, its container exited) is stopped and its volumes are torn down
 * while the pod itself stays (upstream's syncTerminatedPod; e2e_node's "Kubelet Volume Manager ... On termination of
 * pod with memory backed volume should remove the volume from the node"): the volume directories go, the pod
 * directory stays, and later passes do not make them again. A pod still running keeps its volumes. A finished pod
 * whose volumes are back after a restart (a kubelet killed before the teardown) loses them again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/string.h"
#include "basic/time.h"
#include "basic/fs.h"
#include "fake/test_kubelet.h"

#define MIN_USEC (60 * USEC_PER_SEC)

static const char PODS[] =
        "apiVersion: v1\nkind: Pod\nmetadata: {name: job, namespace: ns1, uid: u1}\n"
        "spec:\n  restartPolicy: Never\n"
        "  volumes: [{name: scratch, emptyDir: {}},\n"
        "            {name: info, downwardAPI: {items: [{path: name, fieldRef: {fieldPath: "
        "metadata.name}}]}}]\n"
        "  containers:\n"
        "  - {name: work, image: busybox:1.36, imagePullPolicy: IfNotPresent,\n"
        "     volumeMounts: [{name: scratch, mountPath: /scratch}, {name: info, mountPath: /info}]}\n"
        "---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns1, uid: u2}\n"
        "spec:\n  volumes: [{name: scratch, emptyDir: {}}]\n"
        "  containers:\n"
        "  - {name: serve, image: busybox:1.36, imagePullPolicy: IfNotPresent,\n"
        "     volumeMounts: [{name: scratch, mountPath: /scratch}]}\n";

static bool exists(struct test_kubelet *t, const char *uid, const char *rel) {
        _cleanup_free_ char *p = NULL;
        struct stat st;

        assert_true(asprintf(&p, "%s/root/pods/%s%s%s", t->dir, uid, *rel ? "/" : "", rel) > 0);
        return lstat(p, &st) == 0;
}

struct gone_want {
        struct test_kubelet *t;
        const char *uid, *rel;
};

static bool is_gone(void *userdata) {
        const struct gone_want *g = userdata;
        return !exists(g->t, g->uid, g->rel);
}

static void test_finished_pod_loses_its_volumes(void **state) {
        struct test_kubelet *t = tk_new();
        struct gone_want g = { .t = t, .uid = "u1", .rel = "volumes/kubernetes.io~empty-dir" };

        (void) state;
        assert_int_equal(fake_runtime_set_lifetime(t->rt, "work", 2 * USEC_PER_SEC, 0), 0);
        tk_set_pods(t, PODS);
        tk_start(t);
        assert_true(vloop_run_until_io(t->base, tk_running,
                                       &(struct tk_want) { .t = t, .uid = "u2", .container = "serve" }, MIN_USEC,
                                       20000));
        /* both pods' volumes were made */
        assert_true(exists(t, "u2", "volumes/kubernetes.io~empty-dir/scratch"));
        assert_true(vloop_run_until_io(t->base, tk_phase_is,
                                       &(struct tk_want) { .t = t, .uid = "u1", .what = "Succeeded" }, MIN_USEC,
                                       20000));
        /* the finished pod's go (on the removal pool: real time), its directory stays */
        assert_true(vloop_run_until_io(t->base, is_gone, &g, MIN_USEC, 20000));
        g.rel = "volumes/kubernetes.io~downward-api";
        assert_true(vloop_run_until_io(t->base, is_gone, &g, MIN_USEC, 20000));
        assert_true(exists(t, "u1", ""));
        /* the running pod keeps its own */
        assert_true(exists(t, "u2", "volumes/kubernetes.io~empty-dir/scratch"));
        /* later passes (the periodic resync, once a minute) do not make them again */
        tk_run_for(t, 3 * MIN_USEC);
        assert_false(exists(t, "u1", "volumes/kubernetes.io~empty-dir"));
        assert_false(exists(t, "u1", "volumes/kubernetes.io~downward-api"));
        assert_string_equal(tk_phase(t, "u1"), "Succeeded");
        assert_true(exists(t, "u2", "volumes/kubernetes.io~empty-dir/scratch"));

        /* a kubelet killed before its teardown: the volumes are there again at the restart, and go again */
        tk_stop(t);
        {
                _cleanup_free_ char *p = NULL;
                assert_true(asprintf(&p, "%s/root/pods/u1/volumes/kubernetes.io~empty-dir/scratch", t->dir) > 0);
                assert_int_equal(mkdir_p(p, 0777), 0);
        }
        g.rel = "volumes/kubernetes.io~empty-dir";
        assert_false(is_gone(&g));
        tk_start(t);
        assert_true(vloop_run_until_io(t->base, is_gone, &g, MIN_USEC, 20000));
        assert_true(exists(t, "u1", ""));
        assert_string_equal(tk_phase(t, "u1"), "Succeeded");
        tk_free(t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_finished_pod_loses_its_volumes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
