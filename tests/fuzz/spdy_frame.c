/* SPDX-License-Identifier: Apache-2.0 */
/* The SPDY/3.1 frame parser (http/spdy.c, issue 37): the input is a runtime's stream of frames as the kubelet's
 * WebSocket-to-SPDY translation reads it. Checks the parser's promises: a frame is never longer than the bytes
 * given nor than the cap, every shorter prefix asks for more, the fixed fields sit inside the frame; header blocks
 * go through one inflater (as a session's) with its cap, and what inflates through spdy_headers_get. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "http/spdy-testing.h"
#include "fuzz.h"

static uint8_t plain[SPDY_MAX_HEADER_BLOCK];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct spdy_zstream in = {};
        uint32_t cap;
        size_t off = 0;

        if (size < 1)
                return 0;
        cap = (uint32_t) (data[0] & 7) * 64; /* 0: SPDY_MAX_FRAME */
        data++;
        size--;
        if (spdy_inflater_init(&in) < 0)
                return 0;
        while (off < size) {
                struct spdy_frame f = { .type = 999 };
                int r = spdy_frame_parse(data + off, size - off, cap, &f);

                if (r <= 0) {
                        if (f.type != 999)
                                abort(); /* *ret untouched */
                        break;
                }
                if (SPDY_HEADER_LEN + (size_t) f.length > size - off || f.length > (cap ? cap : SPDY_MAX_FRAME))
                        abort();
                for (size_t k = 0; k < SPDY_HEADER_LEN + f.length; k += 7) {
                        struct spdy_frame g;
                        if (spdy_frame_parse(data + off, k, cap, &g) > 0)
                                abort(); /* a shorter prefix is never a whole frame */
                }
                if (f.block_offset) {
                        ssize_t n;
                        if (f.block_offset > SPDY_HEADER_LEN + (size_t) f.length)
                                abort();
                        n = spdy_headers_inflate(&in, data + off + f.block_offset,
                                                 SPDY_HEADER_LEN + f.length - f.block_offset, plain, sizeof(plain));
                        if (n > (ssize_t) sizeof(plain))
                                abort();
                        if (n >= 0) {
                                const uint8_t *v;
                                size_t vl;
                                if (spdy_headers_get(plain, (size_t) n, "streamtype", &v, &vl) > 0 &&
                                    (v < plain || v + vl > plain + n))
                                        abort();
                        } else {
                                spdy_zstream_done(&in); /* a broken context stays broken: start another */
                                if (spdy_inflater_init(&in) < 0)
                                        return 0;
                        }
                }
                off += SPDY_HEADER_LEN + f.length;
        }
        spdy_zstream_done(&in);
        return 0;
}
