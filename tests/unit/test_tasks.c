/* SPDX-License-Identifier: MIT */
/*
 * test_tasks: the durable task queue of the store (store_task_*), with an explicit clock:
 * claim order (priority, due, creation), offline employees held, recurring occurrences (the
 * missed ones run once), credits (reserved, charged, refunded, none left), cancel and delete
 * during a run (the outcome discarded), restart recovery, the compare-and-set update, the
 * tool calls of a run (journaled under the run, each step's model call charged, the run's
 * record with its calls and stop reason, kept on a cancelled run, gone with the task), a run
 * that waits for approvals (held nothing, claimed again once they are decided, waiting again
 * when its node dies after it went on), and task_next_run() over the stored rule text.
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
static const char *emp_a, *emp_b; /* of 'live' */
static struct arena A;

static void add(const struct store_tenant *t, const char *id, const char *emp, const char *prio,
                int64_t due, int64_t created, const char *recurring, int64_t next)
{
    struct store_task k;
    memset(&k, 0, sizeof(k));
    k.id = id;
    k.employee_id = emp;
    k.title = id;
    k.description = "";
    k.status = "pending";
    k.priority = prio;
    k.due_at = due;
    k.recurring = recurring;
    k.next_run_at = next;
    k.created_at = k.updated_at = created;
    if (store_task_create(s, t, &k) != 0)
        printf("# cannot create %s\n", id);
}

/* Claim at 'now': the task id, or "" when nothing is runnable. */
static const char *claim(int64_t now, struct store_task_claim *c)
{
    struct store_claim any;
    int64_t wake = 0;
    int rc = store_claim(s, now, &task_queue_rules, &A, &any, &wake);
    if (rc == 0 && any.is_step)
        return "(a workflow step)";
    *c = any.task;
    c->task.run_id = c->run_id; /* points into 'any' otherwise */
    return rc == 0 ? c->task.id : "";
}

static int64_t finish(const struct store_task_claim *c, bool ok, int64_t credits, int64_t now,
                      bool *discarded)
{
    struct store_task_finish f;
    int64_t charged = -1;
    memset(&f, 0, sizeof(f));
    f.tenant = &c->task.tenant;
    f.task_id = c->task.id;
    f.run_id = c->run_id;
    f.employee_id = c->task.employee_id;
    f.ok = ok;
    f.result = ok ? "done" : NULL;
    f.error = ok ? NULL : "boom";
    f.credits = credits;
    f.reserved = c->reserved;
    f.now = now;
    if (store_task_finish(s, &f, &charged, discarded) != 0)
        return -1;
    return charged;
}

static int64_t credits(void)
{
    struct store_org o;
    store_org_get(s, live.org_id, &o);
    return o.credits;
}

static struct store_task get(const char *id)
{
    struct store_task k;
    memset(&k, 0, sizeof(k));
    store_task_get(s, &live, id, &A, &k);
    return k;
}

static void test_order(void)
{
    struct store_task_claim c;
    subtest("order")
    {
        /* Created in this order; the expected run order is in the names. */
        add(&live, "task_6low", emp_a, "low", 0, T0 + 1, NULL, 0);
        add(&live, "task_4med_nodue", emp_a, "medium", 0, T0 + 2, NULL, 0);
        add(&live, "task_3med_due_late", emp_a, "medium", T0 + 9 * MIN, T0 + 3, NULL, 0);
        add(&live, "task_1urgent", emp_a, "urgent", 0, T0 + 4, NULL, 0);
        add(&live, "task_2med_due_soon", emp_a, "medium", T0 + 5 * MIN, T0 + 5, NULL, 0);
        add(&live, "task_5med_nodue_later", emp_a, "medium", 0, T0 + 6, NULL, 0);
        static const char *const want[] = {"task_1urgent",          "task_2med_due_soon",
                                           "task_3med_due_late",    "task_4med_nodue",
                                           "task_5med_nodue_later", "task_6low"};
        for (size_t i = 0; i < 6; i++) {
            char what[80];
            snprintf(what, sizeof(what), "claim %zu is %s", i + 1, want[i]);
            is_str(claim(T0 + MIN, &c), want[i], what);
            ok(c.reserved && !c.no_credits && strcmp(c.task.status, "in_progress") == 0 &&
                   c.task.run_count == 1 && strncmp(c.run_id, "trun_", 5) == 0,
               "in progress with a run and a reserved credit");
            bool disc = true;
            finish(&c, true, 1, T0 + MIN + 1, &disc);
            ok(!disc, "finished");
        }
        is_str(claim(T0 + MIN, &c), "", "nothing left");
        is_int(credits(), 1000 - 6, "six credits taken, one each");
    }
}

static void test_held(void)
{
    struct store_task_claim c;
    struct store_employee emp;
    subtest("offline employee")
    {
        memset(&emp, 0, sizeof(emp));
        emp.status = STORE_EMP_OFFLINE;
        store_employee_update(s, &live, emp_b, &emp, STORE_EMP_STATUS, T0);
        add(&live, "task_b_urgent", emp_b, "urgent", 0, T0 + 10, NULL, 0);
        add(&live, "task_a_low", emp_a, "low", 0, T0 + 11, NULL, 0);
        is_str(claim(T0 + MIN, &c), "task_a_low", "the offline employee's urgent task waits");
        finish(&c, true, 1, T0 + MIN, &(bool){false});
        is_str(claim(T0 + MIN, &c), "", "still waiting");
        emp.status = STORE_EMP_IDLE;
        store_employee_update(s, &live, emp_b, &emp, STORE_EMP_STATUS, T0);
        is_str(claim(T0 + MIN, &c), "task_b_urgent", "runs once the employee is idle");
        finish(&c, true, 1, T0 + MIN, &(bool){false});
        /* Moving a task to an offline employee holds it too. */
        emp.status = STORE_EMP_OFFLINE;
        store_employee_update(s, &live, emp_b, &emp, STORE_EMP_STATUS, T0);
        add(&live, "task_moved", emp_a, "high", 0, T0 + 12, NULL, 0);
        {
            struct store_task k = get("task_moved");
            k.employee_id = emp_b;
            is_int(store_task_update(s, &live, &k, "pending", NULL, false, T0), 0, "reassigned");
        }
        is_str(claim(T0 + MIN, &c), "", "held with its new employee");
        emp.status = STORE_EMP_IDLE;
        store_employee_update(s, &live, emp_b, &emp, STORE_EMP_STATUS, T0);
        is_str(claim(T0 + MIN, &c), "task_moved", "released");
        finish(&c, true, 1, T0 + MIN, &(bool){false});
    }
}

static void test_credits(void)
{
    struct store_task_claim c;
    struct store_org o;
    bool disc = false;
    subtest("credits")
    {
        int64_t before = credits();
        add(&live, "task_price", emp_a, "medium", 0, T0 + 20, NULL, 0);
        claim(T0 + MIN, &c);
        is_int(credits(), before - 1, "one credit reserved");
        is_int(finish(&c, true, 5, T0 + MIN, &disc), 5, "charged the price");
        is_int(credits(), before - 5, "five in all");
        is_int(get("task_price").credits_used, 5, "the task's credits");
        add(&live, "task_fails", emp_a, "medium", 0, T0 + 21, NULL, 0);
        claim(T0 + MIN, &c);
        is_int(finish(&c, false, 0, T0 + MIN, &disc), 0, "a failed run costs nothing");
        is_int(credits(), before - 5, "the reserved credit came back");
        {
            struct store_task k = get("task_fails");
            ok(strcmp(k.status, "failed") == 0 && k.error && strcmp(k.error, "boom") == 0 &&
                   !k.result,
               "failed with its error");
        }
        store_org_update(s, "acme", -1, 2, &o);
        add(&live, "task_dear", emp_a, "medium", 0, T0 + 22, NULL, 0);
        claim(T0 + MIN, &c);
        is_int(finish(&c, true, 9, T0 + MIN, &disc), 2, "charged up to the balance");
        is_int(credits(), 0, "never below 0");
        add(&live, "task_broke", emp_a, "medium", 0, T0 + 23, NULL, 0);
        is_str(claim(T0 + MIN, &c), "task_broke", "claimed without credits");
        ok(c.no_credits && !c.reserved, "flagged: no credits");
        store_org_update(s, "acme", -1, 1000, &o);
        finish(&c, false, 0, T0 + MIN, &disc);
        /* test keys pay nothing */
        add(&test, "task_testkey", "emp_test_nobody", "medium", 0, T0 + 24, NULL, 0);
        claim(T0 + MIN, &c);
        ok(!c.reserved && !c.no_credits, "a test key reserves nothing");
        finish(&c, true, 0, T0 + MIN, &disc);
        is_int(credits(), 1000, "the balance is untouched");
    }
}

static void test_recurring(void)
{
    struct store_task_claim c;
    const char *daily = "{\"frequency\":\"daily\",\"time\":\"09:30\"}";
    int64_t day = 86400000, d0 = T0 - T0 % day, slot = d0 + 9 * 3600000 + 30 * MIN;
    subtest("recurring")
    {
        int64_t first = task_next_run(daily, T0);
        ok(first > T0 && first % MIN == 0 && (first - d0) % day == 9 * 3600000 + 30 * MIN,
           "task_next_run: the next 09:30 UTC");
        is_int(task_next_run("{\"frequency\":\"nope\"}", T0), 0, "a bad rule: none");
        add(&live, "task_daily", emp_a, "medium", 0, T0 + 30, daily, slot + day);
        is_str(claim(slot + day - 1, &c), "", "not before its occurrence");
        /* Three days of downtime: the missed occurrences run once. */
        is_str(claim(slot + 4 * day + 5 * MIN, &c), "task_daily", "runs when due");
        is_int(c.task.next_run_at, slot + 5 * day, "next: the first slot after now");
        finish(&c, true, 1, slot + 4 * day + 6 * MIN, &(bool){false});
        is_str(claim(slot + 4 * day + 7 * MIN, &c), "", "runs once, not once per missed slot");
        {
            struct store_task k = get("task_daily");
            ok(strcmp(k.status, "completed") == 0 && k.next_run_at == slot + 5 * day &&
                   k.run_count == 1,
               "completed, waiting for the next occurrence");
        }
        is_str(claim(slot + 5 * day, &c), "task_daily", "the next occurrence makes it run");
        finish(&c, true, 1, slot + 5 * day + 1, &(bool){false});
        {
            struct store_task k = get("task_daily");
            is_int(k.run_count, 2, "two runs");
            k.recurring = NULL;
            k.next_run_at = 0;
            store_task_update(s, &live, &k, "completed", NULL, false, slot + 5 * day + 2);
        }
        is_str(claim(slot + 9 * day, &c), "", "recurring null: no more occurrences");
    }
}

static void test_cancel_delete_recover(void)
{
    struct store_task_claim c;
    bool disc = false;
    subtest("cancel, delete, recover")
    {
        int64_t before = credits();
        struct store_run_page p;
        add(&live, "task_cancel", emp_a, "medium", 0, T0 + 40, NULL, 0);
        claim(T0 + MIN, &c);
        {
            struct store_task k = get("task_cancel");
            const char *run = k.run_id;
            k.status = "failed";
            k.run_id = NULL;
            k.error = "Cancelled while in progress by an update.";
            k.completed_at = T0 + MIN;
            is_int(store_task_update(s, &live, &k, "pending", NULL, true, T0 + MIN), ERR_CONFLICT,
                   "a stale status: conflict");
            is_int(store_task_update(s, &live, &k, "in_progress", run, true, T0 + MIN), 0,
                   "cancelled");
        }
        is_int(finish(&c, true, 3, T0 + 2 * MIN, &disc), 0, "the late outcome charges nothing");
        ok(disc, "and is discarded");
        is_int(credits(), before, "the reserved credit came back");
        {
            struct store_task k = get("task_cancel");
            ok(strcmp(k.status, "failed") == 0 && !k.result, "the task keeps the PATCH's status");
        }
        store_task_runs(s, &live, "task_cancel", 10, 0, NULL, &A, &p);
        ok(p.n == 1 && strcmp(p.items[0].status, "cancelled") == 0 && p.items[0].credits_used == 0,
           "the run is cancelled");

        add(&live, "task_delete", emp_a, "medium", 0, T0 + 41, NULL, 0);
        claim(T0 + MIN, &c);
        is_int(store_task_delete(s, &live, "task_delete"), 0, "deleted while running");
        finish(&c, true, 3, T0 + 2 * MIN, &disc);
        ok(disc && credits() == before, "its outcome is discarded, nothing charged");
        is_int(store_task_delete(s, &live, "task_delete"), ERR_NOT_FOUND, "gone");

        add(&live, "task_crash", emp_a, "medium", 0, T0 + 42, NULL, 0);
        claim(T0 + MIN, &c);
        is_int(credits(), before - 1, "reserved");
        {
            size_t n = 0, steps = 0;
            is_int(store_task_recover(s, T0 + 3 * MIN, &n, &steps), 0, "recover");
            is_int(steps, 0, "no workflow step was in flight");
            is_int(n, 1, "one run was interrupted");
        }
        is_int(credits(), before, "its credit came back");
        is_str(claim(T0 + 4 * MIN, &c), "task_crash", "the task runs again");
        finish(&c, true, 1, T0 + 4 * MIN, &disc);
        store_task_runs(s, &live, "task_crash", 10, 0, NULL, &A, &p);
        ok(p.n == 2 && strcmp(p.items[0].status, "completed") == 0 &&
               strcmp(p.items[1].status, "failed") == 0 && strstr(p.items[1].error, "Interrupted"),
           "runs: the interrupted one failed, the next completed");
        store_task_runs(s, &live, "task_crash", 1, 0, NULL, &A, &p);
        ok(p.n == 1 && p.has_more, "a page of one has more");
        store_task_runs(s, &live, "task_crash", 1, p.items[0].started_at, p.items[0].id, &A, &p);
        ok(p.n == 1 && strcmp(p.items[0].status, "failed") == 0 && !p.has_more, "before cursor");
    }
}

/* Journal a step of 'n' calls of run 'c' (seq from 'seq'), its model call priced 'price':
 * what it was charged, or -1. */
static int64_t journal(const struct store_task_claim *c, const char *const *ids, size_t n,
                       int64_t seq, int64_t price)
{
    struct store_tool_call rows[4];
    struct store_tool_step in;
    int64_t charged = 0, balance = 0;
    memset(rows, 0, sizeof(rows));
    for (size_t i = 0; i < n; i++) {
        rows[i].id = ids[i];
        rows[i].model_id = "call_model";
        rows[i].tool = "tasks.get";
        rows[i].arguments = "{\"task_id\":\"x\"}";
        rows[i].task_run_id = c->run_id;
        rows[i].seq = seq + (int64_t)i;
        rows[i].step = seq;
        rows[i].started_at = T0 + MIN;
    }
    memset(&in, 0, sizeof(in));
    in.calls = rows;
    in.n = n;
    in.charge = c->task.tenant.mode == STORE_LIVE;
    in.price = price;
    if (store_tool_step_begin(s, &c->task.tenant, &in, &charged, &balance) != 0)
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
    struct store_task_claim c;
    struct store_task_finish f;
    struct store_run_page p;
    bool disc = false;
    int64_t charged = 0;
    subtest("tool calls of a run")
    {
        int64_t before = credits();
        const char *step1[] = {"call_t1", "call_t2"}, *step2[] = {"call_t3"};
        add(&live, "task_tools", emp_a, "medium", 0, T0 + 50, NULL, 0);
        claim(T0 + MIN, &c);
        is_int(journal(&c, step1, 2, 0, 3), 3, "a step's model call charged with its journal");
        is_int(credits(), before - 1 - 3, "beside the credit the run holds");
        {
            struct store_tool_call end;
            memset(&end, 0, sizeof(end));
            end.id = "call_t1";
            end.status = "completed";
            end.result = "{\"ok\":true}";
            end.completed_at = T0 + MIN + 5;
            is_int(store_tool_call_end(s, &live, &end), 0, "a call's end");
        }
        is_int(journal(&c, step2, 1, 2, 2), 2, "the next step's");
        memset(&f, 0, sizeof(f));
        f.tenant = &live;
        f.task_id = "task_tools";
        f.run_id = c.run_id;
        f.employee_id = emp_a;
        f.ok = true;
        f.result = "done";
        f.credits = 4;
        f.reserved = c.reserved;
        f.now = T0 + 2 * MIN;
        f.stop_reason = "max_steps";
        f.charged_before = 5;
        is_int(store_task_finish(s, &f, &charged, &disc), 0, "finished");
        is_int(charged, 4, "the last model call charged at the end");
        is_int(credits(), before - 9, "nine in all");
        is_int(get("task_tools").credits_used, 9, "the task counts every model call");
        is_int(store_task_runs(s, &live, "task_tools", 10, 0, NULL, &A, &p), 0, "runs read");
        ok(p.n == 1 && p.items[0].credits_used == 9 && p.items[0].stop_reason &&
               strcmp(p.items[0].stop_reason, "max_steps") == 0,
           "the run: its credits and stop reason");
        ok(p.n == 1 && p.items[0].ncalls == 3 && strcmp(p.items[0].calls[0].id, "call_t1") == 0 &&
               strcmp(p.items[0].calls[0].status, "completed") == 0 &&
               strcmp(p.items[0].calls[1].status, "running") == 0 &&
               strcmp(p.items[0].calls[2].id, "call_t3") == 0 &&
               strcmp(p.items[0].calls[2].task_run_id, c.run_id) == 0 &&
               !p.items[0].calls[2].message_id && p.items[0].calls[2].step_index == -1,
           "its calls, in order, owned by the run");

        /* a second run without calls, and a cancelled one that called tools */
        {
            struct store_task k = get("task_tools");
            const char *ids[] = {"call_t4"};
            k.status = "pending";
            store_task_update(s, &live, &k, "completed", NULL, false, T0 + 3 * MIN);
            claim(T0 + 3 * MIN, &c);
            finish(&c, true, 1, T0 + 3 * MIN, &disc);
            k = get("task_tools");
            k.status = "pending";
            store_task_update(s, &live, &k, "completed", NULL, false, T0 + 4 * MIN);
            claim(T0 + 4 * MIN, &c);
            journal(&c, ids, 1, 0, 2);
            k = get("task_tools");
            k.status = "failed";
            k.run_id = NULL;
            k.error = "Cancelled.";
            store_task_update(s, &live, &k, "in_progress", c.run_id, true, T0 + 4 * MIN);
        }
        f.run_id = c.run_id;
        f.charged_before = 2;
        f.reserved = c.reserved;
        store_task_finish(s, &f, &charged, &disc);
        ok(disc, "the cancelled run's outcome is discarded");
        store_task_runs(s, &live, "task_tools", 10, 0, NULL, &A, &p);
        ok(p.n == 3 && strcmp(p.items[0].status, "cancelled") == 0 &&
               p.items[0].credits_used == 2 && p.items[0].ncalls == 1 && !p.items[0].stop_reason,
           "the cancelled run keeps what its tool step cost, and its call");
        ok(p.n == 3 && p.items[1].ncalls == 0 && p.items[2].ncalls == 3,
           "each run has its own calls");
        is_int(get("task_tools").credits_used, 9 + 1 + 2, "the task's total");
        store_task_runs(s, &live, "task_tools", 1, p.items[0].started_at, p.items[0].id, &A, &p);
        ok(p.n == 1 && p.items[0].ncalls == 0, "a later page: its runs' calls only");
        is_int(count_calls(), 4, "four calls journaled");
        is_int(store_task_delete(s, &live, "task_tools"), 0, "the task deleted");
        is_int(count_calls(), 0, "its runs' calls went with it");
    }
}

/* The status, reserved credit, credits and turn state of run 'id'. */
static void run_row(const char *id, char *status, size_t n, int64_t *reserved,
                    int64_t *credits_used, bool *state)
{
    struct db_stmt *st = db_prepare(s, "SELECT status, reserved, credits_used, turn_state IS NOT"
                                       " NULL FROM task_runs WHERE id = $1");
    bool row = false;
    *status = '\0';
    if (!st)
        return;
    db_bind_text(st, 1, id);
    if (db_step(st, &row) == 0 && row) {
        db_copy(st, 0, status, n);
        *reserved = db_int64(st, 1);
        *credits_used = db_int64(st, 2);
        *state = db_int64(st, 3) != 0;
    }
    db_done(st);
}

static void test_waiting(void)
{
    struct store_task_claim c, again;
    struct store_task_finish f;
    struct store_approval p, after;
    struct store_approval_decision d;
    struct store_tool_call row;
    struct store_tool_step in;
    struct store_run_saved sv;
    int64_t charged = 0, balance = 0, reserved = -1, used = -1, before;
    char status[32];
    bool disc = false, state = false;
    size_t n = 0, steps = 0;
    subtest("a run that waits for approvals")
    {
        add(&live, "task_wait", emp_a, "urgent", 0, T0 + 60, NULL, 0);
        is_str(claim(T0 + 5 * MIN, &c), "task_wait", "claimed");
        ok(c.reserved && !c.resumed, "a new run, a credit held");
        before = credits();
        /* its step: one call waits for a person, with its approval */
        memset(&row, 0, sizeof(row));
        row.id = "call_w1";
        row.model_id = "call_model";
        row.tool = "tasks.create";
        row.arguments = "{\"title\":\"x\"}";
        row.status = "pending_approval";
        row.approval_id = "apr_w1";
        row.task_run_id = c.run_id;
        row.started_at = T0 + 5 * MIN;
        memset(&p, 0, sizeof(p));
        p.id = "apr_w1";
        p.employee_id = emp_a;
        p.tool_call_id = "call_w1";
        p.tool = "tasks.create";
        p.arguments = row.arguments;
        p.requested_by_type = "system";
        p.task_id = "task_wait";
        p.task_run_id = c.run_id;
        p.step_index = -1;
        p.requested_at = T0 + 5 * MIN;
        p.expires_at = T0 + 60 * MIN;
        memset(&in, 0, sizeof(in));
        in.calls = &row;
        in.n = 1;
        in.approvals = &p;
        in.napprovals = 1;
        in.charge = true;
        in.price = 3;
        is_int(store_tool_step_begin(s, &live, &in, &charged, &balance), 0, "journaled");
        /* the run waits */
        memset(&f, 0, sizeof(f));
        f.tenant = &live;
        f.task_id = "task_wait";
        f.run_id = c.run_id;
        f.employee_id = emp_a;
        f.reserved = c.reserved;
        f.now = T0 + 6 * MIN;
        f.charged_before = charged;
        f.turn_state = "{\"message\":\"m\"}";
        is_int(store_task_finish(s, &f, &charged, &disc), 0, "stored as waiting");
        ok(!disc && charged == 0, "nothing charged now");
        run_row(c.run_id, status, sizeof(status), &reserved, &used, &state);
        is_str(status, "waiting_approval", "the run waits");
        ok(reserved == 0 && used == 3 && state, "no credit held, its step counted, its state");
        is_str(get("task_wait").status, "in_progress", "the task stays in progress");
        is_int(get("task_wait").credits_used, 3, "the task counts the step");
        is_int(credits(), before - 3 + 1, "the step charged, the held credit back");
        is_str(claim(T0 + 7 * MIN, &again), "", "not runnable while its approval is pending");
        /* decided: it goes on, before anything else */
        add(&live, "task_after", emp_b, "urgent", 0, T0 + 61, NULL, 0);
        memset(&d, 0, sizeof(d));
        d.id = "apr_w1";
        d.status = "approved";
        d.by_type = "key";
        d.by_id = "key_x";
        d.now = T0 + 8 * MIN;
        is_int(store_approval_decide(s, &live, &d, &A, &after), 0, "approved");
        is_str(claim(T0 + 9 * MIN, &again), "task_wait", "the run is claimed again");
        ok(again.resumed && strcmp(again.run_id, c.run_id) == 0 && again.reserved,
           "the same run, resumed, a credit held again");
        run_row(c.run_id, status, sizeof(status), &reserved, &used, &state);
        ok(strcmp(status, "in_progress") == 0 && reserved == 1, "in progress again");
        is_int(store_run_turn_load(s, &live, c.run_id, NULL, -1, &A, &sv), 0, "its turn read");
        ok(sv.turn_state && strcmp(sv.turn_state, f.turn_state) == 0 && sv.ncalls == 1 &&
               strcmp(sv.calls[0].status, "pending_approval") == 0 && sv.napprovals == 1 &&
               strcmp(sv.approvals[0].status, "approved") == 0,
           "its state, calls and decided approvals");
        /* its node dies: it waits again (its journal says where it was), not run again */
        is_int(store_task_recover(s, T0 + 10 * MIN, &n, &steps), 0, "recovered");
        run_row(c.run_id, status, sizeof(status), &reserved, &used, &state);
        ok(strcmp(status, "waiting_approval") == 0 && reserved == 0,
           "waiting again, its credit back");
        is_str(get("task_wait").status, "in_progress", "the task still in progress");
        is_str(claim(T0 + 11 * MIN, &again), "task_wait", "and goes on again");
        ok(again.resumed && strcmp(again.run_id, c.run_id) == 0, "the same run");
        f.run_id = again.run_id;
        f.reserved = again.reserved;
        f.turn_state = NULL;
        f.ok = true;
        f.result = "done";
        f.credits = 2;
        f.charged_before = 1;
        f.now = T0 + 12 * MIN;
        is_int(store_task_finish(s, &f, &charged, &disc), 0, "finished");
        run_row(c.run_id, status, sizeof(status), &reserved, &used, &state);
        ok(strcmp(status, "completed") == 0 && used == 3 + 1 + 2 && !state,
           "completed: every model call counted, its state gone");
        is_int(get("task_wait").credits_used, 6, "the task's total");
        is_str(claim(T0 + 13 * MIN, &again), "task_after", "the next task");
        finish(&again, true, 0, T0 + 13 * MIN, &disc);
    }
}

static void test_list(void)
{
    struct store_task_filter f;
    struct store_task_page p;
    subtest("list")
    {
        memset(&f, 0, sizeof(f));
        f.limit = 100;
        store_task_list(s, &live, &f, &A, &p);
        size_t all = p.n;
        ok(all >= 10 && !p.has_more, "every task of the tenant");
        for (size_t i = 1; i < p.n; i++) {
            if (p.items[i - 1].created_at < p.items[i].created_at)
                ok(0, "newest first");
        }
        f.status = "failed";
        store_task_list(s, &live, &f, &A, &p);
        bool all_failed = p.n > 0;
        for (size_t i = 0; i < p.n; i++)
            all_failed &= strcmp(p.items[i].status, "failed") == 0;
        ok(all_failed, "status filter");
        f.status = NULL;
        f.priority = "urgent";
        store_task_list(s, &live, &f, &A, &p);
        is_int(p.n, 2, "priority filter");
        f.priority = NULL;
        f.employee_id = emp_b;
        store_task_list(s, &live, &f, &A, &p);
        is_int(p.n, 2, "employee filter");
        f.employee_id = NULL;
        store_task_list(s, &test, &f, &A, &p);
        is_int(p.n, 1, "the test mode sees its own");
        {
            struct store_task k;
            is_int(store_task_get(s, &test, "task_6low", &A, &k), ERR_NOT_FOUND,
                   "not another mode's task");
        }
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
    test_order();
    test_held();
    test_credits();
    test_recurring();
    test_cancel_delete_recover();
    test_tool_calls();
    test_list();
    test_waiting();
    arena_cleanup(&A);
    store_close(s);
    return done_testing();
}
