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

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
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

/* One shared place and whether it answers. */
struct shared {
    struct ratelimit_place place;
    bool set;
    _Atomic int64_t down_until_ms; /* not asked again before (0: it answers) */
    atomic_bool down;              /* for the log: one line when it goes, one when it is back */
};

struct ratelimit {
    struct stripe stripes[STRIPES];
    atomic_ullong refused[3];
    struct shared primary, fallback;
    _Atomic int64_t epoch;
    _Atomic int64_t beaten; /* the last epoch the primary was told of by a beat (-1: none) */
    /* the primary's beat thread */
    pthread_t beater;
    bool beating;
    int64_t beat_ms;
    pthread_mutex_t beat_mu;
    pthread_cond_t beat_cv;
    bool stopping;
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
    pthread_mutex_init(&rl->beat_mu, NULL);
    pthread_cond_init(&rl->beat_cv, NULL);
    atomic_init(&rl->beaten, -1);
    return rl;
}

/* Free 'rl' and every entry; NULL is a no-op. */
void ratelimit_free(struct ratelimit *rl)
{
    if (!rl)
        return;
    if (rl->beating) {
        pthread_mutex_lock(&rl->beat_mu);
        rl->stopping = true;
        pthread_cond_signal(&rl->beat_cv);
        pthread_mutex_unlock(&rl->beat_mu);
        pthread_join(rl->beater, NULL);
    }
    pthread_mutex_destroy(&rl->beat_mu);
    pthread_cond_destroy(&rl->beat_cv);
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

/* Admit or refuse one request in this process's table. */
static void local_enter(struct ratelimit *rl, const char *tenant, const struct config_limits *lim,
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
}

/* A call to 'sh' failed at 'now_ms': not asked again for RATELIMIT_RETRY_MS, and the node's
 * epoch moves (what it holds there under the old one stops counting). */
static void went_down(struct ratelimit *rl, struct shared *sh, const char *next, int64_t now_ms)
{
    atomic_store(&sh->down_until_ms, now_ms + RATELIMIT_RETRY_MS);
    atomic_fetch_add(&rl->epoch, 1);
    if (!atomic_exchange(&sh->down, true))
        log_warn("ratelimit: %s does not answer: limits are kept in %s until it does (tried"
                 " again every %d ms)",
                 sh->place.name, next, RATELIMIT_RETRY_MS);
}

/* Whether 'sh' is worth asking at 'now_ms'. */
static bool may_ask(const struct shared *sh, int64_t now_ms)
{
    return sh->set && now_ms >= atomic_load(&sh->down_until_ms);
}

/* Ask 'sh' to admit the request; true when it answered. */
static bool shared_enter(struct ratelimit *rl, struct shared *sh, const char *next,
                         const char *tenant, const struct config_limits *lim, int64_t now_ms,
                         struct ratelimit_result *out)
{
    int64_t epoch = atomic_load(&rl->epoch);
    if (!may_ask(sh, now_ms))
        return false;
    /* A new epoch is beaten before it counts anything: the other nodes count only the
     * requests of holders that beat. */
    if (sh->place.beat && atomic_load(&rl->beaten) != epoch) {
        if (sh->place.beat(sh->place.ctx, epoch, now_ms)) {
            went_down(rl, sh, next, now_ms);
            return false;
        }
        atomic_store(&rl->beaten, epoch);
    }
    if (sh->place.enter(sh->place.ctx, tenant, epoch, lim, now_ms, out)) {
        went_down(rl, sh, next, now_ms);
        return false;
    }
    out->epoch = epoch;
    atomic_store(&sh->down_until_ms, 0);
    if (atomic_exchange(&sh->down, false))
        log_info("ratelimit: %s answers again: limits are kept there", sh->place.name);
    return true;
}

/* Admit or refuse one request; see ratelimit.h. */
void ratelimit_enter(struct ratelimit *rl, const char *tenant, const struct config_limits *lim,
                     int64_t now_ms, struct ratelimit_result *out)
{
    const char *after_primary = rl->fallback.set ? rl->fallback.place.name : "this process";

    memset(out, 0, sizeof(*out));
    out->limit = lim->per_minute;
    if (shared_enter(rl, &rl->primary, after_primary, tenant, lim, now_ms, out))
        out->via = RATELIMIT_VIA_PRIMARY;
    else if (shared_enter(rl, &rl->fallback, "this process", tenant, lim, now_ms, out))
        out->via = RATELIMIT_VIA_FALLBACK;
    else
        local_enter(rl, tenant, lim, now_ms, out);
    if (out->verdict != RATELIMIT_OK)
        atomic_fetch_add(&rl->refused[out->verdict], 1);
}

/* End an admitted request of 'tenant' in this process's table. */
static void local_leave(struct ratelimit *rl, const char *tenant)
{
    struct stripe *st = &rl->stripes[hash(tenant) % STRIPES];
    struct entry *e;
    pthread_mutex_lock(&st->mu);
    e = find(st, tenant, false);
    if (e && e->inflight > 0)
        e->inflight--;
    pthread_mutex_unlock(&st->mu);
}

/* End an admitted request of 'tenant', where it was admitted. */
void ratelimit_leave(struct ratelimit *rl, const char *tenant,
                     const struct ratelimit_result *admitted)
{
    struct shared *sh = admitted->via == RATELIMIT_VIA_PRIMARY    ? &rl->primary
                        : admitted->via == RATELIMIT_VIA_FALLBACK ? &rl->fallback
                                                                  : NULL;
    if (!sh) {
        local_leave(rl, tenant);
        return;
    }
    /* A place that does not answer keeps the count; the new epoch stops it counting. */
    if (sh->place.leave(sh->place.ctx, tenant, admitted->epoch))
        went_down(rl, sh,
                  sh == &rl->primary && rl->fallback.set ? rl->fallback.place.name : "this process",
                  clock_now_ms());
}

/* The primary's beat, every beat_ms until ratelimit_free(). */
static void *beat_main(void *arg)
{
    struct ratelimit *rl = arg;
    pthread_mutex_lock(&rl->beat_mu);
    while (!rl->stopping) {
        struct timespec until;
        int64_t now = clock_now_ms();
        pthread_mutex_unlock(&rl->beat_mu);
        if (may_ask(&rl->primary, now)) {
            int64_t epoch = atomic_load(&rl->epoch);
            if (rl->primary.place.beat(rl->primary.place.ctx, epoch, now))
                went_down(rl, &rl->primary,
                          rl->fallback.set ? rl->fallback.place.name : "this process", now);
            else
                atomic_store(&rl->beaten, epoch);
        }
        pthread_mutex_lock(&rl->beat_mu);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += rl->beat_ms / 1000;
        until.tv_nsec += (long)(rl->beat_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        if (!rl->stopping)
            pthread_cond_timedwait(&rl->beat_cv, &rl->beat_mu, &until);
    }
    pthread_mutex_unlock(&rl->beat_mu);
    return NULL;
}

/* See ratelimit.h. */
void ratelimit_share(struct ratelimit *rl, const struct ratelimit_place *primary,
                     const struct ratelimit_place *fallback, int64_t beat_ms)
{
    if (primary) {
        rl->primary.place = *primary;
        rl->primary.set = true;
    }
    if (fallback) {
        rl->fallback.place = *fallback;
        rl->fallback.set = true;
    }
    if (primary && primary->beat && beat_ms > 0 && !rl->beating) {
        rl->beat_ms = beat_ms;
        rl->beating = pthread_create(&rl->beater, NULL, beat_main, rl) == 0;
        if (!rl->beating)
            log_warn("ratelimit: cannot start the beat thread of %s", primary->name);
    }
}

/* Requests refused with verdict 'v' since start. */
uint64_t ratelimit_refused(const struct ratelimit *rl, enum ratelimit_verdict v)
{
    return atomic_load(&rl->refused[v]);
}
