/* SPDX-License-Identifier: MIT */
/*
 * llm: the reply engines behind one interface (a provider vtable, as store_ops). A call is
 * asynchronous: llm_call() returns at once and the sink's delta() then done() run later, on
 * the engine's thread (openai: the httpc thread) or before llm_call() returns (builtin).
 * done() runs exactly once; after it the call is over.
 */
#ifndef WORKFORCE_LLM_H
#define WORKFORCE_LLM_H

#include "../core/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct embed_pool;
struct httpc;
struct llm;

/* A tool the model may call (contract §19); strings borrowed for the length of llm_call(). */
struct llm_tool {
    const char *name;        /* as the model sees it: tools_model_name() of the tool's name */
    const char *description; /* what the model is told it does */
    const char *parameters;  /* the JSON Schema of its arguments, as JSON text */
};

/* A call of a tool by the model. */
struct llm_tool_call {
    const char *id;        /* the model's id of the call ("call_..."), unique in its step */
    const char *name;      /* the tool's name as the model wrote it */
    const char *arguments; /* the arguments as the model wrote them: JSON text, unchecked */
};

/* A message of the conversation the model is shown. Zero every member a message does not use. */
struct llm_message {
    const char *role;    /* user | assistant | tool */
    const char *content; /* NULL: none (an assistant message that only calls tools) */
    /* assistant: the tools it called, in order, and the results follow as 'tool' messages */
    const struct llm_tool_call *tool_calls;
    size_t ntool_calls;
    const char *tool_call_id; /* tool: the call this message is the result of */
};

/* A passage of the knowledge base the reply may draw on. */
struct llm_passage {
    const char *source; /* the document's name */
    const char *content;
    int page; /* 0: not paged */
};

/* What the engine is asked; every string is borrowed for the length of llm_call(). */
struct llm_request {
    const char *model; /* NULL: the configured default */
    const char *employee_name;
    const char *employee_role;
    const char *persona;               /* the employee's instructions */
    const char *capabilities;          /* JSON array text */
    const char *context;               /* the request's context as JSON text, or NULL */
    const struct llm_message *history; /* oldest first, already cut to the budget */
    size_t nhistory;
    const char *message;                 /* the new user message */
    const struct llm_passage *knowledge; /* best first */
    size_t nknowledge;
    bool knowledge_searched; /* the employee can read knowledge and it was searched */
    bool json_output;        /* the answer must be one JSON object (a workflow action) */
    /* The tools the model may call in this step (none: the request offers none; the builtin
     * engine calls none), and the turn's steps so far after 'message': each assistant message
     * that called tools, followed by one 'tool' message per call with its result. */
    const struct llm_tool *tools;
    size_t ntools;
    const struct llm_message *steps;
    size_t nsteps;
    /* OpenAI's tool_choice as JSON text ("\"required\"", {"type": "function", ...}), sent
     * with the tools; NULL: the provider's default (auto). */
    const char *tool_choice;
};

struct llm_usage {
    int64_t input_tokens;
    int64_t output_tokens;
};

struct llm_sink {
    void (*delta)(void *ud, const char *text, size_t len);
    /* The model ended its step by calling tools: the 'n' calls, in its order (valid only
     * during this call), once, just before a successful done(). NULL: the calls are dropped
     * (a caller that offers no tools). */
    void (*tool_calls)(void *ud, const struct llm_tool_call *calls, size_t n);
    void (*done)(void *ud, const struct llm_usage *usage, const struct err *e); /* e: NULL ok */
    void *ud;
};

struct llm_config {
    const char *provider; /* builtin | openai */
    const char *base_url;
    const char *api_key;
    const char *model;
    long timeout_ms;
    long connect_timeout_ms;
    int retries;
    struct embed_pool *embed; /* builtin: ranks knowledge sentences (borrowed; NULL: none) */
};

int llm_new(const struct llm_config *cfg, struct httpc *h, struct llm **out, struct err *e);
void llm_free(struct llm *l);
const char *llm_name(const struct llm *l);
/* Start a reply; see the file comment. Always reports through sink->done(). */
void llm_call(struct llm *l, const struct llm_request *req, const struct llm_sink *sink);
/* Words of 's': the built-in engine's token count. */
int64_t llm_count_words(const char *s);

#endif
