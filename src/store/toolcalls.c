/* SPDX-License-Identifier: MIT */
/*
 * toolcalls.c: the journal of the tools a turn calls (contract §19), over the driver.
 *
 * A step whose model call asked for tools is written in one transaction before any of its
 * calls starts: with the turn's first such step, the assistant message itself (status
 * in_progress, so a conversation read shows the work under way), then each call as 'running',
 * and the step's model call charged for a live key (never below 0). Each call's end is one
 * statement. A call found 'running' after a crash is one that had started: it is never run
 * again.
 *
 * A turn is a chat reply (its calls read by conversation, with its messages), a task run or a
 * workflow run's step (their calls read with the run records: tasks.c, workflows.c). The step
 * of a run's turn has no message to write, and its model call is charged the same way.
 */
#include "store_int.h"

#include <string.h>

#define CALL_COLS                                                                                  \
    "c.id, c.message_id, c.model_id, c.tool, c.arguments, c.status, c.result, c.error,"            \
    " c.approval_id, c.seq, c.step, c.started_at, coalesce(c.completed_at, 0), c.task_run_id,"     \
    " c.workflow_run_id, coalesce(c.step_index, -1)"

static void read_call(struct db_stmt *st, struct arena *a, struct store_tool_call *out)
{
    out->id = db_arena_text(a, st, 0);
    out->message_id = db_arena_text(a, st, 1);
    out->model_id = db_arena_text(a, st, 2);
    out->tool = db_arena_text(a, st, 3);
    out->arguments = db_arena_text(a, st, 4);
    out->status = db_arena_text(a, st, 5);
    out->result = db_arena_text(a, st, 6);
    out->error = db_arena_text(a, st, 7);
    out->approval_id = db_arena_text(a, st, 8);
    out->seq = db_int64(st, 9);
    out->step = db_int64(st, 10);
    out->started_at = db_int64(st, 11);
    out->completed_at = db_int64(st, 12);
    out->task_run_id = db_arena_text(a, st, 13);
    out->workflow_run_id = db_arena_text(a, st, 14);
    out->step_index = db_int64(st, 15);
}

/* The rows of statement 'st' (bound) into '*out', at most 'max' (from 'a', grown as rows come:
 * most turns call few tools). */
static int read_calls(struct db_stmt *st, size_t max, struct arena *a, struct store_tool_call **out,
                      size_t *n)
{
    size_t cap = 8, len = 0;
    struct store_tool_call *v = arena_alloc(a, cap * sizeof(*v));
    bool row = false;
    int rc;

    while (!(rc = db_step(st, &row)) && row && len < max) {
        if (len == cap) {
            struct store_tool_call *w = arena_alloc(a, 2 * cap * sizeof(*w));
            memcpy(w, v, len * sizeof(*v));
            v = w;
            cap *= 2;
        }
        read_call(st, a, &v[len++]);
    }
    db_done(st);
    *out = v;
    *n = len;
    return rc;
}

static int insert_call(struct store *s, const struct store_tenant *t,
                       const struct store_tool_call *c)
{
    const char *texts[] = {c->id,
                           t->org_id,
                           db_mode_name(t->mode),
                           c->message_id,
                           c->model_id,
                           c->tool,
                           c->arguments,
                           c->status ? c->status : "running",
                           c->task_run_id,
                           c->workflow_run_id,
                           c->approval_id};
    const int64_t ints[] = {c->seq, c->step, c->started_at, c->step_index};
    /* step_index belongs to a workflow run's call only */
    return db_run(s,
                  "INSERT INTO tool_calls (id, org_id, mode, message_id, model_id, tool,"
                  " arguments, status, task_run_id, workflow_run_id, approval_id, seq, step,"
                  " started_at, step_index) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,"
                  " $12, $13, $14, CASE WHEN CAST($10 AS TEXT) IS NULL THEN NULL ELSE CAST($15 AS"
                  " BIGINT) END)",
                  texts, 11, ints, 4);
}

/* See store_int.h. */
int tool_step_begin(struct store *s, const struct store_tenant *t, const struct store_tool_step *in,
                    int64_t *charged, int64_t *balance)
{
    int rc;

    *charged = 0;
    *balance = 0;
    rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    if (in->reply)
        rc = chat_reply_store(s, t, in->reply);
    if (!rc && (in->reply || in->message_id)) {
        /* the turn's message: this node's, with what the turn goes on from */
        const char *texts[] = {in->reply ? in->reply->id : in->message_id,
                               t->org_id,
                               db_mode_name(t->mode),
                               store_node_id(),
                               in->content,
                               in->turn_state};
        rc = db_run(s,
                    "UPDATE messages SET lease_node = $4, content = coalesce($5, content),"
                    " turn_state = coalesce($6, turn_state) WHERE id = $1 AND org_id = $2 AND"
                    " mode = $3",
                    texts, 6, NULL, 0);
    }
    for (size_t i = 0; !rc && i < in->n; i++)
        rc = insert_call(s, t, &in->calls[i]);
    for (size_t i = 0; !rc && i < in->napprovals; i++)
        rc = approval_insert(s, t, &in->approvals[i]);
    if (!rc && in->events.text)
        rc = message_events_add(s, t, in->reply ? in->reply->id : in->message_id, &in->events);
    if (!rc && in->charge) {
        struct credits_cause why = {STORE_CREDIT_CHAT, "message",
                                    in->reply ? in->reply->id : in->message_id, in->employee_id};
        if (in->n > 0 && in->calls[0].task_run_id) {
            why.reason = STORE_CREDIT_TASK_RUN;
            why.ref_type = "task_run";
            why.ref_id = in->calls[0].task_run_id;
        } else if (in->n > 0 && in->calls[0].workflow_run_id) {
            why.reason = STORE_CREDIT_WORKFLOW_STEP;
            why.ref_type = "workflow_run";
            why.ref_id = in->calls[0].workflow_run_id;
        }
        rc = in->held ? credits_settle(s, t, 1, in->price, &why, charged) /* the hold first */
                      : credits_apply(s, t, CREDITS_CHARGE, in->price, &why, charged);
    }
    if (!rc)
        rc = credits_balance(s, t, balance);
    if (!rc)
        rc = db_commit(s);
    if (rc) {
        db_rollback(s);
        *charged = 0;
    }
    return rc;
}

/* See store_int.h. */
int tool_call_end(struct store *s, const struct store_tenant *t, const struct store_tool_call *c)
{
    const char *texts[] = {c->id,     t->org_id, db_mode_name(t->mode), c->status,
                           c->result, c->error,  c->arguments};
    const int64_t ints[] = {c->completed_at, c->started_at};
    /* an approved call starts late, maybe with edited arguments: both are its own then */
    return db_run(s,
                  "UPDATE tool_calls SET status = $4, result = $5, error = $6, arguments ="
                  " coalesce($7, arguments), completed_at = CASE WHEN CAST($8 AS BIGINT) > 0"
                  " THEN CAST($8 AS BIGINT) END, started_at = CASE WHEN CAST($9 AS BIGINT) > 0"
                  " THEN CAST($9 AS BIGINT) ELSE started_at END WHERE id = $1 AND org_id = $2 AND"
                  " mode = $3",
                  texts, 7, ints, 2);
}

/* See store_int.h. */
int tool_calls_of(struct store *s, const struct store_tenant *t, const char *conversation_id,
                  int64_t from_seq, int64_t to_seq, size_t max, struct arena *a,
                  struct store_tool_call **out, size_t *n)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT " CALL_COLS " FROM tool_calls c JOIN messages m ON m.id = c.message_id"
           " WHERE m.org_id = $1 AND m.mode = $2 AND m.conversation_id = $3 AND m.seq >= $4 AND"
           " m.seq <= $5 ORDER BY m.seq, c.seq LIMIT $6");

    *out = NULL;
    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, conversation_id);
    db_bind_int64(st, 4, from_seq);
    db_bind_int64(st, 5, to_seq);
    db_bind_int64(st, 6, (int64_t)max);
    return read_calls(st, max, a, out, n);
}

/* See store_int.h. The runs of a page are those of the task from (lo_started, lo_id) to
 * (hi_started, hi_id) in their order, both included. */
int tool_calls_of_task_runs(struct store *s, const struct store_tenant *t, const char *task_id,
                            int64_t lo_started, const char *lo_id, int64_t hi_started,
                            const char *hi_id, size_t max, struct arena *a,
                            struct store_tool_call **out, size_t *n)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT " CALL_COLS " FROM tool_calls c JOIN task_runs r ON r.id = c.task_run_id"
           " WHERE r.org_id = $1 AND r.mode = $2 AND r.task_id = $3 AND (r.started_at, r.id) >="
           " ($4, $5) AND (r.started_at, r.id) <= ($6, $7) ORDER BY r.started_at DESC,"
           " r.id DESC, c.seq LIMIT $8");

    *out = NULL;
    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, task_id);
    db_bind_int64(st, 4, lo_started);
    db_bind_text(st, 5, lo_id);
    db_bind_int64(st, 6, hi_started);
    db_bind_text(st, 7, hi_id);
    db_bind_int64(st, 8, (int64_t)max);
    return read_calls(st, max, a, out, n);
}

/* See store_int.h. A step run again after a crash numbers its calls after those of its
 * earlier attempts (store_step_calls_next), so the order of 'seq' is the order the calls were
 * made in, across attempts (the time a call started is not: an approved call starts when it
 * is approved). (Steps run again before that rule numbered each attempt's calls from 0:
 * their attempts' calls are listed side by side, seq by seq.) */
int tool_calls_of_wf_run(struct store *s, const char *run_id, size_t max, struct arena *a,
                         struct store_tool_call **out, size_t *n)
{
    struct db_stmt *st = db_prepare(s, "SELECT " CALL_COLS " FROM tool_calls c WHERE"
                                       " c.workflow_run_id = $1 ORDER BY c.step_index, c.seq,"
                                       " c.started_at LIMIT $2");

    *out = NULL;
    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, run_id);
    db_bind_int64(st, 2, (int64_t)max);
    return read_calls(st, max, a, out, n);
}

/* See store_int.h. */
int tool_calls_of_message(struct store *s, const struct store_tenant *t, const char *message_id,
                          struct arena *a, struct store_tool_call **out, size_t *n)
{
    struct db_stmt *st = db_prepare(s, "SELECT " CALL_COLS " FROM tool_calls c WHERE"
                                       " c.message_id = $3 AND c.org_id = $1 AND c.mode = $2"
                                       " ORDER BY c.seq LIMIT $4");

    *out = NULL;
    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, message_id);
    db_bind_int64(st, 4, STORE_RUN_CALLS_MAX);
    return read_calls(st, STORE_RUN_CALLS_MAX, a, out, n);
}

/* ---- A turn that waits for the client's tools (the OpenAI door) ---- */

struct one_call {
    struct store_tool_call *out;
};

static void read_one_call(struct db_stmt *st, struct arena *a, void *pout)
{
    read_call(st, a, ((struct one_call *)pout)->out);
}

/* See store_int.h. */
int tool_call_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                  struct store_tool_call *out)
{
    const char *texts[] = {id};
    struct one_call one = {out};
    memset(out, 0, sizeof(*out));
    return db_one(s,
                  "SELECT " CALL_COLS " FROM tool_calls c WHERE c.org_id = $1 AND c.mode = $2"
                  " AND c.id = $3",
                  t, texts, 1, read_one_call, a, &one);
}

/* See store_int.h. The message is taken by one statement, so of two requests that answer the
 * same calls at once only one goes on. */
int turns_answer(struct store *s, const struct store_tenant *t, const char *message_id,
                 const struct store_tool_call *ends, size_t n, const char *turn_state, bool reserve,
                 bool *taken)
{
    const char *texts[] = {message_id, t->org_id, db_mode_name(t->mode), store_node_id(),
                           turn_state};
    struct arena a;
    struct db_stmt *st;
    const char *employee = NULL;
    bool row = false;
    int rc;

    *taken = false;
    arena_init(&a);
    rc = db_begin(s, DB_TX_WRITE);
    if (rc) {
        arena_cleanup(&a);
        return rc;
    }
    st = db_prepare(s, "UPDATE messages SET status = 'in_progress', stop_reason = NULL, lease_node"
                       " = $4, turn_state = coalesce($5, turn_state) WHERE id = $1 AND org_id = $2 "
                       "AND mode = $3 AND status = 'completed'"
                       " AND stop_reason = 'client_tool_calls' AND turn_state IS NOT NULL AND NOT"
                       " EXISTS (SELECT 1 FROM messages l WHERE l.conversation_id ="
                       " messages.conversation_id AND l.seq > messages.seq) RETURNING"
                       " employee_id");
    if (!st)
        rc = ERR_STORE;
    if (!rc) {
        for (size_t i = 0; i < 5; i++)
            db_bind_text(st, (int)i + 1, texts[i]);
        rc = db_step(st, &row);
        if (!rc && row)
            employee = db_arena_text(&a, st, 0);
        db_done(st);
    }
    if (!rc && row && reserve) {
        const struct credits_cause why = {STORE_CREDIT_CHAT, "message", texts[0], employee};
        int64_t held;
        rc = credits_apply(s, t, CREDITS_HOLD, 1, &why, &held); /* ERR_LIMIT: none left */
    }
    if (!rc && row)
        rc = employees_busy(s, t, employee, 1);
    for (size_t i = 0; !rc && row && i < n; i++)
        rc = tool_call_end(s, t, &ends[i]);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    else
        *taken = row;
    arena_cleanup(&a);
    return rc;
}

/* See store_int.h. */
int tool_calls_of_run(struct store *s, const struct store_tenant *t, const char *task_run_id,
                      const char *workflow_run_id, int64_t step_index, struct arena *a,
                      struct store_tool_call **out, size_t *n)
{
    struct db_stmt *st =
        task_run_id
            ? db_prepare(s, "SELECT " CALL_COLS " FROM tool_calls c WHERE c.task_run_id = $3"
                            " AND c.org_id = $1 AND c.mode = $2 ORDER BY c.seq LIMIT $4")
            : db_prepare(s, "SELECT " CALL_COLS " FROM tool_calls c WHERE c.workflow_run_id = $3"
                            " AND c.step_index = $5 AND c.org_id = $1 AND c.mode = $2 ORDER BY"
                            " c.seq LIMIT $4");

    *out = NULL;
    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, task_run_id ? task_run_id : workflow_run_id);
    db_bind_int64(st, 4, STORE_RUN_CALLS_MAX);
    if (!task_run_id)
        db_bind_int64(st, 5, step_index);
    return read_calls(st, STORE_RUN_CALLS_MAX, a, out, n);
}

/* See store_int.h. */
int tool_calls_next(struct store *s, const char *run_id, int64_t step_index, int64_t *seq)
{
    struct db_stmt *st = db_prepare(s, "SELECT coalesce(max(seq) + 1, 0) FROM tool_calls WHERE"
                                       " workflow_run_id = $1 AND step_index = $2");
    bool row = false;
    int rc;

    *seq = 0;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, run_id);
    db_bind_int64(st, 2, step_index);
    rc = db_step(st, &row);
    if (!rc && row)
        *seq = db_int64(st, 0);
    db_done(st);
    return rc;
}
