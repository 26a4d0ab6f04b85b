/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/wire.h"

void grpc_frame_header(uint8_t buf[GRPC_FRAME_HEADER], uint32_t len) {
        buf[0] = 0;
        buf[1] = (uint8_t) (len >> 24);
        buf[2] = (uint8_t) (len >> 16);
        buf[3] = (uint8_t) (len >> 8);
        buf[4] = (uint8_t) len;
}

uint32_t grpc_frame_length(const uint8_t buf[GRPC_FRAME_HEADER]) {
        return (uint32_t) buf[1] << 24 | (uint32_t) buf[2] << 16 | (uint32_t) buf[3] << 8 | buf[4];
}

void grpc_format_timeout(uint64_t usec, char *buf, size_t size) {
        static const struct {
                char unit;
                uint64_t usec;
        } units[] = {
                { 'u', 1 }, { 'm', 1000 }, { 'S', 1000000 }, { 'M', 60000000 }, { 'H', 3600000000ULL },
        };
        const uint64_t max = 99999999; /* 8 digits */

        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                uint64_t v = (usec + units[i].usec - 1) / units[i].usec;
                if (v <= max) {
                        snprintf(buf, size, "%" PRIu64 "%c", v, units[i].unit);
                        return;
                }
        }
        snprintf(buf, size, "%" PRIu64 "H", max);
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

char *grpc_percent_decode(const char *s, size_t len) {
        char *out = malloc(len + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                int hi, lo;
                if (s[i] == '%' && i + 2 < len && (hi = unhex(s[i + 1])) >= 0 && (lo = unhex(s[i + 2])) >= 0) {
                        *o++ = (char) (hi << 4 | lo);
                        i += 2;
                } else
                        *o++ = s[i];
        }
        *o = '\0';
        return out;
}

char *grpc_percent_encode(const char *s) {
        size_t n = strlen(s);
        char *out = malloc(n * 3 + 1), *o = out;

        if (!out)
                return NULL;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (*p < 0x20 || *p > 0x7e || *p == '%') {
                        static const char hex[] = "0123456789ABCDEF";
                        *o++ = '%';
                        *o++ = hex[*p >> 4];
                        *o++ = hex[*p & 0xf];
                } else
                        *o++ = (char) *p;
        }
        *o = '\0';
        return out;
}

int grpc_decode_reply(const uint8_t *body, size_t len, const ProtobufCMessageDescriptor *desc, ProtobufCMessage **ret,
                      struct ck_error **ret_error) {
        ProtobufCMessage *msg;

        if (len < GRPC_FRAME_HEADER || body[0] != 0 || grpc_frame_length(body) != len - GRPC_FRAME_HEADER)
                return ck_error_set(ret_error, -EBADMSG, "%s",
                                    len >= GRPC_FRAME_HEADER && body[0] != 0 ? "compressed response not supported"
                                                                             : "malformed gRPC response framing");
        msg = protobuf_c_message_unpack(desc, NULL, len - GRPC_FRAME_HEADER, body + GRPC_FRAME_HEADER);
        if (!msg)
                return ck_error_set(ret_error, -EBADMSG, "cannot decode the response message");
        *ret = msg;
        return 0;
}
