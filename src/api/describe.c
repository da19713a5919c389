/* SPDX-License-Identifier: MIT */
/*
 * describe.c: every fact of the API that the C holds, as one JSON document (`workforce
 * describe`): the route table (method, path, scopes, flags, query parameters with their
 * schemas, the JSON Schema of the request body), the error table (code, status, the one
 * description), the vocabularies (scopes, event types, categories, providers, actions, ...),
 * the size limits, and each workflow action's options. tools/gen_api_facts.py keeps it in
 * docs/api-facts.json, from which tools/gen_openapi.py writes the API document: a route, a
 * member, a limit, an enum value or an error the C does not have cannot be in the document,
 * and none the C has can be missing.
 *
 * The request bodies' schemas are written by json/schema.c from the binding tables jb_bind()
 * checks; a free-form member with a shape (a task's recurring, a workflow's trigger and steps,
 * the query's filters) takes its schema from the function beside the code that checks it.
 */
#include "api.h"

#include "../mcpc/mcpc.h"
#include "../tools/tools.h"

#include "../auth/auth.h"
#include "../integrations/providers.h"
#include "../tasks/schedule.h"
#include "../tasks/task.h"
#include "../webhooks/webhooks.h"
#include "../workflows/workflow.h"

#include <string.h>

static const char *const type_names[] = {
    [JB_STRING] = "string", [JB_INT] = "integer",        [JB_BOOL] = "boolean",
    [JB_ENUM] = "enum",     [JB_STRING_ARRAY] = "array", [JB_ANY] = "any",
};

/* The shapes of the free-form members: which binding's member, and who checks it. */
static const struct {
    const struct jb_binding *body;
    const char *member;
    json_t *(*schema)(void);
} shapes[] = {
    {&api_tasks_create_body, "recurring", sched_recurring_schema},
    {&api_tasks_update_body, "recurring", sched_recurring_schema},
    {&api_workflows_create_body, "trigger", wf_trigger_schema},
    {&api_workflows_create_body, "steps", wf_steps_schema},
    {&api_workflows_update_body, "trigger", wf_trigger_schema},
    {&api_workflows_update_body, "steps", wf_steps_schema},
    {&api_knowledge_query_body, "filters", api_knowledge_filters_schema},
    {&api_employees_create_body, "tools", tools_rules_schema},
    {&api_employees_update_body, "tools", tools_rules_schema},
    {&api_mcp_servers_create_body, "headers", mcpc_headers_schema},
    {&api_mcp_servers_update_body, "headers", mcpc_headers_schema},
};

/* A jb_nested_fn: the shape of member 'f' of the binding 'ud', or NULL. */
static json_t *shape_of(const struct jb_field *f, void *ud)
{
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        if (shapes[i].body == ud && strcmp(shapes[i].member, f->name) == 0)
            return shapes[i].schema();
    }
    if (ud == &api_openai_completion_body)
        return api_openai_member_schema(f->name);
    return NULL;
}

/* See api.h. */
json_t *api_body_schema(const struct jb_binding *body)
{
    return jb_binding_schema(body, shape_of, (void *)(uintptr_t)body);
}

/* See api.h. */
json_t *api_member_schema(const struct jb_binding *body, const struct jb_field *f)
{
    return jb_field_schema(f, shape_of, (void *)(uintptr_t)body);
}

/* ---- Routes ---- */

/* The member list of the older form (name, type, required, nullable, limits, values). */
static json_t *describe_field(const struct jb_field *f)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(f->name));
    json_object_set_new(o, "type", json_string(type_names[f->type]));
    json_object_set_new(o, "required", json_boolean(f->flags & JB_REQUIRED));
    json_object_set_new(o, "nullable", json_boolean(f->flags & JB_NULLABLE));
    if (f->type == JB_STRING || f->type == JB_INT || f->type == JB_STRING_ARRAY) {
        json_object_set_new(o, "min", json_integer(f->min));
        json_object_set_new(o, "max", json_integer(f->max));
    }
    if (f->type == JB_STRING_ARRAY)
        json_object_set_new(o, "unique", json_boolean(f->flags & JB_UNIQUE));
    if (f->type == JB_ANY)
        json_object_set_new(o, "object", json_boolean(f->flags & JB_OBJECT));
    if (f->type == JB_ENUM)
        json_object_set_new(o, "values", jb_values_json(f->values));
    return o;
}

/* See api.h. */
json_t *api_query_schema(const struct router_qparam *q)
{
    switch (q->type) {
    case ROUTER_Q_LIMIT:
        return json_pack("{s:s,s:I,s:I,s:I}", "type", "integer", "minimum", (json_int_t)q->min,
                         "maximum", (json_int_t)q->max, "default", (json_int_t)q->def);
    case ROUTER_Q_ENUM:
        if (q->def >= 0)
            return json_pack("{s:s,s:o,s:s}", "type", "string", "enum", jb_values_json(q->values),
                             "default", q->values[q->def]);
        return json_pack("{s:s,s:o}", "type", "string", "enum", jb_values_json(q->values));
    case ROUTER_Q_CURSOR:
    case ROUTER_Q_TEXT:
        break;
    }
    return json_pack("{s:s}", "type", "string");
}

static const char *const qtype_names[] = {
    [ROUTER_Q_TEXT] = "text",
    [ROUTER_Q_LIMIT] = "limit",
    [ROUTER_Q_ENUM] = "enum",
    [ROUTER_Q_CURSOR] = "cursor",
};

static json_t *describe_route(const struct route *rt)
{
    json_t *o = json_object(), *scopes = json_array(), *q = json_array();

    json_object_set_new(o, "method", json_string(rt->method));
    json_object_set_new(o, "path", json_string(rt->pattern));
    for (unsigned bit = 0; bit < 32; bit++)
        if (rt->scope & (1u << bit))
            json_array_append_new(scopes, json_string(auth_scope_name(1u << bit)));
    json_object_set_new(o, "scopes", scopes);
    json_object_set_new(o, "scope_any", json_boolean(rt->flags & ROUTE_SCOPE_ANY));
    json_object_set_new(o, "public", json_boolean(rt->flags & ROUTE_PUBLIC));
    json_object_set_new(o, "upload", json_boolean(rt->flags & ROUTE_UPLOAD));
    json_object_set_new(o, "hook", json_boolean(rt->flags & ROUTE_HOOK));
    json_object_set_new(o, "loose_query", json_boolean(rt->flags & ROUTE_LOOSE_QUERY));
    json_object_set_new(o, "events", json_boolean(rt->flags & ROUTE_EVENTS));
    json_object_set_new(o, "openai", json_boolean(rt->flags & ROUTE_OPENAI));
    json_object_set_new(o, "raw_body", json_boolean(rt->flags & ROUTE_RAW_BODY));
    /* contract §20: the least role of a session, keys refused, the audit entry, sealed replay */
    json_object_set_new(o, "role", json_string(store_role_name(rt->role)));
    json_object_set_new(o, "session_only", json_boolean(rt->flags & ROUTE_SESSION_ONLY));
    json_object_set_new(o, "audit", rt->audit ? json_string(rt->audit) : json_null());
    json_object_set_new(o, "secret_answer", json_boolean(rt->flags & ROUTE_SECRET_ANSWER));
    for (size_t i = 0; rt->query && rt->query[i].name; i++)
        json_array_append_new(q, json_pack("{s:s,s:s,s:o}", "name", rt->query[i].name, "kind",
                                           qtype_names[rt->query[i].type], "schema",
                                           api_query_schema(&rt->query[i])));
    json_object_set_new(o, "query", q);
    if (rt->body) {
        json_t *fields = json_array();
        for (size_t i = 0; i < rt->body->n; i++)
            json_array_append_new(fields, describe_field(&rt->body->fields[i]));
        json_object_set_new(o, "body", fields);
        json_object_set_new(o, "body_schema", api_body_schema(rt->body));
    } else {
        json_object_set_new(o, "body", json_null());
        json_object_set_new(o, "body_schema", json_null());
    }
    return o;
}

/* ---- Vocabularies, limits, actions ---- */

static json_t *vocabularies(void)
{
    json_t *v = json_object(), *scopes = json_array(), *tiers = json_array(),
           *providers = json_array(), *actions = json_array();
    size_t n = 0;
    const struct wf_action *all = wf_actions(&n);

    for (unsigned bit = 0; bit < 32; bit++) {
        const char *name = auth_scope_name(1u << bit);
        if (name && name[0])
            json_array_append_new(scopes, json_string(name));
    }
    for (int t = 0; t < TIER_COUNT; t++)
        json_array_append_new(tiers, json_string(config_tier_name((enum config_tier)t)));
    for (size_t i = 0; integ_provider_at(i); i++)
        json_array_append_new(providers, json_string(integ_provider_at(i)->id));
    for (size_t i = 0; i < n; i++)
        json_array_append_new(actions, json_string(all[i].name));
    json_object_set_new(v, "scopes", scopes);
    json_object_set_new(v, "tiers", tiers);
    json_object_set_new(v, "providers", providers);
    json_object_set_new(v, "actions", actions);
    json_object_set_new(v, "event_types", jb_values_json(WEBHOOKS_EVENT_TYPES));
    json_object_set_new(v, "employee_categories", jb_values_json(api_employee_categories));
    json_object_set_new(v, "employee_statuses", jb_values_json(api_employee_statuses));
    json_object_set_new(v, "stats_periods", jb_values_json(api_stats_periods));
    json_object_set_new(v, "task_priorities", jb_values_json(task_priorities));
    json_object_set_new(v, "task_statuses", jb_values_json(task_statuses));
    json_object_set_new(v, "mcp_protocol_versions", jb_values_json(api_mcp_versions));
    return v;
}

static json_t *limits(void)
{
    return json_pack("{s:i,s:I,s:i,s:i,s:i,s:i,s:i,s:i}", "json_body_bytes",
                     (int)ROUTER_JSON_BODY_MAX, "upload_file_bytes",
                     (json_int_t)API_UPLOAD_FILE_MAX, "request_target_bytes", HTTP_URI_MAX,
                     "header_block_bytes", HTTP_HEADER_MAX, "header_line_cost", HTTP_HEADER_COST,
                     "query_parameters", ROUTER_MAX_QUERY, "chat_message_characters",
                     API_CHAT_MESSAGE_MAX, "workflow_steps", WF_MAX_STEPS);
}

static json_t *actions(void)
{
    json_t *a = json_array();
    size_t n = 0;
    const struct wf_action *all = wf_actions(&n);

    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:s,s:s,s:b,s:o}", "name", all[i].name, "output",
                                           all[i].output, "json_output", all[i].json_output,
                                           "options", wf_action_options_schema(&all[i])));
    return a;
}

/* See api.h. */
json_t *api_describe(void)
{
    json_t *doc = json_object(), *routes = json_array(), *errors = json_array(), *schemas;
    const char *code, *text;
    unsigned status;

    for (size_t i = 0; i < api_nroutes; i++)
        json_array_append_new(routes, describe_route(&api_routes[i]));
    for (size_t i = 0;; i++) {
        code = api_error_code(i, &status, &text);
        if (!code)
            break;
        json_array_append_new(errors, json_pack("{s:s,s:i,s:s}", "code", code, "status",
                                                (int)status, "description", text));
    }
    schemas = json_pack("{s:o,s:o,s:o,s:o}", "Recurring", sched_recurring_schema(),
                        "WorkflowTrigger", wf_trigger_schema(), "WorkflowSteps", wf_steps_schema(),
                        "KnowledgeFilters", api_knowledge_filters_schema());
    json_object_set_new(doc, "routes", routes);
    json_object_set_new(doc, "errors", errors);
    json_object_set_new(doc, "vocabularies", vocabularies());
    json_object_set_new(doc, "limits", limits());
    json_object_set_new(doc, "actions", actions());
    json_object_set_new(doc, "schemas", schemas);
    return doc;
}
