/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The status manager (pkg/kubelet/status/status_manager.go): the last status generated for each API pod is
 * PATCHed to pods/<name>/status when it differs from what the API server last accepted; at most one request
 * per pod in flight, later changes coalesced; failures retried with back-off. */

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>

struct kube_client;
struct status_manager;

int status_manager_new(struct event_base *base, struct kube_client *client, struct status_manager **ret);
struct status_manager *status_manager_free(struct status_manager *m);
/* status: taken. */
void status_manager_set(struct status_manager *m, const char *uid, const char *ns, const char *name, json_t *status);
/* The newest status set for the pod (borrowed; valid until the next set or forget), NULL if none. */
const json_t *status_manager_get(struct status_manager *m, const char *uid);
/* The PATCH of a pod's status (pure): a strategic merge patch with the UID as precondition, the kubelet's own
 * conditions merged by type (those of other clients untouched, those the kubelet dropped since the status sent
 * deleted), the IP lists replaced. sent may be NULL. */
int status_build_patch(const char *uid, const json_t *wanted, const json_t *sent, json_t **ret);
/* Called once the API server has a pod's final status, or has no such pod (404, another UID). */
typedef void (*status_final_cb)(const char *uid, void *userdata);
/* The pod's final status (the status manager's TerminatePod: the pod's containers are stopped for good): sent as
 * any other, retried with back-off; once the API server has it, or has no such pod, done(uid, userdata) runs
 * (never inside this call) and the manager forgets the pod (status_manager_forget leaves it alone until then).
 * status: taken. Nothing is called after status_manager_free. -ENOMEM: nothing set, done never called. */
int status_manager_set_final(struct status_manager *m, const char *uid, const char *ns, const char *name,
                             json_t *status, status_final_cb done, void *userdata);
/* The API server has the newest status set for the pod (or has no such pod, or nothing was set for it): no
 * request in flight, nothing left to send. */
bool status_manager_synced(struct status_manager *m, const char *uid);
/* The pod is gone: forget it (not a pod whose final status is on its way). */
void status_manager_forget(struct status_manager *m, const char *uid);
