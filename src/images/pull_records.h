/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The records of KubeletEnsureSecretPulledImages (upstream's pkg/kubelet/images/pullmanager fs_pullrecords.go):
 * <root-dir>/image_manager/pulling/sha256-<sha256(image)> holds an ImagePullIntent written before a pull;
 * <root-dir>/image_manager/pulled/sha256-<sha256(imageRef)> an ImagePulledRecord: which credentials pulled the
 * image, keyed by its normalized repository. Both kubelet.config.k8s.io JSON documents. This is the codec and the
 * credential match only (pure, no files). */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

#define PULL_RECORD_MAX_SIZE (256 * 1024) /* a record file larger than this is refused on read */
#define PULL_RECORD_API_VERSION "kubelet.config.k8s.io/v1alpha1"

struct pull_secret_coord {
        const char *uid, *namespace, *name, *credential_hash;
};

struct pull_sa_coord {
        const char *uid, *namespace, *name;
};

/* The credentials a pull used or a pod brings. node_pods_accessible: node-wide credentials (or none) pulled it. */
struct pull_creds {
        bool node_pods_accessible;
        const struct pull_secret_coord *secrets;
        size_t n_secrets;
        const struct pull_sa_coord *sas;
        size_t n_sas;
};

/* "sha256-<hex of sha256(key)>" into buf (at least 72 bytes). */
int pull_record_file_name(const char *key, char *buf, size_t size);

/* ImagePullIntent {"kind","apiVersion","image"}: encode (a new string) and decode (checked, capped). */
char *pull_intent_encode(const char *image);
int pull_intent_decode(const char *buf, size_t len, char **ret_image, struct ck_error **ret_error);

/* ImagePulledRecord: decode checks kind, apiVersion, imageRef and the shape of credentialMapping. */
int pulled_record_decode(const char *buf, size_t len, json_t **ret_record, struct ck_error **ret_error);
char *pulled_record_encode(const json_t *record);
/* Adds the credentials that pulled image_repo (the normalized name without tag) to *record, creating it when NULL. */
int pulled_record_add(json_t **record, const char *image_ref, const char *image_repo, const struct pull_creds *c,
                      uint64_t now_realtime_usec);
/* Does a record allow a pod with creds to use image_repo without a pull? As upstream's MustAttemptImagePull's
 * match: node-wide access, a secret with the same namespace/name/uid or the same credential hash, or the same
 * service account. */
bool pulled_record_match(const json_t *record, const char *image_repo, const struct pull_creds *c);
