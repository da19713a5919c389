/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of api/openai.c's pure part, api_openai_messages(): OpenAI's `messages` to a chat
 * turn's input. Which message is the message, which are the history (in order, without system
 * ones), how system and developer messages join into the system text, text parts, and each
 * refusal with its param path. Data-driven: each refusal is one row of a table.
 */
#include "../../src/api/api.h"
#include "t.h"

#include <string.h>

/* 's' copied into 'a' (NULL stays NULL). */
static const char *copy(struct arena *a, const char *s)
{
    return s ? arena_strdup(a, s) : NULL;
}

/* Map the JSON text 'messages' into '*out' (strings in 'a'); the err in '*e'. */
static int map(const char *messages, struct arena *a, struct api_openai_input *out, struct err *e)
{
    json_error_t je;
    json_t *m = json_loads(messages, JSON_DECODE_ANY, &je);
    int rc;
    err_clear(e);
    if (!m)
        return -1;
    rc = api_openai_messages(m, a, out, e);
    if (!rc) {
        /* the input's strings must not be borrowed past the document: copy them */
        out->message = arena_strdup(a, out->message);
        for (size_t i = 0; i < out->nhistory; i++) {
            struct llm_message *h = &out->history[i];
            struct llm_tool_call *calls = arena_calloc(a, (h->ntool_calls + 1) * sizeof(*calls));
            h->content = copy(a, h->content);
            h->tool_call_id = copy(a, h->tool_call_id);
            for (size_t k = 0; k < h->ntool_calls; k++) {
                calls[k].id = copy(a, h->tool_calls[k].id);
                calls[k].name = copy(a, h->tool_calls[k].name);
                calls[k].arguments = copy(a, h->tool_calls[k].arguments);
            }
            h->tool_calls = calls;
        }
        for (size_t i = 0; i < out->nanswers; i++) {
            out->answers[i].call_id = copy(a, out->answers[i].call_id);
            out->answers[i].content = copy(a, out->answers[i].content);
        }
    }
    json_decref(m);
    return rc;
}

static void test_mapping(void)
{
    struct arena a;
    struct api_openai_input in;
    struct err e;
    arena_init(&a);

    subtest("one user message")
    {
        is_int(map("[{\"role\":\"user\",\"content\":\"hi\"}]", &a, &in, &e), 0, "mapped");
        is_str(in.message, "hi", "the message");
        is_int(in.nhistory, 0, "no history");
        ok(in.system == NULL, "no system text");
    }
    subtest("a conversation")
    {
        is_int(map("[{\"role\":\"system\",\"content\":\"S1\"},"
                   "{\"role\":\"user\",\"content\":\"u1\"},"
                   "{\"role\":\"assistant\",\"content\":\"a1\",\"refusal\":null,"
                   "\"tool_calls\":null},"
                   "{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"D\"}]},"
                   "{\"role\":\"user\",\"content\":\"u2\",\"name\":\"ana\"},"
                   "{\"role\":\"assistant\",\"content\":\"a2\"},"
                   "{\"role\":\"system\",\"content\":\"\"},"
                   "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"p1\"},"
                   "{\"type\":\"text\",\"text\":\"p2\"}]},"
                   "{\"role\":\"system\",\"content\":\"S2\"}]",
                   &a, &in, &e),
               0, "mapped");
        is_str(in.message, "p1\np2", "the last user message, parts joined by newlines");
        is_int(in.nhistory, 4, "four earlier turns");
        if (in.nhistory == 4) {
            is_str(in.history[0].role, "user", "1st role");
            is_str(in.history[0].content, "u1", "1st content");
            is_str(in.history[1].role, "assistant", "2nd role");
            is_str(in.history[1].content, "a1", "2nd content");
            is_str(in.history[2].content, "u2", "3rd content");
            is_str(in.history[3].content, "a2", "4th content");
        }
        is_str(in.system, "S1\n\nD\n\nS2", "system and developer texts, empty ones left out");
    }
    subtest("the limits of a message")
    {
        char big[32100];
        char doc[32200];
        memset(big, 'x', 32000);
        big[32000] = '\0';
        snprintf(doc, sizeof(doc), "[{\"role\":\"user\",\"content\":\"%s\"}]", big);
        is_int(map(doc, &a, &in, &e), 0, "32,000 characters");
        snprintf(doc, sizeof(doc), "[{\"role\":\"user\",\"content\":\"%sx\"}]", big);
        is_int(map(doc, &a, &in, &e), ERR_INVALID, "32,001 characters");
        is_str(e.param, "messages[0].content", "named");
        /* characters, not bytes: 20,000 two-byte characters fit */
        is_int(map("[{\"role\":\"user\",\"content\":\"\\u00e9\\u00e9\"}]", &a, &in, &e), 0,
               "multi-byte characters");
        is_str(in.message, "\xc3\xa9\xc3\xa9", "kept as UTF-8");
    }
    subtest("calls and their results in the history")
    {
        is_int(map("[{\"role\":\"user\",\"content\":\"u1\"},"
                   "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
                   "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
                   "\"arguments\":\"{}\"}},"
                   "{\"id\":\"c2\",\"type\":\"function\",\"index\":1,\"function\":{"
                   "\"name\":\"g\",\"arguments\":\"{\\\"x\\\":1}\",\"parsed_arguments\":null}}],"
                   "\"parsed\":null},"
                   "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"r2\"},"
                   "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":[{\"type\":"
                   "\"text\",\"text\":\"r1\"}]},"
                   "{\"role\":\"assistant\",\"content\":\"a1\"},"
                   "{\"role\":\"user\",\"content\":\"u2\"}]",
                   &a, &in, &e),
               0, "mapped");
        is_str(in.message, "u2", "the message");
        is_int(in.nanswers, 0, "not a follow-up");
        is_int(in.nhistory, 5, "five earlier messages");
        if (in.nhistory == 5) {
            is_str(in.history[1].role, "assistant", "the calls");
            ok(in.history[1].content == NULL, "no text");
            is_int(in.history[1].ntool_calls, 2, "two calls");
            if (in.history[1].ntool_calls == 2) {
                is_str(in.history[1].tool_calls[1].id, "c2", "an id");
                is_str(in.history[1].tool_calls[1].name, "g", "a name");
                is_str(in.history[1].tool_calls[1].arguments, "{\"x\":1}", "its arguments");
            }
            is_str(in.history[2].role, "tool", "a result");
            is_str(in.history[2].tool_call_id, "c2", "of its call");
            is_str(in.history[2].content, "r2", "its text");
            is_str(in.history[3].content, "r1", "text parts");
            is_str(in.history[4].content, "a1", "the answer after");
        }
    }
    subtest("a follow-up: the results of the last answer's calls")
    {
        is_int(map("[{\"role\":\"system\",\"content\":\"S\"},"
                   "{\"role\":\"user\",\"content\":\"u1\"},"
                   "{\"role\":\"assistant\",\"content\":\"first\",\"tool_calls\":["
                   "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\","
                   "\"arguments\":\"{}\"}}]},"
                   "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r1\"},"
                   "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
                   "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"f\","
                   "\"arguments\":\"{}\"}},"
                   "{\"id\":\"c3\",\"type\":\"function\",\"function\":{\"name\":\"g\","
                   "\"arguments\":\"{}\"}}]},"
                   "{\"role\":\"tool\",\"tool_call_id\":\"c3\",\"content\":\"r3\"},"
                   "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":\"\"}]",
                   &a, &in, &e),
               0, "mapped");
        is_str(in.message, "u1", "the message is still the last user message");
        is_int(in.nanswers, 2, "the answers to the last calls only");
        if (in.nanswers == 2) {
            is_str(in.answers[0].call_id, "c3", "in the order given");
            is_str(in.answers[0].content, "r3", "a result");
            is_str(in.answers[0].param, "messages[5].tool_call_id", "its member");
            is_str(in.answers[1].call_id, "c2", "the other");
            is_str(in.answers[1].content, "", "an empty result");
        }
        is_str(in.answers_param, "messages[4].tool_calls", "the calls' member");
        is_str(in.system, "S", "the system text");
    }
    arena_cleanup(&a);
}

/* A well-formed call of id c1. */
#define CALL                                                                                       \
    "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}"

static const struct {
    const char *messages;
    const char *param;
} refusals[] = {
    {"{}", "messages"},
    {"[]", "messages"},
    {"\"hi\"", "messages"},
    {"[{\"role\":\"system\",\"content\":\"s\"}]", "messages"},
    {"[{\"role\":\"assistant\",\"content\":\"a\"}]", "messages"},
    {"[1]", "messages[0]"},
    {"[{\"content\":\"x\"}]", "messages[0].role"},
    {"[{\"role\":7,\"content\":\"x\"}]", "messages[0].role"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"tool\",\"content\":\"r\"}]",
     "messages[1].role"},
    {"[{\"role\":\"function\",\"content\":\"x\"}]", "messages[0].role"},
    {"[{\"role\":\"User\",\"content\":\"x\"}]", "messages[0].role"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"content\":\"pre\"}]",
     "messages[1].role"},
    {"[{\"role\":\"user\"}]", "messages[0].content"},
    {"[{\"role\":\"user\",\"content\":null}]", "messages[0].content"},
    {"[{\"role\":\"user\",\"content\":{}}]", "messages[0].content"},
    {"[{\"role\":\"user\",\"content\":\"\"}]", "messages[0].content"},
    {"[{\"role\":\"user\",\"content\":[]}]", "messages[0].content"},
    {"[{\"role\":\"user\",\"content\":[\"x\"]}]", "messages[0].content[0]"},
    {"[{\"role\":\"user\",\"content\":[{\"text\":\"x\"}]}]", "messages[0].content[0]"},
    {"[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":{}}]}]",
     "messages[0].content[0].type"},
    {"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":1}]}]",
     "messages[0].content[0].text"},
    {"[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"x\",\"c\":1}]}]",
     "messages[0].content[0].c"},
    {"[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[]},"
     "{\"role\":\"user\",\"content\":\"x\"}]",
     "messages[0].tool_calls"},
    {"[{\"role\":\"user\",\"content\":\"x\",\"function_call\":{}}]", "messages[0].function_call"},
    {"[{\"role\":\"user\",\"content\":\"x\",\"name\":3}]", "messages[0].name"},
    {"[{\"role\":\"user\",\"content\":\"x\",\"extra\":true}]", "messages[0].extra"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":5}]",
     "messages[1].content"},
    /* calls and results */
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[" CALL "]}]",
     "messages[1].tool_calls"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[" CALL
     "]},{\"role\":\"tool\",\"content\":\"r\"}]",
     "messages[2].tool_call_id"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[" CALL
     "]},{\"role\":\"tool\",\"tool_call_id\":\"c9\",\"content\":\"r\"}]",
     "messages[2].tool_call_id"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[" CALL
     "]},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r\"},"
     "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r\"}]",
     "messages[3].tool_call_id"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[" CALL
     "]},{\"role\":\"tool\",\"tool_call_id\":\"c1\"}]",
     "messages[2].content"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[" CALL
     "]},{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"tool\",\"tool_call_id\":\"c1\","
     "\"content\":\"r\"}]",
     "messages[1].tool_calls"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[" CALL "," CALL
     "]},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r\"}]",
     "messages[1].tool_calls"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":["
     "{\"id\":\"c1\",\"type\":\"custom\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}]",
     "messages[1].tool_calls"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":["
     "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":{}}}]}]",
     "messages[1].tool_calls"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":["
     "{\"id\":\"c1\",\"type\":\"function\",\"extra\":1,\"function\":{\"name\":\"f\","
     "\"arguments\":\"\"}}]}]",
     "messages[1].tool_calls"},
    {"[{\"role\":\"user\",\"content\":\"x\",\"tool_calls\":[" CALL "]}]", "messages[0].tool_calls"},
    {"[{\"role\":\"user\",\"content\":\"x\",\"tool_call_id\":\"c1\"}]", "messages[0].tool_call_id"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"content\":\"a\"},"
     "{\"role\":\"assistant\",\"tool_calls\":[" CALL "]},{\"role\":\"tool\","
     "\"tool_call_id\":\"c1\",\"content\":\"r\"}]",
     "messages[1].role"},
    {"[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":[" CALL
     "]},{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"r\"},{\"role\":\"assistant\","
     "\"content\":\"done\"}]",
     "messages[3].role"},
};

static void test_refusals(void)
{
    struct arena a;
    struct api_openai_input in;
    struct err e;
    arena_init(&a);
    for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
        char what[200];
        snprintf(what, sizeof(what), "refused: %.150s", refusals[i].messages);
        is_int(map(refusals[i].messages, &a, &in, &e), ERR_INVALID, what);
        is_str(e.code, "invalid_request", "code");
        is_str(e.param, refusals[i].param, "param");
        ok(e.msg[0] != '\0', "a message");
    }
    arena_cleanup(&a);
}

int main(void)
{
    test_mapping();
    test_refusals();
    return done_testing();
}
