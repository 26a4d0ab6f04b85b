/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the container runtime says it can do (upstream's runtimeState handlers and features): kept from each CRI
 * Status (StatusResponse.runtime_handlers and .features), read by the node status, pod admission and the
 * containers' mounts. Pure. */

#include <stdbool.h>
#include <stddef.h>

#include "cri.pb-c.h"
#include "node/node_status.h"

struct node_runtime_features {
        bool known; /* a Status was answered */
        struct node_runtime_handler *handlers;
        size_t n_handlers; /* at most NODE_RUNTIME_HANDLERS_MAX */
        bool has_features; /* the runtime sent StatusResponse.features */
        bool supplemental_groups_policy;
};

/* f becomes what Status s says; 0 or -ENOMEM (f unchanged). */
int node_runtime_features_set(struct node_runtime_features *f, const Runtime__V1__StatusResponse *s);
void node_runtime_features_done(struct node_runtime_features *f);

/* runtimeHandlerSupportsRecursiveReadOnlyMounts: false for an unknown handler, or before any Status ("" or NULL:
 * the default handler); f may be NULL. */
bool node_runtime_features_rro(const struct node_runtime_features *f, const char *handler);
/* node.status.features.supplementalGroupsPolicy; f may be NULL */
bool node_runtime_features_sgp(const struct node_runtime_features *f);
