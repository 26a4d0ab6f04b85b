/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The credential provider configuration (--image-credential-provider-config; pkg/credentialprovider/plugin
 * config.go): a CredentialProviderConfig of kubelet.config.k8s.io/v1 (v1beta1, v1alpha1 alike), in YAML or JSON,
 * one file or a directory of *.json, *.yaml and *.yml files read in name order and merged. Decoded strictly
 * (an unknown field is an error) and validated with upstream's rules and words. Pure but for reading files. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

struct credprov_env {
        char *name, *value;
};

/* tokenAttributes (KubeletServiceAccountTokenForCredentialProviders, beta on since v1.34): the plugin gets a token
 * of the pod's service account for this audience, and the listed annotations of the service account */
struct credprov_token_attributes {
        char *audience; /* serviceAccountTokenAudience */
        bool has_require_service_account;
        bool require_service_account;
        char **required_annotation_keys; /* requiredServiceAccountAnnotationKeys */
        char **optional_annotation_keys; /* optionalServiceAccountAnnotationKeys */
        char *cache_type;                /* "ServiceAccount" or "Token" */
};

struct credprov_provider {
        char *name;          /* the executable in --image-credential-provider-bin-dir */
        char **match_images; /* globs of registry[:port][/path], as URLsMatchStr matches them */
        int64_t default_cache_duration_nsec;
        char *api_version; /* credentialprovider.kubelet.k8s.io/v1, v1beta1 or v1alpha1 */
        char **args;
        struct credprov_env *env;
        size_t n_env;
        struct credprov_token_attributes *token_attributes; /* NULL: none */
};

struct credprov_config {
        struct credprov_provider *providers;
        size_t n;
};

void credprov_config_done(struct credprov_config *c); /* accepts NULL */

/* A file or a directory (its *.json, *.yaml and *.yml files, in name order), one document (YAML or JSON) each,
 * merged; then validated. *ret_error: what is wrong, as upstream words it ("failed to validate credential provider
 * config: ...", or a decoding error naming the file). */
int credprov_config_load(const char *path, struct credprov_config *ret, struct ck_error **ret_error);

/* ParseSchemelessURL's checks on a matchImages entry: NULL when valid, else the reason (static text). */
const char *credprov_match_image_invalid(const char *s);
