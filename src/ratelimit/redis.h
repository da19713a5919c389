/* SPDX-License-Identifier: MIT */
/*
 * ratelimit/redis: the rate limits of every node kept in Redis (WORKFORCE_REDIS_URL), as a
 * ratelimit_place. One Lua script per request does the window, the bucket and the in-flight
 * count of a tenant atomically (the checks of bucket.c); a node's requests in flight count
 * while it beats (a sorted set of holders, each with the time its lease ends).
 */
#ifndef WORKFORCE_RATELIMIT_REDIS_H
#define WORKFORCE_RATELIMIT_REDIS_H

#include "../core/err.h"
#include "ratelimit.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ratelimit_redis_url {
    char host[256];
    int port; /* 6379 when left out */
    int db;   /* 0..15 */
    char user[128];
    char password[256];
};

/* Parse 'len' bytes of 's' (redis://[[user]:password@]host[:port][/db]): 0, or -1 when it is
 * not such a URL. Pure: no I/O. */
int ratelimit_redis_url_parse(const char *s, size_t len, struct ratelimit_redis_url *out);

struct ratelimit_redis;

/*
 * Connect to 'url' (one connection now, to check that it answers; up to 'conns' as requests
 * need them) for the node 'node_id' whose lease is 'lease_ms'. ERR_INVALID for a malformed
 * URL, ERR_IO when Redis does not answer or refuses the password or database; both
 * with param WORKFORCE_REDIS_URL and a message without the password. The caller owns '*out'
 * (ratelimit_redis_free()).
 */
int ratelimit_redis_open(const char *url, const char *node_id, int64_t lease_ms, size_t conns,
                         struct ratelimit_redis **out, struct err *e);
void ratelimit_redis_free(struct ratelimit_redis *r);
/* The place for ratelimit_share(); it points to 'r'. */
void ratelimit_redis_place(struct ratelimit_redis *r, struct ratelimit_place *out);
/* 0 when Redis answers a PING now (readiness). */
int ratelimit_redis_ping(struct ratelimit_redis *r);

#endif
