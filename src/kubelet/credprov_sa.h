/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pod's service account for credential provider plugins with tokenAttributes
 * (KubeletServiceAccountTokenForCredentialProviders): GET the ServiceAccount (the node authorizer allows a
 * plain get of the service accounts of the node's pods, not a list or watch), then a TokenRequest for each
 * audience the matching plugins want, bound to the pod and carrying the service account's UID as upstream's
 * getServiceAccountToken; both through the API client, off the loop. Its result, a struct credprov_pod_sa, goes
 * to credprov_lookup. */

#include <jansson.h>

#include "client/client.h"
#include "credentialprovider/plugin/plugin.h"

struct credprov_sa_fetch;

/* sa: borrowed for the call */
typedef void (*credprov_sa_done_t)(const struct credprov_pod_sa *sa, void *userdata);

/* Starts the fetch for the image's matching providers; done runs exactly once, later on the loop, unless
 * cancelled. */
int credprov_sa_fetch(struct kube_client *c, struct credprov *p, const char *image, const char *ns,
                      const char *pod_name, const char *pod_uid, const char *sa_name, credprov_sa_done_t done,
                      void *userdata, struct credprov_sa_fetch **ret);
void credprov_sa_fetch_cancel(struct credprov_sa_fetch *f); /* accepts NULL */

/* The TokenRequest's body (pure; exposed for tests): audiences [audience], boundObjectRef the pod, metadata.uid
 * the service account's; expirationSeconds left to the API server's default, as upstream. */
json_t *credprov_sa_token_request(const char *sa_uid, const char *audience, const char *pod_name, const char *pod_uid);
