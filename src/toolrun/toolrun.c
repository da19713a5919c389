/* SPDX-License-Identifier: MIT */
/*
 * toolrun.c: the built-in tools (see toolrun.h). Each one reads its checked arguments, does
 * what its route does for the turn's tenant (the knowledge the employee may read, a task with
 * the tier gate, a workflow run with the balance gate, a colleague's answer with the gates of a
 * chat message) and writes its result as the route's record, so what the model reads is what
 * the API answers.
 */
#include "toolrun.h"

#include "../core/clock.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../embed/pool.h"
#include "../integrations/oauth.h"
#include "../integrations/operations.h"
#include "../mcpc/mcpc.h"
#include "../json/json.h"
#include "../knowledge/search.h"
#include "../ledger/ledger.h"
#include "../tasks/runner.h"
#include "../tasks/schedule.h"
#include "../tasks/task.h"
#include "../workflows/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEARCH_LIMIT_DEFAULT 5
#define RESULT_CAP (8u << 20)
#define ASK_ANSWER_MAX (4 * ACT_RESULT_MAX) /* bytes of a colleague's answer kept */

/* Append what the writer 'b' holds (a finished JSON value) to 'out'. */
static int put_buf(struct buf *out, struct buf *b)
{
    int rc = buf_append(out, buf_ptr(b), buf_len(b));
    buf_cleanup(b);
    return rc;
}

/* knowledge.search {query, limit?, tags?}: the passages the employee may read. */
static int knowledge(const struct toolrun_env *env, const struct act_job *job, struct buf *out,
                     struct err *e)
{
    const struct tools_args *g = job->args;
    const struct knowledge_services *ks = &env->agent->knowledge;
    struct store_search_filter f = {NULL, job->employee_id};
    json_t *tags = json_object_get(job->arguments, "tags");
    struct store_hit *hits = NULL;
    float *qvec = NULL;
    size_t dim = 0, n = 0;
    struct arena a;
    struct store *s;
    struct buf b;
    struct jw w;
    char *tags_json = NULL;
    int rc = 0;

    arena_init(&a);
    if (tags)
        f.tags_json = tags_json = json_dumps(tags, JSON_COMPACT);
    if (ks->embed) {
        size_t len = strlen(g->query);
        rc = embed_pool_embed_all(ks->embed, &g->query, &len, 1, &qvec, &dim, e);
    }
    if (!rc) {
        s = store_pool_get(ks->pool);
        rc = knowledge_search(ks, s, job->tenant, &a, g->query, qvec, dim, &f,
                              g->limit ? (unsigned)g->limit : SEARCH_LIMIT_DEFAULT, -1.0, &hits, &n,
                              e);
        store_pool_put(ks->pool, s);
    }
    if (!rc) {
        buf_init(&b, RESULT_CAP);
        jw_init(&w, &b);
        jw_obj(&w);
        jw_key(&w, "results");
        knowledge_write_hits(&w, hits, n);
        jw_obj_end(&w);
        rc = put_buf(out, &b);
    } else if (!e->msg[0]) {
        err_set(e, rc, "internal_error", NULL, "the knowledge search failed");
    }
    free(qvec);
    free(tags_json);
    arena_cleanup(&a);
    return rc;
}

/* The task record of 'k' into 'out'. */
static int put_task(struct buf *out, const struct store_task *k)
{
    struct buf b;
    struct jw w;
    buf_init(&b, RESULT_CAP);
    jw_init(&w, &b);
    task_write(&w, k);
    return put_buf(out, &b);
}

/* The audit entry of a tool's side effect (contract §20): the employee is its actor; the
 * action is the resource's (`task.create`) or, for an effect outside this server, the tool's
 * own (`tool.slack.post_message`, its target the journal's call). */
static void effect_entry(const struct act_job *job, struct store_audit *a, const char *action,
                         const char *type, const char *target)
{
    memset(a, 0, sizeof(*a));
    a->tenant = *job->tenant;
    a->actor_type = STORE_ACTOR_EMPLOYEE;
    a->actor_id = job->employee_id ? job->employee_id : "";
    a->actor_label = job->employee_id ? job->employee_id : "";
    a->action = action;
    a->target_type = type;
    a->target_id = target;
}

/* An effect outside this server done (an integration's or an MCP server's tool that writes):
 * its entry, alone. */
static void effect_done(const struct toolrun_env *env, const struct act_job *job)
{
    struct store_audit a;
    char action[160];
    struct store *s;

    if (job->def->effect != TOOLS_WRITE)
        return;
    snprintf(action, sizeof(action), "tool.%s", job->def->name);
    effect_entry(job, &a, action, "tool_call", job->call_id);
    s = store_pool_get(env->pool);
    if (store_audit_add(s, &a))
        log_warn("toolrun: the audit entry of %s could not be written", job->def->name);
    store_pool_put(env->pool, s);
}

/* tasks.create {title, description?, priority?, due_at?, employee_id?} */
static int task_new(const struct toolrun_env *env, const struct act_job *job, struct buf *out,
                    struct err *e)
{
    const struct tools_args *g = job->args;
    struct store_employee emp;
    struct store_task k;
    char id[ID_MAX];
    struct arena a;
    struct store *s = store_pool_get(env->pool);
    int64_t now = clock_now_ms();
    int rc;

    arena_init(&a);
    memset(&k, 0, sizeof(k));
    k.employee_id = g->employee_id ? g->employee_id : job->employee_id;
    k.title = g->title;
    k.description = g->description;
    k.priority = g->priority >= 0 ? task_priorities[g->priority] : "medium";
    rc = g->due_at ? sched_due_at_parse(g->due_at, strlen(g->due_at), &k.due_at, e) : 0;
    if (!rc) {
        rc = store_employee_get(s, job->tenant, k.employee_id, &a, &emp);
        if (rc == ERR_NOT_FOUND)
            err_set(e, rc, "employee_not_found", "employee_id", "No employee %.60s.",
                    k.employee_id);
        else if (rc)
            err_set(e, rc, "internal_error", NULL, "employee read failed");
    }
    if (!rc)
        rc = ledger_tier_check(job->org_tier, &emp, "employee_id", "give tasks to", e);
    if (!rc) {
        /* its runs act with the rights of whoever started this turn */
        struct store_audit entry;
        k.created_by = job->requested_by;
        k.scopes = job->scopes;
        effect_entry(job, &entry, "task.create", "task", id); /* 'id' is set before the write */
        store_audit_arm(s, &entry);
        rc = task_create(s, job->tenant, &k, id, now);
        store_audit_arm(s, NULL);
        if (rc)
            err_set(e, rc, "internal_error", NULL, "the task could not be created");
    }
    store_pool_put(env->pool, s);
    if (!rc) {
        task_runner_wake(env->tasks);
        rc = put_task(out, &k);
    }
    arena_cleanup(&a);
    return rc;
}

/* tasks.get {task_id} */
static int task_read(const struct toolrun_env *env, const struct act_job *job, struct buf *out,
                     struct err *e)
{
    struct store_task k;
    struct arena a;
    struct store *s = store_pool_get(env->pool);
    int rc;

    arena_init(&a);
    rc = store_task_get(s, job->tenant, job->args->task_id, &a, &k);
    store_pool_put(env->pool, s);
    if (rc == ERR_NOT_FOUND)
        err_set(e, rc, "task_not_found", "task_id", "No task %.60s.", job->args->task_id);
    else if (rc)
        err_set(e, rc, "internal_error", NULL, "task read failed");
    else
        rc = put_task(out, &k);
    arena_cleanup(&a);
    return rc;
}

/* workflows.run {workflow_id, input?}: a manual run, queued as POST /v1/workflows/{id}/run,
 * whose steps' turns are one level below the calling turn's. */
static int workflow_run(const struct toolrun_env *env, const struct act_job *job, struct buf *out,
                        struct err *e)
{
    struct store_workflow wf;
    struct store_wf_run run;
    json_t *input = job->args->input ? job->args->input : json_object();
    /* its steps act with the rights of whoever started this turn */
    struct wf_trigger_in in = {"manual",          NULL,       input, job->depth + 1, true,
                               job->requested_by, job->scopes};
    struct arena a;
    struct store *s = store_pool_get(env->pool);
    struct buf b;
    struct jw w;
    int rc;

    arena_init(&a);
    rc = store_workflow_get(s, job->tenant, job->args->workflow_id, &a, &wf);
    if (rc == ERR_NOT_FOUND)
        err_set(e, rc, "workflow_not_found", "workflow_id", "No workflow %.60s.",
                job->args->workflow_id);
    else if (rc)
        err_set(e, rc, "internal_error", NULL, "workflow read failed");
    else if (!wf.enabled)
        rc = err_set(e, ERR_CONFLICT, "workflow_disabled", NULL, "The workflow %.60s is disabled.",
                     wf.id);
    if (!rc)
        rc = wf_run_queue(s, job->tenant, &wf, &in, &a, &run, e);
    store_pool_put(env->pool, s);
    if (!rc) {
        task_runner_wake(env->tasks);
        buf_init(&b, RESULT_CAP);
        jw_init(&w, &b);
        wf_run_write(&w, &run);
        rc = put_buf(out, &b);
    }
    if (!job->args->input)
        json_decref(input);
    arena_cleanup(&a);
    return rc;
}

/* ---- employees.ask ---- */

/* The colleague 'id' of the turn's tenant into '*emp' (strings from 'a'), checked as a chat
 * message to it would be: another employee than the asking one, the tier gate, the balance
 * gate of a live key, not offline. */
static int colleague(const struct toolrun_env *env, const struct act_job *job, const char *id,
                     struct arena *a, struct store_employee *emp, struct err *e)
{
    struct store *s = store_pool_get(env->pool);
    struct store_org org;
    int rc;

    if (job->employee_id && strcmp(id, job->employee_id) == 0) {
        rc = err_set(e, ERR_INVALID, "invalid_arguments", "employee_id",
                     "employee_id names the asking employee itself: ask a colleague.");
        goto out;
    }
    rc = store_employee_get(s, job->tenant, id, a, emp);
    if (rc == ERR_NOT_FOUND) {
        err_set(e, rc, "employee_not_found", "employee_id", "No employee %.60s.", id);
        goto out;
    }
    if (rc) {
        err_set(e, rc, "internal_error", NULL, "employee read failed");
        goto out;
    }
    rc = store_org_get(s, job->tenant->org_id, &org);
    if (rc) {
        err_set(e, rc, "internal_error", NULL, "organization read failed");
        goto out;
    }
    rc = ledger_gate(&org, job->tenant->mode, emp, "chat with", "employee_id", true, e);
    if (!rc && emp->status == STORE_EMP_OFFLINE)
        rc = err_set(e, ERR_CONFLICT, "employee_offline", "employee_id",
                     "%.60s is offline and answers no one.", emp->name);
out:
    store_pool_put(env->pool, s);
    return rc;
}

/* employees.ask {employee_id, message}: the colleague answers the message as in chat (its
 * persona, model, knowledge and own auto tools, one level below the asking turn, on this
 * thread), with no conversation stored; each of its model calls is charged as a chat reply's
 * (agent_answer). {employee_id, name, answer}, cut as every result is (act/). */
static int ask(const struct toolrun_env *env, const struct act_job *job, struct buf *out,
               struct err *e)
{
    const struct tools_args *g = job->args;
    struct store_employee emp;
    struct agent_answer ans;
    struct agent_ask q;
    struct arena a;
    struct buf b;
    struct jw w;
    int rc;

    arena_init(&a);
    rc = colleague(env, job, g->employee_id, &a, &emp, e);
    if (rc) {
        arena_cleanup(&a);
        return rc;
    }
    memset(&q, 0, sizeof(q));
    q.tenant = job->tenant;
    q.emp = &emp;
    q.message = g->message;
    q.result_max = ASK_ANSWER_MAX;
    q.scopes = job->scopes;
    q.requested_by = job->requested_by;
    q.org_tier = job->org_tier;
    q.depth = job->depth + 1;
    q.asked = true;
    agent_answer(env->agent, &q, &ans);
    if (ans.failed) {
        rc = err_set(e, ERR_UPSTREAM, "upstream_error", NULL, "%.60s could not answer: %.150s",
                     emp.name, ans.error);
    } else if (ans.stop_reason && strcmp(ans.stop_reason, "insufficient_credits") == 0) {
        /* what it spent stays charged; its cut answer is not given as one */
        rc = ledger_insufficient(e);
    } else {
        buf_init(&b, RESULT_CAP);
        jw_init(&w, &b);
        jw_obj(&w);
        jw_key(&w, "employee_id");
        jw_str(&w, emp.id);
        jw_key(&w, "name");
        jw_str(&w, emp.name);
        jw_key(&w, "answer");
        jw_str(&w, buf_ptr(&ans.text));
        jw_obj_end(&w);
        rc = put_buf(out, &b);
    }
    agent_answer_cleanup(&ans);
    arena_cleanup(&a);
    return rc;
}

/* Whether an MCP server's refusal 'text' says it has no such tool ("Tool x not found", the
 * official SDKs' wording, or "Unknown tool: x"). */
static bool says_unknown_tool(const char *text)
{
    char low[256];
    size_t i;
    for (i = 0; text && text[i] && i < sizeof(low) - 1; i++)
        low[i] = (char)((text[i] >= 'A' && text[i] <= 'Z') ? text[i] + 32 : text[i]);
    low[i] = '\0';
    return strstr(low, "unknown tool") || (strstr(low, "tool") && strstr(low, "not found"));
}

/* The server of 'row' said it has no tool the tenant's list names: its tool list is read again
 * and stored (as a refresh: not over a change made meanwhile), so later turns are offered what
 * it has now. */
static void relist(const struct toolrun_env *env, const struct act_job *job,
                   const struct mcpc_env *me, const struct mcpc_server *srv,
                   struct store_mcp_server *row)
{
    char why[300];
    json_t *tools = NULL;
    char *text;
    struct store *s;

    if (mcpc_list(me, srv, &tools, why, sizeof(why)))
        return; /* unreachable now: the list stays as it was */
    text = json_dumps(tools, JSON_COMPACT);
    json_decref(tools);
    if (!text)
        return;
    row->tools = text;
    row->status = "ok";
    row->error = NULL;
    row->refreshed_at = clock_now_ms();
    row->updated_at = row->refreshed_at;
    s = store_pool_get(env->pool);
    if (store_mcp_server_update(s, job->tenant, row, STORE_MCP_TOOLS))
        log_warn("toolrun: the tools read again of MCP server %s were not stored", row->name);
    store_pool_put(env->pool, s);
    free(text);
}

/* mcp.<server>.<tool>: the tool of the tenant's MCP server, called with the server's own
 * headers (opened for this call only), under the outbound address rules. A server that says
 * it has no such tool has its tool list read again. */
static int mcp_call(const struct toolrun_env *env, const struct act_job *job, struct buf *out,
                    struct err *e)
{
    const char *server = job->def->provider;
    const char *tool = job->def->name + 4 + strlen(server) + 1; /* after "mcp.<server>." */
    struct mcpc_env me = {env->integ->httpc, env->integ->cfg->mcp_allow_private, 0};
    struct mcpc_server srv = {NULL, NULL, 0};
    struct mcpc_outcome o;
    struct store_mcp_server row;
    struct arena a;
    struct store *s = store_pool_get(env->pool);
    char *headers = NULL;
    int rc;

    arena_init(&a);
    rc = store_mcp_server_find(s, job->tenant, server, &a, &row);
    store_pool_put(env->pool, s);
    if (rc == ERR_NOT_FOUND || (!rc && !row.enabled))
        rc = err_set(e, ERR_NOT_FOUND, "mcp_server_not_found", NULL,
                     "mcp_server_not_found: no enabled MCP server %.40s.", server);
    else if (rc)
        err_set(e, rc, "internal_error", NULL, "MCP server read failed");
    if (!rc && row.headers) {
        headers = integ_open(env->integ->key, job->tenant, row.id, STORE_MCP_SEAL_WHAT, row.headers,
                             row.headers_len, &a);
        const char **lines = NULL;
        if (!headers || mcpc_header_lines(headers, &a, &lines, &srv.nheaders))
            rc = err_set(e, ERR_INVALID, "upstream_error", NULL,
                         "upstream_error: the server's headers cannot be opened.");
        srv.headers = lines;
    }
    if (!rc) {
        srv.url = row.url;
        rc = mcpc_call(&me, &srv, tool, job->arguments, &o);
        if (!rc && !o.is_error) {
            json_t *text = json_stringn(o.text ? o.text : "", o.len);
            char *dumped = text ? json_dumps(text, JSON_ENCODE_ANY) : NULL;
            rc = dumped ? buf_appends(out, dumped) : ERR_NOMEM;
            free(dumped);
            json_decref(text);
        } else if (says_unknown_tool(o.text)) {
            relist(env, job, &me, &srv, &row);
            rc = err_set(e, ERR_NOT_FOUND, "unknown_tool", NULL,
                         "unknown_tool: the MCP server %.40s has no tool %.100s any more (its "
                         "tool list was read again).",
                         server, tool);
        } else {
            rc = err_set(e, rc ? rc : ERR_UPSTREAM, "upstream_error", NULL, "%s%.200s",
                         rc ? "upstream_error: " : "tool_error: ", o.text ? o.text : "");
        }
        mcpc_outcome_cleanup(&o);
    }
    if (headers)
        memset(headers, 0, strlen(headers));
    arena_cleanup(&a);
    return rc;
}

/* A tool's code, by name; 'nests' when what it starts runs turns one level below the calling
 * turn (act_depth_check: refused past ACT_DEPTH_MAX levels, before anything is done). */
static const struct {
    const char *name;
    int (*fn)(const struct toolrun_env *env, const struct act_job *job, struct buf *out,
              struct err *e);
    bool nests;
} runners[] = {
    {"knowledge.search", knowledge, false},
    {"tasks.create", task_new, false}, /* its task runs at level 0 */
    {"tasks.get", task_read, false},
    {"workflows.run", workflow_run, true}, /* its steps' turns one level down */
    {"employees.ask", ask, true},          /* the colleague's turn one level down */
};

#define NRUNNERS (sizeof(runners) / sizeof(runners[0]))

/* See toolrun.h. */
int toolrun_run(void *ud, const struct act_job *job, struct buf *result, struct err *e)
{
    const struct toolrun_env *env = ud;
    if (job->def->source == TOOLS_MCP) {
        int rc = mcp_call(env, job, result, e);
        if (!rc)
            effect_done(env, job);
        return rc;
    }
    if (job->def->source == TOOLS_INTEGRATION) {
        /* its messages already read "<code>: <reason>" */
        int rc =
            integ_tool_call(env->integ, job->tenant, job->def->name, job->arguments, result, e);
        if (rc && !e->msg[0])
            err_set(e, rc, "upstream_error", NULL, "the integration failed (%s)", err_name(rc));
        if (!rc)
            effect_done(env, job);
        return rc;
    }
    for (size_t i = 0; i < NRUNNERS; i++) {
        if (strcmp(runners[i].name, job->def->name) == 0) {
            int rc = runners[i].nests ? act_depth_check(job->depth, e) : 0;
            if (!rc)
                rc = runners[i].fn(env, job, result, e);
            if (rc && !e->msg[0])
                err_set(e, rc, "internal_error", NULL, "the tool failed (%s)", err_name(rc));
            if (rc && e->code && strcmp(e->code, "internal_error") != 0 &&
                strncmp(e->msg, e->code, strlen(e->code)) != 0) {
                /* the model reads "<code>: <message>", as a run's error reads */
                char msg[sizeof(e->msg) + 64];
                snprintf(msg, sizeof(msg), "%.60s: %s", e->code, e->msg);
                snprintf(e->msg, sizeof(e->msg), "%.*s", (int)sizeof(e->msg) - 1, msg);
            }
            return rc;
        }
    }
    return err_set(e, ERR_INVALID, "invalid_request", NULL, "%s cannot be called from a turn yet.",
                   job->def->name);
}

/* Whether the tenant's connection to 'provider' is connected. */
static bool connected(const struct toolrun_env *env, const struct store_tenant *t,
                      const char *provider)
{
    struct store_integration row;
    struct arena a;
    struct store *s;
    bool yes;

    if (!env->integ || !t)
        return false;
    arena_init(&a);
    s = store_pool_get(env->pool);
    yes = store_integration_get(s, t, provider, &a, &row) == 0 &&
          strcmp(row.status, "connected") == 0;
    store_pool_put(env->pool, s);
    arena_cleanup(&a);
    return yes;
}

/* See toolrun.h. */
bool toolrun_available(void *ud, const struct store_tenant *t, const struct tools_def *d)
{
    const struct toolrun_env *env = ud;
    if (d->source == TOOLS_MCP)
        return env->integ != NULL; /* offered only from servers that answered their listing */
    if (d->source == TOOLS_INTEGRATION)
        return connected(env, t, d->provider);
    for (size_t i = 0; i < NRUNNERS; i++) {
        if (strcmp(runners[i].name, d->name) == 0)
            return true;
    }
    return false;
}
