/* SPDX-License-Identifier: Apache-2.0 */
/* The methods an endpoint takes and the Allow header of its 405 (upstream v1.37's go-restful routing). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <event2/http.h>

#include "server/methods.h"

static void test_allow_header(void **state) {
        char buf[API_ALLOW_MAX];
        (void) state;

        /* a read-only endpoint (GET routes only) */
        assert_string_equal(api_allow_header(EVHTTP_REQ_GET, buf), "GET");
        /* /stats/summary, /exec, /attach, /portForward: GET then POST, the order of their routes */
        assert_string_equal(api_allow_header(EVHTTP_REQ_POST | EVHTTP_REQ_GET, buf), "GET, POST");
        /* /run */
        assert_string_equal(api_allow_header(EVHTTP_REQ_POST, buf), "POST");
        assert_string_equal(api_allow_header(EVHTTP_REQ_GET | EVHTTP_REQ_HEAD, buf), "GET, HEAD");
        assert_string_equal(api_allow_header(EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                                     EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS,
                                             buf),
                            "GET, POST, HEAD, PUT, DELETE, PATCH, OPTIONS");
        assert_string_equal(api_allow_header(0, buf), "");
        assert_string_equal(API_METHOD_NOT_ALLOWED_BODY, "405: Method Not Allowed");
}

static void test_method_allowed(void **state) {
        (void) state;

        /* HEAD is not GET: a GET-only endpoint refuses it, as upstream's router */
        assert_true(api_method_allowed(EVHTTP_REQ_GET, EVHTTP_REQ_GET));
        assert_false(api_method_allowed(EVHTTP_REQ_HEAD, EVHTTP_REQ_GET));
        assert_false(api_method_allowed(EVHTTP_REQ_POST, EVHTTP_REQ_GET));
        assert_false(api_method_allowed(EVHTTP_REQ_PUT, EVHTTP_REQ_GET));
        assert_false(api_method_allowed(EVHTTP_REQ_DELETE, EVHTTP_REQ_GET | EVHTTP_REQ_POST));
        assert_true(api_method_allowed(EVHTTP_REQ_POST, EVHTTP_REQ_GET | EVHTTP_REQ_POST));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_allow_header),
                cmocka_unit_test(test_method_allowed),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
