/* SPDX-License-Identifier: Apache-2.0 */
/* The query of a /containerLogs request (v1.PodLogOptions from the query string). */
#include "basic/error.h"
#include "server/logs_query.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *q = fuzz_strndup(data, size);
        struct logs_options o;
        struct ck_error *err = NULL;
        int r;

        r = api_log_options_from_query_at(q, 1700000000LL * 1000000000LL, &o, &err);
        if (r < 0 && r != -ENOMEM && !err)
                abort(); /* a refused query says why */
        if (r >= 0 && ((o.limit_bytes < 1 && o.limit_bytes != -1) || o.tail_lines < -1))
                abort(); /* validated */
        ck_error_free(err);
        free(q);
        return 0;
}
