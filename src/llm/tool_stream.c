/* SPDX-License-Identifier: MIT */
/*
 * tool_stream.c: the tool calls of a model step from the pieces of an OpenAI-compatible answer
 * (tool_stream.h says what arrives). What real servers send, and what is done with it:
 *
 *  - `index` picks the call. OpenAI, vLLM, llama.cpp and Ollama number calls from 0; an index
 *    may come back later (the arguments of call 0 after call 1 began). An entry without an
 *    index (a few servers) opens a new call when it brings an id other than the last one's,
 *    else continues the last call.
 *  - `id` and `function.name` arrive whole, usually once; null or "" says nothing, the same
 *    value again is accepted, a different one for the same index is an error.
 *  - `function.arguments` is JSON text in pieces, joined in order; a server that answers an
 *    object instead of text (once, whole) has it written as compact JSON.
 *  - `type`, when given, must be "function" (the only kind of tool we offer).
 *  - Finishing: every index up to the highest must have been named and have a name; a call
 *    with no id gets "call_<index>", no arguments become "{}", and two calls with one id are
 *    an error (the results could not be told apart).
 * The arguments are not checked as JSON here: the caller checks them against the tool's
 * schema and answers the model when they are wrong.
 */
#include "tool_stream.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first error again, in 'e'. */
static int sticky(const struct llm_tool_stream *s, struct err *e)
{
    return err_set(e, s->rc_, "upstream_error", NULL, "%s", s->why_);
}

static int fail(struct llm_tool_stream *s, struct err *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Record the first error (a later one leaves it as it is) and report it in 'e'. */
static int fail(struct llm_tool_stream *s, struct err *e, const char *fmt, ...)
{
    if (!s->rc_) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->why_, sizeof(s->why_), fmt, ap);
        va_end(ap);
        s->rc_ = ERR_UPSTREAM;
    }
    return sticky(s, e);
}

/* See tool_stream.h. */
void llm_tool_stream_init(struct llm_tool_stream *s)
{
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < LLM_TOOL_CALLS_MAX; i++) {
        buf_init(&s->slot_[i].id_, LLM_TOOL_ID_MAX);
        buf_init(&s->slot_[i].name_, LLM_TOOL_NAME_MAX);
        buf_init(&s->slot_[i].args_, LLM_TOOL_ARGS_MAX);
    }
    s->last_ = -1;
}

/* See tool_stream.h. */
void llm_tool_stream_cleanup(struct llm_tool_stream *s)
{
    for (size_t i = 0; i < LLM_TOOL_CALLS_MAX; i++) {
        buf_cleanup(&s->slot_[i].id_);
        buf_cleanup(&s->slot_[i].name_);
        buf_cleanup(&s->slot_[i].args_);
    }
    llm_tool_stream_init(s);
}

/* See tool_stream.h: the memory is kept for the next attempt. */
void llm_tool_stream_reset(struct llm_tool_stream *s)
{
    for (size_t i = 0; i < LLM_TOOL_CALLS_MAX; i++) {
        buf_reset(&s->slot_[i].id_);
        buf_reset(&s->slot_[i].name_);
        buf_reset(&s->slot_[i].args_);
        s->slot_[i].seen_ = false;
    }
    s->n_ = 0;
    s->last_ = -1;
    s->rc_ = 0;
    s->why_[0] = '\0';
}

/* The text of 'v' when it is a non-empty string without NUL bytes, NULL when it says nothing
 * (absent, null, ""); '*bad' when it is something else. */
static const char *text_of(const json_t *v, bool *bad)
{
    const char *p;
    size_t n;

    if (!v || json_is_null(v))
        return NULL;
    if (!json_is_string(v)) {
        *bad = true;
        return NULL;
    }
    p = json_string_value(v);
    n = json_string_length(v);
    if (memchr(p, '\0', n)) {
        *bad = true;
        return NULL;
    }
    return n ? p : NULL;
}

/* Set the id or name 'b' of call 'i' to 'v' (what: "id", "name"), or check it is the same. */
static int set_once(struct llm_tool_stream *s, size_t i, struct buf *b, const char *what,
                    const char *v, size_t cap, struct err *e)
{
    size_t n = strlen(v);

    if (buf_len(b) > 0) {
        if (buf_len(b) == n && memcmp(buf_ptr(b), v, n) == 0)
            return 0;
        return fail(s, e, "tool call %zu has two %ss", i, what);
    }
    if (n > cap || buf_append(b, v, n) != 0)
        return fail(s, e, "the %s of tool call %zu is longer than %zu bytes", what, i, cap);
    return 0;
}

/* The slot of entry 'c' whose index is not given: see the file comment. */
static long slot_without_index(const struct llm_tool_stream *s, const char *id)
{
    if (s->last_ < 0)
        return (long)s->n_;
    if (id) {
        const struct buf *last = &s->slot_[s->last_].id_;
        if (buf_len(last) > 0 && strcmp(buf_ptr(last), id) != 0)
            return (long)s->n_;
    }
    return s->last_;
}

/* Take one entry 'c' of a tool_calls array: the piece of call 'at' (-1: by its index). */
static int take_entry(struct llm_tool_stream *s, const json_t *c, long at, struct err *e)
{
    const json_t *ix = json_object_get(c, "index"), *fn = json_object_get(c, "function");
    const json_t *args = json_is_object(fn) ? json_object_get(fn, "arguments") : NULL;
    const char *id, *type, *name;
    struct llm_tool_slot *slot;
    bool bad = false;
    int rc;

    if (!json_is_object(c))
        return fail(s, e, "a tool call is not an object");
    id = text_of(json_object_get(c, "id"), &bad);
    type = text_of(json_object_get(c, "type"), &bad);
    name = json_is_object(fn) ? text_of(json_object_get(fn, "name"), &bad) : NULL;
    if (bad || (fn && !json_is_null(fn) && !json_is_object(fn)))
        return fail(s, e, "a tool call's id, type or function is not shaped as OpenAI's");
    if (at < 0 && ix && !json_is_null(ix)) {
        if (!json_is_integer(ix) || json_integer_value(ix) < 0)
            return fail(s, e, "a tool call's index is not a number from 0");
        at = json_integer_value(ix) < LLM_TOOL_CALLS_MAX ? (long)json_integer_value(ix)
                                                         : LLM_TOOL_CALLS_MAX;
    } else if (at < 0) {
        at = slot_without_index(s, id);
    }
    if (at >= LLM_TOOL_CALLS_MAX)
        return fail(s, e, "more than %d tool calls in one step", LLM_TOOL_CALLS_MAX);
    if (type && strcmp(type, "function") != 0)
        return fail(s, e, "tool call %ld is of type %.40s, not function", at, type);
    slot = &s->slot_[at];
    rc = id ? set_once(s, (size_t)at, &slot->id_, "id", id, LLM_TOOL_ID_MAX, e) : 0;
    if (!rc && name)
        rc = set_once(s, (size_t)at, &slot->name_, "name", name, LLM_TOOL_NAME_MAX, e);
    if (rc)
        return rc;
    if (json_is_string(args)) {
        if (memchr(json_string_value(args), '\0', json_string_length(args)))
            return fail(s, e, "the arguments of tool call %ld hold a NUL byte", at);
        if (buf_append(&slot->args_, json_string_value(args), json_string_length(args)) != 0)
            return fail(s, e, "the arguments of tool call %ld are longer than %u bytes", at,
                        LLM_TOOL_ARGS_MAX);
    } else if (json_is_object(args) && buf_len(&slot->args_) == 0) {
        char *text = json_dumps(args, JSON_COMPACT);
        rc = text ? buf_appends(&slot->args_, text) : ERR_NOMEM;
        free(text);
        if (rc)
            return fail(s, e, "the arguments of tool call %ld are longer than %u bytes", at,
                        LLM_TOOL_ARGS_MAX);
    } else if (args && !json_is_null(args)) {
        return fail(s, e, "the arguments of tool call %ld are not text", at);
    }
    slot->seen_ = true;
    s->last_ = (int)at;
    if ((size_t)at >= s->n_)
        s->n_ = (size_t)at + 1;
    return 0;
}

/* Take the array 'calls'; 'whole': each entry is a whole call, the next by its position. */
static int take_calls(struct llm_tool_stream *s, const json_t *calls, bool whole, struct err *e)
{
    size_t i, base = s->n_;
    const json_t *c;

    if (s->rc_)
        return sticky(s, e);
    if (!calls || json_is_null(calls))
        return 0;
    if (!json_is_array(calls))
        return fail(s, e, "tool_calls is not an array");
    json_array_foreach(calls, i, c)
    {
        int rc = take_entry(s, c, whole ? (long)(base + i) : -1, e);
        if (rc)
            return rc;
    }
    return 0;
}

/* See tool_stream.h. */
int llm_tool_stream_delta(struct llm_tool_stream *s, const json_t *delta, struct err *e)
{
    if (!json_is_object(delta))
        return s->rc_ ? sticky(s, e) : 0;
    return take_calls(s, json_object_get(delta, "tool_calls"), false, e);
}

/* See tool_stream.h. */
int llm_tool_stream_message(struct llm_tool_stream *s, const json_t *message, struct err *e)
{
    if (!json_is_object(message))
        return s->rc_ ? sticky(s, e) : 0;
    return take_calls(s, json_object_get(message, "tool_calls"), true, e);
}

/* See tool_stream.h. */
int llm_tool_stream_finish(struct llm_tool_stream *s, const struct llm_tool_call **calls, size_t *n,
                           struct err *e)
{
    *calls = NULL;
    *n = 0;
    if (s->rc_)
        return sticky(s, e);
    for (size_t i = 0; i < s->n_; i++) {
        struct llm_tool_slot *slot = &s->slot_[i];
        if (!slot->seen_)
            return fail(s, e, "tool call %zu never came (the highest was %zu)", i, s->n_ - 1);
        if (buf_len(&slot->name_) == 0)
            return fail(s, e, "tool call %zu has no name", i);
        if (buf_len(&slot->id_) == 0)
            buf_appendf(&slot->id_, "call_%zu", i);
        if (buf_len(&slot->args_) == 0)
            buf_appends(&slot->args_, "{}");
        for (size_t j = 0; j < i; j++)
            if (strcmp(buf_ptr(&s->slot_[j].id_), buf_ptr(&slot->id_)) == 0)
                return fail(s, e, "tool calls %zu and %zu have the same id", j, i);
        s->out_[i].id = buf_ptr(&slot->id_);
        s->out_[i].name = buf_ptr(&slot->name_);
        s->out_[i].arguments = buf_ptr(&slot->args_);
    }
    *calls = s->out_;
    *n = s->n_;
    return 0;
}
