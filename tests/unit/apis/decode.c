/* SPDX-License-Identifier: Apache-2.0 */
/* manifest_parse + pod_decode: every field of struct pod, type errors, PodList, document errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "basic/strmap.h"
#include "basic/strv.h"
#include "basic/time.h"

static const char full_pod[] =
        "apiVersion: v1\n"
        "kind: Pod\n"
        "metadata:\n"
        "  name: web\n"
        "  namespace: prod\n"
        "  uid: 0b5c-uid\n"
        "  resourceVersion: \"42\"\n"
        "  generateName: web-\n"
        "  labels: {app: web, tier: front}\n"
        "  annotations:\n"
        "    example.com/note: hello\n"
        "  creationTimestamp: \"2026-11-22T10:59:00Z\"\n"
        "  deletionTimestamp: \"2026-11-22T11:00:00.5Z\"\n"
        "  deletionGracePeriodSeconds: 15\n"
        "  somethingUnknown: {ignored: true}\n"
        "spec:\n"
        "  restartPolicy: OnFailure\n"
        "  terminationGracePeriodSeconds: 0\n"
        "  activeDeadlineSeconds: 600\n"
        "  hostNetwork: true\n"
        "  hostPID: true\n"
        "  hostIPC: false\n"
        "  nodeName: node-1\n"
        "  hostname: web-host\n"
        "  subdomain: svc\n"
        "  serviceAccountName: robot\n"
        "  dnsPolicy: ClusterFirstWithHostNet\n"
        "  schedulerName: my-scheduler\n"
        "  priority: 1000\n"
        "  initContainers:\n"
        "  - name: init\n"
        "    image: busybox:1.36\n"
        "    command: [sh, -c, 'echo hi']\n"
        "  containers:\n"
        "  - name: app\n"
        "    image: nginx:1.25\n"
        "    command: [nginx]\n"
        "    args: [-g, 'daemon off;']\n"
        "    workingDir: /srv\n"
        "    env:\n"
        "    - {name: MODE, value: prod}\n"
        "    - name: POD_NAME\n"
        "      valueFrom: {fieldRef: {fieldPath: metadata.name}}\n"
        "    ports:\n"
        "    - {name: http, containerPort: 8080, hostPort: 8080, protocol: UDP, hostIP: 127.0.0.1}\n"
        "    - containerPort: 9090.0\n"
        "    imagePullPolicy: Never\n"
        "    resources:\n"
        "      limits: {cpu: 500m, memory: 128Mi}\n"
        "      requests: {cpu: 0.25, memory: 64Mi}\n"
        "    terminationMessagePath: /tmp/msg\n"
        "    terminationMessagePolicy: FallbackToLogsOnError\n"
        "    stdin: true\n"
        "    stdinOnce: true\n"
        "    tty: true\n"
        "    livenessProbe: {tcpSocket: {port: 8080}}\n";

static struct pod *parse_one(const char *yaml) {
        struct pod_set set = {};
        struct ck_error *err = NULL;
        struct pod *p;

        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest_parse: %s", ck_error_message(err));
        assert_int_equal(set.n, 1);
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static void test_full_pod(void **state) {
        struct pod *p = parse_one(full_pod);
        const struct container *c, *ic;
        char *s;

        assert_int_equal(p->n_ref, 1);
        assert_string_equal(p->name, "web");
        assert_string_equal(p->namespace_, "prod");
        assert_string_equal(p->uid, "0b5c-uid");
        assert_string_equal(p->resource_version, "42");
        assert_string_equal(p->generate_name, "web-");
        assert_int_equal(p->labels.n, 2);
        assert_string_equal(strmap_get(&p->labels, "app"), "web");
        assert_string_equal(strmap_get(&p->labels, "tier"), "front");
        assert_string_equal(strmap_get(&p->annotations, "example.com/note"), "hello");
        assert_int_equal(p->creation_timestamp_nsec, INT64_C(1795345140) * NSEC_PER_SEC);
        assert_true(p->has_deletion_timestamp);
        assert_int_equal(p->deletion_timestamp_nsec, INT64_C(1795345200) * NSEC_PER_SEC + 500000000);
        assert_int_equal(p->deletion_grace_period_seconds, 15);

        assert_int_equal(p->spec.restart_policy, RESTART_POLICY_ON_FAILURE);
        assert_true(p->spec.termination_grace_period_set);
        assert_int_equal(p->spec.termination_grace_period_seconds, 0); /* explicit 0 is kept */
        assert_true(p->spec.has_active_deadline);
        assert_int_equal(p->spec.active_deadline_seconds, 600);
        assert_true(p->spec.host_network);
        assert_true(p->spec.host_pid);
        assert_false(p->spec.host_ipc);
        assert_string_equal(p->spec.node_name, "node-1");
        assert_string_equal(p->spec.hostname, "web-host");
        assert_string_equal(p->spec.subdomain, "svc");
        assert_string_equal(p->spec.service_account_name, "robot");
        assert_string_equal(p->spec.dns_policy, "ClusterFirstWithHostNet");
        assert_string_equal(p->spec.scheduler_name, "my-scheduler");
        assert_int_equal(p->spec.priority, 1000);

        assert_int_equal(p->spec.n_init_containers, 1);
        ic = &p->spec.init_containers[0];
        assert_string_equal(ic->name, "init");
        assert_int_equal(strv_length(ic->command), 3);
        assert_string_equal(ic->command[2], "echo hi");
        assert_int_equal(ic->image_pull_policy, PULL_POLICY_IF_NOT_PRESENT); /* defaulted */

        assert_int_equal(p->spec.n_containers, 1);
        c = &p->spec.containers[0];
        assert_string_equal(c->name, "app");
        assert_string_equal(c->image, "nginx:1.25");
        assert_string_equal(c->command[0], "nginx");
        assert_int_equal(strv_length(c->args), 2);
        assert_string_equal(c->args[1], "daemon off;");
        assert_string_equal(c->working_dir, "/srv");
        assert_int_equal(c->n_env, 2);
        assert_string_equal(c->env[0].name, "MODE");
        assert_string_equal(c->env[0].value, "prod");
        assert_null(c->env[0].value_from);
        assert_string_equal(c->env[1].name, "POD_NAME");
        assert_null(c->env[1].value);
        assert_non_null(c->env[1].value_from);
        assert_non_null(c->env[1].value_from->field_ref);
        assert_string_equal(c->env[1].value_from->field_ref->field_path, "metadata.name");
        assert_int_equal(c->n_ports, 2);
        assert_string_equal(c->ports[0].name, "http");
        assert_int_equal(c->ports[0].container_port, 8080);
        assert_int_equal(c->ports[0].host_port, 8080);
        assert_string_equal(c->ports[0].protocol, "UDP");
        assert_string_equal(c->ports[0].host_ip, "127.0.0.1");
        assert_int_equal(c->ports[1].container_port, 9090);
        assert_int_equal(c->ports[1].host_port, 9090);    /* hostNetwork default */
        assert_string_equal(c->ports[1].protocol, "TCP"); /* default */
        assert_int_equal(c->image_pull_policy, PULL_POLICY_NEVER);
        assert_int_equal(resource_list_get(&c->resources.limits, "cpu")->milli, 500);
        assert_int_equal(resource_list_get(&c->resources.limits, "memory")->value, 134217728);
        assert_int_equal(resource_list_get(&c->resources.requests, "cpu")->milli, 250);
        assert_string_equal(resource_list_get(&c->resources.requests, "cpu")->str, "0.25");
        assert_int_equal(resource_list_get(&c->resources.requests, "memory")->value, 67108864);
        assert_null(resource_list_get(&c->resources.requests, "gpu"));
        assert_string_equal(c->termination_message_path, "/tmp/msg");
        assert_int_equal(c->termination_message_policy, TERMINATION_MESSAGE_FALLBACK_TO_LOGS_ON_ERROR);
        assert_true(c->stdin_);
        assert_true(c->stdin_once);
        assert_true(c->tty);

        /* raw: the pod document and the container object as given (livenessProbe kept, no defaults) */
        assert_non_null(p->raw);
        assert_string_equal(json_string_value(json_object_get(p->raw, "kind")), "Pod");
        assert_non_null(c->raw);
        assert_non_null(json_object_get(c->raw, "livenessProbe"));
        assert_null(json_object_get(json_array_get(json_object_get(c->raw, "ports"), 1), "protocol"));
        s = json_dumps(ic->raw, JSON_COMPACT | JSON_SORT_KEYS);
        assert_string_equal(s,
                            "{\"command\":[\"sh\",\"-c\",\"echo hi\"],\"image\":\"busybox:1.36\",\"name\":\"init\"}");
        free(s);

        assert_int_equal(pod_validate(p, NULL), 0);
        pod_free(p);
}

static void test_json_manifest(void **state) {
        static const char json[] =
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"j\",\"namespace\":\"default\"},"
                "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"busybox\",\"resources\":{\"limits\":{\"cpu\":2}}}]}}";
        struct pod *p = parse_one(json);
        assert_string_equal(p->name, "j");
        assert_int_equal(p->spec.containers[0].image_pull_policy, PULL_POLICY_ALWAYS);
        assert_int_equal(resource_list_get(&p->spec.containers[0].resources.limits, "cpu")->value, 2);
        /* requests default to limits */
        assert_string_equal(resource_list_get(&p->spec.containers[0].resources.requests, "cpu")->str, "2");
        assert_int_equal(pod_validate(p, NULL), 0);
        pod_free(p);
}

static void test_pod_list(void **state) {
        static const char yaml[] = "apiVersion: v1\n"
                                   "kind: PodList\n"
                                   "items:\n"
                                   "- metadata: {name: a}\n"
                                   "  spec: {containers: [{name: c, image: x}]}\n"
                                   "- apiVersion: v1\n"
                                   "  kind: Pod\n"
                                   "  metadata: {name: b}\n"
                                   "  spec: {containers: [{name: c, image: y}]}\n"
                                   "---\n"
                                   "apiVersion: v1\n"
                                   "kind: Pod\n"
                                   "metadata: {name: c}\n"
                                   "spec: {containers: [{name: c, image: z}]}\n";
        struct pod_set set = {};
        size_t *docs = NULL;
        ssize_t *items = NULL;
        struct ck_error *err = NULL;

        assert_int_equal(manifest_parse_with_origin(yaml, strlen(yaml), &set, &docs, &items, &err), 0);
        assert_null(err);
        assert_int_equal(set.n, 3);
        assert_string_equal(set.pods[0]->name, "a");
        assert_string_equal(set.pods[1]->name, "b");
        assert_string_equal(set.pods[2]->name, "c");
        assert_int_equal(docs[0], 1);
        assert_int_equal(items[0], 0);
        assert_int_equal(docs[1], 1);
        assert_int_equal(items[1], 1);
        assert_int_equal(docs[2], 2);
        assert_int_equal(items[2], -1);
        free(docs);
        free(items);
        pod_set_done(&set);

        /* an empty list is fine */
        {
                static const char empty[] = "{apiVersion: v1, kind: PodList, items: []}";
                assert_int_equal(manifest_parse(empty, strlen(empty), &set, &err), 0);
        }
        assert_int_equal(set.n, 0);
        pod_set_done(&set);
}

static void expect_manifest_error(const char *yaml, const char *msg) {
        struct pod_set set = { .n = 99 };
        struct ck_error *err = NULL;
        int r = manifest_parse(yaml, strlen(yaml), &set, &err);
        if (r != -EINVAL)
                fail_msg("manifest_parse returned %d for:\n%s", r, yaml);
        assert_int_equal(set.n, 99); /* untouched */
        assert_non_null(err);
        if (!streq(ck_error_message(err), msg))
                fail_msg("error:\n  %s\nwant:\n  %s", ck_error_message(err), msg);
        ck_error_free(err);
}

static void test_type_errors(void **state) {
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: nginx}\n",
                "document 1 (pod \"web\"): spec.containers: Invalid value: \"string\": must be of type array");
        expect_manifest_error("apiVersion: v1\nkind: Pod\nmetadata: {name: 5}\nspec: {containers: []}\n",
                              "document 1: metadata.name: Invalid value: \"integer\": must be of type string");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers:\n  - {name: a, ports: [{containerPort: \"80\"}]}\n",
                "document 1 (pod \"w\"): spec.containers[0].ports[0].containerPort: Invalid value: \"string\": must be of type integer");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers:\n  - {name: a, ports: [{containerPort: 1.5}]}\n",
                "document 1 (pod \"w\"): spec.containers[0].ports[0].containerPort: Invalid value: \"number\": must be of type integer");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec:\n  containers:\n  - {name: a, ports: [{containerPort: 99999999999}]}\n",
                "document 1 (pod \"w\"): spec.containers[0].ports[0].containerPort: Invalid value: 99999999999: must be of type int32");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w, labels: {a: 1}}\nspec: {}\n",
                "document 1 (pod \"w\"): metadata.labels[a]: Invalid value: \"integer\": must be of type string");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec: {hostNetwork: \"yes\", containers: [{command: sleep}]}\n",
                "document 1 (pod \"w\"): spec.containers[0].command: Invalid value: \"string\": must be of type array; "
                "spec.hostNetwork: Invalid value: \"string\": must be of type boolean");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec: {restartPolicy: Sometimes}\n",
                "document 1 (pod \"w\"): spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec: {containers: [{name: a, imagePullPolicy: always}]}\n",
                "document 1 (pod \"w\"): spec.containers[0].imagePullPolicy: Unsupported value: \"always\": supported values: \"Always\", \"IfNotPresent\", \"Never\"");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec: {containers: [{name: a, terminationMessagePolicy: Logs}]}\n",
                "document 1 (pod \"w\"): spec.containers[0].terminationMessagePolicy: Unsupported value: \"Logs\": supported values: \"File\", \"FallbackToLogsOnError\"");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec: {containers: [{name: a, resources: {limits: {cpu: lots}}}]}\n",
                "document 1 (pod \"w\"): spec.containers[0].resources.limits[cpu]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec: {containers: [{name: a, resources: {requests: {memory: 1Gb}}}]}\n",
                "document 1 (pod \"w\"): spec.containers[0].resources.requests[memory]: Invalid value: \"1Gb\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w, creationTimestamp: yesterday}\n",
                "document 1 (pod \"w\"): metadata.creationTimestamp: Invalid value: \"yesterday\": must be an RFC 3339 date-time");
        expect_manifest_error(
                "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: ok}\n- metadata: {name: bad}\n  spec: []\n",
                "document 1 items[1] (pod \"bad\"): spec: Invalid value: \"array\": must be of type object");
}

static void test_document_errors(void **state) {
        expect_manifest_error("kind: Pod\nmetadata: {name: x}\n", "document 1: Object 'apiVersion' is missing");
        expect_manifest_error("apiVersion: v1\nmetadata: {name: x}\n", "document 1: Object 'Kind' is missing");
        expect_manifest_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n---\napiVersion: apps/v1\nkind: Deployment\n",
                "document 2: kind \"Deployment\" of apiVersion \"apps/v1\" is not supported (expected v1 Pod or PodList)");
        expect_manifest_error(
                "apiVersion: v1\nkind: Service\n",
                "document 1: kind \"Service\" of apiVersion \"v1\" is not supported (expected v1 Pod or PodList)");
        expect_manifest_error("- a\n- b\n", "document 1: expected a v1 Pod or PodList object, not a YAML sequence");
        expect_manifest_error("just text\n", "document 1: expected a v1 Pod or PodList object, not a YAML scalar");
        expect_manifest_error("apiVersion: v1\nkind: PodList\nitems: {a: b}\n",
                              "document 1: items: Invalid value: \"object\": must be of type array");
        expect_manifest_error("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [x\n",
                              "line 5:1: did not find expected ',' or ']' (while parsing a flow sequence at line 4:9)");
}

static void test_decode_direct(void **state) {
        struct field_errors errs = {};
        struct pod *p = (struct pod *) 0x1;
        json_t *j;
        char *s;

        /* not an object */
        j = json_string("x");
        assert_int_equal(pod_decode(j, &p, &errs), -EINVAL);
        assert_ptr_equal(p, (struct pod *) 0x1);
        s = field_errors_to_string(&errs);
        assert_string_equal(s, "Invalid value: \"string\": must be of type object");
        free(s);
        field_errors_done(&errs);
        json_decref(j);

        /* nulls mean unset; the caller's object is copied, so changing it later does not reach the pod */
        j = json_pack("{s:{s:s,s:n},s:{s:n,s:[{s:s,s:n}]}}", "metadata", "name", "n", "namespace", "spec", "nodeName",
                      "containers", "name", "c", "image");
        assert_int_equal(pod_decode(j, &p, NULL), 0);
        assert_string_equal(p->name, "n");
        assert_null(p->namespace_);
        assert_null(p->spec.containers[0].image);
        assert_false(p->spec.termination_grace_period_set);
        json_object_set_new(json_object_get(j, "metadata"), "name", json_string("changed"));
        assert_string_equal(json_string_value(json_object_get(json_object_get(p->raw, "metadata"), "name")), "n");
        assert_int_equal(pod_apply_defaults_checked(p), 0);
        assert_int_equal(p->spec.termination_grace_period_seconds, 30);
        assert_string_equal(p->spec.dns_policy, "ClusterFirst");
        assert_string_equal(p->spec.scheduler_name, "default-scheduler");
        assert_int_equal(p->spec.restart_policy, RESTART_POLICY_ALWAYS);
        assert_string_equal(p->spec.containers[0].termination_message_path, "/dev/termination-log");
        assert_int_equal(p->spec.containers[0].termination_message_policy, TERMINATION_MESSAGE_READ_FILE);
        json_decref(j);

        /* references */
        assert_ptr_equal(pod_ref(p), p);
        assert_int_equal(p->n_ref, 2);
        assert_null(pod_free(p));
        assert_int_equal(p->n_ref, 1);
        assert_null(pod_free(p));
        assert_null(pod_free(NULL));
        assert_null(pod_ref(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_full_pod),        cmocka_unit_test(test_json_manifest),
                cmocka_unit_test(test_pod_list),        cmocka_unit_test(test_type_errors),
                cmocka_unit_test(test_document_errors), cmocka_unit_test(test_decode_direct),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
