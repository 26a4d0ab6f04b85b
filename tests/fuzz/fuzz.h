/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the libFuzzer targets share: a NUL-terminated copy of the input, a private directory and a file holding
 * the input. */

#include <dirent.h>
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

#define FUZZ_DIR_MAX 4096

/* where a target makes trees of its own: $TMPDIR (bench/fuzz.sh gives each target its own, removed after the
 * run, so a tree left by a crash or by the end of the run goes with it) or /tmp */
static inline const char *fuzz_tmpdir(void) {
        const char *tmp = getenv("TMPDIR");

        return tmp && tmp[0] == '/' ? tmp : "/tmp";
}

/* the path of fuzz_dir() ("" until made) */
static inline char *fuzz_dir_path(void) {
        static char path[FUZZ_DIR_MAX];
        return path;
}

static inline void fuzz_dir_remove(void) {
        DIR *d = opendir(fuzz_dir_path());
        struct dirent *de;

        if (d) {
                while ((de = readdir(d)))
                        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                                (void) unlinkat(dirfd(d), de->d_name, 0);
                closedir(d);
        }
        (void) rmdir(fuzz_dir_path());
}

/* a private directory, made once per process under $TMPDIR (bench/fuzz.sh gives each target its own, removed
 * after the run) or /tmp, and removed with its files when the process exits normally (libFuzzer's exit(0) at the
 * end of a run; a crash leaves it to fuzz.sh) */
static inline const char *fuzz_dir(void) {
        char *dir = fuzz_dir_path();

        if (!dir[0]) {
                const char *tmp = getenv("TMPDIR");
                int n;

                n = snprintf(dir, FUZZ_DIR_MAX, "%s/ckubelet-fuzz-XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
                if (n < 0 || n >= FUZZ_DIR_MAX || !mkdtemp(dir) || atexit(fuzz_dir_remove) != 0)
                        abort();
        }
        return dir;
}

/* the input in a file of its own, in fuzz_dir() */
static inline const char *fuzz_write_file(const char *name, const uint8_t *data, size_t size) {
        static char path[FUZZ_DIR_MAX + 64];
        FILE *f;
        int n;

        n = snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), name);
        if (n < 0 || (size_t) n >= sizeof(path))
                abort();
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
