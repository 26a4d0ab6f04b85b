/* SPDX-License-Identifier: Apache-2.0 */
/* The kubelet API's request attributes (auth.go): path → subresource, method → verb; path splitting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/strv.h"
#include "server/server-internal.h"

static void test_subresources(void **state) {
        assert_string_equal(api_subresource("/stats"), "stats");
        assert_string_equal(api_subresource("/stats/summary"), "stats");
        assert_string_equal(api_subresource("/statsfoo"), "proxy"); /* prefix on a '/' boundary only */
        assert_string_equal(api_subresource("/metrics"), "metrics");
        assert_string_equal(api_subresource("/metrics/resource"), "metrics");
        assert_string_equal(api_subresource("/metrics/probes"), "metrics");
        assert_string_equal(api_subresource("/metricsx"), "proxy");
        assert_string_equal(api_subresource("/logs"), "log");
        assert_string_equal(api_subresource("/logs/syslog"), "log");
        assert_string_equal(api_subresource("/containerLogs/a/b/c"), "proxy");
        assert_string_equal(api_subresource("/pods"), "proxy");
        assert_string_equal(api_subresource("/exec/a/b/c"), "proxy");
        assert_string_equal(api_subresource("/checkpoint/a/b/c"), "checkpoint");
        assert_string_equal(api_subresource("/"), "proxy");
}

static void test_verbs(void **state) {
        assert_string_equal(api_verb(EVHTTP_REQ_GET), "get");
        assert_string_equal(api_verb(EVHTTP_REQ_HEAD), "get");
        assert_string_equal(api_verb(EVHTTP_REQ_POST), "create");
        assert_string_equal(api_verb(EVHTTP_REQ_PUT), "update");
        assert_string_equal(api_verb(EVHTTP_REQ_PATCH), "patch");
        assert_string_equal(api_verb(EVHTTP_REQ_DELETE), "delete");
        assert_string_equal(api_verb(EVHTTP_REQ_OPTIONS), "");
}

static void test_path_components(void **state) {
        char **l = NULL;

        assert_int_equal(api_path_components("/default/web/c", &l), 0);
        assert_int_equal(strv_length(l), 3);
        assert_string_equal(l[0], "default");
        assert_string_equal(l[2], "c");
        l = strv_free(l);
        assert_int_equal(api_path_components("//a%20b///c/", &l), 0);
        assert_int_equal(strv_length(l), 2);
        assert_string_equal(l[0], "a b");
        l = strv_free(l);
        assert_int_equal(api_path_components("", &l), 0);
        assert_int_equal(strv_length(l), 0);
        l = strv_free(l);
        /* nothing that could walk out of a path when joined, no NUL */
        assert_int_equal(api_path_components("/a/../b", &l), -EINVAL);
        assert_int_equal(api_path_components("/a/%2e%2e/b", &l), -EINVAL);
        assert_int_equal(api_path_components("/a/./b", &l), -EINVAL);
        assert_int_equal(api_path_components("/a%2fb", &l), -EINVAL);
        assert_int_equal(api_path_components("/a%00b", &l), -EINVAL);
        assert_null(l);
}

static void test_query(void **state) {
        _cleanup_free_ char *v = api_query_get("a=1&cmd=ls+-l&a=2", "cmd");
        _cleanup_strv_free_ char **all = NULL;

        assert_string_equal(v, "ls -l");
        assert_int_equal(api_query_get_all("command=sh&command=-c&command=echo%20hi", "command", &all), 0);
        assert_int_equal(strv_length(all), 3);
        assert_string_equal(all[2], "echo hi");
        assert_null(api_query_get("a=1", "b"));
        assert_null(api_query_get(NULL, "b"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_subresources),
                cmocka_unit_test(test_verbs),
                cmocka_unit_test(test_path_components),
                cmocka_unit_test(test_query),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
