/* SPDX-License-Identifier: Apache-2.0 */
#include "certificate/bootstrap.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/time.h"
#include "certificate/csr.h"
#include "client/client.h"

#define PEM_MAX_SIZE (1024u * 1024u)

/* not usable, and why: 0 with the reason in *ret_reason */
#define not_usable(ret_reason, ...) (ck_error_set((ret_reason), -EINVAL, __VA_ARGS__), 0)

static int read_pem(const char *data, const char *file, char **ret, struct ck_error **ret_error) {
        size_t size;
        int r;

        if (data) {
                *ret = strdup(data);
                return *ret ? 0 : -ENOMEM;
        }
        r = read_full_file(file, PEM_MAX_SIZE, ret, &size);
        if (r < 0 && r != -ENOMEM)
                return ck_error_set(ret_error, r, "cannot read %s: %s", file, strerror(-r));
        return r;
}

int cert_kubeconfig_usable(const char *path, struct ck_error **ret_reason) {
        _cleanup_free_ char *cert = NULL, *key = NULL, *both = NULL;
        _cleanup_ck_error_ struct ck_error *why = NULL;
        struct kube_config c = {};
        struct cert_info info = {};
        struct stat st;
        char when[64];
        int r;

        if (stat(path, &st) < 0)
                return not_usable(ret_reason, "%s: %s", path, errno == ENOENT ? "does not exist" : strerror(errno));
        r = kube_config_load(path, &c, &why);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return not_usable(ret_reason, "unable to read the existing kubeconfig: %s", ck_error_message(why));
        if (!c.cert_file && !c.cert_data) {
                kube_config_done(&c);
                return not_usable(ret_reason, "%s has no client certificate", path);
        }
        r = read_pem(c.cert_data, c.cert_file, &cert, &why);
        if (r >= 0)
                r = read_pem(c.key_data, c.key_file, &key, &why);
        kube_config_done(&c);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return not_usable(ret_reason, "%s: unable to load its client certificate: %s", path,
                                  ck_error_message(why));
        if (asprintf(&both, "%s\n%s", cert, key) < 0)
                return -ENOMEM;
        explicit_bzero(key, strlen(key));
        r = cert_pair_parse(both, strlen(both), NULL, NULL, &info, &why);
        explicit_bzero(both, strlen(both));
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return not_usable(ret_reason, "%s: unable to load its client certificate and key: %s", path,
                                  ck_error_message(why));
        if ((int64_t) now_realtime_usec() >= info.not_after_usec) {
                (void) ck_error_set(ret_reason, -EKEYEXPIRED,
                                    "%s: part of the existing client certificate is expired: %s", path,
                                    format_rfc3339((uint64_t) info.not_after_usec, when, sizeof(when)));
                cert_info_done(&info);
                return 0;
        }
        cert_info_done(&info);
        return 1;
}

static char *base64_encode(const char *s) {
        size_t n = strlen(s);
        char *out = malloc(4 * ((n + 2) / 3) + 1);

        if (out)
                EVP_EncodeBlock((unsigned char *) out, (const unsigned char *) s, (int) n);
        return out;
}

int cert_kubeconfig_write(const char *path, const struct kube_config *b, const char *pem_path,
                          struct ck_error **ret_error) {
        _cleanup_free_ char *ca = NULL, *text = NULL;
        json_t *cluster, *doc;
        int r;

        cluster = json_pack("{s:s}", "server", b->server);
        if (!cluster)
                return -ENOMEM;
        if (b->ca_file)
                r = json_object_set_new(cluster, "certificate-authority", json_string(b->ca_file));
        else if (b->ca_data && (ca = base64_encode(b->ca_data)))
                r = json_object_set_new(cluster, "certificate-authority-data", json_string(ca));
        else
                r = b->ca_data ? -1 : 0;
        if (r >= 0 && b->insecure_skip_tls_verify)
                r = json_object_set_new(cluster, "insecure-skip-tls-verify", json_true());
        if (r >= 0 && b->tls_server_name)
                r = json_object_set_new(cluster, "tls-server-name", json_string(b->tls_server_name));
        if (r < 0) {
                json_decref(cluster);
                return -ENOMEM;
        }
        doc = json_pack("{s:s, s:s, s:[{s:s, s:o}], s:[{s:s, s:{s:s, s:s, s:s}}], s:s, s:{}, s:[{s:s, s:{s:s, s:s}}]}",
                        "apiVersion", "v1", "kind", "Config", "clusters", "name", "default-cluster", "cluster", cluster,
                        "contexts", "name", "default-context", "context", "cluster", "default-cluster", "namespace",
                        "default", "user", "default-auth", "current-context", "default-context", "preferences", "users",
                        "name", "default-auth", "user", "client-certificate", pem_path, "client-key", pem_path);
        if (!doc)
                return -ENOMEM;
        text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(doc);
        if (!text)
                return -ENOMEM;
        {
                _cleanup_free_ char *dir = strdup(path);
                char *slash = dir ? strrchr(dir, '/') : NULL;
                if (!dir)
                        return -ENOMEM;
                if (slash && slash != dir) {
                        *slash = '\0';
                        (void) mkdir_p(dir, 0755);
                }
        }
        r = write_file_atomic(path, text, strlen(text), 0600);
        if (r < 0)
                return ck_error_set(ret_error, r, "cannot write the kubeconfig %s: %s", path, strerror(-r));
        return 0;
}
