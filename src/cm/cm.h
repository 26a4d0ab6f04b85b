/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The QoS cgroup hierarchy and pod cgroups (upstream pkg/kubelet/cm: cgroup_manager_linux.go naming,
 * helpers_linux.go ResourceConfigForPod, qos_container_manager_linux.go, pod_container_manager_linux.go).
 *
 * Layout (cgroupfs driver), under --cgroup-root:
 *   <root>/kubepods                    node allocatable limits (memory limit, cpu shares)
 *   <root>/kubepods/burstable          cpu shares from the sum of the burstable pods' cpu requests
 *   <root>/kubepods/besteffort         cpu shares 2
 *   <root>/kubepods[/burstable|/besteffort]/pod<uid>   one per pod: ResourceConfigForPod
 * The pod cgroup is the sandbox's CRI linux.cgroup_parent, so the runtime puts the sandbox and the
 * containers inside it. Everything here runs on the loop: bounded local filesystem work only. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "apis/pod.h"
#include "kuberuntime/resources.h"
#include "options/options.h"

/* ---- naming (pure) ---- */

/* A cgroup name is its components joined with '/' (no leading slash; "" is the root). The components of
 * cgroup_root (split on '/', empty ones skipped) come first, then parts. */
int cm_cgroup_name(const char *cgroup_root, const char *const *parts, size_t n_parts, char **ret);
/* "kubepods" + the QoS component ("burstable", "besteffort"; none for Guaranteed) + "pod<uid>" */
int cm_pod_cgroup_name(const char *cgroup_root, enum qos_class qos, const char *uid, char **ret);
/* cgroupfs form: "/" + name */
int cm_name_to_cgroupfs(const char *name, char **ret);
/* systemd form (upstream CgroupName.ToSystemd): components with '-' escaped to '_', joined with '-', plus
 * ".slice", expanded to its parents: "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice";
 * "/" for the root name. -EINVAL for a component that systemd does not accept (empty, or with '/'). */
int cm_name_to_systemd(const char *name, char **ret);

/* ---- resources (pure) ---- */

/* Unset values are 0 (upstream's nil pointers); cpu_quota is set together with cpu_period. */
struct cm_resource_config {
        int64_t cpu_shares;
        int64_t cpu_quota;    /* usec per cpu_period; 0 = unset */
        int64_t cpu_period;   /* usec; 0 = unset */
        int64_t memory_limit; /* bytes; 0 = unset */
        int64_t pids_limit;   /* 0 = unset */
};

/* ResourceConfigForPod (enforceCPULimits = true, period 100ms): cpu shares from the pod's cpu requests
 * (BestEffort: 2); cfs quota/period when every container has a cpu limit (Guaranteed always); memory limit,
 * the sum of the limits, when every container has one; the pod's overhead added to the requests and to the limits
 * declared. pids_limit is left 0. */
void cm_resource_config_for_pod(const struct pod *pod, struct cm_resource_config *ret);

/* the pod's cpu request in millicores (resource.PodRequests: app containers summed, at least the largest init
 * container; a request defaults to the limit) */
int64_t cm_pod_cpu_requests(const struct pod *pod);

/* cgroup v2 cpu.weight from v1 shares (upstream CpuSharesToCpuWeight / runc ConvertCPUSharesToCgroupV2Value) */
uint64_t cm_cpu_shares_to_weight(uint64_t shares);

/* ---- the manager ---- */

struct cm;

/* Checks the flags and the machine: the systemd driver is refused; with --cgroups-per-qos the cgroup root
 * must exist in every hierarchy (as upstream), and kubepods, kubepods/burstable and kubepods/besteffort are
 * created and configured. memory_capacity/cpu_milli_capacity: the node's; kubepods gets them less
 * --kube-reserved/--system-reserved when "pods" is enforced. Errors are logged. */
int cm_new(const struct kubelet_options *o, int64_t cpu_milli_capacity, int64_t memory_capacity, struct cm **ret);
struct cm *cm_free(struct cm *m);

bool cm_enabled(const struct cm *m); /* --cgroups-per-qos; false for NULL */

/* The CRI cgroup_parent of the pod (cgroupfs path); NULL (and 0) when disabled. */
int cm_pod_cgroup_parent(const struct cm *m, const struct pod *pod, char **ret);

/* Create the pod cgroup if missing (in every hierarchy) and set its ResourceConfigForPod values.
 * 0 when disabled. */
int cm_pod_ensure(struct cm *m, const struct pod *pod);

/* An in-place resize, before the containers are updated: raise the pod cgroup's memory and cpu quota limits where
 * the pod's new values are larger (a container may not get more than its pod cgroup allows); cm_pod_ensure() sets
 * every value once they are. 0 when disabled. */
int cm_pod_grow(struct cm *m, const struct pod *pod);

/* UpdateQOSCgroups: burstable cpu shares from the burstable pods among these. */
int cm_update_qos(struct cm *m, const struct pod *const *pods, size_t n);

/* Remove pod cgroups under our own kubepods whose UID is_active() does not claim: SIGKILL whatever still
 * runs in them, then rmdir (children first). A cgroup still busy is retried on the next call. */
void cm_cleanup_orphans(struct cm *m, bool (*is_active)(const char *uid, void *userdata), void *userdata);
