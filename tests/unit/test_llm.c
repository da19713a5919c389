/* SPDX-License-Identifier: MIT */
/* Unit tests of llm/: the built-in engine (deterministic, honest, chunked) and word counts. */
#include "../../src/core/buf.h"
#include "../../src/llm/llm.h"
#include "t.h"

#include <stdlib.h>

struct got {
    struct buf text;
    int deltas;
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
    struct llm_sink sink = {on_delta, on_done, g};
    memset(g, 0, sizeof(*g));
    buf_init(&g->text, 1 << 20);
    llm_call(l, req, &sink);
}

int main(void)
{
    struct llm *l = NULL;
    struct llm_config cfg = {.provider = "builtin"};
    struct llm_message hist[] = {{"user", "earlier question"}, {"assistant", "earlier answer"}};
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
