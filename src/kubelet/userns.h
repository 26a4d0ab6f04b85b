/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* User namespaces for pods with `hostUsers: false` (pkg/kubelet/userns, UserNamespacesSupport GA in v1.36): each
 * such pod gets a distinct range of idsPerPod (65536) host IDs, mapped to 0..idsPerPod-1 inside, for UIDs and GIDs
 * alike. The ranges come from the kubelet's own (the single /etc/subuid and /etc/subgid entry of the user
 * "kubelet", which must be the same in both; without that user, every ID from idsPerPod up, as upstream). A pod's
 * range is kept in <root-dir>/pods/<uid>/userns (upstream's JSON file, written atomically and synced) and read back
 * at start, so that a kill -9 never hands one range to two pods. The files are the kubelet's own (a pod cannot
 * write its pod directory, only its volumes below it). */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

#define USERNS_UNIT_LENGTH 65536u

struct userns_manager;

struct userns_config {
        const char *root_dir;    /* the pods' directories are <root_dir>/pods/<uid> */
        uint32_t ids_per_pod;    /* userNamespaces.idsPerPod, 0: 65536 */
        int max_pods;            /* the ranges must be enough for them */
        const char *subuid_path; /* NULL: /etc/subuid (tests give their own) */
        const char *subgid_path; /* NULL: /etc/subgid */
        const char *user;        /* NULL: "kubelet" */
        bool user_exists;        /* whether that user exists (the caller looked it up) */
};

/* Reads the kubelet's mappings and the ranges of the pods on disk. 0, or a negative errno with *ret_error
 * (upstream's words: "kubelet user assigned IDs are not enough to support 110 pods", ...). */
int userns_manager_new(const struct userns_config *cfg, struct userns_manager **ret, struct ck_error **ret_error);
struct userns_manager *userns_manager_free(struct userns_manager *m); /* accepts NULL */

/* GetOrCreateUserNamespaceMappings for a pod with hostUsers false: its range (read back from its file, else a free
 * one allocated and written): 0 and *ret_host_id, *ret_length; a negative errno and *ret_error otherwise ("could
 * not find an empty slot to allocate a user namespace", an invalid file, ...). */
int userns_get_or_create(struct userns_manager *m, const char *pod_uid, uint32_t *ret_host_id, uint32_t *ret_length,
                         struct ck_error **ret_error);
/* The pod is gone: its range is free again and its file removed (no-op for a pod without one). */
void userns_release(struct userns_manager *m, const char *pod_uid);
/* CleanupOrphanedPodUsernsAllocations: every range held by a pod that wanted() says is neither desired nor running
 * is released. */
void userns_release_orphans(struct userns_manager *m, bool (*wanted)(const char *uid, void *userdata), void *userdata);
