/* SPDX-License-Identifier: Apache-2.0 */
/* The SPDY/3.1 framer (http/spdy.c): frame headers byte for byte, the fixed fields of control frames, the caps and
 * refusals, and header blocks through one compression context per direction (the second block of a session
 * depends on the first). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "http/spdy-testing.h"

static void test_control_frames(void **state) {
        uint8_t b[16];
        struct spdy_frame f = { .type = 77 };
        (void) state;

        assert_int_equal(spdy_ping(b, 7), 12);
        assert_memory_equal(b, ((const uint8_t[]) { 0x80, 3, 0, 6, 0, 0, 0, 4, 0, 0, 0, 7 }), 12);
        for (size_t n = 0; n < 12; n++) /* in pieces: more bytes needed, *ret untouched */
                assert_int_equal(spdy_frame_parse(b, n, 0, &f), 0);
        assert_int_equal(f.type, 77);
        assert_int_equal(spdy_frame_parse(b, 12, 0, &f), 1);
        assert_true(f.control);
        assert_int_equal(f.type, SPDY_PING);
        assert_int_equal(f.length, 4);
        assert_int_equal(f.value, 7);

        assert_int_equal(spdy_rst_stream(b, 5, SPDY_RST_CANCEL), 16);
        assert_memory_equal(b, ((const uint8_t[]) { 0x80, 3, 0, 3, 0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 5 }), 16);
        assert_int_equal(spdy_frame_parse(b, 16, 0, &f), 1);
        assert_int_equal(f.type, SPDY_RST_STREAM);
        assert_int_equal(f.stream_id, 5);
        assert_int_equal(f.value, SPDY_RST_CANCEL);

        /* the frames the runtime may send and the kubelet never does: GOAWAY (last good stream 3), WINDOW_UPDATE */
        const uint8_t goaway[] = { 0x80, 3, 0, 7, 0, 0, 0, 8, 0, 0, 0, 3, 0, 0, 0, 0 };
        assert_int_equal(spdy_frame_parse(goaway, sizeof(goaway), 0, &f), 1);
        assert_int_equal(f.type, SPDY_GOAWAY);
        assert_int_equal(f.stream_id, 3);

        const uint8_t window_update[] = { 0x80, 3, 0, 9, 0, 0, 0, 8, 0, 0, 0, 0, 0, 1, 0, 0 };
        assert_int_equal(spdy_frame_parse(window_update, sizeof(window_update), 0, &f), 1);
        assert_int_equal(f.type, SPDY_WINDOW_UPDATE);
        assert_int_equal(f.stream_id, 0); /* the session's window */
        assert_int_equal(f.value, 65536);

        /* SETTINGS: a count and 8 bytes per entry */
        const uint8_t settings[] = { 0x80, 3, 0, 4, 0, 0, 0, 12, 0, 0, 0, 1, 0, 0, 0, 7, 0, 1, 0, 0 };
        assert_int_equal(spdy_frame_parse(settings, sizeof(settings), 0, &f), 1);
        assert_int_equal(f.type, SPDY_SETTINGS);
        const uint8_t settings_bad[] = { 0x80, 3, 0, 4, 0, 0, 0, 12, 0, 0, 0, 2, 0, 0, 0, 7, 0, 1, 0, 0 };
        assert_int_equal(spdy_frame_parse(settings_bad, sizeof(settings_bad), 0, &f), -EPROTO);
}

static void test_data_frames_and_refusals(void **state) {
        uint8_t b[SPDY_HEADER_LEN + 5];
        struct spdy_frame f = {};
        (void) state;

        assert_int_equal(spdy_data_header(b, 3, SPDY_FLAG_FIN, 5), SPDY_HEADER_LEN);
        assert_memory_equal(b, ((const uint8_t[]) { 0, 0, 0, 3, 1, 0, 0, 5 }), 8);
        memcpy(b + 8, "hello", 5);
        assert_int_equal(spdy_frame_parse(b, 12, 0, &f), 0); /* the payload is not all there */
        assert_int_equal(spdy_frame_parse(b, 13, 0, &f), 1);
        assert_false(f.control);
        assert_int_equal(f.stream_id, 3);
        assert_int_equal(f.flags, SPDY_FLAG_FIN);
        assert_int_equal(f.length, 5);

        /* caps: the length is checked from the header alone */
        assert_int_equal(spdy_frame_parse(b, 8, 4, &f), -EMSGSIZE);
        const uint8_t huge[] = { 0, 0, 0, 1, 0, 0xFF, 0xFF, 0xFF };
        assert_int_equal(spdy_frame_parse(huge, sizeof(huge), 0, &f), -EMSGSIZE);

        /* a data frame on stream 0, a control frame of SPDY/2, a short RST_STREAM, a SYN_REPLY for stream 0 */
        const uint8_t zero[] = { 0, 0, 0, 0, 0, 0, 0, 0 };
        assert_int_equal(spdy_frame_parse(zero, sizeof(zero), 0, &f), -EPROTO);
        const uint8_t v2[] = { 0x80, 2, 0, 6, 0, 0, 0, 4, 0, 0, 0, 1 };
        assert_int_equal(spdy_frame_parse(v2, sizeof(v2), 0, &f), -EPROTO);
        const uint8_t rst[] = { 0x80, 3, 0, 3, 0, 0, 0, 4, 0, 0, 0, 1 };
        assert_int_equal(spdy_frame_parse(rst, sizeof(rst), 0, &f), -EPROTO);
        const uint8_t reply0[] = { 0x80, 3, 0, 2, 0, 0, 0, 4, 0, 0, 0, 0 };
        assert_int_equal(spdy_frame_parse(reply0, sizeof(reply0), 0, &f), -EPROTO);
        /* an unknown control type is passed up, to be ignored */
        const uint8_t unknown[] = { 0x80, 3, 0, 42, 0, 0, 0, 1, 9 };
        assert_int_equal(spdy_frame_parse(unknown, sizeof(unknown), 0, &f), 1);
        assert_int_equal(f.type, 42);
}

static void check_block(struct spdy_zstream *in, const uint8_t *frame, size_t n, uint32_t id, const char *type) {
        struct spdy_frame f = {};
        uint8_t plain[4096];
        const uint8_t *v;
        size_t vl;
        ssize_t pl;

        assert_int_equal(spdy_frame_parse(frame, n, 0, &f), 1);
        assert_int_equal(f.type, SPDY_SYN_STREAM);
        assert_int_equal(f.stream_id, id);
        assert_int_equal(SPDY_HEADER_LEN + f.length, n);
        pl = spdy_headers_inflate(in, frame + f.block_offset, n - f.block_offset, plain, sizeof(plain));
        assert_true(pl > 0);
        assert_int_equal(spdy_headers_get(plain, (size_t) pl, "streamtype", &v, &vl), 1);
        assert_int_equal(vl, strlen(type));
        assert_memory_equal(v, type, vl);
        assert_int_equal(spdy_headers_get(plain, (size_t) pl, "absent", &v, &vl), 0);
        /* a block cut short is malformed */
        assert_int_equal(spdy_headers_get(plain, (size_t) pl - 1, "streamtype", &v, &vl), -EPROTO);
}

static void test_header_blocks(void **state) {
        struct spdy_zstream out = {}, in = {};
        uint8_t a[512], b[512];
        ssize_t na, nb;
        (void) state;

        assert_int_equal(spdy_deflater_init(&out), 0);
        assert_int_equal(spdy_inflater_init(&in), 0);
        na = spdy_syn_stream(&out, 1, 0, (const char *const[]) { "streamtype", "error", NULL }, a, sizeof(a));
        nb = spdy_syn_stream(&out, 3, 0, (const char *const[]) { "streamtype", "stdin", NULL }, b, sizeof(b));
        assert_true(na > 18 && nb > 18);
        /* the second block leans on the first (one context per direction): it is shorter */
        assert_true(nb < na);
        check_block(&in, a, (size_t) na, 1, "error");
        check_block(&in, b, (size_t) nb, 3, "stdin");

        /* names are lowercase in SPDY/3; stream 0 is nobody's */
        assert_int_equal(spdy_syn_stream(&out, 5, 0, (const char *const[]) { "StreamType", "x", NULL }, a, sizeof(a)),
                         -EINVAL);
        assert_int_equal(spdy_syn_stream(&out, 0, 0, (const char *const[]) { "streamtype", "x", NULL }, a, sizeof(a)),
                         -EINVAL);
        assert_int_equal(spdy_syn_stream(&out, 5, 0, (const char *const[]) { "streamtype", "x", NULL }, a, 20),
                         -ENOBUFS);

        /* garbage is not a header block; a block inflating past the cap is refused */
        struct spdy_zstream in2 = {};
        uint8_t plain[8];
        assert_int_equal(spdy_inflater_init(&in2), 0);
        assert_int_equal(spdy_headers_inflate(&in2, (const uint8_t *) "garbage!", 8, plain, sizeof(plain)), -EPROTO);
        spdy_zstream_done(&in2);
        assert_int_equal(spdy_inflater_init(&in2), 0);
        na = spdy_syn_stream(&out, 7, 0, (const char *const[]) { "streamtype", "stdout", NULL }, a, sizeof(a));
        assert_true(na > 18);
        /* a fresh inflater cannot read a block that leans on earlier ones, or it overflows the small buffer */
        assert_true(spdy_headers_inflate(&in2, a + 18, (size_t) na - 18, plain, sizeof(plain)) < 0);
        spdy_zstream_done(&in2);

        spdy_zstream_done(&out);
        spdy_zstream_done(&in);
        spdy_zstream_done(&in); /* twice is fine */
        spdy_zstream_done(NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_control_frames),
                cmocka_unit_test(test_data_frames_and_refusals),
                cmocka_unit_test(test_header_blocks),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
