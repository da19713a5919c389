/* SPDX-License-Identifier: MIT */
/*
 * ratelimit: contract §4, for one process or, with places shared by every node
 * (ratelimit_share), for all of them. In this process: per tenant (organization + key mode): a
 * fixed window aligned to the clock minute, a token bucket of capacity 'burst' refilled at
 * per_minute/60 tokens a second, and a count of requests in flight. All three live in one entry of
 * a striped hash table; the caller supplies the tier's limits on every call (a tier change applies
 * at once) and the time (tests inject it).
 */
#ifndef WORKFORCE_RATELIMIT_H
#define WORKFORCE_RATELIMIT_H

#include "../core/config.h"

#include <stdbool.h>
#include <stdint.h>

struct ratelimit;

enum ratelimit_verdict { RATELIMIT_OK, RATELIMIT_RATE, RATELIMIT_CONCURRENCY };

/* Where a request was admitted, so that it leaves the same place. */
enum ratelimit_via { RATELIMIT_VIA_LOCAL, RATELIMIT_VIA_PRIMARY, RATELIMIT_VIA_FALLBACK };

struct ratelimit_result {
    enum ratelimit_verdict verdict;
    uint32_t limit;      /* X-RateLimit-Limit */
    uint32_t remaining;  /* X-RateLimit-Remaining */
    int64_t reset_s;     /* X-RateLimit-Reset: Unix seconds of the next window */
    int64_t retry_after; /* seconds, when refused */
    enum ratelimit_via via;
    int64_t epoch; /* this node's epoch when it was admitted (ratelimit_place) */
};

/*
 * A place outside this process that keeps the limits of every node: Redis (redis.c), or the
 * database (the store's rate_enter). Its calls answer 0, or non-zero when the place cannot be
 * reached (the limiter then uses the next place). A node's requests in flight are counted under
 * (node, epoch): the epoch moves whenever a call failed, so that a count the node could not give
 * back stops counting (its requests of the old epoch leave it by themselves).
 */
struct ratelimit_place {
    const char *name; /* for the log: "redis", "postgres" */
    void *ctx;
    /* Admit or refuse one request as ratelimit_enter() does: verdict, remaining, reset_s and
     * retry_after of '*out'. */
    int (*enter)(void *ctx, const char *tenant, int64_t epoch, const struct config_limits *lim,
                 int64_t now_ms, struct ratelimit_result *out);
    int (*leave)(void *ctx, const char *tenant, int64_t epoch);
    /* Optional: this node is alive under 'epoch' (called every beat_ms, and once at start). */
    int (*beat)(void *ctx, int64_t epoch, int64_t now_ms);
};

struct ratelimit *ratelimit_new(void);
void ratelimit_free(struct ratelimit *rl);
/*
 * Admit one request of 'tenant' at 'now_ms': enter the in-flight count and take a token and a
 * window slot. Refused requests take nothing. An admitted request must call
 * ratelimit_leave() when its response is done.
 */
void ratelimit_enter(struct ratelimit *rl, const char *tenant, const struct config_limits *lim,
                     int64_t now_ms, struct ratelimit_result *out);
/* End a request that ratelimit_enter() admitted with '*admitted'. */
void ratelimit_leave(struct ratelimit *rl, const char *tenant,
                     const struct ratelimit_result *admitted);
/*
 * Keep the limits in 'primary' from now on (NULL: in this process), and in 'fallback' while the
 * primary cannot be reached (tried again every RATELIMIT_RETRY_MS; each switch is logged); in
 * this process only when neither answers. The places are copied; what their ctx points to must
 * outlive 'rl'. With a beat, a thread calls it every 'beat_ms' until ratelimit_free(). Call once,
 * before the first request.
 */
#define RATELIMIT_RETRY_MS 2000
void ratelimit_share(struct ratelimit *rl, const struct ratelimit_place *primary,
                     const struct ratelimit_place *fallback, int64_t beat_ms);
uint64_t ratelimit_refused(const struct ratelimit *rl, enum ratelimit_verdict v); /* metrics */

#endif
