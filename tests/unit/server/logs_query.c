/* SPDX-License-Identifier: Apache-2.0 */
/* The options of a /containerLogs request from its query string (v1.PodLogOptions). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "basic/error.h"
#include "basic/time.h"
#include "server/logs_query.h"

#define TS1 "2016-10-06T00:17:09.669794202Z"
#define TS1_NSEC (INT64_C(1475713029) * NSEC_PER_SEC + 669794202)

#define NOW (INT64_C(1700000000) * NSEC_PER_SEC)

static void test_options_defaults_and_values(void **state) {
        struct logs_options o;
        struct ck_error *err = NULL;

        assert_int_equal(api_log_options_from_query_at(NULL, NOW, &o, &err), 0);
        assert_false(o.follow || o.timestamps || o.previous);
        assert_int_equal(o.tail_lines, -1);
        assert_int_equal(o.limit_bytes, -1);
        assert_int_equal(o.since_nsec, 0);
        assert_int_equal(api_log_options_from_query_at("", NOW, &o, &err), 0);
        assert_int_equal(o.tail_lines, -1);

        assert_int_equal(api_log_options_from_query_at("follow=true&timestamps=1&tailLines=10&limitBytes=100&"
                                                       "previous=True&container=x&unknown=%zz",
                                                       NOW, &o, &err),
                         0);
        assert_null(err);
        assert_true(o.follow);
        assert_true(o.timestamps);
        assert_true(o.previous);
        assert_int_equal(o.tail_lines, 10);
        assert_int_equal(o.limit_bytes, 100);

        /* booleans: only "0" and "false" are false; a bare key or empty value is true */
        assert_int_equal(api_log_options_from_query_at("follow=false&timestamps=0&previous=FALSE", NOW, &o, &err), 0);
        assert_false(o.follow || o.timestamps || o.previous);
        assert_int_equal(api_log_options_from_query_at("follow&timestamps=&&previous=no", NOW, &o, &err), 0);
        assert_true(o.follow && o.timestamps && o.previous);
        /* names are case-sensitive, the first value wins */
        assert_int_equal(api_log_options_from_query_at("Follow=true&tailLines=3&tailLines=-5", NOW, &o, &err), 0);
        assert_false(o.follow);
        assert_int_equal(o.tail_lines, 3);
        /* encoded names and values */
        assert_int_equal(api_log_options_from_query_at("tail%4Cines=%2B7", NOW, &o, &err), 0);
        assert_int_equal(o.tail_lines, 7);

        /* the old "tail" */
        assert_int_equal(api_log_options_from_query_at("tail=5", NOW, &o, &err), 0);
        assert_int_equal(o.tail_lines, 5);
        assert_int_equal(api_log_options_from_query_at("tail=all&tailLines=5", NOW, &o, &err), 0);
        assert_int_equal(o.tail_lines, -1);
        assert_int_equal(api_log_options_from_query_at("tail=&tailLines=5", NOW, &o, &err), 0);
        assert_int_equal(o.tail_lines, 5);

        /* since */
        assert_int_equal(api_log_options_from_query_at("sinceSeconds=10", NOW, &o, &err), 0);
        assert_int_equal(o.since_nsec, NOW - 10 * NSEC_PER_SEC);
        assert_int_equal(api_log_options_from_query_at("sinceSeconds=9999999999", NOW, &o, &err), 0);
        assert_int_equal(o.since_nsec, 0);
        assert_int_equal(api_log_options_from_query_at("sinceTime=" TS1, NOW, &o, &err), 0);
        assert_int_equal(o.since_nsec, TS1_NSEC);
        assert_int_equal(api_log_options_from_query_at("sinceTime=2016-10-06T02%3A17%3A09%2B02%3A00", NOW, &o, &err),
                         0);
        assert_int_equal(o.since_nsec, INT64_C(1475713029) * NSEC_PER_SEC);
        assert_int_equal(api_log_options_from_query_at("sinceTime=", NOW, &o, &err), 0);
        assert_int_equal(o.since_nsec, 0);
        assert_null(err);

        /* the real clock when no time is given */
        assert_int_equal(api_log_options_from_query("sinceSeconds=1", &o, &err), 0);
        assert_true(o.since_nsec > NOW);
}

static void expect_error(const char *q, int code, const char *message) {
        struct logs_options o = { .tail_lines = 42 };
        struct ck_error *err = NULL;

        assert_int_equal(api_log_options_from_query_at(q, NOW, &o, &err), code);
        assert_non_null(err);
        if (message)
                assert_string_equal(ck_error_message(err), message);
        assert_int_equal(o.tail_lines, 42); /* untouched */
        ck_error_free(err);
}

static void test_options_errors(void **state) {
        struct logs_options o;

        expect_error("tailLines=-1", -EINVAL, "tailLines: Invalid value: -1: must be greater than or equal to 0");
        expect_error("tail=-3", -EINVAL, "tailLines: Invalid value: -3: must be greater than or equal to 0");
        expect_error("limitBytes=0", -EINVAL, "limitBytes: Invalid value: 0: must be greater than 0");
        expect_error("limitBytes=-10", -EINVAL, "limitBytes: Invalid value: -10: must be greater than 0");
        expect_error("sinceSeconds=0", -EINVAL, "sinceSeconds: Invalid value: 0: must be greater than 0");
        expect_error("sinceSeconds=-1", -EINVAL, "sinceSeconds: Invalid value: -1: must be greater than 0");
        expect_error("sinceSeconds=10&sinceTime=" TS1, -EINVAL,
                     "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified");
        /* an empty sinceTime is still "set" */
        expect_error("sinceSeconds=10&sinceTime=", -EINVAL, NULL);
        expect_error("tailLines=-1&limitBytes=0", -EINVAL,
                     "[tailLines: Invalid value: -1: must be greater than or equal to 0, "
                     "limitBytes: Invalid value: 0: must be greater than 0]");

        expect_error("tailLines=abc", -EBADMSG, NULL);
        expect_error("tailLines=", -EBADMSG, NULL);
        expect_error("tailLines=%201", -EBADMSG, NULL);
        expect_error("limitBytes=1e3", -EBADMSG, NULL);
        expect_error("sinceSeconds=99999999999999999999", -EBADMSG, NULL);
        expect_error("sinceTime=yesterday", -EBADMSG, NULL);
        expect_error("sinceTime=2016-10-06T00:17:09", -EBADMSG, NULL);
        expect_error("tailLines=5%00x", -EBADMSG, NULL);

        /* no error string wanted */
        assert_int_equal(api_log_options_from_query_at("tailLines=-1", NOW, &o, NULL), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_options_defaults_and_values),
                cmocka_unit_test(test_options_errors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
