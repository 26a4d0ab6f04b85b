/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Helpers shared by the stats module's files. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/time.h"

/* A JSON string; NULL becomes "", bytes that are not valid UTF-8 become '?'. NULL only on OOM. */
json_t *stats_jstr(const char *s);
/* A JSON integer from an unsigned value (saturated at INT64_MAX). */
json_t *stats_juint(uint64_t v);

#include "cri/cri.h"

struct stats_provider;
struct stats_summary;

/* The runtime's answers a summary is built from (NULL: not available). */
struct summary_input {
        const Runtime__V1__ListPodSandboxResponse *sandboxes;
        const Runtime__V1__ListContainersResponse *containers;
        const Runtime__V1__ListContainerStatsResponse *container_stats;
        const Runtime__V1__ListPodSandboxStatsResponse *pod_stats;
        const Runtime__V1__ImageFsInfoResponse *image_fs;
};

/* Build the summary from the runtime's answers and the host (read now). Updates the CPU sample cache. */
int stats_summary_build(struct stats_provider *p, const struct summary_input *in, struct stats_summary **ret);

/* Remember the pid of a sandbox's infra process (its network namespace has the pod's interfaces). */
int stats_provider_set_sandbox_pid(struct stats_provider *p, const char *sandbox_id, int pid);
/* The pid from containerd's verbose PodSandboxStatus info JSON; -ENOENT without one. */
int stats_sandbox_pid_from_info(const char *info_json, int *ret);

/* ---- the provider's state, shared by summary.c (building) and provider.c (requests, caches, lifecycle) ---- */

#define STATS_CACHE_MAX_AGE_USEC (10 * 60 * USEC_PER_SEC) /* forget objects not seen for this long */

struct summary_req;
struct stats_volume;

struct cpu_sample {
        char *key;
        uint64_t usage_nsec;
        int64_t time_nsec;
        bool has_rate;
        uint64_t rate;
        uint64_t seen_usec; /* monotonic */
};
struct sandbox_pid {
        char *id;
        int pid;
        uint64_t seen_usec; /* monotonic */
};
struct stats_provider {
        struct event_base *base;
        struct cri_client *cri;
        char *node_name, *root_dir, *pod_logs_dir, *host_root;
        char *pods_cgroup; /* NULL: the "pods" system container is the pods' sum */
        const struct stats_volumes *volumes;
        size_t (*pod_volumes)(void *userdata, const char *pod_uid, const struct stats_volume **ret);
        void *pod_volumes_userdata;
        uint64_t memory_capacity;     /* MemTotal, 0 if unknown */
        int64_t boot_time_sec;        /* 0 if unknown */
        uint64_t start_realtime_usec; /* this process */
        struct cpu_sample *cache;     /* sorted by key */
        size_t n_cache, alloc_cache;
        struct sandbox_pid *pids; /* sandbox → pid of its infra process, for the pod network */
        size_t n_pids;
        uint64_t pod_stats_retry_usec; /* ListPodSandboxStats failed: not before this (monotonic) */
        struct summary_req *reqs;
};
/* the sandbox's infra process pid, NULL when not known */
struct sandbox_pid *stats_sandbox_pid_find(struct stats_provider *p, const char *id);
/* forget the sandbox pids not seen since older_than_usec (monotonic) */
void stats_sandbox_pids_prune(struct stats_provider *p, uint64_t older_than_usec);
