/* SPDX-License-Identifier: MIT */
/*
 * builtin: how the built-in engine does the workflow actions that need no language model
 * (contract §12): classify and summarize with the sentence encoder (through the embedding
 * pool, blocking: worker threads only), draft_email from a template. extract is fields.c.
 * Each returns the action's output as a new JSON value.
 */
#ifndef WORKFORCE_WORKFLOWS_BUILTIN_H
#define WORKFORCE_WORKFLOWS_BUILTIN_H

#include "../core/err.h"

#include <jansson.h>
#include <stddef.h>

struct embed_pool;

#define WF_SUMMARY_SENTENCES_MAX 400 /* sentences of an input weighed; later ones are not */

/*
 * classify: 'input' and each label of 'labels' (the checked option: strings or {name,
 * description?}) embedded, the label nearest the input chosen. '*out' is {label, score}, the
 * score the cosine mapped from [-1, 1] to [0, 1]. 0, or the pool's error in 'e'.
 */
int wf_builtin_classify(struct embed_pool *p, const char *input, const json_t *labels, json_t **out,
                        struct err *e);

/*
 * summarize: the 'max' sentences of 'input' most central to it (nearest the mean of all its
 * sentence vectors), in their original order, joined by a space; the whole input when it has
 * no more sentences than that. '*out' is a JSON string.
 */
int wf_builtin_summarize(struct embed_pool *p, const char *input, int max, json_t **out,
                         struct err *e);

/* draft_email: {subject, body}: the subject from the input's first sentence, the body the
 * input between a greeting and a sign-off by 'signer', in 'tone' (NULL: neutral). */
json_t *wf_builtin_draft(const char *input, const char *to, const char *tone, const char *signer);

#endif
