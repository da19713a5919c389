/* SPDX-License-Identifier: MIT */
/*
 * tools.h: the tools an employee may call, and which of them a given employee may use.
 *
 *  - The catalog (catalog.c): every tool of an organization, each with a name, a description,
 *    a JSON Schema of its arguments, a source (builtin, integration, mcp) and an effect (read,
 *    write). Built-in and integration tools are rows of a table; MCP servers add theirs.
 *  - The rules (rules.c): an employee's `tools`, `[{name, policy}]` where a name may end in
 *    `*`; the most specific rule naming a tool decides its policy, and a tool no rule names is
 *    not offered. Parsing and matching are pure and fuzzed (tests/fuzz/fuzz_tool_rules.c).
 */
#ifndef WORKFORCE_TOOLS_H
#define WORKFORCE_TOOLS_H

#include "../core/err.h"
#include "../core/mem.h"
#include "../json/json.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- Rules (rules.c) ---- */

/* What a rule decides; TOOLS_UNLISTED when no rule names the tool (it is not offered). */
enum tools_policy { TOOLS_UNLISTED = -1, TOOLS_AUTO = 0, TOOLS_APPROVE, TOOLS_DENY };

/* The policies' names, by enum tools_policy from TOOLS_AUTO, NULL-terminated. */
extern const char *const tools_policies[];

#define TOOLS_NAME_MAX 200 /* bytes of a tool name or a rule's name */
#define TOOLS_RULES_MAX 64 /* rules of one employee */

struct tools_rule {
    const char *name; /* a tool name, or a prefix followed by '*' */
    enum tools_policy policy;
};

struct tools_rules {
    struct tools_rule *v;
    size_t n;
};

/* Whether 'len' bytes at 's' are a well-formed tool name (pattern false) or rule name (pattern
 * true: it may end in '*'). */
bool tools_name_ok(const char *s, size_t len, bool pattern);

/*
 * Check the value 'v' of a request's `tools` member and bind it to 'out' (items from 'a').
 * 'v' must be an array of at most TOOLS_RULES_MAX objects {name, policy}, with no other
 * members and no name twice. ERR_INVALID with param "tools", "tools[i]", "tools[i].name" or
 * "tools[i].policy" naming what is wrong.
 */
int tools_rules_bind(const json_t *v, struct arena *a, struct tools_rules *out, struct err *e);

/*
 * Parse the stored rules 'text' ('len' bytes of JSON written by tools_rules_json()) into 'out'
 * (from 'a'). Returns 0, or ERR_INVALID when the text is not rules as bound above (then 'out'
 * holds none). Pure: no I/O, allocations from 'a' only.
 */
int tools_rules_parse(const char *text, size_t len, struct arena *a, struct tools_rules *out);

/* The rules 'r' as stored and answered: a JSON array (a new reference). */
json_t *tools_rules_json(const struct tools_rules *r);

/* The policy the rules 'r' give the tool 'name': the rule of the same name, else the rule with
 * the longest prefix that 'name' starts with, else TOOLS_UNLISTED. */
enum tools_policy tools_policy_of(const struct tools_rules *r, const char *name);

/* The JSON Schema of a `tools` member (a new reference), for the API document. */
json_t *tools_rules_schema(void);

/* ---- The catalog (catalog.c) ---- */

enum tools_source { TOOLS_BUILTIN, TOOLS_INTEGRATION, TOOLS_MCP };
enum tools_effect { TOOLS_READ, TOOLS_WRITE };
extern const char *const tools_sources[]; /* by enum tools_source, NULL-terminated */
extern const char *const tools_effects[]; /* by enum tools_effect, NULL-terminated */

/* A built-in or integration tool. */
struct tools_def {
    const char *name;
    enum tools_source source;
    enum tools_effect effect;
    const char *provider;    /* TOOLS_INTEGRATION: the provider whose connection it uses */
    const char *description; /* what the model is told */
    struct jb_binding args;  /* its arguments: checked by tools_args_bind(), shown as schema */
    uint32_t scope;          /* the key scope (auth.h) a call needs: the turn's starter's rights */
    /* TOOLS_MCP: the server's JSON Schema of the arguments, as text (checked with jv_check());
     * 'provider' is then the server's name. NULL: the binding table's. */
    const char *input_schema;
};

/* The arguments of every built-in and integration tool, bound by the tool's table (members a
 * tool does not take stay zero; an enum not given is -1). Strings are from the arena. */
struct tools_args {
    const char *query, *title, *description, *due_at, *employee_id, *task_id, *workflow_id;
    const char *message, *channel, *text, *repo, *body, *summary, *start, *end, *calendar_id;
    const char *time_min, *time_max, *to, *subject, *contact_email;
    int64_t limit;
    int priority, state;
    struct jb_strings tags;
    json_t *input; /* borrowed from the arguments */
};

/* The built-in and integration tools, in the order GET /v1/tools lists them ('*n' of them). */
const struct tools_def *tools_defs(size_t *n);
/* The built-in or integration tool 'name', or NULL. */
const struct tools_def *tools_def_find(const char *name);
/* The JSON Schema of the arguments of 'd' (a new reference). */
json_t *tools_def_schema(const struct tools_def *d);
/* Check the arguments 'args' of a call to 'd' and bind them to 'out' (strings from 'a');
 * ERR_INVALID with the member at fault in e->param, and nothing is to run. */
int tools_args_bind(const struct tools_def *d, json_t *args, struct arena *a,
                    struct tools_args *out, struct err *e);

/* ---- Names shown to a model (names.c) ---- */

#define TOOLS_MODEL_NAME_MAX 64 /* OpenAI's function names: ^[a-zA-Z0-9_-]{1,64}$ */

/*
 * The name tool 'name' is shown to a model under, into 'out' (TOOLS_MODEL_NAME_MAX + 1 bytes):
 * each '.' becomes "__" ("slack.post_message" -> "slack__post_message"). When that could be
 * read two ways (the name holds "__", "_." or "._") or is longer than TOOLS_MODEL_NAME_MAX, the
 * result is cut to 55 bytes and "_" and the first 8 hex digits of the name's SHA-256 are added.
 * So is an empty name, and one holding a byte a model name cannot (anything but letters, digits,
 * '_', '-' and '.'), each such byte written as '_': the result always matches
 * ^[a-zA-Z0-9_-]{1,64}$. A function of the name alone: the same in every turn, on every node.
 */
void tools_model_name(const char *name, char out[TOOLS_MODEL_NAME_MAX + 1]);

/*
 * The name a call recorded under tool name 'name' was shown to the model under, into 'out':
 * a name that is already a model name and holds no '.' (a tool the OpenAI door's client gave,
 * or a name the model made up) as it is; any other (every tool of ours holds a '.') as
 * tools_model_name() maps it.
 */
void tools_shown_name(const char *name, char out[TOOLS_MODEL_NAME_MAX + 1]);

#endif
