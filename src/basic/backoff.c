/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/backoff.h"
#include "basic/time.h"

#include <string.h>

void backoff_init(struct backoff *b, uint64_t initial_usec, uint64_t max_usec) {
        *b = (struct backoff) { .initial_usec = initial_usec, .max_usec = max_usec };
}

void backoff_done(struct backoff *b) {
        if (!b)
                return;
        for (size_t i = 0; i < b->n; i++)
                free(b->entries[i].key);
        free(b->entries);
        b->entries = NULL;
        b->n = 0;
}

static struct backoff_entry *find(const struct backoff *b, const char *key) {
        for (size_t i = 0; i < b->n; i++)
                if (streq(b->entries[i].key, key))
                        return &b->entries[i];
        return NULL;
}

static bool has_expired(const struct backoff *b, uint64_t event_time, uint64_t last_update) {
        return event_time > last_update && event_time - last_update > 2 * b->max_usec;
}

int backoff_next(struct backoff *b, const char *key, uint64_t event_time_usec, uint64_t now_usec) {
        struct backoff_entry *e = find(b, key);

        if (!e) {
                struct backoff_entry *n = reallocarray(b->entries, b->n + 1, sizeof(*n));
                char *k = strdup(key);
                if (n)
                        b->entries = n;
                if (!n || !k) {
                        free(k);
                        return -ENOMEM;
                }
                e = &b->entries[b->n++];
                *e = (struct backoff_entry) { .key = k, .delay_usec = b->initial_usec };
        } else if (has_expired(b, event_time_usec, e->last_update_usec))
                e->delay_usec = b->initial_usec;
        else
                e->delay_usec = MIN(e->delay_usec * 2, b->max_usec);
        e->last_update_usec = now_usec;
        return 0;
}

bool backoff_in_backoff_since(const struct backoff *b, const char *key, uint64_t event_time_usec, uint64_t now_usec,
                              uint64_t *ret_until_usec) {
        const struct backoff_entry *e = find(b, key);

        if (!e || has_expired(b, event_time_usec, e->last_update_usec))
                return false;
        if (now_usec >= event_time_usec && now_usec - event_time_usec >= e->delay_usec)
                return false;
        if (ret_until_usec)
                *ret_until_usec = event_time_usec + e->delay_usec;
        return true;
}

uint64_t backoff_last_update(const struct backoff *b, const char *key) {
        const struct backoff_entry *e = find(b, key);
        return e ? e->last_update_usec : 0;
}

uint64_t backoff_get(const struct backoff *b, const char *key) {
        const struct backoff_entry *e = find(b, key);
        return e ? e->delay_usec : 0;
}

void backoff_reset(struct backoff *b, const char *key) {
        struct backoff_entry *e = find(b, key);
        if (!e)
                return;
        free(e->key);
        *e = b->entries[--b->n];
}

void backoff_gc(struct backoff *b, uint64_t now_usec) {
        for (size_t i = 0; i < b->n;) {
                if (now_usec > b->entries[i].last_update_usec &&
                    now_usec - b->entries[i].last_update_usec > 2 * b->max_usec) {
                        free(b->entries[i].key);
                        b->entries[i] = b->entries[--b->n];
                } else
                        i++;
        }
}
