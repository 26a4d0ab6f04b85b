/* SPDX-License-Identifier: Apache-2.0 */
/* The CSI volume plugin's pure parts: paths, names, vol_data.json, volume context, access modes, errors,
 * versions, and the node info manager's annotation and CSINode drivers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/error.h"
#include "csi.pb-c.h"
#include "csi/csi.h"
#include "csi/nodeinfo.h"

static void test_paths_and_names(void **state) {
        char *p;

        p = csi_pod_mount_path("/var/lib/kubelet", "uid-1", "pv-a");
        assert_string_equal(p, "/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~csi/pv-a/mount");
        free(p);
        p = csi_pod_volume_dir("/r", "u", "a/b"); /* EscapeQualifiedName */
        assert_string_equal(p, "/r/pods/u/volumes/kubernetes.io~csi/a~b");
        free(p);
        /* staging path: sha256 of the handle */
        p = csi_global_mount_path("/r", "csi.example.com", "vol-1");
        assert_string_equal(p, "/r/plugins/kubernetes.io/csi/csi.example.com/"
                               "d2e8363faaac7ae76def3b14091d8eb5755f6b92e9531627aeec833a8731cc49/globalmount");
        free(p);
        p = csi_unique_volume_name("csi.example.com", "vol-1");
        assert_string_equal(p, "kubernetes.io/csi/csi.example.com^vol-1");
        free(p);
        /* getAttachmentName: sha256(handle + driver + node) */
        p = csi_attachment_name("vol-1", "csi.example.com", "node-a");
        assert_string_equal(p, "csi-664f93e6befe920d56b73708bbb3eb1888cad5fb3e7203b1b501f466d0bea90f");
        free(p);
        /* makeVolumeHandle: sha256(podUID + volume name) */
        p = csi_ephemeral_volume_handle("uid-1", "eph");
        assert_string_equal(p, "csi-6e35388ca034e4848ef5ad5b70d107f07e7b4aa8d4f8e2ac7ee9ac6a97dd40b5");
        free(p);
}

static void test_vol_data(void **state) {
        struct csi_vol_data d = { .spec_vol_id = (char *) "pv-a",
                                  .volume_handle = (char *) "vol-1",
                                  .driver_name = (char *) "drv",
                                  .node_name = (char *) "n",
                                  .attachment_id = (char *) "csi-x",
                                  .lifecycle_mode = (char *) "Persistent" };
        struct csi_vol_data back = {};
        struct ck_error *err = NULL;
        char *text = csi_vol_data_format(&d);

        /* Go's encoding/json: sorted keys */
        assert_string_equal(text, "{\"attachmentID\":\"csi-x\",\"driverName\":\"drv\",\"nodeName\":\"n\","
                                  "\"specVolID\":\"pv-a\",\"volumeHandle\":\"vol-1\",\"volumeLifecycleMode\":"
                                  "\"Persistent\"}");
        assert_int_equal(csi_vol_data_parse(text, &back, &err), 0);
        assert_string_equal(back.spec_vol_id, "pv-a");
        assert_string_equal(back.lifecycle_mode, "Persistent");
        csi_vol_data_done(&back);
        free(text);
        /* the global directory's file: handle and driver only */
        assert_int_equal(csi_vol_data_parse("{\"volumeHandle\":\"h\",\"driverName\":\"d\"}", &back, &err), 0);
        assert_null(back.spec_vol_id);
        csi_vol_data_done(&back);
        assert_int_equal(csi_vol_data_parse("{\"volumeHandle\":\"h\"}", &back, &err), -EBADMSG);
        assert_string_equal(ck_error_message(err), "no driverName or volumeHandle");
        err = ck_error_free(err);
        assert_int_equal(csi_vol_data_parse("{\"driverName\":1}", &back, &err), -EBADMSG);
        assert_string_equal(ck_error_message(err), "driverName: not a string");
        err = ck_error_free(err);
        assert_int_equal(csi_vol_data_parse("[]", &back, &err), -EBADMSG);
        ck_error_free(err);
}

static void test_volume_context(void **state) {
        struct strmap attrs = {}, ctx = {};
        struct csi_pod_info pod = { .name = "web", .namespace_ = "ns", .uid = "u1", .service_account = "default" };

        assert_int_equal(strmap_set(&attrs, "size", "32"), 0);
        assert_int_equal(strmap_set(&attrs, "csi.storage.k8s.io/pod.name", "spoofed"), 0);
        /* without podInfoOnMount: the attributes as they are */
        assert_int_equal(csi_volume_context(&attrs, NULL, false, &ctx), 0);
        assert_int_equal(ctx.n, 2);
        assert_string_equal(strmap_get(&ctx, "csi.storage.k8s.io/pod.name"), "spoofed");
        strmap_done(&ctx);
        /* with it: the pod's, winning over attributes of the same name (mergeMap) */
        assert_int_equal(csi_volume_context(&attrs, &pod, true, &ctx), 0);
        assert_int_equal(ctx.n, 6);
        assert_string_equal(strmap_get(&ctx, "size"), "32");
        assert_string_equal(strmap_get(&ctx, "csi.storage.k8s.io/pod.name"), "web");
        assert_string_equal(strmap_get(&ctx, "csi.storage.k8s.io/pod.namespace"), "ns");
        assert_string_equal(strmap_get(&ctx, "csi.storage.k8s.io/pod.uid"), "u1");
        assert_string_equal(strmap_get(&ctx, "csi.storage.k8s.io/serviceAccount.name"), "default");
        assert_string_equal(strmap_get(&ctx, "csi.storage.k8s.io/ephemeral"), "true");
        strmap_done(&ctx);
        strmap_done(&attrs);
}

static void test_access_modes_and_errors(void **state) {
        char *e;

        assert_int_equal(csi_access_mode("ReadWriteOnce"),
                         CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_WRITER);
        assert_int_equal(csi_access_mode("ReadOnlyMany"),
                         CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY);
        assert_int_equal(csi_access_mode("ReadWriteMany"),
                         CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_MULTI_WRITER);
        assert_int_equal(csi_access_mode("ReadWriteOncePod"), CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__UNKNOWN);
        e = csi_rpc_error(4, "context deadline exceeded");
        assert_string_equal(e, "rpc error: code = DeadlineExceeded desc = context deadline exceeded");
        free(e);
        e = csi_rpc_error(9, "not staged");
        assert_string_equal(e, "rpc error: code = FailedPrecondition desc = not staged");
        free(e);
        /* isFinalError */
        assert_false(csi_is_final_error(4));  /* DeadlineExceeded */
        assert_false(csi_is_final_error(14)); /* Unavailable */
        assert_false(csi_is_final_error(10)); /* Aborted */
        assert_true(csi_is_final_error(13));  /* Internal */
        assert_true(csi_is_final_error(3));   /* InvalidArgument */
}

static void test_versions(void **state) {
        char *v = NULL;
        struct ck_error *err = NULL;
        char *ok[] = { (char *) "0.3.0", (char *) "1.0.0", (char *) "v1.2", NULL };
        char *none[] = { (char *) "2.0.0", (char *) "x", NULL };

        assert_int_equal(csi_highest_supported_version(ok, &v, &err), 0);
        assert_string_equal(v, "1.2.0");
        free(v);
        assert_int_equal(csi_highest_supported_version(none, &v, &err), -EINVAL);
        err = ck_error_free(err);
        assert_int_equal(csi_highest_supported_version(NULL, &v, &err), -EINVAL);
        ck_error_free(err);
        assert_true(csi_version_compare("1.0.0", "1.2.0") < 0);
        assert_int_equal(csi_version_compare("1.2.0", "1.2.0"), 0);
}

static void test_nodeinfo(void **state) {
        struct strmap topo = {};
        json_t *drivers, *before;
        char *a = NULL;

        /* the nodeid annotation: a JSON map, sorted keys, gone when empty */
        assert_int_equal(csi_nodeinfo_annotation(NULL, "b.example.com", "id-b", &a), 0);
        assert_string_equal(a, "{\"b.example.com\":\"id-b\"}");
        {
                char *b = NULL;
                assert_int_equal(csi_nodeinfo_annotation(a, "a.example.com", "id-a", &b), 0);
                assert_string_equal(b, "{\"a.example.com\":\"id-a\",\"b.example.com\":\"id-b\"}");
                free(a);
                a = b;
        }
        {
                char *b = NULL;
                assert_int_equal(csi_nodeinfo_annotation(a, "a.example.com", NULL, &b), 0);
                assert_string_equal(b, "{\"b.example.com\":\"id-b\"}");
                free(b);
                assert_int_equal(csi_nodeinfo_annotation("{\"b.example.com\":\"id-b\"}", "b.example.com", NULL, &b), 0);
                assert_null(b);
                assert_int_equal(csi_nodeinfo_annotation("not json", "x", "y", &b), -EBADMSG);
        }
        free(a);
        /* CSINode drivers: replaced by name, topology keys sorted, the attach limit as allocatable */
        assert_int_equal(strmap_set(&topo, "zone", "a"), 0);
        assert_int_equal(strmap_set(&topo, "rack", "1"), 0);
        before = json_loads("[{\"name\":\"other\",\"nodeID\":\"o\"},{\"name\":\"d\",\"nodeID\":\"old\"}]", 0, NULL);
        drivers = csi_nodeinfo_drivers(before, "d", "new", 16, &topo);
        {
                char *s = json_dumps(drivers, JSON_COMPACT | JSON_SORT_KEYS);
                assert_string_equal(s, "[{\"name\":\"other\",\"nodeID\":\"o\"},{\"allocatable\":{\"count\":16},"
                                       "\"name\":\"d\",\"nodeID\":\"new\",\"topologyKeys\":[\"rack\",\"zone\"]}]");
                free(s);
        }
        json_decref(drivers);
        drivers = csi_nodeinfo_drivers(before, "d", NULL, 0, NULL);
        assert_int_equal(json_array_size(drivers), 1);
        json_decref(drivers);
        /* no limit: no allocatable */
        drivers = csi_nodeinfo_drivers(NULL, "d", "n", 0, NULL);
        assert_null(json_object_get(json_array_get(drivers, 0), "allocatable"));
        json_decref(drivers);
        json_decref(before);
        strmap_done(&topo);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_paths_and_names), cmocka_unit_test(test_vol_data),
                cmocka_unit_test(test_volume_context),  cmocka_unit_test(test_access_modes_and_errors),
                cmocka_unit_test(test_versions),        cmocka_unit_test(test_nodeinfo),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
