/* SPDX-License-Identifier: Apache-2.0 */
/* The RFC 6455 frame parser (http/websocket.c, issue 37): the input after its first byte is a client's stream of
 * frames; bit 0 of the first byte asks for masked frames, bits 1-3 pick a payload cap. Checks the parser's
 * promises: a header is never longer than WS_MAX_HEADER nor than the bytes given, every shorter prefix asks for
 * more, the caps hold, a frame it accepts re-encodes to the same bytes (the minimal length encoding), and the
 * fragmentation state never lets a message pass its cap. Close payloads go through ws_close_code, data payloads
 * through ws_chan_decode (the protocol picked by the frame's first byte). */
#include <errno.h>
#include <stdbool.h>

#include "http/websocket.h"
#include "fuzz.h"

static uint8_t payload[65536 + 16];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct ws_msg m = {};
        bool require_mask;
        uint64_t cap, msg_cap;
        size_t off = 0;

        if (size < 1)
                return 0;
        require_mask = data[0] & 1;
        cap = ((data[0] >> 1) & 7) * 40;
        msg_cap = cap * 3;
        data++;
        size--;

        while (off < size) {
                struct ws_frame f = { .header_len = 99 };
                uint8_t hdr[WS_MAX_HEADER], op = 0;
                bool done = false;
                int r = ws_frame_parse(data + off, size - off, require_mask, cap, &f);

                if (r <= 0) {
                        if (f.header_len != 99)
                                abort(); /* untouched */
                        if (r != 0 && r != -EPROTO && r != -EMSGSIZE)
                                abort();
                        break;
                }
                if (f.header_len < 2 || f.header_len > WS_MAX_HEADER || f.header_len > size - off)
                        abort();
                if (require_mask && !f.masked)
                        abort();
                if ((f.opcode & 8) ? (f.payload_len > WS_MAX_CONTROL || !f.fin)
                                   : f.payload_len > (cap ? cap : WS_MAX_FRAME))
                        abort();
                for (size_t k = 0; k < f.header_len; k++) {
                        struct ws_frame g;
                        if (ws_frame_parse(data + off, k, require_mask, cap, &g) != 0)
                                abort();
                }
                size_t hl = ws_frame_header(hdr, f.opcode, f.fin, f.payload_len);
                if (hl != f.header_len - (f.masked ? 4 : 0) || hdr[0] != data[off] ||
                    hdr[1] != (data[off + 1] & 0x7F) || memcmp(hdr + 2, data + off + 2, hl - 2) != 0)
                        abort();
                r = ws_msg_step(&m, &f, msg_cap, &op, &done);
                if (r < 0) {
                        if (r != -EPROTO && r != -EMSGSIZE)
                                abort();
                        break;
                }
                if (m.len > (msg_cap ? msg_cap : WS_MAX_MESSAGE))
                        abort();
                if (f.payload_len > size - off - f.header_len)
                        break; /* the payload is not all there */
                if (f.opcode == WS_OP_CLOSE) {
                        memcpy(payload, data + off + f.header_len, f.payload_len);
                        if (f.masked)
                                ws_unmask(payload, f.payload_len, f.mask, 0);
                        int code = ws_close_code(payload, f.payload_len);
                        if (code != -EPROTO && (code < 1000 || code >= 5000))
                                abort();
                }
                if (!(f.opcode & 8) && f.payload_len <= 65536) {
                        /* the payload as one channel protocol's message */
                        enum ws_chan_proto p = (enum ws_chan_proto)(data[off] % 5);
                        uint8_t ch;
                        size_t len = 0, n = (size_t) f.payload_len;

                        memcpy(payload, data + off + f.header_len, n);
                        if (f.masked)
                                ws_unmask(payload, n, f.mask, 0);
                        r = ws_chan_decode(p, payload, n, &ch, &len);
                        if (r == 0) {
                                if (len > n)
                                        abort();
                        } else if (r != -ENODATA && r != -EPROTO)
                                abort();
                }
                off += f.header_len + f.payload_len;
        }
        return 0;
}
