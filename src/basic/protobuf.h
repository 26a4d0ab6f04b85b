/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* protobuf-c messages: one destructor for both kinds we hold, messages unpacked by protobuf-c and the request
 * trees we build with every field malloc'ed (kuberuntime/config.c); protobuf_c_message_free_unpacked with the
 * default allocator frees either whole. */

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>

#include "basic/macro.h"

static inline void pb_free(void *msg) { /* accepts NULL */
        if (msg)
                protobuf_c_message_free_unpacked(msg, NULL);
}

static inline void pb_freep(void *p) {
        pb_free(*(void **) p);
}
#define _cleanup_pb_ _cleanup_(pb_freep)

/* Copy a strv into a repeated string field of a message we build (*ret_n counts the strings copied so far, so
 * that pb_free() frees them after a failure). Nothing for an empty strv. */
int pb_strv_copy(char *const *l, size_t *ret_n, char ***ret);

/* The value of key in a map<string, string> field as protobuf-c unpacks it (an array of n entry messages, each a
 * key and a value); NULL when absent. */
const char *pb_map_get(void *const *entries, size_t n, const char *key);
