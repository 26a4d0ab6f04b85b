/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A hash map from strings to pointers: open addressing with linear probing, power-of-two capacity, at most
 * half full, deletion by backward shift (no tombstones, so lookups stay short however much the map churns).
 * The hash is FNV-1a 64 with a per-process random seed, so that keys from the outside (pod UIDs, names)
 * cannot be chosen to collide.
 *
 * Keys are borrowed, not copied: a key must stay valid and unchanged while its entry is in the map (the usual
 * case is an object that holds its own key, e.g. a pod worker and its UID). A zero-initialized struct hashmap
 * is an empty map; hashmap_done() frees the table (not the keys or values).
 *
 * Iteration (hashmap_iterate) visits every entry once in no particular order; the map must not be changed
 * during it. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hashmap_slot {
        const char *key; /* NULL: free */
        void *value;
        uint64_t hash;
};

struct hashmap {
        size_t n;   /* entries */
        size_t cap; /* slots: 0 or a power of two */
        struct hashmap_slot *slots;
};

void hashmap_done(struct hashmap *m); /* accepts NULL */

/* Adds key → value, or replaces the value of an existing key (the key pointer stored is then the new one).
 * value may be NULL. -ENOMEM leaves the map as it was. */
int hashmap_put(struct hashmap *m, const char *key, void *value);
/* The value of key, NULL when absent (use hashmap_contains() when values can be NULL). */
void *hashmap_get(const struct hashmap *m, const char *key);
bool hashmap_contains(const struct hashmap *m, const char *key);
/* Removes key; returns its value (NULL when absent). */
void *hashmap_remove(struct hashmap *m, const char *key);
/* The same, and *ret_key is the key as stored (for a map that owns its keys to free it); untouched when absent. */
void *hashmap_remove2(struct hashmap *m, const char *key, const char **ret_key);
/* Removes every entry (keeps the table). */
void hashmap_clear(struct hashmap *m);
/* Makes room for n entries without growing again (a bulk insert). */
int hashmap_reserve(struct hashmap *m, size_t n);

static inline size_t hashmap_size(const struct hashmap *m) {
        return m ? m->n : 0;
}

/* for (size_t i = 0; hashmap_iterate(m, &i, &k, &v);) { ... }: the next entry from *i on. */
bool hashmap_iterate(const struct hashmap *m, size_t *i, const char **ret_key, void **ret_value);

/* The hash of a string as the map computes it (exposed for tests). */
uint64_t hashmap_hash(const char *key);
