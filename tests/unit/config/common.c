/* SPDX-License-Identifier: Apache-2.0 */
/* Static pods: UID stability and changes, naming, annotations, all-or-nothing errors, PodList. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "basic/hash.h"
#include "basic/string.h"
#include "basic/strmap.h"
#include "basic/time.h"
#include "config/config.h"

#define NODE "node-1"
#define PATH "/etc/kubernetes/manifests/web.yaml"

static const char web_yaml[] = "apiVersion: v1\n"
                               "kind: Pod\n"
                               "metadata:\n"
                               "  name: web\n"
                               "  labels: {app: web}\n"
                               "spec:\n"
                               "  containers:\n"
                               "  - name: app\n"
                               "    image: nginx:1.25\n"
                               "    ports: [{containerPort: 80}]\n";

/* the same pod: other key order, flow style, JSON quoting, comments */
static const char web_yaml_reordered[] =
        "# the web server\n"
        "spec: {containers: [{ports: [{containerPort: 80}], image: \"nginx:1.25\", name: app}]}\n"
        "kind: Pod\n"
        "metadata: {labels: {\"app\": 'web'}, name: web}\n"
        "apiVersion: v1\n";

static const char web_json[] =
        "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"web\",\"labels\":{\"app\":\"web\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"nginx:1.25\",\"ports\":[{\"containerPort\":80}]}]}}";

static struct pod_set load(const char *text, const char *node, const char *source, const char *id) {
        struct pod_set set = {};
        struct ck_error *err = NULL;
        if (pod_config_static_pods_from_manifest(text, strlen(text), node, source, id, &set, &err) < 0)
                fail_msg("pod_config_static_pods_from_manifest: %s", ck_error_message(err));
        assert_null(err);
        return set;
}

static char *uid_of(const char *text, const char *node, const char *source, const char *id) {
        struct pod_set set = load(text, node, source, id);
        char *uid;
        assert_int_equal(set.n, 1);
        uid = strdup(set.pods[0]->uid);
        pod_set_done(&set);
        return uid;
}

static void expect_error_node(const char *text, const char *node, const char *prefix) {
        struct pod_set set = {};
        struct ck_error *err = NULL;
        assert_int_equal(pod_config_static_pods_from_manifest(text, strlen(text), node, CONFIG_SOURCE_FILE, PATH, &set,
                                                              &err),
                         -EINVAL);
        assert_int_equal(set.n, 0);
        if (!startswith(ck_error_message(err), prefix))
                fail_msg("error %s", ck_error_message(err));
        ck_error_free(err);
}

static void test_naming_and_annotations(void **state) {
        struct pod_set set = load(web_yaml, NODE, CONFIG_SOURCE_FILE, PATH);
        const struct pod *p;
        int64_t t;

        assert_int_equal(set.n, 1);
        p = set.pods[0];
        assert_string_equal(p->name, "web-node-1");
        assert_string_equal(p->namespace_, "default");
        assert_string_equal(p->spec.node_name, NODE);
        assert_int_equal(strlen(p->uid), 32);
        assert_string_equal(strmap_get(&p->annotations, ANNOTATION_CONFIG_HASH), p->uid);
        assert_string_equal(strmap_get(&p->annotations, ANNOTATION_CONFIG_SOURCE), "file");
        assert_int_equal(parse_rfc3339(strmap_get(&p->annotations, ANNOTATION_CONFIG_SEEN), &t), 0);
        assert_true(t > 0);
        assert_string_equal(strmap_get(&p->labels, "app"), "web");
        /* defaults applied */
        assert_int_equal(p->spec.containers[0].image_pull_policy, PULL_POLICY_IF_NOT_PRESENT);
        assert_int_equal(p->spec.termination_grace_period_seconds, 30);
        pod_set_done(&set);

        /* a given namespace and UID are kept */
        set = load("apiVersion: v1\nkind: Pod\nmetadata: {name: x, namespace: kube-system, uid: my-uid}\n"
                   "spec: {containers: [{name: c, image: i}]}\n",
                   "n1", CONFIG_SOURCE_HTTP, "http://example.com/pods");
        p = set.pods[0];
        assert_string_equal(p->name, "x-n1");
        assert_string_equal(p->namespace_, "kube-system");
        assert_string_equal(p->uid, "my-uid");
        assert_string_equal(strmap_get(&p->annotations, ANNOTATION_CONFIG_HASH), "my-uid");
        assert_string_equal(strmap_get(&p->annotations, ANNOTATION_CONFIG_SOURCE), "http");
        pod_set_done(&set);

        /* the pod name gets the node name lowercased (generatePodName); spec.nodeName is the node name as given,
         * so an upper-case node name fails validation, as upstream (whose kubelet lowercases its hostname) */
        expect_error_node(web_yaml, "Node-1",
                          "document 1 (pod \"web\"): spec.nodeName: Invalid value: \"Node-1\": "
                          "a lowercase RFC 1123 subdomain must consist of");
}

static void test_uid_stable(void **state) {
        char *a = uid_of(web_yaml, NODE, CONFIG_SOURCE_FILE, PATH);
        char *b = uid_of(web_yaml, NODE, CONFIG_SOURCE_FILE, PATH);
        char *c = uid_of(web_yaml_reordered, NODE, CONFIG_SOURCE_FILE, PATH);
        char *d = uid_of(web_json, NODE, CONFIG_SOURCE_FILE, PATH);

        assert_string_equal(a, b);
        assert_string_equal(a, c); /* key order, style and comments do not matter */
        assert_string_equal(a, d); /* nor JSON vs YAML */
        free(a);
        free(b);
        free(c);
        free(d);
}

static void test_uid_changes(void **state) {
        char *base = uid_of(web_yaml, NODE, CONFIG_SOURCE_FILE, PATH);
        char *u;
        static const char *const variants[] = {
                /* image */
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web}}\n"
                "spec: {containers: [{name: app, image: 'nginx:1.26', ports: [{containerPort: 80}]}]}\n",
                /* a label */
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web2}}\n"
                "spec: {containers: [{name: app, image: 'nginx:1.25', ports: [{containerPort: 80}]}]}\n",
                /* a port */
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web}}\n"
                "spec: {containers: [{name: app, image: 'nginx:1.25', ports: [{containerPort: 81}]}]}\n",
                /* an added field, even one ckubelet does not decode */
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web}}\n"
                "spec: {containers: [{name: app, image: 'nginx:1.25', ports: [{containerPort: 80}], "
                "livenessProbe: {tcpSocket: {port: 80}}}]}\n",
                /* a type change: "80" vs 80 is a different document */
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web, labels: {app: web}}\n"
                "spec: {containers: [{name: app, image: 'nginx:1.25', ports: [{containerPort: 80}]}], hostNetwork: false}\n",
        };

        for (size_t i = 0; i < ELEMENTSOF(variants); i++) {
                u = uid_of(variants[i], NODE, CONFIG_SOURCE_FILE, PATH);
                if (streq(u, base))
                        fail_msg("variant %zu has the same UID", i);
                free(u);
        }
        /* another node, another path, another source */
        u = uid_of(web_yaml, "node-2", CONFIG_SOURCE_FILE, PATH);
        assert_string_not_equal(u, base);
        free(u);
        u = uid_of(web_yaml, NODE, CONFIG_SOURCE_FILE, "/etc/kubernetes/manifests/other.yaml");
        assert_string_not_equal(u, base);
        free(u);
        u = uid_of(web_yaml, NODE, CONFIG_SOURCE_HTTP, PATH);
        assert_string_not_equal(u, base);
        free(u);
        free(base);
}

static void test_uid_value(void **state) {
        /* pin the hash input: md5(canonical JSON || "host:<node>" || "file:<path>") */
        static const char canon[] =
                "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"labels\":{\"app\":\"web\"},\"name\":\"web\"},"
                "\"spec\":{\"containers\":[{\"image\":\"nginx:1.25\",\"name\":\"app\",\"ports\":[{\"containerPort\":80}]}]}}";
        char *input = NULL, hex[33], *u;

        assert_true(asprintf(&input, "%shost:%sfile:%s", canon, NODE, PATH) > 0);
        assert_int_equal(hash_hex("md5", input, strlen(input), hex, sizeof(hex)), 0);
        u = uid_of(web_yaml, NODE, CONFIG_SOURCE_FILE, PATH);
        assert_string_equal(u, hex);
        free(u);
        free(input);

        assert_true(asprintf(&input, "%surl:%s", canon, "http://h/p") > 0);
        assert_int_equal(hash_hex("md5", input, strlen(input), hex, sizeof(hex)), 0);
        u = uid_of(web_yaml, NODE, CONFIG_SOURCE_HTTP, "http://h/p");
        assert_string_equal(u, hex);
        free(u);
        free(input);
}

static void expect_error(const char *text, int code, const char *msg) {
        struct pod_set set = { .n = 77 };
        struct ck_error *err = NULL;
        int r = pod_config_static_pods_from_manifest(text, strlen(text), NODE, CONFIG_SOURCE_FILE, PATH, &set, &err);
        if (r != code)
                fail_msg("returned %d (%s), want %d", r, strna(ck_error_message(err)), code);
        assert_int_equal(set.n, 77); /* nothing returned */
        assert_non_null(err);
        if (!streq(ck_error_message(err), msg))
                fail_msg("error:\n  %s\nwant:\n  %s", ck_error_message(err), msg);
        ck_error_free(err);
}

static void test_errors(void **state) {
        static const char two_docs_bad_second[] =
                "apiVersion: v1\nkind: Pod\nmetadata: {name: ok}\nspec: {containers: [{name: a, image: x}]}\n"
                "---\n"
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{image: x}]}\n";

        expect_error(two_docs_bad_second, -EINVAL, "document 2 (pod \"web\"): spec.containers[0].name: Required value");
        expect_error("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {}\n", -EINVAL,
                     "document 1 (pod \"web\"): spec.containers: Required value");
        expect_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: Web}\nspec: {containers: [{name: a, image: x}]}\n",
                -EINVAL,
                "document 1 (pod \"Web\"): metadata.name: Invalid value: \"Web-node-1\": a lowercase RFC 1123 subdomain "
                "must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
        expect_error("apiVersion: v1\nkind: Pod\nmetadata: {}\nspec: {containers: [{name: a, image: x}]}\n", -EINVAL,
                     "document 1: metadata.name: Required value: name or generateName is required");
        expect_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: a, image: x, imagePullPolicy: Sometimes}]}\n",
                -EINVAL,
                "document 1 (pod \"web\"): spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": "
                "supported values: \"Always\", \"IfNotPresent\", \"Never\"");
        expect_error(
                "apiVersion: v1\nkind: PodList\nitems:\n- metadata: {name: a}\n  spec: {containers: [{name: a, image: x}]}\n"
                "- metadata: {name: b}\n  spec: {containers: [{name: a, image: x, ports: [{containerPort: 0}]}]}\n",
                -EINVAL, "document 1 items[1] (pod \"b\"): spec.containers[0].ports[0].containerPort: Required value");
        expect_error("a: [1\n", -EINVAL,
                     "line 2:1: did not find expected ',' or ']' (while parsing a flow sequence at line 1:4)");
        expect_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec: {containers: [{name: a, image: x}]}\n---\n"
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec: {containers: [{name: b, image: y}]}\n",
                -EINVAL,
                "document 2 (pod \"w\"): duplicate pod name \"w-node-1\" in namespace \"default\" (also in document 1)");
        expect_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w, uid: u1}\nspec: {containers: [{name: a, image: x}]}\n---\n"
                "apiVersion: v1\nkind: Pod\nmetadata: {name: v, uid: u1}\nspec: {containers: [{name: b, image: y}]}\n",
                -EINVAL, "document 2 (pod \"v\"): duplicate pod UID u1 (also in document 1)");

        /* a UID names the pod's directories: nothing that walks out of them (through --manifest-url too) */
        expect_error("apiVersion: v1\nkind: Pod\nmetadata: {name: w, uid: ../../../../tmp/x}\n"
                     "spec: {containers: [{name: a, image: x}]}\n",
                     -EINVAL,
                     "document 1 (pod \"w\"): metadata.uid: Invalid value: \"../../../../tmp/x\": a pod UID must "
                     "consist of alphanumeric characters, '-', '_' or '.', start with an alphanumeric character and "
                     "be at most 128 characters long");
        expect_error(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: w, uid: ..}\nspec: {containers: [{name: a, image: x}]}\n",
                -EINVAL,
                "document 1 (pod \"w\"): metadata.uid: Invalid value: \"..\": a pod UID must consist of "
                "alphanumeric characters, '-', '_' or '.', start with an alphanumeric character and be at most "
                "128 characters long");
        expect_error("{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"w\", \"uid\": \"a/b\"}, "
                     "\"spec\": {\"containers\": [{\"name\": \"a\", \"image\": \"x\"}]}}",
                     -EINVAL,
                     "document 1 (pod \"w\"): metadata.uid: Invalid value: \"a/b\": a pod UID must consist of "
                     "alphanumeric characters, '-', '_' or '.', start with an alphanumeric character and be at most "
                     "128 characters long");
        {
                /* UUIDs and the static pods' md5 hex are fine */
                struct pod_set set =
                        load("apiVersion: v1\nkind: Pod\nmetadata: {name: w, uid: "
                             "0b6f6f2e-8c3e-4d7a-9c56-3c2f7e2d1a10}\nspec: {containers: [{name: a, image: x}]}\n",
                             NODE, CONFIG_SOURCE_FILE, PATH);
                assert_int_equal(set.n, 1);
                pod_set_done(&set);
        }

        /* same name in different namespaces is fine */
        {
                struct pod_set set = load(
                        "apiVersion: v1\nkind: Pod\nmetadata: {name: w}\nspec: {containers: [{name: a, image: x}]}\n---\n"
                        "apiVersion: v1\nkind: Pod\nmetadata: {name: w, namespace: other}\nspec: {containers: [{name: a, image: x}]}\n",
                        NODE, CONFIG_SOURCE_FILE, PATH);
                assert_int_equal(set.n, 2);
                assert_string_not_equal(set.pods[0]->uid, set.pods[1]->uid);
                pod_set_done(&set);
        }

        /* size cap */
        {
                struct pod_set set = {};
                struct ck_error *err = NULL;
                assert_int_equal(pod_config_static_pods_from_manifest("x", MANIFEST_MAX_SIZE + 1, NODE,
                                                                      CONFIG_SOURCE_FILE, PATH, &set, &err),
                                 -EFBIG);
                assert_non_null(strstr(ck_error_message(err), "too large"));
                ck_error_free(err);
        }
}

static void test_pod_list(void **state) {
        struct pod_set set =
                load("apiVersion: v1\nkind: PodList\nitems:\n"
                     "- metadata: {name: a}\n  spec: {containers: [{name: c, image: x}]}\n"
                     "- metadata: {name: b}\n  spec: {containers: [{name: c, image: x}]}\n"
                     "---\n"
                     "apiVersion: v1\nkind: Pod\nmetadata: {name: c}\nspec: {containers: [{name: c, image: x}]}\n",
                     "n", CONFIG_SOURCE_FILE, PATH);
        assert_int_equal(set.n, 3);
        assert_string_equal(set.pods[0]->name, "a-n");
        assert_string_equal(set.pods[1]->name, "b-n");
        assert_string_equal(set.pods[2]->name, "c-n");
        assert_string_not_equal(set.pods[0]->uid, set.pods[1]->uid);
        pod_set_done(&set);

        /* an empty file is an empty set */
        set = load("", "n", CONFIG_SOURCE_FILE, PATH);
        assert_int_equal(set.n, 0);
        pod_set_done(&set);
}

static void test_apply_defaults_direct(void **state) {
        struct pod *p = pod_new();

        assert_int_equal(pod_config_static_pod_defaults(p, NODE, CONFIG_SOURCE_FILE, PATH), -EINVAL); /* no document */
        assert_null(p->uid);
        assert_int_equal(pod_config_static_pod_defaults(p, "", CONFIG_SOURCE_FILE, PATH), -EINVAL);
        p->uid = strdup("given");
        p->name = strdup("n");
        assert_int_equal(pod_config_static_pod_defaults(p, "NODE", CONFIG_SOURCE_HTTP, "http://x"), 0);
        assert_string_equal(p->uid, "given");
        assert_string_equal(p->name, "n-node");
        assert_string_equal(p->spec.node_name, "NODE");
        assert_string_equal(strmap_get(&p->annotations, ANNOTATION_CONFIG_SOURCE), "http");
        pod_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_naming_and_annotations),
                cmocka_unit_test(test_uid_stable),
                cmocka_unit_test(test_uid_changes),
                cmocka_unit_test(test_uid_value),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_pod_list),
                cmocka_unit_test(test_apply_defaults_direct),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
