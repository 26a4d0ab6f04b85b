/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Helpers shared by the files of src/apis/ only. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apis/pod.h"

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

/* Upper bound on the error messages one validator returns for one value. */
#define NAME_MAX_MSGS 6

/* Name checks of k8s.io/apimachinery/pkg/util/validation: each fills msgs[] with static strings, in upstream
 * order, and returns how many (0 = valid). */
size_t check_dns1123_label(const char *s, const char *msgs[static NAME_MAX_MSGS]);
size_t check_dns1123_subdomain(const char *s, const char *msgs[static NAME_MAX_MSGS]);
size_t check_iana_svc_name(const char *s, const char *msgs[static NAME_MAX_MSGS]);
size_t check_qualified_name(const char *s, const char *msgs[static NAME_MAX_MSGS]);
size_t check_label_value(const char *s, const char *msgs[static NAME_MAX_MSGS]);
size_t check_env_var_name(const char *s, const char *msgs[static NAME_MAX_MSGS]);

/* Quote a string the way Go's %q does (strconv.Quote): caller frees; NULL on OOM. */
char *go_quote(const char *s);

/* The exact value of a quantity in nano units (|value| capped at INT64_MAX units), and its format. On a syntax
 * error returns -EINVAL and *ret_msg is upstream's message (ErrFormatWrong or ErrSuffix). */
enum quantity_format {
        QUANTITY_DECIMAL_SI,
        QUANTITY_BINARY_SI,
        QUANTITY_DECIMAL_EXPONENT,
};
int quantity_parse_exact(const char *s, __int128 *ret_nano, enum quantity_format *ret_format, const char **ret_msg);

/* Field path helpers: "parent.child", "parent[3]", "parent[key]". Caller frees; NULL on OOM. */
char *path_child(const char *parent, const char *child);
char *path_index(const char *parent, size_t i);
char *path_key(const char *parent, const char *key);
