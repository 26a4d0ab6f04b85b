/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet's ConfigMap/Secret managers (pkg/kubelet/util/manager, Watch strategy) and token manager
 * (pkg/kubelet/token) on the kube client.
 *
 * Objects: each object referenced by at least one registered pod is listed with
 * fieldSelector=metadata.name=<name> and then watched from the list's resourceVersion, so its cached value
 * stays current; the watch starts when the first pod references the object and stops when the last one no
 * longer does. A change (ADDED, MODIFIED, DELETED, or a relist that finds another resourceVersion) calls
 * changed() for every pod that references the object. Static pods (api = false) and a kubelet without an
 * API server get -ENOENT for every object and token.
 *
 * Tokens: a TokenRequest per (pod, service account, audience, expirationSeconds), bound to the pod, cached
 * and requested again when older than 80% of its TTL or than 24 h (token_manager.go requiresRefresh); a
 * failed refresh keeps serving the cached token while it has not expired.
 *
 * ClusterTrustBundles (clustertrustbundle manager): the cluster's list, watched once a pod has a clusterTrustBundle
 * source; a change syncs those pods.
 *
 * Pod certificates (podcertificate.IssuingManager): per podCertificate source of a pod, a key pair made on a
 * worker thread, a PodCertificateRequest (certificates.k8s.io/v1) naming the pod, its service account and the
 * node, then the issued chain from the node's PodCertificateRequests (one list and watch, fieldSelector
 * spec.nodeName, as the Node authorizer allows); a new key and request from beginRefreshAt (plus up to 5 min of
 * jitter), serving the old credentials meanwhile; Denied or Failed is final. A request not seen 10 min after its
 * creation is taken as deleted and made again. Errors are retried with a back-off (1 s doubling to 5 min). A pod
 * waits only for its first request to be made; until the signer answers, the volume's SetUp fails with "credential
 * bundle is not issued yet", as upstream. Nothing survives a restart (as upstream: new keys and requests). */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "client/client.h"
#include "objects/objects.h"
#include "objects/refs.h"

/* At most this many services of one namespace are kept for the service environment variables. */
#define OBJ_MAX_SERVICES 10000

struct objects_manager;

typedef void (*objects_changed_t)(const char *pod_uid, void *userdata);
typedef void (*objects_ready_t)(void *userdata);

/* client may be NULL (no API server). */
int objects_manager_new(struct event_base *base, struct kube_client *client, objects_changed_t changed, void *userdata,
                        struct objects_manager **ret);
/* The node's name: podCertificate sources' requests name it, and the node's PodCertificateRequests are watched.
 * Without it (standalone), podCertificate sources fail. */
int objects_manager_set_node_name(struct objects_manager *m, const char *node_name);
/* Fetch objects through CLIENT from now on (the node got its client certificate only now). */
void objects_manager_set_client(struct objects_manager *m, struct kube_client *client);
struct objects_manager *objects_manager_free(struct objects_manager *m); /* accepts NULL, returns NULL */

/* (Re)register the references of a pod: objects no longer referenced by any pod stop being watched. */
int objects_manager_register(struct objects_manager *m, const char *uid, const char *ns, const char *pod_name, bool api,
                             const struct pod_refs *refs);
void objects_manager_unregister(struct objects_manager *m, const char *uid);

/* Starts the token requests that are due. Returns 0 when every object and token of the pod has an answer
 * now, 1 when ready() will be called (on the loop) once they have, unless cancelled; negative errno. */
int objects_manager_wait(struct objects_manager *m, const char *uid, objects_ready_t ready, void *userdata);
void objects_manager_cancel_wait(struct objects_manager *m, const char *uid);

/* Put the pod's objects and tokens, as known now, into o (objects_pod_put / put_error / put_token). */
int objects_manager_fill(struct objects_manager *m, const char *uid, struct pod_objects *o);

/* token_manager.go requiresRefresh (without its jitter): now, the token's expiration and its requested
 * lifetime, in unix seconds. */
bool objects_token_requires_refresh(int64_t now, int64_t expiration, int64_t expiration_seconds);
