/* SPDX-License-Identifier: Apache-2.0 */
/* The typed Summary as /stats/summary's JSON: absent values left out as upstream leaves out its nil pointers,
 * times in seconds; the test-only JSON parser reads back what the renderer writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "stats/summary.h"
#include "summary_from_json.h"

#define T1 (INT64_C(1700000000) * 1000000000 + 123456789) /* 2023-11-14T22:13:20.123456789Z */

static void test_absent_fields_omitted(void **state) {
        struct stats_summary *s = calloc(1, sizeof(*s));
        struct stats_pod_summary *p;
        struct stats_container_summary *c;
        json_t *j = NULL, *node, *pod, *ctr;
        char *text;

        assert_non_null(s);
        s->node.node_name = strdup("n");
        s->node.start_nsec = T1;
        /* memory with a working set but no availableBytes (no capacity known), no cpu at all */
        s->node.memory = (struct stats_memory) {
                .present = true, .time_nsec = T1, .working_set_bytes = { true, 9000 }, .usage_bytes = { true, 0 }
        };
        /* a filesystem whose statvfs failed: used only */
        s->node.fs = (struct stats_fs) { .present = true, .time_nsec = T1, .used_bytes = { true, 5 } };
        s->pods = p = calloc(1, sizeof(*p));
        s->n_pods = 1;
        p->name = strdup("web");
        p->namespace_ = strdup("default");
        p->uid = strdup("u1");
        p->start_nsec = T1;
        p->ephemeral_storage = (struct stats_fs) { .present = true, .time_nsec = T1, .used_bytes = { true, 0 } };
        p->containers = c = calloc(1, sizeof(*c));
        p->n_containers = 1;
        c->name = strdup("app");
        c->start_nsec = T1;
        /* cpu without usageNanoCores (the first sample) */
        c->cpu = (struct stats_cpu) { .present = true, .time_nsec = T1, .usage_core_nano_seconds = { true, 7 } };
        /* the pod network from CRI without a default interface: an empty name, no counters, no list */
        p->network = (struct stats_network) { .present = true, .time_nsec = T1, .def.name = strdup("") };

        assert_int_equal(stats_summary_to_json(s, &j), 0);
        text = json_dumps(j, JSON_SORT_KEYS);
        node = json_object_get(j, "node");
        assert_string_equal(json_string_value(json_object_get(node, "startTime")), "2023-11-14T22:13:20Z");
        assert_null(json_object_get(node, "cpu"));
        assert_null(json_object_get(node, "swap"));
        assert_null(json_object_get(node, "network"));
        assert_null(json_object_get(node, "runtime")); /* no image filesystem */
        assert_null(json_object_get(node, "rlimit"));
        assert_null(json_object_get(node, "io"));
        assert_int_equal(json_array_size(json_object_get(node, "systemContainers")), 0);
        assert_null(json_object_get(json_object_get(node, "memory"), "availableBytes"));
        assert_null(json_object_get(json_object_get(node, "memory"), "rssBytes"));
        assert_null(json_object_get(json_object_get(node, "memory"), "psi"));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(node, "memory"), "usageBytes")), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(node, "memory"), "time")),
                            "2023-11-14T22:13:20Z");
        assert_int_equal(json_object_size(json_object_get(node, "fs")), 2); /* time, usedBytes */

        pod = json_array_get(json_object_get(j, "pods"), 0);
        assert_null(json_object_get(pod, "cpu"));
        assert_null(json_object_get(pod, "memory"));
        assert_null(json_object_get(pod, "volume"));
        assert_null(json_object_get(pod, "process_stats"));
        assert_null(json_object_get(pod, "swap"));
        assert_non_null(json_object_get(pod, "ephemeral-storage"));
        assert_string_equal(json_string_value(json_object_get(json_object_get(pod, "network"), "name")), "");
        assert_null(json_object_get(json_object_get(pod, "network"), "rxBytes"));
        assert_null(json_object_get(json_object_get(pod, "network"), "interfaces"));
        ctr = json_array_get(json_object_get(pod, "containers"), 0);
        assert_null(json_object_get(ctr, "memory"));
        assert_null(json_object_get(ctr, "rootfs"));
        assert_null(json_object_get(ctr, "logs"));
        assert_null(json_object_get(json_object_get(ctr, "cpu"), "usageNanoCores"));
        assert_int_equal(json_integer_value(json_object_get(json_object_get(ctr, "cpu"), "usageCoreNanoSeconds")), 7);
        assert_string_equal(text,
                            "{\"node\": {\"fs\": {\"time\": \"2023-11-14T22:13:20Z\", \"usedBytes\": 5}, "
                            "\"memory\": {\"time\": \"2023-11-14T22:13:20Z\", \"usageBytes\": 0, "
                            "\"workingSetBytes\": 9000}, \"nodeName\": \"n\", \"startTime\": "
                            "\"2023-11-14T22:13:20Z\", \"systemContainers\": []}, \"pods\": [{\"containers\": "
                            "[{\"cpu\": {\"time\": \"2023-11-14T22:13:20Z\", \"usageCoreNanoSeconds\": 7}, "
                            "\"name\": \"app\", \"startTime\": \"2023-11-14T22:13:20Z\"}], \"ephemeral-storage\": "
                            "{\"time\": \"2023-11-14T22:13:20Z\", \"usedBytes\": 0}, \"network\": {\"name\": \"\", "
                            "\"time\": \"2023-11-14T22:13:20Z\"}, \"podRef\": {\"name\": \"web\", \"namespace\": "
                            "\"default\", \"uid\": \"u1\"}, \"startTime\": \"2023-11-14T22:13:20Z\"}]}");
        free(text);
        json_decref(j);
        stats_summary_free(s);
        assert_null(stats_summary_free(NULL));
        assert_null(stats_summary_pods_container(NULL));
}

/* a full document: parsed into the struct and rendered again, the same JSON */
static void test_round_trip(void **state) {
        static const char doc[] =
                "{\"node\": {\"nodeName\": \"n\", \"systemContainers\": [{\"name\": \"kubelet\", \"startTime\": "
                "\"2023-11-14T22:00:00Z\"}, {\"name\": \"pods\", \"startTime\": \"2023-11-14T22:00:00Z\", \"memory\": "
                "{\"time\": \"2023-11-14T22:13:20Z\", \"availableBytes\": 1, \"workingSetBytes\": 2}}], \"startTime\": "
                "\"2023-07-22T04:26:40Z\", \"cpu\": {\"time\": \"2023-11-14T22:13:20Z\", \"usageNanoCores\": 3, "
                "\"usageCoreNanoSeconds\": 4, \"psi\": {\"full\": {\"total\": 1, \"avg10\": 0.5, \"avg60\": 0.25, "
                "\"avg300\": 0.0}, \"some\": {\"total\": 2, \"avg10\": 1.5, \"avg60\": 0.0, \"avg300\": 0.0}}}, "
                "\"io\": {\"time\": \"2023-11-14T22:13:20Z\", \"psi\": {\"full\": {\"total\": 0, \"avg10\": 0.0, "
                "\"avg60\": 0.0, \"avg300\": 0.0}, \"some\": {\"total\": 9, \"avg10\": 0.0, \"avg60\": 0.0, "
                "\"avg300\": 0.0}}}, \"swap\": {\"time\": \"2023-11-14T22:13:20Z\", \"swapAvailableBytes\": 5, "
                "\"swapUsageBytes\": 6}, \"network\": {\"time\": \"2023-11-14T22:13:20Z\", \"interfaces\": "
                "[{\"name\": \"eth0\", \"rxBytes\": 1, \"rxErrors\": 2, \"txBytes\": 3, \"txErrors\": 4}]}, \"fs\": "
                "{\"time\": \"2023-11-14T22:13:20Z\", \"availableBytes\": 1, \"capacityBytes\": 2, \"usedBytes\": 1, "
                "\"inodesFree\": 3, \"inodes\": 4, \"inodesUsed\": 1}, \"runtime\": {\"imageFs\": {\"time\": "
                "\"2023-11-14T22:13:20Z\", \"usedBytes\": 7}}, \"rlimit\": {\"time\": \"2023-11-14T22:13:20Z\", "
                "\"maxpid\": 100, \"curproc\": 10}}, \"pods\": [{\"podRef\": {\"name\": \"p\", \"namespace\": \"ns\", "
                "\"uid\": \"u\"}, \"startTime\": \"2023-11-14T22:00:00Z\", \"containers\": [{\"name\": \"c\", "
                "\"startTime\": \"2023-11-14T22:00:01Z\", \"memory\": {\"time\": \"2023-11-14T22:13:20Z\", "
                "\"workingSetBytes\": 8}, \"swap\": {\"time\": \"2023-11-14T22:13:20Z\", \"swapUsageBytes\": 0}, "
                "\"rootfs\": {\"time\": \"2023-11-14T22:13:20Z\", \"usedBytes\": 1, \"inodesUsed\": 1}, \"logs\": "
                "{\"time\": \"2023-11-14T22:13:20Z\", \"usedBytes\": 2}}], \"network\": {\"time\": "
                "\"2023-11-14T22:13:20Z\", \"name\": \"eth0\", \"rxBytes\": 1, \"interfaces\": [{\"name\": \"eth0\", "
                "\"rxBytes\": 1}]}, \"volume\": [{\"time\": \"2023-11-14T22:13:20Z\", \"usedBytes\": 3, \"name\": "
                "\"data\", \"pvcRef\": {\"name\": \"claim\", \"namespace\": \"ns\"}}], \"ephemeral-storage\": "
                "{\"time\": \"2023-11-14T22:13:20Z\", \"usedBytes\": 3}, \"process_stats\": {\"process_count\": "
                "4}}]}";
        json_t *in = json_loads(doc, 0, NULL), *out = NULL;
        struct stats_summary *s;

        assert_non_null(in);
        s = summary_from_json(in);
        assert_non_null(stats_summary_pods_container(s));
        assert_int_equal(stats_summary_pods_container(s)->memory.available_bytes.v, 1);
        assert_int_equal(stats_summary_to_json(s, &out), 0);
        if (!json_equal(in, out)) {
                char *a = json_dumps(in, JSON_SORT_KEYS), *b = json_dumps(out, JSON_SORT_KEYS);
                print_error("want %s\n got %s\n", a, b);
                free(a);
                free(b);
                fail();
        }
        json_decref(out);
        json_decref(in);
        stats_summary_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_absent_fields_omitted),
                cmocka_unit_test(test_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
