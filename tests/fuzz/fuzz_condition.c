/* SPDX-License-Identifier: MIT */
/*
 * fuzz_condition: workflows/template.c's evaluator. The input is "<expr>\n<json>": the
 * expression is wrapped in {{ }} and evaluated against run data whose trigger is the JSON
 * part (any value, or missing when it does not parse). Invariants, for every expression that
 * parses:
 *   - without placeholders the value is true or false, never unknown;
 * and, for an expression without parentheses of its own (which could close the wrapping ones):
 *   - `!( x )` is its negation, `( x ) || ( x )` and `( x ) && ( x )` are x;
 *   - `( x ) || true` is true and `( x ) && false` is false, also with placeholders;
 *   - with placeholders, a value that is known agrees with the two-valued one when the
 *     expression names no step (placeholders then change nothing).
 * Pure: no I/O; everything is freed.
 */
#define FUZZ_NAME "fuzz_condition"
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/workflows/template.h"
#include "fuzz_text.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The condition "{{ pre expr post }}" evaluated; -1 when it does not parse. */
static int eval_wrapped(const char *pre, const char *expr, size_t len, const char *post,
                        const json_t *d, bool ph, bool *uses_steps)
{
    struct buf b;
    struct tmpl *t = NULL;
    int v = -1;

    buf_init(&b, 1u << 20);
    buf_appends(&b, "{{ ");
    buf_appends(&b, pre);
    buf_append(&b, expr, len);
    buf_appends(&b, post);
    buf_appends(&b, " }}");
    if (tmpl_cond_parse(buf_ptr(&b), buf_len(&b), 3, "steps[3].condition", &t, NULL) == 0) {
        v = (int)tmpl_eval(t, d, ph);
        if (uses_steps)
            *uses_steps = tmpl_uses_steps(t);
        tmpl_free(t);
    }
    buf_cleanup(&b);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *nl = memchr(s, '\n', size);
    size_t elen = nl ? (size_t)(nl - s) : size;
    json_t *d = json_object(), *steps = json_array(), *trig = NULL;
    bool uses = false;
    int x, y;

    if (nl)
        trig = json_loadb(nl + 1, size - elen - 1, JSON_DECODE_ANY, NULL);
    if (trig)
        json_object_set_new(d, "trigger", trig);
    json_array_append_new(steps, json_pack("{s:s}", "output", "first"));
    json_array_append_new(steps, json_pack("{s:{s:s,s:f}}", "output", "label", "b", "score", 0.5));
    json_object_set_new(d, "steps", steps);
    json_object_set_new(d, "workflow", json_pack("{s:s}", "id", "wf_1"));
    json_object_set_new(d, "run", json_pack("{s:s}", "id", "run_1"));

    x = eval_wrapped("(", s, elen, ")", d, false, &uses);
    /* The algebra holds when the wrapping parentheses enclose the whole expression: an input
     * with parentheses of its own could close them ("a) || (b"), so it is only evaluated. */
    if (x >= 0 && (memchr(s, '(', elen) || memchr(s, ')', elen))) {
        CHECK(x == TMPL_TRUE || x == TMPL_FALSE);
    } else if (x >= 0) {
        CHECK(x == TMPL_TRUE || x == TMPL_FALSE);
        y = eval_wrapped("!(", s, elen, ")", d, false, NULL);
        CHECK(y < 0 || y == (x == TMPL_TRUE ? TMPL_FALSE : TMPL_TRUE));
        y = eval_wrapped("(", s, elen, ") || false", d, false, NULL);
        CHECK(y < 0 || y == x); /* may hit the term limit */
        y = eval_wrapped("(", s, elen, ") && true", d, false, NULL);
        CHECK(y < 0 || y == x);
        for (int ph = 0; ph < 2; ph++) {
            y = eval_wrapped("(", s, elen, ") || true", d, ph != 0, NULL);
            CHECK(y < 0 || y == TMPL_TRUE);
            y = eval_wrapped("(", s, elen, ") && false", d, ph != 0, NULL);
            CHECK(y < 0 || y == TMPL_FALSE);
        }
        y = eval_wrapped("(", s, elen, ")", d, true, NULL);
        CHECK(y == TMPL_TRUE || y == TMPL_FALSE || y == TMPL_UNKNOWN);
        if (!uses)
            CHECK(y == x);
    }
    json_decref(d);
    return 0;
}
