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

struct llm_message {
    const char *role; /* user | assistant */
    const char *content;
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
};

struct llm_usage {
    int64_t input_tokens;
    int64_t output_tokens;
};

struct llm_sink {
    void (*delta)(void *ud, const char *text, size_t len);
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
