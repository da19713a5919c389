/* SPDX-License-Identifier: MIT */
/*
 * validate.c: a value checked against a JSON Schema that someone else wrote (an MCP server's
 * tool input schema), before anything runs with it. It knows the keywords that describe the
 * shape of arguments: type, enum, const, properties, required, additionalProperties, items,
 * minItems, maxItems, minLength, maxLength (in characters), minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum, anyOf, oneOf, allOf, not. Other keywords (pattern,
 * format, $ref, ...) are not checked: the server checks its own arguments too, and a value they
 * would refuse is the tool's error. Pure; the depth is bounded (a schema nested deeper than
 * JV_DEPTH_MAX is refused, never recursed into).
 */
#include "json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define JV_DEPTH_MAX 32

static int fail(char *why, size_t n, const char *path, const char *what)
{
    snprintf(why, n, "%s%s%s", path[0] ? path : "", path[0] ? ": " : "", what);
    return ERR_INVALID;
}

static bool is_type(const json_t *v, const char *t)
{
    if (strcmp(t, "object") == 0)
        return json_is_object(v);
    if (strcmp(t, "array") == 0)
        return json_is_array(v);
    if (strcmp(t, "string") == 0)
        return json_is_string(v);
    if (strcmp(t, "integer") == 0)
        return json_is_integer(v) ||
               (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v));
    if (strcmp(t, "number") == 0)
        return json_is_number(v);
    if (strcmp(t, "boolean") == 0)
        return json_is_boolean(v);
    if (strcmp(t, "null") == 0)
        return json_is_null(v);
    return true; /* a type we do not know: not ours to refuse */
}

static int check(const json_t *s, const json_t *v, int depth, char *path, size_t plen, char *why,
                 size_t n);

/* "type": a name or a list of names. */
static int check_type(const json_t *t, const json_t *v, const char *path, char *why, size_t n)
{
    char what[80];
    size_t i;
    const json_t *x;
    if (json_is_string(t)) {
        if (is_type(v, json_string_value(t)))
            return 0;
        snprintf(what, sizeof(what), "must be of type %.40s", json_string_value(t));
        return fail(why, n, path, what);
    }
    if (!json_is_array(t) || json_array_size(t) == 0)
        return 0;
    json_array_foreach(t, i, x)
    {
        if (json_is_string(x) && is_type(v, json_string_value(x)))
            return 0;
    }
    return fail(why, n, path, "is not of any of its allowed types");
}

static int check_number(const json_t *s, const json_t *v, const char *path, char *why, size_t n)
{
    double x = json_number_value(v);
    const json_t *k;
    if ((k = json_object_get(s, "minimum")) && json_is_number(k) && x < json_number_value(k))
        return fail(why, n, path, "is below its minimum");
    if ((k = json_object_get(s, "maximum")) && json_is_number(k) && x > json_number_value(k))
        return fail(why, n, path, "is above its maximum");
    if ((k = json_object_get(s, "exclusiveMinimum")) && json_is_number(k) &&
        x <= json_number_value(k))
        return fail(why, n, path, "is not above its exclusive minimum");
    if ((k = json_object_get(s, "exclusiveMaximum")) && json_is_number(k) &&
        x >= json_number_value(k))
        return fail(why, n, path, "is not below its exclusive maximum");
    return 0;
}

static int check_string(const json_t *s, const json_t *v, const char *path, char *why, size_t n)
{
    size_t chars = jb_utf8_len(json_string_value(v), json_string_length(v));
    const json_t *k;
    if ((k = json_object_get(s, "minLength")) && json_is_integer(k) &&
        (json_int_t)chars < json_integer_value(k))
        return fail(why, n, path, "is shorter than its minLength");
    if ((k = json_object_get(s, "maxLength")) && json_is_integer(k) &&
        (json_int_t)chars > json_integer_value(k))
        return fail(why, n, path, "is longer than its maxLength");
    return 0;
}

static int check_array(const json_t *s, const json_t *v, int depth, char *path, size_t plen,
                       char *why, size_t n)
{
    const json_t *k, *items = json_object_get(s, "items"), *x;
    size_t i, len = strlen(path);
    int rc = 0;
    if ((k = json_object_get(s, "minItems")) && json_is_integer(k) &&
        (json_int_t)json_array_size(v) < json_integer_value(k))
        return fail(why, n, path, "has fewer items than its minItems");
    if ((k = json_object_get(s, "maxItems")) && json_is_integer(k) &&
        (json_int_t)json_array_size(v) > json_integer_value(k))
        return fail(why, n, path, "has more items than its maxItems");
    if (!json_is_object(items))
        return 0;
    json_array_foreach(v, i, x)
    {
        snprintf(path + len, plen - len, "[%zu]", i);
        rc = check(items, x, depth + 1, path, plen, why, n);
        path[len] = 0;
        if (rc)
            return rc;
    }
    return 0;
}

static int check_object(const json_t *s, const json_t *v, int depth, char *path, size_t plen,
                        char *why, size_t n)
{
    const json_t *props = json_object_get(s, "properties");
    const json_t *extra = json_object_get(s, "additionalProperties");
    const json_t *req = json_object_get(s, "required"), *x;
    const char *key;
    size_t i, len = strlen(path);
    int rc = 0;

    json_array_foreach(req, i, x)
    {
        if (json_is_string(x) && !json_object_get(v, json_string_value(x))) {
            snprintf(path + len, plen - len, "%s%.60s", len ? "." : "", json_string_value(x));
            rc = fail(why, n, path, "is required");
            path[len] = 0;
            return rc;
        }
    }
    json_object_foreach((json_t *)(uintptr_t)v, key, x)
    {
        const json_t *sub = json_is_object(props) ? json_object_get(props, key) : NULL;
        snprintf(path + len, plen - len, "%s%.60s", len ? "." : "", key);
        if (!sub && json_is_false(extra))
            rc = fail(why, n, path, "is not a member this tool takes");
        else if (sub || json_is_object(extra))
            rc = check(sub ? sub : extra, x, depth + 1, path, plen, why, n);
        path[len] = 0;
        if (rc)
            return rc;
    }
    return 0;
}

/* anyOf, oneOf, allOf and not. */
static int check_combined(const json_t *s, const json_t *v, int depth, char *path, size_t plen,
                          char *why, size_t n)
{
    const json_t *k, *x;
    size_t i, passed;
    char tmp[8];
    if ((k = json_object_get(s, "allOf")))
        json_array_foreach(k, i, x)
        {
            int rc = check(x, v, depth + 1, path, plen, why, n);
            if (rc)
                return rc;
        }
    for (int one = 0; one < 2; one++) {
        k = json_object_get(s, one ? "oneOf" : "anyOf");
        if (!json_is_array(k) || json_array_size(k) == 0)
            continue;
        passed = 0;
        json_array_foreach(k, i, x) passed +=
            check(x, v, depth + 1, path, plen, tmp, sizeof(tmp)) == 0;
        if (passed == 0 || (one && passed > 1))
            return fail(why, n, path,
                        one ? "must match exactly one of its oneOf schemas"
                            : "matches none of its anyOf schemas");
    }
    if ((k = json_object_get(s, "not")) && json_is_object(k) &&
        check(k, v, depth + 1, path, plen, tmp, sizeof(tmp)) == 0)
        return fail(why, n, path, "matches the schema it must not match");
    return 0;
}

static int check(const json_t *s, const json_t *v, int depth, char *path, size_t plen, char *why,
                 size_t n)
{
    const json_t *k, *x;
    size_t i;
    int rc;

    if (depth > JV_DEPTH_MAX)
        return fail(why, n, path, "is nested deeper than the schemas checked here");
    if (json_is_false(s))
        return fail(why, n, path, "is not allowed");
    if (!json_is_object(s))
        return 0; /* true, or not a schema: anything */
    if ((k = json_object_get(s, "type")) && (rc = check_type(k, v, path, why, n)))
        return rc;
    if ((k = json_object_get(s, "const")) && !json_equal(k, (json_t *)(uintptr_t)v))
        return fail(why, n, path, "is not the value it must be");
    if ((k = json_object_get(s, "enum")) && json_is_array(k)) {
        bool found = false;
        json_array_foreach(k, i, x) found = found || json_equal(x, (json_t *)(uintptr_t)v);
        if (!found)
            return fail(why, n, path, "is not one of its allowed values");
    }
    if (json_is_number(v) && (rc = check_number(s, v, path, why, n)))
        return rc;
    if (json_is_string(v) && (rc = check_string(s, v, path, why, n)))
        return rc;
    if (json_is_array(v) && (rc = check_array(s, v, depth, path, plen, why, n)))
        return rc;
    if (json_is_object(v) && (rc = check_object(s, v, depth, path, plen, why, n)))
        return rc;
    return check_combined(s, v, depth, path, plen, why, n);
}

/* See json.h. */
int jv_check(const json_t *schema, const json_t *value, char *why, size_t n)
{
    char path[512] = "";
    if (n)
        why[0] = 0;
    return check(schema, value, 0, path, sizeof(path), why, n);
}
