/* SPDX-License-Identifier: Apache-2.0 */
/* The merger: deferred delivery, change detection, object reuse, duplicates across sources, first-delivery
 * gating. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "basic/error.h"
#include "basic/strmap.h"
#include "basic/time.h"
#include "config/config-internal.h"
#include "config/config.h"

#define NODE "node-1"

struct recorder {
        unsigned calls;
        struct pod_set last; /* references */
};

static void on_update(const struct pod_set *pods, void *userdata) {
        struct recorder *rec = userdata;

        rec->calls++;
        pod_set_done(&rec->last);
        for (size_t i = 0; i < pods->n; i++)
                assert_int_equal(pod_set_add(&rec->last, pod_ref(pods->pods[i])), 0);
}

static char *pod_yaml(const char *name, const char *image, const char *uid) {
        char *s;
        assert_true(asprintf(&s,
                             "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n%s%s%s"
                             "spec:\n  containers:\n  - name: c\n    image: %s\n",
                             name, uid ? "  uid: " : "", uid ? uid : "", uid ? "\n" : "", image) > 0);
        return s;
}

static struct pod_set pods_from(const char *source, const char *id, const char *yaml) {
        struct pod_set set = {};
        struct ck_error *err = NULL;
        if (pod_config_static_pods_from_manifest(yaml, strlen(yaml), NODE, source, id, &set, &err) < 0)
                fail_msg("pod_config_static_pods_from_manifest: %s", ck_error_message(err));
        return set;
}

static struct pod_set one(const char *source, const char *id, const char *name, const char *image, const char *uid) {
        _cleanup_free_ char *y = pod_yaml(name, image, uid);
        return pods_from(source, id, y);
}

static void run(struct event_base *base) {
        assert_true(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
        assert_true(event_base_loop(base, EVLOOP_NONBLOCK) >= 0);
}

static bool has(const struct pod_set *s, const char *name) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->pods[i]->name, name))
                        return true;
        return false;
}

static void test_deferred_and_change_detection(void **state) {
        struct event_base *base = event_base_new();
        struct recorder rec = {};
        struct pod_config *c = NULL;
        struct pod_set set;
        struct pod *first;
        char *uid1;

        assert_int_equal(pod_config_new(base, NODE, on_update, &rec, &c), 0);

        set = one(CONFIG_SOURCE_FILE, "/m/web.yaml", "web", "nginx:1", NULL);
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        assert_int_equal(set.n, 0);     /* ownership moved */
        assert_int_equal(rec.calls, 0); /* never from inside set_source_pods */
        run(base);
        assert_int_equal(rec.calls, 1);
        assert_int_equal(rec.last.n, 1);
        assert_string_equal(rec.last.pods[0]->name, "web-" NODE);
        first = rec.last.pods[0];
        uid1 = strdup(first->uid);

        /* the same content again, parsed anew: no update, and the first object is kept */
        set = one(CONFIG_SOURCE_FILE, "/m/web.yaml", "web", "nginx:1", NULL);
        assert_ptr_not_equal(set.pods[0], first);
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 1);

        /* several changes before the loop runs: one update with the last state */
        set = one(CONFIG_SOURCE_FILE, "/m/web.yaml", "web", "nginx:2", NULL);
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        set = one(CONFIG_SOURCE_FILE, "/m/web.yaml", "web", "nginx:3", NULL);
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 2);
        assert_int_equal(rec.last.n, 1);
        assert_string_not_equal(rec.last.pods[0]->uid, uid1);

        /* back to an empty set */
        set = (struct pod_set) {};
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 3);
        assert_int_equal(rec.last.n, 0);

        free(uid1);
        pod_set_done(&rec.last);
        pod_config_free(c);
        event_base_free(base);
}

static void test_first_object_kept(void **state) {
        struct event_base *base = event_base_new();
        struct recorder rec = {};
        struct pod_config *c = NULL;
        struct pod_set set;
        struct pod *first;
        char seen[128];

        assert_int_equal(pod_config_new(base, NODE, on_update, &rec, &c), 0);
        set = one(CONFIG_SOURCE_FILE, "/m/a.yaml", "a", "busybox", NULL);
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        first = rec.last.pods[0];
        snprintf(seen, sizeof(seen), "%s", strmap_get(&first->annotations, ANNOTATION_CONFIG_SEEN));

        /* another pod joins: the unchanged one is the same object, config.seen unchanged */
        {
                _cleanup_free_ char *ya = pod_yaml("a", "busybox", NULL), *yb = pod_yaml("b", "busybox", NULL),
                                    *both = NULL;
                assert_true(asprintf(&both, "%s---\n%s", ya, yb) > 0);
                set = pods_from(CONFIG_SOURCE_FILE, "/m/a.yaml", both);
        }
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 2);
        assert_int_equal(rec.last.n, 2);
        assert_ptr_equal(rec.last.pods[0], first);
        assert_string_equal(strmap_get(&rec.last.pods[0]->annotations, ANNOTATION_CONFIG_SEEN), seen);

        pod_set_done(&rec.last);
        pod_config_free(c);
        event_base_free(base);
}

static void test_explicit_uid_edit_detected(void **state) {
        struct event_base *base = event_base_new();
        struct recorder rec = {};
        struct pod_config *c = NULL;
        struct pod_set set;

        assert_int_equal(pod_config_new(base, NODE, on_update, &rec, &c), 0);
        set = one(CONFIG_SOURCE_FILE, "/m/u.yaml", "u", "nginx:1", "11111111-2222-3333-4444-555555555555");
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 1);
        /* same UID (and so the same config hash), other image: still a change */
        set = one(CONFIG_SOURCE_FILE, "/m/u.yaml", "u", "nginx:2", "11111111-2222-3333-4444-555555555555");
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 2);
        assert_string_equal(rec.last.pods[0]->uid, "11111111-2222-3333-4444-555555555555");
        assert_string_equal(rec.last.pods[0]->spec.containers[0].image, "nginx:2");

        pod_set_done(&rec.last);
        pod_config_free(c);
        event_base_free(base);
}

static void test_duplicates_across_sources(void **state) {
        struct event_base *base = event_base_new();
        struct recorder rec = {};
        struct pod_config *c = NULL;
        struct pod_set set;

        assert_int_equal(pod_config_new(base, NODE, on_update, &rec, &c), 0);
        /* sources in the order they were added: file first */
        assert_int_equal(pod_config_register_source(c, CONFIG_SOURCE_FILE, NULL, NULL), 0);
        assert_int_equal(pod_config_register_source(c, CONFIG_SOURCE_HTTP, NULL, NULL), 0);
        assert_int_equal(pod_config_register_source(c, CONFIG_SOURCE_HTTP, NULL, NULL), -EEXIST);

        set = one(CONFIG_SOURCE_HTTP, "http://x/pods", "web", "nginx:http", NULL);
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_HTTP, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 0); /* the file source has not reported yet */

        set = one(CONFIG_SOURCE_FILE, "/m/web.yaml", "web", "nginx:file", NULL);
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 1);
        assert_int_equal(rec.last.n, 1);
        assert_string_equal(rec.last.pods[0]->spec.containers[0].image, "nginx:file");
        assert_string_equal(strmap_get(&rec.last.pods[0]->annotations, ANNOTATION_CONFIG_SOURCE), CONFIG_SOURCE_FILE);

        /* the file pod goes away: the http one with the same name takes its place */
        set = (struct pod_set) {};
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 2);
        assert_int_equal(rec.last.n, 1);
        assert_string_equal(rec.last.pods[0]->spec.containers[0].image, "nginx:http");

        /* duplicate UIDs across sources: first source wins as well */
        set = one(CONFIG_SOURCE_FILE, "/m/x.yaml", "x", "a", "aaaaaaaa-0000-0000-0000-000000000000");
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        set = one(CONFIG_SOURCE_HTTP, "http://x/pods", "y", "b", "aaaaaaaa-0000-0000-0000-000000000000");
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_HTTP, &set), 0);
        run(base);
        assert_int_equal(rec.last.n, 1);
        assert_true(has(&rec.last, "x-" NODE));
        assert_false(has(&rec.last, "y-" NODE));

        pod_set_done(&rec.last);
        pod_config_free(c);
        event_base_free(base);
}

static void test_duplicates_within_source(void **state) {
        struct event_base *base = event_base_new();
        struct recorder rec = {};
        struct pod_config *c = NULL;
        struct pod_set a, b;

        assert_int_equal(pod_config_new(base, NODE, on_update, &rec, &c), 0);
        /* two files defining the same pod name: the first (in name order) wins */
        a = one(CONFIG_SOURCE_FILE, "/m/a.yaml", "same", "first", NULL);
        b = one(CONFIG_SOURCE_FILE, "/m/b.yaml", "same", "second", NULL);
        assert_int_equal(pod_set_add(&a, TAKE_PTR(b.pods[0])), 0);
        pod_set_done(&b);
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &a), 0);
        run(base);
        assert_int_equal(rec.calls, 1);
        assert_int_equal(rec.last.n, 1);
        assert_string_equal(rec.last.pods[0]->spec.containers[0].image, "first");

        pod_set_done(&rec.last);
        pod_config_free(c);
        event_base_free(base);
}

static void test_first_delivery_waits_for_all_sources(void **state) {
        struct event_base *base = event_base_new();
        struct recorder rec = {};
        struct pod_config *c = NULL;
        struct pod_set set;

        assert_int_equal(pod_config_new(base, NODE, on_update, &rec, &c), 0);
        assert_int_equal(pod_config_register_source(c, CONFIG_SOURCE_FILE, NULL, NULL), 0);
        assert_int_equal(pod_config_register_source(c, CONFIG_SOURCE_HTTP, NULL, NULL), 0);
        set = one(CONFIG_SOURCE_FILE, "/m/a.yaml", "a", "busybox", NULL);
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 0);
        /* the http source failed its first fetch: go on without it */
        pod_config_source_attempted(c, CONFIG_SOURCE_HTTP);
        run(base);
        assert_int_equal(rec.calls, 1);
        assert_int_equal(rec.last.n, 1);
        /* an empty first state is still delivered once */
        pod_set_done(&rec.last);
        pod_config_free(c);
        event_base_free(base);

        base = event_base_new();
        rec = (struct recorder) {};
        assert_int_equal(pod_config_new(base, NODE, on_update, &rec, &c), 0);
        set = (struct pod_set) {};
        assert_int_equal(pod_config_set_source_pods(c, CONFIG_SOURCE_FILE, &set), 0);
        run(base);
        assert_int_equal(rec.calls, 1);
        assert_int_equal(rec.last.n, 0);
        pod_config_free(c);
        event_base_free(base);

        /* no source at all: one empty update */
        base = event_base_new();
        rec = (struct recorder) {};
        assert_int_equal(pod_config_new(base, NODE, on_update, &rec, &c), 0);
        assert_int_equal(rec.calls, 0);
        run(base);
        assert_int_equal(rec.calls, 1);
        assert_int_equal(rec.last.n, 0);
        run(base);
        assert_int_equal(rec.calls, 1);
        pod_config_free(c);
        event_base_free(base);
}

static void test_invalid_args(void **state) {
        struct event_base *base = event_base_new();
        struct recorder rec = {};
        struct pod_config *c = NULL;
        struct pod_set set = one(CONFIG_SOURCE_FILE, "/m/a.yaml", "a", "busybox", NULL);

        assert_int_equal(pod_config_new(NULL, NODE, on_update, &rec, &c), -EINVAL);
        assert_int_equal(pod_config_new(base, "", on_update, &rec, &c), -EINVAL);
        assert_null(c); /* untouched on failure */
        assert_int_equal(pod_config_new(base, NODE, on_update, &rec, &c), 0);
        assert_int_equal(pod_config_set_source_pods(c, "", &set), -EINVAL);
        assert_int_equal(set.n, 0); /* freed even on failure */
        assert_int_equal(pod_config_add_file_source(c, "", 1), -EINVAL);
        assert_int_equal(pod_config_add_file_source(c, "/tmp", 0), -EINVAL);
        assert_int_equal(pod_config_add_http_source(c, "ftp://example.com/x", NULL, USEC_PER_SEC), -EINVAL);
        assert_null(pod_config_free(c));
        assert_null(pod_config_free(NULL));
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_deferred_and_change_detection),
                cmocka_unit_test(test_first_object_kept),
                cmocka_unit_test(test_explicit_uid_edit_detected),
                cmocka_unit_test(test_duplicates_across_sources),
                cmocka_unit_test(test_duplicates_within_source),
                cmocka_unit_test(test_first_delivery_waits_for_all_sources),
                cmocka_unit_test(test_invalid_args),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
