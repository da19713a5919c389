/* SPDX-License-Identifier: MIT */
/* Unit tests of llm/: the built-in engine (deterministic, honest, chunked; it calls no tools and
 * answers the user message when a request has tools and steps) and word counts. The openai
 * engine: test_llm_openai.c. */
#include "../../src/core/buf.h"
#include "../../src/llm/llm.h"
#include "../../src/llm/llm_int.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

struct got {
    struct buf text;
    int deltas;
    int tool_calls;
    int done;
    struct llm_usage usage;
    int failed;
};

static void on_delta(void *ud, const char *p, size_t n)
{
    struct got *g = ud;
    buf_append(&g->text, p, n);
    g->deltas++;
}

static void on_tool_calls(void *ud, const struct llm_tool_call *calls, size_t n)
{
    struct got *g = ud;
    (void)calls;
    (void)n;
    g->tool_calls++;
}

static void on_done(void *ud, const struct llm_usage *u, const struct err *e)
{
    struct got *g = ud;
    g->done++;
    g->failed = e != NULL;
    if (u)
        g->usage = *u;
}

static void run(struct llm *l, const struct llm_request *req, struct got *g)
{
    struct llm_sink sink = {
        .delta = on_delta, .tool_calls = on_tool_calls, .done = on_done, .ud = g};
    memset(g, 0, sizeof(*g));
    buf_init(&g->text, 1 << 20);
    llm_call(l, req, &sink);
}

static enum llm_answer_kind kind(const char *q)
{
    return llm_answer_kind(q, strlen(q));
}

static bool holds(const char *s, enum llm_answer_kind k)
{
    return llm_answer_holds(s, strlen(s), k);
}

static double overlap(const char *q, const char *s)
{
    return llm_answer_overlap(q, strlen(q), s, strlen(s));
}

/* answer.c: the kind of answer a question asks for, and the sentences that hold one. */
static void answer_kinds(void)
{
    is_int(kind("How long until I am reimbursed after a return?"), LLM_ANSWER_TIME, "how long");
    is_int(kind("When does the office open?"), LLM_ANSWER_TIME, "when");
    is_int(kind("HOW SOON can you ship?"), LLM_ANSWER_TIME, "case folded");
    is_int(kind("How many days do I have?"), LLM_ANSWER_TIME, "how many days");
    is_int(kind("What time is the meeting?"), LLM_ANSWER_TIME, "what time");
    is_int(kind("How much is the premium plan?"), LLM_ANSWER_AMOUNT, "how much");
    is_int(kind("How many seats are included?"), LLM_ANSWER_AMOUNT, "how many seats");
    is_int(kind("What does shipping cost?"), LLM_ANSWER_AMOUNT, "cost");
    is_int(kind("Who approves a return?"), LLM_ANSWER_ANY, "who: any");
    is_int(kind("How do I return an item?"), LLM_ANSWER_ANY, "how do: any");
    is_int(kind(""), LLM_ANSWER_ANY, "empty");
    is_int(llm_answer_kind("how long", 3), LLM_ANSWER_ANY, "bounded by len");

    ok(holds("Refunds are processed within 5 business days.", LLM_ANSWER_TIME), "5 business days");
    ok(holds("Returns are accepted for thirty days.", LLM_ANSWER_TIME), "number word + unit");
    ok(holds("The office opens on Monday.", LLM_ANSWER_TIME), "a weekday");
    ok(holds("Payment is due within a week.", LLM_ANSWER_TIME), "a week");
    ok(!holds("Shipping costs are not refunded unless damaged.", LLM_ANSWER_TIME), "no time");
    ok(!holds("Five people work in the office every day.", LLM_ANSWER_TIME),
       "a number too far from its unit");
    ok(!holds("We have 5 days.", LLM_ANSWER_ANY), "ANY never holds");
    ok(holds("The plan costs $40.", LLM_ANSWER_AMOUNT), "a dollar sign");
    ok(holds("It includes 12 seats.", LLM_ANSWER_AMOUNT), "a number");
    ok(holds("It includes twelve seats.", LLM_ANSWER_AMOUNT), "a number word");
    ok(!holds("It includes a seat.", LLM_ANSWER_AMOUNT), "'a' is no amount");

    ok(overlap("How do I return an item?", "To start a return, choose Return item.") == 1.0,
       "both topic words");
    ok(overlap("How do I return an item?", "Items can be returned within 30 days.") == 1.0,
       "by stem: items, returned");
    ok(overlap("How do I return an item?", "Shipping is not refunded unless the item broke.") ==
           0.5,
       "one of two");
    ok(overlap("How do I return an item?", "Gift cards cannot be exchanged.") == 0.0, "none");
    ok(overlap("How is it?", "Anything.") == 0.0, "no topic words: 0");
}

int main(void)
{
    struct llm *l = NULL;
    struct llm_config cfg = {.provider = "builtin"};
    struct llm_message hist[] = {{.role = "user", .content = "earlier question"},
                                 {.role = "assistant", .content = "earlier answer"}};
    struct llm_tool tools[] = {{"knowledge__search", "Search.", "{\"type\":\"object\"}"}};
    struct llm_tool_call call = {"call_1", "knowledge__search", "{\"query\":\"offsite\"}"};
    struct llm_message steps[] = {
        {.role = "assistant", .tool_calls = &call, .ntool_calls = 1},
        {.role = "tool", .content = "{\"passages\":[]}", .tool_call_id = "call_1"}};
    struct llm_request req = {
        .employee_name = "Ava",
        .employee_role = "Operations Coordinator",
        .persona = "You are Ava. Be concise and practical. Never invent facts.",
        .capabilities = "[\"scheduling\",\"status_reporting\"]",
        .context = "{\"team\":\"ops\"}",
        .history = hist,
        .nhistory = 2,
        .message = "Plan the offsite for next quarter",
    };
    struct got a, b;
    struct err e;

    answer_kinds();
    err_clear(&e);
    is_int(llm_new(&cfg, NULL, &l, &e), 0, "builtin engine");
    is_str(llm_name(l), "builtin", "name");
    run(l, &req, &a);
    run(l, &req, &b);
    is_int(a.done, 1, "done exactly once");
    ok(!a.failed, "no error");
    ok(a.deltas > 3, "delivered in several chunks");
    ok(strcmp(buf_ptr(&a.text), buf_ptr(&b.text)) == 0, "deterministic");
    ok(strstr(buf_ptr(&a.text), "No language model is configured") != NULL, "honest");
    ok(strstr(buf_ptr(&a.text), "Ava, Operations Coordinator") != NULL, "names the employee");
    ok(strstr(buf_ptr(&a.text), "Plan the offsite for next quarter") != NULL, "restates");
    ok(strstr(buf_ptr(&a.text), "scheduling, status reporting") != NULL, "capabilities");
    ok(strstr(buf_ptr(&a.text), "\"team\":\"ops\"") != NULL, "context");
    /* Instructions are write-only and may be confidential: never quoted in a reply. */
    ok(strstr(buf_ptr(&a.text), "Be concise and practical.") == NULL, "persona not quoted");
    is_int(a.usage.output_tokens, llm_count_words(buf_ptr(&a.text)), "output tokens are words");
    is_int(a.usage.input_tokens, 10 + 6 + 1 + 2 + 2, "input tokens are the prompt's words");
    is_int(a.tool_calls, 0, "no tool calls");
    subtest("tools and steps")
    {
        /* The built-in engine calls no tools: it answers the user message as without them. */
        req.tools = tools;
        req.ntools = 1;
        req.steps = steps;
        req.nsteps = 2;
        buf_cleanup(&b.text);
        run(l, &req, &b);
        ok(b.done == 1 && !b.failed, "done");
        is_int(b.tool_calls, 0, "no tool calls");
        ok(strcmp(buf_ptr(&a.text), buf_ptr(&b.text)) == 0, "the same reply to the message");
        req.tools = NULL;
        req.ntools = 0;
        req.steps = NULL;
        req.nsteps = 0;
    }
    req.message = "another question";
    buf_cleanup(&b.text);
    run(l, &req, &b);
    ok(strcmp(buf_ptr(&a.text), buf_ptr(&b.text)) != 0, "another message, another reply");
    buf_cleanup(&a.text);
    buf_cleanup(&b.text);
    is_int(llm_count_words("  two\twords \n"), 2, "word count");
    is_int(llm_count_words(NULL), 0, "NULL counts nothing");
    llm_free(l);
    l = NULL;
    cfg.provider = "openai";
    ok(llm_new(&cfg, NULL, &l, &e) != 0 && strcmp(e.param, "WORKFORCE_LLM_BASE_URL") == 0,
       "openai needs a base URL");
    cfg.provider = "gpt";
    ok(llm_new(&cfg, NULL, &l, &e) != 0, "unknown engine refused");
    return done_testing();
}
