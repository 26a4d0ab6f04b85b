/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP/1.x response parser (http/http_response.c: probes, hooks, the manifest URL, the apiserver's HTTP/1.1
 * fallback): the input after its first byte is a response, fed in pieces whose size the first byte picks, as a
 * server's bytes arrive; then the connection ends. Bit 6 of the first byte hands the body to on_body under a
 * max_body of its own (the general clients' mode) instead of body[]. Checks the parser's own promises: it never
 * uses more than it is given, stays failed once failed, never keeps, hands out or reads more body than its cap,
 * and a response it accepts has a three-digit status (Go takes "004" too). */
#include <errno.h>
#include <stdbool.h>

#include "http/http_response.h"
#include "fuzz.h"

static struct http_resp p;
static uint64_t handed;

static void on_body(const char *data, size_t n, void *userdata) {
        if (n == 0 || !data)
                abort();
        handed += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t step, off = 0, used;
        int k = HTTP_RESP_MORE;
        bool sink;
        uint64_t cap;

        if (size < 1)
                return 0;
        sink = data[0] & 64;
        cap = sink ? (uint64_t) (data[0] % 7) * 1000 + 1 : HTTP_RESP_MAX_BODY;
        handed = 0;
        step = (size_t) (data[0] % 16) + 1;
        if (data[0] >= 128)
                step = size; /* whole */
        data++;
        size--;
        http_resp_init(&p);
        while (off < size || k == HTTP_RESP_HEADERS) {
                size_t n = size - off < step ? size - off : step;

                used = 0;
                k = http_resp_feed(&p, (const char *) data + off, n, &used);
                if (used > n)
                        abort();
                off += used;
                if (k < 0) {
                        if (!p.error || http_resp_feed(&p, "x", 1, &used) != -EBADMSG)
                                abort();
                        return 0;
                }
                if (k == HTTP_RESP_HEADERS) {
                        if (!http_resp_headers_done(&p) || p.status < 0 || p.status > 999)
                                abort();
                        p.keep_body = p.status & 1;
                        if (sink) {
                                p.on_body = on_body;
                                p.max_body = cap;
                        }
                        continue;
                }
                if (k == HTTP_RESP_DONE)
                        break;
                if (used != n)
                        abort();
                if (n == 0)
                        break;
        }
        if (k != HTTP_RESP_DONE)
                k = http_resp_eof(&p);
        if (k == HTTP_RESP_DONE) {
                if (!http_resp_headers_done(&p) || p.body_len > HTTP_RESP_MAX_BODY || p.body_seen > cap ||
                    (p.has_location && strlen(p.location) != p.location_len))
                        abort();
                if (sink && (handed != p.body_seen || p.body_len != 0))
                        abort();
                if (strlen(p.retry_after) >= sizeof(p.retry_after) ||
                    strlen(p.content_encoding) >= sizeof(p.content_encoding))
                        abort();
                if (p.body_len > 0 && strlen(p.body) > p.body_len)
                        abort();
        } else if (k != -EBADMSG || !p.error)
                abort();
        return 0;
}
