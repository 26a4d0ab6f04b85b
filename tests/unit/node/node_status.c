/* SPDX-License-Identifier: Apache-2.0 */
/* The Node object and NodeStatus (nodestatus setters): resources, conditions, transitions, labels, taints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "basic/time.h"
#include "node/declared_features.h"
#include "node/node_status.h"

static struct machine_info machine = {
        .num_cores = 4,
        .memory_capacity = 8ULL << 30,
        .machine_id = (char *) "mid",
        .system_uuid = (char *) "uuid",
        .boot_id = (char *) "bid",
        .kernel_version = (char *) "6.1.0",
        .os_image = (char *) "Debian GNU/Linux 12 (bookworm)",
        .architecture = (char *) "amd64",
};

static void input(struct node_status_input *in) {
        static char *names_a[] = { (char *) "docker.io/library/busybox@sha256:1",
                                   (char *) "docker.io/library/busybox:1.36", NULL };
        static char *names_b[] = { (char *) "registry.k8s.io/pause:3.9", NULL };
        static struct node_image images[] = { { names_b, 100 }, { names_a, 2000 } };

        *in = (struct node_status_input) {
                .node_name = "n1",
                .hostname = "n1",
                .node_ip = "192.0.2.2",
                .machine = &machine,
                .runtime_version = "containerd://1.6.20",
                .kubelet_version = "v1.37.2",
                .max_pods = 110,
                .ephemeral_storage_bytes = 100ULL << 30,
                .kube_reserved = "cpu=500m,memory=1Gi",
                .system_reserved = "memory=512Mi,ephemeral-storage=1Gi",
                .runtime_ready = true,
                .network_ready = true,
                .images = images,
                .n_images = 2,
                .kubelet_port = 10250,
                .now_usec = 1700000000000000,
        };
}

static const char *str(const json_t *o, const char *a, const char *b) {
        return json_string_value(json_object_get(json_object_get(o, a), b));
}

static json_t *cond(const json_t *st, const char *type) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(st, "conditions"), i, c)
                if (streq(json_string_value(json_object_get(c, "type")), type))
                        return c;
        fail_msg("no condition %s", type);
        return NULL;
}

/* huge pages (cadvisor's CapacityFromMachineInfo, setters.go MachineInfo): each size's pages are capacity and
 * allocatable of their own, canonical quantities, and come off the allocatable memory */
static void test_hugepages(void **state) {
        struct hugepages_info hp[] = { { .page_size_kb = 2048, .num_pages = 64 }, { .page_size_kb = 1048576 } };
        struct machine_info m = machine;
        struct node_status_input in;
        json_t *st = NULL;
        (void) state;

        input(&in);
        m.hugepages = hp;
        m.n_hugepages = ELEMENTSOF(hp);
        in.machine = &m;
        assert_int_equal(node_status_build(&in, &st), 0);
        assert_string_equal(str(st, "capacity", "hugepages-2Mi"), "128Mi");
        assert_string_equal(str(st, "capacity", "hugepages-1Gi"), "0");
        assert_string_equal(str(st, "allocatable", "hugepages-2Mi"), "128Mi");
        assert_string_equal(str(st, "capacity", "memory"), "8388608Ki");
        /* 6713344Ki without huge pages, less 128Mi */
        assert_string_equal(str(st, "allocatable", "memory"), "6582272Ki");
        json_decref(st);

        /* a machine without huge pages reports none */
        input(&in);
        assert_int_equal(node_status_build(&in, &st), 0);
        assert_null(json_object_get(json_object_get(st, "capacity"), "hugepages-2Mi"));
        json_decref(st);
}

static void test_status(void **state) {
        struct node_status_input in;
        json_t *st = NULL, *st2 = NULL, *a, *b;

        input(&in);
        assert_int_equal(node_status_build(&in, &st), 0);
        assert_string_equal(str(st, "capacity", "cpu"), "4");
        assert_string_equal(str(st, "capacity", "memory"), "8388608Ki");
        assert_string_equal(str(st, "capacity", "pods"), "110");
        assert_string_equal(str(st, "capacity", "ephemeral-storage"), "104857600Ki");
        /* allocatable: minus kube + system reserved, minus eviction-hard (100Mi memory, 10% nodefs) */
        assert_string_equal(str(st, "allocatable", "cpu"), "3500m");
        assert_string_equal(str(st, "allocatable", "memory"), "6713344Ki");
        assert_string_equal(str(st, "allocatable", "ephemeral-storage"), "93323264Ki");
        assert_string_equal(str(st, "nodeInfo", "containerRuntimeVersion"), "containerd://1.6.20");
        assert_string_equal(str(st, "nodeInfo", "bootID"), "bid");
        assert_string_equal(str(st, "nodeInfo", "architecture"), "amd64");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(st, "daemonEndpoints"),
                                                                            "kubeletEndpoint"),
                                                            "Port")),
                         10250);
        assert_string_equal(json_string_value(
                                    json_object_get(json_array_get(json_object_get(st, "addresses"), 0), "address")),
                            "192.0.2.2");
        /* images: largest first */
        assert_int_equal(json_integer_value(
                                 json_object_get(json_array_get(json_object_get(st, "images"), 0), "sizeBytes")),
                         2000);
        assert_string_equal(json_string_value(json_object_get(cond(st, "Ready"), "reason")), "KubeletReady");
        assert_string_equal(json_string_value(json_object_get(cond(st, "MemoryPressure"), "status")), "False");

        /* later, network not ready: Ready flips, with a new transition time; the others keep theirs */
        in.previous = st;
        in.now_usec += 10000000;
        in.network_ready = false;
        in.runtime_message = "container runtime network not ready: NetworkReady=false";
        assert_int_equal(node_status_build(&in, &st2), 0);
        assert_string_equal(json_string_value(json_object_get(cond(st2, "Ready"), "status")), "False");
        assert_string_equal(json_string_value(json_object_get(cond(st2, "Ready"), "reason")), "KubeletNotReady");
        assert_string_equal(json_string_value(json_object_get(cond(st2, "Ready"), "lastTransitionTime")),
                            "2023-11-14T22:13:30Z");
        assert_string_equal(json_string_value(json_object_get(cond(st2, "DiskPressure"), "lastTransitionTime")),
                            "2023-11-14T22:13:20Z");
        assert_string_equal(json_string_value(json_object_get(cond(st2, "DiskPressure"), "lastHeartbeatTime")),
                            "2023-11-14T22:13:30Z");
        /* heartbeats alone are not a change */
        json_decref(st2);
        in.network_ready = true;
        assert_int_equal(node_status_build(&in, &st2), 0);
        a = node_status_without_heartbeats(st);
        b = node_status_without_heartbeats(st2);
        assert_true(json_equal(a, b));
        json_decref(a);
        json_decref(b);
        json_decref(st);
        json_decref(st2);
}

static void test_object(void **state) {
        struct node_status_input in;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        json_t *node = NULL, *labels, *taints;

        input(&in);
        assert_int_equal(node_object_build(&in, "role=edge,example.com/zone=a",
                                           "dedicated=gpu:NoSchedule,spot:NoExecute", &node, &why),
                         0);
        labels = json_object_get(json_object_get(node, "metadata"), "labels");
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/hostname")), "n1");
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/os")), "linux");
        assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/arch")), "amd64");
        assert_string_equal(json_string_value(json_object_get(labels, "example.com/zone")), "a");
        taints = json_object_get(json_object_get(node, "spec"), "taints");
        assert_int_equal(json_array_size(taints), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(taints, 0), "value")), "gpu");
        assert_null(json_object_get(json_array_get(taints, 1), "value"));
        assert_string_equal(json_string_value(json_object_get(json_array_get(taints, 1), "effect")), "NoExecute");
        json_decref(node);

        assert_int_equal(node_object_build(&in, "novalue", NULL, &node, &why), -EINVAL);
        assert_non_null(strstr(ck_error_message(why), "--node-labels"));
        why = ck_error_free(why);
        assert_int_equal(node_object_build(&in, NULL, "a=b:Sometimes", &node, &why), -EINVAL);
        assert_non_null(strstr(ck_error_message(why), "--register-with-taints"));
        why = ck_error_free(why);

        /* labels NodeRestriction would refuse: upstream's start-up error, the keys sorted */
        assert_int_equal(node_object_build(&in, "x.k8s.io/b=1,node-role.kubernetes.io/worker=,tier=a", NULL, &node,
                                           &why),
                         -EINVAL);
        assert_string_equal(ck_error_message(why),
                            "unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: "
                            "[node-role.kubernetes.io/worker x.k8s.io/b]\n--node-labels in the 'kubernetes.io' "
                            "namespace must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io) "
                            "or be in the specifically allowed set (beta.kubernetes.io/arch, "
                            "beta.kubernetes.io/instance-type, beta.kubernetes.io/os, "
                            "failure-domain.beta.kubernetes.io/region, failure-domain.beta.kubernetes.io/zone, "
                            "kubernetes.io/arch, kubernetes.io/hostname, kubernetes.io/os, "
                            "node.kubernetes.io/instance-type, topology.kubernetes.io/region, "
                            "topology.kubernetes.io/zone)");
        why = ck_error_free(why);
        assert_int_equal(node_object_build(&in,
                                           "node.kubernetes.io/pool=a,a.kubelet.kubernetes.io/x=y,"
                                           "topology.kubernetes.io/zone=z,example.k8s.io.com/ok=1,k8s.io.example/y=2",
                                           NULL, &node, &why),
                         0);
        json_decref(node);
        assert_true(node_label_is_kubelet_owned("kubernetes.io/hostname"));
        assert_true(node_label_is_kubelet_owned("x.node.kubernetes.io/y"));
        assert_false(node_label_is_kubelet_owned("xnode.kubernetes.io/y"));
        assert_false(node_label_is_kubelet_owned("node-restriction.kubernetes.io/y"));
        assert_false(node_label_is_kubelet_owned("node.kubernetes.io"));
}

/* runtimeHandlers and features.supplementalGroupsPolicy, as the runtime's Status said (absent before) */
static void test_runtime_features(void **state) {
        struct node_status_input in;
        struct node_runtime_handler h[] = { { (char *) "", true, false }, { (char *) "crun", false, true } };
        json_t *st = NULL, *l;

        input(&in);
        assert_int_equal(node_status_build(&in, &st), 0);
        assert_null(json_object_get(st, "runtimeHandlers"));
        assert_null(json_object_get(st, "features"));
        json_decref(st);

        in.runtime_handlers = h;
        in.n_runtime_handlers = 2;
        in.has_features = true;
        in.supplemental_groups_policy = true;
        assert_int_equal(node_status_build(&in, &st), 0);
        l = json_object_get(st, "runtimeHandlers");
        assert_int_equal(json_array_size(l), 2);
        assert_string_equal(json_string_value(json_object_get(json_array_get(l, 0), "name")), "");
        assert_true(json_is_true(
                json_object_get(json_object_get(json_array_get(l, 0), "features"), "recursiveReadOnlyMounts")));
        assert_true(
                json_is_false(json_object_get(json_object_get(json_array_get(l, 0), "features"), "userNamespaces")));
        assert_string_equal(json_string_value(json_object_get(json_array_get(l, 1), "name")), "crun");
        assert_true(json_is_true(json_object_get(json_object_get(json_array_get(l, 1), "features"), "userNamespaces")));
        assert_true(json_is_true(json_object_get(json_object_get(st, "features"), "supplementalGroupsPolicy")));
        json_decref(st);

        in.supplemental_groups_policy = false;
        assert_int_equal(node_status_build(&in, &st), 0);
        assert_true(json_is_false(json_object_get(json_object_get(st, "features"), "supplementalGroupsPolicy")));
        json_decref(st);
}

static void test_reserved(void **state) {
        int64_t c, m, s;
        _cleanup_ck_error_ struct ck_error *why = NULL;

        assert_int_equal(node_parse_reserved("cpu=250m,memory=1Gi,ephemeral-storage=2G,pid=100", &c, &m, &s, &why), 0);
        assert_int_equal(c, 250);
        assert_int_equal(m, 1LL << 30);
        assert_int_equal(s, 2000000000LL);
        assert_int_equal(node_parse_reserved("gpu=1", &c, &m, &s, &why), -EINVAL);
        assert_non_null(strstr(ck_error_message(why), "gpu"));
}

/* upstream's registry in its order; only what ckubelet implements (today InPlacePodLevelResourcesVerticalScaling)
 * is declared, and a declared list goes out as status.declaredFeatures */
static void test_declared_features(void **state) {
        (void) state;
        struct node_declared_feature t[] = {
                { "F", true, false, true },  /* implemented, gate on: declared (after E: sorted by name) */
                { "B", true, false, false }, /* not implemented */
                { "C", false, false, true }, /* gate off by default */
                { "D", true, true, true },   /* waits for a runtime feature */
                { "E", true, false, true },
        };
        const struct node_declared_feature *real;
        const char *out[16];
        struct node_status_input in;
        json_t *st = NULL, *l;
        size_t n;

        assert_int_equal(node_declared_features(t, ELEMENTSOF(t), out), 2);
        assert_string_equal(out[0], "E");
        assert_string_equal(out[1], "F");

        real = node_declared_feature_table(&n);
        assert_int_equal(n, 9);
        assert_string_equal(real[0].name, "RestartAllContainersOnContainerExits");
        assert_string_equal(real[8].name, "DRAOptionalNodeOperations");
        assert_int_equal(node_declared_features(real, n, out), 2);
        assert_string_equal(out[0], "ExtendWebSocketsToKubelet"); /* sorted, as the apiserver wants */
        assert_string_equal(out[1], "InPlacePodLevelResourcesVerticalScaling");

        input(&in);
        assert_int_equal(node_status_build(&in, &st), 0);
        assert_null(json_object_get(st, "declaredFeatures"));
        json_decref(st);
        out[0] = "A";
        out[1] = "E";
        in.declared_features = out;
        in.n_declared_features = 2;
        assert_int_equal(node_status_build(&in, &st), 0);
        l = json_object_get(st, "declaredFeatures");
        assert_int_equal(json_array_size(l), 2);
        assert_string_equal(json_string_value(json_array_get(l, 1)), "E");
        json_decref(st);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_status),           cmocka_unit_test(test_hugepages),
                cmocka_unit_test(test_object),           cmocka_unit_test(test_reserved),
                cmocka_unit_test(test_runtime_features), cmocka_unit_test(test_declared_features),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
