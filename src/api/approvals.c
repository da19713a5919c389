/* SPDX-License-Identifier: MIT */
/*
 * approvals.c: /v1/approvals, the decisions people take on the tool calls of employees whose
 * policy is `approve` (contract §19). Reading needs the scope `approvals` (a key without scopes
 * reads them too); deciding needs a key whose scopes name `approvals`: a key without scopes,
 * the MCP server's door and tools never decide. Edited arguments are checked against the
 * tool's schema as it is now (400 naming `arguments`). A decision on a chat turn's approval
 * that was its last one sends the turn on (turn_resume), on this node, at once; the keeper of
 * every node takes any that one missed. A task run or a workflow step whose approvals are all
 * decided is runnable again in the queue (store_claim): the decision wakes this node's
 * workers, and the workers of every node look on their own.
 */
#include "api.h"

#include "../tasks/runner.h"

#include "../core/buf.h"
#include "../core/clock.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define RESP_CAP (1u << 20)
#define REASON_MAX 1000

const char *const api_approval_statuses[] = {"pending", "approved", "rejected", "expired", NULL};

/* ---- Bodies ---- */

struct decide_body {
    json_t *arguments;
    const char *reason;
};

static const struct jb_field approve_fields[] = {
    {"arguments", JB_ANY, offsetof(struct decide_body, arguments), JB_OBJECT, 0, 0, NULL, NULL,
     NULL},
};
const struct jb_binding api_approval_approve_body = {approve_fields, 1};

static const struct jb_field reject_fields[] = {
    {"reason", JB_STRING, offsetof(struct decide_body, reason), 0, 0, REASON_MAX, NULL, NULL, NULL},
};
const struct jb_binding api_approval_reject_body = {reject_fields, 1};

/* ---- Answers ---- */

static int respond(struct router_req *r, const struct store_approval *p, struct err *e)
{
    struct buf b;
    struct jw w;
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    act_approval_write(&w, p);
    return router_respond_jw(r, &w, &b, e);
}

static int not_found(const char *id, struct err *e)
{
    return err_set(e, ERR_NOT_FOUND, "approval_not_found", "id", "No approval %.60s.", id);
}

/* GET /v1/approvals: newest first; filters status, employee_id. */
int api_approvals_list(struct router_req *r, struct err *e)
{
    struct store_approval_filter f;
    struct store_approval_page page;
    int status = -1;
    unsigned limit;
    struct buf b;
    struct jw w;
    int rc = router_query_limit(r, &limit, e);

    memset(&f, 0, sizeof(f));
    if (!rc)
        rc = router_query_before(r, "apr", &f.before_at, &f.before_id, e);
    if (!rc)
        rc = router_query_enum(r, "status", &status, e);
    if (rc)
        return rc;
    f.limit = limit;
    f.status = status >= 0 ? api_approval_statuses[status] : NULL;
    f.employee_id = router_query(r, "employee_id");
    rc = store_approval_list(r->store, &r->tenant, &f, r->arena, &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "approval list failed");
    buf_init(&b, 16u << 20);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "approvals");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++)
        act_approval_write(&w, &page.items[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.n ? page.items[page.n - 1].requested_at : 0,
                      page.n ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/approvals/{id} */
int api_approvals_get(struct router_req *r, struct err *e)
{
    struct store_approval p;
    int rc = store_approval_get(r->store, &r->tenant, r->params[0], r->arena, &p);
    if (rc == ERR_NOT_FOUND)
        return not_found(r->params[0], e);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "approval read failed");
    return respond(r, &p, e);
}

/* 403 unless the key's scopes name `approvals` (a key without scopes does not decide). */
static int may_decide(struct router_req *r, struct err *e)
{
    struct store_approval p;
    int rc;

    if (!r->by_session) {
        if (r->scopes != 0 && (r->scopes & AUTH_SCOPE_APPROVALS))
            return 0;
        return err_set(e, ERR_FORBIDDEN, "permission_denied", NULL,
                       "Deciding an approval needs a key whose scopes name approvals; a key "
                       "without scopes does not decide.");
    }
    if (r->role >= STORE_ROLE_ADMIN)
        return 0; /* an admin decides any */
    /* a member decides the approvals of the turns and runs it started */
    rc = store_approval_get(r->store, &r->tenant, r->params[0], r->arena, &p);
    if (rc == ERR_NOT_FOUND)
        return not_found(r->params[0], e);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "approval read failed");
    if (p.requested_by_id && strcmp(p.requested_by_id, r->user.id) == 0)
        return 0;
    return err_set(e, ERR_FORBIDDEN, "permission_denied", NULL,
                   "Your role (%s) decides the approvals of what you started; this one needs "
                   "admin or above.",
                   store_role_name(r->role));
}

/* The definition of tool 'name' as the tenant has it now (catalog or MCP server; from the
 * request's arena), or NULL. */
static const struct tools_def *tool_now(struct router_req *r, const char *name)
{
    const struct tools_def *d = tools_def_find(name);
    struct store_mcp_server m;
    struct tools_def *md;
    const char *dot, *tool;
    json_t *list, *t;
    size_t i;

    if (d || strncmp(name, "mcp.", 4) != 0)
        return d;
    dot = strchr(name + 4, '.');
    if (!dot)
        return NULL;
    if (store_mcp_server_find(r->store, &r->tenant,
                              arena_strndup(r->arena, name + 4, (size_t)(dot - name - 4)), r->arena,
                              &m))
        return NULL;
    tool = dot + 1;
    list = json_loads(m.tools ? m.tools : "[]", 0, NULL);
    md = NULL;
    json_array_foreach(list, i, t)
    {
        const char *n = json_string_value(json_object_get(t, "name"));
        char *schema;
        if (!n || strcmp(n, tool) != 0)
            continue;
        schema = json_dumps(json_object_get(t, "input_schema"), JSON_COMPACT);
        md = arena_calloc(r->arena, sizeof(*md));
        md->name = arena_strdup(r->arena, name);
        md->source = TOOLS_MCP;
        md->input_schema = arena_strdup(r->arena, schema ? schema : "{\"type\":\"object\"}");
        free(schema);
        break;
    }
    json_decref(list);
    return md;
}

/* Decide approval r->params[0] as 'status', with edited 'arguments' (may be NULL) or a
 * 'reason'; a chat turn whose approvals are then all decided goes on. */
static int decide(struct router_req *r, const char *status, json_t *arguments, const char *reason,
                  struct err *e)
{
    struct store_approval_decision d;
    struct store_approval p;
    char *args = NULL;
    int rc = may_decide(r, e);

    if (rc)
        return rc;
    if (arguments) {
        const struct tools_def *def;
        char why[600];
        rc = store_approval_get(r->store, &r->tenant, r->params[0], r->arena, &p);
        if (rc == ERR_NOT_FOUND)
            return not_found(r->params[0], e);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "approval read failed");
        def = tool_now(r, p.tool);
        if (def && act_args_check(def, arguments, r->arena, NULL, why, sizeof(why)))
            return err_set(e, ERR_INVALID, "invalid_request", "arguments",
                           "Invalid arguments for %s: %s", p.tool, why);
        args = json_dumps(arguments, JSON_COMPACT);
    }
    memset(&d, 0, sizeof(d));
    d.id = r->params[0];
    d.status = status;
    d.arguments = args;
    d.reason = reason;
    d.by_type = r->by_session ? "user" : "key";
    d.by_id = router_actor_id(r);
    d.now = clock_now_ms();
    rc = store_approval_decide(r->store, &r->tenant, &d, r->arena, &p);
    free(args);
    if (rc == ERR_NOT_FOUND)
        return not_found(r->params[0], e);
    if (rc == ERR_CONFLICT)
        return err_set(e, rc, "approval_not_pending", NULL, "The approval is already %s.",
                       p.status);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "approval decision failed");
    if (p.message_id)
        turn_resume(&api_svc(r)->turn, &r->tenant, p.message_id);
    else if (p.task_run_id || p.workflow_run_id)
        task_runner_wake(api_svc(r)->tasks); /* the run may go on */
    return respond(r, &p, e);
}

/* POST /v1/approvals/{id}/approve {arguments?} */
int api_approvals_approve(struct router_req *r, struct err *e)
{
    struct decide_body b;
    struct jb_result res;
    int rc;
    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, approve_fields, 1, &b, r->arena, &res, e);
    return rc ? rc : decide(r, "approved", b.arguments, NULL, e);
}

/* POST /v1/approvals/{id}/reject {reason?} */
int api_approvals_reject(struct router_req *r, struct err *e)
{
    struct decide_body b;
    struct jb_result res;
    int rc;
    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, reject_fields, 1, &b, r->arena, &res, e);
    return rc ? rc : decide(r, "rejected", NULL, b.reason, e);
}
