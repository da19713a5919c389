/* SPDX-License-Identifier: MIT */
/*
 * describe.c: the route table, the JSON members each route binds and the error table, as one
 * JSON document (`workforce routes`). The OpenAPI check (tests/openapi) compares it with
 * docs/openapi.json, so that the C tables stay the one source of the API's structure: a route,
 * a member, a limit or an error code the document does not describe fails the check.
 */
#include "api.h"

#include "../auth/auth.h"

static const char *const type_names[] = {
    [JB_STRING] = "string", [JB_INT] = "integer",        [JB_BOOL] = "boolean",
    [JB_ENUM] = "enum",     [JB_STRING_ARRAY] = "array", [JB_ANY] = "any",
};

static json_t *describe_field(const struct jb_field *f)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(f->name));
    json_object_set_new(o, "type", json_string(type_names[f->type]));
    json_object_set_new(o, "required", json_boolean(f->flags & JB_REQUIRED));
    json_object_set_new(o, "nullable", json_boolean(f->flags & JB_NULLABLE));
    if (f->type == JB_STRING || f->type == JB_INT || f->type == JB_STRING_ARRAY) {
        json_object_set_new(o, "min", json_integer(f->min));
        json_object_set_new(o, "max", json_integer(f->max));
    }
    if (f->type == JB_STRING_ARRAY)
        json_object_set_new(o, "unique", json_boolean(f->flags & JB_UNIQUE));
    if (f->type == JB_ANY)
        json_object_set_new(o, "object", json_boolean(f->flags & JB_OBJECT));
    if (f->type == JB_ENUM) {
        json_t *v = json_array();
        for (size_t i = 0; f->values[i]; i++)
            json_array_append_new(v, json_string(f->values[i]));
        json_object_set_new(o, "values", v);
    }
    return o;
}

static json_t *describe_route(const struct route *rt)
{
    json_t *o = json_object(), *scopes = json_array(), *q = json_array();

    json_object_set_new(o, "method", json_string(rt->method));
    json_object_set_new(o, "path", json_string(rt->pattern));
    for (unsigned bit = 0; bit < 32; bit++)
        if (rt->scope & (1u << bit))
            json_array_append_new(scopes, json_string(auth_scope_name(1u << bit)));
    json_object_set_new(o, "scopes", scopes);
    json_object_set_new(o, "public", json_boolean(rt->flags & ROUTE_PUBLIC));
    json_object_set_new(o, "upload", json_boolean(rt->flags & ROUTE_UPLOAD));
    json_object_set_new(o, "hook", json_boolean(rt->flags & ROUTE_HOOK));
    json_object_set_new(o, "loose_query", json_boolean(rt->flags & ROUTE_LOOSE_QUERY));
    json_object_set_new(o, "events", json_boolean(rt->flags & ROUTE_EVENTS));
    for (size_t i = 0; rt->query && rt->query[i]; i++)
        json_array_append_new(q, json_string(rt->query[i]));
    json_object_set_new(o, "query", q);
    if (rt->body) {
        json_t *fields = json_array();
        for (size_t i = 0; i < rt->body->n; i++)
            json_array_append_new(fields, describe_field(&rt->body->fields[i]));
        json_object_set_new(o, "body", fields);
    } else {
        json_object_set_new(o, "body", json_null());
    }
    return o;
}

/* See router.h. */
json_t *api_describe(void)
{
    json_t *doc = json_object(), *routes = json_array(), *errors = json_array();
    const char *code;
    unsigned status;

    for (size_t i = 0; i < api_nroutes; i++)
        json_array_append_new(routes, describe_route(&api_routes[i]));
    for (size_t i = 0;; i++) {
        json_t *o;
        code = api_error_code(i, &status);
        if (!code)
            break;
        o = json_object();
        json_object_set_new(o, "code", json_string(code));
        json_object_set_new(o, "status", json_integer(status));
        json_array_append_new(errors, o);
    }
    json_object_set_new(doc, "routes", routes);
    json_object_set_new(doc, "errors", errors);
    return doc;
}
