/* SPDX-License-Identifier: MIT */
/*
 * cache: a bounded map from byte keys to byte values, each value tagged with the store
 * generation it was read at (store_generation()). A value is served only to a reader that asks
 * with the same generation, so nothing outlives a change of the data it was built from.
 * Direct-mapped (a key's slot is fixed by its hash; a new key evicts the one there), sharded
 * locks, copies in and out: no caller ever holds a pointer into the cache.
 */
#ifndef WORKFORCE_CACHE_H
#define WORKFORCE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cache;

/* A cache of 'slots' entries, none larger than 'max_value' bytes, 'max_bytes' in all. */
struct cache *cache_new(size_t slots, size_t max_value, size_t max_bytes);
void cache_free(struct cache *c); /* NULL is a no-op */
/* The value of 'key' kept at generation 'gen', as a copy the caller frees with free(), and its
 * length in '*len'; NULL when absent or kept at another generation. */
char *cache_get(struct cache *c, const void *key, size_t klen, uint64_t gen, size_t *len);
/* Copy the value of 'key' kept at generation 'gen' into 'dst' when it is exactly 'len' bytes. */
bool cache_get_into(struct cache *c, const void *key, size_t klen, uint64_t gen, void *dst,
                    size_t len);
/* Keep a copy of 'value' under 'key' for generation 'gen'; a value over the limits is not kept. */
void cache_put(struct cache *c, const void *key, size_t klen, uint64_t gen, const void *value,
               size_t len);
/* Hits and misses since the start (for tests and /metrics). */
void cache_counts(const struct cache *c, uint64_t *hits, uint64_t *misses);

#endif
