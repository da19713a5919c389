/* SPDX-License-Identifier: MIT */
/*
 * cache.c: see cache.h.
 *
 * DESIGN: the request path reads the same few things over and over (the key it was called
 * with, its organization, the first page of employees), and the store answers them in 10 to
 * 20 µs each. A cache entry is correct only for the generation it was read at: the store moves
 * the generation on every commit it can see, so an entry is never served after a change, and
 * the cache has nothing to invalidate. Values are copied in and out under the shard's lock;
 * values are small (a verified key is 500 bytes, a page of 50 employees 2 KiB), and a copy is
 * cheaper than reference counts shared between threads. Keys are compared in full: two
 * tenants' keys never share an entry, whatever their hashes.
 */
#include "cache.h"

#include "../core/mem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SHARDS 16

struct entry {
    uint64_t hash;
    uint64_t gen;
    char *key; /* key bytes, then value bytes: one allocation */
    size_t klen;
    size_t vlen;
};

struct cache {
    pthread_mutex_t mu[SHARDS];
    struct entry *slots;
    size_t nslots;
    size_t max_value;
    size_t max_bytes;
    atomic_size_t bytes; /* keys and values held */
    atomic_uint_fast64_t hits;
    atomic_uint_fast64_t misses;
};

/* FNV-1a, 64 bits: keys are short, and a collision costs an eviction, never a wrong answer. */
static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* A cache of 'slots' entries (at least 1); free it with cache_free(). */
struct cache *cache_new(size_t slots, size_t max_value, size_t max_bytes)
{
    struct cache *c = xcalloc(1, sizeof(*c));
    c->nslots = slots ? slots : 1;
    c->slots = xcalloc(c->nslots, sizeof(*c->slots));
    c->max_value = max_value;
    c->max_bytes = max_bytes;
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_init(&c->mu[i], NULL);
    return c;
}

/* Free 'c' and everything it holds; NULL is a no-op. No other thread may be using it. */
void cache_free(struct cache *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nslots; i++)
        free(c->slots[i].key);
    for (int i = 0; i < SHARDS; i++)
        pthread_mutex_destroy(&c->mu[i]);
    free(c->slots);
    free(c);
}

static bool matches(const struct entry *en, uint64_t hash, const void *key, size_t klen,
                    uint64_t gen)
{
    return en->key && en->hash == hash && en->gen == gen && en->klen == klen &&
           memcmp(en->key, key, klen) == 0;
}

/* Lock the shard of 'hash' and return its slot. */
static struct entry *lock_slot(struct cache *c, uint64_t hash, pthread_mutex_t **mu)
{
    size_t i = (size_t)(hash % c->nslots);
    *mu = &c->mu[i % SHARDS];
    pthread_mutex_lock(*mu);
    return &c->slots[i];
}

/* See cache.h. */
char *cache_get(struct cache *c, const void *key, size_t klen, uint64_t gen, size_t *len)
{
    uint64_t h = hash_bytes(key, klen);
    pthread_mutex_t *mu;
    struct entry *en = lock_slot(c, h, &mu);
    char *out = NULL;

    if (matches(en, h, key, klen, gen)) {
        out = xmalloc(en->vlen + 1);
        memcpy(out, en->key + klen, en->vlen);
        out[en->vlen] = '\0';
        *len = en->vlen;
    }
    pthread_mutex_unlock(mu);
    atomic_fetch_add_explicit(out ? &c->hits : &c->misses, 1, memory_order_relaxed);
    return out;
}

/* See cache.h. */
bool cache_get_into(struct cache *c, const void *key, size_t klen, uint64_t gen, void *dst,
                    size_t len)
{
    uint64_t h = hash_bytes(key, klen);
    pthread_mutex_t *mu;
    struct entry *en = lock_slot(c, h, &mu);
    bool hit = matches(en, h, key, klen, gen) && en->vlen == len;

    if (hit)
        memcpy(dst, en->key + klen, len);
    pthread_mutex_unlock(mu);
    atomic_fetch_add_explicit(hit ? &c->hits : &c->misses, 1, memory_order_relaxed);
    return hit;
}

/* See cache.h. The copy is made before the lock is taken, and what it replaces is freed after. */
void cache_put(struct cache *c, const void *key, size_t klen, uint64_t gen, const void *value,
               size_t len)
{
    uint64_t h = hash_bytes(key, klen);
    size_t size = klen + len;
    pthread_mutex_t *mu;
    struct entry *en, old;
    char *copy;

    if (len > c->max_value || size > c->max_bytes)
        return;
    copy = xmalloc(size ? size : 1);
    memcpy(copy, key, klen);
    memcpy(copy + klen, value, len);
    en = lock_slot(c, h, &mu);
    old = *en;
    if (atomic_load(&c->bytes) - (old.key ? old.klen + old.vlen : 0) + size > c->max_bytes) {
        pthread_mutex_unlock(mu);
        free(copy); /* full: what is there stays */
        return;
    }
    atomic_fetch_add(&c->bytes, size);
    if (old.key)
        atomic_fetch_sub(&c->bytes, old.klen + old.vlen);
    *en = (struct entry){h, gen, copy, klen, len};
    pthread_mutex_unlock(mu);
    free(old.key);
}

/* See cache.h. */
void cache_counts(const struct cache *c, uint64_t *hits, uint64_t *misses)
{
    *hits = atomic_load_explicit(&c->hits, memory_order_relaxed);
    *misses = atomic_load_explicit(&c->misses, memory_order_relaxed);
}
