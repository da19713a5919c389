/* SPDX-License-Identifier: MIT */
/* Unit tests of tools/: rule names, binding rules with their error paths, the most specific
 * rule, stored rules read back, the catalog's rows and the checks of a call's arguments. */
#include "../../src/auth/auth.h"
#include "../../src/store/store.h"
#include "../../src/tools/tools.h"
#include "t.h"

#include <string.h>

static int bind_text(const char *text, struct arena *a, struct tools_rules *r, struct err *e)
{
    json_t *v = json_loads(text, JSON_ALLOW_NUL, NULL);
    int rc;
    err_clear(e);
    rc = tools_rules_bind(v, a, r, e);
    json_decref(v);
    return rc;
}

static bool name_ok(const char *s, bool pattern)
{
    return tools_name_ok(s, strlen(s), pattern);
}

static void test_names(void)
{
    subtest("names")
    {
        static const char *const good[] = {"knowledge.search", "slack.post_message",
                                           "mcp.crm.find-contact", "mcp.crm.Find_Contact", "a"};
        static const char *const bad[] = {"",        "Slack.post", ".search", "knowledge.",
                                          "a..b",    "a b",        "a/b",     "é",
                                          "slack.*", "*",          "a*b",     "1abc"};
        static const char *const patterns[] = {"*", "slack.*", "mcp.crm.*", "slack.post_*",
                                               "slack*"};
        static const char *const bad_patterns[] = {"**", "a*b*", ".*", "a..*", "*a", "Slack.*"};
        char longest[TOOLS_NAME_MAX + 2];
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
            ok(name_ok(good[i], false) && name_ok(good[i], true), good[i]);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            ok(!name_ok(bad[i], false), bad[i]);
        for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++)
            ok(name_ok(patterns[i], true), patterns[i]);
        for (size_t i = 0; i < sizeof(bad_patterns) / sizeof(bad_patterns[0]); i++)
            ok(!name_ok(bad_patterns[i], true), bad_patterns[i]);
        memset(longest, 'a', sizeof(longest));
        longest[TOOLS_NAME_MAX] = 0;
        ok(name_ok(longest, false), "200 bytes");
        longest[TOOLS_NAME_MAX] = 'a';
        longest[TOOLS_NAME_MAX + 1] = 0;
        ok(!name_ok(longest, false), "201 bytes");
    }
}

static void test_bind(void)
{
    struct arena a;
    struct tools_rules r;
    struct err e;

    arena_init(&a);
    subtest("binding rules")
    {
        static const struct {
            const char *text, *param;
        } refused[] = {
            {"{}", "tools"},
            {"[1]", "tools[0]"},
            {"[{\"name\":\"slack.*\",\"policy\":\"auto\"},{\"name\":\"Slack\",\"policy\":\"auto\"}"
             "]",
             "tools[1].name"},
            {"[{\"name\":\"slack.*\",\"policy\":\"ask\"}]", "tools[0].policy"},
            {"[{\"name\":\"slack.*\"}]", "tools[0].policy"},
            {"[{\"policy\":\"auto\"}]", "tools[0].name"},
            {"[{\"name\":7,\"policy\":\"auto\"}]", "tools[0].name"},
            {"[{\"name\":\"a\",\"policy\":\"auto\",\"why\":1}]", "tools[0].why"},
            {"[{\"name\":\"a\",\"policy\":\"auto\"},{\"name\":\"a\",\"policy\":\"deny\"}]",
             "tools[1].name"},
            {"[{\"name\":\"a\\u0000b\",\"policy\":\"auto\"}]", "tools[0].name"},
        };
        char many[8192];
        size_t used;
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
            ok(bind_text(refused[i].text, &a, &r, &e) == ERR_INVALID && r.n == 0, refused[i].text);
            is_str(e.param, refused[i].param, "its param");
        }
        ok(bind_text("[]", &a, &r, &e) == 0 && r.n == 0, "no rules: nothing offered");
        ok(bind_text("[{\"name\":\"slack.*\",\"policy\":\"approve\"},{\"name\":\"*\",\"policy\":"
                     "\"deny\"}]",
                     &a, &r, &e) == 0 &&
               r.n == 2 && r.v[0].policy == TOOLS_APPROVE && r.v[1].policy == TOOLS_DENY,
           "two rules");
        used = (size_t)snprintf(many, sizeof(many), "[");
        for (int i = 0; i <= TOOLS_RULES_MAX; i++)
            used += (size_t)snprintf(many + used, sizeof(many) - used,
                                     "%s{\"name\":\"t%d\",\"policy\":\"auto\"}", i ? "," : "", i);
        snprintf(many + used, sizeof(many) - used, "]");
        ok(bind_text(many, &a, &r, &e) == ERR_INVALID, "65 rules refused");
        is_str(e.param, "tools", "its param");
    }
    arena_cleanup(&a);
}

static void test_match(void)
{
    struct arena a;
    struct tools_rules r;
    const char *rules = "[{\"name\":\"*\",\"policy\":\"deny\"},"
                        "{\"name\":\"slack.*\",\"policy\":\"approve\"},"
                        "{\"name\":\"slack.list_channels\",\"policy\":\"auto\"},"
                        "{\"name\":\"mcp.crm.*\",\"policy\":\"auto\"},"
                        "{\"name\":\"mcp.crm.delete*\",\"policy\":\"approve\"}]";
    arena_init(&a);
    subtest("the most specific rule")
    {
        ok(tools_rules_parse(rules, strlen(rules), &a, &r) == 0 && r.n == 5, "stored rules read");
        is_int(tools_policy_of(&r, "slack.list_channels"), TOOLS_AUTO, "the exact name wins");
        is_int(tools_policy_of(&r, "slack.post_message"), TOOLS_APPROVE, "then slack.*");
        is_int(tools_policy_of(&r, "mcp.crm.delete_contact"), TOOLS_APPROVE, "the longer prefix");
        is_int(tools_policy_of(&r, "mcp.crm.find"), TOOLS_AUTO, "mcp.crm.*");
        is_int(tools_policy_of(&r, "github.create_issue"), TOOLS_DENY, "then *");
        const char *one = "[{\"name\":\"slack.*\",\"policy\":\"auto\"}]";
        ok(tools_rules_parse(one, strlen(one), &a, &r) == 0, "one rule");
        is_int(tools_policy_of(&r, "knowledge.search"), TOOLS_UNLISTED, "no rule: not offered");
        is_int(tools_policy_of(&r, "slack"), TOOLS_UNLISTED, "slack.* does not name 'slack'");
        ok(tools_rules_parse("[{\"name\":\"a\"}]", 14, &a, &r) == ERR_INVALID && r.n == 0,
           "damaged stored rules: none");
        ok(tools_rules_parse("nope", 4, &a, &r) == ERR_INVALID && r.n == 0, "not JSON: none");
    }
    subtest("rules written back")
    {
        json_t *j;
        char *s;
        ok(tools_rules_parse(rules, strlen(rules), &a, &r) == 0, "parsed");
        j = tools_rules_json(&r);
        s = json_dumps(j, JSON_COMPACT);
        is_str(s, rules, "the same text");
        free(s);
        json_decref(j);
        ok(tools_rules_parse(STORE_EMP_TOOLS_DEFAULT, strlen(STORE_EMP_TOOLS_DEFAULT), &a, &r) ==
                   0 &&
               r.n == 1 && tools_policy_of(&r, "knowledge.search") == TOOLS_AUTO,
           "the store's default is well formed");
    }
    arena_cleanup(&a);
}

static void test_catalog(void)
{
    size_t n;
    const struct tools_def *d = tools_defs(&n);
    struct arena a;
    struct err e;
    struct tools_args args;

    arena_init(&a);
    subtest("the catalog")
    {
        size_t writes = 0, reads = 0;
        ok(n == 15, "5 built-in, 5 integration operations and 5 reading ones");
        for (size_t i = 0; i < n; i++) {
            json_t *schema = tools_def_schema(&d[i]);
            ok(name_ok(d[i].name, false), d[i].name);
            ok(tools_def_find(d[i].name) == &d[i], "found by name, once");
            ok(json_is_object(schema) &&
                   strcmp(json_string_value(json_object_get(schema, "type")), "object") == 0 &&
                   json_object_get(schema, "additionalProperties") == json_false(),
               "a closed object schema");
            ok((d[i].source == TOOLS_INTEGRATION) == (d[i].provider != NULL) &&
                   (!d[i].provider ||
                    strncmp(d[i].name, d[i].provider, strlen(d[i].provider)) == 0),
               "an integration tool names its provider");
            if (d[i].source == TOOLS_INTEGRATION && d[i].effect == TOOLS_WRITE)
                writes++;
            if (d[i].source == TOOLS_INTEGRATION && d[i].effect == TOOLS_READ)
                reads +=
                    i > 0 && d[i - 1].provider && strcmp(d[i - 1].provider, d[i].provider) == 0;
            json_decref(schema);
        }
        is_int((int)writes, 5, "the five operations of §13 write");
        is_int((int)reads, 5, "each followed by a reading one of the same provider");
        ok(tools_def_find("slack.*") == NULL && tools_def_find("nope") == NULL, "unknown: NULL");
    }
    subtest("a call's arguments")
    {
        const struct tools_def *search = tools_def_find("knowledge.search");
        json_t *v = json_pack("{s:s,s:i}", "query", "refund policy", "limit", 3);
        ok(tools_args_bind(search, v, &a, &args, &e) == 0 && args.limit == 3 &&
               strcmp(args.query, "refund policy") == 0 && args.priority == -1,
           "bound");
        json_decref(v);
        v = json_pack("{s:i}", "limit", 3);
        err_clear(&e);
        ok(tools_args_bind(search, v, &a, &args, &e) == ERR_INVALID, "query missing");
        is_str(e.param, "query", "named");
        json_decref(v);
        v = json_pack("{s:s,s:i}", "query", "x", "limit", 500);
        err_clear(&e);
        ok(tools_args_bind(search, v, &a, &args, &e) == ERR_INVALID, "limit out of range");
        is_str(e.param, "limit", "named");
        json_decref(v);
        v = json_pack("{s:s,s:s}", "query", "x", "path", "/etc/passwd");
        err_clear(&e);
        ok(tools_args_bind(search, v, &a, &args, &e) == ERR_INVALID, "an unknown member");
        json_decref(v);
        v = json_pack("[s]", "x");
        err_clear(&e);
        ok(tools_args_bind(search, v, &a, &args, &e) == ERR_INVALID, "not an object");
        json_decref(v);
    }
    arena_cleanup(&a);
}

int main(void)
{
    test_names();
    test_bind();
    test_match();
    test_catalog();
    subtest("scopes of §19")
    {
        uint32_t bits = 0;
        ok(auth_scopes_parse("tools,approvals", &bits, NULL) == 0 &&
               bits == (AUTH_SCOPE_TOOLS | AUTH_SCOPE_APPROVALS),
           "tools and approvals are scopes");
        ok(auth_scope_allows_any(AUTH_SCOPE_EMPLOYEES_READ,
                                 AUTH_SCOPE_TOOLS | AUTH_SCOPE_EMPLOYEES_READ),
           "any one of two suffices");
        ok(!auth_scope_allows_any(AUTH_SCOPE_CHAT, AUTH_SCOPE_TOOLS | AUTH_SCOPE_EMPLOYEES_READ),
           "neither: refused");
        ok(auth_scope_allows_any(0, AUTH_SCOPE_TOOLS), "no scopes: full access");
    }
    return done_testing();
}
