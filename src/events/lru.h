/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A bounded LRU map: string key -> owned value (groupcache/lru), the caches of the event correlator. */

#include <stddef.h>

struct event_lru;
/* capacity > 0; free_value (may be NULL) frees values on removal, eviction and event_lru_free(). */
int event_lru_new(size_t capacity, void (*free_value)(void *value), struct event_lru **ret);
struct event_lru *event_lru_free(struct event_lru *l); /* accepts NULL */
/* The value or NULL; a hit makes the entry the most recently used. */
void *event_lru_get(struct event_lru *l, const char *key);
/* Insert or replace (the old value is freed unless it is value itself); the entry becomes the most
 * recently used; when over capacity the least recently used entry is evicted. value is taken, even on
 * failure (-ENOMEM). */
int event_lru_add(struct event_lru *l, const char *key, void *value);
size_t event_lru_size(const struct event_lru *l);
