/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pure parts of the podCertificate and clusterTrustBundle projected volume sources (upstream's
 * pkg/kubelet/podcertificate and pkg/kubelet/clustertrustbundle): key pairs and their stub PKCS#10 request, the
 * issued chain as written, a PodCertificateRequest's outcome, the refresh time, the trust anchors of the selected
 * ClusterTrustBundles. The state machine that drives them lives in objects/manager.c. */

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* A PodCertificateRequest is assumed deleted when it has not been seen this long after it was created, and an
 * issued certificate's refresh starts up to PODCERT_JITTER_SECONDS after its beginRefreshAt (both as upstream). */
#define PODCERT_ASSUME_DELETED_SECONDS (10 * 60)
#define PODCERT_JITTER_SECONDS (5 * 60)
/* Caps on what comes from the API server. */
#define PODCERT_MAX_CHAIN_SIZE (1024 * 1024)
#define PODCERT_MAX_BUNDLE_SIZE (4 * 1024 * 1024)

/* true for RSA3072 RSA4096 ECDSAP256 ECDSAP384 ECDSAP521 ED25519 */
bool podcert_key_type_valid(const char *key_type);

/* Generate a key pair of key_type and a stub PKCS#10 request signed with it (empty subject, as upstream's
 * x509.CreateCertificateRequest of an empty template). Slow for RSA (hundreds of milliseconds): call it on a
 * worker thread. *ret_key_pem: the key as a PKCS#8 "PRIVATE KEY" PEM block; *ret_csr_b64: the request's DER in
 * base64 (the JSON form of spec.stubPKCS10Request). -EINVAL for an unknown key type, -EIO when OpenSSL fails. */
int podcert_generate(const char *key_type, char **ret_key_pem, char **ret_csr_b64);

/* Every PEM block of in re-encoded as a CERTIFICATE block, headers and text between blocks dropped
 * (cleanCertificateChain). Empty input gives "". */
int podcert_clean_chain(const char *in, size_t size, char **ret);

enum podcert_outcome {
        PODCERT_PENDING,
        PODCERT_ISSUED,
        PODCERT_DENIED,
        PODCERT_FAILED,
};

struct podcert_issued {
        char *chain;              /* cleaned (podcert_clean_chain) */
        int64_t begin_refresh_at; /* unix seconds */
        int64_t not_after;
};
void podcert_issued_done(struct podcert_issued *i); /* accepts NULL */

/* The outcome of a PodCertificateRequest from its status.conditions (the first of Denied, Failed, Issued in the
 * list's order). For ISSUED, *ret_issued is filled (status.certificateChain, beginRefreshAt, notAfter; -EBADMSG
 * when one is missing or malformed); for DENIED and FAILED, *ret_reason and *ret_message (borrowed from pcr). */
int podcert_pcr_outcome(json_t *pcr, enum podcert_outcome *ret, struct podcert_issued *ret_issued,
                        const char **ret_reason, const char **ret_message);

/* When a refresh starts: beginRefreshAt plus the jitter (0 <= jitter < PODCERT_JITTER_SECONDS). */
int64_t podcert_refresh_at(int64_t begin_refresh_at, int64_t jitter);

/* metav1.LabelSelectorAsSelector(sel).Matches(labels): NULL sel matches nothing, {} everything; matchLabels and
 * matchExpressions (In, NotIn, Exists, DoesNotExist) all hold. */
bool podcert_selector_matches(const json_t *sel, const json_t *labels);

/* The trust anchors of a clusterTrustBundle source from the ClusterTrustBundles of the cluster (an array of
 * certificates.k8s.io/v1 objects): by name (sel ignored), or by signer name and label selector. The PEM
 * blocks of every selected bundle's spec.trustBundle, deduplicated and re-encoded as CERTIFICATE blocks, in an
 * order shuffled (as upstream, so that nobody relies on one) but stable for the same set of anchors.
 * -ENOENT when nothing matched (the name does not exist; or "matched zero ClusterTrustBundles"): the caller
 * decides with `optional`. */
int podcert_trust_anchors(const json_t *bundles, const char *name, const char *signer_name, const json_t *sel,
                          char **ret, size_t *ret_size);
