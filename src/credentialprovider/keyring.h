/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Image pull credentials from a pod's imagePullSecrets (pkg/credentialprovider: BasicDockerKeyring,
 * DockerConfigJSON, URLsMatch). Credentials are never logged. */

#include <jansson.h>
#include <stddef.h>

struct ck_error;

struct cred_auth {
        char *key; /* the registry key as given ("https://index.docker.io/v1/"), normalized */
        char *username;
        char *password;
        /* the Secret it came from (cred_keyring_add_secret), NULL otherwise: the pulled-image credential records */
        char *secret_namespace, *secret_name, *secret_uid;
};

struct cred_keyring {
        struct cred_auth *auths;
        size_t n;
};

void cred_keyring_done(struct cred_keyring *k); /* accepts NULL */

/* A docker config "auths" map ({"registry": {"auth": base64(user:pass)} or {"username", "password"}}). */
int cred_keyring_add_config(struct cred_keyring *k, const json_t *auths);
/* A Secret of type kubernetes.io/dockerconfigjson (.dockerconfigjson: {"auths": {...}}) or
 * kubernetes.io/dockercfg (.dockercfg: the map itself). Other types: -EINVAL with a message. */
int cred_keyring_add_secret(struct cred_keyring *k, const json_t *secret, struct ck_error **ret_error);

/* Every credential matching the image, the most specific key first (keys sorted in reverse), as
 * BasicDockerKeyring.Lookup; ret is an array of borrowed pointers (free() it). 0 matches: *ret = NULL. */
int cred_keyring_lookup(const struct cred_keyring *k, const char *image, const struct cred_auth ***ret, size_t *ret_n);

/* The image's normalized repository without tag or digest: "busybox" → "docker.io/library/busybox",
 * "127.0.0.1:5000/a/b:1" → "127.0.0.1:5000/a/b". */
char *cred_image_repository(const char *image);
/* URLsMatchStr: glob "*.example.com:5000/path" against a target registry/repository. */
int cred_url_match(const char *glob, const char *target);
