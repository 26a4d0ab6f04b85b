/* SPDX-License-Identifier: Apache-2.0 */
/* The fake runtime itself (tests/unit/fake/fake_runtime.h), as the kubelet's tests rely on it: replies on the
 * loop and never inside the call, the request copied at the call, containerd's rules, the list filters, the
 * injected faults and the record of calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "basic/timer.h"
#include "cri/cri.h"
#include "fake/fake_runtime.h"
#include "fake/vloop.h"

struct ctx {
        struct event_base *base;
        struct fake_runtime *rt;
        struct cri_client *cri;
};

struct got {
        bool done;
        int status;
        char *message;
        ProtobufCMessage *msg; /* a copy */
};

static int setup(void **state) {
        struct ctx *c = calloc(1, sizeof(*c));

        assert_non_null(c);
        c->base = event_base_new();
        assert_non_null(c->base);
        vloop_enable(c->base);
        assert_int_equal(fake_runtime_new(c->base, &c->rt), 0);
        assert_int_equal(fake_runtime_add_image(c->rt, "busybox:1.36", 0, NULL), 0);
        assert_int_equal(cri_client_new(c->base, fake_runtime_endpoint(c->rt), NULL, 10 * USEC_PER_SEC, &c->cri), 0);
        *state = c;
        return 0;
}

static int teardown(void **state) {
        struct ctx *c = *state;

        cri_client_free(c->cri);
        fake_runtime_free(c->rt);
        event_base_free(c->base);
        vloop_disable();
        free(c);
        return 0;
}

static void got_done(struct got *g) {
        free(g->message);
        if (g->msg)
                protobuf_c_message_free_unpacked(g->msg, NULL);
        *g = (struct got) {};
}

static void on_reply(const struct cri_reply *r, void *userdata) {
        struct got *g = userdata;

        assert_false(g->done);
        g->done = true;
        g->status = r->grpc_status;
        g->message = strdup(r->message);
        assert_int_equal(r->r, r->grpc_status == GRPC_OK ? 0 : r->r);
        if (r->msg) {
                size_t len = protobuf_c_message_get_packed_size(r->msg);
                uint8_t *buf = malloc(len + 1);
                assert_non_null(buf);
                protobuf_c_message_pack(r->msg, buf);
                g->msg = protobuf_c_message_unpack(r->msg->descriptor, NULL, len, buf);
                free(buf);
        }
}

static bool is_done(void *userdata) {
        return ((struct got *) userdata)->done;
}

static void wait_reply(struct ctx *c, struct got *g) {
        assert_true(vloop_run_until(c->base, is_done, g, 10 * 60 * USEC_PER_SEC));
}

static char *run_sandbox(struct ctx *c, const char *uid, uint32_t attempt, int expect) {
        Runtime__V1__RunPodSandboxRequest req = RUNTIME__V1__RUN_POD_SANDBOX_REQUEST__INIT;
        Runtime__V1__PodSandboxConfig cfg = RUNTIME__V1__POD_SANDBOX_CONFIG__INIT;
        Runtime__V1__PodSandboxMetadata md = RUNTIME__V1__POD_SANDBOX_METADATA__INIT;
        Runtime__V1__PodSandboxConfig__LabelsEntry l = RUNTIME__V1__POD_SANDBOX_CONFIG__LABELS_ENTRY__INIT, *lp = &l;
        struct got g = {};
        char *id = NULL;

        md.name = (char *) "web";
        md.namespace_ = (char *) "default";
        md.uid = (char *) uid;
        md.attempt = attempt;
        l.key = (char *) "io.kubernetes.pod.uid";
        l.value = (char *) uid;
        cfg.metadata = &md;
        cfg.n_labels = 1;
        cfg.labels = &lp;
        req.config = &cfg;
        assert_int_equal(cri_run_pod_sandbox(c->cri, &req, 0, on_reply, &g, NULL), 0);
        wait_reply(c, &g);
        assert_int_equal(g.status, expect);
        if (g.status == GRPC_OK)
                id = strdup(((Runtime__V1__RunPodSandboxResponse *) (void *) g.msg)->pod_sandbox_id);
        got_done(&g);
        return id;
}

static char *create(struct ctx *c, const char *sandbox, const char *name, uint32_t attempt, const char *image,
                    int expect, char **ret_message) {
        Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
        Runtime__V1__ContainerConfig cfg = RUNTIME__V1__CONTAINER_CONFIG__INIT;
        Runtime__V1__ContainerMetadata md = RUNTIME__V1__CONTAINER_METADATA__INIT;
        Runtime__V1__ImageSpec im = RUNTIME__V1__IMAGE_SPEC__INIT;
        Runtime__V1__ContainerConfig__LabelsEntry l = RUNTIME__V1__CONTAINER_CONFIG__LABELS_ENTRY__INIT, *lp = &l;
        struct got g = {};
        char *id = NULL;

        md.name = (char *) name;
        md.attempt = attempt;
        im.image = (char *) image;
        l.key = (char *) "tier";
        l.value = (char *) name;
        cfg.metadata = &md;
        cfg.image = &im;
        cfg.n_labels = 1;
        cfg.labels = &lp;
        req.pod_sandbox_id = (char *) sandbox;
        req.config = &cfg;
        assert_int_equal(cri_create_container(c->cri, &req, 0, on_reply, &g, NULL), 0);
        wait_reply(c, &g);
        assert_int_equal(g.status, expect);
        if (g.status == GRPC_OK)
                id = strdup(((Runtime__V1__CreateContainerResponse *) (void *) g.msg)->container_id);
        if (ret_message)
                *ret_message = strdup(g.message);
        got_done(&g);
        return id;
}

static int simple(struct ctx *c, const char *what, const char *id) {
        struct got g = {};
        int r;

        if (streq(what, "start")) {
                Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
                req.container_id = (char *) id;
                r = cri_start_container(c->cri, &req, 0, on_reply, &g, NULL);
        } else if (streq(what, "stop")) {
                Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
                req.container_id = (char *) id;
                r = cri_stop_container(c->cri, &req, 0, on_reply, &g, NULL);
        } else if (streq(what, "remove")) {
                Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
                req.container_id = (char *) id;
                r = cri_remove_container(c->cri, &req, 0, on_reply, &g, NULL);
        } else if (streq(what, "status")) {
                Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
                req.container_id = (char *) id;
                r = cri_container_status(c->cri, &req, 0, on_reply, &g, NULL);
        } else {
                Runtime__V1__StopPodSandboxRequest req = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
                req.pod_sandbox_id = (char *) id;
                r = cri_stop_pod_sandbox(c->cri, &req, 0, on_reply, &g, NULL);
        }
        assert_int_equal(r, 0);
        wait_reply(c, &g);
        r = g.status;
        got_done(&g);
        return r;
}

static void test_async_and_copied(void **state) {
        struct ctx *c = *state;
        Runtime__V1__VersionRequest req = RUNTIME__V1__VERSION_REQUEST__INIT;
        Runtime__V1__ImageStatusRequest ireq = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
        Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
        char image[] = "busybox:1.36";
        struct got g = {}, h = {};

        req.version = (char *) "v1";
        assert_int_equal(cri_version(c->cri, &req, 0, on_reply, &g, NULL), 0);
        assert_false(g.done); /* never from inside the call */
        spec.image = image;
        ireq.image = &spec;
        assert_int_equal(cri_image_status(c->cri, &ireq, 0, on_reply, &h, NULL), 0);
        image[0] = 'X'; /* the request was copied at the call */
        vloop_settle(c->base);
        assert_true(g.done);
        assert_int_equal(g.status, GRPC_OK);
        assert_string_equal(((Runtime__V1__VersionResponse *) (void *) g.msg)->runtime_name, "fakeRuntime");
        assert_true(h.done);
        assert_non_null(((Runtime__V1__ImageStatusResponse *) (void *) h.msg)->image);
        assert_string_equal(((Runtime__V1__ImageStatusResponse *) (void *) h.msg)->image->repo_tags[0],
                            "docker.io/library/busybox:1.36");
        assert_int_equal(((Runtime__V1__ImageStatusResponse *) (void *) h.msg)->image->uid->value, 0);
        got_done(&g);
        got_done(&h);
        /* the record */
        assert_int_equal(fake_runtime_count(c->rt, NULL), 2);
        assert_string_equal(fake_runtime_call(c->rt, 1)->method, "ImageStatus");
        assert_string_equal(fake_runtime_call(c->rt, 1)->subject, "busybox:1.36");
        assert_int_equal(fake_runtime_call(c->rt, 1)->status, GRPC_OK);
}

static void test_containerd_rules(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *sb = NULL, *a = NULL, *b = NULL, *msg = NULL;
        const struct fake_container *fa;

        sb = run_sandbox(c, "u1", 0, GRPC_OK);
        assert_null(run_sandbox(c, "u1", 0, GRPC_UNKNOWN)); /* the name is taken */
        a = create(c, sb, "a", 0, "busybox:1.36", GRPC_OK, NULL);
        assert_null(create(c, sb, "a", 0, "busybox:1.36", GRPC_UNKNOWN, &msg)); /* the name is taken */
        assert_non_null(strstr(msg, "failed to reserve container name"));
        assert_null(create(c, sb, "b", 0, "nginx:1", GRPC_NOT_FOUND, NULL)); /* no such image */
        assert_null(create(c, "nope", "b", 0, "busybox:1.36", GRPC_NOT_FOUND, NULL));
        b = create(c, sb, "b", 0, "docker.io/library/busybox:1.36", GRPC_OK, NULL);

        fa = fake_runtime_container(c->rt, a);
        assert_int_equal(fa->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED);
        assert_int_equal(simple(c, "start", a), GRPC_OK);
        assert_int_equal(fa->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING);
        assert_true(fa->started_at > fa->created_at);
        assert_int_equal(simple(c, "start", a), GRPC_UNKNOWN); /* only from CREATED */
        assert_int_equal(simple(c, "status", "nope"), GRPC_NOT_FOUND);
        assert_int_equal(simple(c, "remove", "nope"), GRPC_OK);

        /* a stopped sandbox: its running containers are killed, nothing is created in it */
        assert_int_equal(simple(c, "sandbox", sb), GRPC_OK);
        assert_int_equal(fa->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED);
        assert_int_equal(fa->exit_code, 137);
        assert_string_equal(fa->reason, "Error");
        assert_int_equal(fake_runtime_container(c->rt, b)->state, RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED);
        assert_null(create(c, sb, "c", 0, "busybox:1.36", GRPC_UNKNOWN, NULL));
        /* a new attempt is another name */
        free(run_sandbox(c, "u1", 1, GRPC_OK));
        assert_int_equal(fake_runtime_n_sandboxes(c->rt), 2);
}

static void test_list_filters(void **state) {
        struct ctx *c = *state;
        _cleanup_free_ char *s1 = NULL, *s2 = NULL, *a = NULL, *b = NULL, *d = NULL;
        Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
        Runtime__V1__ContainerFilter f = RUNTIME__V1__CONTAINER_FILTER__INIT;
        Runtime__V1__ContainerStateValue sv = RUNTIME__V1__CONTAINER_STATE_VALUE__INIT;
        Runtime__V1__ContainerFilter__LabelSelectorEntry l = RUNTIME__V1__CONTAINER_FILTER__LABEL_SELECTOR_ENTRY__INIT;
        Runtime__V1__ContainerFilter__LabelSelectorEntry *lp = &l;
        Runtime__V1__ListContainersResponse *resp;
        struct got g = {};

        s1 = run_sandbox(c, "u1", 0, GRPC_OK);
        s2 = run_sandbox(c, "u2", 0, GRPC_OK);
        a = create(c, s1, "a", 0, "busybox:1.36", GRPC_OK, NULL);
        b = create(c, s1, "b", 0, "busybox:1.36", GRPC_OK, NULL);
        d = create(c, s2, "a", 0, "busybox:1.36", GRPC_OK, NULL);
        assert_int_equal(simple(c, "start", b), GRPC_OK);

        /* by label, by sandbox, by state; together */
        l.key = (char *) "tier";
        l.value = (char *) "a";
        f.n_label_selector = 1;
        f.label_selector = &lp;
        req.filter = &f;
        assert_int_equal(cri_list_containers(c->cri, &req, 0, on_reply, &g, NULL), 0);
        wait_reply(c, &g);
        resp = (void *) g.msg;
        assert_int_equal(resp->n_containers, 2);
        got_done(&g);
        f.pod_sandbox_id = s2;
        assert_int_equal(cri_list_containers(c->cri, &req, 0, on_reply, &g, NULL), 0);
        wait_reply(c, &g);
        resp = (void *) g.msg;
        assert_int_equal(resp->n_containers, 1);
        assert_string_equal(resp->containers[0]->id, d);
        got_done(&g);
        f.n_label_selector = 0;
        f.pod_sandbox_id = (char *) "";
        sv.state = RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        f.state = &sv;
        assert_int_equal(cri_list_containers(c->cri, &req, 0, on_reply, &g, NULL), 0);
        wait_reply(c, &g);
        resp = (void *) g.msg;
        assert_int_equal(resp->n_containers, 1);
        assert_string_equal(resp->containers[0]->id, b);
        assert_string_equal(resp->containers[0]->labels[0]->key, "tier");
        got_done(&g);
        (void) a;
}

static void test_faults(void **state) {
        struct ctx *c = *state;
        Runtime__V1__StatusRequest req = RUNTIME__V1__STATUS_REQUEST__INIT;
        struct got g[4] = {};
        uint64_t t0;

        /* the second call from now, then every call until cleared */
        assert_int_equal(fake_runtime_fail(c->rt, "Status", 2, GRPC_INTERNAL, "boom"), 0);
        for (int i = 0; i < 3; i++)
                assert_int_equal(cri_status(c->cri, &req, 0, on_reply, &g[i], NULL), 0);
        vloop_settle(c->base);
        assert_int_equal(g[0].status, GRPC_OK);
        assert_int_equal(g[1].status, GRPC_INTERNAL);
        assert_string_equal(g[1].message, "boom");
        assert_int_equal(g[2].status, GRPC_OK);
        for (int i = 0; i < 3; i++)
                got_done(&g[i]);
        assert_int_equal(fake_runtime_fail(c->rt, "Status", FAKE_EVERY_CALL, GRPC_UNKNOWN, "always"), 0);
        for (int i = 0; i < 2; i++)
                assert_int_equal(cri_status(c->cri, &req, 0, on_reply, &g[i], NULL), 0);
        vloop_settle(c->base);
        assert_int_equal(g[0].status, GRPC_UNKNOWN);
        assert_int_equal(g[1].status, GRPC_UNKNOWN);
        got_done(&g[0]);
        got_done(&g[1]);
        fake_runtime_clear_failures(c->rt, "Status");

        /* a delay, on the virtual clock; one longer than the deadline: DeadlineExceeded */
        assert_int_equal(fake_runtime_set_delay(c->rt, "Status", 5 * USEC_PER_SEC), 0);
        t0 = now_usec();
        assert_int_equal(cri_status(c->cri, &req, 0, on_reply, &g[0], NULL), 0);
        assert_int_equal(cri_status(c->cri, &req, 2 * USEC_PER_SEC, on_reply, &g[1], NULL), 0);
        wait_reply(c, &g[1]);
        assert_int_equal(g[1].status, GRPC_DEADLINE_EXCEEDED);
        assert_int_equal(now_usec() - t0, 2 * USEC_PER_SEC);
        assert_false(g[0].done);
        wait_reply(c, &g[0]);
        assert_int_equal(g[0].status, GRPC_OK);
        assert_int_equal(now_usec() - t0, 5 * USEC_PER_SEC);
        got_done(&g[0]);
        got_done(&g[1]);

        /* down: Unavailable, also for a call in flight */
        assert_int_equal(cri_status(c->cri, &req, 0, on_reply, &g[0], NULL), 0);
        fake_runtime_set_down(c->rt, true);
        wait_reply(c, &g[0]);
        assert_int_equal(g[0].status, GRPC_UNAVAILABLE);
        got_done(&g[0]);
        fake_runtime_set_down(c->rt, false);

        /* a client freed with a call in flight: cancelled, and the runtime never handles it */
        {
                _cleanup_free_ char *sb = run_sandbox(c, "u1", 0, GRPC_OK);
                Runtime__V1__StopPodSandboxRequest sreq = RUNTIME__V1__STOP_POD_SANDBOX_REQUEST__INIT;
                sreq.pod_sandbox_id = sb;
                assert_int_equal(cri_stop_pod_sandbox(c->cri, &sreq, 0, on_reply, &g[0], NULL), 0);
                c->cri = cri_client_free(c->cri);
                assert_true(g[0].done);
                assert_int_equal(g[0].status, GRPC_CANCELLED);
                assert_int_equal(fake_runtime_sandbox(c->rt, sb)->state, RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY);
                got_done(&g[0]);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_async_and_copied, setup, teardown),
                cmocka_unit_test_setup_teardown(test_containerd_rules, setup, teardown),
                cmocka_unit_test_setup_teardown(test_list_filters, setup, teardown),
                cmocka_unit_test_setup_teardown(test_faults, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
