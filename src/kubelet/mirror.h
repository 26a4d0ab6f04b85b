/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Mirror pods (pkg/kubelet/pod/mirror_client.go and the static pod parts of syncPod / HandlePodCleanups): every
 * running static pod has a copy in the API server, annotated kubernetes.io/config.mirror=<config hash> and
 * owned by the Node, so that the cluster sees it. A mirror pod that is missing is created; one whose hash is
 * not the static pod's (the manifest changed) or that is being deleted is deleted and created anew; one whose
 * static pod is gone is deleted. Deletions carry the mirror pod's UID as a precondition and grace period 0. */

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>

#include "apis/pod.h"
#include "client/client.h"

/* ---------------------------------------------------------------- the decision (pure) */

struct mirror_observed { /* a mirror pod as the API server has it */
        const char *namespace_, *name, *uid;
        const char *hash; /* its kubernetes.io/config.mirror annotation */
        bool deleting;    /* has a deletionTimestamp */
};

enum mirror_action_kind { MIRROR_CREATE, MIRROR_DELETE };

struct mirror_action {
        enum mirror_action_kind kind;
        size_t index; /* CREATE: into the static pods; DELETE: into the observed mirror pods */
};

/* The actions that make the observed mirror pods match the static pods. A CREATE for a pod whose outdated
 * mirror is deleted in the same plan comes after that DELETE. A static pod that is terminating (terminating[i], its
 * manifest removed while its containers stop; terminating may be NULL) keeps its mirror pod as it is, showing its
 * status, and gets none created: the mirror goes once the pod is gone. *ret_actions is allocated (n <= n_static
 * + n_observed). */
int kubelet_mirror_plan(const struct pod *const *static_pods, const bool *terminating, size_t n_static,
                        const struct mirror_observed *observed, size_t n_observed, struct mirror_action **ret_actions,
                        size_t *ret_n);

/* The mirror pod to create for a static pod: its document with the kubelet's name, namespace, annotations
 * (config.mirror = the config hash), spec.nodeName and an ownerReference to the Node. NULL on OOM. */
json_t *kubelet_mirror_pod_build(const struct pod *static_pod, const char *node_name, const char *node_uid);

/* ---------------------------------------------------------------- the manager */

struct mirror_manager;

int kubelet_mirror_new(struct kube_client *client, const char *node_name, struct mirror_manager **ret);
struct mirror_manager *kubelet_mirror_free(struct mirror_manager *m); /* accepts NULL; cancels requests */

/* The mirror pods the API server holds for this node (array of Pod objects, borrowed), after every change. */
void kubelet_mirror_observed(struct mirror_manager *m, const json_t *mirror_pods);
/* Issue what kubelet_mirror_plan() says for these static pods; nothing before the API server's pods were seen or
 * while node_uid is unknown (the Node is not registered yet). Requests in flight are not repeated. */
void kubelet_mirror_sync(struct mirror_manager *m, const struct pod *const *static_pods, const bool *terminating,
                         size_t n, const char *node_uid);
/* The UID of the mirror pod of static pod p (where its status is reported), or NULL: a pod of its name that is
 * being deleted or is the mirror of another version of it (another config hash) is not (its status would land on
 * a pod about to be replaced, and be refused once the new one exists). */
const char *kubelet_mirror_uid(const struct mirror_manager *m, const struct pod *p);
/* The status of that mirror pod as the API server last showed it (borrowed until the mirror pods change), or
 * NULL. */
const json_t *kubelet_mirror_status(const struct mirror_manager *m, const struct pod *p);
