/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "basic/hash.h"

static uint64_t seed;

static uint64_t get_seed(void) {
        if (seed == 0) {
                uint64_t s = 0;
                if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != sizeof(s)) {
                        struct timespec ts;
                        clock_gettime(CLOCK_MONOTONIC, &ts);
                        s = (uint64_t) ts.tv_nsec ^ ((uint64_t) ts.tv_sec << 32);
                }
                seed = FNV1A64_INIT ^ (s | 1);
        }
        return seed;
}

uint64_t hashmap_hash(const char *key) {
        uint64_t h = get_seed();
        for (const unsigned char *p = (const unsigned char *) key; *p; p++) {
                h ^= *p;
                h *= UINT64_C(0x100000001b3);
        }
        /* fold the high bits in: the table index takes the low ones */
        return h ^ (h >> 29);
}

void hashmap_done(struct hashmap *m) {
        if (!m)
                return;
        free(m->slots);
        *m = (struct hashmap) {};
}

/* the slot of key, or the free slot where it would go; m->cap > 0 */
static size_t find_slot(const struct hashmap *m, const char *key, uint64_t hash) {
        size_t mask = m->cap - 1, i = (size_t) hash & mask;

        while (m->slots[i].key && (m->slots[i].hash != hash || strcmp(m->slots[i].key, key) != 0))
                i = (i + 1) & mask;
        return i;
}

static int resize(struct hashmap *m, size_t cap) {
        struct hashmap_slot *slots = calloc(cap, sizeof(*slots)), *old = m->slots;
        size_t old_cap = m->cap;

        if (!slots)
                return -ENOMEM;
        m->slots = slots;
        m->cap = cap;
        for (size_t i = 0; i < old_cap; i++)
                if (old[i].key) {
                        size_t j = (size_t) old[i].hash & (cap - 1);
                        while (slots[j].key)
                                j = (j + 1) & (cap - 1);
                        slots[j] = old[i];
                }
        free(old);
        return 0;
}

int hashmap_reserve(struct hashmap *m, size_t n) {
        size_t cap = m->cap ? m->cap : 8;

        if (n > SIZE_MAX / 4)
                return -ENOMEM;
        while (cap < 2 * n)
                cap *= 2;
        return cap == m->cap ? 0 : resize(m, cap);
}

int hashmap_put(struct hashmap *m, const char *key, void *value) {
        uint64_t hash = hashmap_hash(key);
        size_t i;
        int r;

        if (m->cap == 0 || 2 * (m->n + 1) > m->cap) {
                r = hashmap_reserve(m, m->n + 1);
                if (r < 0)
                        return r;
        }
        i = find_slot(m, key, hash);
        if (!m->slots[i].key)
                m->n++;
        m->slots[i] = (struct hashmap_slot) { .key = key, .value = value, .hash = hash };
        return 0;
}

static struct hashmap_slot *lookup(const struct hashmap *m, const char *key) {
        size_t i;

        if (!m || m->n == 0)
                return NULL;
        i = find_slot(m, key, hashmap_hash(key));
        return m->slots[i].key ? &m->slots[i] : NULL;
}

void *hashmap_get(const struct hashmap *m, const char *key) {
        struct hashmap_slot *s = lookup(m, key);
        return s ? s->value : NULL;
}

bool hashmap_contains(const struct hashmap *m, const char *key) {
        return lookup(m, key) != NULL;
}

void *hashmap_remove(struct hashmap *m, const char *key) {
        return hashmap_remove2(m, key, NULL);
}

void *hashmap_remove2(struct hashmap *m, const char *key, const char **ret_key) {
        struct hashmap_slot *s = lookup(m, key);
        size_t mask, i, j;
        void *value;

        if (!s)
                return NULL;
        value = s->value;
        if (ret_key)
                *ret_key = s->key;
        mask = m->cap - 1;
        i = (size_t) (s - m->slots);
        /* backward shift: move later entries of the same probe run into the hole when their home slot allows */
        for (j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
                size_t home = (size_t) m->slots[j].hash & mask;
                /* the entry at j may move to i unless its home lies cyclically in (i, j] */
                if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
                        continue;
                m->slots[i] = m->slots[j];
                i = j;
        }
        m->slots[i] = (struct hashmap_slot) {};
        m->n--;
        return value;
}

void hashmap_clear(struct hashmap *m) {
        if (m->slots)
                memset(m->slots, 0, m->cap * sizeof(*m->slots));
        m->n = 0;
}

bool hashmap_iterate(const struct hashmap *m, size_t *i, const char **ret_key, void **ret_value) {
        for (; m && *i < m->cap; (*i)++)
                if (m->slots[*i].key) {
                        if (ret_key)
                                *ret_key = m->slots[*i].key;
                        if (ret_value)
                                *ret_value = m->slots[*i].value;
                        (*i)++;
                        return true;
                }
        return false;
}
