/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the registered CSI drivers publish about the node (pkg/volume/csi/nodeinfomanager): the Node's
 * csi.volume.kubernetes.io/nodeid annotation (a JSON map driver → node ID), the drivers' topology segments as
 * Node labels, and the CSINode object (storage.k8s.io/v1, named after the node, owned by the Node) listing each
 * driver with its node ID, topology keys and attach limit (allocatable.count).
 *
 * Level-triggered on the loop: install/uninstall record what is wanted for a driver; a single task at a time
 * reads the objects, changes what differs and writes them with their resourceVersion, retried with back-off
 * (1 s doubling to 30 s) until the API server agrees. The CSINode is also created at start when it is missing
 * (initializeCSINode). Without an API server nothing is published. */

#include <event2/event.h>
#include <stdint.h>

#include "basic/strmap.h"
#include "client/client.h"

struct csi_nodeinfo;

/* client may be NULL (standalone). */
int csi_nodeinfo_new(struct event_base *base, struct kube_client *client, const char *node_name,
                     struct csi_nodeinfo **ret);
struct csi_nodeinfo *csi_nodeinfo_free(struct csi_nodeinfo *ni); /* accepts NULL */
/* Create the CSINode now if it does not exist. */
/* The API client once the node has credentials (TLS bootstrap may come after the start). */
void csi_nodeinfo_set_client(struct csi_nodeinfo *ni, struct kube_client *client);
void csi_nodeinfo_start(struct csi_nodeinfo *ni);
/* InstallCSIDriver / UninstallCSIDriver. topology may be NULL. */
int csi_nodeinfo_install(struct csi_nodeinfo *ni, const char *driver, const char *node_id, int64_t max_volumes,
                         const struct strmap *topology);
int csi_nodeinfo_uninstall(struct csi_nodeinfo *ni, const char *driver);

/* pure, for the tasks and the unit tests: */
/* the annotation value with driver set to node_id (node_id NULL: removed); *ret NULL when the map ends empty.
 * -EBADMSG when the current value is not a JSON object of strings. */
int csi_nodeinfo_annotation(const char *current, const char *driver, const char *node_id, char **ret);
/* spec.drivers of a CSINode with driver replaced by the given entry (node_id NULL: removed); a new reference. */
json_t *csi_nodeinfo_drivers(const json_t *drivers, const char *driver, const char *node_id, int64_t max_volumes,
                             const struct strmap *topology);
