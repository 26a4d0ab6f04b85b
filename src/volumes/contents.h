/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The files of configMap, secret, downwardAPI and projected volumes (MakePayload of pkg/volume/{configmap,
 * secret,downwardapi,projected}), from the pod and its fetched objects (struct pod_objects). */

#include "apis/pod_volumes.h"
#include "container/build.h"
#include "volumes/atomic_writer.h"

/* One downward API value (fieldpath.ExtractFieldPathAsString, resource.ExtractResourceValueByContainerName):
 * labels and annotations as `key="value"` lines sorted by key (FormatMap), resources divided by the divisor
 * and rounded up, limits not set taken from the node's allocatable (apis/fieldpath.h and apis/resource.h, shared with
 * the environment's fieldRef and resourceFieldRef). Caller frees. */
int vol_downward_value(const struct pod *pod, const struct downward_item *it, const struct kc_build_context *ctx,
                       char **ret);

/* The payload of one volume. On failure *ret_error says why, as upstream words it ("configmap \"x\" not found",
 * "configmap references non-existent config key: k", ...). */
int vol_volume_payload(const struct pod *pod, const struct volume *v, const struct kc_build_context *ctx,
                       struct vol_payload *ret, struct ck_error **ret_error);
