/* SPDX-License-Identifier: MIT */
/*
 * rules.c: an employee's tool rules, `[{name, policy}]`: checked when a request sets them,
 * parsed back from the stored JSON, and matched against a tool's name.
 *
 * A tool name is dot-separated segments of letters, digits, '_' and '-', starting with a
 * lowercase letter (`knowledge.search`, `slack.post_message`, `mcp.crm.find-contact`): the
 * characters an MCP server may use in a tool's name, under our own lowercase prefixes. A rule's
 * name is a tool name, or a prefix of one followed by '*' (`slack.*`, `mcp.crm.*`, `*`). The
 * rule naming the tool exactly wins; else the longest matching prefix; a tool no rule names is
 * not offered. Names are unique within one employee's rules, so no two rules tie.
 */
#include "tools.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *const tools_policies[] = {"auto", "approve", "deny", NULL};

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* See tools.h. */
bool tools_name_ok(const char *s, size_t len, bool pattern)
{
    bool star = pattern && len > 0 && s[len - 1] == '*';
    size_t body = star ? len - 1 : len;

    if (len == 0 || len > TOOLS_NAME_MAX)
        return false;
    if (body == 0)
        return star; /* "*": every tool */
    if (!(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (size_t i = 0; i < body; i++) {
        if (s[i] == '.') {
            /* no empty segment; a final '.' only before the '*' ("slack.*") */
            if (s[i - 1] == '.' || (i + 1 == body && !star))
                return false;
        } else if (!name_char(s[i])) {
            return false;
        }
    }
    return true;
}

static int policy_index(const char *s)
{
    for (int i = 0; s && tools_policies[i]; i++) {
        if (strcmp(tools_policies[i], s) == 0)
            return i;
    }
    return -1;
}

/* Check one item 'it' (index 'i') into 'out'; 'param' receives the failing path. */
static int bind_one(const json_t *it, size_t i, struct arena *a, struct tools_rule *out,
                    struct err *e)
{
    const char *key;
    const json_t *v;
    const char *name = NULL;
    int policy = -1;

    if (!json_is_object(it))
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "tools[%zu]", i),
                       "Invalid tools[%zu]: must be an object {name, policy}.", i);
    json_object_foreach((json_t *)(uintptr_t)it, key, v)
    {
        if (strcmp(key, "name") != 0 && strcmp(key, "policy") != 0)
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "tools[%zu].%.40s", i, key),
                           "Unknown member tools[%zu].%.40s: a rule has name and policy.", i, key);
    }
    v = json_object_get(it, "name");
    name = json_string_value(v);
    if (!name || !tools_name_ok(name, json_string_length(v), true) ||
        strlen(name) != json_string_length(v))
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "tools[%zu].name", i),
                       "Invalid tools[%zu].name: a tool name (segments of letters, digits, '_' "
                       "and '-' separated by '.', starting with a lowercase letter, at most %d "
                       "bytes), which may end in '*'.",
                       i, TOOLS_NAME_MAX);
    policy = policy_index(json_string_value(json_object_get(it, "policy")));
    if (policy < 0)
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "tools[%zu].policy", i),
                       "Invalid tools[%zu].policy: must be one of auto, approve, deny.", i);
    out->name = arena_strdup(a, name);
    out->policy = (enum tools_policy)policy;
    return 0;
}

/* See tools.h. */
int tools_rules_bind(const json_t *v, struct arena *a, struct tools_rules *out, struct err *e)
{
    size_t n = json_array_size(v);
    int rc;

    out->v = NULL;
    out->n = 0;
    if (!json_is_array(v) || n > TOOLS_RULES_MAX)
        return err_set(e, ERR_INVALID, "invalid_request", "tools",
                       "Invalid tools: must be an array of at most %d rules {name, policy}.",
                       TOOLS_RULES_MAX);
    out->v = n ? arena_alloc(a, n * sizeof(*out->v)) : NULL;
    for (size_t i = 0; i < n; i++) {
        rc = bind_one(json_array_get(v, i), i, a, &out->v[i], e);
        if (rc) {
            out->n = 0;
            return rc;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(out->v[j].name, out->v[i].name) == 0) {
                out->n = 0;
                return err_set(e, ERR_INVALID, "invalid_request",
                               arena_printf(a, "tools[%zu].name", i),
                               "Invalid tools[%zu].name: tools[%zu] has the same name; each "
                               "name may have one rule.",
                               i, j);
            }
        }
    }
    out->n = n;
    return 0;
}

/* See tools.h. */
int tools_rules_parse(const char *text, size_t len, struct arena *a, struct tools_rules *out)
{
    json_t *v = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    int rc = tools_rules_bind(v, a, out, NULL);
    json_decref(v);
    return rc ? ERR_INVALID : 0;
}

/* See tools.h. */
json_t *tools_rules_json(const struct tools_rules *r)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < r->n; i++)
        json_array_append_new(arr, json_pack("{s:s,s:s}", "name", r->v[i].name, "policy",
                                             tools_policies[r->v[i].policy]));
    return arr;
}

/* See tools.h. */
enum tools_policy tools_policy_of(const struct tools_rules *r, const char *name)
{
    size_t best = 0;
    enum tools_policy policy = TOOLS_UNLISTED;

    for (size_t i = 0; i < r->n; i++) {
        const char *rule = r->v[i].name;
        size_t len = strlen(rule);
        if (strcmp(rule, name) == 0)
            return r->v[i].policy;
        if (len > 0 && rule[len - 1] == '*' && strncmp(rule, name, len - 1) == 0 &&
            (policy == TOOLS_UNLISTED || len > best)) {
            best = len;
            policy = r->v[i].policy;
        }
    }
    return policy;
}

/* See tools.h. */
json_t *tools_rules_schema(void)
{
    json_t *policy = json_pack("{s:s}", "type", "string");
    json_t *item;
    json_object_set_new(policy, "enum", json_pack("[sss]", "auto", "approve", "deny"));
    item = json_pack("{s:s,s:{s:{s:s,s:i,s:i,s:s},s:o},s:[ss],s:b}", "type", "object", "properties",
                     "name", "type", "string", "minLength", 1, "maxLength", TOOLS_NAME_MAX,
                     "pattern", "^(\\*|[a-z][A-Za-z0-9_-]*(\\.[A-Za-z0-9_-]+)*(\\.?\\*)?)$",
                     "policy", policy, "required", "name", "policy", "additionalProperties", 0);
    return json_pack("{s:s,s:o,s:i}", "type", "array", "items", item, "maxItems", TOOLS_RULES_MAX);
}
