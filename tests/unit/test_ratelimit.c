/* SPDX-License-Identifier: MIT */
/* Unit tests of ratelimit/: minute window, burst bucket, concurrency, with injected time. */
#include "../../src/ratelimit/ratelimit.h"
#include "t.h"

#include <pthread.h>

static struct ratelimit *shared;
static const struct config_limits many = {100000, 100000, 100000};

static void *hammer(void *arg)
{
    struct ratelimit_result r;
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        ratelimit_enter(shared, "org_t:live", &many, 60000, &r);
        ratelimit_leave(shared, "org_t:live", &r);
    }
    return NULL;
}

/* A place outside the process, as Redis or the database would be, that can stop answering. */
struct fake {
    bool up;
    int enters, leaves, beats;
    int64_t epoch; /* of the last call */
    enum ratelimit_verdict verdict;
};

static int fake_enter(void *ctx, const char *tenant, int64_t epoch, const struct config_limits *lim,
                      int64_t now_ms, struct ratelimit_result *out)
{
    struct fake *f = ctx;
    (void)tenant, (void)lim;
    if (!f->up)
        return 1;
    f->enters++;
    f->epoch = epoch;
    out->verdict = f->verdict;
    out->remaining = 7;
    out->reset_s = now_ms / 60000 * 60 + 60;
    out->retry_after = f->verdict == RATELIMIT_OK ? 0 : 3;
    return 0;
}

static int fake_leave(void *ctx, const char *tenant, int64_t epoch)
{
    struct fake *f = ctx;
    (void)tenant;
    if (!f->up)
        return 1;
    f->leaves++;
    f->epoch = epoch;
    return 0;
}

static int fake_beat(void *ctx, int64_t epoch, int64_t now_ms)
{
    struct fake *f = ctx;
    (void)now_ms;
    if (!f->up)
        return 1;
    f->beats++;
    f->epoch = epoch;
    return 0;
}

static void shared_places(void)
{
    struct fake primary = {true, 0, 0, 0, 0, RATELIMIT_OK},
                fallback = {true, 0, 0, 0, 0, RATELIMIT_OK};
    struct ratelimit_place pp = {"primary", &primary, fake_enter, fake_leave, fake_beat},
                           fp = {"fallback", &fallback, fake_enter, fake_leave, NULL};
    struct ratelimit *rl = ratelimit_new();
    struct ratelimit_result r, held;
    const struct config_limits lim = {5, 3, 1};
    const int64_t t0 = 1795219200000LL;
    int64_t first_epoch;

    ratelimit_share(rl, &pp, &fp, 0);
    ratelimit_enter(rl, "t", &lim, t0, &r);
    is_int(r.via, RATELIMIT_VIA_PRIMARY, "admitted by the primary");
    is_int(primary.beats, 1, "which was told of this node's epoch first");
    is_int(r.remaining, 7, "its answer is the result");
    is_int(r.limit, 5, "the limit is the tier's");
    first_epoch = r.epoch;
    ratelimit_leave(rl, "t", &r);
    is_int(primary.leaves, 1, "left where it was admitted");

    primary.verdict = RATELIMIT_CONCURRENCY;
    ratelimit_enter(rl, "t", &lim, t0, &r);
    is_int(r.verdict, RATELIMIT_CONCURRENCY, "the primary's refusal stands");
    ok(ratelimit_refused(rl, RATELIMIT_CONCURRENCY) == 1, "and is counted");
    primary.verdict = RATELIMIT_OK;

    ratelimit_enter(rl, "t", &lim, t0, &held); /* in flight while the primary goes */
    primary.up = false;
    ratelimit_enter(rl, "t", &lim, t0 + 10, &r);
    is_int(r.via, RATELIMIT_VIA_FALLBACK, "the fallback admits while the primary is down");
    ok(r.epoch != first_epoch, "under a new epoch");
    is_int(fallback.epoch, r.epoch, "the fallback was told the new epoch");
    ratelimit_leave(rl, "t", &r);
    is_int(fallback.leaves, 1, "and the request left the fallback");
    primary.up = true;
    ratelimit_enter(rl, "t", &lim, t0 + 20, &r);
    is_int(r.via, RATELIMIT_VIA_FALLBACK, "the primary is not asked again at once");
    ratelimit_leave(rl, "t", &r);
    ratelimit_enter(rl, "t", &lim, t0 + 20 + RATELIMIT_RETRY_MS, &r);
    is_int(r.via, RATELIMIT_VIA_PRIMARY, "but after the retry interval");
    is_int(primary.beats, 2, "the new epoch beaten before it counts");
    ratelimit_leave(rl, "t", &r);
    ratelimit_leave(rl, "t", &held);
    is_int(primary.epoch, held.epoch, "a request leaves under the epoch it entered with");

    primary.up = false;
    fallback.up = false;
    ratelimit_enter(rl, "t", &lim, t0 + 10 * RATELIMIT_RETRY_MS, &r);
    is_int(r.via, RATELIMIT_VIA_LOCAL, "in this process when neither answers");
    is_int(r.verdict, RATELIMIT_OK, "with its own table");
    ratelimit_enter(rl, "t", &lim, t0 + 10 * RATELIMIT_RETRY_MS, &held);
    is_int(held.verdict, RATELIMIT_CONCURRENCY, "whose concurrency counts (1)");
    ratelimit_leave(rl, "t", &r);
    ratelimit_enter(rl, "t", &lim, t0 + 10 * RATELIMIT_RETRY_MS, &r);
    is_int(r.verdict, RATELIMIT_OK, "and is given back locally");
    ratelimit_leave(rl, "t", &r);
    ratelimit_free(rl);
}

int main(void)
{
    struct ratelimit *rl = ratelimit_new();
    struct ratelimit_result r;
    const struct config_limits lim = {5, 3, 2};
    const int64_t t0 = 1795219200000LL; /* a minute boundary */
    int admitted = 0;

    subtest("burst")
    {
        for (int i = 0; i < 3; i++) {
            ratelimit_enter(rl, "a", &lim, t0, &r);
            admitted += r.verdict == RATELIMIT_OK;
            ratelimit_leave(rl, "a", &r);
        }
        is_int(admitted, 3, "burst of 3 admitted");
        is_int(r.remaining, 2, "remaining counts the window");
        is_int(r.reset_s, t0 / 1000 + 60, "reset is the next minute in seconds");
        ratelimit_enter(rl, "a", &lim, t0, &r);
        is_int(r.verdict, RATELIMIT_RATE, "4th at once is refused by the bucket");
        ok(r.retry_after >= 1 && r.retry_after <= 12, "retry after the refill time");
        is_int(r.remaining, 2, "a refusal takes nothing");
        ratelimit_enter(rl, "a", &lim, t0 + 12000, &r);
        is_int(r.verdict, RATELIMIT_OK, "one token back after 60/5 s");
        ratelimit_leave(rl, "a", &r);
    }
    subtest("window")
    {
        ratelimit_enter(rl, "a", &lim, t0 + 50000, &r);
        ratelimit_leave(rl, "a", &r);
        is_int(r.remaining, 0, "5 of 5 used");
        ratelimit_enter(rl, "a", &lim, t0 + 59000, &r);
        is_int(r.verdict, RATELIMIT_RATE, "window exhausted");
        is_int(r.retry_after, 1, "retry at the minute boundary");
        ratelimit_enter(rl, "a", &lim, t0 + 60000, &r);
        is_int(r.verdict, RATELIMIT_OK, "new minute, new window");
        ratelimit_leave(rl, "a", &r);
        ratelimit_enter(rl, "b", &lim, t0 + 59000, &r);
        is_int(r.verdict, RATELIMIT_OK, "another tenant is counted apart");
        ratelimit_leave(rl, "b", &r);
    }
    subtest("concurrency")
    {
        const struct config_limits c = {100, 100, 2};
        ratelimit_enter(rl, "c", &c, t0, &r);
        ratelimit_enter(rl, "c", &c, t0, &r);
        is_int(r.verdict, RATELIMIT_OK, "two in flight");
        ratelimit_enter(rl, "c", &c, t0, &r);
        is_int(r.verdict, RATELIMIT_CONCURRENCY, "third refused");
        is_int(r.retry_after, 1, "retry after 1 s");
        ratelimit_leave(rl, "c", &r);
        ratelimit_enter(rl, "c", &c, t0, &r);
        is_int(r.verdict, RATELIMIT_OK, "admitted once one leaves");
        ok(ratelimit_refused(rl, RATELIMIT_CONCURRENCY) == 1, "refusals counted");
    }
    subtest("threads")
    {
        pthread_t th[4];
        shared = rl;
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, hammer, NULL);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        ratelimit_enter(rl, "org_t:live", &many, 60000, &r);
        is_int(r.remaining, 100000 - 80001, "every admission counted once under contention");
    }
    ratelimit_free(rl);
    subtest("shared places")
    {
        shared_places();
    }
    return done_testing();
}
