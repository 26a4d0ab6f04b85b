/* SPDX-License-Identifier: Apache-2.0 */
/* A kubeconfig file (clusters, users, contexts, current-context) as --kubeconfig loads it. */
#include "basic/error.h"
#include "client/client.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *path = fuzz_write_file("kubeconfig", data, size);
        struct kube_config c = {};
        struct ck_error *err = NULL;

        if (kube_config_load(path, &c, &err) >= 0)
                kube_config_done(&c);
        else if (!err)
                abort();
        ck_error_free(err);
        return 0;
}
