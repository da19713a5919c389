/* SPDX-License-Identifier: MIT */
/*
 * redis.c: the shared rate limits in Redis (redis.h), over hiredis's blocking client. The only
 * user of hiredis.
 *
 * DESIGN: a few connections, each behind its own mutex; a request takes the first one free
 * (or waits for the one its thread hashes to). Every call has a short timeout: a Redis that
 * stops answering costs a request at most TIMEOUT_MS before the limiter falls back
 * (bucket.c), and a broken connection is dropped and made again at its next use. The scripts
 * are loaded once per connection (EVALSHA; loaded again when Redis restarted and forgot them).
 *
 * Keys, per tenant: "workforce:rate:{tenant}" (a hash: minute m, count c, tokens t, refill time
 * r; it expires once a bucket would have refilled) and "workforce:inflight:{tenant}" (a hash:
 * holder -> requests in flight). "workforce:holders" is a sorted set: holder -> the time its
 * lease ends. A holder is "node/epoch"; another node's holder whose lease ended, and this node's
 * holders of earlier epochs, are dropped by the next request of the tenant. The times are the
 * nodes' clocks (ms), as for the nodes' heartbeats in the database.
 */
#include "redis.h"

#include "../core/log.h"
#include "../core/mem.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TIMEOUT_MS 250
#define MAX_CONNS 64

/* KEYS: rate hash, inflight hash, holders. ARGV: holder, node, per_minute, burst, concurrent,
 * now (ms), lease (ms). Returns {verdict, remaining, reset_s, retry_after}: verdict 0 admitted,
 * 1 over the rate, 2 over the concurrency. */
static const char enter_lua[] =
    "local me, node = ARGV[1], ARGV[2]\n"
    "local pm, burst, conc = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])\n"
    "local now, lease = tonumber(ARGV[6]), tonumber(ARGV[7])\n"
    "local busy = 0\n"
    "local f = redis.call('HGETALL', KEYS[2])\n"
    "for i = 1, #f, 2 do\n"
    "  local h = f[i]\n"
    "  local live = h == me\n"
    "  if not live and string.sub(h, 1, #node + 1) ~= node .. '/' then\n"
    "    local ends = redis.call('ZSCORE', KEYS[3], h)\n"
    "    live = ends and tonumber(ends) >= now\n"
    "  end\n"
    "  local n = tonumber(f[i + 1])\n"
    "  if live then if n > 0 then busy = busy + n end else redis.call('HDEL', KEYS[2], h) end\n"
    "end\n"
    "local cur = math.floor(now / 60000)\n"
    "local s = redis.call('HMGET', KEYS[1], 'm', 'c', 't', 'r')\n"
    "local count = 0\n"
    "if tonumber(s[1]) == cur then count = tonumber(s[2]) end\n"
    "local tokens, refill = tonumber(s[3]), tonumber(s[4])\n"
    "local rate = pm / 60000\n"
    "if not tokens or not refill then tokens, refill = burst, now\n"
    "elseif now > refill then tokens, refill = tokens + (now - refill) * rate, now end\n"
    "if tokens > burst then tokens = burst end\n"
    "local verdict, retry = 0, 0\n"
    "if busy >= conc then verdict, retry = 2, 1\n"
    "elseif count >= pm then verdict, retry = 1, math.ceil(((cur + 1) * 60000 - now) / 1000)\n"
    "elseif tokens < 1 then verdict, retry = 1, math.ceil((1 - tokens) / rate / 1000)\n"
    "else\n"
    "  tokens, count = tokens - 1, count + 1\n"
    "  redis.call('HINCRBY', KEYS[2], me, 1)\n"
    "end\n"
    "if verdict ~= 0 and retry < 1 then retry = 1 end\n"
    "redis.call('HSET', KEYS[1], 'm', tostring(cur), 'c', tostring(count), 't', tostring(tokens),"
    " 'r', tostring(refill))\n"
    "local keep = math.ceil(burst / rate) + 60000\n"
    "if keep < 120000 then keep = 120000 end\n"
    "redis.call('PEXPIRE', KEYS[1], keep)\n"
    "local rem = pm - count\n"
    "if rem < 0 then rem = 0 end\n"
    "return {verdict, rem, (cur + 1) * 60, retry}\n";

/* KEYS: inflight hash. ARGV: holder. A count never goes below 0 (a request that leaves after
 * its holder's count was dropped as dead). */
static const char leave_lua[] = "local n = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)\n"
                                "if n < 0 then redis.call('HSET', KEYS[1], ARGV[1], 0) end\n"
                                "return n\n";

/* KEYS: holders. ARGV: holder, now (ms), lease (ms). Holders gone for an hour are forgotten. */
static const char beat_lua[] =
    "redis.call('ZADD', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])\n"
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[2]) - 3600000)\n"
    "return 0\n";

enum script { S_ENTER, S_LEAVE, S_BEAT, S_COUNT };
static const char *const scripts[S_COUNT] = {enter_lua, leave_lua, beat_lua};

struct conn {
    pthread_mutex_t mu;
    redisContext *c;
    char sha[S_COUNT][41];
    unsigned pending; /* replies of commands sent without waiting (leave), still to be read */
};

struct ratelimit_redis {
    struct ratelimit_redis_url url;
    char where[300]; /* host:port/db, for messages (never the password) */
    char node[64];
    int64_t lease_ms;
    size_t nconns;
    struct conn conns[MAX_CONNS];
};

/* Drop 'cn's connection (it failed): made again at its next use. */
static void drop(struct conn *cn)
{
    if (cn->c)
        redisFree(cn->c);
    cn->c = NULL;
    cn->pending = 0;
}

/* Read the replies still owed on 'cn' (its mutex held): 0, or -1 when the connection failed. A
 * reply that is an error (a leave that failed) is only logged. */
static int drain(struct ratelimit_redis *r, struct conn *cn)
{
    while (cn->pending) {
        void *got = NULL;
        if (redisGetReply(cn->c, &got) != REDIS_OK)
            return -1;
        if (got && ((redisReply *)got)->type == REDIS_REPLY_ERROR)
            log_error("ratelimit: redis %s: %s", r->where, ((redisReply *)got)->str);
        freeReplyObject(got);
        cn->pending--;
    }
    return 0;
}

/* One command on 'cn' (its mutex held): the reply, or NULL after a failure (logged, dropped). */
static redisReply *command(struct ratelimit_redis *r, struct conn *cn, int argc, const char **argv)
{
    redisReply *rep = drain(r, cn) ? NULL : redisCommandArgv(cn->c, argc, argv, NULL);
    if (!rep) {
        log_error("ratelimit: redis %s: %s", r->where,
                  cn->c->errstr[0] ? cn->c->errstr : "no reply");
        drop(cn);
    }
    return rep;
}

/* Connect 'cn' if it is not: authenticate, select the database, load the scripts. */
static int ensure(struct ratelimit_redis *r, struct conn *cn, char *why, size_t whylen)
{
    struct timeval tv = {0, TIMEOUT_MS * 1000};
    redisReply *rep;
    char db[8];

    if (cn->c)
        return 0;
    cn->c = redisConnectWithTimeout(r->url.host, r->url.port, tv);
    if (!cn->c || cn->c->err) {
        snprintf(why, whylen, "%s", cn->c ? cn->c->errstr : "out of memory");
        drop(cn);
        return ERR_IO;
    }
    redisSetTimeout(cn->c, tv);
    if (r->url.password[0]) {
        const char *argv[3] = {"AUTH", r->url.user[0] ? r->url.user : r->url.password,
                               r->url.password};
        rep = redisCommandArgv(cn->c, r->url.user[0] ? 3 : 2, argv, NULL);
        if (!rep || rep->type == REDIS_REPLY_ERROR) {
            snprintf(why, whylen, "authentication failed");
            goto fail;
        }
        freeReplyObject(rep);
    }
    snprintf(db, sizeof(db), "%d", r->url.db);
    {
        const char *argv[2] = {"SELECT", db};
        rep = redisCommandArgv(cn->c, 2, argv, NULL);
        if (!rep || rep->type == REDIS_REPLY_ERROR) {
            snprintf(why, whylen, "database %s cannot be selected", db);
            goto fail;
        }
        freeReplyObject(rep);
    }
    for (int i = 0; i < S_COUNT; i++) {
        const char *argv[3] = {"SCRIPT", "LOAD", scripts[i]};
        rep = redisCommandArgv(cn->c, 3, argv, NULL);
        if (!rep || rep->type != REDIS_REPLY_STRING || rep->len != 40) {
            snprintf(why, whylen, "the scripts cannot be loaded%s%s",
                     rep && rep->type == REDIS_REPLY_ERROR ? ": " : "",
                     rep && rep->type == REDIS_REPLY_ERROR ? rep->str : "");
            goto fail;
        }
        memcpy(cn->sha[i], rep->str, 40);
        cn->sha[i][40] = '\0';
        freeReplyObject(rep);
    }
    return 0;
fail:
    if (rep)
        freeReplyObject(rep);
    else if (cn->c && cn->c->errstr[0])
        snprintf(why, whylen, "%s", cn->c->errstr);
    drop(cn);
    return ERR_IO;
}

/* A connection for this thread, its mutex held. */
static struct conn *take(struct ratelimit_redis *r)
{
    size_t start = (size_t)((uintptr_t)pthread_self() >> 6) % r->nconns;
    for (size_t i = 0; i < r->nconns; i++) {
        struct conn *cn = &r->conns[(start + i) % r->nconns];
        if (pthread_mutex_trylock(&cn->mu) == 0)
            return cn;
    }
    pthread_mutex_lock(&r->conns[start].mu);
    return &r->conns[start];
}

/*
 * Run script 's' with 'nkeys' keys then arguments (argv[0..argc)), on a connection of this
 * thread: the reply (the caller frees it), or NULL when Redis did not answer or the script
 * failed (logged).
 */
static redisReply *eval(struct ratelimit_redis *r, enum script s, int nkeys, int argc,
                        const char **args)
{
    const char *argv[16];
    char nk[8], why[256];
    struct conn *cn = take(r);
    redisReply *rep = NULL;

    snprintf(nk, sizeof(nk), "%d", nkeys);
    if (ensure(r, cn, why, sizeof(why))) {
        log_error("ratelimit: redis %s: %s", r->where, why);
        goto out;
    }
    argv[0] = "EVALSHA";
    argv[1] = cn->sha[s];
    argv[2] = nk;
    for (int i = 0; i < argc; i++)
        argv[3 + i] = args[i];
    rep = command(r, cn, argc + 3, argv);
    if (rep && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOSCRIPT", 8) == 0) {
        /* Redis restarted and forgot the scripts: load them again (a new connection does). */
        freeReplyObject(rep);
        rep = NULL;
        drop(cn);
        if (ensure(r, cn, why, sizeof(why)) == 0) {
            argv[1] = cn->sha[s];
            rep = command(r, cn, argc + 3, argv);
        } else {
            log_error("ratelimit: redis %s: %s", r->where, why);
        }
    }
    if (rep && rep->type == REDIS_REPLY_ERROR) {
        log_error("ratelimit: redis %s: %s", r->where, rep->str);
        freeReplyObject(rep);
        rep = NULL;
    }
out:
    pthread_mutex_unlock(&cn->mu);
    return rep;
}

/* "node/epoch" */
static void holder(const struct ratelimit_redis *r, int64_t epoch, char *out, size_t n)
{
    snprintf(out, n, "%s/%lld", r->node, (long long)epoch);
}

static int r_enter(void *ctx, const char *tenant, int64_t epoch, const struct config_limits *lim,
                   int64_t now_ms, struct ratelimit_result *out)
{
    struct ratelimit_redis *r = ctx;
    char k_rate[160], k_in[160], me[96], pm[24], burst[24], conc[24], now[24], lease[24];
    const char *args[10] = {k_rate, k_in, "workforce:holders", me, r->node, pm, burst, conc,
                            now,    lease};
    redisReply *rep;
    int rc = ERR_IO;

    snprintf(k_rate, sizeof(k_rate), "workforce:rate:{%s}", tenant);
    snprintf(k_in, sizeof(k_in), "workforce:inflight:{%s}", tenant);
    holder(r, epoch, me, sizeof(me));
    snprintf(pm, sizeof(pm), "%u", lim->per_minute);
    snprintf(burst, sizeof(burst), "%u", lim->burst);
    snprintf(conc, sizeof(conc), "%u", lim->concurrent);
    snprintf(now, sizeof(now), "%lld", (long long)now_ms);
    snprintf(lease, sizeof(lease), "%lld", (long long)r->lease_ms);
    rep = eval(r, S_ENTER, 3, 10, args);
    if (!rep)
        return ERR_IO;
    if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 4) {
        long long v[4];
        rc = 0;
        for (int i = 0; i < 4; i++) {
            if (rep->element[i]->type != REDIS_REPLY_INTEGER)
                rc = ERR_IO;
            v[i] = rep->element[i]->integer;
        }
        if (!rc && v[0] >= 0 && v[0] <= 2) {
            out->verdict = v[0] == 0   ? RATELIMIT_OK
                           : v[0] == 1 ? RATELIMIT_RATE
                                       : RATELIMIT_CONCURRENCY;
            out->remaining = (uint32_t)(v[1] < 0 ? 0 : v[1]);
            out->reset_s = v[2];
            out->retry_after = v[3];
        } else {
            rc = ERR_IO;
        }
    }
    if (rc)
        log_error("ratelimit: redis %s: unexpected answer to the admission script", r->where);
    freeReplyObject(rep);
    return rc;
}

/*
 * A request ends: its count goes down, sent without waiting for the answer (read before the
 * connection's next command, or after MAX_PENDING of them). The command is on the wire before
 * the request's answer is (bucket.c gives the slot back first), so Redis has it before the
 * client can send anything else.
 */
#define MAX_PENDING 32
static int r_leave(void *ctx, const char *tenant, int64_t epoch)
{
    struct ratelimit_redis *r = ctx;
    char k_in[160], me[96], why[256];
    const char *argv[5];
    struct conn *cn = take(r);
    int done = 0, rc = 0;

    snprintf(k_in, sizeof(k_in), "workforce:inflight:{%s}", tenant);
    holder(r, epoch, me, sizeof(me));
    if (ensure(r, cn, why, sizeof(why))) {
        log_error("ratelimit: redis %s: %s", r->where, why);
        rc = ERR_IO;
        goto out;
    }
    /* the script's text, not its hash: a Redis that restarted and forgot its scripts would
     * refuse the hash, and an answer that is not read cannot say so */
    argv[0] = "EVAL";
    argv[1] = leave_lua;
    argv[2] = "1";
    argv[3] = k_in;
    argv[4] = me;
    if (redisAppendCommandArgv(cn->c, 5, argv, NULL) != REDIS_OK)
        rc = ERR_IO;
    while (!rc && !done) {
        if (redisBufferWrite(cn->c, &done) != REDIS_OK)
            rc = ERR_IO;
    }
    if (!rc && ++cn->pending >= MAX_PENDING && drain(r, cn))
        rc = ERR_IO;
    if (rc) {
        log_error("ratelimit: redis %s: %s", r->where, cn->c->errstr[0] ? cn->c->errstr : "send");
        drop(cn);
    }
out:
    pthread_mutex_unlock(&cn->mu);
    return rc;
}

static int r_beat(void *ctx, int64_t epoch, int64_t now_ms)
{
    struct ratelimit_redis *r = ctx;
    char me[96], now[24], lease[24];
    const char *args[4] = {"workforce:holders", me, now, lease};
    redisReply *rep;

    holder(r, epoch, me, sizeof(me));
    snprintf(now, sizeof(now), "%lld", (long long)now_ms);
    snprintf(lease, sizeof(lease), "%lld", (long long)r->lease_ms);
    rep = eval(r, S_BEAT, 1, 4, args);
    if (!rep)
        return ERR_IO;
    freeReplyObject(rep);
    return 0;
}

/* See redis.h. */
void ratelimit_redis_place(struct ratelimit_redis *r, struct ratelimit_place *out)
{
    memset(out, 0, sizeof(*out));
    out->name = "redis";
    out->ctx = r;
    out->enter = r_enter;
    out->leave = r_leave;
    out->beat = r_beat;
}

/* See redis.h. */
int ratelimit_redis_ping(struct ratelimit_redis *r)
{
    const char *argv[1] = {"PING"};
    char why[256];
    struct conn *cn = take(r);
    redisReply *rep = NULL;
    int rc = ensure(r, cn, why, sizeof(why));

    if (!rc) {
        rep = command(r, cn, 1, argv);
        rc = rep && rep->type == REDIS_REPLY_STATUS ? 0 : ERR_IO;
    }
    if (rep)
        freeReplyObject(rep);
    pthread_mutex_unlock(&cn->mu);
    return rc;
}

/* See redis.h. */
int ratelimit_redis_open(const char *url, const char *node_id, int64_t lease_ms, size_t conns,
                         struct ratelimit_redis **out, struct err *e)
{
    struct ratelimit_redis *r;
    char why[256];
    int rc;

    *out = NULL;
    r = xcalloc(1, sizeof(*r));
    if (ratelimit_redis_url_parse(url, strlen(url), &r->url)) {
        free(r);
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_REDIS_URL",
                       "is not a redis://[[user]:password@]host[:port][/db] URL (db 0..15)");
    }
    snprintf(r->where, sizeof(r->where), "%s%s%s:%d/%d", strchr(r->url.host, ':') ? "[" : "",
             r->url.host, strchr(r->url.host, ':') ? "]" : "", r->url.port, r->url.db);
    snprintf(r->node, sizeof(r->node), "%s", node_id);
    r->lease_ms = lease_ms;
    r->nconns = conns < 1 ? 1 : conns > MAX_CONNS ? MAX_CONNS : conns;
    for (size_t i = 0; i < r->nconns; i++)
        pthread_mutex_init(&r->conns[i].mu, NULL);
    pthread_mutex_lock(&r->conns[0].mu);
    rc = ensure(r, &r->conns[0], why, sizeof(why));
    pthread_mutex_unlock(&r->conns[0].mu);
    if (rc) {
        err_set(e, ERR_IO, "invalid_setting", "WORKFORCE_REDIS_URL", "Redis at %s: %s", r->where,
                why);
        ratelimit_redis_free(r);
        return ERR_IO;
    }
    *out = r;
    return 0;
}

/* See redis.h. */
void ratelimit_redis_free(struct ratelimit_redis *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->nconns; i++) {
        drop(&r->conns[i]);
        pthread_mutex_destroy(&r->conns[i].mu);
    }
    free(r);
}
