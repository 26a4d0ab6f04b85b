/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The container log manager (upstream pkg/kubelet/logs/container_log_manager.go) on the loop, plus the
 * /var/log/containers links and the cleanup of what removed containers and pods leave in the pod logs directory
 * (upstream's containerGC.evictPodLogsDirectories and logManager.Clean).
 *
 * Every containerLogMonitorInterval it lists the running containers and their log paths over CRI. A live log of
 * containerLogMaxSize or more is rotated: a worker thread first puts the earlier rotated files in order (rotation.h:
 * leftovers removed, at most containerLogMaxFiles-2 kept, compressed), then, back on the loop, the live file is
 * renamed to <log>.<timestamp> and the runtime reopens it (CRI ReopenContainerLog); if that fails the file is renamed
 * back. A live log that is missing (a kubelet killed between the two) is reopened. At most containerLogMaxWorkers
 * containers are worked on at once, one rotation per container. The same pass makes sure every running container
 * has its link <links dir>/<pod>_<namespace>_<container>-<id>.log to its live log. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "cri/cri.h"

struct logs_manager_config {
        int64_t max_size;               /* containerLogMaxSize in bytes */
        int max_files;                  /* containerLogMaxFiles */
        int max_workers;                /* containerLogMaxWorkers */
        uint64_t monitor_interval_usec; /* containerLogMonitorInterval */
        const char *pod_logs_dir;       /* podLogsDir */
        const char *links_dir;          /* --container-logs-dir (/var/log/containers) */
};

struct logs_manager;

int logs_manager_new(struct event_base *base, struct cri_client *cri, const struct logs_manager_config *cfg,
                     struct logs_manager **ret);
/* Waits for the file work in flight (worker threads); CRI calls in flight end into nothing. Accepts NULL. */
struct logs_manager *logs_manager_free(struct logs_manager *m);
int logs_manager_start(struct logs_manager *m);

/* A container was started: link its live log (when the file exists), as upstream's startContainer does. */
void logs_manager_link(struct logs_manager *m, const char *pod, const char *ns, const char *container,
                       const char *container_id, const char *log_path);

/* Remove the links of containers the runtime does not have, made before the listing that says so
 * (listed_realtime_usec: when that listing started). Only links into our pod logs directory are touched. */
void logs_manager_sweep_links(struct logs_manager *m, bool (*has_container)(const char *id, void *ud), void *userdata,
                              uint64_t listed_realtime_usec);

/* After a container GC pass, with the containers the runtime has: the log directories of deleted pods go, and the log
 * files of removed instances of the containers that are left (older restart counts) go, on a worker thread. */
void logs_manager_clean(struct logs_manager *m, const Runtime__V1__ListContainersResponse *containers,
                        bool (*pod_deleted)(const char *uid, void *ud), void *userdata);

/* Figures for tests and metrics */
struct logs_manager_counts {
        uint64_t rotations; /* rotations that completed */
        uint64_t rotation_errors;
        uint64_t reopens; /* missing live logs reopened */
};
