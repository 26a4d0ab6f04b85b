/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One registered device plugin (endpoint.go): a gRPC client on its socket, its ListAndWatch stream, and the
 * calls the device manager makes. Everything is asynchronous; the callbacks run on the loop, never inside the
 * calls that start them. */

#include <event2/event.h>
#include <stdint.h>

#include "deviceplugin.pb-c.h"

#define DM_RPC_TIMEOUT_USEC (30 * UINT64_C(1000000)) /* KubeletPreStartContainerRPCTimeoutInSecs, for every call */

struct dm_endpoint;

/* the newest device list (a ListAndWatch message), borrowed */
typedef void (*dm_endpoint_devices_cb)(struct dm_endpoint *e, const V1beta1__ListAndWatchResponse *resp,
                                       void *userdata);
/* the stream ended ("listAndWatch ended unexpectedly ..."): the endpoint is stopped; free it later, not from
 * inside this callback */
typedef void (*dm_endpoint_stopped_cb)(struct dm_endpoint *e, const char *why, void *userdata);

/* A client for socket_path (connected as calls are made). Nothing is called yet: registration asks for the
 * options (dm_endpoint_get_options), then starts ListAndWatch (dm_endpoint_watch), as upstream's
 * PluginConnected and client.Run. */
int dm_endpoint_new(struct event_base *base, const char *socket_path, const char *resource,
                    dm_endpoint_devices_cb on_devices, dm_endpoint_stopped_cb on_stopped, void *userdata,
                    struct dm_endpoint **ret);
/* Ends the stream and the calls in flight (their callbacks do not run). Not from inside its own callbacks.
 * Accepts NULL. */
struct dm_endpoint *dm_endpoint_free(struct dm_endpoint *e);
const char *dm_endpoint_socket(const struct dm_endpoint *e);
/* Starts ListAndWatch: on_devices for each list, on_stopped once when the stream ends. Once. */
int dm_endpoint_watch(struct dm_endpoint *e);

/* A call's outcome: resp NULL and error set ("rpc error: code = ... desc = ...") on failure. */
typedef void (*dm_endpoint_reply_cb)(const ProtobufCMessage *resp, const char *error, void *userdata);

/* GetDevicePluginOptions: resp is a V1beta1__DevicePluginOptions */
int dm_endpoint_get_options(struct dm_endpoint *e, dm_endpoint_reply_cb cb, void *userdata);
int dm_endpoint_get_preferred_allocation(struct dm_endpoint *e, char *const *available, char *const *must_include,
                                         int32_t size, dm_endpoint_reply_cb cb, void *userdata);
int dm_endpoint_allocate(struct dm_endpoint *e, char *const *ids, dm_endpoint_reply_cb cb, void *userdata);
int dm_endpoint_pre_start_container(struct dm_endpoint *e, char *const *ids, dm_endpoint_reply_cb cb, void *userdata);
