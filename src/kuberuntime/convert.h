/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* CRI replies into the runtime-neutral types of container/ (kuberuntime_container.go toKubeContainer,
 * kuberuntime_sandbox.go, labels.go getContainerInfoFromAnnotations). */

#include "container/container.h"
#include "cri/cri.h"

/* From a ListPodSandbox / ListContainers entry. */
int kr_sandbox_from_cri(const Runtime__V1__PodSandbox *p, struct kc_sandbox **ret);
int kr_container_from_cri(const Runtime__V1__Container *p, struct kc_container **ret);
/* Fill the status part from PodSandboxStatus / ContainerStatus replies. */
int kr_sandbox_set_status(struct kc_sandbox *s, const Runtime__V1__PodSandboxStatus *st);
int kr_container_set_status(struct kc_container *c, const Runtime__V1__ContainerStatus *st);
