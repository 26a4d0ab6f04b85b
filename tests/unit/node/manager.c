/* SPDX-License-Identifier: Apache-2.0 */
/* The node manager against the fake runtime (Version, Status, ListImages) and a scripted API server on
 * loopback (the real API client; tests/unit/client/loopback.h), on the virtual clock: registration, the node
 * status built from the runtime (Ready, NotReady with upstream's messages when the runtime is down or not
 * ready), when it is sent, and the lease. */
#include "client/loopback.h"

#include "basic/error.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "client/client.h"
#include "fake/fake_runtime.h"
#include "fake/vloop.h"
#include "node/manager.h"
#include "options/options.h"
#include "stats/machine.h"

#define QUIET_USEC (20 * USEC_PER_MSEC)
#define STATUS_PATH "/api/v1/nodes/testnode/status"
#define LEASES "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"

struct ctx {
        struct event_base *base;
        struct srv srv;
        struct fake_runtime *rt;
        struct cri_client *cri;
        struct kube_client *client;
        struct kubelet_options opts;
        struct node_manager *m;
        struct machine_info machine;
        json_t *node;   /* the Node POSTed */
        json_t *status; /* the last status PATCHed */
        unsigned n_status, n_lease;
        uint64_t status_at[64]; /* virtual monotonic usec of each status PATCH */
        json_t *lease;          /* the last lease written */
};

static json_t *body(struct srv *s) {
        json_error_t e;
        json_t *j = json_loads(s->body, 0, &e);
        if (!j)
                fail_msg("invalid JSON from the client: %s", e.text);
        return j;
}

static void handler(struct srv *s, struct evhttp_request *req) {
        struct ctx *c = s->userdata;

        if (streq(s->method, "POST") && streq(s->uri, "/api/v1/nodes")) {
                json_decref(c->node);
                c->node = body(s);
                srv_reply_json(req, 201,
                               "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"testnode\","
                               "\"uid\":\"node-uid-1\"}}");
        } else if (streq(s->method, "PATCH") && streq(s->uri, STATUS_PATH)) {
                json_t *b = body(s);
                json_decref(c->status);
                c->status = json_incref(json_object_get(b, "status"));
                json_decref(b);
                if (c->n_status < ELEMENTSOF(c->status_at))
                        c->status_at[c->n_status] = now_usec();
                c->n_status++;
                srv_reply_json(req, 200, "{\"kind\":\"Node\",\"apiVersion\":\"v1\"}");
        } else if ((streq(s->method, "POST") && streq(s->uri, LEASES)) ||
                   (streq(s->method, "PUT") && streq(s->uri, LEASES "/testnode"))) {
                _cleanup_free_ char *out = NULL;
                json_decref(c->lease);
                c->lease = body(s);
                c->n_lease++;
                json_object_set_new(json_object_get(c->lease, "metadata"), "resourceVersion", json_string("1"));
                out = json_dumps(c->lease, JSON_COMPACT);
                srv_reply_json(req, streq(s->method, "POST") ? 201 : 200, out);
        } else
                srv_reply_json(req, 404,
                               "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"code\":404,"
                               "\"reason\":\"NotFound\"}");
}

static int setup(void **state) {
        struct ctx *c = calloc(1, sizeof(*c));
        struct kube_config cfg = {};
        _cleanup_ck_error_ struct ck_error *err = NULL;
        char *argv[] = {
                (char *) "ckubelet",        (char *) "--hostname-override=testnode", (char *) "--node-ip=10.0.0.1",
                (char *) "--root-dir=/tmp", (char *) "--node-labels=tier=test",      NULL
        };

        assert_non_null(c);
        c->base = event_base_new();
        assert_non_null(c->base);
        vloop_enable(c->base);
        assert_int_equal(srv_start(&c->srv, c->base), 0);
        c->srv.handler = handler;
        c->srv.userdata = c;
        cfg.server = c->srv.url;
        assert_int_equal(kube_client_new(c->base, &cfg, NULL, &c->client), 0);
        assert_int_equal(fake_runtime_new(c->base, &c->rt), 0);
        assert_int_equal(fake_runtime_add_image(c->rt, "busybox:1.36", -1, NULL), 0);
        assert_int_equal(cri_client_new(c->base, fake_runtime_endpoint(c->rt), NULL, 10 * USEC_PER_SEC, &c->cri), 0);
        assert_int_equal(kubelet_options_init(&c->opts), 0);
        if (kubelet_options_parse(&c->opts, (int) ELEMENTSOF(argv) - 1, argv, &err) < 0)
                fail_msg("options: %s", ck_error_message(err));
        assert_int_equal(stats_machine_info_read(NULL, &c->machine), 0);
        assert_int_equal(node_manager_new(c->base, &c->opts, "10.0.0.1", &c->machine, c->client, c->cri, &c->m, NULL),
                         0);
        *state = c;
        return 0;
}

static int teardown(void **state) {
        struct ctx *c = *state;

        node_manager_free(c->m);
        cri_client_free(c->cri);
        kube_client_free(c->client);
        fake_runtime_free(c->rt);
        srv_stop(&c->srv);
        event_base_free(c->base);
        vloop_disable();
        kubelet_options_done(&c->opts);
        stats_machine_info_done(&c->machine);
        json_decref(c->node);
        json_decref(c->status);
        json_decref(c->lease);
        free(c);
        return 0;
}

static bool reached(void *userdata) {
        return vloop_count_reached(userdata);
}

static void wait_status(struct ctx *c, unsigned n, uint64_t cap_usec) {
        struct vloop_count w = { &c->n_status, n };
        if (!vloop_run_until_io(c->base, reached, &w, cap_usec, QUIET_USEC))
                fail_msg("%u status updates, not %u", c->n_status, n);
}

static void idle_for(struct ctx *c, uint64_t usec) {
        struct vloop_count w = { &c->n_status, UINT32_MAX };
        (void) vloop_run_until_io(c->base, reached, &w, usec, QUIET_USEC);
}

static json_t *condition(json_t *status, const char *type) {
        json_t *x;
        size_t i;
        json_array_foreach(json_object_get(status, "conditions"), i, x)
                if (streq_ptr(json_string_value(json_object_get(x, "type")), type))
                        return x;
        fail_msg("no %s condition", type);
        return NULL;
}

static void assert_ready(json_t *status, const char *st, const char *reason, const char *message) {
        json_t *r = condition(status, "Ready");
        assert_string_equal(json_string_value(json_object_get(r, "status")), st);
        assert_string_equal(json_string_value(json_object_get(r, "reason")), reason);
        assert_string_equal(json_string_value(json_object_get(r, "message")), message);
}

/* Registers, then reports a Ready status built from the runtime, and keeps the lease. */
static void test_register_and_ready(void **state) {
        struct ctx *c = *state;
        json_t *images, *names;
        bool busybox = false;
        size_t i;

        assert_int_equal(node_manager_start(c->m), 0);
        wait_status(c, 1, 60 * USEC_PER_SEC);
        assert_non_null(c->node);
        assert_string_equal(json_string_value(json_object_get(json_object_get(c->node, "metadata"), "name")),
                            "testnode");
        {
                json_t *labels = json_object_get(json_object_get(c->node, "metadata"), "labels");
                assert_string_equal(json_string_value(json_object_get(labels, "kubernetes.io/hostname")), "testnode");
                assert_string_equal(json_string_value(json_object_get(labels, "tier")), "test");
        }
        assert_string_equal(node_manager_node_uid(c->m), "node-uid-1");

        assert_ready(c->status, "True", "KubeletReady", "kubelet is posting ready status");
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(c->status, "nodeInfo"), "containerRuntimeVersion")),
                            "fakeRuntime://0.1.0");
        images = json_object_get(c->status, "images");
        json_array_foreach(images, i, names)
                if (json_string_value(json_array_get(json_object_get(names, "names"), 0)) &&
                    streq(json_string_value(json_array_get(json_object_get(names, "names"), 0)),
                          "docker.io/library/busybox:1.36"))
                        busybox = true;
        assert_true(busybox);
        assert_int_equal(fake_runtime_count(c->rt, "Version"), 1);
        assert_true(fake_runtime_count(c->rt, "Status") >= 1);

        /* the lease, with the node as owner, renewed every leaseDuration/4 (10 s) */
        assert_true(c->n_lease >= 1);
        assert_string_equal(json_string_value(json_object_get(json_object_get(c->lease, "spec"), "holderIdentity")),
                            "testnode");
        assert_int_equal(json_integer_value(json_object_get(json_object_get(c->lease, "spec"), "leaseDurationSeconds")),
                         40);
        {
                unsigned before = c->n_lease;
                idle_for(c, 60 * USEC_PER_SEC);
                assert_int_equal(c->n_lease - before, 6);
        }

        /* an unchanged status goes only every nodeStatusReportFrequency (5 min), with new heartbeats */
        {
                unsigned before = c->n_status;
                idle_for(c, 3 * 60 * USEC_PER_SEC);
                assert_int_equal(c->n_status, before);
                wait_status(c, before + 1, 3 * 60 * USEC_PER_SEC);
                assert_true(c->status_at[before] - c->status_at[0] >= 5 * 60 * USEC_PER_SEC);
                assert_true(c->status_at[before] - c->status_at[0] <= 5 * 60 * USEC_PER_SEC + 10 * USEC_PER_SEC);
        }
}

static char **in_use_list(void *userdata) {
        char **l = NULL;
        (void) userdata;
        assert_int_equal(strv_extend(&l, "kubernetes.io/csi/drv^vol-1"), 0);
        return l;
}

static void in_use_reported(char *const *names, void *userdata) {
        unsigned *n = userdata;
        assert_non_null(names);
        assert_string_equal(names[0], "kubernetes.io/csi/drv^vol-1");
        assert_null(names[1]);
        (*n)++;
}

/* volumesInUse: the status carries the volume manager's list, and the volumes are marked as reported once the
 * PATCH is written; and again at every period while the list stays as sent (no PATCH then), as upstream's
 * tryUpdateNodeStatus does: a volume wanted again by a new pod after its last pod went, with the list the same
 * as the one sent, waits for this mark. */
static void test_volumes_in_use_reported(void **state) {
        struct ctx *c = *state;
        unsigned reported = 0, before;

        node_manager_set_volumes(c->m, in_use_list, in_use_reported, &reported);
        assert_int_equal(node_manager_start(c->m), 0);
        wait_status(c, 1, 60 * USEC_PER_SEC);
        assert_string_equal(json_string_value(json_array_get(json_object_get(c->status, "volumesInUse"), 0)),
                            "kubernetes.io/csi/drv^vol-1");
        assert_true(reported >= 1);
        before = c->n_status;
        reported = 0;
        idle_for(c, 25 * USEC_PER_SEC);
        assert_int_equal(c->n_status, before); /* unchanged: nothing sent */
        assert_true(reported >= 2);            /* but marked at each 10 s period */
}

/* The runtime stops answering: Ready stays while its last good check is recent, then NotReady "container
 * runtime is down" (upstream's runtimeState: 30 s); back to Ready once it answers. */
static void test_runtime_down(void **state) {
        struct ctx *c = *state;
        uint64_t last_ok;
        unsigned before;

        assert_int_equal(node_manager_start(c->m), 0);
        wait_status(c, 1, 60 * USEC_PER_SEC);
        assert_ready(c->status, "True", "KubeletReady", "kubelet is posting ready status");

        idle_for(c, 25 * USEC_PER_SEC);
        fake_runtime_set_down(c->rt, true);
        /* the last good check */
        last_ok = fake_runtime_last(c->rt, "Status", NULL)->at_usec;
        before = c->n_status;
        wait_status(c, before + 1, 2 * 60 * USEC_PER_SEC);
        assert_ready(c->status, "False", "KubeletNotReady", "container runtime is down");
        /* at the first status update 30 s after it (updates every 10 s) */
        assert_true(c->status_at[before] - last_ok >= 30 * USEC_PER_SEC);
        assert_true(c->status_at[before] - last_ok < 40 * USEC_PER_SEC);
        /* what the runtime said before is kept */
        assert_string_equal(json_string_value(
                                    json_object_get(json_object_get(c->status, "nodeInfo"), "containerRuntimeVersion")),
                            "fakeRuntime://0.1.0");
        assert_true(json_array_size(json_object_get(c->status, "images")) >= 1);

        fake_runtime_set_down(c->rt, false);
        wait_status(c, before + 2, 60 * USEC_PER_SEC);
        assert_ready(c->status, "True", "KubeletReady", "kubelet is posting ready status");
}

/* The runtime answers that it or its network is not ready: NotReady with its condition, as upstream words it. */
static void test_runtime_not_ready(void **state) {
        struct ctx *c = *state;

        assert_int_equal(fake_runtime_set_condition(c->rt, "NetworkReady", false, "NetworkPluginNotReady",
                                                    "Network plugin returns error: cni plugin not initialized"),
                         0);
        assert_int_equal(node_manager_start(c->m), 0);
        wait_status(c, 1, 60 * USEC_PER_SEC);
        assert_ready(c->status, "False", "KubeletNotReady",
                     "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                     "message:Network plugin returns error: cni plugin not initialized");

        assert_int_equal(fake_runtime_set_condition(c->rt, "RuntimeReady", false, "Broken", "it broke"), 0);
        wait_status(c, 2, 60 * USEC_PER_SEC);
        assert_ready(c->status, "False", "KubeletNotReady",
                     "[container runtime not ready: RuntimeReady=false reason:Broken message:it broke, "
                     "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                     "message:Network plugin returns error: cni plugin not initialized]");

        assert_int_equal(fake_runtime_set_condition(c->rt, "NetworkReady", true, "", ""), 0);
        assert_int_equal(fake_runtime_set_condition(c->rt, "RuntimeReady", true, "", ""), 0);
        wait_status(c, 3, 60 * USEC_PER_SEC);
        assert_ready(c->status, "True", "KubeletReady", "kubelet is posting ready status");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_register_and_ready, setup, teardown),
                cmocka_unit_test_setup_teardown(test_volumes_in_use_reported, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_down, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runtime_not_ready, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
