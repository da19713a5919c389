/* SPDX-License-Identifier: MIT */
/*
 * worker.c: the delivery of the outbox (contract §15), off the request path.
 *
 * DESIGN: a few threads of their own (WORKFORCE_WEBHOOKS_WORKERS) each take a due delivery
 * (store_hook_claim(): under a lease, so no two threads or nodes attempt it at once), POST it
 * signed (httpc_hook_post(): the host resolved now, private addresses refused, no redirect, the
 * attempt bounded by WORKFORCE_WEBHOOKS_TIMEOUT_MS) and record the attempt and what comes next
 * (store_hook_attempted()). A slow or failing receiver holds one thread for at most the timeout
 * and never a request: the API only writes the outbox. The threads sleep until the first due
 * delivery, and are woken at once when this process records an event (the store calls
 * webhooks_worker_wake() after the commit); events recorded by other nodes are seen within
 * POLL_MS. The lease outlives the attempt, so a node that dies mid-attempt leaves the delivery
 * to another after LEASE_MS; that attempt counts.
 *
 * Fair shares: one tenant's backlog or dead receivers must cost another tenant at most one
 * slot's time. The store does most of it: an endpoint has at most one attempt in flight (16
 * dead endpoints hold at most 16 attempts, and one dead endpoint of an organization at most one
 * thread while its other endpoints are served), and a claim serves the organization served
 * least recently, then its endpoint served least recently (round-robin, across nodes), then
 * that endpoint's delivery due first. This file adds the last piece: with two threads or more,
 * the last free thread of the node takes only a delivery of an organization that has no attempt
 * in flight (store_hook_claim_idle()). An organization whose receivers hang therefore holds at
 * most all threads but one, and the next organization's delivery starts at once instead of
 * after a timeout; with many such organizations it waits for the first attempt to end, never
 * for their backlogs. The price: one organization alone with a backlog uses one thread fewer.
 *
 * Retries: an attempt that gets no 2xx is tried again after 5 s, 5 min, 30 min, 2 h, 5 h and
 * 10 h; after the seventh attempt the delivery is failed. The signing secret is opened per
 * attempt (it may have been rotated since the event); after a rotation the replaced secrets
 * sign too, each for a day.
 */
#include "webhooks.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/crypto.h"
#include "../core/log.h"
#include "../httpc/hook.h"
#include "../integrations/oauth.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS 2000
#define LEASE_MS 60000
#define PURGE_EVERY_MS (3600 * 1000LL)
#define KEEP_MS (30 * 24 * 3600 * 1000LL)
#define BODY_CAP (8u << 20)
#define SEAL_WHAT "webhook_secret"

/* The wait after attempt n (1-based) that got no 2xx; past the end: failed. */
static const int64_t retry_ms[] = {5000, 300000, 1800000, 7200000, 18000000, 36000000};
#define NRETRY (sizeof(retry_ms) / sizeof(retry_ms[0]))

struct webhooks_worker {
    struct store_pool *pool;
    unsigned char key[CRYPTO_SEAL_KEY_LEN];
    bool allow_private;
    int64_t timeout_ms;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t wakes; /* moves on each wake-up (under mu) */
    size_t busy;    /* threads claiming or attempting (under mu) */
    size_t size;    /* the threads asked for (set before the first starts) */
    bool stop;
    int64_t purged_at;
    pthread_t *threads;
    size_t nthreads;
};

/* See webhooks.h. */
int64_t webhooks_retry_at(int64_t attempt, int64_t now)
{
    return attempt >= 1 && (size_t)attempt <= NRETRY ? now + retry_ms[attempt - 1] : 0;
}

/* The webhook-signature value of 'c' for 'body' at 'ts': one "v1," signature per secret in
 * force, space-separated. 0 or ERR_*. */
static int signatures(struct webhooks_worker *w, const struct store_hook_claim *c, const char *body,
                      size_t len, int64_t ts, int64_t now, struct arena *a, char *out, size_t n)
{
    const char *cur =
        integ_open(w->key, &c->tenant, c->endpoint_id, SEAL_WHAT, c->secret, c->secret_len, a);
    char sig[CRYPTO_WHSIG_LEN];
    int rc;

    if (!cur)
        return ERR_INTERNAL;
    rc = crypto_whsec_sign(cur, strlen(cur), c->event.id, ts, body, len, sig);
    if (rc)
        return rc;
    snprintf(out, n, "%s", sig);
    if (c->previous_secret && c->previous_until > now) {
        /* the secrets replaced by rotations, each until its own end (secrets.c) */
        struct webhooks_previous prev[WEBHOOKS_PREVIOUS_MAX];
        const char *text = integ_open(w->key, &c->tenant, c->endpoint_id, SEAL_WHAT,
                                      c->previous_secret, c->previous_len, a);
        size_t np = text ? webhooks_previous_parse(text, c->previous_until, now, prev) : 0;
        for (size_t i = 0; i < np; i++) {
            if (!crypto_whsec_sign(prev[i].secret, strlen(prev[i].secret), c->event.id, ts, body,
                                   len, sig)) {
                size_t used = strlen(out);
                snprintf(out + used, n - used, " %s", sig);
            }
        }
    }
    return 0;
}

/* Attempt claimed delivery 'c' and record its outcome. */
static void attempt(struct webhooks_worker *w, const struct store_hook_claim *c, struct arena *a)
{
    struct httpc_hook_req req;
    struct httpc_hook_res *res = arena_calloc(a, sizeof(*res));
    struct store_hook_attempt done;
    char sigs[WEBHOOKS_SIGNATURES_LEN];
    int64_t now = clock_now_ms();
    struct buf b;
    struct jw jw;
    int rc;

    buf_init(&b, BODY_CAP);
    jw_init(&jw, &b);
    webhooks_event_write(&jw, &c->event);
    memset(&done, 0, sizeof(done));
    done.delivery_id = c->delivery_id;
    done.lease = c->lease;
    rc = jw_finish(&jw)
             ? ERR_INTERNAL
             : signatures(w, c, buf_ptr(&b), buf_len(&b), now / 1000, now, a, sigs, sizeof(sigs));
    if (rc) {
        /* nothing can be sent (a secret that does not open: the server secret changed) */
        done.error = "the endpoint's signing secret cannot be read";
    } else {
        memset(&req, 0, sizeof(req));
        req.url = c->url;
        req.body = buf_ptr(&b);
        req.body_len = buf_len(&b);
        req.id = c->event.id;
        req.timestamp = now / 1000;
        req.signature = sigs;
        req.timeout_ms = (long)w->timeout_ms;
        req.allow_private = w->allow_private;
        rc = httpc_hook_post(&req, res);
        done.status_code = res->status;
        done.duration_ms = res->elapsed_ms;
        done.delivered = rc == 0 && res->status >= 200 && res->status < 300;
        if (!done.delivered)
            done.error = res->status > 0 ? arena_printf(a, "the endpoint answered %d", res->status)
                         : res->error[0] ? res->error
                                         : "no answer";
    }
    done.at = clock_now_ms();
    if (!done.delivered)
        done.next_attempt_at = webhooks_retry_at(c->attempt, done.at);
    buf_cleanup(&b);
    {
        struct store *s = store_pool_get(w->pool);
        rc = store_hook_attempted(s, &done);
        store_pool_put(w->pool, s);
    }
    if (rc && rc != ERR_NOT_FOUND)
        log_warn("webhooks: delivery %s: the attempt's outcome could not be stored; it is "
                 "attempted again after its lease",
                 c->delivery_id);
    else if (!done.delivered)
        log_info("webhooks: delivery %s of %s, attempt %lld: %s%s", c->delivery_id, c->event.id,
                 (long long)c->attempt, done.error,
                 done.next_attempt_at ? "" : " (failed: no attempt left)");
}

/* Sleep until 'until' (ms, 0: POLL_MS), a wake-up or the stop. */
static void nap(struct webhooks_worker *w, int64_t until, uint64_t seen)
{
    int64_t now = clock_now_ms();
    int64_t ms = until > now ? until - now : until ? 0 : POLL_MS;
    struct timespec ts;

    if (ms > POLL_MS)
        ms = POLL_MS;
    if (ms <= 0)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    while (!w->stop && w->wakes == seen) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0)
            break;
    }
    pthread_mutex_unlock(&w->mu);
}

/* The events older than 30 days go, once an hour (by whichever thread looks first). */
static void purge(struct webhooks_worker *w, struct store *s, int64_t now)
{
    bool mine = false;
    pthread_mutex_lock(&w->mu);
    if (now - w->purged_at >= PURGE_EVERY_MS) {
        w->purged_at = now;
        mine = true;
    }
    pthread_mutex_unlock(&w->mu);
    if (mine && store_hook_purge(s, now - KEEP_MS))
        log_warn("webhooks: the events older than 30 days could not be removed");
}

static void *run(void *ud)
{
    struct webhooks_worker *w = ud;
    struct arena a;

    arena_init(&a);
    for (;;) {
        struct store_hook_claim c;
        struct store *s;
        int64_t wake_at = 0, now;
        uint64_t seen;
        bool last;
        int rc;

        pthread_mutex_lock(&w->mu);
        seen = w->wakes;
        if (w->stop) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        /* counted busy from the claim on, so that two threads never both think the other
         * one is the last free one */
        last = ++w->busy == w->size && w->size > 1;
        pthread_mutex_unlock(&w->mu);
        /* a store handle only while the database is used, not during the POST */
        s = store_pool_get(w->pool);
        now = clock_now_ms();
        purge(w, s, now);
        rc = last ? store_hook_claim_idle(s, now, LEASE_MS, &a, &c, &wake_at)
                  : store_hook_claim(s, now, LEASE_MS, &a, &c, &wake_at);
        store_pool_put(w->pool, s);
        if (!rc)
            attempt(w, &c, &a);
        arena_cleanup(&a);
        pthread_mutex_lock(&w->mu);
        w->busy--;
        pthread_mutex_unlock(&w->mu);
        if (rc)
            nap(w, rc == ERR_NOT_FOUND ? wake_at : 0, seen);
    }
    arena_cleanup(&a);
    return NULL;
}

/* See webhooks.h. */
int webhooks_worker_start(struct store_pool *pool, const unsigned char key[32],
                          const struct webhooks_options *o, struct webhooks_worker **out)
{
    struct webhooks_worker *w = xcalloc(1, sizeof(*w));

    *out = NULL;
    w->pool = pool;
    memcpy(w->key, key, CRYPTO_SEAL_KEY_LEN);
    w->allow_private = o->allow_private;
    w->timeout_ms = o->timeout_ms;
    w->purged_at = clock_now_ms() - PURGE_EVERY_MS + 60000; /* the first, a minute after start */
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->threads = xcalloc(o->threads, sizeof(*w->threads));
    w->size = o->threads;
    for (unsigned i = 0; i < o->threads; i++) {
        if (pthread_create(&w->threads[i], NULL, run, w) != 0) {
            webhooks_worker_stop(w);
            return ERR_INTERNAL;
        }
        w->nthreads++;
    }
    *out = w;
    return 0;
}

/* See webhooks.h. */
void webhooks_worker_wake(void *ud)
{
    struct webhooks_worker *w = ud;
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->wakes++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* See webhooks.h. */
void webhooks_worker_stop(struct webhooks_worker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (size_t i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    memset(w->key, 0, sizeof(w->key));
    free(w->threads);
    free(w);
}
