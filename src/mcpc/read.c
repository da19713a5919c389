/* SPDX-License-Identifier: MIT */
/*
 * read.c: what an MCP server answers (mcpc.h). Pure: no I/O, no globals; the only memory is
 * the reader's capped buffers and the JSON it parses. Fuzzed by tests/fuzz/fuzz_mcpc.c.
 *
 * A POST of the Streamable HTTP transport is answered by one JSON body or by an event stream.
 * A JSON body is the response (or, in 2025-03-26, a batch holding it). In a stream, each
 * event's data is one JSON-RPC message: the server may send notifications (progress, logs) and
 * requests of its own before the response to ours; they are skipped, as is an event whose data
 * is not JSON. The reader stops at the response to our request id, so a server that keeps the
 * stream open after it costs nothing more.
 */
#include "mcpc.h"

#include "../core/utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- Bodies ---- */

/* See mcpc.h. */
enum mcpc_body mcpc_body_kind(const char *ctype, size_t len)
{
    size_t n = 0;
    while (n < len && ctype[n] != ';' && ctype[n] != ' ' && ctype[n] != '\t')
        n++;
    if (n == 16 && strncasecmp(ctype, "application/json", 16) == 0)
        return MCPC_BODY_JSON;
    if (n == 17 && strncasecmp(ctype, "text/event-stream", 17) == 0)
        return MCPC_BODY_SSE;
    return MCPC_BODY_OTHER;
}

/* See mcpc.h. */
void mcpc_reader_init(struct mcpc_reader *r, enum mcpc_body kind, int64_t id, size_t max)
{
    memset(r, 0, sizeof(*r));
    r->kind_ = kind;
    r->id_ = id;
    r->max_ = max;
    buf_init(&r->json_, max);
    sse_init(&r->sse_, max);
}

/* See mcpc.h. */
void mcpc_reader_cleanup(struct mcpc_reader *r)
{
    buf_cleanup(&r->json_);
    sse_cleanup(&r->sse_);
    json_decref(r->found_);
    r->found_ = NULL;
}

/* Whether 'msg' is a response (a result or an error) to request 'id'. */
static bool answers(const json_t *msg, int64_t id)
{
    const json_t *v = json_object_get(msg, "id");
    if (!json_is_object(msg) || !json_is_integer(v) || json_integer_value(v) != id)
        return false;
    return json_object_get(msg, "result") || json_object_get(msg, "error");
}

/* The response to 'id' in the parsed message or batch 'doc' (a new reference), or NULL. */
static json_t *find_response(json_t *doc, int64_t id)
{
    size_t i;
    json_t *m;
    if (answers(doc, id))
        return json_incref(doc);
    if (!json_is_array(doc))
        return NULL;
    json_array_foreach(doc, i, m)
    {
        if (answers(m, id))
            return json_incref(m);
    }
    return NULL;
}

/* An sse_event_fn: the event's data is a message; MCPC_READ_DONE at the response. */
static int on_event(void *ud, const struct sse_event *ev)
{
    struct mcpc_reader *r = ud;
    json_t *doc = json_loadb(ev->data, ev->data_len, JSON_REJECT_DUPLICATES, NULL);
    json_t *found = find_response(doc, r->id_);
    json_decref(doc);
    if (!found)
        return 0;
    r->found_ = found;
    return MCPC_READ_DONE;
}

/* See mcpc.h. */
int mcpc_reader_feed(struct mcpc_reader *r, const char *p, size_t n)
{
    int rc;
    if (r->found_)
        return MCPC_READ_DONE;
    if (n > r->max_ - r->seen_)
        return ERR_LIMIT;
    r->seen_ += n;
    switch (r->kind_) {
    case MCPC_BODY_JSON:
        return buf_append(&r->json_, p, n);
    case MCPC_BODY_SSE:
        rc = sse_feed(&r->sse_, p, n, on_event, r);
        return rc;
    case MCPC_BODY_OTHER:
        break;
    }
    return ERR_INVALID;
}

/* See mcpc.h. */
int mcpc_reader_finish(struct mcpc_reader *r, char *why, size_t n)
{
    json_t *doc;
    if (!r->found_ && r->kind_ == MCPC_BODY_JSON) {
        doc = json_loadb(buf_ptr(&r->json_), buf_len(&r->json_), JSON_REJECT_DUPLICATES, NULL);
        if (!doc) {
            snprintf(why, n, "the answer is not JSON");
            return ERR_INVALID;
        }
        r->found_ = find_response(doc, r->id_);
        json_decref(doc);
    } else if (!r->found_ && r->kind_ == MCPC_BODY_SSE) {
        sse_finish(&r->sse_, on_event, r);
    }
    if (r->found_)
        return 0;
    snprintf(why, n, "%s",
             r->kind_ == MCPC_BODY_OTHER ? "the answer is neither JSON nor an event stream"
             : r->kind_ == MCPC_BODY_SSE ? "the event stream ended without the response"
                                         : "the answer is not the response to the request");
    return ERR_INVALID;
}

/* See mcpc.h. */
const json_t *mcpc_reader_response(const struct mcpc_reader *r)
{
    return r->found_;
}

/* ---- Messages ---- */

/* 's' ('len' bytes) into 'out' ('n' bytes) with control characters as spaces, cut at 'max'
 * bytes on a character boundary: a server's words, made fit to show. */
static void clean_copy(char *out, size_t n, const char *s, size_t len, size_t max)
{
    size_t k;
    if (n == 0)
        return;
    if (max > n - 1)
        max = n - 1;
    k = utf8_prefix(s, len, max);
    for (size_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)s[i];
        out[i] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
    }
    out[k] = '\0';
}

/* See mcpc.h. */
int mcpc_response_result(const json_t *msg, const json_t **result, char *why, size_t n)
{
    const json_t *err = json_object_get(msg, "error");
    const json_t *res = json_object_get(msg, "result");
    *result = NULL;
    if (json_is_object(err)) {
        const json_t *code = json_object_get(err, "code");
        const char *m = json_string_value(json_object_get(err, "message"));
        char text[208];
        clean_copy(text, sizeof(text), m ? m : "",
                   m ? json_string_length(json_object_get(err, "message")) : 0, 200);
        snprintf(why, n, "MCP error %lld: %s",
                 json_is_integer(code) ? (long long)json_integer_value(code) : 0LL, text);
        return ERR_UPSTREAM;
    }
    if (!json_is_object(res)) {
        snprintf(why, n, "the response has neither a result object nor an error");
        return ERR_INVALID;
    }
    *result = res;
    return 0;
}

/* ---- Tools ---- */

/* Whether 'tools' already holds a tool named 'name'. */
static bool listed(const json_t *tools, const char *name)
{
    size_t i;
    const json_t *t;
    json_array_foreach(tools, i, t)
    {
        if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
            return true;
    }
    return false;
}

/* See mcpc.h. */
int mcpc_tools_page(const json_t *result, json_t *tools, const char **cursor, char *why, size_t n)
{
    const json_t *list = json_object_get(result, "tools");
    const json_t *next = json_object_get(result, "nextCursor");
    const json_t *it;
    size_t i;

    *cursor = NULL;
    if (!json_is_array(list)) {
        snprintf(why, n, "the tools/list result has no tools array");
        return ERR_INVALID;
    }
    json_array_foreach(list, i, it)
    {
        const json_t *name = json_object_get(it, "name");
        const json_t *desc = json_object_get(it, "description");
        const json_t *schema = json_object_get(it, "inputSchema");
        const json_t *ro = json_object_get(json_object_get(it, "annotations"), "readOnlyHint");
        size_t len = json_string_length(name);
        const char *d = json_string_value(desc);
        json_t *t;

        if (!json_is_string(name) || len == 0 || len > MCPC_TOOL_NAME_MAX ||
            strlen(json_string_value(name)) != len || listed(tools, json_string_value(name)))
            continue;
        if (json_array_size(tools) >= MCPC_TOOLS_MAX) {
            snprintf(why, n, "the server has more than %d tools", MCPC_TOOLS_MAX);
            return ERR_LIMIT;
        }
        t = json_object();
        json_object_set_new(t, "name", json_string(json_string_value(name)));
        json_object_set_new(
            t, "description",
            json_stringn(d ? d : "",
                         d ? utf8_prefix(d, json_string_length(desc), MCPC_DESCRIPTION_MAX) : 0));
        json_object_set_new(t, "effect", json_string(json_is_true(ro) ? "read" : "write"));
        json_object_set_new(t, "input_schema",
                            json_is_object(schema) ? json_deep_copy(schema)
                                                   : json_pack("{s:s}", "type", "object"));
        json_array_append_new(tools, t);
    }
    if (json_is_string(next) && json_string_length(next) > 0)
        *cursor = json_string_value(next);
    return 0;
}

/* ---- Results ---- */

/* Append the text of content item 'it' to 'out'. */
static int item_text(const json_t *it, struct buf *out)
{
    const char *type = json_string_value(json_object_get(it, "type"));
    const json_t *text = json_object_get(it, "text");
    const json_t *res = json_object_get(it, "resource");
    const char *mime = json_string_value(json_object_get(it, "mimeType"));
    const char *uri = json_string_value(json_object_get(it, "uri"));

    if (!type)
        type = "unknown";
    if (strcmp(type, "text") == 0 && json_is_string(text))
        return buf_append(out, json_string_value(text), json_string_length(text));
    if (strcmp(type, "resource") == 0) {
        text = json_object_get(res, "text");
        if (json_is_string(text))
            return buf_append(out, json_string_value(text), json_string_length(text));
        uri = json_string_value(json_object_get(res, "uri"));
    }
    if (strcmp(type, "image") == 0 || strcmp(type, "audio") == 0)
        return buf_appendf(out, "[%s: %.100s]", type, mime ? mime : "unknown type");
    if (strcmp(type, "resource") == 0 || strcmp(type, "resource_link") == 0)
        return buf_appendf(out, "[%s: %.500s]",
                           strcmp(type, "resource") == 0 ? "resource" : "resource link",
                           uri ? uri : "no uri");
    return buf_appendf(out, "[%.40s content]", type);
}

/* See mcpc.h. */
int mcpc_result_text(const json_t *result, struct buf *out, bool *is_error)
{
    const json_t *content = json_object_get(result, "content");
    const json_t *structured = json_object_get(result, "structuredContent");
    const json_t *it;
    size_t i;
    int rc = 0;

    *is_error = json_is_true(json_object_get(result, "isError"));
    if (json_array_size(content) == 0 && structured) {
        char *s = json_dumps(structured, JSON_COMPACT | JSON_ENCODE_ANY);
        rc = s ? buf_appends(out, s) : ERR_NOMEM;
        free(s);
        return rc;
    }
    json_array_foreach(content, i, it)
    {
        if (i > 0)
            rc = buf_appends(out, "\n");
        if (!rc)
            rc = item_text(it, out);
        if (rc)
            return rc;
    }
    return 0;
}
