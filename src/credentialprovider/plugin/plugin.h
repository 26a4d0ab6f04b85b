/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Exec credential provider plugins (pkg/credentialprovider/plugin): for an image that a provider's matchImages
 * match, run <bin-dir>/<name> <args> with a CredentialProviderRequest on stdin and read a
 * CredentialProviderResponse from stdout; cache its credentials by cacheKeyType (Image, Registry or Global) for
 * cacheDuration (else the provider's defaultCacheDuration; 0: not cached). Requests for the same provider and
 * image made while one runs wait for it (upstream's singleflight); each provider's runs are serialized
 * (CREDPROV_MAX_RUNNING), queued in order.
 *
 * The plugin is a child process watched by the event loop (basic/spawn.h): a one-minute timeout kills it (and
 * its process group), its output is capped, and nothing waits for it but the lookups that asked. A plugin that
 * fails or answers garbage gives no credentials, as upstream, and its error travels with the lookup's result so
 * that a pull that then fails can say why. Credentials are never logged. */

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/time.h"
#include "credentialprovider/keyring.h"
#include "credentialprovider/plugin/config.h"

#define CREDPROV_EXEC_TIMEOUT_USEC (60 * UINT64_C(1000000)) /* upstream's catch-all: one minute */
#define CREDPROV_STDOUT_MAX (1024u * 1024u)
#define CREDPROV_STDERR_MAX (16u * 1024u)
#define CREDPROV_CACHE_MAX 1024 /* entries per provider */
/* Plugin processes running at once for one provider: one (issue 26: a pod of many images cannot fork a process per
 * image at once; a plugin that hangs holds up only the images it matches); the others wait in order, their
 * one-minute timeout counted from their start. */
#define CREDPROV_MAX_RUNNING 1

/* ---- the wire (pure; exposed for tests) ---- */

enum credprov_cache_key_type {
        CREDPROV_CACHE_IMAGE,
        CREDPROV_CACHE_REGISTRY,
        CREDPROV_CACHE_GLOBAL,
};

struct credprov_response {
        enum credprov_cache_key_type cache_key_type;
        bool has_cache_duration;
        int64_t cache_duration_nsec;
        json_t *auth; /* {"match image": {"username": ..., "password": ...}}, the docker config auths shape */
};

void credprov_response_done(struct credprov_response *r);
/* The request's JSON: {"kind":"CredentialProviderRequest","apiVersion":...,"image":...}, with
 * "serviceAccountToken" and "serviceAccountAnnotations" when given (tokenAttributes; both omitted when empty).
 * NULL on OOM. */
char *credprov_request_encode(const char *api_version, const char *image, const char *sa_token,
                              const json_t *sa_annotations);
/* Decode a plugin's stdout as upstream: its apiVersion must be the provider's, its kind
 * CredentialProviderResponse, no unknown field, cacheKeyType one of the three. *ret_error says why not (never
 * quoting the output, which may hold credentials). */
int credprov_response_decode(const char *out, size_t len, const char *api_version, struct credprov_response *ret,
                             struct ck_error **ret_error);
/* The registry part of an image ("127.0.0.1:5000/a/b" → "127.0.0.1:5000"); allocated. */
char *credprov_registry_of(const char *image);

/* ---- the cache (pure; exposed for tests) ---- */

/* ---- service account tokens (tokenAttributes; pure, exposed for tests) ---- */

/* upstream's cache key of the service account part (generateServiceAccountCacheKey), hex of its bytes: the
 * namespace, name and UID of the service account and the annotations given to the plugin, and with cacheType
 * "Token" the token's hash as well. NULL on OOM or a string over 64 KiB. */
char *credprov_sa_cache_key(const char *ns, const char *sa_name, const char *sa_uid, const json_t *annotations,
                            const char *cache_type, const char *token);
/* singleflight's key with a token (generateSingleFlightKey): the image, the token's hash and the annotations */
char *credprov_flight_key(const char *image, const char *token, const json_t *annotations);
/* "sha256:<hex>" of a token, "" for none (getHashIfNotEmpty); allocated */
char *credprov_token_hash(const char *token);
/* The annotations of the service account the plugin gets: every required key (else *ret_missing names the
 * first one missing and NULL comes back, the plugin is not run), and the optional keys present. */
json_t *credprov_sa_annotations(const struct credprov_token_attributes *a, const json_t *sa_annotations,
                                const char **ret_missing);

struct credprov_cache_entry {
        char *key;    /* an image, a registry, or "global" */
        char *sa_key; /* credprov_sa_cache_key, "" without a service account token */
        json_t *auth;
        uint64_t expires_usec; /* monotonic */
};

struct credprov_cache {
        struct credprov_cache_entry *entries;
        size_t n;
};

void credprov_cache_done(struct credprov_cache *c);
/* The cached credentials for image: by the image, else its registry, else "global"; expired entries are
 * dropped. NULL: none. The reference is borrowed. */
json_t *credprov_cache_get(struct credprov_cache *c, const char *image, const char *sa_key, uint64_t now_usec);
/* Remember the response's credentials for image under its cacheKeyType, for its cacheDuration (else
 * default_nsec); nothing when that is 0. The entry expiring first makes room when the cache is full. */
int credprov_cache_add(struct credprov_cache *c, const char *image, const char *sa_key,
                       const struct credprov_response *r, int64_t default_nsec, uint64_t now_usec);

/* ---- the providers ---- */

struct credprov;
struct credprov_lookup;

/* Reads and validates the config, checks the bin dir and each provider's executable (RegisterCredentialProvider
 * Plugins). *ret_error says what is wrong (the kubelet does not start). */
int credprov_new(struct event_base *base, const char *config_path, const char *bin_dir, struct credprov **ret,
                 struct ck_error **ret_error);
/* Kills running plugins; pending lookups end without their callback. Accepts NULL. */
struct credprov *credprov_free(struct credprov *p);

/* creds: the credentials of every matching provider (first provider's first), as a keyring the callback may
 * keep (it takes it over); error: why a provider gave none (NULL when all answered). */
typedef void (*credprov_cb)(struct cred_keyring *creds, const char *error, void *userdata);

/* The pod's service account for providers with tokenAttributes: the kubelet GETs the ServiceAccount and asks a
 * TokenRequest for each audience credprov_token_audiences names, bound to the pod, then looks up. */
struct credprov_pod_sa {
        const char *namespace, *pod_name, *pod_uid;
        const char *name;          /* spec.serviceAccountName; NULL or "": none (a static pod) */
        const char *uid;           /* the ServiceAccount's metadata.uid */
        const json_t *annotations; /* its metadata.annotations; NULL: none */
        const json_t *tokens;      /* {"audience": "token"} */
        const char *error;         /* why the ServiceAccount or a token could not be had (given to the providers
                                    * with tokenAttributes as their error); NULL: none */
};

/* Does a provider matching image have tokenAttributes (the pod's service account is wanted)? */
bool credprov_wants_service_account(struct credprov *p, const char *image);
/* The audiences to ask tokens for: of the providers matching image with tokenAttributes whose required
 * annotations sa_annotations has. NULL when none. */
char **credprov_token_audiences(struct credprov *p, const char *image, const json_t *sa_annotations);

/* Credentials for an image repository ("127.0.0.1:5000/app", as cred_image_repository gives it); sa (optional,
 * borrowed for the call) for providers with tokenAttributes: without it they give none when they require a
 * service account, else run without a token. The callback runs exactly once, later on the loop, never from
 * inside this call. *ret (optional) cancels it. */
int credprov_lookup(struct credprov *p, const char *image, const struct credprov_pod_sa *sa, credprov_cb cb,
                    void *userdata, struct credprov_lookup **ret);
/* The callback will not run. Accepts NULL. */
void credprov_lookup_cancel(struct credprov_lookup *l);
