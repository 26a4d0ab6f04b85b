/* SPDX-License-Identifier: Apache-2.0 */
/* The env file parser of fileKeyRef (the file is written by the pod): the input's first line is the key, the rest
 * the file. Only the documented results; a value found is no longer than the file, and written back as
 * KEY='VALUE' it parses to the same value. */
#include <errno.h>

#include "basic/error.h"
#include "fuzz.h"
#include "kuberuntime/envfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const uint8_t *nl = memchr(data, '\n', size > 64 ? 64 : size);
        size_t klen = nl ? (size_t) (nl - data) : 0;
        const char *file = (const char *) data + (nl ? klen + 1 : 0);
        size_t fsize = size - (size_t) (file - (const char *) data);
        char *key = fuzz_strndup(data, klen), *value = NULL;
        struct ck_error *error = NULL;
        int r;

        r = kr_env_file_parse(file, fsize, key, &value, &error);
        if (r == 1) {
                if (!value || strlen(value) > fsize)
                        abort();
                /* written back: the same value, when it can be written (no quote in it, a key the format takes) */
                if (!strchr(value, '\'') && !strchr(value, '\r') && strlen(value) < 60000 && key[0] &&
                    !strpbrk(key, "=\n\r") && key[0] != ' ' && key[0] != '\t' && key[0] != '#' &&
                    key[strlen(key) - 1] != ' ' && key[strlen(key) - 1] != '\t') {
                        char *line = NULL, *back = NULL;
                        int n = asprintf(&line, "%s='%s'\n", key, value);
                        if (n < 0)
                                abort();
                        if (kr_env_file_parse(line, (size_t) n, key, &back, NULL) != 1 || strcmp(back, value) != 0)
                                abort();
                        free(back);
                        free(line);
                }
        } else if (value || (r != 0 && r != -EINVAL && r != -E2BIG && r != -ENOMEM))
                abort();
        free(value);
        ck_error_free(error);
        free(key);
        return 0;
}
