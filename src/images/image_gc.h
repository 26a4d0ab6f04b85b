/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Image garbage collection (upstream pkg/kubelet/images/image_gc_manager.go), the bookkeeping and the
 * selection: pure functions, unit-tested; image_gc_manager.c runs them on the loop.
 *
 * Every image the runtime lists has a record: when it was first seen and when it was last used (by any
 * container, running or not, or as the sandbox image). Unused, unpinned images are removed least recently used
 * first (ties: first seen first), never one seen less than MinAge ago, until enough bytes are freed; with a
 * MaxAge, images unused for longer than that go whatever the disk usage. The records are kept in a small JSON
 * file under --root-dir so that a restart of the kubelet keeps the last-used times. */

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/time.h"

struct image_gc_policy {
        int high_threshold_percent; /* imageGCHighThresholdPercent, 85 */
        int low_threshold_percent;  /* imageGCLowThresholdPercent, 80 */
        uint64_t min_age_usec;      /* imageMinimumGCAge, 2m */
        uint64_t max_age_usec;      /* imageMaximumGCAge, 0 = off */
};

struct image_gc_record {
        char *id;
        int64_t first_detected_usec; /* realtime */
        int64_t last_used_usec;      /* realtime, 0 = never used */
        uint64_t size;
        bool pinned;
};

struct image_gc_records {
        struct image_gc_record *items;
        size_t n;
};

void image_gc_records_done(struct image_gc_records *r);
struct image_gc_record *image_gc_records_find(const struct image_gc_records *r, const char *id);
void image_gc_records_remove(struct image_gc_records *r, const char *id);

/* An image as the runtime lists it. */
struct image_gc_image {
        const char *id;
        uint64_t size;
        bool pinned;
};

/* detectImages: new images get first_detected = detect_usec (0 on the first detection after a start: "at an
 * unknown time in the past"); images in use (ids in in_use, a NULL-terminated list) get last_used = now; sizes and
 * pins are refreshed; records of images the runtime no longer has are dropped. */
int image_gc_records_detect(struct image_gc_records *r, const struct image_gc_image *images, size_t n,
                            char *const *in_use, int64_t detect_usec, int64_t now_usec);

/* imagesInEvictionOrder: the records neither in use nor pinned, least recently used first, ties broken by first
 * detection. Returned pointers borrow from r. */
int image_gc_records_eviction_order(const struct image_gc_records *r, char *const *in_use,
                                    struct image_gc_record ***ret, size_t *ret_n);

/* freeSpace's choice: in order, skipping images used at or after `now` and images first seen less than MinAge ago,
 * until the sizes add up to bytes_to_free. *ret_freed: what the chosen ones add up to. */
int image_gc_select_space(struct image_gc_record *const *order, size_t n, int64_t bytes_to_free, int64_t now_usec,
                          uint64_t min_age_usec, struct image_gc_record ***ret, size_t *ret_n, int64_t *ret_freed);

/* freeOldImages' choice: images unused for longer than MaxAge, an image never used counting from its first
 * detection (none until the kubelet has run MaxAge). */
int image_gc_select_old(struct image_gc_record *const *order, size_t n, int64_t now_usec, int64_t began_usec,
                        uint64_t max_age_usec, struct image_gc_record ***ret, size_t *ret_n);

/* The usage of the image filesystem in percent (100 - available*100/capacity, as upstream's integer math) and
 * how much to free to get down to the low threshold (0 when below the high one). -EINVAL for a zero capacity. */
int image_gc_amount_to_free(const struct image_gc_policy *p, int64_t capacity, int64_t available,
                            int *ret_usage_percent, int64_t *ret_amount);

/* The state file: {"images": {"<id>": {"firstDetected": "<RFC 3339>", "lastUsed": "<RFC 3339>"}}}. Loading
 * merges into r (sizes are refreshed by the next detection); a file that does not parse is an error and leaves r
 * alone. */
json_t *image_gc_records_to_json(const struct image_gc_records *r);
int image_gc_records_from_json(const json_t *j, struct image_gc_records *r);
