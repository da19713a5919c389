/* SPDX-License-Identifier: MIT */
/*
 * chat.c: POST /v1/chat and POST /v1/chat/stream (contract §8): the request read, a turn of the
 * conversation started (src/turn), its answer written in the Message format below and sent
 * over the door's transport (a deferred answer or an event stream).
 *
 * DESIGN: the turn (turn.c) does the work and knows no HTTP; this file gives it a struct
 * turn_out over the request: open() defers the answer or opens the stream, write()/close()
 * send a stream's events, end() answers a blocking turn. A blocking turn run inside another
 * route's request (r->answer_wrap: the MCP server's ask_employee) and every error end through
 * router_async_finish(), which shapes, records and sends that route's answer; a reply's own
 * answer is recorded under the Idempotency-Key in the turn's commit.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../llm/llm.h"
#include "../turn/turn.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- The format of POST /v1/chat ---- */

/* The Message object of the reply. */
static void message_answer(const struct turn_view *v, struct buf *out)
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
    jw_key(&w, "status");
    jw_str(&w, v->status ? v->status : "completed");
    jw_key(&w, "stop_reason");
    jw_str(&w, v->stop_reason ? v->stop_reason : "completed");
    jw_key(&w, "error");
    jw_str(&w, v->error); /* NULL: null */
    jw_key(&w, "tool_calls");
    jw_raw(&w, v->tool_calls, "[]"); /* written by the turn from its journal */
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
static void message_event(struct turn_view *v, const char *name, const char *data, size_t len,
                          struct buf *out)
{
    buf_appendf(out, "id: %u\nevent: %s\ndata: ", ++v->seq, name);
    buf_append(out, data, len);
    buf_appends(out, "\n\n");
}

static void message_opened(struct turn_view *v, struct buf *out)
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

static void message_delta(struct turn_view *v, const char *text, size_t len, struct buf *out)
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
static void message_completed(struct turn_view *v, struct buf *out)
{
    struct buf m;
    if (!v->sent_delta)
        message_delta(v, "", 0, out);
    buf_init(&m, 8u << 20);
    message_answer(v, &m);
    message_event(v, "message.completed", buf_ptr(&m), buf_len(&m), out);
    buf_cleanup(&m);
}

static void message_failed(struct turn_view *v, const struct err *e, struct buf *out)
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

/* tool.started / tool.completed: {message_id, tool_call} */
static void message_tool(struct turn_view *v, const char *event, const char *call, struct buf *out)
{
    struct buf d;
    buf_init(&d, (64u << 10) + 256);
    buf_appendf(&d, "{\"message_id\":\"%s\",\"tool_call\":", v->reply_id);
    buf_appends(&d, call);
    buf_appends(&d, "}");
    message_event(v, event, buf_ptr(&d), buf_len(&d), out);
    buf_cleanup(&d);
}

/* approval.requested: {message_id, approval} */
static void message_approval(struct turn_view *v, const char *approval, struct buf *out)
{
    struct buf d;
    buf_init(&d, (64u << 10) + 256);
    buf_appendf(&d, "{\"message_id\":\"%s\",\"approval\":", v->reply_id);
    buf_appends(&d, approval);
    buf_appends(&d, "}");
    message_event(v, "approval.requested", buf_ptr(&d), buf_len(&d), out);
    buf_cleanup(&d);
}

static const struct turn_format message_format = {
    message_answer, message_opened, message_delta,    message_completed,
    message_failed, message_tool,   message_approval,
};

/* See api.h. */
const struct turn_format *api_chat_format(void)
{
    return &message_format;
}

/* ---- The door's transport ---- */

/* A turn's transport over the request 'r'; freed at the turn's last call. */
struct door {
    struct router_req *r; /* valid until the answer is sent */
    bool streaming;
    struct http_stream *stream; /* a stream, once open */
    const char *conv_header;    /* a response header naming the conversation, or NULL */
};

static void door_open(void *ud)
{
    struct door *d = ud;
    struct router_req *r = d->r;

    r->async = true;
    if (d->streaming) {
        http_resp_header(r->http, "Cache-Control", "no-cache");
        http_resp_header(r->http, "X-Accel-Buffering", "no");
        d->stream = http_stream_open(r->http, 200, "text/event-stream");
        r->status = 200;
    } else {
        http_req_defer(r->http);
    }
}

static void door_write(void *ud, const char *p, size_t n)
{
    struct door *d = ud;
    http_stream_write(d->stream, p, n); /* a client that left is ignored */
}

static void door_close(void *ud)
{
    struct door *d = ud;
    http_stream_close(d->stream);
    free(d);
}

static void door_conversation(void *ud, const char *id)
{
    struct door *d = ud;
    if (d->conv_header)
        http_resp_header(d->r->http, d->conv_header, id);
}

static void door_end(void *ud, int rc, const struct err *e, char *body, size_t len)
{
    struct door *d = ud;
    struct router_req *r = d->r;

    free(d);
    if (rc) {
        router_async_finish(r, rc, e); /* rendered, recorded and resumed there */
        return;
    }
    r->status = 200;
    http_resp_set(r->http, 200, "application/json", body, len);
    if (r->answer_wrap)
        router_async_finish(r, 0, NULL); /* shaped, recorded and resumed there */
    else
        http_req_resume(r->http); /* the answer is recorded with the reply */
}

/*
 * One chat turn of request 'r' (see api.h): the request's tenant in 't', then turn_start()
 * with this door. Returns 0 with the response pending, or an error with nothing stored. Every
 * string of 't' must live as long as the request's arena.
 */
int api_chat_turn(struct router_req *r, struct turn_req *t, const char *conversation_header,
                  struct err *e)
{
    struct turn_out out = {door_open, door_write, door_close, door_conversation, door_end, NULL};
    struct door *d = xcalloc(1, sizeof(*d));
    int rc;

    t->tenant = r->tenant;
    t->org = &r->org;
    t->concurrent = r->limits.concurrent;
    t->arena = r->arena;
    t->t0_us = r->t0_us;
    if (!t->format)
        t->format = &message_format;
    /* Inside another route's request the Idempotency-Key records that route's answer, once it
     * is shaped (router_async_finish), not this turn's. */
    t->idem_key = r->answer_wrap ? NULL : r->idem_key;
    t->scopes = router_rights(r);
    t->requested_by = router_actor_id(r);
    d->r = r;
    d->streaming = t->stream;
    d->conv_header = conversation_header;
    out.ud = d;
    rc = turn_start(&api_svc(r)->turn, r->store, t, &out, e);
    if (rc)
        free(d);
    return rc;
}

/* ---- POST /v1/chat ---- */

static int chat(struct router_req *r, struct err *e, bool always_stream)
{
    struct chat_body b;
    struct jb_result res;
    struct turn_req t;
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
    /* inside another route's request (MCP's ask_employee) the answer cannot be a pause */
    t.can_pause = r->answer_wrap == NULL;
    if (b.context) {
        char *s = json_dumps(b.context, JSON_COMPACT);
        t.context = s ? arena_strdup(r->arena, s) : NULL;
        free(s);
    }
    return api_chat_turn(r, &t, NULL, e);
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
