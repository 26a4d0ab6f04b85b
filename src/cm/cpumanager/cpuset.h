/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A set of CPU ids (k8s.io/utils/cpuset): a fixed bitmap, passed by value. The text form is the kernel's and
 * upstream's list format, "0-3,8,10-11"; the empty set is "". */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CPUSET_MAX 1024
#define CPUSET_WORDS (CPUSET_MAX / 64)
#define CPUSET_TEXT_MAX (CPUSET_MAX * 6)

struct cpuset {
        uint64_t w[CPUSET_WORDS];
};

static inline bool cpuset_has(const struct cpuset *s, int cpu) {
        return cpu >= 0 && cpu < CPUSET_MAX && (s->w[cpu / 64] >> (cpu % 64)) & 1;
}
static inline void cpuset_add(struct cpuset *s, int cpu) {
        if (cpu >= 0 && cpu < CPUSET_MAX)
                s->w[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}
static inline void cpuset_del(struct cpuset *s, int cpu) {
        if (cpu >= 0 && cpu < CPUSET_MAX)
                s->w[cpu / 64] &= ~(UINT64_C(1) << (cpu % 64));
}
int cpuset_count(const struct cpuset *s);
bool cpuset_empty(const struct cpuset *s);
bool cpuset_equal(const struct cpuset *a, const struct cpuset *b);
struct cpuset cpuset_union(const struct cpuset *a, const struct cpuset *b);
struct cpuset cpuset_diff(const struct cpuset *a, const struct cpuset *b); /* a \ b */
struct cpuset cpuset_and(const struct cpuset *a, const struct cpuset *b);
/* the next member >= from, or -1 */
int cpuset_next(const struct cpuset *s, int from);
#define CPUSET_FOREACH(cpu, s) for (int cpu = cpuset_next((s), 0); cpu >= 0; cpu = cpuset_next((s), cpu + 1))

/* "0-3,8": -EINVAL on anything else (ids >= CPUSET_MAX, reversed ranges, stray characters). Whitespace around
 * the whole text is ignored (sysfs files end with a newline). */
int cpuset_parse(const char *text, struct cpuset *ret);
/* into buf (CPUSET_TEXT_MAX is always enough) */
const char *cpuset_format(const struct cpuset *s, char *buf, size_t size);
