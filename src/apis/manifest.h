/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <jansson.h>
#include <sys/types.h>

#include "apis/pod.h"

struct ck_error;

/* Bound on YAML nesting and node count, for hostile input. */
#define YAML_MAX_DEPTH 64
#define YAML_MAX_NODES 100000
/* Bound on the input text. */
#define YAML_MAX_SIZE (16u * 1024u * 1024u)

/* Convert YAML (or JSON) text into a JSON array of documents. Plain scalars resolve as the YAML 1.2 core
 * schema (null, true/false, ints, floats; everything else a string); quoted scalars are strings. Empty
 * documents are skipped. Anchors/aliases are refused (-EINVAL, "aliases are not supported"). Errors name
 * the line and column. */
int yaml_to_json_docs(const char *data, size_t size, json_t **ret_array, struct ck_error **ret_error);

/* Parse manifest text: every document must be a v1 Pod or a v1 PodList (apiVersion "v1", kind "Pod" /
 * "PodList"; a missing apiVersion/kind is an error, as upstream's decoder). Each pod is decoded
 * (pod_decode) and defaulted (pod_apply_defaults), not validated. All or nothing: on error *ret_error says
 * which document ("document 2: ...", 1-based) and why. */
int manifest_parse(const char *data, size_t size, struct pod_set *ret, struct ck_error **ret_error);

/* As manifest_parse, and also where each pod came from: (*ret_docs)[i] is the 1-based document of
 * ret->pods[i], (*ret_items)[i] its index in a PodList's items or -1 for a Pod document. Both arrays have
 * ret->n entries; caller frees them. ret_docs/ret_items may be NULL. */
int manifest_parse_with_origin(const char *data, size_t size, struct pod_set *ret, size_t **ret_docs,
                               ssize_t **ret_items, struct ck_error **ret_error);
