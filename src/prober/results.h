/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Probe results as the rest of the kubelet reads them (upstream pkg/kubelet/prober/results): the kinds, the
 * results and a read-only view of the published results by container instance. Kept apart from the prober so
 * that the sync's decisions (kuberuntime/actions.c) and the status read results without depending on the
 * prober. */

#include <stdbool.h>

struct kc_container;

enum probe_type {
        PROBE_LIVENESS,
        PROBE_READINESS,
        PROBE_STARTUP,
};

enum probe_result {
        PROBE_RESULT_UNKNOWN,
        PROBE_RESULT_SUCCESS,
        PROBE_RESULT_FAILURE,
};

const char *probe_type_to_string(enum probe_type t);     /* "Liveness", "Readiness", "Startup" */
const char *probe_result_to_string(enum probe_result r); /* "unknown", "success", "failure" */

/* Published probe results by container instance (the results managers), as the sync and the status see
 * them: get() returns false when there is no result for that probe kind and instance. */
struct probe_results {
        bool (*get)(const void *userdata, enum probe_type type, const struct kc_container *instance,
                    enum probe_result *ret);
        const void *userdata;
};
