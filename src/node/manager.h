/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Joining the cluster as a node (kubelet_node_status.go, nodelease): register the Node (or adopt an existing
 * one), compute its status every --node-status-update-frequency and PATCH it when it changed or every
 * nodeStatusReportFrequency, and renew the Lease in kube-node-lease every leaseDuration/4. */

#include <event2/event.h>
#include <stdbool.h>

#include "client/client.h"
#include "cri/cri.h"
#include "options/options.h"

struct machine_info;
struct node_manager;

/* Validates --node-labels, --register-with-taints and the reserved resources (-EINVAL, logged). machine is
 * borrowed (read once by the kubelet) and must outlive the manager. */
int node_manager_new(struct event_base *base, const struct kubelet_options *o, const char *node_ip,
                     const struct machine_info *machine, struct kube_client *client, struct cri_client *cri,
                     struct node_manager **ret);
int node_manager_start(struct node_manager *m);
/* The client of the heartbeats (status updates and the lease), upstream's heartbeatClient: its own connections,
 * queue and rate limit, so that nothing else the kubelet asks of the API server (a flood of TokenReviews) can
 * delay them. Registration keeps the main client. Borrowed; NULL: the main client. */
void node_manager_set_heartbeat_client(struct node_manager *m, struct kube_client *heartbeat);
struct node_manager *node_manager_free(struct node_manager *m);

/* The Node's UID once registered (ownerReferences of the Lease and mirror pods), else NULL. */
const char *node_manager_node_uid(const struct node_manager *m);
