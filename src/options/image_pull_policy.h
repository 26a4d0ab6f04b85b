/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* imagePullCredentialsVerificationPolicy and preloadedImagesVerificationAllowlist (KubeletEnsureSecretPulledImages,
 * beta on since v1.35): which images already present on the node must have their pull credentials verified,
 * as upstream's pkg/kubelet/images/pullmanager image_pull_policies.go. Pure functions, no state. */

#include <stdbool.h>
#include <stddef.h>

enum image_pull_verify_policy {
        IMAGE_PULL_NEVER_VERIFY,                    /* "NeverVerify": any image present may be used */
        IMAGE_PULL_NEVER_VERIFY_PRELOADED_IMAGES,   /* "NeverVerifyPreloadedImages" (default) */
        IMAGE_PULL_NEVER_VERIFY_ALLOWLISTED_IMAGES, /* "NeverVerifyAllowlistedImages" */
        IMAGE_PULL_ALWAYS_VERIFY,                   /* "AlwaysVerify" */
        _IMAGE_PULL_VERIFY_POLICY_MAX,
};

#define IMAGE_PULL_VERIFY_POLICY_DEFAULT "NeverVerifyPreloadedImages"

/* The policy's name → value; unknown names (and NULL): -EINVAL. */
int image_pull_verify_policy_from_string(const char *s);

/* One preloadedImagesVerificationAllowlist entry: an image name without tag or digest ("registry/repo",
 * familiar names normalized), or a prefix ending in a slash and an asterisk. 0 if valid, else -EINVAL with upstream's reason in
 * why (always NUL-terminated). */
int image_pull_allowlist_pattern_check(const char *pattern, char *why, size_t why_size);

/* The image's normalized name without tag or digest ("busybox:1" → "docker.io/library/busybox"); NULL
 * on allocation failure or an empty name. */
char *image_pull_normalized_name(const char *image);

/* RequireCredentialVerificationForImage: must a pod's credentials be checked for this image already present?
 * allowlist is a comma-separated list of validated patterns (NULL = none); pulled_by_kubelet: a pulled record
 * or pulling intent exists for the image. */
bool image_pull_require_verification(enum image_pull_verify_policy p, const char *allowlist, const char *image,
                                     bool pulled_by_kubelet);
