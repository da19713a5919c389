/* SPDX-License-Identifier: MIT */
/*
 * tasks.c: tasks, their runs, and the durable queue that task runs and workflow steps share
 * (store_claim), written once over the driver (driver.h).
 *
 * DESIGN: the queue is the tables themselves (sql/005_tasks.sql, sql/007_workflow_runs.sql): a
 * pending task whose employee is not offline, and a queued or running workflow run whose current
 * step is free and ready. A claim is one write transaction: it wakes what time made runnable
 * (recurring tasks, scheduled workflows), reads the head of each queue and starts whichever runs
 * first. On SQLite that transaction holds the one write lock from its start, so claims never
 * overlap. On PostgreSQL (read committed) the claims of several nodes do overlap: the rows a
 * claim takes are locked as they are read (SELECT ... FOR UPDATE SKIP LOCKED), so a row another
 * node is taking is passed over, never taken twice; a row passed over is seen again by the next
 * claim. The statements that read the queue are the ones written twice (struct queue_sql): SQLite
 * uses a partial index only when the query repeats the index's condition as written (held = 0),
 * and is told which one (INDEXED BY); PostgreSQL's flags are booleans, and it alone locks rows.
 *
 * Fair shares (sql/014_fair_queues.sql): the queue indexes begin with the organization, so a
 * claim first lists the organizations that have runnable work (a skip scan: one index seek per
 * organization, however long its backlog), orders them by the turn at which each was last
 * served (queue_turns; never served first), and takes the head of the first one that has a
 * unit it can take, in the contract's order within it (priority, due, creation; a step as a
 * medium-priority task). That organization then takes the next turn. So organizations are
 * served round-robin, one unit each: another tenant's backlog delays a task by at most the
 * time a worker needs to come free, never by the length of the backlog. The turns are in the
 * database, so the rotation holds across nodes (two nodes claiming at the same moment may
 * serve one organization twice in a row; its rows are locked, so never the same unit). A
 * node's last free worker claims with 'idle_only' (store_claim_idle): it passes over the
 * organizations that already have work in progress, so that one organization never holds
 * every worker of a node and the next one's task starts at once (tasks/runner.c).
 *
 * Every other write that depends on what it read locks the row first by writing it (the task, in
 * tasks_finish), in the order the other writers take rows (task, run, organization, employee), so
 * that a cancel or delete racing with it is either seen or waits for it.
 */
#include "store_int.h"

#include "../core/clock.h"
#include "../core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TASK_COLS                                                                                  \
    "t.id, t.employee_id, t.title, t.description, t.status, t.priority, t.recurring, t.run_id,"    \
    " t.result, t.error, coalesce(t.due_at, 0), coalesce(t.next_run_at, 0),"                       \
    " coalesce(t.last_run_at, 0), coalesce(t.started_at, 0), coalesce(t.completed_at, 0),"         \
    " t.created_at, t.updated_at, t.run_count, t.credits_used, t.org_id, t.mode, t.run_now,"       \
    " t.created_by, t.scopes"

/* The task of the current row (TASK_COLS) into 'pout', its strings in 'a'. */
static void read_task(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_task *k = pout;
    memset(k, 0, sizeof(*k));
    k->id = db_arena_text(a, st, 0);
    k->employee_id = db_arena_text(a, st, 1);
    k->title = db_arena_text(a, st, 2);
    k->description = db_arena_text(a, st, 3);
    k->status = db_arena_text(a, st, 4);
    k->priority = db_arena_text(a, st, 5);
    k->recurring = db_arena_text(a, st, 6);
    k->run_id = db_arena_text(a, st, 7);
    k->result = db_arena_text(a, st, 8);
    k->error = db_arena_text(a, st, 9);
    k->due_at = db_int64(st, 10);
    k->next_run_at = db_int64(st, 11);
    k->last_run_at = db_int64(st, 12);
    k->started_at = db_int64(st, 13);
    k->completed_at = db_int64(st, 14);
    k->created_at = db_int64(st, 15);
    k->updated_at = db_int64(st, 16);
    k->run_count = db_int64(st, 17);
    k->credits_used = db_int64(st, 18);
    db_copy(st, 19, k->tenant.org_id, sizeof(k->tenant.org_id));
    k->tenant.mode = db_mode(db_text(st, 20));
    k->run_now = db_int64(st, 21) != 0;
    k->created_by = db_arena_text(a, st, 22);
    k->scopes = (uint32_t)db_int64(st, 23);
}

/* 0 urgent .. 3 low: the queue's first key. */
static int64_t prio_rank(const char *p)
{
    static const char *const names[] = {"urgent", "high", "medium", "low"};
    for (int64_t i = 0; i < 4; i++) {
        if (p && strcmp(p, names[i]) == 0)
            return i;
    }
    return 2;
}

/* Run 'sql' as db_run() does (the texts, then the ints); '*n' is how many rows it changed. */
static int run_n(struct store *s, const char *sql, const char *const *texts, size_t nt,
                 const int64_t *ints, size_t ni, int64_t *n)
{
    struct db_stmt *st = db_prepare(s, sql);
    bool row;
    int rc;

    *n = 0;
    if (!st)
        return ERR_STORE;
    for (size_t i = 0; i < nt; i++)
        db_bind_text(st, (int)i + 1, texts[i]);
    for (size_t i = 0; i < ni; i++)
        db_bind_int64(st, (int)(nt + i) + 1, ints[i]);
    rc = db_step(st, &row);
    if (!rc)
        *n = db_changes(st);
    db_done(st);
    return rc;
}

/* ---- Tasks ---- */

/* See store_int.h. The task is held from the start when its employee is offline. */
int tasks_create(struct store *s, const struct store_tenant *t, const struct store_task *k)
{
    const char *texts[] = {k->id,          t->org_id,   db_mode_name(t->mode),
                           k->employee_id, k->title,    k->description ? k->description : "",
                           k->status,      k->priority, k->recurring,
                           k->created_by};
    const int64_t ints[] = {prio_rank(k->priority), k->due_at, k->next_run_at, k->created_at,
                            (int64_t)k->scopes};
    return db_run(s,
                  "INSERT INTO tasks (id, org_id, mode, employee_id, title, description, status,"
                  " priority, recurring, created_by, prio_rank, due_at, due_key, next_run_at,"
                  " created_at, updated_at, scopes, held) VALUES ($1, $2, $3, $4, $5, $6, $7, $8,"
                  " $9, $10, $11, nullif(CAST($12 AS BIGINT), 0), coalesce(nullif(CAST($12 AS"
                  " BIGINT), 0), 9223372036854775807), nullif(CAST($13 AS BIGINT), 0), $14, $14,"
                  " $15, coalesce((SELECT disabled FROM employees WHERE id = $4 AND org_id = $2 AND"
                  " mode = $3), FALSE))",
                  texts, 10, ints, 5);
}

/* See store_int.h. */
int tasks_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
              struct store_task *out)
{
    const char *texts[] = {id};
    return db_one(s,
                  "SELECT " TASK_COLS " FROM tasks t WHERE t.org_id = $1 AND t.mode = $2"
                  " AND t.id = $3",
                  t, texts, 1, read_task, a, out);
}

/* See store_int.h. Newest first, keyset-paged by (created_at, id). */
int tasks_list(struct store *s, const struct store_tenant *t, const struct store_task_filter *f,
               struct arena *a, struct store_task_page *out)
{
    struct db_stmt *st;
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    st = db_prepare(s, "SELECT " TASK_COLS " FROM tasks t WHERE t.org_id = $1 AND t.mode = $2"
                       " AND (CAST($4 AS TEXT) IS NULL OR (t.created_at, t.id) < ($3, $4)) AND"
                       " (CAST($6 AS TEXT) IS NULL OR t.employee_id = $6) AND (CAST($7 AS TEXT)"
                       " IS NULL OR t.status = $7) AND (CAST($8 AS TEXT) IS NULL OR t.priority ="
                       " $8) ORDER BY t.created_at DESC, t.id DESC"
                       " LIMIT $5");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_int64(st, 3, f->before_created);
    db_bind_text(st, 4, f->before_id);
    db_bind_int64(st, 5, (int64_t)f->limit + 1);
    db_bind_text(st, 6, f->employee_id);
    db_bind_text(st, 7, f->status);
    db_bind_text(st, 8, f->priority);
    out->items = arena_alloc(a, ((size_t)f->limit + 1) * sizeof(*out->items));
    while (!(rc = db_step(st, &row)) && row) {
        if (out->n == f->limit) {
            out->has_more = true;
            break;
        }
        read_task(st, a, &out->items[out->n++]);
    }
    db_done(st);
    return rc;
}

/*
 * See store_int.h. A compare-and-set: the row is written only while it still has 'old_status'
 * and 'old_run_id' (both NULL or equal: SQLite's "IS" with a value is not PostgreSQL's).
 */
int tasks_update(struct store *s, const struct store_tenant *t, const struct store_task *k,
                 const char *old_status, const char *old_run_id, bool cancel_run, int64_t now)
{
    const char *texts[] = {t->org_id,    db_mode_name(t->mode),
                           k->id,        k->employee_id,
                           k->title,     k->description ? k->description : "",
                           k->status,    k->priority,
                           k->recurring, k->run_id,
                           k->result,    k->error,
                           old_status,   old_run_id};
    const int64_t ints[] = {prio_rank(k->priority), k->due_at,     k->next_run_at,
                            k->completed_at,        k->updated_at, k->run_now ? 1 : 0};
    int64_t n = 0;
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = run_n(s,
               "UPDATE tasks SET employee_id = $4, title = $5, description = $6, status = $7,"
               " priority = $8, recurring = $9, run_id = $10, result = $11, error = $12,"
               " prio_rank = $15, due_at = nullif(CAST($16 AS BIGINT), 0), due_key ="
               " coalesce(nullif(CAST($16 AS BIGINT), 0), 9223372036854775807), next_run_at ="
               " nullif(CAST($17 AS BIGINT), 0), completed_at = nullif(CAST($18 AS BIGINT), 0),"
               " updated_at = $19, run_now = $20, held = coalesce((SELECT disabled FROM employees"
               " WHERE id = $4 AND org_id = $1 AND mode = $2), FALSE) WHERE org_id = $1 AND"
               " mode = $2 AND id = $3 AND status = $13 AND (run_id = $14 OR (run_id IS NULL AND"
               " $14 IS NULL))",
               texts, 14, ints, 6, &n);
    if (!rc && n == 0)
        rc = ERR_CONFLICT;
    if (!rc && cancel_run && old_run_id) {
        const char *rt[] = {old_run_id, k->error ? k->error : "Cancelled."};
        const int64_t ri[] = {now};
        rc = db_run(s,
                    "UPDATE task_runs SET status = 'cancelled', error = $2, completed_at = $3,"
                    " turn_state = NULL WHERE id = $1 AND status IN ('in_progress',"
                    " 'waiting_approval')",
                    rt, 2, ri, 1);
    }
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. Its runs go with it (ON DELETE CASCADE). */
int tasks_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    const char *texts[] = {t->org_id, db_mode_name(t->mode), id};
    int64_t n = 0;
    int rc = run_n(s, "DELETE FROM tasks WHERE org_id = $1 AND mode = $2 AND id = $3", texts, 3,
                   NULL, 0, &n);
    if (!rc && n == 0)
        rc = ERR_NOT_FOUND;
    return rc;
}

/* The tool calls of the runs of page 'out' (of task 'task_id'), each run's into its record:
 * one read for the page, in the page's order. */
static int runs_calls(struct store *s, const struct store_tenant *t, const char *task_id,
                      struct arena *a, struct store_run_page *out)
{
    const struct store_task_run *hi = &out->items[0], *lo = &out->items[out->n - 1];
    struct store_tool_call *calls = NULL;
    size_t n = 0, k = 0;
    int rc = tool_calls_of_task_runs(s, t, task_id, lo->started_at, lo->id, hi->started_at, hi->id,
                                     STORE_RUN_CALLS_MAX, a, &calls, &n);

    for (size_t i = 0; !rc && i < out->n; i++) {
        struct store_task_run *r = &out->items[i];
        r->calls = calls + k;
        while (k < n && strcmp(calls[k].task_run_id, r->id) == 0)
            k++;
        r->ncalls = (size_t)(calls + k - r->calls);
    }
    return rc;
}

/* A page of runs, newest first, keyset-paged by (started_at, id), then their calls. */
static int runs_page(struct store *s, const struct store_tenant *t, const char *task_id,
                     unsigned limit, int64_t before_started, const char *before_id, struct arena *a,
                     struct store_run_page *out)
{
    struct db_stmt *st;
    bool row = false;
    int rc;

    st = db_prepare(s, "SELECT id, status, result, error, started_at, coalesce(completed_at, 0),"
                       " credits_used, stop_reason FROM task_runs WHERE org_id = $1 AND"
                       " mode = $2 AND task_id = $3 AND (CAST($5 AS TEXT) IS NULL OR"
                       " (started_at, id) < ($4, $5)) ORDER BY started_at DESC, id DESC LIMIT $6");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, task_id);
    db_bind_int64(st, 4, before_started);
    db_bind_text(st, 5, before_id);
    db_bind_int64(st, 6, (int64_t)limit + 1);
    out->items = arena_alloc(a, ((size_t)limit + 1) * sizeof(*out->items));
    while (!(rc = db_step(st, &row)) && row) {
        struct store_task_run *r;
        if (out->n == limit) {
            out->has_more = true;
            break;
        }
        r = &out->items[out->n++];
        r->id = db_arena_text(a, st, 0);
        r->status = db_arena_text(a, st, 1);
        r->result = db_arena_text(a, st, 2);
        r->error = db_arena_text(a, st, 3);
        r->started_at = db_int64(st, 4);
        r->completed_at = db_int64(st, 5);
        r->credits_used = db_int64(st, 6);
        r->stop_reason = db_arena_text(a, st, 7);
    }
    db_done(st);
    return rc || out->n == 0 ? rc : runs_calls(s, t, task_id, a, out);
}

/* See store_int.h. One read transaction: the calls read are those of the runs of the page. */
int tasks_runs(struct store *s, const struct store_tenant *t, const char *task_id, unsigned limit,
               int64_t before_started, const char *before_id, struct arena *a,
               struct store_run_page *out)
{
    int rc;

    memset(out, 0, sizeof(*out));
    rc = db_begin(s, DB_TX_READ);
    if (rc)
        return rc;
    rc = runs_page(s, t, task_id, limit, before_started, before_id, a, out);
    if ((rc ? db_rollback(s) : db_commit(s)) && !rc)
        rc = ERR_STORE;
    return rc;
}

/* The ending of run 'in' when its task no longer waits for it (cancelled or deleted): its
 * reserved credit back, the employee no longer busy; the model calls its tool steps were
 * charged for stay counted on the run and its task, when they are still there. */
static int finish_discarded(struct store *s, const struct store_task_finish *in)
{
    const struct credits_cause why = {STORE_CREDIT_TASK_RUN, "task_run", in->run_id,
                                      in->employee_id};
    int64_t charged;
    int rc = credits_settle(s, in->tenant, in->reserved ? 1 : 0, 0, &why, &charged);
    if (!rc && in->charged_before > 0) {
        const char *run[] = {in->run_id};
        const int64_t ints[] = {in->charged_before};
        rc = db_run(s,
                    "UPDATE tasks SET credits_used = credits_used + $2 WHERE id = (SELECT"
                    " task_id FROM task_runs WHERE id = $1)",
                    run, 1, ints, 1);
        if (!rc)
            rc = db_run(s, "UPDATE task_runs SET credits_used = credits_used + $2 WHERE id = $1",
                        run, 1, ints, 1);
    }
    if (!rc)
        rc = employees_busy(s, in->tenant, in->employee_id, -1);
    return rc;
}

/* The run and its task ended 'in->ok' with 'taken' credits charged now (and what its tool
 * steps were charged before), and the statistics fact. */
static int finish_written(struct store *s, const struct store_task_finish *in, int64_t taken)
{
    const char *status = in->ok ? "completed" : "failed";
    const char *run[] = {in->run_id, status, in->result, in->error, in->stop_reason};
    const char *task[] = {in->task_id, status, in->result, in->error};
    const int64_t ints[] = {taken + in->charged_before, in->now};
    struct store_event ev = {in->employee_id,
                             in->ok ? "task_completed" : "task_failed",
                             in->now,
                             in->response_ms,
                             taken + in->charged_before,
                             -1,
                             NULL};
    /* credits_used adds: a run that waited for approvals counted its earlier steps then */
    int rc = db_run(s,
                    "UPDATE task_runs SET status = $2, result = $3, error = $4, stop_reason = $5,"
                    " credits_used = credits_used + $6, completed_at = $7, reserved = 0,"
                    " turn_state = NULL WHERE id = $1",
                    run, 5, ints, 2);
    if (!rc)
        rc = db_run(s,
                    "UPDATE tasks SET status = $2, result = $3, error = $4, credits_used ="
                    " credits_used + $5, completed_at = $6, updated_at = $6, run_id = NULL WHERE"
                    " id = $1",
                    task, 4, ints, 2);
    if (!rc)
        rc = employees_event_add(s, in->tenant, &ev);
    if (!rc)
        rc = employees_busy(s, in->tenant, in->employee_id, -1);
    if (!rc)
        rc = hook_task(s, in->tenant, in->task_id, in->ok, in->now);
    return rc;
}

/* The run's turn waits for approvals (contract §19): the run waiting_approval with its
 * state, out of any node, counting what its tool steps cost so far (its task too); the
 * credit it held back; the employee no longer busy. The task stays in_progress. */
static int finish_waiting(struct store *s, const struct store_task_finish *in)
{
    const char *run[] = {in->run_id, in->turn_state};
    const char *task[] = {in->task_id};
    const int64_t ints[] = {in->charged_before};
    const struct credits_cause why = {STORE_CREDIT_TASK_RUN, "task_run", in->run_id,
                                      in->employee_id};
    int64_t back;
    int rc = credits_settle(s, in->tenant, in->reserved ? 1 : 0, 0, &why, &back);

    if (!rc)
        rc = db_run(s,
                    "UPDATE task_runs SET status = 'waiting_approval', turn_state = $2, node_id ="
                    " NULL, reserved = 0, credits_used = credits_used + $3 WHERE id = $1",
                    run, 2, ints, 1);
    if (!rc && in->charged_before > 0)
        rc = db_run(s, "UPDATE tasks SET credits_used = credits_used + $2 WHERE id = $1", task, 1,
                    ints, 1);
    if (!rc)
        rc = employees_busy(s, in->tenant, in->employee_id, -1);
    return rc;
}

/*
 * See store_int.h. Whether the run is still the task's run in progress (a PATCH may have
 * cancelled it, a DELETE removed it) is asked by writing the task row: the answer then holds
 * until the commit, on PostgreSQL too, where a cancel racing with this waits for it or is seen.
 */
int tasks_finish(struct store *s, const struct store_task_finish *in, int64_t *charged,
                 bool *discarded)
{
    const char *run[] = {in->run_id};
    int64_t taken = in->reserved ? 1 : 0, live = 0;
    int rc;

    *charged = 0;
    *discarded = false;
    rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = run_n(s,
               "UPDATE tasks SET run_id = run_id WHERE run_id = $1 AND id = (SELECT task_id FROM"
               " task_runs WHERE id = $1 AND status = 'in_progress')",
               run, 1, NULL, 0, &live);
    if (!rc && !live) {
        *discarded = true;
        rc = finish_discarded(s, in);
        goto out;
    }
    if (!rc && in->turn_state) {
        taken = 0;
        rc = finish_waiting(s, in);
        goto out;
    }
    /* The price, or for a failed run nothing: the reserved credit goes back. */
    if (!rc) {
        const struct credits_cause why = {STORE_CREDIT_TASK_RUN, "task_run", in->run_id,
                                          in->employee_id};
        rc = credits_settle(s, in->tenant, taken, in->ok ? in->credits : 0, &why, &taken);
    }
    if (!rc)
        rc = finish_written(s, in, taken);
out:
    if (!rc)
        rc = db_commit(s);
    if (rc) {
        db_rollback(s);
        *discarded = false;
        return rc;
    }
    if (!*discarded)
        *charged = taken;
    return 0;
}

/* ---- The durable queue: task runs and workflow steps ---- */

/* The statements of the queue that each database reads its own way (see the top of the file). */
struct queue_sql {
    const char *check;      /* is anything runnable, or due to be woken, at $1? */
    const char *wakes;      /* is anything due to be woken at $1? */
    const char *next_wake;  /* the first time after $1 that makes something runnable (or null) */
    const char *schedules;  /* the enabled scheduled workflows due at $1, taken */
    const char *task_org;   /* the first organization after $2 with a runnable task at $1 */
    const char *step_org;   /* the first organization after $2 with a ready step at $1 */
    const char *task_head;  /* the first runnable task at $1 of organization $2, taken */
    const char *step_head;  /* the first run of organization $2 whose step is ready at $1, taken */
    const char *run_insert; /* a run of a workflow ($8: its steps, a JSON array of step_count) */
    const char *run_steps;  /* the pending steps of run $1 from its steps $2 (JSON array) */
};

static const struct queue_sql sqlite_queue = {
    .check = "SELECT EXISTS (SELECT 1 FROM tasks INDEXED BY tasks_queue_org WHERE status ="
             " 'pending'"
             " AND held = 0 AND (next_run_at IS NULL OR next_run_at <= $1 OR run_now = 1)) OR"
             " EXISTS (SELECT 1 FROM tasks WHERE recurring IS NOT NULL AND next_run_at <= $1 AND"
             " status IN ('completed', 'failed')) OR EXISTS (SELECT 1 FROM workflow_runs INDEXED"
             " BY workflow_runs_queue WHERE status IN ('queued', 'running') AND lease IS NULL AND"
             " held = 0 AND ready_at <= $1) OR EXISTS (SELECT 1 FROM workflows INDEXED BY"
             " workflows_scheduled WHERE recurring IS NOT NULL AND next_run_at <= $1 AND enabled"
             " = 1)",
    .wakes = "SELECT EXISTS (SELECT 1 FROM tasks WHERE recurring IS NOT NULL AND next_run_at <="
             " $1 AND status IN ('completed', 'failed')) OR EXISTS (SELECT 1 FROM workflows"
             " INDEXED BY workflows_scheduled WHERE recurring IS NOT NULL AND next_run_at <= $1"
             " AND enabled = 1)",
    .next_wake = "SELECT min(coalesce((SELECT min(next_run_at) FROM tasks WHERE recurring IS NOT"
                 " NULL AND next_run_at > $1), 9e18), coalesce((SELECT min(next_run_at) FROM"
                 " workflows WHERE recurring IS NOT NULL AND enabled = 1 AND next_run_at > $1),"
                 " 9e18), coalesce((SELECT min(ready_at) FROM workflow_runs INDEXED BY"
                 " workflow_runs_queue WHERE status IN ('queued', 'running') AND lease IS NULL AND"
                 " held = 0 AND ready_at > $1), 9e18))",
    .schedules = "SELECT id, org_id, mode, steps, recurring, next_run_at FROM workflows INDEXED BY"
                 " workflows_scheduled WHERE recurring IS NOT NULL AND next_run_at <= $1 AND"
                 " enabled = 1",
    .task_org = "SELECT t.org_id FROM tasks t INDEXED BY tasks_queue_org WHERE t.status ="
                " 'pending' AND t.held = 0 AND (t.next_run_at IS NULL OR t.next_run_at <= $1 OR"
                " t.run_now = 1) AND t.org_id > $2 ORDER BY t.org_id LIMIT 1",
    .step_org = "SELECT org_id FROM workflow_runs INDEXED BY workflow_runs_queue_org WHERE status"
                " IN ('queued', 'running') AND lease IS NULL AND held = 0 AND ready_at <= $1 AND"
                " org_id > $2 ORDER BY org_id LIMIT 1",
    .task_head = "SELECT " TASK_COLS " FROM tasks t INDEXED BY tasks_queue_org WHERE t.org_id = $2"
                 " AND t.status = 'pending' AND t.held = 0 AND (t.next_run_at IS NULL OR"
                 " t.next_run_at <= $1 OR t.run_now = 1) ORDER BY t.prio_rank, t.due_key,"
                 " t.created_at, t.id LIMIT 1",
    .step_head = "SELECT id, ready_at FROM workflow_runs INDEXED BY workflow_runs_queue_org WHERE"
                 " org_id = $2 AND status IN ('queued', 'running') AND lease IS NULL AND held = 0"
                 " AND ready_at <= $1 ORDER BY ready_at, id LIMIT 1",
    .run_insert = "INSERT INTO workflow_runs (id, workflow_id, org_id, mode, status, trigger_type,"
                  " trigger_event, trigger_data, definition, step_count, ready_at, created_at,"
                  " depth, started_by, scopes) SELECT $1, $2, $3, $4, 'queued', $5, $6, $7, $8,"
                  " json_array_length($8), $9, $9, $10, CASE WHEN $11 = 1 THEN $13 ELSE"
                  " created_by END, CASE WHEN $11 = 1 THEN $12 ELSE scopes END FROM workflows"
                  " WHERE id = $2 AND org_id = $3 AND mode = $4",
    .run_steps = "INSERT INTO workflow_run_steps (run_id, idx, employee_id, action, status) SELECT"
                 " $1, CAST(key AS INTEGER), json_extract(value, '$.employee_id'),"
                 " json_extract(value, '$.action'), 'pending' FROM json_each($2)",
};

static const struct queue_sql pg_queue = {
    .check = "SELECT EXISTS (SELECT 1 FROM tasks WHERE status = 'pending' AND NOT held AND"
             " (next_run_at IS NULL OR next_run_at <= $1 OR run_now)) OR EXISTS (SELECT 1 FROM"
             " tasks WHERE recurring IS NOT NULL AND next_run_at <= $1 AND status IN"
             " ('completed', 'failed')) OR EXISTS (SELECT 1 FROM workflow_runs WHERE status IN"
             " ('queued', 'running') AND lease IS NULL AND NOT held AND ready_at <= $1) OR EXISTS"
             " (SELECT 1 FROM workflows WHERE recurring IS NOT NULL AND next_run_at <= $1 AND"
             " enabled)",
    .wakes = "SELECT EXISTS (SELECT 1 FROM tasks WHERE recurring IS NOT NULL AND next_run_at <="
             " $1 AND status IN ('completed', 'failed')) OR EXISTS (SELECT 1 FROM workflows WHERE"
             " recurring IS NOT NULL AND next_run_at <= $1 AND enabled)",
    .next_wake = "SELECT LEAST((SELECT min(next_run_at) FROM tasks WHERE recurring IS NOT NULL"
                 " AND next_run_at > $1), (SELECT min(next_run_at) FROM workflows WHERE recurring"
                 " IS NOT NULL AND enabled AND next_run_at > $1), (SELECT min(ready_at) FROM"
                 " workflow_runs WHERE status IN ('queued', 'running') AND lease IS NULL AND NOT"
                 " held AND ready_at > $1))",
    .schedules = "SELECT id, org_id, mode, steps, recurring, next_run_at FROM workflows WHERE"
                 " recurring IS NOT NULL AND next_run_at <= $1 AND enabled FOR UPDATE SKIP LOCKED",
    .task_org = "SELECT t.org_id FROM tasks t WHERE t.status = 'pending' AND NOT t.held AND"
                " (t.next_run_at IS NULL OR t.next_run_at <= $1 OR t.run_now) AND t.org_id > $2"
                " ORDER BY t.org_id LIMIT 1",
    .step_org = "SELECT org_id FROM workflow_runs WHERE status IN ('queued', 'running') AND lease"
                " IS NULL AND NOT held AND ready_at <= $1 AND org_id > $2 ORDER BY org_id LIMIT 1",
    .task_head = "SELECT " TASK_COLS " FROM tasks t WHERE t.org_id = $2 AND t.status = 'pending'"
                 " AND NOT t.held AND (t.next_run_at IS NULL OR t.next_run_at <= $1 OR t.run_now)"
                 " ORDER BY t.prio_rank, t.due_key, t.created_at, t.id LIMIT 1 FOR UPDATE SKIP"
                 " LOCKED",
    .step_head = "SELECT id, ready_at FROM workflow_runs WHERE org_id = $2 AND status IN"
                 " ('queued', 'running') AND lease IS NULL AND NOT held AND ready_at <= $1 ORDER"
                 " BY ready_at, id LIMIT 1 FOR UPDATE SKIP LOCKED",
    .run_insert = "INSERT INTO workflow_runs (id, workflow_id, org_id, mode, status, trigger_type,"
                  " trigger_event, trigger_data, definition, step_count, ready_at, created_at,"
                  " depth, started_by, scopes) SELECT $1, $2, $3, $4, 'queued', $5, $6, $7,"
                  " CAST($8 AS TEXT), jsonb_array_length(CAST(CAST($8 AS TEXT) AS jsonb)),"
                  " CAST($9 AS BIGINT), CAST($9 AS BIGINT), CAST($10 AS BIGINT), CASE WHEN"
                  " CAST($11 AS BIGINT) = 1 THEN CAST($13 AS TEXT) ELSE created_by END, CASE WHEN"
                  " CAST($11 AS BIGINT) = 1 THEN CAST($12 AS BIGINT) ELSE scopes END FROM"
                  " workflows WHERE id = $2 AND org_id = $3 AND mode = $4",
    .run_steps = "INSERT INTO workflow_run_steps (run_id, idx, employee_id, action, status) SELECT"
                 " $1, e.ord - 1, e.step ->> 'employee_id', e.step ->> 'action', 'pending' FROM"
                 " jsonb_array_elements(CAST($2 AS jsonb)) WITH ORDINALITY AS e(step, ord)",
};

/* The queue statements in the dialect of the database of 's'. */
static const struct queue_sql *queue_sql(struct store *s)
{
    return db_dialect(s) == DB_POSTGRES ? &pg_queue : &sqlite_queue;
}

static int resumable(struct store *s, bool *found);

/* Whether anything is runnable at 'now', or due to be made so: read without a transaction,
 * so that an idle queue costs the writers nothing. */
static int queue_busy(struct store *s, int64_t now, bool *busy)
{
    struct db_stmt *st = db_prepare(s, queue_sql(s)->check);
    bool row = false;
    int rc;

    *busy = false;
    if (!st)
        return ERR_STORE;
    db_bind_int64(st, 1, now);
    rc = db_step(st, &row);
    if (!rc && row)
        *busy = db_int64(st, 0) != 0;
    db_done(st);
    return rc || *busy ? rc : resumable(s, busy);
}

/* When time next makes something runnable after 'now': a recurring task's occurrence, a
 * scheduled workflow's, or a retried step's backoff (0: nothing, or the read failed). */
static int64_t next_wake(struct store *s, int64_t now)
{
    struct db_stmt *st = db_prepare(s, queue_sql(s)->next_wake);
    bool row = false;
    int64_t at = 0;
    if (!st)
        return 0;
    db_bind_int64(st, 1, now);
    if (!db_step(st, &row) && row)
        at = db_int64(st, 0);
    db_done(st);
    return at >= (int64_t)9e18 ? 0 : at;
}

/* Recurring tasks whose occurrence has come and that are not waiting or running: pending. */
static int wake_recurring(struct store *s, int64_t now)
{
    const int64_t ints[] = {now};
    return db_run(s,
                  "UPDATE tasks SET status = 'pending', updated_at = $1 WHERE recurring IS NOT NULL"
                  " AND next_run_at <= $1 AND status IN ('completed', 'failed')",
                  NULL, 0, ints, 1);
}

/* See store_int.h. Held while that step's employee is offline. */
int wf_runs_to_step(struct store *s, const char *run_id, int64_t idx, int64_t ready_at)
{
    const char *texts[] = {run_id};
    const int64_t ints[] = {idx, ready_at};
    return db_run(
        s,
        "UPDATE workflow_runs SET next_step = $2, ready_at = $3, lease = NULL, lease_node = NULL,"
        " step_employee_id = (SELECT employee_id FROM workflow_run_steps WHERE run_id = $1"
        " AND idx = $2), held = coalesce((SELECT e.disabled FROM workflow_run_steps x JOIN"
        " employees e ON e.id = x.employee_id WHERE x.run_id = $1 AND x.idx = $2), FALSE)"
        " WHERE id = $1",
        texts, 1, ints, 2);
}

/* See store_int.h. */
int wf_runs_insert(struct store *s, const struct store_tenant *t, const struct store_wf_run *r)
{
    const struct queue_sql *q = queue_sql(s);
    int64_t n = 0;
    int rc;
    {
        /* $11: whoever started it gives the run its rights ($13 the key, $12 its scopes);
         * else the workflow's creator's */
        const char *texts[] = {
            r->id,           r->workflow_id,   t->org_id,       db_mode_name(t->mode),
            r->trigger_type, r->trigger_event, r->trigger_data, r->definition};
        struct db_stmt *st = db_prepare(s, q->run_insert);
        bool row;
        if (!st)
            return ERR_STORE;
        for (size_t i = 0; i < 8; i++)
            db_bind_text(st, (int)i + 1, texts[i]);
        db_bind_int64(st, 9, r->created_at);
        db_bind_int64(st, 10, r->depth);
        db_bind_int64(st, 11, r->own_rights ? 1 : 0);
        db_bind_int64(st, 12, (int64_t)r->scopes);
        db_bind_text(st, 13, r->started_by);
        rc = db_step(st, &row);
        if (!rc)
            n = db_changes(st);
        db_done(st);
    }
    if (!rc && n == 0)
        rc = ERR_NOT_FOUND;
    if (!rc) {
        const char *texts[] = {r->id, r->definition};
        rc = db_run(s, q->run_steps, texts, 2, NULL, 0);
    }
    if (!rc)
        rc = wf_runs_to_step(s, r->id, 0, r->created_at);
    if (!rc) {
        const char *texts[] = {r->workflow_id};
        const int64_t ints[] = {r->created_at};
        rc = db_run(
            s, "UPDATE workflows SET run_count = run_count + 1, last_run_at = $2 WHERE id = $1",
            texts, 1, ints, 1);
    }
    return rc;
}

/* A scheduled workflow whose occurrence has come (wake_schedules). */
struct due {
    struct store_tenant t;
    const char *id, *steps, *recurring;
    int64_t at;
};

/* The due scheduled workflows at 'now' into '*out' (the caller frees it; strings in 'a'). */
static int due_schedules(struct store *s, int64_t now, struct arena *a, struct due **out, size_t *n)
{
    struct db_stmt *st = db_prepare(s, queue_sql(s)->schedules);
    struct due *due = NULL;
    size_t cap = 0;
    bool row = false;
    int rc;

    *n = 0;
    if (!st) {
        *out = NULL;
        return ERR_STORE;
    }
    db_bind_int64(st, 1, now);
    while (!(rc = db_step(st, &row)) && row) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            due = xrealloc(due, cap * sizeof(*due));
        }
        memset(&due[*n], 0, sizeof(due[*n]));
        due[*n].id = db_arena_text(a, st, 0);
        db_copy(st, 1, due[*n].t.org_id, sizeof(due[*n].t.org_id));
        due[*n].t.mode = db_mode(db_text(st, 2));
        due[*n].steps = db_arena_text(a, st, 3);
        due[*n].recurring = db_arena_text(a, st, 4);
        due[*n].at = db_int64(st, 5);
        (*n)++;
    }
    db_done(st);
    *out = due;
    return rc;
}

/* Whether a run of tenant 't' may be queued: a live one needs a balance of rules->live_hold. */
static int schedule_gate(struct store *s, const struct store_tenant *t,
                         const struct store_queue_rules *rules, bool *refused)
{
    struct store_org org;
    int rc;

    *refused = false;
    if (t->mode != STORE_LIVE || !rules->no_credits)
        return 0;
    rc = orgs_get(s, t->org_id, &org);
    if (!rc)
        *refused = org.credits < rules->live_hold;
    return rc;
}

/* Every enabled scheduled workflow whose occurrence has come gets one queued run, and its
 * next occurrence after 'now' (missed occurrences make that one run). A live run the balance
 * gate refuses is recorded failed at once, as one queued by hand would be answered 402. */
static int wake_schedules(struct store *s, int64_t now, const struct store_queue_rules *rules)
{
    struct due *due = NULL;
    struct arena a;
    size_t n = 0;
    int rc;

    arena_init(&a);
    rc = due_schedules(s, now, &a, &due, &n);
    for (size_t i = 0; !rc && i < n; i++) {
        char run_id[ID_MAX], iso[32], data[64];
        struct store_wf_run r;
        memset(&r, 0, sizeof(r));
        rc = id_new("run", run_id, sizeof(run_id));
        if (rc)
            break;
        snprintf(data, sizeof(data), "{\"scheduled_at\":\"%s\"}",
                 clock_fmt_iso(due[i].at, iso, sizeof(iso)));
        r.id = run_id;
        r.workflow_id = due[i].id;
        r.trigger_type = "schedule";
        r.trigger_data = data;
        r.definition = due[i].steps;
        r.created_at = now;
        rc = wf_runs_insert(s, &due[i].t, &r);
        if (!rc) {
            bool refused = false;
            rc = schedule_gate(s, &due[i].t, rules, &refused);
            if (!rc && refused)
                rc = wf_runs_refuse(s, &due[i].t, run_id, rules->no_credits, now);
        }
        if (!rc) {
            const char *texts[] = {due[i].id};
            const int64_t ints[] = {rules->next_run(due[i].recurring, now)};
            rc = db_run(s,
                        "UPDATE workflows SET next_run_at = nullif(CAST($2 AS BIGINT), 0)"
                        " WHERE id = $1",
                        texts, 1, ints, 1);
        }
    }
    free(due);
    arena_cleanup(&a);
    return rc;
}

/* Start task 'out->task' (read from the head of the queue, and on PostgreSQL locked): in
 * progress with a new run, one credit reserved (live keys), the employee busy. */
static int claim_task(struct store *s, int64_t now, const struct store_queue_rules *rules,
                      struct store_task_claim *out)
{
    struct store_task *k = &out->task;
    int rc = id_new("trun", out->run_id, sizeof(out->run_id));
    if (rc)
        return rc;
    if (k->tenant.mode == STORE_LIVE && rules->live_hold > 0) {
        const struct credits_cause why = {STORE_CREDIT_TASK_RUN, "task_run", out->run_id,
                                          k->employee_id};
        rc = credits_hold(s, &k->tenant, rules->live_hold, &why, &out->reserved);
        if (rc)
            return rc;
        out->no_credits = !out->reserved;
    }
    k->next_run_at = k->recurring ? rules->next_run(k->recurring, now) : 0;
    {
        const char *texts[] = {out->run_id,      k->id,
                               k->tenant.org_id, db_mode_name(k->tenant.mode),
                               k->employee_id,   store_node_id()};
        const int64_t ints[] = {out->reserved ? rules->live_hold : 0, now};
        rc = db_run(
            s,
            "INSERT INTO task_runs (id, task_id, org_id, mode, employee_id, status, reserved,"
            " started_at, node_id) VALUES ($1, $2, $3, $4, $5, 'in_progress', $7, $8, $6)",
            texts, 6, ints, 2);
    }
    if (!rc) {
        const char *texts[] = {k->id, out->run_id};
        const int64_t ints[] = {now, k->next_run_at};
        rc = db_run(s,
                    "UPDATE tasks SET status = 'in_progress', run_id = $2, started_at = $3,"
                    " last_run_at = $3, run_count = run_count + 1, result = NULL, error = NULL,"
                    " completed_at = NULL, next_run_at = nullif(CAST($4 AS BIGINT), 0), run_now ="
                    " FALSE, updated_at = $3 WHERE id = $1",
                    texts, 2, ints, 2);
    }
    if (!rc)
        rc = employees_busy(s, &k->tenant, k->employee_id, 1);
    if (rc)
        return rc;
    k->status = "in_progress";
    k->run_id = out->run_id;
    k->started_at = k->last_run_at = now;
    k->run_count++;
    return 0;
}

/* The step claim 'out' of run 'run_id', as it stands after the writes of claim_step(). */
static int read_step_claim(struct store *s, const char *run_id, struct store_step_claim *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT r.org_id, r.mode, r.workflow_id, r.next_step,"
                                       " x.employee_id, x.attempts, CASE WHEN x.turn_state IS"
                                       " NULL THEN 0 ELSE 1 END FROM workflow_runs r JOIN"
                                       " workflow_run_steps x ON x.run_id = r.id AND x.idx ="
                                       " r.next_step WHERE r.id = $1");
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, run_id);
    rc = db_step(st, &row);
    if (!rc && row) {
        db_copy(st, 0, out->tenant.org_id, sizeof(out->tenant.org_id));
        out->tenant.mode = db_mode(db_text(st, 1));
        db_copy(st, 2, out->workflow_id, sizeof(out->workflow_id));
        out->step = db_int64(st, 3);
        db_copy(st, 4, out->employee_id, sizeof(out->employee_id));
        out->attempts = db_int64(st, 5);
        out->resumed = db_int64(st, 6) != 0; /* it waited, or went on and was cut */
        snprintf(out->run_id, sizeof(out->run_id), "%s", run_id);
    }
    db_done(st);
    if (!rc && !row) {
        log_error("store: step claim: run %s has no current step", run_id);
        rc = ERR_STORE;
    }
    return rc;
}

/* Take the current step of run 'run_id' (read from the head of the queue, and on PostgreSQL
 * locked) under a new lease: one more attempt, unless the step goes on after waiting for
 * approvals. */
static int claim_step(struct store *s, int64_t now, const char *run_id,
                      struct store_step_claim *out)
{
    int rc = id_new("lease", out->lease, sizeof(out->lease));
    if (rc)
        return rc;
    {
        const char *texts[] = {run_id, out->lease, store_node_id()};
        const int64_t ints[] = {now};
        rc = db_run(s,
                    "UPDATE workflow_runs SET status = 'running', started_at = coalesce(started_at,"
                    " $4), lease = $2, lease_node = $3 WHERE id = $1",
                    texts, 3, ints, 1);
    }
    if (!rc) {
        const char *texts[] = {run_id};
        const int64_t ints[] = {now};
        rc = db_run(s,
                    "UPDATE workflow_run_steps SET attempts = attempts + CASE WHEN status ="
                    " 'waiting_approval' THEN 0 ELSE 1 END, status = 'running', started_at ="
                    " coalesce(started_at, $2) WHERE run_id = $1 AND idx = (SELECT next_step FROM"
                    " workflow_runs WHERE id = $1)",
                    texts, 1, ints, 1);
    }
    if (!rc)
        rc = read_step_claim(s, run_id, out);
    if (!rc)
        rc = employees_busy(s, &out->tenant, out->employee_id, 1);
    return rc;
}

/* The head of organization 'org''s task queue into 'k' ('*have' says whether there is one). */
static int task_head(struct store *s, int64_t now, const char *org, struct arena *a,
                     struct store_task *k, bool *have)
{
    struct db_stmt *st = db_prepare(s, queue_sql(s)->task_head);
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_int64(st, 1, now);
    db_bind_text(st, 2, org);
    rc = db_step(st, have);
    if (!rc && *have)
        read_task(st, a, k);
    db_done(st);
    return rc;
}

/* The run of organization 'org' at the head of the step queue into 'run_id' and its
 * 'ready_at'. */
static int step_head(struct store *s, int64_t now, const char *org, char run_id[ID_MAX],
                     int64_t *ready_at, bool *have)
{
    struct db_stmt *st = db_prepare(s, queue_sql(s)->step_head);
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_int64(st, 1, now);
    db_bind_text(st, 2, org);
    rc = db_step(st, have);
    if (!rc && *have) {
        db_copy(st, 0, run_id, ID_MAX);
        *ready_at = db_int64(st, 1);
    }
    db_done(st);
    return rc;
}

/* Of a task 'k' and a step ready at 'ready_at' both at the head, whether the step runs first:
 * it runs as a medium-priority task without a due date, ready at 'ready_at'. */
static bool step_first(const struct store_task *k, int64_t ready_at)
{
    int64_t rank = prio_rank(k->priority), due = k->due_at > 0 ? k->due_at : INT64_MAX;
    const int64_t medium = prio_rank("medium");
    return rank > medium || (rank == medium && due == INT64_MAX && ready_at < k->created_at);
}

/* An organization with work runnable now, and its turn (larger: served more recently). */
struct turn {
    char org[ID_MAX];
    int64_t turn;
};

struct turns {
    struct turn *v;
    size_t n, cap;
};

/* Add the organizations that statement 'sql' ($1 now, $2 the organization after which to
 * look) finds, one index seek each, to 't' (a skip scan: however many rows each one has). */
static int orgs_of(struct store *s, const char *sql, int64_t now, struct turns *t)
{
    char after[ID_MAX] = "";
    for (;;) {
        struct db_stmt *st = db_prepare(s, sql);
        bool row = false, seen = false;
        int rc;
        if (!st)
            return ERR_STORE;
        db_bind_int64(st, 1, now);
        db_bind_text(st, 2, after);
        rc = db_step(st, &row);
        if (!rc && row)
            db_copy(st, 0, after, sizeof(after));
        db_done(st);
        if (rc || !row)
            return rc;
        for (size_t i = 0; i < t->n && !seen; i++)
            seen = strcmp(t->v[i].org, after) == 0;
        if (seen)
            continue;
        if (t->n == t->cap) {
            t->cap = t->cap ? 2 * t->cap : 8;
            t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
        }
        snprintf(t->v[t->n].org, sizeof(t->v[t->n].org), "%s", after);
        t->v[t->n++].turn = 0;
    }
}

static int turn_cmp(const void *pa, const void *pb)
{
    const struct turn *a = pa, *b = pb;
    if (a->turn != b->turn)
        return a->turn < b->turn ? -1 : 1;
    return strcmp(a->org, b->org);
}

/* The organizations with a runnable task or a ready step at 'now', the one served least
 * recently first (one never served: turn 0). The caller frees t->v. */
static int queue_turns(struct store *s, int64_t now, struct turns *t)
{
    const struct queue_sql *q = queue_sql(s);
    int rc = orgs_of(s, q->task_org, now, t);
    if (!rc)
        rc = orgs_of(s, q->step_org, now, t);
    for (size_t i = 0; !rc && i < t->n; i++) {
        struct db_stmt *st = db_prepare(s, "SELECT turn FROM queue_turns WHERE org_id = $1");
        bool row = false;
        if (!st)
            return ERR_STORE;
        db_bind_text(st, 1, t->v[i].org);
        rc = db_step(st, &row);
        if (!rc && row)
            t->v[i].turn = db_int64(st, 0);
        db_done(st);
    }
    if (!rc && t->n > 1)
        qsort(t->v, t->n, sizeof(*t->v), turn_cmp);
    return rc;
}

/* Organization 'org' was served: it takes the next turn (after every other's). */
static int served(struct store *s, const char *org)
{
    const char *texts[] = {org};
    return db_run(s,
                  "INSERT INTO queue_turns (org_id, turn) VALUES ($1, (SELECT coalesce(max(turn),"
                  " 0) + 1 FROM queue_turns)) ON CONFLICT (org_id) DO UPDATE SET turn ="
                  " excluded.turn",
                  texts, 1, NULL, 0);
}

/* Whether organization 'org' has work in progress: a task run, or a workflow step in flight
 * (a cancelled run's too). Both are as few as the workers of every node. */
static int org_busy(struct store *s, const char *org, bool *busy)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT CASE WHEN EXISTS (SELECT 1 FROM task_runs WHERE status = 'in_progress' AND"
           " org_id = $1) OR EXISTS (SELECT 1 FROM workflow_runs WHERE lease IS NOT NULL AND"
           " org_id = $1) THEN 1 ELSE 0 END");
    bool row = false;
    int rc;

    *busy = false;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org);
    rc = db_step(st, &row);
    if (!rc && row)
        *busy = db_int64(st, 0) != 0;
    db_done(st);
    return rc;
}

/* For a node's last free worker (idle_only): whether its claim can find anything, read
 * without a transaction so that looking costs the writers nothing: something time made
 * runnable (the claim wakes it), or runnable work of an organization with none in progress. */
static int idle_work(struct store *s, int64_t now, bool *found)
{
    struct turns t = {NULL, 0, 0};
    struct db_stmt *st = db_prepare(s, queue_sql(s)->wakes);
    bool row = false;
    int rc;

    *found = false;
    if (!st)
        return ERR_STORE;
    db_bind_int64(st, 1, now);
    rc = db_step(st, &row);
    if (!rc && row)
        *found = db_int64(st, 0) != 0;
    db_done(st);
    if (!rc && !*found)
        rc = resumable(s, found); /* the claim looks at its organization */
    if (rc || *found)
        return rc;
    rc = queue_turns(s, now, &t);
    for (size_t i = 0; !rc && !*found && i < t.n; i++) {
        bool busy = false;
        rc = org_busy(s, t.v[i].org, &busy);
        *found = !busy;
    }
    free(t.v);
    return rc;
}

/* ---- Runs and steps that waited for approvals (contract §19) ---- */

/* A task run waiting for approvals, none of them pending any more, whose employee is not
 * offline; a workflow run's step likewise (its run running, no step in flight). */
#define RESUMABLE_TASK                                                                             \
    " FROM task_runs r JOIN tasks t ON t.id = r.task_id WHERE r.status = 'waiting_approval' AND"   \
    " t.held = FALSE AND NOT EXISTS (SELECT 1 FROM approvals p WHERE p.task_run_id = r.id AND"     \
    " p.status = 'pending')"
#define RESUMABLE_STEP                                                                             \
    " FROM workflow_run_steps x JOIN workflow_runs r ON r.id = x.run_id AND r.next_step = x.idx"   \
    " WHERE x.status = 'waiting_approval' AND r.status = 'running' AND r.lease IS NULL AND"        \
    " r.held = FALSE AND NOT EXISTS (SELECT 1 FROM approvals p WHERE p.workflow_run_id ="          \
    " x.run_id AND p.step_index = x.idx AND p.status = 'pending')"
/* On PostgreSQL the row a claim takes is locked as it is read; one another node is taking is
 * passed over (see the top of the file). */
#define PG_TAKE " FOR UPDATE OF r SKIP LOCKED"
#define RESUMABLE_HEAD_TASK                                                                        \
    "SELECT r.id, r.org_id" RESUMABLE_TASK " ORDER BY r.started_at, r.id LIMIT 1"
#define RESUMABLE_HEAD_STEP "SELECT r.id, r.org_id" RESUMABLE_STEP " ORDER BY r.id LIMIT 1"

/* Whether a run or a step can go on after its approvals (read without a transaction). */
static int resumable(struct store *s, bool *found)
{
    struct db_stmt *st = db_prepare(s, "SELECT CASE WHEN EXISTS (SELECT 1" RESUMABLE_TASK ") OR"
                                       " EXISTS (SELECT 1" RESUMABLE_STEP ") THEN 1 ELSE 0 END");
    bool row = false;
    int rc;

    *found = false;
    if (!st)
        return ERR_STORE;
    rc = db_step(st, &row);
    if (!rc && row)
        *found = db_int64(st, 0) != 0;
    db_done(st);
    return rc;
}

/* The first row of 'sql' (a resumable head): its id into 'id' and its organization into
 * 'org' ('*have' says whether there is one). */
static int resumable_head(struct store *s, const char *sql, char id[ID_MAX], char org[ID_MAX],
                          bool *have)
{
    struct db_stmt *st = db_prepare(s, sql);
    int rc;
    if (!st)
        return ERR_STORE;
    rc = db_step(st, have);
    if (!rc && *have) {
        db_copy(st, 0, id, ID_MAX);
        db_copy(st, 1, org, ID_MAX);
    }
    db_done(st);
    return rc;
}

/* Task run 'run_id' goes on (read as resumable, and on PostgreSQL locked): in progress again
 * under this node, a credit held again (live keys), the employee busy; 'out' its claim. */
static int claim_task_resume(struct store *s, const struct store_queue_rules *rules,
                             const char *run_id, struct arena *a, struct store_task_claim *out)
{
    const char *texts[] = {run_id, store_node_id()};
    struct store_task *k = &out->task;
    struct db_stmt *st;
    bool row = false;
    int rc = db_run(s,
                    "UPDATE task_runs SET status = 'in_progress', node_id = $2 WHERE id = $1 AND"
                    " status = 'waiting_approval'",
                    texts, 2, NULL, 0);

    if (rc)
        return rc;
    st = db_prepare(s, "SELECT " TASK_COLS " FROM tasks t WHERE t.id = (SELECT task_id FROM"
                       " task_runs WHERE id = $1)");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, run_id);
    rc = db_step(st, &row);
    if (!rc && row)
        read_task(st, a, k);
    db_done(st);
    if (!rc && !row)
        rc = ERR_STORE; /* the join that found it says it is there */
    if (rc)
        return rc;
    snprintf(out->run_id, sizeof(out->run_id), "%s", run_id);
    out->resumed = true;
    if (k->tenant.mode == STORE_LIVE && rules->live_hold > 0) {
        const struct credits_cause why = {STORE_CREDIT_TASK_RUN, "task_run", out->run_id,
                                          k->employee_id};
        rc = credits_hold(s, &k->tenant, rules->live_hold, &why, &out->reserved);
        if (!rc && out->reserved) {
            const int64_t ints[] = {rules->live_hold};
            rc = db_run(s, "UPDATE task_runs SET reserved = $2 WHERE id = $1", texts, 1, ints, 1);
        }
        out->no_credits = !out->reserved;
    }
    if (!rc)
        rc = employees_busy(s, &k->tenant, k->employee_id, 1);
    return rc;
}

/*
 * Before the queues: a task run or a workflow step whose approvals are all decided goes on
 * ('*took'), the run first, each the one that has waited longest; with 'idle_only', only one
 * of an organization with no work in progress. They are few (each waited for a person), so
 * they pass the round-robin, but their organization counts as served.
 */
static int claim_resumed(struct store *s, int64_t now, const struct store_queue_rules *rules,
                         bool idle_only, struct arena *a, struct store_claim *out, bool *took)
{
    bool pg = db_dialect(s) == DB_POSTGRES;
    const char *heads[] = {pg ? RESUMABLE_HEAD_TASK PG_TAKE : RESUMABLE_HEAD_TASK,
                           pg ? RESUMABLE_HEAD_STEP PG_TAKE : RESUMABLE_HEAD_STEP};
    char id[ID_MAX], org[ID_MAX];
    int rc = 0;

    *took = false;
    for (size_t i = 0; !rc && !*took && i < 2; i++) {
        bool have = false, busy = false;
        rc = resumable_head(s, heads[i], id, org, &have);
        if (!rc && have && idle_only)
            rc = org_busy(s, org, &busy);
        if (rc || !have || busy)
            continue;
        *took = true;
        if (i == 0) {
            rc = claim_task_resume(s, rules, id, a, &out->task);
        } else {
            out->is_step = true;
            rc = claim_step(s, now, id, &out->step);
        }
        if (!rc)
            rc = served(s, org);
    }
    return rc;
}

/* Start the unit of work of organization 'org' that runs first by the contract's order (its
 * head task, or its head step as a medium-priority task); '*took' whether it had one (on
 * PostgreSQL, rows another node is taking are passed over). */
static int claim_org(struct store *s, int64_t now, const char *org,
                     const struct store_queue_rules *rules, struct arena *a,
                     struct store_claim *out, bool *took)
{
    char run_id[ID_MAX] = "";
    bool have_task = false, have_step = false;
    int64_t ready_at = 0;
    int rc = task_head(s, now, org, a, &out->task.task, &have_task);

    if (!rc)
        rc = step_head(s, now, org, run_id, &ready_at, &have_step);
    if (rc)
        return rc;
    if (have_task && have_step) {
        if (step_first(&out->task.task, ready_at))
            have_task = false;
        else
            have_step = false;
    }
    *took = have_task || have_step;
    /* On PostgreSQL a task written after this claim read the clock is seen by its later
     * statements (and another node's clock may be behind this one's): its run starts no
     * earlier than that write. (A step is ready at or before 'now': the query says so.) */
    if (have_task)
        return claim_task(s, now > out->task.task.updated_at ? now : out->task.task.updated_at,
                          rules, &out->task);
    if (have_step) {
        out->is_step = true;
        return claim_step(s, now, run_id, &out->step);
    }
    return 0;
}

/*
 * Inside the claim's transaction: wake what time made runnable, take a run or step that can
 * go on after its approvals (claim_resumed), else serve the organization
 * served least recently among those with runnable work (round-robin between organizations),
 * and within it, the contract's order. Tasks and runs of offline employees are not in the
 * queue indexes; a recurring task waiting for its first occurrence is skipped.
 */
static int claim_in(struct store *s, int64_t now, const struct store_queue_rules *rules,
                    bool idle_only, struct arena *a, struct store_claim *out, int64_t *wake_at)
{
    struct turns t = {NULL, 0, 0};
    bool took = false;
    int rc = wake_recurring(s, now);

    if (!rc)
        rc = wake_schedules(s, now, rules);
    if (!rc)
        rc = claim_resumed(s, now, rules, idle_only, a, out, &took);
    if (!rc && took)
        return 0;
    if (!rc)
        rc = queue_turns(s, now, &t);
    for (size_t i = 0; !rc && !took && i < t.n; i++) {
        bool busy = false;
        if (idle_only) {
            rc = org_busy(s, t.v[i].org, &busy);
            if (rc || busy)
                continue;
        }
        rc = claim_org(s, now, t.v[i].org, rules, a, out, &took);
        if (!rc && took)
            rc = served(s, t.v[i].org);
    }
    free(t.v);
    if (rc || took)
        return rc;
    *wake_at = next_wake(s, now);
    return ERR_NOT_FOUND;
}

/* See store_int.h. */
int tasks_claim(struct store *s, int64_t now, const struct store_queue_rules *rules, bool idle_only,
                struct arena *a, struct store_claim *out, int64_t *wake_at)
{
    bool busy = false;
    int rc;

    memset(out, 0, sizeof(*out));
    *wake_at = 0;
    rc = queue_busy(s, now ? now : clock_now_ms(), &busy);
    if (!rc && busy && idle_only)
        rc = idle_work(s, now ? now : clock_now_ms(), &busy);
    if (rc)
        return rc;
    if (!busy) {
        *wake_at = next_wake(s, now ? now : clock_now_ms());
        return ERR_NOT_FOUND;
    }
    rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    /* Read the clock once the transaction has begun: on SQLite it holds the write lock, so no
     * task created after this reading is committed yet, and no run starts before its task
     * was created. */
    if (now == 0)
        now = clock_now_ms();
    rc = claim_in(s, now, rules, idle_only, a, out, wake_at);
    if (rc == 0 || rc == ERR_NOT_FOUND) {
        /* Nothing to take still commits what was woken. */
        int crc = db_commit(s);
        if (!crc)
            return rc;
        rc = crc;
    }
    db_rollback(s);
    return rc;
}

/* The nodes that count as alive (nodes.c): the caller ($1) and those that beat since $2. */
#define DEAD(col)                                                                                  \
    "(" col " IS NULL OR " col " NOT IN (SELECT id FROM nodes WHERE id = $1 OR"                    \
    " heartbeat_at >= $2))"

/* A run of a dead node, read before it is taken back. */
struct cut_run {
    char id[ID_MAX], task_id[ID_MAX], employee_id[ID_MAX];
    struct store_tenant tenant;
    int64_t reserved;
};

/* The runs statement 'st' (bound) changes and returns (id, task_id, org_id, reserved,
 * employee_id, mode), added
 * to '*cut' (grown: '*n' of '*cap'); ends 'st'. */
static int read_cut(struct db_stmt *st, struct cut_run **cut, size_t *n, size_t *cap)
{
    bool row = false;
    int rc;
    while (!(rc = db_step(st, &row)) && row) {
        struct cut_run *c;
        if (*n == *cap) {
            *cap = *cap ? 2 * *cap : 16;
            *cut = xrealloc(*cut, *cap * sizeof(**cut));
        }
        c = &(*cut)[(*n)++];
        db_copy(st, 0, c->id, sizeof(c->id));
        db_copy(st, 1, c->task_id, sizeof(c->task_id));
        db_copy(st, 2, c->tenant.org_id, sizeof(c->tenant.org_id));
        c->reserved = db_int64(st, 3);
        db_copy(st, 4, c->employee_id, sizeof(c->employee_id));
        c->tenant.mode = db_mode(db_text(st, 5));
    }
    db_done(st);
    return rc;
}

/*
 * See store_int.h. The runs are ended first, and only the rows this statement changed are then
 * refunded and queued again: on PostgreSQL a second node taking back at the same time waits for
 * the first's row locks and then finds the runs no longer in progress.
 */
int tasks_take_back(struct store *s, const char *self, int64_t now, int64_t dead_before, size_t *n,
                    size_t *steps)
{
    const char *me[] = {self};
    const int64_t ints[] = {dead_before, now};
    struct cut_run *cut = NULL;
    size_t ncut = 0, cap = 0, nwait;
    struct db_stmt *st;
    int64_t leases = 0;
    int rc;

    *n = *steps = 0;
    /* A run that had gone on after waiting for approvals waits again, out of any node: it is
     * taken up again from its journal (its calls left running end "interrupted"), not run
     * again. Its held credit comes back below. */
    st = db_prepare(s, "UPDATE task_runs SET status = 'waiting_approval', node_id = NULL WHERE"
                       " status = 'in_progress' AND turn_state IS NOT NULL AND " DEAD(
                           "node_id") " RETURNING id, task_id, org_id, reserved,"
                                      " employee_id, mode");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, me[0]);
    db_bind_int64(st, 2, dead_before);
    rc = read_cut(st, &cut, &ncut, &cap);
    nwait = ncut;
    if (rc) {
        free(cut);
        return rc;
    }
    st = db_prepare(s, "UPDATE task_runs SET status = 'failed', completed_at = $3, error ="
                       " 'Interrupted: the server running it stopped; the task runs again.'"
                       " WHERE status = 'in_progress' AND " DEAD(
                           "node_id") " RETURNING id, task_id, org_id, reserved,"
                                      " employee_id, mode");
    if (!st) {
        free(cut);
        return ERR_STORE;
    }
    db_bind_text(st, 1, me[0]);
    db_bind_int64(st, 2, dead_before);
    db_bind_int64(st, 3, now);
    rc = read_cut(st, &cut, &ncut, &cap);
    /* Reserved credits back, and the tasks pending again (a recurring one at once: its
     * interrupted occurrence runs again); a run that waits again keeps its task. */
    for (size_t i = 0; !rc && i < ncut; i++) {
        const char *run[] = {cut[i].id, cut[i].task_id};
        const int64_t at[] = {now};
        if (cut[i].reserved > 0) {
            const struct credits_cause why = {STORE_CREDIT_TASK_RUN, "task_run", cut[i].id,
                                              cut[i].employee_id};
            int64_t back;
            rc = credits_apply(s, &cut[i].tenant, CREDITS_ADD, cut[i].reserved, &why, &back);
            if (!rc)
                rc = db_run(s, "UPDATE task_runs SET reserved = 0 WHERE id = $1", run, 1, NULL, 0);
        }
        if (!rc && i >= nwait)
            rc = db_run(s,
                        "UPDATE tasks SET status = 'pending', run_id = NULL, updated_at = $3,"
                        " run_now = TRUE WHERE id = $2 AND run_id = $1",
                        run, 2, at, 1);
    }
    free(cut);
    /* Workflow steps in flight: ready again, their cut attempt not counted (a cancelled run's
     * step in flight ends cancelled instead). */
    if (!rc)
        rc = db_run(s,
                    "UPDATE workflow_run_steps SET status = CASE WHEN (SELECT r.status FROM"
                    " workflow_runs r WHERE r.id = workflow_run_steps.run_id) = 'cancelled' THEN"
                    " 'cancelled' ELSE 'pending' END, attempts = CASE WHEN attempts > 1 THEN"
                    " attempts - 1 ELSE 0 END, completed_at = CASE WHEN (SELECT r.status FROM"
                    " workflow_runs r WHERE r.id = workflow_run_steps.run_id) = 'cancelled' THEN"
                    " CAST($3 AS BIGINT) END WHERE status = 'running' AND run_id IN (SELECT id"
                    " FROM workflow_runs WHERE lease IS NOT NULL AND " DEAD("lease_node") ")",
                    me, 1, ints, 2);
    if (!rc)
        rc = run_n(s,
                   "UPDATE workflow_runs SET lease = NULL, lease_node = NULL, ready_at = $3 WHERE"
                   " lease IS NOT NULL AND status IN ('queued', 'running') AND " DEAD("lease_node"),
                   me, 1, ints, 2, &leases);
    if (!rc)
        rc = db_run(s,
                    "UPDATE workflow_runs SET lease = NULL, lease_node = NULL WHERE lease IS NOT"
                    " NULL AND " DEAD("lease_node"),
                    me, 1, ints, 1);
    if (rc)
        return rc;
    *n = ncut;
    *steps = (size_t)leases;
    return 0;
}
