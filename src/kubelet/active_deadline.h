/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* spec.activeDeadlineSeconds (pkg/kubelet/active_deadline.go): a pod active on the node longer than its deadline,
 * counted from status.startTime, is killed and fails with reason DeadlineExceeded. Pure. */

#include <stdbool.h>
#include <stdint.h>

#include "apis/pod.h"

#define ACTIVE_DEADLINE_REASON "DeadlineExceeded"
#define ACTIVE_DEADLINE_MESSAGE "Pod was active on the node longer than the specified deadline"

/* pastActiveDeadline: false when the pod has no deadline or no start time yet (*ret_deadline_usec untouched);
 * else whether now_usec is at or past it, and *ret_deadline_usec the realtime (unix usec) it passes at. A
 * deadline changed on a running pod counts at once: it is read from the spec given. */
bool kubelet_active_deadline_passed(const struct pod *pod, int64_t start_time_usec, int64_t now_usec,
                                    int64_t *ret_deadline_usec);
