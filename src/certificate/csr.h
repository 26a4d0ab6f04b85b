/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pure parts of certificate requests (client-go's util/certificate and util/cert, the kubelet's
 * certificate/bootstrap): keys, PKCS#10 requests, the CertificateSigningRequest object and its states, what a
 * certificate says, and when to rotate it. OpenSSL does the cryptography; nothing here touches the network. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ck_error;

/* signers and usages (certificates.k8s.io/v1) */
#define CERT_SIGNER_KUBELET_CLIENT "kubernetes.io/kube-apiserver-client-kubelet"
#define CERT_SIGNER_KUBELET_SERVING "kubernetes.io/kubelet-serving"
extern const char *const cert_client_usages[];  /* digital signature, key encipherment, client auth */
extern const char *const cert_serving_usages[]; /* digital signature, key encipherment, server auth */

/* What a request asks for: the subject and the subject alternative names. */
struct cert_template {
        char *common_name;    /* "system:node:<node>" */
        char **organizations; /* ["system:nodes"] */
        char **dns_names;     /* serving: the node's host names */
        char **ip_addresses;  /* serving: the node's addresses */
};
void cert_template_done(struct cert_template *t);

/* A new ECDSA P-256 key as upstream makes it: PEM "EC PRIVATE KEY" (SEC 1). */
int cert_key_generate(char **ret_pem);
/* Does PEM hold a private key OpenSSL can use? */
bool cert_key_valid(const char *pem);

/* A PKCS#10 request for the key in KEY_PEM: subject O=..., CN=... (Go's RDN order), the SANs as an extension,
 * signed with SHA-256. PEM "CERTIFICATE REQUEST". */
int cert_request_create(const char *key_pem, const struct cert_template *t, char **ret_pem,
                        struct ck_error **ret_error);

/* upstream's digestedName for bootstrap requests: "node-csr-" + base64url(SHA-512/256 of the public key, the CN,
 * the organizations and the usages, each base64url-encoded and followed by '|'). Stable for one key and subject,
 * so that a restart finds the request it made before. */
int cert_request_digested_name(const char *key_pem, const struct cert_template *t, const char *const *usages,
                               char **ret);

/* Does the PKCS#10 request REQUEST_PEM carry the public key of KEY_PEM (upstream's ensureCompatible: a request
 * found under our name is ours)? */
bool cert_request_matches_key(const char *request_pem, const char *key_pem);

/* The certificates.k8s.io/v1 CertificateSigningRequest to POST: metadata.name, or generateName "csr-" when
 * NAME is NULL; spec.request (base64 of the PEM), signerName, usages. */
json_t *cert_csr_object(const char *name, const char *request_pem, const char *signer, const char *const *usages);

enum cert_csr_state {
        CERT_CSR_PENDING,  /* neither approved nor denied yet */
        CERT_CSR_APPROVED, /* approved, waiting for the signer */
        CERT_CSR_ISSUED,   /* approved and status.certificate set */
        CERT_CSR_DENIED,
        CERT_CSR_FAILED,
};
/* The state of a CSR object as upstream's WaitForCertificate reads it (Denied and Failed first, then Approved
 * with or without the certificate). *ret_reason and *ret_message (optional, borrowed) are the deciding
 * condition's; *ret_certificate (optional) is the decoded PEM of status.certificate when issued (caller frees).
 * -EINVAL when status.certificate is not base64. */
int cert_csr_state(const json_t *csr, enum cert_csr_state *ret, const char **ret_reason, const char **ret_message,
                   char **ret_certificate);

/* What a certificate says. Times are Unix microseconds. */
struct cert_info {
        int64_t not_before_usec, not_after_usec;
        char *common_name;
        char **organizations;
        char **dns_names;
        char **ip_addresses;
        char *serial; /* hex */
};
void cert_info_done(struct cert_info *i);

/* A pair file as the kubelet's certificate store writes it (kubelet-client-current.pem): certificates, then the
 * key, in one PEM. Splits it, checks that the key belongs to the leaf and returns the leaf's info. Errors name
 * what is wrong ("no private key", "the private key does not match the certificate"). Outputs may be NULL. */
int cert_pair_parse(const char *pem, size_t len, char **ret_cert_pem, char **ret_key_pem, struct cert_info *ret_info,
                    struct ck_error **ret_error);

/* upstream's jitteryDuration: rotate at a random point in 70-90% of the certificate's lifetime, counted from
 * notBefore. JITTER01 in [0, 1) picks the point. */
int64_t cert_rotation_deadline(const struct cert_info *i, double jitter01);

/* certSatisfiesTemplate: the certificate has the template's CN and at least its organizations, DNS names and IP
 * addresses (extra ones do not matter). */
bool cert_satisfies_template(const struct cert_info *i, const struct cert_template *t);
