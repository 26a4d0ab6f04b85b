/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "basic/base64.h"
#include "basic/error.h"
#include "credentialprovider/keyring.h"

static void test_base64(void **state) {
        char *out = NULL;
        size_t n = 0;

        assert_int_equal(base64_decode("dXNlcjpwYXNz", 1 << 20, &out, &n), 0); /* user:pass */
        assert_string_equal(out, "user:pass");
        assert_int_equal(n, 9);
        free(out);
        assert_int_equal(base64_decode("YQ==", 1 << 20, &out, &n), 0);
        assert_string_equal(out, "a");
        free(out);
        out = NULL;
        assert_int_equal(base64_decode("YQ", 1 << 20, &out, &n), -EINVAL); /* Go's StdEncoding wants the padding */
        assert_int_equal(base64_decode("a b", 1 << 20, &out, &n), -EINVAL);
        assert_null(out);
}

static void test_image_repository(void **state) {
        static const char *const cases[][2] = {
                { "busybox", "docker.io/library/busybox" },
                { "busybox:1.36", "docker.io/library/busybox" },
                { "library/busybox@sha256:abc", "docker.io/library/busybox" },
                { "127.0.0.1:5000/busybox:pulltest", "127.0.0.1:5000/busybox" },
                { "localhost/a/b", "localhost/a/b" },
                { "registry.example.com/team/app:v1", "registry.example.com/team/app" },
                { "registry.example.com:443/app", "registry.example.com:443/app" },
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *r = cred_image_repository(cases[i][0]);
                assert_string_equal(r, cases[i][1]);
                free(r);
        }
}

static void test_url_match(void **state) {
        assert_int_equal(cred_url_match("registry.example.com", "registry.example.com/app"), 1);
        assert_int_equal(cred_url_match("*.example.com", "registry.example.com/app"), 1);
        assert_int_equal(cred_url_match("*.example.com", "example.com/app"), 0); /* part count differs */
        assert_int_equal(cred_url_match("*.example.com", "a.b.example.com/app"), 0);
        assert_int_equal(cred_url_match("*.*.com", "a.example.com/app"), 1);
        assert_int_equal(cred_url_match("registry.example.com:5000", "registry.example.com/app"), 0); /* port */
        assert_int_equal(cred_url_match("registry.example.com:5000", "registry.example.com:5000/app"), 1);
        assert_int_equal(cred_url_match("127.0.0.1:5000", "127.0.0.1:5000/busybox"), 1);
        assert_int_equal(cred_url_match("127.0.0.1:5001", "127.0.0.1:5000/busybox"), 0);
        assert_int_equal(cred_url_match("registry.example.com/team", "registry.example.com/team/app"), 1); /* prefix */
        assert_int_equal(cred_url_match("registry.example.com/team", "registry.example.com/other/app"), 0);
        assert_int_equal(cred_url_match("registry.*.com", "registry.example.com/x"), 1);
}

static json_t *secret(const char *type, const char *field, const char *config) {
        /* base64 of config through a tiny encoder */
        static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t n = strlen(config), o = 0;
        char *b = malloc(n * 4 / 3 + 5);
        json_t *s;

        for (size_t i = 0; i < n; i += 3) {
                unsigned v = (unsigned char) config[i] << 16;
                if (i + 1 < n)
                        v |= (unsigned char) config[i + 1] << 8;
                if (i + 2 < n)
                        v |= (unsigned char) config[i + 2];
                b[o++] = tbl[(v >> 18) & 63];
                b[o++] = tbl[(v >> 12) & 63];
                b[o++] = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
                b[o++] = i + 2 < n ? tbl[v & 63] : '=';
        }
        b[o] = '\0';
        s = json_pack("{s:s, s:{s:s}}", "type", type, "data", field, b);
        free(b);
        return s;
}

static void test_keyring(void **state) {
        struct cred_keyring k = {};
        const struct cred_auth **got = NULL;
        size_t n = 0;
        struct ck_error *err = NULL;
        json_t *s1 = secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson",
                            "{\"auths\": {\"https://127.0.0.1:5000/v2/\": {\"auth\": \"dXNlcjpwYXNz\"},"
                            " \"*.example.com\": {\"username\": \"wild\", \"password\": \"card\"},"
                            " \"registry.example.com/team\": {\"username\": \"team\", \"password\": \"t\"},"
                            " \"https://index.docker.io/v1/\": {\"username\": \"hub\", \"password\": \"h\"}}}");
        json_t *s2 = secret("kubernetes.io/dockercfg", ".dockercfg",
                            "{\"127.0.0.1:5000\": {\"username\": \"other\", \"password\": \"o\"}}");
        json_t *bad_type = json_pack("{s:s, s:{}}", "type", "Opaque", "data");
        json_t *bad_auth = secret("kubernetes.io/dockerconfigjson", ".dockerconfigjson",
                                  "{\"auths\": {\"r.io\": {\"auth\": \"bm9jb2xvbg==\"}}}"); /* "nocolon" */

        assert_int_equal(cred_keyring_add_secret(&k, s1, &err), 0);
        assert_int_equal(cred_keyring_add_secret(&k, s2, &err), 0);
        assert_int_equal(cred_keyring_add_secret(&k, bad_type, &err), -EINVAL);
        assert_non_null(strstr(ck_error_message(err), "kubernetes.io/dockerconfigjson"));
        ck_error_free(err);
        err = NULL;
        assert_int_equal(cred_keyring_add_secret(&k, bad_auth, &err), -EINVAL);
        assert_non_null(strstr(ck_error_message(err), "base64(username:password)"));
        ck_error_free(err);

        /* both credentials for the registry, in turn */
        assert_int_equal(cred_keyring_lookup(&k, "127.0.0.1:5000/busybox:1", &got, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(got[0]->key, "127.0.0.1:5000");
        assert_true((!strcmp(got[0]->username, "user") && !strcmp(got[0]->password, "pass")) ||
                    !strcmp(got[0]->username, "other"));
        assert_string_not_equal(got[0]->username, got[1]->username);
        free(got);
        /* path prefix is more specific than the wildcard, and sorts first */
        assert_int_equal(cred_keyring_lookup(&k, "registry.example.com/team/app:v1", &got, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(got[0]->username, "team");
        assert_string_equal(got[1]->username, "wild");
        free(got);
        assert_int_equal(cred_keyring_lookup(&k, "registry.example.com/other/app", &got, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(got[0]->username, "wild");
        free(got);
        /* Docker Hub images use the index.docker.io credentials */
        assert_int_equal(cred_keyring_lookup(&k, "busybox", &got, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(got[0]->username, "hub");
        free(got);
        /* nothing for another registry */
        assert_int_equal(cred_keyring_lookup(&k, "quay.io/x/y", &got, &n), 0);
        assert_int_equal(n, 0);
        assert_null(got);

        cred_keyring_done(&k);
        cred_keyring_done(NULL);
        json_decref(s1);
        json_decref(s2);
        json_decref(bad_type);
        json_decref(bad_auth);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_base64),
                cmocka_unit_test(test_image_repository),
                cmocka_unit_test(test_url_match),
                cmocka_unit_test(test_keyring),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
