/* SPDX-License-Identifier: MIT */
/*
 * openai.c: any OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama): POST
 * {base}/chat/completions with "stream": true, read the event stream through httpc, hand each
 * delta to the sink. Before the first token a failed attempt (network, timeout, HTTP error,
 * garbage) is retried up to 'retries' times with a growing pause; after it, a failure ends the
 * reply. A server that ignores "stream" and answers one JSON object is accepted too.
 *
 * Tools: the request's tools go out as OpenAI `tools` (type "function"), its steps (assistant
 * messages that called tools, and `tool` messages with their results) after the user message.
 * The calls the model makes come in pieces (`delta.tool_calls`) or whole (`message.tool_calls`)
 * and are assembled by tool_stream.c; when the step ends with calls, sink->tool_calls() gets
 * them once, before done(). They reach the sink only then, so an attempt that failed half-way
 * through its calls (and gave no text) is retried as any other, assembling afresh.
 */
#include "llm_int.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../httpc/httpc.h"
#include "../json/json.h"
#include "../httpc/sse.h"
#include "tool_stream.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EVENT (1u << 20)
#define MAX_PLAIN (4u << 20)

struct openai {
    struct llm base;
    struct httpc *h;
    char *url;
    char *auth;
    char *model;
    long timeout_ms, connect_timeout_ms;
    int retries;
};

struct call {
    struct openai *o;
    struct llm_sink sink;
    char *body;
    int attempt;
    /* per attempt */
    struct sse_reader sse;
    struct buf plain; /* a non-streamed body, or an error body */
    bool plain_mode;
    bool first_byte_seen;
    bool got_delta;
    bool finished; /* [DONE] or a finish_reason */
    bool garbage;
    bool have_usage;
    struct llm_tool_stream tools; /* the calls of this attempt */
    char why[160];                /* what was wrong with a response, for the error */
    struct llm_usage usage;
    int64_t out_words;
    int64_t in_words; /* the prompt's words, for a server that reports no usage */
};

static void o_free(struct llm *l)
{
    struct openai *o = (struct openai *)l;
    free(o->url);
    free(o->auth);
    free(o->model);
    free(o);
}

static void take_usage(struct call *c, json_t *usage)
{
    json_t *p = json_object_get(usage, "prompt_tokens");
    json_t *q = json_object_get(usage, "completion_tokens");
    if (json_is_integer(p) && json_is_integer(q) && json_integer_value(p) >= 0 &&
        json_integer_value(q) >= 0) {
        c->usage.input_tokens = json_integer_value(p);
        c->usage.output_tokens = json_integer_value(q);
        c->have_usage = true;
    }
}

static void give_delta(struct call *c, const char *text, size_t len)
{
    if (len == 0)
        return;
    c->got_delta = true;
    /* Words, for a server that reports no usage (a word that spans two deltas counts twice). */
    for (size_t i = 0; i < len; i++) {
        bool space = text[i] == ' ' || text[i] == '\n' || text[i] == '\t';
        bool prev_space =
            i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n' || text[i - 1] == '\t';
        if (!space && prev_space)
            c->out_words++;
    }
    c->sink.delta(c->sink.ud, text, len);
}

/* One decoded chunk object (streamed "chat.completion.chunk" or a whole "chat.completion"). */
static int take_chunk(struct call *c, json_t *obj)
{
    json_t *choices, *usage;
    size_t i;
    json_t *ch;

    if (!json_is_object(obj))
        return ERR_UPSTREAM;
    if (json_object_get(obj, "error"))
        return ERR_UPSTREAM;
    usage = json_object_get(obj, "usage");
    if (json_is_object(usage))
        take_usage(c, usage);
    choices = json_object_get(obj, "choices");
    if (choices && !json_is_array(choices))
        return ERR_UPSTREAM;
    json_array_foreach(choices, i, ch)
    {
        json_t *d = json_object_get(ch, "delta");
        json_t *m = json_object_get(ch, "message");
        json_t *content = json_object_get(d ? d : m, "content");
        json_t *fr = json_object_get(ch, "finish_reason");
        struct err e;
        if (i > 0)
            break; /* n = 1 */
        if (json_is_string(content))
            give_delta(c, json_string_value(content), json_string_length(content));
        if ((d && llm_tool_stream_delta(&c->tools, d, &e) != 0) ||
            (!d && m && llm_tool_stream_message(&c->tools, m, &e) != 0)) {
            snprintf(c->why, sizeof(c->why), "its tool calls: %.140s", e.msg);
            return ERR_UPSTREAM;
        }
        if (json_is_string(fr))
            c->finished = true;
    }
    return 0;
}

static int on_event(void *ud, const struct sse_event *ev)
{
    struct call *c = ud;
    json_t *obj;
    int rc;

    if (ev->data_len == 6 && memcmp(ev->data, "[DONE]", 6) == 0) {
        c->finished = true;
        return 0;
    }
    obj = json_loadb(ev->data, ev->data_len, 0, NULL);
    if (!obj) {
        c->garbage = true;
        return ERR_UPSTREAM;
    }
    rc = take_chunk(c, obj);
    json_decref(obj);
    if (rc)
        c->garbage = true;
    return rc;
}

static int on_data(void *ud, long status, const char *p, size_t n)
{
    struct call *c = ud;
    if (status >= 300 || c->plain_mode) {
        buf_append(&c->plain, p, n); /* past the cap: kept cut, only for the log */
        return 0;
    }
    if (!c->first_byte_seen) {
        size_t i = 0;
        while (i < n && (p[i] == ' ' || p[i] == '\n' || p[i] == '\r' || p[i] == '\t'))
            i++;
        if (i == n)
            return 0;
        c->first_byte_seen = true;
        if (p[i] == '{') {
            c->plain_mode = true;
            return buf_append(&c->plain, p, n) ? ERR_UPSTREAM : 0;
        }
    }
    return sse_feed(&c->sse, p, n, on_event, c);
}

static void attempt(struct call *c);

static void finish(struct call *c, const struct err *e)
{
    struct llm_usage u = c->usage;
    if (!e && !c->have_usage) {
        u.input_tokens = c->in_words;
        u.output_tokens = c->out_words;
    }
    c->sink.done(c->sink.ud, e ? NULL : &u, e);
    llm_tool_stream_cleanup(&c->tools);
    free(c->body);
    free(c);
}

static void reset_attempt(struct call *c)
{
    sse_cleanup(&c->sse);
    buf_cleanup(&c->plain);
    sse_init(&c->sse, MAX_EVENT);
    buf_init(&c->plain, MAX_PLAIN);
    llm_tool_stream_reset(&c->tools);
    c->why[0] = '\0';
    c->plain_mode = c->first_byte_seen = c->finished = c->garbage = c->have_usage = false;
}

/* The step ended well: hand its tool calls, if any, to the sink. 0, or ERR_UPSTREAM when they
 * do not add up (then c->why says why). */
static int give_tool_calls(struct call *c)
{
    const struct llm_tool_call *calls;
    size_t n;
    struct err e;

    if (llm_tool_stream_finish(&c->tools, &calls, &n, &e) != 0) {
        snprintf(c->why, sizeof(c->why), "its tool calls: %.140s", e.msg);
        return ERR_UPSTREAM;
    }
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        c->out_words += 1 + llm_count_words(calls[i].arguments);
    if (c->sink.tool_calls)
        c->sink.tool_calls(c->sink.ud, calls, n);
    return 0;
}

static void on_done(void *ud, int rc, long status, const char *why)
{
    struct call *c = ud;
    struct err e;
    char reason[160];

    if (!rc && status < 300 && c->plain_mode) {
        json_t *obj = json_loadb(buf_ptr(&c->plain), buf_len(&c->plain), 0, NULL);
        if (!obj || take_chunk(c, obj) != 0)
            c->garbage = true;
        else
            c->finished = true;
        json_decref(obj);
    }
    if (!rc && status < 300 && !c->plain_mode)
        sse_finish(&c->sse, on_event, c);
    if (!rc && status >= 200 && status < 300 && c->finished && !c->garbage &&
        give_tool_calls(c) == 0) {
        sse_cleanup(&c->sse);
        buf_cleanup(&c->plain);
        finish(c, NULL);
        return;
    }
    if (c->why[0])
        snprintf(reason, sizeof(reason), "%s", c->why);
    else if (c->garbage)
        snprintf(reason, sizeof(reason), "an unreadable response");
    else if (rc)
        snprintf(reason, sizeof(reason), "%s", why && *why ? why : "transfer failed");
    else if (status >= 300)
        snprintf(reason, sizeof(reason), "HTTP %ld", status);
    else
        snprintf(reason, sizeof(reason), "the stream ended early");
    log_warn("llm: openai attempt %d failed: %s%s%.200s", c->attempt + 1, reason,
             buf_len(&c->plain) ? ": " : "", buf_ptr(&c->plain));
    if (!c->got_delta && c->attempt < c->o->retries) {
        c->attempt++;
        reset_attempt(c);
        attempt(c);
        return;
    }
    sse_cleanup(&c->sse);
    buf_cleanup(&c->plain);
    err_set(&e, ERR_UPSTREAM, "upstream_error", NULL, "The language-model provider failed (%s).",
            reason);
    finish(c, &e);
}

static void attempt(struct call *c)
{
    struct httpc_post p = {c->o->url, "text/event-stream",      c->o->auth,
                           c->body,   c->o->connect_timeout_ms, c->o->timeout_ms,
                           c->attempt};
    httpc_post_json(c->o->h, &p, on_data, on_done, c);
}

static json_t *message(const char *role, const char *content)
{
    json_t *m = json_object();
    json_object_set_new(m, "role", json_string(role));
    json_object_set_new(m, "content", jo_string(content ? content : ""));
    return m;
}

/* The message 'm' as OpenAI's: an assistant's tool calls (content null when it said nothing),
 * a tool result's tool_call_id. */
static json_t *message_of(const struct llm_message *m)
{
    json_t *j = json_object();

    json_object_set_new(j, "role", jo_string(m->role ? m->role : "user"));
    if (!m->content && m->ntool_calls > 0)
        json_object_set_new(j, "content", json_null());
    else
        json_object_set_new(j, "content", jo_string(m->content ? m->content : ""));
    if (m->ntool_calls > 0) {
        json_t *calls = json_array();
        for (size_t i = 0; i < m->ntool_calls; i++) {
            const struct llm_tool_call *tc = &m->tool_calls[i];
            json_t *c = json_object(), *fn = json_object();
            json_object_set_new(fn, "name", jo_string(tc->name ? tc->name : ""));
            json_object_set_new(fn, "arguments", jo_string(tc->arguments ? tc->arguments : "{}"));
            json_object_set_new(c, "id", jo_string(tc->id ? tc->id : ""));
            json_object_set_new(c, "type", json_string("function"));
            json_object_set_new(c, "function", fn);
            json_array_append_new(calls, c);
        }
        json_object_set_new(j, "tool_calls", calls);
    }
    if (m->tool_call_id)
        json_object_set_new(j, "tool_call_id", jo_string(m->tool_call_id));
    return j;
}

/* The tools of 'req' as OpenAI's `tools`, or NULL when one's parameters are not a JSON object
 * (a bug of the caller: logged). */
static json_t *tools_of(const struct llm_request *req)
{
    json_t *tools = json_array();

    for (size_t i = 0; i < req->ntools; i++) {
        const struct llm_tool *t = &req->tools[i];
        json_t *fn = json_object(), *tool = json_object();
        json_object_set_new(fn, "name", jo_string(t->name ? t->name : ""));
        if (t->description)
            json_object_set_new(fn, "description", jo_string(t->description));
        if (t->parameters) {
            json_t *params = json_loads(t->parameters, 0, NULL);
            if (!json_is_object(params)) {
                log_error("llm: the parameters of tool %s are not a JSON object",
                          t->name ? t->name : "(unnamed)");
                json_decref(params);
                json_decref(fn);
                json_decref(tool);
                json_decref(tools);
                return NULL;
            }
            json_object_set_new(fn, "parameters", params);
        }
        json_object_set_new(tool, "type", json_string("function"));
        json_object_set_new(tool, "function", fn);
        json_array_append_new(tools, tool);
    }
    return tools;
}

/* The request body: persona and context as the system message, the history, the message, the
 * turn's steps so far, and the tools; NULL when it cannot be built. The caller frees it. */
static char *build_body(const struct openai *o, const struct llm_request *req)
{
    json_t *root = json_object(), *msgs = json_array(), *opts = json_object();
    json_t *tools = req->ntools > 0 ? tools_of(req) : NULL;
    struct buf sys;
    char *s;

    if (req->ntools > 0 && !tools) {
        json_decref(root);
        json_decref(msgs);
        json_decref(opts);
        return NULL;
    }
    buf_init(&sys, 1u << 20);
    buf_appendf(&sys, "You are %s, %s.", req->employee_name ? req->employee_name : "an employee",
                req->employee_role ? req->employee_role : "an AI employee");
    if (req->persona && *req->persona)
        buf_appendf(&sys, "\n\n%s", req->persona);
    if (req->capabilities)
        buf_appendf(&sys, "\n\nYour capabilities: %s", req->capabilities);
    if (req->context && strcmp(req->context, "{}") != 0)
        buf_appendf(&sys, "\n\nContext for this request (JSON): %s", req->context);
    if (req->nknowledge > 0) {
        buf_appends(&sys, "\n\nKnowledge you may use. Cite the passages you use by their name "
                          "in square brackets:");
        for (size_t i = 0; i < req->nknowledge; i++) {
            const struct llm_passage *p = &req->knowledge[i];
            buf_appendf(&sys, "\n[%zu] %s", i + 1, p->source);
            if (p->page > 0)
                buf_appendf(&sys, ", page %d", p->page);
            buf_appendf(&sys, ": %s", p->content);
        }
    } else if (req->knowledge_searched) {
        buf_appends(&sys, "\n\nThe knowledge base has nothing on this request; say so if it "
                          "matters.");
    }
    json_array_append_new(msgs, message("system", buf_ptr(&sys)));
    buf_cleanup(&sys);
    for (size_t i = 0; i < req->nhistory; i++)
        json_array_append_new(msgs, message_of(&req->history[i]));
    json_array_append_new(msgs, message("user", req->message));
    for (size_t i = 0; i < req->nsteps; i++)
        json_array_append_new(msgs, message_of(&req->steps[i]));
    json_object_set_new(root, "model", json_string(req->model ? req->model : o->model));
    json_object_set_new(root, "messages", msgs);
    if (tools)
        json_object_set_new(root, "tools", tools);
    if (tools && req->tool_choice) {
        json_t *choice = json_loads(req->tool_choice, JSON_DECODE_ANY, NULL);
        if (choice)
            json_object_set_new(root, "tool_choice", choice);
    }
    json_object_set_new(root, "stream", json_true());
    json_object_set_new(opts, "include_usage", json_true());
    json_object_set_new(root, "stream_options", opts);
    if (req->json_output) {
        json_t *fmt = json_object();
        json_object_set_new(fmt, "type", json_string("json_object"));
        json_object_set_new(root, "response_format", fmt);
    }
    s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

/* The words of 'm' with its tool calls, for a server that reports no usage. */
static int64_t words_of(const struct llm_message *m)
{
    int64_t n = llm_count_words(m->content);
    for (size_t i = 0; i < m->ntool_calls; i++)
        n += 1 + llm_count_words(m->tool_calls[i].arguments);
    return n;
}

static void o_call(struct llm *l, const struct llm_request *req, const struct llm_sink *sink)
{
    struct openai *o = (struct openai *)l;
    struct call *c = xcalloc(1, sizeof(*c));
    c->o = o;
    c->sink = *sink;
    c->body = build_body(o, req);
    c->in_words = llm_count_words(req->persona) + llm_count_words(req->message) +
                  llm_count_words(req->context) + llm_count_words(req->capabilities);
    for (size_t i = 0; i < req->nhistory; i++)
        c->in_words += words_of(&req->history[i]);
    for (size_t i = 0; i < req->nsteps; i++)
        c->in_words += words_of(&req->steps[i]);
    for (size_t i = 0; i < req->nknowledge; i++)
        c->in_words += llm_count_words(req->knowledge[i].content);
    sse_init(&c->sse, MAX_EVENT);
    buf_init(&c->plain, MAX_PLAIN);
    llm_tool_stream_init(&c->tools);
    if (!c->body) {
        struct err e;
        err_set(&e, ERR_INTERNAL, "internal_error", NULL, "cannot build the request");
        sse_cleanup(&c->sse);
        buf_cleanup(&c->plain);
        finish(c, &e);
        return;
    }
    attempt(c);
}

static const struct llm_ops openai_ops = {"openai", o_call, o_free};

/* An engine for the OpenAI-compatible server of 'cfg'; transfers run on 'h'. */
int llm_openai_new(const struct llm_config *cfg, struct httpc *h, struct llm **out, struct err *e)
{
    struct openai *o;
    size_t n;

    *out = NULL;
    if (!cfg->base_url || !*cfg->base_url)
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_LLM_BASE_URL",
                       "is required with WORKFORCE_LLM=openai");
    if (strncmp(cfg->base_url, "http://", 7) != 0 && strncmp(cfg->base_url, "https://", 8) != 0)
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_LLM_BASE_URL",
                       "must start with http:// or https://");
    o = xcalloc(1, sizeof(*o));
    o->base.ops = &openai_ops;
    o->h = h;
    n = strlen(cfg->base_url);
    while (n > 0 && cfg->base_url[n - 1] == '/')
        n--;
    o->url = xmalloc(n + sizeof("/chat/completions"));
    memcpy(o->url, cfg->base_url, n);
    memcpy(o->url + n, "/chat/completions", sizeof("/chat/completions"));
    o->auth = httpc_bearer(cfg->api_key);
    o->model = xstrdup(cfg->model && *cfg->model ? cfg->model : "gpt-4o-mini");
    o->timeout_ms = cfg->timeout_ms;
    o->connect_timeout_ms = cfg->connect_timeout_ms;
    o->retries = cfg->retries;
    *out = &o->base;
    return 0;
}
