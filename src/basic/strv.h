/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* String vectors: NULL-terminated arrays of malloc'd strings. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

size_t strv_length(char *const *l);
/* Free l[i] and close the gap; i must be < strv_length(l). */
void strv_remove_at(char **l, size_t i);
char **strv_free(char **l); /* accepts NULL, returns NULL */
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)
#define _cleanup_strv_free_ _cleanup_(strv_freep)
int strv_push(char ***l, char *value);         /* takes ownership of value, even on failure */
int strv_extend(char ***l, const char *value); /* copies value */
int strv_copy(char *const *l, char ***ret);
bool strv_contains(char *const *l, const char *s);
char *strv_join(char *const *l, const char *sep); /* NULL on OOM; "" for an empty vector */
