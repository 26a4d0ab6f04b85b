/* SPDX-License-Identifier: Apache-2.0 */
/* In-place resize: a pod's allocation, the pod as allocated, whether a resize can be allocated (Deferred,
 * Infeasible, accepted), the event messages, the checkpoint, and what the sync does to a running container. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "apis/manifest.h"
#include "basic/error.h"
#include "basic/string.h"
#include "config/config.h"
#include "kubelet/allocation.h"
#include "kuberuntime/actions.h"

#define MIB (1024LL * 1024)

static struct pod *api_pod(const char *resources_a, const char *resize_policy) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, uid: u-1, generation: 3}\n"
                             "spec:\n  containers:\n"
                             "  - {name: a, image: i, resources: %s%s%s}\n"
                             "  - {name: b, image: i, resources: {requests: {cpu: 100m, memory: 64Mi}}}\n",
                             resources_a, resize_policy ? ", resizePolicy: " : "", strempty(resize_policy)) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        assert_int_equal(strmap_set(&p->annotations, ANNOTATION_CONFIG_SOURCE, CONFIG_SOURCE_API), 0);
        return p;
}

static void test_allocation_and_allocated_pod(void **state) {
        _cleanup_pod_free_ struct pod *old = api_pod("{limits: {cpu: 200m, memory: 64Mi}}", NULL);
        _cleanup_pod_free_ struct pod *resized = api_pod("{limits: {cpu: 400m, memory: 128Mi}}", NULL);
        _cleanup_pod_free_ struct pod *view = NULL;
        json_t *alloc = NULL;

        assert_int_equal(kubelet_allocation_from_pod(old, &alloc), 0);
        assert_false(kubelet_allocation_differs(alloc, old));
        assert_true(kubelet_allocation_differs(alloc, resized));
        /* the allocation is {"<container>": <its resources object>} */
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(alloc, "b"), "requests"),
                                                              "memory")),
                            "64Mi");
        /* the resized pod as allocated: the old resources, everything else its own */
        assert_int_equal(kubelet_pod_with_allocation(resized, alloc, &view), 0);
        assert_false(kubelet_allocation_differs(alloc, view));
        assert_string_equal(resource_list_get(&view->spec.containers[0].resources.limits, "cpu")->str, "200m");
        assert_string_equal(view->uid, "u-1");
        assert_true(streq_ptr(strmap_get(&view->annotations, ANNOTATION_CONFIG_SOURCE), CONFIG_SOURCE_API));
        json_decref(alloc);
}

/* pod-level resources (InPlacePodLevelResourcesVerticalScaling, beta on since v1.36) are allocated with the
 * containers': a change of spec.resources is a resize, and the pod as allocated keeps the allocated ones */
static void test_pod_level_allocation(void **state) {
        static const char *const docs[] = {
                "  resources: {requests: {cpu: 500m, memory: 128Mi}, limits: {cpu: 1, memory: 256Mi}}\n",
                "  resources: {requests: {cpu: 800m, memory: 128Mi}, limits: {cpu: 2, memory: 256Mi}}\n",
                "",
        };
        struct pod *pods[3];
        _cleanup_pod_free_ struct pod *view = NULL, *view2 = NULL;
        json_t *alloc = NULL, *plain = NULL;
        struct admission_node node = { .cpu_milli = 1500, .memory_bytes = 512 * MIB };
        char *message = NULL;

        for (size_t i = 0; i < ELEMENTSOF(docs); i++) {
                _cleanup_free_ char *yaml = NULL;
                _cleanup_ck_error_ struct ck_error *err = NULL;
                struct pod_set set = {};
                assert_true(asprintf(&yaml,
                                     "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns, uid: u-1}\n"
                                     "spec:\n%s  containers:\n  - {name: a, image: i}\n",
                                     docs[i]) > 0);
                if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                        fail_msg("manifest: %s", ck_error_message(err));
                pods[i] = pod_ref(set.pods[0]);
                pod_set_done(&set);
                assert_int_equal(strmap_set(&pods[i]->annotations, ANNOTATION_CONFIG_SOURCE, CONFIG_SOURCE_API), 0);
        }
        assert_int_equal(kubelet_allocation_from_pod(pods[0], &alloc), 0);
        assert_false(kubelet_allocation_differs(alloc, pods[0]));
        assert_true(kubelet_allocation_differs(alloc, pods[1]));
        /* the resized pod as allocated has the old pod-level resources */
        assert_int_equal(kubelet_pod_with_allocation(pods[1], alloc, &view), 0);
        assert_string_equal(resource_list_get(&view->spec.resources.limits, "cpu")->str, "1");
        assert_false(kubelet_allocation_differs(alloc, view));
        /* a pod without them: its allocation is the containers' alone, as before */
        assert_int_equal(kubelet_allocation_from_pod(pods[2], &plain), 0);
        assert_int_equal(json_object_size(plain), 1);
        assert_int_equal(kubelet_pod_with_allocation(pods[0], plain, &view2), 0);
        assert_false(view2->spec.has_resources);
        /* the resize is decided from the pod-level requests: 800m fits 1500m, 2 cpus of requests would not */
        assert_int_equal(kubelet_resize_decide(pods[1], false, NULL, 0, &node, &message), RESIZE_ACCEPTED);
        free(message);
        message = NULL;
        node.cpu_milli = 700;
        assert_int_equal(kubelet_resize_decide(pods[1], false, NULL, 0, &node, &message), RESIZE_INFEASIBLE);
        free(message);
        json_decref(alloc);
        json_decref(plain);
        for (size_t i = 0; i < ELEMENTSOF(docs); i++)
                pod_free(pods[i]);
}

static void test_resize_decide(void **state) {
        struct admission_node node = { .cpu_milli = 1000, .memory_bytes = 512 * MIB };
        _cleanup_pod_free_ struct pod *small = api_pod("{limits: {cpu: 200m, memory: 64Mi}}", NULL);
        _cleanup_pod_free_ struct pod *big = api_pod("{limits: {cpu: 700m, memory: 64Mi}}", NULL);
        _cleanup_pod_free_ struct pod *huge = api_pod("{limits: {cpu: 200m, memory: 1Gi}}", NULL);
        _cleanup_pod_free_ struct pod *other = api_pod("{limits: {cpu: 300m, memory: 64Mi}}", NULL);
        const struct pod *others[] = { other };
        char *msg = NULL;

        /* fits */
        assert_int_equal(kubelet_resize_decide(small, false, others, 1, &node, &msg), RESIZE_ACCEPTED);
        assert_null(msg);
        /* more than the node has: Infeasible (memory named first) */
        assert_int_equal(kubelet_resize_decide(huge, false, others, 1, &node, &msg), RESIZE_INFEASIBLE);
        assert_string_equal(msg,
                            "Node didn't have enough capacity: memory, requested: 1140850688, capacity: 536870912");
        msg = mfree(msg);
        /* fits the node, not next to the other pod now: Deferred, with the admission's words */
        assert_int_equal(kubelet_resize_decide(big, false, others, 1, &node, &msg), RESIZE_DEFERRED);
        assert_string_equal(msg, "Node didn't have enough resource: cpu, requested: 800, used: 400, capacity: 1000");
        msg = mfree(msg);
        assert_int_equal(kubelet_resize_decide(big, false, NULL, 0, &node, &msg), RESIZE_ACCEPTED);
        /* a static pod is never resized in place */
        assert_int_equal(kubelet_resize_decide(small, true, NULL, 0, &node, &msg), RESIZE_INFEASIBLE);
        assert_string_equal(msg, "In-place resize of static-pods is not supported");
        free(msg);
}

static void test_resize_message(void **state) {
        _cleanup_pod_free_ struct pod *p = api_pod("{limits: {cpu: 200m}}", NULL);
        _cleanup_free_ char *m = kubelet_resize_message("Pod resize started", p, 3, NULL);
        _cleanup_free_ char *e = kubelet_resize_message("Pod resize Deferred", p, 3, "no room");

        assert_string_equal(m,
                            "Pod resize started: {\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{\"cpu\":"
                            "\"200m\"}}},{\"name\":\"b\",\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":"
                            "\"64Mi\"}}}],\"generation\":3}");
        assert_true(endswith(e, ",\"generation\":3,\"error\":\"no room\"}"));
}

static void test_checkpoint(void **state) {
        char dir[] = "/tmp/ck-alloc-XXXXXX";
        struct allocation_state *st = NULL;
        _cleanup_pod_free_ struct pod *p = api_pod("{limits: {cpu: 200m, memory: 64Mi}}", NULL);
        json_t *alloc = NULL;
        _cleanup_free_ char *cmd = NULL;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(kubelet_allocation_load(dir, &st), 0);
        assert_null(kubelet_allocation_get(st, "u-1"));
        assert_int_equal(kubelet_allocation_from_pod(p, &alloc), 0);
        assert_int_equal(kubelet_allocation_set(st, "u-1", json_incref(alloc)), 0);
        assert_int_equal(kubelet_allocation_set(st, "u-2", json_incref(alloc)), 0);
        st = kubelet_allocation_free(st);
        /* read back after a restart */
        assert_int_equal(kubelet_allocation_load(dir, &st), 0);
        assert_true(json_equal((json_t *) kubelet_allocation_get(st, "u-1"), alloc));
        assert_int_equal(kubelet_allocation_set(st, "u-2", NULL), 0);
        assert_null(kubelet_allocation_get(st, "u-2"));
        st = kubelet_allocation_free(st);
        assert_int_equal(kubelet_allocation_load(dir, &st), 0);
        assert_null(kubelet_allocation_get(st, "u-2"));
        assert_non_null(kubelet_allocation_get(st, "u-1"));
        st = kubelet_allocation_free(st);
        json_decref(alloc);
        assert_true(asprintf(&cmd, "rm -rf '%s'", dir) > 0);
        assert_int_equal(system(cmd), 0);
}

/* computePodResizeAction: the running container's reported resources against its allocated ones */
static void test_container_resize_action(void **state) {
        static const struct {
                const char *resources, *policy;
                int64_t shares, quota, memory; /* what the runtime reports */
                enum kr_resize_action want;
        } cases[] = {
                /* runs with them already */
                { "{limits: {cpu: 200m, memory: 64Mi}}", NULL, 204, 20000, 64 * MIB, KR_RESIZE_NONE },
                /* cpu and memory changed, NotRequired (the default): in place */
                { "{limits: {cpu: 400m, memory: 64Mi}}", NULL, 204, 20000, 64 * MIB, KR_RESIZE_UPDATE },
                { "{limits: {cpu: 200m, memory: 128Mi}}", NULL, 204, 20000, 64 * MIB, KR_RESIZE_UPDATE },
                /* memory RestartContainer: a memory change restarts it, a cpu change does not */
                { "{limits: {cpu: 200m, memory: 128Mi}}", "[{resourceName: memory, restartPolicy: RestartContainer}]",
                  204, 20000, 64 * MIB, KR_RESIZE_RESTART },
                { "{limits: {cpu: 400m, memory: 64Mi}}", "[{resourceName: memory, restartPolicy: RestartContainer}]",
                  204, 20000, 64 * MIB, KR_RESIZE_UPDATE },
                { "{limits: {cpu: 400m, memory: 64Mi}}", "[{resourceName: cpu, restartPolicy: RestartContainer}]", 204,
                  20000, 64 * MIB, KR_RESIZE_RESTART },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_pod_free_ struct pod *p = api_pod(cases[i].resources, cases[i].policy);
                struct kc_container cs = { .state = KC_CONTAINER_RUNNING,
                                           .have_resources = true,
                                           .res_cpu_period = 100000,
                                           .res_cpu_shares = cases[i].shares,
                                           .res_cpu_quota = cases[i].quota,
                                           .res_memory_limit = cases[i].memory };
                struct kr_linux_resources d;
                enum kr_resize_action got = kr_container_resize_action(p, &p->spec.containers[0], &cs, &d);
                if (got != cases[i].want)
                        fail_msg("case %zu: %d, want %d", i, got, cases[i].want);
                /* unknown (the runtime reports none) or not running: nothing */
                cs.have_resources = false;
                assert_int_equal(kr_container_resize_action(p, &p->spec.containers[0], &cs, &d), KR_RESIZE_NONE);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_allocation_and_allocated_pod),
                cmocka_unit_test(test_pod_level_allocation),
                cmocka_unit_test(test_resize_decide),
                cmocka_unit_test(test_resize_message),
                cmocka_unit_test(test_checkpoint),
                cmocka_unit_test(test_container_resize_action),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
