/* SPDX-License-Identifier: MIT */
/*
 * records.c: the records of a turn's work as the API shows them (contract §19): an assistant
 * message with its tool calls, and an approval. The routes and the events (webhooks/) write
 * them with these, so an event's object is the route's.
 */
#include "act.h"

#include "../json/json.h"

#include <stdlib.h>
#include <string.h>

/* See act.h. */
void act_message_write(struct jw *w, const struct store_message *m,
                       const struct store_tool_call *calls, size_t ncalls)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, m->id);
    jw_key(w, "role");
    jw_str(w, m->role);
    jw_key(w, "content");
    jw_str(w, m->content);
    jw_key(w, "credits_used");
    jw_int(w, m->credits_used);
    jw_key(w, "created_at");
    jw_time(w, m->created_at);
    if (strcmp(m->role, "assistant") == 0) {
        jw_key(w, "sources");
        jw_raw(w, m->sources, "[]");
        jw_key(w, "status");
        jw_str(w, m->status ? m->status : "completed");
        jw_key(w, "stop_reason");
        jw_str(w, m->stop_reason ? m->stop_reason : "completed");
        jw_key(w, "error");
        jw_str(w, m->error);
        jw_key(w, "tool_calls");
        jw_arr(w);
        for (size_t i = 0; i < ncalls; i++) {
            json_t *rec;
            char *text;
            if (!calls[i].message_id || strcmp(calls[i].message_id, m->id) != 0)
                continue;
            rec = act_call_json(&calls[i]);
            text = json_dumps(rec, JSON_COMPACT);
            jw_raw(w, text, "null");
            free(text);
            json_decref(rec);
        }
        jw_arr_end(w);
    }
    jw_obj_end(w);
}

/* {type, id} of an actor, or null without a type. */
static void write_actor(struct jw *w, const char *type, const char *id)
{
    if (!type) {
        jw_null(w);
        return;
    }
    jw_obj(w);
    jw_key(w, "type");
    jw_str(w, type);
    jw_key(w, "id");
    jw_str(w, id);
    jw_obj_end(w);
}

/* See act.h. */
void act_approval_write(struct jw *w, const struct store_approval *p)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, p->id);
    jw_key(w, "employee_id");
    jw_str(w, p->employee_id);
    jw_key(w, "tool");
    jw_str(w, p->tool);
    jw_key(w, "tool_call_id");
    jw_str(w, p->tool_call_id);
    jw_key(w, "arguments");
    jw_raw(w, p->arguments, "{}");
    jw_key(w, "status");
    jw_str(w, p->status);
    jw_key(w, "reason");
    jw_str(w, p->reason);
    jw_key(w, "requested_by");
    write_actor(w, p->requested_by_type, p->requested_by_id);
    jw_key(w, "conversation_id");
    jw_str(w, p->conversation_id);
    jw_key(w, "message_id");
    jw_str(w, p->message_id);
    jw_key(w, "task_id");
    jw_str(w, p->task_id);
    jw_key(w, "task_run_id");
    jw_str(w, p->task_run_id);
    jw_key(w, "workflow_run_id");
    jw_str(w, p->workflow_run_id);
    jw_key(w, "step_index");
    if (p->step_index >= 0)
        jw_int(w, p->step_index);
    else
        jw_null(w);
    jw_key(w, "requested_at");
    jw_time(w, p->requested_at);
    jw_key(w, "expires_at");
    jw_time(w, p->expires_at);
    jw_key(w, "decided_at");
    if (p->decided_at)
        jw_time(w, p->decided_at);
    else
        jw_null(w);
    jw_key(w, "decided_by");
    write_actor(w, p->decided_by_type, p->decided_by_id);
    jw_obj_end(w);
}

/* See act.h. */
const char *act_requester_type(const char *id)
{
    if (!id)
        return "system";
    return strncmp(id, "usr_", 4) == 0 ? "user" : "key";
}
