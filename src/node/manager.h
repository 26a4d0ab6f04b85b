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

/* Validates --node-labels, --register-with-taints and the reserved resources (-EINVAL, the reason in *ret_error).
 * machine is borrowed (read once by the kubelet) and must outlive the manager. */
int node_manager_new(struct event_base *base, const struct kubelet_options *o, const char *node_ip,
                     const struct machine_info *machine, struct kube_client *client, struct cri_client *cri,
                     struct node_manager **ret, struct ck_error **ret_error);
int node_manager_start(struct node_manager *m);
/* Where the status gets the device plugin resources from (called at each status computation; the array is
 * borrowed until the next call). */
struct node_extended_resource;
void node_manager_set_extended_source(struct node_manager *m,
                                      void (*get)(void *userdata, const struct node_extended_resource **ret,
                                                  size_t *ret_n),
                                      void *userdata);

/* The client of the heartbeats (status updates and the lease), upstream's heartbeatClient: its own connections,
 * queue and rate limit, so that nothing else the kubelet asks of the API server (a flood of TokenReviews) can
 * delay them. Registration keeps the main client. Borrowed; NULL: the main client. */
void node_manager_set_heartbeat_client(struct node_manager *m, struct kube_client *heartbeat);
struct node_manager *node_manager_free(struct node_manager *m);

/* The eviction manager's node conditions (bits of eviction/api.h: memory 1, disk 2, pid 4) and the hard eviction
 * thresholds taken off allocatable (see node_status_input): a change of the conditions updates the status at once. */
void node_manager_set_pressure(struct node_manager *m, bool memory, bool disk, bool pid);
/* the node shutdown manager's ShutdownStatus: not Ready with "node is shutting down" while on; reported now */
void node_manager_set_shutting_down(struct node_manager *m, bool on);
void node_manager_set_eviction_reservation(struct node_manager *m, int64_t memory_bytes, float memory_fraction,
                                           int64_t storage_bytes, float storage_fraction);

/* The volume manager's volumesInUse for the status (in_use returns a strv the manager frees), and the names of a
 * status the API server accepted (reported). */
void node_manager_set_volumes(struct node_manager *m, char **(*in_use)(void *userdata),
                              void (*reported)(char *const *names, void *userdata), void *userdata);

/* What the runtime said it can do in its last Status (runtime handlers, features); NULL for a NULL manager. */
struct node_runtime_features;
const struct node_runtime_features *node_manager_runtime_features(const struct node_manager *m);

/* The Node's UID once registered (ownerReferences of the Lease and mirror pods), else NULL. */
const char *node_manager_node_uid(const struct node_manager *m);
/* The client to register and report with, when it could not be given to node_manager_new() (the node was still
 * getting its client certificate). Before node_manager_start(). */
void node_manager_set_client(struct node_manager *m, struct kube_client *client);
/* The node's Hostname address (the hostname, or --hostname-override's node name). */
const char *node_manager_hostname(const struct node_manager *m);
