/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Pure helpers of the gRPC-over-HTTP/2 wire format (PROTOCOL-HTTP2.md in grpc/grpc). */

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

/* Length-Prefixed-Message: 1 byte compressed flag + 4 bytes big-endian length. */
#define GRPC_FRAME_HEADER 5

void grpc_frame_header(uint8_t buf[GRPC_FRAME_HEADER], uint32_t len);
uint32_t grpc_frame_length(const uint8_t buf[GRPC_FRAME_HEADER]);

/* "grpc-timeout" value: at most 8 digits and a unit (u, m, S, M, H), rounded up to the next unit as needed
 * so the deadline is never shortened. */
void grpc_format_timeout(uint64_t usec, char *buf, size_t size);

/* Decode a percent-encoded grpc-message (invalid escapes are kept as-is). Returns a NUL-terminated copy,
 * NULL on OOM. */
char *grpc_percent_decode(const char *s, size_t len);
/* Percent-encode a grpc-message: bytes outside 0x20..0x7E and '%' become %XX. NULL on OOM. */
char *grpc_percent_encode(const char *s);

/* The body of a unary reply: exactly one length-prefixed, uncompressed message of type desc. 0 and the message
 * (free with protobuf_c_message_free_unpacked), or -EBADMSG with why in *ret_error. */
int grpc_decode_reply(const uint8_t *body, size_t len, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret,
                      struct ck_error **ret_error);
