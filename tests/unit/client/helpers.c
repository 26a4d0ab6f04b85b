/* SPDX-License-Identifier: Apache-2.0 */
/* The pure helpers of the apiserver client: the token bucket (golang.org/x/time/rate semantics), the
 * retry back-off, Retry-After parsing, apimachinery's generic errors (NewGenericServerResponse) and
 * status texts, path escaping. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "basic/macro.h"
#include "client/client-internal.h"

#define MSEC 1000u
#define SEC (1000u * 1000u)

static double absd(double x) {
        return x < 0 ? -x : x;
}

/* ---------------------------------------------------------------- token bucket */

static void test_bucket_burst_then_spacing(void **state) {
        struct kube_token_bucket b;
        const uint64_t t0 = 5 * SEC;

        kube_token_bucket_init(&b, 10, 3, t0);
        /* the burst is available at once */
        assert_int_equal(kube_token_bucket_reserve(&b, t0), 0);
        assert_int_equal(kube_token_bucket_reserve(&b, t0), 0);
        assert_int_equal(kube_token_bucket_reserve(&b, t0), 0);
        /* then one token every 100 ms, reservations queued in order */
        assert_int_equal(kube_token_bucket_reserve(&b, t0), 100 * MSEC);
        assert_int_equal(kube_token_bucket_reserve(&b, t0), 200 * MSEC);
        assert_int_equal(kube_token_bucket_reserve(&b, t0), 300 * MSEC);
        /* 150 ms later: 1.5 tokens refilled against 3 owed */
        assert_int_equal(kube_token_bucket_reserve(&b, t0 + 150 * MSEC), 250 * MSEC);
}

static void test_bucket_refill_capped(void **state) {
        struct kube_token_bucket b;
        uint64_t t = 1;

        kube_token_bucket_init(&b, 20, 2, t);
        assert_int_equal(kube_token_bucket_reserve(&b, t), 0);
        assert_int_equal(kube_token_bucket_reserve(&b, t), 0);
        assert_int_equal(kube_token_bucket_reserve(&b, t), 50 * MSEC);
        /* a long idle time refills up to the burst, not beyond */
        t += 3600ull * SEC;
        assert_int_equal(kube_token_bucket_reserve(&b, t), 0);
        assert_int_equal(kube_token_bucket_reserve(&b, t), 0);
        assert_int_equal(kube_token_bucket_reserve(&b, t), 50 * MSEC);
        assert_int_equal(kube_token_bucket_reserve(&b, t), 100 * MSEC);
}

static void test_bucket_time_going_back(void **state) {
        struct kube_token_bucket b;

        /* a caller with an older timestamp neither gains tokens nor moves the clock back */
        kube_token_bucket_init(&b, 10, 1, 10 * SEC);
        assert_int_equal(kube_token_bucket_reserve(&b, 10 * SEC), 0);
        assert_true(kube_token_bucket_reserve(&b, 9 * SEC) > 0);
        assert_int_equal(b.last_usec, 10 * SEC);
        assert_int_equal(kube_token_bucket_reserve(&b, 10 * SEC), 200 * MSEC);
        /* 300 ms after: the owed tokens are paid back and one is available */
        assert_int_equal(kube_token_bucket_reserve(&b, 10 * SEC + 300 * MSEC), 0);
}

static void test_bucket_no_drift(void **state) {
        struct kube_token_bucket b;
        const double qps = 7; /* 142857.14... us per token: every wait is rounded */
        const unsigned n = 20000;
        uint64_t t = 1000, w = 0, max_w = 0;

        /* a saturating caller that waits exactly what it is told: never faster than qps, never slower */
        kube_token_bucket_init(&b, qps, 1, t);
        assert_int_equal(kube_token_bucket_reserve(&b, t), 0);
        for (unsigned i = 1; i < n; i++) {
                t += w;
                w = kube_token_bucket_reserve(&b, t);
                max_w = MAX(max_w, w);
        }
        t += w; /* when the last one may go */
        assert_true(max_w <= (uint64_t) (SEC / qps) + 2);
        assert_true(absd((double) (t - 1000) - (double) (n - 1) * SEC / qps) <= 10.0);

        /* n reservations at the same instant: the last one's wait is exact, not accumulated rounding */
        kube_token_bucket_init(&b, qps, 5, 0);
        for (unsigned i = 0; i < n; i++)
                w = kube_token_bucket_reserve(&b, 0);
        assert_true(absd((double) w - (double) (n - 5) * SEC / qps) <= 2.0);

        /* a caller that comes back exactly on schedule at exactly qps never waits */
        kube_token_bucket_init(&b, 20, 1, 0);
        for (unsigned i = 0; i < n; i++)
                assert_int_equal(kube_token_bucket_reserve(&b, (uint64_t) i * 50 * MSEC), 0);
        /* ...but one that comes early does */
        assert_true(kube_token_bucket_reserve(&b, (uint64_t) (n - 1) * 50 * MSEC + 10 * MSEC) > 0);
}

static void test_bucket_odd_parameters(void **state) {
        struct kube_token_bucket b;

        /* qps <= 0 and burst < 1 are clamped (the client never passes them: qps < 0 disables the limiter) */
        kube_token_bucket_init(&b, 0, 0, 0);
        assert_true(b.qps > 0);
        assert_true(b.burst >= 1);
        assert_int_equal(kube_token_bucket_reserve(&b, 0), 0);
        assert_true(kube_token_bucket_reserve(&b, 0) > 0);

        /* a fractional rate: 3 per second */
        kube_token_bucket_init(&b, 3, 1, 0);
        assert_int_equal(kube_token_bucket_reserve(&b, 0), 0);
        assert_int_equal(kube_token_bucket_reserve(&b, 0), 333334); /* rounded up, never early */
}

/* ---------------------------------------------------------------- back-off */

static void test_backoff(void **state) {
        uint64_t prev = 0;

        /* 100 ms doubling */
        assert_int_equal(kube_backoff_usec(1, 0.5), 100 * MSEC);
        assert_int_equal(kube_backoff_usec(2, 0.5), 200 * MSEC);
        assert_int_equal(kube_backoff_usec(3, 0.5), 400 * MSEC);
        assert_int_equal(kube_backoff_usec(4, 0.5), 800 * MSEC);
        assert_int_equal(kube_backoff_usec(7, 0.5), 6400 * MSEC);
        /* capped at 10 s */
        assert_int_equal(kube_backoff_usec(8, 0.5), 10 * SEC);
        assert_int_equal(kube_backoff_usec(9, 0.5), 10 * SEC);
        assert_int_equal(kube_backoff_usec(64, 0.5), 10 * SEC);
        assert_int_equal(kube_backoff_usec(1000, 0.5), 10 * SEC);
        assert_int_equal(kube_backoff_usec(UINT32_MAX, 0.5), 10 * SEC);
        /* retry 0 is treated as the first */
        assert_int_equal(kube_backoff_usec(0, 0.5), 100 * MSEC);

        /* jitter: a factor in [0.8, 1.2) */
        assert_int_equal(kube_backoff_usec(1, 0), 80 * MSEC);
        assert_true(kube_backoff_usec(1, 0.999999) < 120 * MSEC);
        assert_true(kube_backoff_usec(1, 0.999999) >= 119 * MSEC);
        assert_int_equal(kube_backoff_usec(8, 0), 8 * SEC);
        assert_true(kube_backoff_usec(8, 0.999999) < 12 * SEC);
        /* out-of-range jitter is clamped */
        assert_int_equal(kube_backoff_usec(1, -1), 80 * MSEC);
        assert_int_equal(kube_backoff_usec(1, NAN), 80 * MSEC);
        assert_int_equal(kube_backoff_usec(1, 7), 120 * MSEC);
        assert_int_equal(kube_backoff_usec(1, INFINITY), 120 * MSEC);

        for (unsigned i = 1; i < 40; i++) {
                uint64_t d = kube_backoff_usec(i, 0.25);
                assert_true(d >= prev);
                assert_true(d <= 10 * SEC);
                prev = d;
        }
        for (double j = 0; j < 1; j += 0.01) {
                uint64_t d = kube_backoff_usec(5, j);
                assert_true(d >= 1280 * MSEC && d < 1920 * MSEC);
        }
}

/* ---------------------------------------------------------------- Retry-After */

static void test_retry_after(void **state) {
        assert_int_equal(kube_parse_retry_after("1"), 1 * SEC);
        assert_int_equal(kube_parse_retry_after("0"), 0);
        assert_int_equal(kube_parse_retry_after("5"), 5 * SEC);
        assert_int_equal(kube_parse_retry_after(" 7\r\n"), 7 * SEC); /* as the header callback passes it */
        assert_int_equal(kube_parse_retry_after("\t12 "), 12 * SEC);
        assert_int_equal(kube_parse_retry_after("007"), 7 * SEC);
        /* capped at 60 s */
        assert_int_equal(kube_parse_retry_after("60"), 60 * SEC);
        assert_int_equal(kube_parse_retry_after("61"), 60 * SEC);
        assert_int_equal(kube_parse_retry_after("86400"), 60 * SEC);
        assert_int_equal(kube_parse_retry_after("9223372036854775807"), 60 * SEC);
        assert_true(kube_parse_retry_after("99999999999999999999999999") <= 60 * SEC);
        /* the HTTP-date form is not supported (client-go only reads delay-seconds) */
        assert_int_equal(kube_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), 0);
        assert_int_equal(kube_parse_retry_after("Fri, 31 Dec 1999 23:59:59 GMT"), 0);
        /* garbage */
        assert_int_equal(kube_parse_retry_after(NULL), 0);
        assert_int_equal(kube_parse_retry_after(""), 0);
        assert_int_equal(kube_parse_retry_after("   "), 0);
        assert_int_equal(kube_parse_retry_after("-1"), 0);
        assert_int_equal(kube_parse_retry_after("+3"), 0);
        assert_int_equal(kube_parse_retry_after("1.5"), 0);
        assert_int_equal(kube_parse_retry_after("3s"), 0);
        assert_int_equal(kube_parse_retry_after("0x10"), 0);
        assert_int_equal(kube_parse_retry_after("abc"), 0);
        assert_int_equal(kube_parse_retry_after("123456789012345678901234567890123456789"), 0);
}

/* ---------------------------------------------------------------- generic errors */

struct generic_case {
        long status;
        const char *method, *server_message;
        const char *reason, *message;
};

/* k8s.io/apimachinery/pkg/api/errors.NewGenericServerResponse with an empty qualifiedResource (so no
 * " (get pods x)" suffix); serverMessage is client-go's: the trimmed body text, "unknown" when there is none. */
static const struct generic_case generic_cases[] = {
        { 400, "GET", NULL, "BadRequest", "the server rejected our request for an unknown reason" },
        { 401, "GET", NULL, "Unauthorized", "the server has asked for the client to provide credentials" },
        { 403, "GET", "nodes \"n1\" is forbidden: User \"x\" cannot get resource", "Forbidden",
          "nodes \"n1\" is forbidden: User \"x\" cannot get resource" },
        /* no body text: upstream would say "unknown"; we keep a readable message */
        { 403, "GET", NULL, "Forbidden", "the server does not allow access to the requested resource" },
        { 404, "GET", NULL, "NotFound", "the server could not find the requested resource" },
        { 404, "DELETE", "404 page not found", "NotFound", "the server could not find the requested resource" },
        { 405, "PATCH", NULL, "MethodNotAllowed", "the server does not allow this method on the requested resource" },
        { 406, "GET", NULL, "NotAcceptable",
          "the server was unable to respond with a content type that the client supports" },
        { 406, "GET", "unknown", "NotAcceptable",
          "the server was unable to respond with a content type that the client supports" },
        { 406, "GET", "only application/yaml is supported", "NotAcceptable", "only application/yaml is supported" },
        { 409, "POST", NULL, "AlreadyExists", "the server reported a conflict" },
        { 409, "PUT", NULL, "Conflict", "the server reported a conflict" },
        { 409, "PATCH", "whatever", "Conflict", "the server reported a conflict" },
        { 410, "GET", NULL, "", "the server responded with the status code 410 but did not return more information" },
        { 415, "PATCH", "the body of the request was in an unknown format", "UnsupportedMediaType",
          "the body of the request was in an unknown format" },
        { 415, "PATCH", NULL, "UnsupportedMediaType",
          "the server was unable to respond with a content type that the client supports" },
        { 422, "PUT", NULL, "Invalid", "the server rejected our request due to an error in our request" },
        { 429, "GET", NULL, "TooManyRequests",
          "the server has received too many requests and has asked us to try again later" },
        { 500, "GET", "boom", "InternalError",
          "an error on the server (\"boom\") has prevented the request from succeeding" },
        { 500, "GET", NULL, "InternalError",
          "an error on the server (\"unknown\") has prevented the request from succeeding" },
        { 502, "PUT", "Bad Gateway", "InternalError",
          "an error on the server (\"Bad Gateway\") has prevented the request from succeeding" },
        /* quoted as Go's %q: one line, quotes and backslashes escaped */
        { 502, "GET", "<html>\r\n<b>\"bad\" gateway\\</b>\t\n</html>", "InternalError",
          "an error on the server (\"<html>\\r\\n<b>\\\"bad\\\" gateway\\\\</b>\\t\\n</html>\") has prevented the "
          "request from succeeding" },
        { 503, "GET", "down", "ServiceUnavailable", "the server is currently unable to handle the request" },
        { 504, "GET", NULL, "Timeout",
          "the server was unable to return a response in the time allotted, but may still be processing the request" },
        { 599, "GET", NULL, "InternalError",
          "an error on the server (\"unknown\") has prevented the request from succeeding" },
        { 302, "GET", NULL, "", "the server responded with the status code 302 but did not return more information" },
        { 418, "GET", "teapot", "",
          "the server responded with the status code 418 but did not return more information" },
};

static void test_generic_error(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(generic_cases); i++) {
                const struct generic_case *c = &generic_cases[i];
                const char *reason = "unset";
                _cleanup_free_ char *msg = kube_generic_error(c->status, c->method, c->server_message, &reason);

                assert_non_null(msg);
                if (!streq(msg, c->message) || !streq(reason, c->reason))
                        fail_msg("%ld %s: got (\"%s\", \"%s\"), want (\"%s\", \"%s\")", c->status, c->method, reason,
                                 msg, c->reason, c->message);
        }
        /* ret_reason is optional, the method may be NULL */
        {
                _cleanup_free_ char *msg = kube_generic_error(404, NULL, NULL, NULL);
                assert_string_equal(msg, "the server could not find the requested resource");
        }
        {
                const char *reason = NULL;
                _cleanup_free_ char *msg = kube_generic_error(409, NULL, NULL, &reason);
                assert_string_equal(reason, "Conflict");
                assert_string_equal(msg, "the server reported a conflict");
        }
}

static void test_status_text(void **state) {
        assert_string_equal(kube_status_text(200), "OK");
        assert_string_equal(kube_status_text(201), "Created");
        assert_string_equal(kube_status_text(404), "Not Found");
        assert_string_equal(kube_status_text(409), "Conflict");
        assert_string_equal(kube_status_text(410), "Gone");
        assert_string_equal(kube_status_text(422), "Unprocessable Entity");
        assert_string_equal(kube_status_text(429), "Too Many Requests");
        assert_string_equal(kube_status_text(500), "Internal Server Error");
        assert_string_equal(kube_status_text(503), "Service Unavailable");
        assert_string_equal(kube_status_text(0), "");
        assert_string_equal(kube_status_text(299), "");
        assert_string_equal(kube_status_text(-1), "");
        assert_string_equal(kube_status_text(99999), "");
}

/* ---------------------------------------------------------------- escaping */

static void check_escape(const char *in, const char *want) {
        _cleanup_free_ char *got = kube_escape(in);
        assert_non_null(got);
        assert_string_equal(got, want);
}

static void test_escape(void **state) {
        check_escape("", "");
        check_escape("node-1.example.com", "node-1.example.com");
        check_escape("AZaz09-._~", "AZaz09-._~");
        check_escape("spec.nodeName=n1,status.phase!=Running", "spec.nodeName%3Dn1%2Cstatus.phase%21%3DRunning");
        check_escape("a b/c?d#e&f+g%h", "a%20b%2Fc%3Fd%23e%26f%2Bg%25h");
        check_escape("\xc3\xa9", "%C3%A9");
        check_escape("\x01\x7f\xff", "%01%7F%FF");
        check_escape(":@[]", "%3A%40%5B%5D");
        assert_null(kube_escape(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_bucket_burst_then_spacing),
                cmocka_unit_test(test_bucket_refill_capped),
                cmocka_unit_test(test_bucket_time_going_back),
                cmocka_unit_test(test_bucket_no_drift),
                cmocka_unit_test(test_bucket_odd_parameters),
                cmocka_unit_test(test_backoff),
                cmocka_unit_test(test_retry_after),
                cmocka_unit_test(test_generic_error),
                cmocka_unit_test(test_status_text),
                cmocka_unit_test(test_escape),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
