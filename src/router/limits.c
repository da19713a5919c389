/* SPDX-License-Identifier: MIT */
/*
 * limits.c: the database as the place of the rate limits every node shares (router.h), when no
 * Redis is configured: the limiter (ratelimit/) asks, the store (rate_enter on PostgreSQL)
 * counts. Here because the router is where both are known.
 */
#include "router.h"

#include <string.h>

static int db_enter(void *ctx, const char *tenant, int64_t epoch, const struct config_limits *lim,
                    int64_t now_ms, struct ratelimit_result *out)
{
    struct router_limits_db *db = ctx;
    struct store_rate_ask ask = {tenant,          epoch,  lim->per_minute, lim->burst,
                                 lim->concurrent, now_ms, db->lease_ms};
    struct store_rate got;
    struct store *s = store_pool_get(db->pool);
    int rc = store_rate_enter(s, &ask, &got);

    store_pool_put(db->pool, s);
    if (rc)
        return rc;
    out->verdict = got.verdict == 0   ? RATELIMIT_OK
                   : got.verdict == 1 ? RATELIMIT_RATE
                                      : RATELIMIT_CONCURRENCY;
    out->remaining = (uint32_t)(got.remaining < 0 ? 0 : got.remaining);
    out->reset_s = got.reset_s;
    out->retry_after = got.retry_after;
    return 0;
}

static int db_leave(void *ctx, const char *tenant, int64_t epoch)
{
    struct router_limits_db *db = ctx;
    struct store *s = store_pool_get(db->pool);
    int rc = store_rate_leave(s, tenant, epoch);
    store_pool_put(db->pool, s);
    return rc;
}

/* See router.h. */
void router_limits_place(struct router_limits_db *db, struct ratelimit_place *out)
{
    memset(out, 0, sizeof(*out));
    out->name = "the database";
    out->ctx = db;
    out->enter = db_enter;
    out->leave = db_leave;
}
