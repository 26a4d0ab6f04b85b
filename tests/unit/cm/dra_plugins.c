/* SPDX-License-Identifier: Apache-2.0 */
/* The DRA plugin registry (src/cm/dra/plugins.c): the service chosen (v1 preferred, v1beta1 accepted), upstream's
 * validation messages, several plugins per driver (a rolling update) with the newest used, and the driver's
 * registered/gone notifications. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <event2/event.h>

#include "basic/error.h"
#include "cm/dra/plugins-testing.h"

static int n_changed;
static bool last_registered;

static void on_changed(const char *driver, bool registered, void *userdata) {
        (void) userdata;
        assert_string_equal(driver, "gpu.example.com");
        n_changed++;
        last_registered = registered;
}

static void test_choose_service(void **state) {
        char *both[] = { "v1beta1.DRAPlugin", "v1.DRAPlugin", NULL }, *beta[] = { "v1beta1.DRAPlugin", NULL },
             *alpha[] = { "v1alpha4.Node", NULL }, *none[] = { NULL };
        struct ck_error *err = NULL;
        (void) state;

        assert_string_equal(dra_plugins_choose_service(both, NULL), "v1.DRAPlugin");
        assert_string_equal(dra_plugins_choose_service(beta, NULL), "v1beta1.DRAPlugin");
        assert_null(dra_plugins_choose_service(alpha, &err));
        assert_string_equal(ck_error_message(err),
                            "none of services supported by the plugin ([\"v1alpha4.Node\"]) "
                            "are supported by the kubelet ([\"v1.DRAPlugin\" \"v1beta1.DRAPlugin\"])");
        err = ck_error_free(err);
        assert_null(dra_plugins_choose_service(none, &err));
        assert_string_equal(ck_error_message(err), "empty list of supported gRPC services (aka supported versions)");
        ck_error_free(err);
}

static void test_rolling_update(void **state) {
        struct event_base *base = event_base_new();
        struct dra_plugins *p = NULL;
        char *v1[] = { "v1.DRAPlugin", NULL }, *beta[] = { "v1beta1.DRAPlugin", NULL };
        const char *service = NULL;
        struct ck_error *err = NULL;
        (void) state;

        n_changed = 0;
        assert_int_equal(dra_plugins_new(base, on_changed, NULL, &p), 0);
        assert_null(dra_plugins_endpoint(p, "gpu.example.com", NULL));
        assert_int_equal(dra_plugins_validate(p, "gpu.example.com", "/plugins/old.sock", beta, NULL), 0);
        assert_int_equal(dra_plugins_register(p, "gpu.example.com", "/plugins/old.sock", beta, NULL), 0);
        assert_int_equal(n_changed, 1);
        assert_true(last_registered);
        assert_string_equal(dra_plugins_endpoint(p, "gpu.example.com", &service), "/plugins/old.sock");
        assert_string_equal(service, "v1beta1.DRAPlugin");
        /* the same endpoint again: refused */
        assert_int_equal(dra_plugins_validate(p, "gpu.example.com", "/plugins/old.sock", v1, &err), -EEXIST);
        assert_string_equal(ck_error_message(err),
                            "endpoint /plugins/old.sock already registered for DRA driver plugin gpu.example.com");
        err = ck_error_free(err);
        assert_int_equal(dra_plugins_validate(p, "", "/plugins/x.sock", v1, &err), -EINVAL);
        err = ck_error_free(err);
        /* the new DaemonSet pod's plugin: used from now on */
        assert_int_equal(dra_plugins_register(p, "gpu.example.com", "/plugins/new.sock", v1, NULL), 0);
        assert_int_equal(n_changed, 1);
        assert_string_equal(dra_plugins_endpoint(p, "gpu.example.com", &service), "/plugins/new.sock");
        assert_string_equal(service, "v1.DRAPlugin");
        /* the old one goes: still the new one */
        dra_plugins_deregister(p, "gpu.example.com", "/plugins/old.sock");
        assert_string_equal(dra_plugins_endpoint(p, "gpu.example.com", NULL), "/plugins/new.sock");
        assert_int_equal(n_changed, 1);
        /* the new one goes first instead: back to nothing, the driver is gone */
        assert_int_equal(dra_plugins_register(p, "gpu.example.com", "/plugins/old.sock", beta, NULL), 0);
        dra_plugins_deregister(p, "gpu.example.com", "/plugins/old.sock");
        assert_string_equal(dra_plugins_endpoint(p, "gpu.example.com", NULL), "/plugins/new.sock");
        dra_plugins_deregister(p, "gpu.example.com", "/plugins/new.sock");
        assert_null(dra_plugins_endpoint(p, "gpu.example.com", NULL));
        assert_int_equal(n_changed, 2);
        assert_false(last_registered);
        assert_int_equal(dra_plugins_call(p, "gpu.example.com", "NodePrepareResources", NULL, NULL, NULL, NULL),
                         -ENOENT);
        dra_plugins_free(p);
        event_base_free(base);
}

static int done_r = 1;
static char done_msg[256];

static void on_done(int r, const char *error, void *cbdata) {
        (void) cbdata;
        done_r = r;
        snprintf(done_msg, sizeof(done_msg), "%s", error ? error : "");
}

static void test_register_async(void **state) {
        struct event_base *base = event_base_new();
        struct dra_plugins *p = NULL;
        char *bad[] = { "v2.Other", NULL }, *v1[] = { "v1.DRAPlugin", NULL };
        (void) state;

        assert_int_equal(dra_plugins_new(base, NULL, NULL, &p), 0);
        assert_int_equal(dra_plugins_register_async(p, "gpu.example.com", "/x.sock", bad, on_done, NULL), 0);
        assert_int_equal(done_r, 1); /* not from inside the call */
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        assert_int_equal(done_r, -EINVAL);
        assert_non_null(strstr(done_msg, "invalid supported gRPC versions of DRA driver plugin gpu.example.com at "
                                         "endpoint /x.sock"));
        assert_int_equal(dra_plugins_register_async(p, "gpu.example.com", "/x.sock", v1, on_done, NULL), 0);
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        assert_int_equal(done_r, 0);
        assert_string_equal(dra_plugins_endpoint(p, "gpu.example.com", NULL), "/x.sock");
        /* an outcome pending at free is dropped */
        done_r = 1;
        assert_int_equal(dra_plugins_register_async(p, "gpu.example.com", "/y.sock", v1, on_done, NULL), 0);
        dra_plugins_free(p);
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        assert_int_equal(done_r, 1);
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_choose_service),
                cmocka_unit_test(test_rolling_update),
                cmocka_unit_test(test_register_async),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
