/* SPDX-License-Identifier: MIT */
/*
 * task.c: a task made and shown without an HTTP request, for the API (api/tasks.c) and the
 * create_task workflow action (workflows/run.c).
 */
#include "task.h"

#include "runner.h"

#include "../core/id.h"

#include <string.h>

/* See task.h. */
const char *const task_priorities[] = {"low", "medium", "high", "urgent", NULL};
const char *const task_statuses[] = {"pending", "in_progress", "completed", "failed", NULL};

/* See task.h. */
int task_create(struct store *s, const struct store_tenant *t, struct store_task *k, char *id,
                int64_t now)
{
    if (id_new("task", id, ID_MAX))
        return ERR_INTERNAL;
    k->id = id;
    if (!k->description)
        k->description = "";
    if (!k->priority)
        k->priority = "medium";
    k->status = "pending";
    k->next_run_at = k->recurring ? task_next_run(k->recurring, now) : 0;
    k->created_at = k->updated_at = now;
    return store_task_create(s, t, k);
}

/* See task.h. */
void task_write(struct jw *w, const struct store_task *k)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, k->id);
    jw_key(w, "employee_id");
    jw_str(w, k->employee_id);
    jw_key(w, "title");
    jw_str(w, k->title);
    jw_key(w, "description");
    jw_str(w, k->description ? k->description : "");
    jw_key(w, "status");
    jw_str(w, k->status);
    jw_key(w, "priority");
    jw_str(w, k->priority);
    jw_key(w, "due_at");
    jw_time(w, k->due_at);
    jw_key(w, "recurring");
    jw_raw(w, k->recurring, "null");
    jw_key(w, "next_run_at");
    jw_time(w, k->next_run_at);
    jw_key(w, "last_run_at");
    jw_time(w, k->last_run_at);
    jw_key(w, "run_count");
    jw_int(w, k->run_count);
    jw_key(w, "result");
    jw_str(w, k->result);
    jw_key(w, "error");
    jw_str(w, k->error);
    jw_key(w, "credits_used");
    jw_int(w, k->credits_used);
    jw_key(w, "created_at");
    jw_time(w, k->created_at);
    jw_key(w, "updated_at");
    jw_time(w, k->updated_at);
    jw_key(w, "started_at");
    jw_time(w, k->started_at);
    jw_key(w, "completed_at");
    jw_time(w, k->completed_at);
    jw_obj_end(w);
}
