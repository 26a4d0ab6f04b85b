/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/histogram.h"

#include <string.h>

void histogram_init(struct histogram *h, const double *bounds, size_t n) {
        memset(h, 0, sizeof(*h));
        if (n > HISTOGRAM_MAX_BUCKETS)
                n = HISTOGRAM_MAX_BUCKETS;
        memcpy(h->bounds, bounds, n * sizeof(double));
        h->n_buckets = n;
}

void histogram_init_exponential(struct histogram *h, double start, double factor, size_t n) {
        double b[HISTOGRAM_MAX_BUCKETS];
        if (n > HISTOGRAM_MAX_BUCKETS)
                n = HISTOGRAM_MAX_BUCKETS;
        for (size_t i = 0; i < n; i++)
                b[i] = i == 0 ? start : b[i - 1] * factor;
        histogram_init(h, b, n);
}

void histogram_observe(struct histogram *h, double v) {
        h->count++;
        h->sum += v;
        for (size_t i = 0; i < h->n_buckets; i++)
                if (v <= h->bounds[i]) {
                        h->counts[i]++;
                        return;
                }
}
