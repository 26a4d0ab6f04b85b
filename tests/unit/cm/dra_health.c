/* SPDX-License-Identifier: Apache-2.0 */
/* The DRA device health cache and the status built from it (src/cm/dra/health.c, ResourceHealthStatus): reports,
 * what counts as a change, the timeout to Unknown (the default 30s or the plugin's), a driver's stream ending, the
 * caps, the pods a change touches, and a container's allocatedResourcesStatus entry for a claim
 * ("claim:<name>[/<request>]", resourceID the first CDI ID else "<driver>/<pool>/<device>"). The health stream's
 * life in the plugin registry (opened only with a handler and an advertised health service, ended on
 * deregistration). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <event2/event.h>

#include "cm/dra/claims.h"
#include "cm/dra/health.h"
#include "basic/strv.h"
#include "cm/dra/plugins-testing.h"

#define SEC UINT64_C(1000000)
#define T0 (1000 * SEC)

static void update(struct dra_health_cache *c, const char *driver, const struct dra_health_report *r, size_t n,
                   uint64_t now, size_t want_changed) {
        struct dra_health_key *changed = NULL;
        size_t n_changed = 99;

        assert_int_equal(dra_health_update(c, driver, r, n, now, &changed, &n_changed), 0);
        assert_int_equal(n_changed, want_changed);
        dra_health_keys_free(changed, n_changed);
}

static void test_update_and_changes(void **state) {
        struct dra_health_cache *c = NULL;
        struct dra_health_report r[] = {
                { .pool = "pool", .device = "dev0", .health = DRA_HEALTH_HEALTHY },
                { .pool = "pool", .device = "dev1", .health = DRA_HEALTH_UNHEALTHY, .message = "ECC errors" },
        };
        struct dra_health_key *changed = NULL;
        size_t n_changed = 0;
        const char *msg = NULL;
        (void) state;

        assert_int_equal(dra_health_cache_new(&c), 0);
        /* never reported: Unknown */
        assert_int_equal(dra_health_get(c, "gpu", "pool", "dev0", T0, &msg), DRA_HEALTH_UNKNOWN);
        assert_null(msg);
        /* new devices are changes */
        update(c, "gpu", r, 2, T0, 2);
        assert_int_equal(dra_health_get(c, "gpu", "pool", "dev0", T0, NULL), DRA_HEALTH_HEALTHY);
        assert_int_equal(dra_health_get(c, "gpu", "pool", "dev1", T0, &msg), DRA_HEALTH_UNHEALTHY);
        assert_string_equal(msg, "ECC errors");
        /* another driver's device of the same name is another device */
        assert_int_equal(dra_health_get(c, "nic", "pool", "dev0", T0, NULL), DRA_HEALTH_UNKNOWN);
        /* the same report again: no change */
        update(c, "gpu", r, 2, T0 + SEC, 0);
        /* dev1 recovers: one change, named */
        r[1].health = DRA_HEALTH_HEALTHY;
        r[1].message = NULL;
        assert_int_equal(dra_health_update(c, "gpu", r, 2, T0 + 2 * SEC, &changed, &n_changed), 0);
        assert_int_equal(n_changed, 1);
        assert_string_equal(changed[0].driver, "gpu");
        assert_string_equal(changed[0].pool, "pool");
        assert_string_equal(changed[0].device, "dev1");
        dra_health_keys_free(changed, n_changed);
        assert_int_equal(dra_health_get(c, "gpu", "pool", "dev1", T0 + 2 * SEC, &msg), DRA_HEALTH_HEALTHY);
        assert_null(msg);
        /* a changed timeout is a change too */
        r[0].timeout_sec = 60;
        update(c, "gpu", r, 2, T0 + 3 * SEC, 1);
        dra_health_cache_free(c);
}

static void test_timeout_unknown(void **state) {
        struct dra_health_cache *c = NULL;
        struct dra_health_report r[] = {
                { .pool = "pool", .device = "dev0", .health = DRA_HEALTH_HEALTHY },
                { .pool = "pool", .device = "dev1", .health = DRA_HEALTH_UNHEALTHY, .timeout_sec = 5 },
                { .pool = "pool", .device = "dev2", .health = DRA_HEALTH_HEALTHY, .timeout_sec = -3 },
        };
        struct dra_health_key *changed = NULL;
        size_t n_changed = 0;
        (void) state;

        assert_int_equal(dra_health_cache_new(&c), 0);
        assert_int_equal(dra_health_next_expiry(c), 0);
        update(c, "gpu", r, 3, T0, 3);
        /* dev1 first (its own 5s), then the default 30s (a negative timeout is the default) */
        assert_int_equal(dra_health_next_expiry(c), T0 + 5 * SEC + 1);
        assert_int_equal(dra_health_get(c, "gpu", "pool", "dev1", T0 + 5 * SEC, NULL), DRA_HEALTH_UNHEALTHY);
        assert_int_equal(dra_health_get(c, "gpu", "pool", "dev1", T0 + 5 * SEC + 1, NULL), DRA_HEALTH_UNKNOWN);
        assert_int_equal(dra_health_expire(c, T0 + 5 * SEC + 1, &changed, &n_changed), 0);
        assert_int_equal(n_changed, 1);
        assert_string_equal(changed[0].device, "dev1");
        dra_health_keys_free(changed, n_changed);
        assert_int_equal(dra_health_next_expiry(c), T0 + DRA_HEALTH_DEFAULT_TIMEOUT_USEC + 1);
        assert_int_equal(dra_health_get(c, "gpu", "pool", "dev2", T0 + 30 * SEC, NULL), DRA_HEALTH_HEALTHY);
        assert_int_equal(dra_health_get(c, "gpu", "pool", "dev2", T0 + 31 * SEC, NULL), DRA_HEALTH_UNKNOWN);
        /* a report without dev0 after its timeout: dev0 becomes Unknown (a change), dev2 reported stays */
        update(c, "gpu", &r[2], 1, T0 + 31 * SEC, 1);
        assert_int_equal(dra_health_get(c, "gpu", "pool", "dev0", T0 + 31 * SEC, NULL), DRA_HEALTH_UNKNOWN);
        assert_int_equal(dra_health_get(c, "gpu", "pool", "dev2", T0 + 31 * SEC, NULL), DRA_HEALTH_HEALTHY);
        /* nothing else to expire but dev2 */
        assert_int_equal(dra_health_next_expiry(c), T0 + 61 * SEC + 1);
        dra_health_cache_free(c);
}

static void test_clear_driver(void **state) {
        struct dra_health_cache *c = NULL;
        struct dra_health_report r[] = {
                { .pool = "p", .device = "a", .health = DRA_HEALTH_HEALTHY },
                { .pool = "p", .device = "b", .health = DRA_HEALTH_UNKNOWN },
        };
        struct dra_health_key *changed = NULL;
        size_t n_changed = 0;
        (void) state;

        assert_int_equal(dra_health_cache_new(&c), 0);
        update(c, "gpu", r, 2, T0, 2);
        update(c, "nic", r, 1, T0, 1);
        /* only the devices that were known to be something are changes */
        assert_int_equal(dra_health_clear_driver(c, "gpu", &changed, &n_changed), 0);
        assert_int_equal(n_changed, 1);
        assert_string_equal(changed[0].device, "a");
        dra_health_keys_free(changed, n_changed);
        assert_int_equal(dra_health_get(c, "gpu", "p", "a", T0, NULL), DRA_HEALTH_UNKNOWN);
        assert_int_equal(dra_health_get(c, "nic", "p", "a", T0, NULL), DRA_HEALTH_HEALTHY);
        dra_health_cache_free(c);
}

static void test_caps(void **state) {
        struct dra_health_cache *c = NULL;
        struct dra_health_report bad[] = { { .pool = "", .device = "a" } };
        struct dra_health_report *many = calloc(DRA_HEALTH_MAX_DEVICES + 1, sizeof(*many));
        char long_name[DRA_HEALTH_MAX_NAME + 2], long_msg[3000];
        struct dra_health_key *changed = NULL;
        size_t n_changed = 0;
        const char *msg = NULL;
        (void) state;

        assert_non_null(many);
        assert_int_equal(dra_health_cache_new(&c), 0);
        assert_int_equal(dra_health_update(c, "gpu", bad, 1, T0, &changed, &n_changed), -EINVAL);
        memset(long_name, 'x', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = 0;
        bad[0] = (struct dra_health_report) { .pool = "p", .device = long_name };
        assert_int_equal(dra_health_update(c, "gpu", bad, 1, T0, &changed, &n_changed), -EINVAL);
        for (size_t i = 0; i <= DRA_HEALTH_MAX_DEVICES; i++)
                many[i] = (struct dra_health_report) { .pool = "p", .device = "d" };
        assert_int_equal(dra_health_update(c, "gpu", many, DRA_HEALTH_MAX_DEVICES + 1, T0, &changed, &n_changed),
                         -EINVAL);
        /* a long message is cut as upstream: 1021 characters and "..." */
        memset(long_msg, 'm', sizeof(long_msg) - 1);
        long_msg[sizeof(long_msg) - 1] = 0;
        bad[0] = (struct dra_health_report) {
                .pool = "p", .device = "d", .health = DRA_HEALTH_UNHEALTHY, .message = long_msg
        };
        update(c, "gpu", bad, 1, T0, 1);
        assert_int_equal(dra_health_get(c, "gpu", "p", "d", T0, &msg), DRA_HEALTH_UNHEALTHY);
        assert_int_equal(strlen(msg), DRA_HEALTH_MAX_MESSAGE);
        assert_string_equal(msg + DRA_HEALTH_MAX_MESSAGE - 3, "...");
        free(many);
        dra_health_cache_free(c);
}

static struct dra_claims *claims_fixture(void) {
        struct dra_claims *cs = NULL;
        struct dra_claim *a = NULL, *b = NULL;
        char *req[] = { "req", NULL }, *other[] = { "other", NULL }, *cdi[] = { "vendor.com/gpu=gpu0", NULL };
        struct dra_device da[] = {
                { .driver = "gpu", .pool = "pool", .device = "gpu0", .request_names = req, .cdi_ids = cdi },
                { .driver = "gpu", .pool = "pool", .device = "gpu1", .request_names = other },
        };
        struct dra_device db[] = { { .driver = "nic", .pool = "pool", .device = "eth0", .request_names = req } };

        assert_int_equal(dra_claims_new(&cs), 0);
        assert_int_equal(dra_claims_add_pod(cs, "uid-a", "claim-a", "ns", "pod1", &a), 0);
        assert_int_equal(dra_claims_add_pod(cs, "uid-a", "claim-a", "ns", "pod2", NULL), 0);
        assert_int_equal(dra_claim_set_driver_devices(a, "gpu", da, 2), 0);
        assert_int_equal(dra_claims_add_pod(cs, "uid-b", "claim-b", "ns", "pod3", &b), 0);
        assert_int_equal(dra_claim_set_driver_devices(b, "nic", db, 1), 0);
        return cs;
}

static void test_affected_pods(void **state) {
        struct dra_claims *cs = claims_fixture();
        struct dra_health_key gpu1 = { "gpu", "pool", "gpu1" }, eth0 = { "nic", "pool", "eth0" },
                              other = { "nic", "pool", "gpu1" }, both[] = { gpu1, eth0 };
        char **uids = NULL;
        (void) state;

        assert_int_equal(dra_health_affected_pods(cs, &gpu1, 1, &uids), 0);
        assert_int_equal(strv_length(uids), 2);
        assert_string_equal(uids[0], "pod1");
        assert_string_equal(uids[1], "pod2");
        strv_free(uids);
        /* the device of another driver: nobody */
        assert_int_equal(dra_health_affected_pods(cs, &other, 1, &uids), 0);
        assert_null(uids);
        assert_int_equal(dra_health_affected_pods(cs, both, 2, &uids), 0);
        assert_int_equal(strv_length(uids), 3);
        strv_free(uids);
        dra_claims_free(cs);
}

static void test_claim_status(void **state) {
        struct dra_claims *cs = claims_fixture();
        struct dra_health_cache *c = NULL;
        struct dra_health_report r[] = {
                { .pool = "pool", .device = "gpu0", .health = DRA_HEALTH_UNHEALTHY, .message = "XID 79" },
                { .pool = "pool", .device = "gpu1", .health = DRA_HEALTH_HEALTHY },
        };
        json_t *st = NULL;
        char *text;
        (void) state;

        assert_int_equal(dra_health_cache_new(&c), 0);
        /* nothing reported: Unknown; every device of the claim; the CDI ID first, else driver/pool/device */
        assert_int_equal(dra_health_claim_status(c, dra_claims_find(cs, "uid-a"), "gpu", NULL, true, T0, &st), 0);
        text = json_dumps(st, JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(text, "{\"name\":\"claim:gpu\",\"resources\":["
                                  "{\"health\":\"Unknown\",\"resourceID\":\"gpu/pool/gpu1\"},"
                                  "{\"health\":\"Unknown\",\"resourceID\":\"vendor.com/gpu=gpu0\"}]}");
        free(text);
        json_decref(st);
        update(c, "gpu", r, 2, T0, 2);
        /* a request: its devices only (a subrequest counts as its request); the message with the gate */
        assert_int_equal(dra_health_claim_status(c, dra_claims_find(cs, "uid-a"), "gpu", "req/sub", true, T0, &st), 0);
        text = json_dumps(st, JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(text, "{\"name\":\"claim:gpu/req/sub\",\"resources\":["
                                  "{\"health\":\"Unhealthy\",\"message\":\"XID 79\",\"resourceID\":"
                                  "\"vendor.com/gpu=gpu0\"}]}");
        free(text);
        json_decref(st);
        /* without the message gate; the other request */
        assert_int_equal(dra_health_claim_status(c, dra_claims_find(cs, "uid-a"), "gpu", "req", false, T0, &st), 0);
        text = json_dumps(st, JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(text, "{\"name\":\"claim:gpu/req\",\"resources\":["
                                  "{\"health\":\"Unhealthy\",\"resourceID\":\"vendor.com/gpu=gpu0\"}]}");
        free(text);
        json_decref(st);
        /* a request with no device: no entry */
        assert_int_equal(dra_health_claim_status(c, dra_claims_find(cs, "uid-a"), "gpu", "none", true, T0, &st), 0);
        assert_null(st);
        /* timed out: Unknown, no message */
        assert_int_equal(dra_health_claim_status(c, dra_claims_find(cs, "uid-a"), "gpu", "req", true, T0 + 31 * SEC,
                                                 &st),
                         0);
        text = json_dumps(st, JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(text, "{\"name\":\"claim:gpu/req\",\"resources\":["
                                  "{\"health\":\"Unknown\",\"resourceID\":\"vendor.com/gpu=gpu0\"}]}");
        free(text);
        json_decref(st);
        dra_health_cache_free(c);
        dra_claims_free(cs);
}

/* ---- the stream's life in the plugin registry */

static int n_ends;

static void on_msg(const char *driver, const ProtobufCMessage *msg, void *userdata) {
        (void) driver;
        (void) msg;
        (void) userdata;
        fail();
}

static void on_end(const char *driver, void *userdata) {
        (void) userdata;
        assert_string_equal(driver, "gpu.example.com");
        n_ends++;
}

static void test_plugin_streams(void **state) {
        struct event_base *base = event_base_new();
        struct dra_plugins *p = NULL;
        char *plain[] = { "v1.DRAPlugin", NULL }, *health[] = { "v1.DRAPlugin", "v1alpha1.DRAResourceHealth", NULL },
             *all[] = { "v1beta1.DRAResourceHealth", "v1.DRAResourceHealth", NULL };
        struct dra_health_handler h = { on_msg, on_end, NULL };
        (void) state;

        assert_string_equal(dra_plugins_health_service(all), DRA_HEALTH_SERVICE_V1);
        assert_string_equal(dra_plugins_health_service(health), DRA_HEALTH_SERVICE_V1ALPHA1);
        assert_null(dra_plugins_health_service(plain));
        /* no handler (the gate off): no stream even when offered */
        assert_int_equal(dra_plugins_new(base, NULL, NULL, &p), 0);
        assert_int_equal(dra_plugins_register(p, "gpu.example.com", "/nonexistent/a.sock", health, NULL), 0);
        assert_int_equal(dra_plugins_health_streams(p), 0);
        dra_plugins_free(p);
        /* a handler: a stream for the plugin offering the service only */
        n_ends = 0;
        assert_int_equal(dra_plugins_new(base, NULL, NULL, &p), 0);
        dra_plugins_set_health_handler(p, &h);
        assert_int_equal(dra_plugins_register(p, "gpu.example.com", "/nonexistent/a.sock", plain, NULL), 0);
        assert_int_equal(dra_plugins_health_streams(p), 0);
        assert_int_equal(dra_plugins_register(p, "gpu.example.com", "/nonexistent/b.sock", health, NULL), 0);
        assert_int_equal(dra_plugins_health_streams(p), 1);
        /* deregistered: the stream ends, the driver's health is forgotten */
        dra_plugins_deregister(p, "gpu.example.com", "/nonexistent/b.sock");
        assert_int_equal(dra_plugins_health_streams(p), 0);
        assert_int_equal(n_ends, 1);
        dra_plugins_free(p);
        assert_int_equal(n_ends, 1);
        event_base_free(base);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_update_and_changes), cmocka_unit_test(test_timeout_unknown),
                cmocka_unit_test(test_clear_driver),       cmocka_unit_test(test_caps),
                cmocka_unit_test(test_affected_pods),      cmocka_unit_test(test_claim_status),
                cmocka_unit_test(test_plugin_streams),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
