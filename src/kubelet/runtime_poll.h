/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Without an API server there is no node manager to ask the runtime's Status: this asks it itself, at start and
 * every 5 s (upstream's updateRuntimeUp period), and keeps what the runtime can do (node/runtime_features.h) for
 * pod admission and the containers' mounts. */

#include "node/runtime_features.h"

struct event_base;
struct cri_client;
struct runtime_poll;

/* Starts asking now. 0, -ENOMEM. */
int runtime_poll_new(struct event_base *base, struct cri_client *cri, struct runtime_poll **ret);
/* NULL-safe, either side of the CRI client's free (a call in flight frees p when the client fails it). */
struct runtime_poll *runtime_poll_free(struct runtime_poll *p);
const struct node_runtime_features *runtime_poll_features(const struct runtime_poll *p);
