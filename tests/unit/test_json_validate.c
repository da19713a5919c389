/* SPDX-License-Identifier: MIT */
/* Unit tests of json/validate.c: a value against a schema someone else wrote (an MCP tool's). */
#include "../../src/json/json.h"
#include "t.h"

#include <string.h>

/* Check the value 'v' against 'schema' (both JSON texts); 'want' the start of the reason, or
 * NULL for valid. */
static void case_(const char *schema, const char *v, const char *want)
{
    json_t *s = json_loads(schema, JSON_DECODE_ANY, NULL);
    json_t *x = json_loads(v, JSON_DECODE_ANY, NULL);
    char why[300];
    int rc = jv_check(s, x, why, sizeof(why));
    if (!want)
        ok(rc == 0, v);
    else
        ok(rc == ERR_INVALID && strncmp(why, want, strlen(want)) == 0, want);
    if (want && (rc == 0 || strncmp(why, want, strlen(want)) != 0))
        printf("#   got rc %d, '%s'\n", rc, rc ? why : "");
    json_decref(s);
    json_decref(x);
}

int main(void)
{
    const char *add = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},"
                      "\"b\":{\"type\":\"number\"}},\"required\":[\"a\",\"b\"],"
                      "\"additionalProperties\":false}";
    subtest("objects")
    {
        case_(add, "{\"a\":1,\"b\":2.5}", NULL);
        case_(add, "{\"a\":\"one\",\"b\":2}", "a: must be of type number");
        case_(add, "{\"a\":1}", "b: is required");
        case_(add, "{\"a\":1,\"b\":2,\"c\":3}", "c: is not a member this tool takes");
        case_(add, "[1]", "must be of type object");
        case_("{\"type\":\"object\"}", "{\"anything\":[1,{}]}", NULL);
        case_("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}}",
              "{\"x\":\"y\",\"z\":1}", "z: must be of type string");
    }
    subtest("scalars")
    {
        case_("{\"type\":\"integer\",\"minimum\":1,\"maximum\":3}", "2", NULL);
        case_("{\"type\":\"integer\"}", "2.0", NULL);
        case_("{\"type\":\"integer\"}", "2.5", "must be of type integer");
        case_("{\"type\":\"integer\",\"maximum\":3}", "4", "is above its maximum");
        case_("{\"exclusiveMinimum\":0}", "0", "is not above its exclusive minimum");
        case_("{\"type\":\"string\",\"maxLength\":2}", "\"\\u00e9\\u00e9\"", NULL);
        case_("{\"type\":\"string\",\"maxLength\":2}", "\"abc\"", "is longer than its maxLength");
        case_("{\"enum\":[\"a\",\"b\"]}", "\"c\"", "is not one of its allowed values");
        case_("{\"const\":7}", "7", NULL);
        case_("{\"type\":[\"string\",\"null\"]}", "null", NULL);
        case_("{\"type\":[\"string\",\"null\"]}", "1", "is not of any of its allowed types");
        case_("{\"type\":\"uuid-ish\"}", "1", NULL);
        case_("false", "1", "is not allowed");
        case_("true", "1", NULL);
    }
    subtest("arrays and combinations")
    {
        case_("{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":2}", "[\"a\",1]",
              "[1]: must be of type string");
        case_("{\"type\":\"array\",\"maxItems\":1}", "[1,2]", "has more items than its maxItems");
        case_("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "1", NULL);
        case_("{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "true",
              "matches none of its anyOf schemas");
        case_("{\"oneOf\":[{\"type\":\"number\"},{\"type\":\"integer\"}]}", "1",
              "must match exactly one");
        case_("{\"not\":{\"type\":\"null\"}}", "null", "matches the schema it must not match");
        case_("{\"properties\":{\"a\":{\"properties\":{\"b\":{\"type\":\"string\"}}}}}",
              "{\"a\":{\"b\":2}}", "a.b: must be of type string");
    }
    subtest("depth is bounded")
    {
        char deep[4000], val[200];
        size_t d = 0, v = 0;
        for (int i = 0; i < 40; i++)
            d += (size_t)snprintf(deep + d, sizeof(deep) - d, "{\"items\":");
        d += (size_t)snprintf(deep + d, sizeof(deep) - d, "{}");
        for (int i = 0; i < 40; i++)
            d += (size_t)snprintf(deep + d, sizeof(deep) - d, "}");
        for (int i = 0; i < 40; i++)
            val[v++] = '[';
        for (int i = 0; i < 40; i++)
            val[v++] = ']';
        val[v] = 0;
        case_(deep, val, "[0]");
    }
    return done_testing();
}
