/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Helpers shared by the stats module's files. */

#include <jansson.h>
#include <stdint.h>

/* A JSON string; NULL becomes "", bytes that are not valid UTF-8 become '?'. NULL only on OOM. */
json_t *stats_jstr(const char *s);
/* A JSON integer from an unsigned value (saturated at INT64_MAX). */
json_t *stats_juint(uint64_t v);

#include "cri/cri.h"

struct stats_provider;

/* The runtime's answers a summary is built from (NULL: not available). */
struct summary_input {
        const Runtime__V1__ListPodSandboxResponse *sandboxes;
        const Runtime__V1__ListContainersResponse *containers;
        const Runtime__V1__ListContainerStatsResponse *container_stats;
        const Runtime__V1__ListPodSandboxStatsResponse *pod_stats;
        const Runtime__V1__ImageFsInfoResponse *image_fs;
};

/* Build the summary from the runtime's answers and the host (read now). Updates the CPU sample cache. */
int stats_summary_build(struct stats_provider *p, const struct summary_input *in, json_t **ret);

/* Remember the pid of a sandbox's infra process (its network namespace has the pod's interfaces). */
int stats_provider_set_sandbox_pid(struct stats_provider *p, const char *sandbox_id, int pid);
/* The pid from containerd's verbose PodSandboxStatus info JSON; -ENOENT without one. */
int stats_sandbox_pid_from_info(const char *info_json, int *ret);
