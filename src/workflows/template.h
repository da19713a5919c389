/* SPDX-License-Identifier: MIT */
/*
 * template: the `{{ ... }}` references of workflow steps and their conditions (contract §12),
 * parsed once into a small tree, checked, and later rendered or evaluated against a run's
 * data. Pure: no I/O, no globals; every allocation belongs to the returned tree.
 *
 * Paths. A root, then `.name` (letters, digits, `_` and `-`) or `[index]` parts:
 *   trigger...                   the run's trigger data
 *   steps[N].output...           the output of step N, which must come before this step
 *   workflow.id, run.id
 * Templates. Text with `{{ path }}` placeholders; `\{{` writes a literal `{{`. A string renders
 * as itself, a number as JSON, true/false as words, an object or array as compact JSON, and
 * null or a missing value as nothing.
 * Conditions. The whole field is `{{ expr }}`: paths, literals ("..." or '...' with JSON
 * escapes, numbers, true, false, null), == != < <= > >= contains, ! && || and parentheses.
 * Precedence from high to low: comparisons (one per operand pair: `a == b == c` is an
 * error), ! (so `!a == b` is `!(a == b)`), &&, ||. Falsy: false, null, missing, 0, "" and "false";
 * everything else is truthy.
 * == compares JSON values (numbers by value; a string never equals a number, so != is then
 * true); ordering compares two numbers or two strings (byte order), anything else is false;
 * `a contains b` is a substring (strings), an element (arrays) or a key (objects). Comparing
 * a string literal with a number literal is an error at parse time. A missing value compares
 * as null.
 * Limits: 64 KiB of text, 256 placeholders or terms, 64 levels of nesting.
 *
 * Dry runs render with 'placeholders': a `steps[...]` reference then writes its own source
 * (`{{steps[0].output.label}}`) and evaluates to unknown, with three-valued logic.
 */
#ifndef WORKFORCE_WORKFLOWS_TEMPLATE_H
#define WORKFORCE_WORKFLOWS_TEMPLATE_H

#include "../core/buf.h"
#include "../core/err.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define TMPL_TEXT_MAX (64u << 10)
#define TMPL_TERMS_MAX 256
#define TMPL_DEPTH_MAX 64

struct tmpl;

enum tmpl_value { TMPL_FALSE = 0, TMPL_TRUE = 1, TMPL_UNKNOWN = 2 };

/*
 * Parse the template 's' ('len' bytes) of step 'step_index' (steps[N] needs N < step_index)
 * into '*out' (the caller frees it with tmpl_free). 0, or ERR_INVALID naming 'param'.
 */
int tmpl_parse(const char *s, size_t len, int step_index, const char *param, struct tmpl **out,
               struct err *e);

/* The same for a condition: the whole of 's' is one `{{ expr }}`. */
int tmpl_cond_parse(const char *s, size_t len, int step_index, const char *param, struct tmpl **out,
                    struct err *e);

/* Free a tree; NULL is a no-op. */
void tmpl_free(struct tmpl *t);

/*
 * Append the template rendered against 'data' ({trigger, steps: [{output}], workflow: {id},
 * run: {id}}, borrowed) to 'out'. 0, or ERR_LIMIT when 'out' reached its cap.
 */
int tmpl_render(const struct tmpl *t, const json_t *data, bool placeholders, struct buf *out);

/* The condition's value against 'data'; TMPL_UNKNOWN only with 'placeholders'. */
enum tmpl_value tmpl_eval(const struct tmpl *t, const json_t *data, bool placeholders);

/* True when the tree refers to an earlier step's output. */
bool tmpl_uses_steps(const struct tmpl *t);

#endif
