/* SPDX-License-Identifier: Apache-2.0 */
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "stats/stats-internal.h"

json_t *stats_jstr(const char *s) {
        _cleanup_free_ char *copy = NULL;
        json_t *j;

        j = json_string(strempty(s));
        if (j || !s)
                return j;
        /* not valid UTF-8 (or OOM): replace every byte outside printable ASCII */
        copy = strdup(s);
        if (!copy)
                return NULL;
        for (char *p = copy; *p; p++)
                if ((unsigned char) *p >= 0x80)
                        *p = '?';
        return json_string(copy);
}

json_t *stats_juint(uint64_t v) {
        return json_integer(v > (uint64_t) INT64_MAX ? INT64_MAX : (json_int_t) v);
}
