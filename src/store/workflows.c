/* SPDX-License-Identifier: MIT */
/*
 * workflows.c: workflows, their runs (queue, read, list, cancel) and the end of a run's step,
 * written once over the driver (driver.h). The queue itself (a run's insert, pointing it at a
 * step, the claim) is the tasks' code (tasks.c: wf_runs_insert(), wf_runs_to_step()).
 *
 * A run and its steps are read in one read transaction, so that they agree. A change that
 * depends on a run's status and lease (cancel, a step's end) reads them with the row locked:
 * on SQLite the write transaction already holds the database's one write lock, on PostgreSQL
 * the read takes the row (FOR UPDATE), so a cancel and a step's end that race are applied one
 * after the other, each to what the other left. Parameters given to nullif() or CASE are cast
 * to BIGINT, as PostgreSQL would infer a 32-bit integer (or text) for a time in ms, and an
 * optional one tested with IS NULL before its typed use is cast to TEXT there, as PostgreSQL
 * cannot type a parameter from "$n IS NULL" alone.
 */
#include "store_int.h"

#include <string.h>

/* ---- Workflows ---- */

/* See store_int.h. */
void workflows_read(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_workflow *w = pout;
    memset(w, 0, sizeof(*w));
    w->id = db_arena_text(a, st, 0);
    w->name = db_arena_text(a, st, 1);
    w->description = db_arena_text(a, st, 2);
    w->trigger_type = db_arena_text(a, st, 3);
    w->trigger = db_arena_text(a, st, 4);
    w->steps = db_arena_text(a, st, 5);
    w->webhook_token = db_arena_text(a, st, 6);
    w->recurring = db_arena_text(a, st, 7);
    w->next_run_at = db_int64(st, 8);
    w->enabled = db_int64(st, 9) != 0;
    w->run_count = db_int64(st, 10);
    w->last_run_at = db_int64(st, 11);
    w->created_at = db_int64(st, 12);
    w->updated_at = db_int64(st, 13);
    db_copy(st, 14, w->tenant.org_id, sizeof(w->tenant.org_id));
    w->tenant.mode = db_mode(db_text(st, 15));
}

/* See store_int.h. */
int workflows_create(struct store *s, const struct store_tenant *t, const struct store_workflow *w)
{
    const char *texts[] = {
        w->id,      t->org_id, db_mode_name(t->mode), w->name,      w->description, w->trigger_type,
        w->trigger, w->steps,  w->webhook_token,      w->recurring, w->created_by};
    const int64_t ints[] = {w->next_run_at, w->enabled ? 1 : 0, w->created_at, w->updated_at,
                            (int64_t)w->scopes};
    return db_run(s,
                  "INSERT INTO workflows (id, org_id, mode, name, description, trigger_type,"
                  " trigger, steps, webhook_token, recurring, created_by, next_run_at, enabled,"
                  " created_at, updated_at, scopes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9,"
                  " $10, $11, nullif(CAST($12 AS BIGINT), 0), $13, $14, $15, $16)",
                  texts, 11, ints, 5);
}

/* See store_int.h. */
int workflows_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                  struct store_workflow *out)
{
    const char *texts[] = {id};
    return db_one(s,
                  "SELECT " WF_COLS " FROM workflows WHERE org_id = $1 AND mode = $2 AND id = $3",
                  t, texts, 1, workflows_read, a, out);
}

/* See store_int.h. */
int workflows_by_token(struct store *s, const char *token, struct arena *a,
                       struct store_workflow *out)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT " WF_COLS " FROM workflows WHERE webhook_token = $1");
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, token);
    rc = db_step(st, &row);
    if (!rc && row)
        workflows_read(st, a, out);
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. */
int workflows_list(struct store *s, const struct store_tenant *t, unsigned limit,
                   int64_t before_created, const char *before_id, struct arena *a,
                   struct store_workflow_page *out)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT " WF_COLS " FROM workflows WHERE org_id = $1 AND"
                      " mode = $2 AND (CAST($4 AS TEXT) IS NULL OR (created_at, id) < ($3, $4))"
                      " ORDER BY created_at DESC, id DESC LIMIT $5");
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_int64(st, 3, before_created);
    db_bind_text(st, 4, before_id);
    db_bind_int64(st, 5, (int64_t)limit + 1);
    out->items = arena_alloc(a, ((size_t)limit + 1) * sizeof(*out->items));
    while (!(rc = db_step(st, &row)) && row) {
        if (out->n == limit) {
            out->has_more = true;
            break;
        }
        workflows_read(st, a, &out->items[out->n++]);
    }
    db_done(st);
    return rc;
}

/* See store_int.h. */
int workflows_update(struct store *s, const struct store_tenant *t, const struct store_workflow *w)
{
    struct db_stmt *st =
        db_prepare(s, "UPDATE workflows SET name = $4, description = $5, trigger_type = $6,"
                      " trigger = $7, steps = $8, webhook_token = $9, recurring = $10,"
                      " next_run_at = nullif(CAST($11 AS BIGINT), 0), enabled = $12,"
                      " updated_at = $13 WHERE id = $1 AND org_id = $2 AND mode = $3");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, w->id);
    db_bind_text(st, 2, t->org_id);
    db_bind_text(st, 3, db_mode_name(t->mode));
    db_bind_text(st, 4, w->name);
    db_bind_text(st, 5, w->description);
    db_bind_text(st, 6, w->trigger_type);
    db_bind_text(st, 7, w->trigger);
    db_bind_text(st, 8, w->steps);
    db_bind_text(st, 9, w->webhook_token);
    db_bind_text(st, 10, w->recurring);
    db_bind_int64(st, 11, w->next_run_at);
    db_bind_int64(st, 12, w->enabled ? 1 : 0);
    db_bind_int64(st, 13, w->updated_at);
    return db_exec_one(st);
}

/* See store_int.h. */
int workflows_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    struct db_stmt *st =
        db_prepare(s, "DELETE FROM workflows WHERE org_id = $1 AND mode = $2 AND id = $3");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, id);
    return db_exec_one(st);
}

/* ---- Workflow runs ---- */

#define RUN_COLS                                                                                   \
    "id, workflow_id, status, trigger_type, trigger_event, trigger_data, definition, error,"       \
    " credits_used, created_at, coalesce(started_at, 0), coalesce(completed_at, 0), next_step,"    \
    " step_count, org_id, mode, depth, started_by, scopes"

static void read_run(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_wf_run *r = pout;
    memset(r, 0, sizeof(*r));
    r->id = db_arena_text(a, st, 0);
    r->workflow_id = db_arena_text(a, st, 1);
    r->status = db_arena_text(a, st, 2);
    r->trigger_type = db_arena_text(a, st, 3);
    r->trigger_event = db_arena_text(a, st, 4);
    r->trigger_data = db_arena_text(a, st, 5);
    r->definition = db_arena_text(a, st, 6);
    r->error = db_arena_text(a, st, 7);
    r->credits_used = db_int64(st, 8);
    r->created_at = db_int64(st, 9);
    r->started_at = db_int64(st, 10);
    r->completed_at = db_int64(st, 11);
    r->next_step = db_int64(st, 12);
    /* The step count sizes 'steps' (read_run_steps). */
    r->nsteps = (size_t)db_int64(st, 13);
    db_copy(st, 14, r->tenant.org_id, sizeof(r->tenant.org_id));
    r->tenant.mode = db_mode(db_text(st, 15));
    r->depth = db_int64(st, 16);
    r->started_by = db_arena_text(a, st, 17);
    r->scopes = (uint32_t)db_int64(st, 18);
}

/* The tool calls of the steps of 'r' (read), each step's into it. */
static int read_run_calls(struct store *s, struct arena *a, struct store_wf_run *r)
{
    struct store_tool_call *calls = NULL;
    size_t n = 0, k = 0;
    int rc = tool_calls_of_wf_run(s, r->id, STORE_RUN_CALLS_MAX, a, &calls, &n);

    while (!rc && k < n) {
        size_t first = k;
        int64_t i = calls[k].step_index;
        while (k < n && calls[k].step_index == i)
            k++;
        if (i >= 0 && (size_t)i < r->nsteps) {
            r->steps[i].calls = calls + first;
            r->steps[i].ncalls = k - first;
        }
    }
    return rc;
}

/* The steps of 'r' (its 'nsteps' says how many there are), in order, with their calls. */
static int read_run_steps(struct store *s, struct arena *a, struct store_wf_run *r)
{
    struct db_stmt *st;
    size_t cap = r->nsteps;
    bool row = false;
    int rc;

    r->steps = arena_alloc(a, (cap ? cap : 1) * sizeof(*r->steps));
    r->nsteps = 0;
    st = db_prepare(s, "SELECT employee_id, action, status, input, output, error, attempts,"
                       " credits_used, coalesce(started_at, 0), coalesce(completed_at, 0),"
                       " stop_reason FROM workflow_run_steps WHERE run_id = $1 ORDER BY idx");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, r->id);
    while (!(rc = db_step(st, &row)) && row && r->nsteps < cap) {
        struct store_run_step *x = &r->steps[r->nsteps++];
        x->employee_id = db_arena_text(a, st, 0);
        x->action = db_arena_text(a, st, 1);
        x->status = db_arena_text(a, st, 2);
        x->input = db_arena_text(a, st, 3);
        x->output = db_arena_text(a, st, 4);
        x->error = db_arena_text(a, st, 5);
        x->attempts = db_int64(st, 6);
        x->credits_used = db_int64(st, 7);
        x->started_at = db_int64(st, 8);
        x->completed_at = db_int64(st, 9);
        x->stop_reason = db_arena_text(a, st, 10);
        x->calls = NULL;
        x->ncalls = 0;
    }
    db_done(st);
    return rc ? rc : read_run_calls(s, a, r);
}

/* Run 'run_id' of the tenant and workflow with its steps, inside the caller's transaction. */
static int run_get(struct store *s, const struct store_tenant *t, const char *workflow_id,
                   const char *run_id, struct arena *a, struct store_wf_run *out)
{
    const char *texts[] = {workflow_id, run_id};
    int rc = db_one(s,
                    "SELECT " RUN_COLS " FROM workflow_runs WHERE org_id = $1 AND mode = $2"
                    " AND workflow_id = $3 AND id = $4",
                    t, texts, 2, read_run, a, out);
    return rc ? rc : read_run_steps(s, a, out);
}

/* See store_int.h. */
int wf_run_read(struct store *s, const struct store_tenant *t, const char *run_id, struct arena *a,
                struct store_wf_run *out)
{
    char workflow_id[ID_MAX] = "";
    const char *texts[] = {run_id};
    struct db_stmt *st = db_prepare(s, "SELECT workflow_id FROM workflow_runs WHERE id = $1");
    bool row = false;
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, texts[0]);
    rc = db_step(st, &row);
    if (!rc && row)
        db_copy(st, 0, workflow_id, sizeof(workflow_id));
    db_done(st);
    if (!rc && !row)
        rc = ERR_NOT_FOUND;
    return rc ? rc : run_get(s, t, workflow_id, run_id, a, out);
}

/* See store_int.h. */
int workflow_runs_create(struct store *s, const struct store_tenant *t,
                         const struct store_wf_run *r, struct arena *a, struct store_wf_run *out)
{
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = wf_runs_insert(s, t, r);
    if (!rc && out)
        rc = run_get(s, t, r->workflow_id, r->id, a, out);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* End the read transaction of a read that ended with 'rc': its result, or ERR_STORE when a
 * successful read could not commit. */
static int read_end(struct store *s, int rc)
{
    if ((rc ? db_rollback(s) : db_commit(s)) && !rc)
        rc = ERR_STORE;
    return rc;
}

/* See store_int.h. A run and its steps are read in one read transaction, so that they agree: a
 * step ending between the two reads would show a running run with every step ended, or credits
 * that do not add up. */
int workflow_runs_get(struct store *s, const struct store_tenant *t, const char *workflow_id,
                      const char *run_id, struct arena *a, struct store_wf_run *out)
{
    int rc = db_begin(s, DB_TX_READ);
    if (rc)
        return rc;
    return read_end(s, run_get(s, t, workflow_id, run_id, a, out));
}

/* One page of the runs of 'workflow_id' with their steps, inside the caller's transaction. */
static int run_page(struct store *s, const struct store_tenant *t, const char *workflow_id,
                    unsigned limit, int64_t before_created, const char *before_id, struct arena *a,
                    struct store_wf_run_page *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT " RUN_COLS " FROM workflow_runs WHERE"
                                       " workflow_id = $3 AND org_id = $1 AND mode = $2 AND"
                                       " (CAST($5 AS TEXT) IS NULL OR (created_at, id) < ($4, $5))"
                                       " ORDER BY created_at DESC, id DESC LIMIT $6");
    bool row = false;
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, workflow_id);
    db_bind_int64(st, 4, before_created);
    db_bind_text(st, 5, before_id);
    db_bind_int64(st, 6, (int64_t)limit + 1);
    out->items = arena_alloc(a, ((size_t)limit + 1) * sizeof(*out->items));
    while (!(rc = db_step(st, &row)) && row) {
        if (out->n == limit) {
            out->has_more = true;
            break;
        }
        read_run(st, a, &out->items[out->n++]);
    }
    db_done(st);
    for (size_t i = 0; !rc && i < out->n; i++)
        rc = read_run_steps(s, a, &out->items[i]);
    return rc;
}

/* See store_int.h. One read transaction, as workflow_runs_get(). */
int workflow_runs_list(struct store *s, const struct store_tenant *t, const char *workflow_id,
                       unsigned limit, int64_t before_created, const char *before_id,
                       struct arena *a, struct store_wf_run_page *out)
{
    int rc;

    memset(out, 0, sizeof(*out));
    rc = db_begin(s, DB_TX_READ);
    if (rc)
        return rc;
    return read_end(s, run_page(s, t, workflow_id, limit, before_created, before_id, a, out));
}

/* The status and lease of a run; PostgreSQL locks the row until the transaction ends (SQLite's
 * write transaction already excludes every other writer). */
#define RUN_STATE                                                                                  \
    "SELECT status, lease FROM workflow_runs WHERE org_id = $1 AND mode = $2 AND id = $3"          \
    " AND (CAST($4 AS TEXT) IS NULL OR workflow_id = $4)"

/* The status of run 'run_id' of the tenant and workflow (NULL: any) into 'status' ("" when
 * there is no such run), and its lease ("" when none); the row stays locked until the caller's
 * write transaction ends. */
static int run_state(struct store *s, const struct store_tenant *t, const char *workflow_id,
                     const char *run_id, char *status, size_t n, char *lease, size_t ln)
{
    struct db_stmt *st =
        db_prepare(s, db_dialect(s) == DB_POSTGRES ? RUN_STATE " FOR UPDATE" : RUN_STATE);
    bool row = false;
    int rc;

    *status = *lease = '\0';
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, run_id);
    db_bind_text(st, 4, workflow_id);
    rc = db_step(st, &row);
    if (!rc && row) {
        db_copy(st, 0, status, n);
        db_copy(st, 1, lease, ln);
    }
    db_done(st);
    return rc;
}

/* See store_int.h. */
int workflow_runs_cancel(struct store *s, const struct store_tenant *t, const char *workflow_id,
                         const char *run_id, int64_t now)
{
    char status[16], lease[ID_MAX];
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = run_state(s, t, workflow_id, run_id, status, sizeof(status), lease, sizeof(lease));
    if (!rc && !*status)
        rc = ERR_NOT_FOUND;
    else if (!rc && strcmp(status, "queued") != 0 && strcmp(status, "running") != 0)
        rc = ERR_CONFLICT;
    if (!rc) {
        const char *texts[] = {run_id};
        const int64_t ints[] = {now};
        rc = db_run(
            s, "UPDATE workflow_runs SET status = 'cancelled', completed_at = $2 WHERE id = $1",
            texts, 1, ints, 1);
        if (!rc)
            rc = db_run(s,
                        "UPDATE workflow_run_steps SET status = 'cancelled', completed_at = $2,"
                        " turn_state = NULL WHERE run_id = $1 AND status IN ('pending',"
                        " 'waiting_approval')",
                        texts, 1, ints, 1);
    }
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* ---- The end of a step ---- */

static const char *const step_status[] = {
    [STORE_STEP_COMPLETED] = "completed",
    [STORE_STEP_SKIPPED] = "skipped",
    [STORE_STEP_RETRY] = "pending",
    [STORE_STEP_FAILED] = "failed",
    [STORE_STEP_WAITING] = "waiting_approval",
};

/* The ready_at of a run whose step waits for approvals: no clock reaches it, so the run is out
 * of the step queue (the queue's claim takes it once none of the approvals is pending; see
 * sql/022_run_approvals.sql). */
#define WAITING_READY_AT INT64_C(9000000000000000000)

/* The run fails at step 'c->step' with 'error': its later pending steps end cancelled. */
static int run_fail(struct store *s, const struct store_step_claim *c, const char *error,
                    int64_t now)
{
    const char *texts[] = {c->run_id, error};
    const int64_t ints[] = {c->step, now};
    int rc = db_run(s,
                    "UPDATE workflow_run_steps SET status = 'cancelled', completed_at = $3 WHERE"
                    " run_id = $1 AND idx > $2 AND status = 'pending'",
                    texts, 1, ints, 2);
    if (!rc)
        rc = db_run(s,
                    "UPDATE workflow_runs SET status = 'failed', error = 'steps[' ||"
                    " CAST($3 AS TEXT) || ']: ' || coalesce($2, 'failed'), completed_at = $4,"
                    " lease = NULL WHERE id = $1",
                    texts, 2, ints, 2);
    return rc;
}

/* See store_int.h. */
int wf_runs_refuse(struct store *s, const struct store_tenant *t, const char *run_id,
                   const char *error, int64_t now)
{
    const char *texts[] = {run_id, error};
    const int64_t ints[] = {now};
    /* as a run whose first step failed: that step failed with 'error' (no attempt made), the
     * later ones cancelled */
    int rc = db_run(s,
                    "UPDATE workflow_run_steps SET status = CASE WHEN idx = 0 THEN 'failed' ELSE"
                    " 'cancelled' END, error = CASE WHEN idx = 0 THEN CAST($2 AS TEXT) END,"
                    " completed_at = $3 WHERE run_id = $1",
                    texts, 2, ints, 1);
    if (!rc)
        rc = db_run(s,
                    "UPDATE workflow_runs SET status = 'failed', error = 'steps[0]: ' ||"
                    " CAST($2 AS TEXT), completed_at = $3, lease = NULL WHERE id = $1",
                    texts, 2, ints, 1);
    if (!rc)
        rc = hook_run_ended(s, t, run_id, now);
    return rc;
}

/* The run goes on after step 'c->step' ended as 'in' says; inside the caller's transaction. */
static int run_advance(struct store *s, const struct store_step_finish *in, int64_t taken)
{
    const struct store_step_claim *c = in->claim;
    const char *texts[] = {c->run_id};
    int rc = 0;

    switch (in->outcome) {
    case STORE_STEP_COMPLETED:
    case STORE_STEP_SKIPPED: {
        const int64_t ints[] = {taken, c->step + 1, in->now};
        rc = db_run(s,
                    "UPDATE workflow_runs SET credits_used = credits_used + $2, status = CASE WHEN"
                    " $3 >= step_count THEN 'completed' ELSE status END, completed_at = CASE WHEN"
                    " $3 >= step_count THEN CAST($4 AS BIGINT) END WHERE id = $1",
                    texts, 1, ints, 3);
        if (!rc)
            rc = wf_runs_to_step(s, c->run_id, c->step + 1, in->now);
        break;
    }
    case STORE_STEP_RETRY:
        rc = wf_runs_to_step(s, c->run_id, c->step, in->retry_at);
        break;
    case STORE_STEP_FAILED:
        rc = run_fail(s, c, in->error, in->now);
        break;
    case STORE_STEP_WAITING: {
        const int64_t ints[] = {WAITING_READY_AT};
        rc = db_run(s,
                    "UPDATE workflow_runs SET lease = NULL, lease_node = NULL, ready_at = $2 WHERE"
                    " id = $1",
                    texts, 1, ints, 1);
        break;
    }
    }
    return rc;
}

/* Store the end of the attempt 'in' as 'outcome' ('cancelled': the run was cancelled meanwhile),
 * with 'taken' credits charged. */
static int step_store(struct store *s, const struct store_step_finish *in,
                      enum store_step_outcome outcome, bool cancelled, int64_t taken)
{
    const struct store_step_claim *c = in->claim;
    /* In a cancelled run, a step that did not complete ends cancelled. */
    const char *ended =
        cancelled && outcome != STORE_STEP_COMPLETED && outcome != STORE_STEP_SKIPPED
            ? "cancelled"
            : step_status[outcome];
    bool waits = outcome == STORE_STEP_WAITING && !cancelled;
    const char *texts[] = {c->run_id,
                           ended,
                           in->input,
                           outcome == STORE_STEP_COMPLETED ? in->output : NULL,
                           outcome == STORE_STEP_COMPLETED || outcome == STORE_STEP_SKIPPED || waits
                               ? NULL
                               : in->error,
                           outcome == STORE_STEP_COMPLETED ? in->stop_reason : NULL,
                           waits ? in->turn_state : NULL};
    const int64_t ints[] = {c->step, taken + in->charged_before,
                            outcome == STORE_STEP_RETRY || waits ? 0 : in->now};
    /* credits_used adds: a step that waited for approvals counted its earlier steps then */
    return db_run(s,
                  "UPDATE workflow_run_steps SET status = $2, input = $3, output = $4, error = $5,"
                  " stop_reason = $6, turn_state = $7, credits_used = credits_used + $9,"
                  " completed_at = nullif(CAST($10 AS BIGINT), 0) WHERE run_id = $1 AND idx = $8",
                  texts, 7, ints, 3);
}

/* See store_int.h. */
int workflow_steps_finish(struct store *s, const struct store_step_finish *in, int64_t *charged,
                          bool *discarded)
{
    const struct store_step_claim *c = in->claim;
    enum store_step_outcome outcome = in->outcome;
    char status[16], lease[ID_MAX];
    bool cancelled;
    int64_t taken = 0;
    int rc;

    *charged = 0;
    *discarded = false;
    rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = run_state(s, &c->tenant, NULL, c->run_id, status, sizeof(status), lease, sizeof(lease));
    if (rc)
        goto rollback;
    if (!*status || strcmp(lease, c->lease) != 0) {
        /* Deleted with its workflow, or taken over: the outcome has nowhere to go. */
        *discarded = true;
        rc = employees_busy(s, &c->tenant, c->employee_id, -1);
        goto commit;
    }
    /* Cancelled meanwhile: the step's outcome is kept, uncharged, and nothing else runs. */
    cancelled = strcmp(status, "cancelled") == 0;
    if (cancelled && outcome == STORE_STEP_RETRY)
        outcome = STORE_STEP_FAILED;
    if (!cancelled && outcome == STORE_STEP_COMPLETED && c->tenant.mode == STORE_LIVE) {
        const struct credits_cause why = {STORE_CREDIT_WORKFLOW_STEP, "workflow_run", c->run_id,
                                          c->employee_id};
        rc = credits_settle(s, &c->tenant, 0, in->credits, &why, &taken);
        if (rc)
            goto rollback;
    }
    rc = step_store(s, in, outcome, cancelled, taken);
    if (!rc && in->charged_before > 0) {
        /* what its tool steps were charged, whatever the outcome (their work was done) */
        const char *texts[] = {c->run_id};
        const int64_t ints[] = {in->charged_before};
        rc = db_run(s, "UPDATE workflow_runs SET credits_used = credits_used + $2 WHERE id = $1",
                    texts, 1, ints, 1);
    }
    if (rc)
        goto rollback;
    if (cancelled) {
        const char *texts[] = {c->run_id};
        rc = db_run(s, "UPDATE workflow_runs SET lease = NULL WHERE id = $1", texts, 1, NULL, 0);
    } else {
        rc = run_advance(s, in, taken);
        /* the run's end, when this step ended it */
        if (!rc && outcome != STORE_STEP_RETRY && outcome != STORE_STEP_WAITING)
            rc = hook_run_ended(s, &c->tenant, c->run_id, in->now);
    }
    if (!rc && outcome == STORE_STEP_COMPLETED) {
        struct store_event ev = {c->employee_id,
                                 "workflow_step",
                                 in->now,
                                 in->response_ms,
                                 taken + in->charged_before,
                                 -1,
                                 NULL};
        rc = employees_event_add(s, &c->tenant, &ev);
    }
    if (!rc)
        rc = employees_busy(s, &c->tenant, c->employee_id, -1);
commit:
    if (!rc)
        rc = db_commit(s);
    if (rc)
        goto rollback;
    *charged = taken;
    return 0;
rollback:
    db_rollback(s);
    return rc;
}
