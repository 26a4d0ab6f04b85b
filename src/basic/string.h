/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Strings: copies, prefixes and suffixes, and parsing numbers and booleans with full-string checks. */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "basic/macro.h"

char *strdup_or_null(const char *s); /* NULL stays NULL; NULL on OOM too */
int free_and_strdup(char **p, const char *s);
static inline bool streq_ptr(const char *a, const char *b) {
        return a && b ? streq(a, b) : a == b;
}
bool startswith(const char *s, const char *prefix);
bool endswith(const char *s, const char *suffix);
/* s without leading and trailing white space: the trailing cut off in place, a pointer past the leading */
char *strstrip(char *s);
/* Parse a decimal integer with full-string and range checks; -EINVAL/-ERANGE. */
int safe_atoi64(const char *s, int64_t *ret);
int safe_atoi(const char *s, int *ret);
int parse_bool(const char *s, bool *ret); /* Go's strconv.ParseBool */
/* Quote a string the way Go's %q does (strconv.Quote): \" \\ \a \b \f \n \r \t \v, \xNN for other control
 * bytes, UTF-8 as is; NULL is "". Caller frees; NULL on OOM. */
char *go_quote(const char *s);
