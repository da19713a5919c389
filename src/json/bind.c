/* SPDX-License-Identifier: MIT */
/*
 * bind.c: strict request parsing and binding. jansson is asked to refuse duplicate keys, and
 * it already refuses invalid UTF-8, \u0000 and trailing data; we add the object-only rule, the
 * field table rules and the unknown-member rule. Nothing is written to 'out' for a member that
 * fails, and the first failure wins.
 */
#include "json.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Count the code points of the valid UTF-8 string 's'. */
size_t jb_utf8_len(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            n++;
    }
    return n;
}

/*
 * The name of the member whose value ends near byte 'pos' of 'buf' ("limit" for
 * {"limit": 100000000000000000000000}), copied into 'out', or NULL when it cannot be told
 * (the value is an array item, or the text around it is not plain).
 */
static const char *member_before(const char *buf, size_t len, size_t pos, char *out, size_t cap)
{
    size_t i = pos < len ? pos : len, end;
    while (i > 0 && strchr("0123456789+-.eE", buf[i - 1]))
        i--;
    while (i > 0 && strchr(" \t\r\n", buf[i - 1]))
        i--;
    if (i == 0 || buf[i - 1] != ':')
        return NULL;
    i--;
    while (i > 0 && strchr(" \t\r\n", buf[i - 1]))
        i--;
    if (i == 0 || buf[i - 1] != '"')
        return NULL;
    end = --i;
    while (i > 0 && buf[i - 1] != '"' && buf[i - 1] != '\\' && end - i < cap - 1)
        i--;
    if (i == 0 || buf[i - 1] != '"' || end == i)
        return NULL;
    memcpy(out, buf + i, end - i);
    out[end - i] = '\0';
    return out;
}

/* What is wrong with a body jansson refused, in our words (its own name its options). */
static const char *parse_problem(const json_error_t *je)
{
    switch (json_error_code(je)) {
    case json_error_null_character:
        return "a string holds \\u0000, which is not accepted";
    case json_error_invalid_utf8:
        return "it is not valid UTF-8";
    case json_error_duplicate_key:
        return "a member name appears twice in one object";
    case json_error_premature_end_of_input:
        return "it ends too early";
    case json_error_end_of_input_expected:
        return "there is more after the value";
    case json_error_numeric_overflow:
        return "a number is out of range";
    case json_error_stack_overflow:
        return "it nests too deeply";
    default:
        return "invalid syntax";
    }
}

/*
 * Parse the 'len' bytes at 'buf' as a JSON object. An empty body is the empty object. On
 * success '*out' is a new reference the caller releases with json_decref().
 */
int jb_parse(const char *buf, size_t len, json_t **out, struct err *e)
{
    json_error_t je;
    json_t *v;

    *out = NULL;
    if (len == 0) {
        *out = json_object();
        return *out ? 0 : ERR_NOMEM;
    }
    v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!v && json_error_code(&je) == json_error_numeric_overflow) {
        char name[128];
        return err_set(e, ERR_INVALID, "invalid_request",
                       member_before(buf, len, (size_t)je.position, name, sizeof(name)),
                       "Invalid value: a number is out of range (line %d, column %d).", je.line,
                       je.column);
    }
    if (!v)
        return err_set(e, ERR_INVALID, "invalid_request", NULL,
                       "The request body is not valid JSON: %s (line %d, column %d).",
                       parse_problem(&je), je.line, je.column);
    if (!json_is_object(v)) {
        json_decref(v);
        return err_set(e, ERR_INVALID, "invalid_request", NULL,
                       "The request body must be a JSON object.");
    }
    *out = v;
    return 0;
}

static const char *type_name(enum jb_type t)
{
    switch (t) {
    case JB_STRING:
    case JB_ENUM:
        return "a string";
    case JB_INT:
        return "an integer";
    case JB_BOOL:
        return "a boolean";
    case JB_STRING_ARRAY:
        return "an array of strings";
    case JB_ANY:
        return "a value";
    }
    return "a value";
}

static int bad(struct err *e, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct err *e, const char *param, const char *fmt, ...)
{
    char msg[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_set(e, ERR_INVALID, "invalid_request", param, "Invalid %s: %s.", param, msg);
}

static int check_string(const struct jb_field *f, const char *param, const char *s, size_t len,
                        struct err *e)
{
    size_t chars = jb_utf8_len(s, len);
    if ((int64_t)chars < f->min || (f->max > 0 && (int64_t)chars > f->max)) {
        if (f->min > 0 && chars == 0)
            return bad(e, param, "must not be empty");
        return bad(e, param, "length must be between %lld and %lld characters", (long long)f->min,
                   (long long)f->max);
    }
    if (f->check && !f->check(s, len))
        return bad(e, param, "%s", f->check_msg ? f->check_msg : "has a form that is not allowed");
    return 0;
}

/* Whether 's' is one of the NULL-terminated 'values'. */
static bool one_of(const char *s, const char *const *values)
{
    for (int i = 0; values[i]; i++) {
        if (strcmp(s, values[i]) == 0)
            return true;
    }
    return false;
}

/* 'values' joined by ", " into 'list' (cut at its 'n' bytes); returns 'list'. */
static const char *values_list(const char *const *values, char *list, size_t n)
{
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; values[i] && used < n; i++) {
        int w = snprintf(list + used, n - used, "%s%s", i ? ", " : "", values[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return list;
}

/* A JB_ENUM member: the index of its value in f->values. */
static int bind_enum(const struct jb_field *f, json_t *v, char *dst, struct err *e)
{
    char list[160];

    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        for (int i = 0; f->values[i]; i++) {
            if (strcmp(s, f->values[i]) == 0) {
                *(int *)(void *)dst = i;
                return 0;
            }
        }
    }
    return bad(e, f->name, "must be one of %s", values_list(f->values, list, sizeof(list)));
}

/* A JB_STRING_ARRAY member: its items, each 1..200 characters, checked and copied into 'a';
 * written to 'dst' only when every item passed. */
static int bind_strings(const struct jb_field *f, json_t *v, char *dst, struct arena *a,
                        struct err *e)
{
    struct jb_strings *out_sv = (struct jb_strings *)(void *)dst;
    struct jb_strings tmp, *sv = &tmp;
    char list[200];
    size_t n, i;

    if (!json_is_array(v))
        return bad(e, f->name, "must be %s", type_name(f->type));
    n = json_array_size(v);
    if ((int64_t)n < f->min || (int64_t)n > f->max)
        return bad(e, f->name, "must have between %lld and %lld items", (long long)f->min,
                   (long long)f->max);
    sv->v = arena_alloc(a, (n ? n : 1) * sizeof(*sv->v));
    sv->n = 0;
    for (i = 0; i < n; i++) {
        json_t *item = json_array_get(v, i);
        char ip[128];
        int rc;
        struct jb_field itf = *f;
        snprintf(ip, sizeof(ip), "%s[%zu]", f->name, i);
        if (!json_is_string(item))
            return err_set(e, ERR_INVALID, "invalid_request", ip, "Invalid %s: must be a string.",
                           ip);
        itf.min = 1;
        itf.max = 200;
        rc = check_string(&itf, ip, json_string_value(item), json_string_length(item), e);
        if (rc)
            return rc;
        if (f->values && !one_of(json_string_value(item), f->values))
            return bad(e, ip, "must be one of %s", values_list(f->values, list, sizeof(list)));
        if (f->flags & JB_UNIQUE) {
            for (size_t j = 0; j < sv->n; j++) {
                if (strcmp(sv->v[j], json_string_value(item)) == 0)
                    return err_set(e, ERR_INVALID, "invalid_request", ip,
                                   "Invalid %s: duplicates an earlier item.", ip);
            }
        }
        sv->v[sv->n++] = arena_strndup(a, json_string_value(item), json_string_length(item));
    }
    *out_sv = tmp;
    return 0;
}

static int bind_one(const struct jb_field *f, json_t *v, void *out, struct arena *a, struct err *e)
{
    char *dst = (char *)out + f->offset;
    const char *param = f->name;

    switch (f->type) {
    case JB_STRING: {
        const char *s;
        size_t len;
        int rc;
        if (!json_is_string(v))
            return bad(e, param, "must be %s", type_name(f->type));
        s = json_string_value(v);
        len = json_string_length(v);
        rc = check_string(f, param, s, len, e);
        if (rc)
            return rc;
        *(const char **)(void *)dst = arena_strndup(a, s, len);
        return 0;
    }
    case JB_INT: {
        json_int_t x;
        if (!json_is_integer(v))
            return bad(e, param, "must be %s", type_name(f->type));
        x = json_integer_value(v);
        if (x < f->min || x > f->max)
            return bad(e, param, "must be between %lld and %lld", (long long)f->min,
                       (long long)f->max);
        *(int64_t *)(void *)dst = x;
        return 0;
    }
    case JB_BOOL:
        if (!json_is_boolean(v))
            return bad(e, param, "must be %s", type_name(f->type));
        *(bool *)(void *)dst = json_is_true(v);
        return 0;
    case JB_ENUM:
        return bind_enum(f, v, dst, e);
    case JB_STRING_ARRAY:
        return bind_strings(f, v, dst, a, e);
    case JB_ANY:
        if ((f->flags & JB_OBJECT) && !json_is_object(v))
            return bad(e, param, "must be an object");
        *(json_t **)(void *)dst = v;
        return 0;
    }
    return ERR_INTERNAL;
}

/*
 * Bind the members of 'obj' into 'out' by the 'n' rows of 'fields' (n <= 64). Unknown members,
 * missing required ones, nulls where not allowed and any rule violation fail with
 * ERR_INVALID and the member's path in e->param. 'res' records which members were present.
 * Strings are copied into 'a'; JB_ANY values are borrowed from 'obj'.
 */
int jb_bind(json_t *obj, const struct jb_field *fields, size_t n, void *out, struct arena *a,
            struct jb_result *res, struct err *e)
{
    const char *key;
    json_t *v;

    res->present = 0;
    res->null = 0;
    json_object_foreach(obj, key, v)
    {
        size_t i;
        int rc;
        for (i = 0; i < n; i++) {
            if (strcmp(key, fields[i].name) == 0)
                break;
        }
        if (i == n) {
            char name[100];
            snprintf(name, sizeof(name), "%s", key);
            return err_set(e, ERR_INVALID, "invalid_request", name, "Unknown parameter: %s.", name);
        }
        res->present |= 1ull << i;
        if (json_is_null(v)) {
            if (!(fields[i].flags & JB_NULLABLE))
                return err_set(e, ERR_INVALID, "invalid_request", fields[i].name,
                               "Invalid %s: must not be null.", fields[i].name);
            res->null |= 1ull << i;
            continue;
        }
        rc = bind_one(&fields[i], v, out, a, e);
        if (rc)
            return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if ((fields[i].flags & JB_REQUIRED) && !JB_HAS(*res, i))
            return err_set(e, ERR_INVALID, "invalid_request", fields[i].name,
                           "Missing required parameter: %s.", fields[i].name);
    }
    return 0;
}

/* A jb_check_fn: true when 's' holds something besides spaces, tabs and line breaks. */
bool jb_not_blank(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
            return true;
    }
    return false;
}
