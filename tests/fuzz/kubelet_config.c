/* SPDX-License-Identifier: Apache-2.0 */
/* A KubeletConfiguration file (--config), decoded and validated with the flags' defaults. */
#include "basic/error.h"
#include "options/options.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *path = fuzz_write_file("kubelet.yaml", data, size);
        char *argv[] = { "ckubelet", "--config", (char *) path, NULL };
        struct kubelet_options o;
        struct ck_error *err = NULL;
        int r;

        if (kubelet_options_init(&o) < 0)
                abort();
        r = kubelet_options_parse(&o, 3, argv, &err);
        if (r < 0 && r != -ENOMEM && !err)
                abort();
        ck_error_free(err);
        kubelet_options_done(&o);
        return 0;
}
