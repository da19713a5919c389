/* SPDX-License-Identifier: MIT */
/*
 * tools.c: GET /v1/tools, the tools of the organization (contract §19): the built-in ones and
 * one per integration operation, from the catalog (src/tools/catalog.c), then the tools of each
 * enabled MCP server as last read (`mcp.<server>.<tool>`, src/api/mcp_servers.c), each with the
 * JSON Schema of its arguments and whether it can be called now (an integration tool is
 * available while the organization's connection to its provider is connected, an MCP tool
 * while its server's last read worked). An MCP tool whose full name is not a well-formed tool
 * name (tools_name_ok(): a space, a character beyond letters, digits, '_' and '-', more than
 * 200 bytes) is not listed: no employee rule could name it. Not paged: the list is whole.
 */
#include "api.h"

#include "../tools/tools.h"

#include <string.h>

/* Whether the tenant's connection to 'provider' is connected. */
static bool connected(struct router_req *r, const char *provider, struct err *e, int *rc)
{
    struct store_integration row;
    int got = store_integration_get(r->store, &r->tenant, provider, r->arena, &row);
    if (got == ERR_NOT_FOUND)
        return false;
    if (got) {
        *rc = err_set(e, got, "internal_error", NULL, "integration read failed");
        return false;
    }
    return strcmp(row.status, "connected") == 0;
}

/* Append the tools of the tenant's enabled MCP servers to 'list'. */
static int mcp_tools(struct router_req *r, json_t *list, struct err *e)
{
    struct store_mcp_server *servers = NULL;
    size_t n = 0;
    int rc = store_mcp_servers_enabled(r->store, &r->tenant, r->arena, &servers, &n);

    if (rc)
        return err_set(e, rc, "internal_error", NULL, "MCP server list failed");
    for (size_t i = 0; i < n; i++) {
        json_t *tools = jo_parse_or_null(servers[i].tools);
        bool available = strcmp(servers[i].status, "ok") == 0;
        size_t k;
        json_t *tool;
        json_array_foreach(tools, k, tool)
        {
            const char *name = json_string_value(json_object_get(tool, "name"));
            const char *full =
                arena_printf(r->arena, "mcp.%s.%s", servers[i].name, name ? name : "");
            json_t *t;
            if (!name || !tools_name_ok(full, strlen(full), false))
                continue;
            t = jo_object();
            jo_str(t, "name", full);
            jo_str(t, "description", json_string_value(json_object_get(tool, "description")));
            jo_str(t, "source", tools_sources[TOOLS_MCP]);
            jo_str(t, "effect", json_string_value(json_object_get(tool, "effect")));
            jo_set(t, "input_schema", json_incref(json_object_get(tool, "input_schema")));
            jo_bool(t, "available", available);
            json_array_append_new(list, t);
        }
        json_decref(tools);
    }
    return 0;
}

/* GET /v1/tools */
int api_tools_list(struct router_req *r, struct err *e)
{
    size_t n;
    const struct tools_def *defs = tools_defs(&n);
    json_t *o = jo_object(), *list = json_array();
    int rc = 0;

    for (size_t i = 0; i < n && !rc; i++) {
        const struct tools_def *d = &defs[i];
        bool available = d->source != TOOLS_INTEGRATION || connected(r, d->provider, e, &rc);
        json_t *t = jo_object();
        jo_str(t, "name", d->name);
        jo_str(t, "description", d->description);
        jo_str(t, "source", tools_sources[d->source]);
        jo_str(t, "effect", tools_effects[d->effect]);
        jo_set(t, "input_schema", tools_def_schema(d));
        jo_bool(t, "available", available);
        json_array_append_new(list, t);
    }
    if (!rc)
        rc = mcp_tools(r, list, e);
    jo_set(o, "tools", list);
    if (rc) {
        json_decref(o);
        return rc;
    }
    router_respond(r, o);
    return 0;
}
