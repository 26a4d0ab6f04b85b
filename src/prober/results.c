/* SPDX-License-Identifier: Apache-2.0 */
#include "prober/results.h"

const char *probe_type_to_string(enum probe_type t) {
        switch (t) {
        case PROBE_LIVENESS:
                return "Liveness";
        case PROBE_READINESS:
                return "Readiness";
        default:
                return "Startup";
        }
}

const char *probe_result_to_string(enum probe_result r) {
        switch (r) {
        case PROBE_RESULT_SUCCESS:
                return "success";
        case PROBE_RESULT_FAILURE:
                return "failure";
        default:
                return "unknown";
        }
}
