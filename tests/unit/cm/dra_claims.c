/* SPDX-License-Identifier: Apache-2.0 */
/* The DRA claim cache (src/cm/dra/claims.c): reference counting by pod, unprepare only of unused claims, a pod
 * coming while an unprepare runs, a retried prepare not doubling CDI IDs, the claim → container CDI mapping, and
 * the checkpoint (upstream's format, checksum, round trip). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <zlib.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "cm/dra/claims.h"

static struct dra_device dev(char **reqs, char **cdi) {
        return (struct dra_device) { .pool = "pool-a", .device = "dev-0", .request_names = reqs, .cdi_ids = cdi };
}

static void test_shared_refcount(void **state) {
        struct dra_claims *c = NULL;
        struct dra_claim *claim = NULL, *again = NULL;
        _cleanup_strv_free_ char **unused = NULL, **unused2 = NULL;
        (void) state;

        assert_int_equal(dra_claims_new(&c), 0);
        assert_int_equal(dra_claims_add_pod(c, "c1", "shared", "ns", "pod-a", &claim), 0);
        assert_int_equal(dra_claims_add_pod(c, "c1", "shared", "ns", "pod-b", &again), 0);
        assert_ptr_equal(claim, again);
        /* the same pod counted once */
        assert_int_equal(dra_claims_add_pod(c, "c1", "shared", "ns", "pod-a", NULL), 0);
        assert_int_equal(strv_length(claim->pod_uids), 2);
        /* another claim with the same UID but another name: refused */
        assert_int_equal(dra_claims_add_pod(c, "c1", "other", "ns", "pod-c", NULL), -EEXIST);
        claim->state = DRA_CLAIM_PREPARED;

        assert_int_equal(dra_claims_remove_pod(c, "pod-a", &unused), 0);
        assert_null(unused); /* pod-b still uses it */
        assert_int_equal(dra_claim_unprepare_begin(claim), -EBUSY);
        assert_int_equal(dra_claims_remove_pod(c, "pod-b", &unused2), 0);
        assert_non_null(unused2);
        assert_string_equal(unused2[0], "c1");
        assert_null(unused2[1]);
        assert_int_equal(dra_claim_unprepare_begin(claim), 0);
        assert_int_equal(dra_claim_unprepare_begin(claim), -EBUSY); /* one call at a time */
        assert_true(dra_claim_unprepare_end(claim, true));
        dra_claims_remove(c, "c1");
        assert_int_equal(dra_claims_count(c), 0);
        dra_claims_free(c);
}

static void test_never_prepared_dropped(void **state) {
        struct dra_claims *c = NULL;
        _cleanup_strv_free_ char **unused = NULL;
        (void) state;

        assert_int_equal(dra_claims_new(&c), 0);
        assert_int_equal(dra_claims_add_pod(c, "c1", "x", "ns", "pod-a", NULL), 0);
        assert_int_equal(dra_claims_remove_pod(c, "pod-a", &unused), 0);
        assert_null(unused); /* nothing to unprepare */
        assert_int_equal(dra_claims_count(c), 0);
        dra_claims_free(c);
}

static void test_prepare_racing_unprepare(void **state) {
        struct dra_claims *c = NULL;
        struct dra_claim *claim = NULL;
        char *cdi[] = { "example.com/gpu=gpu0", NULL };
        struct dra_device d = dev(NULL, cdi);
        (void) state;

        assert_int_equal(dra_claims_new(&c), 0);
        assert_int_equal(dra_claims_add_pod(c, "c1", "x", "ns", "pod-a", &claim), 0);
        assert_int_equal(dra_claim_set_driver_devices(claim, "gpu.example.com", &d, 1), 0);
        claim->state = DRA_CLAIM_PREPARED;
        assert_int_equal(dra_claims_remove_pod(c, "pod-a", NULL), 0);
        assert_int_equal(dra_claim_unprepare_begin(claim), 0);
        /* a new pod while NodeUnprepareResources runs */
        assert_int_equal(dra_claims_add_pod(c, "c1", "x", "ns", "pod-b", NULL), 0);
        assert_true(claim->prepare_again);
        assert_false(dra_claim_unprepare_end(claim, true)); /* stays, to be prepared anew */
        assert_int_equal(claim->state, DRA_CLAIM_NEW);
        assert_int_equal(claim->n_devices, 0);
        assert_true(dra_claim_has_pod(claim, "pod-b"));

        /* a failed unprepare leaves it prepared, to retry */
        claim->state = DRA_CLAIM_PREPARED;
        assert_int_equal(dra_claims_remove_pod(c, "pod-b", NULL), 0);
        assert_int_equal(dra_claim_unprepare_begin(claim), 0);
        assert_false(dra_claim_unprepare_end(claim, false));
        assert_int_equal(claim->state, DRA_CLAIM_PREPARED);
        dra_claims_free(c);
}

static void test_retry_no_duplicate_cdi(void **state) {
        struct dra_claims *c = NULL;
        struct dra_claim *claim = NULL;
        char *r1[] = { "gpu", NULL }, *r2[] = { "nic/fast", NULL };
        char *cdi1[] = { "example.com/gpu=gpu0", NULL }, *cdi2[] = { "example.com/nic=nic1", NULL };
        struct dra_device gpu = dev(r1, cdi1), nic = dev(r2, cdi2);
        _cleanup_strv_free_ char **all = NULL, **gpus = NULL, **nics = NULL, **none = NULL;
        (void) state;

        assert_int_equal(dra_claims_new(&c), 0);
        assert_int_equal(dra_claims_add_pod(c, "c1", "x", "ns", "pod-a", &claim), 0);
        assert_int_equal(dra_claim_set_driver_devices(claim, "gpu.example.com", &gpu, 1), 0);
        assert_int_equal(dra_claim_set_driver_devices(claim, "nic.example.com", &nic, 1), 0);
        /* the gpu driver answers again (a retry): replaced, not added */
        assert_int_equal(dra_claim_set_driver_devices(claim, "gpu.example.com", &gpu, 1), 0);
        assert_int_equal(claim->n_devices, 2);
        assert_int_equal(strv_length(claim->drivers), 2);

        assert_int_equal(dra_claim_cdi_ids(claim, NULL, &all), 0);
        assert_int_equal(strv_length(all), 2);
        /* asking twice (two references to the claim) adds nothing */
        assert_int_equal(dra_claim_cdi_ids(claim, "", &all), 0);
        assert_int_equal(strv_length(all), 2);
        assert_int_equal(dra_claim_cdi_ids(claim, "gpu", &gpus), 0);
        assert_int_equal(strv_length(gpus), 1);
        assert_string_equal(gpus[0], "example.com/gpu=gpu0");
        /* "nic" matches its subrequest "nic/fast"; "ni" does not */
        assert_int_equal(dra_claim_cdi_ids(claim, "nic", &nics), 0);
        assert_int_equal(strv_length(nics), 1);
        assert_string_equal(nics[0], "example.com/nic=nic1");
        assert_int_equal(dra_claim_cdi_ids(claim, "ni", &none), 0);
        assert_null(none);
        dra_claims_free(c);
}

static void test_checkpoint_roundtrip(void **state) {
        struct dra_claims *c = NULL, *back = NULL;
        struct dra_claim *claim = NULL, *pending = NULL, *got;
        char *r1[] = { "gpu", NULL }, *cdi1[] = { "example.com/gpu=gpu0", "example.com/gpu=all", NULL };
        struct dra_device gpu = dev(r1, cdi1);
        _cleanup_free_ char *text = NULL, *text2 = NULL;
        struct ck_error *err = NULL;
        json_t *doc, *data;
        const char *dtext;
        (void) state;

        gpu.share_id = "share-1";
        assert_int_equal(dra_claims_new(&c), 0);
        assert_int_equal(dra_claims_add_pod(c, "c1", "claim-1", "ns", "pod-a", &claim), 0);
        assert_int_equal(dra_claims_add_pod(c, "c1", "claim-1", "ns", "pod-b", NULL), 0);
        assert_int_equal(dra_claim_set_driver_devices(claim, "gpu.example.com", &gpu, 1), 0);
        claim->state = DRA_CLAIM_PREPARED;
        /* not prepared yet: not in the checkpoint */
        assert_int_equal(dra_claims_add_pod(c, "c2", "claim-2", "ns", "pod-a", &pending), 0);
        assert_int_equal(dra_claims_checkpoint_encode(c, &text), 0);

        /* upstream's shape: Data a JSON string, Checksum its crc32 */
        doc = json_loads(text, 0, NULL);
        assert_non_null(doc);
        dtext = json_string_value(json_object_get(doc, "Data"));
        assert_non_null(dtext);
        assert_int_equal(json_integer_value(json_object_get(doc, "Checksum")),
                         (json_int_t) crc32(0L, (const Bytef *) dtext, (uInt) strlen(dtext)));
        data = json_loads(dtext, 0, NULL);
        assert_string_equal(json_string_value(json_object_get(data, "kind")), "DRACheckpoint");
        assert_string_equal(json_string_value(json_object_get(data, "apiVersion")), "checkpoint.dra.kubelet.k8s.io/v1");
        assert_int_equal(json_array_size(json_object_get(data, "ClaimInfoStateList")), 1);
        assert_non_null(json_object_get(json_object_get(json_array_get(json_object_get(data, "ClaimInfoStateList"), 0),
                                                        "PodUIDs"),
                                        "pod-b"));
        json_decref(data);
        json_decref(doc);

        assert_int_equal(dra_claims_checkpoint_decode(text, &back, &err), 0);
        assert_int_equal(dra_claims_count(back), 1);
        got = dra_claims_find(back, "c1");
        assert_non_null(got);
        assert_int_equal(got->state, DRA_CLAIM_PREPARED);
        assert_string_equal(got->name, "claim-1");
        assert_string_equal(got->namespace, "ns");
        assert_true(dra_claim_has_pod(got, "pod-a") && dra_claim_has_pod(got, "pod-b"));
        assert_int_equal(got->n_devices, 1);
        assert_string_equal(got->devices[0].driver, "gpu.example.com");
        assert_string_equal(got->devices[0].share_id, "share-1");
        assert_int_equal(strv_length(got->devices[0].cdi_ids), 2);
        /* the same again */
        assert_int_equal(dra_claims_checkpoint_encode(back, &text2), 0);
        assert_string_equal(text, text2);
        dra_claims_free(back);
        dra_claims_free(c);
}

static void test_checkpoint_corrupt(void **state) {
        struct dra_claims *c = NULL, *back = NULL;
        _cleanup_free_ char *text = NULL;
        struct ck_error *err = NULL;
        char *p;
        (void) state;

        assert_int_equal(dra_claims_new(&c), 0);
        assert_int_equal(dra_claims_checkpoint_encode(c, &text), 0);
        p = strstr(text, "DRACheckpoint");
        assert_non_null(p);
        p[0] = 'X';
        assert_int_equal(dra_claims_checkpoint_decode(text, &back, &err), -EINVAL);
        assert_null(back);
        assert_non_null(strstr(ck_error_message(err), "checksum"));
        ck_error_free(err);
        err = NULL;
        assert_int_equal(dra_claims_checkpoint_decode("{", &back, &err), -EINVAL);
        ck_error_free(err);
        dra_claims_free(c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shared_refcount),          cmocka_unit_test(test_never_prepared_dropped),
                cmocka_unit_test(test_prepare_racing_unprepare), cmocka_unit_test(test_retry_no_duplicate_cdi),
                cmocka_unit_test(test_checkpoint_roundtrip),     cmocka_unit_test(test_checkpoint_corrupt),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
