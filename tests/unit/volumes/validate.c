/* SPDX-License-Identifier: Apache-2.0 */
/* spec.volumes, volumeMounts, hostAliases: decoding, defaults and the apiserver's validation messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "apis/pod_volumes.h"

#define META "{name: web, namespace: default}"

static struct pod *parse(const char *spec) {
        struct pod_set set = {};
        char *yaml = NULL;
        struct ck_error *err = NULL;
        struct pod *p;

        assert_true(asprintf(&yaml, "apiVersion: v1\nkind: Pod\nmetadata: " META "\nspec: %s\n", spec) > 0);
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

/* invalid with exactly this error (field and full detail) among the errors */
static void expect_invalid(const char *spec, const char *field, const char *detail) {
        struct field_errors errs = {};
        struct pod *p = parse(spec);
        bool found = false;

        assert_int_equal(pod_validate(p, &errs), -EINVAL);
        for (size_t i = 0; i < errs.n; i++)
                if (streq(errs.items[i].field, field) && streq(errs.items[i].detail, detail))
                        found = true;
        if (!found) {
                print_message("spec: %s\nerrors:\n", spec);
                dump(&errs);
                fail_msg("no error \"%s: %s\"", field, detail);
        }
        field_errors_done(&errs);
        pod_free(p);
}

static struct pod *expect_valid(const char *spec) {
        struct field_errors errs = {};
        struct pod *p = parse(spec);
        if (pod_validate(p, &errs) != 0) {
                print_message("spec: %s\nerrors:\n", spec);
                dump(&errs);
                fail_msg("unexpectedly invalid");
        }
        field_errors_done(&errs);
        return p;
}

#define C(mounts) "containers: [{name: app, image: busybox, volumeMounts: " mounts "}]"

static void test_valid_and_defaults(void **state) {
        struct pod *p = expect_valid(
                "{volumes: [{name: scratch, emptyDir: {}}, {name: mem, emptyDir: {medium: Memory, sizeLimit: 64Mi}},"
                " {name: host, hostPath: {path: /var/log, type: Directory}},"
                " {name: cm, configMap: {name: settings, items: [{key: a, path: dir/a, mode: 256}], optional: true}},"
                " {name: sec, secret: {secretName: creds, defaultMode: 384}},"
                " {name: info, downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}},"
                "   {path: app, fieldRef: {fieldPath: \"metadata.labels['app']\"}},"
                "   {path: cpu, resourceFieldRef: {containerName: app, resource: limits.cpu, divisor: 1m}}]}},"
                " {name: proj, projected: {sources: [{serviceAccountToken: {path: token, audience: vault}},"
                "   {configMap: {name: x}}]}},"
                " {name: claim, persistentVolumeClaim: {claimName: data}}],"
                " hostAliases: [{ip: 10.1.2.3, hostnames: [foo.local, bar]}, {ip: 'fd00::1', hostnames: [six]}],"
                " initContainers: [{name: init, image: busybox, volumeMounts: [{name: scratch, mountPath: /s}]}]," C(
                        "[{name: scratch, mountPath: /scratch}, {name: host, mountPath: /logs, readOnly: true,"
                        " mountPropagation: HostToContainer}, {name: scratch, mountPath: /sub, subPath: a/b},"
                        " {name: scratch, mountPath: /expr, subPathExpr: '$(POD)/x'}]") "}");
        const struct pod_volumes *v = p->spec.volumes;
        const struct volume_mounts *m;

        assert_non_null(v);
        assert_int_equal(v->n_volumes, 8);
        assert_int_equal(v->volumes[0].type, VOLUME_EMPTY_DIR);
        assert_string_equal(v->volumes[1].medium, "Memory");
        assert_int_equal(v->volumes[1].size_limit.value, 64 << 20);
        assert_int_equal(v->volumes[2].type, VOLUME_HOST_PATH);
        assert_string_equal(v->volumes[2].host_path_type, "Directory");
        assert_int_equal(v->volumes[3].object.default_mode, 0644); /* SetDefaults_ConfigMapVolumeSource */
        assert_int_equal(v->volumes[3].object.items[0].mode, 0400);
        assert_true(v->volumes[3].object.optional);
        assert_int_equal(v->volumes[4].object.default_mode, 0600);
        assert_string_equal(v->volumes[4].object.name, "creds");
        assert_int_equal(v->volumes[5].downward.n_items, 3);
        assert_string_equal(v->volumes[5].downward.items[2].divisor.str, "1m");
        assert_int_equal(v->volumes[6].sources[0].token_expiration_seconds, 3600);
        assert_int_equal(v->volumes[6].projected_default_mode, 0644);
        assert_int_equal(v->volumes[7].type, VOLUME_PVC);
        assert_string_equal(v->volumes[7].type_name, "persistentVolumeClaim");
        assert_int_equal(v->n_host_aliases, 2);
        assert_string_equal(v->host_aliases[0].hostnames[1], "bar");
        m = pod_container_mounts(p, &p->spec.containers[0]);
        assert_non_null(m);
        assert_int_equal(m->n, 4);
        assert_true(m->items[1].read_only);
        assert_string_equal(m->items[2].sub_path, "a/b");
        m = pod_container_mounts(p, &p->spec.init_containers[0]);
        assert_non_null(m);
        assert_int_equal(m->n, 1);
        assert_ptr_equal(pod_volume_find(p, "host"), &v->volumes[2]);
        assert_null(pod_volume_find(p, "nope"));
        pod_free(p);
}

static void test_volumes(void **state) {
        expect_invalid("{volumes: [{name: h, hostPath: {}}], containers: [{name: a, image: b}]}",
                       "spec.volumes[0].hostPath.path", "Required value");
        expect_invalid("{volumes: [{name: h, hostPath: {path: /a/../etc}}], containers: [{name: a, image: b}]}",
                       "spec.volumes[0].hostPath.path", "Invalid value: \"/a/../etc\": must not contain '..'");
        expect_invalid("{volumes: [{name: h, hostPath: {path: /x, type: Dir}}], containers: [{name: a, image: b}]}",
                       "spec.volumes[0].hostPath.type",
                       "Unsupported value: \"Dir\": supported values: \"\", \"BlockDevice\", \"CharDevice\", "
                       "\"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\"");
        expect_invalid("{volumes: [{name: x}], containers: [{name: a, image: b}]}", "spec.volumes[0]",
                       "Required value: must specify a volume type");
        expect_invalid("{volumes: [{name: x, emptyDir: {}, hostPath: {path: /x}}], containers: [{name: a, image: b}]}",
                       "spec.volumes[0].emptyDir", "Forbidden: may not specify more than 1 volume type");
        expect_invalid("{volumes: [{emptyDir: {}}], containers: [{name: a, image: b}]}", "spec.volumes[0].name",
                       "Required value");
        expect_invalid(
                "{volumes: [{name: Bad_Name, emptyDir: {}}], containers: [{name: a, image: b}]}",
                "spec.volumes[0].name",
                "Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric "
                "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or "
                "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
        expect_invalid(
                "{volumes: [{name: x, emptyDir: {}}, {name: x, emptyDir: {}}], containers: [{name: a, image: b}]}",
                "spec.volumes[1].name", "Duplicate value: \"x\"");
        expect_invalid("{volumes: [{name: c, configMap: {}}], containers: [{name: a, image: b}]}",
                       "spec.volumes[0].configMap.name", "Required value");
        expect_invalid("{volumes: [{name: s, secret: {defaultMode: 1000}}], containers: [{name: a, image: b}]}",
                       "spec.volumes[0].secret.secretName", "Required value");
        expect_invalid(
                "{volumes: [{name: s, secret: {secretName: x, defaultMode: 1000}}], containers: [{name: a, image: b}]}",
                "spec.volumes[0].secret.defaultMode",
                "Invalid value: 1000: must be a number between 0 and 0777 (octal), both inclusive");
        expect_invalid("{volumes: [{name: c, configMap: {name: x, items: [{key: k, path: /abs}]}}], "
                       "containers: [{name: a, image: b}]}",
                       "spec.volumes[0].configMap.items[0].path", "Invalid value: \"/abs\": must be a relative path");
        expect_invalid(
                "{volumes: [{name: c, configMap: {name: x, items: [{path: ..x}]}}], containers: [{name: a, image: b}]}",
                "spec.volumes[0].configMap.items[0].path", "Invalid value: \"..x\": must not start with '..'");
        expect_invalid(
                "{volumes: [{name: c, configMap: {name: x, items: [{path: p}]}}], containers: [{name: a, image: b}]}",
                "spec.volumes[0].configMap.items[0].key", "Required value");
        expect_invalid(
                "{volumes: [{name: d, downwardAPI: {items: [{path: p, fieldRef: {fieldPath: spec.nodeName}}]}}], "
                "containers: [{name: a, image: b}]}",
                "spec.volumes[0].downwardAPI.items[0].fieldRef.fieldPath",
                "Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", "
                "\"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"");
        expect_invalid(
                "{volumes: [{name: d, downwardAPI: {items: [{path: p, resourceFieldRef: {resource: limits.cpu}}]}}], "
                "containers: [{name: a, image: b}]}",
                "spec.volumes[0].downwardAPI.items[0].resourceFieldRef.containerName", "Required value");
        expect_invalid("{volumes: [{name: d, downwardAPI: {items: [{path: p}]}}], containers: [{name: a, image: b}]}",
                       "spec.volumes[0].downwardAPI.items[0]",
                       "Required value: one of fieldRef and resourceFieldRef is required");
        expect_invalid(
                "{volumes: [{name: p, projected: {sources: [{serviceAccountToken: {path: t, expirationSeconds: 599}}]}}], "
                "containers: [{name: a, image: b}]}",
                "spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds",
                "Invalid value: 599: may not specify a duration less than 10 minutes");
        expect_invalid("{volumes: [{name: p, projected: {sources: [{serviceAccountToken: {}}]}}], "
                       "containers: [{name: a, image: b}]}",
                       "spec.volumes[0].projected.sources[0].serviceAccountToken.path", "Required value");
        expect_invalid("{volumes: [{name: e, emptyDir: {sizeLimit: -1Mi}}], containers: [{name: a, image: b}]}",
                       "spec.volumes[0].emptyDir.sizeLimit",
                       "Forbidden: SizeLimit field must be a valid resource quantity");
}

static void test_mounts(void **state) {
#define V "{volumes: [{name: v, emptyDir: {}}], "
        expect_invalid(V C("[{name: nope, mountPath: /x}]") "}", "spec.containers[0].volumeMounts[0].name",
                       "Not found: \"nope\"");
        expect_invalid(V C("[{mountPath: /x}]") "}", "spec.containers[0].volumeMounts[0].name", "Required value");
        expect_invalid(V C("[{name: v}]") "}", "spec.containers[0].volumeMounts[0].mountPath", "Required value");
        expect_invalid(V C("[{name: v, mountPath: /x}, {name: v, mountPath: /x}]") "}",
                       "spec.containers[0].volumeMounts[1].mountPath", "Invalid value: \"/x\": must be unique");
        expect_invalid(V C("[{name: v, mountPath: /x, subPath: ../etc}]") "}",
                       "spec.containers[0].volumeMounts[0].subPath",
                       "Invalid value: \"../etc\": must not contain '..'");
        expect_invalid(V C("[{name: v, mountPath: /x, subPath: /etc}]") "}",
                       "spec.containers[0].volumeMounts[0].subPath",
                       "Invalid value: \"/etc\": must be a relative path");
        expect_invalid(V C("[{name: v, mountPath: /x, subPath: a, subPathExpr: b}]") "}",
                       "spec.containers[0].volumeMounts[0].subPathExpr",
                       "Invalid value: \"b\": subPathExpr and subPath are mutually exclusive");
        expect_invalid(
                V C("[{name: v, mountPath: /x, mountPropagation: Shared}]") "}",
                "spec.containers[0].volumeMounts[0].mountPropagation",
                "Unsupported value: \"Shared\": supported values: \"Bidirectional\", \"HostToContainer\", \"None\"");
        expect_invalid(V "initContainers: [{name: i, image: b, volumeMounts: [{name: w, mountPath: /x}]}], "
                         "containers: [{name: a, image: b}]}",
                       "spec.initContainers[0].volumeMounts[0].name", "Not found: \"w\"");
        expect_invalid("{hostAliases: [{ip: 1.2.3, hostnames: [a]}], containers: [{name: a, image: b}]}",
                       "spec.hostAliases[0].ip",
                       "Invalid value: \"1.2.3\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
        expect_invalid("{hostAliases: [{hostnames: [a]}], containers: [{name: a, image: b}]}", "spec.hostAliases[0].ip",
                       "Required value");
        expect_invalid("{hostAliases: [{ip: 1.2.3.4, hostnames: [Not_OK]}], containers: [{name: a, image: b}]}",
                       "spec.hostAliases[0].hostnames[0]",
                       "Invalid value: \"Not_OK\": a lowercase RFC 1123 subdomain must consist of lower case "
                       "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                       "(e.g. 'example.com', regex used for validation is "
                       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
        /* validateMountRecursiveReadOnly */
        expect_invalid(V C("[{name: v, mountPath: /x, recursiveReadOnly: Enabled}]") "}",
                       "spec.containers[0].volumeMounts[0].recursiveReadOnly",
                       "Forbidden: may only be specified when readOnly is true");
        expect_invalid(V C("[{name: v, mountPath: /x, readOnly: true, recursiveReadOnly: IfPossible,"
                           " mountPropagation: HostToContainer}]") "}",
                       "spec.containers[0].volumeMounts[0].recursiveReadOnly",
                       "Forbidden: may only be specified when mountPropagation is None or not specified");
        expect_invalid(V C("[{name: v, mountPath: /x, readOnly: true, recursiveReadOnly: Always}]") "}",
                       "spec.containers[0].volumeMounts[0].recursiveReadOnly",
                       "Unsupported value: \"Always\": supported values: \"Disabled\", \"Enabled\", \"IfPossible\"");
        pod_free(expect_valid(V C("[{name: v, mountPath: /x, recursiveReadOnly: Disabled},"
                                  " {name: v, mountPath: /y, readOnly: true, recursiveReadOnly: Enabled,"
                                  " mountPropagation: None}]") "}"));
#undef V
}

/* resolveRecursiveReadOnly, with upstream's messages */
static void test_recursive_read_only(void **state) {
        struct {
                const char *mode, *propagation;
                bool read_only, supported;
                int r;
                bool rro;
                const char *message;
        } t[] = {
                { NULL, NULL, true, true, 0, false, NULL },
                { "Disabled", NULL, true, true, 0, false, NULL },
                { "IfPossible", NULL, true, true, 0, true, NULL },
                { "IfPossible", "None", true, false, 0, false, NULL },
                { "Enabled", NULL, true, true, 0, true, NULL },
                { "Enabled", NULL, true, false, -EINVAL, false,
                  "volume \"v\" requested recursive read-only mode, but it is not supported by the runtime" },
                { "Enabled", NULL, false, true, -EINVAL, false,
                  "volume \"v\" requested recursive read-only mode, but it is not read-only" },
                { "IfPossible", "Bidirectional", true, true, -EINVAL, false,
                  "volume \"v\" requested recursive read-only mode, but it is not compatible with propagation "
                  "\"Bidirectional\"" },
                { "Sometimes", NULL, true, true, -EINVAL, false, "unknown recursive read-only mode \"Sometimes\"" },
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                struct volume_mount m = { .name = (char *) "v",
                                          .mount_path = (char *) "/x",
                                          .read_only = t[i].read_only,
                                          .mount_propagation = (char *) t[i].propagation,
                                          .recursive_read_only = (char *) t[i].mode };
                bool rro = !t[i].rro;
                struct ck_error *msg = NULL;
                assert_int_equal(pod_mount_recursive_read_only(&m, t[i].supported, &rro, &msg), t[i].r);
                if (t[i].r == 0) {
                        assert_int_equal(rro, t[i].rro);
                        assert_null(msg);
                } else {
                        assert_non_null(msg);
                        assert_string_equal(ck_error_message(msg), t[i].message);
                        ck_error_free(msg);
                }
        }
}

/* volumes[].image: reference required, pullPolicy one of three and defaulted from the tag as SetDefaults_Volume;
 * subPath and subPathExpr allowed on its mounts, readOnly not required */
static void test_image_volume(void **state) {
        struct {
                const char *ref, *policy;
                enum pull_policy want;
        } d[] = {
                { "busybox:1.36", NULL, PULL_POLICY_IF_NOT_PRESENT },
                { "busybox:latest", NULL, PULL_POLICY_ALWAYS },
                { "busybox", NULL, PULL_POLICY_ALWAYS },
                { "reg.example:5000/a/b", NULL, PULL_POLICY_ALWAYS },
                { "reg.example:5000/a/b:2", NULL, PULL_POLICY_IF_NOT_PRESENT },
                { "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", NULL,
                  PULL_POLICY_IF_NOT_PRESENT },
                { "busybox:latest", "Never", PULL_POLICY_NEVER },
                { "busybox:1", "Always", PULL_POLICY_ALWAYS },
                { "busybox", "IfNotPresent", PULL_POLICY_IF_NOT_PRESENT },
        };
        for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
                char *spec = NULL;
                struct pod *p;
                const struct volume *v;
                assert_true(asprintf(&spec,
                                     "{volumes: [{name: iv, image: {reference: \"%s\"%s%s}}], " C(
                                             "[{name: iv, mountPath: /a}, {name: iv, mountPath: /b, subPath: x/y}, "
                                             "{name: iv, mountPath: /c, subPathExpr: $(POD)}]") "}",
                                     d[i].ref, d[i].policy ? ", pullPolicy: " : "",
                                     d[i].policy ? d[i].policy : "") > 0);
                p = expect_valid(spec);
                v = pod_volume_find(p, "iv");
                assert_non_null(v);
                assert_int_equal(v->type, VOLUME_IMAGE);
                assert_string_equal(v->image_reference, d[i].ref);
                if (v->image_pull_policy != d[i].want)
                        fail_msg("%s (%s): pull policy %d, want %d", d[i].ref, d[i].policy ? d[i].policy : "(unset)",
                                 v->image_pull_policy, d[i].want);
                pod_free(p);
                free(spec);
        }
        expect_invalid("{volumes: [{name: iv, image: {pullPolicy: Always}}], " C("[]") "}",
                       "spec.volumes[0].image.reference", "Required value");
        expect_invalid("{volumes: [{name: iv, image: {reference: \"\"}}], " C("[]") "}",
                       "spec.volumes[0].image.reference", "Required value");
        expect_invalid("{volumes: [{name: iv, image: {reference: a, pullPolicy: Sometimes}}], " C("[]") "}",
                       "spec.volumes[0].image.pullPolicy",
                       "Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", "
                       "\"Never\"");
        expect_invalid("{volumes: [{name: iv, image: {reference: a}, emptyDir: {}}], " C("[]") "}",
                       "spec.volumes[0].image", "Forbidden: may not specify more than 1 volume type");
        expect_invalid("{volumes: [{name: iv, image: {reference: a}}], " C(
                               "[{name: iv, mountPath: /a, subPath: ../x}]") "}",
                       "spec.containers[0].volumeMounts[0].subPath", "Invalid value: \"../x\": must not contain '..'");
}

static void test_type_errors(void **state) {
        struct pod_set set = {};
        struct ck_error *err = NULL;
        const char *y = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {volumes: {x: 1}, "
                        "containers: [{name: a, image: b}]}\n";
        assert_true(manifest_parse(y, strlen(y), &set, &err) < 0);
        assert_non_null(
                strstr(ck_error_message(err), "spec.volumes: Invalid value: \"object\": must be of type array"));
        ck_error_free(err);
        err = NULL;
        y = "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {volumes: [{name: v, emptyDir: {sizeLimit: lots}}], "
            "containers: [{name: a, image: b}]}\n";
        assert_true(manifest_parse(y, strlen(y), &set, &err) < 0);
        assert_non_null(strstr(ck_error_message(err), "spec.volumes[0].emptyDir.sizeLimit: Invalid value: \"lots\""));
        ck_error_free(err);
        pod_set_done(&set);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_valid_and_defaults),
                cmocka_unit_test(test_volumes),
                cmocka_unit_test(test_mounts),
                cmocka_unit_test(test_recursive_read_only),
                cmocka_unit_test(test_image_volume),
                cmocka_unit_test(test_type_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
