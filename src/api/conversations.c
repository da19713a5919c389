/* SPDX-License-Identifier: MIT */
/*
 * conversations.c: GET /v1/conversations (newest activity first, `before` keyset cursor over
 * updated_at then id), GET and DELETE /v1/conversations/{id} (the GET streamed from the
 * database), GET /v1/conversations/{id}/messages (newest first, paged), and the feedback extension
 * POST /v1/conversations/{id}/messages/{message_id}/feedback (contract §8).
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../http/http.h"

#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define RESP_CAP (64u << 20)

static void write_item(struct jw *w, const struct store_conversation *c)
{
    jw_key(w, "id");
    jw_str(w, c->id);
    jw_key(w, "employee_id");
    jw_str(w, c->employee_id);
    jw_key(w, "title");
    jw_str(w, c->title);
    jw_key(w, "message_count");
    jw_int(w, c->message_count);
    jw_key(w, "created_at");
    jw_time(w, c->created_at);
    jw_key(w, "updated_at");
    jw_time(w, c->updated_at);
}

/* GET /v1/conversations */
int api_conversations_list(struct router_req *r, struct err *e)
{
    struct store_conv_filter f;
    struct store_conv_page page;
    struct buf b;
    struct jw w;
    int rc;

    memset(&f, 0, sizeof(f));
    rc = router_query_limit(r, &f.limit, e);
    if (rc)
        return rc;
    f.employee_id = router_query(r, "employee_id");
    if (f.employee_id) {
        rc = api_employee_find(r, f.employee_id, "employee_id", NULL, e);
        if (rc)
            return rc;
    }
    rc = router_query_before(r, "conv", &f.before_updated, &f.before_id, e);
    if (rc)
        return rc;
    rc = store_conversation_list(r->store, &r->tenant, &f, r->arena, &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "conversation list failed");
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "conversations");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++) {
        jw_obj(&w);
        write_item(&w, &page.items[i]);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.has_more ? page.items[page.n - 1].updated_at : 0,
                      page.has_more ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

static int get_conversation(struct router_req *r, struct store_conversation *c, struct err *e)
{
    int rc = store_conversation_get(r->store, &r->tenant, r->params[0], r->arena, c);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "conversation_not_found", "id", "No conversation %.60s.",
                       r->params[0]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "conversation read failed");
    return 0;
}

/* One message object, as the conversation and its message list show it. */
/* The tool calls of the messages of a page (store_tool_calls_of), in order. */
struct page_calls {
    struct store_tool_call *v;
    size_t n;
};

#define PAGE_CALLS_MAX 20000 /* calls read with one page of messages */

/* The calls of the 'n' messages 'msgs' (ordered by seq either way) into 'out' (from 'a'). */
static int read_calls(struct store *s, const struct store_tenant *t, const char *conv_id,
                      const struct store_message *msgs, size_t n, struct arena *a,
                      struct page_calls *out)
{
    int64_t lo, hi;
    out->v = NULL;
    out->n = 0;
    if (n == 0)
        return 0;
    lo = msgs[0].seq < msgs[n - 1].seq ? msgs[0].seq : msgs[n - 1].seq;
    hi = msgs[0].seq < msgs[n - 1].seq ? msgs[n - 1].seq : msgs[0].seq;
    return store_tool_calls_of(s, t, conv_id, lo, hi, PAGE_CALLS_MAX, a, &out->v, &out->n);
}

static void write_message(struct jw *w, const struct store_message *m,
                          const struct page_calls *calls)
{
    act_message_write(w, m, calls ? calls->v : NULL, calls ? calls->n : 0);
}

/* ---- GET /v1/conversations/{id}: streamed from the database ---- */

/*
 * DESIGN. A conversation can hold thousands of long messages (1,202 of 32,000 characters made
 * a 40 MB answer that was built whole, and then refused as too large). The answer is pulled:
 * each time the client can take more, the next PAGE messages are read by keyset on their order
 * with a store handle taken for that read only, written with the JSON writer into a buffer
 * that is emptied as it is sent. Memory per request is one page; the HTTP thread is held for
 * one page at a time, so other connections on it go on between pages. The head (404, auth) is
 * decided before the first byte; a store failure later ends the connection (a cut body).
 */
#define PAGE 8
#define STREAM_CAP (32u << 20) /* one page of the longest messages fits */

struct conv_stream {
    const struct router_env *env;
    struct store_tenant tenant;
    char *conv_id;
    struct buf out;
    size_t off;
    struct jw w;
    int64_t last_seq;
    bool done;
};

static void conv_stream_free(void *ud)
{
    struct conv_stream *cs = ud;
    buf_cleanup(&cs->out);
    free(cs->conv_id);
    free(cs);
}

/* Write the next page of messages (and the end when there are no more). */
static int conv_stream_fill(struct conv_stream *cs)
{
    struct arena a;
    struct store *s;
    struct store_message *msgs = NULL;
    struct page_calls calls = {NULL, 0};
    size_t n = 0;
    int rc;

    arena_init(&a);
    s = store_pool_get(cs->env->pool);
    rc = store_message_page(s, &cs->tenant, cs->conv_id, false, cs->last_seq, PAGE, &a, &msgs, &n);
    if (!rc)
        rc = read_calls(s, &cs->tenant, cs->conv_id, msgs, n, &a, &calls);
    store_pool_put(cs->env->pool, s);
    if (!rc) {
        for (size_t i = 0; i < n; i++) {
            write_message(&cs->w, &msgs[i], &calls);
            cs->last_seq = msgs[i].seq;
        }
        if (n < PAGE) {
            jw_arr_end(&cs->w);
            jw_obj_end(&cs->w);
            cs->done = true;
        }
        rc = cs->w.rc;
    }
    arena_cleanup(&a);
    return rc;
}

static long conv_stream_pull(void *ud, char *out, size_t max)
{
    struct conv_stream *cs = ud;
    size_t left, k;

    if (cs->off == buf_len(&cs->out)) {
        buf_reset(&cs->out);
        cs->off = 0;
        if (cs->done)
            return 0;
        if (conv_stream_fill(cs) != 0) {
            log_error("conversations: %s: reading the messages failed mid-answer", cs->conv_id);
            return -1;
        }
        if (buf_len(&cs->out) == 0)
            return 0;
    }
    left = buf_len(&cs->out) - cs->off;
    k = left < max ? left : max;
    memcpy(out, buf_ptr(&cs->out) + cs->off, k);
    cs->off += k;
    return (long)k;
}

/* GET /v1/conversations/{id}: the conversation and all its messages, oldest first. */
int api_conversations_get(struct router_req *r, struct err *e)
{
    struct store_conversation c;
    struct conv_stream *cs;
    int rc;

    rc = get_conversation(r, &c, e);
    if (rc)
        return rc;
    cs = xcalloc(1, sizeof(*cs));
    cs->env = r->env;
    cs->tenant = r->tenant;
    cs->conv_id = xstrdup(c.id);
    buf_init(&cs->out, STREAM_CAP);
    jw_init(&cs->w, &cs->out);
    jw_obj(&cs->w);
    write_item(&cs->w, &c);
    jw_key(&cs->w, "messages");
    jw_arr(&cs->w);
    http_resp_pull(r->http, 200, "application/json", conv_stream_pull, conv_stream_free, cs);
    return 0;
}

/* GET /v1/conversations/{id}/messages: a page of messages, newest first, `before` cursor. */
int api_conversations_messages(struct router_req *r, struct err *e)
{
    struct store_conversation c;
    struct store_message *msgs = NULL;
    unsigned limit;
    int64_t before = 0;
    const char *before_id = NULL;
    size_t n = 0;
    bool more;
    struct page_calls calls;
    struct buf b;
    struct jw w;
    int rc;

    rc = router_query_limit(r, &limit, e);
    if (!rc)
        rc = router_query_before(r, "msg", &before, &before_id, e);
    if (!rc && before_id && before < 1)
        rc = err_set(e, ERR_INVALID, "invalid_request", "before",
                     "Invalid before: not a cursor this list returned.");
    if (!rc)
        rc = get_conversation(r, &c, e);
    if (rc)
        return rc;
    rc = store_message_page(r->store, &r->tenant, c.id, true, before, limit + 1, r->arena, &msgs,
                            &n);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "message list failed");
    more = n > limit;
    if (more)
        n = limit;
    rc = read_calls(r->store, &r->tenant, c.id, msgs, n, r->arena, &calls);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "tool call list failed");
    buf_init(&b, STREAM_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "messages");
    jw_arr(&w);
    for (size_t i = 0; i < n; i++)
        write_message(&w, &msgs[i], &calls);
    jw_arr_end(&w);
    router_write_more(r, &w, more, more ? msgs[n - 1].seq : 0, more ? msgs[n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* DELETE /v1/conversations/{id}: the conversation and all its messages. */
int api_conversations_delete(struct router_req *r, struct err *e)
{
    json_t *o;
    int rc = store_conversation_delete(r->store, &r->tenant, r->params[0]);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "conversation_not_found", "id", "No conversation %.60s.",
                       r->params[0]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "conversation delete failed");
    o = jo_object();
    jo_str(o, "id", r->params[0]);
    jo_bool(o, "deleted", true);
    router_respond(r, o);
    return 0;
}

struct feedback_body {
    int64_t rating;
    const char *comment;
};

static const struct jb_field feedback_fields[] = {
    {"rating", JB_INT, offsetof(struct feedback_body, rating), JB_REQUIRED, 1, 5, NULL, NULL, NULL},
    {"comment", JB_STRING, offsetof(struct feedback_body, comment), JB_NULLABLE, 0, 2000, NULL,
     NULL, NULL},
};

const struct jb_binding api_feedback_body = {feedback_fields, 2};

/* GET /v1/conversations/{id}/messages/{message_id}: one message, with its work. */
int api_conversations_message(struct router_req *r, struct err *e)
{
    struct store_conversation c;
    struct store_message m;
    struct page_calls calls;
    struct buf b;
    struct jw w;
    int rc = get_conversation(r, &c, e);

    if (rc)
        return rc;
    rc = store_message_get(r->store, &r->tenant, c.id, r->params[1], r->arena, &m);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "message_not_found", "message_id",
                       "No message %.60s in this conversation.", r->params[1]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "message read failed");
    rc = read_calls(r->store, &r->tenant, c.id, &m, 1, r->arena, &calls);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "tool call list failed");
    buf_init(&b, STREAM_CAP);
    jw_init(&w, &b);
    write_message(&w, &m, &calls);
    return router_respond_jw(r, &w, &b, e);
}

/* POST /v1/conversations/{id}/messages/{message_id}/feedback */
int api_feedback_create(struct router_req *r, struct err *e)
{
    struct feedback_body b;
    struct jb_result res;
    struct store_conversation c;
    struct store_message m;
    int64_t now = clock_now_ms();
    json_t *o;
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, feedback_fields, 2, &b, r->arena, &res, e);
    if (rc)
        return rc;
    rc = get_conversation(r, &c, e);
    if (rc)
        return rc;
    rc = store_message_get(r->store, &r->tenant, c.id, r->params[1], r->arena, &m);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "message_not_found", "message_id",
                       "No message %.60s in this conversation.", r->params[1]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "message read failed");
    if (strcmp(m.role, "assistant") != 0)
        return err_set(e, ERR_INVALID, "invalid_request", "message_id",
                       "Invalid message_id: only the employee's replies can be rated.");
    rc = store_feedback_set(r->store, &r->tenant, &m, (int)b.rating, b.comment, now);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "feedback failed");
    o = jo_object();
    jo_str(o, "message_id", m.id);
    jo_str(o, "conversation_id", c.id);
    jo_int(o, "rating", b.rating);
    jo_str(o, "comment", b.comment);
    jo_time(o, "created_at", now);
    router_respond(r, o);
    return 0;
}
