/* SPDX-License-Identifier: Apache-2.0 */
/* grpc probe (pkg/probe/grpc): grpc.health.v1.Health/Check on host:port, without TLS, over our gRPC client
 * (grpc/client.c), one connection per probe as upstream. SERVING is
 * success; any other status, an error or the timeout is a failure with upstream's wording. */
#include <string.h>

#include "basic/macro.h"
#include "grpc/client.h"
#include "health.pb-c.h"
#include "prober/handlers.h"

struct grpc_probe {
        struct probe_op op;
        struct probe_env *env;
        bool cancelled;
        struct grpc_client *client;
        char *target;
        char *service;
        uint64_t timeout_usec;
};

static void grpc_probe_free(struct grpc_probe *g) {
        grpc_client_free(g->client);
        free(g->target);
        free(g->service);
        free(g);
}

static void grpc_probe_op_free(struct probe_op *op) {
        grpc_probe_free((struct grpc_probe *) op);
}

static void grpc_probe_cancel(struct probe_op *op) {
        struct grpc_probe *g = (struct grpc_probe *) op;
        g->cancelled = true;
        op->done = NULL;
        grpc_probe_free(g); /* the client fails the call: on_reply sees cancelled */
}

static void on_reply(const struct grpc_reply *reply, void *userdata) {
        struct grpc_probe *g = userdata;
        _cleanup_free_ char *msg = NULL;
        double secs = (double) g->timeout_usec / 1e6;
        int r = 0;

        if (g->cancelled)
                return;
        if (reply->r >= 0) {
                const Grpc__Health__V1__HealthCheckResponse *resp = (const void *) reply->msg;
                if (resp->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING)
                        probe_op_report(&g->op, PROBE_RESULT_SUCCESS, false, "", 0);
                else {
                        const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
                                &grpc__health__v1__health_check_response__serving_status__descriptor,
                                (int) resp->status);
                        r = asprintf(&msg, "service unhealthy (responded with \"%s\")", v ? v->name : "UNKNOWN");
                        probe_op_report(&g->op, PROBE_RESULT_FAILURE, false, r >= 0 ? msg : "service unhealthy", 0);
                }
        } else {
                if (reply->grpc_status == GRPC_UNIMPLEMENTED)
                        r = asprintf(&msg,
                                     "this server does not implement the grpc health protocol "
                                     "(grpc.health.v1.Health): %s",
                                     reply->message);
                else if (reply->grpc_status == GRPC_DEADLINE_EXCEEDED)
                        r = asprintf(&msg, "timeout: health rpc did not complete within %gs", secs);
                else if (reply->grpc_status == GRPC_UNAVAILABLE && strstr(reply->message, "Error while dialing"))
                        r = asprintf(&msg, "timeout: failed to connect service \"%s\" within %gs: %s", g->target, secs,
                                     reply->message);
                else
                        r = asprintf(&msg, "error: health rpc probe failed: rpc error: code = %d desc = %s",
                                     reply->grpc_status, reply->message);
                probe_op_report(&g->op, PROBE_RESULT_FAILURE, false, r >= 0 ? msg : reply->message, 0);
        }
        probe_env_bury(g->env, &g->op); /* not from inside the client's own callback */
}

int probe_grpc_start(struct probe_env *env, const struct probe_request *req, probe_done_t done, void *userdata,
                     struct probe_op **ret) {
        Grpc__Health__V1__HealthCheckRequest hc = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
        _cleanup_free_ char *endpoint = NULL;
        struct grpc_probe *g;
        int r;

        if (isempty(req->host) || req->port < 1 || req->port > 65535)
                return -EINVAL;
        g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->op = (struct probe_op) {
                .cancel = grpc_probe_cancel, .free = grpc_probe_op_free, .done = done, .userdata = userdata
        };
        g->env = env;
        g->timeout_usec = req->timeout_usec;
        g->target = probe_join_host_port(req->host, req->port);
        g->service = strdup(strempty(req->spec->grpc_service));
        if (!g->target || !g->service || asprintf(&endpoint, "tcp://%s", g->target) < 0) {
                endpoint = NULL;
                grpc_probe_free(g);
                return -ENOMEM;
        }
        r = grpc_client_new(env->base, endpoint, req->timeout_usec, &g->client);
        if (r >= 0)
                r = grpc_client_set_user_agent(g->client, "kube-probe/" KUBE_VERSION_MAJOR_MINOR " grpc-c");
        if (r < 0) {
                grpc_probe_free(g);
                return r; /* e.g. a host name: the pod IP is an address */
        }
        hc.service = g->service;
        r = grpc_call(g->client, "/grpc.health.v1.Health/Check", &hc.base,
                      &grpc__health__v1__health_check_response__descriptor, req->timeout_usec, on_reply, g, NULL);
        if (r < 0) {
                grpc_probe_free(g);
                return r;
        }
        *ret = &g->op;
        return 0;
}
