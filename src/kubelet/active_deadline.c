/* SPDX-License-Identifier: Apache-2.0 */
#include "kubelet/active_deadline.h"

#include "basic/time.h"

bool kubelet_active_deadline_passed(const struct pod *pod, int64_t start_time_usec, int64_t now_usec,
                                    int64_t *ret_deadline_usec) {
        int64_t deadline;

        if (!pod || !pod->spec.has_active_deadline || start_time_usec <= 0)
                return false;
        /* validation keeps it within 1..2^31-1 seconds: no overflow */
        deadline = start_time_usec + pod->spec.active_deadline_seconds * (int64_t) USEC_PER_SEC;
        if (ret_deadline_usec)
                *ret_deadline_usec = deadline;
        return now_usec >= deadline;
}
