/* SPDX-License-Identifier: MIT */
/*
 * workflows.c: /v1/workflows (contract §12): create, list, read, update, delete, and the
 * rotation of a webhook's URL. The definition (trigger and steps) is checked whole by
 * workflows/definition.c; this file adds what needs the store: every step's employee exists
 * in the tenant and the subscription tier may employ it. Offline employees are accepted: a
 * run waits at their step until they are back.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"
#include "../tasks/runner.h"
#include "../workflows/run.h"
#include "../workflows/template.h"
#include "../workflows/workflow.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESP_CAP (8u << 20)
#define TOKEN_CHARS 40 /* base62: about 238 random bits */

struct wf_body {
    const char *name;
    const char *description;
    json_t *trigger;
    json_t *steps;
    bool enabled;
};

enum { F_NAME, F_DESCRIPTION, F_TRIGGER, F_STEPS, F_ENABLED, F_N };

static const struct jb_field create_fields[F_N] = {
    {"name", JB_STRING, offsetof(struct wf_body, name), JB_REQUIRED, 1, WF_NAME_MAX, NULL,
     jb_not_blank, "not blank"},
    {"description", JB_STRING, offsetof(struct wf_body, description), JB_NULLABLE, 0,
     WF_DESCRIPTION_MAX, NULL, NULL, NULL},
    {"trigger", JB_ANY, offsetof(struct wf_body, trigger), JB_REQUIRED, 0, 0, NULL, NULL, NULL},
    {"steps", JB_ANY, offsetof(struct wf_body, steps), JB_REQUIRED, 0, 0, NULL, NULL, NULL},
    {"enabled", JB_BOOL, offsetof(struct wf_body, enabled), 0, 0, 0, NULL, NULL, NULL},
};

const struct jb_binding api_workflows_create_body = {create_fields, F_N};

/* The same fields, none required. */
static const struct jb_field update_fields[F_N] = {
    {"name", JB_STRING, offsetof(struct wf_body, name), 0, 1, WF_NAME_MAX, NULL, jb_not_blank,
     "not blank"},
    {"description", JB_STRING, offsetof(struct wf_body, description), JB_NULLABLE, 0,
     WF_DESCRIPTION_MAX, NULL, NULL, NULL},
    {"trigger", JB_ANY, offsetof(struct wf_body, trigger), 0, 0, 0, NULL, NULL, NULL},
    {"steps", JB_ANY, offsetof(struct wf_body, steps), 0, 0, 0, NULL, NULL, NULL},
    {"enabled", JB_BOOL, offsetof(struct wf_body, enabled), 0, 0, 0, NULL, NULL, NULL},
};

const struct jb_binding api_workflows_update_body = {update_fields, F_N};

/* ---- Output ---- */

static void write_workflow(struct router_req *r, struct jw *w, const struct store_workflow *wf)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, wf->id);
    jw_key(w, "name");
    jw_str(w, wf->name);
    jw_key(w, "description");
    jw_str(w, wf->description);
    jw_key(w, "trigger");
    jw_raw(w, wf->trigger, "{}");
    jw_key(w, "steps");
    jw_raw(w, wf->steps, "[]");
    /* the URL holds the webhook's secret token: not for a person who does not manage
     * workflows (contract §20: a viewer reads everything but secrets) */
    if (wf->webhook_token && strcmp(wf->trigger_type, "webhook") == 0 && router_sees_secrets(r)) {
        char url[sizeof(r->env->cfg->public_url) + 64];
        snprintf(url, sizeof(url), "%s/v1/hooks/%s", r->env->cfg->public_url, wf->webhook_token);
        jw_key(w, "webhook_url");
        jw_str(w, url);
    }
    jw_key(w, "enabled");
    jw_bool(w, wf->enabled);
    jw_key(w, "run_count");
    jw_int(w, wf->run_count);
    jw_key(w, "last_run_at");
    jw_time(w, wf->last_run_at);
    jw_key(w, "created_at");
    jw_time(w, wf->created_at);
    jw_key(w, "updated_at");
    jw_time(w, wf->updated_at);
    jw_obj_end(w);
}

static int respond_workflow(struct router_req *r, const struct store_workflow *wf, struct err *e)
{
    struct buf b;
    struct jw w;
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    write_workflow(r, &w, wf);
    return router_respond_jw(r, &w, &b, e);
}

static int read_workflow(struct router_req *r, const char *id, struct store_workflow *wf,
                         struct err *e)
{
    int rc = store_workflow_get(r->store, &r->tenant, id, r->arena, wf);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "workflow_not_found", "id", "No workflow %.60s.", id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "workflow read failed");
    return 0;
}

/* Write 'wf' back: 404 when it was deleted meanwhile. */
static int save_workflow(struct router_req *r, const struct store_workflow *wf, struct err *e)
{
    int rc = store_workflow_update(r->store, &r->tenant, wf);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "workflow_not_found", "id", "No workflow %.60s.", wf->id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "workflow update failed");
    return 0;
}

/* ---- Checks that need the store ---- */

/* Every step's employee is the tenant's and may be employed by its tier. */
static int check_employees(struct router_req *r, const struct wf_def *d, struct err *e)
{
    for (size_t i = 0; i < d->nsteps; i++) {
        struct store_employee emp;
        char param[40];
        int rc;
        snprintf(param, sizeof(param), "steps[%zu].employee_id", i);
        rc = api_employee_find(r, d->steps[i].employee_id, param, &emp, e);
        if (rc)
            return rc;
        rc = ledger_tier_check(r->org.tier, &emp, param, "employ in workflows", e);
        if (rc)
            return rc;
    }
    return 0;
}

static int new_token(struct router_req *r, const char **out, struct err *e)
{
    char *t = arena_alloc(r->arena, TOKEN_CHARS + 1);
    if (id_base62(t, TOKEN_CHARS))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no token");
    *out = t;
    return 0;
}

/*
 * Put the checked definition 'd' into 'wf': its canonical JSON, and what its trigger needs
 * (a webhook token kept or made, a schedule's rule and next occurrence).
 */
static int apply_definition(struct router_req *r, const struct wf_def *d, int64_t now,
                            struct store_workflow *wf, struct err *e)
{
    char *s;
    int rc;

    s = jo_dump(d->trigger_json, NULL);
    wf->trigger = arena_strdup(r->arena, s);
    free(s);
    s = jo_dump(d->steps_json, NULL);
    wf->steps = arena_strdup(r->arena, s);
    free(s);
    wf->trigger_type = wf_trigger_name(d->trigger);
    wf->recurring = NULL;
    wf->next_run_at = 0;
    if (d->trigger == WF_SCHEDULE) {
        char text[SCHED_TEXT_MAX];
        wf->recurring =
            arena_strdup(r->arena, sched_recurring_text(&d->recurring, text, sizeof(text)));
        wf->next_run_at = sched_next(&d->recurring, now);
    }
    if (d->trigger == WF_WEBHOOK && !wf->webhook_token) {
        rc = new_token(r, &wf->webhook_token, e);
        if (rc)
            return rc;
    } else if (d->trigger != WF_WEBHOOK) {
        wf->webhook_token = NULL; /* a later webhook trigger gets a new URL */
    }
    return 0;
}

/* Check 'trigger' and 'steps' whole, then the employees, into 'wf'. */
static int define(struct router_req *r, json_t *trigger, json_t *steps, int64_t now,
                  struct store_workflow *wf, struct err *e)
{
    struct wf_def d;
    int rc = wf_def_parse(trigger, steps, &d, e);
    if (!rc)
        rc = check_employees(r, &d, e);
    if (!rc)
        rc = apply_definition(r, &d, now, wf, e);
    wf_def_cleanup(&d);
    return rc;
}

/* ---- Handlers ---- */

/* POST /v1/workflows */
int api_workflows_create(struct router_req *r, struct err *e)
{
    struct wf_body b;
    struct jb_result res;
    struct store_workflow wf;
    char *id = arena_alloc(r->arena, ID_MAX);
    int64_t now = clock_now_ms();
    int rc;

    memset(&b, 0, sizeof(b));
    b.enabled = true;
    rc = jb_bind(r->body, create_fields, F_N, &b, r->arena, &res, e);
    if (rc)
        return rc;
    memset(&wf, 0, sizeof(wf));
    rc = define(r, b.trigger, b.steps, now, &wf, e);
    if (rc)
        return rc;
    if (id_new("wf", id, ID_MAX))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");
    wf.id = id;
    r->audit.target_id = arena_strdup(r->arena, id);
    wf.name = b.name;
    wf.description = b.description;
    wf.enabled = b.enabled;
    wf.created_at = wf.updated_at = now;
    /* the rights of its runs that no one starts (a schedule, a webhook, an event) */
    wf.created_by = router_actor_id(r);
    wf.scopes = router_rights(r);
    rc = store_workflow_create(r->store, &r->tenant, &wf);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "workflow create failed");
    return respond_workflow(r, &wf, e);
}

/* GET /v1/workflows */
int api_workflows_list(struct router_req *r, struct err *e)
{
    struct store_workflow_page page;
    int64_t before_created = 0;
    const char *before_id = NULL;
    unsigned limit;
    struct buf b;
    struct jw w;
    int rc;

    rc = router_query_limit(r, &limit, e);
    if (!rc)
        rc = router_query_before(r, "wf", &before_created, &before_id, e);
    if (rc)
        return rc;
    rc = store_workflow_list(r->store, &r->tenant, limit, before_created, before_id, r->arena,
                             &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "workflow list failed");
    buf_init(&b, RESP_CAP * 4);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "workflows");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++)
        write_workflow(r, &w, &page.items[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.n ? page.items[page.n - 1].created_at : 0,
                      page.n ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/workflows/{id} */
int api_workflows_get(struct router_req *r, struct err *e)
{
    struct store_workflow wf;
    int rc = read_workflow(r, r->params[0], &wf, e);
    return rc ? rc : respond_workflow(r, &wf, e);
}

/* PATCH /v1/workflows/{id}: any of name, description, trigger, steps, enabled. */
int api_workflows_update(struct router_req *r, struct err *e)
{
    struct wf_body b;
    struct jb_result res;
    struct store_workflow wf;
    int64_t now = clock_now_ms();
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, update_fields, F_N, &b, r->arena, &res, e);
    if (rc)
        return rc;
    rc = read_workflow(r, r->params[0], &wf, e);
    if (rc)
        return rc;
    if (JB_HAS(res, F_TRIGGER) || JB_HAS(res, F_STEPS)) {
        /* The whole definition is checked again: new steps may point at a trigger path, and
         * a new trigger must suit the steps as they are. */
        json_t *trigger =
            JB_HAS(res, F_TRIGGER) ? json_incref(b.trigger) : jo_parse_or_null(wf.trigger);
        json_t *steps = JB_HAS(res, F_STEPS) ? json_incref(b.steps) : jo_parse_or_null(wf.steps);
        bool was_schedule = wf.recurring != NULL;
        const char *old_recurring = wf.recurring;
        int64_t old_next = wf.next_run_at;
        rc = define(r, trigger, steps, now, &wf, e);
        json_decref(trigger);
        json_decref(steps);
        if (rc)
            return rc;
        /* An unchanged schedule keeps its next occurrence (one already due still runs). */
        if (was_schedule && wf.recurring && strcmp(old_recurring, wf.recurring) == 0)
            wf.next_run_at = old_next;
    }
    if (JB_HAS(res, F_NAME))
        wf.name = b.name;
    if (JB_HAS(res, F_DESCRIPTION))
        wf.description = JB_IS_NULL(res, F_DESCRIPTION) ? NULL : b.description;
    if (JB_HAS(res, F_ENABLED))
        wf.enabled = b.enabled;
    wf.updated_at = now;
    rc = save_workflow(r, &wf, e);
    return rc ? rc : respond_workflow(r, &wf, e);
}

/* DELETE /v1/workflows/{id} */
int api_workflows_delete(struct router_req *r, struct err *e)
{
    int rc = store_workflow_delete(r->store, &r->tenant, r->params[0]);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "workflow_not_found", "id", "No workflow %.60s.", r->params[0]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "workflow delete failed");
    r->resp = json_object();
    jo_str(r->resp, "id", r->params[0]);
    jo_bool(r->resp, "deleted", true);
    return 0;
}

/* POST /v1/workflows/{id}/rotate_webhook: a new webhook_url; the old one stops working. */
int api_workflows_rotate_webhook(struct router_req *r, struct err *e)
{
    struct store_workflow wf;
    struct jb_result res;
    int rc = jb_bind(r->body, NULL, 0, NULL, r->arena, &res, e); /* takes no parameters */
    if (rc)
        return rc;
    rc = read_workflow(r, r->params[0], &wf, e);
    if (rc)
        return rc;
    if (strcmp(wf.trigger_type, "webhook") != 0)
        return err_set(e, ERR_INVALID, "invalid_request", "id",
                       "Invalid id: the workflow %.60s is not webhook-triggered, so it has no "
                       "webhook_url to rotate.",
                       wf.id);
    rc = new_token(r, &wf.webhook_token, e);
    if (rc)
        return rc;
    wf.updated_at = clock_now_ms();
    rc = save_workflow(r, &wf, e);
    return rc ? rc : respond_workflow(r, &wf, e);
}

/* ---- Runs ---- */

static int answer_run(struct router_req *r, const struct store_wf_run *run, struct err *e)
{
    struct buf b;
    struct jw w;
    buf_init(&b, RESP_CAP * 4);
    jw_init(&w, &b);
    wf_run_write(&w, run);
    return router_respond_jw(r, &w, &b, e);
}

static int respond_run(struct router_req *r, const char *workflow_id, const char *run_id,
                       struct err *e)
{
    struct store_wf_run run;
    int rc = store_wf_run_get(r->store, &r->tenant, workflow_id, run_id, r->arena, &run);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "run_not_found", "run_id", "No run %.60s of workflow %.60s.", run_id,
                       workflow_id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "run read failed");
    return answer_run(r, &run, e);
}

/* See api.h. */
int api_workflow_queue(struct router_req *r, const struct store_workflow *wf, const char *type,
                       const char *event, json_t *data, struct store_wf_run *queued, struct err *e)
{
    struct wf_trigger_in in = {type, event, data, 0, false, NULL, 0};
    int rc;
    if (router_actor_id(r)) { /* a key or a person starts it (a manual run): its rights */
        in.own_rights = true;
        in.started_by = router_actor_id(r);
        in.scopes = router_rights(r);
    }
    rc = wf_run_queue(r->store, &r->tenant, wf, &in, r->arena, queued, e);
    if (!rc)
        task_runner_wake(api_svc(r)->tasks);
    return rc;
}

/* Queue a run of 'wf' and answer it. */
static int start_run(struct router_req *r, const struct store_workflow *wf, const char *type,
                     const char *event, json_t *data, struct err *e)
{
    struct store_wf_run queued;
    int rc = api_workflow_queue(r, wf, type, event, data, &queued, e);
    return rc ? rc : answer_run(r, &queued, e);
}

/* The dry run of 'wf' against 'input': every step's input and condition rendered, earlier
 * outputs as placeholders; nothing stored, nothing called. */
static int dry_run(struct router_req *r, const struct store_workflow *wf, json_t *input,
                   struct err *e)
{
    json_t *trigger = json_loads(wf->trigger, 0, NULL), *steps = json_loads(wf->steps, 0, NULL);
    json_t *data = json_object(), *o;
    struct wf_def d;
    struct buf b, text;
    struct jw w;
    int rc;

    memset(&d, 0, sizeof(d));
    rc = wf_def_parse(trigger, steps, &d, e);
    json_decref(trigger);
    json_decref(steps);
    if (rc) {
        wf_def_cleanup(&d);
        json_decref(data);
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "stored definition unreadable");
    }
    json_object_set(data, "trigger", input);
    json_object_set_new(data, "steps", json_array());
    o = json_object();
    json_object_set_new(o, "id", json_string(wf->id));
    json_object_set_new(data, "workflow", o);
    json_object_set_new(data, "run", json_object());
    buf_init(&b, RESP_CAP * 4);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "dry_run");
    jw_bool(&w, true);
    jw_key(&w, "steps");
    jw_arr(&w);
    for (size_t i = 0; i < d.nsteps; i++) {
        enum tmpl_value v =
            d.steps[i].condition ? tmpl_eval(d.steps[i].condition, data, true) : TMPL_TRUE;
        jw_obj(&w);
        jw_key(&w, "index");
        jw_int(&w, (int64_t)i);
        jw_key(&w, "would_run");
        if (v == TMPL_UNKNOWN)
            jw_null(&w);
        else
            jw_bool(&w, v == TMPL_TRUE);
        jw_key(&w, "input");
        buf_init(&text, WF_INPUT_MAX);
        if (tmpl_render(d.steps[i].input, data, true, &text) == 0)
            jw_str(&w, buf_ptr(&text));
        else
            jw_null(&w);
        buf_cleanup(&text);
        jw_key(&w, "condition_value");
        if (!d.steps[i].condition || v == TMPL_UNKNOWN)
            jw_null(&w);
        else
            jw_bool(&w, v == TMPL_TRUE);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_obj_end(&w);
    wf_def_cleanup(&d);
    json_decref(data);
    return router_respond_jw(r, &w, &b, e);
}

struct run_body {
    json_t *input;
    bool dry_run;
};

static const struct jb_field run_fields[] = {
    {"input", JB_ANY, offsetof(struct run_body, input), JB_OBJECT, 0, 0, NULL, NULL, NULL},
    {"dry_run", JB_BOOL, offsetof(struct run_body, dry_run), 0, 0, 0, NULL, NULL, NULL},
};

const struct jb_binding api_workflows_run_body = {run_fields, 2};
const struct jb_binding api_no_body = {NULL, 0};

/* POST /v1/workflows/{id}/run: {input?, dry_run?}. A manual run starts a disabled workflow
 * too. */
int api_workflows_run(struct router_req *r, struct err *e)
{
    struct run_body b = {NULL, false};
    struct store_workflow wf;
    struct jb_result res;
    json_t *input;
    int rc = jb_bind(r->body, run_fields, 2, &b, r->arena, &res, e);
    if (rc)
        return rc;
    rc = read_workflow(r, r->params[0], &wf, e);
    if (rc)
        return rc;
    input = b.input ? json_incref(b.input) : json_object();
    rc = b.dry_run ? dry_run(r, &wf, input, e) : start_run(r, &wf, "manual", NULL, input, e);
    json_decref(input);
    return rc;
}

/* GET /v1/workflows/{id}/runs: newest first. */
int api_workflows_runs(struct router_req *r, struct err *e)
{
    struct store_wf_run_page page;
    struct store_workflow wf;
    int64_t before_created = 0;
    const char *before_id = NULL;
    unsigned limit;
    struct buf b;
    struct jw w;
    int rc;

    rc = router_query_limit(r, &limit, e);
    if (!rc)
        rc = router_query_before(r, "run", &before_created, &before_id, e);
    if (!rc)
        rc = read_workflow(r, r->params[0], &wf, e);
    if (rc)
        return rc;
    rc = store_wf_run_list(r->store, &r->tenant, wf.id, limit, before_created, before_id, r->arena,
                           &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "run list failed");
    buf_init(&b, RESP_CAP * 16);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "runs");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++)
        wf_run_write(&w, &page.items[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.n ? page.items[page.n - 1].created_at : 0,
                      page.n ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/workflows/{id}/runs/{run_id} */
int api_workflows_run_get(struct router_req *r, struct err *e)
{
    struct store_workflow wf;
    int rc = read_workflow(r, r->params[0], &wf, e);
    return rc ? rc : respond_run(r, wf.id, r->params[1], e);
}

/* POST /v1/workflows/{id}/runs/{run_id}/cancel */
int api_workflows_run_cancel(struct router_req *r, struct err *e)
{
    struct store_workflow wf;
    struct jb_result res;
    int rc = jb_bind(r->body, NULL, 0, NULL, r->arena, &res, e); /* takes no parameters */
    if (!rc)
        rc = read_workflow(r, r->params[0], &wf, e);
    if (rc)
        return rc;
    rc = store_wf_run_cancel(r->store, &r->tenant, wf.id, r->params[1], clock_now_ms());
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "run_not_found", "run_id", "No run %.60s of workflow %.60s.",
                       r->params[1], wf.id);
    if (rc == ERR_CONFLICT)
        return err_set(e, rc, "run_not_cancellable", "run_id",
                       "The run %.60s has already ended, so it cannot be cancelled.", r->params[1]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "run cancel failed");
    return respond_run(r, wf.id, r->params[1], e);
}

/* POST /v1/hooks/{token}: the webhook trigger. The token authenticated the request
 * (middleware); the body, a JSON object, is the run's trigger data. */
int api_hooks_receive(struct router_req *r, struct err *e)
{
    struct store_workflow wf;
    json_t *event;
    int rc = store_workflow_by_token(r->store, r->params[0], r->arena, &wf);
    if (!rc && strcmp(wf.trigger_type, "webhook") != 0)
        rc = ERR_NOT_FOUND;
    if (rc == ERR_NOT_FOUND)
        return router_no_route(r->http, e);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "webhook read failed");
    if (!wf.enabled)
        return err_set(e, ERR_CONFLICT, "workflow_disabled", NULL,
                       "The workflow %.60s is disabled: its webhook starts no run.", wf.id);
    if (!json_is_object(r->body))
        return err_set(e, ERR_INVALID, "invalid_request", NULL,
                       "The webhook body must be a JSON object.");
    {
        json_t *trigger = json_loads(wf.trigger, 0, NULL);
        const char *name;
        event = trigger ? json_object_get(trigger, "event") : NULL;
        name = json_string_value(event) ? arena_strdup(r->arena, json_string_value(event)) : NULL;
        json_decref(trigger);
        return start_run(r, &wf, "webhook", name, r->body, e);
    }
}
