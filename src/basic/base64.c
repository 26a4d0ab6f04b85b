/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/base64.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"

int base64_decode(const char *in, size_t max_size, char **ret, size_t *ret_size) {
        _cleanup_free_ char *clean = NULL, *out = NULL;
        size_t n = 0, pad = 0;
        int len;

        clean = malloc(strlen(in) + 1);
        if (!clean)
                return -ENOMEM;
        for (const char *p = in; *p; p++)
                if (*p != '\n' && *p != '\r')
                        clean[n++] = *p;
        clean[n] = '\0';
        if (n % 4 != 0)
                return -EINVAL;
        if (n / 4 * 3 > max_size + 2)
                return -E2BIG;
        /* '=' only as the last one or two characters */
        for (size_t i = 0; i < n; i++)
                if (clean[i] == '=' && !(i >= n - 2 && (i == n - 1 || clean[n - 1] == '=')))
                        return -EINVAL;
        if (n > 0 && clean[n - 1] == '=')
                pad = n > 1 && clean[n - 2] == '=' ? 2 : 1;
        out = malloc(n / 4 * 3 + 1);
        if (!out)
                return -ENOMEM;
        len = n > 0 ? EVP_DecodeBlock((unsigned char *) out, (const unsigned char *) clean, (int) n) : 0;
        if (len < 0 || (size_t) len < pad)
                return -EINVAL;
        len -= (int) pad;
        if ((size_t) len > max_size)
                return -E2BIG;
        out[len] = '\0';
        *ret = TAKE_PTR(out);
        if (ret_size)
                *ret_size = (size_t) len;
        return 0;
}

char *base64_encode(const void *in, size_t size) {
        char *out;

        if (size > (SIZE_MAX / 4) * 3 - 3)
                return NULL;
        out = malloc(4 * ((size + 2) / 3) + 1);
        if (!out)
                return NULL;
        EVP_EncodeBlock((unsigned char *) out, in, (int) size);
        return out;
}
