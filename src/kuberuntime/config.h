/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Building CRI requests from a pod spec (kuberuntime_sandbox.go generatePodSandboxConfig,
 * kuberuntime_container.go generateContainerConfig). Every field of the built messages is malloc'ed, so
 * pb_free() (protobuf_c_message_free_unpacked) frees the whole tree. */

#include "apis/pod.h"
#include "basic/protobuf.h"
#include "basic/strmap.h"
#include "container/build.h"
#include "cri/cri.h"

/* "<pod_logs_dir>/<namespace>_<name>_<uid>" */
char *kr_pod_log_dir(const char *pod_logs_dir, const struct pod *pod);

/* The sandbox's hostname (GeneratePodHostNameAndDomain + GetNodenameForKernel): the pod's hostname, or with
 * setHostnameAsFQDN and a subdomain its FQDN <hostname>.<subdomain>.<namespace>.svc.<cluster domain>, which must
 * fit the kernel's 64 characters (-EINVAL and upstream's message otherwise). */
#define KR_FQDN_MAX 64
int kr_sandbox_hostname(const struct pod *pod, const char *cluster_domain, char **ret, struct ck_error **ret_error);

int kr_build_sandbox_config(const struct pod *pod, uint32_t attempt, const struct kc_build_context *ctx,
                            Runtime__V1__PodSandboxConfig **ret);

/* image_ref: the resolved image (id) to run; restart_count: attempt of this container. */
int kr_build_container_config(const struct pod *pod, const struct container *c, uint32_t restart_count,
                              const char *image_ref, const struct kc_build_context *ctx,
                              Runtime__V1__ContainerConfig **ret);

/* Copy of a sandbox config is needed in CreateContainer too: build once per sync and keep. */
