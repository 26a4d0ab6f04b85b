/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* jansson helpers. A `json_t *` released at the end of its scope is declared `json_auto_t *v = ...;`
 * (jansson's own cleanup attribute: json_decrefp, which accepts NULL); TAKE_PTR() hands it on. */

#include <jansson.h>

#include "basic/macro.h"

/* The string at o[a] (or o[a][b] when b is given), "" when it is missing or not a string. */
static inline const char *json_string_at(const json_t *o, const char *a, const char *b) {
        const json_t *v = json_object_get(o, a);
        if (b)
                v = json_object_get(v, b);
        return json_is_string(v) ? json_string_value(v) : "";
}

/* The JSON type of a value as the apiserver names it in errors ("object", "array", "string", "integer",
 * "number", "boolean", "null"). */
static inline const char *json_type_name(const json_t *v) {
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "object";
        case JSON_ARRAY:
                return "array";
        case JSON_STRING:
                return "string";
        case JSON_INTEGER:
                return "integer";
        case JSON_REAL:
                return "number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "boolean";
        case JSON_NULL:
                return "null";
        }
        return "unknown";
}
