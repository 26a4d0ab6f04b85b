/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The kubelet's side of the CPU manager (src/cm/cpumanager): started with the kubelet (an error in its
 * configuration or state file refuses the start, as upstream), asked at admission, its cpuset put in each new
 * container's LinuxContainerResources (PreCreateContainer), and every cpuManagerReconcilePeriod (reconcileState):
 * the pods that are gone release their CPUs (removeStaleState), and a running container whose cpuset differs
 * from the one last sent gets it through UpdateContainerResources (the shared pool shrinks and grows as
 * exclusive CPUs are taken and given back; a new container is sent its cpuset once more at the first pass, which
 * the runtime takes as a no-op). */

#include <stdbool.h>
#include <stdint.h>

#include "cri/cri.h"

struct ck_error;
struct kubelet;
struct pod;
struct container;

int kubelet_cpu_start(struct kubelet *k, struct ck_error **ret_error);
void kubelet_cpu_free(struct kubelet *k);
/* The topology manager's affinity for a container's devices, before they are chosen (GetAffinity): the merged
 * hint of the CPU and memory managers and of the device manager's available devices (the device manager's
 * dm_affinity_cb). */
bool kubelet_device_affinity(void *userdata, const struct pod *p, const struct container *c, uint64_t *ret_mask);
/* 0: admitted (CPUs taken if any); -ENOSPC with *ret_error (upstream's reason and message); other errors: try
 * again */
int kubelet_cpu_admit(struct kubelet *k, const struct pod *p, struct ck_error **ret_error);
/* the cpuset of a container about to be created; -ENOMEM */
int kubelet_cpu_apply(struct kubelet *k, const struct pod *p, const struct container *c,
                      Runtime__V1__ContainerConfig *cfg);
