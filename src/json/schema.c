/* SPDX-License-Identifier: MIT */
/*
 * schema.c: the JSON Schema (2020-12, as OpenAPI 3.1 reads it) of what a binding table
 * accepts: each member's type, length, range, count, enum values, nullability, uniqueness and
 * pattern, the required members, and no others. The API document (`workforce describe`) and
 * the MCP server's tool input schemas are both written by it, from the tables jb_bind() checks,
 * so neither can say another thing than the server does.
 */
#include "json.h"

#include <string.h>

/* The pattern a check names in its message ("... must match ^[a-z]+$"), or NULL; its length
 * (up to its closing '$') in '*len'. */
static const char *check_pattern(const struct jb_field *f, size_t *len)
{
    const char *p = f->check_msg ? strstr(f->check_msg, "match ^") : NULL;
    const char *end = p ? strchr(p + 6, '$') : NULL;
    if (!end)
        return NULL;
    *len = (size_t)(end + 1 - (p + 6));
    return p + 6;
}

/* The length and pattern rules of a string member 'f' into 'o' (items: 'item'). */
static void string_rules(const struct jb_field *f, json_t *o, bool item)
{
    size_t plen = 0;
    const char *pattern = check_pattern(f, &plen);
    /* array items are 1..200 characters (bind.c); a minimum of 0 is no rule */
    if (item || f->min > 0)
        json_object_set_new(o, "minLength", json_integer(item ? 1 : f->min));
    if (item || f->max > 0)
        json_object_set_new(o, "maxLength", json_integer(item ? 200 : f->max));
    if (pattern)
        json_object_set_new(o, "pattern", json_stringn(pattern, plen));
    if (item && f->values)
        json_object_set_new(o, "enum", jb_values_json(f->values));
    else if (f->check == jb_not_blank)
        json_object_set_new(o, "pattern", json_string("\\S"));
}

/* See json.h. */
json_t *jb_values_json(const char *const *values)
{
    json_t *v = json_array();
    for (size_t i = 0; values && values[i]; i++)
        json_array_append_new(v, json_string(values[i]));
    return v;
}

/* See json.h. */
json_t *jb_field_schema(const struct jb_field *f, jb_nested_fn nested, void *ud)
{
    json_t *o = json_object();
    const char *type = NULL;

    switch (f->type) {
    case JB_STRING:
        type = "string";
        string_rules(f, o, false);
        break;
    case JB_INT:
        type = "integer";
        json_object_set_new(o, "minimum", json_integer(f->min));
        json_object_set_new(o, "maximum", json_integer(f->max));
        break;
    case JB_BOOL:
        type = "boolean";
        break;
    case JB_ENUM:
        type = "string";
        json_object_set_new(o, "enum", jb_values_json(f->values));
        break;
    case JB_STRING_ARRAY: {
        json_t *items = json_pack("{s:s}", "type", "string");
        string_rules(f, items, true);
        type = "array";
        json_object_set_new(o, "items", items);
        if (f->min > 0)
            json_object_set_new(o, "minItems", json_integer(f->min));
        json_object_set_new(o, "maxItems", json_integer(f->max));
        if (f->flags & JB_UNIQUE)
            json_object_set_new(o, "uniqueItems", json_true());
        break;
    }
    case JB_ANY: {
        json_t *shape = nested ? nested(f, ud) : NULL;
        if (shape) {
            json_t *any = json_object_get(shape, "anyOf");
            json_decref(o);
            o = shape;
            type = json_string_value(json_object_get(o, "type"));
            if (!type && any && (f->flags & JB_NULLABLE))
                json_array_append_new(any, json_pack("{s:s}", "type", "null"));
        } else if (f->flags & JB_OBJECT) {
            type = "object";
        }
        break;
    }
    }
    if (type && (f->flags & JB_NULLABLE)) {
        json_t *values = json_object_get(o, "enum");
        json_object_set_new(o, "type", json_pack("[s,s]", type, "null"));
        if (values)
            json_array_append_new(values, json_null()); /* an enum lists every value taken */
    } else if (type)
        json_object_set_new(o, "type", json_string(type));
    else if (f->flags & JB_NULLABLE)
        json_object_del(o, "type"); /* any value, null included */
    return o;
}

/* See json.h. */
json_t *jb_binding_schema(const struct jb_binding *b, jb_nested_fn nested, void *ud)
{
    json_t *props = json_object(), *req = json_array();

    for (size_t i = 0; b && i < b->n; i++) {
        json_object_set_new(props, b->fields[i].name, jb_field_schema(&b->fields[i], nested, ud));
        if (b->fields[i].flags & JB_REQUIRED)
            json_array_append_new(req, json_string(b->fields[i].name));
    }
    return json_pack("{s:s,s:o,s:o,s:b}", "type", "object", "properties", props, "required", req,
                     "additionalProperties", 0);
}
