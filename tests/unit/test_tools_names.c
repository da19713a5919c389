/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of tools/names.c: the names tools are shown to a model under. Plain names (each
 * '.' as "__"), the names that could be read two ways, over-long and unusual names (cut, with
 * the first 8 hex digits of the name's SHA-256; each expected result was computed apart, in
 * Python with hashlib), and for a range of generated names: the result matches
 * ^[a-zA-Z0-9_-]{1,64}$ and is the same each time.
 */
#include "../../src/tools/tools.h"
#include "t.h"

#include <stdbool.h>
#include <string.h>

static const struct {
    const char *name;
    const char *want;
} cases[] = {
    {"slack.post_message", "slack__post_message"},
    {"knowledge.search", "knowledge__search"},
    {"mcp.crm.find_contact", "mcp__crm__find_contact"},
    {"tasks", "tasks"},
    {"mcp.my-server.Get-Item2", "mcp__my-server__Get-Item2"},
    {"a_b.c", "a_b__c"},
    /* could be read two ways: hashed */
    {"a__b", "a__b_63e5c1c4"},
    {"a_.b", "a___b_34e8dac7"},
    {"a._b", "a___b_dd1c251a"},
    /* nothing, or bytes a model name cannot hold */
    {"", "_e3b0c442"},
    {"a b", "a_b_c8687a08"},
    {"slack.\xe9", "slack____fcb81311"},
    /* too long once mapped: the first 55 bytes, '_', 8 hex digits */
    {"mcp.server.xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
     "mcp__server__xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_85d2724f"},
    {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_9537c5fd"},
    /* 64 bytes exactly: kept as it is */
    {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
};

/* Whether 's' matches ^[a-zA-Z0-9_-]{1,64}$. */
static bool model_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > TOOLS_MODEL_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return false;
    }
    return true;
}

static void test_cases(void)
{
    char out[TOOLS_MODEL_NAME_MAX + 1];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char what[160];
        snprintf(what, sizeof(what), "'%.100s'", cases[i].name);
        tools_model_name(cases[i].name, out);
        is_str(out, cases[i].want, what);
    }
    subtest("two ways apart")
    {
        char a[TOOLS_MODEL_NAME_MAX + 1], b[TOOLS_MODEL_NAME_MAX + 1];
        tools_model_name("a_.b", a);
        tools_model_name("a._b", b);
        ok(strcmp(a, b) != 0, "a_.b and a._b are shown apart");
        tools_model_name("a.b", a);
        tools_model_name("a__b", b);
        ok(strcmp(a, b) != 0, "a.b and a__b are shown apart");
    }
}

/* Names from a small alphabet of every length up to 80: each result is a model name, and the
 * same for the same name. */
static void test_generated(void)
{
    static const char alphabet[] = "a._-Z9 \xff";
    size_t bad = 0, unstable = 0, total = 0;
    char name[81], out[TOOLS_MODEL_NAME_MAX + 1], again[TOOLS_MODEL_NAME_MAX + 1];
    unsigned seed = 12345;

    for (size_t len = 0; len <= 80; len++) {
        for (int round = 0; round < 50; round++) {
            for (size_t i = 0; i < len; i++) {
                seed = seed * 1103515245u + 12345u;
                name[i] = alphabet[(seed >> 16) % (sizeof(alphabet) - 1)];
            }
            name[len] = '\0';
            tools_model_name(name, out);
            tools_model_name(name, again);
            total++;
            if (!model_name_ok(out)) {
                if (bad++ == 0)
                    printf("# '%s' -> '%s'\n", name, out);
            }
            if (strcmp(out, again) != 0)
                unstable++;
        }
    }
    is_int(bad, 0, "every result matches ^[a-zA-Z0-9_-]{1,64}$");
    is_int(unstable, 0, "the same name, the same result");
    ok(total == 81 * 50, "names tried");
}

/* The name a journaled call was shown under: a tool's name as tools_model_name() maps it, a
 * name that is a model name already and holds no '.' (a client's tool, a name the model made
 * up) as it is. */
static void test_shown(void)
{
    static const struct {
        const char *name;
        const char *want;
    } shown[] = {
        {"knowledge.search", "knowledge__search"},
        {"a.b", "a__b"},
        {"get_weather", "get_weather"},
        {"chat__post", "chat__post"},
        {"a__b", "a__b"},
        {"tasks__create", "tasks__create"},
        {"x-y_Z9", "x-y_Z9"},
        {"a b", "a_b_c8687a08"},
        {"", "_e3b0c442"},
        {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
        {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx_9537c5fd"},
    };
    char out[TOOLS_MODEL_NAME_MAX + 1];
    for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
        char what[160];
        snprintf(what, sizeof(what), "shown: '%.100s'", shown[i].name);
        tools_shown_name(shown[i].name, out);
        is_str(out, shown[i].want, what);
    }
}

int main(void)
{
    test_cases();
    test_generated();
    test_shown();
    return done_testing();
}
