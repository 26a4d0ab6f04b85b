/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

/* Graceful node shutdown: the configuration (KubeletConfiguration shutdownGracePeriod,
 * shutdownGracePeriodCriticalPods, shutdownGracePeriodByPodPriority), its validation, and the pure logic of the
 * shutdown: the priority groups, lowest priority first, each with its budget in seconds, and which group a pod
 * goes to (pkg/kubelet/nodeshutdown: migrateConfig, groupByPriority). */

#include <stddef.h>
#include <stdint.h>

struct ck_error;

/* one entry of shutdownGracePeriodByPodPriority */
struct nodeshutdown_period {
        int32_t priority;
        int64_t seconds; /* shutdownGracePeriodSeconds */
};

/* upstream's scheduling.DefaultPriorityWhenNoDefaultClassExists and SystemCriticalPriority */
#define NODESHUTDOWN_DEFAULT_PRIORITY 0
#define NODESHUTDOWN_SYSTEM_CRITICAL_PRIORITY 2000000000

/* The KubeletConfiguration's checks (validation.go), with upstream's messages, given the states of the
 * GracefulNodeShutdown and GracefulNodeShutdownBasedOnPodPriority gates. Durations in usec. */
int nodeshutdown_validate(uint64_t grace_usec, uint64_t critical_usec, size_t n_by_priority, bool gate,
                          bool gate_by_priority, struct ck_error **ret_error);

/* The groups the shutdown goes through, sorted by priority, lowest first: by_priority when given, else the two of
 * shutdownGracePeriod (priority 0: the period less the critical pods' share; priority 2000000000: the critical
 * pods' share). *ret_n = 0 (and *ret NULL): the feature is off. */
int nodeshutdown_periods(uint64_t grace_usec, uint64_t critical_usec, const struct nodeshutdown_period *by_priority,
                         size_t n_by_priority, struct nodeshutdown_period **ret, size_t *ret_n);

/* The sum of the groups' budgets, in usec: the delay asked of logind */
uint64_t nodeshutdown_period_requested_usec(const struct nodeshutdown_period *periods, size_t n);

/* The group (index into periods, n > 0, sorted) of a pod of this priority: the highest group whose priority is <=
 * the pod's; a pod below every group goes to the lowest one, above every group to the highest. */
size_t nodeshutdown_group_of(const struct nodeshutdown_period *periods, size_t n, int32_t priority);

/* The grace period a pod of the group is killed with: the group's budget, or the pod's
 * terminationGracePeriodSeconds if it is smaller (pod_grace < 0: the pod has none). */
int64_t nodeshutdown_pod_grace(const struct nodeshutdown_period *group, int64_t pod_grace);
