/* SPDX-License-Identifier: MIT */
/* llm.c: choosing a provider and the calls every caller goes through. */
#include "llm_int.h"

#include <string.h>

/* Make the engine 'cfg->provider'; '*out' is owned by the caller (llm_free()). */
int llm_new(const struct llm_config *cfg, struct httpc *h, struct llm **out, struct err *e)
{
    *out = NULL;
    if (!cfg->provider || strcmp(cfg->provider, "builtin") == 0)
        return llm_builtin_new(cfg->embed, out);
    if (strcmp(cfg->provider, "openai") == 0)
        return llm_openai_new(cfg, h, out, e);
    return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_LLM", "unknown engine %s",
                   cfg->provider);
}

/* Free 'l'; NULL is a no-op. No call may be in progress. */
void llm_free(struct llm *l)
{
    if (l)
        l->ops->free(l);
}

/* The provider's name ("builtin", "openai"). */
const char *llm_name(const struct llm *l)
{
    return l->ops->name;
}

/* Start a reply of 'l' to 'req'; the result arrives through 'sink'. */
void llm_call(struct llm *l, const struct llm_request *req, const struct llm_sink *sink)
{
    l->ops->call(l, req, sink);
}

/* Number of whitespace-separated words in 's' (NULL: 0). */
int64_t llm_count_words(const char *s)
{
    int64_t n = 0;
    int in = 0;
    for (; s && *s; s++) {
        int space = *s == ' ' || *s == '\n' || *s == '\t' || *s == '\r';
        if (!space && !in)
            n++;
        in = !space;
    }
    return n;
}
