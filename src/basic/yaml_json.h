/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <jansson.h>
#include <stddef.h>

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
