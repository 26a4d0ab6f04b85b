/* SPDX-License-Identifier: Apache-2.0 */
/* SetDefaults_Pod & co.: pull policy matrix, ports, hostNetwork, requests from limits, spec defaults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"

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

static void test_pull_policy_matrix(void **state) {
        static const struct {
                const char *image;
                enum pull_policy want;
        } table[] = {
                { "nginx", PULL_POLICY_ALWAYS },
                { "nginx:latest", PULL_POLICY_ALWAYS },
                { "nginx:1.25", PULL_POLICY_IF_NOT_PRESENT },
                { "nginx:Latest", PULL_POLICY_IF_NOT_PRESENT },
                { "library/nginx", PULL_POLICY_ALWAYS },
                { "docker.io/library/nginx:latest", PULL_POLICY_ALWAYS },
                { "registry.example.com:5000/team/app", PULL_POLICY_ALWAYS },
                { "registry.example.com:5000/team/app:v2", PULL_POLICY_IF_NOT_PRESENT },
                { "localhost:5000/app", PULL_POLICY_ALWAYS },
                { "localhost/app:latest", PULL_POLICY_ALWAYS },
                { "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                  PULL_POLICY_IF_NOT_PRESENT },
                { "nginx:1.25@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                  PULL_POLICY_IF_NOT_PRESENT },
                { "nginx:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                  PULL_POLICY_ALWAYS },
                { "my_org/my__app-x.y", PULL_POLICY_ALWAYS },
                /* not a valid reference: ParseImageName fails, tag "" -> IfNotPresent */
                { "", PULL_POLICY_IF_NOT_PRESENT },
                { "NGINX", PULL_POLICY_IF_NOT_PRESENT },
                { "nginx:", PULL_POLICY_IF_NOT_PRESENT },
                { "nginx@sha256:abc", PULL_POLICY_IF_NOT_PRESENT },
                { "a b", PULL_POLICY_IF_NOT_PRESENT },
                { "app/-bad", PULL_POLICY_IF_NOT_PRESENT },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (image_default_pull_policy(table[i].image) != table[i].want)
                        fail_msg("image \"%s\": policy %d, want %d", table[i].image,
                                 image_default_pull_policy(table[i].image), table[i].want);
}

static void test_pull_policy_in_pod(void **state) {
        struct pod *p = parse_one("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n"
                                  "  initContainers: [{name: i, image: 'busybox'}]\n"
                                  "  containers:\n"
                                  "  - {name: a, image: 'nginx:latest'}\n"
                                  "  - {name: b, image: 'nginx:1.25'}\n"
                                  "  - {name: c, image: 'nginx:1.25', imagePullPolicy: Always}\n"
                                  "  - {name: d, image: 'nginx', imagePullPolicy: Never}\n"
                                  "  - {name: e, image: 'nginx', imagePullPolicy: ''}\n");
        assert_int_equal(p->spec.init_containers[0].image_pull_policy, PULL_POLICY_ALWAYS);
        assert_int_equal(p->spec.containers[0].image_pull_policy, PULL_POLICY_ALWAYS);
        assert_int_equal(p->spec.containers[1].image_pull_policy, PULL_POLICY_IF_NOT_PRESENT);
        assert_int_equal(p->spec.containers[2].image_pull_policy, PULL_POLICY_ALWAYS);
        assert_int_equal(p->spec.containers[3].image_pull_policy, PULL_POLICY_NEVER);
        assert_int_equal(p->spec.containers[4].image_pull_policy, PULL_POLICY_ALWAYS);
        pod_free(p);
}

static void test_spec_defaults(void **state) {
        struct pod *p = parse_one("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                                  "  containers: [{name: a, image: x, ports: [{containerPort: 80}]}]\n");
        const struct container *c = &p->spec.containers[0];

        assert_int_equal(p->spec.restart_policy, RESTART_POLICY_ALWAYS);
        assert_int_equal(p->spec.termination_grace_period_seconds, 30);
        assert_true(p->spec.termination_grace_period_set);
        assert_string_equal(p->spec.dns_policy, "ClusterFirst");
        assert_string_equal(p->spec.scheduler_name, "default-scheduler");
        assert_false(p->spec.has_active_deadline);
        assert_string_equal(c->termination_message_path, "/dev/termination-log");
        assert_int_equal(c->termination_message_policy, TERMINATION_MESSAGE_READ_FILE);
        assert_string_equal(c->ports[0].protocol, "TCP");
        assert_int_equal(c->ports[0].host_port, 0); /* no hostNetwork: not defaulted */
        assert_null(p->namespace_);                 /* the apiserver takes it from the request; not a default */

        /* idempotent */
        assert_int_equal(pod_apply_defaults_checked(p), 0);
        assert_int_equal(p->spec.termination_grace_period_seconds, 30);
        assert_string_equal(c->ports[0].protocol, "TCP");
        pod_free(p);

        /* explicit values are kept, "" is unset */
        p = parse_one(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                "  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n  dnsPolicy: Default\n  schedulerName: ''\n"
                "  containers: [{name: a, image: x, terminationMessagePath: '/x', ports: [{containerPort: 53, protocol: UDP}]}]\n");
        assert_int_equal(p->spec.restart_policy, RESTART_POLICY_NEVER);
        assert_int_equal(p->spec.termination_grace_period_seconds, 5);
        assert_string_equal(p->spec.dns_policy, "Default");
        assert_string_equal(p->spec.scheduler_name, "default-scheduler");
        assert_string_equal(p->spec.containers[0].termination_message_path, "/x");
        assert_string_equal(p->spec.containers[0].ports[0].protocol, "UDP");
        pod_free(p);
}

static void test_host_network_ports(void **state) {
        struct pod *p = parse_one(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  hostNetwork: true\n"
                "  initContainers: [{name: i, image: x, ports: [{containerPort: 7000}]}]\n"
                "  containers:\n"
                "  - {name: a, image: x, ports: [{containerPort: 80}, {containerPort: 81, hostPort: 81}]}\n");
        assert_int_equal(p->spec.containers[0].ports[0].host_port, 80);
        assert_int_equal(p->spec.containers[0].ports[1].host_port, 81);
        assert_int_equal(p->spec.init_containers[0].ports[0].host_port, 7000);
        pod_free(p);
}

static void test_requests_from_limits(void **state) {
        struct pod *p = parse_one(
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
                "  initContainers: [{name: i, image: x, resources: {limits: {memory: 1Gi}}}]\n"
                "  containers:\n"
                "  - name: a\n    image: x\n"
                "    resources:\n      limits: {cpu: '2', memory: 256Mi}\n      requests: {cpu: 500m}\n"
                "  - {name: b, image: x, resources: {requests: {cpu: 100m}}}\n");
        const struct resource_list *r0 = &p->spec.containers[0].resources.requests;
        const struct resource_list *r1 = &p->spec.containers[1].resources.requests;

        assert_int_equal(r0->n, 2);
        assert_string_equal(resource_list_get(r0, "cpu")->str, "500m"); /* explicit request kept */
        assert_string_equal(resource_list_get(r0, "memory")->str, "256Mi");
        assert_int_equal(resource_list_get(r0, "memory")->value, 268435456);
        assert_int_equal(r1->n, 1);
        assert_int_equal(p->spec.containers[1].resources.limits.n, 0);
        assert_string_equal(resource_list_get(&p->spec.init_containers[0].resources.requests, "memory")->str, "1Gi");
        pod_free(p);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pull_policy_matrix),   cmocka_unit_test(test_pull_policy_in_pod),
                cmocka_unit_test(test_spec_defaults),        cmocka_unit_test(test_host_network_ports),
                cmocka_unit_test(test_requests_from_limits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
