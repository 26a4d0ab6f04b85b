/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Between the merger (config.c) and the sources (file.c, http.c). Not for the kubelet. */

#include "config/config.h"

struct event_base *pod_config_get_event_base(struct pod_config *c);
const char *pod_config_get_node_name(struct pod_config *c);

/* Register a source under a unique name (-EEXIST if taken). "data" is freed with free_fn by pod_config_free
 * (before the merger's own state), and free_fn must not call back into the merger. */
int pod_config_register_source(struct pod_config *c, const char *name, void *data, void (*free_fn)(void *data));
/* The data a source registered with, NULL if there is no such source. */
void *pod_config_source_data(struct pod_config *c, const char *name);

/* A source that tried and failed before it ever delivered a set says so here: the first update to the
 * kubelet waits until every source has delivered or failed once, so that a restart does not briefly
 * present a desired set without, say, the file pods while the URL is still being fetched. */
void pod_config_source_attempted(struct pod_config *c, const char *name);
