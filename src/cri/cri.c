/* SPDX-License-Identifier: Apache-2.0 */
/* CRI v1 client: the typed calls on top of the gRPC client (grpc/client.c), one gRPC client per endpoint
 * (runtime and image, the same one when they are equal), and the kubelet's per-operation counters. */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/list.h"
#include "basic/macro.h"
#include "basic/string.h"
#include "cri/cri.h"

struct cri_op {
        const char *method_suffix;
        struct cri_op_stats stats;
};

struct cri_client {
        struct grpc_client *runtime, *image; /* image == runtime when the endpoints are equal */
        bool freeing;
        struct cri_op ops[32];
        size_t n_ops;
};

/* one call in flight: the caller's callback, the operation to count, and the owner's set it is in */
struct cri_call {
        struct cri_call *prev, *next; /* in owner->head */
        struct cri_calls *owner;
        struct grpc_call *grpc;
        struct cri_client *client;
        int op; /* index into ops[], -1 for an operation without a counter */
        cri_callback_t cb;
        void *userdata;
};

static const struct {
        const char *method;
        const char *op;
} op_names[] = {
        { "/Version", "version" },
        { "/Status", "status" },
        { "/RuntimeConfig", "runtime_config" },
        { "/RunPodSandbox", "run_podsandbox" },
        { "/StopPodSandbox", "stop_podsandbox" },
        { "/RemovePodSandbox", "remove_podsandbox" },
        { "/PodSandboxStatus", "podsandbox_status" },
        { "/ListPodSandbox", "list_podsandbox" },
        { "/CreateContainer", "create_container" },
        { "/StartContainer", "start_container" },
        { "/StopContainer", "stop_container" },
        { "/UpdateContainerResources", "update_container" },
        { "/RemoveContainer", "remove_container" },
        { "/ListContainers", "list_containers" },
        { "/ContainerStatus", "container_status" },
        { "/ExecSync", "exec_sync" },
        { "/PullImage", "pull_image" },
        { "/ImageStatus", "image_status" },
        { "/ListImages", "list_images" },
        { "/ContainerStats", "container_stats" },
        { "/ListContainerStats", "list_container_stats" },
        { "/Exec", "exec" },
        { "/Attach", "attach" },
        { "/PortForward", "port_forward" },
        { "/ImageFsInfo", "image_fs_info" },
        { "/ListPodSandboxStats", "list_podsandbox_stats" },
        { "/PodSandboxStats", "podsandbox_stats" },
        { "/RemoveImage", "remove_image" },
        { "/ReopenContainerLog", "reopen_container_log" },
};

_Static_assert(ELEMENTSOF(op_names) <= 32, "struct cri_client.ops is too small for op_names");

static void stats_record(struct cri_client *c, int op, bool error, uint64_t duration_usec) {
        double seconds = (double) duration_usec / 1e6;

        if (op < 0 || (size_t) op >= c->n_ops)
                return;
        c->ops[op].stats.count++;
        if (error)
                c->ops[op].stats.errors++;
        c->ops[op].stats.seconds_sum += seconds;
        histogram_observe(&c->ops[op].stats.duration, seconds);
}

static void on_reply(const struct grpc_reply *reply, void *userdata) {
        struct cri_call *call = userdata;
        const struct cri_reply r = {
                .r = reply->r,
                .grpc_status = reply->grpc_status,
                .message = reply->message,
                .msg = reply->msg,
        };

        stats_record(call->client, call->op, reply->r < 0, reply->duration_usec);
        if (call->owner)
                DLIST_REMOVE(call->owner->head, call);
        call->cb(&r, call->userdata);
        free(call);
}

void cri_calls_cancel(struct cri_calls *calls) {
        struct cri_call *call;

        while (calls && (call = calls->head)) {
                DLIST_REMOVE(calls->head, call);
                grpc_call_cancel(call->grpc); /* its callback, on_reply, will not run */
                if (calls->drop)
                        calls->drop(call->userdata);
                free(call);
        }
}

bool cri_calls_pending(const struct cri_calls *calls) {
        return calls && calls->head;
}

int cri_client_new(struct event_base *base, const char *runtime_endpoint, const char *image_endpoint,
                   uint64_t default_timeout_usec, struct cri_client **ret) {
        struct cri_client *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(op_names) && i < ELEMENTSOF(c->ops); i++) {
                c->ops[i].method_suffix = op_names[i].method;
                c->ops[i].stats.operation = op_names[i].op;
                histogram_init_exponential(&c->ops[i].stats.duration, 0.005, 2.5, 14);
                c->n_ops++;
        }
        r = grpc_client_new(base, runtime_endpoint, default_timeout_usec, &c->runtime);
        if (r < 0) {
                cri_client_free(c);
                return r;
        }
        if (isempty(image_endpoint) || streq(image_endpoint, runtime_endpoint))
                c->image = c->runtime;
        else {
                r = grpc_client_new(base, image_endpoint, default_timeout_usec, &c->image);
                if (r < 0) {
                        cri_client_free(c);
                        return r;
                }
        }
        *ret = c;
        return 0;
}

struct cri_client *cri_client_free(struct cri_client *c) {
        if (!c)
                return NULL;
        c->freeing = true;
        if (c->image != c->runtime)
                grpc_client_free(c->image);
        grpc_client_free(c->runtime);
        free(c);
        return NULL;
}

static int find_op(const struct cri_client *c, const char *method) {
        const char *slash = strrchr(method, '/');
        for (size_t i = 0; slash && i < c->n_ops; i++)
                if (streq(slash, c->ops[i].method_suffix))
                        return (int) i;
        return -1;
}

int cri_call(struct cri_client *c, const char *method, const ProtobufCMessage *req,
             const ProtobufCMessageDescriptor *resp_desc, uint64_t timeout_usec, cri_callback_t cb, void *userdata,
             struct cri_calls *owner) {
        struct grpc_client *conn;
        struct cri_call *call;
        int r;

        if (!c || c->freeing)
                return -ESHUTDOWN;
        if (!method || !req || !resp_desc || !cb)
                return -EINVAL;
        conn = startswith(method, "/runtime.v1.ImageService/") ? c->image : c->runtime;
        call = malloc(sizeof(*call));
        if (!call)
                return -ENOMEM;
        *call = (struct cri_call) { .client = c, .op = find_op(c, method), .cb = cb, .userdata = userdata };
        r = grpc_call(conn, method, req, resp_desc, timeout_usec, on_reply, call, &call->grpc);
        if (r < 0) {
                free(call);
                return r;
        }
        if (owner) {
                call->owner = owner;
                DLIST_PREPEND(owner->head, call);
        }
        return 0;
}

void cri_client_foreach_stats(struct cri_client *c, void (*fn)(const struct cri_op_stats *s, void *ud), void *ud) {
        for (size_t i = 0; c && i < c->n_ops; i++)
                if (c->ops[i].stats.count > 0)
                        fn(&c->ops[i].stats, ud);
}

/* ---------------------------------------------------------------- typed wrappers */

CRI_METHODS(CRI_DEFINE)

/* ---- GetContainerEvents ---- */

struct cri_stream {
        struct grpc_call *call;
        cri_event_cb on_event;
        cri_callback_t on_end;
        void *userdata;
};

static void on_stream_message(const ProtobufCMessage *msg, void *userdata) {
        struct cri_stream *s = userdata;
        s->on_event((const Runtime__V1__ContainerEventResponse *) msg, s->userdata);
}

static void on_stream_end(const struct grpc_reply *reply, void *userdata) {
        struct cri_stream *s = userdata;
        const struct cri_reply r = {
                .r = reply->r,
                .grpc_status = reply->grpc_status,
                .message = reply->message,
        };
        cri_callback_t cb = s->on_end;
        void *ud = s->userdata;

        free(s); /* the call is gone after this callback */
        cb(&r, ud);
}

int cri_get_container_events(struct cri_client *c, cri_event_cb on_event, cri_callback_t on_end, void *userdata,
                             struct cri_stream **ret) {
        Runtime__V1__GetEventsRequest req = RUNTIME__V1__GET_EVENTS_REQUEST__INIT;
        struct cri_stream *s;
        int r;

        if (!c || c->freeing)
                return -ESHUTDOWN;
        assert(on_event && on_end && ret);
        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (struct cri_stream) { .on_event = on_event, .on_end = on_end, .userdata = userdata };
        r = grpc_call_stream(c->runtime, "/runtime.v1.RuntimeService/GetContainerEvents", &req.base,
                             &runtime__v1__container_event_response__descriptor, on_stream_message, on_stream_end, s,
                             &s->call);
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

void cri_stream_cancel(struct cri_stream *s) {
        if (!s)
                return;
        grpc_call_cancel(s->call);
        free(s);
}
