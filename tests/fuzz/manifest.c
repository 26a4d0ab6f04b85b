/* SPDX-License-Identifier: Apache-2.0 */
/* The static pod path: a manifest file (YAML or JSON, any number of documents, Pod or PodList) through
 * decoding, the static pod defaults, the apiserver's defaults and validation, as the file and URL sources do. */
#include "apis/manifest.h"
#include "apis/pod.h"
#include "basic/error.h"
#include "config/config.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct pod_set set = {};
        struct ck_error *err = NULL;

        if (pod_config_static_pods_from_manifest((const char *) data, size, "fuzz-node", CONFIG_SOURCE_FILE,
                                                 "/etc/kubernetes/manifests/fuzz.yaml", &set, &err) >= 0) {
                for (size_t i = 0; i < set.n; i++) {
                        char *host = pod_hostname(set.pods[i]);
                        free(host);
                }
                pod_set_done(&set);
        } else if (!err || !ck_error_message(err))
                abort(); /* a failure always carries its reason */
        ck_error_free(err);
        return 0;
}
