/* SPDX-License-Identifier: Apache-2.0 */
/* A bounded LRU map from strings to owned values (groupcache/lru, as client-go's event caches use it): a hash
 * table of chains plus a recency list. See lru.h. */
#include "events/lru.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/hash.h"
#include "basic/list.h"
#include "basic/macro.h"

struct lru_entry {
        char *key;
        void *value;
        uint64_t hash;
        struct lru_entry *hnext;       /* hash chain */
        struct lru_entry *prev, *next; /* recency: head is the most recently used */
};

struct event_lru {
        size_t capacity, size, n_buckets; /* n_buckets: a power of two */
        struct lru_entry **buckets;
        struct lru_entry *head, *tail;
        void (*free_value)(void *value);
};

static uint64_t key_hash(const char *key) {
        return fnv1a64(FNV1A64_INIT, key, strlen(key));
}

int event_lru_new(size_t capacity, void (*free_value)(void *value), struct event_lru **ret) {
        struct event_lru *l;

        if (capacity == 0 || capacity > SIZE_MAX / 4)
                return -EINVAL;
        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->capacity = capacity;
        l->free_value = free_value;
        for (l->n_buckets = 16; l->n_buckets < capacity; l->n_buckets *= 2)
                ;
        l->buckets = calloc(l->n_buckets, sizeof(*l->buckets));
        if (!l->buckets) {
                free(l);
                return -ENOMEM;
        }
        *ret = l;
        return 0;
}

static void lru_entry_free(struct event_lru *l, struct lru_entry *e) {
        if (l->free_value && e->value)
                l->free_value(e->value);
        free(e->key);
        free(e);
}

struct event_lru *event_lru_free(struct event_lru *l) {
        if (!l)
                return NULL;
        while (l->head) {
                struct lru_entry *e = l->head;
                l->head = e->next;
                lru_entry_free(l, e);
        }
        free(l->buckets);
        free(l);
        return NULL;
}

static void lru_unlink(struct event_lru *l, struct lru_entry *e) {
        DLIST_REMOVE_T(l->head, l->tail, e);
}

static void lru_push_front(struct event_lru *l, struct lru_entry *e) {
        DLIST_PREPEND_T(l->head, l->tail, e);
}

static struct lru_entry *lru_find(struct event_lru *l, const char *key, uint64_t hash) {
        for (struct lru_entry *e = l->buckets[hash & (l->n_buckets - 1)]; e; e = e->hnext)
                if (e->hash == hash && streq(e->key, key))
                        return e;
        return NULL;
}

static void lru_remove(struct event_lru *l, struct lru_entry *e) {
        struct lru_entry **p = &l->buckets[e->hash & (l->n_buckets - 1)];

        while (*p != e)
                p = &(*p)->hnext;
        *p = e->hnext;
        lru_unlink(l, e);
        l->size--;
        lru_entry_free(l, e);
}

void *event_lru_get(struct event_lru *l, const char *key) {
        struct lru_entry *e = lru_find(l, key, key_hash(key));

        if (!e)
                return NULL;
        if (l->head != e) {
                lru_unlink(l, e);
                lru_push_front(l, e);
        }
        return e->value;
}

int event_lru_add(struct event_lru *l, const char *key, void *value) {
        uint64_t hash = key_hash(key);
        struct lru_entry *e = lru_find(l, key, hash);

        if (e) {
                if (e->value != value && l->free_value && e->value)
                        l->free_value(e->value);
                e->value = value;
                if (l->head != e) {
                        lru_unlink(l, e);
                        lru_push_front(l, e);
                }
                return 0;
        }
        e = calloc(1, sizeof(*e));
        if (!e || !(e->key = strdup(key))) {
                free(e);
                if (l->free_value && value)
                        l->free_value(value);
                return -ENOMEM;
        }
        e->value = value;
        e->hash = hash;
        e->hnext = l->buckets[hash & (l->n_buckets - 1)];
        l->buckets[hash & (l->n_buckets - 1)] = e;
        lru_push_front(l, e);
        l->size++;
        while (l->size > l->capacity)
                lru_remove(l, l->tail);
        return 0;
}

size_t event_lru_size(const struct event_lru *l) {
        return l ? l->size : 0;
}
