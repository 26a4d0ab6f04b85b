/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The client CA bundle (--client-ca-file, authentication.x509.clientCAFile), reloaded when the file changes
 * (ReloadKubeletClientCAFile, beta on since v1.36; upstream's DynamicFileCAContent): the file is checked every
 * API_CLIENT_CA_CHECK_USEC on the loop (a stat; read and parsed only when its identity, size or times change);
 * a changed bundle with at least one certificate replaces the verify store and the CA names of the TLS context,
 * so new handshakes use it and established connections are left alone; a file that cannot be read or holds no
 * certificate keeps the bundle in use, with an error logged once per change. */

#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>

struct api_server;
struct ck_error;

#define API_CLIENT_CA_CHECK_USEC (1 * USEC_PER_SEC)
#define API_CLIENT_CA_MAX (4u * 1024u * 1024u) /* the largest bundle read */

/* A PEM bundle as a verify store and the list of its subjects (the CA names sent in the CertificateRequest).
 * Pure. -EINVAL with *ret_error ("data does not contain any valid RSA or ECDSA certificates", upstream's
 * words, or the PEM error) for a bundle without a certificate, -ENOMEM; ret_ outputs untouched on failure. */
int api_client_ca_parse(const char *pem, size_t size, X509_STORE **ret_store, STACK_OF(X509_NAME) * *ret_names,
                        struct ck_error **ret_error);

/* Load the file into s->ssl_ctx and start watching it. 0, or -EINVAL with the error logged (as upstream, a
 * client CA file that cannot be loaded at start stops the kubelet), -ENOMEM. */
int api_client_ca_setup(struct api_server *s, struct ck_error **ret_error);
/* One check now (the timer's work; tests call it). */
void api_client_ca_check(struct api_server *s);
void api_client_ca_done(struct api_server *s);
