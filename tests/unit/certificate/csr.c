/* SPDX-License-Identifier: Apache-2.0 */
/* Keys, certificate requests, the CSR object and its states, certificate facts and the rotation window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "basic/error.h"
#include "basic/base64.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "certificate/csr.h"
#include "certificate/manager.h"

/* a fixed key, so that the digested name can be checked against a value computed outside (Python's hashlib
 * sha512_256 and base64.urlsafe_b64encode over `openssl pkey -pubout -outform DER`) */
static const char fixed_key[] = "-----BEGIN EC PRIVATE KEY-----\n"
                                "MHcCAQEEINY8o0k5uI0v97kBgV9tIRw9IfIbomDvsH/g0SFEUVS1oAoGCCqGSM49\n"
                                "AwEHoUQDQgAEbPUjLvf8ATxVPIp0WBdlOGfEUCfim+b6Gr8uPk1X1BtixAb32rjR\n"
                                "RFhEGCSRr3FZtJEqIWIQH1bagPaXKCjoOQ==\n"
                                "-----END EC PRIVATE KEY-----\n";

static struct cert_template client_template(const char *node) {
        struct cert_template t = {};

        assert_true(asprintf(&t.common_name, "system:node:%s", node) > 0);
        assert_int_equal(strv_extend(&t.organizations, "system:nodes"), 0);
        return t;
}

static void test_key(void **state) {
        _cleanup_free_ char *pem = NULL;

        assert_int_equal(cert_key_generate(&pem), 0);
        assert_true(startswith(pem, "-----BEGIN EC PRIVATE KEY-----\n"));
        assert_true(cert_key_valid(pem));
        assert_true(cert_key_valid(fixed_key));
        assert_false(cert_key_valid("garbage"));
        assert_false(cert_key_valid(""));
        assert_false(cert_key_valid(NULL));
}

static X509_REQ *read_req(const char *pem) {
        BIO *b = BIO_new_mem_buf(pem, -1);
        X509_REQ *r = PEM_read_bio_X509_REQ(b, NULL, NULL, NULL);

        BIO_free(b);
        assert_non_null(r);
        return r;
}

static void test_request_client(void **state) {
        struct cert_template t = client_template("worker-1");
        _cleanup_free_ char *req = NULL, *other = NULL, *subject = NULL;
        X509_REQ *x;
        EVP_PKEY *pub;
        STACK_OF(X509_EXTENSION) * exts;

        assert_int_equal(cert_request_create(fixed_key, &t, &req, NULL), 0);
        assert_true(startswith(req, "-----BEGIN CERTIFICATE REQUEST-----\n"));
        x = read_req(req);
        pub = X509_REQ_get0_pubkey(x);
        assert_int_equal(X509_REQ_verify(x, pub), 1);
        /* subject in Go's RDN order: O first, then CN */
        subject = X509_NAME_oneline(X509_REQ_get_subject_name(x), NULL, 0);
        assert_string_equal(subject, "/O=system:nodes/CN=system:node:worker-1");
        /* no SANs in a client request */
        exts = X509_REQ_get_extensions(x);
        assert_int_equal(sk_X509_EXTENSION_num(exts), 0);
        sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
        X509_REQ_free(x);

        assert_true(cert_request_matches_key(req, fixed_key));
        assert_int_equal(cert_key_generate(&other), 0);
        assert_false(cert_request_matches_key(req, other));
        assert_false(cert_request_matches_key("junk", fixed_key));
        cert_template_done(&t);
}

static void test_request_serving(void **state) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct cert_template t = client_template("worker-1");
        _cleanup_free_ char *req = NULL;
        X509_REQ *x;
        STACK_OF(X509_EXTENSION) * exts;
        GENERAL_NAMES *sans;
        char buf[64];

        assert_int_equal(strv_extend(&t.dns_names, "worker-1"), 0);
        assert_int_equal(strv_extend(&t.ip_addresses, "10.1.2.3"), 0);
        assert_int_equal(strv_extend(&t.ip_addresses, "fd00::1"), 0);
        assert_int_equal(cert_request_create(fixed_key, &t, &req, &err), 0);
        x = read_req(req);
        exts = X509_REQ_get_extensions(x);
        assert_int_equal(sk_X509_EXTENSION_num(exts), 1);
        sans = X509V3_EXT_d2i(sk_X509_EXTENSION_value(exts, 0));
        assert_int_equal(sk_GENERAL_NAME_num(sans), 3);
        assert_int_equal(sk_GENERAL_NAME_value(sans, 0)->type, GEN_DNS);
        assert_int_equal(sk_GENERAL_NAME_value(sans, 1)->type, GEN_IPADD);
        /* an IPv4 address is 4 bytes (Go's To4) */
        assert_int_equal(ASN1_STRING_length(sk_GENERAL_NAME_value(sans, 1)->d.iPAddress), 4);
        assert_int_equal(ASN1_STRING_length(sk_GENERAL_NAME_value(sans, 2)->d.iPAddress), 16);
        snprintf(buf, sizeof(buf), "%.*s", ASN1_STRING_length(sk_GENERAL_NAME_value(sans, 0)->d.dNSName),
                 ASN1_STRING_get0_data(sk_GENERAL_NAME_value(sans, 0)->d.dNSName));
        assert_string_equal(buf, "worker-1");
        GENERAL_NAMES_free(sans);
        sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
        X509_REQ_free(x);

        /* a bad address is an error naming it */
        free(req);
        req = NULL;
        assert_int_equal(strv_extend(&t.ip_addresses, "300.1.1.1"), 0);
        assert_int_equal(cert_request_create(fixed_key, &t, &req, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "invalid IP address \"300.1.1.1\"");
        err = ck_error_free(err);
        assert_int_equal(cert_request_create("nope", &t, &req, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "invalid private key for certificate request");
        cert_template_done(&t);
}

static void test_digested_name(void **state) {
        struct cert_template t = client_template("worker-1");
        _cleanup_free_ char *name = NULL, *again = NULL, *other = NULL;

        assert_int_equal(cert_request_digested_name(fixed_key, &t, cert_client_usages, &name), 0);
        assert_string_equal(name, "node-csr-qGKF4mS674aNDoVJmEbMWu9cUCMSdkPg4WEHj8l6N3c");
        assert_int_equal(cert_request_digested_name(fixed_key, &t, cert_client_usages, &again), 0);
        assert_string_equal(name, again);
        /* another usage list is another name */
        assert_int_equal(cert_request_digested_name(fixed_key, &t, cert_serving_usages, &other), 0);
        assert_string_not_equal(name, other);
        cert_template_done(&t);
}

static void test_csr_object(void **state) {
        json_t *o = cert_csr_object(NULL,
                                    "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n",
                                    CERT_SIGNER_KUBELET_CLIENT, cert_client_usages);
        json_t *named;
        _cleanup_free_ char *dump = NULL, *pem = NULL;
        size_t size;

        assert_non_null(o);
        dump = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
        assert_string_equal(
                dump,
                "{\"apiVersion\":\"certificates.k8s.io/v1\",\"kind\":\"CertificateSigningRequest\","
                "\"metadata\":{\"generateName\":\"csr-\"},\"spec\":{\"request\":"
                "\"LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KQUFBQQotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K\","
                "\"signerName\":\"kubernetes.io/kube-apiserver-client-kubelet\",\"usages\":"
                "[\"digital signature\",\"key encipherment\",\"client auth\"]}}");
        /* the request round-trips */
        assert_int_equal(base64_decode(json_string_value(json_object_get(json_object_get(o, "spec"), "request")), 4096,
                                       &pem, &size),
                         0);
        assert_true(startswith(pem, "-----BEGIN CERTIFICATE REQUEST-----"));
        json_decref(o);
        named = cert_csr_object("node-csr-x", "R", CERT_SIGNER_KUBELET_SERVING, cert_serving_usages);
        assert_string_equal(json_string_value(json_object_get(json_object_get(named, "metadata"), "name")),
                            "node-csr-x");
        json_decref(named);
}

static void test_csr_state(void **state) {
        static const struct {
                const char *json;
                enum cert_csr_state want;
                const char *reason;
        } cases[] = {
                { "{}", CERT_CSR_PENDING, "" },
                { "{\"status\":{}}", CERT_CSR_PENDING, "" },
                { "{\"status\":{\"conditions\":[{\"type\":\"Approved\",\"reason\":\"AutoApproved\"}]}}",
                  CERT_CSR_APPROVED, "AutoApproved" },
                { "{\"status\":{\"conditions\":[{\"type\":\"Approved\",\"reason\":\"AutoApproved\"}],"
                  "\"certificate\":\"aGVsbG8=\"}}",
                  CERT_CSR_ISSUED, "AutoApproved" },
                { "{\"status\":{\"conditions\":[{\"type\":\"Denied\",\"reason\":\"NotMine\",\"message\":\"go away\"}]}}",
                  CERT_CSR_DENIED, "NotMine" },
                /* Denied wins over Approved, wherever it is */
                { "{\"status\":{\"conditions\":[{\"type\":\"Approved\"},{\"type\":\"Denied\",\"reason\":\"R\"}],"
                  "\"certificate\":\"aGVsbG8=\"}}",
                  CERT_CSR_DENIED, "R" },
                { "{\"status\":{\"conditions\":[{\"type\":\"Approved\"},{\"type\":\"Failed\",\"reason\":\"SignerError\"}]}}",
                  CERT_CSR_FAILED, "SignerError" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_t *o = json_loads(cases[i].json, 0, NULL);
                enum cert_csr_state s;
                const char *reason = NULL, *message = NULL;
                char *cert = NULL;

                assert_non_null(o);
                assert_int_equal(cert_csr_state(o, &s, &reason, &message, &cert), 0);
                if (s != cases[i].want)
                        fail_msg("case %zu: state %d, want %d", i, (int) s, (int) cases[i].want);
                assert_string_equal(reason, cases[i].reason);
                if (s == CERT_CSR_ISSUED)
                        assert_string_equal(cert, "hello");
                else
                        assert_null(cert);
                free(cert);
                json_decref(o);
        }
        {
                json_t *o = json_loads("{\"status\":{\"conditions\":[{\"type\":\"Approved\"}],\"certificate\":\"!!\"}}",
                                       0, NULL);
                enum cert_csr_state s;
                char *cert = NULL;
                assert_int_equal(cert_csr_state(o, &s, NULL, NULL, &cert), -EINVAL);
                json_decref(o);
        }
}

/* a certificate for fixed_key, signed by itself, valid from nb to na (Unix seconds), with the template's names */
static char *make_cert(const struct cert_template *t, int64_t nb, int64_t na, bool with_key) {
        BIO *kb = BIO_new_mem_buf(fixed_key, -1), *out = BIO_new(BIO_s_mem());
        EVP_PKEY *key = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
        _cleanup_free_ char *req_pem = NULL;
        X509_REQ *req;
        X509 *x = X509_new();
        STACK_OF(X509_EXTENSION) * exts;
        char *data, *s;
        long n;

        assert_int_equal(cert_request_create(fixed_key, t, &req_pem, NULL), 0);
        req = read_req(req_pem);
        X509_set_version(x, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(x), 0x1234);
        ASN1_TIME_set(X509_getm_notBefore(x), (time_t) nb);
        ASN1_TIME_set(X509_getm_notAfter(x), (time_t) na);
        X509_set_subject_name(x, X509_REQ_get_subject_name(req));
        X509_set_issuer_name(x, X509_REQ_get_subject_name(req));
        X509_set_pubkey(x, key);
        exts = X509_REQ_get_extensions(req);
        for (int i = 0; i < sk_X509_EXTENSION_num(exts); i++)
                X509_add_ext(x, sk_X509_EXTENSION_value(exts, i), -1);
        sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
        assert_true(X509_sign(x, key, EVP_sha256()) > 0);
        PEM_write_bio_X509(out, x);
        if (with_key)
                PEM_write_bio_PrivateKey_traditional(out, key, NULL, NULL, 0, NULL, NULL);
        n = BIO_get_mem_data(out, &data);
        s = strndup(data, (size_t) n);
        X509_free(x);
        X509_REQ_free(req);
        EVP_PKEY_free(key);
        BIO_free(kb);
        BIO_free(out);
        return s;
}

static void test_cert_info_and_pair(void **state) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        struct cert_template t = client_template("worker-1");
        struct cert_info info = {};
        _cleanup_free_ char *pem = NULL, *pair = NULL, *cert = NULL, *key = NULL, *other = NULL;
        _cleanup_free_ char *mismatched = NULL;

        assert_int_equal(strv_extend(&t.dns_names, "worker-1"), 0);
        assert_int_equal(strv_extend(&t.ip_addresses, "10.1.2.3"), 0);
        pem = make_cert(&t, 1700000000, 1700003600, false);

        /* a pair file: certificate then key; what the leaf says */
        pair = make_cert(&t, 1700000000, 1700003600, true);
        assert_int_equal(cert_pair_parse(pair, strlen(pair), &cert, &key, &info, &err), 0);
        assert_true(startswith(cert, "-----BEGIN CERTIFICATE-----"));
        assert_null(strstr(cert, "PRIVATE KEY"));
        assert_true(startswith(key, "-----BEGIN EC PRIVATE KEY-----"));
        assert_int_equal(info.not_before_usec, 1700000000LL * 1000000);
        assert_int_equal(info.not_after_usec, 1700003600LL * 1000000);
        assert_string_equal(info.common_name, "system:node:worker-1");
        assert_string_equal(info.organizations[0], "system:nodes");
        assert_string_equal(info.dns_names[0], "worker-1");
        assert_string_equal(info.ip_addresses[0], "10.1.2.3");
        assert_string_equal(info.serial, "1234");
        assert_true(cert_satisfies_template(&info, &t));
        cert_info_done(&info);

        assert_int_equal(cert_pair_parse("junk", 4, NULL, NULL, NULL, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "no certificate in it");
        err = ck_error_free(err);
        /* no key, a key of another certificate, no certificate */
        assert_int_equal(cert_pair_parse(pem, strlen(pem), NULL, NULL, NULL, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "no private key in it");
        assert_int_equal(cert_key_generate(&other), 0);
        assert_true(asprintf(&mismatched, "%s%s", pem, other) > 0);
        assert_int_equal(cert_pair_parse(mismatched, strlen(mismatched), NULL, NULL, NULL, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "the private key does not match the certificate");
        assert_int_equal(cert_pair_parse(other, strlen(other), NULL, NULL, NULL, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "no certificate in it");
        cert_template_done(&t);
}

static void test_template_satisfaction(void **state) {
        struct cert_template t = client_template("worker-1");
        struct cert_info i = {};

        assert_true(asprintf(&i.common_name, "system:node:worker-1") > 0);
        assert_int_equal(strv_extend(&i.organizations, "system:nodes"), 0);
        assert_int_equal(strv_extend(&i.ip_addresses, "10.0.0.1"), 0);
        assert_true(cert_satisfies_template(&i, &t)); /* extra names do not matter */
        assert_int_equal(strv_extend(&t.ip_addresses, "10.0.0.2"), 0);
        assert_false(cert_satisfies_template(&i, &t)); /* a missing one does */
        strv_free(t.ip_addresses);
        t.ip_addresses = NULL;
        free(t.common_name);
        t.common_name = strdup("system:node:worker-2");
        assert_false(cert_satisfies_template(&i, &t));
        cert_info_done(&i);
        cert_template_done(&t);
}

static void test_rotation_deadline(void **state) {
        struct cert_info i = { .not_before_usec = 1000000000, .not_after_usec = 1000000000 + 100000000 };
        int64_t lo = cert_rotation_deadline(&i, 0), hi = cert_rotation_deadline(&i, 0.999999);

        /* 70% to 90% of the lifetime after notBefore */
        assert_int_equal(lo, 1000000000 + 70000000);
        assert_true(hi <= 1000000000 + 90000000 && hi > 1000000000 + 89999000);
        assert_int_equal(cert_rotation_deadline(&i, 0.5), 1000000000 + 80000000);
        /* out-of-range jitter is clamped */
        assert_int_equal(cert_rotation_deadline(&i, -1), lo);
        assert_true(cert_rotation_deadline(&i, 5) <= 1000000000 + 90000000);
        for (int k = 0; k < 1000; k++) {
                int64_t d = cert_rotation_deadline(&i, (double) rand() / ((double) RAND_MAX + 1));
                assert_true(d >= lo && d < 1000000000 + 90000000);
        }
}

static void test_backoff(void **state) {
        /* upstream's rotation loop: 2 s doubling, at most 32 s, 10% jitter */
        assert_int_equal(cert_backoff_usec(1, 0), 2000000);
        assert_int_equal(cert_backoff_usec(2, 0), 4000000);
        assert_int_equal(cert_backoff_usec(3, 0), 8000000);
        assert_int_equal(cert_backoff_usec(5, 0), 32000000);
        assert_int_equal(cert_backoff_usec(6, 0), 32000000);
        assert_int_equal(cert_backoff_usec(100, 0), 32000000);
        assert_int_equal(cert_backoff_usec(1, 0.5), 2100000);
        assert_true(cert_backoff_usec(5, 0.999) < 35200000);
        assert_int_equal(cert_backoff_usec(1, -3), 2000000);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_key),
                cmocka_unit_test(test_request_client),
                cmocka_unit_test(test_request_serving),
                cmocka_unit_test(test_digested_name),
                cmocka_unit_test(test_csr_object),
                cmocka_unit_test(test_csr_state),
                cmocka_unit_test(test_cert_info_and_pair),
                cmocka_unit_test(test_template_satisfaction),
                cmocka_unit_test(test_rotation_deadline),
                cmocka_unit_test(test_backoff),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
