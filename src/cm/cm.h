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
 * containers inside it. Everything here runs on the loop: bounded local filesystem work only.
 *
 * systemd driver: the same names as slices (<root parts>-kubepods[-<qos>][-pod<uid_>].slice), which systemd makes
 * when asked over D-Bus (systemd.h; asynchronous once the loop runs); the cgroupfs paths are the expanded slices
 * (kubepods.slice/kubepods-burstable.slice/...), where the values are written as with cgroupfs. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

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

/* systemd unit of a (non-root) cgroup name and its parent slice ("-.slice" for a top-level one), as upstream
 * updateSystemdCgroupInfo: "kubepods/burstable/pod<uid>" → "kubepods-burstable-pod<uid_>.slice",
 * "kubepods-burstable.slice". -EINVAL for "" or a name systemd does not accept. */
int cm_name_to_systemd_unit(const char *name, char **ret_unit, char **ret_parent);
/* The pod UID of a pod cgroup directory: "pod<uid>" (cgroupfs), "...-pod<uid with '_'>.slice" (systemd); -EINVAL
 * for another directory */
int cm_pod_uid_from_dir(bool systemd, const char *dirname, char **ret);
/* systemd's Version property ("v245.4-1.fc32", "247.3-7") → 245, 247; -EINVAL */
int cm_systemd_version_parse(const char *s);

/* ---- resources (pure) ---- */

/* Unset values are 0 (upstream's nil pointers); cpu_quota is set together with cpu_period. */
struct cm_resource_config {
        int64_t cpu_shares;
        int64_t cpu_quota;    /* usec per cpu_period; 0 = unset */
        int64_t cpu_period;   /* usec; 0 = unset */
        int64_t memory_limit; /* bytes; 0 = unset */
        int64_t pids_limit;   /* 0 = unset */
        /* hugetlb: a limit for each page size of the machine (HugePageLimit, then 0 for the sizes the pod does not
         * ask for, as upstream's cgroup manager); n_hugepages 0: left alone */
        size_t n_hugepages;
        struct cm_hugepage_limit {
                uint64_t page_size; /* bytes */
                int64_t limit;      /* bytes */
        } hugepages[8];
};

/* ResourceConfigForPod (enforceCPULimits = true, period 100ms): cpu shares from the pod's cpu requests
 * (BestEffort: 2); cfs quota/period when every container has a cpu limit or the pod-level cpu limit is set
 * (Guaranteed always); memory limit, the sum of the limits or the pod-level one, when every container has one or the
 * pod-level one is set; pod-level requests and limits (spec.resources) replace the containers' aggregate; the pod's
 * overhead added to the requests and to the limits declared. pids_limit is left 0. */
void cm_resource_config_for_pod(const struct pod *pod, struct cm_resource_config *ret);

/* The pod cgroup's hugetlb limits for the machine's page sizes (ascending, at most 8): the pod's huge page
 * requests of each size (resource.PodRequests, pod-level ones when set), 0 for the others. */
void cm_resource_config_hugepages(const struct pod *pod, const uint64_t *sizes, size_t n_sizes,
                                  struct cm_resource_config *rc);

/* the pod's cpu request in millicores (resource.PodRequests: app containers summed, at least the largest init
 * container; a request defaults to the limit) */
int64_t cm_pod_cpu_requests(const struct pod *pod);

/* The properties of a slice's StartTransientUnit (runc's systemd managers, Apply(-1) of a slice): Description
 * "libcontainer container <unit>", Wants=<parent>, the accounting switches, DefaultDependencies=false, the allow-all
 * device policy, then the resources (v1: MemoryLimit, CPUShares; v2: MemoryMax, CPUWeight; CPUQuotaPeriodUSec from
 * systemd 242, CPUQuotaPerSecUSec, TasksAccounting/TasksMax). The strings point into ret. */
enum cm_property_type {
        CM_PROPERTY_STRING,       /* s */
        CM_PROPERTY_BOOL,         /* b, u is 0 or 1 */
        CM_PROPERTY_U64,          /* t */
        CM_PROPERTY_UNITS,        /* as, the one unit s */
        CM_PROPERTY_DEVICE_ALLOW, /* a(ss), empty */
};
struct cm_unit_property {
        const char *name;
        enum cm_property_type type;
        const char *s;
        uint64_t u;
};
struct cm_slice_properties {
        char description[320];
        char parent[256];
        struct cm_unit_property p[16];
        size_t n;
};
int cm_systemd_slice_properties(const char *unit, const char *parent, const struct cm_resource_config *rc, bool unified,
                                int systemd_version, struct cm_slice_properties *ret);

/* cgroup v2 cpu.weight from v1 shares (upstream CpuSharesToCpuWeight / runc ConvertCPUSharesToCgroupV2Value) */
uint64_t cm_cpu_shares_to_weight(uint64_t shares);

/* ---- the manager ---- */

struct cm;

/* Checks the flags and the machine: with --cgroups-per-qos the cgroup root must exist in every hierarchy (as
 * upstream), and kubepods, kubepods/burstable and kubepods/besteffort are created and configured.
 * memory_capacity/cpu_milli_capacity: the node's; kubepods gets them less --kube-reserved/--system-reserved when
 * "pods" is enforced. With --cgroup-driver=systemd the cgroups are the slices kubepods.slice,
 * kubepods-burstable.slice, kubepods-besteffort.slice and kubepods[-<qos>]-pod<uid_>.slice, made by systemd over
 * D-Bus (src/cm/systemd.h; at start-up the calls block, afterwards they run on base's loop); systemd not reachable
 * is an error here. A failure's reason is in *ret_error. */
int cm_new(struct event_base *base, const struct kubelet_options *o, int64_t cpu_milli_capacity,
           int64_t memory_capacity, struct cm **ret, struct ck_error **ret_error);
struct cm *cm_free(struct cm *m);

bool cm_enabled(const struct cm *m); /* --cgroups-per-qos; false for NULL */

/* The CRI cgroup_parent of the pod (upstream cgroupManager.Name(): the cgroupfs path "/kubepods/burstable/pod<uid>",
 * or with the systemd driver the expanded slices "/kubepods.slice/kubepods-burstable.slice/
 * kubepods-burstable-pod<uid_>.slice"); NULL (and 0) when disabled. */
int cm_pod_cgroup_parent(const struct cm *m, const struct pod *pod, char **ret);

/* The cgroupfs path of kubepods below each hierarchy's mount ("/kubepods", "/kubepods.slice"); NULL when disabled. */
int cm_pods_cgroup(const struct cm *m, char **ret);

/* r: 0 or negative, with a message */
typedef void (*cm_done_fn)(int r, const char *message, void *userdata);

/* Create the pod cgroup if missing (in every hierarchy) and set its ResourceConfigForPod values. 0 when done now
 * (disabled, cgroupfs, or the cgroup exists), 1 when its slice is being made over D-Bus: done is called later, from
 * the loop, once it is made and its values set, or with the error. A failure now: a negative errno, with its reason
 * in *ret_error when there is one. */
int cm_pod_ensure_async(struct cm *m, const struct pod *pod, cm_done_fn done, void *userdata,
                        struct ck_error **ret_error);
/* the same without waiting: a missing slice is asked for and its failure only logged */
int cm_pod_ensure(struct cm *m, const struct pod *pod, struct ck_error **ret_error);

/* An in-place resize, before the containers are updated: raise the pod cgroup's memory and cpu quota limits where
 * the pod's new values are larger (a container may not get more than its pod cgroup allows); cm_pod_ensure() sets
 * every value once they are. 0 when disabled. */
int cm_pod_grow(struct cm *m, const struct pod *pod);

/* UpdateQOSCgroups: burstable cpu shares from the burstable pods among these. */
int cm_update_qos(struct cm *m, const struct pod *const *pods, size_t n);

/* Remove pod cgroups under our own kubepods whose UID is_active() does not claim: SIGKILL whatever still
 * runs in them, then rmdir (children first). A cgroup still busy is retried on the next call. */
void cm_cleanup_orphans(struct cm *m, bool (*is_active)(const char *uid, void *userdata), void *userdata);
