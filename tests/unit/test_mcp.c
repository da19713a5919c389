/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of api/mcp.c's pure parts: api_mcp_parse() (which JSON-RPC 2.0 messages are
 * requests, notifications, responses or batches, and which are -32700 or -32600, with the id
 * kept when it is usable), the protocol versions, the tool table (each tool mirrors a route
 * that exists) and api_mcp_args_bind() (arguments into the REST body, filters, path and query,
 * and each refusal naming its argument). Data-driven: one row per message.
 */
#include "../../src/api/api.h"
#include "t.h"

#include <string.h>

enum { OK_REQ, OK_NOTE, OK_RESP, OK_BATCH };

static const struct {
    const char *text;
    int want;       /* OK_* or the JSON-RPC error code */
    const char *id; /* the id kept, as JSON text; NULL: none */
    const char *method;
} msgs[] = {
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", OK_REQ, "1", "ping"},
    {"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{}}", OK_REQ, "\"a\"",
     "tools/call"},
    {"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", OK_NOTE, NULL,
     "notifications/initialized"},
    {"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}", OK_RESP, "5", NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":1,\"message\":\"x\"}}", OK_RESP, "5", NULL},
    {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", OK_BATCH, NULL, NULL},
    {"", API_MCP_PARSE_ERROR, NULL, NULL},
    {"{", API_MCP_PARSE_ERROR, NULL, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", API_MCP_PARSE_ERROR, NULL,
     NULL},
    {"[]", API_MCP_INVALID_REQUEST, NULL, NULL},
    {"5", API_MCP_INVALID_REQUEST, NULL, NULL},
    {"null", API_MCP_INVALID_REQUEST, NULL, NULL},
    {"{\"id\":1,\"method\":\"ping\"}", API_MCP_INVALID_REQUEST, "1", NULL},
    {"{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}", API_MCP_INVALID_REQUEST, "1", NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", API_MCP_INVALID_REQUEST, NULL, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", API_MCP_INVALID_REQUEST, NULL, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", API_MCP_INVALID_REQUEST, NULL, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":7}", API_MCP_INVALID_REQUEST, "2", NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\"}", API_MCP_INVALID_REQUEST, "2", NULL},
    /* jansson refuses a NUL in a string: not JSON we take */
    {"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"a\\u0000b\"}", API_MCP_PARSE_ERROR, NULL, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":[]}", API_MCP_INVALID_REQUEST,
     "3", NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":4}", API_MCP_INVALID_REQUEST, "4", NULL},
    {"{\"jsonrpc\":\"2.0\",\"result\":{}}", API_MCP_INVALID_REQUEST, NULL, NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":1,\"error\":{}}", API_MCP_INVALID_REQUEST, "4",
     NULL},
    {"{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":\"bad\"}", API_MCP_INVALID_REQUEST, "4", NULL},
};

static const int kinds[] = {
    [OK_REQ] = API_MCP_REQUEST,
    [OK_NOTE] = API_MCP_NOTIFICATION,
    [OK_RESP] = API_MCP_RESPONSE,
    [OK_BATCH] = API_MCP_BATCH,
};

static void test_parse(void)
{
    for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
        struct api_mcp_msg m;
        struct err e;
        char *id;
        int rc;
        err_clear(&e);
        rc = api_mcp_parse(msgs[i].text, strlen(msgs[i].text), &m, &e);
        subtest(msgs[i].text)
        {
            if (msgs[i].want >= 0) {
                is_int(rc, 0, "accepted");
                is_int(m.kind, kinds[msgs[i].want], "kind");
            } else {
                is_int(rc, ERR_INVALID, "refused");
                is_int(m.code, msgs[i].want, "JSON-RPC code");
                ok(e.msg[0] != '\0', "a message says why");
            }
            id = m.id ? json_dumps(m.id, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
            if (msgs[i].id)
                is_str(id, msgs[i].id, "id");
            else
                ok(id == NULL, "no id");
            free(id);
            if (msgs[i].method)
                is_str(m.method, msgs[i].method, "method");
        }
        json_decref(m.root);
    }
}

static void test_versions(void)
{
    subtest("versions")
    {
        is_str(api_mcp_versions[0], "2025-11-25", "newest first");
        is_str(api_mcp_version_find("2025-06-18"), "2025-06-18", "2025-06-18");
        is_str(api_mcp_version_find("2025-03-26"), "2025-03-26", "2025-03-26");
        ok(api_mcp_version_find("2024-11-05") == NULL, "2024-11-05 is not ours");
        ok(api_mcp_version_find("") == NULL, "empty");
    }
}

static void test_table(void)
{
    const struct api_mcp_tool *t;
    size_t n = 0;
    for (size_t i = 0; (t = api_mcp_tool_at(i)) != NULL; i++) {
        const struct route *rt = api_mcp_tool_route(t);
        n++;
        subtest(api_mcp_tool_name(t))
        {
            ok(rt != NULL, "mirrors a route of the table");
            ok(rt && rt->scope != 0, "which needs a scope");
            ok(api_mcp_tool_find(api_mcp_tool_name(t)) == t, "found by name");
        }
    }
    is_int(n, 8, "eight tools");
    ok(api_mcp_tool_find("nope") == NULL, "no such tool");
}

/* Bind the JSON text 'args' for tool 'name'. */
static int bind(const char *name, const char *args, struct arena *a, struct api_mcp_rest *out,
                struct err *e)
{
    json_t *v = args ? json_loads(args, JSON_DECODE_ANY, NULL) : NULL;
    int rc;
    err_clear(e);
    rc = api_mcp_args_bind(api_mcp_tool_find(name), v, a, out, e);
    json_decref(v);
    return rc;
}

static void test_bind(void)
{
    struct arena a;
    struct api_mcp_rest r;
    struct err e;
    char *s;
    arena_init(&a);

    subtest("path")
    {
        is_int(
            bind("get_workflow_run", "{\"workflow_id\":\"wf_1\",\"run_id\":\"run_2\"}", &a, &r, &e),
            0, "bound");
        is_str(r.params[0], "wf_1", "{id}");
        is_str(r.params[1], "run_2", "{run_id}");
        ok(r.body == NULL, "a GET has no body");
    }
    subtest("query")
    {
        is_int(bind("list_tasks", "{\"status\":\"pending\",\"limit\":7}", &a, &r, &e), 0, "bound");
        is_int(r.nquery, 2, "two parameters");
        is_str(r.qname[0], "status", "status");
        is_str(r.qvalue[0], "pending", "its value");
        is_str(r.qname[1], "limit", "limit");
        is_str(r.qvalue[1], "7", "an integer as text");
    }
    subtest("body and filters")
    {
        is_int(bind("search_knowledge", "{\"query\":\"q\",\"tags\":[\"a\"],\"employee_id\":\"e\"}",
                    &a, &r, &e),
               0, "bound");
        s = json_dumps(r.body, JSON_COMPACT | JSON_SORT_KEYS);
        is_str(s, "{\"filters\":{\"employee_id\":\"e\",\"tags\":[\"a\"]},\"query\":\"q\"}",
               "the REST body");
        free(s);
        json_decref(r.body);
        is_int(bind("run_workflow", "{\"workflow_id\":\"wf_1\"}", &a, &r, &e), 0, "no body args");
        ok(json_is_object(r.body) && json_object_size(r.body) == 0, "a POST gets {}");
        is_str(r.params[0], "wf_1", "{id}");
        json_decref(r.body);
        is_int(bind("list_employees", NULL, &a, &r, &e), 0, "no arguments at all");
        is_int(bind("create_task", "{\"employee_id\":\"e\",\"title\":5}", &a, &r, &e), 0,
               "body member types are the REST binding's to check");
        json_decref(r.body);
    }

    static const struct {
        const char *tool, *args, *param;
    } bad[] = {
        {"get_task", "{}", "task_id"},
        {"get_task", "{\"task_id\":5}", "task_id"},
        {"get_task", "{\"task_id\":\"\"}", "task_id"},
        {"get_task", "{\"task_id\":\"t\",\"extra\":1}", "extra"},
        {"create_task", "{\"title\":\"t\"}", "employee_id"},
        {"ask_employee", "{\"employee_id\":\"e\"}", "message"},
        {"ask_employee", "{\"employee_id\":\"e\",\"message\":\"m\",\"stream\":true}", "stream"},
        {"list_tasks", "{\"limit\":\"5\"}", "limit"},
        {"list_tasks", "{\"limit\":1.5}", "limit"},
        {"list_tasks", "{\"status\":null}", "status"},
        {"search_knowledge", "{\"query\":\"q\",\"tags\":\"a\"}", "tags"},
        {"search_knowledge", "{\"query\":\"q\",\"tags\":[1]}", "tags"},
        {"search_knowledge", "{\"query\":\"q\",\"employee_id\":3}", "employee_id"},
        {"list_employees", "[]", "arguments"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        subtest(bad[i].args)
        {
            is_int(bind(bad[i].tool, bad[i].args, &a, &r, &e), ERR_INVALID, "refused");
            is_str(e.code, "invalid_request", "invalid_request");
            is_str(e.param, bad[i].param, "names the argument");
            ok(r.body == NULL && r.nquery == 0, "nothing bound");
        }
    }
    arena_cleanup(&a);
}

int main(void)
{
    test_parse();
    test_versions();
    test_table();
    test_bind();
    return done_testing();
}
