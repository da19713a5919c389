/* SPDX-License-Identifier: MIT */
/*
 * tasks.c: /v1/tasks (contract §10): create, list, read, update, delete, and the runs of a
 * task. The work itself is done by tasks/runner.c; these handlers only change the queue.
 *
 * DESIGN (update): a PATCH is validated whole before anything is written, then applied as a
 * compare-and-set on the task's status and run in progress (store_task_update), so that a
 * worker taking or finishing the task at the same moment makes the PATCH read it again and
 * decide anew, never write over the worker's outcome. Cancelling a run in progress ends the run
 * 'cancelled' in the same transaction; the worker then discards the engine's answer.
 */
#include "api.h"

#include "../act/act.h"
#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"
#include "../tasks/runner.h"
#include "../tasks/schedule.h"
#include "../tasks/task.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESP_CAP (64u << 20)
#define TITLE_MAX 200
#define DESCRIPTION_MAX 10000
#define UPDATE_TRIES 8

/* What a PATCH may set: a task becomes in_progress only when a worker starts it. */
static const char *const settable[] = {"pending", "completed", "failed", NULL};

struct task_body {
    const char *employee_id;
    const char *title;
    const char *description;
    const char *due_at;
    int priority;
    json_t *recurring;
    int status;
};

enum { F_EMPLOYEE, F_TITLE, F_DESCRIPTION, F_DUE, F_PRIORITY, F_RECURRING, F_STATUS, F_N };

#define DUE_MSG "an ISO 8601 date-time with Z or an offset, from 1970 to 9999"

static const struct jb_field create_fields[F_STATUS] = {
    {"employee_id", JB_STRING, offsetof(struct task_body, employee_id), JB_REQUIRED, 1, 100, NULL,
     NULL, NULL},
    {"title", JB_STRING, offsetof(struct task_body, title), JB_REQUIRED, 1, TITLE_MAX, NULL,
     jb_not_blank, "not blank"},
    {"description", JB_STRING, offsetof(struct task_body, description), JB_NULLABLE, 0,
     DESCRIPTION_MAX, NULL, NULL, NULL},
    {"due_at", JB_STRING, offsetof(struct task_body, due_at), JB_NULLABLE, 1, 64, NULL,
     sched_due_at_check, DUE_MSG},
    {"priority", JB_ENUM, offsetof(struct task_body, priority), 0, 0, 0, task_priorities, NULL,
     NULL},
    /* null is how a PATCH stops recurrence; a new task without it simply leaves it out */
    {"recurring", JB_ANY, offsetof(struct task_body, recurring), 0, 0, 0, NULL, NULL, NULL},
};

const struct jb_binding api_tasks_create_body = {create_fields, F_STATUS};

/* The same fields, none required, and the status. */
static const struct jb_field update_fields[F_N] = {
    {"employee_id", JB_STRING, offsetof(struct task_body, employee_id), 0, 1, 100, NULL, NULL,
     NULL},
    {"title", JB_STRING, offsetof(struct task_body, title), 0, 1, TITLE_MAX, NULL, jb_not_blank,
     "not blank"},
    {"description", JB_STRING, offsetof(struct task_body, description), JB_NULLABLE, 0,
     DESCRIPTION_MAX, NULL, NULL, NULL},
    {"due_at", JB_STRING, offsetof(struct task_body, due_at), JB_NULLABLE, 1, 64, NULL,
     sched_due_at_check, DUE_MSG},
    {"priority", JB_ENUM, offsetof(struct task_body, priority), 0, 0, 0, task_priorities, NULL,
     NULL},
    {"recurring", JB_ANY, offsetof(struct task_body, recurring), JB_NULLABLE, 0, 0, NULL, NULL,
     NULL},
    {"status", JB_ENUM, offsetof(struct task_body, status), 0, 0, 0, settable, NULL, NULL},
};

const struct jb_binding api_tasks_update_body = {update_fields, F_N};

/* ---- Output ---- */

static int respond_task(struct router_req *r, const struct store_task *k, struct err *e)
{
    struct buf b;
    struct jw w;
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    task_write(&w, k);
    return router_respond_jw(r, &w, &b, e);
}

static int read_task(struct router_req *r, const char *id, struct store_task *k, struct err *e)
{
    int rc = store_task_get(r->store, &r->tenant, id, r->arena, k);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "task_not_found", "id", "No task %.60s.", id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "task read failed");
    return 0;
}

/* ---- Shared checks ---- */

/* The assignee exists and the organization's tier may give it tasks. */
static int check_employee(struct router_req *r, const char *id, struct err *e)
{
    struct store_employee emp;
    int rc = api_employee_find(r, id, "employee_id", &emp, e);
    if (rc)
        return rc;
    return ledger_tier_check(r->org.tier, &emp, "employee_id", "give tasks to", e);
}

/* 'recurring' (present, maybe null) as stored text in the arena, or NULL for null. */
static int recurring_text(struct router_req *r, json_t *v, bool is_null, const char **out,
                          struct err *e)
{
    struct sched_recurring rec;
    char text[SCHED_TEXT_MAX];
    int rc;
    *out = NULL;
    if (is_null)
        return 0;
    rc = sched_recurring_parse(v, &rec, e);
    if (rc)
        return rc;
    *out = arena_strdup(r->arena, sched_recurring_text(&rec, text, sizeof(text)));
    return 0;
}

/* ---- Handlers ---- */

/* POST /v1/tasks */
int api_tasks_create(struct router_req *r, struct err *e)
{
    struct task_body b;
    struct jb_result res;
    struct store_task k;
    char *id = arena_alloc(r->arena, ID_MAX);
    int64_t now = clock_now_ms();
    int rc;

    memset(&b, 0, sizeof(b));
    b.priority = 1;
    rc = jb_bind(r->body, create_fields, F_STATUS, &b, r->arena, &res, e);
    if (rc)
        return rc;
    memset(&k, 0, sizeof(k));
    if (b.due_at) {
        rc = sched_due_at_parse(b.due_at, strlen(b.due_at), &k.due_at, e);
        if (rc)
            return rc;
    }
    if (JB_HAS(res, F_RECURRING)) {
        rc = recurring_text(r, b.recurring, JB_IS_NULL(res, F_RECURRING), &k.recurring, e);
        if (rc)
            return rc;
    }
    rc = check_employee(r, b.employee_id, e);
    if (rc)
        return rc;
    k.employee_id = b.employee_id;
    k.title = b.title;
    k.description = b.description;
    k.priority = task_priorities[b.priority];
    k.created_by = router_actor_id(r); /* its runs act with these rights */
    k.scopes = router_rights(r);
    r->audit.target_id = id; /* filled by task_create() before the row is written */
    rc = task_create(r->store, &r->tenant, &k, id, now);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "task create failed");
    task_runner_wake(api_svc(r)->tasks);
    return respond_task(r, &k, e);
}

/* GET /v1/tasks */
int api_tasks_list(struct router_req *r, struct err *e)
{
    struct store_task_filter f;
    int x;
    struct store_task_page page;
    struct buf b;
    struct jw w;
    int rc;

    memset(&f, 0, sizeof(f));
    rc = router_query_limit(r, &f.limit, e);
    if (rc)
        return rc;
    rc = router_query_enum(r, "status", &x, e);
    if (rc)
        return rc;
    f.status = x >= 0 ? task_statuses[x] : NULL;
    rc = router_query_enum(r, "priority", &x, e);
    if (rc)
        return rc;
    f.priority = x >= 0 ? task_priorities[x] : NULL;
    f.employee_id = router_query(r, "employee_id");
    if (f.employee_id) {
        rc = api_employee_find(r, f.employee_id, "employee_id", NULL, e);
        if (rc)
            return rc;
    }
    rc = router_query_before(r, "task", &f.before_created, &f.before_id, e);
    if (rc)
        return rc;
    rc = store_task_list(r->store, &r->tenant, &f, r->arena, &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "task list failed");
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "tasks");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++)
        task_write(&w, &page.items[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.n ? page.items[page.n - 1].created_at : 0,
                      page.n ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/tasks/{id} */
int api_tasks_get(struct router_req *r, struct err *e)
{
    struct store_task k;
    int rc = read_task(r, r->params[0], &k, e);
    return rc ? rc : respond_task(r, &k, e);
}

/*
 * Apply the PATCH 'b' to the task as it is now ('k', changed in place). '*cancel' says whether
 * a run in progress ends. 0 or the contract error.
 */
static int apply_update(struct router_req *r, const struct task_body *b,
                        const struct jb_result *res, const char *recurring, int64_t due_at,
                        int64_t now, struct store_task *k, bool *cancel)
{
    *cancel = false;
    if (JB_HAS(*res, F_TITLE))
        k->title = b->title;
    if (JB_HAS(*res, F_DESCRIPTION))
        k->description = b->description ? b->description : "";
    if (JB_HAS(*res, F_DUE))
        k->due_at = due_at;
    if (JB_HAS(*res, F_PRIORITY))
        k->priority = task_priorities[b->priority];
    if (JB_HAS(*res, F_EMPLOYEE))
        k->employee_id = b->employee_id;
    if (JB_HAS(*res, F_RECURRING)) {
        k->recurring = recurring;
        /* A new rule counts from now; a one-time task has no occurrences. */
        k->next_run_at = recurring ? task_next_run(recurring, now) : 0;
    }
    if (JB_HAS(*res, F_STATUS)) {
        const char *to = settable[b->status];
        bool running = strcmp(k->status, "in_progress") == 0;
        bool ended = strcmp(k->status, "completed") == 0 || strcmp(k->status, "failed") == 0;
        if (strcmp(to, k->status) == 0) {
            /* the same status: nothing to do */
        } else if (strcmp(to, "completed") == 0 || strcmp(to, "failed") == 0) {
            /* pending|in_progress -> completed|failed: whatever was queued or running stops */
            *cancel = running;
            k->status = to;
            k->run_id = NULL;
            k->result = NULL;
            k->error = strcmp(to, "failed") == 0
                           ? (running ? "Cancelled while in progress by an update."
                                      : "Cancelled before it ran by an update.")
                           : NULL;
            k->completed_at = now;
        } else if (ended) {
            /* completed|failed -> pending: queued again, to run as soon as a worker is free
             * (a recurring one too, keeping its schedule) */
            k->status = "pending";
            k->run_now = true;
        } else {
            (void)r;
            return ERR_CONFLICT; /* in_progress -> pending: reported by the caller */
        }
    }
    return 0;
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Whether an update left every field of the task as it was. */
static bool unchanged(const struct store_task *a, const struct store_task *b)
{
    return same_str(a->employee_id, b->employee_id) && same_str(a->title, b->title) &&
           same_str(a->description, b->description) && same_str(a->status, b->status) &&
           same_str(a->priority, b->priority) && same_str(a->recurring, b->recurring) &&
           same_str(a->run_id, b->run_id) && same_str(a->result, b->result) &&
           same_str(a->error, b->error) && a->due_at == b->due_at &&
           a->next_run_at == b->next_run_at && a->completed_at == b->completed_at &&
           a->run_now == b->run_now;
}

/* PATCH /v1/tasks/{id} */
int api_tasks_update(struct router_req *r, struct err *e)
{
    struct task_body b;
    struct jb_result res;
    const char *recurring = NULL;
    int64_t due_at = 0;
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, update_fields, F_N, &b, r->arena, &res, e);
    if (rc)
        return rc;
    if (b.due_at) {
        rc = sched_due_at_parse(b.due_at, strlen(b.due_at), &due_at, e);
        if (rc)
            return rc;
    }
    if (JB_HAS(res, F_RECURRING)) {
        rc = recurring_text(r, b.recurring, JB_IS_NULL(res, F_RECURRING), &recurring, e);
        if (rc)
            return rc;
    }
    if (JB_HAS(res, F_EMPLOYEE)) {
        rc = check_employee(r, b.employee_id, e);
        if (rc)
            return rc;
    }
    for (int tries = 0; tries < UPDATE_TRIES; tries++) {
        struct store_task k, before;
        const char *old_status, *old_run;
        int64_t now = clock_now_ms();
        bool cancel = false;

        rc = read_task(r, r->params[0], &k, e);
        if (rc)
            return rc;
        old_status = k.status;
        old_run = k.run_id;
        before = k;
        rc = apply_update(r, &b, &res, recurring, due_at, now, &k, &cancel);
        if (rc == ERR_CONFLICT)
            return err_set(e, ERR_INVALID, "invalid_request", "status",
                           "Invalid status: a task in progress can be set completed or failed "
                           "(which cancels the run), not pending.");
        if (unchanged(&before, &k))
            return respond_task(r, &k, e); /* nothing to write: updated_at stays */
        k.updated_at = now;
        rc = store_task_update(r->store, &r->tenant, &k, old_status, old_run, cancel, now);
        if (rc == ERR_CONFLICT)
            continue; /* a worker took or finished it meanwhile: decide again */
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "task update failed");
        task_runner_wake(api_svc(r)->tasks);
        return respond_task(r, &k, e);
    }
    return err_set(e, ERR_INTERNAL, "internal_error", NULL, "the task kept changing");
}

/* DELETE /v1/tasks/{id} */
int api_tasks_delete(struct router_req *r, struct err *e)
{
    json_t *o;
    int rc = store_task_delete(r->store, &r->tenant, r->params[0]);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "task_not_found", "id", "No task %.60s.", r->params[0]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "task delete failed");
    o = jo_object();
    jo_str(o, "id", r->params[0]);
    jo_bool(o, "deleted", true);
    router_respond(r, o);
    return 0;
}

/* GET /v1/tasks/{id}/runs */
int api_tasks_runs(struct router_req *r, struct err *e)
{
    struct store_task k;
    struct store_run_page page;
    unsigned limit;
    int64_t before_t = 0;
    const char *before_id = NULL;
    struct buf b;
    struct jw w;
    int rc;

    rc = router_query_limit(r, &limit, e);
    if (!rc)
        rc = router_query_before(r, "trun", &before_t, &before_id, e);
    if (!rc)
        rc = read_task(r, r->params[0], &k, e);
    if (rc)
        return rc;
    rc = store_task_runs(r->store, &r->tenant, k.id, limit, before_t, before_id, r->arena, &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "run list failed");
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "runs");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++) {
        const struct store_task_run *x = &page.items[i];
        jw_obj(&w);
        jw_key(&w, "id");
        jw_str(&w, x->id);
        jw_key(&w, "status");
        jw_str(&w, x->status);
        jw_key(&w, "started_at");
        jw_time(&w, x->started_at);
        jw_key(&w, "completed_at");
        jw_time(&w, x->completed_at);
        jw_key(&w, "result");
        jw_str(&w, x->result);
        jw_key(&w, "error");
        jw_str(&w, x->error);
        jw_key(&w, "credits_used");
        jw_int(&w, x->credits_used);
        jw_key(&w, "stop_reason");
        jw_str(&w, x->stop_reason);
        jw_key(&w, "tool_calls");
        act_calls_write(&w, x->calls, x->ncalls);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.n ? page.items[page.n - 1].started_at : 0,
                      page.n ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}
