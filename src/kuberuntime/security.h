/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Security contexts (pkg/securitycontext, kuberuntime/security_context.go): the pod's and the container's
 * merged as upstream, mapped to the CRI; runAsNonRoot checked against the image's user; the sysctl allowlist
 * (pkg/kubelet/sysctl) used at admission. */

#include "apis/pod.h"
#include "cri/cri.h"

struct ck_error;
struct kc_build_context;

/* Fill the container's CRI security context (not its namespace options): run as user/group (from the image's
 * user when the pod does not say), supplemental groups (fsGroup first, then supplementalGroups), privileged,
 * capabilities, read-only rootfs, no_new_privs, seccomp, masked and read-only paths. */
int kr_container_security_context(const struct pod *pod, const struct container *c, const struct kc_build_context *ctx,
                                  Runtime__V1__LinuxContainerSecurityContext *sc);
/* The sandbox's: run as user/group, supplemental groups, privileged (any privileged container), seccomp,
 * and the pod's sysctls into lx->sysctls. */
/* The pod's securityContext.supplementalGroupsPolicy as the CRI's (unset: Merge). */
Runtime__V1__SupplementalGroupsPolicy kr_supplemental_groups_policy(const struct pod *pod);
int kr_sandbox_security_context(const struct pod *pod, const struct kc_build_context *ctx,
                                Runtime__V1__LinuxPodSandboxConfig *lx);

/* Does any container of the pod need AppArmor (a profile other than Unconfined)? (the AppArmor validator's
 * isRequired) */
bool kr_pod_requires_apparmor(const struct pod *pod);
/* The AppArmor admit handler (lifecycle.NewAppArmorAdmitHandler): 0, or -ENOSPC (an admission refusal) with
 * *ret_error (reason "AppArmor", message "Cannot enforce AppArmor: AppArmor is not enabled on the host") for a
 * pending pod that needs AppArmor on a host without it. */
int kr_apparmor_admit(const struct pod *pod, bool host_enabled, struct ck_error **ret_error);
/* apparmor.IsEnabled: the kernel has AppArmor and it is on (/sys/kernel/security/apparmor,
 * /sys/module/apparmor/parameters/enabled). sysfs_root: "" normally, a directory in tests. */
bool kr_apparmor_host_enabled(const char *sysfs_root);

/* verifyRunAsNonRoot: 0, or -EPERM with *ret_error as upstream words it. image_uid NULL: the image
 * names a user that is not numeric (image_username) or none. */
int kr_verify_run_as_non_root(const struct pod *pod, const struct container *c, const int64_t *image_uid,
                              const char *image_username, struct ck_error **ret_error);

/* pkg/kubelet/sysctl: the safe sysctls, and the pod admission check against them and --allowed-unsafe-sysctls
 * (names, or prefixes ending in '*'). 0 = allowed; -EPERM with *ret_error ("forbidden sysctl:
 * \"x\" not allowlisted") otherwise. */
int kr_sysctls_admit(const struct pod *pod, char *const *allowed_unsafe, struct ck_error **ret_error);
/* Check an --allowed-unsafe-sysctls entry: it must be namespaced (kernel.shm*, kernel.msg*, kernel.sem,
 * fs.mqueue.*, net.*). 0 or -EINVAL with *ret_error. */
int kr_sysctl_check_allowed_unsafe(const char *pattern, struct ck_error **ret_error);
