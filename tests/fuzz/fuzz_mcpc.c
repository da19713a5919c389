/* SPDX-License-Identifier: MIT */
/*
 * fuzz_mcpc: the MCP client's readers (mcpc/read.c) and checks (mcpc/check.c). The input is a
 * header byte and then an HTTP answer's body:
 *
 *     byte 0   bits 0-1: the body's kind (JSON, event stream, another type, JSON again)
 *              bits 2-4: the chunk size of the second reading, from chunks[] below
 *              bits 5-7: the reader's cap, from caps[] below (small caps reach ERR_LIMIT)
 *     the rest the body
 *
 * The body is read twice, whole and in chunks, looking for the response to id 7: both readings
 * must agree (found or not, and the same response), and a response found must be one (an
 * object with id 7 and a result or an error). The response then goes through
 * mcpc_response_result(), and its result through mcpc_tools_page() and mcpc_result_text(),
 * whose outputs are checked against their contracts (names, effects, schemas, descriptions,
 * bounds). The body is also parsed as JSON and given to those two directly, to
 * mcpc_headers_check(), and, as text, to mcpc_url_check() and mcpc_name_ok().
 * Pure: no I/O; all memory is released.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/mcpc/mcpc.h"

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
            fprintf(stderr, "fuzz_mcpc: check failed at line %d: %s\n", __LINE__, #c);             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static const size_t chunks[8] = {1, 2, 3, 7, 16, 64, 255, 4096};
static const size_t caps[8] = {1 << 20, 0, 1, 16, 64, 200, 1000, 1 << 16};
static const enum mcpc_body kinds[4] = {MCPC_BODY_JSON, MCPC_BODY_SSE, MCPC_BODY_OTHER,
                                        MCPC_BODY_JSON};

/* Read 'body' with a reader of 'kind' and 'cap', 'chunk' bytes at a time; the response found
 * as compact text (the caller frees it), or NULL. */
static char *read_body(enum mcpc_body kind, size_t cap, const char *body, size_t len, size_t chunk)
{
    struct mcpc_reader r;
    char why[200];
    char *out = NULL;
    size_t at = 0;
    int rc = 0;

    mcpc_reader_init(&r, kind, 7, cap);
    while (at < len && rc == 0) {
        size_t n = len - at < chunk ? len - at : chunk;
        rc = mcpc_reader_feed(&r, body + at, n);
        at += n;
    }
    CHECK(rc == 0 || rc == MCPC_READ_DONE || rc == ERR_LIMIT || rc == ERR_INVALID ||
          rc == ERR_NOMEM);
    if (rc == 0 || rc == MCPC_READ_DONE) {
        rc = mcpc_reader_finish(&r, why, sizeof(why));
        CHECK(rc == 0 || (rc == ERR_INVALID && why[0]));
        CHECK(!rc == (mcpc_reader_response(&r) != NULL));
    }
    if (mcpc_reader_response(&r) && rc != ERR_LIMIT) {
        const json_t *m = mcpc_reader_response(&r);
        const json_t *id = json_object_get(m, "id");
        CHECK(json_is_object(m) && json_is_integer(id) && json_integer_value(id) == 7);
        CHECK(json_object_get(m, "result") || json_object_get(m, "error"));
        out = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);
    }
    mcpc_reader_cleanup(&r);
    return out;
}

/* mcpc_tools_page() and mcpc_result_text() on 'result', checked against their contracts. */
static void use_result(const json_t *result)
{
    json_t *tools = json_array();
    const char *cursor = NULL;
    char why[256];
    struct buf b;
    bool is_error = false;
    int rc = mcpc_tools_page(result, tools, &cursor, why, sizeof(why));
    size_t i, j;
    const json_t *t;

    CHECK(rc == 0 || rc == ERR_INVALID || rc == ERR_LIMIT);
    CHECK(json_array_size(tools) <= MCPC_TOOLS_MAX);
    CHECK(!cursor || (rc == 0 && cursor[0]));
    json_array_foreach(tools, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *effect = json_string_value(json_object_get(t, "effect"));
        CHECK(name && name[0] && strlen(name) <= MCPC_TOOL_NAME_MAX);
        CHECK(effect && (strcmp(effect, "read") == 0 || strcmp(effect, "write") == 0));
        CHECK(json_is_object(json_object_get(t, "input_schema")));
        CHECK(json_string_length(json_object_get(t, "description")) <= MCPC_DESCRIPTION_MAX);
        for (j = 0; j < i; j++)
            CHECK(strcmp(name, json_string_value(
                                   json_object_get(json_array_get(tools, j), "name"))) != 0);
    }
    json_decref(tools);
    buf_init(&b, 4096);
    rc = mcpc_result_text(result, &b, &is_error);
    CHECK(rc == 0 || rc == ERR_LIMIT || rc == ERR_NOMEM);
    CHECK(buf_len(&b) <= 4096 && strlen(buf_ptr(&b)) <= buf_len(&b));
    buf_cleanup(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data + 1;
    size_t len = size ? size - 1 : 0;
    char *whole, *chunked, *text;
    json_t *doc;

    if (size == 0)
        return 0;
    enum mcpc_body kind = kinds[data[0] & 3];
    size_t chunk = chunks[(data[0] >> 2) & 7], cap = caps[(data[0] >> 5) & 7];

    whole = read_body(kind, cap, body, len, len ? len : 1);
    chunked = read_body(kind, cap, body, len, chunk);
    /* a cap hit by one reading and not the other can only be the whole body's length */
    if (cap >= len) {
        CHECK((whole == NULL) == (chunked == NULL));
        CHECK(!whole || strcmp(whole, chunked) == 0);
    }
    if (whole) {
        json_t *m = json_loads(whole, 0, NULL);
        const json_t *result = NULL;
        char why[300];
        int rc = mcpc_response_result(m, &result, why, sizeof(why));
        CHECK(rc == 0 || rc == ERR_UPSTREAM || rc == ERR_INVALID);
        CHECK(!rc == (result != NULL));
        CHECK(rc == 0 || strlen(why) > 0);
        if (result)
            use_result(result);
        json_decref(m);
    }
    free(whole);
    free(chunked);

    doc = json_loadb(body, len, 0, NULL);
    if (doc) {
        struct err e;
        int rc;
        use_result(doc);
        rc = mcpc_headers_check(doc, "headers", &e);
        CHECK(rc == 0 || (rc == ERR_INVALID && e.param[0] && e.msg[0]));
        json_decref(doc);
    }
    mcpc_body_kind(body, len);
    text = malloc(len + 1);
    memcpy(text, body, len);
    text[len] = '\0';
    {
        struct err e;
        int rc = mcpc_url_check(text, data[0] & 1, "url", &e);
        CHECK(rc == 0 || (rc == ERR_INVALID && strcmp(e.param, "url") == 0));
    }
    mcpc_name_ok(text, len);
    free(text);
    return 0;
}
