/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tool_rules: an employee's tool rules (tools/rules.c).
 *   1. The input as stored rules: tools_rules_parse(). When it accepts, every rule's name is
 *      well formed as a pattern, no name is there twice, the policy each rule names is the one
 *      tools_policy_of() gives for its own name when that name has no '*' (the exact rule
 *      wins), and writing the rules back gives text that parses to the same rules.
 *   2. The input as a name: tools_name_ok() as a tool name implies it as a rule name, and a
 *      well-formed tool name matched against rules parsed above never crashes.
 * Pure: no I/O; the arena is released.
 */
#include "../../src/core/mem.h"
#include "../../src/tools/tools.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_tool_rules: check failed at line %d: %s\n", __LINE__, #c);       \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static void check_rules(const struct tools_rules *r, struct arena *a)
{
    json_t *back;
    char *text;
    struct tools_rules again;

    CHECK(r->n <= TOOLS_RULES_MAX);
    for (size_t i = 0; i < r->n; i++) {
        size_t len = strlen(r->v[i].name);
        CHECK(tools_name_ok(r->v[i].name, len, true));
        CHECK(r->v[i].policy >= TOOLS_AUTO && r->v[i].policy <= TOOLS_DENY);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(r->v[i].name, r->v[j].name) != 0);
        if (r->v[i].name[len - 1] != '*')
            CHECK(tools_policy_of(r, r->v[i].name) == r->v[i].policy);
    }
    back = tools_rules_json(r);
    text = json_dumps(back, JSON_COMPACT);
    json_decref(back);
    CHECK(text != NULL);
    CHECK(tools_rules_parse(text, strlen(text), a, &again) == 0);
    CHECK(again.n == r->n);
    for (size_t i = 0; i < r->n; i++)
        CHECK(strcmp(again.v[i].name, r->v[i].name) == 0 && again.v[i].policy == r->v[i].policy);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct arena a;
    struct tools_rules r;
    const char *s = (const char *)data;
    bool parsed;

    arena_init(&a);
    parsed = tools_rules_parse(s, size, &a, &r) == 0;
    if (parsed)
        check_rules(&r, &a);
    else
        CHECK(r.n == 0);
    if (tools_name_ok(s, size, false)) {
        char *name = arena_alloc(&a, size + 1);
        CHECK(tools_name_ok(s, size, true));
        memcpy(name, s, size);
        name[size] = 0;
        if (parsed)
            (void)tools_policy_of(&r, name);
    }
    arena_cleanup(&a);
    return 0;
}
