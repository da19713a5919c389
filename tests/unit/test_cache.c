/* SPDX-License-Identifier: MIT */
/* test_cache.c: the generation-tagged cache (src/cache). */
#include "../../src/cache/cache.h"
#include "t.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

static void test_basic(void)
{
    subtest("get and put")
    {
        struct cache *c = cache_new(64, 100, 10000);
        size_t len = 0;
        char *v;
        uint64_t hits, misses;
        ok(cache_get(c, "k", 1, 1, &len) == NULL, "empty: a miss");
        cache_put(c, "k", 1, 1, "value", 5);
        v = cache_get(c, "k", 1, 1, &len);
        ok(v && len == 5 && memcmp(v, "value", 5) == 0 && v[5] == '\0', "a hit, a copy");
        free(v);
        ok(cache_get(c, "k", 1, 2, &len) == NULL, "another generation: a miss");
        ok(cache_get(c, "K", 1, 1, &len) == NULL, "another key: a miss");
        ok(cache_get(c, "k\n", 2, 1, &len) == NULL, "a longer key: a miss");
        cache_put(c, "k", 1, 2, "newer", 5);
        v = cache_get(c, "k", 1, 2, &len);
        ok(v && memcmp(v, "newer", 5) == 0, "a new generation replaces the old");
        free(v);
        ok(cache_get(c, "k", 1, 1, &len) == NULL, "the old generation is gone");
        cache_counts(c, &hits, &misses);
        is_int(hits, 2, "hits counted");
        is_int(misses, 5, "misses counted");
        cache_free(c);
        cache_free(NULL);
    }
    subtest("fixed-size values")
    {
        struct cache *c = cache_new(8, 100, 10000);
        struct {
            int a;
            char b[16];
        } in = {42, "tenant"}, out = {0, ""};
        cache_put(c, "key", 3, 7, &in, sizeof(in));
        ok(cache_get_into(c, "key", 3, 7, &out, sizeof(out)) && out.a == 42 &&
               strcmp(out.b, "tenant") == 0,
           "copied into the caller's struct");
        ok(!cache_get_into(c, "key", 3, 7, &out, sizeof(out) - 1), "another size: a miss");
        ok(!cache_get_into(c, "key", 3, 8, &out, sizeof(out)), "another generation: a miss");
        cache_free(c);
    }
}

static void test_limits(void)
{
    subtest("one slot: a new key evicts, never answers for the old")
    {
        struct cache *c = cache_new(1, 100, 10000);
        size_t len;
        char *v;
        cache_put(c, "org_A", 5, 1, "A's page", 8);
        cache_put(c, "org_B", 5, 1, "B's page", 8);
        ok(cache_get(c, "org_A", 5, 1, &len) == NULL, "A was evicted");
        v = cache_get(c, "org_B", 5, 1, &len);
        ok(v && memcmp(v, "B's page", 8) == 0, "B is there");
        free(v);
        cache_free(c);
    }
    subtest("sizes")
    {
        struct cache *c = cache_new(16, 10, 30);
        size_t len;
        char *v;
        cache_put(c, "big", 3, 1, "01234567890", 11);
        ok(cache_get(c, "big", 3, 1, &len) == NULL, "a value over max_value is not kept");
        cache_put(c, "a", 1, 1, "0123456789", 10);
        cache_put(c, "b", 1, 1, "0123456789", 10);
        cache_put(c, "c", 1, 1, "0123456789", 10);
        v = cache_get(c, "c", 1, 1, &len);
        ok(v == NULL, "past max_bytes a new key is not kept");
        free(v);
        v = cache_get(c, "a", 1, 1, &len);
        ok(v != NULL, "what was kept stays");
        free(v);
        cache_free(c);
    }
}

/* Threads hammer the same keys: each answer is the value of the key asked (run under TSan). */
struct worker {
    struct cache *c;
    int id;
    bool good;
};

static void *hammer(void *arg)
{
    struct worker *w = arg;
    w->good = true;
    for (int i = 0; i < 20000; i++) {
        char key[16], val[16];
        size_t len;
        char *v;
        int k = (i * 7 + w->id) % 40;
        snprintf(key, sizeof(key), "k%d", k);
        snprintf(val, sizeof(val), "v%d", k);
        cache_put(w->c, key, strlen(key), (uint64_t)(i / 1000), val, strlen(val));
        v = cache_get(w->c, key, strlen(key), (uint64_t)(i / 1000), &len);
        if (v && (len != strlen(val) || memcmp(v, val, len) != 0))
            w->good = false;
        free(v);
    }
    return NULL;
}

static void test_threads(void)
{
    subtest("threads")
    {
        struct cache *c = cache_new(32, 64, 1 << 20);
        pthread_t t[4];
        struct worker w[4];
        bool good = true;
        for (int i = 0; i < 4; i++) {
            w[i] = (struct worker){c, i, false};
            pthread_create(&t[i], NULL, hammer, &w[i]);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(t[i], NULL);
            good = good && w[i].good;
        }
        ok(good, "4 threads: every hit is the value of its own key");
        cache_free(c);
    }
}

int main(void)
{
    test_basic();
    test_limits();
    test_threads();
    return done_testing();
}
