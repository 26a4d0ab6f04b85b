/* SPDX-License-Identifier: Apache-2.0 */
/* /metrics/resource text from a summary, and Go-compatible float formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <event2/buffer.h>
#include <math.h>

#include "stats/summary.h"
#include "summary_from_json.h"

static void check_float(double v, const char *want) {
        char buf[64];
        assert_string_equal(stats_format_float(v, buf, sizeof(buf)), want);
}

static void test_format_float(void **state) {
        /* what Go's strconv.FormatFloat(v, 'g', -1, 64) gives */
        check_float(0, "0");
        check_float(1, "1");
        check_float(0.5, "0.5");
        check_float(100, "100");
        check_float(123456, "123456");
        check_float(1e6, "1e+06");
        check_float(1234567, "1.234567e+06");
        check_float(21594112, "2.1594112e+07");
        check_float(379.793781517, "379.793781517");
        check_float(0.0001, "0.0001");
        check_float(0.00001, "1e-05");
        check_float(0.1, "0.1");
        check_float(1.0 / 3.0, "0.3333333333333333");
        check_float(1700000000, "1.7e+09");
        check_float(1700000000.123456789, "1.7000000001234567e+09");
        check_float(-2.5, "-2.5");
        check_float(1e21, "1e+21");
        check_float(NAN, "NaN");
        check_float(INFINITY, "+Inf");
        check_float(-INFINITY, "-Inf");
}

static char *render(const struct stats_summary *summary) {
        struct evbuffer *b = evbuffer_new();
        size_t n;
        char *s;

        assert_non_null(b);
        assert_int_equal(stats_resource_metrics(summary, b), 0);
        n = evbuffer_get_length(b);
        s = malloc(n + 1);
        assert_non_null(s);
        evbuffer_remove(b, s, n);
        s[n] = '\0';
        evbuffer_free(b);
        return s;
}

static const char summary_json[] =
        "{\"node\": {\"nodeName\": \"n1\", \"startTime\": \"2023-07-22T04:26:40Z\","
        "  \"cpu\": {\"time\": \"2023-11-14T22:13:20Z\", \"usageNanoCores\": 1000, \"usageCoreNanoSeconds\": 379793781517},"
        "  \"memory\": {\"time\": \"2023-11-14T22:13:21Z\", \"workingSetBytes\": 407805952}},"
        " \"pods\": ["
        "  {\"podRef\": {\"name\": \"web\", \"namespace\": \"default\", \"uid\": \"u1\"}, \"startTime\": \"2023-11-14T22:00:00Z\","
        "   \"containers\": ["
        "     {\"name\": \"sidecar\", \"startTime\": \"2023-11-14T22:00:05Z\","
        "      \"cpu\": {\"time\": \"2023-11-14T22:13:20Z\", \"usageCoreNanoSeconds\": 2000000},"
        "      \"memory\": {\"time\": \"2023-11-14T22:13:20Z\", \"workingSetBytes\": 1048576}},"
        "     {\"name\": \"app\", \"startTime\": \"2023-11-14T22:00:01Z\","
        "      \"cpu\": {\"time\": \"2023-11-14T22:13:20Z\", \"usageCoreNanoSeconds\": 1500000000},"
        "      \"memory\": {\"time\": \"2023-11-14T22:13:20Z\", \"workingSetBytes\": 21594112}}],"
        "   \"cpu\": {\"time\": \"2023-11-14T22:13:20Z\", \"usageCoreNanoSeconds\": 1502000000},"
        "   \"memory\": {\"time\": \"2023-11-14T22:13:20Z\", \"workingSetBytes\": 22642688}},"
        "  {\"podRef\": {\"name\": \"dns\", \"namespace\": \"kube-system\", \"uid\": \"u2\"}, \"startTime\": \"2023-11-14T22:00:00Z\","
        "   \"containers\": ["
        "     {\"name\": \"app\", \"startTime\": \"2023-11-14T21:00:00Z\","
        "      \"memory\": {\"time\": \"2023-11-14T22:13:19Z\", \"workingSetBytes\": 5}}]}"
        " ]}";

static const char want[] =
        "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds\n"
        "# TYPE container_cpu_usage_seconds_total counter\n"
        "container_cpu_usage_seconds_total{container=\"app\",namespace=\"default\",pod=\"web\"} 1.5 1700000000000\n"
        "container_cpu_usage_seconds_total{container=\"sidecar\",namespace=\"default\",pod=\"web\"} 0.002 1700000000000\n"
        "# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes\n"
        "# TYPE container_memory_working_set_bytes gauge\n"
        "container_memory_working_set_bytes{container=\"app\",namespace=\"default\",pod=\"web\"} 2.1594112e+07 1700000000000\n"
        "container_memory_working_set_bytes{container=\"app\",namespace=\"kube-system\",pod=\"dns\"} 5 1699999999000\n"
        "container_memory_working_set_bytes{container=\"sidecar\",namespace=\"default\",pod=\"web\"} 1.048576e+06 1700000000000\n"
        "# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds\n"
        "# TYPE container_start_time_seconds gauge\n"
        "container_start_time_seconds{container=\"app\",namespace=\"default\",pod=\"web\"} 1.699999201e+09\n"
        "container_start_time_seconds{container=\"app\",namespace=\"kube-system\",pod=\"dns\"} 1.6999956e+09\n"
        "container_start_time_seconds{container=\"sidecar\",namespace=\"default\",pod=\"web\"} 1.699999205e+09\n"
        "# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds\n"
        "# TYPE node_cpu_usage_seconds_total counter\n"
        "node_cpu_usage_seconds_total 379.793781517 1700000000000\n"
        "# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes\n"
        "# TYPE node_memory_working_set_bytes gauge\n"
        "node_memory_working_set_bytes 4.07805952e+08 1700000001000\n"
        "# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds\n"
        "# TYPE pod_cpu_usage_seconds_total counter\n"
        "pod_cpu_usage_seconds_total{namespace=\"default\",pod=\"web\"} 1.502 1700000000000\n"
        "# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes\n"
        "# TYPE pod_memory_working_set_bytes gauge\n"
        "pod_memory_working_set_bytes{namespace=\"default\",pod=\"web\"} 2.2642688e+07 1700000000000\n"
        "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n"
        "# TYPE resource_scrape_error gauge\n"
        "resource_scrape_error 0\n"
        "# HELP scrape_error [ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise\n"
        "# TYPE scrape_error gauge\n"
        "scrape_error 0\n";

static void test_resource_metrics(void **state) {
        json_error_t err;
        json_t *s = json_loads(summary_json, 0, &err);
        struct stats_summary *sum;
        char *text;

        assert_non_null(s);
        sum = summary_from_json(s);
        text = render(sum);
        assert_string_equal(text, want);
        free(text);
        stats_summary_free(sum);
        json_decref(s);
}

static void test_resource_metrics_error(void **state) {
        char *text = render(NULL);
        assert_string_equal(
                text,
                "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n"
                "# TYPE resource_scrape_error gauge\n"
                "resource_scrape_error 1\n"
                "# HELP scrape_error [ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container "
                "metrics, 0 otherwise\n"
                "# TYPE scrape_error gauge\n"
                "scrape_error 1\n");
        free(text);
}

static void test_label_escaping(void **state) {
        json_t *s = json_pack("{s:{s:s},s:[{s:{s:s,s:s},s:[{s:s,s:{s:s,s:I}}]}]}", "node", "nodeName", "n", "pods",
                              "podRef", "name", "a\"b", "namespace", "x\\y\nz", "containers", "name", "c", "memory",
                              "time", "bad time", "workingSetBytes", (json_int_t) 1);
        struct stats_summary *sum;
        char *text;

        assert_non_null(s);
        sum = summary_from_json(s); /* a time that does not parse: none (0) */
        text = render(sum);
        stats_summary_free(sum);
        /* a stat without a time: no timestamp */
        assert_non_null(strstr(
                text,
                "container_memory_working_set_bytes{container=\"c\",namespace=\"x\\\\y\\nz\",pod=\"a\\\"b\"} 1\n"));
        assert_null(strstr(text, "node_cpu"));
        assert_null(strstr(text, "container_start_time_seconds"));
        free(text);
        json_decref(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_format_float),
                cmocka_unit_test(test_resource_metrics),
                cmocka_unit_test(test_resource_metrics_error),
                cmocka_unit_test(test_label_escaping),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
