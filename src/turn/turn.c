/* SPDX-License-Identifier: MIT */
/*
 * turn.c: one turn of a conversation with an employee (see turn.h).
 *
 * DESIGN: turn_start() checks, then in one store transaction stores the user message (and a
 * new conversation), holds one credit for a live key and marks the employee busy. It then
 * starts the knowledge search and the engine and returns: the door's answer is deferred or
 * streamed, so no thread waits for the model. A blocking turn whose balance is well above what
 * can run at once does not wait for that transaction: the committer commits it while the
 * engine runs, and the turn ends when both are done (turn_end), answering the error the door
 * would have answered (402, 500) if the transaction failed. A struct turn owns everything the
 * reply needs; the engine's done() hands it to the store's committer (store_committer_submit),
 * which stores the reply, charges the rest of the cost (never below zero), counts the
 * statistics fact and records the Idempotency-Key answer in one transaction shared with the
 * other replies that end at the same time (group commit: one fsync for all of them); only then
 * is the client answered. A client that leaves a stream does not stop any of it.
 */
#include "turn.h"

#include "../auth/auth.h"
#include "../core/clock.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../json/json.h"
#include "../ledger/ledger.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A call of one of the client's tools by the model (the OpenAI door): journaled with the
 * step's other calls, then given to the client, which answers it in a follow-up request. */
struct client_call {
    char id[ID_MAX];       /* call_...: the journal's, and the id the client is given */
    const char *model_id;  /* the model's own id of the call */
    const char *name;      /* the client's tool, as the model called it */
    const char *arguments; /* as the model wrote them */
};

struct turn {
    const struct turn_env *env;
    struct turn_out out;
    struct store_tenant tenant;
    bool stream;
    const struct turn_format *fmt;
    struct turn_view v; /* what the format sees; its strings point into the turn */
    char reply_id[ID_MAX];
    char conv_id[ID_MAX];
    char emp_id[ID_MAX];
    char *idem_key;
    char *sources; /* JSON array text of the passages the reply drew on */
    bool live;
    bool reserved;
    int64_t created_at;
    int64_t t0_us;
    struct buf content;
    struct buf transcript; /* the event stream as sent, for Idempotency-Key replay */
    /* Once the engine is done: the committer's job, and what it needs and makes. */
    struct store_job job;
    struct store_chat_finish fin;
    struct llm_usage usage;
    int64_t charged;
    struct buf answer; /* the reply's JSON */
    struct buf tail;   /* streaming: the last events, sent once the reply is durable */
    /* The turn's first writes, and what the end of the turn waits for (turn_end). */
    struct store_chat_begin begin; /* strings in the request's arena, as it lives longer */
    struct store_chat_begin_job bjob;
    bool early;       /* the first writes were not waited for */
    atomic_int parts; /* the first writes and the engine: those not done yet */
    int begin_rc;
    bool engine_failed;
    struct err engine_err;
    /* Until the engine starts (after the knowledge search): */
    struct llm_request lreq; /* strings in the request's arena, or 'arena' */
    struct llm *engine;
    char *context; /* JSON text of the request's context, or NULL */
    struct arena arena;
    /* Tools (contract §19): what the employee's rules offer (n 0: none, the plain turn), and
     * the work of the steps that called them. */
    struct act_offer offer;
    uint32_t scopes;
    int org_tier;
    struct llm_tool_call *got; /* the calls of the model's last step (arena) */
    size_t ngot;
    struct act_steps steps; /* the turn's messages after the user message, calls made (arena) */
    struct act_step step;   /* the step running */
    int nmodel;             /* model calls made */
    int64_t ncalls;         /* calls journaled */
    bool stored;            /* the reply is stored, in_progress */
    bool no_credits;        /* live, and the balance was 0 after the last step's charge */
    /* An early turn's first steps wait for its first writes to be known (begin_done). */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool begin_known;
    int64_t charged_before;
    struct llm_usage total; /* every model call's usage */
    const char *stop_reason;
    json_t *records;    /* the calls as the API shows them */
    char *records_text; /* the same as text, once the turn ends */
    /* Pausing for approvals and going on (contract §19). */
    bool can_pause;         /* the door can answer a paused turn (POST /v1/chat) */
    bool resumed;           /* a turn that paused, going on without a client */
    bool events;            /* the events are kept (the message's events route replays them) */
    size_t kept_len;        /* the transcript's bytes kept so far */
    unsigned kept_seq;      /* the last event kept */
    char *requested_by;     /* the key that started the turn, or NULL */
    char *knowledge;        /* JSON text of the passages the model was given, or NULL */
    json_t *approvals;      /* the approvals the last step asked for, as the API shows them */
    int64_t history_before; /* a resumed turn: its history is the messages before this (seq) */
    /* The client's own tools (the OpenAI door, contract §19): see the section below. */
    const struct llm_tool *client; /* the last 'nclient' of lreq.tools */
    size_t nclient;
    struct client_call *ccalls; /* the client's calls of the step running (arena) */
    size_t nccalls;
    char *client_text;             /* the calls the turn stopped for, as the door shows them */
    char *keep_state;              /* the state kept with a reply that stopped for them */
    size_t content_before;         /* a follow-up: the reply's text before this request */
    struct llm_usage usage_before; /* a follow-up: the usage before this request */
};

/* ---- Output ---- */

/* Add what the format wrote in 'ev' (one or more events) to the transcript and send it. */
static void emit(struct turn *j, const struct buf *ev)
{
    buf_append(&j->transcript, buf_ptr(ev), buf_len(ev));
    if (j->stream)
        j->out.write(j->out.ud, buf_ptr(ev), buf_len(ev));
}

/* The events not kept yet (the transcript since the last keep), marked kept; borrowed from
 * the transcript until it grows (NULL text: none, or the turn keeps no events). */
static struct store_events_chunk unkept(struct turn *j)
{
    struct store_events_chunk ev;
    memset(&ev, 0, sizeof(ev));
    if (!j->events || buf_len(&j->transcript) <= j->kept_len)
        return ev;
    ev.text = buf_ptr(&j->transcript) + j->kept_len;
    ev.len = buf_len(&j->transcript) - j->kept_len;
    ev.first_seq = (int64_t)j->kept_seq + 1;
    ev.last_seq = j->v.seq;
    j->kept_len = buf_len(&j->transcript);
    j->kept_seq = j->v.seq;
    return ev;
}

/* ---- The turn's memory ---- */

/* Turns that went on without a client (turn_resume) and have not ended yet, in this process.
 * A burst of decisions does not start them all at once: past RESUMED_MAX the others stay in
 * the store, ready, for the keeper's next looks. */
#define RESUMED_MAX 64
static atomic_int resumed_live;

static void turn_free(struct turn *j)
{
    if (j->resumed)
        atomic_fetch_sub(&resumed_live, 1);
    buf_cleanup(&j->content);
    buf_cleanup(&j->transcript);
    buf_cleanup(&j->answer);
    buf_cleanup(&j->tail);
    free(j->idem_key);
    free(j->sources);
    free(j->context);
    free(j->requested_by);
    free(j->knowledge);
    act_step_cleanup(&j->step);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    json_decref(j->records);
    json_decref(j->approvals);
    free(j->records_text);
    free(j->client_text);
    free(j->keep_state);
    arena_cleanup(&j->arena);
    free(j);
}

static void on_delta(void *ud, const char *text, size_t len)
{
    struct turn *j = ud;
    if (buf_append(&j->content, text, len))
        return; /* past 4 MiB the reply is cut; the deltas sent so far stay equal to it */
    if (j->stream || j->events) {
        struct buf ev;
        buf_init(&ev, (4u << 20) + 4096);
        j->fmt->delta(&j->v, text, len, &ev);
        j->v.sent_delta = true;
        emit(j, &ev);
        buf_cleanup(&ev);
    }
}

/* The turn failed after its first writes: its held credit back, the employee's work ended,
 * and the error answered (a stream's error event; a blocking turn's error). */
static void fail(struct turn *j, const struct err *e)
{
    struct store *s = store_pool_get(j->env->pool);

    if (store_chat_abort(s, &j->tenant, j->emp_id, j->reply_id, j->reserved))
        log_error("chat: cannot end the failed reply %s cleanly", j->reply_id);
    if (j->stream) {
        struct buf ev;
        buf_init(&ev, 8192);
        j->fmt->failed(&j->v, e, &ev);
        emit(j, &ev);
        buf_cleanup(&ev);
        if (j->idem_key && store_idem_release(s, &j->tenant, j->idem_key))
            log_error("chat: cannot release the Idempotency-Key of %s", j->reply_id);
        store_pool_put(j->env->pool, s);
        j->out.close(j->out.ud);
    } else {
        store_pool_put(j->env->pool, s);
        j->out.end(j->out.ud, e->kind ? (int)e->kind : ERR_UPSTREAM, e, NULL, 0);
    }
}

#define TURN_OF(p) ((struct turn *)(void *)((char *)(p)-offsetof(struct turn, job)))

/* The answer once the reply is stored, in the format: the body of a blocking reply, or the
 * last events of a stream (added to the transcript). */
static void prepare_answer(struct turn *j)
{
    j->v.content = buf_ptr(&j->content) + j->content_before;
    j->v.credits = j->charged;
    j->v.usage = j->usage;
    j->v.sources = j->sources;
    j->v.tool_calls = j->records_text ? j->records_text : "[]";
    j->v.stop_reason = j->stop_reason ? j->stop_reason : "completed";
    j->v.status = j->fin.reply.status ? j->fin.reply.status : "completed";
    j->v.error = j->fin.reply.error;
    j->v.client_calls = j->client_text;
    if (j->stream || j->events) {
        buf_reset(&j->tail);
        j->fmt->completed(&j->v, &j->tail);
        buf_append(&j->transcript, buf_ptr(&j->tail), buf_len(&j->tail));
    }
    if (!j->stream) {
        buf_reset(&j->answer);
        j->fmt->answer(&j->v, &j->answer);
    }
}

/* In the committer's transaction: the reply stored and charged, and with an Idempotency-Key
 * the answer recorded in the same commit. */
static int finish_apply(struct store *s, struct store_job *job)
{
    struct turn *j = TURN_OF(job);
    int rc = store_chat_finish_in(s, &j->tenant, &j->fin, &j->charged);
    if (rc)
        return rc;
    prepare_answer(j);
    if (j->stored && j->events) {
        struct store_events_chunk ev = unkept(j);
        rc = store_message_events_add(s, &j->tenant, j->reply_id, &ev);
        if (rc)
            return rc;
    }
    if (j->idem_key) {
        const struct buf *b = j->stream ? &j->transcript : &j->answer;
        if (store_idem_complete(s, &j->tenant, j->idem_key, 200,
                                j->stream ? "text/event-stream" : "application/json", buf_ptr(b),
                                buf_len(b)))
            log_error("chat: cannot record the Idempotency-Key response of %s", j->reply_id);
    }
    return 0;
}

/* Answer the client what the turn prepared: a stream's last events (j->tail) and its end, or
 * a blocking turn's body (j->answer). */
static void deliver(struct turn *j)
{
    if (j->stream) {
        j->out.write(j->out.ud, buf_ptr(&j->tail), buf_len(&j->tail));
        j->out.close(j->out.ud);
    } else {
        size_t len;
        char *body = buf_take(&j->answer, &len);
        j->out.end(j->out.ud, 0, NULL, body, len);
    }
}

/* The reply is durable (rc 0), or it could not be stored: answer the client. */
static void finish_done(struct store_job *job, int rc)
{
    struct turn *j = TURN_OF(job);

    if (rc) {
        struct err fe;
        log_error("chat: cannot store the reply %s (%s)", j->reply_id, err_name(rc));
        err_set(&fe, ERR_STORE, "internal_error", NULL, "The reply could not be stored.");
        fail(j, &fe);
    } else {
        deliver(j);
    }
    turn_free(j);
}

/* The error of first writes that failed with 'rc' (ERR_LIMIT: no credit left); returns rc. */
static int begin_error(int rc, struct err *e)
{
    if (rc == ERR_LIMIT)
        return ledger_insufficient(e);
    return err_set(e, rc, "internal_error", NULL, "chat begin failed");
}

/* Both parts are done, the first writes and the engine: answer an error, or store the reply. */
static void turn_end(struct turn *j)
{
    if (j->begin_rc) {
        /* nothing was stored: the answer is the one the door would have given */
        struct err e;
        int rc = begin_error(j->begin_rc, &e);
        j->out.end(j->out.ud, rc, &e, NULL, 0);
        turn_free(j);
        return;
    }
    if (j->early && j->out.conversation) /* it exists now, whatever the engine did */
        j->out.conversation(j->out.ud, j->conv_id);
    if (j->engine_failed) {
        fail(j, &j->engine_err);
        turn_free(j);
        return;
    }
    j->job.apply = finish_apply;
    j->job.done = finish_done;
    if (j->env->committer) {
        store_committer_submit(j->env->committer, &j->job); /* 'j' is the committer's now */
    } else {
        /* no committer (tools, tests): the same transaction on a handle of the pool */
        struct store *s = store_pool_get(j->env->pool);
        j->job.next = NULL;
        store_group_apply(s, &j->job);
        store_pool_put(j->env->pool, s);
        finish_done(&j->job, j->job.rc);
    }
}

/* One part of the turn is done; the last one ends it (on its thread). */
static void part_done(struct turn *j)
{
    if (atomic_fetch_sub(&j->parts, 1) == 1)
        turn_end(j);
}

/* The first writes of a turn that did not wait for them are committed, or failed. */
static void begin_done(struct store_job *job, int rc)
{
    struct turn *j = (struct turn *)(void *)((char *)job - offsetof(struct turn, bjob.job));
    j->begin_rc = rc;
    pthread_mutex_lock(&j->mu);
    j->begin_known = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    part_done(j);
}

/* ---- The reply's end ---- */

/* The turn's last model call is done with usage 'u' (NULL: no model call is left to charge,
 * its steps were): the reply (j->content) is stored, charged and answered (turn_end), with
 * 'status' and, failed, 'error'. */
static void reply_done(struct turn *j, const struct llm_usage *u, const char *status,
                       const char *error)
{
    j->usage.input_tokens = j->total.input_tokens - j->usage_before.input_tokens;
    j->usage.output_tokens = j->total.output_tokens - j->usage_before.output_tokens;
    j->records_text = j->records ? json_dumps(j->records, JSON_COMPACT) : NULL;
    memset(&j->fin, 0, sizeof(j->fin));
    j->fin.reply.id = j->reply_id;
    j->fin.reply.conversation_id = j->conv_id;
    j->fin.reply.employee_id = j->emp_id;
    j->fin.reply.role = "assistant";
    j->fin.reply.content = buf_ptr(&j->content);
    j->fin.reply.sources = j->sources ? j->sources : "[]";
    /* the last model call's price; none when it was charged with its step (NULL) */
    j->fin.reply.credits_used = u ? ledger_price(u, j->tenant.mode) : 0;
    j->fin.reply.input_tokens = j->total.input_tokens;
    j->fin.reply.output_tokens = j->total.output_tokens;
    j->fin.reply.response_ms = (clock_mono_us() - j->t0_us) / 1000;
    j->fin.reply.created_at = j->created_at;
    j->fin.reply.status = status;
    j->fin.reply.stop_reason = j->stop_reason ? j->stop_reason : "completed";
    j->fin.reply.error = error;
    j->fin.reserved = j->reserved;
    j->fin.charge = j->live;
    j->fin.stored = j->stored;
    j->fin.charged_before = j->charged_before;
    j->fin.resumed = j->resumed;
    j->fin.turn_state = j->keep_state;
    part_done(j);
}

static void step_start(struct turn *j, const struct llm_usage *u);

/* The client's own tools (the OpenAI door): see their section at the end. */
static size_t client_split(struct turn *j, const struct llm_tool_call **out);
static void client_rows(struct turn *j, struct store_tool_call *rows, int64_t now);
static void client_stop(struct turn *j);
static int client_offer(struct turn *j, const struct turn_req *t, struct err *e);
static int turn_go_on(const struct turn_env *env, struct store *s, const struct turn_req *t,
                      const struct turn_out *out, struct err *e);

static void on_done(void *ud, const struct llm_usage *u, const struct err *e)
{
    struct turn *j = ud;

    if (e && j->stored) {
        /* the reply is stored with the work of its tools: it ends failed, with that work */
        reply_done(j, NULL, "failed", e->msg);
        return;
    }
    if (e) {
        j->engine_failed = true;
        j->engine_err = *e;
        part_done(j);
        return;
    }
    j->nmodel++;
    j->total.input_tokens += u->input_tokens;
    j->total.output_tokens += u->output_tokens;
    if (j->ngot > 0 && j->lreq.ntools > 0) {
        step_start(j, u);
        return;
    }
    reply_done(j, u, "completed", NULL);
}

/* The model's calls of the step that ends: copied into the turn, for step_start(). */
static void on_tool_calls(void *ud, const struct llm_tool_call *calls, size_t n)
{
    struct turn *j = ud;
    j->got = arena_alloc(&j->arena, (n ? n : 1) * sizeof(*j->got));
    for (size_t i = 0; i < n; i++) {
        j->got[i].id = arena_strdup(&j->arena, calls[i].id ? calls[i].id : "");
        j->got[i].name = arena_strdup(&j->arena, calls[i].name ? calls[i].name : "");
        j->got[i].arguments =
            arena_strdup(&j->arena, calls[i].arguments ? calls[i].arguments : "{}");
    }
    j->ngot = n;
}

/* Call the engine for the turn's next step (the first one too): its request is j->lreq with
 * the steps so far. 'j' may be gone when this returns. */
static void call_engine(struct turn *j)
{
    struct llm_request lreq = j->lreq;
    struct llm_sink sink = {0};

    lreq.steps = j->steps.v;
    lreq.nsteps = j->steps.n;
    j->ngot = 0;
    sink.delta = on_delta;
    sink.tool_calls = j->lreq.ntools ? on_tool_calls : NULL;
    sink.done = on_done;
    sink.ud = j;
    llm_call(j->engine, &lreq, &sink);
}

/* ---- Steps that call tools (contract §19) ---- */

/* Send tool event 'event' of call record 'rec' on a stream. */
static void tool_event(struct turn *j, const char *event, const json_t *rec)
{
    struct buf ev;
    char *text;
    if (!(j->stream || j->events) || !j->fmt->tool)
        return;
    text = json_dumps(rec, JSON_COMPACT);
    buf_init(&ev, (64u << 10) + 4096);
    if (text)
        j->fmt->tool(&j->v, event, text, &ev);
    emit(j, &ev);
    buf_cleanup(&ev);
    free(text);
}

/* Approval 'p' as the API shows it (a new reference). */
static json_t *approval_json(const struct store_approval *p)
{
    struct buf b;
    struct jw w;
    json_t *o = NULL;
    buf_init(&b, 1u << 20);
    jw_init(&w, &b);
    act_approval_write(&w, p);
    if (!jw_finish(&w))
        o = json_loads(buf_ptr(&b), 0, NULL);
    buf_cleanup(&b);
    return o ? o : json_object();
}

/* Send approval.requested for approval 'p' (its record) on a stream, or keep it. */
static void approval_event(struct turn *j, const json_t *p)
{
    struct buf ev;
    char *text;
    if (!(j->stream || j->events) || !j->fmt->approval)
        return;
    text = json_dumps(p, JSON_COMPACT);
    buf_init(&ev, (64u << 10) + 4096);
    if (text)
        j->fmt->approval(&j->v, text, &ev);
    emit(j, &ev);
    buf_cleanup(&ev);
    free(text);
}

/* The turn stops before another model call, for 'reason': the reply says so after what the
 * model wrote, and ends as completed with that stop reason. */
static void stop(struct turn *j, const struct llm_usage *u, const char *reason, const char *why)
{
    const char *lead = buf_len(&j->content) ? "\n\n" : "";
    char note[300];
    snprintf(note, sizeof(note), "%s(I stopped here: %s.)", lead, why);
    on_delta(j, note, strlen(note));
    j->stop_reason = reason;
    reply_done(j, u, "completed", NULL);
}

/* Whether the turn may make another model call; else it is stopped (true: stopped). */
static bool stopped_at_limit(struct turn *j)
{
    char why[120];
    const char *reason = act_limit(j->no_credits, j->nmodel, j->env->cfg->agent_max_steps, j->t0_us,
                                   why, sizeof(why));
    if (!reason)
        return false;
    stop(j, NULL, reason, why); /* the last model call was charged with its step */
    return true;
}

/* The journal's row of call 'c' (seq 'seq' of the message). */
static struct store_tool_call call_row(const struct turn *j, const struct act_call *c, int64_t seq)
{
    struct store_tool_call row;
    memset(&row, 0, sizeof(row));
    row.id = c->id;
    row.message_id = j->reply_id;
    row.model_id = c->model_id;
    row.tool = c->tool ? c->tool->def->name : c->model_name;
    row.arguments = c->arguments;
    row.status = c->pending    ? "pending_approval"
                 : !c->ended   ? "running"
                 : c->rejected ? "rejected"
                 : c->failed   ? "failed"
                               : "completed";
    row.result = c->result;
    row.error = c->error;
    row.seq = seq;
    row.step = j->nmodel - 1;
    row.started_at = clock_now_ms();
    row.completed_at = c->ended ? c->completed_at : 0;
    return row;
}

/* The ends of a step's calls, written by the committer (group commit) while the turn goes on:
 * the journal before a call starts must be durable first, its end need not hold the next model
 * call back. The committer commits in order, so the ends are stored before the reply. */
struct ends_job {
    struct store_job job;
    struct store_tenant tenant;
    struct store_tool_call *rows; /* strings owned below */
    size_t n;
    char **owned;
    size_t nowned;
    char message_id[ID_MAX];
    struct store_events_chunk events; /* text owned (NULL: none) */
};

static int ends_apply(struct store *s, struct store_job *job)
{
    struct ends_job *ej = (struct ends_job *)(void *)job;
    int rc = 0;
    for (size_t i = 0; !rc && i < ej->n; i++)
        rc = store_tool_call_end(s, &ej->tenant, &ej->rows[i]);
    if (!rc && ej->events.text)
        rc = store_message_events_add(s, &ej->tenant, ej->message_id, &ej->events);
    return rc;
}

static void ends_done(struct store_job *job, int rc)
{
    struct ends_job *ej = (struct ends_job *)(void *)job;
    if (rc)
        log_error("chat: cannot journal the end of %zu tool calls (%s)", ej->n, err_name(rc));
    for (size_t i = 0; i < ej->nowned; i++)
        free(ej->owned[i]);
    free(ej->owned);
    free((char *)(uintptr_t)ej->events.text);
    free(ej->rows);
    free(ej);
}

/* Keep a copy of 's' (may be NULL) for job 'ej'. */
static const char *keep(struct ends_job *ej, const char *s)
{
    char *c = s ? xstrdup(s) : NULL;
    if (c)
        ej->owned[ej->nowned++] = c;
    return c;
}

/* Journal the ends of the 'n' calls of 'st'. */
static void journal_ends(struct turn *j, const struct act_step *st)
{
    struct ends_job *ej = xcalloc(1, sizeof(*ej));
    ej->tenant = j->tenant;
    ej->rows = xcalloc(st->n ? st->n : 1, sizeof(*ej->rows));
    ej->owned = xcalloc(3 * (st->n ? st->n : 1), sizeof(*ej->owned));
    ej->n = st->n;
    for (size_t i = 0; i < st->n; i++) {
        struct store_tool_call row = call_row(j, &st->calls[i], 0);
        ej->rows[i].id = keep(ej, row.id);
        ej->rows[i].status = row.status; /* a constant */
        ej->rows[i].result = keep(ej, row.result);
        ej->rows[i].error = keep(ej, row.error);
        ej->rows[i].completed_at = row.completed_at;
    }
    if (j->stored) {
        struct store_events_chunk ev = unkept(j);
        snprintf(ej->message_id, sizeof(ej->message_id), "%s", j->reply_id);
        ej->events = ev;
        ej->events.text = ev.text ? xstrndup(ev.text, ev.len) : NULL; /* the turn goes on */
    }
    ej->job.apply = ends_apply;
    ej->job.done = ends_done;
    if (j->env->committer) {
        store_committer_submit(j->env->committer, &ej->job);
    } else {
        struct store *s = store_pool_get(j->env->pool);
        ej->job.next = NULL;
        store_group_apply(s, &ej->job);
        store_pool_put(j->env->pool, s);
        ends_done(&ej->job, ej->job.rc);
    }
}

/* The step's calls have all ended (on the pool thread of the last one): their ends journaled
 * and shown, the model given the results, and called again unless a limit stops the turn. */
static void pause_turn(struct turn *j);

/* Show the ends of the step's calls not shown yet: their records, and tool.completed. */
static void show_ends(struct turn *j, struct act_step *st)
{
    size_t base = json_array_size(j->records) - st->n;
    for (size_t i = 0; i < st->n; i++) {
        struct act_call *c = &st->calls[i];
        struct store_tool_call row;
        json_t *rec;
        if (!c->ended || c->shown)
            continue;
        c->shown = true;
        row = call_row(j, c, 0);
        rec = json_array_get(j->records, base + i);
        json_object_set_new(rec, "status", json_string(row.status));
        json_object_set_new(rec, "result",
                            c->result ? json_loads(c->result, JSON_DECODE_ANY, NULL) : json_null());
        json_object_set_new(rec, "error", jo_string(row.error));
        jo_time(rec, "completed_at", row.completed_at);
        tool_event(j, "tool.completed", rec);
    }
}

/* Whether a call of 'st' waits for a person's decision. */
static bool step_waits(const struct act_step *st)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->calls[i].pending)
            return true;
    return false;
}

static void step_ran(void *ud, struct act_step *st)
{
    struct turn *j = ud;

    show_ends(j, st);
    if (step_waits(st)) {
        pause_turn(j); /* its ends are journaled with the pause */
        return;
    }
    journal_ends(j, st);
    if (j->nccalls) {
        client_stop(j); /* the client runs its calls: the turn ends with them */
        return;
    }
    /* what the model is shown: its calls, then one result each */
    act_steps_add(&j->steps, &j->arena, j->got, j->ngot, st);
    act_step_cleanup(&j->step);
    if (stopped_at_limit(j))
        return;
    call_engine(j);
}

/* What the turn goes on from after a pause or a crash that its rows do not hold (JSON text,
 * malloc): see sql/020_approvals.sql. */
static char *state_text(const struct turn *j, bool reserved)
{
    json_t *o = json_object();
    char *text;
    json_object_set_new(o, "context", j->context ? json_loads(j->context, 0, NULL) : json_null());
    json_object_set_new(o, "scopes", json_integer(j->scopes));
    json_object_set_new(o, "nmodel", json_integer(j->nmodel));
    json_object_set_new(o, "running_ms", json_integer((clock_mono_us() - j->t0_us) / 1000));
    json_object_set_new(o, "charged", json_integer(j->charged_before));
    json_object_set_new(o, "seq", json_integer(j->v.seq));
    json_object_set_new(o, "sent_delta", json_boolean(j->v.sent_delta));
    json_object_set_new(o, "input_tokens", json_integer(j->total.input_tokens));
    json_object_set_new(o, "output_tokens", json_integer(j->total.output_tokens));
    json_object_set_new(o, "reserved", json_boolean(reserved));
    json_object_set_new(o, "requested_by", jo_string(j->requested_by));
    json_object_set_new(o, "searched", json_boolean(j->lreq.knowledge_searched));
    json_object_set_new(o, "knowledge",
                        j->knowledge ? json_loads(j->knowledge, 0, NULL) : json_array());
    text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

/* The approval call 'c' (journal row 'row') asks for, into '*p' (strings borrowed). */
static void approval_of(const struct turn *j, const struct act_call *c,
                        const struct store_tool_call *row, int64_t now, struct store_approval *p)
{
    memset(p, 0, sizeof(*p));
    p->id = row->approval_id;
    p->employee_id = j->emp_id;
    p->tool_call_id = row->id;
    p->tool = row->tool;
    p->arguments = c->arguments;
    p->status = "pending";
    p->requested_by_type = act_requester_type(j->requested_by);
    p->requested_by_id = j->requested_by;
    p->conversation_id = j->conv_id;
    p->message_id = j->reply_id;
    p->step_index = -1;
    p->requested_at = now;
    p->expires_at = now + (int64_t)j->env->cfg->approval_ttl_hours * 3600000;
}

/* The journal of a step, before any call starts (on a pool thread): with the first step, the
 * reply itself, in_progress; the approvals its calls ask for; the events so far. */
static int journal_step(struct turn *j, int64_t price, int64_t *balance)
{
    struct store_message reply;
    size_t nc = j->nccalls; /* the client's calls come first: see client_rows() */
    size_t n = j->step.n + nc ? j->step.n + nc : 1;
    struct store_tool_call *rows = xcalloc(n, sizeof(*rows));
    struct store_approval *approvals = xcalloc(n, sizeof(*approvals));
    char(*approval_ids)[ID_MAX] = xcalloc(n, sizeof(*approval_ids));
    struct store_tool_step in;
    struct store *s;
    int64_t charged = 0, now = clock_now_ms();
    char *state;
    int rc = 0;

    memset(&reply, 0, sizeof(reply));
    reply.id = j->reply_id;
    reply.conversation_id = j->conv_id;
    reply.employee_id = j->emp_id;
    reply.role = "assistant";
    reply.content = "";
    reply.sources = j->sources ? j->sources : "[]";
    reply.response_ms = -1;
    reply.created_at = j->created_at;
    reply.status = "in_progress";
    memset(&in, 0, sizeof(in));
    client_rows(j, rows, now);
    for (size_t i = 0; i < j->step.n; i++) {
        struct store_tool_call *row = &rows[nc + i];
        *row = call_row(j, &j->step.calls[i], j->ncalls + (int64_t)(nc + i));
        if (j->step.calls[i].pending) {
            if (id_new("apr", approval_ids[in.napprovals], ID_MAX))
                rc = ERR_INTERNAL;
            row->approval_id = approval_ids[in.napprovals];
            approval_of(j, &j->step.calls[i], row, now, &approvals[in.napprovals++]);
        }
    }
    in.held = j->reserved && j->live;
    state = state_text(j, j->reserved && !in.held); /* as it is once the step is journaled */
    in.reply = j->stored ? NULL : &reply;
    in.message_id = j->reply_id;
    in.content = buf_ptr(&j->content);
    in.turn_state = state;
    in.calls = rows;
    in.n = nc + j->step.n;
    in.approvals = approvals;
    in.charge = j->live;
    in.price = price;
    in.employee_id = j->emp_id;
    in.events = unkept(j);
    s = store_pool_get(j->env->pool);
    if (!rc)
        rc = store_tool_step_begin(s, &j->tenant, &in, &charged, balance);
    store_pool_put(j->env->pool, s);
    if (!rc) {
        if (in.held)
            j->reserved = false; /* the hold went into the step's price */
        j->stored = true;
        j->charged_before += charged;
        j->ncalls += (int64_t)(nc + j->step.n);
        if (!j->records)
            j->records = json_array();
        for (size_t i = 0; i < nc + j->step.n; i++)
            json_array_append_new(j->records, act_call_json(&rows[i]));
        json_decref(j->approvals); /* the step before's */
        j->approvals = json_array();
        for (size_t i = 0; i < in.napprovals; i++)
            json_array_append_new(j->approvals, approval_json(&approvals[i]));
    }
    free(state);
    free(approval_ids);
    free(approvals);
    free(rows);
    return rc;
}

struct step_job {
    struct turn *j;
    struct llm_usage u;
};

/* A step's calls, journaled then run (a pool thread's work). */
static void step_begin(void *ud)
{
    struct step_job *sj = ud;
    struct turn *j = sj->j;
    int64_t balance = 0;
    struct act_job job;
    size_t first;
    int rc;

    if (j->early) {
        /* the steps write after the user message: wait for it (the committer's next commit) */
        pthread_mutex_lock(&j->mu);
        while (!j->begin_known)
            pthread_cond_wait(&j->cv, &j->mu);
        pthread_mutex_unlock(&j->mu);
        if (j->begin_rc) { /* nothing was stored: the turn answers what the door would have */
            free(sj);
            act_step_cleanup(&j->step);
            part_done(j);
            return;
        }
    }
    rc = journal_step(j, ledger_price(&sj->u, j->tenant.mode), &balance);
    free(sj);
    if (rc && j->stored) {
        /* the reply is stored with its earlier steps: it ends failed, with that work */
        act_step_cleanup(&j->step);
        reply_done(j, NULL, "failed", "The turn's tool calls could not be recorded.");
        return;
    }
    if (rc) {
        struct err e;
        err_set(&e, ERR_STORE, "internal_error", NULL,
                "The turn's tool calls could not be "
                "recorded.");
        j->engine_failed = true;
        j->engine_err = e;
        part_done(j);
        return;
    }
    /* a live organization left without credits runs this step's calls, then stops */
    j->no_credits = j->live && balance <= 0;
    first = json_array_size(j->records) - j->step.n;
    for (size_t i = 0, k = 0; i < j->step.n; i++) {
        struct act_call *c = &j->step.calls[i];
        json_t *rec = json_array_get(j->records, first + i);
        if (c->ended) {
            c->shown = true;
            tool_event(j, "tool.completed", rec);
        } else if (c->pending) {
            approval_event(j, json_array_get(j->approvals, k++));
        } else {
            tool_event(j, "tool.started", rec);
        }
    }
    memset(&job, 0, sizeof(job));
    job.tenant = &j->tenant;
    job.scopes = j->scopes;
    job.requested_by = j->requested_by;
    job.org_tier = j->org_tier;
    job.employee_id = j->emp_id;
    act_step_run(j->env->tools, &j->step, &job, step_ran, j);
}

/* ---- Pausing for approvals (contract §19) ---- */

/* The paused reply as the door shows it: the view filled in, the message.completed event
 * (status requires_approval) appended to the transcript (and to j->tail), the Message in
 * j->answer. */
static void pause_answer(struct turn *j)
{
    free(j->records_text);
    j->records_text = j->records ? json_dumps(j->records, JSON_COMPACT) : NULL;
    j->v.content = buf_ptr(&j->content);
    j->v.credits = j->charged_before;
    j->v.usage = j->total;
    j->v.sources = j->sources;
    j->v.tool_calls = j->records_text ? j->records_text : "[]";
    j->v.stop_reason = NULL;
    j->v.status = "requires_approval";
    j->v.error = NULL;
    buf_reset(&j->tail);
    if (j->stream || j->events) {
        j->fmt->completed(&j->v, &j->tail);
        buf_append(&j->transcript, buf_ptr(&j->tail), buf_len(&j->tail));
    }
    buf_reset(&j->answer);
    if (!j->stream)
        j->fmt->answer(&j->v, &j->answer);
}

static void continue_step(struct turn *j);

/*
 * The step's calls that could run have ended and some wait for a person (on a pool thread):
 * the turn pauses (store_turn_pause). Paused, it answers at the pause and is freed: it holds
 * nothing while it waits. Decided meanwhile, it goes on at once.
 */
static void pause_turn(struct turn *j)
{
    struct store_tool_call *ends = xcalloc(j->step.n ? j->step.n : 1, sizeof(*ends));
    size_t nends = 0, kept_len = j->kept_len, transcript_len = buf_len(&j->transcript);
    unsigned seq = j->v.seq, kept_seq = j->kept_seq;
    struct store_turn_pause in;
    struct store *s;
    bool paused = false;
    char *state;
    int rc;

    for (size_t i = 0; i < j->step.n; i++)
        if (j->step.calls[i].ended) {
            ends[nends] = call_row(j, &j->step.calls[i], 0);
            ends[nends].started_at = 0; /* as journaled */
            nends++;
        }
    pause_answer(j);
    state = state_text(j, false); /* a pause gives the held credit back */
    memset(&in, 0, sizeof(in));
    in.message_id = j->reply_id;
    in.employee_id = j->emp_id;
    in.content = buf_ptr(&j->content);
    in.turn_state = state;
    in.reserved = j->reserved;
    in.ends = ends;
    in.nends = nends;
    in.events = unkept(j);
    s = store_pool_get(j->env->pool);
    rc = store_turn_pause(s, &j->tenant, &in, &paused);
    if (!rc && paused && j->idem_key &&
        store_idem_complete(s, &j->tenant, j->idem_key, 200,
                            j->stream ? "text/event-stream" : "application/json",
                            buf_ptr(j->stream ? &j->transcript : &j->answer),
                            buf_len(j->stream ? &j->transcript : &j->answer)))
        log_error("chat: cannot record the Idempotency-Key response of %s", j->reply_id);
    store_pool_put(j->env->pool, s);
    free(state);
    free(ends);
    if (rc) {
        log_error("chat: cannot pause the turn of %s (%s)", j->reply_id, err_name(rc));
        act_step_cleanup(&j->step);
        reply_done(j, NULL, "failed", "The turn could not wait for its approvals.");
        return;
    }
    if (!paused) {
        /* every approval was decided meanwhile: no pause, the events of one taken back */
        buf_truncate(&j->transcript, transcript_len);
        j->v.seq = seq;
        j->kept_len = kept_len;
        j->kept_seq = kept_seq;
        j->v.status = NULL;
        continue_step(j);
        return;
    }
    if (j->early && j->out.conversation)
        j->out.conversation(j->out.ud, j->conv_id);
    deliver(j);
    turn_free(j);
}

/* Apply the decisions taken on the approvals of the step's waiting calls (read from the
 * store): an approved call will run, a rejected or expired one ends. */
static int apply_decisions(struct turn *j)
{
    struct store_turn_saved saved;
    struct store *s = store_pool_get(j->env->pool);
    int rc = store_turn_load(s, &j->tenant, j->reply_id, &j->arena, &saved);
    store_pool_put(j->env->pool, s);
    if (rc)
        return rc;
    for (size_t i = 0; i < j->step.n; i++) {
        struct act_call *c = &j->step.calls[i];
        if (!c->pending)
            continue;
        for (size_t k = 0; k < saved.napprovals; k++) {
            const struct store_approval *p = &saved.approvals[k];
            struct store_tool_call row;
            if (strcmp(p->tool_call_id, c->id) != 0)
                continue;
            row = call_row(j, c, 0);
            act_call_decided(c, &j->offer, &row, p->status, p->arguments, p->reason, &j->arena);
        }
    }
    return 0;
}

/* The step's calls decided on go on (on a pool thread): approved ones journaled as running
 * (with the arguments as approved) and run, rejected ones ended; then step_ran(). */
static void continue_step(struct turn *j)
{
    struct store *s;
    size_t base;
    struct act_job job;

    if (step_waits(&j->step) && apply_decisions(j)) {
        act_step_cleanup(&j->step);
        reply_done(j, NULL, "failed", "The turn's approvals could not be read.");
        return;
    }
    base = json_array_size(j->records) - j->step.n;
    s = store_pool_get(j->env->pool);
    for (size_t i = 0; i < j->step.n; i++) {
        struct act_call *c = &j->step.calls[i];
        json_t *rec = json_array_get(j->records, base + i);
        struct store_tool_call row;
        if (c->ended || c->pending || c->shown)
            continue;
        row = call_row(j, c, 0); /* running, started now */
        row.completed_at = 0;
        if (store_tool_call_end(s, &j->tenant, &row))
            log_error("chat: cannot journal the start of %s", c->id);
        json_object_set_new(rec, "status", json_string("running"));
        json_object_set_new(rec, "arguments", json_loads(c->arguments, 0, NULL));
        jo_time(rec, "started_at", row.started_at);
        tool_event(j, "tool.started", rec);
    }
    store_pool_put(j->env->pool, s);
    memset(&job, 0, sizeof(job));
    job.tenant = &j->tenant;
    job.scopes = j->scopes;
    job.requested_by = j->requested_by;
    job.org_tier = j->org_tier;
    job.employee_id = j->emp_id;
    act_step_run(j->env->tools, &j->step, &job, step_ran, j);
}

/* The model ended a step with calls: prepare them, and journal and run them on a pool thread
 * (the engine's thread never waits for the store or a tool). */
static void step_start(struct turn *j, const struct llm_usage *u)
{
    bool repeated = false;
    struct step_job *sj;
    const struct llm_tool_call *own = j->got; /* the calls the turn runs */
    size_t nown = j->ngot;

    if (j->nclient)
        nown = client_split(j, &own);
    act_step_prepare(&j->offer, own, nown, j->steps.seen, j->steps.nseen, &j->arena, &j->step,
                     &repeated);
    if (repeated) {
        act_step_cleanup(&j->step);
        stop(j, u, "repeated_call", "the same tool call was made three times");
        return;
    }
    sj = xcalloc(1, sizeof(*sj));
    sj->j = j;
    sj->u = *u;
    act_pool_submit(j->env->tools, step_begin, sj);
}

/* The 'n' passages of 'hits' as the reply's sources: a JSON array text (NULL: none). */
static char *sources_text(const struct store_hit *hits, size_t n)
{
    json_t *src = json_array();
    char *text;

    for (size_t i = 0; i < n; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "document_id", jo_string(hits[i].document_id));
        json_object_set_new(o, "document_name", jo_string(hits[i].document_name));
        json_object_set_new(o, "chunk_id", jo_string(hits[i].chunk_id));
        json_object_set_new(o, "score", json_real(hits[i].score > 1 ? 1.0 : hits[i].score));
        json_array_append_new(src, o);
    }
    text = json_dumps(src, JSON_COMPACT);
    json_decref(src);
    return text;
}

/* The 'n' passages 'ps' as JSON text [{source, content, page}] (malloc). */
static char *passages_text(const struct llm_passage *ps, size_t n)
{
    json_t *a = json_array();
    char *text;
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:s?,s:s?,s:i}", "source", ps[i].source, "content",
                                           ps[i].content, "page", ps[i].page));
    text = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return text;
}

/* The knowledge search of the message is done: note the passages, start the engine. */
static void knowledge_done(void *ud, int rc, struct store *s, const struct store_hit *hits,
                           size_t n, const struct err *e)
{
    struct turn *j = ud;
    struct llm_request lreq = j->lreq;

    (void)s;
    if (rc) {
        log_warn("chat: knowledge search failed: %s", e ? e->msg : "?");
    } else {
        /* Nothing is allocated without passages: a stream keeps its turn for its whole life. */
        lreq.knowledge = n ? agent_passages(&j->arena, hits, n) : NULL;
        lreq.nknowledge = n;
        lreq.knowledge_searched = true;
        j->sources = sources_text(hits, n);
        if (j->lreq.ntools && n) /* a turn that may pause keeps what it was given */
            j->knowledge = passages_text(lreq.knowledge, n);
    }
    j->lreq = lreq; /* kept for the steps after the first */
    call_engine(j); /* 'j' may be gone when this returns */
}

/* ---- The turn's steps ---- */

/* See turn.h. */
size_t turn_fit_history(const struct llm_message *m, size_t n, int64_t budget)
{
    size_t first = n;
    int64_t words = 0;
    while (first > 0) {
        int64_t w = llm_count_words(m[first - 1].content);
        if (words + w > budget)
            break;
        words += w;
        first--;
    }
    return first;
}

/* The employee of 't' into '*emp' (404), whom the organization may chat with (the ledger's
 * tier gate, 403) and who is not offline (409); errors name t->employee_param. */
static int check_employee(struct store *s, const struct turn_req *t, struct store_employee *emp,
                          struct err *e)
{
    const char *param = t->employee_param ? t->employee_param : "employee_id";
    int rc = store_employee_get(s, &t->tenant, t->employee_id, t->arena, emp);

    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "employee_not_found", param, "No employee %.60s.", t->employee_id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee read failed");
    /* the tier gate; the balance gate is the credit held by the first writes (402) */
    rc = ledger_gate(t->org, t->tenant.mode, emp, "chat with", param, false, e);
    if (rc)
        return rc;
    if (emp->status == STORE_EMP_OFFLINE)
        return err_set(e, ERR_CONFLICT, "employee_offline", param,
                       "%s is offline. Set the employee back to idle first.", emp->name);
    return 0;
}

/* 409 conversation_busy when the conversation 't' continues has a turn waiting for approvals
 * (however long), or one still running its tools. A running turn is given up on after its
 * running time and a minute more: one whose node died is taken over by another node
 * (turn_keep), but if none can, it does not hold the conversation for ever. */
static int conversation_free(struct store *s, const struct turn_req *t, int64_t now, struct err *e)
{
    bool busy = false;
    int rc = store_conversation_busy(s, &t->tenant, t->conversation_id, now - ACT_TURN_MS - 60000,
                                     &busy);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "conversation read failed");
    if (busy)
        return err_set(e, ERR_CONFLICT, "conversation_busy", "conversation_id",
                       "The conversation's last turn is still running its tools or waiting "
                       "for an approval: send the next message once its reply has ended.");
    return 0;
}

/* The conversation 't' continues (checked to be with 'emp'), or a new one titled with the
 * message into '*conv' (strings in t->arena); 'begin' notes a new one. */
static int find_conversation(struct store *s, const struct turn_req *t,
                             const struct store_employee *emp, int64_t now,
                             struct store_conversation *conv, struct store_chat_begin *begin,
                             struct err *e)
{
    char *id;
    size_t cut = 0, chars = 0;
    int rc;

    if (t->conversation_id) {
        rc = store_conversation_get(s, &t->tenant, t->conversation_id, t->arena, conv);
        if (rc == ERR_NOT_FOUND)
            return err_set(e, rc, "conversation_not_found", "conversation_id",
                           "No conversation %.60s.", t->conversation_id);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "conversation read failed");
        if (strcmp(conv->employee_id, emp->id) != 0)
            return err_set(e, ERR_INVALID, "invalid_request", "conversation_id",
                           "Invalid conversation_id: the conversation is with another employee.");
        return conversation_free(s, t, now, e);
    }
    id = arena_alloc(t->arena, ID_MAX);
    if (id_new("conv", id, ID_MAX))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");
    /* Title: the first message cut to 80 characters (not bytes). */
    while (t->message[cut] && chars < 80) {
        cut++;
        while (((unsigned char)t->message[cut] & 0xC0) == 0x80)
            cut++;
        chars++;
    }
    memset(conv, 0, sizeof(*conv));
    conv->id = id;
    conv->employee_id = emp->id;
    conv->title = arena_strndup(t->arena, t->message, cut);
    conv->created_at = now;
    begin->new_conversation = true;
    begin->conversation = *conv;
    return 0;
}

#define HISTORY_CALLS_MAX 4000 /* tool calls read with a conversation's history */

/*
 * The work of stored message 'm' as the model saw it, into 'out': for each step of its turn,
 * an assistant message with the step's calls, then one 'tool' message per call with its result
 * (a call that never ended reads as interrupted). Returns how many messages were written.
 */
static size_t history_calls(struct arena *a, const struct store_message *m,
                            const struct store_tool_call *calls, size_t nc, struct llm_message *out)
{
    size_t n = 0;
    for (size_t i = 0; i < nc;) {
        size_t k = i;
        struct llm_tool_call *tc;
        if (strcmp(calls[i].message_id, m->id) != 0) {
            i++;
            continue;
        }
        while (k < nc && strcmp(calls[k].message_id, m->id) == 0 && calls[k].step == calls[i].step)
            k++;
        tc = arena_alloc(a, (k - i) * sizeof(*tc));
        for (size_t c = i; c < k; c++) {
            char *name = arena_alloc(a, TOOLS_MODEL_NAME_MAX + 1);
            tools_shown_name(calls[c].tool, name); /* as the model saw it */
            tc[c - i].id = calls[c].model_id;
            tc[c - i].name = name;
            tc[c - i].arguments = calls[c].arguments;
        }
        out[n].role = "assistant";
        out[n].tool_calls = tc;
        out[n].ntool_calls = k - i;
        n++;
        for (size_t c = i; c < k; c++) {
            out[n].role = "tool";
            out[n].tool_call_id = calls[c].model_id;
            out[n].content = calls[c].result ? calls[c].result : "{\"error\":\"interrupted\"}";
            n++;
        }
        i = k;
    }
    return n;
}

/* The history the engine sees: the conversation's last messages (read before the new message
 * is stored, so only earlier turns), or the door's for a new one, the newest that fit the
 * history budget, oldest first. */
static void load_history(struct turn *j, struct store *s, const struct turn_req *t,
                         const char *conv_id)
{
    struct store_message *msgs = NULL;
    struct store_tool_call *calls = NULL;
    struct llm_message *all;
    int64_t budget = j->env->cfg->llm_history_tokens;
    size_t nm = 0, nc = 0, n = 0, first;

    if (!t->conversation_id) {
        first = turn_fit_history(t->history, t->nhistory, budget);
        while (first < t->nhistory && strcmp(t->history[first].role, "tool") == 0)
            first++; /* never begin with the result of a call whose request was cut off */
        j->lreq.history = t->history ? t->history + first : NULL;
        j->lreq.nhistory = t->nhistory - first;
        return;
    }
    if (store_message_list(s, &t->tenant, conv_id, TURN_HISTORY_MESSAGES, t->arena, &msgs, &nm))
        return;
    if (nm && store_tool_calls_of(s, &t->tenant, conv_id, msgs[0].seq, msgs[nm - 1].seq,
                                  HISTORY_CALLS_MAX, t->arena, &calls, &nc)) {
        nc = 0;
    }
    /* each call adds at most an assistant message (its step's) and its result */
    all = arena_alloc(t->arena, (nm + 2 * nc + 1) * sizeof(*all));
    memset(all, 0, (nm + 2 * nc + 1) * sizeof(*all));
    for (size_t i = 0; i < nm; i++) {
        if (j->history_before && msgs[i].seq >= j->history_before)
            continue; /* a resumed turn's own user message and reply */
        n += history_calls(t->arena, &msgs[i], calls, nc, all + n);
        all[n].role = msgs[i].role;
        all[n].content = msgs[i].content;
        n++;
    }
    first = turn_fit_history(all, n, budget);
    /* never begin with the result of a call whose request was cut off */
    while (first < n && strcmp(all[first].role, "tool") == 0)
        first++;
    j->lreq.history = all + first;
    j->lreq.nhistory = n - first;
}

/* A new turn for the reply to 'conv' with 'emp', its view pointing into it; NULL without ids. */
static struct turn *turn_new(const struct turn_env *env, const struct turn_req *t,
                             const struct turn_out *out, const struct store_conversation *conv,
                             const struct store_employee *emp)
{
    struct turn *j = xcalloc(1, sizeof(*j));
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    j->env = env;
    j->out = *out;
    j->tenant = t->tenant;
    j->stream = t->stream;
    j->live = t->tenant.mode == STORE_LIVE;
    j->reserved = ledger_hold(t->tenant.mode) > 0;
    j->t0_us = t->t0_us;
    j->fmt = t->format;
    snprintf(j->conv_id, sizeof(j->conv_id), "%s", conv->id);
    snprintf(j->emp_id, sizeof(j->emp_id), "%s", emp->id);
    arena_init(&j->arena);
    buf_init(&j->content, 4u << 20);
    buf_init(&j->transcript, 16u << 20);
    buf_init(&j->answer, 8u << 20);
    buf_init(&j->tail, 16u << 20);
    j->v.reply_id = j->reply_id;
    j->v.conversation_id = j->conv_id;
    j->v.employee_id = j->emp_id;
    j->v.content = "";
    j->v.opts = t->opts;
    if (t->idem_key)
        j->idem_key = xstrdup(t->idem_key);
    if (id_new("msg", j->reply_id, sizeof(j->reply_id))) {
        turn_free(j);
        return NULL;
    }
    return j;
}

/*
 * The first writes (the user message, a held credit, the busy mark). A blocking turn does not
 * wait for them when the committer can take them: they are committed while the engine runs,
 * and the turn ends when both are done (turn_end). A live turn does so only when the balance
 * it read is more than the tier lets run at once (each of those holds 1), so that its hold
 * fails, after an engine call, only if replies that end meanwhile spend the rest. A stream
 * writes first: its status is sent before the engine runs.
 */
static int first_writes(struct turn *j, struct store *s, const struct turn_req *t, struct err *e)
{
    struct store_committer *c = j->env->committer;
    int rc;

    j->early = !t->stream && c && (!j->live || t->org->credits > (int64_t)t->concurrent);
    atomic_init(&j->parts, j->early ? 2 : 1);
    if (j->early && !store_chat_begin_submit(c, &j->tenant, &j->begin, &j->bjob, begin_done)) {
        j->early = false;
        atomic_store(&j->parts, 1);
    }
    if (j->early)
        return 0;
    rc = c ? store_chat_begin_committed(c, s, &t->tenant, &j->begin)
           : store_chat_begin(s, &t->tenant, &j->begin);
    return rc ? begin_error(rc, e) : 0;
}

/* The engine's request: the employee's persona and model, the context, the message (the
 * history and the knowledge are added by load_history() and knowledge_done()). */
static void assemble(struct turn *j, const struct turn_req *t, const struct store_employee *emp)
{
    if (t->context)
        j->context = xstrdup(t->context);
    agent_request_employee(&j->lreq, emp);
    j->lreq.context = j->context;
    j->lreq.message = t->message;
    j->engine = agent_engine(j->env->agent, t->tenant.mode);
}

/* The tools the employee's rules offer in this turn (none with the builtin engine, which
 * calls none, or without a tool pool). */
static void offer_tools(struct turn *j, struct store *s, const struct turn_req *t,
                        const struct store_employee *emp)
{
    struct tools_rules rules;
    struct llm *engine = agent_engine(j->env->agent, t->tenant.mode);
    struct tools_def *extra = NULL;
    size_t nextra = 0;

    j->scopes = t->scopes;
    j->org_tier = t->org->tier;
    if (!j->env->tools || !emp->tools || strcmp(llm_name(engine), "builtin") == 0)
        return;
    if (tools_rules_parse(emp->tools, strlen(emp->tools), &j->arena, &rules)) {
        log_warn("chat: the tool rules of %s cannot be read: no tool offered", emp->id);
        return;
    }
    /* approve: offered only where the turn can pause for a person's decision */
    act_mcp_tools(s, &t->tenant, &rules, &j->arena, &extra, &nextra);
    act_offer_build(&rules, j->can_pause, j->env->runnable, j->env->runnable_ud, &t->tenant, extra,
                    nextra, &j->arena, &j->offer);
    j->lreq.tools = j->offer.llm;
    j->lreq.ntools = j->offer.n;
}

/* The user message of the turn into j->begin. */
static int user_message(struct turn *j, const struct turn_req *t, const char *conv_id, int64_t now,
                        struct err *e)
{
    char *user_id = arena_alloc(t->arena, ID_MAX);
    if (id_new("msg", user_id, ID_MAX))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");
    j->begin.user.id = user_id;
    j->begin.user.conversation_id = conv_id;
    j->begin.user.employee_id = j->emp_id;
    j->begin.user.role = "user";
    j->begin.user.content = t->message;
    j->begin.user.response_ms = -1;
    j->begin.user.created_at = now;
    j->begin.reserve_credit = j->reserved;
    j->begin.reply_id = j->reply_id;
    return 0;
}

/* See turn.h. */
int turn_start(const struct turn_env *env, struct store *s, const struct turn_req *t,
               const struct turn_out *out, struct err *e)
{
    struct store_employee emp;
    struct store_conversation conv;
    struct store_chat_begin begin;
    struct turn *j;
    int64_t now = clock_now_ms();
    int rc;

    if (t->nanswers) /* the client's results of the calls a turn stopped for */
        return turn_go_on(env, s, t, out, e);
    rc = check_employee(s, t, &emp, e);
    if (rc)
        return rc;
    memset(&begin, 0, sizeof(begin));
    rc = find_conversation(s, t, &emp, now, &conv, &begin, e);
    if (rc)
        return rc;
    j = turn_new(env, t, out, &conv, &emp);
    if (!j)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");
    j->begin = begin;
    j->can_pause = t->can_pause;
    if (t->requested_by)
        j->requested_by = xstrdup(t->requested_by);
    offer_tools(j, s, t, &emp);
    /* a turn that may call tools keeps its events (its message's events route) */
    j->events = j->offer.n > 0 && j->fmt->tool && j->fmt->approval;
    load_history(j, s, t, conv.id);
    rc = client_offer(j, t, e);
    if (!rc)
        rc = user_message(j, t, conv.id, now, e);
    if (!rc)
        rc = first_writes(j, s, t, e);
    if (rc) {
        turn_free(j);
        return rc;
    }
    j->created_at = clock_now_ms();
    j->v.created_at = j->created_at;
    assemble(j, t, &emp);
    if (!j->early && out->conversation)
        out->conversation(out->ud, conv.id);
    out->open(out->ud);
    if (t->stream || j->events) {
        struct buf ev;
        buf_init(&ev, 8192);
        j->fmt->opened(&j->v, &ev);
        emit(j, &ev);
        buf_cleanup(&ev);
    }
    /* The knowledge this employee may read that matches the message; the engine starts when
     * the search is done (here, or on the embedding pool's thread). 'j' may then be gone. */
    agent_knowledge_start(env->agent, &t->tenant, emp.id, t->message, s, knowledge_done, j);
    return 0;
}

/* ---- Going on after a pause, or after the node that ran the turn died ---- */

static void quiet_open(void *ud)
{
    (void)ud;
}

static void quiet_write(void *ud, const char *p, size_t n)
{
    (void)ud;
    (void)p;
    (void)n;
}

static void quiet_end(void *ud, int rc, const struct err *e, char *body, size_t len)
{
    (void)ud;
    (void)rc;
    (void)e;
    (void)len;
    free(body);
}

/* The passages of the state's 'ks' into the request (strings from the turn's arena). */
static void restore_knowledge(struct turn *j, const json_t *ks)
{
    size_t n = json_array_size(ks), i;
    struct llm_passage *ps;
    json_t *k;

    if (!n)
        return;
    ps = arena_calloc(&j->arena, (n + 1) * sizeof(*ps));
    json_array_foreach(ks, i, k)
    {
        const char *src = json_string_value(json_object_get(k, "source"));
        const char *content = json_string_value(json_object_get(k, "content"));
        ps[i].source = arena_strdup(&j->arena, src ? src : "");
        ps[i].content = arena_strdup(&j->arena, content ? content : "");
        ps[i].page = (int)json_integer_value(json_object_get(k, "page"));
    }
    j->lreq.knowledge = ps;
    j->lreq.nknowledge = n;
    j->knowledge = json_dumps(ks, JSON_COMPACT);
}

/* What saved state 'state' (state_text) gives back to turn 'j': the starter's rights, the
 * model calls made, the running time, the credits and tokens spent, the request's context and
 * the knowledge the model was given. */
static void state_read(struct turn *j, const json_t *state)
{
    j->scopes = (uint32_t)json_integer_value(json_object_get(state, "scopes"));
    j->nmodel = (int)json_integer_value(json_object_get(state, "nmodel"));
    j->t0_us -= json_integer_value(json_object_get(state, "running_ms")) * 1000;
    j->charged_before = json_integer_value(json_object_get(state, "charged"));
    j->total.input_tokens = json_integer_value(json_object_get(state, "input_tokens"));
    j->total.output_tokens = json_integer_value(json_object_get(state, "output_tokens"));
    if (json_is_object(json_object_get(state, "context")))
        j->context = json_dumps(json_object_get(state, "context"), JSON_COMPACT);
    j->lreq.knowledge_searched = json_is_true(json_object_get(state, "searched"));
    restore_knowledge(j, json_object_get(state, "knowledge"));
}

/* The approval of call 'id' among the 'n' of 'v', or NULL. */
static const struct store_approval *approval_for(const struct store_approval *v, size_t n,
                                                 const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].tool_call_id && strcmp(v[i].tool_call_id, id) == 0)
            return &v[i];
    return NULL;
}

/* The turn's steps from its journal: each one but the last for the model (j->steps), the last
 * as the step that goes on (j->got, j->step), its calls decided as their approvals say. */
static void restore_steps(struct turn *j, const struct store_turn_saved *sv)
{
    int64_t last = sv->ncalls ? sv->calls[sv->ncalls - 1].step : -1;
    j->records = json_array();
    for (size_t i = 0; i < sv->ncalls;) {
        size_t k = i;
        struct llm_tool_call *got;
        struct act_step st;
        while (k < sv->ncalls && sv->calls[k].step == sv->calls[i].step)
            k++;
        got = arena_calloc(&j->arena, (k - i) * sizeof(*got));
        st.n = k - i;
        st.a = &j->arena;
        st.calls = arena_calloc(&j->arena, (k - i) * sizeof(*st.calls));
        for (size_t c = i; c < k; c++) {
            const struct store_tool_call *row = &sv->calls[c];
            struct act_call *call = &st.calls[c - i];
            json_array_append_new(j->records, act_call_json(row));
            if (strcmp(row->status, "pending_approval") == 0) {
                const struct store_approval *p =
                    approval_for(sv->approvals, sv->napprovals, row->id);
                act_call_decided(call, &j->offer, row, p ? p->status : "expired",
                                 p ? p->arguments : NULL, p ? p->reason : NULL, &j->arena);
            } else {
                act_call_restore(call, &j->offer, row, &j->arena);
                call->shown = true;
            }
            got[c - i].id = call->model_id;
            got[c - i].name = call->model_name;
            got[c - i].arguments = arena_strdup(&j->arena, row->arguments);
        }
        if (sv->calls[i].step == last) {
            j->got = got;
            j->ngot = k - i;
            j->step = st;
        } else {
            act_steps_add(&j->steps, &j->arena, got, k - i, &st);
            act_step_cleanup(&st);
        }
        i = k;
    }
}

/* Turn 'j' goes on with the stored reply of 'sv': its id, what it wrote, its sources, its
 * calls counted, and a history of the messages before its user message. */
static void adopt_reply(struct turn *j, const struct store_turn_saved *sv)
{
    snprintf(j->reply_id, sizeof(j->reply_id), "%s", sv->reply.id);
    j->stored = true;
    j->created_at = sv->reply.created_at;
    j->ncalls = (int64_t)sv->ncalls;
    j->history_before = sv->user_seq;
    buf_appends(&j->content, sv->reply.content ? sv->reply.content : "");
    j->sources = xstrdup(sv->reply.sources ? sv->reply.sources : "[]");
}

/* The request of turn 'j' going on (its state read): the tools 'emp''s rules offer as 'h'
 * allows (its tenant, organization, rights, whether it can pause), the history, the
 * employee's persona, the context and user message 'user_content', and the engine. */
static void rebuild_request(struct turn *j, struct store *s, struct turn_req *h,
                            const struct store_employee *emp, const char *user_content)
{
    h->conversation_id = j->conv_id;
    offer_tools(j, s, h, emp);
    load_history(j, s, h, j->conv_id);
    agent_request_employee(&j->lreq, emp);
    j->lreq.context = j->context;
    j->lreq.message = arena_strdup(&j->arena, user_content ? user_content : "");
    j->engine = agent_engine(j->env->agent, h->tenant.mode);
}

/*
 * The turn of message 'id', taken by this node, rebuilt from the store (on 's'): what the
 * model was given, the steps so far and the decisions. NULL when the message cannot be read;
 * '*why' set when it is read but cannot go on (its employee is gone, it was stored before
 * turns could pause): the turn then only ends, failed.
 */
static struct turn *resumed_turn(const struct turn_env *env, struct store *s,
                                 const struct store_tenant *tenant, const char *id,
                                 const char **why)
{
    static const struct turn_out quiet = {quiet_open, quiet_write, quiet_open,
                                          NULL,       quiet_end,   NULL};
    struct turn *j = xcalloc(1, sizeof(*j));
    struct store_turn_saved sv;
    struct store_employee emp;
    struct store_org org;
    struct turn_req t;
    json_t *state = NULL;

    *why = NULL;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    arena_init(&j->arena);
    buf_init(&j->content, 4u << 20);
    buf_init(&j->transcript, 16u << 20);
    buf_init(&j->answer, 8u << 20);
    buf_init(&j->tail, 16u << 20);
    j->env = env;
    j->out = quiet;
    j->tenant = *tenant;
    j->live = tenant->mode == STORE_LIVE;
    j->fmt = env->format;
    j->events = env->format != NULL;
    j->stored = true;
    j->can_pause = true;
    atomic_init(&j->parts, 1);
    if (store_turn_load(s, tenant, id, &j->arena, &sv)) {
        turn_free(j);
        return NULL;
    }
    j->resumed = true; /* counted in resumed_live from here until freed */
    snprintf(j->conv_id, sizeof(j->conv_id), "%s", sv.reply.conversation_id);
    snprintf(j->emp_id, sizeof(j->emp_id), "%s", sv.reply.employee_id);
    j->v.reply_id = j->reply_id;
    j->v.conversation_id = j->conv_id;
    j->v.employee_id = j->emp_id;
    j->t0_us = clock_mono_us();
    adopt_reply(j, &sv);
    j->v.created_at = j->created_at;
    state = sv.turn_state ? json_loads(sv.turn_state, 0, NULL) : NULL;
    if (!state || !sv.ncalls || !sv.user_content) {
        *why = "interrupted";
        json_decref(state);
        return j;
    }
    state_read(j, state);
    j->v.seq = (unsigned)json_integer_value(json_object_get(state, "seq"));
    j->kept_seq = j->v.seq;
    j->v.sent_delta = json_is_true(json_object_get(state, "sent_delta"));
    j->reserved = json_is_true(json_object_get(state, "reserved")) &&
                  strcmp(sv.reply.status ? sv.reply.status : "", "in_progress") == 0;
    if (json_is_string(json_object_get(state, "requested_by")))
        j->requested_by = xstrdup(json_string_value(json_object_get(state, "requested_by")));
    if (store_employee_get(s, tenant, j->emp_id, &j->arena, &emp) ||
        store_org_get(s, tenant->org_id, &org)) {
        *why = "The employee or its organization is gone.";
        json_decref(state);
        return j;
    }
    memset(&t, 0, sizeof(t));
    t.tenant = *tenant;
    t.org = &org;
    t.arena = &j->arena;
    t.scopes = j->scopes;
    t.can_pause = true;
    rebuild_request(j, s, &t, &emp, sv.user_content);
    restore_steps(j, &sv);
    json_decref(state);
    return j;
}

struct resume_job {
    const struct turn_env *env;
    struct store_tenant tenant;
    char id[ID_MAX];
};

/* Take the turn and go on with it (a pool thread's work). */
static void resume_run(void *ud)
{
    struct resume_job *rj = ud;
    struct store *s;
    struct turn *j = NULL;
    const char *why = NULL;
    bool taken = false;
    int rc;

    if (atomic_fetch_add(&resumed_live, 1) >= RESUMED_MAX) {
        atomic_fetch_sub(&resumed_live, 1); /* left ready: a later look takes it */
        free(rj);
        return;
    }
    s = store_pool_get(rj->env->pool);
    rc = store_turn_take(s, &rj->tenant, rj->id, clock_now_ms(), &taken);
    if (!rc && taken)
        j = resumed_turn(rj->env, s, &rj->tenant, rj->id, &why); /* counted until freed */
    else if (rc)
        log_error("chat: cannot take the turn of %s (%s)", rj->id, err_name(rc));
    store_pool_put(rj->env->pool, s);
    free(rj);
    if (!j) {
        atomic_fetch_sub(&resumed_live, 1);
        return;
    }
    if (why) {
        act_step_cleanup(&j->step);
        reply_done(j, NULL, "failed", why);
        return;
    }
    continue_step(j);
}

/* See turn.h. */
void turn_resume(const struct turn_env *env, const struct store_tenant *t, const char *message_id)
{
    struct resume_job *rj;
    if (!env->tools)
        return;
    rj = xcalloc(1, sizeof(*rj));
    rj->env = env;
    rj->tenant = *t;
    snprintf(rj->id, sizeof(rj->id), "%s", message_id);
    act_pool_submit(env->tools, resume_run, rj);
}

#define KEEP_BATCH 64 /* approvals expired, turns taken, per look */

/* See turn.h. */
void turn_keep(const struct turn_env *env)
{
    struct store *s = store_pool_get(env->pool);
    struct store_approval *due = NULL;
    struct store_tenant *tenants = NULL;
    struct store_turn_ref *ready = NULL;
    size_t n = 0;
    struct arena a;
    int64_t now = clock_now_ms();

    arena_init(&a);
    if (!store_approvals_due(s, now, KEEP_BATCH, &a, &due, &tenants, &n)) {
        for (size_t i = 0; i < n; i++) {
            struct store_approval_decision d = {
                due[i].id, "expired", NULL, "The approval expired before anyone decided.",
                "system",  NULL,      now};
            struct store_approval after;
            if (store_approval_decide(s, &tenants[i], &d, &a, &after) == ERR_STORE)
                log_error("approvals: cannot expire %s", due[i].id);
        }
    }
    if (!store_turns_ready(s, KEEP_BATCH, &a, &ready, &n))
        for (size_t i = 0; i < n; i++)
            turn_resume(env, &ready[i].tenant, ready[i].message_id);
    store_pool_put(env->pool, s);
    arena_cleanup(&a);
}

/* ---- The client's own tools (the OpenAI door, contract §19) ----
 *
 * A door may bring tools of its client's (turn_req.client_tools): the model is offered them
 * beside the employee's, under their own names. A step that calls only the employee's tools
 * runs as any other. A step that calls one of the client's runs the employee's calls of the
 * step first; then the turn ends (stop reason client_tool_calls) and the door answers the
 * client's calls. Every call of the step is journaled before any runs, the client's as
 * 'running' (the client runs them), and the reply keeps the turn's state. A follow-up request
 * that answers those calls (turn_req.answers) takes the stored turn back (store_turn_answer:
 * the calls end with the client's results), and the turn goes on from its journal, answering
 * that request.
 */

/* Whether 'name' is the name of one of the client's tools. */
static bool client_tool(const struct turn *j, const char *name)
{
    for (size_t i = 0; name && i < j->nclient; i++)
        if (strcmp(j->client[i].name, name) == 0)
            return true;
    return false;
}

/* Offer the client's tools of 't' with the employee's (j->offer, already built): the engine
 * is shown both (copied into the turn's arena), with t's tool choice. None are offered where
 * the employee's are not (the builtin engine, no tool pool). 400 naming t->client_params[i]
 * when tool i has the name one of the employee's tools is shown under. */
static int client_offer(struct turn *j, const struct turn_req *t, struct err *e)
{
    struct llm_tool *all;
    size_t n = j->offer.n;

    if (!t->nclient_tools || !j->env->tools ||
        strcmp(llm_name(agent_engine(j->env->agent, t->tenant.mode)), "builtin") == 0)
        return 0;
    for (size_t i = 0; i < t->nclient_tools; i++)
        for (size_t k = 0; k < n; k++)
            if (strcmp(t->client_tools[i].name, j->offer.v[k].model_name) == 0)
                return err_set(e, ERR_INVALID, "invalid_request", t->client_params[i],
                               "Invalid %s: %.64s is the name the employee's own tool %.100s "
                               "is shown to the model under; give your tool another name.",
                               t->client_params[i], t->client_tools[i].name,
                               j->offer.v[k].def->name);
    all = arena_calloc(&j->arena, (n + t->nclient_tools) * sizeof(*all));
    if (n)
        memcpy(all, j->offer.llm, n * sizeof(*all));
    for (size_t i = 0; i < t->nclient_tools; i++) {
        const struct llm_tool *c = &t->client_tools[i];
        all[n + i].name = arena_strdup(&j->arena, c->name);
        all[n + i].description = c->description ? arena_strdup(&j->arena, c->description) : NULL;
        all[n + i].parameters = c->parameters ? arena_strdup(&j->arena, c->parameters) : NULL;
    }
    j->client = all + n;
    j->nclient = t->nclient_tools;
    j->lreq.tools = all;
    j->lreq.ntools = n + t->nclient_tools;
    j->lreq.tool_choice = t->tool_choice ? arena_strdup(&j->arena, t->tool_choice) : NULL;
    return 0;
}

/* The model's calls of the step that ends, split: the client's into j->ccalls, each with its
 * id, and the others (the employee's, and any that names no tool offered) into '*out', in
 * their order (from the turn's arena); returns how many of those. */
static size_t client_split(struct turn *j, const struct llm_tool_call **out)
{
    struct llm_tool_call *own = arena_calloc(&j->arena, (j->ngot ? j->ngot : 1) * sizeof(*own));
    size_t n = 0;

    j->ccalls = arena_calloc(&j->arena, (j->ngot ? j->ngot : 1) * sizeof(*j->ccalls));
    j->nccalls = 0;
    for (size_t i = 0; i < j->ngot; i++) {
        struct client_call *c;
        if (!client_tool(j, j->got[i].name)) {
            own[n++] = j->got[i];
            continue;
        }
        c = &j->ccalls[j->nccalls++];
        if (id_new("call", c->id, sizeof(c->id)))
            snprintf(c->id, sizeof(c->id), "call_%zu", i); /* the CSPRNG failed: still unique */
        c->model_id = j->got[i].id;
        c->name = j->got[i].name;
        c->arguments = j->got[i].arguments[0] ? j->got[i].arguments : "{}";
    }
    *out = own;
    return n;
}

/* The journal's rows of the step's client calls (j->nccalls of them, into 'rows'), numbered
 * before the employee's calls of the step (whose records the steps' code finds last):
 * 'running' from 'now', until the client answers. */
static void client_rows(struct turn *j, struct store_tool_call *rows, int64_t now)
{
    for (size_t i = 0; i < j->nccalls; i++) {
        const struct client_call *c = &j->ccalls[i];
        struct store_tool_call *row = &rows[i];
        memset(row, 0, sizeof(*row));
        row->id = c->id;
        row->message_id = j->reply_id;
        row->model_id = c->model_id;
        row->tool = c->name;
        row->arguments = c->arguments;
        row->status = "running";
        row->seq = j->ncalls + (int64_t)i;
        row->step = j->nmodel - 1;
        row->started_at = now;
    }
}

/* The step's own calls have ended and are journaled (step_ran): the turn ends with the
 * client's calls, its state kept with the reply for the follow-up. The step's model call was
 * charged with its journal. */
static void client_stop(struct turn *j)
{
    json_t *calls = json_array();
    for (size_t i = 0; i < j->nccalls; i++)
        json_array_append_new(calls,
                              json_pack("{s:s,s:s,s:s}", "id", j->ccalls[i].id, "name",
                                        j->ccalls[i].name, "arguments", j->ccalls[i].arguments));
    j->client_text = json_dumps(calls, JSON_COMPACT);
    json_decref(calls);
    j->keep_state = state_text(j, false);
    j->stop_reason = "client_tool_calls";
    act_step_cleanup(&j->step);
    reply_done(j, NULL, "completed", NULL);
}

/* The call of 'sv' whose id is 'id', or NULL. */
static struct store_tool_call *saved_call(const struct store_turn_saved *sv, const char *id)
{
    for (size_t i = 0; i < sv->ncalls; i++)
        if (strcmp(sv->calls[i].id, id) == 0)
            return &sv->calls[i];
    return NULL;
}

/* The answer of 't' to call 'id', or NULL. */
static const struct turn_answer *answer_to(const struct turn_req *t, const char *id)
{
    for (size_t i = 0; i < t->nanswers; i++)
        if (strcmp(t->answers[i].call_id, id) == 0)
            return &t->answers[i];
    return NULL;
}

/* The turn the answers of 't' go on with, read into '*sv' (strings from t->arena) and
 * checked: every answer names a call this service issued, all of one turn of employee 'emp',
 * that waits for the client (400 naming the answer; 409 conversation_busy when another
 * request already took the turn), every call the turn waits for is answered (400 naming
 * t->answers_param), and the turn is the last of its conversation. */
static int answered_turn(struct store *s, const struct turn_req *t,
                         const struct store_employee *emp, struct store_turn_saved *sv,
                         struct err *e)
{
    const struct turn_answer *first = &t->answers[0];
    const char *message_id = NULL;
    struct store_conversation conv;
    struct store_tool_call row;
    int rc;

    for (size_t i = 0; i < t->nanswers; i++) {
        const struct turn_answer *an = &t->answers[i];
        rc = store_tool_call_get(s, &t->tenant, an->call_id, t->arena, &row);
        if (rc == ERR_NOT_FOUND || (!rc && !row.message_id))
            return err_set(e, ERR_INVALID, "invalid_request", an->param,
                           "Unknown %s %.64s: no tool call of that id was issued here.", an->param,
                           an->call_id);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "tool call read failed");
        if (answer_to(t, an->call_id) != an)
            return err_set(e, ERR_INVALID, "invalid_request", an->param,
                           "Invalid %s: the call %.64s is answered twice.", an->param, an->call_id);
        if (message_id && strcmp(message_id, row.message_id) != 0)
            return err_set(e, ERR_INVALID, "invalid_request", an->param,
                           "Invalid %s: the call %.64s belongs to another answer than the "
                           "calls before it; answer the calls of one answer together.",
                           an->param, an->call_id);
        message_id = row.message_id;
    }
    rc = store_turn_load(s, &t->tenant, message_id, t->arena, sv);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, ERR_INVALID, "invalid_request", first->param,
                       "Unknown %s %.64s: its conversation was deleted.", first->param,
                       first->call_id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "turn read failed");
    if (strcmp(sv->reply.employee_id, emp->id) != 0)
        return err_set(e, ERR_INVALID, "invalid_request", first->param,
                       "Invalid %s: the call %.64s was made by another employee than this "
                       "model.",
                       first->param, first->call_id);
    if (strcmp(sv->reply.status, "in_progress") == 0)
        return err_set(e, ERR_CONFLICT, "conversation_busy", first->param,
                       "The turn of the call %.64s is already going on: another request "
                       "answered its calls.",
                       first->call_id);
    for (size_t i = 0; i < t->nanswers; i++) {
        const struct store_tool_call *c = saved_call(sv, t->answers[i].call_id);
        if (!c || strcmp(c->status, "running") != 0 || !sv->turn_state ||
            strcmp(sv->reply.status, "completed") != 0)
            return err_set(e, ERR_INVALID, "invalid_request", t->answers[i].param,
                           "Invalid %s: the call %.64s does not wait for an answer (it was "
                           "answered, or is not a call of your tools).",
                           t->answers[i].param, t->answers[i].call_id);
    }
    for (size_t i = 0; i < sv->ncalls; i++)
        if (strcmp(sv->calls[i].status, "running") == 0 && !answer_to(t, sv->calls[i].id))
            return err_set(e, ERR_INVALID, "invalid_request", t->answers_param,
                           "Invalid %s: the call %.64s (%.64s) has no tool message answering "
                           "it.",
                           t->answers_param, sv->calls[i].id, sv->calls[i].tool);
    rc = store_conversation_get(s, &t->tenant, sv->reply.conversation_id, t->arena, &conv);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "conversation read failed");
    if (conv.message_count > sv->reply.seq)
        return err_set(e, ERR_INVALID, "invalid_request", first->param,
                       "Invalid %s: the call %.64s no longer waits for an answer: its "
                       "conversation went on without it.",
                       first->param, first->call_id);
    return 0;
}

/* What the turn had done when it stopped for the client, from its kept state (as
 * resumed_turn() reads it); its rights are those of both keys, the one that started it and
 * the one that answers ('scopes'; 0 is every scope). */
static void client_state(struct turn *j, const json_t *state, uint32_t scopes)
{
    uint32_t was;
    state_read(j, state);
    was = j->scopes;
    j->scopes = !was ? scopes : !scopes ? was : was & scopes;
    j->usage_before = j->total;
}

/* The answers of 't' as the ends of their calls (from t->arena; a result cut as any tool's
 * is, act_result_cut()), and the same ends on the calls of 'sv' as read before. */
static struct store_tool_call *client_ends(const struct turn_req *t, struct store_turn_saved *sv,
                                           int64_t now)
{
    struct store_tool_call *ends = arena_calloc(t->arena, t->nanswers * sizeof(*ends));
    for (size_t i = 0; i < t->nanswers; i++) {
        struct store_tool_call *c = saved_call(sv, t->answers[i].call_id);
        char *cut = act_result_cut(t->answers[i].content, strlen(t->answers[i].content));
        ends[i].id = t->answers[i].call_id;
        ends[i].status = "completed";
        ends[i].result = arena_strdup(t->arena, cut);
        free(cut);
        ends[i].completed_at = now;
        c->status = ends[i].status;
        c->result = ends[i].result;
        c->completed_at = now;
    }
    return ends;
}

/*
 * A follow-up request ('t') answers the calls a turn stopped for: the turn is read and checked
 * (answered_turn), rebuilt from its journal and state with t's door and client tools, taken
 * back with the answers (store_turn_answer: a credit held, as a turn's first writes hold one;
 * 402 without), and the model is called with the results of the step. Returns as
 * turn_start().
 */
static int turn_go_on(const struct turn_env *env, struct store *s, const struct turn_req *t,
                      const struct turn_out *out, struct err *e)
{
    struct store_employee emp;
    struct store_turn_saved sv;
    struct store_conversation conv;
    struct store_tool_call *ends;
    struct turn_req h;
    struct turn *j;
    json_t *state;
    bool taken = false;
    int rc = check_employee(s, t, &emp, e);

    if (!rc)
        rc = answered_turn(s, t, &emp, &sv, e);
    if (rc)
        return rc;
    state = json_loads(sv.turn_state, 0, NULL);
    memset(&conv, 0, sizeof(conv));
    conv.id = sv.reply.conversation_id;
    j = turn_new(env, t, out, &conv, &emp);
    if (!j || !json_is_object(state)) {
        json_decref(state);
        if (j)
            turn_free(j);
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "the turn cannot go on");
    }
    adopt_reply(j, &sv);
    j->v.created_at = clock_now_ms(); /* this answer's */
    j->content_before = buf_len(&j->content);
    atomic_init(&j->parts, 1);
    client_state(j, state, t->scopes);
    json_decref(state);
    h = *t;
    h.scopes = j->scopes;
    h.can_pause = false;
    rebuild_request(j, s, &h, &emp, sv.user_content);
    rc = client_offer(j, t, e);
    if (!rc) {
        /* taken back, its state says it holds a credit: a node that takes it over after a
         * crash settles that hold */
        char *state_now = state_text(j, j->reserved);
        ends = client_ends(t, &sv, clock_now_ms());
        rc = store_turn_answer(s, &t->tenant, j->reply_id, ends, t->nanswers, state_now,
                               j->reserved, &taken);
        free(state_now);
        if (rc == ERR_LIMIT)
            rc = ledger_insufficient(e);
        else if (rc)
            rc = err_set(e, rc, "internal_error", NULL, "the turn could not go on");
        else if (!taken)
            rc = err_set(e, ERR_CONFLICT, "conversation_busy", t->answers[0].param,
                         "The turn of the call %.64s is already going on, or its conversation "
                         "went on without it.",
                         t->answers[0].call_id);
    }
    if (rc) {
        turn_free(j);
        return rc;
    }
    /* the step that stopped, with the client's results, is what the model is shown next */
    restore_steps(j, &sv);
    act_steps_add(&j->steps, &j->arena, j->got, j->ngot, &j->step);
    act_step_cleanup(&j->step);
    if (out->conversation)
        out->conversation(out->ud, j->conv_id);
    out->open(out->ud);
    if (t->stream) {
        struct buf ev;
        buf_init(&ev, 8192);
        j->fmt->opened(&j->v, &ev);
        emit(j, &ev);
        buf_cleanup(&ev);
    }
    if (!stopped_at_limit(j))
        call_engine(j); /* 'j' may be gone when this returns */
    return 0;
}
