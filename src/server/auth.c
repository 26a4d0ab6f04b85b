/* SPDX-License-Identifier: Apache-2.0 */
/* TLS serving, authentication and authorization of the kubelet API (pkg/kubelet/server/auth.go and
 * cmd/kubelet/app/auth.go): x509 client certificates against --client-ca-file, anonymous requests when
 * enabled, bearer tokens and SubjectAccessReview through the API server (Webhook), or AlwaysAllow. */
#include <errno.h>
#include <stdarg.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/error.h"
#include "basic/fs.h"
#include "basic/log.h"
#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"
#include "server/client_ca.h"
#include "server/server-internal.h"

#define SELF_SIGNED_VALIDITY_DAYS 365

/* ---------------------------------------------------------------- serving certificate */

static char *ssl_error_string(void) {
        char buf[256];
        unsigned long e = ERR_get_error();
        ERR_clear_error();
        if (!e)
                return strdup("unknown error");
        ERR_error_string_n(e, buf, sizeof(buf));
        return strdup(buf);
}

static int add_ext(X509 *cert, int nid, const char *value) {
        X509V3_CTX ctx;
        X509_EXTENSION *ex;

        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, cert, cert, NULL, NULL, 0);
        ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
        if (!ex)
                return -EINVAL;
        X509_add_ext(cert, ex, -1);
        X509_EXTENSION_free(ex);
        return 0;
}

/* GenerateSelfSignedCertKey: a self-signed certificate for the node's name, localhost and its IP, written to
 * cert_path/key_path for the next start. A --cert-dir that cannot be written is logged and the pair is served from
 * memory (*ret_cert_pem, *ret_key_pem), so that the API still comes up. */
static int generate_self_signed(struct api_server *s, const char *cert_path, const char *key_path, char **ret_cert_pem,
                                char **ret_key_pem) {
        const char *host = s->o->node_name, *ip = s->node_ip;
        _cleanup_free_ char *cn = NULL, *san = NULL;
        EVP_PKEY *pkey = NULL;
        X509 *cert = NULL;
        BIO *kb = NULL, *cb = NULL;
        char *kdata, *cdata;
        long klen, clen;
        int r = -ENOMEM;

        if (asprintf(&cn, "%s@%llu", host, (unsigned long long) (now_realtime_usec() / USEC_PER_SEC)) < 0 ||
            asprintf(&san, "DNS:%s,DNS:localhost,IP:127.0.0.1%s%s", host, isempty(ip) ? "" : ",IP:", strempty(ip)) < 0)
                return -ENOMEM;
        pkey = EVP_EC_gen("P-256");
        cert = X509_new();
        if (!pkey || !cert)
                goto finish;
        X509_set_version(cert, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(cert), (long) (now_realtime_usec() & 0x7fffffff));
        X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
        X509_gmtime_adj(X509_getm_notAfter(cert), (long) SELF_SIGNED_VALIDITY_DAYS * 24 * 3600);
        X509_set_pubkey(cert, pkey);
        X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_UTF8, (const unsigned char *) cn, -1, -1,
                                   0);
        X509_set_issuer_name(cert, X509_get_subject_name(cert));
        if (add_ext(cert, NID_subject_alt_name, san) < 0 ||
            add_ext(cert, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
            add_ext(cert, NID_key_usage, "critical,digitalSignature,keyEncipherment,keyCertSign") < 0 ||
            add_ext(cert, NID_ext_key_usage, "serverAuth") < 0) {
                r = -EINVAL;
                goto finish;
        }
        if (!X509_sign(cert, pkey, EVP_sha256()))
                goto finish;
        kb = BIO_new(BIO_s_mem());
        cb = BIO_new(BIO_s_mem());
        if (!kb || !cb || !PEM_write_bio_PrivateKey(kb, pkey, NULL, NULL, 0, NULL, NULL) ||
            !PEM_write_bio_X509(cb, cert))
                goto finish;
        klen = BIO_get_mem_data(kb, &kdata);
        clen = BIO_get_mem_data(cb, &cdata);
        *ret_cert_pem = strndup(cdata, (size_t) clen);
        *ret_key_pem = strndup(kdata, (size_t) klen);
        if (!*ret_cert_pem || !*ret_key_pem)
                goto finish;
        r = mkdir_p(s->o->cert_dir, 0700);
        if (r >= 0)
                r = write_file_atomic(key_path, kdata, (size_t) klen, 0600);
        if (r >= 0)
                r = write_file_atomic(cert_path, cdata, (size_t) clen, 0644);
        if (r < 0)
                log_error("cannot write the self-signed serving certificate under --cert-dir %s: %s; serving it from "
                          "memory, a new one is made at the next start",
                          s->o->cert_dir, strerror(-r));
        else
                log_info("Generated self-signed cert: certFile=\"%s\" keyFile=\"%s\"", cert_path, key_path);
        r = 0;
finish:
        BIO_free(kb);
        BIO_free(cb);
        X509_free(cert);
        EVP_PKEY_free(pkey);
        return r;
}

static int verify_accept(int preverify_ok, X509_STORE_CTX *ctx) {
        /* as Go's RequestClientCert: the handshake never fails on the client's certificate; the authenticator
         * checks the verification result and answers 401 */
        return 1;
}

/* serverTLSBootstrap: the current pair on each handshake, or no handshake at all */
static int serving_cert_cb(SSL *ssl, void *arg) {
        struct api_server *s = arg;
        uint64_t now = now_usec();

        if (!s->serving_cert || !s->serving_key) {
                if (s->serving_missing_logged_usec == 0 || now - s->serving_missing_logged_usec > 60 * USEC_PER_SEC) {
                        log_warning("TLS handshake refused: no serving certificate available for the kubelet (waiting "
                                    "for the certificate signing request to be approved and issued)");
                        s->serving_missing_logged_usec = now;
                }
                return 0;
        }
        if (SSL_use_cert_and_key(ssl, s->serving_cert, s->serving_key, s->serving_chain, 1) != 1) {
                ERR_clear_error();
                return 0;
        }
        return 1;
}

int api_server_set_serving_cert(struct api_server *s, const char *cert_pem, const char *key_pem) {
        BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
        X509 *leaf = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL, *x;
        EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
        STACK_OF(X509) *chain = sk_X509_new_null();
        int r = -EINVAL;

        if (!leaf || !key || !chain || X509_check_private_key(leaf, key) != 1) {
                _cleanup_free_ char *err = ssl_error_string();
                log_error("cannot use the new serving certificate: %s", strna(err));
                goto finish;
        }
        while ((x = PEM_read_bio_X509(cb, NULL, NULL, NULL)))
                if (!sk_X509_push(chain, x)) {
                        X509_free(x);
                        r = -ENOMEM;
                        goto finish;
                }
        ERR_clear_error();
        X509_free(s->serving_cert);
        EVP_PKEY_free(s->serving_key);
        sk_X509_pop_free(s->serving_chain, X509_free);
        s->serving_cert = TAKE_PTR(leaf);
        s->serving_key = TAKE_PTR(key);
        s->serving_chain = TAKE_PTR(chain);
        log_info("The kubelet API serves a new certificate to new connections");
        r = 0;
finish:
        X509_free(leaf);
        EVP_PKEY_free(key);
        sk_X509_pop_free(chain, X509_free);
        BIO_free(cb);
        BIO_free(kb);
        return r;
}

void api_tls_done(struct api_server *s) {
        X509_free(s->serving_cert);
        EVP_PKEY_free(s->serving_key);
        sk_X509_pop_free(s->serving_chain, X509_free);
        s->serving_cert = NULL;
        s->serving_key = NULL;
        s->serving_chain = NULL;
}

/* the serving pair from --tls-cert-file/--tls-private-key-file, or the self-signed one in --cert-dir */
static int load_serving_files(struct api_server *s, struct ck_error **ret_error) {
        const struct kubelet_options *o = s->o;
        _cleanup_free_ char *cert = NULL, *key = NULL, *err = NULL, *cert_pem = NULL, *key_pem = NULL;
        int r;

        if (!isempty(o->tls_cert_file)) {
                cert = strdup(o->tls_cert_file);
                key = strdup(o->tls_private_key_file);
                if (!cert || !key)
                        return -ENOMEM;
        } else {
                if (asprintf(&cert, "%s/kubelet.crt", o->cert_dir) < 0 ||
                    asprintf(&key, "%s/kubelet.key", o->cert_dir) < 0)
                        return -ENOMEM;
                if (access(cert, R_OK) < 0 || access(key, R_OK) < 0) {
                        r = generate_self_signed(s, cert, key, &cert_pem, &key_pem);
                        if (r >= 0) {
                                BIO *cb = BIO_new_mem_buf(cert_pem, -1), *kb = BIO_new_mem_buf(key_pem, -1);
                                X509 *x = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
                                EVP_PKEY *k = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
                                if (!x || !k || SSL_CTX_use_certificate(s->ssl_ctx, x) != 1 ||
                                    SSL_CTX_use_PrivateKey(s->ssl_ctx, k) != 1)
                                        r = -EINVAL;
                                X509_free(x);
                                EVP_PKEY_free(k);
                                BIO_free(cb);
                                BIO_free(kb);
                                explicit_bzero(key_pem, strlen(key_pem));
                        }
                        return r;
                }
        }
        if (SSL_CTX_use_certificate_chain_file(s->ssl_ctx, cert) != 1) {
                err = ssl_error_string();
                return ck_error_set(ret_error, -EINVAL, "invalid serving certificate (--tls-cert-file) %s: %s", cert,
                                    strna(err));
        }
        if (SSL_CTX_use_PrivateKey_file(s->ssl_ctx, key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(s->ssl_ctx) != 1) {
                err = ssl_error_string();
                return ck_error_set(ret_error, -EINVAL, "invalid serving key (--tls-private-key-file) %s: %s", key,
                                    strna(err));
        }
        return 0;
}

int api_tls_setup(struct api_server *s, struct ck_error **ret_error) {
        const struct kubelet_options *o = s->o;
        int r;

        s->ssl_ctx = SSL_CTX_new(TLS_server_method());
        if (!s->ssl_ctx)
                return -ENOMEM;
        SSL_CTX_set_min_proto_version(s->ssl_ctx, TLS1_2_VERSION);
        SSL_CTX_set_options(s->ssl_ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
        SSL_CTX_set_info_callback(s->ssl_ctx, api_conn_tls_info); /* the connection gate's handshake deadline */
        /* with client certificates requested, OpenSSL resumes a TLS 1.2 session only within a session id context;
         * without one, a client that offers its session gets a handshake failure (internal error alert) */
        if (SSL_CTX_set_session_id_context(s->ssl_ctx, (const unsigned char *) "ckubelet", strlen("ckubelet")) != 1)
                return -ENOMEM;
        if (o->server_tls_bootstrap) {
                s->bootstrap_serving = true;
                SSL_CTX_set_cert_cb(s->ssl_ctx, serving_cert_cb, s);
        } else {
                r = load_serving_files(s, ret_error);
                if (r < 0)
                        return r;
        }
        if (!isempty(o->client_ca_file)) {
                /* reloaded when the file changes (client_ca.c) */
                r = api_client_ca_setup(s, ret_error);
                if (r < 0)
                        return r;
                SSL_CTX_set_verify(s->ssl_ctx, SSL_VERIFY_PEER, verify_accept);
                s->have_client_ca = true;
        }
        /* Webhook authorization without an API server refuses every request: worth a warning. Token
         * authentication (authentication.webhook, on by default in a config file) only refuses requests that
         * carry a bearer token, which a standalone node has no use for: said at -v 2, so that the suggested
         * standalone setting (AlwaysAllow with a client CA, the example's) starts without a warning. */
        if (streq(o->authorization_mode, "Webhook") && isempty(o->kubeconfig))
                log_warning("kubelet API: Webhook authorization%s needs an API server, and none is configured: every "
                            "request is refused (use --authorization-mode=AlwaysAllow with --client-ca-file for a "
                            "standalone node)",
                            o->authentication_token_webhook ? " and token authentication (authentication.webhook)"
                                                            : "");
        else if (o->authentication_token_webhook && isempty(o->kubeconfig))
                log_v(2, "kubelet API: token authentication (authentication.webhook) needs an API server, and none is "
                         "configured: requests with a bearer token are refused");
        return 0;
}

/* ---------------------------------------------------------------- authentication */

void api_user_done(struct api_user *u) {
        free(u->name);
        strv_free(u->groups);
        free(u->uid);
        json_decref(u->extra);
        *u = (struct api_user) {};
}

/* the i-th entry of a certificate's subject as a string of our own */
static int name_entry_string(X509_NAME *subject, int i, char **ret) {
        ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, i));
        unsigned char *u = NULL;
        char *s;
        int len;

        len = ASN1_STRING_to_UTF8(&u, d);
        if (len < 0)
                return -EINVAL;
        if (memchr(u, '\0', (size_t) len)) {
                /* "admin\0.tenant" must not be read as "admin" */
                OPENSSL_free(u);
                return -EINVAL;
        }
        s = strdup((char *) u);
        OPENSSL_free(u);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int api_user_from_cert(X509 *cert, struct api_user *ret) {
        X509_NAME *subject = X509_get_subject_name(cert);
        _cleanup_strv_free_ char **groups = NULL;
        _cleanup_free_ char *cn = NULL;
        char *s;
        int i = -1, r;

        /* CommonName is the user, Organizations are the groups (x509.CommonNameUserConversion) */
        while ((i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) >= 0) {
                r = name_entry_string(subject, i, &s);
                if (r < 0)
                        return r;
                free_and_replace(cn, s);
        }
        i = -1;
        while ((i = X509_NAME_get_index_by_NID(subject, NID_organizationName, i)) >= 0) {
                r = name_entry_string(subject, i, &s);
                if (r < 0)
                        return r;
                if (strv_push(&groups, s) < 0)
                        return -ENOMEM;
        }
        if (isempty(cn))
                return -EINVAL; /* "common name is empty" */
        if (strv_extend(&groups, "system:authenticated") < 0)
                return -ENOMEM;
        ret->name = TAKE_PTR(cn);
        ret->groups = TAKE_PTR(groups);
        return 0;
}

int api_auth_refuse(struct api_auth *a, int status, const char *fmt, ...) {
        va_list ap;

        free(a->message);
        va_start(ap, fmt);
        if (vasprintf(&a->message, fmt, ap) < 0)
                a->message = NULL;
        va_end(ap);
        a->status = status;
        return status == 401 ? -EACCES : status == 403 ? -EPERM : -EIO;
}

void api_auth_clear(struct api_auth *a) {
        api_webhook_cancel(a);
        api_user_done(&a->user);
        free(a->message);
        a->message = NULL;
        a->status = 0;
}

static int unauthorized(struct api_auth *a) {
        return api_auth_refuse(a, 401, "Unauthorized\n");
}

/* who sends the request: a verified client certificate, else a bearer token (TokenReview), else anonymous if
 * allowed */
static int authenticate(struct api_auth *a, SSL *ssl, const char *authz) {
        X509 *peer = ssl ? SSL_get1_peer_certificate(ssl) : NULL;
        int k;

        if (peer) {
                long v = SSL_get_verify_result(ssl);
                if (a->s->have_client_ca && v == X509_V_OK) {
                        k = api_user_from_cert(peer, &a->user);
                        X509_free(peer);
                        if (k == -ENOMEM) {
                                api_auth_refuse(a, 500, "Internal Error: out of memory\n");
                                return -ENOMEM;
                        }
                        if (k >= 0)
                                return 0;
                        log_v(2, "API: client certificate without a usable common name: %s", a->path);
                        return unauthorized(a);
                }
                X509_free(peer);
                /* a certificate that does not verify is an authentication failure, not anonymous (as upstream) */
                log_v(2, "API: client certificate rejected for %s: %s", a->path,
                      a->s->have_client_ca ? X509_verify_cert_error_string(v) : "no --client-ca-file");
                return unauthorized(a);
        }
        if (authz && startswith(authz, "Bearer ")) {
                const char *token = authz + strlen("Bearer ");

                token += strspn(token, " ");
                if (!a->s->o->authentication_token_webhook || !api_host_kube_client(a->s) || isempty(token)) {
                        log_v(2, "API: bearer token for %s refused: %s", a->path,
                              !a->s->o->authentication_token_webhook
                                      ? "token authentication (authentication.webhook) is off"
                                      : "no API server for TokenReview");
                        return unauthorized(a);
                }
                k = api_webhook_authenticate_cached(a, token);
                if (k == -EINPROGRESS)
                        return api_webhook_review_token(a, token);
                if (k == -EACCES)
                        return unauthorized(a);
                if (k < 0) {
                        api_auth_refuse(a, 500, "Internal Error: out of memory\n");
                        return -ENOMEM;
                }
                return 0;
        }
        if (a->s->o->anonymous_auth) {
                a->user.name = strdup("system:anonymous");
                if (!a->user.name || strv_extend(&a->user.groups, "system:unauthenticated") < 0) {
                        api_auth_refuse(a, 500, "Internal Error: out of memory\n");
                        return -ENOMEM;
                }
                return 0;
        }
        return unauthorized(a);
}

int api_auth_start(struct api_auth *a, SSL *ssl, const char *authorization) {
        int k = authenticate(a, ssl, authorization);

        if (k < 0)
                return k; /* refused, or a TokenReview in flight (it authorizes when back) */
        return api_auth_authorize(a);
}

/* ---------------------------------------------------------------- authorization */

static bool is_subpath(const char *path, const char *p) {
        size_t n = strlen(p);
        return strneq(path, p, n) && (path[n] == '\0' || path[n] == '/');
}

/* The subresources a request is authorized against, in the order they are tried, as upstream v1.37's
 * GetRequestAttributes (pkg/kubelet/server/auth.go) with KubeletFineGrainedAuthz (GA and locked on since
 * v1.36): /pods, /runningpods (and /allocatedPods, which ckubelet does not serve) ask nodes/pods, /healthz
 * nodes/healthz and /configz nodes/configz first, then nodes/proxy; the others ask one subresource: /stats
 * stats, /metrics metrics, /logs log, /checkpoint checkpoint, /statusz statusz, /flagz configz, anything
 * else proxy (so /spec, /containerLogs, /exec, /run... stay nodes/proxy). */
size_t api_subresources(const char *path, const char *ret[static API_SUBRESOURCES_MAX]) {
        size_t n = 0;

        if (is_subpath(path, "/allocatedPods") || is_subpath(path, "/pods") || is_subpath(path, "/runningpods"))
                ret[n++] = "pods";
        else if (is_subpath(path, "/healthz"))
                ret[n++] = "healthz";
        else if (is_subpath(path, "/configz"))
                ret[n++] = "configz";

        if (is_subpath(path, "/stats"))
                ret[n++] = "stats";
        else if (is_subpath(path, "/metrics"))
                ret[n++] = "metrics";
        else if (is_subpath(path, "/logs"))
                ret[n++] = "log";
        else if (is_subpath(path, "/checkpoint"))
                ret[n++] = "checkpoint";
        else if (is_subpath(path, "/statusz"))
                ret[n++] = "statusz";
        else if (is_subpath(path, "/flagz"))
                ret[n++] = "configz";
        else
                ret[n++] = "proxy";
        return n;
}

const char *api_auth_subresource(const struct api_auth *a) {
        const char *subs[API_SUBRESOURCES_MAX];
        size_t n = api_subresources(a->path, subs);

        return subs[a->attempt < n ? a->attempt : n - 1];
}

char *api_forbidden_message(const char *user, const char *verb, const char *path) {
        const char *subs[API_SUBRESOURCES_MAX];
        size_t n = api_subresources(path, subs);
        char *m = NULL;

        /* upstream prints the subresources tried as Go prints a []string: "[pods proxy]" */
        if (asprintf(&m, "Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=[%s%s%s])\n", strempty(user),
                     verb, subs[0], n > 1 ? " " : "", n > 1 ? subs[1] : "") < 0)
                return NULL;
        return m;
}

int api_auth_forbidden(struct api_auth *a, const char *why) {
        const char *subs[API_SUBRESOURCES_MAX];
        const char *verb = api_request_verb(a->method, a->path);
        size_t n = api_subresources(a->path, subs);
        char *m;

        log_v(2, "API: forbidden: user=%s verb=%s subresource(s)=%s%s%s path=%s: %s", a->user.name, verb, subs[0],
              n > 1 ? "," : "", n > 1 ? subs[1] : "", a->path, why);
        m = api_forbidden_message(a->user.name, verb, a->path);
        if (!m)
                return api_auth_refuse(a, 403, "Forbidden\n");
        free(a->message);
        a->message = m;
        a->status = 403;
        return -EPERM;
}

const char *api_verb(enum evhttp_cmd_type method) {
        switch (method) {
        case EVHTTP_REQ_POST:
                return "create";
        case EVHTTP_REQ_GET:
        case EVHTTP_REQ_HEAD:
                return "get";
        case EVHTTP_REQ_PUT:
                return "update";
        case EVHTTP_REQ_PATCH:
                return "patch";
        case EVHTTP_REQ_DELETE:
                return "delete";
        default:
                return "";
        }
}

/* Exec, attach and port-forward run something in the pod whatever the method: a WebSocket client opens them
 * with a GET, which upstream authorizes as "get", so that "get nodes/proxy" (read access, often granted to
 * monitoring) is enough to run commands in every container of the node. They are "create" here. */
const char *api_request_verb(enum evhttp_cmd_type method, const char *path) {
        if (is_subpath(path, "/exec") || is_subpath(path, "/attach") || is_subpath(path, "/portForward"))
                return "create";
        return api_verb(method);
}

int api_auth_authorize_next(struct api_auth *a) {
        const char *subs[API_SUBRESOURCES_MAX];
        size_t n = api_subresources(a->path, subs);
        int k;

        if (streq(a->s->o->authorization_mode, "AlwaysAllow"))
                return 0;
        if (!api_host_kube_client(a->s))
                return api_auth_forbidden(a, "Webhook authorization without an API server");
        /* Webhook: a SubjectAccessReview for (user, verb, nodes/<node>/<subresource>), one subresource after the
         * other until one is allowed (a denial of the fine-grained one falls back to proxy); each answer is
         * cached on its own */
        for (; a->attempt < n; a->attempt++) {
                k = api_webhook_authorize_cached(a);
                if (k == -EINPROGRESS)
                        return api_webhook_review_access(a);
                if (k != -EPERM)
                        return k; /* allowed */
                log_v(2, "API: denied (cached): user=%s verb=%s subresource=%s path=%s", a->user.name,
                      api_request_verb(a->method, a->path), subs[a->attempt], a->path);
        }
        return api_auth_forbidden(a, "denied");
}

int api_auth_authorize(struct api_auth *a) {
        a->attempt = 0;
        return api_auth_authorize_next(a);
}
