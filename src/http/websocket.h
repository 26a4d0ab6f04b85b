/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* RFC 6455 WebSocket framing, server side, for the streaming endpoints' channel protocol (issue 37, upstream's
 * wsstream: v5.channel.k8s.io and friends). Pure logic, no I/O and no allocation: the caller holds the bytes
 * (an evbuffer pulled up) and feeds them in.
 *
 * ws_frame_parse() reads one frame header from the bytes at hand with hard caps: a data frame's payload at most
 * WS_MAX_FRAME, a control frame's at most 125 bytes and never fragmented, the reserved bits clear (no extension
 * is negotiated), a known opcode, and a client's frames masked (RFC 6455 5.1: the server closes on an unmasked
 * one). ws_msg_step() then checks the fragmentation rules across frames (a continuation needs a message in
 * progress, a new data frame must not interrupt one, control frames may come in between) and the cap on a whole
 * message (WS_MAX_MESSAGE). Text payloads are not checked for UTF-8 here: the channel protocols send binary
 * frames, and the base64 ones send ASCII. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WS_MAX_FRAME (1u << 20)   /* payload bytes of one data frame */
#define WS_MAX_MESSAGE (4u << 20) /* payload bytes of one message, its fragments together */
#define WS_MAX_CONTROL 125u       /* payload bytes of a control frame (RFC 6455 5.5) */
#define WS_MAX_HEADER 14u         /* 2 + 8 (length) + 4 (mask) */
#define WS_ACCEPT_LEN 28u         /* base64 of a SHA-1 */

enum ws_opcode {
        WS_OP_CONT = 0x0,
        WS_OP_TEXT = 0x1,
        WS_OP_BINARY = 0x2,
        WS_OP_CLOSE = 0x8,
        WS_OP_PING = 0x9,
        WS_OP_PONG = 0xA,
};

/* close codes (RFC 6455 7.4.1) */
#define WS_CLOSE_NORMAL 1000
#define WS_CLOSE_PROTOCOL_ERROR 1002
#define WS_CLOSE_TOO_BIG 1009

struct ws_frame {
        uint8_t opcode;
        bool fin;
        bool masked;
        uint8_t mask[4];
        size_t header_len; /* bytes of the header, the payload follows */
        uint64_t payload_len;
};

/* One frame header from buf[0..n). Returns 1 with *ret filled when the header is complete (the payload may not be
 * there yet: header_len + payload_len bytes make the frame), 0 when more bytes are needed, -EPROTO for a frame
 * RFC 6455 or our rules refuse (reserved bits, unknown opcode, unmasked client frame with require_mask, a control
 * frame fragmented or over 125 bytes, a non-minimal length encoding, the length's top bit set) and -EMSGSIZE for
 * a data frame over max_payload (0 means WS_MAX_FRAME). *ret is untouched unless 1 is returned. */
int ws_frame_parse(const uint8_t *buf, size_t n, bool require_mask, uint64_t max_payload, struct ws_frame *ret);

/* XORs data[0..n) with the mask, data[0] being the payload's byte at offset (so a payload can be unmasked in
 * pieces). */
void ws_unmask(uint8_t *data, size_t n, const uint8_t mask[4], uint64_t offset);

/* Writes a server frame header (never masked) for a payload of len bytes into out[WS_MAX_HEADER]; returns its
 * length. */
size_t ws_frame_header(uint8_t out[static WS_MAX_HEADER], uint8_t opcode, bool fin, uint64_t len);

/* The fragmentation state of one direction of a connection. */
struct ws_msg {
        bool in_progress;
        uint8_t opcode; /* WS_OP_TEXT or WS_OP_BINARY of the message in progress */
        uint64_t len;   /* payload bytes of the message so far */
};

/* Checks a parsed frame against the message in progress and accounts for it; for a data frame *ret_opcode is the
 * message's opcode (a continuation's is its first frame's) and *ret_done tells whether the message ends with it.
 * Returns 0, -EPROTO (continuation without a message, a new data frame inside one) or -EMSGSIZE (the message
 * would pass max_message; 0 means WS_MAX_MESSAGE). Control frames leave the state as it was. */
int ws_msg_step(struct ws_msg *m, const struct ws_frame *f, uint64_t max_message, uint8_t *ret_opcode, bool *ret_done);

/* A close frame's payload: none, or a 2-byte code (and a reason). Returns the code (1005, "no status", for an
 * empty payload) or -EPROTO for a 1-byte payload or a code that must not be sent (RFC 6455 7.4). */
int ws_close_code(const uint8_t *payload, size_t n);

/* Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64(SHA-1(key + GUID)) into out (NUL-terminated).
 * Returns 0, or -EINVAL when the key is not the base64 of 16 bytes (RFC 6455 4.2.1). */
int ws_accept_key(const char *key, char out[static WS_ACCEPT_LEN + 1]);

/* The Kubernetes channel protocols over WebSocket (upstream's wsstream): each message is one channel's, its
 * first byte the channel number (stdin 0, stdout 1, stderr 2, error 3, resize 4; v5's 255 closes the channel
 * named by the next byte). The base64 variants send text messages whose first byte is '0' + channel and whose
 * rest is base64. */
enum ws_chan_proto {
        WS_CHAN_BASE,      /* channel.k8s.io */
        WS_CHAN_BASE64,    /* base64.channel.k8s.io */
        WS_CHAN_V4,        /* v4.channel.k8s.io */
        WS_CHAN_V4_BASE64, /* v4.base64.channel.k8s.io */
        WS_CHAN_V5,        /* v5.channel.k8s.io */
};

#define WS_CHAN_STDIN 0
#define WS_CHAN_STDOUT 1
#define WS_CHAN_STDERR 2
#define WS_CHAN_ERROR 3
#define WS_CHAN_RESIZE 4
#define WS_CHAN_CLOSE 255 /* v5 */

/* A client's whole message (unmasked) of protocol p: *ret_channel and the data, in place (msg[0..*ret_len),
 * base64 decoded for the base64 variants). Returns 0, -ENODATA for an empty message (ignored, as upstream),
 * -EPROTO for a base64 message that is not base64 or whose channel is not a digit, or a v5 close message
 * without the channel to close, -EMSGSIZE over WS_MAX_MESSAGE. For v5's close message *ret_channel is WS_CHAN_CLOSE and msg[0] the channel
 * closed. */
int ws_chan_decode(enum ws_chan_proto p, uint8_t *msg, size_t n, uint8_t *ret_channel, size_t *ret_len);
