/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* String maps: ordered lists of key/value pairs with unique keys (labels, annotations, environments). */

#include <stddef.h>

#include "basic/macro.h"

struct strmap {
        size_t n;
        char **keys;
        char **values;
};
void strmap_done(struct strmap *m);                             /* frees contents, accepts NULL */
int strmap_set(struct strmap *m, const char *k, const char *v); /* copies both, replaces existing */
const char *strmap_get(const struct strmap *m, const char *k);
int strmap_copy(const struct strmap *src, struct strmap *ret);
void strmap_sort(struct strmap *m); /* sort by key */
