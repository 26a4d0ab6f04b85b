/* SPDX-License-Identifier: Apache-2.0 */
/* Mirror pods: what to create and delete, and the object created. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "basic/strmap.h"
#include "config/config.h"
#include "kubelet/mirror.h"

static struct pod *static_pod(const char *name, const char *hash) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(
                asprintf(&yaml,
                         "apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: kube-system, labels: {app: x}}\n"
                         "spec:\n  containers:\n  - {name: a, image: i}\n",
                         name) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        assert_int_equal(strmap_set(&p->annotations, ANNOTATION_CONFIG_HASH, hash), 0);
        assert_int_equal(strmap_set(&p->annotations, ANNOTATION_CONFIG_SOURCE, CONFIG_SOURCE_FILE), 0);
        return p;
}

static void test_plan(void **state) {
        struct pod *a = static_pod("a", "h1"), *b = static_pod("b", "h2"), *c = static_pod("c", "h3");
        const struct pod *pods[] = { a, b, c };
        const struct mirror_observed observed[] = {
                { "kube-system", "a", "u-a", "h1", false },  /* up to date */
                { "kube-system", "b", "u-b", "old", false }, /* the manifest changed */
                { "kube-system", "z", "u-z", "h9", false },  /* orphan */
                { "kube-system", "y", "u-y", "h8", true },   /* orphan already going */
        };
        struct mirror_action *act = NULL;
        size_t n = 0;

        assert_int_equal(kubelet_mirror_plan(pods, NULL, 3, observed, 4, &act, &n), 0);
        assert_int_equal(n, 4);
        assert_int_equal(act[0].kind, MIRROR_DELETE); /* b's outdated mirror; created after it is gone */
        assert_int_equal(act[0].index, 1);
        assert_int_equal(act[1].kind, MIRROR_CREATE); /* c has none */
        assert_int_equal(act[1].index, 2);
        assert_int_equal(act[2].kind, MIRROR_DELETE); /* z's static pod is gone */
        assert_int_equal(act[2].index, 2);
        assert_int_equal(act[3].kind, MIRROR_DELETE); /* y's graceful deletion is finished */
        assert_int_equal(act[3].index, 3);
        free(act);

        /* a mirror pod deleted with a grace period (by a user) is gone: deleted for good, then created again */
        const struct mirror_observed going[] = { { "kube-system", "a", "u-a", "h1", true } };
        assert_int_equal(kubelet_mirror_plan(pods, NULL, 1, going, 1, &act, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(act[0].kind, MIRROR_DELETE);
        assert_int_equal(act[0].index, 0);
        free(act);
        assert_int_equal(kubelet_mirror_plan(pods, NULL, 1, NULL, 0, &act, &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(act[0].kind, MIRROR_CREATE);
        free(act);
        /* terminating static pods (their manifests removed, containers stopping): b's outdated mirror and a's stay,
         * c gets none created; z's static pod is gone for good: its mirror goes */
        {
                const bool term[] = { true, true, true };
                assert_int_equal(kubelet_mirror_plan(pods, term, 3, observed, 4, &act, &n), 0);
                assert_int_equal(n, 2);
                assert_int_equal(act[0].kind, MIRROR_DELETE);
                assert_int_equal(act[0].index, 2);
                assert_int_equal(act[1].kind, MIRROR_DELETE);
                assert_int_equal(act[1].index, 3);
                free(act);
        }
        /* b's manifest changed while its old version still terminates (a new UID, the same name): the old version's
         * mirror pod stays until the old version is gone, then the new one's replaces it */
        {
                struct pod *b_new = static_pod("b", "h2-new");
                const struct pod *both[] = { b, b_new };
                const bool term[] = { true, false };
                const struct mirror_observed mirror_b[] = { { "kube-system", "b", "u-b", "h2", false } };

                assert_int_equal(kubelet_mirror_plan(both, term, 2, mirror_b, 1, &act, &n), 0);
                assert_int_equal(n, 0);
                free(act);
                assert_int_equal(kubelet_mirror_plan(both + 1, term + 1, 1, mirror_b, 1, &act, &n), 0);
                assert_int_equal(n, 1);
                assert_int_equal(act[0].kind, MIRROR_DELETE);
                assert_int_equal(act[0].index, 0);
                free(act);
                pod_free(b_new);
        }
        pod_free(a);
        pod_free(b);
        pod_free(c);
}

static void test_build(void **state) {
        struct pod *a = static_pod("web-n1", "abc");
        json_t *m = kubelet_mirror_pod_build(a, "n1", "node-uid");
        json_t *meta = json_object_get(m, "metadata"), *own;

        assert_non_null(m);
        assert_string_equal(json_string_value(json_object_get(m, "kind")), "Pod");
        assert_string_equal(json_string_value(json_object_get(meta, "name")), "web-n1");
        assert_string_equal(json_string_value(json_object_get(meta, "namespace")), "kube-system");
        assert_null(json_object_get(meta, "uid"));
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(meta, "annotations"), ANNOTATION_CONFIG_MIRROR)),
                            "abc");
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(meta, "annotations"), ANNOTATION_CONFIG_HASH)),
                            "abc");
        assert_string_equal(json_string_value(json_object_get(json_object_get(meta, "labels"), "app")), "x");
        own = json_array_get(json_object_get(meta, "ownerReferences"), 0);
        assert_string_equal(json_string_value(json_object_get(own, "kind")), "Node");
        assert_string_equal(json_string_value(json_object_get(own, "name")), "n1");
        assert_string_equal(json_string_value(json_object_get(own, "uid")), "node-uid");
        assert_string_equal(json_string_value(json_object_get(json_object_get(m, "spec"), "nodeName")), "n1");
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(m, "spec"),
                                                                                             "containers"),
                                                                             0),
                                                              "image")),
                            "i");
        json_decref(m);
        pod_free(a);
}

/* where a static pod's status goes: its mirror pod, not one being deleted nor the mirror of another version of it
 * (issue 27: a status for the outdated mirror pod was refused with 422 once the new one existed) */
static void test_mirror_uid(void **state) {
        struct pod *a = static_pod("a", "h1"), *a2 = static_pod("a", "h2"), *b = static_pod("b", "h3");
        struct mirror_manager *m = NULL;
        json_t *observed = json_pack("[{s:{s:s, s:s, s:s, s:{s:s}}}, {s:{s:s, s:s, s:s, s:s, s:{s:s}}}]", "metadata",
                                     "namespace", "kube-system", "name", "a", "uid", "u-a", "annotations",
                                     "kubernetes.io/config.mirror", "h1", "metadata", "namespace", "kube-system",
                                     "name", "b", "uid", "u-b", "deletionTimestamp", "2026-11-28T00:00:00Z",
                                     "annotations", "kubernetes.io/config.mirror", "h3");

        assert_non_null(observed);
        assert_int_equal(kubelet_mirror_new(NULL, "n1", &m), 0); /* no node UID: nothing is sent */
        kubelet_mirror_observed(m, observed);
        assert_string_equal(kubelet_mirror_uid(m, a), "u-a");
        assert_null(kubelet_mirror_uid(m, a2)); /* the manifest changed: u-a is about to be replaced */
        assert_null(kubelet_mirror_uid(m, b));  /* being deleted */
        kubelet_mirror_free(m);
        json_decref(observed);
        pod_free(a);
        pod_free(a2);
        pod_free(b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plan),
                cmocka_unit_test(test_build),
                cmocka_unit_test(test_mirror_uid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
