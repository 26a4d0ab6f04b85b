/* SPDX-License-Identifier: Apache-2.0 */
/* Container environment: $(VAR) expansion (upstream's expansion_test cases), envFrom/env from every source,
 * the errors upstream gives, command/args expansion, and the validation of valueFrom/envFrom. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "basic/strmap.h"
#include "basic/strv.h"
#include "kuberuntime/config.h"
#include "kuberuntime/env.h"
#include "basic/string.h"
#include "objects/objects.h"

static struct pod *parse_pod(const char *labels, const char *containers) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns1, uid: u-1, %s}\n"
                             "spec:\n  nodeName: node1\n  serviceAccountName: sa1\n  containers:\n%s",
                             labels, containers) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        assert_int_equal(set.n, 1);
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static void expect_expand(const struct strmap *env, const char *in, const char *out) {
        _cleanup_free_ char *s = NULL;
        assert_int_equal(kr_expand(in, env, &s), 0);
        assert_string_equal(s, out);
}

static void test_expand(void **state) {
        struct strmap env = {};
        assert_int_equal(strmap_set(&env, "VAR_A", "A"), 0);
        assert_int_equal(strmap_set(&env, "VAR_B", "B"), 0);
        assert_int_equal(strmap_set(&env, "VAR_C", "C"), 0);
        assert_int_equal(strmap_set(&env, "VAR_REF", "$(VAR_A)"), 0);
        assert_int_equal(strmap_set(&env, "VAR_EMPTY", ""), 0);

        expect_expand(&env, "$(VAR_A)", "A");
        expect_expand(&env, "___$(VAR_B)___", "___B___");
        expect_expand(&env, "$(VAR_A)-$(VAR_A)", "A-A");
        expect_expand(&env, "f000-$$VAR_A", "f000-$VAR_A");
        expect_expand(&env, "foo\\$(VAR_C)bar", "foo\\Cbar");
        expect_expand(&env, "foo\\\\$(VAR_C)bar", "foo\\\\Cbar");
        expect_expand(&env, "$(VAR_A)$(VAR_B)$(VAR_C)", "ABC");
        expect_expand(&env, "$(VAR_REF)", "$(VAR_A)"); /* no recursion */
        expect_expand(&env, "$(VAR_EMPTY)", "");
        expect_expand(&env, "$(UNKNOWN)", "$(UNKNOWN)");
        expect_expand(&env, "$(VAR_A", "$(VAR_A"); /* incomplete reference */
        expect_expand(&env, "$VAR_A", "$VAR_A");   /* not an expression */
        expect_expand(&env, "$", "$");
        expect_expand(&env, "foo$", "foo$");
        expect_expand(&env, "$$$$$$(VAR_A)", "$$$(VAR_A)");
        expect_expand(&env, "$$$$$$$(VAR_A)", "$$$A");
        expect_expand(&env, "$()", "$()");
        expect_expand(&env, "$$(VAR_A)", "$(VAR_A)");
        expect_expand(&env, "", "");
        strmap_done(&env);
}

static const char *get(const struct strmap *m, const char *k) {
        const char *v = strmap_get(m, k);
        if (!v)
                fail_msg("%s is not set", k);
        return v;
}

static void test_env_all_sources(void **state) {
        struct pod_objects *objs = NULL;
        struct kc_build_report report = {};
        struct kc_build_context ctx = { .node_name = "node1",
                                        .node_ip = "10.0.0.1",
                                        .pod_ip = "10.88.0.5",
                                        .alloc_cpu_milli = 4000,
                                        .alloc_memory_bytes = 8LL << 30,
                                        .report = &report };
        struct strmap env = {};
        json_t *cm, *sec;
        struct pod *p;

        assert_int_equal(objects_pod_new(&objs), 0);
        cm = json_pack("{s:{s:s,s:s,s:s,s:s,s:s}}", "data", "LEVEL", "debug", "MODE", "from-cm", "1BAD", "x", "b.c",
                       "y", "data-1", "value-1");
        sec = json_pack("{s:{s:s,s:s}}", "data", "password", "czNjcjN0", "token", "dG9r");
        assert_int_equal(objects_pod_put(objs, "ConfigMap", "ns1", "cfg", cm), 0);
        assert_int_equal(objects_pod_put(objs, "Secret", "ns1", "sec", sec), 0);
        json_decref(cm);
        json_decref(sec);
        ctx.objects = objs;

        p = parse_pod(
                "labels: {app: web}, annotations: {team: blue}",
                "  - name: app\n"
                "    image: busybox\n"
                "    command: [sh, -c, 'echo $(MODE) $(POD_NAME) $$(HOME) $(NOPE)']\n"
                "    args: ['$(LEVEL)']\n"
                "    resources: {limits: {cpu: 1500m, memory: 100Mi}}\n"
                "    envFrom:\n"
                "    - configMapRef: {name: cfg}\n"
                "    - {prefix: S_, secretRef: {name: sec}}\n"
                "    - {prefix: '#@!$_-', secretRef: {name: sec}}\n"
                "    - configMapRef: {name: missing, optional: true}\n"
                "    env:\n"
                "    - {name: MODE, value: plain}\n"
                "    - {name: REF, value: '$(MODE)-$(LEVEL)-$(LATER)-$$(MODE)'}\n"
                "    - {name: LATER, value: x}\n"
                "    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
                "    - {name: POD_NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}\n"
                "    - {name: POD_UID, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}\n"
                "    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}\n"
                "    - {name: SA, valueFrom: {fieldRef: {fieldPath: spec.serviceAccountName}}}\n"
                "    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n"
                "    - {name: POD_IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}\n"
                "    - {name: HOST_IP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}\n"
                "    - {name: APP, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['app']\"}}}\n"
                "    - {name: TEAM, valueFrom: {fieldRef: {fieldPath: \"metadata.annotations['team']\"}}}\n"
                "    - {name: NOLABEL, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['none']\"}}}\n"
                "    - {name: CPU_M, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: 1m}}}\n"
                "    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}\n"
                "    - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}\n"
                "    - {name: MEM_REQ, valueFrom: {resourceFieldRef: {resource: requests.memory}}}\n"
                "    - {name: SIDE_CPU, valueFrom: {resourceFieldRef: {containerName: side, resource: limits.cpu}}}\n"
                "    - {name: SIDE_MEM_G, valueFrom: {resourceFieldRef: {containerName: side, resource: limits.memory, divisor: 1Gi}}}\n"
                "    - {name: SIDE_REQ, valueFrom: {resourceFieldRef: {containerName: side, resource: requests.cpu}}}\n"
                "    - {name: FROM_CM, valueFrom: {configMapKeyRef: {name: cfg, key: LEVEL}}}\n"
                "    - {name: FROM_SECRET, valueFrom: {secretKeyRef: {name: sec, key: password}}}\n"
                "    - {name: OPT_KEY, valueFrom: {configMapKeyRef: {name: cfg, key: nokey, optional: true}}}\n"
                "    - {name: OPT_OBJ, valueFrom: {secretKeyRef: {name: nosuch, key: k, optional: true}}}\n"
                "    - {name: EMPTY}\n"
                "  - {name: side, image: busybox}\n");
        assert_int_equal(kr_make_environment(p, &p->spec.containers[0], &ctx, &env), 0);
        assert_string_equal(get(&env, "LEVEL"), "debug");
        assert_string_equal(get(&env, "MODE"), "plain"); /* env overrides envFrom, in envFrom's place */
        assert_string_equal(env.keys[0], "1BAD");        /* envFrom's keys in sorted order */
        assert_string_equal(env.keys[1], "LEVEL");
        assert_string_equal(env.keys[2], "MODE");
        assert_string_equal(get(&env, "b.c"), "y");
        /* names upstream v1.37 accepts (RelaxedEnvironmentVariableValidation, GA): a dash, a leading digit, any
         * printable ASCII but '=' in the prefix (the conformance specs "Secrets should be consumable via the
         * environment" and "... with various prefixes") */
        assert_string_equal(get(&env, "1BAD"), "x");
        assert_string_equal(get(&env, "data-1"), "value-1");
        assert_string_equal(get(&env, "#@!$_-password"), "s3cr3t");
        assert_string_equal(get(&env, "S_password"), "s3cr3t");
        assert_string_equal(get(&env, "S_token"), "tok");
        assert_string_equal(get(&env, "REF"), "plain-debug-$(LATER)-$(MODE)");
        assert_string_equal(get(&env, "POD_NAME"), "web");
        assert_string_equal(get(&env, "POD_NS"), "ns1");
        assert_string_equal(get(&env, "POD_UID"), "u-1");
        assert_string_equal(get(&env, "NODE"), "node1");
        assert_string_equal(get(&env, "SA"), "sa1");
        assert_string_equal(get(&env, "POD_IP"), "10.88.0.5");
        assert_string_equal(get(&env, "POD_IPS"), "10.88.0.5");
        assert_string_equal(get(&env, "HOST_IP"), "10.0.0.1");
        assert_string_equal(get(&env, "APP"), "web");
        assert_string_equal(get(&env, "TEAM"), "blue");
        assert_string_equal(get(&env, "NOLABEL"), "");
        assert_string_equal(get(&env, "CPU_M"), "1500");
        assert_string_equal(get(&env, "CPU"), "2"); /* ceil(1.5) */
        assert_string_equal(get(&env, "MEM_MI"), "100");
        assert_string_equal(get(&env, "MEM_REQ"), "104857600"); /* requests default to limits */
        assert_string_equal(get(&env, "SIDE_CPU"), "4");        /* no limit: node allocatable */
        assert_string_equal(get(&env, "SIDE_MEM_G"), "8");
        assert_string_equal(get(&env, "SIDE_REQ"), "0");
        assert_string_equal(get(&env, "FROM_CM"), "debug");
        assert_string_equal(get(&env, "FROM_SECRET"), "s3cr3t");
        assert_null(strmap_get(&env, "OPT_KEY"));
        assert_null(strmap_get(&env, "OPT_OBJ"));
        assert_string_equal(get(&env, "EMPTY"), "");
        assert_null(report.error);
        assert_int_equal(strv_length(report.event_reasons), 0);
        strmap_done(&env);
        kc_build_report_done(&report);

        /* the CRI config: envs in order, command and args expanded with the final environment */
        {
                Runtime__V1__ContainerConfig *cfg = NULL;
                assert_int_equal(kr_build_container_config(p, &p->spec.containers[0], 0, "sha256:x", &ctx, &cfg), 0);
                assert_int_equal(cfg->n_command, 3);
                assert_string_equal(cfg->command[2], "echo plain web $(HOME) $(NOPE)");
                assert_int_equal(cfg->n_args, 1);
                assert_string_equal(cfg->args[0], "debug");
                assert_string_equal(cfg->envs[0]->key, "1BAD");
                assert_string_equal(cfg->envs[0]->value, "x");
                pb_free(cfg);
                kc_build_report_done(&report);
        }
        pod_free(p);
        objects_pod_free(objs);
}

static void expect_env_error(struct pod_objects *objs, const char *env_yaml, const char *message) {
        struct kc_build_report report = {};
        struct kc_build_context ctx = { .objects = objs, .report = &report };
        struct strmap env = {};
        _cleanup_free_ char *c = NULL;
        struct pod *p;

        assert_true(asprintf(&c, "  - name: app\n    image: busybox\n%s", env_yaml) > 0);
        p = parse_pod("labels: {}", c);
        assert_true(kr_make_environment(p, &p->spec.containers[0], &ctx, &env) < 0);
        assert_non_null(report.error);
        assert_string_equal(ck_error_message(report.error), message);
        assert_int_equal(env.n, 0);
        kc_build_report_done(&report);
        pod_free(p);
}

static void test_env_errors(void **state) {
        struct pod_objects *objs = NULL;
        json_t *cm = json_pack("{s:{s:s}}", "data", "a", "b");
        json_t *sec = json_pack("{s:{s:s}}", "data", "a", "!!notbase64");

        assert_int_equal(objects_pod_new(&objs), 0);
        assert_int_equal(objects_pod_put(objs, "ConfigMap", "ns1", "cfg", cm), 0);
        assert_int_equal(objects_pod_put(objs, "Secret", "ns1", "bad", sec), 0);
        assert_int_equal(objects_pod_put_error(objs, "Secret", "ns1", "forbidden", -EACCES,
                                               "secrets \"forbidden\" is forbidden: no relationship found"),
                         0);
        json_decref(cm);
        json_decref(sec);

        expect_env_error(objs, "    env: [{name: A, valueFrom: {configMapKeyRef: {name: nosuch, key: k}}}]\n",
                         "configmap \"nosuch\" not found");
        expect_env_error(objs, "    env: [{name: A, valueFrom: {secretKeyRef: {name: nosuch, key: k}}}]\n",
                         "secret \"nosuch\" not found");
        expect_env_error(objs, "    env: [{name: A, valueFrom: {configMapKeyRef: {name: cfg, key: k}}}]\n",
                         "couldn't find key k in ConfigMap ns1/cfg");
        expect_env_error(objs, "    envFrom: [{configMapRef: {name: nosuch}}]\n", "configmap \"nosuch\" not found");
        expect_env_error(objs, "    envFrom: [{secretRef: {name: forbidden, optional: true}}]\n",
                         "secrets \"forbidden\" is forbidden: no relationship found");
        expect_env_error(objs, "    env: [{name: A, valueFrom: {secretKeyRef: {name: bad, key: a}}}]\n",
                         "illegal base64 data in Secret ns1/bad key a");
        expect_env_error(
                objs,
                "    env: [{name: A, valueFrom: {resourceFieldRef: {containerName: nosuch, resource: limits.cpu}}}]\n",
                "container nosuch not found");
        /* no objects at all (standalone): not found */
        expect_env_error(NULL, "    env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}}}]\n",
                         "secret \"s\" not found");
        objects_pod_free(objs);
}

/* ---- validation ---- */

/* Decode (and validate when decoding succeeds): errs gets the decoding or the validation errors. */
static int decode_validate(const char *container_json, struct field_errors *errs) {
        _cleanup_free_ char *doc = NULL;
        struct pod *p = NULL;
        int r;
        json_error_t jerr;
        json_t *j;

        assert_true(
                asprintf(&doc,
                         "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},"
                         "\"spec\":{\"containers\":[%s]}}",
                         container_json) > 0);
        j = json_loads(doc, 0, &jerr);
        if (!j)
                fail_msg("json: %s: %s", jerr.text, doc);
        r = pod_decode(j, &p, errs);
        json_decref(j);
        if (r < 0)
                return r;
        assert_int_equal(pod_apply_defaults_checked(p), 0);
        r = pod_validate(p, errs);
        pod_free(p);
        return r;
}

static void expect_invalid(const char *container_json, const char *field, const char *detail) {
        struct field_errors errs = {};
        bool found = false;

        assert_int_equal(decode_validate(container_json, &errs), -EINVAL);
        for (size_t i = 0; i < errs.n; i++)
                if (streq(errs.items[i].field, field) && streq(errs.items[i].detail, detail))
                        found = true;
        if (!found) {
                for (size_t i = 0; i < errs.n; i++)
                        print_message("  %s: %s\n", errs.items[i].field, errs.items[i].detail);
                fail_msg("no error \"%s: %s\"", field, detail);
        }
        field_errors_done(&errs);
}

static void expect_valid(const char *container_json) {
        struct field_errors errs = {};
        if (decode_validate(container_json, &errs) != 0) {
                for (size_t i = 0; i < errs.n; i++)
                        print_message("  %s: %s\n", errs.items[i].field, errs.items[i].detail);
                fail_msg("invalid: %s", container_json);
        }
        field_errors_done(&errs);
}

#define C(env) "{\"name\":\"c\",\"image\":\"i\"," env "}"

/* getServiceEnvVarMap + envvars.FromServices, and how makeEnvironmentVariables adds them */
static void test_service_env(void **state) {
        json_t *master = json_pack("{s:{s:s, s:s}, s:{s:s, s:[{s:s, s:i, s:s}]}}", "metadata", "name", "kubernetes",
                                   "namespace", "default", "spec", "clusterIP", "10.96.0.1", "ports", "name", "https",
                                   "port", 443, "protocol", "TCP");
        json_t *list = json_pack("[{s:{s:s}, s:{s:s, s:[{s:i}, {s:s, s:i, s:s}]}},"
                                 " {s:{s:s}, s:{s:s, s:[{s:i}]}},"
                                 " {s:{s:s}, s:{s:s, s:[{s:i, s:s}]}}]",
                                 "metadata", "name", "my-web", "spec", "clusterIP", "10.96.5.6", "ports", "port", 80,
                                 "name", "metrics", "port", 9090, "protocol", "UDP", "metadata", "name", "headless",
                                 "spec", "clusterIP", "None", "ports", "port", 53, "metadata", "name", "v6", "spec",
                                 "clusterIP", "fd00::10", "ports", "port", 8080, "protocol", "SCTP");
        static const struct {
                const char *name, *value;
        } want[] = {
                { "KUBERNETES_SERVICE_HOST", "10.96.0.1" },
                { "KUBERNETES_SERVICE_PORT", "443" },
                { "KUBERNETES_SERVICE_PORT_HTTPS", "443" },
                { "KUBERNETES_PORT", "tcp://10.96.0.1:443" },
                { "KUBERNETES_PORT_443_TCP", "tcp://10.96.0.1:443" },
                { "KUBERNETES_PORT_443_TCP_PROTO", "tcp" },
                { "KUBERNETES_PORT_443_TCP_PORT", "443" },
                { "KUBERNETES_PORT_443_TCP_ADDR", "10.96.0.1" },
                { "MY_WEB_SERVICE_HOST", "10.96.5.6" },
                { "MY_WEB_SERVICE_PORT", "80" },
                { "MY_WEB_SERVICE_PORT_METRICS", "9090" },
                { "MY_WEB_PORT", "tcp://10.96.5.6:80" },
                { "MY_WEB_PORT_80_TCP", "tcp://10.96.5.6:80" },
                { "MY_WEB_PORT_80_TCP_PROTO", "tcp" },
                { "MY_WEB_PORT_80_TCP_PORT", "80" },
                { "MY_WEB_PORT_80_TCP_ADDR", "10.96.5.6" },
                { "MY_WEB_PORT_9090_UDP", "udp://10.96.5.6:9090" },
                { "MY_WEB_PORT_9090_UDP_PROTO", "udp" },
                { "MY_WEB_PORT_9090_UDP_PORT", "9090" },
                { "MY_WEB_PORT_9090_UDP_ADDR", "10.96.5.6" },
                { "V6_SERVICE_HOST", "fd00::10" },
                { "V6_PORT", "sctp://[fd00::10]:8080" },
                { "V6_PORT_8080_SCTP_ADDR", "fd00::10" },
        };
        struct strmap env = {};

        assert_int_equal(kr_service_env(master, list, "ns1", true, &env), 0);
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                const char *v = strmap_get(&env, want[i].name);
                if (!streq_ptr(v, want[i].value))
                        fail_msg("%s=%s, want %s", want[i].name, strna(v), want[i].value);
        }
        assert_int_equal(env.n, 8 + 12 + 7); /* nothing for the headless service */
        assert_null(strmap_get(&env, "HEADLESS_SERVICE_HOST"));
        strmap_done(&env);

        /* enableServiceLinks false: only the master service */
        assert_int_equal(kr_service_env(master, list, "ns1", false, &env), 0);
        assert_int_equal(env.n, 8);
        assert_string_equal(strmap_get(&env, "KUBERNETES_SERVICE_HOST"), "10.96.0.1");
        strmap_done(&env);

        /* no API server: nothing */
        assert_int_equal(kr_service_env(NULL, NULL, "ns1", true, &env), 0);
        assert_int_equal(env.n, 0);
        strmap_done(&env);

        /* makeEnvironmentVariables: services last, unless the container defines the name; $(VAR) sees them */
        {
                struct pod_objects *objs = NULL;
                struct kc_build_context ctx = { .node_name = "node1" };
                struct pod *p = parse_pod("", "  - name: app\n    image: busybox\n    env:\n"
                                              "    - {name: URL, value: 'https://$(KUBERNETES_SERVICE_HOST):443'}\n"
                                              "    - {name: MY_WEB_SERVICE_PORT, value: mine}\n");
                assert_int_equal(objects_pod_new(&objs), 0);
                assert_int_equal(objects_pod_put(objs, "Service", "default", "kubernetes", master), 0);
                assert_int_equal(objects_pod_put(objs, "ServiceList", "ns1", "", list), 0);
                ctx.objects = objs;
                assert_int_equal(kr_make_environment(p, &p->spec.containers[0], &ctx, &env), 0);
                assert_string_equal(env.keys[0], "URL");
                assert_string_equal(env.values[0], "https://10.96.0.1:443");
                assert_string_equal(env.keys[1], "MY_WEB_SERVICE_PORT");
                assert_string_equal(env.values[1], "mine");
                assert_string_equal(strmap_get(&env, "MY_WEB_SERVICE_HOST"), "10.96.5.6");
                assert_int_equal(env.n, 2 + 27 - 1); /* MY_WEB_SERVICE_PORT is the container's */
                strmap_done(&env);
                objects_pod_free(objs);
                pod_free(p);
        }
        json_decref(master);
        json_decref(list);
}

static void test_validate(void **state) {
        expect_valid(C(
                "\"env\":[{\"name\":\"A\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.labels['a']\"}}},"
                "{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v1\",\"fieldPath\":\"status.podIP\"}}},"
                "{\"name\":\"C\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"limits.memory\",\"divisor\":\"1Mi\"}}},"
                "{\"name\":\"D\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"requests.cpu\",\"divisor\":\"0.001\"}}},"
                "{\"name\":\"E\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"k.1\",\"optional\":true}}}],"
                "\"envFrom\":[{\"prefix\":\"P_\",\"configMapRef\":{\"name\":\"cm\"}},{\"secretRef\":{\"name\":\"s\"}}]"));
        expect_invalid(C("\"env\":[{\"name\":\"A\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"metadata.labels\"}}}]"),
                       "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath",
                       "Unsupported value: \"metadata.labels\": supported values: \"metadata.name\", "
                       "\"metadata.namespace\", \"metadata.uid\", \"spec.nodeName\", \"spec.serviceAccountName\", "
                       "\"status.hostIP\", \"status.hostIPs\", \"status.podIP\", \"status.podIPs\"");
        expect_invalid(
                C("\"env\":[{\"name\":\"A\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.bogus\"}}}]"),
                "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath",
                "Invalid value: \"spec.bogus\": error converting fieldPath: field label not supported: spec.bogus");
        expect_invalid(
                C("\"env\":[{\"name\":\"A\",\"valueFrom\":{\"fieldRef\":{\"apiVersion\":\"v2\",\"fieldPath\":\"metadata.name\"}}}]"),
                "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath",
                "Invalid value: \"metadata.name\": error converting fieldPath: unsupported pod version: v2");
        expect_invalid(C("\"env\":[{\"name\":\"A\",\"valueFrom\":{\"fieldRef\":{}}}]"),
                       "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath", "Required value");
        expect_invalid(
                C("\"env\":[{\"name\":\"A\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"limits.foo\"}}}]"),
                "spec.containers[0].env[0].valueFrom.resourceFieldRef.resource",
                "Unsupported value: \"limits.foo\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", "
                "\"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"");
        expect_invalid(
                C("\"env\":[{\"name\":\"A\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"limits.cpu\",\"divisor\":\"2\"}}}]"),
                "spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor",
                "Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource");
        expect_invalid(
                C("\"env\":[{\"name\":\"A\",\"valueFrom\":{\"resourceFieldRef\":{\"resource\":\"limits.memory\",\"divisor\":\"3Mi\"}}}]"),
                "spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor",
                "Invalid value: \"limits.memory\": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, "
                "1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource");
        expect_invalid(
                C("\"env\":[{\"name\":\"A\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"a/b\"}}}]"),
                "spec.containers[0].env[0].valueFrom.configMapKeyRef.key",
                "Invalid value: \"a/b\": a valid config key must consist of alphanumeric characters, '-', '_' "
                "or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                "'[-._a-zA-Z0-9]+')");
        expect_invalid(C("\"env\":[{\"name\":\"A\",\"valueFrom\":{\"configMapKeyRef\":{\"name\":\"cm\",\"key\":\"k\"},"
                         "\"secretKeyRef\":{\"name\":\"s\",\"key\":\"k\"}}}]"),
                       "spec.containers[0].env[0].valueFrom",
                       "Invalid value: \"\": may not have more than one field specified at a time");
        expect_invalid(C("\"env\":[{\"name\":\"A\",\"valueFrom\":{\"fieldRef\":\"x\"}}]"),
                       "spec.containers[0].env[0].valueFrom.fieldRef",
                       "Invalid value: \"string\": must be of type object");
        expect_valid(C("\"env\":[{\"name\":\"1-a.b$#\",\"value\":\"v\"}],"
                       "\"envFrom\":[{\"prefix\":\"1-$_\",\"configMapRef\":{\"name\":\"cm\"}}]"));
        expect_invalid(C("\"envFrom\":[{\"prefix\":\"x=\",\"configMapRef\":{\"name\":\"cm\"}}]"),
                       "spec.containers[0].envFrom[0].prefix",
                       "Invalid value: \"x=\": a valid environment variable name must consist only of printable "
                       "ASCII characters other than '='");
        expect_invalid(C("\"env\":[{\"name\":\"a\\tb\",\"value\":\"v\"}]"), "spec.containers[0].env[0].name",
                       "Invalid value: \"a\\tb\": a valid environment variable name must consist only of printable "
                       "ASCII characters other than '='");
        expect_invalid(C("\"envFrom\":[{\"prefix\":\"x\"}]"), "spec.containers[0].envFrom",
                       "Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`");
        expect_invalid(C("\"envFrom\":[{\"configMapRef\":{\"name\":\"a\"},\"secretRef\":{\"name\":\"b\"}}]"),
                       "spec.containers[0].envFrom",
                       "Invalid value: \"\": may not have more than one field specified at a time");
        expect_invalid(C("\"envFrom\":[{\"secretRef\":{}}]"), "spec.containers[0].envFrom[0].secretRef.name",
                       "Required value");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_expand),     cmocka_unit_test(test_env_all_sources),
                cmocka_unit_test(test_env_errors), cmocka_unit_test(test_service_env),
                cmocka_unit_test(test_validate),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
