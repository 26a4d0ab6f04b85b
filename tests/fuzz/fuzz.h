/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the libFuzzer targets share: a NUL-terminated copy of the input and a file holding it. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the input as a C string (cut at the first NUL, as any C caller would see it) */
static inline char *fuzz_strndup(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);
        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

/* the input in a file of its own (a private directory under /tmp, made once per process) */
static inline const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size) {
        static char dir[64], path[128];
        FILE *f;

        if (!dir[0]) {
                snprintf(dir, sizeof(dir), "/tmp/ckubelet-fuzz-XXXXXX");
                if (!mkdtemp(dir))
                        abort();
        }
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        f = fopen(path, "we");
        if (!f || (size > 0 && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
                abort();
        return path;
}

/* the input in an anonymous file (for the readers that take an fd) */
static inline int fuzz_memfd(const uint8_t *data, size_t size) {
        int fd = memfd_create("fuzz", MFD_CLOEXEC);
        size_t off = 0;

        if (fd < 0)
                abort();
        while (off < size) {
                ssize_t n = write(fd, data + off, size - off);
                if (n <= 0)
                        abort();
                off += (size_t) n;
        }
        return fd;
}
