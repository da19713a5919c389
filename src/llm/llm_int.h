/* SPDX-License-Identifier: MIT */
/* llm_int.h: what a provider implements. Each provider embeds struct llm first. */
#ifndef WORKFORCE_LLM_INT_H
#define WORKFORCE_LLM_INT_H

#include "llm.h"

struct llm_ops {
    const char *name;
    void (*call)(struct llm *l, const struct llm_request *req, const struct llm_sink *sink);
    void (*free)(struct llm *l);
};

struct llm {
    const struct llm_ops *ops;
};

int llm_builtin_new(struct llm **out);
int llm_openai_new(const struct llm_config *cfg, struct httpc *h, struct llm **out, struct err *e);

#endif
