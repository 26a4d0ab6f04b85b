/* SPDX-License-Identifier: Apache-2.0 */
/* A unary gRPC reply body (length-prefixed message) decoded as one of the CRI replies, the grpc-message
 * percent-decoding and the grpc-timeout formatting. The first byte picks the reply type. */
#include "cri.pb-c.h"
#include "grpc/wire.h"
#include "fuzz.h"

static const ProtobufCMessageDescriptor *const types[] = {
        &runtime__v1__version_response__descriptor,
        &runtime__v1__list_containers_response__descriptor,
        &runtime__v1__container_status_response__descriptor,
        &runtime__v1__list_pod_sandbox_response__descriptor,
        &runtime__v1__pod_sandbox_status_response__descriptor,
        &runtime__v1__exec_sync_response__descriptor,
        &runtime__v1__image_status_response__descriptor,
        &runtime__v1__status_response__descriptor,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ProtobufCMessage *msg = NULL;
        struct ck_error *why = NULL;
        char *dec, buf[32];

        if (size < 1)
                return 0;
        if (grpc_decode_reply(data + 1, size - 1, types[data[0] % (sizeof(types) / sizeof(types[0]))], &msg, &why) >= 0)
                protobuf_c_message_free_unpacked(msg, NULL);
        else if (!why)
                abort();
        why = ck_error_free(why);
        dec = grpc_percent_decode((const char *) data, size);
        if (!dec || strlen(dec) > size)
                abort();
        free(dec);
        if (size >= 8) {
                uint64_t usec;
                memcpy(&usec, data, sizeof(usec));
                grpc_format_timeout(usec, buf, sizeof(buf));
        }
        return 0;
}
