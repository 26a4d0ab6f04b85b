/* SPDX-License-Identifier: Apache-2.0 */
/* The downward API's field paths (pkg/fieldpath) and resource values (pkg/api/v1/resource), shared by the
 * environment and the downwardAPI volume. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "apis/fieldpath.h"
#include "basic/error.h"
#include "apis/resource.h"
#include "basic/strmap.h"

static struct pod *make_pod(void) {
        struct pod *p = pod_new();
        assert_non_null(p);
        p->name = strdup("web");
        p->namespace_ = strdup("default");
        p->uid = strdup("u-1");
        assert_int_equal(strmap_set(&p->labels, "b", "two \"quoted\"\n"), 0);
        assert_int_equal(strmap_set(&p->labels, "a", "one"), 0);
        assert_int_equal(strmap_set(&p->annotations, "k", "v"), 0);
        return p;
}

static void check_value(const struct pod *p, const char *path, const char *want) {
        _cleanup_free_ char *v = NULL;
        _cleanup_ck_error_ struct ck_error *error = NULL;
        assert_int_equal(fieldpath_extract(p, path, &v, &error), 0);
        assert_null(error);
        assert_string_equal(v, want);
}

static void check_error(const struct pod *p, const char *path, const char *want) {
        _cleanup_free_ char *v = NULL;
        _cleanup_ck_error_ struct ck_error *error = NULL;
        assert_int_equal(fieldpath_extract(p, path, &v, &error), -EINVAL);
        assert_null(v);
        assert_string_equal(ck_error_message(error), want);
}

static void test_extract(void **state) {
        struct pod *p = make_pod();

        check_value(p, "metadata.name", "web");
        check_value(p, "metadata.namespace", "default");
        check_value(p, "metadata.uid", "u-1");
        /* FormatMap: sorted by key, values as Go's %q */
        check_value(p, "metadata.labels", "a=\"one\"\nb=\"two \\\"quoted\\\"\\n\"");
        check_value(p, "metadata.annotations", "k=\"v\"");
        check_value(p, "metadata.labels['a']", "one");
        check_value(p, "metadata.annotations['k']", "v");
        check_value(p, "metadata.labels['missing']", "");
        check_error(p, "spec.nodeName", "unsupported fieldPath: spec.nodeName");
        check_error(p, "metadata.name['x']", "fieldPath \"metadata.name['x']\" does not support subscript");
        pod_free(p);
}

static void test_split_subscript(void **state) {
        _cleanup_free_ char *path = NULL;
        const char *sub;
        size_t n;

        assert_true(fieldpath_split_subscript("metadata.labels['a.b/c']", &path, &sub, &n));
        assert_string_equal(path, "metadata.labels");
        assert_int_equal(n, strlen("a.b/c"));
        assert_memory_equal(sub, "a.b/c", n);
        free(path);
        path = NULL;
        assert_false(fieldpath_split_subscript("metadata.labels", &path, &sub, &n));
        assert_false(fieldpath_split_subscript("['a']", &path, &sub, &n));
}

static void test_resource_values(void **state) {
        struct container c = {};
        struct resource_allocatable alloc = { .cpu_milli = 4000, .memory = 8LL << 30, .ephemeral_storage = 100 };
        struct quantity mi = {};
        char *v = NULL;

        assert_int_equal(quantity_parse("1Mi", &mi), 0);
        c.resources.limits.n = 1;
        c.resources.limits.names = (char *[]) { (char *) "memory" };
        c.resources.limits.values = (struct quantity[]) { {} };
        assert_int_equal(quantity_parse("64Mi", &c.resources.limits.values[0]), 0);

        assert_int_equal(resource_container_value(&c, "limits.memory", &mi, &alloc, &v), 0);
        assert_string_equal(v, "64");
        free(v);
        /* no cpu limit: the node's allocatable, in cores rounded up */
        assert_int_equal(resource_container_value(&c, "limits.cpu", NULL, &alloc, &v), 0);
        assert_string_equal(v, "4");
        free(v);
        assert_int_equal(resource_container_value(&c, "limits.ephemeral-storage", NULL, &alloc, &v), 0);
        assert_string_equal(v, "100");
        free(v);
        /* no request, no hugepages limit: 0 */
        assert_int_equal(resource_container_value(&c, "requests.cpu", NULL, &alloc, &v), 0);
        assert_string_equal(v, "0");
        free(v);
        assert_int_equal(resource_container_value(&c, "limits.hugepages-2Mi", NULL, &alloc, &v), 0);
        assert_string_equal(v, "0");
        free(v);
        assert_int_equal(resource_container_value(&c, "limits.gpu", NULL, &alloc, &v), -EINVAL);
        assert_int_equal(resource_container_value(&c, "memory", NULL, &alloc, &v), -EINVAL);
        quantity_done(&c.resources.limits.values[0]);
        quantity_done(&mi);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_extract),
                cmocka_unit_test(test_split_subscript),
                cmocka_unit_test(test_resource_values),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
