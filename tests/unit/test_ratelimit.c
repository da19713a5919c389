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
        ratelimit_leave(shared, "org_t:live");
    }
    return NULL;
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
            ratelimit_leave(rl, "a");
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
        ratelimit_leave(rl, "a");
    }
    subtest("window")
    {
        ratelimit_enter(rl, "a", &lim, t0 + 50000, &r);
        ratelimit_leave(rl, "a");
        is_int(r.remaining, 0, "5 of 5 used");
        ratelimit_enter(rl, "a", &lim, t0 + 59000, &r);
        is_int(r.verdict, RATELIMIT_RATE, "window exhausted");
        is_int(r.retry_after, 1, "retry at the minute boundary");
        ratelimit_enter(rl, "a", &lim, t0 + 60000, &r);
        is_int(r.verdict, RATELIMIT_OK, "new minute, new window");
        ratelimit_leave(rl, "a");
        ratelimit_enter(rl, "b", &lim, t0 + 59000, &r);
        is_int(r.verdict, RATELIMIT_OK, "another tenant is counted apart");
        ratelimit_leave(rl, "b");
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
        ratelimit_leave(rl, "c");
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
    return done_testing();
}
