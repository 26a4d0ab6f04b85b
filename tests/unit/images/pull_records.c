/* SPDX-License-Identifier: Apache-2.0 */
/* The ImagePullIntent / ImagePulledRecord codec and the credential match (KubeletEnsureSecretPulledImages) */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "images/pull_records.h"

/* upstream's testdata/pulled record with a secret, read as it is on disk */
static const char upstream_record[] =
        "{\"kind\":\"ImagePulledRecord\",\"apiVersion\":\"kubelet.config.k8s.io/v1alpha1\","
        "\"lastUpdatedTime\":\"2024-10-21T12:26:40Z\",\"imageRef\":\"testimageref\",\"credentialMapping\":"
        "{\"docker.io/testing/test\":{\"kubernetesSecretCoordinates\":[{\"uid\":\"testsecretuid\","
        "\"namespace\":\"default\",\"name\":\"pull-secret\",\"credentialHash\":\"testsecrethash\"}]}}}";

static void test_file_name(void **state) {
        char buf[80];
        (void) state;
        assert_int_equal(pull_record_file_name("abc", buf, sizeof(buf)), 0);
        assert_string_equal(buf, "sha256-ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_int_equal(pull_record_file_name("abc", buf, 10), -ENOBUFS);
}

static void test_intent_roundtrip(void **state) {
        char *s = pull_intent_encode("repo.repo/test/test:v1"), *image = NULL;
        struct ck_error *err = NULL;
        (void) state;
        assert_string_equal(s, "{\"kind\":\"ImagePullIntent\",\"apiVersion\":\"kubelet.config.k8s.io/v1alpha1\","
                               "\"image\":\"repo.repo/test/test:v1\"}");
        assert_int_equal(pull_intent_decode(s, strlen(s), &image, &err), 0);
        assert_string_equal(image, "repo.repo/test/test:v1");
        free(image);
        free(s);
        assert_int_equal(pull_intent_decode("{\"kind\":\"Other\"}", 16, &image, &err), -EINVAL);
        ck_error_free(err);
        err = NULL;
        assert_int_equal(pull_intent_decode("not json", 8, &image, &err), -EINVAL);
        ck_error_free(err);
}

static void test_record_decode_and_match(void **state) {
        struct ck_error *err = NULL;
        json_t *rec = NULL;
        struct pull_secret_coord same = { "testsecretuid", "default", "pull-secret", "otherhash" },
                                 rotated = { "newuid", "other-ns", "copy", "testsecrethash" },
                                 foreign = { "u2", "tenant-b", "pull-secret", "h2" };
        struct pull_creds with_same = { .secrets = &same, .n_secrets = 1 },
                          with_rotated = { .secrets = &rotated, .n_secrets = 1 },
                          with_foreign = { .secrets = &foreign, .n_secrets = 1 }, none = { 0 };
        (void) state;

        assert_int_equal(pulled_record_decode(upstream_record, strlen(upstream_record), &rec, &err), 0);
        assert_true(pulled_record_match(rec, "docker.io/testing/test", &with_same));
        assert_true(pulled_record_match(rec, "docker.io/testing/test", &with_rotated)); /* same credential hash */
        assert_false(pulled_record_match(rec, "docker.io/testing/test", &with_foreign));
        assert_false(pulled_record_match(rec, "docker.io/testing/test", &none));
        assert_false(pulled_record_match(rec, "docker.io/testing/other", &with_same));
        json_decref(rec);
}

static void test_record_bad(void **state) {
        static const char *bad[] = {
                "{\"kind\":\"ImagePulledRecord\",\"apiVersion\":\"kubelet.config.k8s.io/v1alpha1\"}",
                "{\"kind\":\"ImagePulledRecord\",\"apiVersion\":\"v1\",\"imageRef\":\"x\"}",
                "{\"kind\":\"ImagePulledRecord\",\"apiVersion\":\"kubelet.config.k8s.io/v1alpha1\",\"imageRef\":\"x\","
                "\"credentialMapping\":{\"a\":{\"kubernetesSecretCoordinates\":[{\"uid\":1}]}}}",
                "{\"kind\":\"ImagePulledRecord\",\"apiVersion\":\"kubelet.config.k8s.io/v1alpha1\",\"imageRef\":\"x\","
                "\"credentialMapping\":[]}",
                "[",
        };
        json_t *rec = NULL;
        (void) state;
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct ck_error *err = NULL;
                assert_int_equal(pulled_record_decode(bad[i], strlen(bad[i]), &rec, &err), -EINVAL);
                assert_non_null(err);
                ck_error_free(err);
        }
        /* over the cap: refused before parsing */
        char *big = calloc(PULL_RECORD_MAX_SIZE + 2, 1);
        struct ck_error *err = NULL;
        memset(big, ' ', PULL_RECORD_MAX_SIZE + 1);
        assert_int_equal(pulled_record_decode(big, PULL_RECORD_MAX_SIZE + 1, &rec, &err), -EFBIG);
        ck_error_free(err);
        free(big);
}

static void test_record_add(void **state) {
        struct pull_secret_coord s = { "uid-s", "team-a", "regcred", "hash-s" };
        struct pull_sa_coord sa = { "uid-sa", "team-a", "builder" };
        struct pull_creds c = { .secrets = &s, .n_secrets = 1 }, csa = { .sas = &sa, .n_sas = 1 },
                          node = { .node_pods_accessible = true }, none = { 0 };
        struct ck_error *err = NULL;
        json_t *rec = NULL, *back = NULL;
        (void) state;

        assert_int_equal(pulled_record_add(&rec, "sha256:1111", "127.0.0.1:5000/private/app", &c, 0), 0);
        assert_int_equal(pulled_record_add(&rec, "sha256:1111", "127.0.0.1:5000/private/app", &c, 0), 0); /* once */
        assert_int_equal(pulled_record_add(&rec, "sha256:1111", "127.0.0.1:5000/private/app", &csa, 0), 0);
        char *s1 = pulled_record_encode(rec);
        assert_string_equal(
                s1, "{\"kind\":\"ImagePulledRecord\",\"apiVersion\":\"kubelet.config.k8s.io/v1alpha1\","
                    "\"lastUpdatedTime\":\"1970-01-01T00:00:00Z\",\"imageRef\":\"sha256:1111\",\"credentialMapping\":"
                    "{\"127.0.0.1:5000/private/app\":{\"kubernetesSecretCoordinates\":[{\"uid\":\"uid-s\","
                    "\"namespace\":\"team-a\",\"name\":\"regcred\",\"credentialHash\":\"hash-s\"}],"
                    "\"kubernetesServiceAccounts\":[{\"uid\":\"uid-sa\",\"namespace\":\"team-a\",\"name\":"
                    "\"builder\"}]}}}");
        assert_int_equal(pulled_record_decode(s1, strlen(s1), &back, &err), 0);
        assert_true(pulled_record_match(back, "127.0.0.1:5000/private/app", &c));
        assert_true(pulled_record_match(back, "127.0.0.1:5000/private/app", &csa));
        assert_false(pulled_record_match(back, "127.0.0.1:5000/private/app", &none));
        free(s1);
        json_decref(back);

        /* node-wide credentials open the image to every pod */
        assert_int_equal(pulled_record_add(&rec, "sha256:1111", "127.0.0.1:5000/private/app", &node, 0), 0);
        assert_true(pulled_record_match(rec, "127.0.0.1:5000/private/app", &none));
        json_decref(rec);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_file_name),
                cmocka_unit_test(test_intent_roundtrip),
                cmocka_unit_test(test_record_decode_and_match),
                cmocka_unit_test(test_record_bad),
                cmocka_unit_test(test_record_add),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
