/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The cm tests' check of a hint provider's one list, written as upstream's tests print hints: "{0-1 P} {nil}".
 * Include after cmocka.h. */

#include <stdio.h>

#include "cm/topologymanager/topologymanager.h"

static inline void check_hints(const struct tm_hints *h, const char *want) {
        char buf[512] = "", one[64];
        size_t len = 0;

        assert_int_equal(h->n, 1);
        for (size_t i = 0; i < h->lists[0].n; i++) {
                const struct tm_hint *x = &h->lists[0].v[i];
                len += (size_t) snprintf(buf + len, sizeof(buf) - len, "%s{%s%s}", i ? " " : "",
                                         x->has_affinity ? tm_mask_format(x->affinity, one, sizeof(one)) : "nil",
                                         x->preferred ? " P" : "");
        }
        assert_string_equal(buf, want);
}
