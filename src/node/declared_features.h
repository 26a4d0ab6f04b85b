/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* node.status.declaredFeatures (NodeDeclaredFeatures, GA in v1.37): the features of upstream v1.37's registry
 * (k8s.io/component-helpers nodedeclaredfeatures, features.AllFeatures) that this kubelet declares. Upstream
 * declares a feature when its gate is on (and, for two, when the runtime says it can); the scheduler then places
 * a pod that needs one only on a node declaring it, and the kubelet refuses such a pod otherwise. ckubelet
 * declares only what it implements: see node_declared_feature_table. Pure. */

#include <stdbool.h>
#include <stddef.h>

struct node_declared_feature {
        const char *name;   /* as declared (upstream's Feature.Name()) */
        bool gate_default;  /* the default of its gate in v1.37 */
        bool needs_runtime; /* also needs the runtime's say-so (UserNamespacesHostNetwork, MountOptions) */
        bool implemented;   /* ckubelet acts on it as upstream does */
};

/* upstream's registry, in its order; *ret_n entries */
const struct node_declared_feature *node_declared_feature_table(size_t *ret_n);

/* The names to declare from table t (n entries), sorted by name (upstream's framework sorts its registry; the
 * apiserver validates the order): implemented, gate on by default, and not waiting for a runtime feature (ckubelet asks the
 * runtime for neither). ret must hold n pointers; returns how many were written. */
size_t node_declared_features(const struct node_declared_feature *t, size_t n, const char **ret);
