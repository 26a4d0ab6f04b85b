/* SPDX-License-Identifier: Apache-2.0 */
/* PersistentVolume, PersistentVolumeClaim and CSIDriver decoding, node affinity (MatchNodeSelectorTerms), and the
 * validation of the new pod volume sources and fsGroupChangePolicy with the apiserver's wording. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "apis/manifest.h"
#include "apis/persistent_volume.h"
#include "apis/pod_volumes.h"
#include "basic/error.h"

static json_t *J(const char *s) {
        json_error_t e;
        json_t *j = json_loads(s, 0, &e);
        if (!j)
                fail_msg("bad JSON in the test: %s", e.text);
        return j;
}

static void test_pv(void **state) {
        struct persistent_volume pv = {};
        struct ck_error *err = NULL;
        json_t *o = J(
                "{\"metadata\":{\"name\":\"pv1\",\"annotations\":{\"pv.beta.kubernetes.io/gid\":\"1234\"}},"
                "\"spec\":{\"capacity\":{\"storage\":\"1Gi\"},\"accessModes\":[\"ReadWriteMany\"],"
                "\"mountOptions\":[\"noatime\"],\"claimRef\":{\"uid\":\"c1\"},\"storageClassName\":\"x\","
                "\"csi\":{\"driver\":\"d\",\"volumeHandle\":\"h\",\"fsType\":\"ext4\",\"readOnly\":true,"
                "\"volumeAttributes\":{\"a\":\"b\"},\"nodeStageSecretRef\":{\"name\":\"s\",\"namespace\":\"n\"}}}}");

        assert_int_equal(persistent_volume_decode(o, &pv, &err), 0);
        assert_int_equal(pv.source, PV_SOURCE_CSI);
        assert_string_equal(pv.name, "pv1");
        assert_string_equal(pv.claim_uid, "c1");
        assert_string_equal(pv.gid, "1234");
        assert_string_equal(pv.access_modes[0], "ReadWriteMany");
        assert_string_equal(pv.mount_options[0], "noatime");
        assert_int_equal(pv.capacity.value, 1073741824);
        assert_string_equal(pv.driver, "d");
        assert_string_equal(pv.volume_handle, "h");
        assert_true(pv.read_only);
        assert_string_equal(strmap_get(&pv.attributes, "a"), "b");
        assert_string_equal(pv.stage_secret.namespace_, "n");
        assert_null(pv.publish_secret.name);
        assert_false(pv.has_affinity);
        persistent_volume_done(&pv);
        json_decref(o);

        o = J("{\"metadata\":{\"name\":\"l\"},\"spec\":{\"local\":{\"path\":\"/mnt/disk\"}}}");
        assert_int_equal(persistent_volume_decode(o, &pv, &err), 0);
        assert_int_equal(pv.source, PV_SOURCE_LOCAL);
        assert_string_equal(pv.path, "/mnt/disk");
        assert_null(pv.claim_uid);
        persistent_volume_done(&pv);
        json_decref(o);

        o = J("{\"metadata\":{\"name\":\"g\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
              "\"gcePersistentDisk\":{\"pdName\":\"p\"}}}");
        assert_int_equal(persistent_volume_decode(o, &pv, &err), 0);
        assert_int_equal(pv.source, PV_SOURCE_OTHER);
        assert_string_equal(pv.source_name, "gcePersistentDisk");
        persistent_volume_done(&pv);
        json_decref(o);

        o = J("{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"csi\":{\"driver\":5}}}");
        assert_int_equal(persistent_volume_decode(o, &pv, &err), -EBADMSG);
        assert_string_equal(ck_error_message(err), "spec.csi.driver: expected a string, got integer");
        err = ck_error_free(err);
        json_decref(o);
        o = J("{\"metadata\":{\"name\":\"bad\"},\"spec\":{\"nfs\":{\"server\":\"s\"}}}");
        assert_int_equal(persistent_volume_decode(o, &pv, &err), -EBADMSG);
        assert_string_equal(ck_error_message(err), "spec.nfs: server and path are required");
        ck_error_free(err);
        json_decref(o);
}

static void test_pvc_and_driver(void **state) {
        struct persistent_volume_claim c = {};
        struct csi_driver_spec d = {};
        struct ck_error *err = NULL;
        json_t *o = J("{\"metadata\":{\"name\":\"p-v\",\"namespace\":\"ns\",\"uid\":\"u\",\"deletionTimestamp\":"
                      "\"2020-01-01T00:00:00Z\",\"ownerReferences\":[{\"uid\":\"o1\"},{\"uid\":\"pod\",\"controller\":"
                      "true}]},\"spec\":{\"volumeName\":\"pv1\"},\"status\":{\"phase\":\"Bound\",\"capacity\":"
                      "{\"storage\":\"2Gi\"}}}");

        assert_int_equal(persistent_volume_claim_decode(o, &c, &err), 0);
        assert_string_equal(c.phase, "Bound");
        assert_string_equal(c.volume_name, "pv1");
        assert_true(c.deleting);
        assert_string_equal(c.controller_uid, "pod");
        assert_int_equal(c.capacity.value, 2147483648);
        persistent_volume_claim_done(&c);
        json_decref(o);

        /* no CSIDriver object: attach required, no pod info, ReadWriteOnceWithFSType, Persistent only */
        assert_int_equal(csi_driver_spec_decode(NULL, &d, &err), 0);
        assert_false(d.exists);
        assert_true(d.attach_required);
        assert_false(d.pod_info_on_mount);
        assert_string_equal(d.fs_group_policy, "ReadWriteOnceWithFSType");
        assert_string_equal(d.lifecycle_modes[0], "Persistent");
        assert_null(d.lifecycle_modes[1]);
        csi_driver_spec_done(&d);
        o = J("{\"spec\":{\"attachRequired\":false,\"podInfoOnMount\":true,\"fsGroupPolicy\":\"File\","
              "\"volumeLifecycleModes\":[\"Ephemeral\"]}}");
        assert_int_equal(csi_driver_spec_decode(o, &d, &err), 0);
        assert_true(d.exists);
        assert_false(d.attach_required);
        assert_true(d.pod_info_on_mount);
        assert_string_equal(d.fs_group_policy, "File");
        assert_string_equal(d.lifecycle_modes[0], "Ephemeral");
        csi_driver_spec_done(&d);
        json_decref(o);
}

static bool affinity(const char *terms_json, const char *host) {
        struct persistent_volume pv = {};
        struct ck_error *err = NULL;
        struct strmap labels = {};
        char *doc = NULL;
        json_t *o;
        int r;

        assert_true(asprintf(&doc,
                             "{\"metadata\":{\"name\":\"l\"},\"spec\":{\"local\":{\"path\":\"/x\"},\"nodeAffinity\":"
                             "{\"required\":{\"nodeSelectorTerms\":%s}}}}",
                             terms_json) > 0);
        o = J(doc);
        assert_int_equal(persistent_volume_decode(o, &pv, &err), 0);
        assert_int_equal(strmap_set(&labels, "kubernetes.io/hostname", host), 0);
        assert_int_equal(strmap_set(&labels, "size", "10"), 0);
        r = persistent_volume_check_node_affinity(&pv, &labels, "node-name", &err);
        if (r < 0) {
                assert_int_equal(r, -EPERM);
                assert_string_equal(ck_error_message(err), "no matching NodeSelectorTerms");
                err = ck_error_free(err);
        }
        strmap_done(&labels);
        persistent_volume_done(&pv);
        json_decref(o);
        free(doc);
        return r == 0;
}

static void test_node_affinity(void **state) {
#define EXPR(k, op, vals) "{\"key\":\"" k "\",\"operator\":\"" op "\"" vals "}"
        assert_true(affinity("[{\"matchExpressions\":[" EXPR("kubernetes.io/hostname", "In",
                                                             ",\"values\":[\"a\",\"b\"]") "]}]",
                             "b"));
        assert_false(
                affinity("[{\"matchExpressions\":[" EXPR("kubernetes.io/hostname", "In", ",\"values\":[\"a\"]") "]}]",
                         "b"));
        assert_true(affinity("[{\"matchExpressions\":[" EXPR("kubernetes.io/hostname", "NotIn",
                                                             ",\"values\":[\"a\"]") "]}]",
                             "b"));
        assert_true(affinity("[{\"matchExpressions\":[" EXPR("size", "Gt", ",\"values\":[\"5\"]") "]}]", "b"));
        assert_false(affinity("[{\"matchExpressions\":[" EXPR("size", "Lt", ",\"values\":[\"5\"]") "]}]", "b"));
        assert_true(affinity("[{\"matchExpressions\":[" EXPR("size", "Exists", "") "]}]", "b"));
        assert_false(affinity("[{\"matchExpressions\":[" EXPR("zone", "Exists", "") "]}]", "b"));
        assert_true(affinity("[{\"matchExpressions\":[" EXPR("zone", "DoesNotExist", "") "]}]", "b"));
        /* terms are ORed, expressions ANDed */
        assert_true(affinity("[{\"matchExpressions\":[" EXPR("zone", "Exists",
                                                             "") "]},{\"matchExpressions\":[" EXPR("size", "Exists",
                                                                                                   "") "]}]",
                             "b"));
        assert_false(
                affinity("[{\"matchExpressions\":[" EXPR("size", "Exists", "") "," EXPR("zone", "Exists", "") "]}]",
                         "b"));
        /* an empty term matches nothing; no terms at all match nothing */
        assert_false(affinity("[{}]", "b"));
        assert_false(affinity("[]", "b"));
        /* an invalid requirement: its term does not match */
        assert_false(affinity("[{\"matchExpressions\":[" EXPR("size", "Gt", ",\"values\":[\"x\"]") "]}]", "b"));
        assert_false(affinity("[{\"matchExpressions\":[" EXPR("size", "Exists", ",\"values\":[\"10\"]") "]}]", "b"));
        /* matchFields: metadata.name */
        assert_true(
                affinity("[{\"matchFields\":[" EXPR("metadata.name", "In", ",\"values\":[\"node-name\"]") "]}]", "b"));
        assert_false(
                affinity("[{\"matchFields\":[" EXPR("metadata.uid", "In", ",\"values\":[\"node-name\"]") "]}]", "b"));
#undef EXPR
}

static const char *validate(const char *volumes_yaml, const char *extra) {
        static char msg[4096];
        struct pod_set set = {};
        struct ck_error *err = NULL;
        char *yaml = NULL;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: default}\nspec:\n"
                             "  volumes: %s\n  containers: [{name: a, image: b}]\n%s",
                             volumes_yaml, extra) > 0);
        msg[0] = '\0';
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                snprintf(msg, sizeof(msg), "%s", ck_error_message(err));
        else {
                struct field_errors errs = {};
                if (pod_validate(set.pods[0], &errs) != 0) {
                        char *s = field_errors_to_string(&errs);
                        snprintf(msg, sizeof(msg), "%s", s);
                        free(s);
                }
                field_errors_done(&errs);
        }
        ck_error_free(err);
        pod_set_done(&set);
        free(yaml);
        return msg;
}

static void test_validation(void **state) {
        assert_string_equal(validate("[{name: d, persistentVolumeClaim: {claimName: c}}, {name: e, ephemeral: "
                                     "{volumeClaimTemplate: {spec: {}}}}, {name: f, csi: {driver: csi.example.com}}, "
                                     "{name: g, nfs: {server: s, path: /x}}]",
                                     ""),
                            "");
        assert_non_null(strstr(validate("[{name: d, persistentVolumeClaim: {}}]", ""),
                               "spec.volumes[0].persistentVolumeClaim.claimName: Required value"));
        assert_non_null(strstr(validate("[{name: d, nfs: {server: s, path: rel}}]", ""),
                               "spec.volumes[0].nfs.path: Invalid value: \"rel\": must be an absolute path"));
        assert_non_null(
                strstr(validate("[{name: d, nfs: {path: /x}}]", ""), "spec.volumes[0].nfs.server: Required value"));
        assert_non_null(strstr(validate("[{name: d, csi: {}}]", ""), "spec.volumes[0].csi.driver: Required value"));
        assert_non_null(strstr(validate("[{name: d, csi: {driver: csi.example.com, nodePublishSecretRef: {}}}]", ""),
                               "spec.volumes[0].csi.nodePublishSecretRef.name: Required value"));
        assert_non_null(strstr(validate("[{name: d, ephemeral: {}}]", ""),
                               "spec.volumes[0].ephemeral.volumeClaimTemplate: Required value"));
        assert_non_null(strstr(validate("[{name: d, emptyDir: {}}]",
                                        "  securityContext: {fsGroup: 1, fsGroupChangePolicy: Sometimes}\n"),
                               "spec.securityContext.fsGroupChangePolicy: Unsupported value: \"Sometimes\": "
                               "supported values: \"Always\", \"OnRootMismatch\""));
        assert_string_equal(validate("[{name: d, emptyDir: {}}]",
                                     "  securityContext: {fsGroup: 1, fsGroupChangePolicy: OnRootMismatch}\n"),
                            "");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pv),
                cmocka_unit_test(test_pvc_and_driver),
                cmocka_unit_test(test_node_affinity),
                cmocka_unit_test(test_validation),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
