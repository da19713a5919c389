/* SPDX-License-Identifier: MIT */
/*
 * test_wf_runs: workflow runs on the durable queue of the store, with an explicit clock: a run
 * created (its steps from the definition, the workflow's run_count), steps claimed one at a
 * time in order under a lease, completed, skipped, retried after a backoff, failed (later
 * steps cancelled), cancel while queued and while a step is in flight (kept, uncharged),
 * offline employees holding a run at their step, restart recovery (the cut attempt runs
 * again), a deleted workflow's step dropped, charging up to the balance, scheduled workflows
 * (one run per occurrence, missed ones once; a live one without credits refused at its start),
 * the order against tasks, and the tool calls of a step (journaled under the run's step, each
 * step's model call charged, shown with their step, counted on a failed step too, gone with
 * the workflow), and the level a run's turns are at (kept with the run).
 */
#include "../../src/core/clock.h"
#include "../../src/core/mem.h"
#include "../../src/store/store.h"
#include "../../src/store/store_int.h"
#include "../../src/tasks/runner.h"
#include "t.h"

#include <stdio.h>
#include <string.h>

#define T0 INT64_C(1795000000000) /* 2026-11-18T..., a Wednesday */
#define MIN 60000

static const struct store_employee seed[] = {
    {.name = "Ann", .role = "R", .category = "sales", .tier = "starter", .capabilities = "[]"},
    {.name = "Bob", .role = "R", .category = "sales", .tier = "starter", .capabilities = "[]"},
};

static struct store *s;
static struct store_tenant live, test;
static const char *emp_a, *emp_b;
static struct arena A;
static char steps3[1024];

static void add_workflow(const struct store_tenant *t, const char *id, const char *steps,
                         const char *recurring, int64_t next)
{
    struct store_workflow w;
    memset(&w, 0, sizeof(w));
    w.id = id;
    w.name = id;
    w.trigger_type = recurring ? "schedule" : "manual";
    w.trigger = "{\"type\":\"manual\"}";
    w.steps = steps;
    w.recurring = recurring;
    w.next_run_at = next;
    w.enabled = true;
    w.created_at = w.updated_at = T0;
    if (store_workflow_create(s, t, &w) != 0)
        printf("# cannot create %s\n", id);
}

static int add_run(const struct store_tenant *t, const char *wf, const char *id, int64_t at)
{
    struct store_wf_run r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.workflow_id = wf;
    r.trigger_type = "manual";
    r.trigger_data = "{}";
    r.definition = steps3;
    r.created_at = at;
    return store_wf_run_create(s, t, &r, NULL, NULL);
}

/* Claim at 'now': "run_id/step", a task's id, or "" when nothing is runnable. */
static const char *claim(int64_t now, struct store_claim *c, int64_t *wake)
{
    static char what[128];
    int64_t w = 0;
    int rc = store_claim(s, now, &task_queue_rules, &A, c, wake ? wake : &w);
    if (rc)
        return "";
    if (!c->is_step)
        return c->task.task.id;
    snprintf(what, sizeof(what), "%s/%lld", c->step.run_id, (long long)c->step.step);
    return what;
}

static int64_t finish(const struct store_claim *c, enum store_step_outcome o, int64_t credits,
                      int64_t now, int64_t retry_at, bool *discarded)
{
    struct store_step_finish f;
    int64_t charged = -1;
    bool d = false;
    memset(&f, 0, sizeof(f));
    f.claim = &c->step;
    f.outcome = o;
    f.input = "in";
    f.output = o == STORE_STEP_COMPLETED ? "\"out\"" : NULL;
    f.error = o == STORE_STEP_RETRY || o == STORE_STEP_FAILED ? "boom" : NULL;
    f.credits = credits;
    f.retry_at = retry_at;
    f.now = now;
    if (store_step_finish(s, &f, &charged, discarded ? discarded : &d) != 0)
        return -1;
    return charged;
}

static struct store_wf_run get(const char *wf, const char *id)
{
    struct store_wf_run r;
    memset(&r, 0, sizeof(r));
    store_wf_run_get(s, &live, wf, id, &A, &r);
    return r;
}

static int64_t credits(void)
{
    struct store_org o;
    store_org_get(s, live.org_id, &o);
    return o.credits;
}

static void test_steps_in_order(void)
{
    struct store_claim c;
    struct store_wf_run r;
    struct store_workflow w;
    int64_t before = credits();

    subtest("steps in order")
    {
        add_workflow(&live, "wf_1", steps3, NULL, 0);
        is_int(add_run(&live, "wf_1", "run_1", T0), 0, "run created");
        is_int(add_run(&live, "wf_gone", "run_x", T0), ERR_NOT_FOUND, "no run of no workflow");
        r = get("wf_1", "run_1");
        ok(r.nsteps == 3 && strcmp(r.status, "queued") == 0 &&
               strcmp(r.steps[1].employee_id, emp_b) == 0 &&
               strcmp(r.steps[2].action, "classify") == 0 &&
               strcmp(r.steps[0].status, "pending") == 0,
           "queued, its steps pending from the definition");
        store_workflow_get(s, &live, "wf_1", &A, &w);
        ok(w.run_count == 1 && w.last_run_at == T0, "counted in the workflow");
        is_str(claim(T0 + 1, &c, NULL), "run_1/0", "step 0 first");
        ok(c.step.attempts == 1 && strncmp(c.step.lease, "lease_", 6) == 0 &&
               strcmp(c.step.employee_id, emp_a) == 0,
           "under a lease, first attempt");
        {
            struct store_claim other;
            is_str(claim(T0 + 2, &other, NULL), "", "nothing else while step 0 is in flight");
        }
        is_int(finish(&c, STORE_STEP_COMPLETED, 3, T0 + 3, 0, NULL), 3, "charged");
        is_int(credits(), before - 3, "taken from the balance");
        is_str(claim(T0 + 4, &c, NULL), "run_1/1", "then step 1");
        is_int(finish(&c, STORE_STEP_SKIPPED, 3, T0 + 5, 0, NULL), 0, "a skip costs nothing");
        is_str(claim(T0 + 6, &c, NULL), "run_1/2", "then step 2");
        is_int(finish(&c, STORE_STEP_COMPLETED, 2, T0 + 7, 0, NULL), 2, "charged");
        is_str(claim(T0 + 8, &c, NULL), "", "the run is over");
        r = get("wf_1", "run_1");
        ok(strcmp(r.status, "completed") == 0 && r.credits_used == 5 && r.started_at == T0 + 1 &&
               r.completed_at == T0 + 7,
           "completed, with its credits and times");
        ok(strcmp(r.steps[0].status, "completed") == 0 &&
               strcmp(r.steps[0].output, "\"out\"") == 0 && strcmp(r.steps[0].input, "in") == 0 &&
               r.steps[0].credits_used == 3 && strcmp(r.steps[1].status, "skipped") == 0 &&
               !r.steps[1].output && strcmp(r.steps[2].status, "completed") == 0,
           "each step recorded");
        is_int(store_wf_run_cancel(s, &live, "wf_1", "run_1", T0 + 9), ERR_CONFLICT,
               "an ended run cannot be cancelled");
        is_int(store_wf_run_cancel(s, &test, "wf_1", "run_1", T0 + 9), ERR_NOT_FOUND,
               "nor seen by the other mode");
    }
}

static void test_retry_and_fail(void)
{
    struct store_claim c;
    struct store_wf_run r;
    int64_t wake = 0, before;

    subtest("retry then fail")
    {
        add_run(&live, "wf_1", "run_2", T0 + 100);
        is_str(claim(T0 + 101, &c, NULL), "run_2/0", "step 0");
        finish(&c, STORE_STEP_RETRY, 0, T0 + 102, T0 + 600, NULL);
        r = get("wf_1", "run_2");
        ok(strcmp(r.steps[0].status, "pending") == 0 && strcmp(r.steps[0].error, "boom") == 0 &&
               strcmp(r.status, "running") == 0,
           "pending again, the error kept");
        is_str(claim(T0 + 200, &c, &wake), "", "not before its backoff");
        is_int(wake, T0 + 600, "the worker wakes when it ends");
        is_str(claim(T0 + 600, &c, NULL), "run_2/0", "then again");
        is_int(c.step.attempts, 2, "second attempt");
        before = credits();
        is_int(finish(&c, STORE_STEP_FAILED, 5, T0 + 601, 0, NULL), 0, "a failure costs nothing");
        is_int(credits(), before, "balance kept");
        r = get("wf_1", "run_2");
        ok(strcmp(r.status, "failed") == 0 && r.error && strcmp(r.error, "steps[0]: boom") == 0 &&
               r.completed_at == T0 + 601,
           "the run failed, naming the step");
        ok(strcmp(r.steps[0].status, "failed") == 0 && r.steps[0].attempts == 2 &&
               strcmp(r.steps[1].status, "cancelled") == 0 &&
               strcmp(r.steps[2].status, "cancelled") == 0,
           "later steps cancelled");
        is_str(claim(T0 + 700, &c, NULL), "", "nothing left");
    }
}

static void test_cancel(void)
{
    struct store_claim c;
    struct store_wf_run r;
    bool disc = true;
    int64_t before;

    subtest("cancel")
    {
        add_run(&live, "wf_1", "run_3", T0 + 1000);
        is_int(store_wf_run_cancel(s, &live, "wf_1", "run_3", T0 + 1001), 0, "queued: cancelled");
        is_str(claim(T0 + 1002, &c, NULL), "", "it never runs");
        r = get("wf_1", "run_3");
        ok(strcmp(r.status, "cancelled") == 0 && strcmp(r.steps[0].status, "cancelled") == 0 &&
               strcmp(r.steps[2].status, "cancelled") == 0,
           "every step cancelled");
        is_int(store_wf_run_cancel(s, &live, "wf_1", "run_3", T0 + 1003), ERR_CONFLICT, "twice");
        is_int(store_wf_run_cancel(s, &live, "wf_1", "run_none", T0), ERR_NOT_FOUND, "unknown");
        is_int(store_wf_run_cancel(s, &live, "wf_other", "run_3", T0), ERR_NOT_FOUND,
               "under another workflow");

        add_run(&live, "wf_1", "run_4", T0 + 1100);
        is_str(claim(T0 + 1101, &c, NULL), "run_4/0", "step 0 in flight");
        is_int(store_wf_run_cancel(s, &live, "wf_1", "run_4", T0 + 1102), 0, "cancelled");
        before = credits();
        is_int(finish(&c, STORE_STEP_COMPLETED, 4, T0 + 1103, 0, &disc), 0, "finishes uncharged");
        ok(!disc, "not discarded");
        is_int(credits(), before, "balance kept");
        r = get("wf_1", "run_4");
        ok(strcmp(r.status, "cancelled") == 0 && strcmp(r.steps[0].status, "completed") == 0 &&
               strcmp(r.steps[0].output, "\"out\"") == 0 &&
               strcmp(r.steps[1].status, "cancelled") == 0,
           "the step in flight kept, the rest cancelled");
        is_str(claim(T0 + 1104, &c, NULL), "", "nothing runs after it");

        add_run(&live, "wf_1", "run_5", T0 + 1200);
        is_str(claim(T0 + 1201, &c, NULL), "run_5/0", "step 0 in flight");
        store_wf_run_cancel(s, &live, "wf_1", "run_5", T0 + 1202);
        finish(&c, STORE_STEP_RETRY, 0, T0 + 1203, T0 + 2000, NULL);
        r = get("wf_1", "run_5");
        ok(strcmp(r.steps[0].status, "cancelled") == 0 && strcmp(r.status, "cancelled") == 0,
           "a failed step of a cancelled run is not retried: cancelled");
    }
}

static void test_held_recover_delete(void)
{
    struct store_claim c;
    struct store_employee emp;
    struct store_wf_run r;
    size_t n = 9, steps = 9;
    bool disc = false;

    subtest("offline employee")
    {
        add_run(&live, "wf_1", "run_6", T0 + 2000);
        is_str(claim(T0 + 2001, &c, NULL), "run_6/0", "step 0 (Ann)");
        memset(&emp, 0, sizeof(emp));
        emp.status = STORE_EMP_OFFLINE;
        store_employee_update(s, &live, emp_b, &emp, STORE_EMP_STATUS, T0);
        finish(&c, STORE_STEP_COMPLETED, 1, T0 + 2002, 0, NULL);
        is_str(claim(T0 + 2003, &c, NULL), "", "held at Bob's step while he is offline");
        emp.status = STORE_EMP_IDLE;
        store_employee_update(s, &live, emp_b, &emp, STORE_EMP_STATUS, T0);
        is_str(claim(T0 + 2004, &c, NULL), "run_6/1", "runs once he is back");
    }
    subtest("recovery")
    {
        is_int(store_task_recover(s, T0 + 3000, &n, &steps), 0, "recover");
        ok(n == 0 && steps == 1, "one step was in flight");
        r = get("wf_1", "run_6");
        ok(strcmp(r.steps[1].status, "pending") == 0 && r.steps[1].attempts == 0,
           "pending again, the cut attempt not counted");
        finish(&c, STORE_STEP_COMPLETED, 1, T0 + 3001, 0, &disc);
        ok(disc, "the old lease's outcome is dropped");
        is_str(claim(T0 + 3002, &c, NULL), "run_6/1", "the step runs again");
        is_int(c.step.attempts, 1, "as its first attempt");
        finish(&c, STORE_STEP_COMPLETED, 1, T0 + 3003, 0, NULL);
        is_str(claim(T0 + 3004, &c, NULL), "run_6/2", "and the run goes on");
    }
    subtest("deleted workflow")
    {
        add_workflow(&live, "wf_del", steps3, NULL, 0);
        add_run(&live, "wf_del", "run_7", T0 + 3005);
        finish(&c, STORE_STEP_COMPLETED, 1, T0 + 3006, 0, NULL); /* run_6 ends */
        is_str(claim(T0 + 3007, &c, NULL), "run_7/0", "step 0 in flight");
        is_int(store_workflow_delete(s, &live, "wf_del"), 0, "workflow deleted");
        r = get("wf_del", "run_7");
        ok(r.id == NULL, "its runs went with it");
        disc = false;
        finish(&c, STORE_STEP_COMPLETED, 1, T0 + 3008, 0, &disc);
        ok(disc, "the step's outcome is dropped");
    }
}

/* A live scheduled run without credits is refused at its start: failed at once as if its first
 * step had failed, its steps never claimed; with credits the next occurrence queues as usual. */
static void test_schedule_gate(void)
{
    const char *daily = "{\"frequency\":\"daily\",\"time\":\"09:00\"}";
    struct store_claim c;
    struct store_wf_run_page p;
    struct store_org org, o;
    struct store_tenant poor;
    struct err e;

    subtest("schedule gate")
    {
        err_clear(&e);
        store_org_create(s, "poor", 0, 0, seed, 1, &org, &e);
        snprintf(poor.org_id, sizeof(poor.org_id), "%s", org.id);
        poor.mode = STORE_LIVE;
        {
            struct store_emp_filter ef = {.status = -1, .limit = 10};
            struct store_emp_page ep;
            char steps[512];
            store_employee_list(s, &poor, &ef, &A, &ep);
            snprintf(steps, sizeof(steps),
                     "[{\"employee_id\":\"%s\",\"action\":\"search_knowledge\","
                     "\"input\":\"a\"},{\"employee_id\":\"%s\",\"action\":\"respond\","
                     "\"input\":\"b\"}]",
                     ep.items[0].id, ep.items[0].id);
            add_workflow(&poor, "wf_poor", arena_strdup(&A, steps), daily, T0 - MIN);
        }
        is_str(claim(T0, &c, NULL), "", "nothing to run: the refused run's steps are not queued");
        store_wf_run_list(s, &poor, "wf_poor", 10, 0, NULL, &A, &p);
        ok(p.n == 1 && strcmp(p.items[0].status, "failed") == 0 &&
               strncmp(p.items[0].error, "steps[0]: insufficient_credits: ", 32) == 0,
           "one run, failed at once with the ledger's error");
        ok(p.n == 1 && p.items[0].nsteps == 2 &&
               strcmp(p.items[0].steps[0].status, "failed") == 0 &&
               p.items[0].steps[0].attempts == 0 &&
               strcmp(p.items[0].steps[1].status, "cancelled") == 0,
           "its first step failed before any attempt, the next cancelled");
        store_org_update(s, "poor", -1, 10, &o);
        {
            struct store_workflow w;
            store_workflow_get(s, &poor, "wf_poor", &A, &w);
            w.next_run_at = T0 + MIN;
            store_workflow_update(s, &poor, &w);
        }
        ok(strncmp(claim(T0 + 2 * MIN, &c, NULL), "run_", 4) == 0 && c.step.step == 0,
           "with credits, the next occurrence's run is queued and its first step taken");
        finish(&c, STORE_STEP_COMPLETED, 0, T0 + 2 * MIN, 0, NULL);
        store_org_get(s, org.id, &o);
        is_int(o.credits, 10, "the refusal cost nothing");
    }
}

static void test_schedule_and_order(void)
{
    struct store_claim c;
    struct store_wf_run_page p;
    struct store_workflow w;
    struct store_task k;
    int64_t wake = 0;
    const char *daily = "{\"frequency\":\"daily\",\"time\":\"09:00\"}";

    subtest("schedule")
    {
        /* Due three days ago: the missed occurrences make one run. */
        add_workflow(&live, "wf_sched", steps3, daily, T0 - 3 * 1440 * MIN);
        ok(strncmp(claim(T0 + 4000, &c, NULL), "run_", 4) == 0 && c.step.step == 0,
           "the occurrence's run is queued and its first step taken");
        finish(&c, STORE_STEP_COMPLETED, 1, T0 + 4001, 0, NULL);
        store_wf_run_list(s, &live, "wf_sched", 10, 0, NULL, &A, &p);
        ok(p.n == 1 && strcmp(p.items[0].trigger_type, "schedule") == 0 &&
               strstr(p.items[0].trigger_data, "scheduled_at") != NULL,
           "exactly one run for the missed occurrences");
        store_workflow_get(s, &live, "wf_sched", &A, &w);
        ok(w.next_run_at > T0 + 4000 && w.run_count == 1, "its next occurrence is ahead");
    }
    subtest("order against tasks")
    {
        /* The scheduled run's step became ready at T0 + 4000; it is still queued. */
        memset(&k, 0, sizeof(k));
        k.id = "task_low";
        k.employee_id = emp_a;
        k.title = "t";
        k.description = "";
        k.status = "pending";
        k.priority = "low";
        k.created_at = k.updated_at = T0;
        store_task_create(s, &live, &k);
        k.id = "task_medium_late";
        k.priority = "medium";
        k.created_at = k.updated_at = T0 + 5000;
        store_task_create(s, &live, &k);
        k.id = "task_high";
        k.priority = "high";
        store_task_create(s, &live, &k);
        is_str(claim(T0 + 6000, &c, NULL), "task_high", "a high task before a step");
        ok(strncmp(claim(T0 + 6001, &c, NULL), "run_", 4) == 0 && c.step.step == 1,
           "a step before a medium task created after it became ready");
        finish(&c, STORE_STEP_FAILED, 0, T0 + 6001, 0, NULL);
        is_str(claim(T0 + 6002, &c, NULL), "task_medium_late", "then the medium task");
        is_str(claim(T0 + 6003, &c, NULL), "task_low", "a low task last");
        store_wf_run_list(s, &live, "wf_sched", 10, 0, NULL, &A, &p);
        is_int(p.n, 1, "no second run for the same occurrence");
        claim(T0 + 6004, &c, &wake);
        ok(wake == w.next_run_at, "idle: the worker wakes at the next occurrence");
    }
}

/* Journal call 'id' of step 'c' (seq 'seq'), its model call priced 'price': what was charged. */
static int64_t journal(const struct store_step_claim *c, const char *id, int64_t seq, int64_t price)
{
    struct store_tool_call row;
    struct store_tool_step in;
    int64_t charged = -1, balance = 0;
    memset(&row, 0, sizeof(row));
    row.id = id;
    row.model_id = "call_m";
    row.tool = "tasks.create";
    row.arguments = "{\"title\":\"t\"}";
    row.workflow_run_id = c->run_id;
    row.step_index = c->step;
    row.seq = seq;
    row.started_at = T0;
    memset(&in, 0, sizeof(in));
    in.calls = &row;
    in.n = 1;
    in.charge = c->tenant.mode == STORE_LIVE;
    in.price = price;
    if (store_tool_step_begin(s, &c->tenant, &in, &charged, &balance) != 0)
        return -1;
    return charged;
}

static int64_t count_calls(void)
{
    struct db_stmt *st = db_prepare(s, "SELECT count(*) FROM tool_calls");
    bool row = false;
    int64_t n = -1;
    if (st && db_step(st, &row) == 0 && row)
        n = db_int64(st, 0);
    if (st)
        db_done(st);
    return n;
}

static void test_tool_calls(void)
{
    struct store_step_finish f;
    struct store_claim c;
    struct store_wf_run r;
    int64_t before = credits(), charged = 0;
    bool disc = false;

    subtest("tool calls of a step")
    {
        add_workflow(&live, "wf_tools", steps3, NULL, 0);
        add_run(&live, "wf_tools", "run_t1", T0 + 5000);
        is_str(claim(T0 + 5001, &c, NULL), "run_t1/0", "step 0");
        is_int(journal(&c.step, "call_w1", 0, 2), 2, "its first tool step charged");
        is_int(journal(&c.step, "call_w2", 1, 3), 3, "its second");
        memset(&f, 0, sizeof(f));
        f.claim = &c.step;
        f.outcome = STORE_STEP_COMPLETED;
        f.input = "in";
        f.output = "\"out\"";
        f.credits = 1;
        f.now = T0 + 5002;
        f.stop_reason = "completed";
        f.charged_before = 5;
        is_int(store_step_finish(s, &f, &charged, &disc), 0, "finished");
        is_int(credits(), before - 6, "three model calls charged in all");
        is_str(claim(T0 + 5003, &c, NULL), "run_t1/1", "step 1");
        is_int(journal(&c.step, "call_w3", 0, 4), 4, "a step that calls a tool, then fails");
        memset(&f, 0, sizeof(f));
        f.claim = &c.step;
        f.outcome = STORE_STEP_FAILED;
        f.error = "The engine failed";
        f.credits = 7;
        f.now = T0 + 5004;
        f.charged_before = 4;
        store_step_finish(s, &f, &charged, &disc);
        r = get("wf_tools", "run_t1");
        ok(strcmp(r.steps[0].stop_reason, "completed") == 0 && r.steps[0].credits_used == 6 &&
               r.steps[0].ncalls == 2 && strcmp(r.steps[0].calls[0].id, "call_w1") == 0 &&
               strcmp(r.steps[0].calls[1].id, "call_w2") == 0 &&
               r.steps[0].calls[1].step_index == 0 && !r.steps[0].calls[1].task_run_id,
           "step 0: its stop reason, credits and calls");
        ok(strcmp(r.steps[1].status, "failed") == 0 && !r.steps[1].stop_reason &&
               r.steps[1].credits_used == 4 && r.steps[1].ncalls == 1 &&
               strcmp(r.steps[1].calls[0].id, "call_w3") == 0,
           "step 1 failed: what its tool step cost stays, with its call");
        ok(r.steps[2].ncalls == 0 && !r.steps[2].stop_reason, "step 2: none");
        ok(strcmp(r.status, "failed") == 0 && r.credits_used == 10, "the run counts them all");
        is_int(credits(), before - 10, "the balance too");
        is_int(count_calls(), 3, "three calls journaled");
        is_int(store_workflow_delete(s, &live, "wf_tools"), 0, "the workflow deleted");
        is_int(count_calls(), 0, "its runs' calls went with it");
    }
}

/* The level of a run's turns (a run started by a turn's workflows.run): stored, read back. */
static void test_depth(void)
{
    struct store_wf_run r, got;

    subtest("a run's level")
    {
        add_workflow(&live, "wf_depth", steps3, NULL, 0);
        memset(&r, 0, sizeof(r));
        r.id = "run_depth";
        r.workflow_id = "wf_depth";
        r.trigger_type = "manual";
        r.trigger_data = "{}";
        r.definition = steps3;
        r.created_at = T0;
        r.depth = 2;
        is_int(store_wf_run_create(s, &live, &r, &A, &got), 0, "created");
        is_int(got.depth, 2, "read back as queued");
        is_int(get("wf_depth", "run_depth").depth, 2, "and later");
        is_int(add_run(&live, "wf_depth", "run_depth0", T0), 0, "another, by the API");
        is_int(get("wf_depth", "run_depth0").depth, 0, "at level 0");
        store_wf_run_cancel(s, &live, "wf_depth", "run_depth", T0);
        store_wf_run_cancel(s, &live, "wf_depth", "run_depth0", T0);
    }
}

int main(void)
{
    struct store_org org;
    struct store_emp_filter ef = {.status = -1, .limit = 10};
    struct store_emp_page ep;
    struct err e;

    err_clear(&e);
    arena_init(&A);
    ok(store_open(":memory:", &s, &e) == 0 && store_migrate(s, &e) == 0, "store");
    store_org_create(s, "acme", 0, 1000, seed, 2, &org, &e);
    snprintf(live.org_id, sizeof(live.org_id), "%s", org.id);
    live.mode = STORE_LIVE;
    test = live;
    test.mode = STORE_TEST;
    store_employee_list(s, &live, &ef, &A, &ep);
    ok(ep.n == 2, "two employees");
    emp_a = ep.items[0].id;
    emp_b = ep.items[1].id;
    snprintf(steps3, sizeof(steps3),
             "[{\"employee_id\":\"%s\",\"action\":\"respond\",\"input\":\"a\"},"
             "{\"employee_id\":\"%s\",\"action\":\"summarize\",\"input\":\"b\"},"
             "{\"employee_id\":\"%s\",\"action\":\"classify\",\"input\":\"c\"}]",
             emp_a, emp_b, emp_a);
    test_steps_in_order();
    test_retry_and_fail();
    test_cancel();
    test_held_recover_delete();
    test_schedule_and_order();
    test_schedule_gate();
    test_tool_calls();
    test_depth();
    arena_cleanup(&A);
    store_close(s);
    return done_testing();
}
