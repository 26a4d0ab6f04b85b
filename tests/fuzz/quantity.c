/* SPDX-License-Identifier: Apache-2.0 */
/* resource.Quantity: parsing, the exact value, comparison and the canonical form (which must parse again to
 * the same value). */
#include "apis/apis-internal.h"
#include "apis/pod.h"
#include "basic/error.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_strndup(data, size > 256 ? 256 : size);
        struct quantity q = {}, back = {};
        __int128 nano = 0;
        enum quantity_format fmt;
        struct ck_error *why = NULL;

        if (quantity_parse_exact(s, &nano, &fmt, &why) < 0 && !why)
                abort(); /* a refusal always says why */
        why = ck_error_free(why);
        if (quantity_parse(s, &q) >= 0) {
                char *c = quantity_canonical(&q);
                if (c) {
                        /* the canonical form is a quantity with the same value */
                        if (quantity_parse(c, &back) < 0 || quantity_cmp(&q, &back) != 0)
                                abort();
                        quantity_done(&back);
                        free(c);
                }
                quantity_done(&q);
        }
        free(s);
        return 0;
}
