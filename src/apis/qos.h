/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A pod's QoS class (upstream pkg/apis/core/v1/helper/qos GetPodQOS). Pure. */

#include "apis/pod.h"

enum qos_class {
        QOS_GUARANTEED,
        QOS_BURSTABLE,
        QOS_BEST_EFFORT,
};

enum qos_class pod_qos_class(const struct pod *pod);
const char *qos_class_to_string(enum qos_class q); /* "Guaranteed", "Burstable", "BestEffort" */
