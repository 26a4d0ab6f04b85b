/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Fake host trees for the stats tests: a temp dir that stands for "/". */

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/string.h"

static inline char *fake_root_new(void) {
        char tmpl[] = "/tmp/ckubelet-stats-test-XXXXXX";
        char *d = mkdtemp(tmpl);
        return d ? strdup(d) : NULL;
}

/* write <root><path>, creating directories */
static inline int fake_write(const char *root, const char *path, const char *content) {
        _cleanup_free_ char *full = NULL, *dir = NULL;
        char *slash;
        FILE *f;

        if (asprintf(&full, "%s%s", root, path) < 0)
                return -1;
        dir = strdup(full);
        if (!dir)
                return -1;
        slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                if (mkdir_p(dir, 0755) < 0)
                        return -1;
        }
        f = fopen(full, "we");
        if (!f)
                return -1;
        fputs(content, f);
        fclose(f);
        return 0;
}

static inline int fake_mkdir(const char *root, const char *path) {
        _cleanup_free_ char *full = NULL;
        if (asprintf(&full, "%s%s", root, path) < 0)
                return -1;
        return mkdir_p(full, 0755);
}

/* <root><path> in a static buffer (valid until the next call) */
static inline const char *tpath(const char *root, const char *path) {
        static char buf[4096];
        snprintf(buf, sizeof(buf), "%s%s", root, path);
        return buf;
}

static inline int fake_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static inline void fake_root_free(char *root) {
        if (root && startswith(root, "/tmp/ckubelet-stats-test-"))
                nftw(root, fake_rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(root);
}
