/* SPDX-License-Identifier: MIT */
/*
 * fuzz_mcp: a POST body of /v1/mcp through api_mcp_parse() (api/mcp.c), the JSON-RPC 2.0
 * message check of the MCP server. Checked:
 *   - success: a request has a string or integer id and a non-empty method without NUL; a
 *     notification a method and no id; a response an id and exactly one of result and error;
 *     a batch is a non-empty array; params, when set, is an object;
 *   - failure: ERR_INVALID with -32700 (then nothing parsed) or -32600, and a message; an id
 *     kept for the error answer is a string or an integer.
 * When the message is a tools/call request, its arguments are also bound for each tool
 * (api_mcp_args_bind): either bound, or refused with invalid_request naming an argument
 * (found by this target: an argument named "" is refused with no param to name it).
 * Pure: no I/O; everything is released (json_decref, arena_cleanup).
 */
#include "../../src/api/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_mcp: check failed at line %d: %s\n", __LINE__, #c);              \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static bool id_ok(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

/* Bind the call's arguments for every tool: bound, or refused naming an argument. */
static void bind_all(json_t *params)
{
    json_t *args = json_object_get(params, "arguments");
    const struct api_mcp_tool *t;
    for (size_t i = 0; (t = api_mcp_tool_at(i)) != NULL; i++) {
        struct arena a;
        struct api_mcp_rest r;
        struct err e;
        int rc;
        arena_init(&a);
        err_clear(&e);
        rc = api_mcp_args_bind(t, args, &a, &r, &e);
        if (rc) {
            CHECK(rc == ERR_INVALID);
            CHECK(e.code && strcmp(e.code, "invalid_request") == 0);
            CHECK(e.msg[0] != '\0');
            /* the param names the argument; an argument named "" leaves it empty */
            CHECK(e.param[0] != '\0' || json_object_get(args, "") != NULL);
            CHECK(r.body == NULL && r.nquery == 0);
        } else {
            CHECK(args == NULL || json_is_object(args));
            CHECK(r.nquery <= ROUTER_MAX_QUERY);
            for (size_t q = 0; q < r.nquery; q++)
                CHECK(r.qname[q] && r.qvalue[q]);
            CHECK(r.body == NULL || json_is_object(r.body));
            json_decref(r.body);
        }
        arena_cleanup(&a);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct api_mcp_msg m;
    struct err e;
    int rc;

    err_clear(&e);
    rc = api_mcp_parse((const char *)data, size, &m, &e);
    if (rc) {
        CHECK(rc == ERR_INVALID);
        CHECK(m.code == API_MCP_PARSE_ERROR || m.code == API_MCP_INVALID_REQUEST);
        CHECK(m.code != API_MCP_PARSE_ERROR || m.root == NULL);
        CHECK(e.msg[0] != '\0');
        CHECK(m.id == NULL || id_ok(m.id));
        json_decref(m.root);
        return 0;
    }
    CHECK(m.root != NULL);
    switch (m.kind) {
    case API_MCP_REQUEST:
        CHECK(id_ok(m.id));
        CHECK(m.method && m.method[0] && json_object_get(m.root, "method"));
        CHECK(strlen(m.method) == json_string_length(json_object_get(m.root, "method")));
        CHECK(m.params == NULL || json_is_object(m.params));
        if (strcmp(m.method, "tools/call") == 0)
            bind_all(m.params);
        break;
    case API_MCP_NOTIFICATION:
        CHECK(m.id == NULL && json_object_get(m.root, "id") == NULL);
        CHECK(m.method && m.method[0]);
        CHECK(m.params == NULL || json_is_object(m.params));
        break;
    case API_MCP_RESPONSE:
        CHECK(id_ok(m.id) && m.method == NULL);
        CHECK((json_object_get(m.root, "result") != NULL) !=
              (json_object_get(m.root, "error") != NULL));
        break;
    case API_MCP_BATCH:
        CHECK(json_is_array(m.root) && json_array_size(m.root) > 0);
        break;
    }
    json_decref(m.root);
    return 0;
}
