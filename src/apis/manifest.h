/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <jansson.h>
#include <sys/types.h>

#include "apis/pod.h"
#include "basic/yaml_json.h"

struct ck_error;

/* Parse manifest text: every document must be a v1 Pod or a v1 PodList (apiVersion "v1", kind "Pod" /
 * "PodList"; a missing apiVersion/kind is an error, as upstream's decoder). Each pod is decoded
 * (pod_decode) and defaulted (pod_apply_defaults_checked), not validated. All or nothing: on error *ret_error says
 * which document ("document 2: ...", 1-based) and why. */
int manifest_parse(const char *data, size_t size, struct pod_set *ret, struct ck_error **ret_error);

/* As manifest_parse, and also where each pod came from: (*ret_docs)[i] is the 1-based document of
 * ret->pods[i], (*ret_items)[i] its index in a PodList's items or -1 for a Pod document. Both arrays have
 * ret->n entries; caller frees them. ret_docs/ret_items may be NULL. */
int manifest_parse_with_origin(const char *data, size_t size, struct pod_set *ret, size_t **ret_docs,
                               ssize_t **ret_items, struct ck_error **ret_error);
