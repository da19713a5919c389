/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of llm/tool_stream.c: the tool calls of a model step assembled from an
 * OpenAI-compatible answer. Data-driven: each case is the deltas (or the message) a server
 * sends, one JSON document per line, and either the calls it makes ("id name args" per call) or
 * a piece of the error. Then the caps at their edges, the sticky error and a reset.
 */
#include "../../src/core/buf.h"
#include "../../src/llm/tool_stream.h"
#include "../../src/tools/tools.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

/* llm/ may not include tools/: the cap on a call's name is written twice, and checked here. */
_Static_assert(LLM_TOOL_NAME_MAX == TOOLS_MODEL_NAME_MAX, "a call's name is a model name");

static const struct {
    const char *what;
    bool message;      /* each line is a whole answer's message, not a delta */
    const char *input; /* JSON documents, one a line */
    const char *calls; /* "id|name|args" per call, joined by "\n"; NULL: an error */
    const char *error; /* a piece of the error message */
} cases[] = {
    {"OpenAI's stream: two calls, the arguments in pieces", false,
     "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_a\","
     "\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"lo\"}}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"cation\\\": \\\"Pa\"}}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ris\\\"}\"}}]}\n"
     "{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\","
     "\"function\":{\"name\":\"slack__post_message\",\"arguments\":\"\"}}]}\n"
     "{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{}\"}}]}\n"
     "{}\n",
     "call_a|get_weather|{\"location\": \"Paris\"}\ncall_b|slack__post_message|{}", NULL},
    {"pieces of two calls interleaved", false,
     "{\"tool_calls\":[{\"index\":0,\"id\":\"c0\",\"function\":{\"name\":\"a\"}},"
     "{\"index\":1,\"id\":\"c1\",\"function\":{\"name\":\"b\",\"arguments\":\"[1\"}}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"x\\\":1}\"}}]}\n"
     "{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"]\"}}]}\n",
     "c0|a|{\"x\":1}\nc1|b|[1]", NULL},
    {"id, type and name repeated, null or empty in later pieces", false,
     "{\"tool_calls\":[{\"index\":0,\"id\":\"c0\",\"type\":\"function\","
     "\"function\":{\"name\":\"a\",\"arguments\":\"{\"}}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"id\":\"c0\",\"type\":\"function\","
     "\"function\":{\"name\":\"a\",\"arguments\":\"}\"}}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"id\":null,\"type\":null,"
     "\"function\":{\"name\":\"\",\"arguments\":null}}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"id\":\"\",\"function\":null}]}\n",
     "c0|a|{}", NULL},
    {"no index: a new id opens a call, no id continues the last", false,
     "{\"tool_calls\":[{\"id\":\"c0\",\"function\":{\"name\":\"a\",\"arguments\":\"{\\\"q\"}}]}\n"
     "{\"tool_calls\":[{\"function\":{\"arguments\":\"\\\":2}\"}}]}\n"
     "{\"tool_calls\":[{\"id\":\"c1\",\"function\":{\"name\":\"b\",\"arguments\":\"{}\"}}]}\n"
     "{\"tool_calls\":[{\"id\":\"c1\",\"function\":{\"arguments\":\"\"}}]}\n",
     "c0|a|{\"q\":2}\nc1|b|{}", NULL},
    {"no id, no arguments: call_<index> and {}", false,
     "{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"a\"}},"
     "{\"index\":1,\"function\":{\"name\":\"b\",\"arguments\":\"\"}}]}\n",
     "call_0|a|{}\ncall_1|b|{}", NULL},
    {"text only, and deltas without calls", false,
     "{\"role\":\"assistant\",\"content\":\"\"}\n{\"content\":\"Hi\"}\n{\"tool_calls\":null}\n"
     "{\"tool_calls\":[]}\n{}\n",
     "", NULL},
    {"a whole answer: two calls, one with its arguments as an object", true,
     "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\","
     "\"type\":\"function\",\"function\":{\"name\":\"x\",\"arguments\":\"{\\\"a\\\":1}\"}},"
     "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"y\","
     "\"arguments\":{\"b\": [true, null]}}}]}\n",
     "call_1|x|{\"a\":1}\ncall_2|y|{\"b\":[true,null]}", NULL},
    {"a whole answer: calls by position, their index unused", true,
     "{\"tool_calls\":[{\"index\":0,\"id\":\"p\",\"function\":{\"name\":\"x\"}},"
     "{\"index\":0,\"id\":\"q\",\"function\":{\"name\":\"y\"}}]}\n",
     "p|x|{}\nq|y|{}", NULL},
    {"a whole answer without calls", true, "{\"role\":\"assistant\",\"content\":\"Hello\"}\n", "",
     NULL},
    {"two ids for one call", false,
     "{\"tool_calls\":[{\"index\":0,\"id\":\"c0\",\"function\":{\"name\":\"a\"}}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"id\":\"c9\"}]}\n",
     NULL, "tool call 0 has two ids"},
    {"two names for one call", false,
     "{\"tool_calls\":[{\"index\":0,\"id\":\"c0\",\"function\":{\"name\":\"a\"}}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"b\"}}]}\n",
     NULL, "tool call 0 has two names"},
    {"one id for two calls", false,
     "{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"a\"}},"
     "{\"index\":1,\"id\":\"c\",\"function\":{\"name\":\"b\"}}]}\n",
     NULL, "tool calls 0 and 1 have the same id"},
    {"a call with no name", false, "{\"tool_calls\":[{\"index\":0,\"id\":\"c\"}]}\n", NULL,
     "tool call 0 has no name"},
    {"a gap in the indexes", false,
     "{\"tool_calls\":[{\"index\":1,\"id\":\"c\",\"function\":{\"name\":\"a\"}}]}\n", NULL,
     "tool call 0 never came"},
    {"index 16", false, "{\"tool_calls\":[{\"index\":16,\"id\":\"c\",\"function\":{}}]}\n", NULL,
     "more than 16 tool calls"},
    {"a huge index", false, "{\"tool_calls\":[{\"index\":9223372036854775807}]}\n", NULL,
     "more than 16 tool calls"},
    {"a negative index", false, "{\"tool_calls\":[{\"index\":-1}]}\n", NULL, "index"},
    {"an index as text", false, "{\"tool_calls\":[{\"index\":\"0\"}]}\n", NULL, "index"},
    {"an index as a real", false, "{\"tool_calls\":[{\"index\":0.0}]}\n", NULL, "index"},
    {"a type other than function", false,
     "{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"type\":\"custom\"}]}\n", NULL,
     "of type custom, not function"},
    {"tool_calls not an array", false, "{\"tool_calls\":{\"index\":0}}\n", NULL,
     "tool_calls is not an array"},
    {"an entry not an object", false, "{\"tool_calls\":[7]}\n", NULL, "not an object"},
    {"function not an object", false, "{\"tool_calls\":[{\"index\":0,\"function\":\"f\"}]}\n", NULL,
     "not shaped"},
    {"an id as a number", false, "{\"tool_calls\":[{\"index\":0,\"id\":5}]}\n", NULL, "not shaped"},
    {"a name as an array", false, "{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":[]}}]}\n",
     NULL, "not shaped"},
    {"arguments as a number", false,
     "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":1}}]}\n", NULL, "not text"},
    {"arguments as an object after text", false,
     "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\"}}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":{}}}]}\n",
     NULL, "not text"},
    {"the first error sticks", false,
     "{\"tool_calls\":[{\"index\":-1}]}\n"
     "{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"a\"}}]}\n",
     NULL, "index"},
};

/* Feed the lines of 'input' to 's' (as deltas, or messages); 0 or the first error. */
static int feed(struct llm_tool_stream *s, const char *input, bool message, struct err *e)
{
    int first = 0;
    while (*input) {
        const char *nl = strchr(input, '\n');
        size_t n = nl ? (size_t)(nl - input) : strlen(input);
        json_error_t je;
        json_t *v = json_loadb(input, n, 0, &je);
        int rc;
        if (!v) {
            printf("# bad test JSON: %.*s (%s)\n", (int)n, input, je.text);
            return -1;
        }
        rc = message ? llm_tool_stream_message(s, v, e) : llm_tool_stream_delta(s, v, e);
        json_decref(v);
        if (rc && !first)
            first = rc;
        input += nl ? n + 1 : n;
    }
    return first;
}

/* The calls as "id|name|args" lines. */
static void show(const struct llm_tool_call *calls, size_t n, struct buf *out)
{
    buf_reset(out);
    for (size_t i = 0; i < n; i++)
        buf_appendf(out, "%s%s|%s|%s", i ? "\n" : "", calls[i].id, calls[i].name,
                    calls[i].arguments);
}

static void test_cases(void)
{
    struct buf got;
    buf_init(&got, 1u << 20);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct llm_tool_stream s;
        const struct llm_tool_call *calls;
        size_t n;
        struct err e, fe;
        int rc, frc;

        err_clear(&e);
        err_clear(&fe);
        llm_tool_stream_init(&s);
        rc = feed(&s, cases[i].input, cases[i].message, &e);
        frc = llm_tool_stream_finish(&s, &calls, &n, &fe);
        subtest(cases[i].what)
        {
            if (cases[i].calls) {
                is_int(rc, 0, "fed");
                is_int(frc, 0, "finished");
                show(calls, n, &got);
                is_str(buf_ptr(&got), cases[i].calls, "the calls");
            } else {
                ok(rc == ERR_UPSTREAM || frc == ERR_UPSTREAM, "an upstream error");
                is_int(frc, ERR_UPSTREAM, "finishing reports it too");
                ok(strstr(fe.msg, cases[i].error) != NULL, "it says what");
                if (!strstr(fe.msg, cases[i].error))
                    printf("#   got '%s'\n", fe.msg);
                if (rc)
                    is_str(e.msg, fe.msg, "the same error when fed and when finished");
                ok(calls == NULL && n == 0, "no calls");
            }
        }
        llm_tool_stream_cleanup(&s);
    }
    buf_cleanup(&got);
}

/* One delta of call 'index': 'id' and 'name' when not NULL, 'args' as its arguments text. */
static int delta(struct llm_tool_stream *s, int index, const char *id, const char *name,
                 const char *args, struct err *e)
{
    json_t *fn = json_object(), *c = json_object(), *arr = json_array(), *d = json_object();
    int rc;
    json_object_set_new(c, "index", json_integer(index));
    if (id)
        json_object_set_new(c, "id", json_string(id));
    if (name)
        json_object_set_new(fn, "name", json_string(name));
    if (args)
        json_object_set_new(fn, "arguments", json_string(args));
    json_object_set_new(c, "function", fn);
    json_array_append_new(arr, c);
    json_object_set_new(d, "tool_calls", arr);
    rc = llm_tool_stream_delta(s, d, e);
    json_decref(d);
    return rc;
}

static void test_caps(void)
{
    struct llm_tool_stream s;
    const struct llm_tool_call *calls;
    size_t n;
    struct err e;
    char id[LLM_TOOL_ID_MAX + 2], name[LLM_TOOL_NAME_MAX + 2];
    char *piece = malloc(4097);

    memset(piece, 'a', 4096);
    piece[4096] = '\0';
    llm_tool_stream_init(&s);
    subtest("sixteen calls")
    {
        for (int i = 0; i < LLM_TOOL_CALLS_MAX; i++) {
            char cid[16];
            snprintf(cid, sizeof(cid), "c%d", i);
            is_int(delta(&s, i, cid, "t", "{}", &e), 0, "a call");
        }
        is_int(llm_tool_stream_finish(&s, &calls, &n, &e), 0, "finished");
        is_int(n, LLM_TOOL_CALLS_MAX, "all of them");
        is_str(n == LLM_TOOL_CALLS_MAX ? calls[15].id : NULL, "c15", "in order");
    }
    subtest("ids and names at their caps")
    {
        llm_tool_stream_reset(&s);
        memset(id, 'i', LLM_TOOL_ID_MAX);
        id[LLM_TOOL_ID_MAX] = '\0';
        memset(name, 'n', LLM_TOOL_NAME_MAX);
        name[LLM_TOOL_NAME_MAX] = '\0';
        is_int(delta(&s, 0, id, name, NULL, &e), 0, "64 bytes of id and of name");
        is_int(llm_tool_stream_finish(&s, &calls, &n, &e), 0, "finished");
        ok(n == 1 && strlen(calls[0].id) == LLM_TOOL_ID_MAX &&
               strlen(calls[0].name) == LLM_TOOL_NAME_MAX,
           "kept whole");
        llm_tool_stream_reset(&s);
        id[LLM_TOOL_ID_MAX] = 'i';
        id[LLM_TOOL_ID_MAX + 1] = '\0';
        is_int(delta(&s, 0, id, "t", NULL, &e), ERR_UPSTREAM, "65 bytes of id");
        ok(strstr(e.msg, "id of tool call 0 is longer than 64 bytes") != NULL, "it says why");
        llm_tool_stream_reset(&s);
        name[LLM_TOOL_NAME_MAX] = 'n';
        name[LLM_TOOL_NAME_MAX + 1] = '\0';
        is_int(delta(&s, 0, "c", name, NULL, &e), ERR_UPSTREAM, "65 bytes of name");
        ok(strstr(e.msg, "name of tool call 0 is longer than 64 bytes") != NULL, "it says why");
    }
    subtest("arguments at their cap, in pieces")
    {
        llm_tool_stream_reset(&s);
        is_int(delta(&s, 0, "c", "t", NULL, &e), 0, "the call opens");
        for (int i = 0; i < 16; i++)
            is_int(delta(&s, 0, NULL, NULL, piece, &e), 0, "4 KiB more");
        is_int(llm_tool_stream_finish(&s, &calls, &n, &e), 0, "64 KiB fit");
        is_int(n == 1 ? strlen(calls[0].arguments) : 0, LLM_TOOL_ARGS_MAX, "all of them");
        is_int(delta(&s, 0, NULL, NULL, "x", &e), ERR_UPSTREAM, "one byte more");
        ok(strstr(e.msg, "arguments of tool call 0 are longer than 65536 bytes") != NULL,
           "it says why");
        is_int(delta(&s, 1, "d", "t", "{}", &e), ERR_UPSTREAM, "the error sticks");
        is_int(llm_tool_stream_finish(&s, &calls, &n, &e), ERR_UPSTREAM, "to the end");
        ok(strstr(e.msg, "65536") != NULL, "the first error");
    }
    subtest("a reset starts afresh")
    {
        llm_tool_stream_reset(&s);
        is_int(delta(&s, 0, "c", "t", "{\"a\":", &e), 0, "a first attempt's piece");
        llm_tool_stream_reset(&s);
        is_int(delta(&s, 0, "c", "t", "{\"a\":", &e), 0, "the retry's pieces");
        is_int(delta(&s, 0, NULL, NULL, "1}", &e), 0, "...");
        is_int(llm_tool_stream_finish(&s, &calls, &n, &e), 0, "finished");
        ok(n == 1 && strcmp(calls[0].arguments, "{\"a\":1}") == 0, "nothing of the first attempt");
    }
    llm_tool_stream_cleanup(&s);
    free(piece);
}

int main(void)
{
    test_cases();
    test_caps();
    return done_testing();
}
