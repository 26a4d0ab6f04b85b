/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Memory threshold notifications from the kernel (upstream memory_threshold_notifier.go and
 * threshold_notifier_linux.go), on the loop: the eviction manager learns that a memory threshold was crossed within
 * milliseconds instead of at its next periodic check.
 *
 * cgroup v1: an eventfd registered in the memory cgroup's cgroup.event_control for memory.usage_in_bytes at a
 * usage level; the kernel signals it when usage crosses that level either way. The level is what makes the working
 * set reach the eviction threshold: capacity - threshold + inactive file pages (they are in usage but not in the
 * working set), refreshed as the inactive file pages change.
 *
 * cgroup v2 has no usage thresholds: a PSI trigger on the cgroup's memory.pressure (some 100 ms stalled within 1 s,
 * or 200 ms within 2 s where the kernel refuses a 1 s window to an opener without CAP_SYS_RESOURCE,
 * signalled as POLLPRI, watched through an epoll fd the loop polls) and changes of its memory.events (the memory.high
 * and memory.max events of a limited cgroup such as kubepods) stand in; the periodic check remains the fallback. */

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

struct eviction_notifier;

typedef void (*eviction_notifier_fn)(void *userdata, const char *description);

/* cgroup_dir: the memory cgroup's directory (v1: /sys/fs/cgroup/memory[/kubepods]; v2: /sys/fs/cgroup[/kubepods]).
 * description: "hard memory eviction threshold", "soft allocatable memory eviction threshold", ... */
int eviction_notifier_new(struct event_base *base, const char *cgroup_dir, bool unified, const char *description,
                          eviction_notifier_fn fn, void *userdata, struct eviction_notifier **ret);
struct eviction_notifier *eviction_notifier_free(struct eviction_notifier *n);
/* v1: (re)register at this usage level (bytes); v2: arms the triggers the first time. */
int eviction_notifier_set_threshold(struct eviction_notifier *n, uint64_t usage_bytes);
const char *eviction_notifier_description(const struct eviction_notifier *n);

/* ---- exposed for tests ---- */

/* UpdateThreshold's level: capacity - threshold + (usage - working set), never negative. */
uint64_t eviction_notifier_level(int64_t capacity, int64_t threshold_quantity, uint64_t usage, uint64_t working_set);
/* the line written to cgroup.event_control: "<eventfd> <watched fd> <level>" */
int eviction_notifier_control_line(int efd, int watch_fd, uint64_t level, char *buf, size_t size);
/* the PSI trigger written to memory.pressure */
#define EVICTION_NOTIFIER_PSI_TRIGGER "some 100000 1000000"
/* the same ratio over 2 s: what a kernel accepts from an opener without CAP_SYS_RESOURCE */
#define EVICTION_NOTIFIER_PSI_TRIGGER_2S "some 200000 2000000"
