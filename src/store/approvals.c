/* SPDX-License-Identifier: MIT */
/*
 * approvals.c: approvals, chat turns that pause for them and go on, and the kept events of a
 * message (contract §19), written once over the driver (driver.h).
 *
 * DESIGN: a step of a turn that calls a tool whose policy is 'approve' journals that call as
 * 'pending_approval' with its approval, in the step's transaction (toolcalls.c); the turn runs
 * the step's other calls, then pauses (store_turn_pause): unless every approval of the message
 * was decided meanwhile, the message is 'requires_approval', names no node, and its turn state
 * (what its rows do not hold) is stored with it; the held credit and the employee's work are
 * given back. A decision is one transaction (store_approval_decide). Whoever can then go on
 * takes the turn (store_turn_take): the one statement that makes the message in_progress under
 * this node changes a row only while no approval of it is pending, so two nodes deciding its
 * last two approvals at once, or a decision and the keeper, take it once. A turn whose node
 * died is taken the same way once nodes_recover() has cleared its node; the calls it left
 * running are failed as "interrupted" in that transaction, never run again.
 */
#include "store_int.h"

#include "../core/clock.h"

#include <string.h>

#define APPROVAL_COLS                                                                              \
    "id, employee_id, tool_call_id, tool, arguments, status, reason, requested_by_type,"           \
    " requested_by_id, conversation_id, message_id, task_id, task_run_id, workflow_run_id,"        \
    " coalesce(step_index, -1), requested_at, expires_at, coalesce(decided_at, 0),"                \
    " decided_by_type, decided_by_id"

static void read_approval(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_approval *o = pout;
    memset(o, 0, sizeof(*o));
    o->id = db_arena_text(a, st, 0);
    o->employee_id = db_arena_text(a, st, 1);
    o->tool_call_id = db_arena_text(a, st, 2);
    o->tool = db_arena_text(a, st, 3);
    o->arguments = db_arena_text(a, st, 4);
    o->status = db_arena_text(a, st, 5);
    o->reason = db_arena_text(a, st, 6);
    o->requested_by_type = db_arena_text(a, st, 7);
    o->requested_by_id = db_arena_text(a, st, 8);
    o->conversation_id = db_arena_text(a, st, 9);
    o->message_id = db_arena_text(a, st, 10);
    o->task_id = db_arena_text(a, st, 11);
    o->task_run_id = db_arena_text(a, st, 12);
    o->workflow_run_id = db_arena_text(a, st, 13);
    o->step_index = db_int64(st, 14);
    o->requested_at = db_int64(st, 15);
    o->expires_at = db_int64(st, 16);
    o->decided_at = db_int64(st, 17);
    o->decided_by_type = db_arena_text(a, st, 18);
    o->decided_by_id = db_arena_text(a, st, 19);
}

/* The rows of 'st' (bound) into '*out' (from 'a'), at most 'max'; ends 'st'. */
static int read_approvals(struct db_stmt *st, size_t max, struct arena *a,
                          struct store_approval **out, size_t *n, bool *more)
{
    struct store_approval *v = arena_alloc(a, (max + 1) * sizeof(*v));
    bool row = false;
    int rc;

    *n = 0;
    if (more)
        *more = false;
    while (!(rc = db_step(st, &row)) && row) {
        if (*n == max) {
            if (more)
                *more = true;
            break;
        }
        read_approval(st, a, &v[(*n)++]);
    }
    db_done(st);
    *out = v;
    return rc;
}

/* See store_int.h: inside the step's transaction. */
int approval_insert(struct store *s, const struct store_tenant *t, const struct store_approval *p)
{
    const char *texts[] = {p->id,
                           t->org_id,
                           db_mode_name(t->mode),
                           p->employee_id,
                           p->tool_call_id,
                           p->tool,
                           p->arguments,
                           p->requested_by_type ? p->requested_by_type : "key",
                           p->requested_by_id,
                           p->conversation_id,
                           p->message_id,
                           p->task_id,
                           p->task_run_id,
                           p->workflow_run_id};
    const int64_t ints[] = {p->step_index, p->requested_at, p->expires_at};
    int rc = db_run(s,
                    "INSERT INTO approvals (id, org_id, mode, employee_id, tool_call_id, tool,"
                    " arguments, status, requested_by_type, requested_by_id, conversation_id,"
                    " message_id, task_id, task_run_id, workflow_run_id, step_index, requested_at,"
                    " expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10, $11,"
                    " $12, $13, $14, CASE WHEN CAST($15 AS BIGINT) >= 0 THEN CAST($15 AS BIGINT)"
                    " END, $16, $17)",
                    texts, 14, ints, 3);
    struct store_approval shown = *p;
    shown.status = "pending";
    if (!rc)
        rc = hook_record(s, t, "approval.requested", STORE_HOOK_APPROVAL, &shown, p->requested_at);
    return rc;
}

/* See store_int.h. */
int approvals_list(struct store *s, const struct store_tenant *t,
                   const struct store_approval_filter *f, struct arena *a,
                   struct store_approval_page *out)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT " APPROVAL_COLS " FROM approvals WHERE org_id = $1 AND mode = $2 AND"
           " (CAST($3 AS TEXT) IS NULL OR status = $3) AND (CAST($4 AS TEXT) IS NULL OR"
           " employee_id = $4) AND (CAST($6 AS TEXT) IS NULL OR (requested_at, id) < ($5, $6))"
           " ORDER BY requested_at DESC, id DESC LIMIT $7");

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, f->status);
    db_bind_text(st, 4, f->employee_id);
    db_bind_int64(st, 5, f->before_at);
    db_bind_text(st, 6, f->before_id);
    db_bind_int64(st, 7, (int64_t)f->limit + 1);
    return read_approvals(st, f->limit, a, &out->items, &out->n, &out->has_more);
}

/* See store_int.h. */
int approvals_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                  struct store_approval *out)
{
    const char *texts[] = {id};
    return db_one(s,
                  "SELECT " APPROVAL_COLS " FROM approvals WHERE org_id = $1 AND mode = $2 AND"
                  " id = $3",
                  t, texts, 1, read_approval, a, out);
}

/* See store_int.h. */
int approvals_decide(struct store *s, const struct store_tenant *t,
                     const struct store_approval_decision *d, struct arena *a,
                     struct store_approval *out)
{
    const char *texts[] = {d->id,      t->org_id, db_mode_name(t->mode), d->status, d->reason,
                           d->by_type, d->by_id,  d->arguments};
    const int64_t ints[] = {d->now};
    struct db_stmt *st;
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc)
        return rc;
    st = db_prepare(s, "UPDATE approvals SET status = $4, reason = $5, decided_by_type = $6,"
                       " decided_by_id = $7, arguments = coalesce($8, arguments), decided_at = $9"
                       " WHERE id = $1 AND org_id = $2 AND mode = $3 AND status = 'pending'");
    if (!st) {
        db_rollback(s);
        return ERR_STORE;
    }
    for (size_t i = 0; i < 8; i++)
        db_bind_text(st, (int)i + 1, texts[i]);
    db_bind_int64(st, 9, ints[0]);
    rc = db_exec_one(st);
    if (!rc || rc == ERR_NOT_FOUND) {
        int changed = rc;
        rc = approvals_get(s, t, d->id, a, out);
        if (!rc && changed == ERR_NOT_FOUND)
            rc = ERR_CONFLICT; /* it exists: decided before */
    }
    if (!rc)
        rc = hook_record(s, t, "approval.decided", STORE_HOOK_APPROVAL, out, d->now);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int approvals_due(struct store *s, int64_t now, size_t max, struct arena *a,
                  struct store_approval **out, struct store_tenant **tenants, size_t *n)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT " APPROVAL_COLS ", org_id, mode FROM approvals WHERE status ="
                      " 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT $2");
    struct store_approval *v = arena_alloc(a, (max ? max : 1) * sizeof(*v));
    struct store_tenant *tv = arena_alloc(a, (max ? max : 1) * sizeof(*tv));
    bool row = false;
    int rc;

    *n = 0;
    *out = v;
    *tenants = tv;
    if (!st)
        return ERR_STORE;
    db_bind_int64(st, 1, now);
    db_bind_int64(st, 2, (int64_t)max);
    while (!(rc = db_step(st, &row)) && row && *n < max) {
        read_approval(st, a, &v[*n]);
        memset(&tv[*n], 0, sizeof(tv[*n]));
        db_copy(st, 20, tv[*n].org_id, sizeof(tv[*n].org_id));
        tv[*n].mode = db_mode(db_text(st, 21));
        (*n)++;
    }
    db_done(st);
    return rc;
}

/* ---- Paused turns ---- */

/* No approval of message $1 is pending. */
#define NONE_PENDING                                                                               \
    "NOT EXISTS (SELECT 1 FROM approvals p WHERE p.message_id = $1 AND p.status = 'pending')"

/* See store_int.h. */
int turns_pause(struct store *s, const struct store_tenant *t, const struct store_turn_pause *in,
                bool *paused)
{
    const char *texts[] = {in->message_id, t->org_id, db_mode_name(t->mode), in->content,
                           in->turn_state};
    struct db_stmt *st;
    int rc = db_begin(s, DB_TX_WRITE);

    *paused = false;
    if (rc)
        return rc;
    for (size_t i = 0; !rc && i < in->nends; i++)
        rc = tool_call_end(s, t, &in->ends[i]);
    if (!rc) {
        st = db_prepare(s, "UPDATE messages SET status = 'requires_approval', content = $4,"
                           " turn_state = $5, lease_node = NULL WHERE id = $1 AND org_id = $2 AND"
                           " mode = $3 AND EXISTS (SELECT 1 FROM approvals p WHERE p.message_id ="
                           " $1 AND p.status = 'pending')");
        if (!st) {
            rc = ERR_STORE;
        } else {
            for (size_t i = 0; i < 5; i++)
                db_bind_text(st, (int)i + 1, texts[i]);
            rc = db_exec_one(st);
            if (!rc)
                *paused = true;
            else if (rc == ERR_NOT_FOUND)
                rc = 0; /* decided meanwhile: the turn goes on */
        }
    }
    if (!rc && *paused && in->reserved) {
        const struct credits_cause why = {STORE_CREDIT_CHAT, "message", in->message_id,
                                          in->employee_id};
        int64_t charged;
        rc = credits_settle(s, t, 1, 0, &why, &charged);
    }
    if (!rc && *paused)
        rc = employees_busy(s, t, in->employee_id, -1);
    if (!rc && in->events.text)
        rc = message_events_add(s, t, in->message_id, &in->events);
    if (!rc)
        rc = db_commit(s);
    if (rc) {
        db_rollback(s);
        *paused = false;
    }
    return rc;
}

/* See store_int.h. */
int turns_ready(struct store *s, size_t max, struct arena *a, struct store_turn_ref **out,
                size_t *n)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT m.id, m.org_id, m.mode FROM messages m WHERE m.status = 'in_progress' AND"
           " m.lease_node IS NULL UNION ALL SELECT m.id, m.org_id, m.mode FROM messages m WHERE"
           " m.status = 'requires_approval' AND NOT EXISTS (SELECT 1 FROM approvals p WHERE"
           " p.message_id = m.id AND p.status = 'pending') LIMIT $1");
    struct store_turn_ref *v = arena_alloc(a, (max ? max : 1) * sizeof(*v));
    bool row = false;
    int rc;

    *n = 0;
    *out = v;
    if (!st)
        return ERR_STORE;
    db_bind_int64(st, 1, (int64_t)max);
    while (!(rc = db_step(st, &row)) && row && *n < max) {
        memset(&v[*n], 0, sizeof(v[*n]));
        v[*n].message_id = db_arena_text(a, st, 0);
        db_copy(st, 1, v[*n].tenant.org_id, sizeof(v[*n].tenant.org_id));
        v[*n].tenant.mode = db_mode(db_text(st, 2));
        (*n)++;
    }
    db_done(st);
    return rc;
}

/* See store_int.h. */
int turns_take(struct store *s, const struct store_tenant *t, const char *id, int64_t now,
               bool *taken)
{
    const char *texts[] = {id, t->org_id, db_mode_name(t->mode), store_node_id()};
    const int64_t ints[] = {now};
    struct arena a;
    struct db_stmt *st;
    bool row = false, took = false;
    const char *employee = NULL;
    int rc;

    *taken = false;
    arena_init(&a);
    rc = db_begin(s, DB_TX_WRITE);
    if (rc) {
        arena_cleanup(&a);
        return rc;
    }
    st = db_prepare(s, "UPDATE messages SET lease_node = $4, status = 'in_progress' WHERE id = $1"
                       " AND org_id = $2 AND mode = $3 AND ((status = 'in_progress' AND lease_node"
                       " IS NULL) OR (status = 'requires_approval' AND " NONE_PENDING "))"
                       " RETURNING employee_id, CASE WHEN turn_state IS NULL THEN 0 ELSE 1 END");
    if (!st)
        rc = ERR_STORE;
    if (!rc) {
        for (size_t i = 0; i < 4; i++)
            db_bind_text(st, (int)i + 1, texts[i]);
        rc = db_step(st, &row);
        if (!rc && row)
            employee = db_arena_text(&a, st, 0);
        db_done(st);
    }
    if (!rc && row) {
        /* a paused turn gave its employee's work back; one of a dead node's was taken back */
        took = true;
        rc = employees_busy(s, t, employee, 1);
    }
    if (!rc && took)
        rc = db_run(s,
                    "UPDATE tool_calls SET status = 'failed', error = 'interrupted', result ="
                    " '{\"error\":\"interrupted\"}', completed_at = $4 WHERE message_id = $1 AND"
                    " org_id = $2 AND mode = $3 AND status = 'running'",
                    texts, 3, ints, 1);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    else
        *taken = took;
    arena_cleanup(&a);
    return rc;
}

/* See store_int.h. */
int turns_load(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
               struct store_turn_saved *out)
{
    struct db_stmt *st;
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    st = db_prepare(s, "SELECT m.id, m.conversation_id, m.employee_id, m.content, m.sources,"
                       " m.credits_used, m.created_at, m.status, m.turn_state, m.seq, (SELECT"
                       " u.content FROM messages u WHERE u.conversation_id = m.conversation_id AND"
                       " u.seq < m.seq AND u.role = 'user' ORDER BY u.seq DESC LIMIT 1), (SELECT"
                       " u.seq FROM messages u WHERE u.conversation_id = m.conversation_id AND"
                       " u.seq < m.seq AND u.role = 'user' ORDER BY u.seq DESC LIMIT 1) FROM"
                       " messages m WHERE m.org_id = $1 AND m.mode = $2 AND m.id = $3");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, id);
    rc = db_step(st, &row);
    if (!rc && !row)
        rc = ERR_NOT_FOUND;
    if (!rc) {
        struct store_message *m = &out->reply;
        m->id = db_arena_text(a, st, 0);
        m->conversation_id = db_arena_text(a, st, 1);
        m->employee_id = db_arena_text(a, st, 2);
        m->role = "assistant";
        m->content = db_arena_text(a, st, 3);
        m->sources = db_arena_text(a, st, 4);
        m->credits_used = db_int64(st, 5);
        m->created_at = db_int64(st, 6);
        m->status = db_arena_text(a, st, 7);
        out->turn_state = db_arena_text(a, st, 8);
        m->seq = db_int64(st, 9);
        out->user_content = db_arena_text(a, st, 10);
        out->user_seq = db_int64(st, 11);
    }
    db_done(st);
    if (!rc)
        rc = tool_calls_of_message(s, t, id, a, &out->calls, &out->ncalls);
    if (!rc) {
        st = db_prepare(s, "SELECT " APPROVAL_COLS " FROM approvals WHERE org_id = $1 AND"
                           " mode = $2 AND message_id = $3 ORDER BY requested_at, id");
        if (!st)
            return ERR_STORE;
        db_bind_tenant(st, t);
        db_bind_text(st, 3, id);
        rc = read_approvals(st, STORE_RUN_CALLS_MAX, a, &out->approvals, &out->napprovals, NULL);
    }
    return rc;
}

/* ---- Task runs and workflow steps that wait ---- */

#define RUN_APPROVALS_MAX 1024 /* a turn's approvals: at most one per call (32 steps of 16) */

/* See store_int.h: one read transaction. */
int runs_turn_load(struct store *s, const struct store_tenant *t, const char *task_run_id,
                   const char *workflow_run_id, int64_t step_index, struct arena *a,
                   struct store_run_saved *out)
{
    const char *id = task_run_id ? task_run_id : workflow_run_id;
    struct db_stmt *st;
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = db_begin(s, DB_TX_READ);
    if (rc)
        return rc;
    st = task_run_id ? db_prepare(s, "SELECT turn_state FROM task_runs WHERE org_id = $1 AND"
                                     " mode = $2 AND id = $3")
                     : db_prepare(s, "SELECT x.turn_state FROM workflow_run_steps x JOIN"
                                     " workflow_runs r ON r.id = x.run_id WHERE r.org_id = $1"
                                     " AND r.mode = $2 AND x.run_id = $3 AND x.idx = $4");
    if (!st) {
        rc = ERR_STORE;
    } else {
        db_bind_tenant(st, t);
        db_bind_text(st, 3, id);
        if (!task_run_id)
            db_bind_int64(st, 4, step_index);
        rc = db_step(st, &row);
        if (!rc && !row)
            rc = ERR_NOT_FOUND;
        if (!rc)
            out->turn_state = db_arena_text(a, st, 0);
        db_done(st);
    }
    if (!rc)
        rc = tool_calls_of_run(s, t, task_run_id, workflow_run_id, step_index, a, &out->calls,
                               &out->ncalls);
    if (!rc) {
        st = task_run_id ? db_prepare(s, "SELECT " APPROVAL_COLS " FROM approvals WHERE org_id ="
                                         " $1 AND mode = $2 AND task_run_id = $3 ORDER BY"
                                         " requested_at, id")
                         : db_prepare(s, "SELECT " APPROVAL_COLS " FROM approvals WHERE org_id ="
                                         " $1 AND mode = $2 AND workflow_run_id = $3 AND"
                                         " step_index = $4 ORDER BY requested_at, id");
        if (!st) {
            rc = ERR_STORE;
        } else {
            db_bind_tenant(st, t);
            db_bind_text(st, 3, id);
            if (!task_run_id)
                db_bind_int64(st, 4, step_index);
            rc = read_approvals(st, RUN_APPROVALS_MAX, a, &out->approvals, &out->napprovals, NULL);
        }
    }
    if ((rc ? db_rollback(s) : db_commit(s)) && !rc)
        rc = ERR_STORE;
    return rc;
}

/* ---- A message's events ---- */

/* See store_int.h. */
int message_events_add(struct store *s, const struct store_tenant *t, const char *message_id,
                       const struct store_events_chunk *ev)
{
    const char *texts[] = {message_id, t->org_id, db_mode_name(t->mode)};
    const int64_t ints[] = {ev->first_seq, ev->last_seq};
    struct db_stmt *st;

    if (!ev->text || ev->last_seq < ev->first_seq)
        return 0;
    st = db_prepare(s, "INSERT INTO message_events (message_id, first_seq, last_seq, events,"
                       " created_at) SELECT id, $4, $5, $6, $7 FROM messages WHERE id = $1 AND"
                       " org_id = $2 AND mode = $3");
    if (!st)
        return ERR_STORE;
    for (size_t i = 0; i < 3; i++)
        db_bind_text(st, (int)i + 1, texts[i]);
    db_bind_int64(st, 4, ints[0]);
    db_bind_int64(st, 5, ints[1]);
    db_bind_text(st, 6, ev->text); /* SSE text: no NUL inside */
    db_bind_int64(st, 7, clock_now_ms());
    return db_exec(st);
}

/* See store_int.h. */
int message_events_of(struct store *s, const struct store_tenant *t, const char *message_id,
                      int64_t after_seq, struct arena *a, struct store_events_chunk **out,
                      size_t *n)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT e.first_seq, e.last_seq, e.events FROM message_events e JOIN messages m ON"
           " m.id = e.message_id WHERE m.org_id = $1 AND m.mode = $2 AND e.message_id = $3 AND"
           " e.last_seq > $4 ORDER BY e.first_seq");
    size_t cap = 8;
    struct store_events_chunk *v = arena_alloc(a, cap * sizeof(*v));
    bool row = false;
    int rc;

    *n = 0;
    *out = v;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, message_id);
    db_bind_int64(st, 4, after_seq);
    while (!(rc = db_step(st, &row)) && row) {
        const char *text = db_arena_text(a, st, 2);
        if (*n == cap) {
            struct store_events_chunk *w = arena_alloc(a, 2 * cap * sizeof(*w));
            memcpy(w, v, *n * sizeof(*v));
            v = w;
            *out = v;
            cap *= 2;
        }
        v[*n].first_seq = db_int64(st, 0);
        v[*n].last_seq = db_int64(st, 1);
        v[*n].text = text;
        v[*n].len = text ? strlen(text) : 0;
        (*n)++;
    }
    db_done(st);
    return rc;
}
