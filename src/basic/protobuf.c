/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/protobuf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/strv.h"

int pb_strv_copy(char *const *l, size_t *ret_n, char ***ret) {
        size_t n = strv_length(l);
        if (n == 0)
                return 0;
        *ret = calloc(n, sizeof(char *));
        if (!*ret)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                (*ret)[i] = strdup(l[i]);
                if (!(*ret)[i])
                        return -ENOMEM;
                *ret_n = i + 1;
        }
        return 0;
}

/* protobuf-c's map<string, string> entries all look like this */
struct pb_map_entry {
        ProtobufCMessage base;
        char *key;
        char *value;
};

const char *pb_map_get(void *const *entries, size_t n, const char *key) {
        for (size_t i = 0; i < n; i++) {
                const struct pb_map_entry *e = entries[i];
                if (e && e->key && strcmp(e->key, key) == 0)
                        return e->value;
        }
        return NULL;
}
