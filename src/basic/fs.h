/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Small local files: read whole (with a cap), write atomically, create directories. */

#include <stddef.h>

#include "basic/macro.h"

/* Read a whole file, refusing files larger than max_size (-EFBIG). Result is NUL-terminated. */
int read_full_file(const char *path, size_t max_size, char **ret_data, size_t *ret_size);
/* Write atomically (temp file + rename) with O_CLOEXEC. */
int write_file_atomic(const char *path, const void *data, size_t size, int mode);
int mkdir_p(const char *path, int mode);
