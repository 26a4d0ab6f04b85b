/* SPDX-License-Identifier: Apache-2.0 */
/* The RFC 6455 framer (http/websocket.c): the RFC's own examples, the caps, the masking rule, fragmentation and
 * the close codes. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "http/websocket.h"

static void test_rfc_examples(void **state) {
        /* RFC 6455 5.7: a single-frame masked text message "Hello" */
        uint8_t masked[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
        uint8_t unmasked[] = { 0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f };
        struct ws_frame f = {};
        (void) state;

        for (size_t n = 0; n < 6; n++) /* a header in pieces: more bytes needed, *ret untouched */
                assert_int_equal(ws_frame_parse(masked, n, true, 0, &f), 0);
        assert_int_equal(f.header_len, 0);
        assert_int_equal(ws_frame_parse(masked, sizeof(masked), true, 0, &f), 1);
        assert_true(f.fin);
        assert_true(f.masked);
        assert_int_equal(f.opcode, WS_OP_TEXT);
        assert_int_equal(f.header_len, 6);
        assert_int_equal(f.payload_len, 5);
        /* unmasked in two pieces */
        ws_unmask(masked + 6, 2, f.mask, 0);
        ws_unmask(masked + 8, 3, f.mask, 2);
        assert_memory_equal(masked + 6, "Hello", 5);

        /* a client's unmasked frame is refused; a server's (require_mask false) is read */
        assert_int_equal(ws_frame_parse(unmasked, sizeof(unmasked), true, 0, &f), -EPROTO);
        assert_int_equal(ws_frame_parse(unmasked, sizeof(unmasked), false, 0, &f), 1);
        assert_false(f.masked);
        assert_int_equal(f.header_len, 2);

        /* RFC 6455 1.3 */
        char accept[WS_ACCEPT_LEN + 1];
        assert_int_equal(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", accept), 0);
        assert_string_equal(accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert_int_equal(ws_accept_key("dGhlIHNhbXBsZSBub25jZQ", accept), -EINVAL);
        assert_int_equal(ws_accept_key("dGhlIHNhbXBsZSBub25j!!==", accept), -EINVAL);
        assert_int_equal(ws_accept_key("", accept), -EINVAL);
        assert_int_equal(ws_accept_key(NULL, accept), -EINVAL);
}

static void test_lengths(void **state) {
        uint8_t hdr[WS_MAX_HEADER];
        struct ws_frame f;
        size_t n;
        (void) state;

        /* the writer's three encodings read back */
        uint64_t lens[] = { 0, 125, 126, 65535, 65536, WS_MAX_FRAME };
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
                n = ws_frame_header(hdr, WS_OP_BINARY, true, lens[i]);
                assert_int_equal(n, lens[i] < 126 ? 2 : lens[i] <= 65535 ? 4 : 10);
                assert_int_equal(ws_frame_parse(hdr, n, false, 0, &f), 1);
                assert_int_equal(f.payload_len, lens[i]);
                assert_int_equal(f.header_len, n);
                assert_int_equal(ws_frame_parse(hdr, n - 1, false, 0, &f), 0);
        }
        /* over the cap, default and given */
        n = ws_frame_header(hdr, WS_OP_BINARY, true, WS_MAX_FRAME + 1);
        assert_int_equal(ws_frame_parse(hdr, n, false, 0, &f), -EMSGSIZE);
        n = ws_frame_header(hdr, WS_OP_BINARY, true, 1000);
        assert_int_equal(ws_frame_parse(hdr, n, false, 999, &f), -EMSGSIZE);
        assert_int_equal(ws_frame_parse(hdr, n, false, 1000, &f), 1);
        /* non-minimal encodings, the 64-bit length's top bit */
        uint8_t nm16[] = { 0x82, 126, 0, 125 };
        assert_int_equal(ws_frame_parse(nm16, sizeof(nm16), false, 0, &f), -EPROTO);
        uint8_t nm64[] = { 0x82, 127, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
        assert_int_equal(ws_frame_parse(nm64, sizeof(nm64), false, 0, &f), -EPROTO);
        uint8_t top[] = { 0x82, 127, 0x80, 0, 0, 0, 0, 0, 0, 0 };
        assert_int_equal(ws_frame_parse(top, sizeof(top), false, 0, &f), -EPROTO);
}

static void test_bad_headers(void **state) {
        struct ws_frame f;
        (void) state;

        uint8_t rsv[] = { 0x80 | 0x40 | WS_OP_BINARY, 0x80, 1, 2, 3, 4 };
        assert_int_equal(ws_frame_parse(rsv, sizeof(rsv), true, 0, &f), -EPROTO);
        for (uint8_t op = 0; op < 16; op++) {
                uint8_t b[] = { (uint8_t) (0x80 | op), 0x80, 1, 2, 3, 4 };
                bool known = op <= 2 || (op >= 8 && op <= 10);
                assert_int_equal(ws_frame_parse(b, sizeof(b), true, 0, &f), known ? 1 : -EPROTO);
        }
        /* control frames: never fragmented, at most 125 bytes */
        uint8_t frag_ping[] = { WS_OP_PING, 0x80, 1, 2, 3, 4 };
        assert_int_equal(ws_frame_parse(frag_ping, sizeof(frag_ping), true, 0, &f), -EPROTO);
        uint8_t big_close[] = { 0x80 | WS_OP_CLOSE, 0x80 | 126, 0, 126, 1, 2, 3, 4 };
        assert_int_equal(ws_frame_parse(big_close, sizeof(big_close), true, 0, &f), -EPROTO);
        uint8_t ping125[] = { 0x80 | WS_OP_PING, 0x80 | 125, 1, 2, 3, 4 };
        assert_int_equal(ws_frame_parse(ping125, sizeof(ping125), true, 0, &f), 1);
}

static struct ws_frame frame(uint8_t op, bool fin, uint64_t len) {
        return (struct ws_frame) { .opcode = op, .fin = fin, .masked = true, .header_len = 6, .payload_len = len };
}

static void test_fragmentation(void **state) {
        struct ws_msg m = {};
        struct ws_frame f;
        uint8_t op = 0;
        bool done = true;
        (void) state;

        /* a continuation without a message */
        f = frame(WS_OP_CONT, true, 1);
        assert_int_equal(ws_msg_step(&m, &f, 0, &op, &done), -EPROTO);
        /* binary in three fragments with a ping in between */
        f = frame(WS_OP_BINARY, false, 10);
        assert_int_equal(ws_msg_step(&m, &f, 0, &op, &done), 0);
        assert_int_equal(op, WS_OP_BINARY);
        assert_false(done);
        f = frame(WS_OP_PING, true, 0);
        assert_int_equal(ws_msg_step(&m, &f, 0, &op, &done), 0);
        assert_true(m.in_progress);
        /* a new data frame inside the message */
        f = frame(WS_OP_TEXT, true, 1);
        assert_int_equal(ws_msg_step(&m, &f, 0, &op, &done), -EPROTO);
        f = frame(WS_OP_CONT, false, 10);
        assert_int_equal(ws_msg_step(&m, &f, 0, &op, &done), 0);
        assert_int_equal(m.len, 20);
        f = frame(WS_OP_CONT, true, 5);
        assert_int_equal(ws_msg_step(&m, &f, 0, &op, &done), 0);
        assert_int_equal(op, WS_OP_BINARY);
        assert_true(done);
        assert_false(m.in_progress);

        /* the message cap across fragments */
        f = frame(WS_OP_BINARY, false, 60);
        assert_int_equal(ws_msg_step(&m, &f, 100, &op, &done), 0);
        f = frame(WS_OP_CONT, false, 40);
        assert_int_equal(ws_msg_step(&m, &f, 100, &op, &done), 0);
        f = frame(WS_OP_CONT, true, 1);
        assert_int_equal(ws_msg_step(&m, &f, 100, &op, &done), -EMSGSIZE);
        m = (struct ws_msg) {};
        f = frame(WS_OP_BINARY, true, 101);
        assert_int_equal(ws_msg_step(&m, &f, 100, &op, &done), -EMSGSIZE);
}

static void test_close_codes(void **state) {
        (void) state;
        assert_int_equal(ws_close_code(NULL, 0), 1005);
        assert_int_equal(ws_close_code((const uint8_t *) "\x03", 1), -EPROTO);
        assert_int_equal(ws_close_code((const uint8_t *) "\x03\xe8", 2), 1000);
        assert_int_equal(ws_close_code((const uint8_t *) "\x03\xe8ok", 4), 1000);
        assert_int_equal(ws_close_code((const uint8_t *) "\x03\xed", 2), -EPROTO); /* 1005 */
        assert_int_equal(ws_close_code((const uint8_t *) "\x03\xe7", 2), -EPROTO); /* 999 */
        assert_int_equal(ws_close_code((const uint8_t *) "\x0b\xb8", 2), 3000);
        assert_int_equal(ws_close_code((const uint8_t *) "\x13\x88", 2), -EPROTO); /* 5000 */
}

static void test_channels(void **state) {
        uint8_t msg[64], ch = 99;
        size_t len = 99;
        (void) state;

        /* binary: stdin data, an empty message, v5's close of stdin */
        memcpy(msg, "\x00hi\n", 4);
        assert_int_equal(ws_chan_decode(WS_CHAN_V5, msg, 4, &ch, &len), 0);
        assert_int_equal(ch, WS_CHAN_STDIN);
        assert_int_equal(len, 3);
        assert_memory_equal(msg, "hi\n", 3);
        assert_int_equal(ws_chan_decode(WS_CHAN_V5, msg, 0, &ch, &len), -ENODATA);
        memcpy(msg, "\xff\x00", 2);
        assert_int_equal(ws_chan_decode(WS_CHAN_V5, msg, 2, &ch, &len), 0);
        assert_int_equal(ch, WS_CHAN_CLOSE);
        assert_int_equal(len, 1);
        assert_int_equal(msg[0], WS_CHAN_STDIN);
        memcpy(msg, "\xff", 1);
        assert_int_equal(ws_chan_decode(WS_CHAN_V5, msg, 1, &ch, &len), -EPROTO);
        memcpy(msg, "\xff", 1); /* before v5, 255 is just a channel number */
        assert_int_equal(ws_chan_decode(WS_CHAN_V4, msg, 1, &ch, &len), 0);
        assert_int_equal(ch, 255);

        /* base64: '0' + channel, then base64 */
        memcpy(msg, "0aGk", 4);
        assert_int_equal(ws_chan_decode(WS_CHAN_BASE64, msg, 4, &ch, &len), -EPROTO); /* 4 chars a group */
        memcpy(msg, "4aGkK", 5);
        assert_int_equal(ws_chan_decode(WS_CHAN_V4_BASE64, msg, 5, &ch, &len), 0);
        assert_int_equal(ch, WS_CHAN_RESIZE);
        assert_int_equal(len, 3);
        assert_memory_equal(msg, "hi\n", 3);
        memcpy(msg, "0aA==", 5);
        assert_int_equal(ws_chan_decode(WS_CHAN_BASE64, msg, 5, &ch, &len), 0);
        assert_int_equal(len, 1);
        assert_int_equal(msg[0], 'h');
        memcpy(msg, "xaGkK", 5);
        assert_int_equal(ws_chan_decode(WS_CHAN_BASE64, msg, 5, &ch, &len), -EPROTO);
        memcpy(msg, "0a!kK", 5);
        assert_int_equal(ws_chan_decode(WS_CHAN_BASE64, msg, 5, &ch, &len), -EPROTO);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_rfc_examples), cmocka_unit_test(test_lengths),
                cmocka_unit_test(test_bad_headers),  cmocka_unit_test(test_fragmentation),
                cmocka_unit_test(test_close_codes),  cmocka_unit_test(test_channels),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
