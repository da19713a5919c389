/* SPDX-License-Identifier: MIT */
/* llm_int.h: what a provider implements. Each provider embeds struct llm first. */
#ifndef WORKFORCE_LLM_INT_H
#define WORKFORCE_LLM_INT_H

#include "llm.h"

#include <stdbool.h>
#include <stddef.h>

struct llm_ops {
    const char *name;
    void (*call)(struct llm *l, const struct llm_request *req, const struct llm_sink *sink);
    void (*free)(struct llm *l);
};

struct llm {
    const struct llm_ops *ops;
};

struct embed_pool;
int llm_builtin_new(struct embed_pool *embed, struct llm **out);
int llm_openai_new(const struct llm_config *cfg, struct httpc *h, struct llm **out, struct err *e);

/* ---- answer.c: the kind of answer a question asks for ---- */

enum llm_answer_kind {
    LLM_ANSWER_ANY,    /* nothing in particular */
    LLM_ANSWER_TIME,   /* how long, when: a duration, a day or a date */
    LLM_ANSWER_AMOUNT, /* how much, how many, a cost: a number or an amount */
};

/* The kind of answer the 'len' bytes of question 'q' ask for. */
enum llm_answer_kind llm_answer_kind(const char *q, size_t len);

/* Whether the 'len' bytes of sentence 's' hold an answer of 'kind' (never for ANY). */
bool llm_answer_holds(const char *s, size_t len, enum llm_answer_kind kind);

/* The share, 0 to 1, of the topic words of question 'q' that sentence 's' holds (by stem). */
double llm_answer_overlap(const char *q, size_t qlen, const char *s, size_t slen);

#endif
