/* SPDX-License-Identifier: Apache-2.0 */
/* Image records and the image GC's choices (see image_gc.h). */
#include "images/image_gc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/string.h"
#include "basic/strv.h"
#include "basic/time.h"

void image_gc_records_done(struct image_gc_records *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->n; i++)
                free(r->items[i].id);
        free(r->items);
        *r = (struct image_gc_records) {};
}

struct image_gc_record *image_gc_records_find(const struct image_gc_records *r, const char *id) {
        for (size_t i = 0; r && id && i < r->n; i++)
                if (streq(r->items[i].id, id))
                        return &r->items[i];
        return NULL;
}

void image_gc_records_remove(struct image_gc_records *r, const char *id) {
        struct image_gc_record *rec = image_gc_records_find(r, id);

        if (!rec)
                return;
        free(rec->id);
        *rec = r->items[--r->n];
}

static bool in_list(char *const *l, const char *id) {
        return l && strv_contains(l, id);
}

static int add_record(struct image_gc_records *r, const char *id, struct image_gc_record **ret) {
        struct image_gc_record *n = reallocarray(r->items, r->n + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        r->items = n;
        n[r->n] = (struct image_gc_record) { .id = strdup(id) };
        if (!n[r->n].id)
                return -ENOMEM;
        *ret = &n[r->n++];
        return 0;
}

int image_gc_records_detect(struct image_gc_records *r, const struct image_gc_image *images, size_t n,
                            char *const *in_use, int64_t detect_usec, int64_t now_usec) {
        int rr;

        for (size_t i = 0; i < n; i++) {
                struct image_gc_record *rec = image_gc_records_find(r, images[i].id);
                if (!images[i].id)
                        continue;
                if (!rec) {
                        rr = add_record(r, images[i].id, &rec);
                        if (rr < 0)
                                return rr;
                        rec->first_detected_usec = detect_usec;
                }
                if (in_list(in_use, images[i].id))
                        rec->last_used_usec = now_usec;
                rec->size = images[i].size;
                rec->pinned = images[i].pinned;
        }
        /* forget the images the runtime no longer has */
        for (size_t i = 0; i < r->n;) {
                bool present = false;
                for (size_t k = 0; k < n && !present; k++)
                        present = streq_ptr(images[k].id, r->items[i].id);
                if (present) {
                        i++;
                        continue;
                }
                free(r->items[i].id);
                r->items[i] = r->items[--r->n];
        }
        return 0;
}

static int cmp_eviction(const void *a, const void *b) {
        const struct image_gc_record *x = *(struct image_gc_record *const *) a,
                                     *y = *(struct image_gc_record *const *) b;
        if (x->last_used_usec != y->last_used_usec)
                return x->last_used_usec < y->last_used_usec ? -1 : 1;
        if (x->first_detected_usec != y->first_detected_usec)
                return x->first_detected_usec < y->first_detected_usec ? -1 : 1;
        return strcmp(x->id, y->id);
}

int image_gc_records_eviction_order(const struct image_gc_records *r, char *const *in_use,
                                    struct image_gc_record ***ret, size_t *ret_n) {
        struct image_gc_record **l = calloc(r->n + 1, sizeof(*l));
        size_t n = 0;

        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < r->n; i++)
                if (!in_list(in_use, r->items[i].id) && !r->items[i].pinned)
                        l[n++] = &r->items[i];
        qsort(l, n, sizeof(*l), cmp_eviction);
        *ret = l;
        *ret_n = n;
        return 0;
}

int image_gc_select_space(struct image_gc_record *const *order, size_t n, int64_t bytes_to_free, int64_t now_usec,
                          uint64_t min_age_usec, struct image_gc_record ***ret, size_t *ret_n, int64_t *ret_freed) {
        struct image_gc_record **l = calloc(n + 1, sizeof(*l));
        int64_t freed = 0;
        size_t k = 0;

        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n && freed < bytes_to_free; i++) {
                if (order[i]->last_used_usec >= now_usec)
                        continue; /* used right now */
                if (now_usec - order[i]->first_detected_usec < (int64_t) min_age_usec)
                        continue; /* just pulled: likely about to be used */
                l[k++] = order[i];
                freed += (int64_t) MIN(order[i]->size, (uint64_t) INT64_MAX / 2);
        }
        *ret = l;
        *ret_n = k;
        *ret_freed = freed;
        return 0;
}

int image_gc_select_old(struct image_gc_record *const *order, size_t n, int64_t now_usec, int64_t began_usec,
                        uint64_t max_age_usec, struct image_gc_record ***ret, size_t *ret_n) {
        struct image_gc_record **l = calloc(n + 1, sizeof(*l));
        size_t k = 0;

        if (!l)
                return -ENOMEM;
        /* until MaxAge has passed since the kubelet started, last-used times may be too young to trust */
        if (max_age_usec > 0 && now_usec - began_usec > (int64_t) max_age_usec)
                for (size_t i = 0; i < n; i++) {
                        /* an image never used counts from when it was first seen (upstream: from the epoch) */
                        int64_t last = MAX(order[i]->last_used_usec, order[i]->first_detected_usec);
                        if (now_usec - last > (int64_t) max_age_usec)
                                l[k++] = order[i];
                }
        *ret = l;
        *ret_n = k;
        return 0;
}

int image_gc_amount_to_free(const struct image_gc_policy *p, int64_t capacity, int64_t available,
                            int *ret_usage_percent, int64_t *ret_amount) {
        int usage;

        if (capacity <= 0)
                return -EINVAL;
        if (available > capacity)
                available = capacity;
        usage = 100 - (int) (available * 100 / capacity);
        *ret_usage_percent = usage;
        *ret_amount = usage >= p->high_threshold_percent
                              ? capacity * (int64_t) (100 - p->low_threshold_percent) / 100 - available
                              : 0;
        return 0;
}

json_t *image_gc_records_to_json(const struct image_gc_records *r) {
        json_t *images = json_object(), *doc;

        if (!images)
                return NULL;
        for (size_t i = 0; i < r->n; i++) {
                char first[64], last[64];
                json_t *e;

                format_rfc3339nano(r->items[i].first_detected_usec * 1000, first, sizeof(first));
                if (r->items[i].last_used_usec)
                        format_rfc3339nano(r->items[i].last_used_usec * 1000, last, sizeof(last));
                e = r->items[i].last_used_usec ? json_pack("{s:s, s:s}", "firstDetected", first, "lastUsed", last)
                                               : json_pack("{s:s}", "firstDetected", first);
                if (!e || json_object_set_new(images, r->items[i].id, e) < 0) {
                        json_decref(images);
                        return NULL;
                }
        }
        doc = json_pack("{s:i, s:o}", "version", 1, "images", images);
        return doc;
}

int image_gc_records_from_json(const json_t *j, struct image_gc_records *r) {
        struct image_gc_records loaded = {};
        const json_t *images = json_object_get(j, "images"), *e;
        const char *id;
        int rr;

        if (!json_is_object(images))
                return -EINVAL;
        json_object_foreach((json_t *) images, id, e) {
                const char *first = json_string_value(json_object_get(e, "firstDetected"));
                const char *last = json_string_value(json_object_get(e, "lastUsed"));
                struct image_gc_record *rec;
                int64_t f = 0, l = 0;

                if (!first || parse_rfc3339(first, &f) < 0 || (last && parse_rfc3339(last, &l) < 0)) {
                        image_gc_records_done(&loaded);
                        return -EINVAL;
                }
                rr = add_record(&loaded, id, &rec);
                if (rr < 0) {
                        image_gc_records_done(&loaded);
                        return rr;
                }
                rec->first_detected_usec = f / 1000;
                rec->last_used_usec = l / 1000;
        }
        /* merge: what is already known wins for first detection, the later last use wins */
        for (size_t i = 0; i < loaded.n; i++) {
                struct image_gc_record *have = image_gc_records_find(r, loaded.items[i].id);
                if (have) {
                        have->first_detected_usec = MIN(have->first_detected_usec, loaded.items[i].first_detected_usec);
                        have->last_used_usec = MAX(have->last_used_usec, loaded.items[i].last_used_usec);
                        continue;
                }
                struct image_gc_record *rec;
                rr = add_record(r, loaded.items[i].id, &rec);
                if (rr < 0) {
                        image_gc_records_done(&loaded);
                        return rr;
                }
                rec->first_detected_usec = loaded.items[i].first_detected_usec;
                rec->last_used_usec = loaded.items[i].last_used_usec;
        }
        image_gc_records_done(&loaded);
        return 0;
}
