/* SPDX-License-Identifier: MIT */
/*
 * chat.c: POST /v1/chat and POST /v1/chat/stream (contract §8, §3 credits and tiers).
 *
 * DESIGN: the handler validates, then in one store transaction stores the user message (and a
 * new conversation), reserves one credit for a live key and marks the employee busy. It then
 * starts the engine and returns: the response is deferred (blocking chat) or streamed (SSE),
 * so no worker thread waits for the model. A blocking turn whose balance is well above what
 * can run at once does not wait for that transaction: the committer commits it while the
 * engine runs, and the turn ends when both are done (turn_end), answering the handler's error
 * (402, 500) if the transaction failed. A struct chat_job owns everything the reply needs;
 * the engine's done() hands it to the store's committer (store_committer_submit), which
 * stores the reply, charges the rest of the cost (never below zero), counts the statistics fact
 * and records the Idempotency-Key response in one transaction shared with the other replies
 * that end at the same time (group commit: one fsync for all of them); only then is the client
 * answered. A client that leaves a stream does not stop any of it.
 *
 * The turn itself (api_chat_turn) knows nothing of the wire: a struct api_chat_format writes
 * the answer, and for a stream the opening, delta, closing and error events. POST /v1/chat
 * uses the format below; the OpenAI-compatible door (openai.c) brings its own. A blocking
 * turn run inside another route's request (r->answer_wrap: the MCP server's ask_employee)
 * ends through router_async_finish(), which shapes, records and sends that route's answer.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../llm/llm.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY_MESSAGES 100

struct chat_body {
    const char *employee_id;
    const char *message;
    const char *conversation_id;
    bool stream;
    json_t *context;
};

enum { F_EMPLOYEE, F_MESSAGE, F_CONVERSATION, F_STREAM, F_CONTEXT, F_N };

static const struct jb_field chat_fields[F_N] = {
    {"employee_id", JB_STRING, offsetof(struct chat_body, employee_id), JB_REQUIRED, 1, 100, NULL,
     NULL, NULL},
    {"message", JB_STRING, offsetof(struct chat_body, message), JB_REQUIRED, 1,
     API_CHAT_MESSAGE_MAX, NULL, NULL, NULL},
    {"conversation_id", JB_STRING, offsetof(struct chat_body, conversation_id), 0, 1, 100, NULL,
     NULL, NULL},
    {"stream", JB_BOOL, offsetof(struct chat_body, stream), 0, 0, 0, NULL, NULL, NULL},
    {"context", JB_ANY, offsetof(struct chat_body, context), JB_OBJECT, 0, 0, NULL, NULL, NULL},
};

const struct jb_binding api_chat_body = {chat_fields, F_N};

struct chat_job {
    const struct api_services *svc;
    struct store_tenant tenant;
    struct router_req *req;     /* blocking: valid until http_req_resume() */
    struct http_req *http;      /* blocking */
    struct http_stream *stream; /* streaming */
    const struct api_chat_format *fmt;
    struct api_chat_view v; /* what the format sees; its strings point into the job */
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
    const char *conv_header; /* set once the first writes are in (a blocking turn) */
    atomic_int parts;        /* the first writes and the engine: those not done yet */
    int begin_rc;
    bool engine_failed;
    struct err engine_err;
    /* Until the engine starts (after the knowledge search): */
    struct llm_request lreq; /* strings in the request's arena, or 'arena' */
    struct llm *engine;
    char *context; /* JSON text of the request's context, or NULL */
    struct arena arena;
};

/* ---- The format of POST /v1/chat ---- */

/* The Message object of the reply. */
static void message_answer(const struct api_chat_view *v, struct buf *out)
{
    struct jw w;
    jw_init(&w, out);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_str(&w, v->reply_id);
    jw_key(&w, "conversation_id");
    jw_str(&w, v->conversation_id);
    jw_key(&w, "employee_id");
    jw_str(&w, v->employee_id);
    jw_key(&w, "content");
    jw_str(&w, v->content);
    jw_key(&w, "role");
    jw_str(&w, "assistant");
    jw_key(&w, "credits_used");
    jw_int(&w, v->credits);
    jw_key(&w, "created_at");
    jw_time(&w, v->created_at);
    jw_key(&w, "sources");
    jw_raw(&w, v->sources, "[]");
    jw_key(&w, "usage");
    jw_obj(&w);
    jw_key(&w, "input_tokens");
    jw_int(&w, v->usage.input_tokens);
    jw_key(&w, "output_tokens");
    jw_int(&w, v->usage.output_tokens);
    jw_obj_end(&w);
    jw_obj_end(&w);
    if (jw_finish(&w))
        buf_reset(out);
}

/* Append one SSE event, numbered, whose data is the JSON in 'data', to 'out'. */
static void message_event(struct api_chat_view *v, const char *name, const char *data, size_t len,
                          struct buf *out)
{
    buf_appendf(out, "id: %u\nevent: %s\ndata: ", ++v->seq, name);
    buf_append(out, data, len);
    buf_appends(out, "\n\n");
}

static void message_opened(struct api_chat_view *v, struct buf *out)
{
    struct buf d;
    struct jw w;
    buf_init(&d, 4096);
    jw_init(&w, &d);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_str(&w, v->reply_id);
    jw_key(&w, "conversation_id");
    jw_str(&w, v->conversation_id);
    jw_key(&w, "employee_id");
    jw_str(&w, v->employee_id);
    jw_key(&w, "role");
    jw_str(&w, "assistant");
    jw_key(&w, "created_at");
    jw_time(&w, v->created_at);
    jw_obj_end(&w);
    message_event(v, "message.created", buf_ptr(&d), buf_len(&d), out);
    buf_cleanup(&d);
}

static void message_delta(struct api_chat_view *v, const char *text, size_t len, struct buf *out)
{
    struct buf d;
    struct jw w;
    char *piece = xstrndup(text, len);
    buf_init(&d, (4u << 20) + 128);
    jw_init(&w, &d);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_str(&w, v->reply_id);
    jw_key(&w, "delta");
    jw_str(&w, piece);
    jw_obj_end(&w);
    if (!jw_finish(&w))
        message_event(v, "message.delta", buf_ptr(&d), buf_len(&d), out);
    buf_cleanup(&d);
    free(piece);
}

/* One delta at least, even for an empty reply, then message.completed. */
static void message_completed(struct api_chat_view *v, struct buf *out)
{
    struct buf m;
    if (!v->sent_delta)
        message_delta(v, "", 0, out);
    buf_init(&m, 8u << 20);
    message_answer(v, &m);
    message_event(v, "message.completed", buf_ptr(&m), buf_len(&m), out);
    buf_cleanup(&m);
}

static void message_failed(struct api_chat_view *v, const struct err *e, struct buf *out)
{
    struct buf d;
    struct jw w;
    buf_init(&d, 4096);
    jw_init(&w, &d);
    jw_obj(&w);
    jw_key(&w, "error");
    jw_obj(&w);
    jw_key(&w, "code");
    jw_str(&w, e->code ? e->code : "upstream_error");
    jw_key(&w, "message");
    jw_str(&w, e->msg);
    jw_obj_end(&w);
    jw_obj_end(&w);
    message_event(v, "error", buf_ptr(&d), buf_len(&d), out);
    buf_cleanup(&d);
}

static const struct api_chat_format message_format = {
    message_answer, message_opened, message_delta, message_completed, message_failed,
};

/* ---- Output ---- */

/* Add what the format wrote in 'ev' (one or more events) to the transcript and send it. A
 * client that left is ignored. */
static void send_events(struct chat_job *j, const struct buf *ev)
{
    buf_append(&j->transcript, buf_ptr(ev), buf_len(ev));
    http_stream_write(j->stream, buf_ptr(ev), buf_len(ev));
}

/* ---- The job ---- */

static void job_free(struct chat_job *j)
{
    buf_cleanup(&j->content);
    buf_cleanup(&j->transcript);
    buf_cleanup(&j->answer);
    buf_cleanup(&j->tail);
    free(j->idem_key);
    free(j->sources);
    free(j->context);
    arena_cleanup(&j->arena);
    free(j);
}

static void record_idem(struct chat_job *j, struct store *s, int status, const char *ctype,
                        const char *body, size_t len)
{
    if (!j->idem_key)
        return;
    if (status >= 500 ? store_idem_release(s, &j->tenant, j->idem_key)
                      : store_idem_complete(s, &j->tenant, j->idem_key, status, ctype, body, len))
        log_error("chat: cannot record the Idempotency-Key response of %s", j->reply_id);
}

static void on_delta(void *ud, const char *text, size_t len)
{
    struct chat_job *j = ud;
    if (buf_append(&j->content, text, len))
        return; /* past 4 MiB the reply is cut; the deltas sent so far stay equal to it */
    if (j->stream) {
        struct buf ev;
        buf_init(&ev, (4u << 20) + 4096);
        j->fmt->delta(&j->v, text, len, &ev);
        j->v.sent_delta = true;
        send_events(j, &ev);
        buf_cleanup(&ev);
    }
}

static void fail_job(struct chat_job *j, struct store *s, const struct err *e)
{
    if (store_chat_abort(s, &j->tenant, j->emp_id, j->reserved))
        log_error("chat: cannot end the failed reply %s cleanly", j->reply_id);
    if (j->stream) {
        struct buf ev;
        buf_init(&ev, 8192);
        j->fmt->failed(&j->v, e, &ev);
        send_events(j, &ev);
        buf_cleanup(&ev);
        record_idem(j, s, 502, NULL, NULL, 0);
        http_stream_close(j->stream);
    } else if (j->req->answer_wrap) {
        /* run inside another route's request (an MCP tool call): it shapes the answer */
        router_async_finish(j->req, e->kind ? (int)e->kind : ERR_UPSTREAM, e);
    } else {
        struct router_req *r = j->req;
        api_error_respond(r, e);
        record_idem(j, s, (int)r->status, NULL, NULL, 0);
        http_req_resume(j->http);
    }
}

#define JOB_OF(p) ((struct chat_job *)(void *)((char *)(p)-offsetof(struct chat_job, job)))

/* The answer once the reply is stored, in the format: the body of a blocking reply, or the
 * last events of a stream (added to the transcript). */
static void prepare_answer(struct chat_job *j)
{
    j->v.content = buf_ptr(&j->content);
    j->v.credits = j->charged;
    j->v.usage = j->usage;
    j->v.sources = j->sources;
    if (j->stream) {
        buf_reset(&j->tail);
        j->fmt->completed(&j->v, &j->tail);
        buf_append(&j->transcript, buf_ptr(&j->tail), buf_len(&j->tail));
    } else {
        buf_reset(&j->answer);
        j->fmt->answer(&j->v, &j->answer);
    }
}

/* In the committer's transaction: the reply stored and charged, and with an Idempotency-Key
 * the answer recorded in the same commit. */
static int finish_apply(struct store *s, struct store_job *job)
{
    struct chat_job *j = JOB_OF(job);
    int rc = store_chat_finish_in(s, &j->tenant, &j->fin, &j->charged);
    if (rc)
        return rc;
    prepare_answer(j);
    if (j->idem_key) {
        bool sse = j->stream != NULL;
        const struct buf *b = sse ? &j->transcript : &j->answer;
        if (store_idem_complete(s, &j->tenant, j->idem_key, 200,
                                sse ? "text/event-stream" : "application/json", buf_ptr(b),
                                buf_len(b)))
            log_error("chat: cannot record the Idempotency-Key response of %s", j->reply_id);
    }
    return 0;
}

/* The reply is durable (rc 0), or it could not be stored: answer the client. */
static void finish_done(struct store_job *job, int rc)
{
    struct chat_job *j = JOB_OF(job);

    if (rc) {
        struct store *s = store_pool_get(j->svc->router.pool);
        struct err fe;
        log_error("chat: cannot store the reply %s (%s)", j->reply_id, err_name(rc));
        err_set(&fe, ERR_STORE, "internal_error", NULL, "The reply could not be stored.");
        fail_job(j, s, &fe);
        store_pool_put(j->svc->router.pool, s);
    } else if (j->stream) {
        http_stream_write(j->stream, buf_ptr(&j->tail), buf_len(&j->tail));
        http_stream_close(j->stream);
    } else {
        size_t len;
        char *body = buf_take(&j->answer, &len);
        j->req->status = 200;
        http_resp_set(j->http, 200, "application/json", body, len);
        if (j->req->answer_wrap)
            router_async_finish(j->req, 0, NULL); /* shaped, recorded and resumed there */
        else
            http_req_resume(j->http);
    }
    job_free(j);
}

/* The error of first writes that failed with 'rc' (ERR_LIMIT: no credit left); returns rc. */
static int begin_error(int rc, struct err *e)
{
    if (rc == ERR_LIMIT)
        return err_set(e, rc, "insufficient_credits", NULL,
                       "The organization has no credits left for live calls.");
    return err_set(e, rc, "internal_error", NULL, "chat begin failed");
}

/* Both parts are done, the first writes and the engine: answer an error, or store the reply. */
static void turn_end(struct chat_job *j)
{
    if (j->begin_rc) {
        /* nothing was stored: the answer is the one the handler would have given */
        struct err e;
        router_async_finish(j->req, begin_error(j->begin_rc, &e), &e);
        job_free(j);
        return;
    }
    if (j->conv_header) /* the conversation exists now, whatever the engine did */
        http_resp_header(j->http, j->conv_header, j->conv_id);
    if (j->engine_failed) {
        struct store *s = store_pool_get(j->svc->router.pool);
        fail_job(j, s, &j->engine_err);
        store_pool_put(j->svc->router.pool, s);
        job_free(j);
        return;
    }
    j->job.apply = finish_apply;
    j->job.done = finish_done;
    if (j->svc->committer) {
        store_committer_submit(j->svc->committer, &j->job); /* 'j' is the committer's now */
    } else {
        /* no committer (tools, tests): the same transaction on a handle of the pool */
        struct store *s = store_pool_get(j->svc->router.pool);
        j->job.next = NULL;
        store_group_apply(s, &j->job);
        store_pool_put(j->svc->router.pool, s);
        finish_done(&j->job, j->job.rc);
    }
}

/* One part of the turn is done; the last one ends it (on its thread). */
static void part_done(struct chat_job *j)
{
    if (atomic_fetch_sub(&j->parts, 1) == 1)
        turn_end(j);
}

/* The first writes of a turn that did not wait for them are committed, or failed. */
static void begin_done(struct store_job *job, int rc)
{
    struct chat_job *j =
        (struct chat_job *)(void *)((char *)job - offsetof(struct chat_job, bjob.job));
    j->begin_rc = rc;
    part_done(j);
}

static void on_done(void *ud, const struct llm_usage *u, const struct err *e)
{
    struct chat_job *j = ud;

    if (e) {
        j->engine_failed = true;
        j->engine_err = *e;
        part_done(j);
        return;
    }
    j->usage = *u;
    memset(&j->fin, 0, sizeof(j->fin));
    j->fin.reply.id = j->reply_id;
    j->fin.reply.conversation_id = j->conv_id;
    j->fin.reply.employee_id = j->emp_id;
    j->fin.reply.role = "assistant";
    j->fin.reply.content = buf_ptr(&j->content);
    j->fin.reply.sources = j->sources ? j->sources : "[]";
    j->fin.reply.credits_used = agent_price(u, j->tenant.mode);
    j->fin.reply.input_tokens = u->input_tokens;
    j->fin.reply.output_tokens = u->output_tokens;
    j->fin.reply.response_ms = (clock_mono_us() - j->t0_us) / 1000;
    j->fin.reply.created_at = j->created_at;
    j->fin.reserved = j->reserved;
    j->fin.charge = j->live;
    part_done(j);
}

/* The knowledge search of the message is done: note the passages, start the engine. */
static void knowledge_done(void *ud, int rc, struct store *s, const struct store_hit *hits,
                           size_t n, const struct err *e)
{
    struct chat_job *j = ud;
    struct llm_request lreq = j->lreq;
    struct llm_sink sink;

    (void)s;
    if (rc) {
        log_warn("chat: knowledge search failed: %s", e ? e->msg : "?");
    } else {
        /* Nothing is allocated without passages: a stream keeps its job for its whole life. */
        struct llm_passage *ps = n ? agent_passages(&j->arena, hits, n) : NULL;
        json_t *src = json_array();
        for (size_t i = 0; i < n; i++) {
            json_t *o = json_object();
            json_object_set_new(o, "document_id", jo_string(hits[i].document_id));
            json_object_set_new(o, "document_name", jo_string(hits[i].document_name));
            json_object_set_new(o, "chunk_id", jo_string(hits[i].chunk_id));
            json_object_set_new(o, "score", json_real(hits[i].score > 1 ? 1.0 : hits[i].score));
            json_array_append_new(src, o);
        }
        j->sources = json_dumps(src, JSON_COMPACT);
        json_decref(src);
        lreq.knowledge = ps;
        lreq.nknowledge = n;
        lreq.knowledge_searched = true;
    }
    sink.delta = on_delta;
    sink.done = on_done;
    sink.ud = j;
    llm_call(j->engine, &lreq, &sink); /* 'j' may be gone when this returns */
}

/* ---- The turn ---- */

/* The index of the first of the 'n' messages (oldest first) from which on the newest ones fit
 * a budget of 'budget' words. */
static size_t fit_history(const struct llm_message *m, size_t n, int64_t budget)
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

/* The last messages of the conversation that fit the history budget, oldest first. */
static void load_history(struct router_req *r, const char *conv_id, const struct llm_message **out,
                         size_t *n)
{
    struct store_message *msgs = NULL;
    struct llm_message *all;
    size_t nm = 0, first;

    *out = NULL;
    *n = 0;
    if (store_message_list(r->store, &r->tenant, conv_id, HISTORY_MESSAGES, r->arena, &msgs, &nm))
        return;
    all = arena_alloc(r->arena, (nm + 1) * sizeof(*all));
    for (size_t i = 0; i < nm; i++) {
        all[i].role = msgs[i].role;
        all[i].content = msgs[i].content;
    }
    first = fit_history(all, nm, r->env->cfg->llm_history_tokens);
    *out = all + first;
    *n = nm - first;
}

/* The conversation 't' continues (checked to be with 'emp'), or a new one titled with the
 * message into '*conv' (strings in the request's arena); 'begin' notes a new one. */
static int find_conversation(struct router_req *r, const struct api_chat_turn *t,
                             const struct store_employee *emp, int64_t now,
                             struct store_conversation *conv, struct store_chat_begin *begin,
                             struct err *e)
{
    char *id;
    size_t cut = 0, chars = 0;
    int rc;

    if (t->conversation_id) {
        rc = store_conversation_get(r->store, &r->tenant, t->conversation_id, r->arena, conv);
        if (rc == ERR_NOT_FOUND)
            return err_set(e, rc, "conversation_not_found", "conversation_id",
                           "No conversation %.60s.", t->conversation_id);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "conversation read failed");
        if (strcmp(conv->employee_id, emp->id) != 0)
            return err_set(e, ERR_INVALID, "invalid_request", "conversation_id",
                           "Invalid conversation_id: the conversation is with another employee.");
        return 0;
    }
    id = arena_alloc(r->arena, ID_MAX);
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
    conv->title = arena_strndup(r->arena, t->message, cut);
    conv->created_at = now;
    begin->new_conversation = true;
    begin->conversation = *conv;
    return 0;
}

/* A new job for the reply to 'conv' with 'emp', its view pointing into it; NULL without ids. */
static struct chat_job *job_new(struct router_req *r, const struct api_chat_turn *t,
                                const struct store_conversation *conv,
                                const struct store_employee *emp)
{
    struct chat_job *j = xcalloc(1, sizeof(*j));
    j->svc = api_svc(r);
    j->tenant = r->tenant;
    j->live = r->tenant.mode == STORE_LIVE;
    j->reserved = j->live;
    j->t0_us = r->t0_us;
    j->fmt = t->format ? t->format : &message_format;
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
    if (id_new("msg", j->reply_id, sizeof(j->reply_id))) {
        job_free(j);
        return NULL;
    }
    return j;
}

/*
 * One chat turn (contract §8): the employee 't' names is checked (404, 403 tier, 409 offline:
 * errors name t->employee_param), the conversation found or started, the user message stored
 * with one credit reserved for a live key (402 insufficient_credits), and the reply started:
 * deferred, or streamed when t->stream. The answer is written by t->format (NULL: the Message
 * of POST /v1/chat). Returns 0 with the response pending, or an error with nothing stored.
 * Every string of 't' must live as long as the request's arena.
 */
int api_chat_turn(struct router_req *r, const struct api_chat_turn *t, struct err *e)
{
    const char *param = t->employee_param ? t->employee_param : "employee_id";
    struct store_employee emp;
    struct store_conversation conv;
    struct store_chat_begin begin;
    struct chat_job *j;
    char *user_id = arena_alloc(r->arena, ID_MAX);
    int64_t now = clock_now_ms();
    bool early;
    int rc;

    rc = store_employee_get(r->store, &r->tenant, t->employee_id, r->arena, &emp);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "employee_not_found", param, "No employee %.60s.", t->employee_id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee read failed");
    rc = agent_tier_check(r->org.tier, &emp, param, "chat with", e);
    if (rc)
        return rc;
    if (emp.status == STORE_EMP_OFFLINE)
        return err_set(e, ERR_CONFLICT, "employee_offline", param,
                       "%s is offline. Set the employee back to idle first.", emp.name);
    memset(&begin, 0, sizeof(begin));
    rc = find_conversation(r, t, &emp, now, &conv, &begin, e);
    if (rc)
        return rc;
    if (id_new("msg", user_id, ID_MAX))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");
    j = job_new(r, t, &conv, &emp);
    if (!j)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");

    /* History is read before the new message is stored, so it holds only earlier turns. */
    if (t->conversation_id) {
        load_history(r, conv.id, &j->lreq.history, &j->lreq.nhistory);
    } else if (t->nhistory) {
        size_t first = fit_history(t->history, t->nhistory, r->env->cfg->llm_history_tokens);
        j->lreq.history = t->history + first;
        j->lreq.nhistory = t->nhistory - first;
    }

    begin.user.id = user_id;
    begin.user.conversation_id = conv.id;
    begin.user.employee_id = emp.id;
    begin.user.role = "user";
    begin.user.content = t->message;
    begin.user.response_ms = -1;
    begin.user.created_at = now;
    begin.reserve_credit = j->reserved;
    j->begin = begin;
    /* Inside another route's request the Idempotency-Key records that route's answer, once it
     * is shaped (router_async_finish), not this turn's. */
    if (r->idem_key && !r->answer_wrap)
        j->idem_key = xstrdup(r->idem_key);

    /*
     * A blocking turn does not wait for its first writes: they are committed while the
     * engine runs, and the turn ends when both are done (turn_end), with the answer the
     * handler would have given if they failed. A live turn does so only when the balance it
     * read is more than the tier lets run at once (each of those reserves 1), so that its
     * reservation fails, after an engine call, only if replies that end meanwhile spend the
     * rest. A stream writes first: its status is sent before the engine runs.
     */
    early = !t->stream && api_svc(r)->committer &&
            (!j->live || r->org.credits > (int64_t)r->limits.concurrent);
    atomic_init(&j->parts, early ? 2 : 1);
    if (early && !store_chat_begin_submit(api_svc(r)->committer, &j->tenant, &j->begin, &j->bjob,
                                          begin_done)) {
        early = false;
        atomic_store(&j->parts, 1);
    }
    if (!early) {
        rc = api_svc(r)->committer
                 ? store_chat_begin_committed(api_svc(r)->committer, r->store, &r->tenant, &begin)
                 : store_chat_begin(r->store, &r->tenant, &begin);
        if (rc) {
            job_free(j);
            return begin_error(rc, e);
        }
    }
    j->created_at = clock_now_ms();
    j->v.created_at = j->created_at;

    if (t->context)
        j->context = xstrdup(t->context);
    j->lreq.model = emp.model;
    j->lreq.employee_name = emp.name;
    j->lreq.employee_role = emp.role;
    j->lreq.persona = emp.instructions;
    j->lreq.capabilities = emp.capabilities;
    j->lreq.context = j->context;
    j->lreq.message = t->message;
    j->engine = agent_engine(&api_svc(r)->agent, r->tenant.mode);

    if (early)
        j->conv_header = t->conversation_header;
    else if (t->conversation_header)
        http_resp_header(r->http, t->conversation_header, conv.id);
    r->async = true;
    if (t->stream) {
        struct buf ev;
        http_resp_header(r->http, "Cache-Control", "no-cache");
        http_resp_header(r->http, "X-Accel-Buffering", "no");
        j->stream = http_stream_open(r->http, 200, "text/event-stream");
        r->status = 200;
        buf_init(&ev, 8192);
        j->fmt->opened(&j->v, &ev);
        send_events(j, &ev);
        buf_cleanup(&ev);
    } else {
        j->req = r;
        j->http = r->http;
        http_req_defer(r->http);
    }
    /* The knowledge this employee may read that matches the message; the engine starts when
     * the search is done (here, or on the embedding pool's thread). 'j' may then be gone. */
    agent_knowledge_start(&api_svc(r)->agent, &r->tenant, emp.id, t->message, r->store,
                          knowledge_done, j);
    return 0;
}

/* ---- POST /v1/chat ---- */

static int chat(struct router_req *r, struct err *e, bool always_stream)
{
    struct chat_body b;
    struct jb_result res;
    struct api_chat_turn t;
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, chat_fields, F_N, &b, r->arena, &res, e);
    if (rc)
        return rc;
    memset(&t, 0, sizeof(t));
    t.employee_id = b.employee_id;
    t.message = b.message;
    t.conversation_id = b.conversation_id;
    t.stream = always_stream || b.stream;
    if (b.context) {
        char *s = json_dumps(b.context, JSON_COMPACT);
        t.context = s ? arena_strdup(r->arena, s) : NULL;
        free(s);
    }
    return api_chat_turn(r, &t, e);
}

/* POST /v1/chat */
int api_chat(struct router_req *r, struct err *e)
{
    return chat(r, e, false);
}

/* POST /v1/chat/stream */
int api_chat_stream(struct router_req *r, struct err *e)
{
    return chat(r, e, true);
}
