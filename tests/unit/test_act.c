/* SPDX-License-Identifier: MIT */
/* Unit tests of act/: the tools a turn offers, a step's calls prepared (unknown tool, bad
 * arguments, too many calls, a repeated call), the pool that runs them (side by side, the
 * owner told once, rights checked, results cut at 16 KiB), a step run on the calling thread,
 * and the limits of a turn (its level among employees.ask and workflows.run too). */
#include "../../src/act/act.h"
#include "../../src/auth/auth.h"
#include "../../src/core/clock.h"
#include "t.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

static atomic_int running, most, depth_seen = -1;

/* A runner: "tasks.get" answers its task id, after a short wait so that calls overlap;
 * "knowledge.search" fails; "tasks.create" answers 40 KiB. */
static int fake_run(void *ud, const struct act_job *job, struct buf *result, struct err *e)
{
    int now = atomic_fetch_add(&running, 1) + 1, seen;
    struct timespec ts = {0, 20 * 1000 * 1000};
    (void)ud;
    while ((seen = atomic_load(&most)) < now && !atomic_compare_exchange_weak(&most, &seen, now))
        ;
    nanosleep(&ts, NULL);
    atomic_fetch_sub(&running, 1);
    atomic_store(&depth_seen, job->depth);
    if (strcmp(job->def->name, "knowledge.search") == 0)
        return err_set(e, ERR_UPSTREAM, "upstream_error", NULL, "the index is away");
    if (strcmp(job->def->name, "tasks.create") == 0) {
        buf_appends(result, "\"");
        for (int i = 0; i < 40000; i++)
            buf_appends(result, "x");
        return buf_appends(result, "\"");
    }
    return buf_appendf(result, "{\"task\":\"%s\"}", job->args->task_id);
}

static bool all_available(void *ud, const struct store_tenant *t, const struct tools_def *d)
{
    (void)ud;
    (void)t;
    return d->source == TOOLS_BUILTIN;
}

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
};

static void step_done(void *ud, struct act_step *st)
{
    struct waiter *w = ud;
    (void)st;
    pthread_mutex_lock(&w->mu);
    w->done++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void wait_done(struct waiter *w)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    pthread_mutex_lock(&w->mu);
    while (!w->done && pthread_cond_timedwait(&w->cv, &w->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&w->mu);
}

static struct tools_rules rules_of(const char *text, struct arena *a)
{
    struct tools_rules r;
    if (tools_rules_parse(text, strlen(text), a, &r))
        r.n = 0;
    return r;
}

/* A step's calls run on the calling thread, one after the other. */
static void test_run_here(const struct act_offer *offer, struct arena *a)
{
    struct act_step st;
    bool repeated;

    subtest("a step run on the calling thread")
    {
        struct store_tenant t;
        struct act_job job;
        struct llm_tool_call calls[] = {
            {"c1", "tasks__get", "{\"task_id\":\"task_1\"}"},
            {"c2", "tasks__get", "{\"task_id\":\"task_2\"}"},
            {"c3", "knowledge__search", "{\"query\":\"q\"}"},
            {"c4", "nope", "{}"},
        };
        memset(&t, 0, sizeof(t));
        memset(&job, 0, sizeof(job));
        job.tenant = &t;
        atomic_store(&most, 0);
        act_step_prepare(offer, calls, 4, NULL, 0, a, &st, &repeated);
        act_step_run_here(fake_run, NULL, &st, &job);
        ok(st.calls[0].ended && st.calls[1].ended && st.calls[2].ended && st.calls[3].ended,
           "every call ended when it returns");
        is_int(atomic_load(&most), 1, "one after the other");
        is_str(st.calls[1].result, "{\"task\":\"task_2\"}", "each its own result");
        ok(st.calls[2].failed && strstr(st.calls[2].error, "the index is away"),
           "a tool's error is the call's");
        ok(st.calls[3].failed && strstr(st.calls[3].error, "unknown_tool"),
           "a call that could not run stays as prepared");
        act_step_cleanup(&st);
        job.scopes = AUTH_SCOPE_CHAT;
        act_step_prepare(offer, calls, 1, NULL, 0, a, &st, &repeated);
        act_step_run_here(fake_run, NULL, &st, &job);
        ok(st.calls[0].failed && strstr(st.calls[0].error, "permission_denied"),
           "outside the starter's scopes: permission_denied");
        act_step_cleanup(&st);
        job.scopes = 0;
        job.depth = 2;
        act_step_prepare(offer, calls, 1, NULL, 0, a, &st, &repeated);
        act_step_run_here(fake_run, NULL, &st, &job);
        is_int(atomic_load(&depth_seen), 2, "the runner is given the turn's level");
        act_step_cleanup(&st);
    }
}

/* act_limit(): credits first, then model calls, then running time. */
static void test_limits(void)
{
    subtest("the limits of a turn")
    {
        char why[120];
        int64_t now = clock_mono_us();
        ok(act_limit(false, 2, 8, now, why, sizeof(why)) == NULL, "within every limit");
        is_str(act_limit(false, 8, 8, now, why, sizeof(why)), "max_steps", "8 model calls of 8");
        ok(strstr(why, "limit of 8 model calls") != NULL, "says so");
        is_str(act_limit(true, 8, 8, now, why, sizeof(why)), "insufficient_credits",
               "no credits comes first");
        is_str(act_limit(false, 1, 8, now - (int64_t)ACT_TURN_MS * 1000 - 1, why, sizeof(why)),
               "timeout", "past 300 s");
        ok(strstr(why, "300 seconds") != NULL, "says so");
    }
    subtest("levels of employees.ask and workflows.run")
    {
        struct err e;
        err_clear(&e);
        is_int(act_depth_check(0, &e), 0, "a top-level turn may start level 1");
        is_int(act_depth_check(ACT_DEPTH_MAX - 1, &e), 0, "level 2 may start level 3");
        ok(e.code == NULL, "nothing said while allowed");
        is_int(act_depth_check(ACT_DEPTH_MAX, &e), ERR_LIMIT, "level 3 may not start a 4th");
        is_str(e.code, "max_depth", "max_depth");
        ok(strstr(e.msg, "at most 3 levels") != NULL && strstr(e.msg, "level 3") != NULL,
           "the model reads why");
        err_clear(&e);
        is_int(act_depth_check(7, &e), ERR_LIMIT, "nor deeper");
    }
}

int main(void)
{
    struct arena a;
    struct act_offer offer;
    struct act_step st;
    struct tools_rules r;
    bool repeated;
    char name[TOOLS_MODEL_NAME_MAX + 1];

    arena_init(&a);
    subtest("the offer")
    {
        r = rules_of("[{\"name\":\"tasks.*\",\"policy\":\"auto\"},{\"name\":\"tasks.create\","
                     "\"policy\":\"approve\"},{\"name\":\"slack.*\",\"policy\":\"auto\"},"
                     "{\"name\":\"knowledge.search\",\"policy\":\"deny\"}]",
                     &a);
        act_offer_build(&r, false, all_available, NULL, NULL, NULL, 0, &a, &offer);
        ok(offer.n == 1 && strcmp(offer.v[0].def->name, "tasks.get") == 0,
           "auto and available only: tasks.get (approve not offered, slack not available, "
           "knowledge.search denied)");
        is_str(offer.llm[0].name, "tasks__get", "its model name");
        ok(strstr(offer.llm[0].parameters, "\"task_id\"") != NULL, "its schema");
        act_offer_build(&r, true, all_available, NULL, NULL, NULL, 0, &a, &offer);
        is_int((int)offer.n, 2, "a turn that can pause is offered the approve tool too");
        tools_model_name("a_.b", name);
        ok(strlen(name) == 5 + 9 && strncmp(name, "a___b_", 6) == 0, "an ambiguous name hashed");
    }
    r = rules_of("[{\"name\":\"*\",\"policy\":\"auto\"}]", &a);
    act_offer_build(&r, false, all_available, NULL, NULL, NULL, 0, &a, &offer);
    subtest("a step's calls prepared")
    {
        struct llm_tool_call calls[] = {
            {"c1", "tasks__get", "{\"task_id\":\"task_1\"}"},
            {"c2", "slack__post_message", "{}"},
            {"c3", "tasks__get", "{\"task\":\"x\"}"},
            {"c4", "tasks__get", "not json"},
            {"c5", "tasks__get", "[1]"},
        };
        act_step_prepare(&offer, calls, 5, NULL, 0, &a, &st, &repeated);
        ok(!st.calls[0].ended && st.calls[0].tool && strncmp(st.calls[0].id, "call_", 5) == 0,
           "an offered tool with good arguments waits to run");
        ok(st.calls[1].ended && st.calls[1].failed && strstr(st.calls[1].error, "unknown_tool"),
           "a tool not offered fails at once");
        ok(st.calls[2].ended && strstr(st.calls[2].error, "invalid_arguments"),
           "an unknown member fails at once");
        ok(st.calls[3].ended && st.calls[4].ended, "not JSON, not an object: failed");
        ok(strstr(st.calls[2].result, "\"error\"") != NULL, "the model reads {error}");
        ok(!repeated, "nothing repeated");
        act_step_cleanup(&st);
    }
    subtest("too many calls, and a repeated call")
    {
        struct llm_tool_call many[20];
        const char *seen[] = {"tasks__get\n{\"task_id\":\"t\"}", "tasks__get\n{\"task_id\":\"t\"}"};
        struct llm_tool_call again = {"c", "tasks__get", "{\"task_id\":\"t\"}"};
        for (int i = 0; i < 20; i++)
            many[i] = (struct llm_tool_call){"c", "tasks__get", "{\"task_id\":\"t\"}"};
        act_step_prepare(&offer, many, 20, NULL, 0, &a, &st, &repeated);
        ok(st.calls[16].ended && strstr(st.calls[16].error, "too_many_calls"), "the 17th");
        ok(repeated, "20 times the same call");
        act_step_cleanup(&st);
        act_step_prepare(&offer, &again, 1, seen, 1, &a, &st, &repeated);
        ok(!repeated, "twice is allowed");
        act_step_cleanup(&st);
        act_step_prepare(&offer, &again, 1, seen, 2, &a, &st, &repeated);
        ok(repeated, "the third time stops");
        act_step_cleanup(&st);
    }
    subtest("the pool")
    {
        struct act_pool *p = NULL;
        struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
        struct store_tenant t;
        struct act_job job;
        struct llm_tool_call calls[] = {
            {"c1", "tasks__get", "{\"task_id\":\"task_1\"}"},
            {"c2", "tasks__get", "{\"task_id\":\"task_2\"}"},
            {"c3", "tasks__get", "{\"task_id\":\"task_3\"}"},
            {"c4", "knowledge__search", "{\"query\":\"q\"}"},
            {"c5", "tasks__create", "{\"title\":\"t\"}"},
            {"c6", "nope", "{}"},
        };
        memset(&t, 0, sizeof(t));
        memset(&job, 0, sizeof(job));
        job.tenant = &t;
        ok(act_pool_new(4, fake_run, NULL, &p) == 0, "four threads");
        act_step_prepare(&offer, calls, 6, NULL, 0, &a, &st, &repeated);
        act_step_run(p, &st, &job, step_done, &w);
        wait_done(&w);
        is_int(w.done, 1, "the owner is told once");
        ok(atomic_load(&most) >= 2, "calls of a step run side by side");
        is_str(st.calls[1].result, "{\"task\":\"task_2\"}", "each its own result");
        ok(st.calls[3].failed && strstr(st.calls[3].error, "the index is away"),
           "a tool's error is the call's");
        ok(strlen(st.calls[4].result) <= ACT_RESULT_MAX &&
               strstr(st.calls[4].result, "\"truncated\":true"),
           "a result over 16 KiB is cut, and says so");
        act_step_cleanup(&st);
        /* rights: a key with the chat scope only may not read tasks */
        w.done = 0;
        job.scopes = AUTH_SCOPE_CHAT;
        act_step_prepare(&offer, calls, 1, NULL, 0, &a, &st, &repeated);
        act_step_run(p, &st, &job, step_done, &w);
        wait_done(&w);
        ok(st.calls[0].failed && strstr(st.calls[0].error, "permission_denied"),
           "outside the starter's scopes: permission_denied, nothing run");
        act_step_cleanup(&st);
        /* a step whose calls all failed at once: the owner is told at once */
        w.done = 0;
        act_step_prepare(&offer, &calls[5], 1, NULL, 0, &a, &st, &repeated);
        act_step_run(p, &st, &job, step_done, &w);
        is_int(w.done, 1, "nothing left to run");
        act_step_cleanup(&st);
        act_pool_free(p);
    }
    test_run_here(&offer, &a);
    test_limits();
    arena_cleanup(&a);
    return done_testing();
}
