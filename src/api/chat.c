/* SPDX-License-Identifier: MIT */
/*
 * chat.c: POST /v1/chat and POST /v1/chat/stream (contract §8, §3 credits and tiers).
 *
 * DESIGN: the handler validates, then in one store transaction stores the user message (and a
 * new conversation), reserves one credit for a live key and marks the employee busy. It then
 * starts the engine and returns: the response is deferred (blocking chat) or streamed (SSE),
 * so no worker thread waits for the model. A struct chat_job owns everything the reply needs;
 * the engine's done() hands it to the store's committer (store_committer_submit), which
 * stores the reply, charges the rest of the cost (never below zero), counts the statistics fact
 * and records the Idempotency-Key response in one transaction shared with the other replies
 * that end at the same time (group commit: one fsync for all of them); only then is the client
 * answered. A client that leaves a stream does not stop any of it.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../llm/llm.h"

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
    {"message", JB_STRING, offsetof(struct chat_body, message), JB_REQUIRED, 1, 32000, NULL, NULL,
     NULL},
    {"conversation_id", JB_STRING, offsetof(struct chat_body, conversation_id), 0, 1, 100, NULL,
     NULL, NULL},
    {"stream", JB_BOOL, offsetof(struct chat_body, stream), 0, 0, 0, NULL, NULL, NULL},
    {"context", JB_ANY, offsetof(struct chat_body, context), JB_OBJECT, 0, 0, NULL, NULL, NULL},
};

const struct jb_binding api_chat_body = {chat_fields, F_N};

struct chat_job {
    const struct router_env *env;
    struct store_tenant tenant;
    struct router_req *req;     /* blocking: valid until http_req_resume() */
    struct http_req *http;      /* blocking */
    struct http_stream *stream; /* streaming */
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
    unsigned seq;
    bool sent_delta;
    /* Once the engine is done: the committer's job, and what it needs and makes. */
    struct store_job job;
    struct store_chat_finish fin;
    struct llm_usage usage;
    int64_t charged;
    struct buf answer; /* the reply's JSON */
    struct buf tail;   /* streaming: the last events, sent once the reply is durable */
    /* Until the engine starts (after the knowledge search): */
    struct llm_request lreq; /* strings in the request's arena, or 'arena' */
    struct llm *engine;
    char *context; /* JSON text of the request's context, or NULL */
    struct arena arena;
};

/* ---- Output ---- */

static void write_message(struct jw *w, const struct chat_job *j, const char *content,
                          int64_t credits, const struct llm_usage *u)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, j->reply_id);
    jw_key(w, "conversation_id");
    jw_str(w, j->conv_id);
    jw_key(w, "employee_id");
    jw_str(w, j->emp_id);
    jw_key(w, "content");
    jw_str(w, content);
    jw_key(w, "role");
    jw_str(w, "assistant");
    jw_key(w, "credits_used");
    jw_int(w, credits);
    jw_key(w, "created_at");
    jw_time(w, j->created_at);
    jw_key(w, "sources");
    jw_raw(w, j->sources, "[]");
    jw_key(w, "usage");
    jw_obj(w);
    jw_key(w, "input_tokens");
    jw_int(w, u ? u->input_tokens : 0);
    jw_key(w, "output_tokens");
    jw_int(w, u ? u->output_tokens : 0);
    jw_obj_end(w);
    jw_obj_end(w);
}

/* Append one SSE event whose data is the JSON in 'data' to 'out' and to the transcript. */
static void format_event(struct chat_job *j, const char *name, const char *data, size_t len,
                         struct buf *out)
{
    size_t from = buf_len(out);
    buf_appendf(out, "id: %u\nevent: %s\ndata: ", ++j->seq, name);
    buf_append(out, data, len);
    buf_appends(out, "\n\n");
    buf_append(&j->transcript, buf_ptr(out) + from, buf_len(out) - from);
}

/* Send one SSE event whose data is the JSON in 'data'. A client that left is ignored. */
static void send_event(struct chat_job *j, const char *name, const char *data, size_t len)
{
    struct buf ev;
    buf_init(&ev, (4u << 20) + 256);
    format_event(j, name, data, len, &ev);
    http_stream_write(j->stream, buf_ptr(&ev), buf_len(&ev));
    buf_cleanup(&ev);
}

/* The data of a message.delta event carrying 'text' into 'd'. */
static void delta_json(const struct chat_job *j, const char *text, size_t len, struct buf *d)
{
    struct jw w;
    char *piece = xstrndup(text, len);
    jw_init(&w, d);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_str(&w, j->reply_id);
    jw_key(&w, "delta");
    jw_str(&w, piece);
    jw_obj_end(&w);
    if (jw_finish(&w))
        buf_reset(d);
    free(piece);
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
        struct buf d;
        j->sent_delta = true;
        buf_init(&d, (4u << 20) + 128);
        delta_json(j, text, len, &d);
        if (buf_len(&d))
            send_event(j, "message.delta", buf_ptr(&d), buf_len(&d));
        buf_cleanup(&d);
    }
}

static void fail_job(struct chat_job *j, struct store *s, const struct err *e)
{
    if (store_chat_abort(s, &j->tenant, j->emp_id, j->reserved))
        log_error("chat: cannot end the failed reply %s cleanly", j->reply_id);
    if (j->stream) {
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
        send_event(j, "error", buf_ptr(&d), buf_len(&d));
        buf_cleanup(&d);
        record_idem(j, s, 502, NULL, NULL, 0);
        http_stream_close(j->stream);
    } else {
        struct router_req *r = j->req;
        api_error_respond(r, e);
        record_idem(j, s, (int)r->status, NULL, NULL, 0);
        http_req_resume(j->http);
    }
}

#define JOB_OF(p) ((struct chat_job *)(void *)((char *)(p)-offsetof(struct chat_job, job)))

/* The answer once the reply is stored: its JSON, and for a stream the last events (one delta
 * at least, even for an empty reply, then message.completed), added to the transcript. */
static void prepare_answer(struct chat_job *j)
{
    struct jw w;
    buf_reset(&j->answer);
    jw_init(&w, &j->answer);
    write_message(&w, j, buf_ptr(&j->content), j->charged, &j->usage);
    jw_finish(&w);
    if (j->stream) {
        buf_reset(&j->tail);
        if (!j->sent_delta) {
            struct buf d;
            buf_init(&d, 4096);
            delta_json(j, "", 0, &d);
            format_event(j, "message.delta", buf_ptr(&d), buf_len(&d), &j->tail);
            buf_cleanup(&d);
        }
        format_event(j, "message.completed", buf_ptr(&j->answer), buf_len(&j->answer), &j->tail);
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
        struct store *s = store_pool_get(j->env->pool);
        struct err fe;
        log_error("chat: cannot store the reply %s (%s)", j->reply_id, err_name(rc));
        err_set(&fe, ERR_STORE, "internal_error", NULL, "The reply could not be stored.");
        fail_job(j, s, &fe);
        store_pool_put(j->env->pool, s);
    } else if (j->stream) {
        http_stream_write(j->stream, buf_ptr(&j->tail), buf_len(&j->tail));
        http_stream_close(j->stream);
    } else {
        size_t len;
        char *body = buf_take(&j->answer, &len);
        j->req->status = 200;
        http_resp_set(j->http, 200, "application/json", body, len);
        http_req_resume(j->http);
    }
    job_free(j);
}

static void on_done(void *ud, const struct llm_usage *u, const struct err *e)
{
    struct chat_job *j = ud;

    if (e) {
        struct store *s = store_pool_get(j->env->pool);
        fail_job(j, s, e);
        store_pool_put(j->env->pool, s);
        job_free(j);
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

/* ---- The handler ---- */

/* The last messages of the conversation that fit the history budget, oldest first. */
static void load_history(struct router_req *r, const char *conv_id, struct llm_message **out,
                         size_t *n)
{
    struct store_message *msgs = NULL;
    size_t nm = 0, first;
    int64_t words = 0;

    *out = NULL;
    *n = 0;
    if (store_message_list(r->store, &r->tenant, conv_id, HISTORY_MESSAGES, r->arena, &msgs, &nm))
        return;
    first = nm;
    while (first > 0) {
        int64_t w = llm_count_words(msgs[first - 1].content);
        if (words + w > r->env->cfg->llm_history_tokens)
            break;
        words += w;
        first--;
    }
    *out = arena_alloc(r->arena, (nm - first + 1) * sizeof(**out));
    for (size_t i = first; i < nm; i++) {
        (*out)[*n].role = msgs[i].role;
        (*out)[(*n)++].content = msgs[i].content;
    }
}

static int chat(struct router_req *r, struct err *e, bool always_stream)
{
    struct chat_body b;
    struct jb_result res;
    struct store_employee emp;
    struct store_conversation conv;
    struct store_chat_begin begin;
    struct chat_job *j;
    char user_id[ID_MAX];
    bool stream;
    int64_t now = clock_now_ms();
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, chat_fields, F_N, &b, r->arena, &res, e);
    if (rc)
        return rc;
    stream = always_stream || b.stream;
    rc = store_employee_get(r->store, &r->tenant, b.employee_id, r->arena, &emp);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "employee_not_found", "employee_id", "No employee %.60s.",
                       b.employee_id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee read failed");
    rc = agent_tier_check(r->org.tier, &emp, "employee_id", "chat with", e);
    if (rc)
        return rc;
    if (emp.status == STORE_EMP_OFFLINE)
        return err_set(e, ERR_CONFLICT, "employee_offline", "employee_id",
                       "%s is offline. Set the employee back to idle first.", emp.name);
    memset(&begin, 0, sizeof(begin));
    if (b.conversation_id) {
        rc = store_conversation_get(r->store, &r->tenant, b.conversation_id, r->arena, &conv);
        if (rc == ERR_NOT_FOUND)
            return err_set(e, rc, "conversation_not_found", "conversation_id",
                           "No conversation %.60s.", b.conversation_id);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "conversation read failed");
        if (strcmp(conv.employee_id, emp.id) != 0)
            return err_set(e, ERR_INVALID, "invalid_request", "conversation_id",
                           "Invalid conversation_id: the conversation is with another employee.");
    } else {
        char *id = arena_alloc(r->arena, ID_MAX);
        size_t cut = 0, chars = 0;
        if (id_new("conv", id, ID_MAX))
            return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");
        /* Title: the first message cut to 80 characters (not bytes). */
        while (b.message[cut] && chars < 80) {
            cut++;
            while (((unsigned char)b.message[cut] & 0xC0) == 0x80)
                cut++;
            chars++;
        }
        memset(&conv, 0, sizeof(conv));
        conv.id = id;
        conv.employee_id = emp.id;
        conv.title = arena_strndup(r->arena, b.message, cut);
        conv.created_at = now;
        begin.new_conversation = true;
        begin.conversation = conv;
    }
    if (id_new("msg", user_id, sizeof(user_id)))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");

    j = xcalloc(1, sizeof(*j));
    j->env = r->env;
    j->tenant = r->tenant;
    j->live = r->tenant.mode == STORE_LIVE;
    j->reserved = j->live;
    j->t0_us = r->t0_us;
    snprintf(j->conv_id, sizeof(j->conv_id), "%s", conv.id);
    snprintf(j->emp_id, sizeof(j->emp_id), "%s", emp.id);
    arena_init(&j->arena);
    buf_init(&j->content, 4u << 20);
    buf_init(&j->transcript, 16u << 20);
    buf_init(&j->answer, 8u << 20);
    buf_init(&j->tail, 16u << 20);
    if (id_new("msg", j->reply_id, sizeof(j->reply_id))) {
        job_free(j);
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");
    }

    /* History is read before the new message is stored, so it holds only earlier turns. */
    if (b.conversation_id) {
        struct llm_message *hist = NULL;
        load_history(r, conv.id, &hist, &j->lreq.nhistory);
        j->lreq.history = hist;
    }

    begin.user.id = user_id;
    begin.user.conversation_id = conv.id;
    begin.user.employee_id = emp.id;
    begin.user.role = "user";
    begin.user.content = b.message;
    begin.user.response_ms = -1;
    begin.user.created_at = now;
    begin.reserve_credit = j->reserved;
    rc = r->env->committer
             ? store_chat_begin_committed(r->env->committer, r->store, &r->tenant, &begin)
             : store_chat_begin(r->store, &r->tenant, &begin);
    if (rc == ERR_LIMIT) {
        job_free(j);
        return err_set(e, rc, "insufficient_credits", NULL,
                       "The organization has no credits left for live calls.");
    }
    if (rc) {
        job_free(j);
        return err_set(e, rc, "internal_error", NULL, "chat begin failed");
    }
    j->created_at = clock_now_ms();
    if (r->idem_key)
        j->idem_key = xstrdup(r->idem_key);

    if (b.context)
        j->context = json_dumps(b.context, JSON_COMPACT);
    j->lreq.model = emp.model;
    j->lreq.employee_name = emp.name;
    j->lreq.employee_role = emp.role;
    j->lreq.persona = emp.instructions;
    j->lreq.capabilities = emp.capabilities;
    j->lreq.context = j->context;
    j->lreq.message = b.message;
    j->engine = agent_engine(&r->env->agent, r->tenant.mode);

    r->async = true;
    if (stream) {
        struct buf d;
        struct jw w;
        http_resp_header(r->http, "Cache-Control", "no-cache");
        http_resp_header(r->http, "X-Accel-Buffering", "no");
        j->stream = http_stream_open(r->http, 200, "text/event-stream");
        r->status = 200;
        buf_init(&d, 4096);
        jw_init(&w, &d);
        jw_obj(&w);
        jw_key(&w, "id");
        jw_str(&w, j->reply_id);
        jw_key(&w, "conversation_id");
        jw_str(&w, j->conv_id);
        jw_key(&w, "employee_id");
        jw_str(&w, j->emp_id);
        jw_key(&w, "role");
        jw_str(&w, "assistant");
        jw_key(&w, "created_at");
        jw_time(&w, j->created_at);
        jw_obj_end(&w);
        send_event(j, "message.created", buf_ptr(&d), buf_len(&d));
        buf_cleanup(&d);
    } else {
        j->req = r;
        j->http = r->http;
        http_req_defer(r->http);
    }
    /* The knowledge this employee may read that matches the message; the engine starts when
     * the search is done (here, or on the embedding pool's thread). 'j' may then be gone. */
    agent_knowledge_start(&r->env->agent, &r->tenant, emp.id, b.message, r->store, knowledge_done,
                          j);
    return 0;
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
