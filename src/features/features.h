/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Feature gates (k8s.io/component-base/featuregate, pkg/features): the names the upstream kubelet knows, how a
 * --feature-gates value and a featureGates map are checked, and the state of a gate after both. */

#include <stdbool.h>

struct ck_error;

enum feature_stage {
        FEATURE_ALPHA,
        FEATURE_BETA,
        FEATURE_GA,
        FEATURE_DEPRECATED,
        FEATURE_LATER, /* added to upstream after v1.20: the name is known, its stage is not recorded here */
};

struct feature_spec {
        const char *name;
        bool default_value;
        enum feature_stage stage;
        bool locked; /* may only be set to its default */
};

/* The spec of a known gate, NULL for an unknown one. */
const struct feature_spec *feature_lookup(const char *name);

/* Check and record NAME=VALUE in *gates, a vector of "Name=true"/"Name=false" entries where a name appears at
 * most once (a later setting replaces an earlier one, as upstream's SetFromMap). Unknown names and locked gates
 * set against their default are errors in upstream's words ("unrecognized feature gate: Foo", "cannot set
 * feature gate X to false, feature is locked to true"); with warn, setting a deprecated or GA gate is logged as
 * upstream does.
 * Returns 0, -EINVAL with *ret_error set, or -ENOMEM. */
int feature_gates_set(char ***gates, const char *name, bool value, bool warn, struct ck_error **ret_error);

/* A --feature-gates value: "A=true,B=false" (items trimmed, empty ones skipped), each item through
 * feature_gates_set(). Errors as upstream: "missing bool value for A", "invalid value of A=x, err: ...". */
int feature_gates_parse(char ***gates, const char *value, bool warn, struct ck_error **ret_error);

/* Is the gate on, given what was set (NULL: nothing)? An unknown name is off. */
bool feature_enabled(char *const *gates, const char *name);
