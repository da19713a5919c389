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
        for (size_t i = 0; i < out->nhistory; i++)
            out->history[i].content = arena_strdup(a, out->history[i].content);
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
    arena_cleanup(&a);
}

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
