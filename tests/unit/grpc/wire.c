/* SPDX-License-Identifier: Apache-2.0 */
/* gRPC wire helpers (framing, grpc-timeout, grpc-message decoding) and the status to errno mapping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>

#include "basic/time.h"
#include "grpc/client.h"
#include "grpc/wire.h"

static void test_frame(void **state) {
        uint8_t b[GRPC_FRAME_HEADER];
        grpc_frame_header(b, 0x01020304);
        assert_int_equal(b[0], 0);
        assert_int_equal(b[1], 1);
        assert_int_equal(b[4], 4);
        assert_int_equal(grpc_frame_length(b), 0x01020304);
        grpc_frame_header(b, 0);
        assert_int_equal(grpc_frame_length(b), 0);
}

static void test_timeout(void **state) {
        char buf[32];
        grpc_format_timeout(1, buf, sizeof(buf));
        assert_string_equal(buf, "1u");
        grpc_format_timeout(99999999, buf, sizeof(buf));
        assert_string_equal(buf, "99999999u");
        grpc_format_timeout(100000000, buf, sizeof(buf)); /* 100 s: no longer fits in µs */
        assert_string_equal(buf, "100000m");
        grpc_format_timeout(120 * USEC_PER_SEC, buf, sizeof(buf));
        assert_string_equal(buf, "120000m");
        grpc_format_timeout(100000000001ULL, buf, sizeof(buf)); /* rounds up, never shortens */
        assert_string_equal(buf, "100001S");
}

static void test_percent_decode(void **state) {
        char *s = grpc_percent_decode("a%20b%zz%4", 10);
        assert_string_equal(s, "a b%zz%4");
        free(s);
        s = grpc_percent_decode("container %22x%22 not found", 27);
        assert_string_equal(s, "container \"x\" not found");
        free(s);
}

static void test_errno_mapping(void **state) {
        assert_int_equal(grpc_status_to_errno(GRPC_OK), 0);
        assert_int_equal(grpc_status_to_errno(GRPC_NOT_FOUND), -ENOENT);
        assert_int_equal(grpc_status_to_errno(GRPC_DEADLINE_EXCEEDED), -ETIMEDOUT);
        assert_int_equal(grpc_status_to_errno(GRPC_UNAVAILABLE), -ECONNREFUSED);
        assert_int_equal(grpc_status_to_errno(GRPC_CANCELLED), -ECANCELED);
        assert_int_equal(grpc_status_to_errno(GRPC_INTERNAL), -EIO);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_frame),
                cmocka_unit_test(test_timeout),
                cmocka_unit_test(test_percent_decode),
                cmocka_unit_test(test_errno_mapping),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
