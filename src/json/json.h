/* SPDX-License-Identifier: MIT */
/*
 * json: request binding (jb_, bind.c) and response building (jo_, out.c) over jansson. json_t
 * is our JSON vocabulary type; everything else about jansson stays here.
 *
 * Binding is table driven (lwan's JSON samples): a handler declares struct jb_field rows that
 * say where each member of its request struct lives and what values are allowed; jb_bind()
 * checks every rule and names the offending member path in err.param ("capabilities[2]").
 */
#ifndef WORKFORCE_JSON_H
#define WORKFORCE_JSON_H

#include "../core/buf.h"
#include "../core/err.h"
#include "../core/mem.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum jb_type {
    JB_STRING,       /* const char * (arena copy); min/max are lengths in characters */
    JB_INT,          /* int64_t; min/max are the value range */
    JB_BOOL,         /* bool */
    JB_ENUM,         /* int: index into 'values' */
    JB_STRING_ARRAY, /* struct jb_strings; min/max bound the count, items checked by 'item' */
    JB_ANY           /* json_t * borrowed from the document (free-form objects) */
};

enum jb_flag {
    JB_REQUIRED = 1 << 0,
    JB_NULLABLE = 1 << 1, /* null is accepted and recorded in jb_result.null */
    JB_UNIQUE = 1 << 2,   /* array items must differ */
    JB_OBJECT = 1 << 3    /* JB_ANY: must be an object */
};

struct jb_strings {
    const char **v;
    size_t n;
};

typedef bool (*jb_check_fn)(const char *s, size_t len);

struct jb_field {
    const char *name;
    enum jb_type type;
    size_t offset;
    unsigned flags;
    int64_t min, max;
    const char *const *values; /* JB_ENUM, JB_STRING_ARRAY items: NULL-terminated; else NULL */
    jb_check_fn check;         /* JB_STRING / array items: extra rule */
    /* What 'check' requires, for the message; "... match ^...$" names the pattern it checks,
     * which the schema (schema.c) states. */
    const char *check_msg;
};

/* A request body's whole table, for the route table (GET-free description of the API). */
struct jb_binding {
    const struct jb_field *fields; /* NULL with n 0: the body takes no members */
    size_t n;
};

/* Which fields (by index in the table) were present, and which of those were null. */
struct jb_result {
    uint64_t present;
    uint64_t null;
};

#define JB_HAS(res, i) (((res).present >> (i)) & 1u)
#define JB_IS_NULL(res, i) (((res).null >> (i)) & 1u)

/* Parse 'len' bytes as one JSON object ('len' 0 gives {}). '*out' is owned by the caller. */
int jb_parse(const char *buf, size_t len, json_t **out, struct err *e);
/* Bind 'obj' to 'out' by the 'n' rows of 'fields'; unknown members are refused. */
int jb_bind(json_t *obj, const struct jb_field *fields, size_t n, void *out, struct arena *a,
            struct jb_result *res, struct err *e);
size_t jb_utf8_len(const char *s, size_t len); /* code points */

/* ---- schema.c: the JSON Schema of what a table accepts (new references) ---- */

/* The schema of the value of JB_ANY member 'f' when it has a shape (a new reference), or NULL:
 * free-form (an object when JB_OBJECT). */
typedef json_t *(*jb_nested_fn)(const struct jb_field *f, void *ud);
/* The schema of member 'f'; 'nested' (may be NULL) gives the shapes of JB_ANY members. */
json_t *jb_field_schema(const struct jb_field *f, jb_nested_fn nested, void *ud);
/* The schema of an object bound by 'b' (NULL: no members): its members, the required ones,
 * and no others. */
json_t *jb_binding_schema(const struct jb_binding *b, jb_nested_fn nested, void *ud);
/* The NULL-terminated 'values' as a JSON array of strings. */
json_t *jb_values_json(const char *const *values);
bool jb_not_blank(const char *s, size_t len); /* a jb_check_fn: not only whitespace */

/* ---- validate.c: a value against a JSON Schema written elsewhere ---- */

/* Check 'value' against 'schema' (the keywords of argument shapes; see validate.c): 0, or
 * ERR_INVALID with where and why in 'why' ("a.b[2]: must be of type string"). Pure. */
int jv_check(const json_t *schema, const json_t *value, char *why, size_t n);

/* ---- Output ---- */
json_t *jo_object(void);          /* new, never NULL */
json_t *jo_string(const char *v); /* new; NULL -> null; never NULL */
json_t *jo_number(double v);      /* new: an integer when 'v' is one, else a real */
void jo_str(json_t *o, const char *k, const char *v); /* NULL -> null */
void jo_int(json_t *o, const char *k, int64_t v);
void jo_bool(json_t *o, const char *k, bool v);
void jo_real(json_t *o, const char *k, double v);
void jo_null(json_t *o, const char *k);
void jo_time(json_t *o, const char *k, int64_t ms); /* 0 -> null */
void jo_set(json_t *o, const char *k, json_t *v);   /* steals 'v' */
json_t *jo_parse_or_null(const char *text);         /* stored JSON; null if bad */
char *jo_dump(const json_t *v, size_t *len);        /* caller frees with free() */

/* ---- Streaming writer (write.c) ---- */
struct jw {
    struct buf *b;
    int depth;
    int need_comma;
    int rc;
};
void jw_init(struct jw *w, struct buf *b);
void jw_obj(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_key(struct jw *w, const char *k);
void jw_str(struct jw *w, const char *s); /* NULL -> null */
void jw_int(struct jw *w, int64_t v);
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);
void jw_time(struct jw *w, int64_t ms);                            /* 0 -> null */
void jw_raw(struct jw *w, const char *json, const char *fallback); /* trusted JSON text */
int jw_finish(const struct jw *w);

#endif
