/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

/* Standard base64 with padding, as Go's base64.StdEncoding decodes it (Secret and ConfigMap binaryData values,
 * kubeconfig *-data fields, docker config "auth"): CR and LF are ignored, anything else outside the alphabet,
 * a length that is not a multiple of 4 or data after the padding is -EINVAL. A result longer than max_size is
 * -E2BIG. *ret is NUL-terminated (the data may hold NULs: *ret_size says how long it is). The decoding itself
 * is OpenSSL's (EVP_DecodeBlock). */
int base64_decode(const char *in, size_t max_size, char **ret, size_t *ret_size);
/* Standard base64 with padding (Go's base64.StdEncoding, how encoding/json writes []byte). NULL on OOM. */
char *base64_encode(const void *in, size_t size);
