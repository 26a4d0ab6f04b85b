/* SPDX-License-Identifier: Apache-2.0 */
/* The CRI log decoder: one line parsed, and a whole file read with the options of the first four bytes (tail
 * lines, limit bytes, since, timestamps), forwards and backwards. */
#include <event2/buffer.h>

#include "logs/logs.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct logs_options o;
        struct logs_msg m;
        struct logs_cursor c = {};
        struct evbuffer *out;
        char ts[64];
        int fd;

        if (size < 4)
                return 0;
        if (logs_parse_line((const char *) data + 4, size - 4, &m) >= 0) {
                logs_format_timestamp(m.timestamp_nsec, m.tz_offset_sec, ts, sizeof(ts));
                if (m.content + m.content_len > (const char *) data + size)
                        abort();
        }
        logs_options_init(&o);
        o.tail_lines = data[0] == 0xff ? -1 : data[0] % 16;
        o.limit_bytes = data[1] == 0xff ? -1 : 1 + data[1] * 64;
        o.timestamps = data[2] & 1;
        o.follow = data[2] & 2;
        o.since_nsec = data[3] & 1 ? 1475712000LL * 1000000000LL + (int64_t) data[3] * 1000000000LL : 0;
        fd = fuzz_memfd(data + 4, size - 4);
        out = evbuffer_new();
        if (!out)
                abort();
        if (logs_read(fd, &o, out, o.follow ? &c : NULL) >= 0 && o.limit_bytes > 0 &&
            evbuffer_get_length(out) > (size_t) o.limit_bytes)
                abort(); /* never more than limitBytes */
        logs_cursor_done(&c);
        evbuffer_free(out);
        close(fd);
        return 0;
}
