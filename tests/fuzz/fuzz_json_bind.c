/* SPDX-License-Identifier: MIT */
/*
 * fuzz_json_bind: a request body through jb_parse() and jb_bind() with a field table that has
 * every jb_type and every jb_flag. The input is the raw body. Checked:
 *   - jb_parse: success gives an object; failure gives NULL, ERR_INVALID and a message;
 *     a parsed object dumps (jo_dump) to text that parses again to an equal value.
 *   - jb_bind: success means every bound member obeys its row (length in code points, range,
 *     enum index, item count, uniqueness, check function), 'present'/'null' agree with the
 *     object, no unknown member and every required one exists; failure is ERR_INVALID with
 *     e.code "invalid_request" and a message.
 * Pure: no I/O; everything is released (json_decref, arena_cleanup).
 */
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/json/json.h"

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
            fprintf(stderr, "fuzz_json_bind: check failed at line %d: %s\n", __LINE__, #c);        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

struct body {
    const char *name;
    const char *description;
    const char *slug;
    int64_t count;
    int64_t big;
    bool enabled;
    int status;
    int kind;
    struct jb_strings capabilities;
    struct jb_strings tags;
    json_t *metadata;
    json_t *extra;
};

/* Printable: no ASCII control characters. */
static bool no_controls(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    }
    return true;
}

/* a-z, 0-9, '-', '_' and '.' only. */
static bool slug_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

static const char *const statuses[] = {"active", "paused", "archived", NULL};
/* Long enough that the "must be one of …" list does not fit its 160-byte buffer. */
static const char *const kinds[] = {
    "operations",
    "sales",
    "engineering",
    "marketing",
    "support",
    "finance",
    "hr",
    "a-very-long-enumeration-value-that-fills-the-message-buffer-quickly-0123456789",
    "another-very-long-enumeration-value-that-overflows-the-message-buffer-abcdefgh",
    "last",
    NULL};

#define ROW(n, t, m, fl, lo, hi, vals, chk, msg)                                                   \
    {                                                                                              \
        n, t, offsetof(struct body, m), fl, lo, hi, vals, chk, msg                                 \
    }

enum {
    F_NAME,
    F_DESCRIPTION,
    F_SLUG,
    F_COUNT,
    F_BIG,
    F_ENABLED,
    F_STATUS,
    F_KIND,
    F_CAPABILITIES,
    F_TAGS,
    F_METADATA,
    F_EXTRA,
    F_N
};

static const struct jb_field fields[F_N] = {
    ROW("name", JB_STRING, name, JB_REQUIRED, 1, 64, NULL, no_controls, "must be printable"),
    ROW("description", JB_STRING, description, JB_NULLABLE, 0, 500, NULL, NULL, NULL),
    ROW("slug", JB_STRING, slug, 0, 0, 0, NULL, slug_ok, NULL), /* max 0: no upper bound */
    ROW("count", JB_INT, count, 0, -5, 1000, NULL, NULL, NULL),
    ROW("big", JB_INT, big, JB_NULLABLE, INT64_MIN, INT64_MAX, NULL, NULL, NULL),
    ROW("enabled", JB_BOOL, enabled, 0, 0, 0, NULL, NULL, NULL),
    ROW("status", JB_ENUM, status, JB_NULLABLE, 0, 0, statuses, NULL, NULL),
    ROW("kind", JB_ENUM, kind, 0, 0, 0, kinds, NULL, NULL),
    ROW("capabilities", JB_STRING_ARRAY, capabilities, JB_UNIQUE, 0, 8, NULL, slug_ok,
        "must be a slug"),
    ROW("tags", JB_STRING_ARRAY, tags, JB_NULLABLE, 1, 3, NULL, NULL, NULL),
    ROW("metadata", JB_ANY, metadata, JB_OBJECT | JB_NULLABLE, 0, 0, NULL, NULL, NULL),
    ROW("extra", JB_ANY, extra, 0, 0, 0, NULL, NULL, NULL),
};

/* Independent code point count of valid UTF-8. */
static size_t cps(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

/* Bytes of 'out' that row 'f' writes. */
static size_t row_size(const struct jb_field *f)
{
    switch (f->type) {
    case JB_STRING:
        return sizeof(const char *);
    case JB_INT:
        return sizeof(int64_t);
    case JB_BOOL:
        return sizeof(bool);
    case JB_ENUM:
        return sizeof(int);
    case JB_STRING_ARRAY:
        return sizeof(struct jb_strings);
    case JB_ANY:
        return sizeof(json_t *);
    }
    return 0;
}

/* Absent and null members leave their bytes of 'out' as they were (zero). */
static void check_untouched(const struct body *b, const struct jb_field *f)
{
    const unsigned char *p = (const unsigned char *)b + f->offset;
    for (size_t k = 0; k < row_size(f); k++)
        CHECK(p[k] == 0);
}

/* A bound string equals the document's string and obeys row 'f' (item rules when 'item'). */
static void check_string(const struct jb_field *f, const char *bound, json_t *src, bool item)
{
    const char *s = json_string_value(src);
    size_t len = json_string_length(src), n = cps(s, len);
    int64_t min = item ? 1 : f->min, max = item ? 200 : f->max;

    CHECK(bound != NULL);
    CHECK(strlen(bound) == len); /* no NUL inside: jansson refuses \u0000 */
    CHECK(memcmp(bound, s, len) == 0);
    CHECK(bound != s); /* copied into the arena, not borrowed */
    CHECK((int64_t)n >= min);
    CHECK(max <= 0 || (int64_t)n <= max);
    CHECK(!f->check || f->check(bound, len));
}

static void check_bound(const struct body *b, json_t *obj, const struct jb_result *res)
{
    size_t seen = 0;

    for (size_t i = 0; i < F_N; i++) {
        const struct jb_field *f = &fields[i];
        json_t *v = json_object_get(obj, f->name);

        CHECK(JB_HAS(*res, i) == (v != NULL));
        CHECK(JB_IS_NULL(*res, i) == (v != NULL && json_is_null(v)));
        if (f->flags & JB_REQUIRED)
            CHECK(v != NULL);
        if (!v) {
            check_untouched(b, f);
            continue;
        }
        seen++;
        if (json_is_null(v)) {
            CHECK(f->flags & JB_NULLABLE);
            check_untouched(b, f);
            continue;
        }
        switch (i) {
        case F_NAME:
            check_string(f, b->name, v, false);
            break;
        case F_DESCRIPTION:
            check_string(f, b->description, v, false);
            break;
        case F_SLUG:
            check_string(f, b->slug, v, false);
            break;
        case F_COUNT:
            CHECK(json_is_integer(v) && json_integer_value(v) == b->count);
            CHECK(b->count >= f->min && b->count <= f->max);
            break;
        case F_BIG:
            CHECK(json_is_integer(v) && json_integer_value(v) == b->big);
            break;
        case F_ENABLED:
            CHECK(json_is_boolean(v) && json_is_true(v) == b->enabled);
            break;
        case F_STATUS:
        case F_KIND: {
            int idx = i == F_STATUS ? b->status : b->kind;
            int nvals = 0;
            while (f->values[nvals])
                nvals++;
            CHECK(idx >= 0 && idx < nvals);
            CHECK(json_is_string(v) && strcmp(json_string_value(v), f->values[idx]) == 0);
            break;
        }
        case F_CAPABILITIES:
        case F_TAGS: {
            const struct jb_strings *sv = i == F_TAGS ? &b->tags : &b->capabilities;
            CHECK(json_is_array(v) && json_array_size(v) == sv->n);
            CHECK((int64_t)sv->n >= f->min && (int64_t)sv->n <= f->max);
            for (size_t k = 0; k < sv->n; k++) {
                check_string(f, sv->v[k], json_array_get(v, k), true);
                if (f->flags & JB_UNIQUE) {
                    for (size_t j = 0; j < k; j++)
                        CHECK(strcmp(sv->v[j], sv->v[k]) != 0);
                }
            }
            break;
        }
        case F_METADATA:
            CHECK(b->metadata == v && json_is_object(v));
            break;
        case F_EXTRA:
            CHECK(b->extra == v);
            break;
        default:
            CHECK(0);
        }
    }
    CHECK(seen == json_object_size(obj)); /* no unknown member was accepted */
}

/* The document survives dump and parse: same value, still an object, still no duplicates. */
static void check_roundtrip(json_t *obj)
{
    size_t len;
    char *text = jo_dump(obj, &len);
    json_t *again = NULL;
    struct err e;
    int rc;

    err_clear(&e);
    rc = jb_parse(text, len, &again, &e);
    CHECK(rc == 0 && again != NULL);
    CHECK(json_equal(obj, again));
    json_decref(again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *obj = NULL;
    struct err e;
    struct arena a;
    struct body b;
    struct jb_result res;
    int rc;

    err_clear(&e);
    rc = jb_parse((const char *)data, size, &obj, &e);
    if (rc) {
        CHECK(rc == ERR_INVALID && obj == NULL);
        CHECK(e.kind == ERR_INVALID && e.code && strcmp(e.code, "invalid_request") == 0);
        CHECK(e.msg[0] != '\0');
        return 0;
    }
    CHECK(obj != NULL && json_is_object(obj));
    if (size == 0)
        CHECK(json_object_size(obj) == 0);
    check_roundtrip(obj);

    arena_init(&a);
    memset(&b, 0, sizeof(b));
    err_clear(&e);
    rc = jb_bind(obj, fields, F_N, &b, &a, &res, &e);
    if (rc == 0) {
        check_bound(&b, obj, &res);
    } else {
        CHECK(rc == ERR_INVALID && e.kind == ERR_INVALID);
        CHECK(e.code && strcmp(e.code, "invalid_request") == 0);
        CHECK(e.msg[0] != '\0');
        CHECK(strlen(e.param) < sizeof(e.param));
    }

    /* The nested object binds too (another depth, same rules). */
    if (rc == 0 && b.metadata) {
        struct body inner;
        struct jb_result ires;
        memset(&inner, 0, sizeof(inner));
        err_clear(&e);
        if (jb_bind(b.metadata, fields, F_N, &inner, &a, &ires, &e) == 0)
            check_bound(&inner, b.metadata, &ires);
        else
            CHECK(e.kind == ERR_INVALID && e.msg[0] != '\0');
    }

    arena_cleanup(&a);
    json_decref(obj);
    return 0;
}
