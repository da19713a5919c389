/* SPDX-License-Identifier: MIT */
/*
 * bucket.c: the table of per-tenant limit state. 64 stripes, each a mutex and a small open
 * hash chain; a tenant's entry is created on its first request and kept (one entry per
 * tenant that ever made a request: bounded by the number of tenants).
 *
 * Order of checks: concurrency first (a request over it takes no token), then the window and
 * the bucket together (a request needs both, and takes both or neither).
 */
#include "ratelimit.h"

#include "../core/mem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define STRIPES 64

struct entry {
    struct entry *next;
    char *tenant;
    int64_t window_min; /* minute number of the current window */
    uint32_t count;     /* requests admitted in the window */
    double tokens;
    int64_t refill_ms; /* time of the last refill */
    uint32_t inflight;
};

struct stripe {
    pthread_mutex_t mu;
    struct entry *head;
};

struct ratelimit {
    struct stripe stripes[STRIPES];
    atomic_ullong refused[3];
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

/* A new, empty limiter; the caller owns it (ratelimit_free()). */
struct ratelimit *ratelimit_new(void)
{
    struct ratelimit *rl = xcalloc(1, sizeof(*rl));
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&rl->stripes[i].mu, NULL);
    return rl;
}

/* Free 'rl' and every entry; NULL is a no-op. */
void ratelimit_free(struct ratelimit *rl)
{
    if (!rl)
        return;
    for (int i = 0; i < STRIPES; i++) {
        struct entry *e = rl->stripes[i].head;
        while (e) {
            struct entry *next = e->next;
            free(e->tenant);
            free(e);
            e = next;
        }
        pthread_mutex_destroy(&rl->stripes[i].mu);
    }
    free(rl);
}

static struct entry *find(struct stripe *st, const char *tenant, bool create)
{
    struct entry *e;
    for (e = st->head; e; e = e->next) {
        if (strcmp(e->tenant, tenant) == 0)
            return e;
    }
    if (!create)
        return NULL;
    e = xcalloc(1, sizeof(*e));
    e->tenant = xstrdup(tenant);
    e->window_min = -1;
    e->tokens = -1; /* filled on first use */
    e->next = st->head;
    st->head = e;
    return e;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Admit or refuse one request; see ratelimit.h. */
void ratelimit_enter(struct ratelimit *rl, const char *tenant, const struct config_limits *lim,
                     int64_t now_ms, struct ratelimit_result *out)
{
    struct stripe *st = &rl->stripes[hash(tenant) % STRIPES];
    int64_t minute = now_ms / 60000;
    double rate = lim->per_minute / 60000.0; /* tokens per ms */
    struct entry *e;

    pthread_mutex_lock(&st->mu);
    e = find(st, tenant, true);
    if (e->window_min != minute) {
        e->window_min = minute;
        e->count = 0;
    }
    if (e->tokens < 0) {
        e->tokens = lim->burst;
        e->refill_ms = now_ms;
    } else if (now_ms > e->refill_ms) {
        e->tokens += (double)(now_ms - e->refill_ms) * rate;
        e->refill_ms = now_ms;
    }
    if (e->tokens > lim->burst)
        e->tokens = lim->burst;

    out->limit = lim->per_minute;
    out->reset_s = (minute + 1) * 60;
    out->retry_after = 0;
    if (e->inflight >= lim->concurrent) {
        out->verdict = RATELIMIT_CONCURRENCY;
        out->retry_after = 1;
    } else if (e->count >= lim->per_minute) {
        out->verdict = RATELIMIT_RATE;
        out->retry_after = ceil_div((minute + 1) * 60000 - now_ms, 1000);
    } else if (e->tokens < 1.0) {
        out->verdict = RATELIMIT_RATE;
        out->retry_after = ceil_div((int64_t)((1.0 - e->tokens) / rate + 0.999), 1000);
    } else {
        out->verdict = RATELIMIT_OK;
        e->tokens -= 1.0;
        e->count++;
        e->inflight++;
    }
    if (out->retry_after < 1 && out->verdict != RATELIMIT_OK)
        out->retry_after = 1;
    out->remaining = e->count >= lim->per_minute ? 0 : lim->per_minute - e->count;
    pthread_mutex_unlock(&st->mu);
    if (out->verdict != RATELIMIT_OK)
        atomic_fetch_add(&rl->refused[out->verdict], 1);
}

/* End an admitted request of 'tenant'. */
void ratelimit_leave(struct ratelimit *rl, const char *tenant)
{
    struct stripe *st = &rl->stripes[hash(tenant) % STRIPES];
    struct entry *e;
    pthread_mutex_lock(&st->mu);
    e = find(st, tenant, false);
    if (e && e->inflight > 0)
        e->inflight--;
    pthread_mutex_unlock(&st->mu);
}

/* Requests refused with verdict 'v' since start. */
uint64_t ratelimit_refused(const struct ratelimit *rl, enum ratelimit_verdict v)
{
    return atomic_load(&rl->refused[v]);
}
