/* SPDX-License-Identifier: Apache-2.0 */
/* The API client's TLS context from a kubeconfig's files or inline data (client-go's TLSClientConfig): the
 * certificate authorities, the client certificate chain and key, TLS 1.2 at least, ALPN h2 then http/1.1. */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "basic/error.h"
#include "client/transport.h"

static int load_pem_certs(const char *pem, STACK_OF(X509) * *ret) {
        BIO *b = BIO_new_mem_buf(pem, -1);
        STACK_OF(X509) *sk = sk_X509_new_null();
        X509 *x;

        if (!b || !sk) {
                BIO_free(b);
                sk_X509_free(sk);
                return -ENOMEM;
        }
        while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)))
                sk_X509_push(sk, x);
        ERR_clear_error();
        BIO_free(b);
        if (sk_X509_num(sk) == 0) {
                sk_X509_free(sk);
                return -EINVAL;
        }
        *ret = sk;
        return 0;
}

int kube_tls_client_ctx(const struct kube_tls_files *cfg, SSL_CTX **ret, struct ck_error **ret_error) {
        static const unsigned char alpn[] = "\x02h2\x08http/1.1";
        SSL_CTX *x = SSL_CTX_new(TLS_client_method());
        const char *what = NULL;

        if (!x)
                return -ENOMEM;
        SSL_CTX_set_min_proto_version(x, TLS1_2_VERSION);
        SSL_CTX_set_mode(x, SSL_MODE_RELEASE_BUFFERS);
        if (SSL_CTX_set_alpn_protos(x, alpn, sizeof(alpn) - 1) != 0) {
                SSL_CTX_free(x);
                return -ENOMEM;
        }
        if (cfg->insecure)
                SSL_CTX_set_verify(x, SSL_VERIFY_NONE, NULL);
        else {
                SSL_CTX_set_verify(x, SSL_VERIFY_PEER, NULL);
                if (cfg->ca_data) {
                        STACK_OF(X509) *sk = NULL;
                        X509_STORE *st = SSL_CTX_get_cert_store(x);
                        if (load_pem_certs(cfg->ca_data, &sk) < 0) {
                                what = "certificate-authority-data: no PEM certificate";
                                goto fail;
                        }
                        for (int i = 0; i < sk_X509_num(sk); i++)
                                X509_STORE_add_cert(st, sk_X509_value(sk, i));
                        sk_X509_pop_free(sk, X509_free);
                } else if (cfg->ca_file) {
                        if (SSL_CTX_load_verify_locations(x, cfg->ca_file, NULL) != 1) {
                                what = "cannot load the certificate authority file";
                                goto fail;
                        }
                } else
                        SSL_CTX_set_default_verify_paths(x);
        }
        if (cfg->cert_data) {
                STACK_OF(X509) *sk = NULL;
                if (load_pem_certs(cfg->cert_data, &sk) < 0) {
                        what = "client-certificate-data: no PEM certificate";
                        goto fail;
                }
                if (SSL_CTX_use_certificate(x, sk_X509_value(sk, 0)) != 1) {
                        sk_X509_pop_free(sk, X509_free);
                        what = "cannot use the client certificate";
                        goto fail;
                }
                for (int i = 1; i < sk_X509_num(sk); i++)
                        SSL_CTX_add1_chain_cert(x, sk_X509_value(sk, i));
                sk_X509_pop_free(sk, X509_free);
        } else if (cfg->cert_file && SSL_CTX_use_certificate_chain_file(x, cfg->cert_file) != 1) {
                what = "cannot load the client certificate file";
                goto fail;
        }
        if (cfg->key_data) {
                BIO *b = BIO_new_mem_buf(cfg->key_data, -1);
                EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
                BIO_free(b);
                if (!k || SSL_CTX_use_PrivateKey(x, k) != 1) {
                        EVP_PKEY_free(k);
                        what = "client-key-data: cannot use the private key";
                        goto fail;
                }
                EVP_PKEY_free(k);
        } else if (cfg->key_file && SSL_CTX_use_PrivateKey_file(x, cfg->key_file, SSL_FILETYPE_PEM) != 1) {
                what = "cannot load the client key file";
                goto fail;
        }
        if ((cfg->cert_data || cfg->cert_file) && (cfg->key_data || cfg->key_file) &&
            SSL_CTX_check_private_key(x) != 1) {
                what = "the client key does not match the certificate";
                goto fail;
        }
        ERR_clear_error();
        *ret = x;
        return 0;
fail:
        SSL_CTX_free(x);
        ERR_clear_error();
        return ck_error_set(ret_error, -EINVAL, "TLS: %s", what);
}
