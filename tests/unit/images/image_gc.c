/* SPDX-License-Identifier: Apache-2.0 */
/* Image GC: records, least-recently-used order, the choice by space and by age, the threshold math and the
 * state file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "images/image_gc.h"

#define SEC INT64_C(1000000)
#define T0 (INT64_C(1700000000) * SEC)

static void test_detect_and_order(void **state) {
        struct image_gc_records r = {};
        struct image_gc_image imgs[] = {
                { "sha256:a", 100, false },
                { "sha256:b", 200, false },
                { "sha256:pause", 50, true },
                { "sha256:c", 300, false },
        };
        char *in_use1[] = { "sha256:b", NULL };
        char *in_use2[] = { "sha256:a", NULL };
        struct image_gc_record **order = NULL;
        size_t n = 0;

        assert_int_equal(image_gc_records_detect(&r, imgs, 4, in_use1, T0, T0), 0);
        assert_int_equal(r.n, 4);
        assert_int_equal(image_gc_records_find(&r, "sha256:a")->first_detected_usec, T0);
        assert_int_equal(image_gc_records_find(&r, "sha256:a")->last_used_usec, 0);
        assert_int_equal(image_gc_records_find(&r, "sha256:b")->last_used_usec, T0);
        /* later: a is used, c is detected again (first detection kept) */
        assert_int_equal(image_gc_records_detect(&r, imgs, 4, in_use2, T0 + 10 * SEC, T0 + 10 * SEC), 0);
        assert_int_equal(image_gc_records_find(&r, "sha256:c")->first_detected_usec, T0);
        assert_int_equal(image_gc_records_find(&r, "sha256:a")->last_used_usec, T0 + 10 * SEC);

        /* not in use (a), not pinned (pause): c never used, then b (used at T0) */
        assert_int_equal(image_gc_records_eviction_order(&r, in_use2, &order, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(order[0]->id, "sha256:c");
        assert_string_equal(order[1]->id, "sha256:b");
        free(order);

        /* an image the runtime no longer lists is forgotten */
        assert_int_equal(image_gc_records_detect(&r, imgs, 2, NULL, T0 + 20 * SEC, T0 + 20 * SEC), 0);
        assert_int_equal(r.n, 2);
        assert_null(image_gc_records_find(&r, "sha256:c"));
        image_gc_records_done(&r);
}

/* the first detection after a start: the images found were detected "at an unknown time in the past", so
 * imageMinimumGCAge does not hold them back; the ones in use still get their last use now */
static void test_initial_detection(void **state) {
        struct image_gc_records r = {};
        struct image_gc_image imgs[] = { { "sha256:a", 100, false }, { "sha256:b", 200, false } };
        char *in_use[] = { "sha256:b", NULL };
        struct image_gc_record **order = NULL, **out = NULL;
        size_t n = 0, n_out = 0;
        int64_t freed = 0;

        assert_int_equal(image_gc_records_detect(&r, imgs, 2, in_use, 0, T0), 0);
        assert_int_equal(image_gc_records_find(&r, "sha256:a")->first_detected_usec, 0);
        assert_int_equal(image_gc_records_find(&r, "sha256:b")->last_used_usec, T0);
        assert_int_equal(image_gc_records_eviction_order(&r, in_use, &order, &n), 0);
        assert_int_equal(n, 1);
        /* a minimum age of 2 minutes, one second after the start: a is old enough */
        assert_int_equal(image_gc_select_space(order, n, 100, T0 + SEC, 120 * SEC, &out, &n_out, &freed), 0);
        assert_int_equal(n_out, 1);
        assert_string_equal(out[0]->id, "sha256:a");
        assert_int_equal(freed, 100);
        free(out);
        free(order);
        image_gc_records_done(&r);
}

static void test_select(void **state) {
        struct image_gc_record recs[] = {
                { .id = "old", .first_detected_usec = T0, .last_used_usec = 0, .size = 100 },
                { .id = "young", .first_detected_usec = T0 + 590 * SEC, .last_used_usec = 0, .size = 1000 },
                { .id = "used", .first_detected_usec = T0, .last_used_usec = T0 + 100 * SEC, .size = 200 },
                { .id = "newer", .first_detected_usec = T0, .last_used_usec = T0 + 200 * SEC, .size = 400 },
        };
        struct image_gc_record *order[] = { &recs[0], &recs[1], &recs[2], &recs[3] };
        struct image_gc_record **out = NULL;
        int64_t freed = 0;
        size_t n = 0;

        /* 250 bytes: old (100) and used (200); young is under the 2m MinAge */
        assert_int_equal(image_gc_select_space(order, 4, 250, T0 + 600 * SEC, 120 * SEC, &out, &n, &freed), 0);
        assert_int_equal(n, 2);
        assert_string_equal(out[0]->id, "old");
        assert_string_equal(out[1]->id, "used");
        assert_int_equal(freed, 300);
        free(out);
        /* more than there is: everything eligible, short of the goal */
        assert_int_equal(image_gc_select_space(order, 4, 100000, T0 + 600 * SEC, 120 * SEC, &out, &n, &freed), 0);
        assert_int_equal(n, 3);
        assert_int_equal(freed, 700);
        free(out);

        /* MaxAge 5m: unused for longer than that (old: never used, seen 600 s ago; used: 500 s ago; newer 400 s
         * ago); young was seen 10 s ago */
        assert_int_equal(image_gc_select_old(order, 4, T0 + 600 * SEC, T0, 300 * SEC, &out, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(out[0]->id, "old");
        free(out);
        /* but not before the kubelet has run for MaxAge */
        assert_int_equal(image_gc_select_old(order, 4, T0 + 600 * SEC, T0 + 400 * SEC, 300 * SEC, &out, &n), 0);
        assert_int_equal(n, 0);
        free(out);
}

static void test_amount(void **state) {
        struct image_gc_policy p = { .high_threshold_percent = 85, .low_threshold_percent = 80 };
        int usage;
        int64_t amount;

        assert_int_equal(image_gc_amount_to_free(&p, 1000, 200, &usage, &amount), 0);
        assert_int_equal(usage, 80);
        assert_int_equal(amount, 0);
        assert_int_equal(image_gc_amount_to_free(&p, 1000, 100, &usage, &amount), 0);
        assert_int_equal(usage, 90);
        assert_int_equal(amount, 100); /* to 80%: 200 available */
        assert_int_equal(image_gc_amount_to_free(&p, 1000, 151, &usage, &amount), 0);
        assert_int_equal(usage, 85); /* integer math as upstream: 100 - 15 */
        assert_int_equal(amount, 49);
        assert_int_equal(image_gc_amount_to_free(&p, 0, 0, &usage, &amount), -EINVAL);
}

static void test_state_file(void **state) {
        struct image_gc_records r = {}, back = {};
        struct image_gc_image imgs[] = { { "sha256:a", 1, false }, { "sha256:b", 2, false } };
        char *in_use[] = { "sha256:b", NULL };
        json_t *j;
        char *text;

        assert_int_equal(image_gc_records_detect(&r, imgs, 2, in_use, T0 + 123456, T0 + 123456), 0);
        j = image_gc_records_to_json(&r);
        assert_non_null(j);
        text = json_dumps(j, JSON_SORT_KEYS);
        assert_non_null(strstr(text, "\"sha256:b\": {\"firstDetected\": \"2023-11-14T22:13:20.123456000Z\", "
                                     "\"lastUsed\": \"2023-11-14T22:13:20.123456000Z\"}"));
        free(text);
        assert_int_equal(image_gc_records_from_json(j, &back), 0);
        assert_int_equal(back.n, 2);
        assert_int_equal(image_gc_records_find(&back, "sha256:a")->first_detected_usec, T0 + 123456);
        assert_int_equal(image_gc_records_find(&back, "sha256:a")->last_used_usec, 0);
        assert_int_equal(image_gc_records_find(&back, "sha256:b")->last_used_usec, T0 + 123456);
        json_decref(j);
        image_gc_records_done(&back);

        j = json_pack("{s:{s:{s:s}}}", "images", "x", "firstDetected", "yesterday");
        assert_int_equal(image_gc_records_from_json(j, &r), -EINVAL);
        assert_int_equal(r.n, 2); /* untouched */
        json_decref(j);
        image_gc_records_done(&r);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_detect_and_order), cmocka_unit_test(test_initial_detection),
                cmocka_unit_test(test_select),           cmocka_unit_test(test_amount),
                cmocka_unit_test(test_state_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
