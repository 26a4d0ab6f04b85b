/* SPDX-License-Identifier: Apache-2.0 */
/* Pod DNS: resolv.conf parsing, each dnsPolicy, dnsConfig merging and upstream's limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "basic/error.h"
#include "apis/manifest.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "kuberuntime/config.h"
#include "network/dns.h"

static char resolv[] = "/tmp/ckubelet-dns-test-XXXXXX";

static int setup(void **state) {
        int fd = mkstemp(resolv);
        const char text[] = "# comment\nnameserver 10.0.0.2\n; other\nnameserver 10.0.0.3\ndomain old.example\n"
                            "search example.com. corp.example .\noptions ndots:2 timeout:1\noptions ndots:3\n";
        if (fd < 0 || write(fd, text, sizeof(text) - 1) != (ssize_t) sizeof(text) - 1)
                return -1;
        close(fd);
        return 0;
}

static int teardown(void **state) {
        unlink(resolv);
        return 0;
}

static struct pod *parse_spec(const char *spec) {
        _cleanup_free_ char *yaml = NULL;
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct pod_set set = {};
        struct pod *p;

        assert_true(asprintf(&yaml,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ns1, uid: u1}\n"
                             "spec:\n%s  containers: [{name: a, image: busybox}]\n",
                             spec) > 0);
        if (manifest_parse(yaml, strlen(yaml), &set, &err) < 0)
                fail_msg("manifest: %s", ck_error_message(err));
        p = pod_ref(set.pods[0]);
        pod_set_done(&set);
        return p;
}

static void expect_list(char **got, size_t n, const char *const *want) {
        size_t i = 0;
        for (; want[i]; i++) {
                if (i >= n)
                        fail_msg("missing %s", want[i]);
                assert_string_equal(got[i], want[i]);
        }
        assert_int_equal(n, i);
}

#define L(...) ((const char *const[]) { __VA_ARGS__, NULL })
#define NONE ((const char *const[]) { NULL })

static Runtime__V1__DNSConfig *build(const char *spec, struct kc_build_context *ctx) {
        Runtime__V1__DNSConfig *d = NULL;
        struct pod *p = parse_spec(spec);
        assert_int_equal(dns_pod_config(p, ctx, &d), 0);
        pod_free(p);
        return d;
}

static void test_parse(void **state) {
        char **servers = NULL, **searches = NULL, **options = NULL;
        assert_int_equal(dns_parse_resolv_conf("nameserver 1.1.1.1\nsearch a.b. c\ndomain d\noptions x y:1\n", &servers,
                                               &searches, &options),
                         0);
        expect_list(servers, strv_length(servers), L("1.1.1.1"));
        expect_list(searches, strv_length(searches), L("d")); /* the last search/domain line wins */
        expect_list(options, strv_length(options), L("x", "y:1"));
        strv_free(servers);
        strv_free(searches);
        strv_free(options);
}

static void test_policies(void **state) {
        char *cluster_dns[] = { "10.96.0.10", NULL };
        struct kc_build_report report = {};
        struct kc_build_context ctx = {
                .resolv_conf = resolv, .cluster_dns = cluster_dns, .cluster_domain = "cluster.local", .report = &report
        };
        Runtime__V1__DNSConfig *d;

        /* ClusterFirst: the cluster's server, the cluster searches then the host's, ndots:5 */
        d = build("", &ctx);
        expect_list(d->servers, d->n_servers, L("10.96.0.10"));
        expect_list(d->searches, d->n_searches,
                    L("ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com", "corp.example"));
        expect_list(d->options, d->n_options, L("ndots:5"));
        pb_free(d);

        /* ClusterFirst with hostNetwork: Default */
        d = build("  hostNetwork: true\n", &ctx);
        expect_list(d->servers, d->n_servers, L("10.0.0.2", "10.0.0.3"));
        expect_list(d->searches, d->n_searches, L("example.com", "corp.example"));
        expect_list(d->options, d->n_options, L("timeout:1", "ndots:3"));
        pb_free(d);

        /* ClusterFirstWithHostNet */
        d = build("  hostNetwork: true\n  dnsPolicy: ClusterFirstWithHostNet\n", &ctx);
        expect_list(d->servers, d->n_servers, L("10.96.0.10"));
        pb_free(d);

        /* None with dnsConfig */
        d = build("  dnsPolicy: None\n  dnsConfig: {nameservers: [1.2.3.4], searches: [a.example], "
                  "options: [{name: ndots, value: '1'}, {name: edns0}]}\n",
                  &ctx);
        expect_list(d->servers, d->n_servers, L("1.2.3.4"));
        expect_list(d->searches, d->n_searches, L("a.example"));
        expect_list(d->options, d->n_options, L("ndots:1", "edns0"));
        pb_free(d);

        /* dnsConfig merged into ClusterFirst: duplicates dropped, options replaced by name */
        d = build("  dnsConfig: {nameservers: [10.96.0.10, 8.8.8.8], searches: [cluster.local, x.example], "
                  "options: [{name: ndots, value: '2'}]}\n",
                  &ctx);
        expect_list(d->servers, d->n_servers, L("10.96.0.10", "8.8.8.8"));
        assert_string_equal(d->searches[d->n_searches - 1], "x.example");
        assert_int_equal(d->n_searches, 6);
        expect_list(d->options, d->n_options, L("ndots:2"));
        pb_free(d);
        assert_null(report.event_reasons);

        /* no --cluster-dns: Default, with a MissingClusterDNS event */
        ctx.cluster_dns = NULL;
        d = build("", &ctx);
        expect_list(d->servers, d->n_servers, L("10.0.0.2", "10.0.0.3"));
        pb_free(d);
        assert_string_equal(report.event_reasons[0], "MissingClusterDNS");
        assert_string_equal(report.event_messages[0],
                            "pod: \"web_ns1(u1)\". kubelet does not have ClusterDNS IP configured and cannot create "
                            "Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy.");
        kc_build_report_done(&report);

        /* --resolv-conf "": localhost and "." */
        ctx.resolv_conf = "";
        d = build("  dnsPolicy: Default\n", &ctx);
        expect_list(d->servers, d->n_servers, L("127.0.0.1"));
        expect_list(d->searches, d->n_searches, L("."));
        assert_int_equal(d->n_options, 0);
        pb_free(d);
        kc_build_report_done(&report);
}

static void test_limits(void **state) {
        struct kc_build_report report = {};
        struct kc_build_context ctx = { .resolv_conf = "", .report = &report };
        _cleanup_free_ char *spec = NULL, *searches = NULL;
        Runtime__V1__DNSConfig *d;

        /* the apiserver allows at most 3 nameservers in dnsConfig, but the host's add up */
        d = build("  dnsPolicy: Default\n  dnsConfig: {nameservers: [1.1.1.1, 2.2.2.2, 3.3.3.3]}\n", &ctx);
        expect_list(d->servers, d->n_servers, L("127.0.0.1", "1.1.1.1", "2.2.2.2"));
        pb_free(d);
        assert_string_equal(report.event_reasons[0], "DNSConfigForming");
        assert_string_equal(report.event_messages[0],
                            "Nameserver limits were exceeded, some nameservers have been "
                            "omitted, the applied nameserver line is: 127.0.0.1 1.1.1.1 2.2.2.2");
        kc_build_report_done(&report);

        /* 40 searches of 82 characters: cut to 32, then to 2048 characters (24 of them) */
        searches = strdup("");
        for (int i = 0; i < 40; i++) {
                char *n = NULL;
                assert_true(asprintf(&n, "%s%sd%02d-%s.example", searches, i ? ", " : "", i,
                                     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") > 0);
                free(searches);
                searches = n;
        }
        assert_true(asprintf(&spec, "  dnsPolicy: None\n  dnsConfig: {nameservers: [1.1.1.1], searches: [%s]}\n",
                             searches) > 0);
        d = build(spec, &ctx);
        {
                size_t total = 0;
                for (size_t i = 0; i < d->n_searches; i++)
                        total += strlen(d->searches[i]) + (i > 0);
                assert_true(total <= 2048);
                assert_true(d->n_searches < 32);
                assert_int_equal(d->n_searches, 24);
        }
        pb_free(d);
        assert_string_equal(report.event_reasons[0], "DNSConfigForming");
        assert_true(startswith(report.event_messages[0], "Search Line limits were exceeded, some search paths have "
                                                         "been omitted, the applied search line is: d00-"));
        kc_build_report_done(&report);
}

static void expect_invalid(const char *spec_json, const char *field, const char *detail) {
        _cleanup_free_ char *doc = NULL;
        struct field_errors errs = {};
        struct pod *p = NULL;
        bool found = false;
        json_t *j;

        assert_true(asprintf(&doc,
                             "{\"metadata\":{\"name\":\"p\",\"namespace\":\"d\"},\"spec\":{%s,"
                             "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
                             spec_json) > 0);
        j = json_loads(doc, 0, NULL);
        assert_non_null(j);
        assert_int_equal(pod_decode(j, &p, &errs), 0);
        json_decref(j);
        assert_int_equal(pod_apply_defaults_checked(p), 0);
        assert_int_equal(pod_validate(p, &errs), -EINVAL);
        pod_free(p);
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

static void test_validate(void **state) {
        expect_invalid("\"dnsConfig\":{\"nameservers\":[\"1.1.1.1\",\"2.2.2.2\",\"3.3.3.3\",\"4.4.4.4\"]}",
                       "spec.dnsConfig.nameservers",
                       "Invalid value: []string{\"1.1.1.1\", \"2.2.2.2\", \"3.3.3.3\", \"4.4.4.4\"}: must not have "
                       "more than 3 nameservers");
        expect_invalid("\"dnsConfig\":{\"nameservers\":[\"dns.example\"]}", "spec.dnsConfig.nameservers[0]",
                       "Invalid value: \"dns.example\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)");
        expect_invalid("\"dnsConfig\":{\"searches\":[\"ok.example.\",\"Bad_Domain\"]}", "spec.dnsConfig.searches[1]",
                       "Invalid value: \"Bad_Domain\": a lowercase RFC 1123 subdomain must consist of lower case "
                       "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
                       "(e.g. 'example.com', regex used for validation is "
                       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
        expect_invalid("\"dnsConfig\":{\"options\":[{\"value\":\"1\"}]}", "spec.dnsConfig.options[0]",
                       "Required value: Option.Name must not be empty");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_policies),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_validate),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
