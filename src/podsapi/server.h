/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pods API, pods/v1alpha1 (pkg/kubelet/apis/pods, feature gate PodsAPI, beta and on in v1.37): ListPods,
 * GetPod and WatchPods on <root-dir>/pods-api/pods-api.sock, served by src/grpc/server.c on the loop, for node
 * agents that want the kubelet's pods without asking the API server. A pod goes out as the protobuf encoding of
 * a v1.Pod (src/apis/k8sproto.h): its spec as the kubelet has it and its status as the kubelet generated it.
 *
 * As upstream: the pods are sorted by UID; before every pod source has delivered each call fails with
 * FailedPrecondition "Kubelet is initializing"; a watch gets ADDED for each pod, then INITIAL_SYNC_COMPLETE,
 * then ADDED / MODIFIED when a pod appears or its object changes and DELETED (with its name, namespace and UID
 * only) when it is finished or gone; a watcher that does not keep up is dropped (ResourceExhausted "watch client
 * channel closed"); List and Get are rate limited (100 per second, bursts of 10: ResourceExhausted "rejected by
 * rate limit"); an unknown UID is NotFound "pod with UID <uid> not found". Changes reported together in one turn
 * of the loop go out once, and only when the pod's encoding changed. */

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>

#define PODSAPI_DIR "pods-api"         /* under the root dir */
#define PODSAPI_SOCKET "pods-api.sock" /* in it */
#define PODSAPI_QPS 100
#define PODSAPI_BURST 10
#define PODSAPI_MAX_WATCHERS 128

struct podsapi_provider {
        /* every pod the kubelet has, each a v1 Pod object with its live status, as a JSON array (a new reference) */
        int (*pods_json)(void *userdata, json_t **ret);
        /* one pod by UID (a new reference); -ENOENT when the kubelet has no such pod */
        int (*pod_json)(void *userdata, const char *uid, json_t **ret);
        /* every pod source has delivered its pods */
        bool (*ready)(void *userdata);
        void *userdata;
};

struct podsapi_server;

/* Listens on socket_path (its directory must exist). p is copied. */
int podsapi_server_new(struct event_base *base, const char *socket_path, const struct podsapi_provider *p,
                       struct podsapi_server **ret);
/* Ends every watch, closes the socket. Accepts NULL; returns NULL. */
struct podsapi_server *podsapi_server_free(struct podsapi_server *s);

/* The pod's object may have changed (its spec or its status): the watchers hear of it later in this turn of the
 * loop if its encoding differs from what they last got. Cheap when nobody watches. s may be NULL. */
void podsapi_pod_changed(struct podsapi_server *s, const char *uid);
/* The pod is finished or gone: the watchers get DELETED (once) if they were told of it. s may be NULL. */
void podsapi_pod_removed(struct podsapi_server *s, const char *uid, const char *namespace_, const char *name);
