/* SPDX-License-Identifier: MIT */
/*
 * ratelimit: contract §4 for one process. Per tenant (organization + key mode): a fixed window
 * aligned to the clock minute, a token bucket of capacity 'burst' refilled at per_minute/60
 * tokens a second, and a count of requests in flight. All three live in one entry of a striped
 * hash table; the caller supplies the tier's limits on every call (a tier change applies at
 * once) and the time (tests inject it).
 */
#ifndef WORKFORCE_RATELIMIT_H
#define WORKFORCE_RATELIMIT_H

#include "../core/config.h"

#include <stdbool.h>
#include <stdint.h>

struct ratelimit;

enum ratelimit_verdict { RATELIMIT_OK, RATELIMIT_RATE, RATELIMIT_CONCURRENCY };

struct ratelimit_result {
    enum ratelimit_verdict verdict;
    uint32_t limit;      /* X-RateLimit-Limit */
    uint32_t remaining;  /* X-RateLimit-Remaining */
    int64_t reset_s;     /* X-RateLimit-Reset: Unix seconds of the next window */
    int64_t retry_after; /* seconds, when refused */
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
void ratelimit_leave(struct ratelimit *rl, const char *tenant);
uint64_t ratelimit_refused(const struct ratelimit *rl, enum ratelimit_verdict v); /* metrics */

#endif
