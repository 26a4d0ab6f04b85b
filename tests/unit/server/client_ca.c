/* SPDX-License-Identifier: Apache-2.0 */
/* The client CA bundle and its reload (server/client_ca.c): a changed bundle replaces the TLS context's verify
 * store and CA names; a broken or missing file keeps the bundle in use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "server/client_ca.h"
#include "server/server-internal.h"

/* a self-signed CA certificate named cn, as PEM (malloc'd) */
static char *make_ca(const char *cn) {
        EVP_PKEY *k = EVP_EC_gen("P-256");
        X509 *x = X509_new();
        BIO *b = BIO_new(BIO_s_mem());
        char *data, *ret;
        long n;

        assert_non_null(k);
        assert_non_null(x);
        X509_set_version(x, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
        X509_gmtime_adj(X509_getm_notBefore(x), 0);
        X509_gmtime_adj(X509_getm_notAfter(x), 3600);
        X509_set_pubkey(x, k);
        X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC, (const unsigned char *) cn, -1, -1, 0);
        X509_set_issuer_name(x, X509_get_subject_name(x));
        assert_true(X509_sign(x, k, EVP_sha256()) > 0);
        assert_int_equal(PEM_write_bio_X509(b, x), 1);
        n = BIO_get_mem_data(b, &data);
        ret = strndup(data, (size_t) n);
        BIO_free(b);
        X509_free(x);
        EVP_PKEY_free(k);
        return ret;
}

static const char *first_name_cn(SSL_CTX *ctx, char *buf, size_t size) {
        STACK_OF(X509_NAME) *names = SSL_CTX_get_client_CA_list(ctx);
        assert_true(sk_X509_NAME_num(names) > 0);
        X509_NAME_get_text_by_NID(sk_X509_NAME_value(names, 0), NID_commonName, buf, (int) size);
        return buf;
}

static void test_parse(void **state) {
        _cleanup_free_ char *a = make_ca("ca-a"), *b = make_ca("ca-b"), *both = NULL;
        X509_STORE *store = NULL;
        STACK_OF(X509_NAME) *names = NULL;
        struct ck_error *err = NULL;
        (void) state;

        assert_int_equal(api_client_ca_parse("", 0, &store, &names, &err), -EINVAL);
        assert_string_equal(ck_error_message(err), "data does not contain any valid RSA or ECDSA certificates");
        assert_null(store);
        ck_error_free(err);
        err = NULL;
        assert_int_equal(api_client_ca_parse("garbage\n", 8, &store, &names, &err), -EINVAL);
        ck_error_free(err);
        err = NULL;

        assert_int_equal(api_client_ca_parse(a, strlen(a), &store, &names, &err), 0);
        assert_int_equal(sk_X509_NAME_num(names), 1);
        X509_STORE_free(store);
        sk_X509_NAME_pop_free(names, X509_NAME_free);

        assert_true(asprintf(&both, "%s%s", a, b) > 0);
        assert_int_equal(api_client_ca_parse(both, strlen(both), &store, &names, &err), 0);
        assert_int_equal(sk_X509_NAME_num(names), 2);
        X509_STORE_free(store);
        sk_X509_NAME_pop_free(names, X509_NAME_free);

        /* a good certificate followed by a broken block is refused whole */
        both[strlen(a) + 40] = '!';
        assert_int_equal(api_client_ca_parse(both, strlen(both), &store, &names, &err), -EINVAL);
        ck_error_free(err);
}

static void write_file(const char *path, const char *data) {
        _cleanup_free_ char *tmp = NULL;
        FILE *f;

        /* a new inode each time, as a rename over the file (the identity changes even within one timestamp) */
        assert_true(asprintf(&tmp, "%s.tmp", path) > 0);
        f = fopen(tmp, "we");
        assert_non_null(f);
        fputs(data, f);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, path), 0);
}

static void test_reload(void **state) {
        _cleanup_free_ char *a = make_ca("ca-a"), *b = make_ca("ca-b");
        char dir[] = "/tmp/ckubelet-client-ca-XXXXXX", path[64], cn[64];
        struct kubelet_options o = {};
        struct api_server s = {};
        X509_STORE *before;
        (void) state;

        assert_non_null(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/ca.crt", dir);
        o.client_ca_file = path;
        s.o = &o;
        s.base = event_base_new();
        s.ssl_ctx = SSL_CTX_new(TLS_server_method());

        /* a missing or empty file at start is an error, as upstream */
        assert_int_equal(api_client_ca_setup(&s, NULL), -EINVAL);
        write_file(path, "");
        assert_int_equal(api_client_ca_setup(&s, NULL), -EINVAL);

        write_file(path, a);
        assert_int_equal(api_client_ca_setup(&s, NULL), 0);
        assert_string_equal(first_name_cn(s.ssl_ctx, cn, sizeof(cn)), "ca-a");
        before = SSL_CTX_get_cert_store(s.ssl_ctx);

        /* unchanged: nothing happens */
        api_client_ca_check(&s);
        assert_ptr_equal(SSL_CTX_get_cert_store(s.ssl_ctx), before);

        /* a new bundle replaces the store and the names */
        write_file(path, b);
        api_client_ca_check(&s);
        assert_ptr_not_equal(SSL_CTX_get_cert_store(s.ssl_ctx), before);
        assert_string_equal(first_name_cn(s.ssl_ctx, cn, sizeof(cn)), "ca-b");
        before = SSL_CTX_get_cert_store(s.ssl_ctx);

        /* a broken file keeps it, and so does a missing one */
        write_file(path, "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n");
        api_client_ca_check(&s);
        assert_ptr_equal(SSL_CTX_get_cert_store(s.ssl_ctx), before);
        assert_string_equal(first_name_cn(s.ssl_ctx, cn, sizeof(cn)), "ca-b");
        assert_int_equal(unlink(path), 0);
        api_client_ca_check(&s);
        assert_ptr_equal(SSL_CTX_get_cert_store(s.ssl_ctx), before);

        /* and a good one after that is taken */
        write_file(path, a);
        api_client_ca_check(&s);
        assert_string_equal(first_name_cn(s.ssl_ctx, cn, sizeof(cn)), "ca-a");

        api_client_ca_done(&s);
        SSL_CTX_free(s.ssl_ctx);
        event_base_free(s.base);
        unlink(path);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_reload),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
