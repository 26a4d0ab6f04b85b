/* SPDX-License-Identifier: Apache-2.0 */
/* kube_config_load(): kubeconfigs written to a temporary directory, in YAML and JSON: the current context's
 * cluster and user, relative paths, *-data fields, token precedence, and errors that name the file and
 * the field without leaking secrets. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/string.h"
#include "client/client-internal.h"

#define CA_PEM "-----BEGIN CERTIFICATE-----\nMIIBCgKCAQEAcafake\n-----END CERTIFICATE-----\n"
#define CERT_PEM "-----BEGIN CERTIFICATE-----\nMIIBCgKCAQEAclientfake\n-----END CERTIFICATE-----\n"
#define KEY_PEM "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n"

struct ctx {
        char dir[64];
        char path[128]; /* dir/config */
        struct kube_config cfg;
        struct ck_error *error;
};

static int remove_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(p);
}

static int setup(void **state) {
        struct ctx *t = calloc(1, sizeof(*t));

        if (!t)
                return -1;
        snprintf(t->dir, sizeof(t->dir), "/tmp/ckubelet-kubeconfig-XXXXXX");
        if (!mkdtemp(t->dir))
                return -1;
        snprintf(t->path, sizeof(t->path), "%s/config", t->dir);
        *state = t;
        return 0;
}

static int teardown(void **state) {
        struct ctx *t = *state;

        kube_config_done(&t->cfg);
        ck_error_free(t->error);
        nftw(t->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(t);
        return 0;
}

static void write_at(struct ctx *t, const char *name, const char *data, size_t len) {
        _cleanup_free_ char *p = NULL, *d = NULL;
        char *slash;
        FILE *f;

        assert_true(asprintf(&p, "%s/%s", t->dir, name) > 0);
        d = strdup(p);
        assert_non_null(d);
        slash = strrchr(d, '/');
        *slash = '\0';
        assert_int_equal(mkdir_p(d, 0755), 0);
        f = fopen(p, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, len, f), len);
        assert_int_equal(fclose(f), 0);
}

static void write_file(struct ctx *t, const char *name, const char *data) {
        write_at(t, name, data, strlen(data));
}

static char *base64(const char *s, size_t wrap) {
        static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t n = strlen(s), o = 0;
        char *out = malloc(n * 2 + 8);

        assert_non_null(out);
        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t) (unsigned char) s[i] << 16;
                size_t k = MIN(n - i, (size_t) 3);

                if (k > 1)
                        v |= (uint32_t) (unsigned char) s[i + 1] << 8;
                if (k > 2)
                        v |= (unsigned char) s[i + 2];
                for (size_t j = 0; j < 4; j++) {
                        if (wrap > 0 && o > 0 && o % (wrap + 1) == wrap)
                                out[o++] = '\n';
                        out[o++] = j <= k ? tab[(v >> (18 - 6 * j)) & 63] : '=';
                }
        }
        out[o] = '\0';
        return out;
}

static int load(struct ctx *t, const char *config) {
        kube_config_done(&t->cfg);
        t->error = ck_error_free(t->error);
        write_file(t, "config", config);
        return kube_config_load(t->path, &t->cfg, &t->error);
}

static char *at(struct ctx *t, const char *rel) {
        static char buf[8][256];
        static unsigned i;
        char *b = buf[i++ % 8];

        snprintf(b, 256, "%s/%s", t->dir, rel);
        return b;
}

/* The load fails with r and "PATH: ...needle..." */
static void expect_error(struct ctx *t, const char *config, int r, const char *needle) {
        _cleanup_free_ char *prefix = NULL;

        assert_int_equal(load(t, config), r);
        assert_non_null(t->error);
        assert_true(asprintf(&prefix, "%s: ", t->path) > 0);
        if (!startswith(ck_error_message(t->error), prefix) || !strstr(ck_error_message(t->error), needle))
                fail_msg("error \"%s\" does not start with \"%s\" or lacks \"%s\"", ck_error_message(t->error), prefix,
                         needle);
        /* nothing was returned */
        assert_null(t->cfg.server);
        assert_null(t->cfg.token);
}

/* ---------------------------------------------------------------- good configs */

static const char multi_yaml[] = "apiVersion: v1\n"
                                 "kind: Config\n"
                                 "preferences: {}\n"
                                 "current-context: %s\n"
                                 "clusters:\n"
                                 "- name: other\n"
                                 "  cluster:\n"
                                 "    server: https://other.example.com:6443\n"
                                 "    insecure-skip-tls-verify: true\n"
                                 "- name: local\n"
                                 "  cluster:\n"
                                 "    server: https://10.0.0.1:6443/\n"
                                 "    certificate-authority: pki/ca.crt\n"
                                 "    tls-server-name: api.internal\n"
                                 "    proxy-url: http://proxy.example.com:3128\n"
                                 "    disable-compression: true\n"
                                 "contexts:\n"
                                 "- name: admin\n"
                                 "  context: {cluster: other, user: admin, namespace: kube-system}\n"
                                 "- name: kubelet\n"
                                 "  context:\n"
                                 "    cluster: local\n"
                                 "    user: kubelet\n"
                                 "users:\n"
                                 "- name: admin\n"
                                 "  user: {token: admin-token-123}\n"
                                 "- name: kubelet\n"
                                 "  user:\n"
                                 "    client-certificate: pki/kubelet.crt\n"
                                 "    client-key: %s\n";

static void test_yaml_files_and_context(void **state) {
        struct ctx *t = *state;
        _cleanup_free_ char *config = NULL;

        write_file(t, "pki/ca.crt", CA_PEM);
        write_file(t, "pki/kubelet.crt", CERT_PEM);
        write_file(t, "keys/kubelet.key", KEY_PEM);

        /* relative paths are resolved against the kubeconfig's directory, absolute ones are kept */
        assert_true(asprintf(&config, multi_yaml, "kubelet", at(t, "keys/kubelet.key")) > 0);
        assert_int_equal(load(t, config), 0);
        assert_null(t->error);
        assert_string_equal(t->cfg.server, "https://10.0.0.1:6443"); /* no trailing slash */
        assert_string_equal(t->cfg.ca_file, at(t, "pki/ca.crt"));
        assert_string_equal(t->cfg.cert_file, at(t, "pki/kubelet.crt"));
        assert_string_equal(t->cfg.key_file, at(t, "keys/kubelet.key"));
        assert_null(t->cfg.ca_data);
        assert_null(t->cfg.cert_data);
        assert_null(t->cfg.key_data);
        assert_null(t->cfg.token);
        assert_null(t->cfg.token_file);
        assert_false(t->cfg.insecure_skip_tls_verify);
        assert_string_equal(t->cfg.tls_server_name, "api.internal");
        assert_string_equal(t->cfg.proxy_url, "http://proxy.example.com:3128");
        assert_true(t->cfg.disable_compression);

        /* the other context of the same file */
        config = mfree(config);
        assert_true(asprintf(&config, multi_yaml, "admin", at(t, "keys/kubelet.key")) > 0);
        assert_int_equal(load(t, config), 0);
        assert_string_equal(t->cfg.server, "https://other.example.com:6443");
        assert_true(t->cfg.insecure_skip_tls_verify);
        assert_string_equal(t->cfg.token, "admin-token-123");
        assert_null(t->cfg.token_file);
        assert_null(t->cfg.ca_file);
        assert_null(t->cfg.cert_file);
        assert_null(t->cfg.key_file);
        assert_null(t->cfg.tls_server_name);
        assert_null(t->cfg.proxy_url);
        assert_false(t->cfg.disable_compression);

        /* without an error pointer */
        kube_config_done(&t->cfg);
        assert_int_equal(kube_config_load(t->path, &t->cfg, NULL), 0);
        assert_string_equal(t->cfg.token, "admin-token-123");
}

static void test_json_data(void **state) {
        struct ctx *t = *state;
        _cleanup_free_ char *ca = base64(CA_PEM, 0), *cert = base64(CERT_PEM, 0), *key = base64(KEY_PEM, 0),
                            *config = NULL;

        assert_true(asprintf(&config,
                             "{\"apiVersion\": \"v1\", \"kind\": \"Config\", \"current-context\": \"c\",\n"
                             " \"clusters\": [{\"name\": \"k\", \"cluster\": {\"server\": \"https://[fd00::1]:6443\",\n"
                             "     \"certificate-authority-data\": \"%s\"}}],\n"
                             " \"contexts\": [{\"name\": \"c\", \"context\": {\"cluster\": \"k\", \"user\": \"u\"}}],\n"
                             " \"users\": [{\"name\": \"u\", \"user\": {\"client-certificate-data\": \"%s\",\n"
                             "     \"client-key-data\": \"%s\"}}]}\n",
                             ca, cert, key) > 0);
        assert_int_equal(load(t, config), 0);
        assert_string_equal(t->cfg.server, "https://[fd00::1]:6443");
        assert_string_equal(t->cfg.ca_data, CA_PEM);
        assert_string_equal(t->cfg.cert_data, CERT_PEM);
        assert_string_equal(t->cfg.key_data, KEY_PEM);
        assert_null(t->cfg.ca_file);
        assert_null(t->cfg.cert_file);
        assert_null(t->cfg.key_file);
        assert_null(t->cfg.token);
}

static void test_yaml_data_wrapped(void **state) {
        struct ctx *t = *state;
        _cleanup_free_ char *ca = base64(CA_PEM, 16), *config = NULL;

        /* base64 with line breaks (a YAML literal block), as Go's decoder accepts */
        assert_non_null(strchr(ca, '\n'));
        {
                /* indent every line by 6 spaces for the block scalar */
                _cleanup_free_ char *ind = malloc(strlen(ca) * 8 + 8);
                char *o = ind;
                assert_non_null(ind);
                o += sprintf(o, "      ");
                for (const char *p = ca; *p; p++) {
                        *o++ = *p;
                        if (*p == '\n')
                                o += sprintf(o, "      ");
                }
                *o = '\0';
                assert_true(asprintf(&config,
                                     "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                     "clusters:\n- name: k\n  cluster:\n    server: https://h:6443\n"
                                     "    certificate-authority-data: |\n%s\n"
                                     "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                                     "users:\n- name: u\n  user: {}\n",
                                     ind) > 0);
        }
        assert_int_equal(load(t, config), 0);
        assert_string_equal(t->cfg.ca_data, CA_PEM);
        assert_string_equal(t->cfg.server, "https://h:6443");
        /* an empty user: anonymous */
        assert_null(t->cfg.token);
        assert_null(t->cfg.cert_data);
}

static void test_relative_kubeconfig_path(void **state) {
        struct ctx *t = *state;
        _cleanup_free_ char *saved = getcwd(NULL, 0), *here = NULL, *want = NULL;

        assert_non_null(saved);
        write_file(t, "sub/ca.crt", CA_PEM);
        write_file(t, "sub/config",
                   "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                   "clusters:\n- name: k\n  cluster: {server: 'https://h:6443', certificate-authority: ca.crt}\n"
                   "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                   "users:\n- name: u\n  user: {tokenFile: ../token}\n");
        write_file(t, "token", "from-a-file\n");
        assert_int_equal(chdir(t->dir), 0);
        here = getcwd(NULL, 0);
        assert_non_null(here);
        assert_int_equal(kube_config_load("sub/config", &t->cfg, &t->error), 0);
        assert_int_equal(chdir(saved), 0);
        assert_true(asprintf(&want, "%s/sub/ca.crt", here) > 0);
        assert_string_equal(t->cfg.ca_file, want);
        assert_string_equal(t->cfg.token, "from-a-file");
        assert_non_null(t->cfg.token_file);
        assert_true(t->cfg.token_file[0] == '/');
        assert_true(endswith(t->cfg.token_file, "/token"));
}

static const char token_yaml[] = "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                 "clusters:\n- name: k\n  cluster: {server: 'https://h:6443'}\n"
                                 "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                                 "users:\n- name: u\n  user: {%s}\n";

static void test_tokens(void **state) {
        struct ctx *t = *state;
        _cleanup_free_ char *config = NULL;

        write_file(t, "token", "  \tfile-token-xyz\r\n\n");

        /* tokenFile alone: read at load, trimmed, the absolute path kept for rotation */
        assert_true(asprintf(&config, token_yaml, "tokenFile: token") > 0);
        assert_int_equal(load(t, config), 0);
        assert_string_equal(t->cfg.token, "file-token-xyz");
        assert_string_equal(t->cfg.token_file, at(t, "token"));

        /* token wins over tokenFile, which is then ignored */
        config = mfree(config);
        assert_true(asprintf(&config, token_yaml, "token: inline-token, tokenFile: token") > 0);
        assert_int_equal(load(t, config), 0);
        assert_string_equal(t->cfg.token, "inline-token");
        assert_null(t->cfg.token_file);

        /* ...even when that file does not exist */
        config = mfree(config);
        assert_true(asprintf(&config, token_yaml, "token: inline-token, tokenFile: /nonexistent/token") > 0);
        assert_int_equal(load(t, config), 0);
        assert_string_equal(t->cfg.token, "inline-token");
        assert_null(t->cfg.token_file);

        /* an empty token string is no token */
        config = mfree(config);
        assert_true(asprintf(&config, token_yaml, "token: '', tokenFile: token") > 0);
        assert_int_equal(load(t, config), 0);
        assert_string_equal(t->cfg.token, "file-token-xyz");
}

static void test_insecure_and_default_scheme(void **state) {
        struct ctx *t = *state;

        assert_int_equal(
                load(t, "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                        "clusters:\n- name: k\n  cluster: {server: '10.0.0.1:6443', insecure-skip-tls-verify: true}\n"
                        "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                        "users:\n- name: u\n  user: {token: t}\n"),
                0);
        assert_true(t->cfg.insecure_skip_tls_verify);
        assert_string_equal(t->cfg.server, "https://10.0.0.1:6443"); /* TLS configured: https */

        /* no TLS settings and no scheme: http, as clientcmd's DefaultServerURL */
        assert_int_equal(load(t, "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                                 "clusters:\n- name: k\n  cluster: {server: 'localhost:8080'}\n"
                                 "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                                 "users:\n- name: u\n  user: {}\n"),
                         0);
        assert_false(t->cfg.insecure_skip_tls_verify);
        assert_string_equal(t->cfg.server, "http://localhost:8080");

        /* the insecure flag with a CA is refused */
        expect_error(t,
                     "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                     "clusters:\n- name: k\n  cluster: {server: 'https://h', insecure-skip-tls-verify: true,"
                     " certificate-authority-data: LS0tLS1CRUdJTiBYLS0tLS0K}\n"
                     "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                     "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster: specifying a root certificates file with the insecure flag");

        expect_error(t,
                     "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                     "clusters:\n- name: k\n  cluster: {server: 'https://h', insecure-skip-tls-verify: 'yes'}\n"
                     "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                     "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster.insecure-skip-tls-verify: must be true or false");
}

/* ---------------------------------------------------------------- errors */

#define HEAD "apiVersion: v1\nkind: Config\n"
#define CTX "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
#define CLUSTER "clusters:\n- name: k\n  cluster: {server: 'https://h:6443'}\n"

static void test_error_contexts(void **state) {
        struct ctx *t = *state;

        expect_error(t, HEAD CLUSTER CTX "users:\n- name: u\n  user: {}\n", -EINVAL, "current-context is not set");
        expect_error(t, HEAD "current-context: ''\n" CLUSTER CTX "users:\n- name: u\n  user: {}\n", -EINVAL,
                     "current-context is not set");
        expect_error(t, HEAD "current-context: nope\n" CLUSTER CTX "users:\n- name: u\n  user: {}\n", -ENOENT,
                     "context \"nope\" not found");
        expect_error(t, HEAD "current-context: c\n" CLUSTER "users:\n- name: u\n  user: {}\n", -ENOENT,
                     "context \"c\" not found");
        expect_error(t,
                     HEAD "current-context: c\n" CLUSTER
                          "contexts:\n- name: c\n  context: {cluster: gone, user: u}\nusers:\n- name: u\n  user: {}\n",
                     -ENOENT, "cluster \"gone\" was not found for context \"c\"");
        expect_error(t, HEAD "current-context: c\n" CLUSTER CTX "users:\n- name: someone-else\n  user: {}\n", -ENOENT,
                     "user \"u\" was not found for context \"c\"");
        expect_error(t,
                     HEAD "current-context: c\n" CLUSTER "contexts:\n- name: c\n  context: {user: u}\n"
                          "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "contexts[0].context.cluster: cluster was not specified for context \"c\"");
        expect_error(t,
                     HEAD "current-context: c\n" CLUSTER
                          "contexts:\n- name: x\n  context: {}\n- name: c\n  context: {cluster: k}\n"
                          "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "contexts[1].context.user: user was not specified for context \"c\"");
        expect_error(t,
                     HEAD "current-context: c\n" CLUSTER CTX
                          "- name: c\n  context: {cluster: k, user: u}\nusers:\n- name: u\n  user: {}\n",
                     -EINVAL, "contexts[1]: duplicate name \"c\"");
        expect_error(t, HEAD "current-context: c\n" CLUSTER "contexts: {c: 1}\nusers: []\n", -EINVAL,
                     "contexts: must be a list");
}

static void test_error_cluster(void **state) {
        struct ctx *t = *state;

        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {certificate-authority-data: ''}\n" CTX
                          "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster.server: no server found for cluster \"k\"");
        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'ftp://h'}\n" CTX
                          "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster.server: unsupported scheme");
        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://'}\n" CTX
                          "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster.server: no host");
        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https:///api'}\n" CTX
                          "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster.server: no host in \"https:///api\"");
        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'http:////'}\n" CTX
                          "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster.server: no host");
        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: '/'}\n" CTX
                          "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster.server: no host");
        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: 6443}\n" CTX
                          "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster.server: must be a string");
        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://h',"
                          " certificate-authority: missing-ca.crt}\n" CTX "users:\n- name: u\n  user: {}\n",
                     -ENOENT, "clusters[0].cluster: unable to read certificate-authority");
        write_file(t, "ca.crt", CA_PEM);
        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://h',"
                          " certificate-authority: ca.crt, certificate-authority-data: LS0tLS1CRUdJTiBYLS0tLS0K}\n" CTX
                          "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "certificate-authority-data and certificate-authority are both specified");
        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://h',"
                          " certificate-authority-data: '@@@'}\n" CTX "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster.certificate-authority-data: invalid base64");
        /* valid base64 that is not PEM */
        expect_error(t,
                     HEAD "current-context: c\nclusters:\n- name: k\n  cluster: {server: 'https://h',"
                          " certificate-authority-data: aGVsbG8gd29ybGQ=}\n" CTX "users:\n- name: u\n  user: {}\n",
                     -EINVAL, "clusters[0].cluster.certificate-authority-data: no PEM data found");
}

static void test_error_bad_base64(void **state) {
        struct ctx *t = *state;
        static const char *const bad[] = {
                "c2VjcmV0LXZhbHVl!!", /* not in the alphabet */
                "c2VjcmV0LXZhbHVl"
                "Q",                 /* not a multiple of 4 */
                "c2Vj=mV0",          /* data after padding */
                "c2VjcmV0LXZhbH===", /* too much padding */
                "c2VjcmV0-XZhbHVl",  /* URL alphabet */
        };
        _cleanup_free_ char *cert = base64(CERT_PEM, 0);

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *config = NULL;

                assert_true(asprintf(&config,
                                     HEAD "current-context: c\n" CLUSTER CTX
                                          "users:\n- name: other\n  user: {token: x}\n"
                                          "- name: u\n  user:\n    client-certificate-data: %s\n"
                                          "    client-key-data: '%s'\n",
                                     cert, bad[i]) > 0);
                expect_error(t, config, -EINVAL, "users[1].user.client-key-data: invalid base64");
                /* the secret is not in the message */
                assert_null(strstr(ck_error_message(t->error), "c2Vj"));
        }
}

static void test_error_user(void **state) {
        struct ctx *t = *state;
        static const struct {
                const char *user, *needle;
                int r;
        } cases[] = {
                { "exec: {apiVersion: client.authentication.k8s.io/v1, command: aws}",
                  "users[0].user.exec: exec credential plugins are not supported", -EOPNOTSUPP },
                { "auth-provider: {name: gcp}", "users[0].user.auth-provider: auth providers are not supported",
                  -EOPNOTSUPP },
                { "username: admin, password: SECRET-PASSWORD",
                  "users[0].user.username: basic authentication is not supported", -EOPNOTSUPP },
                { "password: SECRET-PASSWORD", "users[0].user.password: basic authentication is not supported",
                  -EOPNOTSUPP },
                { "token: SECRET-TOKEN, as: 'system:admin'", "users[0].user.as: impersonation is not supported",
                  -EOPNOTSUPP },
                { "token: SECRET-TOKEN, exec: {command: x}", "users[0].user.exec:", -EOPNOTSUPP },
                { "tokenFile: no-such-token", "users[0].user.tokenFile: cannot read ", -ENOENT },
                { "tokenFile: empty-token", "users[0].user.tokenFile: ", -EINVAL },
                { "token: 42", "users[0].user.token: must be a string", -EINVAL },
                { "client-certificate-data: LS0tLS1CRUdJTiBYLS0tLS0K",
                  "client-key-data or client-key must be specified", -EINVAL },
                { "client-key: key.pem", "client-certificate-data or client-certificate must be specified", -EINVAL },
                { "client-certificate: missing.crt, client-key: key.pem", "users[0].user: unable to read client-cert",
                  -ENOENT },
        };

        write_file(t, "empty-token", " \n\t\n");
        write_file(t, "key.pem", KEY_PEM);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *config = NULL;

                assert_true(asprintf(&config,
                                     HEAD "current-context: c\n" CLUSTER CTX "users:\n- name: u\n  user: {%s}\n",
                                     cases[i].user) > 0);
                expect_error(t, config, cases[i].r, cases[i].needle);
                assert_null(strstr(ck_error_message(t->error), "SECRET"));
        }
        /* the missing token file is named with its absolute path */
        {
                _cleanup_free_ char *config = NULL;
                assert_true(asprintf(&config, HEAD "current-context: c\n" CLUSTER CTX
                                                   "users:\n- name: u\n  user: {tokenFile: no-such-token}\n") > 0);
                expect_error(t, config, -ENOENT, at(t, "no-such-token"));
                assert_non_null(strstr(ck_error_message(t->error), "No such file or directory"));
                /* and the error pointer is optional */
                kube_config_done(&t->cfg);
                assert_int_equal(kube_config_load(t->path, &t->cfg, NULL), -ENOENT);
        }
}

static void test_error_file(void **state) {
        struct ctx *t = *state;
        _cleanup_free_ char *big = NULL, *prefix = NULL;
        size_t n = KUBE_CONFIG_MAX_SIZE + 1;

        /* too big: refused before parsing */
        big = malloc(n);
        assert_non_null(big);
        memset(big, '#', n);
        write_at(t, "config", big, n);
        assert_int_equal(kube_config_load(t->path, &t->cfg, &t->error), -EFBIG);
        assert_true(asprintf(&prefix, "%s: ", t->path) > 0);
        assert_true(startswith(ck_error_message(t->error), prefix));
        assert_non_null(strstr(ck_error_message(t->error), "larger than 1048576 bytes"));
        /* exactly the limit is fine as far as size goes (a comment-only file: no configuration) */
        write_at(t, "config", big, n - 1);
        t->error = ck_error_free(t->error);
        assert_int_equal(kube_config_load(t->path, &t->cfg, &t->error), -EINVAL);
        assert_non_null(strstr(ck_error_message(t->error), "no configuration has been provided"));

        /* missing */
        t->error = ck_error_free(t->error);
        assert_int_equal(kube_config_load(at(t, "nope/config"), &t->cfg, &t->error), -ENOENT);
        assert_true(startswith(ck_error_message(t->error), at(t, "nope/config")));
        assert_non_null(strstr(ck_error_message(t->error), "cannot read: No such file or directory"));

        expect_error(t, "", -EINVAL, "no configuration has been provided");
        expect_error(t, HEAD "---\n" HEAD, -EINVAL, "more than one document");
        expect_error(t, "- a\n- b\n", -EINVAL, "not a kubeconfig");
        expect_error(t, "apiVersion: v1\nkind: Pod\n", -EINVAL, "kind: got \"Pod\", want \"Config\"");
        expect_error(t, "apiVersion: v2\nkind: Config\n", -EINVAL, "apiVersion: got \"v2\", want \"v1\"");
        /* a syntax error: named with the file */
        assert_true(load(t, "clusters: [\n  {name: x\n") < 0);
        assert_true(startswith(ck_error_message(t->error), prefix));

        /* bad arguments */
        assert_int_equal(kube_config_load(NULL, &t->cfg, NULL), -EINVAL);
        assert_int_equal(kube_config_load("", &t->cfg, NULL), -EINVAL);
        assert_int_equal(kube_config_load(t->path, NULL, NULL), -EINVAL);
        kube_config_done(NULL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_yaml_files_and_context, setup, teardown),
                cmocka_unit_test_setup_teardown(test_json_data, setup, teardown),
                cmocka_unit_test_setup_teardown(test_yaml_data_wrapped, setup, teardown),
                cmocka_unit_test_setup_teardown(test_relative_kubeconfig_path, setup, teardown),
                cmocka_unit_test_setup_teardown(test_tokens, setup, teardown),
                cmocka_unit_test_setup_teardown(test_insecure_and_default_scheme, setup, teardown),
                cmocka_unit_test_setup_teardown(test_error_contexts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_error_cluster, setup, teardown),
                cmocka_unit_test_setup_teardown(test_error_bad_base64, setup, teardown),
                cmocka_unit_test_setup_teardown(test_error_user, setup, teardown),
                cmocka_unit_test_setup_teardown(test_error_file, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
