/* SPDX-License-Identifier: MIT */
/*
 * chat.c: conversations, their messages and feedback, the writes that begin and end a chat
 * reply, and Idempotency-Key records, written once over the driver (driver.h).
 *
 * A chat's writes are split in two: its start (the user message, the employee busy, a reserved
 * credit) and its end (the reply, the charge, the activity event), each one transaction, so the
 * model call runs with no transaction open. Balances change only through ledger.c.
 */
#include "store_int.h"

#include "../core/clock.h"

#include <string.h>

/* ---- Shared by chat, tasks and workflows (their credits: ledger.c) ---- */

/* See store_int.h. The work is this node's (store_node_id()), so that another node can take it
 * back, and only it, if this one dies. An unknown employee is no one's work: nothing changes. */
int employees_busy(struct store *s, const struct store_tenant *t, const char *employee_id,
                   int delta)
{
    const char *texts[] = {employee_id, store_node_id()};
    const int64_t d[] = {delta};
    (void)t; /* the employee's id is the tenant's, checked by the caller */
    if (delta > 0)
        return db_run(s,
                      "INSERT INTO employee_work (employee_id, node_id, n) SELECT id,"
                      " CAST($2 AS TEXT), CAST($3 AS BIGINT) FROM employees WHERE id = $1"
                      " ON CONFLICT (employee_id, node_id) DO UPDATE SET n = employee_work.n +"
                      " excluded.n",
                      texts, 2, d, 1);
    return db_run(s,
                  "UPDATE employee_work SET n = CASE WHEN n + $3 > 0 THEN n + $3 ELSE 0 END"
                  " WHERE employee_id = $1 AND node_id = $2",
                  texts, 2, d, 1);
}

/* ---- Conversations and messages ---- */

#define CONV_COLS "id, employee_id, title, message_count, created_at, updated_at"
#define MSG_COLS                                                                                   \
    "id, conversation_id, employee_id, role, content, sources, credits_used, input_tokens,"        \
    " output_tokens, coalesce(response_ms, -1), created_at, status, stop_reason, error"

static void read_conversation(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_conversation *out = pout;
    out->id = db_arena_text(a, st, 0);
    out->employee_id = db_arena_text(a, st, 1);
    out->title = db_arena_text(a, st, 2);
    out->message_count = db_int64(st, 3);
    out->created_at = db_int64(st, 4);
    out->updated_at = db_int64(st, 5);
}

static void read_message(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_message *out = pout;
    out->id = db_arena_text(a, st, 0);
    out->conversation_id = db_arena_text(a, st, 1);
    out->employee_id = db_arena_text(a, st, 2);
    out->role = db_arena_text(a, st, 3);
    out->content = db_arena_text(a, st, 4);
    out->sources = db_arena_text(a, st, 5);
    out->credits_used = db_int64(st, 6);
    out->input_tokens = db_int64(st, 7);
    out->output_tokens = db_int64(st, 8);
    out->response_ms = db_int64(st, 9);
    out->created_at = db_int64(st, 10);
    out->status = db_arena_text(a, st, 11);
    out->stop_reason = db_arena_text(a, st, 12);
    out->error = db_arena_text(a, st, 13);
}

/* read_message() and its order in the conversation (column 14). */
static void read_message_seq(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_message *out = pout;
    read_message(st, a, out);
    out->seq = db_int64(st, 14);
}

/* Insert message 'm' as the next of its conversation. The conversation's row is bumped first:
 * that locks it, so two messages of one conversation written at once (two nodes) take
 * consecutive numbers. ERR_NOT_FOUND when the conversation is gone. */
static int insert_message(struct store *s, const struct store_tenant *t,
                          const struct store_message *m)
{
    const char *texts[] = {m->id,
                           m->conversation_id,
                           t->org_id,
                           db_mode_name(t->mode),
                           m->employee_id,
                           m->role,
                           m->content,
                           m->sources,
                           m->status ? m->status : "completed",
                           m->stop_reason,
                           m->error};
    int64_t ints[] = {m->credits_used, m->input_tokens, m->output_tokens,
                      m->response_ms,  m->created_at,   0};
    struct db_stmt *st = db_prepare(
        s, "UPDATE conversations SET message_count = message_count + 1, updated_at ="
           " CASE WHEN updated_at > CAST($2 AS BIGINT) THEN updated_at ELSE CAST($2 AS BIGINT)"
           " END WHERE id = $1 RETURNING message_count");
    int64_t seq = 0;
    bool row = false;
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, m->conversation_id);
    db_bind_int64(st, 2, m->created_at);
    rc = db_step(st, &row);
    if (!rc && row)
        seq = db_int64(st, 0);
    db_done(st);
    if (rc || !row)
        return rc ? rc : ERR_NOT_FOUND;
    ints[5] = seq;
    return db_run(s,
                  "INSERT INTO messages (id, conversation_id, org_id, mode, employee_id, role,"
                  " content, sources, status, stop_reason, error, credits_used, input_tokens,"
                  " output_tokens, response_ms, created_at, seq) VALUES ($1, $2, $3, $4, $5, $6,"
                  " $7, $8, $9, $10, $11, $12, $13, $14, CASE WHEN CAST($15 AS BIGINT) >= 0 THEN"
                  " CAST($15 AS BIGINT) END, $16, $17)",
                  texts, 11, ints, 6);
}

/* See store_int.h. */
int chat_reply_store(struct store *s, const struct store_tenant *t, const struct store_message *m)
{
    return insert_message(s, t, m);
}

/* The end of message 'm', stored before as in_progress (its turn called tools): its content,
 * sources, cost, tokens, time, status, stop reason and error, and the state a turn that
 * stopped for the client's tools goes on from ('turn_state', else none). */
static int update_message(struct store *s, const struct store_tenant *t,
                          const struct store_message *m, const char *turn_state)
{
    const char *texts[] = {m->id,          t->org_id,  db_mode_name(t->mode),
                           m->content,     m->sources, m->status ? m->status : "completed",
                           m->stop_reason, m->error,   turn_state};
    const int64_t ints[] = {m->credits_used, m->input_tokens, m->output_tokens, m->response_ms};
    return db_run(s,
                  "UPDATE messages SET content = $4, sources = $5, status = $6, stop_reason = $7,"
                  " error = $8, turn_state = $9, credits_used = $10, input_tokens = $11,"
                  " output_tokens = $12, lease_node = NULL, response_ms = CASE WHEN CAST($13 AS "
                  "BIGINT) >= 0 THEN CAST($13 AS BIGINT)"
                  " END WHERE id = $1 AND org_id = $2 AND mode = $3",
                  texts, 9, ints, 4);
}

/* See store_int.h. */
int chat_begin_in(struct store *s, const struct store_tenant *t, const struct store_chat_begin *in)
{
    int rc;
    if (in->reserve_credit) {
        const struct credits_cause why = {STORE_CREDIT_CHAT, "message", in->reply_id,
                                          in->user.employee_id};
        int64_t held;
        rc = credits_apply(s, t, CREDITS_HOLD, 1, &why, &held); /* ERR_LIMIT: none left */
        if (rc)
            return rc;
    }
    if (in->new_conversation) {
        const struct store_conversation *c = &in->conversation;
        const char *texts[] = {c->id, t->org_id, db_mode_name(t->mode), c->employee_id, c->title};
        const int64_t ints[] = {c->created_at};
        rc =
            db_run(s,
                   "INSERT INTO conversations (id, org_id, mode, employee_id, title, message_count,"
                   " created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 0, $6, $6)",
                   texts, 5, ints, 1);
        if (rc)
            return rc;
    }
    rc = insert_message(s, t, &in->user);
    if (!rc)
        rc = employees_busy(s, t, in->user.employee_id, 1);
    return rc;
}

/* See store_int.h. */
int chat_begin(struct store *s, const struct store_tenant *t, const struct store_chat_begin *in)
{
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = chat_begin_in(s, t, in);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int conversations_get(struct store *s, const struct store_tenant *t, const char *id,
                      struct arena *a, struct store_conversation *out)
{
    const char *texts[] = {id};
    return db_one(s,
                  "SELECT " CONV_COLS " FROM conversations WHERE org_id = $1 AND mode = $2"
                  " AND id = $3",
                  t, texts, 1, read_conversation, a, out);
}

/* See store_int.h. */
int conversations_busy(struct store *s, const struct store_tenant *t, const char *id, int64_t since,
                       bool *busy)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT 1 FROM messages WHERE conversation_id = $3 AND org_id = $1 AND mode = $2 AND"
           " (status = 'requires_approval' OR (status = 'in_progress' AND created_at > $4))"
           " LIMIT 1");
    bool row = false;
    int rc;

    *busy = false;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, id);
    db_bind_int64(st, 4, since);
    rc = db_step(st, &row);
    db_done(st);
    *busy = !rc && row;
    return rc;
}

/* See store_int.h. */
int chat_finish_in(struct store *s, const struct store_tenant *t,
                   const struct store_chat_finish *in, int64_t *charged)
{
    struct store_message m = in->reply;
    struct store_conversation conv;
    struct arena a;
    int64_t taken = 0;
    int rc = 0;

    *charged = 0;
    arena_init(&a);
    if (in->charge) {
        const struct credits_cause why = {STORE_CREDIT_CHAT, "message", m.id, m.employee_id};
        rc = credits_settle(s, t, in->reserved ? 1 : 0, m.credits_used, &why, &taken);
    }
    /* The conversation may have been deleted while the reply was written: then the reply has
     * nowhere to go, but the work was done and is charged and counted. (Only when it is gone: a
     * read that failed fails the reply, which dropped it while charging for it.) */
    m.credits_used = taken + in->charged_before;
    if (!rc) {
        rc = conversations_get(s, t, m.conversation_id, &a, &conv);
        if (!rc)
            rc = in->stored ? update_message(s, t, &m, in->turn_state) : insert_message(s, t, &m);
        else if (rc == ERR_NOT_FOUND)
            rc = 0;
    }
    if (!rc) {
        struct store_event ev = {m.employee_id,  "message", m.created_at,     m.response_ms,
                                 m.credits_used, -1,        m.conversation_id};
        rc = employees_event_add(s, t, &ev);
    }
    if (!rc && in->resumed) {
        /* a turn that paused ends: the message with its calls, as the API shows it */
        struct store_tool_call *calls = NULL;
        struct store_message_hook h = {&m, NULL, 0};
        rc = tool_calls_of_message(s, t, m.id, &a, &calls, &h.ncalls);
        h.calls = calls;
        if (!rc)
            rc = hook_record(s, t, "message.completed", STORE_HOOK_MESSAGE, &h, clock_now_ms());
    }
    if (!rc)
        rc = employees_busy(s, t, m.employee_id, -1);
    if (!rc)
        *charged = m.credits_used;
    arena_cleanup(&a);
    return rc;
}

/* See store_int.h. */
int chat_abort(struct store *s, const struct store_tenant *t, const char *employee_id,
               const char *reply_id, bool refund)
{
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    if (refund) {
        const struct credits_cause why = {STORE_CREDIT_CHAT, "message", reply_id, employee_id};
        int64_t charged;
        rc = credits_settle(s, t, 1, 0, &why, &charged);
    }
    if (!rc)
        rc = employees_busy(s, t, employee_id, -1);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int conversations_list(struct store *s, const struct store_tenant *t,
                       const struct store_conv_filter *f, struct arena *a,
                       struct store_conv_page *out)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT " CONV_COLS " FROM conversations WHERE org_id = $1"
                      " AND mode = $2 AND (CAST($3 AS TEXT) IS NULL OR employee_id = $3)"
                      " AND (CAST($5 AS TEXT) IS NULL OR (updated_at, id) < ($4, $5))"
                      " ORDER BY updated_at DESC, id DESC LIMIT $6");
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, f->employee_id);
    db_bind_int64(st, 4, f->before_updated);
    db_bind_text(st, 5, f->before_id);
    db_bind_int64(st, 6, (int64_t)f->limit + 1);
    out->items = arena_alloc(a, ((size_t)f->limit + 1) * sizeof(*out->items));
    while (!(rc = db_step(st, &row)) && row) {
        if (out->n == f->limit) {
            out->has_more = true;
            break;
        }
        read_conversation(st, a, &out->items[out->n++]);
    }
    db_done(st);
    return rc;
}

/* See store_int.h. */
int conversations_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    struct db_stmt *st =
        db_prepare(s, "DELETE FROM conversations WHERE org_id = $1 AND mode = $2 AND id = $3");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, id);
    return db_exec_one(st);
}

/* Up to 'limit' messages of 'st' (bound by the caller) into '*out'; with 'seq' at column 14. */
static int read_messages(struct db_stmt *st, unsigned limit, bool seq, struct arena *a,
                         struct store_message **out, size_t *n)
{
    struct store_message *v = arena_alloc(a, ((size_t)limit ? limit : 1) * sizeof(*v));
    size_t len = 0;
    bool row = false;
    int rc;
    while (!(rc = db_step(st, &row)) && row && len < limit) {
        read_message(st, a, &v[len]);
        if (seq)
            v[len].seq = db_int64(st, 14);
        len++;
    }
    db_done(st);
    *out = v;
    *n = len;
    return rc;
}

/* See store_int.h. */
int messages_list(struct store *s, const struct store_tenant *t, const char *conversation_id,
                  unsigned limit, struct arena *a, struct store_message **out, size_t *n)
{
    struct db_stmt *st = db_prepare(s, "SELECT * FROM (SELECT " MSG_COLS ", seq FROM messages"
                                       " WHERE org_id = $1 AND mode = $2 AND conversation_id = $3"
                                       " ORDER BY seq DESC LIMIT $4) AS m ORDER BY seq");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, conversation_id);
    db_bind_int64(st, 4, limit);
    return read_messages(st, limit, true, a, out, n);
}

/* See store_int.h. */
int messages_page(struct store *s, const struct store_tenant *t, const char *conversation_id,
                  bool newest_first, int64_t from_seq, unsigned limit, struct arena *a,
                  struct store_message **out, size_t *n)
{
    struct db_stmt *st = db_prepare(
        s, newest_first
               ? "SELECT " MSG_COLS ", seq FROM messages WHERE org_id = $1 AND"
                 " mode = $2 AND conversation_id = $3 AND (CAST($4 AS BIGINT) = 0 OR seq < $4)"
                 " ORDER BY seq DESC LIMIT $5"
               : "SELECT " MSG_COLS ", seq FROM messages WHERE org_id = $1 AND"
                 " mode = $2 AND conversation_id = $3 AND seq > $4"
                 " ORDER BY seq LIMIT $5");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, conversation_id);
    db_bind_int64(st, 4, from_seq);
    db_bind_int64(st, 5, limit);
    return read_messages(st, limit, true, a, out, n);
}

/* See store_int.h. */
int messages_get(struct store *s, const struct store_tenant *t, const char *conversation_id,
                 const char *id, struct arena *a, struct store_message *out)
{
    const char *texts[] = {conversation_id, id};
    return db_one(s,
                  "SELECT " MSG_COLS ", seq FROM messages WHERE org_id = $1 AND mode = $2 AND"
                  " conversation_id = $3 AND id = $4",
                  t, texts, 2, read_message_seq, a, out);
}

/* See store_int.h. */
int feedback_set(struct store *s, const struct store_tenant *t, const struct store_message *msg,
                 int rating, const char *comment, int64_t now)
{
    const char *fb[] = {msg->id, msg->conversation_id, comment};
    const int64_t fbi[] = {rating, now};
    const char *ev[] = {t->org_id, db_mode_name(t->mode), msg->employee_id, msg->id};
    const int64_t evi[] = {now, rating};
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = db_run(s,
                "INSERT INTO feedback (message_id, conversation_id, comment, rating, created_at)"
                " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (message_id) DO UPDATE SET"
                " rating = excluded.rating, comment = excluded.comment,"
                " created_at = excluded.created_at",
                fb, 3, fbi, 2);
    if (!rc)
        rc = db_run(s, "DELETE FROM employee_events WHERE message_id = $1 AND kind = 'rating'",
                    ev + 3, 1, NULL, 0);
    if (!rc)
        rc = db_run(s,
                    "INSERT INTO employee_events (org_id, mode, employee_id, message_id, kind, at,"
                    " value) VALUES ($1, $2, $3, $4, 'rating', $5, $6)",
                    ev, 4, evi, 2);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* ---- Idempotency ---- */

/* The record of 'key' if it is younger than 'max_age_ms': 0 and '*out' filled, or
 * ERR_NOT_FOUND. */
static int idem_read(struct store *s, const struct store_tenant *t, const char *key, int64_t now,
                     int64_t max_age_ms, struct arena *a, struct store_idem *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT fingerprint, state, coalesce(status, 0),"
                                       " content_type, body, created_at FROM idempotency_keys"
                                       " WHERE org_id = $1 AND mode = $2 AND key = $3");
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, key);
    rc = db_step(st, &row);
    if (!rc && row && db_int64(st, 5) >= now - max_age_ms) {
        size_t len;
        const void *fp = db_blob(st, 0, &len);
        const void *body;
        memset(out, 0, sizeof(*out));
        if (fp && len == 32)
            memcpy(out->fingerprint, fp, 32);
        out->state = (int)db_int64(st, 1);
        out->status = (int)db_int64(st, 2);
        out->content_type = db_arena_text(a, st, 3);
        body = db_blob(st, 4, &len);
        out->body_len = len;
        out->body = arena_strndup(a, body ? body : "", len);
        out->created_at = db_int64(st, 5);
    } else if (!rc) {
        rc = ERR_NOT_FOUND;
    }
    db_done(st);
    return rc;
}

/* See store_int.h. Two requests with one key, on two nodes, race to the insert: the one that
 * loses reads the winner's record on its second try. */
int idem_claim(struct store *s, const struct store_tenant *t, const char *key,
               const unsigned char fingerprint[32], int64_t now, int64_t max_age_ms,
               struct arena *a, struct store_idem *out)
{
    const char *texts[] = {t->org_id, db_mode_name(t->mode), key};
    int rc = ERR_CONFLICT;

    for (int attempt = 0; attempt < 2 && rc == ERR_CONFLICT; attempt++) {
        struct db_stmt *st;
        rc = db_begin(s, DB_TX_WRITE);
        if (rc)
            return rc;
        rc = idem_read(s, t, key, now, max_age_ms, a, out);
        if (rc == 0) {
            db_commit(s);
            return ERR_CONFLICT;
        }
        if (rc == ERR_NOT_FOUND)
            rc = db_run(s,
                        "DELETE FROM idempotency_keys WHERE org_id = $1 AND mode = $2 AND"
                        " key = $3",
                        texts, 3, NULL, 0);
        if (!rc) {
            st = db_prepare(s, "INSERT INTO idempotency_keys (org_id, mode, key, fingerprint,"
                               " state, created_at, node_id) VALUES ($1, $2, $3, $4, 0, $5, $6)");
            if (!st) {
                rc = ERR_STORE;
            } else {
                db_bind_tenant(st, t);
                db_bind_text(st, 3, key);
                db_bind_blob(st, 4, fingerprint, 32);
                db_bind_int64(st, 5, now);
                db_bind_text(st, 6, store_node_id());
                rc = db_exec(st);
            }
        }
        if (!rc)
            rc = db_commit(s);
        if (rc)
            db_rollback(s);
    }
    return rc == ERR_CONFLICT ? ERR_STORE : rc;
}

/* See store_int.h. */
int idem_complete(struct store *s, const struct store_tenant *t, const char *key, int status,
                  const char *content_type, const char *body, size_t len)
{
    struct db_stmt *st = db_prepare(s, "UPDATE idempotency_keys SET state = 1, status = $4,"
                                       " content_type = $5, body = $6 WHERE org_id = $1 AND"
                                       " mode = $2 AND key = $3");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, key);
    db_bind_int64(st, 4, status);
    db_bind_text(st, 5, content_type);
    db_bind_blob(st, 6, body ? body : "", len);
    return db_exec(st);
}

/* See store_int.h. */
int idem_release(struct store *s, const struct store_tenant *t, const char *key)
{
    const char *texts[] = {t->org_id, db_mode_name(t->mode), key};
    return db_run(s,
                  "DELETE FROM idempotency_keys WHERE org_id = $1 AND mode = $2 AND key = $3"
                  " AND state = 0",
                  texts, 3, NULL, 0);
}
