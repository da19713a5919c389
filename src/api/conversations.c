/* SPDX-License-Identifier: MIT */
/*
 * conversations.c: GET /v1/conversations (newest activity first, `before` keyset cursor over
 * updated_at then id), GET and DELETE /v1/conversations/{id}, and the feedback extension
 * POST /v1/conversations/{id}/messages/{message_id}/feedback (contract §8).
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"

#include <stddef.h>
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
    rc = router_query_limit(r, 20, 100, &f.limit, e);
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
    jw_key(&w, "has_more");
    jw_bool(&w, page.has_more);
    router_write_next_before(r, &w, page.has_more,
                             page.has_more ? page.items[page.n - 1].updated_at : 0,
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

/* GET /v1/conversations/{id}: the conversation and its messages, oldest first. */
int api_conversations_get(struct router_req *r, struct err *e)
{
    struct store_conversation c;
    struct store_message *msgs = NULL;
    size_t n = 0;
    struct buf b;
    struct jw w;
    int rc;

    rc = get_conversation(r, &c, e);
    if (rc)
        return rc;
    rc = store_message_list(r->store, &r->tenant, c.id,
                            c.message_count > 0 ? (unsigned)c.message_count + 1 : 1, r->arena,
                            &msgs, &n);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "message list failed");
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    write_item(&w, &c);
    jw_key(&w, "messages");
    jw_arr(&w);
    for (size_t i = 0; i < n; i++) {
        jw_obj(&w);
        jw_key(&w, "id");
        jw_str(&w, msgs[i].id);
        jw_key(&w, "role");
        jw_str(&w, msgs[i].role);
        jw_key(&w, "content");
        jw_str(&w, msgs[i].content);
        jw_key(&w, "credits_used");
        jw_int(&w, msgs[i].credits_used);
        jw_key(&w, "created_at");
        jw_time(&w, msgs[i].created_at);
        if (strcmp(msgs[i].role, "assistant") == 0) {
            jw_key(&w, "sources");
            jw_raw(&w, msgs[i].sources, "[]");
        }
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
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
