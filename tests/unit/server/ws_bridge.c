/* SPDX-License-Identifier: Apache-2.0 */
/* The pure parts of the kubelet's WebSocket streaming (server/ws_bridge.c): which requests are translated or
 * tunnelled, the answer's headers, the protocol versions, and the v5 error channel's Status written as upstream's
 * stream translator writes it (the JSON texts below are what upstream's json.Marshal of metav1.Status gives). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "server/ws_bridge.h"

static void test_mode(void **state) {
        (void) state;
        assert_int_equal(wsb_mode_of("websocket", "v5.channel.k8s.io", 0), WSB_TRANSLATE);
        assert_int_equal(wsb_mode_of("WebSocket", "v4.channel.k8s.io, v5.channel.k8s.io", 0), WSB_TRANSLATE);
        /* without v5 (the stream close protocol) the request goes to the runtime as it is, as upstream */
        assert_int_equal(wsb_mode_of("websocket", "v4.channel.k8s.io,channel.k8s.io", 0), WSB_PROXY);
        assert_int_equal(wsb_mode_of("websocket", NULL, 0), WSB_PROXY);
        assert_int_equal(wsb_mode_of("SPDY/3.1", "v5.channel.k8s.io", 0), WSB_PROXY);
        assert_int_equal(wsb_mode_of(NULL, "v5.channel.k8s.io", 0), WSB_PROXY);
        /* port-forward: the tunnelling protocols only */
        assert_int_equal(wsb_mode_of("websocket", "SPDY/3.1+portforward.k8s.io", 1), WSB_TUNNEL);
        assert_int_equal(wsb_mode_of("websocket", "v5.channel.k8s.io", 1), WSB_PROXY);
        assert_int_equal(wsb_mode_of("websocket", "SPDY/3.1+portforward.k8s.io", 0), WSB_PROXY);
        assert_int_equal(wsb_mode_of("websocket", "SPDY/3.1+portforward", 1), WSB_PROXY);
}

static void test_tunnel_protocols(void **state) {
        const char *in = " SPDY/3.1+portforward.k8s.io, v4.channel.k8s.io,SPDY/3.1+x.k8s.io";
        char buf[128];
        const char *out[4];
        (void) state;

        assert_int_equal(wsb_tunnel_protocols(in, buf, out, 4), 2);
        assert_string_equal(out[0], "portforward.k8s.io");
        assert_string_equal(out[1], "x.k8s.io");
        assert_int_equal(wsb_tunnel_protocols(in, buf, out, 1), 1);
        assert_int_equal(wsb_tunnel_protocols(NULL, buf, out, 4), 0);
}

static void test_answer_header(void **state) {
        static const char head[] = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                                   "X-Stream-Protocol-Version:  v4.channel.k8s.io \r\n\r\nX-Not: body\r\n";
        char v[32], small[4];
        (void) state;

        assert_int_equal(wsb_answer_header(head, strlen(head), "x-stream-protocol-version", v, sizeof(v)), 1);
        assert_string_equal(v, "v4.channel.k8s.io");
        assert_int_equal(wsb_answer_header(head, strlen(head), "Upgrade", small, sizeof(small)), 1);
        assert_string_equal(small, "SPD");                                                 /* cut at the cap */
        assert_int_equal(wsb_answer_header(head, strlen(head), "X-Not", v, sizeof(v)), 0); /* past the head */
        assert_int_equal(wsb_answer_header(head, strlen(head), "Connectio", v, sizeof(v)), 0);
        assert_int_equal(wsb_protocol_version("v4.channel.k8s.io"), 4);
        assert_int_equal(wsb_protocol_version("channel.k8s.io"), 1);
        assert_int_equal(wsb_protocol_version("v5.channel.k8s.io"), 5);
        assert_int_equal(wsb_protocol_version("v6.channel.k8s.io"), -EINVAL);
}

static void check_status(int version, const char *err, const char *want) {
        char *s = wsb_status_json(version, (const uint8_t *) err, strlen(err));
        assert_non_null(s);
        assert_string_equal(s, want);
        free(s);
}

static void test_status(void **state) {
        (void) state;
        /* nothing on the error stream, or a Success: Success */
        check_status(4, "", "{\"metadata\":{},\"status\":\"Success\"}");
        check_status(4, "{\"metadata\":{},\"status\":\"Success\"}", "{\"metadata\":{},\"status\":\"Success\"}");
        /* the runtime's exit code (containerd's v4 Status), written as upstream's translator writes it */
        check_status(4,
                     "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero exit "
                     "code: error executing command [sh -c exit 3], exit code 3\",\"reason\":\"NonZeroExitCode\","
                     "\"details\":{\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"3\"}]}}",
                     "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero exit "
                     "code: command terminated with exit code 3\",\"reason\":\"NonZeroExitCode\",\"details\":{"
                     "\"causes\":[{\"reason\":\"ExitCode\",\"message\":\"3\"}]}}");
        /* another failure: an InternalError with the runtime's message */
        check_status(5, "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"no such file\"}",
                     "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal error occurred: no such file\","
                     "\"reason\":\"InternalError\",\"details\":{\"causes\":[{\"message\":\"no such file\"}]},"
                     "\"code\":500}");
        /* an exit code out of range, no ExitCode cause, not JSON, an unknown status */
        check_status(4,
                     "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":"
                     "\"ExitCode\",\"message\":\"300\"}]}}",
                     "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal error occurred: error stream "
                     "protocol error: invalid exit code value \\\"300\\\"\",\"reason\":\"InternalError\",\"details\":"
                     "{\"causes\":[{\"message\":\"error stream protocol error: invalid exit code value \\\"300\\\"\"}"
                     "]},\"code\":500}");
        check_status(4, "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[]}}",
                     "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal error occurred: error stream "
                     "protocol error: no ExitCode cause given\",\"reason\":\"InternalError\",\"details\":{\"causes\":"
                     "[{\"message\":\"error stream protocol error: no ExitCode cause given\"}]},\"code\":500}");
        check_status(4, "{\"status\":\"Weird\"}",
                     "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal error occurred: error stream "
                     "protocol error: unknown error\",\"reason\":\"InternalError\",\"details\":{\"causes\":[{"
                     "\"message\":\"error stream protocol error: unknown error\"}]},\"code\":500}");
        char *s = wsb_status_json(4, (const uint8_t *) "oops", 4);
        assert_non_null(strstr(s, "\"reason\":\"InternalError\""));
        assert_non_null(strstr(s, "oops"));
        free(s);
        /* v1-v3: the error stream is a text */
        check_status(2, "boom",
                     "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"Internal error occurred: error executing "
                     "remote command: boom\",\"reason\":\"InternalError\",\"details\":{\"causes\":[{\"message\":"
                     "\"error executing remote command: boom\"}]},\"code\":500}");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_mode),
                cmocka_unit_test(test_tunnel_protocols),
                cmocka_unit_test(test_answer_header),
                cmocka_unit_test(test_status),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
