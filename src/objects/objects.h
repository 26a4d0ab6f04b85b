/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The API objects one pod's sync needs: ConfigMaps, Secrets and service account tokens, fetched before the
 * sync acts (as upstream's secret/configmap/token managers feed volumes and env) and then looked up
 * synchronously while the sync builds volumes, environment and pull credentials.
 *
 * A lookup answers one of three ways, as upstream distinguishes them:
 *   0        found: *ret is a borrowed reference to the object's JSON (a v1 ConfigMap or Secret as the API
 *            server returns it; for a token, the TokenRequest's status {"token", "expirationTimestamp"})
 *   -ENOENT  the API server says it does not exist (404), or there is no API server at all (standalone
 *            mode): an "optional" reference is then skipped, a required one fails
 *   other    it could not be fetched (the API server is unreachable, forbidden, ...): the sync fails and is
 *            retried; the message says why */

#include <jansson.h>
#include <stdint.h>

struct pod_objects;

int objects_pod_new(struct pod_objects **ret);
struct pod_objects *objects_pod_free(struct pod_objects *o); /* accepts NULL, returns NULL */

/* kind: "ConfigMap" or "Secret". obj: a new reference is taken. */
int objects_pod_put(struct pod_objects *o, const char *kind, const char *ns, const char *name, json_t *obj);
/* Record that the object could not be had: err is -ENOENT (not found) or another negative errno; message
 * (may be NULL) is kept for the error the sync reports. */
int objects_pod_put_error(struct pod_objects *o, const char *kind, const char *ns, const char *name, int err,
                          const char *message);
/* An object never put nor put_error'ed is -ENOENT with message NULL. */
int objects_pod_lookup(const struct pod_objects *o, const char *kind, const char *ns, const char *name, json_t **ret,
                       const char **ret_message);

/* Service account tokens (TokenRequest), keyed by service account, audience ("" = the API server's) and
 * requested expiration. */
int objects_pod_put_token(struct pod_objects *o, const char *ns, const char *service_account, const char *audience,
                          int64_t expiration_seconds, json_t *status);
int objects_pod_put_token_error(struct pod_objects *o, const char *ns, const char *service_account,
                                const char *audience, int64_t expiration_seconds, int err, const char *message);
int objects_pod_lookup_token(const struct pod_objects *o, const char *ns, const char *service_account,
                             const char *audience, int64_t expiration_seconds, json_t **ret, const char **ret_message);
