/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The registered CSI drivers (pkg/volume/csi csiDrivers and the RegistrationHandler of the plugin manager): a
 * driver registers through <root-dir>/plugins_registry (src/pluginmanager), is validated (a 1.x version, not
 * already registered with a higher one), answers NodeGetInfo, and its node facts go to the API (nodeinfo.h). The
 * volume manager reaches a driver's Node service through csi_drivers_client() and caches its capabilities here. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "csi/client.h"
#include "csi/nodeinfo.h"

struct ck_error;
struct csi_drivers;

/* changed() runs on the loop when a driver registered or went away (the volume manager retries what waited). */
typedef void (*csi_drivers_changed_t)(const char *driver, bool registered, void *userdata);

/* timeout_usec: the deadline of every call (csiTimeout, 0 = 2 minutes). ni is borrowed. */
int csi_drivers_new(struct event_base *base, uint64_t timeout_usec, struct csi_nodeinfo *ni,
                    csi_drivers_changed_t changed, void *userdata, struct csi_drivers **ret);
struct csi_drivers *csi_drivers_free(struct csi_drivers *d); /* accepts NULL */

/* The plugin manager's handler for type "CSIPlugin": */
/* ValidatePlugin: 0, or -EINVAL with upstream's message */
int csi_drivers_validate(struct csi_drivers *d, const char *name, const char *endpoint, char *const *versions,
                         struct ck_error **ret_error);
/* RegisterPlugin: done(r, error message or NULL) runs once on the loop when NodeGetInfo answered (r < 0: not
 * registered). Returns 0 when done will run. */
typedef void (*csi_drivers_done_t)(int r, const char *error, void *userdata);
int csi_drivers_register(struct csi_drivers *d, const char *name, const char *endpoint, char *const *versions,
                         csi_drivers_done_t done, void *userdata);
/* DeRegisterPlugin (a pending registration of that name is abandoned: its done() runs with -ECANCELED). */
void csi_drivers_deregister(struct csi_drivers *d, const char *name);

/* The Node service of a registered driver, or NULL (then *ret_error: upstream's "driver name X not found in the
 * list of registered CSI drivers"). Borrowed until the driver goes away. */
struct csi_client *csi_drivers_client(struct csi_drivers *d, const char *name, struct ck_error **ret_error);
/* The driver's node capabilities: true when known now (cached after the first NodeGetCapabilities). */
bool csi_drivers_caps(struct csi_drivers *d, const char *name, struct csi_node_caps *ret);
void csi_drivers_set_caps(struct csi_drivers *d, const char *name, const struct csi_node_caps *caps);
