/* SPDX-License-Identifier: Apache-2.0 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

#include "http/websocket.h"

int ws_frame_parse(const uint8_t *buf, size_t n, bool require_mask, uint64_t max_payload, struct ws_frame *ret) {
        struct ws_frame f = {};
        uint64_t len;
        size_t need = 2;

        assert(buf || n == 0);
        if (max_payload == 0)
                max_payload = WS_MAX_FRAME;
        if (n < 2)
                return 0;
        if (buf[0] & 0x70)
                return -EPROTO; /* RSV1-3: no extension negotiated */
        f.fin = buf[0] & 0x80;
        f.opcode = buf[0] & 0x0F;
        switch (f.opcode) {
        case WS_OP_CONT:
        case WS_OP_TEXT:
        case WS_OP_BINARY:
        case WS_OP_CLOSE:
        case WS_OP_PING:
        case WS_OP_PONG:
                break;
        default:
                return -EPROTO;
        }
        f.masked = buf[1] & 0x80;
        if (require_mask && !f.masked)
                return -EPROTO;
        len = buf[1] & 0x7F;
        if (len == 126)
                need += 2;
        else if (len == 127)
                need += 8;
        if (f.masked)
                need += 4;
        if (n < need)
                return 0;
        if (len == 126) {
                len = (uint64_t) buf[2] << 8 | buf[3];
                if (len < 126)
                        return -EPROTO; /* the minimal number of bytes must be used (5.2) */
        } else if (len == 127) {
                len = 0;
                for (size_t i = 0; i < 8; i++)
                        len = len << 8 | buf[2 + i];
                if (len >> 63)
                        return -EPROTO;
                if (len <= 0xFFFF)
                        return -EPROTO;
        }
        if (f.opcode & 0x8) {
                if (!f.fin || len > WS_MAX_CONTROL)
                        return -EPROTO;
        } else if (len > max_payload)
                return -EMSGSIZE;
        if (f.masked)
                memcpy(f.mask, buf + need - 4, 4);
        f.header_len = need;
        f.payload_len = len;
        *ret = f;
        return 1;
}

void ws_unmask(uint8_t *data, size_t n, const uint8_t mask[4], uint64_t offset) {
        for (size_t i = 0; i < n; i++)
                data[i] ^= mask[(offset + i) & 3];
}

size_t ws_frame_header(uint8_t out[static WS_MAX_HEADER], uint8_t opcode, bool fin, uint64_t len) {
        out[0] = (uint8_t) ((fin ? 0x80 : 0) | (opcode & 0x0F));
        if (len < 126) {
                out[1] = (uint8_t) len;
                return 2;
        }
        if (len <= 0xFFFF) {
                out[1] = 126;
                out[2] = (uint8_t) (len >> 8);
                out[3] = (uint8_t) len;
                return 4;
        }
        out[1] = 127;
        for (size_t i = 0; i < 8; i++)
                out[2 + i] = (uint8_t) (len >> (56 - 8 * i));
        return 10;
}

int ws_msg_step(struct ws_msg *m, const struct ws_frame *f, uint64_t max_message, uint8_t *ret_opcode, bool *ret_done) {
        assert(m && f);
        if (max_message == 0)
                max_message = WS_MAX_MESSAGE;
        if (f->opcode & 0x8)
                return 0; /* control frames may come between fragments */
        if (f->opcode == WS_OP_CONT) {
                if (!m->in_progress)
                        return -EPROTO;
                if (f->payload_len > max_message - m->len)
                        return -EMSGSIZE;
                m->len += f->payload_len;
        } else {
                if (m->in_progress)
                        return -EPROTO;
                if (f->payload_len > max_message)
                        return -EMSGSIZE;
                m->opcode = f->opcode;
                m->len = f->payload_len;
        }
        m->in_progress = !f->fin;
        if (ret_opcode)
                *ret_opcode = m->opcode;
        if (ret_done)
                *ret_done = f->fin;
        if (f->fin)
                m->len = 0;
        return 0;
}

int ws_close_code(const uint8_t *payload, size_t n) {
        int code;

        if (n == 0)
                return 1005;
        if (n == 1)
                return -EPROTO;
        code = payload[0] << 8 | payload[1];
        /* 7.4.1/7.4.2: 1004-1006 and 1015 are reserved, under 1000 unused, 1016-2999 for the IETF, 5000+ invalid */
        if (code < 1000 || code >= 5000 || code == 1004 || code == 1005 || code == 1006 ||
            (code >= 1015 && code < 3000))
                return -EPROTO;
        return code;
}

int ws_accept_key(const char *key, char out[static WS_ACCEPT_LEN + 1]) {
        static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
        unsigned char decoded[3 * 24 / 4 + 1], digest[SHA_DIGEST_LENGTH], buf[24 + sizeof(guid)];
        size_t kl;
        int r;

        if (!key)
                return -EINVAL;
        kl = strlen(key);
        /* 16 bytes are 24 base64 characters, the last two "==" */
        if (kl != 24 || key[22] != '=' || key[23] != '=')
                return -EINVAL;
        r = EVP_DecodeBlock(decoded, (const unsigned char *) key, 24);
        if (r != 18) /* EVP_DecodeBlock counts the padding as zero bytes */
                return -EINVAL;
        memcpy(buf, key, 24);
        memcpy(buf + 24, guid, sizeof(guid) - 1);
        SHA1(buf, 24 + sizeof(guid) - 1, digest);
        r = EVP_EncodeBlock((unsigned char *) out, digest, SHA_DIGEST_LENGTH);
        if (r != (int) WS_ACCEPT_LEN)
                return -EINVAL;
        out[WS_ACCEPT_LEN] = 0;
        return 0;
}

static bool chan_is_base64(enum ws_chan_proto p) {
        return p == WS_CHAN_BASE64 || p == WS_CHAN_V4_BASE64;
}

int ws_chan_decode(enum ws_chan_proto p, uint8_t *msg, size_t n, uint8_t *ret_channel, size_t *ret_len) {
        uint8_t ch;
        size_t len;

        assert(msg || n == 0);
        if (n == 0)
                return -ENODATA;
        if (n > WS_MAX_MESSAGE)
                return -EMSGSIZE;
        if (!chan_is_base64(p)) {
                ch = msg[0];
                len = n - 1;
                memmove(msg, msg + 1, len);
                if (ch == WS_CHAN_CLOSE && p == WS_CHAN_V5 && len < 1)
                        return -EPROTO;
        } else {
                size_t b = n - 1;
                int r;

                if (msg[0] < '0' || msg[0] > '9')
                        return -EPROTO;
                ch = (uint8_t) (msg[0] - '0');
                if (b % 4 != 0)
                        return -EPROTO;
                if (b == 0)
                        len = 0;
                else {
                        /* EVP_DecodeBlock needs room for 3 bytes per 4 and counts padding as data */
                        size_t pad = (msg[n - 1] == '=') + (msg[n - 2] == '=');
                        for (size_t i = 1; i < n - pad; i++)
                                if (!(msg[i] >= 'A' && msg[i] <= 'Z') && !(msg[i] >= 'a' && msg[i] <= 'z') &&
                                    !(msg[i] >= '0' && msg[i] <= '9') && msg[i] != '+' && msg[i] != '/')
                                        return -EPROTO;
                        r = EVP_DecodeBlock(msg, msg + 1, (int) b); /* output is never longer than input */
                        if (r < 0 || (size_t) r < pad)
                                return -EPROTO;
                        len = (size_t) r - pad;
                }
        }
        *ret_channel = ch;
        *ret_len = len;
        return 0;
}
