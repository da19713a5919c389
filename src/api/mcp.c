/* SPDX-License-Identifier: MIT */
/*
 * mcp.c: POST /v1/mcp, a Model Context Protocol server (contract §16) over the Streamable HTTP
 * transport: JSON-RPC 2.0, one message per POST, each answered with one application/json body
 * (never a stream), no session (no Mcp-Session-Id). GET /v1/mcp is not routed, so the router
 * answers it 405 with Allow: POST, which tells a client there is no server-initiated stream.
 *
 * DESIGN: a tool is the REST call it mirrors. The table below names each tool's route (method
 * and pattern in the route table) and where each argument goes: a body member, a member of the
 * body's `filters`, a path parameter or a query parameter. A call binds its arguments into that
 * request (api_mcp_args_bind, pure), checks the route's scope against the key's, and runs the
 * route's own handler on this request, so that validation, errors, charging, recording and the
 * answer are the REST call's, written once. The handler's outcome is shaped into a tool result
 * by wrap_result(): the REST answer as structuredContent and as a text item, or the REST error
 * body as a text item with isError. A handler that answers later (ask_employee's chat turn,
 * search_knowledge's embedding) ends through router_async_finish(), which calls wrap_result()
 * (r->answer_wrap) before it records the Idempotency-Key answer and resumes the request.
 *
 * Decisions (docs/mcp.md):
 *   - versions 2025-11-25, 2025-06-18, 2025-03-26; initialize answers the client's when it is
 *     one of them, else the newest. An MCP-Protocol-Version header naming another is 400.
 *   - batches (a JSON array, allowed by 2025-03-26 only) are refused, 400 with -32600: answers
 *     of a batch could not be shaped when two of its calls complete asynchronously.
 *   - a message that is not JSON is 400 -32700, one that is not a JSON-RPC 2.0 request,
 *     notification or response is 400 -32600; an unknown method is 200 -32601; an unknown
 *     tool or a malformed tools/call (name, arguments) 200 -32602. Arguments that fail the
 *     tool's schema are a tool error (isError, code invalid_request naming the argument), as
 *     the 2025-11-25 revision asks (SEP-1303), like every failure of the API behind the tool.
 *   - notifications and responses are accepted with 202 and no body.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MCP_RESP_CAP (24u << 20) /* a tool result carries its REST answer twice */
#define MCP_SERVER_VERSION "1.0.0"

/* Newest first: initialize answers the first when the client's is not here. */
const char *const api_mcp_versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", NULL};

/* ---- The tools ---- */

enum arg_place {
    ARG_BODY,   /* a member of the REST body; its type and bounds are the binding's */
    ARG_FILTER, /* a member of the REST body's "filters" object */
    ARG_PATH,   /* the route's path parameter 'index' */
    ARG_QUERY,  /* a query parameter of the same name */
};

enum arg_type { ARG_STRING, ARG_INTEGER, ARG_STRINGS };

struct tool_arg {
    const char *name;
    enum arg_place place;
    enum arg_type type; /* not ARG_BODY: what the argument must be */
    unsigned index;     /* ARG_PATH */
    bool required;      /* not ARG_BODY (there, the binding's JB_REQUIRED) */
    const char *desc;
};

#define TOOL_MAX_ARGS 8

struct api_mcp_tool {
    const char *name;
    const char *title;
    const char *desc;
    const char *method, *pattern; /* the route it mirrors */
    bool read_only;
    struct tool_arg args[TOOL_MAX_ARGS];
    const char *output; /* JSON text of its outputSchema */
};

#define S_ID "{\"type\":\"string\"}"
#define S_LIST(items)                                                                              \
    "{\"type\":\"object\",\"properties\":{\"" items "\":{\"type\":\"array\",\"items\":{\"type\":"  \
    "\"object\"}},\"has_more\":{\"type\":\"boolean\"},\"next_cursor\":{\"type\":[\"string\","      \
    "\"null\"]}},\"required\":[\"" items "\",\"has_more\",\"next_cursor\"]}"
#define S_TASK                                                                                     \
    "{\"type\":\"object\",\"properties\":{\"id\":" S_ID ",\"employee_id\":" S_ID                   \
    ",\"title\":" S_ID ",\"status\":{\"type\":\"string\",\"enum\":[\"pending\",\"in_progress\","   \
    "\"completed\",\"failed\"]},\"priority\":" S_ID ",\"result\":{},\"error\":{}},\"required\":["  \
    "\"id\",\"employee_id\",\"title\",\"status\",\"priority\"]}"
#define S_RUN                                                                                      \
    "{\"type\":\"object\",\"properties\":{\"id\":" S_ID ",\"workflow_id\":" S_ID ",\"status\":"    \
    "{\"type\":\"string\",\"enum\":[\"queued\",\"running\",\"completed\",\"failed\","              \
    "\"cancelled\"]},\"steps\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"              \
    "\"credits_used\":{\"type\":\"integer\"}},\"required\":[\"id\",\"workflow_id\",\"status\","    \
    "\"steps\"]}"

static const struct api_mcp_tool tools[] = {
    {"list_employees",
     "List employees",
     "List the AI employees of the organization (name, role, category, tier, status, "
     "capabilities), by name. GET /v1/employees.",
     "GET",
     "/v1/employees",
     true,
     {{"category", ARG_QUERY, ARG_STRING, 0, false, "Only this category."},
      {"status", ARG_QUERY, ARG_STRING, 0, false, "Only this status."},
      {"limit", ARG_QUERY, ARG_INTEGER, 0, false, "Page size."},
      {"after", ARG_QUERY, ARG_STRING, 0, false, "The next_cursor of the previous page."}},
     "{\"type\":\"object\",\"properties\":{\"employees\":{\"type\":\"array\",\"items\":{\"type\":"
     "\"object\",\"properties\":{\"id\":" S_ID ",\"name\":" S_ID "},\"required\":[\"id\","
     "\"name\"]}},\"total\":{\"type\":\"integer\"},\"has_more\":{\"type\":\"boolean\"},"
     "\"next_cursor\":{\"type\":[\"string\",\"null\"]}},\"required\":[\"employees\",\"total\","
     "\"has_more\",\"next_cursor\"]}"},
    {"ask_employee",
     "Ask an employee",
     "Send a message to an AI employee and get its reply (a chat turn, charged and recorded as "
     "POST /v1/chat). Continue a conversation with conversation_id.",
     "POST",
     "/v1/chat",
     false,
     {{"employee_id", ARG_BODY, ARG_STRING, 0, false, "The employee to ask (emp_...)."},
      {"message", ARG_BODY, ARG_STRING, 0, false, "The message, 1 to 32,000 characters."},
      {"conversation_id", ARG_BODY, ARG_STRING, 0, false,
       "A conversation with this employee to continue; without it a new one starts."},
      {"context", ARG_BODY, ARG_STRING, 0, false,
       "Free-form facts the employee should take into account."}},
     "{\"type\":\"object\",\"properties\":{\"id\":" S_ID ",\"conversation_id\":" S_ID
     ",\"employee_id\":" S_ID ",\"content\":{\"type\":\"string\"},\"role\":{\"const\":"
     "\"assistant\"},\"credits_used\":{\"type\":\"integer\"},\"created_at\":" S_ID
     ",\"sources\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},\"usage\":{\"type\":"
     "\"object\"}},\"required\":[\"id\",\"conversation_id\",\"employee_id\",\"content\","
     "\"credits_used\"]}"},
    {"search_knowledge",
     "Search knowledge",
     "Search the knowledge base (uploaded documents) for passages matching a query, best "
     "first. POST /v1/knowledge/query.",
     "POST",
     "/v1/knowledge/query",
     true,
     {{"query", ARG_BODY, ARG_STRING, 0, false, "What to look for."},
      {"limit", ARG_BODY, ARG_INTEGER, 0, false, "How many passages, 1 to 50 (default 5)."},
      {"tags", ARG_FILTER, ARG_STRINGS, 0, false, "Only documents with any of these tags."},
      {"employee_id", ARG_FILTER, ARG_STRING, 0, false, "Only documents this employee may read."}},
     "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"},\"results\":{\"type\":"
     "\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"document_id\":" S_ID
     ",\"document_name\":" S_ID ",\"chunk_id\":" S_ID ",\"content\":" S_ID
     ",\"score\":{\"type\":\"number\"}},\"required\":[\"document_id\",\"chunk_id\",\"content\","
     "\"score\"]}}},\"required\":[\"query\",\"results\"]}"},
    {"create_task",
     "Create a task",
     "Give an employee a task; it runs as soon as a worker is free, or on its recurrence. "
     "POST /v1/tasks.",
     "POST",
     "/v1/tasks",
     false,
     {{"employee_id", ARG_BODY, ARG_STRING, 0, false, "The employee who does it (emp_...)."},
      {"title", ARG_BODY, ARG_STRING, 0, false, "What to do, in a line."},
      {"description", ARG_BODY, ARG_STRING, 0, false, "Details."},
      {"priority", ARG_BODY, ARG_STRING, 0, false, "low, medium (default), high or urgent."},
      {"due_at", ARG_BODY, ARG_STRING, 0, false,
       "When it is due: ISO 8601 UTC, e.g. 2026-12-01T09:00:00Z."},
      {"recurring", ARG_BODY, ARG_STRING, 0, false,
       "{frequency: daily|weekdays|weekly|monthly, day?, time: HH:MM} (UTC) to repeat it."}},
     S_TASK},
    {"get_task",
     "Get a task",
     "Read a task: its status, result and error (those of its latest run). GET /v1/tasks/{id}.",
     "GET",
     "/v1/tasks/{id}",
     true,
     {{"task_id", ARG_PATH, ARG_STRING, 0, true, "The task (task_...)."}},
     S_TASK},
    {"list_tasks",
     "List tasks",
     "List tasks, newest first, optionally of one employee, status or priority. GET /v1/tasks.",
     "GET",
     "/v1/tasks",
     true,
     {{"employee_id", ARG_QUERY, ARG_STRING, 0, false, "Only this employee's tasks."},
      {"status", ARG_QUERY, ARG_STRING, 0, false, "Only this status."},
      {"priority", ARG_QUERY, ARG_STRING, 0, false, "Only this priority."},
      {"limit", ARG_QUERY, ARG_INTEGER, 0, false, "Page size."},
      {"before", ARG_QUERY, ARG_STRING, 0, false, "The next_cursor of the previous page."}},
     S_LIST("tasks")},
    {"run_workflow",
     "Run a workflow",
     "Queue a run of a workflow with an input (its {{trigger.*}} data) and return the run; "
     "dry_run renders the steps without running them. POST /v1/workflows/{id}/run.",
     "POST",
     "/v1/workflows/{id}/run",
     false,
     {{"workflow_id", ARG_PATH, ARG_STRING, 0, true, "The workflow (wf_...)."},
      {"input", ARG_BODY, ARG_STRING, 0, false, "The run's trigger data, an object."},
      {"dry_run", ARG_BODY, ARG_STRING, 0, false,
       "true: store and call nothing, answer each step as it would run."}},
     "{\"type\":\"object\",\"properties\":{\"id\":" S_ID ",\"workflow_id\":" S_ID
     ",\"status\":" S_ID ",\"dry_run\":{\"type\":\"boolean\"},\"steps\":{\"type\":\"array\","
     "\"items\":{\"type\":\"object\"}}},\"required\":[\"steps\"]}"},
    {"get_workflow_run",
     "Get a workflow run",
     "Read a run of a workflow: its status and each step's output. "
     "GET /v1/workflows/{id}/runs/{run_id}.",
     "GET",
     "/v1/workflows/{id}/runs/{run_id}",
     true,
     {{"workflow_id", ARG_PATH, ARG_STRING, 0, true, "The workflow (wf_...)."},
      {"run_id", ARG_PATH, ARG_STRING, 1, true, "The run (run_...)."}},
     S_RUN},
};

#define NTOOLS (sizeof(tools) / sizeof(tools[0]))
#define PATH_ARG_MAX 200 /* characters of an id in a path parameter */

/* The route 'tool' mirrors (the table is checked by the unit test: never NULL). */
static const struct route *tool_route(const struct api_mcp_tool *t)
{
    for (size_t i = 0; i < api_nroutes; i++) {
        if (strcmp(api_routes[i].method, t->method) == 0 &&
            strcmp(api_routes[i].pattern, t->pattern) == 0)
            return &api_routes[i];
    }
    return NULL;
}

/* The REST binding row of body argument 'name' of 't', or NULL. */
static const struct jb_field *body_field(const struct api_mcp_tool *t, const char *name)
{
    const struct route *rt = tool_route(t);
    for (size_t i = 0; rt && rt->body && i < rt->body->n; i++) {
        if (strcmp(rt->body->fields[i].name, name) == 0)
            return &rt->body->fields[i];
    }
    return NULL;
}

static bool arg_required(const struct api_mcp_tool *t, const struct tool_arg *a)
{
    const struct jb_field *f;
    if (a->place != ARG_BODY)
        return a->required;
    f = body_field(t, a->name);
    return f && (f->flags & JB_REQUIRED);
}

/* The tool named 'name', or NULL. */
const struct api_mcp_tool *api_mcp_tool_find(const char *name)
{
    for (size_t i = 0; i < NTOOLS; i++) {
        if (strcmp(tools[i].name, name) == 0)
            return &tools[i];
    }
    return NULL;
}

/* The i-th tool, or NULL past the end. */
const struct api_mcp_tool *api_mcp_tool_at(size_t i)
{
    return i < NTOOLS ? &tools[i] : NULL;
}

/* The name of 't'. */
const char *api_mcp_tool_name(const struct api_mcp_tool *t)
{
    return t->name;
}

/* The route 't' mirrors, or NULL when the table names a route that does not exist (a bug the
 * unit test catches). */
const struct route *api_mcp_tool_route(const struct api_mcp_tool *t)
{
    return tool_route(t);
}

/* ---- Schemas ---- */

/* The query parameter row of argument 'name' of 't', or NULL. */
static const struct router_qparam *query_param(const struct api_mcp_tool *t, const char *name)
{
    const struct route *rt = tool_route(t);
    for (size_t i = 0; rt && rt->query && rt->query[i].name; i++) {
        if (strcmp(rt->query[i].name, name) == 0)
            return &rt->query[i];
    }
    return NULL;
}

/* The JSON Schema of argument 'a' of 't'. */
static json_t *arg_schema(const struct api_mcp_tool *t, const struct tool_arg *a)
{
    const struct jb_field *f = a->place == ARG_BODY ? body_field(t, a->name) : NULL;
    const struct router_qparam *q = a->place == ARG_QUERY ? query_param(t, a->name) : NULL;
    json_t *o;
    /* the REST route's own rules: the same schemas as the API document's */
    if (f) {
        o = api_member_schema(tool_route(t)->body, f);
    } else if (q) {
        o = api_query_schema(q);
    } else if (a->type == ARG_STRINGS) {
        o = json_pack("{s:s,s:{s:s}}", "type", "array", "items", "type", "string");
    } else {
        o = json_pack("{s:s}", "type", a->type == ARG_INTEGER ? "integer" : "string");
        if (a->place == ARG_PATH) {
            json_object_set_new(o, "minLength", json_integer(1));
            json_object_set_new(o, "maxLength", json_integer(PATH_ARG_MAX));
        }
    }
    json_object_set_new(o, "description", json_string(a->desc));
    return o;
}

/* The tools/list entry of 't' (a new object). */
static json_t *tool_json(const struct api_mcp_tool *t)
{
    json_t *props = json_object(), *req = json_array(), *in, *o, *out;
    for (size_t i = 0; i < TOOL_MAX_ARGS && t->args[i].name; i++) {
        json_object_set_new(props, t->args[i].name, arg_schema(t, &t->args[i]));
        if (arg_required(t, &t->args[i]))
            json_array_append_new(req, json_string(t->args[i].name));
    }
    in = json_pack("{s:s,s:o,s:o,s:b}", "type", "object", "properties", props, "required", req,
                   "additionalProperties", 0);
    out = json_loads(t->output, 0, NULL);
    o = json_pack("{s:s,s:s,s:s,s:o}", "name", t->name, "title", t->title, "description", t->desc,
                  "inputSchema", in);
    if (out)
        json_object_set_new(o, "outputSchema", out);
    else
        log_error("mcp: the output schema of %s does not parse", t->name);
    json_object_set_new(o, "annotations",
                        json_pack("{s:b,s:b,s:b,s:b}", "readOnlyHint", t->read_only,
                                  "destructiveHint", 0, "idempotentHint", t->read_only,
                                  "openWorldHint", 0));
    return o;
}

/* ---- Binding arguments (pure) ---- */

static const struct tool_arg *find_arg(const struct api_mcp_tool *t, const char *name)
{
    for (size_t i = 0; i < TOOL_MAX_ARGS && t->args[i].name; i++) {
        if (strcmp(t->args[i].name, name) == 0)
            return &t->args[i];
    }
    return NULL;
}

/* Check 'v', the value of argument 'a', against its type (not ARG_BODY). */
static int check_type(const struct tool_arg *a, json_t *v, struct err *e)
{
    size_t i;
    json_t *item;
    switch (a->type) {
    case ARG_STRING:
        if (!json_is_string(v))
            return err_set(e, ERR_INVALID, "invalid_request", a->name,
                           "Invalid %s: must be a string.", a->name);
        if (a->place == ARG_PATH &&
            (json_string_length(v) < 1 ||
             jb_utf8_len(json_string_value(v), json_string_length(v)) > PATH_ARG_MAX))
            return err_set(e, ERR_INVALID, "invalid_request", a->name,
                           "Invalid %s: must be 1 to %d characters.", a->name, PATH_ARG_MAX);
        return 0;
    case ARG_INTEGER:
        if (!json_is_integer(v))
            return err_set(e, ERR_INVALID, "invalid_request", a->name,
                           "Invalid %s: must be an integer.", a->name);
        return 0;
    case ARG_STRINGS:
        if (!json_is_array(v))
            return err_set(e, ERR_INVALID, "invalid_request", a->name,
                           "Invalid %s: must be an array of strings.", a->name);
        json_array_foreach(v, i, item)
        {
            if (!json_is_string(item))
                return err_set(e, ERR_INVALID, "invalid_request", a->name,
                               "Invalid %s[%zu]: must be a string.", a->name, i);
        }
        return 0;
    }
    return 0;
}

/* Put the value 'v' of argument 'a' where the REST call takes it. */
static void place_arg(const struct tool_arg *a, json_t *v, struct arena *ar,
                      struct api_mcp_rest *out)
{
    json_t *filters;
    switch (a->place) {
    case ARG_BODY:
        json_object_set(out->body, a->name, v);
        break;
    case ARG_FILTER:
        filters = json_object_get(out->body, "filters");
        if (!filters) {
            filters = json_object();
            json_object_set_new(out->body, "filters", filters);
        }
        json_object_set(filters, a->name, v);
        break;
    case ARG_PATH:
        out->params[a->index] = arena_strdup(ar, json_string_value(v));
        break;
    case ARG_QUERY:
        out->qname[out->nquery] = a->name;
        out->qvalue[out->nquery++] =
            json_is_integer(v) ? arena_printf(ar, "%lld", (long long)json_integer_value(v))
                               : arena_strdup(ar, json_string_value(v));
        break;
    }
}

/*
 * Bind the arguments 'args' (an object, or NULL for none) of a call of 't' into the REST call
 * it mirrors: out->body (a new object for a POST route, owned by the caller, else NULL), the
 * path parameters and the query parameters (strings in 'a'). Pure. An unknown argument, a
 * missing required one, or one of the wrong type (path, query and filter arguments; body
 * members are checked by the REST binding when the handler runs) is ERR_INVALID with
 * "invalid_request" and 'e' naming the argument; 'out' then holds nothing.
 */
int api_mcp_args_bind(const struct api_mcp_tool *t, json_t *args, struct arena *a,
                      struct api_mcp_rest *out, struct err *e)
{
    const char *key;
    json_t *v;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (args && !json_is_object(args))
        return err_set(e, ERR_INVALID, "invalid_request", "arguments",
                       "Invalid arguments: must be an object.");
    json_object_foreach(args, key, v)
    {
        if (!find_arg(t, key))
            return err_set(e, ERR_INVALID, "invalid_request", key,
                           "Unknown argument \"%.80s\": tool %s does not take it.", key, t->name);
    }
    if (strcmp(t->method, "POST") == 0)
        out->body = json_object();
    for (size_t i = 0; i < TOOL_MAX_ARGS && t->args[i].name; i++) {
        const struct tool_arg *ta = &t->args[i];
        v = args ? json_object_get(args, ta->name) : NULL;
        if (!v) {
            if (arg_required(t, ta)) {
                rc = err_set(e, ERR_INVALID, "invalid_request", ta->name,
                             "Missing required argument %s.", ta->name);
                break;
            }
            continue;
        }
        if (ta->place != ARG_BODY) {
            rc = check_type(ta, v, e);
            if (rc)
                break;
        }
        place_arg(ta, v, a, out);
    }
    if (rc) {
        json_decref(out->body);
        memset(out, 0, sizeof(*out));
    }
    return rc;
}

/* ---- JSON-RPC messages (pure) ---- */

static int invalid(struct api_mcp_msg *m, int code, struct err *e, const char *what)
{
    m->code = code;
    return err_set(e, ERR_INVALID, "invalid_request", NULL, "%s", what);
}

/* A JSON-RPC id as MCP allows it: a string or an integer (never null). */
static bool id_ok(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

/*
 * Parse and check one POST body of the Streamable HTTP transport ('len' bytes of 'buf'): one
 * JSON-RPC 2.0 request, notification or response, or a batch (a non-empty array, reported as
 * such and not looked into). Pure. On success '*out' says which (see api.h); on failure it is
 * ERR_INVALID with out->code -32700 (not JSON) or -32600 (not a JSON-RPC 2.0 message), the
 * reason in e->msg, and out->id set when the message carried a usable id. Either way the caller
 * releases out->root (json_decref; NULL when the text did not parse).
 */
int api_mcp_parse(const char *buf, size_t len, struct api_mcp_msg *out, struct err *e)
{
    json_error_t je;
    json_t *v, *jsonrpc, *method, *id, *params;
    bool has_result, has_error;

    memset(out, 0, sizeof(*out));
    v = json_loadb(buf, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        out->code = API_MCP_PARSE_ERROR;
        return err_set(e, ERR_INVALID, "invalid_request", NULL,
                       "Parse error: the body is not JSON (%.100s, line %d, column %d).", je.text,
                       je.line, je.column);
    }
    out->root = v;
    if (json_is_array(v)) {
        if (json_array_size(v) == 0)
            return invalid(out, API_MCP_INVALID_REQUEST, e, "Invalid Request: an empty batch.");
        out->kind = API_MCP_BATCH;
        return 0;
    }
    if (!json_is_object(v))
        return invalid(out, API_MCP_INVALID_REQUEST, e,
                       "Invalid Request: a message must be a JSON object.");
    id = json_object_get(v, "id");
    if (id_ok(id))
        out->id = id;
    jsonrpc = json_object_get(v, "jsonrpc");
    if (!json_is_string(jsonrpc) || strcmp(json_string_value(jsonrpc), "2.0") != 0)
        return invalid(out, API_MCP_INVALID_REQUEST, e,
                       "Invalid Request: \"jsonrpc\" must be \"2.0\".");
    if (id && !id_ok(id))
        return invalid(out, API_MCP_INVALID_REQUEST, e,
                       "Invalid Request: \"id\" must be a string or an integer.");
    method = json_object_get(v, "method");
    if (!method) {
        has_result = json_object_get(v, "result") != NULL;
        has_error = json_object_get(v, "error") != NULL;
        if (!id || has_result == has_error)
            return invalid(out, API_MCP_INVALID_REQUEST, e,
                           "Invalid Request: \"method\" is missing (a response needs \"id\" and "
                           "one of \"result\" or \"error\").");
        if (has_error && !json_is_object(json_object_get(v, "error")))
            return invalid(out, API_MCP_INVALID_REQUEST, e,
                           "Invalid Request: a response's \"error\" must be an object.");
        out->kind = API_MCP_RESPONSE;
        return 0;
    }
    if (!json_is_string(method) || json_string_length(method) == 0)
        return invalid(out, API_MCP_INVALID_REQUEST, e,
                       "Invalid Request: \"method\" must be a non-empty string.");
    params = json_object_get(v, "params");
    if (params && !json_is_object(params))
        return invalid(out, API_MCP_INVALID_REQUEST, e,
                       "Invalid Request: \"params\" must be an object.");
    out->method = json_string_value(method);
    out->params = params;
    out->kind = id ? API_MCP_REQUEST : API_MCP_NOTIFICATION;
    return 0;
}

/* The protocol version 'v' as we speak it, or NULL when it is not one of ours. */
const char *api_mcp_version_find(const char *v)
{
    for (size_t i = 0; api_mcp_versions[i]; i++) {
        if (strcmp(api_mcp_versions[i], v) == 0)
            return api_mcp_versions[i];
    }
    return NULL;
}

/* ---- Answers ---- */

/* Answer 'status' with the JSON-RPC response to 'id' (JSON text; NULL: null) whose member
 * 'key' ("result" or "error") is the JSON text 'raw'. */
static void answer(struct router_req *r, unsigned status, const char *id, const char *key,
                   const char *raw)
{
    struct buf b;
    struct jw w;
    size_t len;
    char *s;

    buf_init(&b, MCP_RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "jsonrpc");
    jw_str(&w, "2.0");
    jw_key(&w, "id");
    jw_raw(&w, id, "null");
    jw_key(&w, key);
    jw_raw(&w, raw, "null");
    jw_obj_end(&w);
    if (jw_finish(&w)) {
        /* only a REST answer near the cap gets here: say so rather than cut it */
        buf_reset(&b);
        buf_appendf(&b,
                    "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32603,\"message\":"
                    "\"Internal error: the answer is too large.\"}}",
                    id ? id : "null");
    }
    s = buf_take(&b, &len);
    router_respond_raw(r, status, "application/json", s, len);
}

static void answer_error(struct router_req *r, unsigned status, const char *id, int code,
                         const char *msg)
{
    struct buf b;
    struct jw w;
    buf_init(&b, 4096);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "code");
    jw_int(&w, code);
    jw_key(&w, "message");
    jw_str(&w, msg);
    jw_obj_end(&w);
    jw_finish(&w);
    answer(r, status, id, "error", buf_ptr(&b));
    buf_cleanup(&b);
}

/* JSON text of the id 'id' in the request's arena, or NULL for none. */
static const char *id_text(struct router_req *r, const json_t *id)
{
    char *s;
    const char *out;
    if (!id)
        return NULL;
    s = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
    out = s ? arena_strdup(r->arena, s) : NULL;
    free(s);
    return out;
}

/* ---- Methods ---- */

static void do_initialize(struct router_req *r, const char *id, json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    const char *v;
    json_t *res;
    char *s;

    if (!asked) {
        answer_error(r, 200, id, API_MCP_INVALID_PARAMS,
                     "Invalid params: \"protocolVersion\" must be a string.");
        return;
    }
    v = api_mcp_version_find(asked);
    res =
        json_pack("{s:s,s:{s:{}},s:{s:s,s:s,s:s},s:s}", "protocolVersion",
                  v ? v : api_mcp_versions[0], "capabilities", "tools", "serverInfo", "name",
                  "workforce", "title", "Workforce", "version", MCP_SERVER_VERSION, "instructions",
                  "Tools of a Workforce organization's AI employees: list them, ask one, "
                  "search the knowledge base, create and read tasks, run workflows. Each tool "
                  "needs the API key's scope for the REST call it mirrors.");
    s = json_dumps(res, JSON_COMPACT);
    json_decref(res);
    answer(r, 200, id, "result", s);
    free(s);
}

static void do_list(struct router_req *r, const char *id)
{
    json_t *list = json_array(), *res;
    char *s;
    for (size_t i = 0; i < NTOOLS; i++) {
        const struct route *rt = tool_route(&tools[i]);
        if (rt && auth_scope_allows(r->scopes, rt->scope) && !router_role_refused(r, rt, NULL))
            json_array_append_new(list, tool_json(&tools[i]));
    }
    res = json_pack("{s:o}", "tools", list);
    s = json_dumps(res, JSON_COMPACT);
    json_decref(res);
    answer(r, 200, id, "result", s);
    free(s);
}

/* What a tool call's answer needs when the handler's outcome comes (r->wrap_state). */
struct call {
    const char *id; /* JSON text */
    const struct api_mcp_tool *tool;
};

/* The name of the 'i'-th {parameter} of 'pattern' into 'out'; false when there is none. */
static bool path_param_name(const char *pattern, unsigned i, char *out, size_t n)
{
    const char *p = pattern;
    for (;;) {
        const char *open = strchr(p, '{'), *close = open ? strchr(open, '}') : NULL;
        if (!close)
            return false;
        if (i-- == 0) {
            snprintf(out, n, "%.*s", (int)(close - open - 1), open + 1);
            return true;
        }
        p = close + 1;
    }
}

/* The argument of 't' that REST error param 'param' names ("id" of /v1/tasks/{id} is
 * task_id, "filters.tags" is tags), or NULL when the param is the argument's own name. */
static const char *arg_of_param(const struct api_mcp_tool *t, const char *param)
{
    char name[64];
    for (size_t i = 0; i < TOOL_MAX_ARGS && t->args[i].name; i++) {
        const struct tool_arg *a = &t->args[i];
        if (a->place == ARG_FILTER && strncmp(param, "filters.", 8) == 0 &&
            strcmp(param + 8, a->name) == 0)
            return a->name;
        if (a->place == ARG_PATH && path_param_name(t->pattern, a->index, name, sizeof(name)) &&
            strcmp(name, param) == 0)
            return a->name;
    }
    return NULL;
}

/*
 * r->answer_wrap of a tool call: shape the outcome of the REST handler ('rc' 0: r->resp or a
 * raw JSON response; else the error 'e') into the JSON-RPC response carrying the tool result.
 * The REST error body is rendered by api_error_respond(), the one place that writes them.
 */
static void wrap_result(struct router_req *r, int rc, const struct err *e)
{
    const struct call *c = r->wrap_state;
    struct err fallback;
    const char *body;
    char *text;
    size_t len;
    struct buf b;
    struct jw w;

    if (rc) {
        const char *arg;
        if (!e || !e->code) {
            err_set(&fallback, rc, "internal_error", NULL, "Internal error.");
        } else {
            /* the REST call's names of path parameters and filters are the tool's arguments */
            fallback = *e;
            arg = c->tool ? arg_of_param(c->tool, e->param) : NULL;
            if (arg)
                snprintf(fallback.param, sizeof(fallback.param), "%s", arg);
        }
        e = &fallback;
        if (r->resp) {
            json_decref(r->resp);
            r->resp = NULL;
        }
        api_error_respond(r, e);
    } else if (r->resp) {
        char *s = jo_dump(r->resp, &len);
        json_decref(r->resp);
        r->resp = NULL;
        http_resp_set(r->http, 200, "application/json", s, len);
    }
    body = http_resp_peek(r->http, &len, NULL);
    text = arena_strndup(r->arena, body ? body : "{}", body ? len : 2);
    buf_init(&b, MCP_RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "content");
    jw_arr(&w);
    jw_obj(&w);
    jw_key(&w, "type");
    jw_str(&w, "text");
    jw_key(&w, "text");
    jw_str(&w, text);
    jw_obj_end(&w);
    jw_arr_end(&w);
    if (!rc) {
        jw_key(&w, "structuredContent");
        jw_raw(&w, text, "{}");
    }
    jw_key(&w, "isError");
    jw_bool(&w, rc != 0);
    jw_obj_end(&w);
    if (jw_finish(&w))
        buf_reset(&b);
    answer(r, 200, c->id, "result", buf_len(&b) ? buf_ptr(&b) : NULL);
    buf_cleanup(&b);
}

/* Answer a tool error built here (limits, scope, arguments), through the same shaping. */
static void tool_error(struct router_req *r, const struct err *e)
{
    wrap_result(r, (int)e->kind, e);
}

static void do_call(struct router_req *r, const char *id, json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    json_t *args = json_object_get(params, "arguments");
    const struct api_mcp_tool *t;
    const struct route *rt;
    struct api_mcp_rest rest;
    struct call *c;
    struct err te;
    int rc;

    if (!name) {
        answer_error(r, 200, id, API_MCP_INVALID_PARAMS,
                     "Invalid params: \"name\" must be a string (the tool to call).");
        return;
    }
    t = api_mcp_tool_find(name);
    rt = t ? tool_route(t) : NULL;
    if (!rt) {
        char msg[200];
        snprintf(msg, sizeof(msg), "Unknown tool: %.80s.", name);
        answer_error(r, 200, id, API_MCP_INVALID_PARAMS, msg);
        return;
    }
    if (args && !json_is_object(args) && !json_is_null(args)) {
        answer_error(r, 200, id, API_MCP_INVALID_PARAMS,
                     "Invalid params: \"arguments\" must be an object.");
        return;
    }
    c = arena_calloc(r->arena, sizeof(*c));
    c->id = id;
    c->tool = t;
    r->wrap_state = c;
    r->answer_wrap = wrap_result;
    err_clear(&te);
    /* As the REST call: limits, then scope, then the arguments. */
    if (r->limited) {
        tool_error(r, &r->limit_err);
        return;
    }
    if (!auth_scope_allows(r->scopes, rt->scope)) {
        err_set(&te, ERR_FORBIDDEN, "permission_denied", NULL,
                "This API key lacks the scope %s, which tool %s needs.", auth_scope_name(rt->scope),
                t->name);
        tool_error(r, &te);
        return;
    }
    if (router_role_refused(r, rt, &te)) {
        tool_error(r, &te);
        return;
    }
    rc = api_mcp_args_bind(t, json_is_object(args) ? args : NULL, r->arena, &rest, &te);
    if (rc) {
        tool_error(r, &te);
        return;
    }
    /* This request becomes the REST call: its body, path and query parameters. */
    if (r->body)
        json_decref(r->body);
    r->body = rest.body; /* released with the request */
    memcpy(r->params, rest.params, sizeof(r->params));
    memcpy(r->qname, rest.qname, sizeof(r->qname));
    memcpy(r->qvalue, rest.qvalue, sizeof(r->qvalue));
    r->nquery = rest.nquery;
    r->handling = rt;
    /* the tool's change writes the route's audit entry, as the REST call would */
    router_audit_prepare(r, rt);
    if (r->audit.action)
        store_audit_arm(r->store, &r->audit);
    rc = rt->handler(r, &te);
    store_audit_arm(r->store, NULL);
    if (rc)
        wrap_result(r, rc, &te);
    else if (!r->async)
        wrap_result(r, 0, NULL);
    /* else: router_async_finish() calls wrap_result() when the answer is ready */
}

/* ---- POST /v1/mcp ---- */

/* POST /v1/mcp: one JSON-RPC message of the Streamable HTTP transport (see the top). */
int api_mcp(struct router_req *r, struct err *e)
{
    const char *pv = http_req_header(r->http, "MCP-Protocol-Version");
    struct api_mcp_msg m;
    struct err pe;
    const char *body, *id;
    size_t len;
    int rc;

    if (pv && !api_mcp_version_find(pv)) {
        char msg[200];
        snprintf(msg, sizeof(msg),
                 "Bad Request: unsupported MCP-Protocol-Version %.40s (supported: 2025-11-25, "
                 "2025-06-18, 2025-03-26).",
                 pv);
        answer_error(r, 400, NULL, API_MCP_INVALID_REQUEST, msg);
        return 0;
    }
    body = http_req_body(r->http, &len);
    err_clear(&pe);
    rc = api_mcp_parse(body ? body : "", body ? len : 0, &m, &pe);
    id = id_text(r, m.id);
    if (!rc && m.kind == API_MCP_BATCH)
        rc = invalid(&m, API_MCP_INVALID_REQUEST, &pe,
                     "Invalid Request: JSON-RPC batches are not supported; send one message per "
                     "request.");
    if (rc) {
        answer_error(r, 400, id, m.code, pe.msg);
        json_decref(m.root);
        return 0;
    }
    if (r->limited && !(m.kind == API_MCP_REQUEST && strcmp(m.method, "tools/call") == 0)) {
        /* only a tool call answers the limits in its result: anything else is a 429 */
        *e = r->limit_err;
        json_decref(m.root);
        return (int)e->kind;
    }
    if (m.kind != API_MCP_REQUEST) {
        router_respond_raw(r, 202, NULL, NULL, 0); /* notifications and responses */
    } else if (strcmp(m.method, "initialize") == 0) {
        do_initialize(r, id, m.params);
    } else if (strcmp(m.method, "ping") == 0) {
        answer(r, 200, id, "result", "{}");
    } else if (strcmp(m.method, "tools/list") == 0) {
        do_list(r, id);
    } else if (strcmp(m.method, "tools/call") == 0) {
        do_call(r, id, m.params);
    } else {
        char msg[200];
        snprintf(msg, sizeof(msg), "Method not found: %.80s.", m.method);
        answer_error(r, 200, id, API_MCP_METHOD_NOT_FOUND, msg);
    }
    json_decref(m.root); /* the tool call's body holds its own references */
    return 0;
}
