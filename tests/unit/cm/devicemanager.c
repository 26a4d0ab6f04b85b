/* SPDX-License-Identifier: Apache-2.0 */
/* The device manager's pure parts: choosing devices, the assignments, the container's options, the checkpoint;
 * and registration against fake plugins on one loop (GetDevicePluginOptions first, then ListAndWatch). */
#include <stdio.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "cm/devicemanager/manager-internal.h"
#include "cm/devicemanager/pod_devices.h"
#include "deviceplugin.pb-c.h"
#include "grpc/client.h"
#include "grpc/server.h"

static char **L(const char *s) {
        /* "a b c" → strv */
        char **l = NULL, *copy = strdup(s), *save = NULL;
        for (char *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save))
                assert_int_equal(strv_extend(&l, t), 0);
        free(copy);
        return l;
}

static char *joined(char **l) {
        return l ? strv_join(l, " ") : strdup("");
}

static void check_choice(const char *healthy, const char *in_use, const char *reusable, const char *preferred,
                         size_t needed, const char *want) {
        char **h = L(healthy), **u = L(in_use), **r = L(reusable), **p = L(preferred), **got = NULL;
        struct ck_error *err = NULL;
        char *s;

        assert_int_equal(dm_choose_devices("example.com/dev", h, u, r, p, needed, &got, &err), 0);
        s = joined(got);
        assert_string_equal(s, want);
        free(s);
        strv_free(h);
        strv_free(u);
        strv_free(r);
        strv_free(p);
        strv_free(got);
}

static void test_choose(void **state) {
        char **h = L("d1 d2 d3"), **u = L("d1 d2"), **got = NULL;
        struct ck_error *err = NULL;

        /* in name order, skipping those in use */
        check_choice("d3 d1 d2 d4", "d2", "", "", 2, "d1 d3");
        /* the plugin's preference first (only where available), then the rest */
        check_choice("d1 d2 d3 d4", "", "", "d4 d9 d2", 2, "d2 d4");
        check_choice("d1 d2 d3 d4", "d4", "", "d4", 2, "d1 d2");
        /* what the init containers held first */
        check_choice("d1 d2 d3 d4", "d3", "d3", "", 2, "d3 d1");
        check_choice("d1 d2", "", "", "", 0, "");
        /* not enough: upstream's message, counting only what is still needed */
        assert_int_equal(dm_choose_devices("example.com/dev", h, u, NULL, NULL, 2, &got, &err), -ENOSPC);
        assert_string_equal(ck_error_message(err), "requested number of devices unavailable for example.com/dev. "
                                                   "Requested: 2, Available: 1");
        assert_null(got);
        ck_error_free(err);
        strv_free(h);
        strv_free(u);
}

static uint8_t *pack_resp(const char *env, const char *mount, const char *dev, const char *ann, size_t *len) {
        V1beta1__ContainerAllocateResponse r = V1BETA1__CONTAINER_ALLOCATE_RESPONSE__INIT;
        V1beta1__ContainerAllocateResponse__EnvsEntry e = V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ENVS_ENTRY__INIT,
                                                      *es[] = { &e };
        V1beta1__ContainerAllocateResponse__AnnotationsEntry
                a = V1BETA1__CONTAINER_ALLOCATE_RESPONSE__ANNOTATIONS_ENTRY__INIT,
                *as[] = { &a };
        V1beta1__Mount m = V1BETA1__MOUNT__INIT, *ms[] = { &m };
        V1beta1__DeviceSpec d = V1BETA1__DEVICE_SPEC__INIT, *ds[] = { &d };
        V1beta1__CDIDevice c1 = V1BETA1__CDIDEVICE__INIT, c2 = V1BETA1__CDIDEVICE__INIT, *cs[] = { &c1, &c2 };
        char cdi_name[64];
        uint8_t *buf;

        e.key = "FAKE_DEVICES";
        e.value = (char *) env;
        r.envs = es;
        r.n_envs = 1;
        m.container_path = "/fake";
        m.host_path = (char *) mount;
        m.read_only = true;
        r.mounts = ms;
        r.n_mounts = 1;
        d.container_path = "/dev/fake0";
        d.host_path = (char *) dev;
        d.permissions = "rw";
        r.devices = ds;
        r.n_devices = 1;
        a.key = "example.com/ann";
        a.value = (char *) ann;
        r.annotations = as;
        r.n_annotations = 1;
        /* a CDI device of its own, and one every answer names */
        snprintf(cdi_name, sizeof(cdi_name), "example.com/dev=%s", ann);
        c1.name = cdi_name;
        c2.name = "example.com/shared=all";
        r.cdi_devices = cs;
        r.n_cdi_devices = 2;
        *len = v1beta1__container_allocate_response__get_packed_size(&r);
        buf = malloc(*len);
        v1beta1__container_allocate_response__pack(&r, buf);
        return buf;
}

static void test_pod_devices_and_options(void **state) {
        struct dm_pod_devices p = {};
        struct dm_run_options o = {};
        char **ids = L("d1 d2"), **ids2 = L("x1"), **in_use = NULL, **pods = NULL;
        int64_t numa[] = { 0, 1 };
        size_t l1, l2;
        uint8_t *r1 = pack_resp("d1,d2", "/host/a", "/dev/null", "one", &l1);
        uint8_t *r2 = pack_resp("x1", "/host/b", "/dev/zero", "two", &l2);

        assert_int_equal(dm_pod_devices_insert(&p, "u1", "c", "example.com/dev", ids, numa, r1, l1), 0);
        /* chosen but not answered yet: in use only when asked for pending ones */
        assert_int_equal(dm_pod_devices_insert(&p, "u1", "c", "example.com/other", ids2, NULL, NULL, 0), 0);
        assert_int_equal(dm_pod_devices_insert(&p, "u2", "c", "example.com/dev", ids2, NULL, r2, l2), 0);
        assert_int_equal(dm_pod_devices_in_use(&p, "example.com/other", false, &in_use), 0);
        assert_null(in_use);
        assert_int_equal(dm_pod_devices_in_use(&p, "example.com/other", true, &in_use), 0);
        assert_string_equal(in_use[0], "x1");
        strv_free(in_use);
        assert_int_equal(dm_pod_devices_pods(&p, &pods), 0);
        assert_int_equal(strv_length(pods), 2);
        strv_free(pods);
        /* replacing the pending one with its answer */
        assert_int_equal(dm_pod_devices_insert(&p, "u1", "c", "example.com/other", ids2, NULL, r2, l2), 0);
        assert_int_equal(p.n, 3);

        /* both resources' answers merged; the first of each name or path wins */
        assert_int_equal(dm_run_options_build(&p, "u1", "c", &o), 0);
        assert_int_equal(strv_length(o.env_names), 1);
        assert_string_equal(o.env_names[0], "FAKE_DEVICES");
        assert_string_equal(o.env_values[0], "d1,d2");
        assert_int_equal(o.n_mounts, 1);
        assert_string_equal(o.mounts[0]->host_path, "/host/a");
        assert_true(o.mounts[0]->read_only);
        assert_int_equal(o.n_devices, 1);
        assert_string_equal(o.devices[0]->host_path, "/dev/null");
        assert_string_equal(o.annotation_values[0], "one");
        /* CDI devices: every answer's, each name once, in order */
        assert_int_equal(strv_length(o.cdi_devices), 3);
        assert_string_equal(o.cdi_devices[0], "example.com/dev=one");
        assert_string_equal(o.cdi_devices[1], "example.com/shared=all");
        assert_string_equal(o.cdi_devices[2], "example.com/dev=two");
        dm_run_options_done(&o);

        dm_pod_devices_remove_pod(&p, "u1");
        assert_int_equal(p.n, 1);
        /* u1 holds nothing any more, u2 still does */
        assert_int_equal(dm_pod_devices_pods(&p, &pods), 0);
        assert_int_equal(strv_length(pods), 1);
        assert_string_equal(pods[0], "u2");
        strv_free(pods);
        dm_pod_devices_done(&p);
        strv_free(ids);
        strv_free(ids2);
        free(r1);
        free(r2);
}

static void test_checkpoint(void **state) {
        struct dm_pod_devices p = {}, q = {};
        struct dm_registered reg[] = { { (char *) "example.com/dev", NULL } }, *got_reg = NULL;
        char **ids = L("d1 d2"), *text;
        struct ck_error *err = NULL;
        int64_t numa[] = { 0, 1 };
        size_t len, n_reg = 0;
        uint8_t *r1 = pack_resp("d1,d2", "/host/a", "/dev/null", "one", &len);
        const struct dm_alloc *a;

        reg[0].device_ids = L("d1 d2 d3");
        assert_int_equal(dm_pod_devices_insert(&p, "u1", "c", "example.com/dev", ids, numa, r1, len), 0);
        /* not answered: left out */
        assert_int_equal(dm_pod_devices_insert(&p, "u2", "c", "example.com/dev", NULL, NULL, NULL, 0), 0);
        text = dm_checkpoint_encode(&p, reg, 1);
        assert_non_null(text);
        assert_non_null(strstr(text, "\"PodDeviceEntries\":[{"));
        assert_non_null(strstr(text, "\"DeviceIDs\":{\"0\":[\"d1\"],\"1\":[\"d2\"]}"));
        assert_non_null(strstr(text, "\"RegisteredDevices\":{\"example.com/dev\":[\"d1\",\"d2\",\"d3\"]}"));
        assert_non_null(strstr(text, "\"Checksum\":"));

        assert_int_equal(dm_checkpoint_decode(text, strlen(text), &q, &got_reg, &n_reg, &err), 0);
        assert_int_equal(q.n, 1);
        a = dm_pod_devices_find(&q, "u1", "c", "example.com/dev");
        assert_non_null(a);
        assert_int_equal(strv_length(a->device_ids), 2);
        assert_int_equal(a->resp_len, len);
        assert_memory_equal(a->resp, r1, len);
        assert_int_equal(n_reg, 1);
        assert_string_equal(got_reg[0].resource, "example.com/dev");
        assert_int_equal(strv_length(got_reg[0].device_ids), 3);
        dm_registered_free(got_reg, n_reg);
        dm_pod_devices_done(&q);

        /* a changed byte breaks the checksum */
        {
                char *bad = strdup(text), *d = strstr(bad, "\"d1\"");
                d[2] = '9';
                assert_int_equal(dm_checkpoint_decode(bad, strlen(bad), &q, &got_reg, &n_reg, &err), -EBADMSG);
                assert_string_equal(ck_error_message(err), "checkpoint is corrupted");
                err = ck_error_free(err);
                free(bad);
        }
        assert_int_equal(dm_checkpoint_decode("{", 1, &q, &got_reg, &n_reg, &err), -EBADMSG);
        ck_error_free(err);
        free(text);
        dm_pod_devices_done(&p);
        strv_free(ids);
        strv_free(reg[0].device_ids);
        free(r1);
}

/* devicesToAllocate with an affinity: d1 d2 on NUMA node 0, d3 d4 on node 1, d5 d6 on none */
static const int64_t six_numa[] = { 0, 0, 1, 1, -1, -1 };

static void check_aligned(const int64_t *numa, const char *in_use, const char *reusable, uint64_t affinity,
                          const char *preferred, size_t needed, const char *want) {
        char **h = L("d1 d2 d3 d4 d5 d6"), **u = L(in_use), **r = L(reusable), **p = L(preferred), **got = NULL;
        struct ck_error *err = NULL;
        char *s;

        assert_int_equal(dm_choose_devices_aligned("example.com/dev", h, numa, u, r, affinity, p, needed, &got, &err),
                         0);
        s = joined(got);
        assert_string_equal(s, want);
        free(s);
        strv_free(h);
        strv_free(u);
        strv_free(r);
        strv_free(p);
        strv_free(got);
}

static void check_offer(const char *reusable, uint64_t affinity, size_t needed, const char *want_available,
                        const char *want_must) {
        char **h = L("d1 d2 d3 d4 d5 d6"), **r = L(reusable), **avail = NULL, **must = NULL;
        char *a, *m;

        assert_int_equal(dm_preferred_offer(h, six_numa, NULL, r, affinity, needed, &avail, &must), 0);
        a = joined(avail);
        m = joined(must);
        assert_string_equal(a, want_available);
        assert_string_equal(m, want_must);
        free(a);
        free(m);
        strv_free(h);
        strv_free(r);
        strv_free(avail);
        strv_free(must);
}

static void test_choose_aligned(void **state) {
        /* fewer needed than the affinity's nodes hold: only from them, the plugin's preference among them first */
        check_aligned(six_numa, "", "", 0x1, "", 1, "d1");
        check_aligned(six_numa, "", "", 0x1, "d2", 1, "d2");
        check_aligned(six_numa, "", "", 0x1, "d3", 1, "d1");
        check_aligned(six_numa, "", "", 0x2, "", 1, "d3");
        /* more: every aligned one, then the plugin's preference, then other nodes, then devices without a node */
        check_aligned(six_numa, "", "", 0x1, "d5", 3, "d1 d2 d5");
        check_aligned(six_numa, "", "", 0x1, "", 3, "d1 d2 d3");
        check_aligned(six_numa, "d3 d4", "", 0x1, "", 3, "d1 d2 d5");
        check_aligned(six_numa, "d3", "", 0x2, "", 2, "d4 d1");
        /* the reused devices first, the rest aligned */
        check_aligned(six_numa, "", "d3", 0x1, "", 2, "d3 d1");
        /* no affinity, no NUMA information, or no device with a node: name order, as without a topology */
        check_aligned(six_numa, "", "", 0, "", 2, "d1 d2");
        check_aligned(six_numa, "d1", "", 0, "", 2, "d2 d3");
        check_aligned(NULL, "d1", "", 0x2, "", 2, "d2 d3");
        check_aligned((const int64_t[]) { -1, -1, -1, -1, -1, -1 }, "d1", "", 0x2, "", 2, "d2 d3");
        /* what GetPreferredAllocation is offered: the aligned devices when they suffice, else all of them with the
         * aligned ones required */
        check_offer("", 0x1, 1, "d1 d2", "");
        check_offer("", 0x1, 2, "d1 d2 d3 d4 d5 d6", "d1 d2");
        check_offer("d3", 0x1, 2, "d1 d2 d3", "d3");
        check_offer("", 0, 2, "d1 d2 d3 d4 d5 d6", "");
}

/* ---------------------------------------------------------------- registration */

/* a device plugin: records its calls; GetDevicePluginOptions answers, fails, or never answers */
enum { OPTIONS_OK, OPTIONS_FAIL, OPTIONS_SILENT };

struct fake_plugin {
        char calls[64]; /* G: GetDevicePluginOptions, L: ListAndWatch */
        int options;
        struct grpc_server_call *held; /* OPTIONS_SILENT's call, or the ListAndWatch stream */
};

static void fp_closed(struct grpc_server_call *call, void *userdata) {
        struct fake_plugin *p = userdata;
        p->held = NULL;
}

static void fp_options(struct grpc_server_call *call, const ProtobufCMessage *msg, void *userdata) {
        struct fake_plugin *p = userdata;
        V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;

        strcat(p->calls, "G");
        if (p->options == OPTIONS_FAIL) {
                grpc_server_reply_error(call, GRPC_UNAVAILABLE, "no options today");
                return;
        }
        if (p->options == OPTIONS_SILENT) {
                p->held = call;
                grpc_server_reply_later(call, fp_closed, p);
                return;
        }
        opts.pre_start_required = true;
        opts.get_preferred_allocation_available = true;
        grpc_server_reply(call, &opts.base);
}

static void fp_watch(struct grpc_server_call *call, const ProtobufCMessage *msg, void *userdata) {
        struct fake_plugin *p = userdata;
        V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
        V1beta1__Device d[2] = { V1BETA1__DEVICE__INIT, V1BETA1__DEVICE__INIT };
        V1beta1__Device *devs[] = { &d[0], &d[1] };

        strcat(p->calls, "L");
        d[0].id = (char *) "d1";
        d[1].id = (char *) "d2";
        d[0].health = d[1].health = (char *) "Healthy";
        resp.devices = devs;
        resp.n_devices = 2;
        grpc_server_call_hold(call, fp_closed, p);
        p->held = call;
        assert_int_equal(grpc_server_stream_send(call, &resp.base), 0);
}

static const struct grpc_server_method fp_methods[] = {
        { "/v1beta1.DevicePlugin/GetDevicePluginOptions", &v1beta1__empty__descriptor, fp_options },
        { "/v1beta1.DevicePlugin/ListAndWatch", &v1beta1__empty__descriptor, fp_watch },
};

struct reg_reply {
        int calls, status;
        char message[256];
};

static void on_reg_reply(const struct grpc_reply *r, void *userdata) {
        struct reg_reply *out = userdata;
        out->calls++;
        out->status = r->grpc_status;
        snprintf(out->message, sizeof(out->message), "%s", r->message);
}

static void reg_run_until(struct event_base *base, const int *counter, int want) {
        uint64_t deadline = now_usec() + 10 * USEC_PER_SEC;
        while (*counter < want && now_usec() < deadline)
                event_base_loop(base, EVLOOP_ONCE);
        assert_true(*counter >= want);
}

static void on_dm_change(void *userdata) {
        (*(int *) userdata)++;
}

/* Register for resource with endpoint <name>.sock, whose plugin is p; the options in the request say nothing is
 * offered: the plugin's GetDevicePluginOptions answer counts */
static void reg_call(struct grpc_client *c, const char *resource, const char *endpoint, uint64_t timeout_usec,
                     struct reg_reply *out) {
        V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
        V1beta1__DevicePluginOptions opts = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;

        req.version = (char *) DM_VERSION;
        req.endpoint = (char *) endpoint;
        req.resource_name = (char *) resource;
        req.options = &opts;
        assert_int_equal(grpc_call(c, "/v1beta1.Registration/Register", &req.base, &v1beta1__empty__descriptor,
                                   timeout_usec, on_reg_reply, out, NULL),
                         0);
}

static struct grpc_server *fp_start(struct event_base *base, const char *dir, const char *endpoint,
                                    struct fake_plugin *p) {
        _cleanup_free_ char *path = NULL;
        struct grpc_server *s = NULL;

        assert_true(asprintf(&path, "%s/%s", dir, endpoint) > 0);
        assert_int_equal(grpc_server_new(base, path, fp_methods, ELEMENTSOF(fp_methods), p, &s), 0);
        return s;
}

static void test_registration(void **state) {
        struct event_base *base = event_base_new();
        char dir[] = "/tmp/ckubelet-dm-test-XXXXXX";
        _cleanup_free_ char *kubelet_sock = NULL;
        struct fake_plugin good = {}, bad = { .options = OPTIONS_FAIL }, silent = { .options = OPTIONS_SILENT };
        struct grpc_server *s_good, *s_bad, *s_silent;
        struct reg_reply r_good = {}, r_bad = {}, r_gaveup = {}, r_silent = {};
        struct devicemanager *m = NULL;
        struct grpc_client *c = NULL;
        const struct resource *res;
        int changes = 0;

        assert_non_null(mkdtemp(dir));
        assert_int_equal(dm_new(base, dir, on_dm_change, &changes, &m), 0);
        assert_true(asprintf(&kubelet_sock, "%s/%s", dir, DM_SOCKET_NAME) > 0);
        assert_int_equal(grpc_client_new(base, kubelet_sock, 5 * USEC_PER_SEC, &c), 0);
        s_good = fp_start(base, dir, "good.sock", &good);
        s_bad = fp_start(base, dir, "bad.sock", &bad);
        s_silent = fp_start(base, dir, "silent.sock", &silent);

        /* the options first, then the devices; the options are the plugin's answer, not the request's */
        reg_call(c, "example.com/good", "good.sock", 0, &r_good);
        reg_run_until(base, &r_good.calls, 1);
        assert_int_equal(r_good.status, GRPC_OK);
        reg_run_until(base, &changes, 1);
        res = dm_resource_find(m, "example.com/good");
        assert_non_null(res);
        for (uint64_t deadline = now_usec() + 10 * USEC_PER_SEC; res->n_devices < 2 && now_usec() < deadline;)
                event_base_loop(base, EVLOOP_ONCE);
        assert_int_equal(res->n_devices, 2);
        assert_string_equal(good.calls, "GL");
        assert_true(res->has_options && res->pre_start_required && res->preferred_available);

        /* GetDevicePluginOptions fails: so does Register, and nothing is registered nor watched */
        reg_call(c, "example.com/bad", "bad.sock", 0, &r_bad);
        reg_run_until(base, &r_bad.calls, 1);
        assert_int_equal(r_bad.status, GRPC_UNKNOWN);
        assert_string_equal(
                r_bad.message,
                "failed to get device plugin options: rpc error: code = Unavailable desc = no options today");
        assert_null(dm_resource_find(m, "example.com/bad"));
        assert_string_equal(bad.calls, "G");

        /* the plugin gives up on its Register call first: the registration is dropped, its call with it */
        reg_call(c, "example.com/silent", "silent.sock", 100 * USEC_PER_MSEC, &r_gaveup);
        reg_run_until(base, &r_gaveup.calls, 1);
        assert_int_equal(r_gaveup.status, GRPC_DEADLINE_EXCEEDED);
        for (uint64_t deadline = now_usec() + 10 * USEC_PER_SEC; silent.held && now_usec() < deadline;)
                event_base_loop(base, EVLOOP_ONCE);
        assert_null(silent.held);
        assert_null(m->registrations);
        assert_null(dm_resource_find(m, "example.com/silent"));

        /* the manager freed while a registration waits for its options */
        reg_call(c, "example.com/silent", "silent.sock", 0, &r_silent);
        for (uint64_t deadline = now_usec() + 10 * USEC_PER_SEC; !silent.held && now_usec() < deadline;)
                event_base_loop(base, EVLOOP_ONCE);
        assert_non_null(silent.held);
        assert_int_equal(r_silent.calls, 0);
        m = dm_free(m);
        reg_run_until(base, &r_silent.calls, 1);
        assert_int_not_equal(r_silent.status, GRPC_OK);
        for (uint64_t deadline = now_usec() + 10 * USEC_PER_SEC; silent.held && now_usec() < deadline;)
                event_base_loop(base, EVLOOP_ONCE);
        assert_null(silent.held); /* the manager's GetDevicePluginOptions call went with it */
        assert_string_equal(silent.calls, "GG");

        grpc_client_free(c);
        grpc_server_free(s_good);
        grpc_server_free(s_bad);
        grpc_server_free(s_silent);
        assert_int_equal(fs_remove_tree_at(AT_FDCWD, dir), 0);
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_choose),
                cmocka_unit_test(test_choose_aligned),
                cmocka_unit_test(test_pod_devices_and_options),
                cmocka_unit_test(test_checkpoint),
                cmocka_unit_test(test_registration),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
