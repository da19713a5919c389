/* SPDX-License-Identifier: MIT */
/*
 * mcp_tools.c: the tools of an organization's MCP servers as definitions a turn can offer
 * (contract §19), read from the servers' last listings: every turn reads them here, a chat
 * turn (turn/) as a run's (agent/).
 */
#include "act.h"

#include "../auth/auth.h"
#include "../json/json.h"

#include <stdlib.h>
#include <string.h>

/* Whether a rule of 'r' can name a tool of an MCP server ("mcp.<server>.<tool>"). */
static bool rules_reach_mcp(const struct tools_rules *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const char *n = r->v[i].name;
        size_t len = strlen(n);
        if (strncmp(n, "mcp.", 4) == 0)
            return true;
        if (len && n[len - 1] == '*' && strncmp(n, "mcp.", len - 1) == 0)
            return true; /* "*", "m*", "mcp*" */
    }
    return false;
}

/* See act.h. */
void act_mcp_tools(struct store *s, const struct store_tenant *t, const struct tools_rules *rules,
                   struct arena *a, struct tools_def **out, size_t *n)
{
    struct store_mcp_server *servers = NULL;
    size_t ns = 0, cap = 0;
    json_t *read = json_string("read");

    *out = NULL;
    *n = 0;
    if (!rules_reach_mcp(rules) || store_mcp_servers_enabled(s, t, a, &servers, &ns)) {
        json_decref(read);
        return;
    }
    for (size_t i = 0; i < ns; i++) {
        json_t *tools = servers[i].status && strcmp(servers[i].status, "ok") == 0
                            ? json_loads(servers[i].tools ? servers[i].tools : "[]", 0, NULL)
                            : NULL;
        size_t k;
        json_t *tool;
        json_array_foreach(tools, k, tool)
        {
            const char *name = json_string_value(json_object_get(tool, "name"));
            const char *full = arena_printf(a, "mcp.%s.%s", servers[i].name, name ? name : "");
            char *schema = json_dumps(json_object_get(tool, "input_schema"), JSON_COMPACT);
            struct tools_def *d;
            if (name && tools_name_ok(full, strlen(full), false)) {
                if (*n == cap) {
                    struct tools_def *v = arena_alloc(a, (cap ? 2 * cap : 16) * sizeof(*v));
                    if (*n)
                        memcpy(v, *out, *n * sizeof(*v));
                    *out = v;
                    cap = cap ? 2 * cap : 16;
                }
                d = &(*out)[(*n)++];
                memset(d, 0, sizeof(*d));
                d->name = full;
                d->source = TOOLS_MCP;
                d->effect =
                    json_equal(json_object_get(tool, "effect"), read) ? TOOLS_READ : TOOLS_WRITE;
                d->provider = servers[i].name;
                d->description =
                    arena_strdup(a, json_is_string(json_object_get(tool, "description"))
                                        ? json_string_value(json_object_get(tool, "description"))
                                        : "");
                d->scope = AUTH_SCOPE_TOOLS;
                d->input_schema = arena_strdup(a, schema ? schema : "{\"type\":\"object\"}");
            }
            free(schema);
        }
        json_decref(tools);
    }
    json_decref(read);
}
