/* SPDX-License-Identifier: Apache-2.0 */
/* What DRA reads from the API (src/cm/dra/podclaims.c): a pod's claim names (direct, from a template through
 * status.resourceClaimStatuses, not created yet, none needed), a container's references, and the checks of a
 * ResourceClaim before it is prepared for a pod (owner, reservedFor, allocation, drivers), with upstream's
 * messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "basic/error.h"
#include "basic/strv.h"
#include "cm/dra/podclaims.h"

static json_t *parse(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);
        if (!j)
                fail_msg("bad JSON in test: %s", e.text);
        return j;
}

static void test_pod_claims(void **state) {
        json_t *pod = parse(
                "{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\",\"uid\":\"u1\"},"
                "\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"t\"},"
                "{\"name\":\"shared\",\"resourceClaimName\":\"shared-claim\"},"
                "{\"name\":\"skipped\",\"resourceClaimTemplateName\":\"t2\"}]},"
                "\"status\":{\"resourceClaimStatuses\":[{\"name\":\"gpu\",\"resourceClaimName\":\"p-gpu-x\"},"
                "{\"name\":\"skipped\"}]}}");
        struct dra_pod_claim *c = NULL;
        size_t n = 0;
        (void) state;

        assert_int_equal(dra_pod_claims(pod, &c, &n, NULL), 0);
        assert_int_equal(n, 3);
        assert_string_equal(c[0].pod_claim_name, "gpu");
        assert_string_equal(c[0].claim_name, "p-gpu-x");
        assert_true(c[0].must_check_owner);
        assert_string_equal(c[1].claim_name, "shared-claim");
        assert_false(c[1].must_check_owner);
        assert_null(c[2].claim_name); /* nothing to do */
        dra_pod_claims_free(c, n);
        json_decref(pod);
}

static void test_pod_claims_not_yet(void **state) {
        json_t *pod = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},"
                            "\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"t\"}]}}");
        json_t *bad = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},"
                            "\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\"}]}}");
        json_t *none = parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ns\"},\"spec\":{}}");
        struct dra_pod_claim *c = NULL;
        struct ck_error *err = NULL;
        size_t n = 7;
        (void) state;

        assert_int_equal(dra_pod_claims(pod, &c, &n, &err), -EAGAIN);
        assert_string_equal(ck_error_message(err), "pod \"ns/p\": ResourceClaim not created yet");
        err = ck_error_free(err);
        assert_int_equal(dra_pod_claims(bad, &c, &n, &err), -EINVAL);
        assert_string_equal(ck_error_message(err),
                            "pod \"ns/p\", spec.resourceClaim gpu: none of the supported fields are set");
        err = ck_error_free(err);
        assert_int_equal(dra_pod_claims(none, &c, &n, NULL), 0);
        assert_int_equal(n, 0);
        assert_null(c);
        json_decref(pod);
        json_decref(bad);
        json_decref(none);
}

static void test_container_claims(void **state) {
        json_t *ctr = parse("{\"name\":\"c\",\"resources\":{\"claims\":[{\"name\":\"gpu\"},"
                            "{\"name\":\"shared\",\"request\":\"nic\"},{\"name\":\"x\",\"request\":\"\"}]}}");
        struct dra_container_claim *refs = NULL;
        size_t n = 0;
        (void) state;

        assert_int_equal(dra_container_claims(ctr, &refs, &n), 0);
        assert_int_equal(n, 3);
        assert_string_equal(refs[0].name, "gpu");
        assert_null(refs[0].request);
        assert_string_equal(refs[1].request, "nic");
        assert_null(refs[2].request);
        free(refs);
        json_decref(ctr);
}

#define CLAIM_META "\"metadata\":{\"name\":\"p-gpu-x\",\"namespace\":\"ns\",\"uid\":\"c1\""

static void test_claim_check(void **state) {
        json_t *ok = parse(
                "{" CLAIM_META ",\"ownerReferences\":[{\"kind\":\"Pod\",\"uid\":\"u1\",\"controller\":true}]},"
                "\"status\":{\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"p\",\"uid\":\"u1\"}],"
                "\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":\"gpu.example.com\","
                "\"pool\":\"n1\",\"device\":\"gpu-0\"},{\"request\":\"gpu\",\"driver\":\"gpu.example.com\","
                "\"pool\":\"n1\",\"device\":\"gpu-1\"},{\"request\":\"nic\",\"driver\":\"nic.example.com\","
                "\"pool\":\"n1\",\"device\":\"nic-0\"}]}}}}");
        json_t *other_owner = parse("{" CLAIM_META ",\"ownerReferences\":[{\"uid\":\"u9\",\"controller\":true}]},"
                                    "\"status\":{\"reservedFor\":[{\"resource\":\"pods\",\"uid\":\"u1\"}]}}");
        json_t *not_reserved = parse("{" CLAIM_META
                                     "},\"status\":{\"reservedFor\":[{\"resource\":\"pods\",\"uid\":\"u2\"}],"
                                     "\"allocation\":{}}}");
        _cleanup_strv_free_ char **drivers = NULL;
        struct ck_error *err = NULL;
        char **none = NULL;
        (void) state;

        assert_int_equal(dra_claim_check(ok, "ns", "p", "u1", true, &drivers, NULL), 0);
        assert_int_equal(strv_length(drivers), 2);
        assert_string_equal(drivers[0], "gpu.example.com");
        assert_string_equal(drivers[1], "nic.example.com");
        assert_int_equal(dra_claim_check(other_owner, "ns", "p", "u1", true, &none, &err), -EPERM);
        assert_string_equal(ck_error_message(err),
                            "ResourceClaim ns/p-gpu-x was not created for Pod ns/p (Pod is not owner)");
        err = ck_error_free(err);
        assert_int_equal(dra_claim_check(ok, "other", "p", "u1", true, &none, &err), -EPERM);
        err = ck_error_free(err);
        assert_int_equal(dra_claim_check(not_reserved, "ns", "p", "u1", false, &none, &err), -EAGAIN);
        assert_string_equal(ck_error_message(err), "pod p (u1) is not allowed to use ResourceClaim p-gpu-x (c1)");
        err = ck_error_free(err);
        assert_null(none);
        json_decref(ok);
        json_decref(other_owner);
        json_decref(not_reserved);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pod_claims),
                cmocka_unit_test(test_pod_claims_not_yet),
                cmocka_unit_test(test_container_claims),
                cmocka_unit_test(test_claim_check),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
