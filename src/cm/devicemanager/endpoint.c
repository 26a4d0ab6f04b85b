/* SPDX-License-Identifier: Apache-2.0 */
/* A device plugin's endpoint: ListAndWatch and the unary calls over src/grpc's client. */
#include "cm/devicemanager/endpoint.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "grpc/client.h"

struct dm_endpoint {
        struct grpc_client *client;
        struct grpc_call *stream;
        char *socket;
        char *resource;
        dm_endpoint_devices_cb on_devices;
        dm_endpoint_stopped_cb on_stopped;
        void *userdata;
};

struct ep_call {
        struct dm_endpoint *e;
        dm_endpoint_reply_cb cb;
        void *userdata;
};

const char *dm_endpoint_socket(const struct dm_endpoint *e) {
        return e->socket;
}

static void on_message(const ProtobufCMessage *msg, void *userdata) {
        struct dm_endpoint *e = userdata;
        log_v(2, "State pushed for device plugin %s", e->resource);
        e->on_devices(e, (const V1beta1__ListAndWatchResponse *) msg, e->userdata);
}

static void on_stream_end(const struct grpc_reply *reply, void *userdata) {
        struct dm_endpoint *e = userdata;
        _cleanup_free_ char *why = NULL;

        e->stream = NULL;
        if (asprintf(&why,
                     "listAndWatch ended unexpectedly for device plugin %s with error rpc error: code = %s desc = %s",
                     e->resource, grpc_code_to_string(reply->grpc_status), reply->message) < 0)
                why = NULL;
        log_error("%s", why ? why : "listAndWatch ended");
        e->on_stopped(e, why ? why : "listAndWatch ended", e->userdata);
}

int dm_endpoint_new(struct event_base *base, const char *socket_path, const char *resource,
                    dm_endpoint_devices_cb on_devices, dm_endpoint_stopped_cb on_stopped, void *userdata,
                    struct dm_endpoint **ret) {
        struct dm_endpoint *e;
        int r;

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->on_devices = on_devices;
        e->on_stopped = on_stopped;
        e->userdata = userdata;
        e->socket = strdup(socket_path);
        e->resource = strdup(resource);
        if (!e->socket || !e->resource) {
                r = -ENOMEM;
                goto fail;
        }
        r = grpc_client_new(base, socket_path, DM_RPC_TIMEOUT_USEC, &e->client);
        if (r < 0)
                goto fail;
        *ret = e;
        return 0;
fail:
        dm_endpoint_free(e);
        return r;
}

int dm_endpoint_watch(struct dm_endpoint *e) {
        V1beta1__Empty empty = V1BETA1__EMPTY__INIT;

        assert(!e->stream);
        return grpc_call_stream(e->client, "/v1beta1.DevicePlugin/ListAndWatch", &empty.base,
                                &v1beta1__list_and_watch_response__descriptor, on_message, on_stream_end, e,
                                &e->stream);
}

struct dm_endpoint *dm_endpoint_free(struct dm_endpoint *e) {
        if (!e)
                return NULL;
        grpc_call_cancel(e->stream);
        e->stream = NULL;
        /* calls in flight end with CANCELLED (their callbacks run now) */
        grpc_client_free(e->client);
        free(e->socket);
        free(e->resource);
        free(e);
        return NULL;
}

static void on_reply(const struct grpc_reply *reply, void *userdata) {
        struct ep_call *c = userdata;
        _cleanup_free_ char *error = NULL;

        if (reply->r < 0 && asprintf(&error, "rpc error: code = %s desc = %s", grpc_code_to_string(reply->grpc_status),
                                     reply->message) < 0)
                error = NULL;
        c->cb(reply->r < 0 ? NULL : reply->msg, reply->r < 0 ? (error ? error : "rpc error") : NULL, c->userdata);
        free(c);
}

static int call(struct dm_endpoint *e, const char *method, const ProtobufCMessage *req,
                const ProtobufCMessageDescriptor *resp_desc, dm_endpoint_reply_cb cb, void *userdata) {
        struct ep_call *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        *c = (struct ep_call) { .e = e, .cb = cb, .userdata = userdata };
        r = grpc_call(e->client, method, req, resp_desc, DM_RPC_TIMEOUT_USEC, on_reply, c, NULL);
        if (r < 0)
                free(c);
        return r;
}

int dm_endpoint_get_options(struct dm_endpoint *e, dm_endpoint_reply_cb cb, void *userdata) {
        V1beta1__Empty empty = V1BETA1__EMPTY__INIT;

        return call(e, "/v1beta1.DevicePlugin/GetDevicePluginOptions", &empty.base,
                    &v1beta1__device_plugin_options__descriptor, cb, userdata);
}

int dm_endpoint_get_preferred_allocation(struct dm_endpoint *e, char *const *available, char *const *must_include,
                                         int32_t size, dm_endpoint_reply_cb cb, void *userdata) {
        V1beta1__PreferredAllocationRequest req = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__ContainerPreferredAllocationRequest creq = V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
        V1beta1__ContainerPreferredAllocationRequest *creqs[] = { &creq };

        creq.available_deviceids = (char **) available;
        creq.n_available_deviceids = strv_length(available);
        creq.must_include_deviceids = (char **) must_include;
        creq.n_must_include_deviceids = strv_length(must_include);
        creq.allocation_size = size;
        req.container_requests = creqs;
        req.n_container_requests = 1;
        return call(e, "/v1beta1.DevicePlugin/GetPreferredAllocation", &req.base,
                    &v1beta1__preferred_allocation_response__descriptor, cb, userdata);
}

int dm_endpoint_allocate(struct dm_endpoint *e, char *const *ids, dm_endpoint_reply_cb cb, void *userdata) {
        V1beta1__AllocateRequest req = V1BETA1__ALLOCATE_REQUEST__INIT;
        V1beta1__ContainerAllocateRequest creq = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
        V1beta1__ContainerAllocateRequest *creqs[] = { &creq };

        creq.devicesids = (char **) ids;
        creq.n_devicesids = strv_length(ids);
        req.container_requests = creqs;
        req.n_container_requests = 1;
        return call(e, "/v1beta1.DevicePlugin/Allocate", &req.base, &v1beta1__allocate_response__descriptor, cb,
                    userdata);
}

int dm_endpoint_pre_start_container(struct dm_endpoint *e, char *const *ids, dm_endpoint_reply_cb cb, void *userdata) {
        V1beta1__PreStartContainerRequest req = V1BETA1__PRE_START_CONTAINER_REQUEST__INIT;

        req.devicesids = (char **) ids;
        req.n_devicesids = strv_length(ids);
        return call(e, "/v1beta1.DevicePlugin/PreStartContainer", &req.base,
                    &v1beta1__pre_start_container_response__descriptor, cb, userdata);
}
