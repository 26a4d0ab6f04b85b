/* SPDX-License-Identifier: Apache-2.0 */
#include "nodeshutdown/config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/duration.h"
#include "basic/error.h"
#include "basic/time.h"

static char *fmt(uint64_t usec, char *buf, size_t size) {
        return go_duration_format((int64_t) usec * 1000, buf, size);
}

int nodeshutdown_validate(uint64_t grace_usec, uint64_t critical_usec, size_t n_by_priority, bool gate,
                          bool gate_by_priority, struct ck_error **ret_error) {
        char a[GO_DURATION_MAX], b[GO_DURATION_MAX];

        /* negative durations are refused when the configuration is read; the checks in upstream's order */
        if (gate && critical_usec > grace_usec)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: shutdownGracePeriodCriticalPods %s must be <= "
                                    "shutdownGracePeriod %s",
                                    fmt(critical_usec, a, sizeof(a)), fmt(grace_usec, b, sizeof(b)));
        if (gate && grace_usec > 0 && grace_usec < USEC_PER_SEC)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: shutdownGracePeriod %s must be either zero or otherwise "
                                    ">= 1 sec",
                                    fmt(grace_usec, a, sizeof(a)));
        if (gate && critical_usec > 0 && critical_usec < USEC_PER_SEC)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: shutdownGracePeriodCriticalPods %s must be either zero "
                                    "or otherwise >= 1 sec",
                                    fmt(critical_usec, a, sizeof(a)));
        if (!gate && (grace_usec > 0 || critical_usec > 0))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: specifying shutdownGracePeriod or "
                                    "shutdownGracePeriodCriticalPods requires feature gate GracefulNodeShutdown");
        if (gate_by_priority && n_by_priority > 0 && (grace_usec > 0 || critical_usec > 0))
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: Cannot specify both shutdownGracePeriodByPodPriority "
                                    "and shutdownGracePeriod at the same time");
        if (!gate_by_priority && n_by_priority > 0)
                return ck_error_set(ret_error, -EINVAL,
                                    "invalid configuration: Specifying shutdownGracePeriodByPodPriority requires "
                                    "feature gate GracefulNodeShutdownBasedOnPodPriority");
        return 0;
}

static int cmp_period(const void *a, const void *b) {
        const struct nodeshutdown_period *x = a, *y = b;
        return x->priority < y->priority ? -1 : x->priority > y->priority;
}

int nodeshutdown_periods(uint64_t grace_usec, uint64_t critical_usec, const struct nodeshutdown_period *by_priority,
                         size_t n_by_priority, struct nodeshutdown_period **ret, size_t *ret_n) {
        struct nodeshutdown_period *l;
        size_t n;

        *ret = NULL;
        *ret_n = 0;
        if (n_by_priority > 0) {
                l = calloc(n_by_priority, sizeof(*l));
                if (!l)
                        return -ENOMEM;
                memcpy(l, by_priority, n_by_priority * sizeof(*l));
                n = n_by_priority;
                /* stable enough: equal priorities keep no meaningful order upstream either */
                qsort(l, n, sizeof(*l), cmp_period);
        } else {
                /* migrateConfig: nothing without shutdownGracePeriod, or with more for the critical pods */
                if (grace_usec == 0 || critical_usec > grace_usec)
                        return 0;
                l = calloc(2, sizeof(*l));
                if (!l)
                        return -ENOMEM;
                l[0] = (struct nodeshutdown_period) { NODESHUTDOWN_DEFAULT_PRIORITY,
                                                      (int64_t) ((grace_usec - critical_usec) / USEC_PER_SEC) };
                l[1] = (struct nodeshutdown_period) { NODESHUTDOWN_SYSTEM_CRITICAL_PRIORITY,
                                                      (int64_t) (critical_usec / USEC_PER_SEC) };
                n = 2;
        }
        *ret = l;
        *ret_n = n;
        return 0;
}

uint64_t nodeshutdown_period_requested_usec(const struct nodeshutdown_period *periods, size_t n) {
        uint64_t sum = 0;
        for (size_t i = 0; i < n; i++)
                if (periods[i].seconds > 0)
                        sum += (uint64_t) periods[i].seconds * USEC_PER_SEC;
        return sum;
}

size_t nodeshutdown_group_of(const struct nodeshutdown_period *periods, size_t n, int32_t priority) {
        size_t i;

        if (n == 0)
                return 0;
        /* the first group whose priority is >= the pod's */
        for (i = 0; i < n && periods[i].priority < priority; i++)
                ;
        if (i == n)
                return n - 1; /* above every group: the highest */
        if (i > 0 && periods[i].priority > priority)
                return i - 1; /* between two groups: the lower one */
        return i;             /* equal, or below every group: the lowest */
}

int64_t nodeshutdown_pod_grace(const struct nodeshutdown_period *group, int64_t pod_grace) {
        if (pod_grace >= 0 && pod_grace <= group->seconds)
                return pod_grace;
        return group->seconds;
}
