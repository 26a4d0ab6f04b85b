/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/hash.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>

int hash_hex(const char *algo, const void *data, size_t len, char *buf, size_t bufsize) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned int mdlen = 0;
        const EVP_MD *type = EVP_get_digestbyname(algo);

        if (!type)
                return -EINVAL;
        if (!EVP_Digest(data, len, md, &mdlen, type, NULL))
                return -EIO;
        if (bufsize < mdlen * 2 + 1)
                return -ENOBUFS;
        for (unsigned i = 0; i < mdlen; i++)
                snprintf(buf + i * 2, 3, "%02x", md[i]);
        return 0;
}

uint64_t fnv1a64(uint64_t h, const void *data, size_t len) {
        const unsigned char *p = data;
        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}
