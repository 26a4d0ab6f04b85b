/* SPDX-License-Identifier: Apache-2.0 */
/* The certificate store: <prefix>-<timestamp>.pem files (0600) and the <prefix>-current.pem link. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "certificate/store.h"

static char tmpdir[] = "/tmp/ckubelet-store-XXXXXX";

static int setup_dir(void **state) {
        return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        return system(cmd) == 0 ? 0 : -1;
}

/* a new key and a self-signed certificate for CN, valid for an hour: *ret_cert, *ret_key */
static void make_pair(const char *cn, char **ret_cert, char **ret_key) {
        EVP_PKEY *key;
        X509 *x = X509_new();
        BIO *kb, *cb = BIO_new(BIO_s_mem());
        char *data;
        long n;

        assert_int_equal(cert_key_generate(ret_key), 0);
        kb = BIO_new_mem_buf(*ret_key, -1);
        key = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
        X509_set_version(x, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(x), rand());
        X509_gmtime_adj(X509_getm_notBefore(x), 0);
        X509_gmtime_adj(X509_getm_notAfter(x), 3600);
        X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_UTF8, (const unsigned char *) cn, -1, -1,
                                   0);
        X509_set_issuer_name(x, X509_get_subject_name(x));
        X509_set_pubkey(x, key);
        assert_true(X509_sign(x, key, EVP_sha256()) > 0);
        PEM_write_bio_X509(cb, x);
        n = BIO_get_mem_data(cb, &data);
        *ret_cert = strndup(data, (size_t) n);
        X509_free(x);
        EVP_PKEY_free(key);
        BIO_free(kb);
        BIO_free(cb);
}

static char *sub(const char *name) {
        char *p;
        assert_true(asprintf(&p, "%s/%s", tmpdir, name) > 0);
        return p;
}

static void write_file(const char *path, const char *content) {
        FILE *f = fopen(path, "we");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static void test_update_and_load(void **state) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ char *dir = sub("pki"), *c1 = NULL, *k1 = NULL, *c2 = NULL, *k2 = NULL;
        _cleanup_free_ char *current = NULL, *first = NULL, *second = NULL;
        struct cert_store s;
        struct cert_pair p = {};
        struct stat st;
        char link[4096];
        ssize_t n;

        assert_int_equal(cert_store_init(&s, dir, "kubelet-client", NULL, NULL), 0);
        /* nothing yet: -ENOENT, not an error */
        assert_int_equal(cert_store_load(&s, &p, &err), -ENOENT);
        err = ck_error_free(err);

        make_pair("system:node:a", &c1, &k1);
        /* 2001-09-09 01:46:40 UTC */
        assert_int_equal(cert_store_update(&s, c1, k1, 1000000000ULL * 1000000, &p, &err), 0);
        assert_string_equal(p.info.common_name, "system:node:a");
        first = strdup(p.path);
        cert_pair_done(&p);
        assert_true(strstr(first, "/pki/kubelet-client-2001-09-") != NULL);
        assert_int_equal(stat(first, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        current = cert_store_current_path(&s);
        assert_int_equal(lstat(current, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        n = readlink(current, link, sizeof(link) - 1);
        assert_true(n > 0);
        link[n] = '\0';
        assert_string_equal(link, first); /* absolute, as upstream */

        assert_int_equal(cert_store_load(&s, &p, &err), 0);
        assert_string_equal(p.info.common_name, "system:node:a");
        assert_string_equal(p.path, current);
        assert_non_null(strstr(p.key_pem, "PRIVATE KEY"));
        cert_pair_done(&p);

        /* a newer pair moves the link; the old file stays */
        make_pair("system:node:b", &c2, &k2);
        assert_int_equal(cert_store_update(&s, c2, k2, 1000000001ULL * 1000000, &p, &err), 0);
        second = strdup(p.path);
        cert_pair_done(&p);
        assert_string_not_equal(first, second);
        assert_int_equal(access(first, F_OK), 0);
        assert_int_equal(cert_store_load(&s, &p, &err), 0);
        assert_string_equal(p.info.common_name, "system:node:b");
        cert_pair_done(&p);

        /* a certificate with the wrong key is refused, and nothing changes */
        assert_int_equal(cert_store_update(&s, c1, k2, 1000000002ULL * 1000000, NULL, &err), -EINVAL);
        assert_string_equal(ck_error_message(err),
                            "invalid certificate data: the private key does not match the certificate");
        err = ck_error_free(err);
        assert_int_equal(cert_store_load(&s, &p, &err), 0);
        assert_string_equal(p.info.common_name, "system:node:b");
        cert_pair_done(&p);

        /* corrupt current pair: an error naming the file */
        write_file(second, "garbage\n");
        assert_int_equal(cert_store_load(&s, &p, &err), -EINVAL);
        assert_non_null(strstr(ck_error_message(err), "could not convert data from"));
        assert_non_null(strstr(ck_error_message(err), "kubelet-client-current.pem"));
        assert_non_null(strstr(ck_error_message(err), "no certificate in it"));
        err = ck_error_free(err);
        /* an update repairs it */
        assert_int_equal(cert_store_update(&s, c1, k1, 1000000003ULL * 1000000, NULL, &err), 0);
        assert_int_equal(cert_store_load(&s, &p, &err), 0);
        assert_string_equal(p.info.common_name, "system:node:a");
        cert_pair_done(&p);

        /* a regular file in place of the link is moved aside */
        assert_int_equal(unlink(current), 0);
        write_file(current, "not a link\n");
        assert_int_equal(cert_store_update(&s, c2, k2, 1000000004ULL * 1000000, NULL, &err), 0);
        assert_int_equal(lstat(current, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        cert_store_done(&s);
}

static void test_recover_and_fallbacks(void **state) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ char *dir = sub("pki2"), *c = NULL, *k = NULL, *target = NULL, *updated = NULL;
        _cleanup_free_ char *crt = NULL, *key = NULL, *current = NULL;
        struct cert_store s;
        struct cert_pair p = {};

        assert_int_equal(mkdir(dir, 0700), 0);
        make_pair("system:node:c", &c, &k);
        /* the fallback pair given by the caller (a kubeconfig's files) */
        crt = sub("pki2/given.crt");
        key = sub("pki2/given.key");
        write_file(crt, c);
        write_file(key, k);
        assert_int_equal(cert_store_init(&s, dir, "kubelet-client", crt, key), 0);
        assert_int_equal(cert_store_load(&s, &p, &err), 0);
        assert_string_equal(p.info.common_name, "system:node:c");
        assert_non_null(strstr(p.path, "given.crt, "));
        cert_pair_done(&p);
        cert_store_done(&s);

        /* <prefix>.crt and <prefix>.key */
        free(crt);
        free(key);
        crt = sub("pki2/kubelet-server.crt");
        key = sub("pki2/kubelet-server.key");
        write_file(crt, c);
        write_file(key, k);
        assert_int_equal(cert_store_init(&s, dir, "kubelet-server", NULL, NULL), 0);
        assert_int_equal(cert_store_load(&s, &p, &err), 0);
        assert_non_null(strstr(p.path, "kubelet-server.crt, "));
        cert_pair_done(&p);

        /* an update interrupted after the "updated" link was made: completed by the next load */
        target = sub("pki2/kubelet-server-x.pem");
        updated = sub("pki2/kubelet-server-updated.pem");
        {
                _cleanup_free_ char *both = NULL;
                assert_true(asprintf(&both, "%s%s", c, k) > 0);
                write_file(target, both);
        }
        assert_int_equal(symlink(target, updated), 0);
        assert_int_equal(cert_store_load(&s, &p, &err), 0);
        current = cert_store_current_path(&s);
        assert_string_equal(p.path, current);
        assert_int_equal(access(updated, F_OK), -1);
        cert_pair_done(&p);
        cert_store_done(&s);
}

static void test_unwritable(void **state) {
        _cleanup_ck_error_ struct ck_error *err = NULL;
        _cleanup_free_ char *file = sub("a-file"), *dir = NULL, *c = NULL, *k = NULL;
        struct cert_store s;

        write_file(file, "x");
        assert_true(asprintf(&dir, "%s/pki", file) > 0);
        make_pair("system:node:d", &c, &k);
        assert_int_equal(cert_store_init(&s, dir, "kubelet-client", NULL, NULL), 0);
        assert_true(cert_store_update(&s, c, k, 1000000000ULL * 1000000, NULL, &err) < 0);
        assert_non_null(strstr(ck_error_message(err), "could not create directory"));
        assert_non_null(strstr(ck_error_message(err), "/a-file/pki"));
        cert_store_done(&s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_update_and_load),
                cmocka_unit_test(test_recover_and_fallbacks),
                cmocka_unit_test(test_unwritable),
        };
        return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
