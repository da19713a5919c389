/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of workflows/template.c: rendering of every JSON type, paths (names, indexes,
 * missing values, every root), `\{{`, every parse error with its param, every condition
 * operator, precedence, falsy values, the type rules (a parse error for two literals, false or
 * true at run time otherwise), string escapes, limits, and the three-valued evaluation of
 * dry runs. Data-driven: each case is one line of a table.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/workflows/template.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

static json_t *data;

/* The template rendered against 'data' (static buffer), or "<error>". */
static const char *render(const char *tpl, int step, bool ph)
{
    static char out[4096];
    struct tmpl *t = NULL;
    struct buf b;
    if (tmpl_parse(tpl, strlen(tpl), step, "steps[9].input", &t, NULL))
        return "<error>";
    buf_init(&b, sizeof(out) - 1);
    if (tmpl_render(t, data, ph, &b))
        snprintf(out, sizeof(out), "<limit>");
    else
        snprintf(out, sizeof(out), "%s", buf_ptr(&b));
    buf_cleanup(&b);
    tmpl_free(t);
    return out;
}

/* The condition's value, or -1 when it does not parse. */
static int eval(const char *cond, int step, bool ph)
{
    struct tmpl *t = NULL;
    int v;
    if (tmpl_cond_parse(cond, strlen(cond), step, "steps[3].condition", &t, NULL))
        return -1;
    v = (int)tmpl_eval(t, data, ph);
    tmpl_free(t);
    return v;
}

/* The parse error's param and message (static), or NULL when it parses. */
static const struct err *parse_err(const char *s, bool cond, int step, const char *param)
{
    static struct err e;
    struct tmpl *t = NULL;
    int rc;
    err_clear(&e);
    rc = cond ? tmpl_cond_parse(s, strlen(s), step, param, &t, &e)
              : tmpl_parse(s, strlen(s), step, param, &t, &e);
    tmpl_free(t);
    return rc ? &e : NULL;
}

static void test_render(void)
{
    static const struct {
        const char *tpl, *want;
    } cases[] = {
        {"plain text", "plain text"},
        {"", ""},
        {"{{trigger.name}}", "Ada"},
        {"Hi {{ trigger.name }}!", "Hi Ada!"},
        {"{{trigger.n}}", "42"},
        {"{{trigger.x}}", "1.5"},
        {"{{trigger.yes}}", "true"},
        {"{{trigger.no}}", "false"},
        {"{{trigger.nothing}}", ""},
        {"[{{trigger.missing}}]", "[]"},
        {"{{trigger.list}}", "[1,\"two\",{\"k\":3}]"},
        {"{{trigger.list[1]}}", "two"},
        {"{{trigger.list[2].k}}", "3"},
        {"{{trigger.list[9]}}", ""},
        {"{{trigger.obj}}", "{\"a\":{\"b\":\"deep\"},\"with-dash_\":\"ok\"}"},
        {"{{trigger.obj.a.b}}", "deep"},
        {"{{trigger.obj.with-dash_}}", "ok"},
        {"{{trigger.name.first}}", ""},
        {"{{steps[0].output}}", "first"},
        {"{{steps[1].output.label}}", "billing"},
        {"{{steps[1].output}}", "{\"label\":\"billing\",\"score\":0.75}"},
        {"{{steps[2].output}}", ""},
        {"{{workflow.id}}/{{run.id}}", "wf_1/run_1"},
        {"\\{{trigger.name}}", "{{trigger.name}}"},
        {"a \\ b }} c", "a \\ b }} c"},
        {"{{trigger.name}}{{trigger.n}}", "Ada42"},
        {"é {{trigger.uni}} ✓", "é ünï ✓"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        is_str(render(cases[i].tpl, 3, false), cases[i].want, cases[i].tpl);
    is_str(render("{{trigger}}", 3, false),
           "{\"name\":\"Ada\",\"n\":42,\"x\":1.5,\"yes\":true,\"no\":false,\"nothing\":null,"
           "\"list\":[1,\"two\",{\"k\":3}],\"obj\":{\"a\":{\"b\":\"deep\"},\"with-dash_\":\"ok\"},"
           "\"uni\":\"ünï\",\"empty\":\"\",\"zero\":0,\"f\":\"false\",\"arr\":[],\"o\":{}}",
           "the whole trigger as compact JSON");
    /* Placeholders: step references write their own source, the rest renders. */
    is_str(render("{{ steps[1].output.label }} for {{trigger.name}}", 3, true),
           "{{steps[1].output.label}} for Ada", "placeholders");
    {
        struct tmpl *t = NULL;
        struct buf b;
        tmpl_parse("0123456789", 10, 1, "p", &t, NULL);
        buf_init(&b, 5);
        is_int(tmpl_render(t, data, false, &b), ERR_LIMIT, "a full buffer is ERR_LIMIT");
        buf_cleanup(&b);
        tmpl_free(t);
    }
}

static void test_template_errors(void)
{
    static const struct {
        const char *tpl;
        int step;
        const char *msg; /* a piece of the message */
    } cases[] = {
        {"{{trigger.x", 3, "not closed"},
        {"{{", 3, "not closed"},
        {"{{ }}", 3, "empty"},
        {"{{}}", 3, "empty"},
        {"{{secrets.key}}", 3, "unknown root"},
        {"{{ Trigger.x }}", 3, "unknown root"},
        {"{{steps[0].output}}", 0, "earlier step"},
        {"{{steps[3].output}}", 3, "earlier step"},
        {"{{steps[7].output}}", 3, "earlier step"},
        {"{{steps[0]}}", 3, "steps[N].output"},
        {"{{steps[0].outputs}}", 3, "steps[N].output"},
        {"{{steps.output}}", 3, "needs an index"},
        {"{{steps[].output}}", 3, "index"},
        {"{{steps[x].output}}", 3, "index"},
        {"{{workflow.name}}", 3, "only .id"},
        {"{{workflow}}", 3, "only .id"},
        {"{{run.id.x}}", 3, "no members"},
        {"{{trigger.}}", 3, "a name must follow"},
        {"{{trigger.a b}}", 3, "followed by }}"},
        {"{{trigger.a == 1}}", 3, "followed by }}"},
        {"{{trigger[x]}}", 3, "index"},
        {"{{ 'text' }}", 3, "expected a reference"},
        {"bad \xff"
         " byte",
         3, "UTF-8"},
        {"over\xe2\x82", 3, "UTF-8"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct err *e = parse_err(cases[i].tpl, false, cases[i].step, "steps[4].input");
        ok(e != NULL, cases[i].tpl);
        if (!e)
            continue;
        is_str(e->param, "steps[4].input", "the param is the caller's");
        is_str(e->code, "invalid_request", "code");
        if (!ok(strstr(e->msg, cases[i].msg) != NULL, cases[i].msg))
            printf("#   message: %s\n", e->msg);
    }
    {
        /* A NUL inside the text. */
        struct tmpl *t = NULL;
        ok(tmpl_parse("a\0b", 3, 1, "p", &t, NULL) == ERR_INVALID && !t, "a NUL is refused");
    }
    {
        /* Limits: 256 references, 64 KiB of text. */
        struct buf b;
        buf_init(&b, 1u << 20);
        for (int i = 0; i < 256; i++)
            buf_appends(&b, "{{trigger.n}}");
        ok(!parse_err(buf_ptr(&b), false, 3, "p"), "256 references parse");
        buf_appends(&b, "{{trigger.n}}");
        ok(parse_err(buf_ptr(&b), false, 3, "p") != NULL, "257 references do not");
        buf_reset(&b);
        for (int i = 0; i < 65536; i++)
            buf_append(&b, "x", 1);
        ok(!parse_err(buf_ptr(&b), false, 3, "p"), "64 KiB parse");
        buf_append(&b, "x", 1);
        ok(parse_err(buf_ptr(&b), false, 3, "p") != NULL, "64 KiB + 1 does not");
        buf_cleanup(&b);
    }
}

static void test_conditions(void)
{
    static const struct {
        const char *cond;
        int want; /* 0 false, 1 true, -1 a parse error */
    } cases[] = {
        /* truthiness of a lone value */
        {"{{ trigger.name }}", 1},
        {"{{ trigger.missing }}", 0},
        {"{{ trigger.nothing }}", 0},
        {"{{ trigger.no }}", 0},
        {"{{ trigger.yes }}", 1},
        {"{{ trigger.zero }}", 0},
        {"{{ trigger.n }}", 1},
        {"{{ trigger.empty }}", 0},
        {"{{ trigger.f }}", 0},
        {"{{ trigger.arr }}", 1},
        {"{{ trigger.o }}", 1},
        {"{{ 0 }}", 0},
        {"{{ 0.0 }}", 0},
        {"{{ -0.5 }}", 1},
        {"{{ '' }}", 0},
        {"{{ 'false' }}", 0},
        {"{{ 'no' }}", 1},
        {"{{ null }}", 0},
        {"{{ true }}", 1},
        {"{{ false }}", 0},
        /* == and != */
        {"{{ trigger.name == 'Ada' }}", 1},
        {"{{ trigger.name == \"Ada\" }}", 1},
        {"{{ trigger.name == 'ada' }}", 0},
        {"{{ trigger.name != 'Bob' }}", 1},
        {"{{ trigger.n == 42 }}", 1},
        {"{{ trigger.n == 42.0 }}", 1},
        {"{{ trigger.x == 1.5 }}", 1},
        {"{{ trigger.n == '42' }}", 0},
        {"{{ trigger.n != '42' }}", 1},
        {"{{ trigger.missing == null }}", 1},
        {"{{ trigger.nothing == null }}", 1},
        {"{{ trigger.missing != null }}", 0},
        {"{{ trigger.yes == true }}", 1},
        {"{{ trigger.list == trigger.list }}", 1},
        {"{{ steps[1].output.label == 'billing' }}", 1},
        {"{{ steps[1].output.score == 0.75 }}", 1},
        /* ordering */
        {"{{ trigger.n > 41 }}", 1},
        {"{{ trigger.n > 42 }}", 0},
        {"{{ trigger.n >= 42 }}", 1},
        {"{{ trigger.n < 42.5 }}", 1},
        {"{{ trigger.n <= 41 }}", 0},
        {"{{ trigger.x < 2 }}", 1},
        {"{{ 'abc' < 'abd' }}", 1},
        {"{{ 'ab' < 'abc' }}", 1},
        {"{{ 'b' <= 'a' }}", 0},
        {"{{ trigger.name > 5 }}", 0},
        {"{{ trigger.name < 5 }}", 0},
        {"{{ trigger.missing < 5 }}", 0},
        {"{{ trigger.missing >= 5 }}", 0},
        {"{{ trigger.yes > false }}", 0},
        {"{{ trigger.list < 3 }}", 0},
        /* contains */
        {"{{ trigger.name contains 'd' }}", 1},
        {"{{ trigger.name contains 'z' }}", 0},
        {"{{ trigger.name contains '' }}", 1},
        {"{{ trigger.list contains 'two' }}", 1},
        {"{{ trigger.list contains 1 }}", 1},
        {"{{ trigger.list contains 1.0 }}", 1},
        {"{{ trigger.list contains '1' }}", 0},
        {"{{ trigger.obj contains 'a' }}", 1},
        {"{{ trigger.obj contains 'z' }}", 0},
        {"{{ trigger.n contains 4 }}", 0},
        {"{{ trigger.missing contains 'a' }}", 0},
        /* logic and precedence */
        {"{{ true && false }}", 0},
        {"{{ true || false }}", 1},
        {"{{ !false }}", 1},
        {"{{ !!trigger.name }}", 1},
        {"{{ !trigger.missing }}", 1},
        {"{{ false || true && false }}", 0},
        {"{{ (false || true) && false }}", 0},
        {"{{ true || true && false }}", 1},
        {"{{ (true || true) && false }}", 0},
        {"{{ !trigger.n == 42 }}", 0},
        {"{{ !(trigger.n == 41) }}", 1},
        {"{{ trigger.n > 1 && trigger.name == 'Ada' }}", 1},
        {"{{ trigger.n > 100 || trigger.name contains 'A' }}", 1},
        {"{{ ((((trigger.yes)))) }}", 1},
        {"  {{trigger.yes}}  ", 1},
        /* escapes */
        {"{{ 'it\\'s' == \"it's\" }}", 1},
        {"{{ \"a\\\"b\" contains '\"' }}", 1},
        {"{{ 'a\\\\b' contains '\\\\' }}", 1},
        {"{{ '\\u00fc' == '\xc3\xbc' }}", 1},
        {"{{ '\\ud83d\\ude00' == '\xf0\x9f\x98\x80' }}", 1},
        {"{{ 'a\\nb' contains '\\n' }}", 1},
        {"{{ 'a\\tb\\r\\/' contains '/' }}", 1},
        /* parse errors */
        {"trigger.n == 1", -1},
        {"{{ trigger.n == }}", -1},
        {"{{ == 1 }}", -1},
        {"{{ }}", -1},
        {"{{ 'a' < 1 }}", -1},
        {"{{ 1 == 'a' }}", -1},
        {"{{ 'a' contains 1 }}", -1},
        {"{{ 1 != '1' }}", -1},
        {"{{ trigger.n == 1 == 2 }}", -1},
        {"{{ (trigger.n }}", -1},
        {"{{ trigger.n) }}", -1},
        {"{{ trigger.n & 1 }}", -1},
        {"{{ trigger.n = 1 }}", -1},
        {"{{ 'unterminated }}", -1},
        {"{{ 'bad \\q escape' }}", -1},
        {"{{ '\\u12' }}", -1},
        {"{{ '\\ud800' }}", -1},
        {"{{ '\\udc00' }}", -1},
        {"{{ '\\u0000' }}", -1},
        {"{{ 01 }}", -1},
        {"{{ 1. }}", -1},
        {"{{ 1e }}", -1},
        {"{{ 12abc }}", -1},
        {"{{ steps[3].output }}", -1},
        {"{{ run.name }}", -1},
        {"{{ trigger.yes }} tail", -1},
        {"head {{ trigger.yes }}", -1},
        {"{{ trigger.yes }}{{ trigger.yes }}", -1},
        {"{{ TRUE }}", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = eval(cases[i].cond, 3, false);
        if (!ok(got == cases[i].want, cases[i].cond))
            printf("#   got %d, want %d\n", got, cases[i].want);
    }
    {
        const struct err *e = parse_err("{{ 'a' < 1 }}", true, 3, "steps[2].condition");
        ok(e && strcmp(e->param, "steps[2].condition") == 0 && strstr(e->msg, "string"),
           "the literal type error names the condition");
        e = parse_err("{{ a }}", true, 3, "steps[2].condition");
        ok(e && strstr(e->msg, "unknown root"), "an unknown root in a condition");
    }
    {
        /* Depth: 64 levels of parentheses parse, 65 do not; deep '!' chains alike. */
        struct buf b;
        buf_init(&b, 1u << 16);
        for (int depth = 64; depth <= 65; depth++) {
            buf_reset(&b);
            buf_appends(&b, "{{ ");
            for (int i = 0; i < depth; i++)
                buf_appends(&b, "(");
            buf_appends(&b, "true");
            for (int i = 0; i < depth; i++)
                buf_appends(&b, ")");
            buf_appends(&b, " }}");
            is_int(eval(buf_ptr(&b), 3, false), depth == 64 ? 1 : -1, "parenthesis depth");
            buf_reset(&b);
            buf_appends(&b, "{{ ");
            for (int i = 0; i < depth; i++)
                buf_appends(&b, "!");
            buf_appends(&b, "true }}");
            is_int(eval(buf_ptr(&b), 3, false), depth == 64 ? 1 : -1, "'!' depth");
        }
        /* 256 terms parse, more do not. */
        buf_reset(&b);
        buf_appends(&b, "{{ true");
        for (int i = 0; i < 127; i++)
            buf_appends(&b, " || false");
        buf_appends(&b, " }}");
        is_int(eval(buf_ptr(&b), 3, false), 1, "255 nodes");
        buf_reset(&b);
        buf_appends(&b, "{{ true");
        for (int i = 0; i < 200; i++)
            buf_appends(&b, " || false");
        buf_appends(&b, " }}");
        is_int(eval(buf_ptr(&b), 3, false), -1, "more than 256 nodes");
        buf_cleanup(&b);
    }
}

static void test_three_valued(void)
{
    static const struct {
        const char *cond;
        int want;
    } cases[] = {
        {"{{ steps[1].output.label == 'billing' }}", TMPL_UNKNOWN},
        {"{{ steps[0].output }}", TMPL_UNKNOWN},
        {"{{ !steps[0].output }}", TMPL_UNKNOWN},
        {"{{ false && steps[0].output }}", TMPL_FALSE},
        {"{{ steps[0].output && false }}", TMPL_FALSE},
        {"{{ true || steps[0].output }}", TMPL_TRUE},
        {"{{ steps[0].output || true }}", TMPL_TRUE},
        {"{{ true && steps[0].output }}", TMPL_UNKNOWN},
        {"{{ false || steps[0].output }}", TMPL_UNKNOWN},
        {"{{ trigger.n == 42 }}", TMPL_TRUE},
        {"{{ trigger.n == 41 }}", TMPL_FALSE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        is_int(eval(cases[i].cond, 3, true), cases[i].want, cases[i].cond);
    /* Without placeholders the same conditions are two-valued. */
    is_int(eval("{{ steps[1].output.label == 'billing' }}", 3, false), TMPL_TRUE, "live");
    is_int(eval("{{ true && steps[2].output }}", 3, false), TMPL_FALSE, "live, missing output");
    {
        struct tmpl *t = NULL;
        tmpl_cond_parse("{{ trigger.n }}", 15, 3, "p", &t, NULL);
        ok(!tmpl_uses_steps(t), "no step reference");
        tmpl_free(t);
        tmpl_parse("x {{steps[0].output}}", 21, 3, "p", &t, NULL);
        ok(tmpl_uses_steps(t), "a step reference");
        tmpl_free(t);
        ok(!tmpl_uses_steps(NULL), "NULL uses nothing");
        tmpl_free(NULL);
    }
}

int main(void)
{
    json_error_t je;
    data = json_loads(
        "{\"trigger\": {\"name\": \"Ada\", \"n\": 42, \"x\": 1.5, \"yes\": true, \"no\": false,"
        " \"nothing\": null, \"list\": [1, \"two\", {\"k\": 3}], \"obj\": {\"a\": {\"b\":"
        " \"deep\"}, \"with-dash_\": \"ok\"}, \"uni\": \"\xc3\xbcn\xc3\xaf\", \"empty\": \"\","
        " \"zero\": 0, \"f\": \"false\", \"arr\": [], \"o\": {}},"
        " \"steps\": [{\"output\": \"first\"}, {\"output\": {\"label\": \"billing\", \"score\":"
        " 0.75}}],"
        " \"workflow\": {\"id\": \"wf_1\"}, \"run\": {\"id\": \"run_1\"}}",
        JSON_PRESERVE_ORDER, &je);
    if (!data) {
        printf("# bad test data: %s\n", je.text);
        return 1;
    }
    subtest("render") test_render();
    subtest("template errors") test_template_errors();
    subtest("conditions") test_conditions();
    subtest("three-valued") test_three_valued();
    json_decref(data);
    return done_testing();
}
