/* SPDX-License-Identifier: Apache-2.0 */
/* The gRPC server and client against each other on a unix socket, on one loop: replies, error statuses with
 * percent-encoded messages, unknown methods, a handler that gives no answer, many calls at once, and the pod
 * resources API (List, Get, GetAllocatableResources, the rate limit) and the pods API (List, Get, a watch as a
 * server stream, the rate limit, before the sources are ready) through fake providers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <unistd.h>

#include "apis/k8sproto.h"
#include "podresources/server.h"
#include "basic/json.h"
#include "basic/time.h"
#include "grpc/client.h"
#include "grpc/server.h"
#include "health.pb-c.h"
#include "podresources.pb-c.h"
#include "pods.pb-c.h"
#include "podsapi/server.h"

struct reply {
        int calls;
        int status;
        char message[256];
        ProtobufCMessage *msg;
};

static void on_reply(const struct grpc_reply *r, void *userdata) {
        struct reply *out = userdata;
        out->calls++;
        out->status = r->grpc_status;
        snprintf(out->message, sizeof(out->message), "%s", r->message);
        if (r->msg) {
                /* keep a copy past the callback */
                size_t len = protobuf_c_message_get_packed_size(r->msg);
                uint8_t *buf = malloc(len + 1);
                protobuf_c_message_pack(r->msg, buf);
                out->msg = protobuf_c_message_unpack(r->msg->descriptor, NULL, len, buf);
                free(buf);
        }
}

static void run_until(struct event_base *base, int *counter, int want) {
        uint64_t deadline = now_usec() + 10 * USEC_PER_SEC;
        while (*counter < want && now_usec() < deadline)
                event_base_loop(base, EVLOOP_ONCE);
        assert_true(*counter >= want);
}

/* n calls of method at once: how many the rate limiter refused (each with upstream's message) */
static int burst_limited(struct event_base *base, struct grpc_client *c, const char *method,
                         const ProtobufCMessage *req, const ProtobufCMessageDescriptor *resp_desc, size_t n) {
        struct reply burst[32] = {};
        int limited = 0;

        assert_true(n <= ELEMENTSOF(burst));
        for (size_t i = 0; i < n; i++)
                assert_int_equal(grpc_call(c, method, req, resp_desc, 0, on_reply, &burst[i], NULL), 0);
        for (size_t i = 0; i < n; i++) {
                run_until(base, &burst[i].calls, 1);
                if (burst[i].status == GRPC_RESOURCE_EXHAUSTED) {
                        assert_string_equal(burst[i].message, "rejected by rate limit");
                        limited++;
                }
                if (burst[i].msg)
                        protobuf_c_message_free_unpacked(burst[i].msg, NULL);
        }
        return limited;
}

static void h_echo(struct grpc_server_call *call, const ProtobufCMessage *msg, void *userdata) {
        const Grpc__Health__V1__HealthCheckRequest *req = (const void *) msg;
        Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;

        (*(int *) userdata)++;
        if (streq(req->service, "fail")) {
                grpc_server_reply_error(call, GRPC_NOT_FOUND, "no such thing: 100%% \xc3\xa9t\xc3\xa9\nnext line");
                return;
        }
        if (streq(req->service, "silent"))
                return; /* no answer: the server says so */
        resp.status = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
        grpc_server_reply(call, &resp.base);
}

static const struct grpc_server_method echo_methods[] = {
        { "/test.Echo/Check", &grpc__health__v1__health_check_request__descriptor, h_echo },
};

static char *socket_path(const char *name) {
        char *p;
        assert_true(asprintf(&p, "/tmp/ckubelet-grpc-test-%d-%s.sock", (int) getpid(), name) > 0);
        return p;
}

static void call_echo(struct grpc_client *c, const char *method, const char *service, struct reply *out) {
        Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
        req.service = (char *) service;
        assert_int_equal(grpc_call(c, method, &req.base, &grpc__health__v1__health_check_response__descriptor, 0,
                                   on_reply, out, NULL),
                         0);
}

static void test_unary(void **state) {
        struct event_base *base = event_base_new();
        _cleanup_free_ char *path = socket_path("echo");
        struct grpc_server *s = NULL;
        struct grpc_client *c = NULL;
        struct reply r[4] = {}, many[50] = {};
        int handled = 0, done = 0;

        assert_int_equal(grpc_server_new(base, path, echo_methods, 1, &handled, &s), 0);
        assert_int_equal(grpc_client_new(base, path, 5 * USEC_PER_SEC, &c), 0);

        call_echo(c, "/test.Echo/Check", "ok", &r[0]);
        call_echo(c, "/test.Echo/Check", "fail", &r[1]);
        call_echo(c, "/test.Echo/Nope", "ok", &r[2]);
        call_echo(c, "/test.Echo/Check", "silent", &r[3]);
        for (size_t i = 0; i < 4; i++)
                run_until(base, &r[i].calls, 1);
        assert_int_equal(r[0].status, GRPC_OK);
        assert_int_equal(((Grpc__Health__V1__HealthCheckResponse *) r[0].msg)->status,
                         GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);
        assert_int_equal(r[1].status, GRPC_NOT_FOUND);
        assert_string_equal(r[1].message, "no such thing: 100% \xc3\xa9t\xc3\xa9\nnext line");
        assert_int_equal(r[2].status, GRPC_UNIMPLEMENTED);
        assert_string_equal(r[2].message, "unknown method /test.Echo/Nope");
        assert_int_equal(r[3].status, GRPC_INTERNAL);
        assert_int_equal(handled, 3);

        /* many at once, on the one connection */
        for (size_t i = 0; i < 50; i++)
                call_echo(c, "/test.Echo/Check", "ok", &many[i]);
        for (size_t i = 0; i < 50; i++) {
                run_until(base, &many[i].calls, 1);
                done += many[i].status == GRPC_OK;
                if (many[i].msg)
                        protobuf_c_message_free_unpacked(many[i].msg, NULL);
        }
        assert_int_equal(done, 50);

        for (size_t i = 0; i < 4; i++)
                if (r[i].msg)
                        protobuf_c_message_free_unpacked(r[i].msg, NULL);
        grpc_client_free(c);
        grpc_server_free(s);
        assert_int_equal(access(path, F_OK), -1); /* the socket is removed */
        event_base_free(base);
}

/* ---------------------------------------------------------------- answers given later */

struct later {
        int handled, closed;
        struct grpc_server_call *call;
};

static void later_closed(struct grpc_server_call *call, void *userdata) {
        struct later *l = userdata;
        assert_ptr_equal(call, l->call);
        l->call = NULL;
        l->closed++;
}

static void h_later(struct grpc_server_call *call, const ProtobufCMessage *msg, void *userdata) {
        struct later *l = userdata;
        Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;

        l->handled++;
        assert_null(l->call);
        grpc_server_reply_later(call, later_closed, l);
        if (streq(((const Grpc__Health__V1__HealthCheckRequest *) msg)->service, "now")) {
                /* answered from the handler all the same */
                resp.status = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
                grpc_server_reply(call, &resp.base);
                return;
        }
        l->call = call;
}

static const struct grpc_server_method later_methods[] = {
        { "/test.Later/Check", &grpc__health__v1__health_check_request__descriptor, h_later },
};

static void spin(struct event_base *base, uint64_t usec);

static void test_reply_later(void **state) {
        struct event_base *base = event_base_new();
        _cleanup_free_ char *path = socket_path("later");
        Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
        struct grpc_server *s = NULL;
        struct grpc_client *c = NULL;
        struct reply r[5] = {};
        struct later l = {};
        Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;

        assert_int_equal(grpc_server_new(base, path, later_methods, 1, &l, &s), 0);
        assert_int_equal(grpc_client_new(base, path, 5 * USEC_PER_SEC, &c), 0);

        /* a message, once the handler has returned */
        call_echo(c, "/test.Later/Check", "x", &r[0]);
        run_until(base, &l.handled, 1);
        spin(base, 50 * USEC_PER_MSEC);
        assert_int_equal(r[0].calls, 0);
        assert_non_null(l.call);
        resp.status = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
        grpc_server_reply(l.call, &resp.base);
        l.call = NULL;
        run_until(base, &r[0].calls, 1);
        assert_int_equal(r[0].status, GRPC_OK);
        assert_non_null(r[0].msg);
        assert_int_equal(((Grpc__Health__V1__HealthCheckResponse *) r[0].msg)->status,
                         GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING);

        /* an error, later */
        call_echo(c, "/test.Later/Check", "x", &r[1]);
        run_until(base, &l.handled, 2);
        assert_non_null(l.call);
        grpc_server_reply_error(l.call, GRPC_UNKNOWN, "failed: %s", "later");
        l.call = NULL;
        run_until(base, &r[1].calls, 1);
        assert_int_equal(r[1].status, GRPC_UNKNOWN);
        assert_string_equal(r[1].message, "failed: later");
        assert_null(r[1].msg);

        /* answered from the handler after all */
        call_echo(c, "/test.Later/Check", "now", &r[2]);
        run_until(base, &r[2].calls, 1);
        assert_int_equal(r[2].status, GRPC_OK);
        assert_int_equal(((Grpc__Health__V1__HealthCheckResponse *) r[2].msg)->status,
                         GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING);
        assert_null(l.call);
        assert_int_equal(l.closed, 0);

        /* the client gives up first (its deadline): the owner is told, and answers nothing */
        req.service = (char *) "x";
        assert_int_equal(grpc_call(c, "/test.Later/Check", &req.base,
                                   &grpc__health__v1__health_check_response__descriptor, 100 * USEC_PER_MSEC, on_reply,
                                   &r[3], NULL),
                         0);
        run_until(base, &r[3].calls, 1);
        assert_int_equal(r[3].status, GRPC_DEADLINE_EXCEEDED);
        run_until(base, &l.closed, 1);
        assert_null(l.call);

        /* the server freed with a call waiting */
        call_echo(c, "/test.Later/Check", "x", &r[4]);
        run_until(base, &l.handled, 5);
        assert_non_null(l.call);
        grpc_server_free(s);
        assert_int_equal(l.closed, 2);
        assert_null(l.call);
        run_until(base, &r[4].calls, 1);
        assert_int_not_equal(r[4].status, GRPC_OK);

        for (size_t i = 0; i < ELEMENTSOF(r); i++)
                if (r[i].msg)
                        protobuf_c_message_free_unpacked(r[i].msg, NULL);
        grpc_client_free(c);
        event_base_free(base);
}

/* ---------------------------------------------------------------- pod resources */

static void fake_pods(void *userdata, podresources_pod_cb cb, void *cb_userdata) {
        static const char *const c1[] = { "app", "sidecar" };
        static const char *const c2[] = { "main" };
        const struct podresources_pod pods[] = {
                { .name = "gpu-pod", .namespace_ = "default", .uid = "u1", .containers = c1, .n_containers = 2 },
                { .name = "plain", .namespace_ = "kube-system", .uid = "u2", .containers = c2, .n_containers = 1 },
        };
        for (size_t i = 0; i < 2; i++)
                cb(&pods[i], cb_userdata);
}

static void fake_container_devices(void *userdata, const char *uid, const char *container, podresources_device_cb cb,
                                   void *cb_userdata) {
        if (streq(uid, "u1") && streq(container, "app")) {
                cb("example.com/dev", "d1", 0, false, cb_userdata);
                cb("example.com/dev", "d2", 0, false, cb_userdata);
                cb("example.com/dev", "d3", 1, true, cb_userdata);
        }
}

static void fake_allocatable(void *userdata, podresources_device_cb cb, void *cb_userdata) {
        cb("example.com/dev", "d4", 0, false, cb_userdata);
        cb("example.com/dev", "d5", 1, true, cb_userdata);
}

static size_t fake_container_cpus(void *userdata, const char *uid, const char *container, int64_t *buf, size_t cap) {
        if (!streq(uid, "u1") || !streq(container, "app") || cap < 2)
                return 0;
        buf[0] = 2;
        buf[1] = 3;
        return 2;
}

static size_t fake_allocatable_cpus(void *userdata, int64_t *buf, size_t cap) {
        for (size_t i = 0; i < 7; i++)
                buf[i] = (int64_t) i + 1;
        return 7;
}

static void fake_container_memory(void *userdata, const char *uid, const char *container, podresources_memory_cb cb,
                                  void *cb_userdata) {
        if (streq(uid, "u1") && streq(container, "app")) {
                cb("memory", 1 << 30, 0x3, cb_userdata);
                cb("hugepages-2Mi", 4 << 20, 0x2, cb_userdata);
        }
}

static void fake_allocatable_memory(void *userdata, podresources_memory_cb cb, void *cb_userdata) {
        cb("memory", 15ull << 30, 0x1, cb_userdata);
        cb("memory", 16ull << 30, 0x2, cb_userdata);
}

static void fake_container_claims(void *userdata, const char *uid, const char *container, podresources_claim_cb cb,
                                  void *cb_userdata) {
        static const char *const cdi[] = { "example.com/gpu=gpu-0", "example.com/gpu=claim-x", NULL };
        const struct podresources_claim_device devs[] = {
                { .driver = "gpu.example.com", .pool = "node-a", .device = "gpu-0", .cdi_ids = cdi },
                { .driver = "gpu.example.com", .pool = "node-a", .device = "gpu-1", .share_id = "s1" },
        };
        if (streq(uid, "u1") && streq(container, "app")) {
                cb("pod-gpu-abc", "default", devs, 2, cb_userdata);
                cb("empty-claim", "default", NULL, 0, cb_userdata);
        }
}

static void test_podresources(void **state) {
        struct event_base *base = event_base_new();
        _cleanup_free_ char *path = socket_path("podres");
        struct podresources_provider prov = {
                .foreach_pod = fake_pods,
                .container_devices = fake_container_devices,
                .allocatable_devices = fake_allocatable,
                .container_cpus = fake_container_cpus,
                .allocatable_cpus = fake_allocatable_cpus,
                .container_memory = fake_container_memory,
                .allocatable_memory = fake_allocatable_memory,
                .container_claims = fake_container_claims,
        };
        struct podresources_server *s = NULL;
        struct grpc_client *c = NULL;
        V1__ListPodResourcesRequest lreq = V1__LIST_POD_RESOURCES_REQUEST__INIT;
        V1__GetPodResourcesRequest greq = V1__GET_POD_RESOURCES_REQUEST__INIT;
        V1__AllocatableResourcesRequest areq = V1__ALLOCATABLE_RESOURCES_REQUEST__INIT;
        struct reply list = {}, get = {}, missing = {}, alloc = {};
        const V1__ListPodResourcesResponse *lr;
        const V1__ContainerResources *app;

        assert_int_equal(podresources_server_new(base, path, &prov, &s, NULL), 0);
        assert_int_equal(grpc_client_new(base, path, 5 * USEC_PER_SEC, &c), 0);

        assert_int_equal(grpc_call(c, "/v1.PodResourcesLister/List", &lreq.base,
                                   &v1__list_pod_resources_response__descriptor, 0, on_reply, &list, NULL),
                         0);
        run_until(base, &list.calls, 1);
        assert_int_equal(list.status, GRPC_OK);
        lr = (const void *) list.msg;
        assert_int_equal(lr->n_pod_resources, 2);
        assert_string_equal(lr->pod_resources[0]->name, "gpu-pod");
        assert_int_equal(lr->pod_resources[0]->n_containers, 2);
        app = lr->pod_resources[0]->containers[0];
        assert_string_equal(app->name, "app");
        /* grouped by resource and NUMA node, the node always given for a container's devices */
        assert_int_equal(app->n_devices, 2);
        assert_string_equal(app->devices[0]->resource_name, "example.com/dev");
        assert_int_equal(app->devices[0]->n_device_ids, 2);
        assert_string_equal(app->devices[0]->device_ids[1], "d2");
        assert_int_equal(app->devices[0]->topology->nodes[0]->id, 0);
        assert_int_equal(app->devices[1]->topology->nodes[0]->id, 1);
        /* the CPU manager's exclusive CPUs */
        assert_int_equal(app->n_cpu_ids, 2);
        assert_int_equal(app->cpu_ids[0], 2);
        assert_int_equal(app->cpu_ids[1], 3);
        /* the memory manager's blocks, each with its NUMA nodes */
        assert_int_equal(app->n_memory, 2);
        assert_string_equal(app->memory[0]->memory_type, "memory");
        assert_int_equal(app->memory[0]->size, 1 << 30);
        assert_int_equal(app->memory[0]->topology->n_nodes, 2);
        assert_int_equal(app->memory[0]->topology->nodes[1]->id, 1);
        assert_string_equal(app->memory[1]->memory_type, "hugepages-2Mi");
        assert_int_equal(app->memory[1]->topology->nodes[0]->id, 1);
        /* the DRA claims (dynamic_resources), one per claim with its devices */
        assert_int_equal(app->n_dynamic_resources, 2);
        assert_string_equal(app->dynamic_resources[0]->claim_name, "pod-gpu-abc");
        assert_string_equal(app->dynamic_resources[0]->claim_namespace, "default");
        assert_int_equal(app->dynamic_resources[0]->n_claim_resources, 2);
        assert_string_equal(app->dynamic_resources[0]->claim_resources[0]->driver_name, "gpu.example.com");
        assert_string_equal(app->dynamic_resources[0]->claim_resources[0]->pool_name, "node-a");
        assert_string_equal(app->dynamic_resources[0]->claim_resources[0]->device_name, "gpu-0");
        assert_int_equal(app->dynamic_resources[0]->claim_resources[0]->n_cdi_devices, 2);
        assert_string_equal(app->dynamic_resources[0]->claim_resources[0]->cdi_devices[1]->name,
                            "example.com/gpu=claim-x");
        assert_string_equal(app->dynamic_resources[0]->claim_resources[1]->device_name, "gpu-1");
        assert_int_equal(app->dynamic_resources[0]->claim_resources[1]->n_cdi_devices, 0);
        assert_string_equal(app->dynamic_resources[0]->claim_resources[1]->share_id, "s1");
        assert_string_equal(app->dynamic_resources[1]->claim_name, "empty-claim");
        assert_int_equal(app->dynamic_resources[1]->n_claim_resources, 0);
        assert_int_equal(lr->pod_resources[0]->containers[1]->n_dynamic_resources, 0);
        assert_int_equal(lr->pod_resources[0]->containers[1]->n_memory, 0);
        assert_int_equal(lr->pod_resources[0]->containers[1]->n_devices, 0);
        assert_int_equal(lr->pod_resources[0]->containers[1]->n_cpu_ids, 0);
        protobuf_c_message_free_unpacked(list.msg, NULL);

        greq.pod_name = "plain";
        greq.pod_namespace = "kube-system";
        assert_int_equal(grpc_call(c, "/v1.PodResourcesLister/Get", &greq.base,
                                   &v1__get_pod_resources_response__descriptor, 0, on_reply, &get, NULL),
                         0);
        greq.pod_namespace = "default";
        assert_int_equal(grpc_call(c, "/v1.PodResourcesLister/Get", &greq.base,
                                   &v1__get_pod_resources_response__descriptor, 0, on_reply, &missing, NULL),
                         0);
        assert_int_equal(grpc_call(c, "/v1.PodResourcesLister/GetAllocatableResources", &areq.base,
                                   &v1__allocatable_resources_response__descriptor, 0, on_reply, &alloc, NULL),
                         0);
        run_until(base, &get.calls, 1);
        run_until(base, &missing.calls, 1);
        run_until(base, &alloc.calls, 1);
        assert_int_equal(get.status, GRPC_OK);
        assert_string_equal(((V1__GetPodResourcesResponse *) get.msg)->pod_resources->containers[0]->name, "main");
        protobuf_c_message_free_unpacked(get.msg, NULL);
        assert_int_equal(missing.status, GRPC_UNKNOWN);
        assert_string_equal(missing.message, "pod plain in namespace default not found");
        assert_int_equal(alloc.status, GRPC_OK);
        {
                const V1__AllocatableResourcesResponse *ar = (const void *) alloc.msg;
                /* one entry per device; a topology only where the plugin gave one */
                assert_int_equal(ar->n_devices, 2);
                assert_null(ar->devices[0]->topology);
                assert_int_equal(ar->devices[1]->topology->nodes[0]->id, 1);
                assert_int_equal(ar->n_cpu_ids, 7);
                assert_int_equal(ar->cpu_ids[6], 7);
                assert_int_equal(ar->n_memory, 2);
                assert_int_equal(ar->memory[1]->size, 16ull << 30);
                assert_int_equal(ar->memory[1]->topology->nodes[0]->id, 1);
        }
        protobuf_c_message_free_unpacked(alloc.msg, NULL);

        /* the rate limit: 4 calls so far from a bucket of 10; a burst of 12 more gets some refused */
        assert_true(burst_limited(base, c, "/v1.PodResourcesLister/List", &lreq.base,
                                  &v1__list_pod_resources_response__descriptor, 12) >= 1);

        grpc_client_free(c);
        podresources_server_free(s);
        event_base_free(base);
}

/* ---------------------------------------------------------------- pods API */

struct fake_kubelet {
        json_t *pods; /* uid → pod object */
        bool ready;
};

static int fk_pods(void *userdata, json_t **ret) {
        struct fake_kubelet *k = userdata;
        json_t *a = json_array(), *pod;
        const char *uid;
        json_object_foreach(k->pods, uid, pod)
                json_array_append(a, pod);
        *ret = a;
        return 0;
}

static int fk_pod(void *userdata, const char *uid, json_t **ret) {
        struct fake_kubelet *k = userdata;
        json_t *pod = json_object_get(k->pods, uid);
        if (!pod)
                return -ENOENT;
        *ret = json_incref(pod);
        return 0;
}

static bool fk_ready(void *userdata) {
        return ((struct fake_kubelet *) userdata)->ready;
}

static json_t *fk_pod_json(const char *uid, const char *name, const char *phase) {
        return json_pack("{s:s, s:{s:s, s:s, s:s}, s:{s:[{s:s}]}, s:{s:s}}", "kind", "Pod", "metadata", "name", name,
                         "namespace", "default", "uid", uid, "spec", "containers", "name", "c", "status", "phase",
                         phase);
}

/* the pod's encoding as the schema makes it, to compare with what the server sent */
static bool same_pod(const ProtobufCBinaryData *got, const json_t *pod) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ uint8_t *want = NULL;
        size_t len;
        assert_int_equal(k8sproto_encode(pod, k8sproto_message_find("k8s.io.api.core.v1.Pod"), &want, &len, &err), 0);
        return got->len == len && memcmp(got->data, want, len) == 0;
}

struct watch {
        int events, ended, status;
        int types[16];
        ProtobufCBinaryData data[16];
};

static void on_watch_event(const ProtobufCMessage *msg, void *userdata) {
        const V1alpha1__WatchPodsEvent *ev = (const void *) msg;
        struct watch *w = userdata;
        assert_true(w->events < 16);
        w->types[w->events] = ev->type;
        w->data[w->events].len = ev->pod.len;
        w->data[w->events].data = ev->pod.len ? malloc(ev->pod.len) : NULL;
        if (ev->pod.len)
                memcpy(w->data[w->events].data, ev->pod.data, ev->pod.len);
        w->events++;
}

static void on_watch_end(const struct grpc_reply *r, void *userdata) {
        struct watch *w = userdata;
        w->ended++;
        w->status = r->grpc_status;
}

static void spin(struct event_base *base, uint64_t usec) {
        uint64_t deadline = now_usec() + usec;
        while (now_usec() < deadline)
                event_base_loop(base, EVLOOP_NONBLOCK);
}

static void test_pods_api(void **state) {
        struct event_base *base = event_base_new();
        _cleanup_free_ char *path = socket_path("pods");
        struct fake_kubelet k = { .pods = json_object(), .ready = false };
        struct podsapi_provider prov = { .pods_json = fk_pods, .pod_json = fk_pod, .ready = fk_ready, .userdata = &k };
        struct podsapi_server *s = NULL;
        struct grpc_client *c = NULL;
        V1alpha1__ListPodsRequest lreq = V1ALPHA1__LIST_PODS_REQUEST__INIT;
        V1alpha1__GetPodRequest greq = V1ALPHA1__GET_POD_REQUEST__INIT;
        V1alpha1__WatchPodsRequest wreq = V1ALPHA1__WATCH_PODS_REQUEST__INIT;
        struct reply early = {}, list = {}, get = {}, missing = {};
        struct watch w = {}, w2 = {};
        struct grpc_call *wc = NULL, *wc2 = NULL;
        const V1alpha1__ListPodsResponse *lr;
        json_t *deleted;

        json_object_set_new(k.pods, "u2", fk_pod_json("u2", "second", "Pending"));
        json_object_set_new(k.pods, "u1", fk_pod_json("u1", "first", "Running"));
        assert_int_equal(podsapi_server_new(base, path, &prov, &s), 0);
        assert_int_equal(grpc_client_new(base, path, 5 * USEC_PER_SEC, &c), 0);

        /* before every source has delivered */
        assert_int_equal(grpc_call(c, "/v1alpha1.Pods/ListPods", &lreq.base, &v1alpha1__list_pods_response__descriptor,
                                   0, on_reply, &early, NULL),
                         0);
        run_until(base, &early.calls, 1);
        assert_int_equal(early.status, GRPC_FAILED_PRECONDITION);
        assert_string_equal(early.message, "Kubelet is initializing");
        k.ready = true;

        /* List: every pod, by UID, each the encoding of its object */
        assert_int_equal(grpc_call(c, "/v1alpha1.Pods/ListPods", &lreq.base, &v1alpha1__list_pods_response__descriptor,
                                   0, on_reply, &list, NULL),
                         0);
        greq.poduid = "u2";
        assert_int_equal(grpc_call(c, "/v1alpha1.Pods/GetPod", &greq.base, &v1alpha1__get_pod_response__descriptor, 0,
                                   on_reply, &get, NULL),
                         0);
        greq.poduid = "nope";
        assert_int_equal(grpc_call(c, "/v1alpha1.Pods/GetPod", &greq.base, &v1alpha1__get_pod_response__descriptor, 0,
                                   on_reply, &missing, NULL),
                         0);
        run_until(base, &list.calls, 1);
        run_until(base, &get.calls, 1);
        run_until(base, &missing.calls, 1);
        assert_int_equal(list.status, GRPC_OK);
        lr = (const void *) list.msg;
        assert_int_equal(lr->n_pods, 2);
        assert_true(same_pod(&lr->pods[0], json_object_get(k.pods, "u1")));
        assert_true(same_pod(&lr->pods[1], json_object_get(k.pods, "u2")));
        protobuf_c_message_free_unpacked(list.msg, NULL);
        assert_int_equal(get.status, GRPC_OK);
        assert_true(same_pod(&((V1alpha1__GetPodResponse *) get.msg)->pod, json_object_get(k.pods, "u2")));
        protobuf_c_message_free_unpacked(get.msg, NULL);
        assert_int_equal(missing.status, GRPC_NOT_FOUND);
        assert_string_equal(missing.message, "pod with UID nope not found");

        /* a watch: the pods, the marker, then what changes */
        assert_int_equal(grpc_call_stream(c, "/v1alpha1.Pods/WatchPods", &wreq.base,
                                          &v1alpha1__watch_pods_event__descriptor, on_watch_event, on_watch_end, &w,
                                          &wc),
                         0);
        run_until(base, &w.events, 3);
        assert_int_equal(w.types[0], V1ALPHA1__EVENT_TYPE__ADDED);
        assert_true(same_pod(&w.data[0], json_object_get(k.pods, "u1")));
        assert_int_equal(w.types[1], V1ALPHA1__EVENT_TYPE__ADDED);
        assert_int_equal(w.types[2], V1ALPHA1__EVENT_TYPE__INITIAL_SYNC_COMPLETE);
        assert_int_equal(w.data[2].len, 0);
        /* reported without a change: nothing; changed (twice in one turn): one MODIFIED with the newest */
        podsapi_pod_changed(s, "u1");
        json_object_set_new(k.pods, "u2", fk_pod_json("u2", "second", "Running"));
        podsapi_pod_changed(s, "u2");
        json_object_set_new(k.pods, "u2", fk_pod_json("u2", "second", "Succeeded"));
        podsapi_pod_changed(s, "u2");
        /* a new pod */
        json_object_set_new(k.pods, "u3", fk_pod_json("u3", "third", "Pending"));
        podsapi_pod_changed(s, "u3");
        run_until(base, &w.events, 5);
        spin(base, 100 * 1000);
        assert_int_equal(w.events, 5);
        for (int i = 3; i < 5; i++) {
                if (w.types[i] == V1ALPHA1__EVENT_TYPE__MODIFIED)
                        assert_true(same_pod(&w.data[i], json_object_get(k.pods, "u2")));
                else {
                        assert_int_equal(w.types[i], V1ALPHA1__EVENT_TYPE__ADDED);
                        assert_true(same_pod(&w.data[i], json_object_get(k.pods, "u3")));
                }
        }
        assert_int_not_equal(w.types[3], w.types[4]);
        /* a second watcher, then a removal: both hear it once, with the pod's name, namespace and UID only */
        assert_int_equal(grpc_call_stream(c, "/v1alpha1.Pods/WatchPods", &wreq.base,
                                          &v1alpha1__watch_pods_event__descriptor, on_watch_event, on_watch_end, &w2,
                                          &wc2),
                         0);
        run_until(base, &w2.events, 4);
        assert_int_equal(w2.types[3], V1ALPHA1__EVENT_TYPE__INITIAL_SYNC_COMPLETE);
        json_object_del(k.pods, "u1");
        podsapi_pod_removed(s, "u1", "default", "first");
        podsapi_pod_removed(s, "u1", "default", "first");
        run_until(base, &w.events, 6);
        run_until(base, &w2.events, 5);
        spin(base, 100 * 1000);
        assert_int_equal(w.events, 6);
        assert_int_equal(w2.events, 5);
        deleted = json_pack("{s:{s:s, s:s, s:s}}", "metadata", "name", "first", "namespace", "default", "uid", "u1");
        assert_int_equal(w.types[5], V1ALPHA1__EVENT_TYPE__DELETED);
        assert_true(same_pod(&w.data[5], deleted));
        assert_true(same_pod(&w2.data[4], deleted));
        json_decref(deleted);
        /* the first watcher goes; the second still hears */
        grpc_call_cancel(wc);
        spin(base, 100 * 1000);
        json_object_set_new(k.pods, "u3", fk_pod_json("u3", "third", "Running"));
        podsapi_pod_changed(s, "u3");
        run_until(base, &w2.events, 6);
        assert_int_equal(w2.types[5], V1ALPHA1__EVENT_TYPE__MODIFIED);
        assert_int_equal(w.events, 6);

        /* the rate limit of List and Get */
        assert_true(burst_limited(base, c, "/v1alpha1.Pods/ListPods", &lreq.base,
                                  &v1alpha1__list_pods_response__descriptor, 14) >= 1);

        /* the server goes with a watch open: the watch ends */
        podsapi_server_free(s);
        run_until(base, &w2.ended, 1);
        assert_int_not_equal(w2.status, GRPC_OK);
        for (int i = 0; i < w.events; i++)
                free(w.data[i].data);
        for (int i = 0; i < w2.events; i++)
                free(w2.data[i].data);
        grpc_client_free(c);
        json_decref(k.pods);
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unary),
                cmocka_unit_test(test_reply_later),
                cmocka_unit_test(test_podresources),
                cmocka_unit_test(test_pods_api),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
