/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pulled-image credential records of KubeletEnsureSecretPulledImages on disk, as upstream's pull manager
 * (pkg/kubelet/images/pullmanager: image_pull_manager.go over fs_pullrecords.go):
 *   <root-dir>/image_manager/pulling/sha256-<sha256(image)>   an ImagePullIntent, written before a pull starts and
 *                                                              removed when the last pull of that image ends
 *   <root-dir>/image_manager/pulled/sha256-<sha256(imageRef)> an ImagePulledRecord: which credentials pulled it
 * Both directories are read once at start (each file capped at PULL_RECORD_MAX_SIZE, at most
 * PULL_STORE_MAX_FILES files each) into memory, which answers every question afterwards; every change is written
 * (temp file, fsync, rename) or removed on a worker thread of the store's own, in order per file, never on the
 * loop. An intent left by a kubelet that died during a pull marks its image as pulled by the kubelet; when that
 * image is found present it becomes a pulled record without credentials (so that its credentials are verified),
 * as upstream's initialize does at start. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "images/pull_records.h"
#include "options/image_pull_policy.h"

#define PULL_STORE_MAX_FILES 20000u
/* a secret that matches a record by hash or by coordinates alone is added to it while it holds fewer secrets */
#define PULL_STORE_MAX_SECRETS_ADDED_ON_MATCH 100u

struct pull_store;

int pull_store_new(struct event_base *base, const char *root_dir, struct pull_store **ret);
/* Waits for the writes in flight. Accepts NULL, returns NULL. */
struct pull_store *pull_store_free(struct pull_store *s);

/* RecordPullIntent / RecordImagePullFailed: one more (one fewer) pull of image in flight; the intent file is
 * written on the first and removed after the last. */
int pull_store_intent_begin(struct pull_store *s, const char *image);
void pull_store_intent_end(struct pull_store *s, const char *image);

/* RecordImagePulled: image (as the pod names it) was pulled as image_ref with creds (NULL: unknown, the record
 * then holds no credentials for it). Merged into the record of image_ref, written when it changed. */
int pull_store_pulled(struct pull_store *s, const char *image, const char *image_ref, const struct pull_creds *creds,
                      uint64_t now_realtime_usec);

/* MustAttemptImagePull: image is present as image_ref; must a pod with pod_creds pull it (verify its
 * credentials) before using it, by the policy and allowlist? */
bool pull_store_must_pull(struct pull_store *s, enum image_pull_verify_policy policy, const char *allowlist,
                          const char *image, const char *image_ref, const struct pull_creds *pod_creds,
                          uint64_t now_realtime_usec);

/* PruneUnknownRecords: the records of images not among ids (what the runtime has) and not updated since
 * listed_usec (realtime) are removed. */
void pull_store_prune(struct pull_store *s, const char *const *ids, size_t n, int64_t listed_usec);

/* upstream's credentialHash of a secret's credential: sha256 (hex) of its {"username","password"} JSON; buf of
 * at least 65 bytes. */
int pull_store_credential_hash(const char *username, const char *password, char *buf, size_t size);
