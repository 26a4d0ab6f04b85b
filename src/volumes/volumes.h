/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Pod volumes on the node (pkg/kubelet/volumemanager, pkg/volume/{emptydir,hostpath}, kubelet_pods.go
 * makeMounts / ensureHostsFile, kubelet_volumes.go cleanupOrphanedPodDirs):
 *
 *   <root_dir>/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>   emptyDir (a tmpfs for medium Memory)
 *   <root_dir>/pods/<uid>/etc-hosts                               the managed /etc/hosts
 *
 * Setup is local filesystem work on directories the pod cannot replace, bounded and small, done inline on the loop;
 * it is idempotent: the sync runs it before it creates containers, on every pass. The removal of pod data walks
 * what the pod wrote, unbounded: it runs on the removal pool's workers (volumes/reaper.h). */

#include <stdbool.h>
#include <stddef.h>

#include "apis/pod.h"
#include "cri/cri.h"
#include "container/build.h"

struct volume;

/* "<root_dir>/pods/<uid>" (caller frees; NULL on OOM) */
char *vol_pod_dir(const char *root_dir, const char *uid);

/* The host directory (or path, for hostPath) of one of the volumes vol_setup_pod() sets up; NULL for the others
 * (and on OOM). Caller frees. */
char *vol_volume_host_path(const struct pod *pod, const struct volume *v, const char *root_dir);

/* Set up the pod's volumes and its etc-hosts file. On failure returns a negative errno and *ret_error is the
 * FailedMount message, as upstream words it ("MountVolume.SetUp failed for volume \"v\" : ..."). */
int vol_setup_pod(const struct pod *pod, const struct kc_build_context *ctx, struct ck_error **ret_error);

/* hostPath's type check (DirectoryOrCreate creates 0755, FileOrCreate 0644; "" checks nothing), with upstream's
 * messages ("hostPath type check failed: /x is not a directory"). Used for hostPath PersistentVolumes too. */
int vol_host_path_check(const char *path, const char *type, struct ck_error **ret_error);

/* The CRI mounts of one container (makeMounts): its volumeMounts in order, then /etc/hosts unless the container
 * mounts /etc/hosts itself or the pod has no IP yet. A subPath mount takes its host path from
 * ctx->subpath_targets (bound on a worker beforehand); -EAGAIN when it has none. */
int vol_container_mounts(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                         Runtime__V1__Mount ***ret, size_t *ret_n);

/* The subPath bind mounts container c needs (on the loop: strings only), to be bound on a worker with
 * vol_subpath_bind; their targets then go to vol_container_mounts through ctx->subpath_targets. */
struct vol_subpath_req;
int vol_container_subpath_requests(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                                   struct vol_subpath_req **ret, size_t *ret_n);
void vol_subpath_reqs_free(struct vol_subpath_req *l, size_t n);

/* The managed hosts file (managedHostsFileContent / nodeHostsFileContent). cluster_domain may be "".
 * host_hosts: the node's /etc/hosts content for hostNetwork pods (NULL: read /etc/hosts). Caller frees. */
int vol_hosts_file_content(const struct pod *pod, const char *pod_ip, const char *cluster_domain,
                           const char *host_hosts, char **ret);

/* Remove <root_dir>/pods/<uid> (cleanupOrphanedPodDirs, for one pod): its subPath bind mounts and tmpfs volumes
 * are unmounted first; then the tree goes (fs_remove_tree_at: iterative, never through a mount point that is still
 * mounted, -EBUSY then, never following a symlink). Blocking and unbounded in time: for the removal pool's workers
 * only (volumes/reaper.h). 0 when it is gone (or was never there); -ECANCELED as soon as *cancel (may be NULL) is
 * true. */
int vol_remove_pod_dir(const char *root_dir, const char *uid, const _Atomic bool *cancel);

/* Tear down the volumes the sync set up (emptyDir, configMap, secret, downwardAPI, projected) of a pod that finished
 * for good (syncTerminatedPod: its volumes go once its containers are stopped, the pod stays in the API): its subPath
 * binds are unmounted and their directories removed, its tmpfs volumes unmounted, those volumes' directories removed
 * (as vol_remove_pod_dir). The pod directory stays (termination messages, the eviction marker, the hosts file) until
 * the pod is gone; the volume manager's volumes are its own. Blocking: for the removal pool's workers. 0 when they are
 * gone (or were never there), else the first error (-EBUSY: something is still mounted); -ECANCELED as soon as
 * *cancel (may be NULL) is true. */
int vol_teardown_pod_volumes(const char *root_dir, const char *uid, const _Atomic bool *cancel);

/* Is name (relative to dirfd, never followed) a mount point: another mount id or device than dirfd's? */
int vol_is_mount_point(int dirfd, const char *name, bool *ret);
