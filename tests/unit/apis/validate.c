/* SPDX-License-Identifier: Apache-2.0 */
/* pod_validate: each invalid case asserts the exact field path and the start of the apiserver's message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/apis-internal.h"
#include "apis/manifest.h"
#include "basic/string.h"
#include "basic/strv.h"

#define META "{name: web, namespace: default}"
#define SPEC "{containers: [{name: app, image: nginx}]}"

static struct pod *parse(const char *meta, const char *spec) {
        struct pod_set set = {};
        char *yaml = NULL;
        struct ck_error *err = NULL;
        struct pod *p;

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: %s\nspec: %s\n", meta, spec) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest_parse: %s\n%s", ck_error_message(err), yaml);
        free(yaml);
        assert_int_equal(set.n, 1);
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static void dump(const struct field_errors *e) {
        for (size_t i = 0; i < e->n; i++)
                print_message("  %s: %s\n", e->items[i].field, e->items[i].detail);
}

/* The pod must be invalid with (at least) an error at exactly <field> whose detail starts with <detail>. */
static void expect_invalid(const char *meta, const char *spec, const char *field, const char *detail) {
        struct field_errors errs = {};
        struct pod *p = parse(meta, spec);
        bool found = false;

        assert_int_equal(pod_validate(p, &errs), -EINVAL);
        for (size_t i = 0; i < errs.n; i++)
                if (streq(errs.items[i].field, field) && startswith(errs.items[i].detail, detail))
                        found = true;
        if (!found) {
                print_message("metadata: %s\nspec: %s\nerrors:\n", meta, spec);
                dump(&errs);
                fail_msg("no error \"%s: %s...\"", field, detail);
        }
        field_errors_done(&errs);
        pod_free(p);
}

static void expect_valid(const char *meta, const char *spec) {
        struct field_errors errs = {};
        struct pod *p = parse(meta, spec);
        if (pod_validate(p, &errs) != 0) {
                print_message("metadata: %s\nspec: %s\nerrors:\n", meta, spec);
                dump(&errs);
                fail_msg("unexpectedly invalid");
        }
        field_errors_done(&errs);
        pod_free(p);
}

static void test_valid(void **state) {
        expect_valid(META, SPEC);
        expect_valid(
                "{name: a.b-c, namespace: kube-system, labels: {app.kubernetes.io/name: x, empty: ''}, "
                "annotations: {Example.com/Some_Key: anything at all}}",
                "{restartPolicy: Never, terminationGracePeriodSeconds: 0, activeDeadlineSeconds: 1, "
                "hostname: h, subdomain: s, nodeName: node.example.com, serviceAccountName: sa, dnsPolicy: None, "
                "dnsConfig: {nameservers: [1.1.1.1]}, "
                "initContainers: [{name: init, image: busybox}], "
                "containers: [{name: app, image: nginx, ports: [{name: http, containerPort: 80, hostPort: 8080}, "
                "{name: metrics, containerPort: 9090}], env: [{name: my.env-name, value: x}, "
                "{name: FROM, valueFrom: {secretKeyRef: {name: s, key: k}}}], "
                "resources: {limits: {cpu: '1', memory: 1Gi, example.com/gpu: 2}, requests: {cpu: 500m, example.com/gpu: 2}}}, "
                "{name: side, image: 'busybox:1.36', ports: [{containerPort: 80, hostPort: 8080, protocol: UDP}]}]}");
}

static void test_metadata(void **state) {
        expect_invalid("{name: Foo, namespace: default}", SPEC, "metadata.name",
                       "Invalid value: \"Foo\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                       "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
                       "'example.com', regex used for validation is "
                       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
        expect_invalid("{namespace: default}", SPEC, "metadata.name",
                       "Required value: name or generateName is required");
        expect_invalid("{name: web-, namespace: default}", SPEC, "metadata.name",
                       "Invalid value: \"web-\": a lowercase RFC 1123 subdomain");
        {
                char meta[400];
                char name[300];
                memset(name, 'a', 254);
                name[254] = '\0';
                snprintf(meta, sizeof(meta), "{name: %s, namespace: default}", name);
                expect_invalid(meta, SPEC, "metadata.name", "Invalid value: \"aaaa");
                struct field_errors errs = {};
                struct pod *p = parse(meta, SPEC);
                assert_int_equal(pod_validate(p, &errs), -EINVAL);
                assert_string_equal(errs.items[0].detail + strlen(errs.items[0].detail) -
                                            strlen("must be no more than 253 characters"),
                                    "must be no more than 253 characters");
                field_errors_done(&errs);
                pod_free(p);
        }
        expect_invalid("{name: web}", SPEC, "metadata.namespace", "Required value");
        expect_invalid("{name: web, namespace: Prod_1}", SPEC, "metadata.namespace",
                       "Invalid value: \"Prod_1\": a lowercase RFC 1123 label must consist of lower case alphanumeric "
                       "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
                       "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
        expect_invalid("{name: web, namespace: default, generateName: Bad-}", SPEC, "metadata.generateName",
                       "Invalid value: \"Bad-\": a lowercase RFC 1123 subdomain");
        expect_invalid(
                "{name: web, namespace: default, labels: {'bad key': x}}", SPEC, "metadata.labels",
                "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc'");
        expect_invalid("{name: web, namespace: default, labels: {'/x': y}}", SPEC, "metadata.labels",
                       "Invalid value: \"/x\": prefix part must be non-empty");
        expect_invalid(
                "{name: web, namespace: default, labels: {app: -x}}", SPEC, "metadata.labels",
                "Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters");
        expect_invalid("{name: web, namespace: default, annotations: {a/b/c: x}}", SPEC, "metadata.annotations",
                       "Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric characters");
        expect_invalid("{name: web, namespace: default, annotations: {kubernetes.io/config.mirror: x}}", SPEC,
                       "metadata.annotations[kubernetes.io/config.mirror]",
                       "Invalid value: \"x\": must set spec.nodeName if mirror pod annotation is set");
}

static void test_containers(void **state) {
        expect_invalid(META, "{}", "spec.containers", "Required value");
        expect_invalid(META, "{containers: []}", "spec.containers", "Required value");
        expect_invalid(META, "{containers: [{image: nginx}]}", "spec.containers[0].name", "Required value");
        expect_invalid(META, "{containers: [{name: App, image: nginx}]}", "spec.containers[0].name",
                       "Invalid value: \"App\": a lowercase RFC 1123 label must consist of");
        expect_invalid(META, "{containers: [{name: a.b, image: nginx}]}", "spec.containers[0].name",
                       "Invalid value: \"a.b\": must not contain dots");
        expect_invalid(META, "{containers: [{name: app, image: nginx}, {name: app, image: redis}]}",
                       "spec.containers[1].name", "Duplicate value: \"app\"");
        expect_invalid(META, "{initContainers: [{name: app, image: x}], containers: [{name: app, image: nginx}]}",
                       "spec.initContainers[0].name", "Duplicate value: \"app\"");
        expect_invalid(
                META,
                "{initContainers: [{name: i, image: x}, {name: i, image: x}], containers: [{name: app, image: nginx}]}",
                "spec.initContainers[1].name", "Duplicate value: \"i\"");
        expect_invalid(META, "{containers: [{name: app}]}", "spec.containers[0].image", "Required value");
        expect_invalid(META, "{initContainers: [{name: i}], containers: [{name: app, image: x}]}",
                       "spec.initContainers[0].image", "Required value");
        expect_invalid(META, "{containers: [{name: app, image: ' nginx'}]}", "spec.containers[0].image",
                       "Invalid value: \" nginx\": must not have leading or trailing whitespace");
}

static void test_ports(void **state) {
        expect_invalid(META, "{containers: [{name: app, image: x, ports: [{name: http}]}]}",
                       "spec.containers[0].ports[0].containerPort", "Required value");
        expect_invalid(META, "{containers: [{name: app, image: x, ports: [{containerPort: 70000}]}]}",
                       "spec.containers[0].ports[0].containerPort",
                       "Invalid value: 70000: must be between 1 and 65535, inclusive");
        expect_invalid(META, "{containers: [{name: app, image: x, ports: [{containerPort: -5}]}]}",
                       "spec.containers[0].ports[0].containerPort",
                       "Invalid value: -5: must be between 1 and 65535, inclusive");
        expect_invalid(META, "{containers: [{name: app, image: x, ports: [{containerPort: 80, hostPort: 65536}]}]}",
                       "spec.containers[0].ports[0].hostPort",
                       "Invalid value: 65536: must be between 1 and 65535, inclusive");
        expect_invalid(
                META, "{containers: [{name: app, image: x, ports: [{name: HTTP, containerPort: 80}]}]}",
                "spec.containers[0].ports[0].name",
                "Invalid value: \"HTTP\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
        expect_invalid(META, "{containers: [{name: app, image: x, ports: [{name: '8080', containerPort: 80}]}]}",
                       "spec.containers[0].ports[0].name",
                       "Invalid value: \"8080\": must contain at least one letter (a-z)");
        expect_invalid(META, "{containers: [{name: app, image: x, ports: [{name: a--b, containerPort: 80}]}]}",
                       "spec.containers[0].ports[0].name",
                       "Invalid value: \"a--b\": must not contain consecutive hyphens");
        expect_invalid(META, "{containers: [{name: app, image: x, ports: [{name: -ab, containerPort: 80}]}]}",
                       "spec.containers[0].ports[0].name",
                       "Invalid value: \"-ab\": must not begin or end with a hyphen");
        expect_invalid(META,
                       "{containers: [{name: app, image: x, ports: [{name: this-is-too-long, containerPort: 80}]}]}",
                       "spec.containers[0].ports[0].name",
                       "Invalid value: \"this-is-too-long\": must be no more than 15 characters");
        expect_invalid(
                META,
                "{containers: [{name: app, image: x, ports: [{name: http, containerPort: 80}, {name: http, containerPort: 81}]}]}",
                "spec.containers[0].ports[1].name", "Duplicate value: \"http\"");
        expect_invalid(META, "{containers: [{name: app, image: x, ports: [{containerPort: 80, protocol: ICMP}]}]}",
                       "spec.containers[0].ports[0].protocol",
                       "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"");
        expect_invalid(META,
                       "{containers: [{name: a, image: x, ports: [{containerPort: 80, hostPort: 8080}]}, "
                       "{name: b, image: x, ports: [{containerPort: 81, hostPort: 8080}]}]}",
                       "spec.containers[1].ports[0].hostPort", "Duplicate value: \"TCP//8080\"");
        expect_invalid(
                META,
                "{hostNetwork: true, containers: [{name: a, image: x, ports: [{containerPort: 80, hostPort: 8081}]}]}",
                "spec.containers[0].ports[0].hostPort",
                "Invalid value: 8081: must match `containerPort` when `hostNetwork` is true");
        /* same host port with different protocols is fine; init containers are checked one by one */
        expect_valid(META, "{initContainers: [{name: i, image: x, ports: [{containerPort: 80, hostPort: 80}]}], "
                           "containers: [{name: a, image: x, ports: [{containerPort: 80, hostPort: 80}, "
                           "{containerPort: 80, hostPort: 80, protocol: UDP}]}]}");
}

static void test_env(void **state) {
        /* IsRelaxedEnvVarName (RelaxedEnvironmentVariableValidation, GA and locked on since v1.34): any printable
         * ASCII but '=' */
        expect_valid(META, "{containers: [{name: app, image: x, env: [{name: 1BAD, value: x}, {name: '..', value: x}, "
                           "{name: '#@!$_-a', value: x}]}]}");
        expect_invalid(META, "{containers: [{name: app, image: x, env: [{name: 'A=B'}]}]}",
                       "spec.containers[0].env[0].name",
                       "Invalid value: \"A=B\": a valid environment variable name must consist only of printable "
                       "ASCII characters other than '='");
        expect_invalid(META, "{containers: [{name: app, image: x, env: [{value: x}]}]}",
                       "spec.containers[0].env[0].name", "Required value");
        expect_invalid(
                META,
                "{containers: [{name: app, image: x, env: [{name: A, value: x, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]}]}",
                "spec.containers[0].env[0].valueFrom",
                "Invalid value: \"\": may not be specified when `value` is not empty");
        expect_invalid(META, "{containers: [{name: app, image: x, env: [{name: A, valueFrom: {}}]}]}",
                       "spec.containers[0].env[0].valueFrom",
                       "Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, "
                       "`secretKeyRef` or `fileKeyRef`");
        expect_invalid(META,
                       "{containers: [{name: app, image: x, env: [{name: A, valueFrom: {secretKeyRef: {name: s}}}]}]}",
                       "spec.containers[0].env[0].valueFrom.secretKeyRef.key", "Required value");
}

/* env[].valueFrom.fileKeyRef (validateFileKeySelector, validateFileKeyRefVolumes) */
#define FK_VOLS "volumes: [{name: data, emptyDir: {}}, {name: host, hostPath: {path: /tmp}}]"
static void test_env_file_key_ref(void **state) {
        expect_valid(META, "{" FK_VOLS ", initContainers: [{name: i, image: x, env: [{name: A, valueFrom: {fileKeyRef: "
                           "{volumeName: data, path: config.env, key: A}}}]}], containers: [{name: app, image: x, "
                           "env: [{name: B, valueFrom: {fileKeyRef: {volumeName: data, path: /sub/./b.env, key: "
                           "'1.b-c', optional: true}}}]}]}");
        expect_invalid(META,
                       "{" FK_VOLS ", containers: [{name: app, image: x, env: [{name: A, valueFrom: {fileKeyRef: "
                       "{volumeName: data, path: config.env}}}]}]}",
                       "spec.containers[0].env[0].valueFrom.fileKeyRef.key", "Required value");
        expect_invalid(META,
                       "{" FK_VOLS ", containers: [{name: app, image: x, env: [{name: A, valueFrom: {fileKeyRef: "
                       "{volumeName: data, path: config.env, key: 'A=B'}}}]}]}",
                       "spec.containers[0].env[0].valueFrom.fileKeyRef.key",
                       "Invalid value: \"A=B\": a valid environment variable name must consist only of printable "
                       "ASCII characters other than '='");
        expect_invalid(META,
                       "{" FK_VOLS ", containers: [{name: app, image: x, env: [{name: A, valueFrom: {fileKeyRef: "
                       "{path: config.env, key: A}}}]}]}",
                       "spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName", "Required value");
        expect_invalid(META,
                       "{" FK_VOLS ", containers: [{name: app, image: x, env: [{name: A, valueFrom: {fileKeyRef: "
                       "{volumeName: Data_1, path: config.env, key: A}}}]}]}",
                       "spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName",
                       "Invalid value: \"Data_1\": a lowercase RFC 1123 label must consist of");
        expect_invalid(META,
                       "{" FK_VOLS ", containers: [{name: app, image: x, env: [{name: A, valueFrom: {fileKeyRef: "
                       "{volumeName: data, key: A}}}]}]}",
                       "spec.containers[0].env[0].valueFrom.fileKeyRef.path", "Required value");
        expect_invalid(META,
                       "{" FK_VOLS ", containers: [{name: app, image: x, env: [{name: A, valueFrom: {fileKeyRef: "
                       "{volumeName: data, path: a/../../b, key: A}}}]}]}",
                       "spec.containers[0].env[0].valueFrom.fileKeyRef.path",
                       "Invalid value: \"a/../../b\": must not contain '..'");
        /* ".." only as a whole component */
        expect_valid(META, "{" FK_VOLS ", containers: [{name: app, image: x, env: [{name: A, valueFrom: {fileKeyRef: "
                           "{volumeName: data, path: a..b/..c, key: A}}}]}]}");
        /* the volume: one of the pod's, an emptyDir */
        expect_invalid(META,
                       "{" FK_VOLS ", containers: [{name: app, image: x, env: [{name: A, valueFrom: {fileKeyRef: "
                       "{volumeName: nope, path: config.env, key: A}}}]}]}",
                       "spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName", "Not found: \"nope\"");
        expect_invalid(META,
                       "{" FK_VOLS ", initContainers: [{name: i, image: x, env: [{name: Z, value: z}, {name: A, "
                       "valueFrom: {fileKeyRef: {volumeName: host, path: config.env, key: A}}}]}], containers: "
                       "[{name: app, image: x}]}",
                       "spec.initContainers[0].env[1].valueFrom.fileKeyRef.volumeName",
                       "Invalid value: \"host\": referenced volume must be of type emptyDir");
        /* one source only, and no value beside it */
        expect_invalid(META,
                       "{" FK_VOLS ", containers: [{name: app, image: x, env: [{name: A, valueFrom: {fileKeyRef: "
                       "{volumeName: data, path: c, key: A}, secretKeyRef: {name: s, key: k}}}]}]}",
                       "spec.containers[0].env[0].valueFrom",
                       "Invalid value: \"\": may not have more than one field specified at a time");
        expect_invalid(META,
                       "{" FK_VOLS ", containers: [{name: app, image: x, env: [{name: A, value: v, valueFrom: "
                       "{fileKeyRef: {volumeName: data, path: c, key: A}}}]}]}",
                       "spec.containers[0].env[0].valueFrom",
                       "Invalid value: \"\": may not be specified when `value` is not empty");
}

static void test_resources(void **state) {
        expect_invalid(META,
                       "{containers: [{name: app, image: x, resources: {limits: {cpu: '1'}, requests: {cpu: '2'}}}]}",
                       "spec.containers[0].resources.requests",
                       "Invalid value: \"2\": must be less than or equal to cpu limit of 1");
        expect_invalid(
                META,
                "{containers: [{name: app, image: x, resources: {limits: {memory: 0.5Gi}, requests: {memory: 1Gi}}}]}",
                "spec.containers[0].resources.requests",
                "Invalid value: \"1Gi\": must be less than or equal to memory limit of 512Mi");
        expect_invalid(META,
                       "{containers: [{name: app, image: x, resources: {limits: {cpu: 250m}, requests: {cpu: 0.5}}}]}",
                       "spec.containers[0].resources.requests",
                       "Invalid value: \"500m\": must be less than or equal to cpu limit of 250m");
        expect_invalid(META, "{containers: [{name: app, image: x, resources: {limits: {memory: '-1'}}}]}",
                       "spec.containers[0].resources.limits[memory]",
                       "Invalid value: \"-1\": must be greater than or equal to 0");
        expect_invalid(META, "{containers: [{name: app, image: x, resources: {requests: {foo: '1'}}}]}",
                       "spec.containers[0].resources.requests[foo]",
                       "Invalid value: \"foo\": must be a standard resource type or fully qualified");
        expect_invalid(META, "{containers: [{name: app, image: x, resources: {requests: {pods: '1'}}}]}",
                       "spec.containers[0].resources.requests[pods]",
                       "Invalid value: \"pods\": must be a standard resource for containers");
        expect_invalid(
                META,
                "{containers: [{name: app, image: x, resources: {limits: {example.com/gpu: 2}, requests: {example.com/gpu: 1}}}]}",
                "spec.containers[0].resources.requests",
                "Invalid value: \"1\": must be equal to example.com/gpu limit of 2");
        expect_invalid(META, "{containers: [{name: app, image: x, resources: {limits: {example.com/gpu: 500m}}}]}",
                       "spec.containers[0].resources.limits[example.com/gpu]",
                       "Invalid value: \"500m\": must be an integer");
        /* requests default to limits, so a request alone for an extended resource needs its limit */
        expect_invalid(META, "{containers: [{name: app, image: x, resources: {requests: {example.com/gpu: 1}}}]}",
                       "spec.containers[0].resources.limits",
                       "Required value: Limit must be set for non overcommitable resources");
}

/* validatePodResources, validatePodResourceConsistency (upstream's TestValidatePodResourceConsistency and
 * TestValidatePodResourceNames cases) */
static void test_pod_level_resources(void **state) {
        /* aggregate container requests below or equal to the pod's */
        expect_valid(META, "{resources: {requests: {cpu: 10, memory: 10Mi}}, containers: ["
                           "{name: a, image: x, resources: {requests: {cpu: 5, memory: 5Mi}}},"
                           "{name: b, image: x, resources: {requests: {cpu: 4, memory: 3Mi}}}]}");
        expect_valid(META, "{resources: {requests: {cpu: 10, memory: 10Mi}}, containers: ["
                           "{name: a, image: x, resources: {requests: {cpu: 5, memory: 5Mi}}},"
                           "{name: b, image: x, resources: {requests: {cpu: 5, memory: 5Mi}}}]}");
        /* greater: one error per resource */
        expect_invalid(META,
                       "{resources: {requests: {cpu: 10, memory: 10Mi}}, containers: ["
                       "{name: a, image: x, resources: {requests: {cpu: 6, memory: 5Mi}}},"
                       "{name: b, image: x, resources: {requests: {cpu: 8, memory: 7Mi}}}]}",
                       "spec.resources.requests[cpu]",
                       "Invalid value: \"10\": must be greater than or equal to aggregate container requests of 14");
        expect_invalid(META,
                       "{resources: {requests: {cpu: 10, memory: 10Mi}}, containers: ["
                       "{name: a, image: x, resources: {requests: {cpu: 6, memory: 5Mi}}},"
                       "{name: b, image: x, resources: {requests: {cpu: 8, memory: 7Mi}}}]}",
                       "spec.resources.requests[memory]",
                       "Invalid value: \"10Mi\": must be greater than or equal to aggregate container requests of "
                       "12Mi");
        /* a container's request defaults to its limit; cpu in millicores */
        expect_invalid(META,
                       "{resources: {requests: {cpu: 500m}}, containers: ["
                       "{name: a, image: x, resources: {limits: {cpu: 300m}}},"
                       "{name: b, image: x, resources: {requests: {cpu: 250m}}}]}",
                       "spec.resources.requests[cpu]",
                       "Invalid value: \"500m\": must be greater than or equal to aggregate container requests of "
                       "550m");
        /* a sidecar counts with the app containers; an init container alone with the sidecars before it */
        expect_invalid(META,
                       "{resources: {requests: {cpu: 1}}, initContainers: ["
                       "{name: s, image: x, restartPolicy: Always, resources: {requests: {cpu: 600m}}}], containers: ["
                       "{name: a, image: x, resources: {requests: {cpu: 500m}}}]}",
                       "spec.resources.requests[cpu]",
                       "Invalid value: \"1\": must be greater than or equal to aggregate container requests of 1100m");
        expect_valid(META, "{resources: {requests: {cpu: 1}}, initContainers: ["
                           "{name: i, image: x, resources: {requests: {cpu: 1}}}], containers: ["
                           "{name: a, image: x, resources: {requests: {cpu: 500m}}}]}");
        /* resources unsupported at pod level are left to the containers */
        expect_valid(META,
                     "{resources: {requests: {cpu: 10, memory: 10Mi}}, containers: ["
                     "{name: a, image: x, resources: {requests: {cpu: 6, memory: 5Mi, ephemeral-storage: 10Gi}}},"
                     "{name: b, image: x, resources: {requests: {cpu: 4, memory: 3Mi, ephemeral-storage: 5Gi}}}]}");
        /* each container's limit at most the pod's */
        expect_valid(META, "{resources: {limits: {cpu: 10, memory: 10Mi}}, containers: ["
                           "{name: a, image: x, resources: {limits: {cpu: 5, memory: 5Mi}}},"
                           "{name: b, image: x, resources: {limits: {cpu: 10, memory: 10Mi}}}]}");
        expect_invalid(META,
                       "{resources: {limits: {cpu: 10, memory: 10Mi}}, containers: ["
                       "{name: a, image: x, resources: {limits: {cpu: 5, memory: 5Mi}}},"
                       "{name: b, image: x, resources: {limits: {cpu: 11, memory: 10Mi}}}]}",
                       "spec.resources.containers[1][cpu].limits",
                       "Invalid value: \"11\": must be less than or equal to pod limits of 10");
        /* the pod's hugepages limit at least the aggregate of the containers' */
        expect_valid(META, "{resources: {limits: {cpu: 10, memory: 10Mi, hugepages-2Mi: 10Mi}}, containers: ["
                           "{name: a, image: x, resources: {limits: {cpu: 5, memory: 5Mi, hugepages-2Mi: 4Mi}}},"
                           "{name: b, image: x, resources: {limits: {cpu: 4, memory: 3Mi, hugepages-2Mi: 4Mi}}}]}");
        expect_invalid(META,
                       "{resources: {limits: {cpu: 10, memory: 10Mi, hugepages-2Mi: 6Mi}}, containers: ["
                       "{name: a, image: x, resources: {limits: {cpu: 5, memory: 5Mi, hugepages-2Mi: 4Mi}}},"
                       "{name: b, image: x, resources: {limits: {cpu: 4, memory: 3Mi, hugepages-2Mi: 4Mi}}}]}",
                       "spec.resources.limits[hugepages-2Mi]",
                       "Invalid value: \"6Mi\": must be greater than or equal to aggregate container limits of 8Mi");
        /* requests at most the limits */
        expect_invalid(META, "{resources: {limits: {cpu: 1}, requests: {cpu: 2}}, containers: [{name: a, image: x}]}",
                       "spec.resources.requests", "Invalid value: \"2\": must be less than or equal to cpu limit of 1");
        expect_valid(META, "{resources: {limits: {cpu: 1, memory: 1Gi}, requests: {cpu: 500m, memory: 100Mi}}, "
                           "containers: [{name: a, image: x}]}");
        /* only cpu, memory and hugepages */
        expect_invalid(META, "{resources: {requests: {ephemeral-storage: 1Gi}}, containers: [{name: a, image: x}]}",
                       "spec.resources.requests[ephemeral-storage]",
                       "Unsupported value: \"ephemeral-storage\": supported values: \"cpu\", \"hugepages-\", "
                       "\"memory\"");
        expect_invalid(META, "{resources: {limits: {example.com/gpu: 1}}, containers: [{name: a, image: x}]}",
                       "spec.resources.limits[example.com/gpu]",
                       "Unsupported value: \"example.com/gpu\": supported values: \"cpu\", \"hugepages-\", "
                       "\"memory\"");
        expect_invalid(META, "{resources: {limits: {foo: 1}}, containers: [{name: a, image: x}]}",
                       "spec.resources.limits[foo]",
                       "Invalid value: \"foo\": must be a standard resource type or fully qualified");
        expect_invalid(META, "{resources: {limits: {hugepages-2Mi: 2Mi}}, containers: [{name: a, image: x}]}",
                       "spec.resources", "Forbidden: HugePages require cpu or memory");
        expect_invalid(META, "{resources: {claims: [{name: c}]}, containers: [{name: a, image: x}]}",
                       "spec.resources.claims", "Forbidden: claims may not be set for Resources at pod-level");
}

static void test_spec_fields(void **state) {
        expect_invalid(META, "{terminationGracePeriodSeconds: -1, containers: [{name: app, image: x}]}",
                       "spec.terminationGracePeriodSeconds", "Invalid value: -1: must be greater than or equal to 0");
        expect_invalid(META, "{activeDeadlineSeconds: 0, containers: [{name: app, image: x}]}",
                       "spec.activeDeadlineSeconds", "Invalid value: 0: must be between 1 and 2147483647, inclusive");
        expect_invalid(
                META, "{dnsPolicy: Cluster, containers: [{name: app, image: x}]}", "spec.dnsPolicy",
                "Unsupported value: \"Cluster\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", "
                "\"Default\", \"None\"");
        expect_invalid(META, "{dnsPolicy: None, containers: [{name: app, image: x}]}", "spec.dnsConfig",
                       "Required value: must provide `dnsConfig` when `dnsPolicy` is None");
        expect_invalid(META, "{hostname: Web_1, containers: [{name: app, image: x}]}", "spec.hostname",
                       "Invalid value: \"Web_1\": a lowercase RFC 1123 label");
        expect_invalid(META, "{subdomain: a.b, containers: [{name: app, image: x}]}", "spec.subdomain",
                       "Invalid value: \"a.b\": must not contain dots");
        /* hostnameOverride (validatePodHostName) */
        expect_valid(META, "{hostnameOverride: my.host-1, containers: [{name: app, image: x}]}");
        expect_invalid(META, "{hostnameOverride: My_Host, containers: [{name: app, image: x}]}",
                       "spec.hostnameOverride", "Invalid value: \"My_Host\": a lowercase RFC 1123 subdomain");
        expect_invalid(META, "{hostnameOverride: h, hostNetwork: true, containers: [{name: app, image: x}]}",
                       "spec.hostnameOverride", "Forbidden: may not be specified when hostNetwork is true");
        expect_invalid(META, "{hostnameOverride: h, setHostnameAsFQDN: true, containers: [{name: app, image: x}]}",
                       "spec.hostnameOverride", "Forbidden: may not be specified when setHostnameAsFQDN is true");
        expect_invalid(META,
                       "{hostnameOverride: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, "
                       "containers: [{name: app, image: x}]}",
                       "spec.hostnameOverride", "Too long: may not be more than 64 bytes");
        expect_invalid(META, "{nodeName: Node_1, containers: [{name: app, image: x}]}", "spec.nodeName",
                       "Invalid value: \"Node_1\": a lowercase RFC 1123 subdomain");
        expect_invalid(META, "{serviceAccountName: 'my sa', containers: [{name: app, image: x}]}",
                       "spec.serviceAccountName", "Invalid value: \"my sa\": a lowercase RFC 1123 subdomain");
}

/* the fields of today's pod spec (issue 18): ephemeral containers, resizePolicy, shareProcessNamespace,
 * readinessGates, runtimeClassName, overhead, AppArmor */
static void test_newer_spec_fields(void **state) {
        static const struct {
                const char *meta, *spec, *field, *detail; /* field NULL: valid */
        } cases[] = {
                { META,
                  "{containers: [{name: app, image: nginx, resizePolicy: [{resourceName: cpu, restartPolicy: "
                  "NotRequired}, {resourceName: memory, restartPolicy: RestartContainer}]}], "
                  "ephemeralContainers: [{name: dbg, image: busybox, targetContainerName: app}], "
                  "shareProcessNamespace: true, setHostnameAsFQDN: true, readinessGates: [{conditionType: "
                  "example.com/lb}], runtimeClassName: runc, overhead: {cpu: 100m, memory: 10Mi}, "
                  "securityContext: {appArmorProfile: {type: RuntimeDefault}}}",
                  NULL, NULL },
                { META,
                  "{containers: [{name: app, image: nginx, resizePolicy: [{resourceName: gpu, restartPolicy: "
                  "NotRequired}]}]}",
                  "spec.containers[0].resizePolicy",
                  "Unsupported value: \"gpu\": supported values: \"cpu\", \"memory\"" },
                { META,
                  "{containers: [{name: app, image: nginx, resizePolicy: [{resourceName: cpu, restartPolicy: "
                  "NotRequired}, {resourceName: cpu, restartPolicy: NotRequired}]}]}",
                  "spec.containers[0].resizePolicy[1]", "Duplicate value: \"cpu\"" },
                { META,
                  "{restartPolicy: Never, containers: [{name: app, image: nginx, resizePolicy: [{resourceName: "
                  "memory, restartPolicy: RestartContainer}]}]}",
                  "spec.containers[0].resizePolicy",
                  "Invalid value: \"RestartContainer\": must be 'NotRequired' when `restartPolicy` is 'Never'" },
                { META,
                  "{containers: [{name: app, image: nginx}], initContainers: [{name: i, image: nginx, "
                  "resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]}]}",
                  "spec.initContainers[0].resizePolicy", "Invalid value: " },
                { META, "{containers: [{name: app, image: nginx}], ephemeralContainers: [{name: app, image: busybox}]}",
                  "spec.ephemeralContainers[0].name", "Duplicate value: \"app\"" },
                { META,
                  "{containers: [{name: app, image: nginx}], ephemeralContainers: [{name: d, image: busybox, "
                  "targetContainerName: nope}]}",
                  "spec.ephemeralContainers[0].targetContainerName", "Not found: \"nope\"" },
                { META,
                  "{containers: [{name: app, image: nginx}], ephemeralContainers: [{name: d, image: busybox, "
                  "ports: [{containerPort: 80}]}]}",
                  "spec.ephemeralContainers[0].ports", "Forbidden: cannot be set for an Ephemeral Container" },
                { META,
                  "{containers: [{name: app, image: nginx}], ephemeralContainers: [{name: d, image: busybox, "
                  "volumeMounts: [{name: v, mountPath: /v, subPath: x}]}], volumes: [{name: v, emptyDir: {}}]}",
                  "spec.ephemeralContainers[0].volumeMounts[0].subPath",
                  "Forbidden: cannot be set for an Ephemeral Container" },
                { META, "{containers: [{name: app, image: nginx}], hostPID: true, shareProcessNamespace: true}",
                  "spec.securityContext.shareProcessNamespace",
                  "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled" },
                { META, "{containers: [{name: app, image: nginx}], readinessGates: [{conditionType: 'bad type'}]}",
                  "spec.readinessGates[0].conditionType", "Invalid value: \"bad type\": name part must consist of" },
                { META, "{containers: [{name: app, image: nginx}], runtimeClassName: Bad_Name}",
                  "spec.runtimeClassName", "Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain" },
                { META, "{containers: [{name: app, image: nginx}], overhead: {cpu: -1}}", "spec.overhead.limits[cpu]",
                  "Invalid value: \"-1\": must be greater than or equal to 0" },
                { META,
                  "{containers: [{name: app, image: nginx, securityContext: {appArmorProfile: {type: "
                  "Localhost}}}]}",
                  "spec.containers[0].securityContext.appArmorProfile.localhostProfile",
                  "Required value: must be set when AppArmor type is Localhost" },
                { META,
                  "{containers: [{name: app, image: nginx}], securityContext: {appArmorProfile: {type: "
                  "RuntimeDefault, localhostProfile: x}}}",
                  "spec.securityContext.appArmorProfile.localhostProfile",
                  "Invalid value: \"x\": can only be set when AppArmor type is Localhost" },
                { META, "{containers: [{name: app, image: nginx}], securityContext: {appArmorProfile: {type: Strict}}}",
                  "spec.securityContext.appArmorProfile.type",
                  "Unsupported value: \"Strict\": supported values: \"Localhost\", \"RuntimeDefault\", "
                  "\"Unconfined\"" },
                { "{name: web, namespace: default, annotations: {container.apparmor.security.beta.kubernetes.io/app: "
                  "strict}}",
                  SPEC, "metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]",
                  "Invalid value: \"strict\": invalid AppArmor profile name: \"strict\"" },
                { "{name: web, namespace: default, annotations: {container.apparmor.security.beta.kubernetes.io/nope: "
                  "runtime/default}}",
                  SPEC, "metadata.annotations[container.apparmor.security.beta.kubernetes.io/nope]",
                  "Invalid value: \"nope\": container not found" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                if (!cases[i].field)
                        expect_valid(cases[i].meta, cases[i].spec);
                else
                        expect_invalid(cases[i].meta, cases[i].spec, cases[i].field, cases[i].detail);
        }
}

/* the fields accepted but not acted on, said by name */
static void test_unsupported_fields(void **state) {
        static const struct {
                const char *spec, *want; /* want: the joined list, "" for none */
        } cases[] = {
                { SPEC, "" },
                /* pod-level resources are acted on (PodLevelResources, beta on since v1.34) */
                { "{containers: [{name: app, image: nginx}], resources: {limits: {cpu: 1}}}", "" },
                { "{containers: [{name: app, image: nginx, securityContext: {seLinuxOptions: {level: 's0:c1'}}}], "
                  "securityContext: {fsGroup: 5, fsGroupChangePolicy: Always}, volumes: [{name: v, emptyDir: {}}]}",
                  /* fsGroup and fsGroupChangePolicy are acted on: the volumes' ownership (issue 26) */
                  "spec.containers[0].securityContext.seLinuxOptions (SELinux labels are not applied)" },
                { "{containers: [{name: app, image: nginx}], securityContext: {fsGroup: 5}}", "" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct pod *p = parse(META, cases[i].spec);
                char **l = NULL, *j;
                assert_int_equal(pod_unsupported_fields_gated(p, NULL, &l), 0);
                j = l ? strv_join(l, ", ") : strdup("");
                if (!streq(j, cases[i].want))
                        fail_msg("case %zu: %s", i, j);
                free(j);
                strv_free(l);
                pod_free(p);
        }
        /* a user namespace goes with none of the host's namespaces */
        expect_invalid(META, "{containers: [{name: app, image: nginx}], hostUsers: false, hostNetwork: true}",
                       "spec.hostNetwork", "Forbidden: when `pod.Spec.HostUsers` is false");
        expect_valid(META, "{containers: [{name: app, image: nginx}], hostUsers: true, hostNetwork: true}");
}

static void test_error_string(void **state) {
        struct field_errors errs = {};
        struct pod *p = parse("{name: web, namespace: default}", "{containers: [{name: app, image: x}, {name: app}]}");
        char *s;

        assert_int_equal(pod_validate(p, &errs), -EINVAL);
        s = field_errors_to_string(&errs);
        assert_string_equal(
                s, "spec.containers[1].image: Required value; spec.containers[1].name: Duplicate value: \"app\"");
        free(s);
        field_errors_done(&errs);
        field_errors_done(&errs); /* twice is fine */
        field_errors_done(NULL);
        pod_free(p);
}

/* the first message of a name check as pod_validate calls it (apis-internal.h), NULL when valid */
static const char *first_msg(size_t (*check)(const char *, const char * [static NAME_MAX_MSGS]), const char *s) {
        const char *msgs[NAME_MAX_MSGS];
        return check(s, msgs) > 0 ? msgs[0] : NULL;
}

static void test_name_validators(void **state) {
        assert_null(first_msg(check_dns1123_label, "abc-1"));
        assert_non_null(first_msg(check_dns1123_label, ""));
        assert_non_null(first_msg(check_dns1123_label, "-a"));
        assert_string_equal(first_msg(check_dns1123_label, "a.b"), "must not contain dots");
        assert_null(first_msg(check_dns1123_subdomain, "a.b-c.d"));
        assert_non_null(first_msg(check_dns1123_subdomain, "a..b"));
        assert_null(first_msg(check_iana_svc_name, "http-alt"));
        assert_null(validate_qualified_name("example.com/My_Name.1"));
        assert_non_null(validate_qualified_name("example.com/"));
        assert_non_null(validate_qualified_name("Example.com/x"));
        assert_null(validate_label_value(""));
        assert_non_null(validate_label_value("a b"));
}

/* projected clusterTrustBundle and podCertificate sources (validateProjectionSources) */
#define PROJ(src) "{containers: [{name: app, image: nginx}], volumes: [{name: v, projected: {sources: [" src "]}}]}"
static void test_projected_certificates(void **state) {
        expect_valid(META, PROJ("{clusterTrustBundle: {name: 'example.com:signer:b1', path: ca.pem}}"));
        expect_valid(META, PROJ("{clusterTrustBundle: {signerName: example.com/signer, labelSelector: "
                                "{matchLabels: {a: b}}, path: ca.pem, optional: true}}"));
        expect_valid(META, PROJ("{podCertificate: {signerName: example.com/signer, keyType: ED25519, "
                                "credentialBundlePath: creds.pem, maxExpirationSeconds: 86400}}"));
        expect_valid(META, PROJ("{podCertificate: {signerName: example.com/s, keyType: RSA3072, keyPath: k, "
                                "certificateChainPath: c, userAnnotations: {example.com/x: y}}}"));

        expect_invalid(META, PROJ("{clusterTrustBundle: {name: b, signerName: example.com/s, path: p}}"),
                       "spec.volumes[0].projected.sources[0].clusterTrustBundle",
                       "Invalid value: \"b\": only one of name and signerName may be used");
        expect_invalid(META, PROJ("{clusterTrustBundle: {path: p}}"),
                       "spec.volumes[0].projected.sources[0].clusterTrustBundle",
                       "Required value: either name or signerName must be specified");
        expect_invalid(META, PROJ("{clusterTrustBundle: {name: b, labelSelector: {}, path: p}}"),
                       "spec.volumes[0].projected.sources[0].clusterTrustBundle.labelSelector",
                       "Invalid value: \"\": labelSelector must be unset if name is specified");
        expect_invalid(META, PROJ("{clusterTrustBundle: {name: b}}"),
                       "spec.volumes[0].projected.sources[0].clusterTrustBundle.path", "Required value");
        expect_invalid(META, PROJ("{clusterTrustBundle: {name: b, path: ../x}}"),
                       "spec.volumes[0].projected.sources[0].clusterTrustBundle.path", "Invalid value: \"../x\"");
        expect_invalid(META, PROJ("{clusterTrustBundle: {signerName: nodomain, path: p}}"),
                       "spec.volumes[0].projected.sources[0].clusterTrustBundle.signerName",
                       "Invalid value: \"nodomain\": must be a fully qualified domain and path");
        expect_invalid(META,
                       PROJ("{clusterTrustBundle: {signerName: example.com/s, path: p, labelSelector: "
                            "{matchExpressions: [{key: a, operator: In}]}}}"),
                       "spec.volumes[0].projected.sources[0].clusterTrustBundle.labelSelector.matchExpressions[0]."
                       "values",
                       "Required value");

        expect_invalid(META, PROJ("{podCertificate: {signerName: example.com/s, keyType: DSA, keyPath: k}}"),
                       "spec.volumes[0].projected.sources[0].podCertificate.keyType", "Unsupported value: \"DSA\"");
        expect_invalid(META, PROJ("{podCertificate: {signerName: example.com/s, keyType: ED25519}}"),
                       "spec.volumes[0].projected.sources[0].podCertificate",
                       "Required value: specify at least one of credentialBundlePath, keyPath, and "
                       "certificateChainPath");
        expect_invalid(META,
                       PROJ("{podCertificate: {signerName: example.com/s, keyType: ED25519, keyPath: k, "
                            "maxExpirationSeconds: 60}}"),
                       "spec.volumes[0].projected.sources[0].podCertificate.maxExpirationSeconds",
                       "Invalid value: 60: if provided, maxExpirationSeconds must be >= 3600");
        expect_invalid(META,
                       PROJ("{podCertificate: {signerName: kubernetes.io/x, keyType: ED25519, keyPath: k, "
                            "maxExpirationSeconds: 90000}}"),
                       "spec.volumes[0].projected.sources[0].podCertificate.maxExpirationSeconds",
                       "Invalid value: 90000: if provided, maxExpirationSeconds must be <= 86400");
        expect_valid(META, PROJ("{podCertificate: {signerName: example.com/x, keyType: ED25519, keyPath: k, "
                                "maxExpirationSeconds: 90000}}"));
        expect_invalid(META, PROJ("{podCertificate: {signerName: '', keyType: ED25519, keyPath: k}}"),
                       "spec.volumes[0].projected.sources[0].podCertificate.signerName", "Required value");
        expect_invalid(META,
                       PROJ("{podCertificate: {signerName: example.com/s, keyType: ED25519, keyPath: k, "
                            "userAnnotations: {plain: y}}}"),
                       "spec.volumes[0].projected.sources[0].podCertificate.userAnnotations",
                       "Invalid value: \"plain\": must be a domain-prefixed path");
        expect_invalid(META,
                       PROJ("{podCertificate: {signerName: example.com/s, keyType: ED25519, keyPath: k, "
                            "certificateChainPath: k}}"),
                       "spec.volumes[0].projected", "Invalid value: \"k\": conflicting duplicate paths");
        expect_invalid(META,
                       PROJ("{clusterTrustBundle: {name: b, path: p}}, {podCertificate: {signerName: example.com/s, "
                            "keyType: ED25519, keyPath: p}}"),
                       "spec.volumes[0].projected", "Invalid value: \"p\": conflicting duplicate paths");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid),
                cmocka_unit_test(test_metadata),
                cmocka_unit_test(test_containers),
                cmocka_unit_test(test_ports),
                cmocka_unit_test(test_env),
                cmocka_unit_test(test_env_file_key_ref),
                cmocka_unit_test(test_resources),
                cmocka_unit_test(test_pod_level_resources),
                cmocka_unit_test(test_spec_fields),
                cmocka_unit_test(test_newer_spec_fields),
                cmocka_unit_test(test_error_string),
                cmocka_unit_test(test_name_validators),
                cmocka_unit_test(test_unsupported_fields),
                cmocka_unit_test(test_projected_certificates),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
