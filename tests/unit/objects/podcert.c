/* SPDX-License-Identifier: Apache-2.0 */
/* objects/podcert: key pairs and their stub PKCS#10 request, chains, PodCertificateRequest outcomes, the refresh
 * time, label selectors and the trust anchors of ClusterTrustBundles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "basic/base64.h"
#include "basic/string.h"
#include "objects/podcert.h"

#define BLOCK(type, b64) "-----BEGIN " type "-----\n" b64 "\n-----END " type "-----\n"
#define CERT(b64) BLOCK("CERTIFICATE", b64)

static void check_key_type(const char *type, int base_id, int bits) {
        char *key = NULL, *csr = NULL, *der = NULL;
        size_t n = 0;
        const unsigned char *q;
        BIO *b;
        EVP_PKEY *k, *pub;
        X509_REQ *req;

        assert_int_equal(podcert_generate(type, &key, &csr), 0);
        assert_true(startswith(key, "-----BEGIN PRIVATE KEY-----\n")); /* PKCS#8 */
        b = BIO_new_mem_buf(key, -1);
        k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
        assert_non_null(k);
        assert_int_equal(EVP_PKEY_get_base_id(k), base_id);
        if (bits)
                assert_int_equal(EVP_PKEY_get_bits(k), bits);
        /* the request: DER in base64, empty subject, signed by the key, carrying its public key */
        assert_int_equal(base64_decode(csr, 1 << 20, &der, &n), 0);
        q = (const unsigned char *) der;
        req = d2i_X509_REQ(NULL, &q, (long) n);
        assert_non_null(req);
        assert_int_equal(X509_NAME_entry_count(X509_REQ_get_subject_name(req)), 0);
        pub = X509_REQ_get0_pubkey(req);
        assert_non_null(pub);
        assert_int_equal(EVP_PKEY_eq(pub, k), 1);
        assert_int_equal(X509_REQ_verify(req, pub), 1);
        X509_REQ_free(req);
        EVP_PKEY_free(k);
        BIO_free(b);
        free(der);
        free(key);
        free(csr);
}

static void test_generate(void **state) {
        char *key = NULL, *csr = NULL;

        check_key_type("ECDSAP256", EVP_PKEY_EC, 256);
        check_key_type("ECDSAP384", EVP_PKEY_EC, 384);
        check_key_type("ECDSAP521", EVP_PKEY_EC, 521);
        check_key_type("ED25519", EVP_PKEY_ED25519, 0);
        check_key_type("RSA3072", EVP_PKEY_RSA, 3072);
        assert_int_equal(podcert_generate("RSA2048", &key, &csr), -EINVAL);
        assert_null(key);
        assert_true(podcert_key_type_valid("RSA4096"));
        assert_false(podcert_key_type_valid("ecdsap256"));
}

static void test_clean_chain(void **state) {
        const char *in = "leading text\n" CERT("AQID") "between\n" BLOCK("WHATEVER",
                                                                         "Proc-Type: 4,ENCRYPTED\n\nBAUG") "trailing";
        char *out = NULL;

        assert_int_equal(podcert_clean_chain(in, strlen(in), &out), 0);
        assert_string_equal(out, CERT("AQID") CERT("BAUG"));
        free(out);
        assert_int_equal(podcert_clean_chain("", 0, &out), 0);
        assert_string_equal(out, "");
        free(out);
}

static json_t *pcr(const char *status) {
        json_error_t err;
        json_t *j = json_loads(status, 0, &err);
        if (!j)
                fail_msg("%s: %s", status, err.text);
        return j;
}

static void test_outcome(void **state) {
        struct podcert_issued is = {};
        enum podcert_outcome out;
        const char *reason = NULL, *message = NULL;
        json_t *j;

        j = pcr("{\"status\": {}}");
        assert_int_equal(podcert_pcr_outcome(j, &out, &is, &reason, &message), 0);
        assert_int_equal(out, PODCERT_PENDING);
        json_decref(j);

        j = pcr("{\"status\": {\"conditions\": [{\"type\": \"Issued\", \"status\": \"True\"}], "
                "\"certificateChain\": \"x\\n"
                "-----BEGIN CERTIFICATE-----\\nAQID\\n-----END CERTIFICATE-----\\n\", "
                "\"notBefore\": \"2026-11-28T10:00:00Z\", \"beginRefreshAt\": \"2026-11-28T20:00:00Z\", "
                "\"notAfter\": \"2026-11-29T10:00:00Z\"}}");
        assert_int_equal(podcert_pcr_outcome(j, &out, &is, &reason, &message), 0);
        assert_int_equal(out, PODCERT_ISSUED);
        assert_string_equal(is.chain, CERT("AQID"));
        assert_int_equal(is.begin_refresh_at, 1795896000);
        assert_int_equal(is.not_after, 1795946400);
        podcert_issued_done(&is);
        json_decref(j);

        /* issued without the times, or without a certificate: unusable */
        j = pcr("{\"status\": {\"conditions\": [{\"type\": \"Issued\"}], \"certificateChain\": \"junk\", "
                "\"beginRefreshAt\": \"2026-11-28T20:00:00Z\", \"notAfter\": \"2026-11-29T10:00:00Z\"}}");
        assert_int_equal(podcert_pcr_outcome(j, &out, &is, &reason, &message), -EBADMSG);
        json_decref(j);
        j = pcr("{\"status\": {\"conditions\": [{\"type\": \"Issued\"}], \"certificateChain\": \"\"}}");
        assert_int_equal(podcert_pcr_outcome(j, &out, &is, &reason, &message), -EBADMSG);
        json_decref(j);

        j = pcr("{\"status\": {\"conditions\": [{\"type\": \"Denied\", \"reason\": \"Nope\", \"message\": \"no\"}]}}");
        assert_int_equal(podcert_pcr_outcome(j, &out, &is, &reason, &message), 0);
        assert_int_equal(out, PODCERT_DENIED);
        assert_string_equal(reason, "Nope");
        assert_string_equal(message, "no");
        json_decref(j);
        j = pcr("{\"status\": {\"conditions\": [{\"type\": \"Failed\", \"reason\": \"Broken\"}]}}");
        assert_int_equal(podcert_pcr_outcome(j, &out, &is, &reason, &message), 0);
        assert_int_equal(out, PODCERT_FAILED);
        assert_string_equal(reason, "Broken");
        assert_string_equal(message, "");
        json_decref(j);
}

static void test_refresh_at(void **state) {
        assert_int_equal(podcert_refresh_at(1000, 0), 1000);
        assert_int_equal(podcert_refresh_at(1000, 299), 1299);
        /* the jitter stays under 5 min whatever random value it comes from */
        assert_int_equal(podcert_refresh_at(1000, 300), 1000);
        assert_int_equal(podcert_refresh_at(1000, 2147483647), 1000 + 2147483647 % 300);
        assert_int_equal(podcert_refresh_at(1000, -5), 1000);
}

static void test_selector(void **state) {
        json_t *labels = pcr("{\"a\": \"1\", \"b\": \"2\"}");
        json_t *s;

        assert_false(podcert_selector_matches(NULL, labels)); /* unset: nothing */
        s = pcr("{}");
        assert_true(podcert_selector_matches(s, labels)); /* empty: everything */
        assert_true(podcert_selector_matches(s, NULL));
        json_decref(s);
        s = pcr("{\"matchLabels\": {\"a\": \"1\"}, \"matchExpressions\": [{\"key\": \"b\", \"operator\": \"In\", "
                "\"values\": [\"2\", \"3\"]}, {\"key\": \"c\", \"operator\": \"DoesNotExist\"}, {\"key\": \"c\", "
                "\"operator\": \"NotIn\", \"values\": [\"x\"]}]}");
        assert_true(podcert_selector_matches(s, labels));
        json_decref(s);
        s = pcr("{\"matchLabels\": {\"a\": \"2\"}}");
        assert_false(podcert_selector_matches(s, labels));
        json_decref(s);
        s = pcr("{\"matchExpressions\": [{\"key\": \"c\", \"operator\": \"Exists\"}]}");
        assert_false(podcert_selector_matches(s, labels));
        json_decref(s);
        s = pcr("{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"NotIn\", \"values\": [\"1\"]}]}");
        assert_false(podcert_selector_matches(s, labels));
        json_decref(s);
        json_decref(labels);
}

#define B1 CERT("AQID")
#define B2 CERT("BAUG")
#define B3 CERT("BwgJ")
#define BUNDLE(name, signer, labels, pem)                                                                       \
        "{\"metadata\": {\"name\": \"" name "\", \"labels\": " labels "}, \"spec\": {\"signerName\": \"" signer \
        "\", \"trustBundle\": \"" pem "\"}}"

static void test_trust_anchors(void **state) {
        json_t *all = pcr(
                "[" BUNDLE("plain", "", "{}",
                           "AQID") "," BUNDLE("example.com:s:one", "example.com/s", "{\"k\": \"v\"}",
                                              "x") "," BUNDLE("example.com:s:two", "example.com/s", "{\"k\": \"w\"}",
                                                              "y") "," BUNDLE("other", "other.com/s", "{}", "z") "]");
        json_t *sel = pcr("{}"), *selv = pcr("{\"matchLabels\": {\"k\": \"v\"}}");
        char *out = NULL, *out2 = NULL;
        size_t n = 0;

        /* the PEM inside JSON needs its newlines escaped: put them in place */
        json_string_set(json_object_get(json_object_get(json_array_get(all, 0), "spec"), "trustBundle"), B1);
        json_string_set(json_object_get(json_object_get(json_array_get(all, 1), "spec"), "trustBundle"), B1 B2);
        json_string_set(json_object_get(json_object_get(json_array_get(all, 2), "spec"), "trustBundle"), "text " B2 B3);
        json_string_set(json_object_get(json_object_get(json_array_get(all, 3), "spec"), "trustBundle"), B3);

        assert_int_equal(podcert_trust_anchors(all, "plain", NULL, NULL, &out, &n), 0);
        assert_string_equal(out, B1);
        assert_int_equal(n, strlen(B1));
        free(out);
        assert_int_equal(podcert_trust_anchors(all, "missing", NULL, NULL, &out, &n), -ENOENT);

        /* by signer, all labels: B1 B2 B3 once each, in some order, the same every time */
        assert_int_equal(podcert_trust_anchors(all, NULL, "example.com/s", sel, &out, &n), 0);
        assert_int_equal(strlen(out), 3 * strlen(B1));
        assert_non_null(strstr(out, B1));
        assert_non_null(strstr(out, B2));
        assert_non_null(strstr(out, B3));
        assert_int_equal(podcert_trust_anchors(all, NULL, "example.com/s", sel, &out2, &n), 0);
        assert_string_equal(out, out2);
        free(out);
        free(out2);

        assert_int_equal(podcert_trust_anchors(all, NULL, "example.com/s", selv, &out, &n), 0);
        assert_int_equal(strlen(out), 2 * strlen(B1));
        assert_non_null(strstr(out, B1));
        assert_non_null(strstr(out, B2));
        free(out);

        /* no selector matches nothing; another signer's bundles are not taken */
        assert_int_equal(podcert_trust_anchors(all, NULL, "example.com/s", NULL, &out, &n), -ENOENT);
        assert_int_equal(podcert_trust_anchors(all, NULL, "example.com/none", sel, &out, &n), -ENOENT);
        json_decref(sel);
        json_decref(selv);
        json_decref(all);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_generate), cmocka_unit_test(test_clean_chain),
                cmocka_unit_test(test_outcome),  cmocka_unit_test(test_refresh_at),
                cmocka_unit_test(test_selector), cmocka_unit_test(test_trust_anchors),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
