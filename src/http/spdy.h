/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* SPDY/3.1 framing, client side, for the kubelet's WebSocket-to-SPDY stream translation (issue 37,
 * ExtendWebSocketsToKubelet: upstream's StreamTranslatorHandler dials the runtime's streaming server with SPDY/3.1
 * and client-go's remotecommand streams). Pure logic, no I/O: the caller holds the bytes and feeds them in.
 *
 * A frame is an 8-byte header and its payload. A control frame's header is the C bit, the version (3), the type,
 * the flags and a 24-bit length; a data frame's is a 31-bit stream id, the flags and the length. spdy_frame_parse()
 * reads one whole frame with a hard cap on its length, and for the control frames this client acts on reads the
 * fixed fields of their payload (the stream id, a status, a ping id, a window delta). Header blocks (SYN_STREAM,
 * SYN_REPLY, HEADERS) are compressed with zlib primed with SPDY/3's dictionary, one compression context per
 * direction for the whole session: spdy_deflater writes ours, spdy_inflater reads the peer's (spdy-testing.h: used by
 * the tests and the fuzz target; the translator needs nothing from the streaming server's header blocks). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <zlib.h>

#define SPDY_VERSION 3
#define SPDY_HEADER_LEN 8u
#define SPDY_MAX_FRAME (1u << 20)         /* payload bytes of one frame we accept */
#define SPDY_MAX_HEADER_BLOCK (64u << 10) /* bytes of a decompressed header block */
#define SPDY_MAX_STREAM_ID 0x7FFFFFFFu

enum spdy_type {
        SPDY_SYN_STREAM = 1,
        SPDY_SYN_REPLY = 2,
        SPDY_RST_STREAM = 3,
        SPDY_SETTINGS = 4,
        SPDY_PING = 6,
        SPDY_GOAWAY = 7,
        SPDY_HEADERS = 8,
        SPDY_WINDOW_UPDATE = 9,
};

#define SPDY_FLAG_FIN 0x01
#define SPDY_FLAG_UNIDIRECTIONAL 0x02

/* RST_STREAM status codes (SPDY/3 2.6.3) */
#define SPDY_RST_PROTOCOL_ERROR 1
#define SPDY_RST_CANCEL 5

struct spdy_frame {
        bool control;
        uint16_t type; /* control frames */
        uint8_t flags;
        uint32_t length; /* payload bytes; the payload starts at SPDY_HEADER_LEN */
        uint32_t
                stream_id; /* data frames; SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE; GOAWAY's last good */
        uint32_t value;    /* RST_STREAM's and GOAWAY's status, PING's id, WINDOW_UPDATE's delta */
        size_t block_offset; /* SYN_STREAM, SYN_REPLY, HEADERS: where the header block starts in the frame */
};

/* One frame from buf[0..n). Returns 1 with *ret filled when the whole frame is there (SPDY_HEADER_LEN + length
 * bytes), 0 when more bytes are needed, -EPROTO for a frame SPDY/3 refuses (a control frame of another version, a
 * data frame on stream 0, a control frame of a known type too short or of the wrong length for its fixed fields, a
 * stream id of 0 where one is needed) and -EMSGSIZE for a length over max_len (0 means SPDY_MAX_FRAME). Frames of
 * unknown control types are returned as they are (SPDY says to ignore them). *ret is untouched unless 1. */
int spdy_frame_parse(const uint8_t *buf, size_t n, uint32_t max_len, struct spdy_frame *ret);

/* Frame writers into out; each returns the bytes written. */
size_t spdy_data_header(uint8_t out[static SPDY_HEADER_LEN], uint32_t stream_id, uint8_t flags, uint32_t len);
size_t spdy_rst_stream(uint8_t out[static 16], uint32_t stream_id, uint32_t status);
size_t spdy_ping(uint8_t out[static 12], uint32_t id);

/* Header block compression of one direction of a session. */
struct spdy_zstream {
        z_stream z;
        bool ready;
        bool deflate;
};

int spdy_deflater_init(struct spdy_zstream *d);
void spdy_zstream_done(struct spdy_zstream *d); /* accepts one never initialised (zeroed) */

/* A SYN_STREAM frame for stream_id (odd: a client's) with flags, its headers the NULL-terminated name, value, name,
 * value... list (names lowercase, as SPDY/3 wants; checked), into out[0..cap). Returns its length, -EINVAL for a
 * bad name or stream id, -ENOBUFS when cap is too small, -EIO when zlib fails. */
ssize_t spdy_syn_stream(struct spdy_zstream *d, uint32_t stream_id, uint8_t flags, const char *const *headers,
                        uint8_t *out, size_t cap);
