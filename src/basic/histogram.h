/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A Prometheus histogram: cumulative counts per upper bound, plus count and sum. */

#include <stddef.h>
#include <stdint.h>

#define HISTOGRAM_MAX_BUCKETS 32

struct histogram {
        size_t n_buckets;
        double bounds[HISTOGRAM_MAX_BUCKETS];   /* upper bounds, ascending (+Inf implied) */
        uint64_t counts[HISTOGRAM_MAX_BUCKETS]; /* observations <= bounds[i] (not cumulative) */
        uint64_t count;
        double sum;
};

/* bounds given explicitly */
void histogram_init(struct histogram *h, const double *bounds, size_t n);
/* prometheus.ExponentialBuckets(start, factor, n) */
void histogram_init_exponential(struct histogram *h, double start, double factor, size_t n);
void histogram_observe(struct histogram *h, double v);
