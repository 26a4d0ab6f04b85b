/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The DRA plugins registered through <root-dir>/plugins_registry (pkg/kubelet/cm/dra/plugin): the plugin
 * manager's handler for type "DRAPlugin". A plugin names the services it serves ("v1.DRAPlugin",
 * "v1beta1.DRAPlugin"); v1 is used when offered. A driver may have several plugins at once (a rolling update of
 * its DaemonSet): each endpoint is kept, and calls go to the newest registration; when it goes, to the one
 * before. The gRPC client of a plugin is made when it registers and connects on its first call. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "grpc/client.h"

#define DRA_PLUGIN_TYPE "DRAPlugin"
#define DRA_SERVICE_V1 "v1.DRAPlugin"
#define DRA_SERVICE_V1BETA1 "v1beta1.DRAPlugin"
#define DRA_CLIENT_CALL_TIMEOUT_USEC (45 * UINT64_C(1000000)) /* upstream's defaultClientCallTimeout */
#define DRA_MAX_PLUGINS_PER_DRIVER 16
/* The health service a plugin may name among its services (ResourceHealthStatus): v1 preferred, then v1beta1,
 * then v1alpha1 (the same messages). */
#define DRA_HEALTH_SERVICE_V1 "v1.DRAResourceHealth"
#define DRA_HEALTH_SERVICE_V1BETA1 "v1beta1.DRAResourceHealth"
#define DRA_HEALTH_SERVICE_V1ALPHA1 "v1alpha1.DRAResourceHealth"
#define DRA_HEALTH_RETRY_USEC (5 * UINT64_C(1000000)) /* upstream's wait.Until period between stream attempts */

struct ck_error;
struct dra_plugins;

/* changed: a driver got its first plugin (registered true) or lost its last (false) */
int dra_plugins_new(struct event_base *base, void (*changed)(const char *driver, bool registered, void *userdata),
                    void *userdata, struct dra_plugins **ret);
struct dra_plugins *dra_plugins_free(struct dra_plugins *p); /* accepts NULL */

/* The service a plugin offering these would be called on: DRA_SERVICE_V1 or DRA_SERVICE_V1BETA1; NULL with the
 * reason when none. */
const char *dra_plugins_choose_service(char *const *versions, struct ck_error **ret_error);

/* ValidatePlugin / RegisterPlugin / DeRegisterPlugin. -EEXIST when the endpoint is already registered for the
 * driver (one plugin cannot take another's endpoint). */
int dra_plugins_validate(struct dra_plugins *p, const char *driver, const char *endpoint, char *const *versions,
                         struct ck_error **ret_error);
int dra_plugins_register(struct dra_plugins *p, const char *driver, const char *endpoint, char *const *versions,
                         struct ck_error **ret_error);
/* RegisterPlugin for the plugin manager: registers now, and done() runs later on the loop with the outcome (r < 0:
 * the error's message). Returns 0. Outcomes not delivered when dra_plugins_free() runs are dropped. */
int dra_plugins_register_async(struct dra_plugins *p, const char *driver, const char *endpoint, char *const *versions,
                               void (*done)(int r, const char *error, void *cbdata), void *cbdata);
void dra_plugins_deregister(struct dra_plugins *p, const char *driver, const char *endpoint);

/* The health service a plugin offering these would be watched on, NULL when none. */
const char *dra_plugins_health_service(char *const *versions);

/* ResourceHealthStatus: once set, every plugin registering with a health service gets a NodeWatchResources stream
 * (/<service>/NodeWatchResources), opened at registration and again DRA_HEALTH_RETRY_USEC after it ended (a
 * failure, the plugin's restart), until the plugin goes. on_message: each response (borrowed, a
 * Drahealth__V1__NodeWatchResourcesResponse; messages are capped by the gRPC client); on_end: the plugin's stream
 * ended or the plugin was deregistered (the driver's health is no longer known). Not set: no streams (today's
 * behaviour without the gate). */
struct dra_health_handler {
        void (*on_message)(const char *driver, const ProtobufCMessage *msg, void *userdata);
        void (*on_end)(const char *driver, void *userdata);
        void *userdata;
};
void dra_plugins_set_health_handler(struct dra_plugins *p, const struct dra_health_handler *h);

/* A call to the driver's newest plugin, method "NodePrepareResources" or "NodeUnprepareResources" on its
 * service. -ENOENT ("DRA driver %s is not registered") when it has none; otherwise as grpc_call(). */
int dra_plugins_call(struct dra_plugins *p, const char *driver, const char *method, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *resp_desc, grpc_callback_t cb, void *userdata);
