/* SPDX-License-Identifier: Apache-2.0 */
/* The DRA manager (src/cm/dra/manager.c) against a DRA plugin served in process (src/grpc/server.c): a claim is
 * prepared once for two pods, survives a restart through the checkpoint without being prepared again, is
 * unprepared only when its last pod is gone, a driver's error reaches the pod with upstream's message, and an
 * unregistered driver is named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/strv.h"
#include "cm/dra/claims.h"
#include "cm/dra/manager-testing.h"
#include "cm/dra/plugins.h"
#include "dra.pb-c.h"
#include "grpc/server.h"

static int n_prepare, n_unprepare;
static char last_unprepared[64];

static void h_prepare(struct grpc_server_call *call, const ProtobufCMessage *msg, void *userdata) {
        const Dra__V1__NodePrepareResourcesRequest *req = (const void *) msg;
        Dra__V1__NodePrepareResourcesResponse resp = DRA__V1__NODE_PREPARE_RESOURCES_RESPONSE__INIT;
        Dra__V1__NodePrepareResourcesResponse__ClaimsEntry entries[8], *eptr[8];
        Dra__V1__NodePrepareResourceResponse res[8];
        Dra__V1__Device dev[8], *dptr[8];
        static char *reqs[] = { "gpu" };
        char cdi[8][64], *cdiptr[8][1];
        (void) userdata;

        n_prepare++;
        assert_true(req->n_claims <= 8);
        for (size_t i = 0; i < req->n_claims; i++) {
                dra__v1__node_prepare_resources_response__claims_entry__init(&entries[i]);
                dra__v1__node_prepare_resource_response__init(&res[i]);
                dra__v1__device__init(&dev[i]);
                entries[i].key = req->claims[i]->uid;
                entries[i].value = &res[i];
                eptr[i] = &entries[i];
                if (strcmp(req->claims[i]->name, "broken") == 0) {
                        res[i].error = "boom";
                        continue;
                }
                snprintf(cdi[i], sizeof(cdi[i]), "example.com/gpu=%s", req->claims[i]->name);
                cdiptr[i][0] = cdi[i];
                dev[i].pool_name = "node-1";
                dev[i].device_name = "gpu-0";
                dev[i].n_request_names = 1;
                dev[i].request_names = reqs;
                dev[i].n_cdi_device_ids = 1;
                dev[i].cdi_device_ids = cdiptr[i];
                dptr[i] = &dev[i];
                res[i].n_devices = 1;
                res[i].devices = &dptr[i];
        }
        resp.n_claims = req->n_claims;
        resp.claims = eptr;
        grpc_server_reply(call, &resp.base);
}

static void h_unprepare(struct grpc_server_call *call, const ProtobufCMessage *msg, void *userdata) {
        const Dra__V1__NodeUnprepareResourcesRequest *req = (const void *) msg;
        Dra__V1__NodeUnprepareResourcesResponse resp = DRA__V1__NODE_UNPREPARE_RESOURCES_RESPONSE__INIT;
        Dra__V1__NodeUnprepareResourcesResponse__ClaimsEntry entries[8], *eptr[8];
        Dra__V1__NodeUnprepareResourceResponse res[8];
        (void) userdata;

        n_unprepare++;
        for (size_t i = 0; i < req->n_claims && i < 8; i++) {
                dra__v1__node_unprepare_resources_response__claims_entry__init(&entries[i]);
                dra__v1__node_unprepare_resource_response__init(&res[i]);
                entries[i].key = req->claims[i]->uid;
                entries[i].value = &res[i];
                eptr[i] = &entries[i];
                snprintf(last_unprepared, sizeof(last_unprepared), "%s", req->claims[i]->name);
        }
        resp.n_claims = req->n_claims;
        resp.claims = eptr;
        grpc_server_reply(call, &resp.base);
}

static const struct grpc_server_method methods[] = {
        { "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
          &dra__v1__node_prepare_resources_request__descriptor, h_prepare },
        { "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
          &dra__v1__node_unprepare_resources_request__descriptor, h_unprepare },
};

struct outcome {
        bool done;
        int r;
        char error[256];
};

static void on_done(int r, const char *error, void *userdata) {
        struct outcome *o = userdata;
        assert_false(o->done);
        o->done = true;
        o->r = r;
        snprintf(o->error, sizeof(o->error), "%s", error ? error : "");
}

static void run_until(struct event_base *base, const bool *flag) {
        for (int i = 0; i < 2000 && !*flag; i++)
                event_base_loop(base, EVLOOP_ONCE);
        assert_true(*flag);
}

static void run_until_unprepared(struct event_base *base, struct dra_manager *m) {
        for (int i = 0; i < 2000 && dra_manager_unprepares_in_flight(m) > 0; i++)
                event_base_loop(base, EVLOOP_ONCE);
        assert_int_equal(dra_manager_unprepares_in_flight(m), 0);
}

static void test_prepare_share_restart_unprepare(void **state) {
        char tmpl[] = "/tmp/ckubelet-dra-XXXXXX", sock[128], ckpt[160];
        struct event_base *base = event_base_new();
        struct grpc_server *srv = NULL;
        struct dra_plugins *plugins = NULL;
        struct dra_manager *m = NULL;
        char *v1[] = { "v1.DRAPlugin", NULL }, *drivers[] = { "gpu.example.com", NULL },
             *nodriver[] = { "nic.example.com", NULL };
        struct dra_claim_ref c1 = { "uid-1", "claim-1", "ns", drivers }, bad = { "uid-2", "broken", "ns", drivers },
                             other = { "uid-3", "claim-3", "ns", nodriver };
        struct outcome a = { 0 }, b = { 0 }, a2 = { 0 }, e = { 0 }, n = { 0 };
        _cleanup_strv_free_ char **ids = NULL;
        char *a_and_b[] = { "pod-a", "pod-b", NULL }, *active[] = { "pod-b", NULL }, *none[] = { NULL };
        (void) state;

        n_prepare = n_unprepare = 0;
        assert_non_null(mkdtemp(tmpl));
        snprintf(sock, sizeof(sock), "%s/dra.sock", tmpl);
        snprintf(ckpt, sizeof(ckpt), "%s/dra_manager_state", tmpl);
        assert_int_equal(grpc_server_new(base, sock, methods, 2, NULL, &srv), 0);
        assert_int_equal(dra_plugins_new(base, NULL, NULL, &plugins), 0);
        assert_int_equal(dra_plugins_register(plugins, "gpu.example.com", sock, v1, NULL), 0);
        assert_int_equal(dra_manager_new(base, tmpl, plugins, &m, NULL), 0);

        /* two pods share claim-1: one NodePrepareResources */
        assert_int_equal(dra_manager_prepare(m, "pod-a", &c1, 1, on_done, &a, NULL), 0);
        assert_int_equal(dra_manager_prepare(m, "pod-b", &c1, 1, on_done, &b, NULL), 0);
        run_until(base, &a.done);
        run_until(base, &b.done);
        assert_int_equal(a.r, 0);
        assert_int_equal(b.r, 0);
        assert_int_equal(n_prepare, 1);
        assert_int_equal(dra_claim_cdi_ids(dra_claims_find(dra_manager_claims(m), "uid-1"), "gpu", &ids), 0);
        assert_int_equal(strv_length(ids), 1);
        assert_string_equal(ids[0], "example.com/gpu=claim-1");

        /* a restart (the manager made anew from the checkpoint): prepared already, no call */
        m = dra_manager_free(m);
        assert_int_equal(access(ckpt, F_OK), 0);
        assert_int_equal(dra_manager_new(base, tmpl, plugins, &m, NULL), 0);
        assert_int_equal(dra_manager_prepare(m, "pod-a", &c1, 1, on_done, &a2, NULL), 0);
        run_until(base, &a2.done);
        assert_int_equal(a2.r, 0);
        assert_int_equal(n_prepare, 1);

        /* the driver fails a claim: the pod is told, as upstream words it */
        assert_int_equal(dra_manager_prepare(m, "pod-c", &bad, 1, on_done, &e, NULL), 0);
        run_until(base, &e.done);
        assert_int_equal(e.r, -EIO);
        assert_string_equal(e.error, "NodePrepareResources failed for ResourceClaim broken: boom");
        /* a driver without plugin */
        assert_int_equal(dra_manager_prepare(m, "pod-d", &other, 1, on_done, &n, NULL), 0);
        run_until(base, &n.done);
        assert_string_equal(n.error, "DRA driver nic.example.com is not registered");
        /* pod-c and pod-d go */
        dra_manager_gc(m, a_and_b);

        /* pod-a goes (its deletion was missed across a restart: gc): pod-b still uses the claim */
        dra_manager_gc(m, active);
        run_until_unprepared(base, m);
        assert_int_equal(n_unprepare, 0);
        assert_non_null(dra_claims_find(dra_manager_claims(m), "uid-1"));
        /* the last pod goes: unprepared, gone from the cache and the checkpoint */
        dra_manager_gc(m, none);
        run_until_unprepared(base, m);
        assert_int_equal(n_unprepare, 1);
        assert_string_equal(last_unprepared, "claim-1");
        assert_null(dra_claims_find(dra_manager_claims(m), "uid-1"));
        assert_int_equal(dra_claims_count(dra_manager_claims(m)), 0);
        /* an unprepare that fails (the driver went away) keeps the claim, tried again after the back-off */
        {
                struct dra_claim_ref c5 = { "uid-5", "claim-5", "ns", drivers };
                struct outcome f = { 0 };
                struct dra_claim *claim;
                int before = n_unprepare;

                assert_int_equal(dra_manager_prepare(m, "pod-e", &c5, 1, on_done, &f, NULL), 0);
                run_until(base, &f.done);
                assert_int_equal(f.r, 0);
                dra_plugins_deregister(plugins, "gpu.example.com", sock);
                dra_manager_gc(m, none); /* pod-e goes */
                run_until_unprepared(base, m);
                claim = dra_claims_find(dra_manager_claims(m), "uid-5");
                assert_non_null(claim);
                assert_int_equal(claim->state, DRA_CLAIM_PREPARED);
                assert_int_equal(dra_plugins_register(plugins, "gpu.example.com", sock, v1, NULL), 0);
                dra_manager_gc(m, active);
                assert_int_equal(dra_manager_unprepares_in_flight(m), 0); /* not before the back-off */
                claim->unprepare_retry_usec = 0;
                dra_manager_gc(m, active);
                run_until_unprepared(base, m);
                assert_int_equal(n_unprepare, before + 1);
                assert_null(dra_claims_find(dra_manager_claims(m), "uid-5"));
        }
        m = dra_manager_free(m);
        {
                _cleanup_free_ char *text = NULL;
                struct dra_claims *back = NULL;
                assert_int_equal(read_full_file(ckpt, 1 << 20, &text, NULL), 0);
                assert_int_equal(dra_claims_checkpoint_decode(text, &back, NULL), 0);
                assert_int_equal(dra_claims_count(back), 0);
                dra_claims_free(back);
        }
        dra_plugins_free(plugins);
        grpc_server_free(srv);
        event_base_free(base);
        unlink(sock);
        unlink(ckpt);
        rmdir(tmpl);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_prepare_share_restart_unprepare),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
